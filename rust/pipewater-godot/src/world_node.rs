//! `PipeWaterWorld`: water for a world far larger than one `PipeWater` grid (16384² cells and
//! past it), stored in pages whose memory and cost follow the water
//! ([`pipewater_core::world_water::WorldWater`] on the wgpu device).
//!
//! The node is thin: it turns Godot positions into the world's local metres (the world centred on
//! the node, like `PipeWater`'s grid), runs the world each physics frame, and shows the water in a
//! window of cells around a focus node (the camera, a player) as `height_texture` and
//! `flux_texture` in `PipeWater`'s texel layouts, drawn by the addon's water shader on a mesh that
//! moves with the window; beyond the window, the far water of a larger area a texel a block of
//! cells ([`crate::world_far_water`]) on a coarser mesh with the window cut out. What it does not
//! do yet is said in `docs/BACKENDS.md` ("Worlds in pages").

use crate::errors::{core_message, ErrorLog};
use crate::mapping::{global_to_local_point, OUTSIDE_HEIGHT};
use crate::mesh_layout;
use crate::validate;
use crate::surface::{default_water_material, surface_arrays};
use crate::world_far_water::{far_levels, far_settings, show_far_band, update_texture, BandGiven, FarWater, MAX_FAR_WATER_LEVELS};
use crate::saved_state::PipeWaterState;
use godot::classes::image::Format;
use godot::classes::mesh::PrimitiveType;
use godot::classes::{ArrayMesh, INode3D, Image, ImageTexture, Material, MeshInstance3D, Node3D, ShaderMaterial};
use godot::prelude::*;
use pipewater_core::quanta::MAX_TERRAIN_ABS;
use pipewater_core::backend::gpu::world::WorldSaveJob;
use pipewater_core::world_water::{WorldWater, MAX_FAR_STEP_EVERY, MAX_FOCUS_RADIUS_CELLS, MAX_WINDOW_SIDE};
use crate::node::WaterBoundary;
use pipewater_core::{Boundary, Params};

mod authoring;
mod bodies;
mod detail;
mod sources;
mod terrain;

/// Cells the window moves by at least: a focus walking about does not shift the textures (and
/// the surface's vertices) every frame.
pub const WINDOW_SNAP_CELLS: u32 = 16;
/// Rows of cells [`PipeWaterWorld::set_terrain_from_image`] writes at a time.
const TERRAIN_BAND_ROWS: u32 = 256;
/// Smallest window side, cells.
pub const MIN_WINDOW_CELLS: i32 = 16;

/// First cell of a `window`-cell window centred as near `focus` (continuous cell coordinates)
/// as the world allows, snapped to [`WINDOW_SNAP_CELLS`]; the window lies within the world (or
/// covers it, when the world is smaller).
pub fn window_start(focus: [f64; 2], window: [u32; 2], world: [u32; 2]) -> [u32; 2] {
    let mut start = [0u32; 2];
    for axis in 0..2 {
        let room = world[axis].saturating_sub(window[axis]);
        let wanted = (focus[axis] - window[axis] as f64 / 2.0).clamp(0.0, room as f64);
        let snapped = ((wanted / WINDOW_SNAP_CELLS as f64).round() as u32 * WINDOW_SNAP_CELLS).min(room);
        start[axis] = if focus[axis].is_finite() { snapped } else { 0 };
    }
    start
}

/// Rows `first .. first + rows` of the ground an image of `size` pixels makes at `factor` cells a
/// pixel: bilinear between pixel centres (cell centres sample at `(cell + ½)/factor − ½`),
/// clamped at the image's edges, row-major over `size[0] · factor` columns.
pub fn upsampled_band(pixels: &[f32], size: [u32; 2], factor: u32, first: u32, rows: u32) -> Vec<f32> {
    let [iw, ih] = size;
    let at = |x: i64, y: i64| pixels[(y.clamp(0, ih as i64 - 1) as u32 * iw + x.clamp(0, iw as i64 - 1) as u32) as usize];
    let coordinate = |cell: u32| (cell as f64 + 0.5) / factor as f64 - 0.5;
    let columns = iw * factor;
    let mut out = Vec::with_capacity(columns as usize * rows as usize);
    for row in first..first + rows {
        let v = coordinate(row);
        let (y0, ty) = (v.floor() as i64, (v - v.floor()) as f32);
        for col in 0..columns {
            let u = coordinate(col);
            let (x0, tx) = (u.floor() as i64, (u - u.floor()) as f32);
            let top = at(x0, y0) + (at(x0 + 1, y0) - at(x0, y0)) * tx;
            let bottom = at(x0, y0 + 1) + (at(x0 + 1, y0 + 1) - at(x0, y0 + 1)) * tx;
            out.push(top + (bottom - top) * ty);
        }
    }
    out
}

/// Whether `bytes` begin as a `PipeWaterWorld`'s save (its checks come when it is read); the
/// refusal says what they are instead.
pub fn world_state_kind(bytes: &[u8]) -> Result<(), String> {
    use pipewater_core::world_save::{WORLD_MAGIC, WORLD_MAGIC_WITHOUT_SOURCES};
    let head = bytes.get(..8).unwrap_or(bytes);
    if head == WORLD_MAGIC || head == WORLD_MAGIC_WITHOUT_SOURCES {
        Ok(())
    } else if bytes.is_empty() {
        Err("the state holds no bytes (a PipeWaterState.new() never given a save's data)".into())
    } else if head == pipewater_core::save::SAVE_MAGIC {
        Err("the state is a PipeWater's (its save_state()), not a PipeWaterWorld's; give it to a PipeWater's initial_state, or save this world with PipeWaterWorld.save_state()".into())
    } else {
        Err(format!("the state's {} bytes are not a PipeWaterWorld's save (they begin with {head:02x?})", bytes.len()))
    }
}

