//! The `PipeWater` node: the Godot-facing facade over [`pipewater_core::Simulation`].
//!
//! This file is the node's table of contents: its properties (with their defaults), signals, property accessors and the engine callbacks; each setter hands its work to the job's file
//! (`set_checked` and the `store_*` setters' work in `node/simulation.rs`, `set_detail_param` in `node/detail.rs`), and the mode constants sit beside their enums in `node/modes.rs`. The rest of its API lives by job in
//! `node/queries.rs` (heights, depth, flow, totals), `node/edits.rs` (water, sources, terrain), `node/authoring.rs` (the editor's brushes, picking and exact regions for undo), `node/simulation.rs` (building, stepping, resetting, initial currents),
//! `node/terrain_source.rs` (the ground from images and from `terrain_source`), `node/erosion.rs` (the `erosion` resource and the sediment ledger), `node/fluid.rs` (the `fluid` resource: viscosity, cooling, density, colour) and `node/persistence.rs` (saving and loading the water as a [`crate::saved_state::PipeWaterState`]), as secondary `#[godot_api]` blocks
//! of the same class; `node/sources.rs` keeps the simulation's sources in step with the [`water_source::PipeWaterSource`] nodes (a class of its own, kept beside the node it pours into: each names the other). Its parts are components of their own: [`WaterOutputs`] (the textures), [`WaterSurface`] (the helper mesh), [`Pending`] and [`build`] (the simulation from the
//! properties), [`ErrorLog`] (errors and `get_last_error()`). Setters stay here because gdext only finds a `#[var]` field's accessors in the primary block.

mod authoring;
mod bodies;
pub mod build;
pub(crate) mod detail;
mod edits;
mod erosion;
mod fluid;
mod modes;
mod multiplayer;
mod persistence;
mod queries;
mod simulation;
pub mod sources;
pub(crate) mod terrain_source;
pub mod water_source;

pub use modes::{WaterBackend, WaterBoundary, WaterCrossSection, WaterNeighbours};

use build::Pending;
use crate::{detail_texture::DetailTexture, errors::ErrorLog, outputs::WaterOutputs, saved_state::PipeWaterState, surface::WaterSurface, validate};
use godot::classes::notify::Node3DNotification;
use godot::classes::{INode3D, Image, Material, Node3D, Texture2D};
use godot::prelude::*;
use pipewater_core::{params::{CFL_RANGE, DAMPING_RANGE, GRAVITY_RANGE, INFLOW_RATE_RANGE, MAX_STEP_RANGE, MAX_SUBSTEPS_RANGE, PIPE_DEPTH_RANGE}, Params, Simulation};
use sources::SourcePlacements;

/// Group every `PipeWater` joins, where a `PipeWaterSource` without a `water` finds one.
pub const WATER_GROUP: &str = "pipe_water";

