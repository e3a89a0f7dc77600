//! `PipeWaterWorld`'s far water: the world's water over a large area around the focus, a texel a
//! block of `stride × stride` cells ([`WorldWater::begin_coarse_window`]), in
//! `far_height_texture` / `far_flux_texture` and drawn by the addon's water shader on a second,
//! coarser mesh with the fine window cut out (the shader's `hole`), so the two never overlap.
//!
//! The far water is read without waiting: a read begins, the device sums the blocks, and a later
//! frame takes the small result, at most every [`FAR_WATER_REFRESH_SECONDS`] (or at once when the
//! area moves). Far water changes slowly on the scale of a block, and a read covers a large area,
//! so it need not follow every frame.
//!
//! The far mesh's material is not a `duplicate()` of the node's: duplicating a `ShaderMaterial`
//! lists its properties, which fills its cache with the shader's defaults, and then sets each one on
//! the copy. Godot 4.3 converts a `source_color` parameter that was set from sRGB to linear, but
//! uses an unset one's default as written, so the copy drew the far water in other colours than the
//! window's (darker: scatter (0.0015, 0.010, 0.016) for the default (0.02, 0.10, 0.13)). The far
//! material is a new `ShaderMaterial` on the node material's shader that sets only what the node's
//! material set ([`FollowedParameters`]), and follows later changes to it.

use crate::mesh_layout;
use crate::surface::surface_arrays;
use godot::classes::image::Format;
use godot::classes::mesh::PrimitiveType;
use godot::classes::{ArrayMesh, Image, ImageTexture, Material, MeshInstance3D, Node3D, RenderingServer, Shader, ShaderMaterial};
use godot::prelude::*;
use pipewater_core::quanta::MAX_TERRAIN_ABS;
use pipewater_core::world_water::{CoarseWindowJob, WorldWater, WorldWindow, MAX_COARSE_STRIDE, MAX_COARSE_TEXELS};

/// Seconds between reads of the far water: a flood front at a few m/s moves a metre or two, a
/// fraction of a 16-cell texel, between reads.
pub const FAR_WATER_REFRESH_SECONDS: f64 = 0.25;
/// Largest `far_water_cells`.
pub const MAX_FAR_WATER_CELLS: i64 = 65_536;
/// Largest `far_water_stride` (the first far level's; each further level's is
/// [`FAR_LEVEL_SCALE`] times the one before, up to [`MAX_COARSE_STRIDE`]).
pub const MAX_FAR_WATER_STRIDE: i64 = 64;
/// Most `far_water_levels`.
pub const MAX_FAR_WATER_LEVELS: i64 = 4;
/// How much coarser, and wider, each far level is than the one inside it.
pub const FAR_LEVEL_SCALE: u32 = 4;
/// Shader parameters the far mesh sets itself (its textures, grid, the window's hole, no detail
/// waves): the node's material holds the window's values of these (the detail layer placed in the
/// window mesh's space), which the far material never takes.
pub const FAR_OWN_PARAMETERS: [&str; 16] = [
    "height_texture", "flux_texture", "grid_size", "cell_size", "clipmap_levels", "clipmap_snap", "hole",
    "detail_texture", "detail_on", "detail_period", "detail_offset", "detail_rect", "far_height_texture",
    "far_flux_texture", "far_rect", "far_blend",
];
/// Far texels across the band along the window's edges over which the window's water turns into
/// the far water (the shader's `far_blend`): at the edge the window draws the far water's surface,
/// which the far mesh continues, instead of a step from its cells to the far texels' block means.
/// Two texels: the far mesh's surface between its first two rows of vertices beyond the hole.
pub const FAR_BLEND_TEXELS: u32 = 2;
/// Seconds between checks of every parameter of the node's material against the
/// RenderingServer's (what its cache cannot show: a parameter set to the default the cache
/// already held); a change the cache shows reaches the far material on the next drawn frame.
pub const MATERIAL_SWEEP_SECONDS: f64 = 0.25;

