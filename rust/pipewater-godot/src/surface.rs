//! The water surface the node can show by itself: an internal `MeshInstance3D` child with the
//! mesh of [`crate::mesh_layout`] (a grid with a vertex per cell for small grids, a
//! camera-centred clipmap for large ones) and the water material (the user's, or the addon's
//! shader).

use crate::mesh_layout::{self, Layout, MeshData};
use godot::classes::mesh::{ArrayType, PrimitiveType};
use godot::classes::{ArrayMesh, Material, Mesh, MeshInstance3D, ResourceLoader, Shader, ShaderMaterial};
use godot::prelude::*;
use pipewater_core::quanta::MAX_TERRAIN_ABS;
use pipewater_core::{Grid, Lattice};

/// Default water surface shader, loaded when `water_material` is empty.
const DEFAULT_SHADER: &str = "res://addons/pipe_water/water_surface.gdshader";

/// The helper mesh and the default material, created on first use.
#[derive(Default)]
pub struct WaterSurface {
    mesh_instance: Option<Gd<MeshInstance3D>>,
    default_material: Option<Gd<Material>>,
    /// The mesh shown, and the layout, cell size and lattice (triangular or not) it was built for.
    mesh: Option<(Gd<ArrayMesh>, Layout, f32, bool)>,
}

/// What the surface's material is given to draw the water.
pub struct SurfaceInputs<'a> {
    /// The cells and where they lie (the square grid or the triangular lattice).
    pub lattice: Lattice,
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

    /// Shapes the mesh to the grid (or the triangular lattice) and gives it the material, with
    /// the textures, the grid, the lattice and the clipmap's figures set as shader parameters on
    /// a `ShaderMaterial`.
    pub fn update(&mut self, inputs: SurfaceInputs) {
        let lattice = inputs.lattice;
        let grid = lattice.grid;
        let [ex, ez] = lattice.extent();
        let layout = mesh_layout::choose_layout(grid.width, grid.height);
        let mesh = self.mesh(layout, lattice);
        let material = self.material(inputs.material);
        if let Some(mut shader_material) = material.clone().and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
            shader_material.set_shader_parameter("height_texture", &inputs.height_texture);
            shader_material.set_shader_parameter("flux_texture", &inputs.flux_texture);
            shader_material.set_shader_parameter("grid_size", &Vector2::new(grid.width as f32, grid.height as f32).to_variant());
            shader_material.set_shader_parameter("cell_size", &grid.cell_size.to_variant());
            shader_material.set_shader_parameter("triangular_lattice", &lattice.triangular.to_variant());
            let (snap, quads, levels) = match layout {
                Layout::Grid { .. } => (0.0, 0, 1),
                Layout::Clipmap { quads, levels } => (mesh_layout::clipmap_snap(grid.cell_size, levels), quads, levels),
            };
            shader_material.set_shader_parameter("clipmap_snap", &snap.to_variant());
            shader_material.set_shader_parameter("clipmap_spacing", &grid.cell_size.to_variant());
            shader_material.set_shader_parameter("clipmap_quads", &(quads as f32).to_variant());
            shader_material.set_shader_parameter("clipmap_levels", &(levels as f32).to_variant());
        }
        if let Some(mesh_instance) = self.mesh_instance.as_mut() {
            if mesh_instance.get_mesh().map(|m| m.instance_id()) != Some(mesh.instance_id()) {
                mesh_instance.set_mesh(&mesh);
            }
            mesh_instance.set_material_override(material.as_ref());
            // The surface moves up and down in the shader; keep it from being culled.
            mesh_instance.set_custom_aabb(Aabb::new(
                Vector3::new(-ex / 2.0, -MAX_TERRAIN_ABS, -ez / 2.0),
                Vector3::new(ex, 2.0 * MAX_TERRAIN_ABS, ez),
            ));
        }
    }

    /// Sets shader parameters on the material the mesh shows, when it is a `ShaderMaterial`
    /// (values that change every frame, such as where the detail waves' window lies).
    pub fn set_shader_parameters(&self, parameters: &[(&str, Variant)]) {
        let Some(mesh_instance) = self.mesh_instance.as_ref().filter(|m| m.is_instance_valid()) else { return };
        let Some(mut material) = mesh_instance.get_material_override().and_then(|m| m.try_cast::<ShaderMaterial>().ok()) else { return };
        for (name, value) in parameters {
            material.set_shader_parameter(*name, value);
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
        self.mesh = None;
    }

    /// The mesh for `layout` on `lattice`, built when the layout, the cell size or the lattice
    /// changed. The same
    /// `ArrayMesh` is refilled rather than swapped for a new one: fewer renderer resources churned
    /// on every rebuild, and Godot's headless renderer reports an error when a replaced mesh's
    /// instance is freed.
    fn mesh(&mut self, layout: Layout, lattice: Lattice) -> Gd<ArrayMesh> {
        let grid: Grid = lattice.grid;
        if let Some((mesh, built, cell, triangular)) = &self.mesh {
            if *built == layout && *cell == grid.cell_size && *triangular == lattice.triangular {
                return mesh.clone();
            }
        }
        let data = match layout {
            Layout::Grid { width, height } if lattice.triangular => mesh_layout::lattice_mesh(width, height, grid.cell_size),
            Layout::Grid { width, height } => mesh_layout::grid_mesh(width, height, grid.cell_size),
            Layout::Clipmap { quads, levels } => mesh_layout::clipmap_mesh(quads, levels, grid.cell_size),
        };
        let mut mesh = self.mesh.take().map(|(m, _, _, _)| m).unwrap_or_else(ArrayMesh::new_gd);
        mesh.clear_surfaces();
        mesh.add_surface_from_arrays(PrimitiveType::TRIANGLES, &surface_arrays(&data));
        self.mesh = Some((mesh.clone(), layout, grid.cell_size, lattice.triangular));
        mesh
    }

    /// `chosen` (`water_material`), or the default shader material (created once).
    fn material(&mut self, chosen: Option<&Gd<Material>>) -> Option<Gd<Material>> {
        if let Some(m) = chosen {
            return Some(m.clone());
        }
        if self.default_material.is_none() {
            self.default_material = Some(default_water_material(|| godot_warn!("PipeWater: {DEFAULT_SHADER} not found; the water mesh has no material"))?);
        }
        self.default_material.clone()
    }
}