/// A water simulation over terrain (eight-neighbour pipe method), on the GPU when one exists.
///
/// The grid lies in the node's local XZ plane, centred on the node, `grid_size` cells of
/// `cell_size` metres; local +Y is up. Positions given to methods are **global** and go through
/// the node's global transform; heights come back as global Y. Volumes (m³), rates (m³/s),
/// radii and depths (m) are in the node's local units, which are metres when it is not scaled.
///
/// The simulation advances in `_physics_process` by `delta × time_scale`, in as many substeps as
/// stability needs (at most `max_substeps`, each at most `max_step` s). Changing the grid, cell
/// size, initial water level or `initial_state` rebuilds the simulation (water restarts from
/// `initial_state`, or else `initial_water_level`; sources added by scripts are removed,
/// `PipeWaterSource` nodes are placed again); changing the backend of a running simulation
/// moves its water, sources and ledger to the new backend; changing the terrain keeps the water;
/// the other parameters apply at the next step.
///
/// **Authoring in the editor.** With the addon's editor plugin enabled (Project Settings →
/// Plugins → PipeWater), selecting a `PipeWater` shows its tools above the 3D viewport: add and
/// remove water, fill a basin to the clicked shore, raise, lower and smooth the terrain, with a
/// brush radius (m) and strength (m/s; for smoothing, the share per second). Each stroke is one
/// step of the editor's undo history, which gives the water and the ground back bit for bit
/// (`get_water_changes`, `set_water_region`). "Bake" stores the water as it stands in
/// `initial_state`, in a binary resource beside the scene; "Clear" empties it. Springs and
/// drains are `PipeWaterSource` nodes.
///
/// **Outputs for materials.** `height_texture` and `flux_texture` are `Image.FORMAT_RGBAF`
/// textures of `grid_size` texels (texel `(x, y)` = cell `(x, y)`; row 0 is the local −Z edge,
/// column 0 the local −X edge; UV = `local.xz / (grid_size × cell_size) + 0.5`). On the
/// RenderingDevice backend they are `Texture2DRD`s written by the simulation on the GPU in the
/// frame that steps, never copied through the CPU. On the wgpu and CPU backends they are
/// `ImageTexture`s updated after each physics frame from the newest snapshot, which on wgpu is
/// read back asynchronously and may be a frame or two old (`half_float_textures` stores them as
/// `FORMAT_RGBAH`).
///
/// **Queries** (`get_height` and friends) on the RenderingDevice backend read the 8×8-cell tiles
/// around the points asked about: asynchronously on Godot 4.4+ (they show the water of Godot's
/// frame delay ago, typically 2 frames; a tile's first query answers from the state the
/// simulation started or was reset with), and at once on Godot 4.3, where each frame's small read
/// waits for the GPU. `get_frame_stats()["readback_bytes"]` says what a frame read back.
///
/// **Readback on wgpu.** The textures and queries read a snapshot copied back from the GPU
/// asynchronously: after a physics frame it shows that frame or one of the two before it, never
/// older (the node waits for the GPU rather than let it fall further behind). It holds every
/// cell while a material or script uses the textures, and only the 8×8-cell tiles queries and
/// floating bodies touched otherwise (48 bytes plus 2 KiB a tile per frame, instead of 32 bytes
/// a cell).
///
/// **Depth limit.** A cell holds at most 2048 m of water (2³¹ − 1 quanta of 2⁻²⁰ m). What would
/// put more into a cell by itself is refused with an error naming the limit: an
/// `initial_water_level` more than 2048 m above the lowest ground, an `add_water` whose share
/// for one cell passes it, a `fill_basin` to such a level, a source whose rate adds more in one
/// step of up to 1 s (the longest `max_step`), an inflow edge or a level edge likewise. Water
/// added to cells that are nearly full fills them to the limit; `add_water` returns (and a
/// warning states) what fit, and the ledger counts what entered.
///
/// **A lost GPU device** (a driver reset, an unplugged GPU, or `simulate_device_loss()`) is
/// noticed at the next step or read: the node warns once and goes on on the next backend —
/// RenderingDevice → wgpu → CPU — with the whole water of the lost backend's recovery point (a
/// copy of every field taken at least once every 60 frames, less often on grids past 1024², or
/// a newer snapshot of every cell), its sources, clock and ledger; the warning names the frames
/// lost; `active_backend` changes and `simulation_rebuilt` is emitted.
/// Godot does not report the loss of its own device to extensions: on the RenderingDevice
/// backend only a vanished device or vanished textures are noticed.
/// `height_texture`: R = surface height (local Y, m), G = depth (m), B = terrain height (local Y,
/// m), A = 1 if wet (depth > 1 mm) else 0.
/// `flux_texture`: R = velocity along local +X (m/s), G = velocity along local +Z (m/s), B = speed
/// (m/s), A = discharge per metre of width (m²/s).
///
/// **Detail waves.** Ripples, wakes, splashes and rain finer than the grid come from a second,
/// linear wave layer (group Detail Waves): the damped wave equation on cells of
/// `cell_size / detail_subdivision`, travelling at √(g·depth) capped at `detail_max_celerity`,
/// carried by the flow, reflected by shores, driven by `PipeWaterBody` hulls, `add_ripple` and
/// rain. It covers a **window** of `detail_window`² cells that follows the camera (or
/// `detail_follow`) rather than the whole water at that resolution, so that its cost is fixed however large the
/// world is and its resolution goes where someone looks; waves leaving the window fade out. It
/// moves no water: the ledger, depths and flows are the same with it on or off. Its output is
/// `detail_texture`; `get_height(position, true)` adds its height.
/// `detail_texture`: the window's cells in the toroidal order they are stored in (a world cell
/// sits at its index modulo `detail_window`: sample it with repeat wrapping at UV =
/// `(local.xz + grid_size × cell_size / 2) / (detail_window × cell_size / detail_subdivision)`),
/// R = height of the detail waves (m), G = their slope along local +X, B = along local +Z (m/m),
/// A = vertical velocity (m/s); zero on dry cells and outside the window. The node sets
/// `detail_texture`, `detail_period` (m), `detail_offset` (m), `detail_rect` (the window's local
/// −X −Z and +X +Z corners, m) and `detail_on` on its `ShaderMaterial`.
///
/// The node joins the group `pipe_water` when it enters the tree (`BuoyancyProbe` finds it
/// there).
///
/// **Outside the grid** `get_height` and `get_terrain_height` return `-INF` (test with
/// `is_inf()` or `is_inside()`), `get_depth` returns `0.0` and `get_flow_velocity` returns
/// `Vector3.ZERO`; edits there do nothing.
///
/// **Bad arguments** (NaN, infinities, negative or zero sizes, radii past twice the grid,
/// arrays of the wrong length, unreadable images) are rejected with an error naming the property
/// or argument and its valid range; the node keeps its previous state. `get_last_error()` returns
/// the message.
#[derive(GodotClass)]
#[class(init, tool, base = Node3D)]
pub struct PipeWater {
    /// Cells along local X (`x`) and local Z (`y`), each `2 ..= 4096`. Rebuilds the simulation.
    #[export_group(name = "Grid")]
    #[export]
    #[var(set)]
    #[init(val = Vector2i::new(128, 128))]
    grid_size: Vector2i,
    /// Side of a square cell in metres, `0.001 ..= 10000`. Rebuilds the simulation.
    #[export(range = (0.001, 100.0, 0.001, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = 1.0)]
    cell_size: f64,

    /// Heightmap for the terrain: the red channel (or luminance), times `height_scale`, plus
    /// `height_offset`, in local metres. Resampled (bilinear) to `grid_size` when its size differs.
    /// Compressed textures must be decompressible. Ignored while `terrain_heights` is set.
    #[export_group(name = "Terrain")]
    #[export]
    #[var(set)]
    heightmap: Option<Gd<Texture2D>>,
    /// Metres of terrain per unit of heightmap value (pixel values run 0..1 for 8-bit images),
    /// `-100000 ..= 100000`.
    #[export(range = (0.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    #[init(val = 10.0)]
    height_scale: f64,
    /// Terrain height (local Y, m) of heightmap value 0, `-1000000 ..= 1000000`.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    height_offset: f64,
    /// Terrain heights in local metres, one per cell, row-major (`index = y × grid_size.x + x`),
    /// exactly `grid_size.x × grid_size.y` finite values within ±1e6 m. Setting it replaces the
    /// terrain (water is kept) and takes precedence over `heightmap`; an empty array clears it.
    /// Reading it returns the current terrain, digging and raising included.
    #[var(get, set)]
    terrain_heights: PackedFloat32Array,
    /// The terrain the ground comes from, followed live by the changed rectangle (water kept): a Terrain3D, an HTerrain, a `CollisionShape3D` holding a `HeightMapShape3D`, or static geometry read by rays (`bake_terrain()`); docs/TERRAIN_SOURCES.md. Takes precedence over `terrain_heights` and `heightmap`. Empty: none.
    #[export]
    #[var(set)]
    terrain_source: NodePath,
    /// Where `terrain_source` has no ground (holes, gaps between regions, rays that miss): `TERRAIN_HOLES_WALL` (the default: nothing enters, nothing is lost) or `TERRAIN_HOLES_DRAIN` (the hole's rim cells drain what reaches them; the ledger counts it as removed).
    #[export]
    #[var]
    terrain_holes: terrain_source::TerrainHoles,
    /// When true, `modify_terrain`, `smooth_terrain` and the editor's Raise, Lower and Smooth also change `terrain_source` (Terrain3D `set_height` + `update_maps`, HTerrain's height image + `notify_region_change`, a shape's `map_data`), so a game digs one ground. Off by default.
    #[export]
    #[var]
    terrain_write_back: bool,