/// Water for a whole world, stored in pages (see the module docs and `docs/BACKENDS.md`).
///
/// One grid far larger than a `PipeWater` grid (16384² cells and past it), stored in pages of 56²
/// cells whose device memory and step follow the water: the same model as `PipeWater`, bit for
/// bit, with its calls by global position anywhere in the world (`add_water`, `modify_terrain`,
/// `add_source`, `get_height`, `get_depth`, `get_flow_velocity`). It draws the water of the
/// `window_cells`² cells around `focus_node` at full resolution (`height_texture`,
/// `flux_texture`), and beyond that window the far water of `far_water_cells`² cells a texel a
/// block of `far_water_stride`² cells (`far_height_texture`, `far_flux_texture`) on a coarser mesh
/// with the window cut out. Far water may step less often (`focus_nodes`, `focus_radius`,
/// `far_step_every`); saves hold only the pages with water (`save_state_async`,
/// `load_state_async`). `PipeWaterBody` hulls float on it and push its water as on `PipeWater`
/// (each physics frame, water of 1000 kg/m³). `PipeWater`'s detail waves ring over a window
/// around `detail_follow` within the drawn one (`detail_waves`, on by default as on a grid:
/// `add_ripple`, `get_height(position, true)`, `detail_texture`), the same across page borders
/// as on a grid. Needs a wgpu device.
///
/// In the editor the world is made when its scene opens and stands still unless
/// `simulate_in_editor`; the window drawn follows the editor's camera, and the addon's plugin
/// paints, undoes and bakes it as it does a `PipeWater` (the undo payload from
/// `begin_change_record` / `finish_change_record`). `PipeWaterSource` nodes pour into it.
#[derive(GodotClass)]
#[class(init, tool, base = Node3D)]
pub struct PipeWaterWorld {
    /// Cells along local X and Z. Each side 1 ..= 1 073 741 823; a world far past 16384² is what
    /// this node is for. Changing it starts a new, dry world.
    #[export]
    #[init(val = Vector2i::new(4096, 4096))]
    world_size: Vector2i,
    /// Side of a cell, m. Changing it starts a new, dry world.
    #[export(range = (0.01, 100.0, 0.01, or_greater, suffix = "m"))]
    #[init(val = 1.0)]
    cell_size: f64,
    /// Height of the ground (local Y, m) wherever no terrain was set. Changing it starts a new,
    /// dry world.
    #[export(range = (-1000.0, 1000.0, 0.01, or_greater, or_less, suffix = "m"))]
    ground_height: f64,
    /// The terrain the ground comes from, as `PipeWater.terrain_source`: a Terrain3D, an
    /// HTerrain or a `CollisionShape3D` holding a `HeightMapShape3D` (static geometry baked by
    /// rays is `PipeWater`'s alone), read by the same code, and followed live: the rectangle an
    /// edit changes (Terrain3D's `maps_edited`, HTerrain's `region_changed`, a shape's `changed`)
    /// is read again, water kept, on pages with water and without alike. A world is read in
    /// slices of 128² cells over physics frames, nearest `focus_node` first, within
    /// `terrain_read_budget_ms` a frame, until the whole ground is in (`is_terrain_source_read()`,
    /// `terrain_source_read`; `bake_terrain()` reads it at once); the water does not wait for it:
    /// before each frame the slices its water (and what is about to be poured) can reach in the
    /// frame are read first, over the budget if need be, so no water steps on ground not yet
    /// read. Queries far from any water may see `ground_height` there until its slice is in.
    /// The world must lie within the source; a source that is of another kind, freed, smaller
    /// than the world or unreadable is refused (`get_last_error()`) and the world keeps the
    /// ground it has and steps on it. A loaded world keeps its save's ground (what the game dug)
    /// and follows the source's edits. Empty: none (the ground read so far stays).
    /// `docs/TERRAIN_SOURCES.md`.
    #[export]
    #[var(set)]
    terrain_source: NodePath,
    /// Where `terrain_source` has no ground (holes, gaps between regions, heights that are not
    /// finite): `PipeWater.TERRAIN_HOLES_WALL` (the default: nothing enters, nothing is lost) or
    /// `PipeWater.TERRAIN_HOLES_DRAIN` (the hole's rim cells drain what reaches them; the ledger
    /// counts it as removed). Changing it reads the whole source again.
    #[export]
    #[var]
    terrain_holes: crate::node::terrain_source::TerrainHoles,
    /// Time a physics frame may spend reading `terrain_source`, ms (0.1 ..= 1000; at least one
    /// slice of 128² cells is read a frame): the world's whole ground, then the edits the source
    /// reports.
    #[export(range = (0.1, 100.0, 0.1, or_greater, suffix = "ms"))]
    #[init(val = 4.0)]
    terrain_read_budget_ms: f64,
    /// Gravity, m/s².
    #[export(range = (0.1, 100.0, 0.01, suffix = "m/s²"))]
    #[init(val = 9.81)]
    gravity: f64,
    /// Boundary of the local −Z edge (`PipeWater.BOUNDARY_WALL`, `BOUNDARY_OPEN`,
    /// `BOUNDARY_INFLOW`, `BOUNDARY_LEVEL`), as on `PipeWater`.
    #[export_group(name = "Boundaries")]
    #[export]
    boundary_north: WaterBoundary,
    /// Boundary of the local +X edge.
    #[export]
    boundary_east: WaterBoundary,
    /// Boundary of the local +Z edge.
    #[export]
    boundary_south: WaterBoundary,
    /// Boundary of the local −X edge.
    #[export]
    boundary_west: WaterBoundary,
    /// Inflow through the −Z edge when it is `BOUNDARY_INFLOW`, m³/s.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    inflow_rate_north: f64,
    /// Inflow through the +X edge when it is `BOUNDARY_INFLOW`, m³/s.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    inflow_rate_east: f64,
    /// Inflow through the +Z edge when it is `BOUNDARY_INFLOW`, m³/s.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    inflow_rate_south: f64,
    /// Inflow through the −X edge when it is `BOUNDARY_INFLOW`, m³/s.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    inflow_rate_west: f64,
    /// Surface of the water beyond the −Z edge when it is `BOUNDARY_LEVEL` (a sea), local m.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    boundary_level_north: f64,
    /// Surface of the water beyond the +X edge when it is `BOUNDARY_LEVEL`, local m.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    boundary_level_east: f64,
    /// Surface of the water beyond the +Z edge when it is `BOUNDARY_LEVEL`, local m.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    boundary_level_south: f64,
    /// Surface of the water beyond the −X edge when it is `BOUNDARY_LEVEL`, local m.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    boundary_level_west: f64,
    /// Whether the world steps each physics frame.
    #[export_group(name = "")]
    #[export]
    #[init(val = true)]
    running: bool,
    /// When true, the world also steps in the editor (its water flows while you build the
    /// level); otherwise the editor shows the water as it stands: baked in `initial_state`, and
    /// as the editor's brushes paint it. In the editor the window of water drawn follows the
    /// editor's 3D camera.
    #[export]
    simulate_in_editor: bool,
    /// Water baked into the scene: a `PipeWaterState` whose `data` is this node's save (the bytes
    /// of `save_state()` or of `state_saved`; `docs/BACKENDS.md` shows a script that stores
    /// one as a resource). The world starts from it instead of dry: its water, ground, sources and
    /// ledger, its size becoming the state's `world_size`; `cell_size` and the edges stay the
    /// node's. It is read when the world is made, on the calling thread (a 16384² world with 5 %
    /// wet takes about 2 s, as a scene's loading does; `load_state_async` loads without holding
    /// the game). Setting it starts the world again from it at the next physics frame (dry,
    /// when cleared). A `PipeWater`'s state is refused when set, keeping the previous one; a
    /// state that fails its checks when read is reported and the world starts dry.
    #[export]
    #[var(set)]
    initial_state: Option<Gd<PipeWaterState>>,
    /// The node the shown window of water follows (a camera, a player); empty: the window stays
    /// centred on this node. It is also a focus of the focus policy (`far_step_every`).
    #[export]
    focus_node: NodePath,
    /// More focuses besides `focus_node` (players, a boat, another camera), for the focus policy:
    /// with `far_step_every` other than 1, water farther than `focus_radius` from every focus
    /// steps on one physics frame in `far_step_every`. Freed nodes and nodes outside the tree are
    /// skipped. With no focus at all, no water is far.
    #[export]
    focus_nodes: Array<Gd<Node3D>>,
    /// Distance from the nearest focus past which water is far, m (0 or more; at most 10⁹
    /// cells). A page of the world is far when all of it lies farther than this from every focus.
    #[export(range = (0.0, 10000.0, 1.0, or_greater, suffix = "m"))]
    #[init(val = 512.0)]
    focus_radius: f64,
    /// How often far water steps, 0 ..= 1024: on one physics frame in this many. 1 (the default)
    /// steps all water every frame; 0 pauses far water until a focus comes near. On the frames it
    /// sits out, far water is walled off from the water that steps (nothing is lost) and its
    /// sources and inflow edges pause with it: a player coming back finds a far river 1/N as far
    /// along as it would be, still flowing, a far lake still filling, more slowly.
    #[export(range = (0.0, 1024.0, 1.0))]
    #[init(val = 1)]
    far_step_every: i64,
    /// Cells a side of the window around the focus that `height_texture` and `flux_texture`
    /// hold and the surface mesh covers, 16 ..= 4096.
    #[export(range = (16.0, 4096.0, 16.0))]
    #[init(val = 256)]
    window_cells: i32,
    /// Whether the node draws the water itself (a child mesh with `water_material`).
    #[export]
    #[init(val = true)]
    show_mesh: bool,
    /// The water's material; empty: the addon's water shader.
    #[export]
    water_material: Option<Gd<Material>>,
    /// The window's height texels (`Image.FORMAT_RGBAF`): surface, depth, terrain, wet.
    #[var(get, no_set)]
    height_texture: Option<Gd<ImageTexture>>,
    /// The window's flow texels (`Image.FORMAT_RGBAF`): velocity x, velocity z, speed, discharge.
    #[var(get, no_set)]
    flux_texture: Option<Gd<ImageTexture>>,
    /// Cells a side of the area around the focus whose far water is drawn beyond the window, a
    /// texel a block of `far_water_stride` cells (rounded up to whole blocks); 0 turns the far
    /// water off. 0 ..= 65536, at most 4096 texels a side. Read without waiting, every quarter
    /// second or when the area moves; the fine window is cut out of its mesh.
    #[export(range = (0.0, 65536.0, 16.0))]
    #[init(val = 4096)]
    far_water_cells: i64,
    /// Cells along a side of one far-water texel, 1 ..= 64: 16 (the default) draws a 4096-cell
    /// area as 256² texels, about as fine as a camera 1–5 km up sees water it looks at from afar.
    #[export(range = (1.0, 64.0, 1.0))]
    #[init(val = 16)]
    far_water_stride: i64,
    /// Far water levels drawn around each other, 1 ..= 4: each next level is 4 times as coarse
    /// and as wide as the one inside it (with the defaults, 16 m texels over 4096 cells, then 64 m
    /// texels over 16384 cells), up to texels of 256 cells and no farther than the level inside
    /// it needs to cover the whole world. Each level's water turns into the next one's along its
    /// edges, as the window's does into the first level's.
    #[export(range = (1.0, 4.0, 1.0))]
    #[init(val = 2)]
    far_water_levels: i64,
    /// The far water's height texels (`Image.FORMAT_RGBAF`), a texel a block of
    /// `far_water_stride` cells: mean surface of its wet cells (m), mean depth over the block (m),
    /// mean ground under its wet cells (over the block when none is), share of its cells wet 0..1.
    /// Pages of the world holding no water read dry.
    #[var(get, no_set)]
    far_height_texture: Option<Gd<ImageTexture>>,
    /// The far water's flow texels (`Image.FORMAT_RGBAF`): velocity x and z and speed (m/s),
    /// depth-weighted over the block; mean discharge (m²/s).
    #[var(get, no_set)]
    far_flux_texture: Option<Gd<ImageTexture>>,
    /// The detail wave layer (`PipeWater`'s Detail Waves: ripples, wakes, splashes and rain
    /// finer than the cells) over a window of `detail_window`² detail cells around
    /// `detail_follow` (else the water the camera looks at), kept within the window the node
    /// draws at full resolution; its waves stay where they are in the world as it moves, and
    /// page borders do not exist for them (`docs/DETAIL_WAVES.md`). It runs on the device beside
    /// the world's steps, with nothing read back but the texels and the heights queries ask for
    /// (a frame or two late, as `PipeWater`'s on a GPU): about 0.2 ms a frame on an H200 at the
    /// default window, as on a `PipeWater` grid. On by default, as on `PipeWater`.
    #[export_group(name = "Detail Waves")]
    #[export]
    #[var(set)]
    #[init(val = true)]
    detail_waves: bool,
    /// Detail cells per cell side, `1 ..= 16`: the detail waves' cells are
    /// `cell_size / detail_subdivision` m. Changing it puts the waves at rest.
    #[export(range = (1.0, 16.0, 1.0, suffix = "per cell"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().subdivision as i64)]
    detail_subdivision: i64,
    /// Detail cells per side of the detail window, `32 ..= 4096`: it spans
    /// `detail_window × cell_size / detail_subdivision` m (64 m by default). Changing it puts
    /// the waves at rest.
    #[export(range = (32.0, 4096.0, 32.0, suffix = "cells"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().window as i64)]
    detail_window: i64,
    /// Fastest the detail waves travel, m/s, `0.05 ..= 50`: they run at √(g·depth) up to it.
    #[export(range = (0.05, 50.0, 0.01, suffix = "m/s"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().max_celerity as f64)]
    detail_max_celerity: f64,
    /// How fast detail waves die down, 1/s, `0 ..= 100`: a wave left alone keeps
    /// `exp(−detail_damping × t)` of its height.
    #[export(range = (0.0, 10.0, 0.01, or_greater, suffix = "1/s"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().damping as f64)]
    detail_damping: f64,
    /// How strongly `PipeWaterBody` hulls raise detail waves (bow waves, wakes, splashes),
    /// `0 ..= 10`: 1 is the pressure of the water they displace.
    #[export(range = (0.0, 10.0, 0.01))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().hull_strength as f64)]
    detail_hull_strength: f64,
    /// Rain on the detail waves, drops per m² per second, `0 ..= 1000` (0: none).
    #[export(range = (0.0, 200.0, 0.1, or_greater, suffix = "drops/m²/s"))]
    #[var(set)]
    rain_rate: f64,
    /// Height of a rain drop's ripple, m, `0 ..= 1`.
    #[export(range = (0.0, 0.2, 0.001, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().rain_drop as f64)]
    rain_drop_height: f64,
    /// The `Node3D` the detail window follows (a boat, the player). Empty: the water the
    /// viewport's camera looks at, else `focus_node`; the window stays within the one the node
    /// draws.
    #[export]
    detail_follow: NodePath,
    /// The detail waves (`Image.FORMAT_RGBAH`, `detail_window`² texels, stored toroidally as
    /// `PipeWater.detail_texture`: R height m, G and B slopes along local +X and +Z, A vertical
    /// velocity m/s), drawn by the window's mesh; one calm texel while the layer is off.
    #[var(get, no_set)]
    detail_texture: Option<Gd<ImageTexture>>,
    /// The detail texture's image and bytes, and the refusal of the layer last reported.
    detail_output: detail::WorldDetailOutput,
    /// The far water's levels, innermost first: each one's read, textures and mesh.
    far: Vec<FarWater>,
    /// The far-water settings last accepted (the first level's side and stride, and the levels),
    /// and the refusal last reported.
    far_accepted: Option<Option<((u32, u32), u32)>>,
    refused_far: Option<String>,
    /// What the window's material was last given of the far water: the material, the far
    /// texture, the far rectangle and the bands (set again only when one changes: a scene's
    /// material set every frame would read as edited).
    far_in_window_given: Option<BandGiven>,
    /// The images the textures were last given (what scripts read on the CPU).
    height_image: Option<Gd<Image>>,
    flux_image: Option<Gd<Image>>,
    water: Option<WorldWater>,
    /// (world_size, cell_size, ground_height) the world was made with.
    built_with: Option<(Vector2i, f64, f64)>,
    /// First cell and size of the window shown.
    window: Option<([u32; 2], [u32; 2])>,
    mesh_instance: Option<Gd<MeshInstance3D>>,
    mesh_cells: Option<([u32; 2], f32)>,
    default_material: Option<Gd<Material>>,
    /// Whether the water changed since the window was last read.
    window_stale: bool,
    /// A save on its way (`save_state_async`).
    saving: Option<WorldSaveJob>,
    /// A load on its way (`load_state_async`): a worker decoding the save and making its world.
    loading: Option<std::thread::JoinHandle<pipewater_core::Result<WorldWater>>>,
    /// Parameters last refused, so that the refusal is reported once.
    refused_params: Option<Params>,
    /// The focus settings last refused, so that the refusal is reported once.
    refused_focus: Option<String>,
    /// Whether `PipeWaterBody` hulls pushed the water last physics frame (their displacement is
    /// taken out once when the last one leaves).
    had_bodies: bool,
    /// The link to `terrain_source`: what it is, what is left to read, its drains.
    terrain_link: terrain::WorldTerrainLink,
    /// Whether the open change record was reported as holding the water back.
    warned_recording: bool,
    /// The sources placed for `PipeWaterSource` nodes (`world_node/sources.rs`).
    source_placements: crate::node::sources::SourcePlacements,
    #[init(val = ErrorLog::for_class("PipeWaterWorld"))]
    errors: ErrorLog,
    base: Base<Node3D>,
}