/// The far water's side and stride checked: `(cells rounded up to a multiple of the stride,
/// stride)`, `None` for off (0 cells), or the refusal naming the property and its range.
pub fn far_settings(cells: i64, stride: i64) -> Result<Option<(u32, u32)>, String> {
    if !(1..=MAX_FAR_WATER_STRIDE).contains(&stride) {
        return Err(format!("far_water_stride = {stride} is out of range: valid range is 1 ..= {MAX_FAR_WATER_STRIDE} cells a texel"));
    }
    if !(0..=MAX_FAR_WATER_CELLS).contains(&cells) {
        return Err(format!("far_water_cells = {cells} is out of range: valid range is 0 (off) ..= {MAX_FAR_WATER_CELLS} cells"));
    }
    if cells == 0 {
        return Ok(None);
    }
    let side = (cells as u32).div_ceil(stride as u32) * stride as u32;
    if side / stride as u32 > MAX_COARSE_TEXELS {
        return Err(format!(
            "far_water_cells = {cells} at far_water_stride = {stride} makes {} texels a side, past the {MAX_COARSE_TEXELS} one read holds: valid range is 0 ..= {} cells at this stride",
            side / stride as u32,
            MAX_COARSE_TEXELS as u64 * stride as u64
        ));
    }
    Ok(Some((side, stride as u32)))
}

/// The far levels drawn, innermost first, as (side, stride): the first is `first` (from
/// [`far_settings`]); each next one [`FAR_LEVEL_SCALE`] times as coarse and as wide (its side on
/// whole texels, at most [`MAX_COARSE_TEXELS`] of them), up to `levels` of them. A level is left
/// out once its stride would pass [`MAX_COARSE_STRIDE`], or once the level inside it already
/// covers the whole world (`world`: cells along x and y) wherever it is centred.
pub fn far_levels(first: (u32, u32), levels: u32, world: [u32; 2]) -> Vec<(u32, u32)> {
    let mut out = vec![first];
    while out.len() < levels as usize {
        let (side, stride) = out[out.len() - 1];
        let next_stride = stride * FAR_LEVEL_SCALE;
        if side >= world[0].max(world[1]) || next_stride > MAX_COARSE_STRIDE {
            break;
        }
        let wanted = (side as u64 * FAR_LEVEL_SCALE as u64).min(world[0].max(world[1]) as u64).div_ceil(next_stride as u64);
        out.push(((wanted.min(MAX_COARSE_TEXELS as u64) * next_stride as u64) as u32, next_stride));
    }
    out
}

/// First cell of a far area of `side` cells centred as near `focus` (continuous cell
/// coordinates) as the world allows, on a multiple of `stride` (the blocks stay on one grid of
/// the world however the focus moves, so the texels do not swim); within the world, or at its
/// first cell when the world is smaller.
pub fn far_start(focus: [f64; 2], side: u32, stride: u32, world: [u32; 2]) -> [u32; 2] {
    let mut start = [0u32; 2];
    for axis in 0..2 {
        let room = world[axis].saturating_sub(side);
        let wanted = (focus[axis] - side as f64 / 2.0).clamp(0.0, room as f64);
        let snapped = (wanted / stride as f64).round() as u32 * stride;
        // Rounded up past the room, it steps back a block (still a multiple of the stride).
        start[axis] = if !focus[axis].is_finite() { 0 } else if snapped > room { snapped.saturating_sub(stride) } else { snapped };
        start[axis] = start[axis].min(world[axis].saturating_sub(1) / stride * stride);
    }
    start
}

/// Where the window's material finds the far water: the rectangle the far texels (`far`: first
/// cell, texels, stride; the last texel may hang past the world's edge) cover in the local XZ of
/// the window's mesh (`window`: first cell and cells; the mesh is centred on it), m (−X, −Z, +X,
/// +Z corners), and the width (m) of the band along each of the window's edges (−X, −Z, +X, +Z)
/// over which its water turns into the far water's: [`FAR_BLEND_TEXELS`] far texels, at most a
/// quarter of the window. No band along an edge the far water does not run on past (the world's
/// border, or a far area that ends there), and none at all unless the far texels cover the window.
pub fn far_in_window(far: ([u32; 2], [u32; 2], u32), window: ([u32; 2], [u32; 2]), world: [u32; 2], dx: f32) -> ([f32; 4], [f32; 4]) {
    let (far_origin, texels, stride) = far;
    let (origin, size) = window;
    let mut rect = [0.0; 4];
    let mut beyond = [false; 4];
    let mut covered = true;
    for axis in 0..2 {
        let centre = origin[axis] as f64 + size[axis] as f64 / 2.0;
        let far_first = far_origin[axis] as u64;
        let far_end = far_first + texels[axis] as u64 * stride as u64;
        rect[axis] = ((far_first as f64 - centre) * dx as f64) as f32;
        rect[axis + 2] = ((far_end as f64 - centre) * dx as f64) as f32;
        // An outer far level's area (the inner level it holds) may hang past the world's edge.
        let (first, end) = (origin[axis] as u64, (origin[axis] as u64 + size[axis] as u64).min(world[axis] as u64));
        let far_end_on_world = far_end.min(world[axis] as u64);
        covered &= far_first <= first && far_end_on_world >= end;
        beyond[axis] = far_first < first;
        beyond[axis + 2] = far_end_on_world > end;
    }
    let width = (FAR_BLEND_TEXELS as f32 * stride as f32).min(size[0].min(size[1]) as f32 / 4.0) * dx;
    (rect, beyond.map(|b| if covered && b { width } else { 0.0 }))
}