    /// Water surface (local Y, m) that every cell below it is filled to when the simulation
    /// starts or is reset, `-1000000 ..= 1000000` and at most 2048 m above the lowest ground (the
    /// most water a cell holds; a higher level is refused with an error naming the highest that
    /// fits); unused while `initial_state` is set. Rebuilds the simulation.
    #[export_group(name = "Water")]
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    #[init(val = 1.0)]
    initial_water_level: f64,
    /// Water to start from instead of `initial_water_level`: a `PipeWaterState` from
    /// `save_state()`, such as the editor's "Bake" stores (in a binary `.res` beside the scene).
    /// Its depths, flow and terrain (as painted) are the water the simulation starts from and
    /// `reset()` returns to; its clock, ledger and sources are not used (the ledger starts from
    /// its water; springs and drains are `PipeWaterSource` nodes). It replaces the terrain of
    /// `heightmap` and `terrain_heights` when the simulation is built; setting those later
    /// replaces it again, keeping the water. A state saved for another `grid_size` or
    /// `cell_size`, or corrupt, is refused with an error and the previous one is kept: set the
    /// grid first. Null: start from `initial_water_level`. Rebuilds the simulation.
    #[export]
    #[var(set)]
    initial_state: Option<Gd<PipeWaterState>>,
    /// Gravitational acceleration, m/s², `0 ..= 100`.
    #[export(range = (GRAVITY_RANGE.min as f64, GRAVITY_RANGE.max as f64, 0.01, suffix = "m/s²"))]
    #[var(set)]
    #[init(val = Params::default().gravity as f64)]
    gravity: f64,
    /// Fraction of pipe flow lost per second, `0 ..= 1` (independent of the step length).
    #[export(range = (DAMPING_RANGE.min as f64, DAMPING_RANGE.max as f64, 0.001))]
    #[var(set)]
    #[init(val = Params::default().damping as f64)]
    damping: f64,
    /// Four or eight neighbours per cell on a square grid, or six on a triangular lattice of
    /// hexagonal cells (`NEIGHBOURS_FOUR`, `NEIGHBOURS_EIGHT`, `NEIGHBOURS_TRIANGULAR`; see
    /// `docs/MODEL.md` for what follows the lattice).
    #[export]
    #[var(set)]
    #[init(val = WaterNeighbours::Eight)]
    neighbour_mode: WaterNeighbours,
    /// Constant or depth-dependent pipe cross-section (`CROSS_SECTION_CLASSIC`,
    /// `CROSS_SECTION_DEPTH_DEPENDENT`).
    #[export]
    #[var(set)]
    #[init(val = WaterCrossSection::DepthDependent)]
    cross_section: WaterCrossSection,
    /// Momentum advection in depth-dependent mode: water carries its velocity with it, so a
    /// flood's front runs out at the speed of the shallow-water equations and bores move at the
    /// right speed. Off, the pipes are driven by pressure alone (fronts at about half the speed).
    /// Ignored in classic mode.
    #[export]
    #[var(set)]
    #[init(val = true)]
    momentum_advection: bool,
    /// Depth of the pipe cross-section in classic mode, m, `0.001 ..= 1000`.
    #[export(range = (PIPE_DEPTH_RANGE.min as f64, 10.0, 0.001, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = Params::default().pipe_depth as f64)]
    pipe_depth: f64,
    /// Erosion and deposition of the ground by the water: a `PipeWaterErosion` (its settings; CPU backend only, see its class). Null: none.
    #[export] #[var(set)] erosion: Option<Gd<crate::erosion_settings::PipeWaterErosion>>,
    /// The fluid: a `PipeWaterFluid` (viscosity, cooling into ground, density for bodies, colour for the material; presets water, mud, lava). Null: water. Its changes apply at the next frame.
    #[export] #[var] fluid: Option<Gd<crate::fluid_settings::PipeWaterFluid>>,

    /// Simulated seconds per real second, `0 ..= 100`.
    #[export_group(name = "Time")]
    #[export(range = (0.0, 10.0, 0.01, or_greater))]
    #[var(set)]
    #[init(val = 1.0)]
    time_scale: f64,
    /// Most substeps per physics frame, `1 ..= 100000`. Past it the simulation falls behind real
    /// time rather than becoming unstable.
    #[export(range = (MAX_SUBSTEPS_RANGE.min as f64, 1024.0, 1.0, or_greater))]
    #[var(set)]
    #[init(val = Params::default().max_substeps as i64)]
    max_substeps: i64,
    /// Longest single step, s, `0.0001 ..= 1`.
    #[export(range = (MAX_STEP_RANGE.min as f64, MAX_STEP_RANGE.max as f64, 0.0001, suffix = "s"))]
    #[var(set)]
    #[init(val = Params::default().max_step as f64)]
    max_step: f64,
    /// Courant number used to choose the step length, `0.01 ..= 1`; lower is steadier.
    #[export(range = (CFL_RANGE.min as f64, CFL_RANGE.max as f64, 0.01))]
    #[var(set)]
    #[init(val = Params::default().cfl as f64)]
    courant: f64,
    /// When true, `_physics_process` does not advance the simulation (`step()` still does) and
    /// does not couple `PipeWaterBody` hulls: they push no water and take no forces until it
    /// runs again (pause the scene tree to stop their rigid bodies too).
    #[export]
    #[var]
    paused: bool,
    /// When true, the simulation also runs in the editor; otherwise the editor shows the
    /// initial state.
    #[export]
    #[var]
    simulate_in_editor: bool,