/// A new material with the addon's water shader; `None` (after `missing` is called) when the
/// shader is not in the project. `PipeWater`'s surface and `PipeWaterWorld` both draw with it.
pub fn default_water_material(missing: impl FnOnce()) -> Option<Gd<Material>> {
    let mut loader = ResourceLoader::singleton();
    if !loader.exists(DEFAULT_SHADER) {
        missing();
        return None;
    }
    let shader = loader.load(DEFAULT_SHADER).and_then(|r| r.try_cast::<Shader>().ok())?;
    let mut material = ShaderMaterial::new_gd();
    material.set_shader(&shader);
    Some(material.upcast())
}

/// The arrays of one `ArrayMesh` surface: vertices and indices (also `PipeWaterWorld`'s mesh).
pub fn surface_arrays(data: &MeshData) -> VarArray {
    let mut arrays = VarArray::new();
    arrays.resize(ArrayType::MAX.ord() as usize, &Variant::nil());
    let vertices: PackedVector3Array = data.positions.iter().map(|p| Vector3::new(p[0], p[1], p[2])).collect();
    let indices: PackedInt32Array = data.indices.iter().map(|&i| i as i32).collect();
    arrays.set(ArrayType::VERTEX.ord() as usize, &vertices.to_variant());
    arrays.set(ArrayType::INDEX.ord() as usize, &indices.to_variant());
    arrays
}
