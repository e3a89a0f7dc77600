//! The water surface the node can show by itself: an internal `MeshInstance3D` child with a
//! plane the size of the grid and the water material (the user's, or the addon's shader).

use godot::classes::{Material, Mesh, MeshInstance3D, PlaneMesh, ResourceLoader, Shader, ShaderMaterial};
use godot::prelude::*;
use pipewater_core::state::MAX_TERRAIN_ABS;
use pipewater_core::Grid;

/// Default water surface shader, loaded when `water_material` is empty.
const DEFAULT_SHADER: &str = "res://addons/pipe_water/water_surface.gdshader";
/// Most subdivisions of the helper mesh per side (about a million vertices at most).
const MAX_MESH_SUBDIVISIONS: u32 = 1023;

/// The helper mesh and the default material, created on first use.
#[derive(Default)]
pub struct WaterSurface {
    mesh_instance: Option<Gd<MeshInstance3D>>,
    default_material: Option<Gd<Material>>,
}

/// What the surface's material is given to draw the water.
pub struct SurfaceInputs<'a> {
    pub grid: Grid,
    /// `water_material`; `None` for the default.
    pub material: Option<&'a Gd<Material>>,
    pub height_texture: Variant,
    pub flux_texture: Variant,
}

impl WaterSurface {
    /// A new `MeshInstance3D` for the node to add as its internal child, when there is none yet
    /// (or it was freed). The node adds it: adding a child notifies the parent, which must
    /// happen through the node's own base.
    pub fn instance_to_add(&mut self) -> Option<Gd<MeshInstance3D>> {
        if self.mesh_instance.as_ref().is_some_and(|m| m.is_instance_valid()) {
            return None;
        }
        let mut mesh_instance = MeshInstance3D::new_alloc();
        mesh_instance.set_name("WaterSurface");
        self.mesh_instance = Some(mesh_instance.clone());
        Some(mesh_instance)
    }

    /// Shapes the plane to the grid and gives it the material, with the textures and grid set as
    /// shader parameters on a `ShaderMaterial`.
    pub fn update(&mut self, inputs: SurfaceInputs) {
        let grid = inputs.grid;
        let [ex, ez] = grid.extent();
        // Reshape the plane already shown rather than swapping in a new one: fewer renderer
        // resources churned on every rebuild, and Godot's headless renderer reports an error
        // when a replaced mesh's instance is freed.
        let existing = self.mesh_instance.as_ref().and_then(|m| m.get_mesh()).and_then(|m| m.try_cast::<PlaneMesh>().ok());
        let mut plane = existing.unwrap_or_else(PlaneMesh::new_gd);
        plane.set_size(Vector2::new(ex, ez));
        plane.set_subdivide_width((grid.width - 1).min(MAX_MESH_SUBDIVISIONS) as i32);
        plane.set_subdivide_depth((grid.height - 1).min(MAX_MESH_SUBDIVISIONS) as i32);
        let material = self.material(inputs.material);
        if let Some(mut shader_material) = material.clone().and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
            shader_material.set_shader_parameter("height_texture", &inputs.height_texture);
            shader_material.set_shader_parameter("flux_texture", &inputs.flux_texture);
            shader_material.set_shader_parameter("grid_size", &Vector2::new(grid.width as f32, grid.height as f32).to_variant());
            shader_material.set_shader_parameter("cell_size", &grid.cell_size.to_variant());
        }
        if let Some(mesh_instance) = self.mesh_instance.as_mut() {
            mesh_instance.set_mesh(&plane);
            mesh_instance.set_material_override(material.as_ref());
            // The surface moves up and down in the shader; keep it from being culled.
            mesh_instance.set_custom_aabb(Aabb::new(
                Vector3::new(-ex / 2.0, -MAX_TERRAIN_ABS, -ez / 2.0),
                Vector3::new(ex, 2.0 * MAX_TERRAIN_ABS, ez),
            ));
        }
    }

    /// Frees the helper mesh (`show_mesh` turned off).
    pub fn free(&mut self) {
        if let Some(mut mesh) = self.mesh_instance.take() {
            mesh.queue_free();
        }
    }

    /// Lets go of the mesh and material while the node is being deleted.
    pub fn detach(&mut self) {
        // Detach while the render instance still exists, so that no renderer update meets an
        // instance whose mesh is already gone (Godot's headless renderer reports that as an
        // error when the node is freed).
        if let Some(mut mesh_instance) = self.mesh_instance.take().filter(|m| m.is_instance_valid()) {
            mesh_instance.set_material_override(Option::<&Gd<Material>>::None);
            mesh_instance.set_mesh(Option::<&Gd<Mesh>>::None);
        }
    }

    /// `chosen` (`water_material`), or the default shader material (created once).
    fn material(&mut self, chosen: Option<&Gd<Material>>) -> Option<Gd<Material>> {
        if let Some(m) = chosen {
            return Some(m.clone());
        }
        if self.default_material.is_none() {
            let mut loader = ResourceLoader::singleton();
            if !loader.exists(DEFAULT_SHADER) {
                godot_warn!("PipeWater: {DEFAULT_SHADER} not found; the water mesh has no material");
                return None;
            }
            let shader = loader.load(DEFAULT_SHADER).and_then(|r| r.try_cast::<Shader>().ok())?;
            let mut material = ShaderMaterial::new_gd();
            material.set_shader(&shader);
            self.default_material = Some(material.upcast());
        }
        self.default_material.clone()
    }
}