    /// Boundary of the local −Z edge (`BOUNDARY_WALL`, `BOUNDARY_OPEN`, `BOUNDARY_INFLOW`,
    /// `BOUNDARY_LEVEL`).
    #[export_group(name = "Boundaries")]
    #[export]
    #[var(set)]
    boundary_north: WaterBoundary,
    /// Boundary of the local +X edge.
    #[export]
    #[var(set)]
    boundary_east: WaterBoundary,
    /// Boundary of the local +Z edge.
    #[export]
    #[var(set)]
    boundary_south: WaterBoundary,
    /// Boundary of the local −X edge.
    #[export]
    #[var(set)]
    boundary_west: WaterBoundary,
    /// Inflow through the −Z edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (INFLOW_RATE_RANGE.min as f64, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_north: f64,
    /// Inflow through the +X edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (INFLOW_RATE_RANGE.min as f64, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_east: f64,
    /// Inflow through the +Z edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (INFLOW_RATE_RANGE.min as f64, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_south: f64,
    /// Inflow through the −X edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (INFLOW_RATE_RANGE.min as f64, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_west: f64,
    /// Surface of the water held beyond the −Z edge when it is `BOUNDARY_LEVEL`, local m,
    /// `-1000000 ..= 1000000`.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    boundary_level_north: f64,
    /// Surface of the water held beyond the +X edge when it is `BOUNDARY_LEVEL`, local m,
    /// `-1000000 ..= 1000000`.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    boundary_level_east: f64,
    /// Surface of the water held beyond the +Z edge when it is `BOUNDARY_LEVEL`, local m,
    /// `-1000000 ..= 1000000`.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    boundary_level_south: f64,
    /// Surface of the water held beyond the −X edge when it is `BOUNDARY_LEVEL`, local m,
    /// `-1000000 ..= 1000000`.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    boundary_level_west: f64,

    /// Backend to run (`BACKEND_AUTO`, `BACKEND_GPU`, `BACKEND_CPU`). Rebuilds the simulation.
    #[export_group(name = "Backend")]
    #[export]
    #[var(set)]
    backend: WaterBackend,
    /// Backend actually running (`BACKEND_GPU` or `BACKEND_CPU`; `BACKEND_AUTO` before the first
    /// build). Read-only.
    #[var(no_set)]
    active_backend: WaterBackend,
    /// When true (the default), parts of the grid whose water is at rest sleep, as rigid bodies
    /// do: they are not stepped until something reaches them (a flood at their border, an edit of
    /// water or terrain, a source, a body, new settings), so the step's cost follows the water that
    /// moves rather than the area. The water is the same bit for bit either way; turn it off to
    /// compare costs. `get_frame_stats()` reports `awake_tiles` and `cells_stepped`, and
    /// `get_awake_tiles()` shows which tiles were stepped. Tiles are 32² cells on the CPU and
    /// 56 columns by 10–64 rows on the GPU backends (a workgroup of the step kernel each).
    #[export]
    #[var(set)]
    #[init(val = true)]
    can_sleep: bool,

    /// When true, the node shows its water with an internal `MeshInstance3D` child with
    /// `water_material`: a grid mesh with a vertex on every cell centre, or for large grids
    /// (from about 406² cells, where it has fewer vertices) a clipmap of nested rings around the
    /// camera that the shader places, so that a 4096² grid draws about 366 000 vertices.
    #[export_group(name = "Rendering")]
    #[export]
    #[var(set)]
    #[init(val = true)]
    show_mesh: bool,
    /// Material of the helper mesh. Empty: a `ShaderMaterial` with
    /// `res://addons/pipe_water/water_surface.gdshader`. The node sets the shader parameters
    /// `height_texture`, `flux_texture`, `grid_size` (Vector2, cells) and `cell_size` (m) on any
    /// `ShaderMaterial` given here, and `clipmap_snap`, `clipmap_spacing`, `clipmap_quads` and
    /// `clipmap_levels` (0 snap: a plain mesh in local coordinates); a shader for large grids
    /// places the clipmap's vertices as `water_surface.gdshader`'s `vertex()` does.
    #[export]
    #[var(set)]
    water_material: Option<Gd<Material>>,
    /// When true (the default), `height_texture` and `flux_texture` follow the simulation every
    /// frame. Turn it off when nothing draws them (a game with its own water rendering, a
    /// server): the node then skips the per-frame copy of both textures (about 32 bytes a cell,
    /// the largest part of its main-thread cost on big grids) and, on the GPU, reads back only
    /// the tiles queries touch. The helper mesh freezes while it is off, and reading
    /// `terrain_heights` returns the terrain as of the last texture update.
    ///
    /// On the wgpu backend the node also does this by itself while nothing uses the textures: no
    /// material or script holds either texture and no script asked for `get_height_image()`,
    /// `get_flux_image()` or `terrain_heights` in the last 120 frames. The first of those calls
    /// after such a pause waits for the GPU to show the water as it is; the textures follow every
    /// frame again from then on.
    #[export]
    #[var]
    #[init(val = true)]
    update_textures: bool,
    /// When true, the textures the node fills on the CPU (wgpu and CPU backends) hold 16-bit
    /// floats (`Image.FORMAT_RGBAH`) instead of 32-bit ones: half the bytes to copy and for Godot
    /// to upload, for a coarser surface — a half float keeps 11 significant bits, so heights
    /// step by 1/128 m between 8 and 16 m and by 1/16 m between 64 and 128 m; keep the node near
    /// the water's height to stay precise. Shaders read them the same way. The RenderingDevice
    /// backend's textures stay 32-bit: they never pass through the CPU.
    #[export]
    #[var(set)]
    half_float_textures: bool,