/// The far water's textures, the read on its way and the mesh that draws them.
#[derive(Default)]
pub struct FarWater {
    pub height_texture: Option<Gd<ImageTexture>>,
    pub flux_texture: Option<Gd<ImageTexture>>,
    pub height_image: Option<Gd<Image>>,
    pub flux_image: Option<Gd<Image>>,
    /// The read on its way.
    job: Option<CoarseWindowJob>,
    /// First cell, texels and stride of what the textures show.
    pub shown: Option<([u32; 2], [u32; 2], u32)>,
    /// Seconds since the last read began.
    since_read: f64,
    mesh_instance: Option<Gd<MeshInstance3D>>,
    mesh_cells: Option<([u32; 2], f32)>,
    /// The far mesh's own material (its textures and hole differ from the node's).
    material: Option<FarMaterial>,
    /// Seconds since every parameter of the node's material was last checked.
    since_material_sweep: f64,
    /// Which far level this is: 0 the innermost, beside the window.
    level: usize,
    /// What the far material was last given of the next level's water ([`show_far_band`]).
    band_given: Option<BandGiven>,
}

/// What a material was last given of the far water around it: the material, the far texture,
/// the rectangle and the bands ([`show_far_band`] sets them again only when one changes).
pub type BandGiven = (InstanceId, Option<InstanceId>, [f32; 4], [f32; 4]);

/// Gives `material` (the window's, or a far level's) the water of `far` (the level around it),
/// where it lies in the local space of the mesh over `area` (first cell, cells; `None`: nothing
/// drawn) and the band along the mesh's edges over which its water turns into `far`'s
/// ([`far_in_window`]); no band without both. `given` keeps what was given, so that nothing is set
/// again while nothing changed: a scene's material set every frame would read as edited.
pub fn show_far_band(material: Option<Gd<Material>>, given: &mut Option<BandGiven>, far: Option<&FarWater>, area: Option<([u32; 2], [u32; 2])>, world: [u32; 2], dx: f32) {
    let Some(mut shader) = material.and_then(|m| m.try_cast::<ShaderMaterial>().ok()) else { return };
    let place = far.and_then(|f| f.shown).zip(area).map(|(shown, area)| far_in_window(shown, area, world, dx));
    let texture = far.and_then(|f| f.height_texture.as_ref());
    let (rect, band) = place.unwrap_or(([0.0; 4], [0.0; 4]));
    let now = (shader.instance_id(), texture.map(|t| t.instance_id()), rect, band);
    if *given == Some(now) {
        return;
    }
    *given = Some(now);
    if let (Some(_), Some(far)) = (place, far) {
        shader.set_shader_parameter("far_height_texture", &far.height_texture.to_variant());
        shader.set_shader_parameter("far_flux_texture", &far.flux_texture.to_variant());
        shader.set_shader_parameter("far_rect", &Vector4::new(rect[0], rect[1], rect[2], rect[3]).to_variant());
    }
    shader.set_shader_parameter("far_blend", &Vector4::new(band[0], band[1], band[2], band[3]).to_variant());
}

impl FarWater {
    /// Far level `level` (0: beside the window), nothing read yet.
    pub fn new(level: usize) -> Self {
        FarWater { level, ..Default::default() }
    }

    /// The name of the mesh that draws this level: `FarWaterSurface`, then `FarWaterSurface2`, ….
    pub fn mesh_name(&self) -> String {
        if self.level == 0 { "FarWaterSurface".to_string() } else { format!("FarWaterSurface{}", self.level + 1) }
    }