#[godot_api]
impl INode3D for PipeWaterWorld {
    fn enter_tree(&mut self) {
        self.base_mut().add_to_group(crate::water_body::WORLD_GROUP);
    }

    fn ready(&mut self) {
        self.ensure_world();
    }

    fn physics_process(&mut self, delta: f64) {
        if !self.ensure_world() {
            return;
        }
        self.poll_save();
        self.poll_load();
        self.sync_sources();
        self.read_terrain_source(Some(self.terrain_read_budget()));
        let in_editor = godot::classes::Engine::singleton().is_editor_hint();
        // A stroke's record holds the edits alone: the water waits while one is open.
        let recording = self.water.as_ref().is_some_and(|w| w.is_recording());
        if recording && !in_editor && !self.warned_recording {
            // A script that forgot finish_change_record would otherwise freeze the water silently.
            self.errors.reject("the water waits: a change record is open (begin_change_record); finish_change_record lets it step again".into());
        }
        self.warned_recording = recording && !in_editor;
        if self.running && (!in_editor || self.simulate_in_editor) && !recording && self.terrain_link.may_step() {
            self.read_ground_within_reach((delta as f32).clamp(0.0, 10.0));
            self.sync_focus();
            self.sync_detail();
            if !in_editor {
                self.couple_bodies(delta.clamp(0.0, 10.0));
            }
            let result = self.water.as_mut().map(|w| w.advance((delta as f32).clamp(0.0, 10.0)));
            self.core("step", result);
            self.window_stale = true;
        }
    }

    fn process(&mut self, delta: f64) {
        // Once a drawn frame, not once a physics tick: a slow frame runs several ticks, and the
        // window is for drawing.
        if self.water.is_some() {
            self.show_window(false);
            self.show_far_water(delta, false);
            self.show_detail();
        }
    }

    fn exit_tree(&mut self) {
        if let Some(mut mesh) = self.mesh_instance.take().filter(|m| m.is_instance_valid()) {
            mesh.set_material_override(Option::<&Gd<Material>>::None);
            mesh.set_mesh(Option::<&Gd<godot::classes::Mesh>>::None);
            mesh.queue_free();
        }
        self.mesh_cells = None;
        self.far.iter_mut().for_each(FarWater::off);
    }
}

#[godot_api]
impl PipeWaterWorld {
    /// Emitted after a new world was made (at start, or after `world_size`, `cell_size` or
    /// `ground_height` changed).
    #[signal]
    fn world_rebuilt();