    /// The detail wave layer: ripples, wakes, splashes and rain finer than the grid (see the class
    /// description). On by default: at the default window it costs a fraction of a small grid's
    /// step on a GPU and about 3 ms a frame on two CPU cores, and it is what makes boats and
    /// falling things read as water; off, it has no fields and no passes at all.
    #[export_group(name = "Detail Waves")]
    #[export]
    #[var(set)]
    #[init(val = true)]
    detail_waves: bool,
    /// Detail cells per grid cell side, `1 ..= 16`: the detail waves' cells are
    /// `cell_size / detail_subdivision` m. Changing it puts the waves at rest.
    #[export(range = (1.0, 16.0, 1.0, suffix = "per cell"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().subdivision as i64)]
    detail_subdivision: i64,
    /// Detail cells per side of the window that follows the camera, `32 ..= 4096`: the window
    /// spans `detail_window × cell_size / detail_subdivision` m (64 m by default). Its cost
    /// grows with its area and not with the grid's. Changing it puts the waves at rest.
    #[export(range = (32.0, 4096.0, 32.0, suffix = "cells"))]
    #[var(set)]
    #[init(val = pipewater_core::DetailParams::default().window as i64)]
    detail_window: i64,
    /// Fastest the detail waves travel, m/s, `0.05 ..= 50`: they run at √(g·depth) up to it.
    /// Short waves on deep water are much slower than √(g·depth); 2 m/s is the speed of 2.5 m
    /// waves on deep water.
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
    /// The `Node3D` the detail window follows (a boat, the player). Empty: the water the current
    /// camera of the node's viewport looks at (its position moved along its horizontal view
    /// direction by its height above the node); the grid's centre when there is no camera.
    #[export]
    #[var]
    detail_follow: NodePath,

    /// Water surface, depth, terrain and wetness per cell (float RGBA, `grid_size` texels; layout
    /// in the class description): a `Texture2DRD` on the RenderingDevice backend, else an
    /// `ImageTexture`. Read-only and never null; the same object while the same kind of backend
    /// runs (`simulation_rebuilt` is emitted when the backend changes).
    #[var(get, no_set)]
    height_texture: PhantomVar<Option<Gd<Texture2D>>>,
    /// Flow velocity, speed and discharge per cell (float RGBA, `grid_size` texels; layout in
    /// the class description), like `height_texture`. Read-only.
    #[var(get, no_set)]
    flux_texture: PhantomVar<Option<Gd<Texture2D>>>,
    /// The detail waves of the window that follows the camera (`RGBA16F`, `detail_window`²
    /// texels; layout in the class description): a `Texture2DRD` written on the GPU on the
    /// RenderingDevice backend, else an `ImageTexture` (on wgpu read back asynchronously, a frame
    /// or two old, when `update_textures` is on). Read-only and never null.
    #[var(get, no_set)]
    detail_texture: PhantomVar<Option<Gd<Texture2D>>>,

    /// When true, the water is shared over the node's multiplayer (docs/MULTIPLAYER.md): the
    /// node's multiplayer authority, which must be the server (peer 1, the default), simulates
    /// and sends each client the tiles near its `sync_focus_nodes` that changed, delta-coded and
    /// compressed, within `sync_budget_kbps`, through `SceneMultiplayer.send_bytes` (packets
    /// starting with `PWS`; tile updates unreliable, joins and edits reliable) at 30 Hz. Every
    /// other peer steps its own water and pulls it towards the server's copy as it arrives
    /// (differences up to 1 cm snap, larger ones blend by a quarter a frame), so the surface
    /// moves at the frame rate between updates. On a client, `add_water`, `remove_water` and
    /// `modify_terrain` become requests to the server (they return 0 or false: the edit arrives
    /// with the server's water if the server accepts it, or `edit_refused` says why not);
    /// without a connection they are refused with an error; sources and `fill_basin` are the
    /// server's. Both sides must start from the same `grid_size`, `cell_size` and terrain (the
    /// client refuses a server whose ground differs). Packets that are malformed, or that claim
    /// to be the server's from another peer, are refused with an error and change nothing. One
    /// node per multiplayer. Off by default: each peer runs its own water.
    #[export_group(name = "Multiplayer")]
    #[export]
    #[var]
    multiplayer_sync: bool,
    /// The server's bandwidth for each client after its join, kbit/s, `8 ..= 1000000` (IP, UDP
    /// and ENet headers counted): the nearest and most changed tiles go first, the rest wait. A
    /// join is sent at up to 16 000 kbit/s. Used on the server; a running server takes a change
    /// at once.
    #[export(range = (8.0, 100000.0, 1.0, or_greater, suffix = "kbit/s"))]
    #[var(set)]
    #[init(val = 256.0)]
    sync_budget_kbps: f64,
    /// `Node3D`s a client's player looks from (camera, avatar), at most 8: the server sends the
    /// tiles near them first (within 128 m at full priority). Empty: the viewport's current
    /// camera. Used on clients.
    #[export]
    #[var]
    sync_focus_nodes: Array<NodePath>,
    /// When true, the server accepts clients' edit requests (`add_water`, `remove_water`,
    /// `modify_terrain` called on a client), subject to `edit_filter`. Off by default: every
    /// request is refused. Used on the server.
    #[export]
    #[var]
    allow_client_edits: bool,
    /// The server's say on each client edit when `allow_client_edits` is on, called as
    /// `edit_filter.call(peer_id, kind, global_position, amount, radius)` (`kind` is
    /// `"add_water"`, `"remove_water"` or `"modify_terrain"`; `amount` is m³ or, for
    /// `modify_terrain`, m): return `true` to accept, `false` or a `String` (the reason the
    /// client is told) to refuse. Invalid (the default): every request is accepted.
    #[var]
    #[init(val = Callable::invalid())]
    edit_filter: Callable,

    sim: Option<Simulation>,
    /// Property changes the simulation has not taken yet.
    pending: Pending,
    /// `backend` changed while a simulation ran: move the water to the new backend.
    backend_changed: bool,
    outputs: WaterOutputs,
    /// `detail_texture` and what fills it.
    detail_output: DetailTexture,
    /// A detail wave property changed since the simulation last took them.
    detail_changed: bool,
    surface: WaterSurface,
    errors: ErrorLog,
    /// Main-thread cost of the last advance, µs.
    step_usec: i64,
    /// Bodies pushed the water last frame (an empty frame then takes their displacement out).
    had_bodies: bool,
    /// The sources of the `PipeWaterSource` nodes, by node.
    source_placements: SourcePlacements,
    terrain_link: terrain_source::TerrainLink,
    /// `save_state_async()` and `load_state_async()` running.
    state_jobs: persistence::StateJobs,
    /// `multiplayer_sync`'s session and the multiplayer signals it listens to.
    sync_link: multiplayer::SyncLink,
    base: Base<Node3D>,
}

#[godot_api]
impl INode3D for PipeWater {
    fn enter_tree(&mut self) {
        self.base_mut().add_to_group(WATER_GROUP);
    }