    /// The cells this level's texels cover: first cell and cells (the last texel may hang past
    /// the world's edge), once read.
    pub fn area(&self) -> Option<([u32; 2], [u32; 2])> {
        self.shown.map(|(origin, texels, stride)| (origin, [texels[0] * stride, texels[1] * stride]))
    }

    /// Gives this level's material the water of the level around it (`outer`, `None` for the
    /// outermost): [`show_far_band`].
    pub fn show_band(&mut self, outer: Option<&FarWater>, world: [u32; 2], dx: f32) {
        let material = self.mesh_instance.as_ref().filter(|m| m.is_instance_valid()).and_then(|m| m.get_material_override());
        let area = self.area();
        show_far_band(material, &mut self.band_given, outer, area, world, dx);
    }

    /// Reads the far water of `side` cells at `stride` around `focus` when due: takes a read
    /// that arrived (`true`: the textures changed), begins the next after
    /// [`FAR_WATER_REFRESH_SECONDS`] or when the area moved. With `wait`, reads now.
    pub fn update(&mut self, water: &mut WorldWater, focus: [f64; 2], side: u32, stride: u32, delta: f64, wait: bool) -> pipewater_core::Result<bool> {
        self.since_read += delta.max(0.0);
        self.since_material_sweep += delta.max(0.0);
        let [w, h] = water.size();
        let start = far_start(focus, side, stride, [w, h]);
        let blocks = [(w - start[0]).min(side).div_ceil(stride), (h - start[1]).min(side).div_ceil(stride)];
        let wanted = (start, blocks, stride);
        if wait {
            self.job = None;
            let window = water.read_coarse_window(start[0], start[1], side, side, stride)?;
            self.since_read = 0.0;
            self.install(&window);
            return Ok(true);
        }
        let mut changed = false;
        if let Some(job) = &self.job {
            match water.poll_coarse_window(job) {
                None => return Ok(false),
                Some(result) => {
                    self.job = None;
                    self.install(&result?);
                    changed = true;
                }
            }
        }
        if self.since_read >= FAR_WATER_REFRESH_SECONDS || self.shown.is_none_or(|s| s != wanted) {
            self.job = Some(water.begin_coarse_window(start[0], start[1], side, side, stride)?);
            self.since_read = 0.0;
        }
        Ok(changed)
    }

    fn install(&mut self, window: &WorldWindow) {
        (self.height_image, self.height_texture) = update_texture(self.height_image.take(), self.height_texture.take(), &window.height, window.size);
        (self.flux_image, self.flux_texture) = update_texture(self.flux_image.take(), self.flux_texture.take(), &window.flow, window.size);
        self.shown = Some((window.origin, window.size, window.stride));
    }