    /// Emitted when the whole ground of `terrain_source` is in (the world steps from the next
    /// physics frame on): after the world is made (not loaded: a save holds its ground), the
    /// source is set, `terrain_holes` changes, or `bake_terrain()`.
    #[signal]
    fn terrain_source_read();

    /// Sets `terrain_source`: the ground is read from it over the next physics frames (the world
    /// waits for it). Empty: no source, the ground read so far is kept.
    #[func]
    fn set_terrain_source(&mut self, value: NodePath) {
        self.terrain_link.forget(!value.is_empty());
        self.terrain_source = value;
    }

    /// Sets `detail_waves`: turns the layer on (its waves at rest) or off.
    #[func]
    fn set_detail_waves(&mut self, value: bool) {
        self.detail_waves = value;
    }

    /// Sets `detail_subdivision` (`1 ..= 16`).
    #[func]
    fn set_detail_subdivision(&mut self, value: i64) {
        let max = pipewater_core::detail::MAX_SUBDIVISION as i64;
        if self.errors.accept(validate::int_in("detail_subdivision", value, 1, max)).is_some() {
            self.detail_subdivision = value;
        }
    }

    /// Sets `detail_window` (cells, `32 ..= 4096`).
    #[func]
    fn set_detail_window(&mut self, value: i64) {
        let (lo, hi) = pipewater_core::detail::WINDOW_RANGE;
        if self.errors.accept(validate::int_in("detail_window", value, lo as i64, hi as i64)).is_some() {
            self.detail_window = value;
        }
    }

    /// Sets `detail_max_celerity` (m/s, `0.05 ..= 50`).
    #[func]
    fn set_detail_max_celerity(&mut self, value: f64) {
        if self.errors.accept(validate::float_in("detail_max_celerity", value, 0.05, 50.0, " m/s")).is_some() {
            self.detail_max_celerity = value;
        }
    }

    /// Sets `detail_damping` (1/s, `0 ..= 100`).
    #[func]
    fn set_detail_damping(&mut self, value: f64) {
        if self.errors.accept(validate::float_in("detail_damping", value, 0.0, 100.0, " 1/s")).is_some() {
            self.detail_damping = value;
        }
    }

    /// Sets `detail_hull_strength` (`0 ..= 10`).
    #[func]
    fn set_detail_hull_strength(&mut self, value: f64) {
        if self.errors.accept(validate::float_in("detail_hull_strength", value, 0.0, 10.0, "")).is_some() {
            self.detail_hull_strength = value;
        }
    }

    /// Sets `rain_rate` (drops per m² per second, `0 ..= 1000`).
    #[func]
    fn set_rain_rate(&mut self, value: f64) {
        if self.errors.accept(validate::float_in("rain_rate", value, 0.0, 1000.0, " drops/m²/s")).is_some() {
            self.rain_rate = value;
        }
    }

    /// Sets `rain_drop_height` (m, `0 ..= 1`).
    #[func]
    fn set_rain_drop_height(&mut self, value: f64) {
        if self.errors.accept(validate::float_in("rain_drop_height", value, 0.0, 1.0, " m")).is_some() {
            self.rain_drop_height = value;
        }
    }

    /// `detail_texture`: the detail waves' texels of the newest frame (one calm texel while the
    /// layer is off).
    #[func]
    fn get_detail_texture(&self) -> Option<Gd<ImageTexture>> {
        self.detail_texture.clone()
    }

    #[func]
    fn get_height_texture(&self) -> Option<Gd<ImageTexture>> {
        self.height_texture.clone()
    }

    #[func]
    fn get_flux_texture(&self) -> Option<Gd<ImageTexture>> {
        self.flux_texture.clone()
    }

    /// The window's height texels as an `Image` (what `height_texture` shows), for scripts that
    /// read them on the CPU; null before the first frame.
    #[func]
    fn get_height_image(&self) -> Option<Gd<Image>> {
        self.height_image.clone()
    }

    /// The window's flow texels as an `Image` (what `flux_texture` shows).
    #[func]
    fn get_flux_image(&self) -> Option<Gd<Image>> {
        self.flux_image.clone()
    }

    #[func]
    fn get_far_height_texture(&self) -> Option<Gd<ImageTexture>> {
        self.far_height_texture.clone()
    }

    #[func]
    fn get_far_flux_texture(&self) -> Option<Gd<ImageTexture>> {
        self.far_flux_texture.clone()
    }

    /// The far water's height texels as an `Image` (what `far_height_texture` shows), for
    /// scripts that read them on the CPU; null before the first read.
    #[func]
    fn get_far_height_image(&self, #[opt(default = 0)] level: i64) -> Option<Gd<Image>> {
        self.far.get(usize::try_from(level).ok()?)?.height_image.clone()
    }

    /// The far water's flow texels as an `Image` (what `far_flux_texture` shows).
    #[func]
    fn get_far_flux_image(&self, #[opt(default = 0)] level: i64) -> Option<Gd<Image>> {
        self.far.get(usize::try_from(level).ok()?)?.flux_image.clone()
    }

    /// Emitted when a `save_state_async()` is done: the save's bytes (empty, with the reason in
    /// `get_last_error()`, when it failed).
    #[signal]
    fn state_saved(bytes: PackedByteArray);

    /// Sets `initial_state`: refused, keeping the previous one, when its bytes are not a
    /// `PipeWaterWorld`'s save; otherwise the world starts again from it at the next physics
    /// frame.
    #[func]
    fn set_initial_state(&mut self, value: Option<Gd<PipeWaterState>>) {
        if let Some(state) = &value {
            if let Err(why) = world_state_kind(state.bind().bytes().as_slice()) {
                self.errors.reject(format!("initial_state: {why}; the previous initial_state and the water are kept"));
                return;
            }
        }
        self.initial_state = value;
        // Made again from it at the next physics frame (or call that needs the world).
        self.built_with = None;
    }

    /// The world's water and ground as bytes (only pages holding water or set ground,
    /// LZ4-compressed; `docs/BACKENDS.md`) with its sources and drains, waiting for the device.
    /// Empty, reported, when it fails.
    #[func]
    fn save_state(&mut self) -> PackedByteArray {
        if !self.ensure_world() {
            return PackedByteArray::new();
        }
        self.sync_sources();
        let result = self.water.as_mut().map(|w| w.save());
        self.core("save_state", result).map_or_else(PackedByteArray::new, |bytes| PackedByteArray::from(bytes.as_slice()))
    }

    /// Begins a save that does not hold the game: a worker makes room on the device, the next
    /// physics frame's look copies the wet pages' fields there (the save holds the water as it is
    /// then), another worker reads and encodes them, and `state_saved` brings the bytes a few
    /// frames later. False, reported, when a save is already on its way or it cannot begin.
    #[func]
    fn save_state_async(&mut self) -> bool {
        if !self.ensure_world() {
            return false;
        }
        if self.saving.is_some() {
            self.errors.reject("save_state_async: a save is already on its way; wait for state_saved".into());
            return false;
        }
        self.sync_sources();
        let result = self.water.as_mut().map(|w| w.begin_save());
        match self.core("save_state_async", result) {
            Some(job) => {
                self.saving = Some(job);
                true
            }
            None => false,
        }
    }

    /// Whether a `save_state_async()` is on its way.
    #[func]
    fn is_saving_state(&self) -> bool {
        self.saving.is_some()
    }

    /// Replaces the world with a saved one (its size becomes `world_size`; `cell_size` and the
    /// edges stay the node's). A file from anyone is checked field by field: bad bytes are
    /// refused, reported, and the world kept. The save's sources and drains come back with
    /// their ids (`remove_source` takes them); the focus policy is the node's.
    #[func]
    fn load_state(&mut self, bytes: PackedByteArray) -> bool {
        if !self.ensure_world() {
            return false;
        }
        match WorldWater::load(bytes.as_slice(), self.cell_size as f32, self.params()) {
            Ok(water) => {
                self.install_loaded(water);
                true
            }
            Err(e) => {
                self.errors.reject(format!("load_state: {}", core_message(&e)));
                false
            }
        }
    }

    /// Emitted when a `load_state_async()` is done: `OK` with the saved world in place, or
    /// `ERR_INVALID_DATA` with the reason in `get_last_error()` and the world kept.
    #[signal]
    fn state_loaded(error: i64);