    fn on_notification(&mut self, what: Node3DNotification) {
        if what == Node3DNotification::PREDELETE {
            self.surface.detach();
            self.stop_sync();
            // The RenderingDevice backend frees its RIDs while Godot's device still exists.
            self.drop_simulation();
        }
    }

    fn ready(&mut self) {
        self.ensure_sim();
        self.update_outputs();
    }

    fn physics_process(&mut self, delta: f64) {
        self.sync_before_step();
        self.physics_frame(delta);
        self.sync_after_step();
    }
}

#[godot_api]
impl PipeWater {
    /// Largest `grid_size` side, cells.
    #[constant]
    const MAX_GRID_SIDE: i64 = validate::MAX_NODE_GRID_SIDE;

    /// Emitted after the simulation is (re)built: at start-up and after the grid, cell size,
    /// initial water level or backend changed. `active_backend` is `BACKEND_GPU` or `BACKEND_CPU`.
    #[signal]
    fn simulation_rebuilt(active_backend: i64);

    /// Emitted after `reset()` restored the initial water, and after `set_initial_current()` or
    /// `set_initial_velocity()` restarted from it.
    #[signal]
    fn simulation_reset();

    /// Emitted when a `save_state_async()` finished: `error` is `OK` and `state` holds the water
    /// of the frame the save began on (also written to `path` unless it is empty), or `error`
    /// says why not (`ERR_FILE_CANT_WRITE`: `path` could not be written; `FAILED`: the GPU could
    /// not be read) and `state` is null.
    #[signal]
    fn state_saved(path: GString, error: i64, state: Option<Gd<PipeWaterState>>);

    /// Emitted when a `load_state_async()` (`path` empty) or `load_state_file_async()` finished:
    /// `error` is `OK` and the water goes on from the loaded state, or `error` says why not and the
    /// water is as it was (`ERR_FILE_CANT_OPEN`: no readable file at `path`;
    /// `ERR_INVALID_DATA`: not a PipeWater state, truncated, corrupt, from a newer PipeWater, or
    /// saved for another `grid_size` or `cell_size`).
    #[signal]
    fn state_loaded(path: GString, error: i64);

    /// Emitted on the server (`multiplayer_sync`) for each client's edit request once decided:
    /// `kind` is `"add_water"`, `"remove_water"` or `"modify_terrain"`, `amount` m³ (m for
    /// `modify_terrain`), `radius` m; `accepted` says whether it was applied and sent to every
    /// client (see `allow_client_edits`, `edit_filter`).
    #[signal]
    fn edit_requested(peer_id: i64, kind: GString, global_position: Vector3, amount: f64, radius: f64, accepted: bool);

    /// Emitted on a client (`multiplayer_sync`) when the server refused one of its edit
    /// requests, with the server's reason; the water is unchanged.
    #[signal]
    fn edit_refused(request_id: i64, reason: GString);

    // ---- properties -------------------------------------------------------------------------

    /// Sets `grid_size` (each side `2 ..= 4096`); rebuilds the simulation.
    #[func]
    fn set_grid_size(&mut self, value: Vector2i) {
        self.set_checked(validate::grid_size(value.x as i64, value.y as i64), |node| node.grid_size = value, Pending::rebuild);
    }

    /// Sets `cell_size` (m, `0.001 ..= 10000`); rebuilds the simulation.
    #[func]
    fn set_cell_size(&mut self, value: f64) {
        self.set_checked(validate::cell_size(value), |node| node.cell_size = value, Pending::rebuild);
    }

    /// Sets `heightmap`; rejected when the texture has no readable image.
    #[func]
    fn set_heightmap(&mut self, value: Option<Gd<Texture2D>>) {
        self.store_heightmap(value);
    }

    /// Sets `height_scale` (m per unit, `-100000 ..= 100000`).
    #[func]
    fn set_height_scale(&mut self, value: f64) {
        let (lo, hi) = validate::HEIGHT_SCALE_RANGE;
        self.set_checked(validate::float_in("height_scale", value, lo, hi, " m"), |node| node.height_scale = value, Pending::terrain);
    }

    /// Sets `height_offset` (m, `-1000000 ..= 1000000`).
    #[func]
    fn set_height_offset(&mut self, value: f64) {
        self.set_checked(validate::local_height("height_offset", value), |node| node.height_offset = value, Pending::terrain);
    }

    /// Sets `terrain_heights`: exactly `grid_size.x × grid_size.y` finite heights, or empty.
    #[func]
    fn set_terrain_heights(&mut self, value: PackedFloat32Array) {
        self.store_terrain_heights(value);
    }

    /// The current terrain heights (local m, row-major), edits included: the terrain of the
    /// snapshot the textures show (updated each physics frame, and by `step()`, edits and
    /// `rebuild()`).
    #[func]
    fn get_terrain_heights(&self) -> PackedFloat32Array {
        self.outputs.shown_terrain().unwrap_or_else(|| self.terrain_heights.clone())
    }

    /// Sets `terrain_source`: the ground is read from it at the next frame or query.
    #[func]
    fn set_terrain_source(&mut self, value: NodePath) {
        self.store_terrain_source(value);
    }

    /// Sets `initial_water_level` (local m, `-1000000 ..= ` the lowest ground + 2048: a cell holds
    /// at most 2048 m of water); rebuilds the simulation.
    #[func]
    fn set_initial_water_level(&mut self, value: f64) {
        self.store_initial_water_level(value);
    }

    /// Sets `initial_state`: refused, keeping the previous state and the water, when it was saved
    /// for another grid than `grid_size` × `cell_size` or cannot be read; rebuilds the
    /// simulation otherwise.
    #[func]
    fn set_initial_state(&mut self, value: Option<Gd<PipeWaterState>>) {
        self.store_initial_state(value);
    }

    /// Sets `gravity` (m/s², `0 ..= 100`).
    #[func]
    fn set_gravity(&mut self, value: f64) {
        self.set_checked(validate::param("gravity", &GRAVITY_RANGE, value), |node| node.gravity = value, Pending::params);
    }