    /// Draws the far water on a child mesh of `parent` with a copy of `material`, the rectangle
    /// the finer water inside it draws (`window`: first cell and cells; the fine window, or the
    /// far level inside this one) cut out; `dx` the cell size (m), `extent` the world's (m).
    pub fn show_surface(&mut self, parent: &mut Gd<Node3D>, material: Option<Gd<Material>>, dx: f32, extent: [f32; 2], window: Option<([u32; 2], [u32; 2])>) {
        let Some((origin, texels, stride)) = self.shown else { return };
        if !self.mesh_instance.as_ref().is_some_and(|m| m.is_instance_valid()) {
            let mut instance = MeshInstance3D::new_alloc();
            instance.set_name(&self.mesh_name());
            parent.add_child(&instance);
            self.mesh_instance = Some(instance);
            self.mesh_cells = None;
        }
        let Some(mut instance) = self.mesh_instance.clone() else { return };
        let texel = stride as f32 * dx;
        if self.mesh_cells != Some((texels, texel)) {
            let mut mesh = ArrayMesh::new_gd();
            mesh.add_surface_from_arrays(PrimitiveType::TRIANGLES, &surface_arrays(&mesh_layout::grid_mesh(texels[0], texels[1], texel)));
            instance.set_mesh(&mesh);
            let (wx, wz) = (texels[0] as f32 * texel, texels[1] as f32 * texel);
            instance.set_custom_aabb(Aabb::new(Vector3::new(-wx / 2.0, -MAX_TERRAIN_ABS, -wz / 2.0), Vector3::new(wx, 2.0 * MAX_TERRAIN_ABS, wz)));
            self.mesh_cells = Some((texels, texel));
        }
        let centre = [(origin[0] as f32 + texels[0] as f32 * stride as f32 / 2.0) * dx - extent[0] / 2.0, (origin[1] as f32 + texels[1] as f32 * stride as f32 / 2.0) * dx - extent[1] / 2.0];
        instance.set_position(Vector3::new(centre[0], 0.0, centre[1]));
        let sweep = self.since_material_sweep >= MATERIAL_SWEEP_SECONDS;
        if sweep {
            self.since_material_sweep = 0.0;
        }
        let material = material.map(|node_material| FarMaterial::follow(&mut self.material, node_material, sweep));
        instance.set_material_override(material.as_ref());
        if let Some(mut shader) = material.and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
            // The fine window in the far mesh's local XZ (−X, −Z, +X, +Z corners).
            let hole = window.map_or(Vector4::ZERO, |(o, s)| {
                let corner = |cell: u32, half: f32, at: f32| cell as f32 * dx - half - at;
                Vector4::new(corner(o[0], extent[0] / 2.0, centre[0]), corner(o[1], extent[1] / 2.0, centre[1]), corner(o[0] + s[0], extent[0] / 2.0, centre[0]), corner(o[1] + s[1], extent[1] / 2.0, centre[1]))
            });
            shader.set_shader_parameter("height_texture", &self.height_texture.to_variant());
            shader.set_shader_parameter("flux_texture", &self.flux_texture.to_variant());
            shader.set_shader_parameter("grid_size", &Vector2::new(texels[0] as f32, texels[1] as f32).to_variant());
            shader.set_shader_parameter("cell_size", &texel.to_variant());
            shader.set_shader_parameter("clipmap_levels", &1.0f32.to_variant());
            shader.set_shader_parameter("clipmap_snap", &0.0f32.to_variant());
            shader.set_shader_parameter("hole", &hole.to_variant());
            shader.set_shader_parameter("detail_on", &0.0f32.to_variant());
        }
    }

    /// Frees the mesh (the far water is not drawn; the textures stay).
    pub fn hide(&mut self) {
        if let Some(mut mesh) = self.mesh_instance.take().filter(|m| m.is_instance_valid()) {
            mesh.set_material_override(Option::<&Gd<Material>>::None);
            mesh.set_mesh(Option::<&Gd<godot::classes::Mesh>>::None);
            mesh.queue_free();
        }
        self.mesh_cells = None;
        self.band_given = None;
    }

    /// Off: the mesh freed and the read dropped; the textures keep what they last showed.
    pub fn off(&mut self) {
        self.hide();
        self.job = None;
        self.shown = None;
    }

    /// The mesh that draws the far water, while there is one.
    pub fn mesh(&self) -> Option<&Gd<MeshInstance3D>> {
        self.mesh_instance.as_ref()
    }
}

/// The far mesh's material, made from the node's: for a `ShaderMaterial`, a new one on its shader
/// that follows the parameters the node's material set; any other material duplicated (it has no
/// shader parameters to tell apart).
enum FarMaterial {
    Shader {
        own: Gd<ShaderMaterial>,
        from: Gd<ShaderMaterial>,
        shader: Option<Gd<Shader>>,
        /// The shader's parameters the far material follows (all but [`FAR_OWN_PARAMETERS`]).
        names: Vec<StringName>,
        followed: FollowedParameters<Variant>,
    },
    Other {
        own: Gd<Material>,
        from: Gd<Material>,
    },
}