    /// Begins a load that does not hold the game: a worker checks and decodes the save and makes
    /// its world on the device (seconds for a large world) while this one steps on; at a physics
    /// frame after it is done the saved world replaces this one and `state_loaded` is emitted.
    /// Edits made meanwhile are lost with the world they were made in. False, reported, when a
    /// load is already on its way.
    #[func]
    fn load_state_async(&mut self, bytes: PackedByteArray) -> bool {
        if !self.ensure_world() {
            return false;
        }
        if self.loading.is_some() {
            self.errors.reject("load_state_async: a load is already on its way; wait for state_loaded".into());
            return false;
        }
        let (bytes, cell_size, params) = (bytes.to_vec(), self.cell_size as f32, self.params());
        self.loading = Some(std::thread::spawn(move || WorldWater::load(&bytes, cell_size, params)));
        true
    }

    /// Whether a `load_state_async()` is on its way.
    #[func]
    fn is_loading_state(&self) -> bool {
        self.loading.is_some()
    }

    /// The most recent error message; empty when none.
    #[func]
    fn get_last_error(&self) -> GString {
        GString::from(self.errors.last())
    }

    /// Clears `get_last_error()`.
    #[func]
    fn clear_last_error(&mut self) {
        self.errors.clear();
    }

    /// Whether the world exists (a wgpu device was found and the settings were accepted).
    #[func]
    fn is_ready(&self) -> bool {
        self.water.is_some()
    }

    /// Steps the world by `delta` seconds now (for tests and tools; the node steps itself each
    /// physics frame while `running`). The textures follow at the next physics frame or
    /// `refresh_window()`.
    #[func]
    fn step(&mut self, delta: f64) {
        if !self.ensure_world() {
            return;
        }
        if !(0.0..=10.0).contains(&delta) {
            self.errors.reject(format!("step: delta = {delta} is out of range: valid range is 0 ..= 10 s"));
            return;
        }
        self.read_terrain_source(Some(self.terrain_read_budget()));
        if !self.terrain_link.may_step() {
            self.errors.reject(format!("step: the world waits for terrain_source ({}) to be found; it steps once its reading has begun", self.terrain_source));
            return;
        }
        self.sync_sources();
        self.read_ground_within_reach(delta as f32);
        self.sync_focus();
        self.sync_detail();
        let result = self.water.as_mut().map(|w| w.advance(delta as f32));
        self.core("step", result);
        self.window_stale = true;
    }

    /// Reads the window around the focus into the textures now, the far water into
    /// `far_height_texture` and `far_flux_texture`, and the detail waves' newest texels into
    /// `detail_texture` (waiting for the device: the node reads the far water and the waves
    /// without waiting on its own); a script that stepped the world by hand calls it before
    /// reading them. The waves' texels and `get_height(p, true)` then show the last frame, as far
    /// as they were asked for before it.
    #[func]
    fn refresh_window(&mut self) {
        if self.ensure_world() {
            self.show_window(true);
            self.show_far_water(0.0, true);
            self.show_detail_now();
        }
    }

    /// Sets the ground from an image from cell `origin`: red channel (or luminance) ×
    /// `height_scale` + `height_offset`, each pixel covering `cells_per_pixel`² cells (1 ..= 64;
    /// bilinear between pixel centres, so a 1024² heightmap makes the ground of an 8192² world),
    /// keeping the water. Written in bands: the full-resolution ground never exists at once.
    #[func]
    fn set_terrain_from_image(&mut self, image: Option<Gd<Image>>, height_scale: f64, height_offset: f64, origin: Vector2i, cells_per_pixel: i64) {
        let Some(image) = image else {
            self.errors.reject("set_terrain_from_image: image is null: pass an Image".into());
            return;
        };
        if !height_scale.is_finite() || !height_offset.is_finite() {
            self.errors.reject(format!("set_terrain_from_image: height_scale = {height_scale}, height_offset = {height_offset}: both must be finite"));
            return;
        }
        if !(1..=64).contains(&cells_per_pixel) {
            self.errors.reject(format!("set_terrain_from_image: cells_per_pixel = {cells_per_pixel} is out of range: valid range is 1 ..= 64"));
            return;
        }
        if origin.x < 0 || origin.y < 0 {
            self.errors.reject(format!("set_terrain_from_image: origin = {origin}: must be a cell, ≥ 0"));
            return;
        }
        if !self.ensure_world() {
            return;
        }
        let mut copy = image.duplicate_resource();
        if copy.is_compressed() && copy.decompress() != godot::global::Error::OK {
            self.errors.reject("set_terrain_from_image: the image is compressed and could not be decompressed".into());
            return;
        }
        copy.convert(Format::RF);
        let (iw, ih) = (copy.get_width() as u32, copy.get_height() as u32);
        let pixels: Vec<f32> = bytemuck::pod_collect_to_vec::<u8, f32>(copy.get_data().as_slice())
            .into_iter()
            .map(|v| (v as f64 * height_scale + height_offset).clamp(-(MAX_TERRAIN_ABS as f64), MAX_TERRAIN_ABS as f64) as f32)
            .collect();
        let factor = cells_per_pixel as u32;
        let (w, h) = (iw * factor, ih * factor);
        let [ww, wh] = self.water.as_ref().map_or([0, 0], |water| water.size());
        if origin.x as u64 + w as u64 > ww as u64 || origin.y as u64 + h as u64 > wh as u64 {
            self.errors.reject(format!(
                "set_terrain_from_image: a {iw}x{ih} image at {cells_per_pixel} cells a pixel covers {w}x{h} cells from {origin}, past the {ww}x{wh} world"
            ));
            return;
        }
        let mut row = 0;
        while row < h {
            let rows = TERRAIN_BAND_ROWS.min(h - row);
            let band = upsampled_band(&pixels, [iw, ih], factor, row, rows);
            self.window_stale = true;
            let result = self.water.as_mut().map(|water| water.set_terrain_region(origin.x as u32, origin.y as u32 + row, w, rows, &band));
            if self.core("set_terrain_from_image", result).is_none() {
                return;
            }
            row += rows;
        }
    }