    /// Sets `damping` (`0 ..= 1` per second).
    #[func]
    fn set_damping(&mut self, value: f64) {
        self.set_checked(validate::param("damping", &DAMPING_RANGE, value), |node| node.damping = value, Pending::params);
    }

    /// Sets `neighbour_mode`.
    #[func]
    fn set_neighbour_mode(&mut self, value: WaterNeighbours) {
        self.neighbour_mode = value;
        self.pending.params();
        // Detail waves and terrain sources run on the square grid only: both are checked again.
        self.detail_changed = true;
        if !self.terrain_source.is_empty() {
            self.pending.terrain();
        }
    }

    /// Sets `cross_section`.
    #[func]
    fn set_cross_section(&mut self, value: WaterCrossSection) {
        self.cross_section = value;
        self.pending.params();
    }

    /// Sets `momentum_advection`.
    #[func]
    fn set_momentum_advection(&mut self, value: bool) {
        self.momentum_advection = value;
        self.pending.params();
    }

    /// Sets `pipe_depth` (m, `0.001 ..= 1000`).
    #[func]
    fn set_pipe_depth(&mut self, value: f64) {
        self.set_checked(validate::param("pipe_depth", &PIPE_DEPTH_RANGE, value), |node| node.pipe_depth = value, Pending::params);
    }

    /// Sets `erosion` (null: none); its later changes apply at the next frame.
    #[func] fn set_erosion(&mut self, value: Option<Gd<crate::erosion_settings::PipeWaterErosion>>) { self.store_erosion(value); }

    /// Sets `time_scale` (`0 ..= 100`).
    #[func]
    fn set_time_scale(&mut self, value: f64) {
        if self.errors.accept(validate::time_scale(value)).is_some() {
            self.time_scale = value;
        }
    }

    /// Sets `max_substeps` (`1 ..= 100000`).
    #[func]
    fn set_max_substeps(&mut self, value: i64) {
        self.set_checked(validate::int_param("max_substeps", &MAX_SUBSTEPS_RANGE, value), |node| node.max_substeps = value, Pending::params);
    }

    /// Sets `max_step` (s, `0.0001 ..= 1`).
    #[func]
    fn set_max_step(&mut self, value: f64) {
        self.set_checked(validate::param("max_step", &MAX_STEP_RANGE, value), |node| node.max_step = value, Pending::params);
    }

    /// Sets `courant` (`0.01 ..= 1`).
    #[func]
    fn set_courant(&mut self, value: f64) {
        self.set_checked(validate::param("courant", &CFL_RANGE, value), |node| node.courant = value, Pending::params);
    }

    /// Sets `boundary_north`.
    #[func]
    fn set_boundary_north(&mut self, value: WaterBoundary) {
        self.boundary_north = value;
        self.pending.params();
    }

    /// Sets `boundary_east`.
    #[func]
    fn set_boundary_east(&mut self, value: WaterBoundary) {
        self.boundary_east = value;
        self.pending.params();
    }

    /// Sets `boundary_south`.
    #[func]
    fn set_boundary_south(&mut self, value: WaterBoundary) {
        self.boundary_south = value;
        self.pending.params();
    }

    /// Sets `boundary_west`.
    #[func]
    fn set_boundary_west(&mut self, value: WaterBoundary) {
        self.boundary_west = value;
        self.pending.params();
    }