impl FarMaterial {
    /// The far material for `node_material`: `current` brought up to date with it, or made anew
    /// when the node's material, its shader or the shader's parameters changed. With `sweep`,
    /// every parameter is checked against the RenderingServer, not only those whose cached value
    /// changed.
    fn follow(current: &mut Option<FarMaterial>, node_material: Gd<Material>, sweep: bool) -> Gd<Material> {
        let Ok(from) = node_material.clone().try_cast::<ShaderMaterial>() else {
            return match current {
                Some(FarMaterial::Other { own, from }) if *from == node_material => own.clone(),
                _ => {
                    let own = node_material.duplicate_resource();
                    *current = Some(FarMaterial::Other { own: own.clone(), from: node_material });
                    own
                }
            };
        };
        let shader = from.get_shader();
        let fresh = match current {
            Some(FarMaterial::Shader { from: was, shader: had, names, .. }) => *was != from || *had != shader || (sweep && *names != followed_names(shader.as_ref())),
            _ => true,
        };
        if fresh {
            let mut own = ShaderMaterial::new_gd();
            if let Some(shader) = &shader {
                own.set_shader(shader);
            }
            let names = followed_names(shader.as_ref());
            let followed = FollowedParameters::new(names.len());
            *current = Some(FarMaterial::Shader { own, from: from.clone(), shader, names, followed });
        }
        let Some(FarMaterial::Shader { own, from, names, followed, .. }) = current else { unreachable!("made above") };
        let cached: Vec<Option<Variant>> = names.iter().map(|name| Some(from.get_shader_parameter(name)).filter(|v| !v.is_nil())).collect();
        let rid = from.get_rid();
        let server = RenderingServer::singleton();
        for (index, value) in followed.changes(cached, sweep || fresh, |index| !server.material_get_param(rid, &names[index]).is_nil()) {
            own.set_shader_parameter(&names[index], &value.unwrap_or_default());
        }
        if sweep || fresh {
            if own.get_render_priority() != from.get_render_priority() {
                own.set_render_priority(from.get_render_priority());
            }
            if own.get_next_pass() != from.get_next_pass() {
                own.set_next_pass(from.get_next_pass().as_ref());
            }
        }
        own.clone().upcast()
    }
}

/// The parameters of `shader` the far material follows: all it lists but [`FAR_OWN_PARAMETERS`].
fn followed_names(shader: Option<&Gd<Shader>>) -> Vec<StringName> {
    let Some(shader) = shader else { return Vec::new() };
    shader
        .get_shader_uniform_list()
        .iter_shared()
        .filter_map(|entry| entry.try_to::<VarDictionary>().ok())
        .filter_map(|entry| entry.get("name").and_then(|name| name.try_to::<GString>().ok()))
        .filter(|name| !FAR_OWN_PARAMETERS.contains(&name.to_string().as_str()))
        .map(|name| StringName::from(&name))
        .collect()
}

/// The far material's values of the node material's shader parameters, kept in step with it.
///
/// A parameter counts as set on the node's material when the RenderingServer's material holds a
/// value for it; the material's own cache is no witness, since listing its properties (the
/// inspector, `duplicate()`) fills it with the shader's defaults without setting them. The far
/// material sets what was set, to the same value, and leaves the rest unset, so both draw with the
/// same values whichever way Godot feeds set and unset parameters to the shader.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowedParameters<V> {
    /// Each parameter's value in the node material's cache when last looked at.
    cached: Vec<Option<V>>,
    /// What the far material was given for each (`None`: unset, the shader's default).
    given: Vec<Option<V>>,
}

impl<V: PartialEq + Clone> FollowedParameters<V> {
    /// `count` parameters, none given to the far material yet.
    pub fn new(count: usize) -> Self {
        FollowedParameters { cached: vec![None; count], given: vec![None; count] }
    }

    /// The parameters whose value on the far material must change, by index, with the new value
    /// (`None`: unset). `cached` holds each parameter's value in the node material's cache now
    /// (`None` when empty); `held(index)` says whether the server's material holds a value for
    /// it, and is asked where the cached value changed, and of every parameter with `sweep` (a
    /// parameter set to the default its cache already held changes nothing there).
    pub fn changes(&mut self, cached: Vec<Option<V>>, sweep: bool, mut held: impl FnMut(usize) -> bool) -> Vec<(usize, Option<V>)> {
        let mut out = Vec::new();
        for (index, now) in cached.into_iter().enumerate().take(self.cached.len()) {
            if !sweep && self.cached[index] == now {
                continue;
            }
            let value = if now.is_some() && held(index) { now.clone() } else { None };
            self.cached[index] = now;
            if self.given[index] != value {
                self.given[index] = value.clone();
                out.push((index, value));
            }
        }
        out
    }
}