    /// Adds `volume` m³ of water within `radius` m of a global position; returns the volume
    /// placed (0 off the world, or refused).
    #[func]
    fn add_water(&mut self, global_position: Vector3, volume: f64, radius: f64) -> f64 {
        let Some(local) = self.local("add_water", global_position) else { return 0.0 };
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.add_water(local.x, local.z, volume as f32, radius as f32));
        self.core("add_water", result).unwrap_or(0.0)
    }

    /// Takes up to `volume` m³ of water from within `radius` m of a global position.
    #[func]
    fn remove_water(&mut self, global_position: Vector3, volume: f64, radius: f64) {
        let Some(local) = self.local("remove_water", global_position) else { return };
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.remove_water(local.x, local.z, volume as f32, radius as f32));
        self.core("remove_water", result);
    }

    /// Raises (or lowers) the ground by `delta` m at a global position, smoothly to `radius` m.
    #[func]
    fn modify_terrain(&mut self, global_position: Vector3, delta: f64, radius: f64) {
        let Some(local) = self.local("modify_terrain", global_position) else { return };
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.modify_terrain(local.x, local.z, delta as f32, radius as f32));
        self.core("modify_terrain", result);
    }

    /// A spring (`rate` > 0, m³/s) or drain (`rate` < 0) within `radius` m of a global position;
    /// returns its id for `remove_source`, or -1 when refused.
    #[func]
    fn add_source(&mut self, global_position: Vector3, rate: f64, radius: f64) -> i64 {
        let Some(local) = self.local("add_source", global_position) else { return -1 };
        let result = self.water.as_mut().map(|w| w.add_source(local.x, local.z, rate as f32, radius as f32));
        self.core("add_source", result).map_or(-1, |id| id.0 as i64)
    }

    /// Removes a source; false when no source has that id.
    #[func]
    fn remove_source(&mut self, id: i64) -> bool {
        let Ok(id) = u32::try_from(id) else { return false };
        self.water.as_mut().is_some_and(|w| w.remove_source(pipewater_core::SourceId(id)))
    }

    /// Global Y of the water surface (the ground where dry) at a global position; `-INF` off the
    /// world. With `with_detail`, the detail waves' height there is added (0 outside their
    /// window and while `detail_waves` is off).
    #[func]
    fn get_height(&mut self, global_position: Vector3, #[opt(default = false)] with_detail: bool) -> f64 {
        let Some(local) = self.local("get_height", global_position) else { return OUTSIDE_HEIGHT as f64 };
        let result = self.water.as_mut().map(|w| w.surface_height(local.x, local.z));
        let detail = match self.water.as_mut() {
            Some(w) if with_detail => w.detail_height(local.x, local.z),
            _ => 0.0,
        };
        match self.core("get_height", result).flatten() {
            Some(y) => (self.base().get_global_transform() * Vector3::new(local.x, y + detail, local.z)).y as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Water depth (m) at a global position; 0 off the world.
    #[func]
    fn get_depth(&mut self, global_position: Vector3) -> f64 {
        let Some(local) = self.local("get_depth", global_position) else { return 0.0 };
        let result = self.water.as_mut().map(|w| w.depth(local.x, local.z));
        self.core("get_depth", result).flatten().unwrap_or(0.0) as f64
    }

    /// Global Y of the ground at a global position (the terrain itself: floating hulls on the
    /// water do not raise it); `-INF` off the world.
    #[func]
    fn get_terrain_height(&mut self, global_position: Vector3) -> f64 {
        let Some(local) = self.local("get_terrain_height", global_position) else { return OUTSIDE_HEIGHT as f64 };
        let result = self.water.as_mut().map(|w| w.terrain_height(local.x, local.z));
        match self.core("get_terrain_height", result).flatten() {
            Some(y) => (self.base().get_global_transform() * Vector3::new(local.x, y, local.z)).y as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Flow velocity (global, m/s, horizontal) at a global position; zero off the world.
    #[func]
    fn get_flow_velocity(&mut self, global_position: Vector3) -> Vector3 {
        let Some(local) = self.local("get_flow_velocity", global_position) else { return Vector3::ZERO };
        let result = self.water.as_mut().map(|w| w.flow_velocity(local.x, local.z));
        match self.core("get_flow_velocity", result).flatten() {
            Some([vx, vz]) => self.base().get_global_transform().basis * Vector3::new(vx, 0.0, vz),
            None => Vector3::ZERO,
        }
    }

    /// The ledger: `initial`, `added`, `removed`, `boundary_in`, `boundary_out` and `held`
    /// (m³), and `exact` (held equals initial + added − removed + in − out, to the quantum).
    #[func]
    fn get_water_ledger(&mut self) -> VarDictionary {
        let mut out = VarDictionary::new();
        let Some(water) = self.water.as_mut() else { return out };
        let qv = water.quantum_volume();
        match water.ledger() {
            Ok((ledger, held)) => {
                let c = ledger.counters;
                out.set("initial", ledger.initial as f64 * qv);
                out.set("added", c.added as f64 * qv);
                out.set("removed", c.removed as f64 * qv);
                out.set("boundary_in", c.boundary_in as f64 * qv);
                out.set("boundary_out", c.boundary_out as f64 * qv);
                out.set("held", held as f64 * qv);
                out.set("exact", held == ledger.initial + c.net());
            }
            Err(e) => self.errors.reject(format!("get_water_ledger: {}", core_message(&e))),
        }
        out
    }

    /// What the pages hold: `pages`, `resident`, `watered` (pages with water fields), `wet`,
    /// `allocated`, `freed`, `held` (pages the focus policy held back in the last frame), `device_bytes`, `host_terrain_bytes`, and the window shown
    /// (`window_origin`, `window_size`, cells).
    #[func]
    fn get_world_report(&self) -> VarDictionary {
        let mut out = VarDictionary::new();
        let Some(water) = self.water.as_ref() else { return out };
        let r = water.report();
        out.set("pages", r.pages as i64);
        out.set("resident", r.resident as i64);
        out.set("watered", r.watered as i64);
        out.set("wet", r.wet as i64);
        out.set("allocated", r.allocated as i64);
        out.set("freed", r.freed as i64);
        out.set("held", r.held as i64);
        out.set("sources", water.source_count() as i64);
        out.set("device_bytes", water.world().device_bytes() as i64);
        out.set("host_terrain_bytes", water.world().host_terrain_bytes() as i64);
        if let Some((origin, size)) = self.window {
            out.set("window_origin", Vector2i::new(origin[0] as i32, origin[1] as i32));
            out.set("window_size", Vector2i::new(size[0] as i32, size[1] as i32));
        }
        if let Some((origin, texels, stride)) = self.far.first().and_then(|f| f.shown) {
            out.set("far_origin", Vector2i::new(origin[0] as i32, origin[1] as i32));
            out.set("far_texels", Vector2i::new(texels[0] as i32, texels[1] as i32));
            out.set("far_stride", stride as i64);
        }
        let mut levels = VarArray::new();
        for (origin, texels, stride) in self.far.iter().filter_map(|f| f.shown) {
            let mut level = VarDictionary::new();
            level.set("origin", Vector2i::new(origin[0] as i32, origin[1] as i32));
            level.set("texels", Vector2i::new(texels[0] as i32, texels[1] as i32));
            level.set("stride", stride as i64);
            levels.push(&level.to_variant());
        }
        if !levels.is_empty() {
            out.set("far_levels", &levels);
        }
        out
    }

    /// The window shown, in the node's local XZ metres: position (min corner) and size.
    #[func]
    fn get_window_rect(&self) -> Rect2 {
        let (Some(water), Some((origin, size))) = (self.water.as_ref(), self.window) else { return Rect2::default() };
        let [ex, ez] = water.extent();
        let dx = water.cell_size();
        Rect2::new(Vector2::new(origin[0] as f32 * dx - ex / 2.0, origin[1] as f32 * dx - ez / 2.0), Vector2::new(size[0] as f32 * dx, size[1] as f32 * dx))
    }
}

impl PipeWaterWorld {
    /// The world, made (again) when its settings changed; false (reported once per change)
    /// when it cannot be.
    fn ensure_world(&mut self) -> bool {
        let wanted = (self.world_size, self.cell_size, self.ground_height);
        if self.built_with == Some(wanted) {
            self.sync_params();
            return self.water.is_some();
        }
        self.built_with = Some(wanted);
        self.water = None;
        self.window = None;
        self.saving = None;
        // A load begun for the old settings would bring them back.
        self.loading = None;
        let params = self.params();
        let size = self.world_size;
        if size.x < 1 || size.y < 1 {
            self.errors.reject(format!("world_size = {size} is out of range: each side must be at least 1 cell"));
            return false;
        }
        if let Some(state) = self.initial_state.clone() {
            match WorldWater::load(state.bind().bytes().as_slice(), self.cell_size as f32, params) {
                Ok(mut water) => {
                    // Baked water: its nodes place their sources again in this world.
                    water.remove_node_sources();
                    self.source_placements.clear();
                    self.install_loaded(water);
                    self.base_mut().emit_signal("world_rebuilt", &[]);
                    self.sync_sources();
                    return true;
                }
                Err(e) => self.errors.reject(format!("initial_state: {}; the world starts dry", core_message(&e))),
            }
        }
        match WorldWater::new(size.x as u32, size.y as u32, self.cell_size as f32, self.ground_height as f32, params) {
            Ok(water) => {
                self.water = Some(water);
                self.source_placements.clear();
                self.terrain_link.world_made();
                self.base_mut().emit_signal("world_rebuilt", &[]);
                self.sync_sources();
                true
            }
            Err(e) => {
                self.errors.reject(format!("world: {}", core_message(&e)));
                false
            }
        }
    }

    /// The world of a save in place of this one, its window read again.
    fn install_loaded(&mut self, water: WorldWater) {
        // The nodes whose sources the save holds (the same run saved it) go on with them; the
        // others are placed again.
        self.source_placements.keep_live(&water.source_ids().iter().map(|id| id.0).collect());
        let [w, h] = water.size();
        self.world_size = Vector2i::new(w as i32, h as i32);
        self.built_with = Some((self.world_size, self.cell_size, self.ground_height));
        self.terrain_link.world_loaded(water.hole_drains());
        self.water = Some(water);
        self.saving = None;
        self.window = None;
        self.window_stale = true;
    }

    /// Puts a finished asynchronous load in place and tells `state_loaded`.
    fn poll_load(&mut self) {
        let Some(worker) = self.loading.take_if(|worker| worker.is_finished()) else { return };
        let error = match worker.join().unwrap_or_else(|_| Err(pipewater_core::Error::Gpu("the load's worker panicked".into()))) {
            Ok(water) => {
                self.install_loaded(water);
                godot::global::Error::OK
            }
            Err(e) => {
                self.errors.reject(format!("load_state_async: {}", core_message(&e)));
                godot::global::Error::ERR_INVALID_DATA
            }
        };
        self.base_mut().emit_signal("state_loaded", &[(error.ord() as i64).to_variant()]);
    }

    /// Hands a finished asynchronous save to `state_saved`.
    fn poll_save(&mut self) {
        let (Some(water), Some(job)) = (self.water.as_mut(), self.saving.as_mut()) else { return };
        let Some(result) = water.poll_save(job) else { return };
        self.saving = None;
        let bytes = match result {
            Ok(bytes) => PackedByteArray::from(bytes.as_slice()),
            Err(e) => {
                self.errors.reject(format!("save_state_async: {}", core_message(&e)));
                PackedByteArray::new()
            }
        };
        self.base_mut().emit_signal("state_saved", &[bytes.to_variant()]);
    }

    /// `terrain_read_budget_ms` as a duration, within its range.
    fn terrain_read_budget(&self) -> std::time::Duration {
        let ms = if self.terrain_read_budget_ms.is_finite() { self.terrain_read_budget_ms.clamp(0.1, terrain::MAX_READ_BUDGET_MS) } else { 4.0 };
        std::time::Duration::from_secs_f64(ms / 1000.0)
    }

    /// The core's parameters for the node's properties.
    fn params(&self) -> Params {
        let edge = |mode: WaterBoundary, rate: f64, level: f64| match mode {
            WaterBoundary::Wall => Boundary::Wall,
            WaterBoundary::Open => Boundary::Open,
            WaterBoundary::Inflow => Boundary::Inflow { rate: rate as f32 },
            WaterBoundary::Level => Boundary::Level { level: level as f32 },
        };
        Params {
            gravity: self.gravity as f32,
            // The core's edge order: north (−Z), east (+X), south (+Z), west (−X).
            boundaries: [
                edge(self.boundary_north, self.inflow_rate_north, self.boundary_level_north),
                edge(self.boundary_east, self.inflow_rate_east, self.boundary_level_east),
                edge(self.boundary_south, self.inflow_rate_south, self.boundary_level_south),
                edge(self.boundary_west, self.inflow_rate_west, self.boundary_level_west),
            ],
            ..Params::default()
        }
    }

    /// Hands changed properties to the world; a refused change is reported once and the world
    /// keeps stepping with what it had.
    fn sync_params(&mut self) {
        let params = self.params();
        let Some(water) = self.water.as_mut() else { return };
        if *water.params() == params || self.refused_params.as_ref() == Some(&params) {
            return;
        }
        match water.set_params(params) {
            Ok(()) => self.refused_params = None,
            Err(e) => {
                self.errors.reject(format!("parameters: {}", core_message(&e)));
                self.refused_params = Some(params);
            }
        }
    }

    /// Hands the focus policy to the world: the focuses' positions in cells, `focus_radius` in
    /// cells, `far_step_every`. A refused setting is reported once and the world keeps the
    /// policy it had.
    fn sync_focus(&mut self) {
        let Some(water) = self.water.as_ref() else { return };
        let (dx, [w, h]) = (water.cell_size() as f64, water.size());
        let every = self.far_step_every;
        let radius = self.focus_radius;
        let refusal = if !(0..=MAX_FAR_STEP_EVERY as i64).contains(&every) {
            Some(format!("far_step_every = {every} is out of range: valid range is 0 ..= {MAX_FAR_STEP_EVERY} (1: all water every frame; 0: far water paused)"))
        } else if !radius.is_finite() || radius < 0.0 || radius / dx > MAX_FOCUS_RADIUS_CELLS {
            Some(format!("focus_radius = {radius} m is out of range: valid range is 0 ..= {} m", MAX_FOCUS_RADIUS_CELLS * dx))
        } else {
            None
        };
        if let Some(message) = refusal {
            self.refuse_focus(message);
            return;
        }
        let transform = self.base().get_global_transform();
        let mut nodes: Vec<Gd<Node3D>> = self.focus_nodes.clone().upcast_any_array().iter_shared().filter_map(|v| v.try_to::<Gd<Node3D>>().ok()).collect();
        if !self.focus_node.is_empty() {
            nodes.extend(self.base().get_node_or_null(&self.focus_node).and_then(|n| n.try_cast::<Node3D>().ok()));
        }
        let cells: Vec<[f64; 2]> = nodes
            .iter()
            .filter(|n| n.is_instance_valid() && n.is_inside_tree())
            .filter_map(|n| global_to_local_point(&transform, n.get_global_position()))
            .map(|local| [local.x as f64 / dx + w as f64 / 2.0, local.z as f64 / dx + h as f64 / 2.0])
            .collect();
        let Some(water) = self.water.as_mut() else { return };
        let result = water.set_focus(&cells, radius / dx).and_then(|()| water.set_far_step_every(every as u32));
        match result {
            Ok(()) => self.refused_focus = None,
            Err(e) => self.refuse_focus(format!("focus: {}", core_message(&e))),
        }
    }

    /// Reports a refused focus setting once while it stays refused.
    fn refuse_focus(&mut self, message: String) {
        if self.refused_focus.as_ref() != Some(&message) {
            self.errors.reject(message.clone());
            self.refused_focus = Some(message);
        }
    }

    /// A global position in the node's local space, or `None` (reported) when it is not finite
    /// or there is no world.
    fn local(&mut self, method: &str, global_position: Vector3) -> Option<Vector3> {
        if !self.ensure_world() {
            return None;
        }
        let local = global_to_local_point(&self.base().get_global_transform(), global_position);
        if local.is_none() {
            self.errors.reject(format!("{method}: global_position = {global_position} is not a finite point the node's transform maps"));
        }
        local
    }

    fn core<T>(&mut self, method: &str, result: Option<pipewater_core::Result<T>>) -> Option<T> {
        self.errors.core_result(method, result)
    }

    /// Reads the window around the focus into the textures and moves the surface with it.
    /// Reads the window around the focus into the textures when the water changed since the
    /// last read or the window moved (or always, with `force`), and moves the surface with it.
    fn show_window(&mut self, force: bool) {
        let Some(water) = self.water.as_ref() else { return };
        let [w, h] = water.size();
        let side = (self.window_cells.clamp(MIN_WINDOW_CELLS, MAX_WINDOW_SIDE as i32)) as u32;
        let size = [side.min(w), side.min(h)];
        let cells = self.focus_cells();
        let origin = window_start(cells, size, [w, h]);
        if !force && !self.window_stale && self.window == Some((origin, size)) {
            return;
        }
        self.window_stale = false;
        let read = self.water.as_mut().map(|water| water.read_window(origin[0], origin[1], size[0], size[1]));
        let Some(window) = self.core("window", read) else { return };
        self.window = Some((origin, size));
        (self.height_image, self.height_texture) = update_texture(self.height_image.take(), self.height_texture.take(), &window.height, size);
        (self.flux_image, self.flux_texture) = update_texture(self.flux_image.take(), self.flux_texture.take(), &window.flow, size);
        self.show_surface(origin, size);
    }

    /// The focus node's position in continuous cell coordinates (the node's own centre without
    /// one).
    fn focus_cells(&self) -> [f64; 2] {
        let Some(water) = self.water.as_ref() else { return [0.0; 2] };
        let [w, h] = water.size();
        let focus = if let Some(camera) = editor_camera() {
            Some(camera.get_global_position())
        } else if self.focus_node.is_empty() {
            None
        } else {
            self.base().get_node_or_null(&self.focus_node).and_then(|n| n.try_cast::<Node3D>().ok()).map(|n| n.get_global_position())
        };
        let local = focus.and_then(|p| global_to_local_point(&self.base().get_global_transform(), p)).unwrap_or(Vector3::ZERO);
        let dx = water.cell_size() as f64;
        [local.x as f64 / dx + w as f64 / 2.0, local.z as f64 / dx + h as f64 / 2.0]
    }

    /// Reads the far water around the focus when due (at once with `wait`), level by level, into
    /// `far_height_texture` and `far_flux_texture` (the first level) and the levels' own textures,
    /// and draws each on its mesh with the finer water inside it cut out. A refused
    /// `far_water_cells`, `far_water_stride` or `far_water_levels` is reported once, and the far
    /// water keeps the settings last accepted (off when none were).
    fn show_far_water(&mut self, delta: f64, wait: bool) {
        let levels = self.far_water_levels;
        let settings = far_settings(self.far_water_cells, self.far_water_stride).and_then(|first| {
            if (1..=MAX_FAR_WATER_LEVELS).contains(&levels) {
                Ok(first.map(|first| (first, levels as u32)))
            } else {
                Err(format!("far_water_levels = {levels} is out of range: valid range is 1 ..= {MAX_FAR_WATER_LEVELS}"))
            }
        });
        let settings = match settings {
            Ok(settings) => {
                self.refused_far = None;
                self.far_accepted = Some(settings);
                settings
            }
            Err(message) => {
                if self.refused_far.as_ref() != Some(&message) {
                    self.errors.reject(message.clone());
                    self.refused_far = Some(message);
                }
                self.far_accepted.flatten()
            }
        };
        let Some(water) = self.water.as_ref() else { return };
        let planned = settings.map_or(Vec::new(), |(first, levels)| far_levels(first, levels, water.size()));
        while self.far.len() > planned.len() {
            if let Some(mut gone) = self.far.pop() {
                gone.off();
            }
        }
        while self.far.len() < planned.len() {
            self.far.push(FarWater::new(self.far.len()));
        }
        if planned.is_empty() {
            self.show_far_in_window();
            return;
        }
        let focus = self.focus_cells();
        for (level, &(side, stride)) in planned.iter().enumerate() {
            let Some(water) = self.water.as_mut() else { return };
            let result = self.far[level].update(water, focus, side, stride, delta, wait);
            if self.core("far water", Some(result)) == Some(true) && level == 0 {
                self.far_height_texture = self.far[0].height_texture.clone();
                self.far_flux_texture = self.far[0].flux_texture.clone();
            }
        }
        if !self.show_mesh {
            self.far.iter_mut().for_each(FarWater::hide);
            return;
        }
        let Some(water) = self.water.as_ref() else { return };
        let (dx, extent, world) = (water.cell_size(), water.extent(), water.size());
        let material = self.material();
        let mut base = self.base().clone();
        for level in 0..self.far.len() {
            let inside = if level == 0 { self.window } else { self.far[level - 1].area() };
            if level > 0 && inside.is_none() {
                // Until the level inside it has arrived, an outer level would draw over it too.
                self.far[level].hide();
                continue;
            }
            self.far[level].show_surface(&mut base, material.clone(), dx, extent, inside);
        }
        for level in 0..self.far.len() {
            let (this, outer) = self.far.split_at_mut(level + 1);
            this[level].show_band(outer.first(), world, dx);
        }
        self.show_far_in_window();
    }

    /// Gives the window's material the first far level's water and the band along the window's
    /// edges over which its water turns into it ([`show_far_band`]).
    fn show_far_in_window(&mut self) {
        let Some(water) = self.water.as_ref() else { return };
        let (dx, world) = (water.cell_size(), water.size());
        let material = self.material();
        show_far_band(material, &mut self.far_in_window_given, self.far.first(), self.window, world, dx);
    }

    /// The child mesh over the window, with the material and its parameters.
    fn show_surface(&mut self, origin: [u32; 2], size: [u32; 2]) {
        if !self.show_mesh {
            if let Some(mut mesh) = self.mesh_instance.take().filter(|m| m.is_instance_valid()) {
                mesh.queue_free();
            }
            self.mesh_cells = None;
            return;
        }
        let Some(water) = self.water.as_ref() else { return };
        let dx = water.cell_size();
        let [ex, ez] = water.extent();
        if !self.mesh_instance.as_ref().is_some_and(|m| m.is_instance_valid()) {
            let mut instance = MeshInstance3D::new_alloc();
            instance.set_name("WaterSurface");
            self.base_mut().add_child(&instance);
            self.mesh_instance = Some(instance);
            self.mesh_cells = None;
        }
        let material = self.material();
        let Some(mut instance) = self.mesh_instance.clone() else { return };
        if self.mesh_cells != Some((size, dx)) {
            let mut mesh = ArrayMesh::new_gd();
            mesh.add_surface_from_arrays(PrimitiveType::TRIANGLES, &surface_arrays(&mesh_layout::grid_mesh(size[0], size[1], dx)));
            instance.set_mesh(&mesh);
            let (wx, wz) = (size[0] as f32 * dx, size[1] as f32 * dx);
            instance.set_custom_aabb(Aabb::new(Vector3::new(-wx / 2.0, -MAX_TERRAIN_ABS, -wz / 2.0), Vector3::new(wx, 2.0 * MAX_TERRAIN_ABS, wz)));
            self.mesh_cells = Some((size, dx));
        }
        // The mesh is centred on the window: the shader reads the window's textures as a grid of
        // its size centred on the mesh.
        let centre = Vector3::new((origin[0] as f32 + size[0] as f32 / 2.0) * dx - ex / 2.0, 0.0, (origin[1] as f32 + size[1] as f32 / 2.0) * dx - ez / 2.0);
        instance.set_position(centre);
        instance.set_material_override(material.as_ref());
        if let Some(mut shader) = material.and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
            shader.set_shader_parameter("height_texture", &self.height_texture.to_variant());
            shader.set_shader_parameter("flux_texture", &self.flux_texture.to_variant());
            shader.set_shader_parameter("grid_size", &Vector2::new(size[0] as f32, size[1] as f32).to_variant());
            shader.set_shader_parameter("cell_size", &dx.to_variant());
            shader.set_shader_parameter("clipmap_levels", &1.0f32.to_variant());
            shader.set_shader_parameter("clipmap_snap", &0.0f32.to_variant());
        }
    }

    fn material(&mut self) -> Option<Gd<Material>> {
        if let Some(m) = &self.water_material {
            return Some(m.clone());
        }
        if self.default_material.is_none() {
            self.default_material = Some(default_water_material(|| {})?);
        }
        self.default_material.clone()
    }
}

/// The editor's 3D camera, in the editor (where the window of water follows it: the scene's
/// own cameras stand still there).
fn editor_camera() -> Option<Gd<godot::classes::Camera3D>> {
    if !godot::classes::Engine::singleton().is_editor_hint() {
        return None;
    }
    godot::classes::EditorInterface::singleton().get_editor_viewport_3d_ex().idx(0).done()?.get_camera_3d()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `initial_state` takes bytes that begin as a world's save (either magic; the rest is
    /// checked when read) and refuses empty bytes and anything else, saying what they are.
    #[test]
    fn only_a_worlds_save_is_taken_as_its_initial_state() {
        use pipewater_core::world_save::{WORLD_MAGIC, WORLD_MAGIC_WITHOUT_SOURCES};
        for magic in [WORLD_MAGIC, WORLD_MAGIC_WITHOUT_SOURCES] {
            let bytes = [magic.as_slice(), &[0u8; 40]].concat();
            assert_eq!(world_state_kind(&bytes), Ok(()), "{:?}", std::str::from_utf8(magic));
        }
        let grid_state = [pipewater_core::save::SAVE_MAGIC.as_slice(), &[0u8; 40]].concat();
        let refusals = [(grid_state, "a PipeWater's"), (Vec::new(), "no bytes"), (b"PWWORL".to_vec(), "6 bytes"), (b"PIPEWATER state".to_vec(), "15 bytes"), (vec![0xff; 64], "64 bytes")];
        for (bytes, says) in refusals {
            let why = world_state_kind(&bytes).expect_err("refused");
            println!("{} bytes: {why}", bytes.len());
            assert!(why.contains(says), "{why:?} says {says:?}");
        }
    }

    /// The window centres on the focus in steps of the snap, stays within the world, and covers a
    /// world smaller than itself from its first cell.
    #[test]
    fn the_window_follows_the_focus_within_the_world() {
        let world = [10_000, 6_000];
        let cases = [
            ([5000.0, 3000.0], [256, 256], [4880, 2880]),
            ([5007.0, 3009.0], [256, 256], [4880, 2880]),
            ([5020.0, 3000.0], [256, 256], [4896, 2880]),
            ([3.0, 5999.0], [256, 256], [0, 5744]),
            ([f64::NAN, 100.0], [256, 256], [0, 0]),
        ];
        for (focus, window, expected) in cases {
            let got = window_start(focus, window, world);
            println!("focus {focus:?}, window {window:?}: starts at {got:?} (expected {expected:?})");
            assert_eq!(got, expected);
        }
        assert_eq!(window_start([50.0, 50.0], [256, 256], [100, 80]), [0, 0]);
    }

    /// A heightmap made coarser holds its pixel values at the centres of their cell blocks'
    /// middle, interpolates linearly between pixel centres, and keeps the edge value past the
    /// outer pixel centres; bands put together equal the whole.
    #[test]
    fn an_image_made_coarser_is_interpolated_between_pixel_centres() {
        let pixels = [0.0f32, 4.0, 8.0, 12.0];
        let whole = upsampled_band(&pixels, [2, 2], 4, 0, 8);
        let row0: Vec<f32> = whole[..8].to_vec();
        println!("first row of a 2x2 image at 4 cells a pixel: {row0:?}");
        // Cell centres 0.5..7.5 over 4: pixel coordinates -0.375, -0.125, 0.125, ..., 1.375.
        assert_eq!(row0, vec![0.0, 0.0, 0.5, 1.5, 2.5, 3.5, 4.0, 4.0]);
        let column0: Vec<f32> = (0..8).map(|r| whole[r * 8]).collect();
        assert_eq!(column0, vec![0.0, 0.0, 1.0, 3.0, 5.0, 7.0, 8.0, 8.0]);
        let bands: Vec<f32> = [(0, 3), (3, 5)].iter().flat_map(|&(first, rows)| upsampled_band(&pixels, [2, 2], 4, first, rows)).collect();
        assert_eq!(bands, whole);
        assert_eq!(upsampled_band(&pixels, [2, 2], 1, 0, 2), pixels.to_vec(), "one cell a pixel is the image");
    }
}