    /// Sets `inflow_rate_north` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_north(&mut self, value: f64) {
        self.set_checked(validate::inflow_rate("inflow_rate_north", value), |node| node.inflow_rate_north = value, Pending::params);
    }

    /// Sets `inflow_rate_east` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_east(&mut self, value: f64) {
        self.set_checked(validate::inflow_rate("inflow_rate_east", value), |node| node.inflow_rate_east = value, Pending::params);
    }

    /// Sets `inflow_rate_south` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_south(&mut self, value: f64) {
        self.set_checked(validate::inflow_rate("inflow_rate_south", value), |node| node.inflow_rate_south = value, Pending::params);
    }

    /// Sets `inflow_rate_west` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_west(&mut self, value: f64) {
        self.set_checked(validate::inflow_rate("inflow_rate_west", value), |node| node.inflow_rate_west = value, Pending::params);
    }

    /// Sets `boundary_level_north` (local m, `-1000000 ..= 1000000`).
    #[func]
    fn set_boundary_level_north(&mut self, value: f64) {
        self.set_checked(validate::local_height("boundary_level_north", value), |node| node.boundary_level_north = value, Pending::params);
    }

    /// Sets `boundary_level_east` (local m, `-1000000 ..= 1000000`).
    #[func]
    fn set_boundary_level_east(&mut self, value: f64) {
        self.set_checked(validate::local_height("boundary_level_east", value), |node| node.boundary_level_east = value, Pending::params);
    }

    /// Sets `boundary_level_south` (local m, `-1000000 ..= 1000000`).
    #[func]
    fn set_boundary_level_south(&mut self, value: f64) {
        self.set_checked(validate::local_height("boundary_level_south", value), |node| node.boundary_level_south = value, Pending::params);
    }

    /// Sets `boundary_level_west` (local m, `-1000000 ..= 1000000`).
    #[func]
    fn set_boundary_level_west(&mut self, value: f64) {
        self.set_checked(validate::local_height("boundary_level_west", value), |node| node.boundary_level_west = value, Pending::params);
    }

    /// Sets `backend`: a running simulation moves its water, sources and ledger to the new
    /// backend at the next physics frame or query.
    #[func]
    fn set_backend(&mut self, value: WaterBackend) {
        self.backend = value;
        if self.sim.is_some() {
            self.backend_changed = true;
        } else {
            self.pending.rebuild();
        }
    }

    /// Sets `can_sleep`: takes effect at the next step.
    #[func]
    fn set_can_sleep(&mut self, value: bool) {
        self.can_sleep = value;
        if let Some(sim) = self.sim.as_mut() {
            sim.set_sleeping(value);
        }
    }

    /// Sets `half_float_textures`: the CPU-filled textures change format at once.
    #[func]
    fn set_half_float_textures(&mut self, value: bool) {
        self.half_float_textures = value;
        let grid = self.sim.as_ref().map(|s| s.grid());
        self.outputs.set_half_float(value, grid, &mut self.errors);
    }

    /// Sets `detail_waves`: turns the layer on (its waves at rest) or off.
    #[func]
    fn set_detail_waves(&mut self, value: bool) {
        self.detail_waves = value;
        self.detail_changed = true;
    }

    /// Sets `detail_subdivision` (`1 ..= 16`).
    #[func]
    fn set_detail_subdivision(&mut self, value: i64) {
        let max = pipewater_core::detail::MAX_SUBDIVISION as i64;
        self.set_detail_param(validate::int_in("detail_subdivision", value, 1, max), |node| node.detail_subdivision = value);
    }

    /// Sets `detail_window` (cells, `32 ..= 4096`).
    #[func]
    fn set_detail_window(&mut self, value: i64) {
        let (lo, hi) = pipewater_core::detail::WINDOW_RANGE;
        self.set_detail_param(validate::int_in("detail_window", value, lo as i64, hi as i64), |node| node.detail_window = value);
    }

    /// Sets `detail_max_celerity` (m/s, `0.05 ..= 50`).
    #[func]
    fn set_detail_max_celerity(&mut self, value: f64) {
        self.set_detail_param(validate::float_in("detail_max_celerity", value, 0.05, 50.0, " m/s"), |node| node.detail_max_celerity = value);
    }

    /// Sets `detail_damping` (1/s, `0 ..= 100`).
    #[func]
    fn set_detail_damping(&mut self, value: f64) {
        self.set_detail_param(validate::float_in("detail_damping", value, 0.0, 100.0, " 1/s"), |node| node.detail_damping = value);
    }

    /// Sets `detail_hull_strength` (`0 ..= 10`).
    #[func]
    fn set_detail_hull_strength(&mut self, value: f64) {
        self.set_detail_param(validate::float_in("detail_hull_strength", value, 0.0, 10.0, ""), |node| node.detail_hull_strength = value);
    }

    /// Sets `rain_rate` (drops per m² per second, `0 ..= 1000`).
    #[func]
    fn set_rain_rate(&mut self, value: f64) {
        self.set_detail_param(validate::float_in("rain_rate", value, 0.0, 1000.0, " drops/m²/s"), |node| node.rain_rate = value);
    }

    /// Sets `rain_drop_height` (m, `0 ..= 1`).
    #[func]
    fn set_rain_drop_height(&mut self, value: f64) {
        self.set_detail_param(validate::float_in("rain_drop_height", value, 0.0, 1.0, " m"), |node| node.rain_drop_height = value);
    }

    /// Sets `show_mesh`: creates or frees the helper mesh.
    #[func]
    fn set_show_mesh(&mut self, value: bool) {
        self.show_mesh = value;
        if self.sim.is_some() {
            self.sync_surface();
        }
    }

    /// Sets `water_material` (any material; shader parameters are set on a `ShaderMaterial`).
    #[func]
    fn set_water_material(&mut self, value: Option<Gd<Material>>) {
        self.water_material = value;
        if self.sim.is_some() {
            self.sync_surface();
        }
    }

    /// Sets `sync_budget_kbps` (kbit/s, `8 ..= 1000000`).
    #[func]
    fn set_sync_budget_kbps(&mut self, value: f64) {
        self.store_sync_budget(value);
    }

    /// Figures of `multiplayer_sync` on this peer: `role` (`"server"`, `"client"`, `"waiting"`
    /// for a connection, or `"off"`), `bytes_sent` and `bytes_received` (payloads, B),
    /// `packets_refused`, `seconds` since the session began; on the server `tiles`, `captures`,
    /// `tiles_read` (tiles read and compared over all captures: fewer than `tiles` a capture
    /// where the backend finds the changed ones), `frame` (frames its water has run: the
    /// clients' clock) and `clients` (peer id →
    /// `bytes_sent` with 40 B a packet of headers, `tiles_current`, `join_seconds`, -1 until its
    /// join completes); on a client `tiles`, `tiles_applied`, `checksum_mismatches`, `complete`
    /// (every tile received), `join_seconds` (-1 until then), `started` (its water was set to
    /// the server's keyframe and runs the server's frames), `frame` (the server's frames its
    /// water has run: compare with the server's water of the same `frame`) and
    /// `largest_difference` (m: how far its water was from the server's copy where the last
    /// measured correction came, at the copy's frame; on a GPU backend measured about once a
    /// second, as it costs a read that waits for the GPU).
    #[func]
    fn get_sync_stats(&self) -> VarDictionary {
        self.sync_stats()
    }

    // ---- outputs ----------------------------------------------------------------------------

    /// Returns `height_texture`.
    #[func]
    fn get_height_texture(&self) -> Option<Gd<Texture2D>> {
        Some(self.outputs.height_texture())
    }

    /// Returns `flux_texture`.
    #[func]
    fn get_flux_texture(&self) -> Option<Gd<Texture2D>> {
        Some(self.outputs.flux_texture())
    }

    /// Returns `detail_texture`.
    #[func]
    fn get_detail_texture(&self) -> Option<Gd<Texture2D>> {
        Some(self.detail_output.texture())
    }

    /// The image last copied into `height_texture` (same size, format and layout), for CPU-side
    /// use such as minimaps. Owned by the node and overwritten each frame: duplicate it to keep it.
    /// On the RenderingDevice backend a new image read from the GPU, which waits for it: not for
    /// every frame.
    #[func]
    fn get_height_image(&mut self) -> Option<Gd<Image>> {
        self.catch_up_images("get_height_image");
        self.outputs.height_image()
    }

    /// The image last copied into `flux_texture`. Owned by the node; duplicate it to keep it.
    #[func]
    fn get_flux_image(&mut self) -> Option<Gd<Image>> {
        self.catch_up_images("get_flux_image");
        self.outputs.flux_image()
    }

    // ---- errors -----------------------------------------------------------------------------

    /// Message of the most recent rejected argument or failed operation; empty when none.
    #[func]
    fn get_last_error(&self) -> GString {
        GString::from(self.errors.last())
    }

    /// Clears `get_last_error()`.
    #[func]
    fn clear_last_error(&mut self) {
        self.errors.clear();
    }
}