/// `texels` (`size` row-major) into `image` and `texture`, reusing both when the size is the same.
pub fn update_texture(image: Option<Gd<Image>>, texture: Option<Gd<ImageTexture>>, texels: &[[f32; 4]], size: [u32; 2]) -> (Option<Gd<Image>>, Option<Gd<ImageTexture>>) {
    let bytes = PackedByteArray::from(bytemuck::cast_slice::<[f32; 4], u8>(texels));
    let (w, h) = (size[0] as i32, size[1] as i32);
    let same = image.as_ref().is_some_and(|i| i.get_width() == w && i.get_height() == h);
    let image = match image {
        Some(mut image) => {
            image.set_data(w, h, false, Format::RGBAF, &bytes);
            image
        }
        None => match Image::create_from_data(w, h, false, Format::RGBAF, &bytes) {
            Some(image) => image,
            None => return (None, texture),
        },
    };
    let texture = match texture {
        Some(mut t) if same => {
            t.update(&image);
            Some(t)
        }
        _ => ImageTexture::create_from_image(&image),
    };
    (Some(image), texture)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The far area centres on the focus on multiples of the stride, stays within the world,
    /// and starts at the world's first cell when the world is smaller; bad settings are refused
    /// naming the property, a side is rounded up to whole texels.
    #[test]
    fn the_far_area_follows_the_focus_on_the_stride_grid() {
        let world = [8192, 6000];
        let cases = [
            ([4096.0, 3000.0], 2048, 16, [3072, 1984]),
            ([4100.0, 3007.0], 2048, 16, [3072, 1984]),
            ([4110.0, 3000.0], 2048, 16, [3088, 1984]),
            ([10.0, 5990.0], 2048, 16, [0, 3952]),
            ([f64::NAN, 100.0], 2048, 16, [0, 0]),
            ([50.0, 50.0], 8192, 16, [0, 0]),
            ([8000.0, 50.0], 4000, 64, [4160, 0]),
        ];
        for (focus, side, stride, expected) in cases {
            let got = far_start(focus, side, stride, world);
            println!("focus {focus:?}, {side} cells at stride {stride}: starts at {got:?} (expected {expected:?})");
            assert_eq!(got, expected);
            assert!(got.iter().all(|v| v % stride == 0), "on the stride's grid");
        }
        assert_eq!(far_settings(0, 16), Ok(None));
        assert_eq!(far_settings(1000, 16), Ok(Some((1008, 16))), "rounded up to whole texels");
        for (cells, stride, name) in [(-1, 16, "far_water_cells"), (MAX_FAR_WATER_CELLS + 1, 16, "far_water_cells"), (4096, 0, "far_water_stride"), (4096, 65, "far_water_stride"), (65_536, 8, "far_water_cells")] {
            let refused = far_settings(cells, stride).unwrap_err();
            println!("{cells} cells at stride {stride}: {refused}");
            assert!(refused.starts_with(name), "{refused}");
        }
    }

    /// Each far level is four times as coarse and as wide as the one inside it, on whole texels,
    /// stops at the world's size and at texels of MAX_COARSE_STRIDE cells, and no level is added
    /// once the one inside it covers the world.
    #[test]
    fn far_levels_widen_by_four_until_they_cover_the_world() {
        let cases: [((u32, u32), u32, [u32; 2], Vec<(u32, u32)>); 6] = [
            ((4096, 16), 2, [16384, 16384], vec![(4096, 16), (16384, 64)]),
            ((4096, 16), 4, [16384, 16384], vec![(4096, 16), (16384, 64)]),
            ((4096, 16), 4, [65536, 40000], vec![(4096, 16), (16384, 64), (65536, 256)]),
            ((4096, 16), 2, [8192, 8192], vec![(4096, 16), (8192, 64)]),
            ((1536, 16), 3, [2048, 2048], vec![(1536, 16), (2048, 64)]),
            ((256, 16), 2, [256, 256], vec![(256, 16)]),
        ];
        for (first, levels, world, expected) in cases {
            let got = far_levels(first, levels, world);
            println!("first {first:?}, {levels} levels, world {world:?}: {got:?}");
            assert_eq!(got, expected);
        }
        assert_eq!(far_levels((1000, 3), 3, [100_000, 100_000]), vec![(1000, 3), (4008, 12), (16032, 48)], "whole texels");
        assert_eq!(far_levels((4096, 64), 4, [100_000, 100_000]), vec![(4096, 64), (16384, 256)], "texels of 256 cells at most");
    }

    /// The window's material finds a far texel where the far mesh draws it: the far rectangle in
    /// the window mesh's space, moved by the window mesh's centre, is the far mesh's (centred on
    /// its texels); the band runs along the edges past which far water is drawn, not along the
    /// world's border, two texels wide or a quarter of a small window, and not at all where the
    /// far texels do not cover the window.
    #[test]
    fn the_window_finds_the_far_water_where_the_far_mesh_draws_it() {
        let dx = 2.0;
        let world = [8192, 1000];
        // (far: first cell, texels, stride), (window: first cell, cells), expected bands.
        let cases = [
            (([3072, 0], [128, 63], 16), ([3900, 200], [512, 512]), [64.0, 64.0, 64.0, 64.0]),
            (([0, 0], [256, 63], 16), ([0, 488], [512, 512]), [0.0, 64.0, 64.0, 0.0]),
            (([3072, 0], [128, 63], 16), ([3900, 200], [64, 64]), [32.0; 4]),
            (([4096, 0], [32, 63], 16), ([4000, 200], [512, 512]), [0.0; 4]),
            (([3072, 0], [52, 63], 16), ([3392, 200], [512, 512]), [64.0, 64.0, 0.0, 64.0]),
        ];
        for ((far, window, expected), case) in cases.iter().zip(0..) {
            let (rect, band) = far_in_window(*far, *window, world, dx);
            println!("case {case}: far {far:?}, window {window:?}: far rect {rect:?} in the window's space, bands {band:?}");
            assert_eq!(band, *expected, "case {case}");
            // The far mesh's centre and the window mesh's, in the world's cells.
            let (origin, texels, stride) = *far;
            for axis in 0..2 {
                let far_centre = origin[axis] as f32 + texels[axis] as f32 * stride as f32 / 2.0;
                let window_centre = window.0[axis] as f32 + window.1[axis] as f32 / 2.0;
                let half = texels[axis] as f32 * stride as f32 * dx / 2.0;
                let shift = (far_centre - window_centre) * dx;
                assert_eq!([rect[axis], rect[axis + 2]], [shift - half, shift + half], "case {case}, axis {axis}");
            }
        }
    }

    /// The far material takes a parameter only where the node's material set one (the server
    /// holds it), whatever its cache shows: a cache filled with the defaults by a listing of the
    /// properties gives nothing; a value set, changed or cleared reaches the far material at the
    /// next look; a parameter set to the default its cache already held is found by a sweep.
    #[test]
    fn the_far_material_takes_only_the_parameters_that_were_set() {
        // Three parameters (values stand for colours); the server's view is `held`.
        let mut followed = FollowedParameters::<f32>::new(3);
        let mut held = [false; 3];
        let look = |followed: &mut FollowedParameters<f32>, cached: [Option<f32>; 3], held: [bool; 3], sweep: bool| {
            let changes = followed.changes(cached.to_vec(), sweep, |i| held[i]);
            println!("cache {cached:?}, server holds {held:?}, sweep {sweep}: changes {changes:?}");
            changes
        };
        assert_eq!(look(&mut followed, [None; 3], held, true), vec![], "nothing set, nothing given");
        let defaults = [Some(0.02), Some(0.56), Some(0.1)];
        assert_eq!(look(&mut followed, defaults, held, false), vec![], "a listing's defaults in the cache give nothing");
        assert_eq!(look(&mut followed, defaults, held, true), vec![], "nor at a sweep");
        held[1] = true;
        assert_eq!(look(&mut followed, [Some(0.02), Some(0.3), Some(0.1)], held, false), vec![(1, Some(0.3))], "a value set reaches it");
        assert_eq!(look(&mut followed, [Some(0.02), Some(0.3), Some(0.1)], held, false), vec![], "once");
        assert_eq!(look(&mut followed, [Some(0.02), Some(0.4), Some(0.1)], held, false), vec![(1, Some(0.4))], "a change reaches it");
        held[2] = true;
        assert_eq!(look(&mut followed, [Some(0.02), Some(0.4), Some(0.1)], held, false), vec![], "set to the cached default: not seen between sweeps");
        assert_eq!(look(&mut followed, [Some(0.02), Some(0.4), Some(0.1)], held, true), vec![(2, Some(0.1))], "found by the sweep");
        held[1] = false;
        assert_eq!(look(&mut followed, [Some(0.02), None, Some(0.1)], held, false), vec![(1, None)], "a parameter cleared is unset on it");
    }
}
