//! The `PipeWater` node: Godot plumbing around [`pipewater_core::Simulation`].
//!
//! Everything that can be tested without Godot lives in [`crate::mapping`], [`crate::texels`]
//! and [`crate::validate`]; this file converts types, forwards errors and owns the Godot
//! resources (textures, the optional surface mesh).

use crate::rendering_device::textures::RdTextures;
use crate::rendering_device::{self, RdBackend};
use crate::mapping::{global_to_local_point, local_height_to_global, local_velocity_to_global, OUTSIDE_HEIGHT};
use crate::texels::{self, terrain_from_rf_bytes, texel_bytes};
use crate::validate;
use godot::classes::image::Format;
use godot::classes::node::InternalMode;
use godot::classes::notify::Node3DNotification;
use godot::classes::{
    Engine, INode3D, Image, ImageTexture, Material, Mesh, MeshInstance3D, Node3D, PlaneMesh, ResourceLoader, Shader, ShaderMaterial, Texture2D,
};
use godot::prelude::*;
use pipewater_core::{
    BackendKind, BackendPreference, Boundary, CrossSection, Error as CoreError, Grid, NeighbourMode, Params, Simulation, Snapshot,
    SourceId, State,
};
use pipewater_core::state::copy_in_parallel;
use std::sync::Arc;
use std::time::Instant;

/// Default water surface shader, loaded when `water_material` is empty.
const DEFAULT_SHADER: &str = "res://addons/pipe_water/water_surface.gdshader";
/// Most subdivisions of the helper mesh per side (about a million vertices at most).
const MAX_MESH_SUBDIVISIONS: u32 = 1023;

/// Which simulation backend a `PipeWater` node runs.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterBackend {
    /// Godot's own RenderingDevice when the renderer has one (Forward+, Mobile), else the GPU
    /// through wgpu when an adapter exists (Compatibility renderer, headless), else the CPU
    /// (with a warning).
    #[default]
    Auto = 0,
    /// The GPU through wgpu, on a device of its own: the fields are read back every frame for
    /// the textures. Without an adapter: an error, and the CPU runs instead.
    Gpu = 1,
    /// The multithreaded CPU reference.
    Cpu = 2,
    /// The GPU through Godot's own RenderingDevice: the textures are written on the GPU and
    /// never leave it; queries read back only the tiles they touch. Needs a renderer with a
    /// RenderingDevice and Godot's default (single-threaded) rendering thread model; otherwise
    /// an error, and `BACKEND_AUTO`'s choice runs instead.
    RenderingDevice = 3,
}

/// How many neighbours each cell exchanges water with.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterNeighbours {
    /// Four orthogonal pipes: cheaper, fronts spread as diamonds.
    Four = 0,
    /// All eight neighbours: fronts spread as circles.
    #[default]
    Eight = 1,
}

/// How a pipe's cross-section is chosen.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterCrossSection {
    /// Constant `pipe_depth`: the classic game-tuned look; waves travel at √(g·pipe_depth).
    Classic = 0,
    /// The water depth at the pipe: shallow-water physics, waves travel at √(g·depth).
    #[default]
    DepthDependent = 1,
}

/// What happens at one edge of the grid.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterBoundary {
    /// Closed: no water crosses.
    #[default]
    Wall = 0,
    /// Free outfall: water leaves as if the ground dropped away beyond the edge.
    Open = 1,
    /// Water enters at the edge's `inflow_rate_*` (m³/s), spread over its cells.
    Inflow = 2,
}

/// A water simulation over terrain (eight-neighbour pipe method), on the GPU when one exists.
///
/// The grid lies in the node's local XZ plane, centred on the node, `grid_size` cells of
/// `cell_size` metres; local +Y is up. Positions given to methods are **global** and go through
/// the node's global transform; heights come back as global Y. Volumes (m³), rates (m³/s),
/// radii and depths (m) are in the node's local units, which are metres when it is not scaled.
///
/// The simulation advances in `_physics_process` by `delta × time_scale`, in as many substeps as
/// stability needs (at most `max_substeps`, each at most `max_step` s). Changing the grid, cell
/// size or initial water level rebuilds the simulation (water restarts from
/// `initial_water_level`, sources are removed); changing the backend of a running simulation
/// moves its water, sources and ledger to the new backend; changing the terrain keeps the water;
/// the other parameters apply at the next step.
///
/// **Outputs for materials.** `height_texture` and `flux_texture` are `Image.FORMAT_RGBAF`
/// textures of `grid_size` texels (texel `(x, y)` = cell `(x, y)`; row 0 is the local −Z edge,
/// column 0 the local −X edge; UV = `local.xz / (grid_size × cell_size) + 0.5`). On the
/// RenderingDevice backend they are `Texture2DRD`s written by the simulation on the GPU in the
/// same frame, and never copied through the CPU. On the wgpu and CPU backends they are
/// `ImageTexture`s updated after each physics frame from the newest snapshot, which on wgpu is
/// read back asynchronously and may be a frame or two old.
///
/// **Queries** (`get_height` and friends) on the RenderingDevice backend read 8×8-cell tiles
/// around the points asked about, read back asynchronously on Godot 4.4+ (they show the water of
/// Godot's frame delay ago, typically 2 frames; a tile's first query answers from the state the
/// simulation started or was reset with) and at once on Godot 4.3, where each frame's read waits
/// for the GPU. `get_frame_stats()["readback_bytes"]` says what a frame read back.
/// `height_texture`: R = surface height (local Y, m), G = depth (m), B = terrain height (local Y,
/// m), A = 1 if wet (depth > 1 mm) else 0.
/// `flux_texture`: R = velocity along local +X (m/s), G = velocity along local +Z (m/s), B = speed
/// (m/s), A = discharge per metre of width (m²/s).
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
#[class(tool, base = Node3D)]
pub struct PipeWater {
    /// Cells along local X (`x`) and local Z (`y`), each `2 ..= 4096`. Rebuilds the simulation.
    #[export_group(name = "Grid")]
    #[export]
    #[var(set)]
    grid_size: Vector2i,
    /// Side of a square cell in metres, `0.001 ..= 10000`. Rebuilds the simulation.
    #[export(range = (0.001, 100.0, 0.001, or_greater, suffix = "m"))]
    #[var(set)]
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

    /// Water surface (local Y, m) that every cell below it is filled to when the simulation
    /// starts or is reset, `-1000000 ..= 1000000`. Rebuilds the simulation.
    #[export_group(name = "Water")]
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m"))]
    #[var(set)]
    initial_water_level: f64,
    /// Gravitational acceleration, m/s², `0 ..= 100`.
    #[export(range = (0.0, 100.0, 0.01, suffix = "m/s²"))]
    #[var(set)]
    gravity: f64,
    /// Fraction of pipe flow lost per second, `0 ..= 1` (independent of the step length).
    #[export(range = (0.0, 1.0, 0.001))]
    #[var(set)]
    damping: f64,
    /// Four or eight neighbours per cell (`NEIGHBOURS_FOUR`, `NEIGHBOURS_EIGHT`).
    #[export]
    #[var(set)]
    neighbour_mode: WaterNeighbours,
    /// Constant or depth-dependent pipe cross-section (`CROSS_SECTION_CLASSIC`,
    /// `CROSS_SECTION_DEPTH_DEPENDENT`).
    #[export]
    #[var(set)]
    cross_section: WaterCrossSection,
    /// Depth of the pipe cross-section in classic mode, m, `0.001 ..= 1000`.
    #[export(range = (0.001, 10.0, 0.001, or_greater, suffix = "m"))]
    #[var(set)]
    pipe_depth: f64,

    /// Simulated seconds per real second, `0 ..= 100`.
    #[export_group(name = "Time")]
    #[export(range = (0.0, 10.0, 0.01, or_greater))]
    #[var(set)]
    time_scale: f64,
    /// Most substeps per physics frame, `1 ..= 100000`. Past it the simulation falls behind real
    /// time rather than becoming unstable.
    #[export(range = (1.0, 1024.0, 1.0, or_greater))]
    #[var(set)]
    max_substeps: i64,
    /// Longest single step, s, `0.0001 ..= 1`.
    #[export(range = (0.0001, 1.0, 0.0001, suffix = "s"))]
    #[var(set)]
    max_step: f64,
    /// Courant number used to choose the step length, `0.01 ..= 1`; lower is steadier.
    #[export(range = (0.01, 1.0, 0.01))]
    #[var(set)]
    courant: f64,
    /// When true, `_physics_process` does not advance the simulation (`step()` still does).
    #[export]
    #[var]
    paused: bool,
    /// When true, the simulation also runs in the editor; otherwise the editor shows the
    /// initial state.
    #[export]
    #[var]
    simulate_in_editor: bool,

    /// Boundary of the local −Z edge (`BOUNDARY_WALL`, `BOUNDARY_OPEN`, `BOUNDARY_INFLOW`).
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
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_north: f64,
    /// Inflow through the +X edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_east: f64,
    /// Inflow through the +Z edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_south: f64,
    /// Inflow through the −X edge when it is `BOUNDARY_INFLOW`, m³/s, `0 ..= 1000000`.
    #[export(range = (0.0, 100.0, 0.01, or_greater, suffix = "m³/s"))]
    #[var(set)]
    inflow_rate_west: f64,

    /// Backend to run (`BACKEND_AUTO`, `BACKEND_GPU`, `BACKEND_CPU`). Rebuilds the simulation.
    #[export_group(name = "Backend")]
    #[export]
    #[var(set)]
    backend: WaterBackend,
    /// Backend actually running (`BACKEND_GPU` or `BACKEND_CPU`; `BACKEND_AUTO` before the first
    /// build). Read-only.
    #[var(no_set)]
    active_backend: WaterBackend,

    /// When true, the node shows its water with an internal `MeshInstance3D` child: a `PlaneMesh`
    /// the size of the grid, subdivided once per cell (at most 1023 times per side), with
    /// `water_material`.
    #[export_group(name = "Rendering")]
    #[export]
    #[var(set)]
    show_mesh: bool,
    /// Material of the helper mesh. Empty: a `ShaderMaterial` with
    /// `res://addons/pipe_water/water_surface.gdshader`. The node sets the shader parameters
    /// `height_texture`, `flux_texture`, `grid_size` (Vector2, cells) and `cell_size` (m) on any
    /// `ShaderMaterial` given here.
    #[export]
    #[var(set)]
    water_material: Option<Gd<Material>>,
    /// When true (the default), `height_texture` and `flux_texture` follow the simulation every
    /// frame. Turn it off when nothing draws them (a game with its own water rendering, a
    /// server): the node then skips the per-frame copy of both textures (about 32 bytes a cell,
    /// the largest part of its main-thread cost on big grids) and, on the GPU, reads back only
    /// when a query asks. The helper mesh freezes while it is off, and reading `terrain_heights`
    /// returns the terrain as of the last texture update.
    #[export]
    #[var]
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

    /// Water surface, depth, terrain and wetness per cell (32-bit float RGBA, `grid_size` texels;
    /// layout in the class description): a `Texture2DRD` on the RenderingDevice backend, else an
    /// `ImageTexture`. Read-only and never null; the same object while the same kind of backend
    /// runs (`simulation_rebuilt` is emitted when it changes).
    #[var(no_set)]
    height_texture: Option<Gd<Texture2D>>,
    /// Flow velocity, speed and discharge per cell (`Image.FORMAT_RGBAF`, `grid_size` texels;
    /// layout in the class description). Read-only.
    #[var(no_set)]
    flux_texture: Option<Gd<Texture2D>>,

    /// The textures of the CPU and wgpu backends, filled from snapshots on the host.
    image_textures: [Gd<ImageTexture>; 2],
    /// The textures of the RenderingDevice backend, written on the GPU.
    rd_textures: RdTextures,
    /// The RD textures of the running RenderingDevice backend (height, flux).
    rd_rids: Option<(Rid, Rid)>,
    /// `backend` changed while a simulation ran: move the water to the new backend.
    needs_backend_switch: bool,
    sim: Option<Simulation>,
    /// The last build failed; not retried until a property asks for a rebuild.
    build_failed: bool,
    needs_rebuild: bool,
    needs_terrain: bool,
    needs_params: bool,
    /// Snapshot the textures show, to skip re-uploading the same one.
    shown: Option<Arc<Snapshot>>,
    /// Byte arrays the textures' images are filled from: [height, flux] × two that alternate.
    upload_bytes: [[PackedByteArray; 2]; 2],
    upload_parity: usize,
    height_image: Option<Gd<Image>>,
    flux_image: Option<Gd<Image>>,
    mesh_instance: Option<Gd<MeshInstance3D>>,
    default_material: Option<Gd<Material>>,
    last_error: String,
    step_usec: i64,
    texture_usec: i64,
    snapshot_usec: i64,
    base: Base<Node3D>,
}

#[godot_api]
impl INode3D for PipeWater {
    fn init(base: Base<Node3D>) -> Self {
        let p = Params::default();
        let image_textures = [ImageTexture::new_gd(), ImageTexture::new_gd()];
        PipeWater {
            grid_size: Vector2i::new(128, 128),
            cell_size: 1.0,
            heightmap: None,
            height_scale: 10.0,
            height_offset: 0.0,
            terrain_heights: PackedFloat32Array::new(),
            initial_water_level: 1.0,
            gravity: p.gravity as f64,
            damping: p.damping as f64,
            neighbour_mode: WaterNeighbours::Eight,
            cross_section: WaterCrossSection::DepthDependent,
            pipe_depth: p.pipe_depth as f64,
            time_scale: 1.0,
            max_substeps: p.max_substeps as i64,
            max_step: p.max_step as f64,
            courant: p.cfl as f64,
            paused: false,
            simulate_in_editor: false,
            boundary_north: WaterBoundary::Wall,
            boundary_east: WaterBoundary::Wall,
            boundary_south: WaterBoundary::Wall,
            boundary_west: WaterBoundary::Wall,
            inflow_rate_north: 0.0,
            inflow_rate_east: 0.0,
            inflow_rate_south: 0.0,
            inflow_rate_west: 0.0,
            backend: WaterBackend::Auto,
            active_backend: WaterBackend::Auto,
            show_mesh: true,
            update_textures: true,
            half_float_textures: false,
            water_material: None,
            // Created now so that materials can take them before the first build; their images
            // are set (and replaced when the grid changes) by the node.
            height_texture: Some(image_textures[0].clone().upcast()),
            flux_texture: Some(image_textures[1].clone().upcast()),
            image_textures,
            rd_textures: RdTextures::new(),
            rd_rids: None,
            needs_backend_switch: false,
            sim: None,
            build_failed: false,
            needs_rebuild: true,
            needs_terrain: false,
            needs_params: false,
            shown: None,
            upload_bytes: Default::default(),
            upload_parity: 0,
            height_image: None,
            flux_image: None,
            mesh_instance: None,
            default_material: None,
            last_error: String::new(),
            step_usec: 0,
            texture_usec: 0,
            snapshot_usec: 0,
            base,
        }
    }

    fn enter_tree(&mut self) {
        self.base_mut().add_to_group("pipe_water");
    }

    fn on_notification(&mut self, what: Node3DNotification) {
        if what == Node3DNotification::PREDELETE {
            // Detach the surface's mesh and material while its render instance still exists,
            // so that no renderer update meets an instance whose mesh is already gone (Godot's
            // headless renderer reports that as an error when the node is freed).
            if let Some(mut mesh_instance) = self.mesh_instance.take().filter(|m| m.is_instance_valid()) {
                mesh_instance.set_material_override(Option::<&Gd<Material>>::None);
                mesh_instance.set_mesh(Option::<&Gd<Mesh>>::None);
            }
            // The RenderingDevice backend frees its RIDs while Godot's device still exists.
            self.drop_simulation();
        }
    }

    fn ready(&mut self) {
        self.ensure_sim();
        self.update_outputs();
    }

    fn physics_process(&mut self, delta: f64) {
        if !self.ensure_sim() {
            return;
        }
        let in_editor = Engine::singleton().is_editor_hint();
        if !self.paused && (!in_editor || self.simulate_in_editor) {
            let frame = validate::scaled_frame_delta(delta, self.time_scale as f32);
            self.advance(frame);
        }
        self.update_outputs();
    }
}

#[godot_api]
impl PipeWater {
    /// `backend`: the GPU when an adapter exists, else the CPU.
    #[constant]
    const BACKEND_AUTO: i64 = 0;
    /// `backend`: the GPU only (the CPU runs, with an error, when no adapter exists).
    #[constant]
    const BACKEND_GPU: i64 = 1;
    /// `backend`: the CPU only.
    #[constant]
    const BACKEND_CPU: i64 = 2;
    /// `backend`: Godot's own RenderingDevice (Forward+ and Mobile renderers); textures stay on
    /// the GPU.
    #[constant]
    const BACKEND_RENDERING_DEVICE: i64 = 3;
    /// `neighbour_mode`: four orthogonal pipes.
    #[constant]
    const NEIGHBOURS_FOUR: i64 = 0;
    /// `neighbour_mode`: eight pipes (orthogonal and diagonal).
    #[constant]
    const NEIGHBOURS_EIGHT: i64 = 1;
    /// `cross_section`: constant pipe cross-section (`pipe_depth`).
    #[constant]
    const CROSS_SECTION_CLASSIC: i64 = 0;
    /// `cross_section`: depth-dependent cross-section (shallow-water waves).
    #[constant]
    const CROSS_SECTION_DEPTH_DEPENDENT: i64 = 1;
    /// `boundary_*`: a wall.
    #[constant]
    const BOUNDARY_WALL: i64 = 0;
    /// `boundary_*`: free outfall.
    #[constant]
    const BOUNDARY_OPEN: i64 = 1;
    /// `boundary_*`: inflow at the edge's `inflow_rate_*`.
    #[constant]
    const BOUNDARY_INFLOW: i64 = 2;
    /// Largest `grid_size` side, cells.
    #[constant]
    const MAX_GRID_SIDE: i64 = validate::MAX_NODE_GRID_SIDE;

    /// Emitted after the simulation is (re)built: at start-up and after the grid, cell size,
    /// initial water level or backend changed. `active_backend` is `BACKEND_GPU` or `BACKEND_CPU`.
    #[signal]
    fn simulation_rebuilt(active_backend: i64);

    /// Emitted after `reset()` restored the initial water.
    #[signal]
    fn simulation_reset();

    // ---- property setters -------------------------------------------------------------------

    /// Sets `grid_size` (each side `2 ..= 4096`); rebuilds the simulation.
    #[func]
    fn set_grid_size(&mut self, value: Vector2i) {
        if self.accept(validate::grid_size(value.x as i64, value.y as i64)).is_some() {
            self.grid_size = value;
            self.needs_rebuild = true;
        }
    }

    /// Sets `cell_size` (m, `0.001 ..= 10000`); rebuilds the simulation.
    #[func]
    fn set_cell_size(&mut self, value: f64) {
        if self.accept(validate::cell_size(value)).is_some() {
            self.cell_size = value;
            self.needs_rebuild = true;
        }
    }

    /// Sets `heightmap`; rejected when the texture has no readable image.
    #[func]
    fn set_heightmap(&mut self, value: Option<Gd<Texture2D>>) {
        if let Some(texture) = &value {
            if let Err(why) = readable_image(texture) {
                self.reject(format!("heightmap: {why}"));
                return;
            }
        }
        self.heightmap = value;
        self.needs_terrain = true;
    }

    /// Sets `height_scale` (m per unit, `-100000 ..= 100000`).
    #[func]
    fn set_height_scale(&mut self, value: f64) {
        let (lo, hi) = validate::HEIGHT_SCALE_RANGE;
        if self.accept(validate::float_in("height_scale", value, lo, hi, " m")).is_some() {
            self.height_scale = value;
            self.needs_terrain = true;
        }
    }

    /// Sets `height_offset` (m, `-1000000 ..= 1000000`).
    #[func]
    fn set_height_offset(&mut self, value: f64) {
        if self.accept(validate::local_height("height_offset", value)).is_some() {
            self.height_offset = value;
            self.needs_terrain = true;
        }
    }

    /// Sets `terrain_heights`: exactly `grid_size.x × grid_size.y` finite heights, or empty.
    #[func]
    fn set_terrain_heights(&mut self, value: PackedFloat32Array) {
        if !value.is_empty() {
            let (w, h) = (self.grid_size.x as u32, self.grid_size.y as u32);
            if self.accept(validate::terrain_heights(value.as_slice(), w, h)).is_none() {
                return;
            }
        }
        self.terrain_heights = value;
        self.needs_terrain = true;
    }

    /// Sets `terrain_heights` from an image: its red channel (or luminance) × `height_scale` +
    /// `height_offset` (m), resampled (bilinear) to `grid_size`. Works where textures keep no
    /// image (headless servers). Returns false, keeping the terrain, when the image is empty,
    /// cannot be decompressed, or gives heights outside ±1e6 m.
    #[func]
    fn set_terrain_from_image(&mut self, image: Option<Gd<Image>>, height_scale: f64, height_offset: f64) -> bool {
        let Some(image) = image else {
            self.reject("set_terrain_from_image: image is null: pass an Image".into());
            return false;
        };
        let (lo, hi) = validate::HEIGHT_SCALE_RANGE;
        let Some(scale) = self.accept(validate::float_in("set_terrain_from_image: height_scale", height_scale, lo, hi, " m")) else {
            return false;
        };
        let Some(offset) = self.accept(validate::local_height("set_terrain_from_image: height_offset", height_offset)) else {
            return false;
        };
        let Ok((w, h)) = validate::grid_size(self.grid_size.x as i64, self.grid_size.y as i64) else { return false };
        let Ok(grid) = Grid::new(w, h, self.cell_size as f32) else { return false };
        match prepared_image(&image).and_then(|copy| image_terrain(copy, grid, scale, offset)) {
            Ok(terrain) => {
                self.terrain_heights = PackedFloat32Array::from(terrain.as_slice());
                self.needs_terrain = true;
                true
            }
            Err(why) => {
                self.reject(format!("set_terrain_from_image: {why}"));
                false
            }
        }
    }

    /// The current terrain heights (local m, row-major), edits included: the terrain of the
    /// snapshot the textures show (updated each physics frame, and by `step()`, edits and
    /// `rebuild()`).
    #[func]
    fn get_terrain_heights(&self) -> PackedFloat32Array {
        match &self.shown {
            Some(s) => {
                let heights: Vec<f32> = s.height.iter().map(|t| t[2]).collect();
                PackedFloat32Array::from(heights.as_slice())
            }
            None => self.terrain_heights.clone(),
        }
    }

    /// Sets `initial_water_level` (local m); rebuilds the simulation.
    #[func]
    fn set_initial_water_level(&mut self, value: f64) {
        if self.accept(validate::local_height("initial_water_level", value)).is_some() {
            self.initial_water_level = value;
            self.needs_rebuild = true;
        }
    }

    /// Sets `gravity` (m/s², `0 ..= 100`).
    #[func]
    fn set_gravity(&mut self, value: f64) {
        let (lo, hi) = validate::GRAVITY_RANGE;
        if self.accept(validate::float_in("gravity", value, lo, hi, " m/s²")).is_some() {
            self.gravity = value;
            self.needs_params = true;
        }
    }

    /// Sets `damping` (`0 ..= 1` per second).
    #[func]
    fn set_damping(&mut self, value: f64) {
        let (lo, hi) = validate::DAMPING_RANGE;
        if self.accept(validate::float_in("damping", value, lo, hi, " per second")).is_some() {
            self.damping = value;
            self.needs_params = true;
        }
    }

    /// Sets `neighbour_mode`.
    #[func]
    fn set_neighbour_mode(&mut self, value: WaterNeighbours) {
        self.neighbour_mode = value;
        self.needs_params = true;
    }

    /// Sets `cross_section`.
    #[func]
    fn set_cross_section(&mut self, value: WaterCrossSection) {
        self.cross_section = value;
        self.needs_params = true;
    }

    /// Sets `pipe_depth` (m, `0.001 ..= 1000`).
    #[func]
    fn set_pipe_depth(&mut self, value: f64) {
        let (lo, hi) = validate::PIPE_DEPTH_RANGE;
        if self.accept(validate::float_in("pipe_depth", value, lo, hi, " m")).is_some() {
            self.pipe_depth = value;
            self.needs_params = true;
        }
    }

    /// Sets `time_scale` (`0 ..= 100`).
    #[func]
    fn set_time_scale(&mut self, value: f64) {
        if self.accept(validate::time_scale(value)).is_some() {
            self.time_scale = value;
        }
    }

    /// Sets `max_substeps` (`1 ..= 100000`).
    #[func]
    fn set_max_substeps(&mut self, value: i64) {
        let (lo, hi) = validate::MAX_SUBSTEPS_RANGE;
        if self.accept(validate::int_in("max_substeps", value, lo, hi)).is_some() {
            self.max_substeps = value;
            self.needs_params = true;
        }
    }

    /// Sets `max_step` (s, `0.0001 ..= 1`).
    #[func]
    fn set_max_step(&mut self, value: f64) {
        let (lo, hi) = validate::MAX_STEP_RANGE;
        if self.accept(validate::float_in("max_step", value, lo, hi, " s")).is_some() {
            self.max_step = value;
            self.needs_params = true;
        }
    }

    /// Sets `courant` (`0.01 ..= 1`).
    #[func]
    fn set_courant(&mut self, value: f64) {
        let (lo, hi) = validate::COURANT_RANGE;
        if self.accept(validate::float_in("courant", value, lo, hi, "")).is_some() {
            self.courant = value;
            self.needs_params = true;
        }
    }

    /// Sets `boundary_north`.
    #[func]
    fn set_boundary_north(&mut self, value: WaterBoundary) {
        self.boundary_north = value;
        self.needs_params = true;
    }

    /// Sets `boundary_east`.
    #[func]
    fn set_boundary_east(&mut self, value: WaterBoundary) {
        self.boundary_east = value;
        self.needs_params = true;
    }

    /// Sets `boundary_south`.
    #[func]
    fn set_boundary_south(&mut self, value: WaterBoundary) {
        self.boundary_south = value;
        self.needs_params = true;
    }

    /// Sets `boundary_west`.
    #[func]
    fn set_boundary_west(&mut self, value: WaterBoundary) {
        self.boundary_west = value;
        self.needs_params = true;
    }

    /// Sets `inflow_rate_north` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_north(&mut self, value: f64) {
        if self.accept(validate::inflow_rate("inflow_rate_north", value)).is_some() {
            self.inflow_rate_north = value;
            self.needs_params = true;
        }
    }

    /// Sets `inflow_rate_east` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_east(&mut self, value: f64) {
        if self.accept(validate::inflow_rate("inflow_rate_east", value)).is_some() {
            self.inflow_rate_east = value;
            self.needs_params = true;
        }
    }

    /// Sets `inflow_rate_south` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_south(&mut self, value: f64) {
        if self.accept(validate::inflow_rate("inflow_rate_south", value)).is_some() {
            self.inflow_rate_south = value;
            self.needs_params = true;
        }
    }

    /// Sets `inflow_rate_west` (m³/s, `0 ..= 1000000`).
    #[func]
    fn set_inflow_rate_west(&mut self, value: f64) {
        if self.accept(validate::inflow_rate("inflow_rate_west", value)).is_some() {
            self.inflow_rate_west = value;
            self.needs_params = true;
        }
    }

    /// Sets `half_float_textures`: the CPU-filled textures change format at the next update.
    #[func]
    fn set_half_float_textures(&mut self, value: bool) {
        self.half_float_textures = value;
        if let Some(grid) = self.sim.as_ref().map(|s| s.grid()) {
            self.resize_textures(grid);
            self.shown = None;
        }
    }

    /// Sets `backend`; rebuilds the simulation.
    #[func]
    fn set_backend(&mut self, value: WaterBackend) {
        self.backend = value;
        if self.sim.is_some() {
            self.needs_backend_switch = true;
        } else {
            self.needs_rebuild = true;
        }
    }

    /// Sets `show_mesh`: creates or frees the helper mesh.
    #[func]
    fn set_show_mesh(&mut self, value: bool) {
        self.show_mesh = value;
        if self.sim.is_some() {
            self.sync_mesh();
        }
    }

    /// Sets `water_material` (any material; shader parameters are set on a `ShaderMaterial`).
    #[func]
    fn set_water_material(&mut self, value: Option<Gd<Material>>) {
        self.water_material = value;
        if self.sim.is_some() {
            self.sync_mesh();
        }
    }

    // ---- queries ----------------------------------------------------------------------------

    /// Water surface height (global Y, m) above or below `global_position` (its Y is ignored):
    /// bilinear over the wet cells around the point, the terrain where all are dry. `-INF`
    /// outside the grid.
    #[func]
    fn get_height(&mut self, global_position: Vector3) -> f64 {
        let Some((t, xz)) = self.local_point("get_height", global_position) else {
            return OUTSIDE_HEIGHT as f64;
        };
        match self.sim.as_mut().and_then(|s| s.surface_height(xz[0], xz[1])) {
            Some(h) => local_height_to_global(&t, xz, h) as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Water depth (m, ≥ 0) at `global_position`, bilinear. `0.0` outside the grid.
    #[func]
    fn get_depth(&mut self, global_position: Vector3) -> f64 {
        let Some((_, xz)) = self.local_point("get_depth", global_position) else {
            return 0.0;
        };
        self.sim.as_mut().and_then(|s| s.depth(xz[0], xz[1])).map_or(0.0, |d| d.max(0.0) as f64)
    }

    /// Terrain height (global Y, m) at `global_position`, bilinear. `-INF` outside the grid.
    #[func]
    fn get_terrain_height(&mut self, global_position: Vector3) -> f64 {
        let Some((t, xz)) = self.local_point("get_terrain_height", global_position) else {
            return OUTSIDE_HEIGHT as f64;
        };
        match self.sim.as_mut().and_then(|s| s.terrain_height(xz[0], xz[1])) {
            Some(h) => local_height_to_global(&t, xz, h) as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Depth-averaged flow velocity at `global_position` as a global vector (m/s; horizontal in
    /// the node's frame, rotated with it). `Vector3.ZERO` outside the grid.
    #[func]
    fn get_flow_velocity(&mut self, global_position: Vector3) -> Vector3 {
        let Some((t, xz)) = self.local_point("get_flow_velocity", global_position) else {
            return Vector3::ZERO;
        };
        match self.sim.as_mut().and_then(|s| s.flow_velocity(xz[0], xz[1])) {
            Some(v) if v[0].is_finite() && v[1].is_finite() => local_velocity_to_global(&t, v),
            _ => Vector3::ZERO,
        }
    }

    /// Whether `global_position` (its Y ignored) lies over the grid.
    #[func]
    fn is_inside(&mut self, global_position: Vector3) -> bool {
        let Some((_, xz)) = self.local_point("is_inside", global_position) else {
            return false;
        };
        self.sim.as_ref().is_some_and(|s| s.grid().contains(xz[0], xz[1]))
    }

    /// Total water on the grid, m³ (from the newest snapshot).
    #[func]
    fn get_total_water(&mut self) -> f64 {
        if !self.ensure_sim() {
            return 0.0;
        }
        self.sim.as_mut().map_or(0.0, |s| s.total_water())
    }

    /// The mass ledger, m³: `initial`, `added`, `removed`, `boundary_in`, `boundary_out`,
    /// `expected` (= initial + added − removed + boundary_in − boundary_out) and `total`. Waits
    /// for the GPU when it runs; for debugging and tests, not every frame.
    #[func]
    fn get_water_ledger(&mut self) -> VarDictionary {
        let mut d = VarDictionary::new();
        if !self.ensure_sim() {
            return d;
        }
        let Some(sim) = self.sim.as_mut() else { return d };
        let qv = sim.quantum_volume();
        match sim.ledger() {
            Ok(ledger) => {
                let c = ledger.counters;
                d.set("initial", ledger.initial as f64 * qv);
                d.set("added", c.added as f64 * qv);
                d.set("removed", c.removed as f64 * qv);
                d.set("boundary_in", c.boundary_in as f64 * qv);
                d.set("boundary_out", c.boundary_out as f64 * qv);
                d.set("expected", (ledger.initial + c.net()) as f64 * qv);
                let total = sim.read_state().map(|s| s.total_quanta() as f64 * qv).unwrap_or(f64::NAN);
                d.set("total", total);
            }
            Err(e) => self.reject(format!("get_water_ledger: {e}")),
        }
        d
    }

    /// Cost of the last physics frame on the main thread, µs: `step_usec` (advancing: on the GPU
    /// encoding and submitting, on the CPU the whole step) and `texture_usec` (bringing the
    /// textures up to date), of which `snapshot_usec` is taking the newest snapshot (on the GPU
    /// decoding a finished readback, on the CPU building it from the state) and the rest copying
    /// it into both textures. Also `substeps`, `step` (s each), `simulated` and `dropped` (s).
    #[func]
    fn get_frame_stats(&mut self) -> VarDictionary {
        let mut d = VarDictionary::new();
        d.set("step_usec", self.step_usec);
        d.set("texture_usec", self.texture_usec);
        d.set("snapshot_usec", self.snapshot_usec);
        if let Some(sim) = self.sim.as_ref() {
            let r = sim.last_report();
            d.set("substeps", r.substeps as i64);
            d.set("step", r.step as f64);
            d.set("simulated", r.simulated as f64);
            d.set("dropped", r.dropped as f64);
            d.set("readback_bytes", sim.last_readback_bytes() as i64);
        }
        d
    }

    /// The image last copied into `height_texture` (same size, format and layout), for CPU-side
    /// use such as minimaps. Owned by the node and overwritten each frame: duplicate it to keep it.
    /// On the RenderingDevice backend a new image read from the GPU, which waits for it: not for
    /// every frame.
    #[func]
    fn get_height_image(&self) -> Option<Gd<Image>> {
        if let Some((height, _)) = self.rd_rids {
            return rendering_device::textures::read_image(height);
        }
        self.height_image.clone()
    }

    /// The image last copied into `flux_texture`. Owned by the node; duplicate it to keep it.
    #[func]
    fn get_flux_image(&self) -> Option<Gd<Image>> {
        if let Some((_, flux)) = self.rd_rids {
            return rendering_device::textures::read_image(flux);
        }
        self.flux_image.clone()
    }

    /// Description of the running backend (GPU adapter and driver, or CPU threads).
    #[func]
    fn get_backend_description(&mut self) -> GString {
        if !self.ensure_sim() {
            return GString::new();
        }
        self.sim.as_ref().map(|s| GString::from(s.backend_description().as_str())).unwrap_or_default()
    }

    /// Message of the most recent rejected argument or failed operation; empty when none.
    #[func]
    fn get_last_error(&self) -> GString {
        GString::from(self.last_error.as_str())
    }

    /// Clears `get_last_error()`.
    #[func]
    fn clear_last_error(&mut self) {
        self.last_error.clear();
    }

    // ---- edits ------------------------------------------------------------------------------

    /// Adds `volume` m³ (`0 ..= 1e9`) of water around `global_position`, spread with a smooth
    /// falloff over `radius` m (`0 ..= 2 × grid extent`; 0 = the cell under the point). Returns the
    /// volume that arrives (the request to within one depth quantum, ~1 µm × cell area); 0 when
    /// the point is off the grid or an argument is rejected. On the GPU the change shows in
    /// queries after the next readback.
    #[func]
    fn add_water(&mut self, global_position: Vector3, volume: f64, radius: f64) -> f64 {
        let Some((xz, volume, radius)) = self.edit_args("add_water", global_position, volume, radius) else {
            return 0.0;
        };
        let result = self.sim.as_mut().map(|s| s.add_water(xz[0], xz[1], volume, radius));
        self.core_result("add_water", result).unwrap_or(0.0)
    }

    /// Removes up to `volume` m³ of water around `global_position` within `radius` m (ranges as
    /// `add_water`), never more than is there. Returns the volume removed.
    #[func]
    fn remove_water(&mut self, global_position: Vector3, volume: f64, radius: f64) -> f64 {
        let Some((xz, volume, radius)) = self.edit_args("remove_water", global_position, volume, radius) else {
            return 0.0;
        };
        let result = self.sim.as_mut().map(|s| s.remove_water(xz[0], xz[1], volume, radius));
        self.core_result("remove_water", result).unwrap_or(0.0)
    }

    /// Fills the basin under `global_position` with still water whose surface stands at the
    /// position's height, as if water were poured there until it reached it: every cell
    /// connected to that point through ground lower than the surface gets water up to it
    /// (diagonal steps included in eight-neighbour mode). Water is only added. Returns the volume
    /// added, m³; 0 when the ground there is at or above the surface, the point is off the grid,
    /// or an argument is rejected. The quick way to make a lake in a valley or a pond in a pit,
    /// where `initial_water_level` would flood every basin below that level.
    ///
    /// It reads the whole current state, waiting for the GPU: meant for setting up a level or
    /// answering a player's action, not for every frame.
    #[func]
    fn fill_basin(&mut self, global_position: Vector3) -> f64 {
        let Some((_, local)) = self.local_position("fill_basin", global_position) else {
            return 0.0;
        };
        let xz = [local.x, local.z];
        let limit = pipewater_core::state::MAX_TERRAIN_ABS as f64;
        let level = self.accept(validate::float_in("fill_basin: global_position (height in the node's space)", local.y as f64, -limit, limit, " m"));
        let Some(level) = level else {
            return 0.0;
        };
        let Some(sim) = self.sim.as_mut() else {
            return 0.0;
        };
        if !sim.grid().contains(xz[0], xz[1]) {
            return 0.0;
        }
        let result = sim.fill_basin(xz[0], xz[1], level);
        self.core_result("fill_basin", Some(result)).unwrap_or(0.0)
    }

    /// Adds a source of `rate` m³/s (`-1e6 ..= 1e6`; negative drains) spread over `radius` m
    /// around `global_position`. Returns its id (≥ 1), or -1 when rejected (off the grid, bad
    /// argument). Sources survive `reset()` but not a rebuild.
    #[func]
    fn add_source(&mut self, global_position: Vector3, rate: f64, radius: f64) -> i64 {
        let Some(rate) = self.accept(validate::source_rate("add_source", rate)) else {
            return -1;
        };
        let Some((xz, _, radius)) = self.edit_args("add_source", global_position, 0.0, radius) else {
            return -1;
        };
        let result = self.sim.as_mut().map(|s| s.add_source(xz[0], xz[1], rate, radius));
        self.core_result("add_source", result).map_or(-1, |id| id.0 as i64)
    }

    /// Adds a drain removing up to `rate` m³/s (`0 ..= 1e6`) around `global_position` within
    /// `radius` m; never removes more than is there. Returns its id, or -1 when rejected. Same as
    /// `add_source` with `-rate`.
    #[func]
    fn add_drain(&mut self, global_position: Vector3, rate: f64, radius: f64) -> i64 {
        if self.accept(validate::float_in("add_drain: rate", rate, 0.0, 1.0e6, " m³/s")).is_none() {
            return -1;
        }
        self.add_source(global_position, -rate, radius)
    }

    /// Changes the rate of source or drain `id` (m³/s, `-1e6 ..= 1e6`). False when no such id.
    #[func]
    fn set_source_rate(&mut self, id: i64, rate: f64) -> bool {
        let Some(rate) = self.accept(validate::source_rate("set_source_rate", rate)) else {
            return false;
        };
        let Some(id) = source_id(id) else { return false };
        let result = self.sim.as_mut().map(|s| s.set_source_rate(id, rate));
        self.core_result("set_source_rate", result).unwrap_or(false)
    }

    /// Removes source or drain `id`. False when no such id.
    #[func]
    fn remove_source(&mut self, id: i64) -> bool {
        let Some(id) = source_id(id) else { return false };
        self.sim.as_mut().is_some_and(|s| s.remove_source(id))
    }

    /// Ids of the sources and drains in place.
    #[func]
    fn get_source_ids(&self) -> PackedInt64Array {
        let ids: Vec<i64> = self.sim.as_ref().map(|s| s.source_ids().iter().map(|id| id.0 as i64).collect()).unwrap_or_default();
        PackedInt64Array::from(ids.as_slice())
    }

    /// Raises (positive) or digs (negative) the terrain by up to `delta_height` m
    /// (`-10000 ..= 10000`) around `global_position`, falling smoothly to zero at `radius` m.
    /// Water depth is kept, so the water responds at the next step. False when rejected.
    #[func]
    fn modify_terrain(&mut self, global_position: Vector3, delta_height: f64, radius: f64) -> bool {
        let Some(delta) = self.accept(validate::delta_height(delta_height)) else {
            return false;
        };
        let Some((xz, _, radius)) = self.edit_args("modify_terrain", global_position, 0.0, radius) else {
            return false;
        };
        let result = self.sim.as_mut().map(|s| s.modify_terrain(xz[0], xz[1], delta, radius));
        let ok = self.core_result("modify_terrain", result).is_some();
        self.update_outputs();
        ok
    }

    /// Restores the initial water (filled to `initial_water_level`) and terrain, zeroes the
    /// ledger and clock. Sources are kept. Emits `simulation_reset`.
    #[func]
    fn reset(&mut self) {
        if !self.ensure_sim() {
            return;
        }
        let result = self.sim.as_mut().map(|s| s.reset());
        if self.core_result("reset", result).is_some() {
            self.shown = None;
            self.update_outputs();
            self.base_mut().emit_signal("simulation_reset", &[]);
        }
    }

    /// Advances the simulation by `delta` s (`0 ..= 10`, not scaled by `time_scale`, also while
    /// `paused`) and updates the textures. Returns the number of substeps taken (0 when rejected).
    #[func]
    fn step(&mut self, delta: f64) -> i64 {
        let Some(delta) = self.accept(validate::step_delta(delta)) else {
            return 0;
        };
        if !self.ensure_sim() {
            return 0;
        }
        let substeps = self.advance(delta);
        self.update_outputs();
        substeps as i64
    }

    /// Rebuilds the simulation now from the current properties (otherwise done at the next
    /// physics frame or query). Returns false when it could not be built.
    #[func]
    fn rebuild(&mut self) -> bool {
        self.needs_rebuild = true;
        let ok = self.ensure_sim();
        self.update_outputs();
        ok
    }
}

/// Plumbing, not visible to Godot.
impl PipeWater {
    /// Forwards a rejected argument to Godot and remembers it.
    fn reject(&mut self, message: String) {
        godot_error!("PipeWater: {message}");
        self.last_error = message;
    }

    fn accept<T>(&mut self, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(message) => {
                self.reject(message);
                None
            }
        }
    }

    /// Unwraps a core call made on the simulation (None when there was none).
    fn core_result<T>(&mut self, method: &str, result: Option<Result<T, CoreError>>) -> Option<T> {
        match result? {
            Ok(v) => Some(v),
            Err(e) => {
                self.reject(format!("{method}: {e}"));
                None
            }
        }
    }

    fn global_transform(&self) -> Transform3D {
        if self.base().is_inside_tree() {
            self.base().get_global_transform()
        } else {
            self.base().get_transform()
        }
    }

    /// The node's transform and the local `(x, z)` of a global point, with the simulation built.
    fn local_point(&mut self, method: &str, global_position: Vector3) -> Option<(Transform3D, [f32; 2])> {
        self.local_position(method, global_position).map(|(t, local)| (t, [local.x, local.z]))
    }

    /// The node's transform and the local position of a global point, with the simulation built.
    fn local_position(&mut self, method: &str, global_position: Vector3) -> Option<(Transform3D, Vector3)> {
        let p = global_position;
        self.accept(validate::position(method, p.x, p.y, p.z))?;
        if !self.ensure_sim() {
            return None;
        }
        let t = self.global_transform();
        match global_to_local_point(&t, p) {
            Some(local) => Some((t, local)),
            None => {
                self.reject(format!("{method}: the node's global transform cannot be inverted (zero scale?)"));
                None
            }
        }
    }

    /// Validated arguments of an edit: local point, volume, radius.
    fn edit_args(&mut self, method: &str, global_position: Vector3, volume: f64, radius: f64) -> Option<([f32; 2], f32, f32)> {
        let volume = self.accept(validate::volume(method, volume))?;
        let (_, xz) = self.local_point(method, global_position)?;
        let extent = self.sim.as_ref()?.grid().extent();
        let radius = self.accept(validate::radius(method, radius, extent))?;
        Some((xz, volume, radius))
    }

    fn params(&self) -> Params {
        core_params(&ParamInputs {
            gravity: self.gravity,
            damping: self.damping,
            neighbours: self.neighbour_mode,
            cross_section: self.cross_section,
            pipe_depth: self.pipe_depth,
            boundaries: [
                (self.boundary_north, self.inflow_rate_north),
                (self.boundary_east, self.inflow_rate_east),
                (self.boundary_south, self.inflow_rate_south),
                (self.boundary_west, self.inflow_rate_west),
            ],
            courant: self.courant,
            max_step: self.max_step,
            max_substeps: self.max_substeps,
        })
    }

    /// Terrain for `grid` from `terrain_heights`, else the heightmap, else flat ground at 0.
    fn compute_terrain(&mut self, grid: Grid) -> Vec<f32> {
        let flat = vec![0.0; grid.cell_count()];
        if !self.terrain_heights.is_empty() {
            match validate::terrain_heights(self.terrain_heights.as_slice(), grid.width, grid.height) {
                Ok(()) => return self.terrain_heights.as_slice().to_vec(),
                Err(why) => {
                    self.reject(format!("{why}; terrain_heights cleared (the grid changed size)"));
                    self.terrain_heights = PackedFloat32Array::new();
                }
            }
        }
        let Some(texture) = self.heightmap.clone() else { return flat };
        match heightmap_terrain(&texture, grid, self.height_scale as f32, self.height_offset as f32) {
            Ok(terrain) => terrain,
            Err(why) => {
                self.reject(format!("heightmap: {why}; using flat ground"));
                flat
            }
        }
    }

    /// Builds or updates the simulation from the properties. False when none can run.
    fn ensure_sim(&mut self) -> bool {
        let changed = self.needs_terrain || self.needs_params;
        if self.needs_rebuild || (self.sim.is_none() && (!self.build_failed || changed)) {
            self.needs_rebuild = false;
            self.needs_terrain = false;
            self.needs_params = false;
            self.needs_backend_switch = false;
            self.build();
            self.build_failed = self.sim.is_none();
            return self.sim.is_some();
        }
        if self.sim.is_none() {
            return false;
        }
        if self.needs_backend_switch {
            self.needs_backend_switch = false;
            self.switch_backend();
        }
        if self.needs_terrain {
            self.needs_terrain = false;
            let grid = self.sim.as_ref().map(|s| s.grid());
            if let Some(grid) = grid {
                let terrain = self.compute_terrain(grid);
                let result = self.sim.as_mut().map(|s| s.set_terrain(&terrain));
                self.core_result("terrain", result);
                self.shown = None;
            }
        }
        if self.needs_params {
            self.needs_params = false;
            let params = self.params();
            let result = self.sim.as_mut().map(|s| s.set_params(params));
            self.core_result("parameters", result);
        }
        true
    }

    fn build(&mut self) {
        let (w, h) = match validate::grid_size(self.grid_size.x as i64, self.grid_size.y as i64) {
            Ok(size) => size,
            Err(why) => return self.reject(why),
        };
        let grid = match Grid::new(w, h, self.cell_size as f32) {
            Ok(g) => g,
            Err(e) => return self.reject(format!("grid: {e}")),
        };
        let terrain = self.compute_terrain(grid);
        let mut state = match State::with_terrain(grid, terrain) {
            Ok(s) => s,
            Err(e) => return self.reject(format!("terrain: {e}")),
        };
        state.fill_to_level(self.initial_water_level as f32);
        let params = self.params();
        self.drop_simulation();
        let (sim, rd_textures) = match self.start_backend(state, params) {
            Ok(started) => started,
            Err(why) => return self.reject(why),
        };
        self.sim = Some(sim);
        self.shown = None;
        self.resize_textures(grid);
        self.show_backend(rd_textures);
        let active = self.active_backend as i64;
        self.base_mut().emit_signal("simulation_rebuilt", &[active.to_variant()]);
    }

    /// A simulation of `state` on the backend `backend` asks for, falling back along
    /// RenderingDevice → wgpu → CPU with a warning (an error when the choice was explicit); with
    /// the RD textures when the RenderingDevice backend runs.
    fn start_backend(&mut self, state: State, params: Params) -> Result<(Simulation, Option<(Rid, Rid)>), String> {
        let wants_rd = match self.backend {
            WaterBackend::RenderingDevice => true,
            WaterBackend::Auto => rendering_device::unavailable_reason().is_none(),
            WaterBackend::Gpu | WaterBackend::Cpu => false,
        };
        if wants_rd {
            let mut textures = None;
            let started = Simulation::with_backend(state.clone(), params, |state| {
                let backend = RdBackend::new(state)?;
                textures = Some(backend.textures());
                Ok(Box::new(backend))
            });
            match started {
                Ok(sim) => return Ok((sim, textures)),
                Err(e) if self.backend == WaterBackend::RenderingDevice => {
                    self.reject(format!("backend = BACKEND_RENDERING_DEVICE cannot run ({e}); using BACKEND_AUTO's choice"))
                }
                Err(e) => godot_warn!("PipeWater: the RenderingDevice backend cannot run ({e}); trying wgpu"),
            }
        }
        let preference = match self.backend {
            WaterBackend::Auto | WaterBackend::RenderingDevice => BackendPreference::Auto,
            WaterBackend::Gpu => BackendPreference::Gpu,
            WaterBackend::Cpu => BackendPreference::Cpu,
        };
        match Simulation::new(state.clone(), params, preference) {
            Ok(sim) => {
                if let Some(why) = sim.gpu_fallback_reason() {
                    godot_warn!("PipeWater: no GPU backend, running on the CPU ({why})");
                }
                Ok((sim, None))
            }
            Err(CoreError::GpuUnavailable(why)) => {
                self.reject(format!("backend = BACKEND_GPU but no GPU is usable ({why}); running on the CPU"));
                Simulation::new(state, params, BackendPreference::Cpu).map(|sim| (sim, None)).map_err(|e| format!("simulation: {e}"))
            }
            Err(e) => Err(format!("simulation: {e}")),
        }
    }

    /// Moves the running water to the backend `backend` now asks for, keeping fields, sources
    /// and ledger; on failure the current backend keeps running.
    fn switch_backend(&mut self) {
        let Some(mut sim) = self.sim.take() else { return };
        let wants_rd = match self.backend {
            WaterBackend::RenderingDevice => true,
            WaterBackend::Auto => rendering_device::unavailable_reason().is_none(),
            WaterBackend::Gpu | WaterBackend::Cpu => false,
        };
        let running_rd = sim.backend_kind() == BackendKind::EngineGpu;
        // The RD textures must let go of the old backend's RIDs before it frees them.
        if running_rd {
            self.rd_textures.detach();
        }
        let mut textures = None;
        let result = if wants_rd {
            sim.switch_backend(|state| {
                let backend = RdBackend::new(state)?;
                textures = Some(backend.textures());
                Ok(Box::new(backend))
            })
        } else {
            sim.switch_to(match self.backend {
                WaterBackend::Gpu => BackendPreference::Gpu,
                WaterBackend::Cpu => BackendPreference::Cpu,
                WaterBackend::Auto | WaterBackend::RenderingDevice => BackendPreference::Auto,
            })
        };
        self.sim = Some(sim);
        self.shown = None;
        if let Err(e) = result {
            self.reject(format!("backend: could not move the water to the requested backend ({e}); the current one keeps running"));
            // Shows the running backend's textures again (the RD ones were detached above).
            return self.show_backend(None);
        }
        self.show_backend(textures);
        let active = self.active_backend as i64;
        self.base_mut().emit_signal("simulation_rebuilt", &[active.to_variant()]);
    }

    /// Points `active_backend`, the exposed textures and the surface material at the running
    /// backend; `textures` are the RD textures of a RenderingDevice backend that just started
    /// (`None` keeps those of the one already shown).
    fn show_backend(&mut self, textures: Option<(Rid, Rid)>) {
        let kind = self.sim.as_ref().map(|s| s.backend_kind());
        self.active_backend = match kind {
            Some(BackendKind::EngineGpu) => WaterBackend::RenderingDevice,
            Some(BackendKind::Gpu) => WaterBackend::Gpu,
            Some(BackendKind::Cpu) => WaterBackend::Cpu,
            None => WaterBackend::Auto,
        };
        if kind == Some(BackendKind::EngineGpu) {
            if textures.is_some() {
                self.rd_rids = textures;
            }
            if let Some(rids) = self.rd_rids {
                self.rd_textures.attach(rids);
            }
            self.height_texture = Some(self.rd_textures.height.clone().upcast());
            self.flux_texture = Some(self.rd_textures.flux.clone().upcast());
        } else {
            self.rd_rids = None;
            self.height_texture = Some(self.image_textures[0].clone().upcast());
            self.flux_texture = Some(self.image_textures[1].clone().upcast());
        }
        self.sync_mesh();
    }

    /// Drops the simulation, letting the RD textures go first when it ran on the RenderingDevice.
    fn drop_simulation(&mut self) {
        if self.rd_rids.take().is_some() {
            self.rd_textures.detach();
        }
        self.sim = None;
        self.shown = None;
    }

    /// Runs one frame of `delta` simulated seconds; returns the substeps taken.
    fn advance(&mut self, delta: f32) -> u32 {
        let started = Instant::now();
        let result = self.sim.as_mut().map(|s| s.advance(delta));
        let report = self.core_result("step", result);
        self.step_usec = started.elapsed().as_micros() as i64;
        report.map_or(0, |r| r.substeps)
    }

    /// Creates the textures, or gives them images of the new grid size.
    fn resize_textures(&mut self, grid: Grid) {
        let (w, h) = (grid.width as i32, grid.height as i32);
        let format = self.image_format();
        for which in [0, 1] {
            let Some(image) = Image::create_empty(w, h, false, format) else {
                self.reject(format!("could not create a {w}×{h} {format:?} image for the textures"));
                continue;
            };
            self.image_textures[which].set_image(&image);
            if which == 0 {
                self.height_image = Some(image);
            } else {
                self.flux_image = Some(image);
            }
        }
    }

    /// Format of the textures filled on the CPU.
    fn image_format(&self) -> Format {
        if self.half_float_textures {
            Format::RGBAH
        } else {
            Format::RGBAF
        }
    }

    /// Copies the newest snapshot into the textures when it changed.
    fn update_outputs(&mut self) {
        // The RenderingDevice backend writes its textures on the GPU: nothing to copy.
        if !self.update_textures || self.active_backend == WaterBackend::RenderingDevice {
            self.texture_usec = 0;
            self.snapshot_usec = 0;
            return;
        }
        let started = Instant::now();
        let Some(snapshot) = self.sim.as_mut().and_then(|s| s.snapshot()) else { return };
        self.snapshot_usec = started.elapsed().as_micros() as i64;
        if self.shown.as_ref().is_some_and(|shown| Arc::ptr_eq(shown, &snapshot)) {
            self.texture_usec = self.snapshot_usec;
            return;
        }
        let (w, h) = (snapshot.grid.width as i32, snapshot.grid.height as i32);
        // Each texture alternates between two byte arrays: the one its image shared last frame
        // is free again once the image holds the other, so writing it neither copies on write
        // nor allocates (fresh pages of a 64 MiB array cost more than filling them).
        let half = self.half_float_textures;
        let format = self.image_format();
        let [height_bytes, flux_bytes] = &mut self.upload_bytes;
        let parity = self.upload_parity;
        let [height_texture, flux_texture] = &mut self.image_textures;
        for (texels, image, texture, bytes) in [
            (&snapshot.height, &mut self.height_image, height_texture, &mut height_bytes[parity]),
            (&snapshot.flow, &mut self.flux_image, flux_texture, &mut flux_bytes[parity]),
        ] {
            let Some(image) = image.as_mut() else { continue };
            let len = texels.len() * if half { texels::BYTES_PER_HALF_TEXEL } else { texels::BYTES_PER_TEXEL };
            if bytes.len() != len {
                bytes.resize(len);
            }
            if half {
                texels::pack_half_texels(texels, bytes.as_mut_slice());
            } else {
                copy_in_parallel(bytes.as_mut_slice(), texel_bytes(texels));
            }
            let same_size = image.get_width() == w && image.get_height() == h && image.get_format() == format;
            image.set_data(w, h, false, format, &*bytes);
            if same_size {
                texture.update(&*image);
            } else {
                texture.set_image(&*image);
            }
        }
        self.upload_parity = 1 - parity;
        self.shown = Some(snapshot);
        self.texture_usec = started.elapsed().as_micros() as i64;
    }

    /// Creates, updates or frees the helper mesh.
    fn sync_mesh(&mut self) {
        if !self.show_mesh {
            if let Some(mut mesh) = self.mesh_instance.take() {
                mesh.queue_free();
            }
            return;
        }
        let Some(grid) = self.sim.as_ref().map(|s| s.grid()) else { return };
        if self.mesh_instance.as_ref().is_none_or(|m| !m.is_instance_valid()) {
            let mut mesh_instance = MeshInstance3D::new_alloc();
            mesh_instance.set_name("WaterSurface");
            self.base_mut().add_child_ex(&mesh_instance).internal(InternalMode::FRONT).done();
            self.mesh_instance = Some(mesh_instance);
        }
        let [ex, ez] = grid.extent();
        // Reshape the plane already shown rather than swapping in a new one: fewer renderer
        // resources churned on every rebuild, and Godot's headless renderer reports an error
        // when a replaced mesh's instance is freed.
        let existing = self.mesh_instance.as_ref().and_then(|m| m.get_mesh()).and_then(|m| m.try_cast::<PlaneMesh>().ok());
        let mut plane = existing.unwrap_or_else(PlaneMesh::new_gd);
        plane.set_size(Vector2::new(ex, ez));
        plane.set_subdivide_width((grid.width - 1).min(MAX_MESH_SUBDIVISIONS) as i32);
        plane.set_subdivide_depth((grid.height - 1).min(MAX_MESH_SUBDIVISIONS) as i32);
        let material = self.material();
        if let Some(mut shader_material) = material.clone().and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
            shader_material.set_shader_parameter("height_texture", &self.height_texture.to_variant());
            shader_material.set_shader_parameter("flux_texture", &self.flux_texture.to_variant());
            shader_material.set_shader_parameter("grid_size", &Vector2::new(grid.width as f32, grid.height as f32).to_variant());
            shader_material.set_shader_parameter("cell_size", &grid.cell_size.to_variant());
        }
        if let Some(mesh_instance) = self.mesh_instance.as_mut() {
            mesh_instance.set_mesh(&plane);
            mesh_instance.set_material_override(material.as_ref());
            // The surface moves up and down in the shader; keep it from being culled.
            mesh_instance.set_custom_aabb(Aabb::new(
                Vector3::new(-ex / 2.0, -pipewater_core::state::MAX_TERRAIN_ABS, -ez / 2.0),
                Vector3::new(ex, 2.0 * pipewater_core::state::MAX_TERRAIN_ABS, ez),
            ));
        }
    }

    /// `water_material`, or the default shader material (created once).
    fn material(&mut self) -> Option<Gd<Material>> {
        if let Some(m) = &self.water_material {
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

/// The node's simulation properties, as Godot holds them.
struct ParamInputs {
    gravity: f64,
    damping: f64,
    neighbours: WaterNeighbours,
    cross_section: WaterCrossSection,
    pipe_depth: f64,
    /// Mode and inflow rate of the north (−Z), east (+X), south (+Z) and west (−X) edges.
    boundaries: [(WaterBoundary, f64); 4],
    courant: f64,
    max_step: f64,
    max_substeps: i64,
}

/// The core's parameters for the node's properties (edges in [`pipewater_core::Edge`] order).
fn core_params(p: &ParamInputs) -> Params {
    let boundary = |(mode, rate): (WaterBoundary, f64)| match mode {
        WaterBoundary::Wall => Boundary::Wall,
        WaterBoundary::Open => Boundary::Open,
        WaterBoundary::Inflow => Boundary::Inflow { rate: rate as f32 },
    };
    Params {
        gravity: p.gravity as f32,
        damping: p.damping as f32,
        neighbours: match p.neighbours {
            WaterNeighbours::Four => NeighbourMode::Four,
            WaterNeighbours::Eight => NeighbourMode::Eight,
        },
        cross_section: match p.cross_section {
            WaterCrossSection::Classic => CrossSection::Classic,
            WaterCrossSection::DepthDependent => CrossSection::DepthDependent,
        },
        pipe_depth: p.pipe_depth as f32,
        boundaries: p.boundaries.map(boundary),
        cfl: p.courant as f32,
        max_step: p.max_step as f32,
        max_substeps: p.max_substeps.clamp(1, 100_000) as u32,
    }
}

fn source_id(id: i64) -> Option<SourceId> {
    u32::try_from(id).ok().map(SourceId)
}

/// The texture's image, checked to be non-empty and uncompressed (or decompressible).
fn readable_image(texture: &Gd<Texture2D>) -> Result<Gd<Image>, String> {
    let image = texture.get_image().ok_or("the texture has no image data (is it a GPU-only texture?)")?;
    prepared_image(&image)
}

/// A copy of `image` that can be converted: non-empty and uncompressed (or decompressible).
fn prepared_image(image: &Gd<Image>) -> Result<Gd<Image>, String> {
    if image.is_empty() || image.get_width() < 1 || image.get_height() < 1 {
        return Err("the image is empty: valid heightmaps have at least 1×1 pixels".into());
    }
    let mut copy = image.duplicate_resource();
    if copy.is_compressed() {
        copy.decompress();
        if copy.is_compressed() {
            return Err(format!(
                "the image is compressed ({:?}) and cannot be decompressed: use an uncompressed (e.g. L8, R8, RF, RGBA8) image",
                copy.get_format()
            ));
        }
    }
    Ok(copy)
}

/// Terrain heights for `grid` from a heightmap texture (red channel, resampled to the grid).
fn heightmap_terrain(texture: &Gd<Texture2D>, grid: Grid, scale: f32, offset: f32) -> Result<Vec<f32>, String> {
    image_terrain(readable_image(texture)?, grid, scale, offset)
}

/// Terrain heights for `grid` from a prepared image copy (red channel, resampled to the grid).
fn image_terrain(mut image: Gd<Image>, grid: Grid, scale: f32, offset: f32) -> Result<Vec<f32>, String> {
    image.clear_mipmaps();
    image.convert(Format::RF);
    if image.get_width() != grid.width as i32 || image.get_height() != grid.height as i32 {
        image.resize(grid.width as i32, grid.height as i32);
    }
    let bytes = image.get_data();
    terrain_from_rf_bytes(bytes.as_slice(), grid.width, grid.height, scale, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewater_core::Edge;

    fn defaults() -> ParamInputs {
        let p = Params::default();
        ParamInputs {
            gravity: p.gravity as f64,
            damping: p.damping as f64,
            neighbours: WaterNeighbours::default(),
            cross_section: WaterCrossSection::default(),
            pipe_depth: p.pipe_depth as f64,
            boundaries: [(WaterBoundary::default(), 0.0); 4],
            courant: p.cfl as f64,
            max_step: p.max_step as f64,
            max_substeps: p.max_substeps as i64,
        }
    }

    #[test]
    fn the_node_defaults_give_the_core_defaults() {
        let params = core_params(&defaults());
        println!("node defaults -> {params:?}");
        assert_eq!(params, Params::default());
        assert_eq!(params.validate(), Ok(()));
    }

    #[test]
    fn boundary_properties_map_to_their_edges_with_the_inflow_rate() {
        let mut inputs = defaults();
        inputs.boundaries =
            [(WaterBoundary::Open, 9.0), (WaterBoundary::Inflow, 2.5), (WaterBoundary::Wall, 7.0), (WaterBoundary::Inflow, 0.0)];
        let b = core_params(&inputs).boundaries;
        println!("north/east/south/west properties -> {b:?}");
        assert_eq!(b[Edge::North as usize], Boundary::Open);
        assert_eq!(b[Edge::East as usize], Boundary::Inflow { rate: 2.5 });
        assert_eq!(b[Edge::South as usize], Boundary::Wall);
        assert_eq!(b[Edge::West as usize], Boundary::Inflow { rate: 0.0 });
    }

    #[test]
    fn mode_enums_map_to_the_core_modes() {
        let mut inputs = defaults();
        inputs.neighbours = WaterNeighbours::Four;
        inputs.cross_section = WaterCrossSection::Classic;
        let p = core_params(&inputs);
        println!("FOUR, CLASSIC -> {:?}, {:?}", p.neighbours, p.cross_section);
        assert_eq!((p.neighbours, p.cross_section), (NeighbourMode::Four, CrossSection::Classic));
    }

    #[test]
    fn godot_enum_values_match_the_documented_constants() {
        let values = [
            (WaterBackend::Auto as i64, PipeWater::BACKEND_AUTO),
            (WaterBackend::Gpu as i64, PipeWater::BACKEND_GPU),
            (WaterBackend::Cpu as i64, PipeWater::BACKEND_CPU),
            (WaterNeighbours::Four as i64, PipeWater::NEIGHBOURS_FOUR),
            (WaterNeighbours::Eight as i64, PipeWater::NEIGHBOURS_EIGHT),
            (WaterCrossSection::Classic as i64, PipeWater::CROSS_SECTION_CLASSIC),
            (WaterCrossSection::DepthDependent as i64, PipeWater::CROSS_SECTION_DEPTH_DEPENDENT),
            (WaterBoundary::Wall as i64, PipeWater::BOUNDARY_WALL),
            (WaterBoundary::Open as i64, PipeWater::BOUNDARY_OPEN),
            (WaterBoundary::Inflow as i64, PipeWater::BOUNDARY_INFLOW),
        ];
        println!("(enum value, constant): {values:?}");
        assert!(values.iter().all(|(a, b)| a == b));
    }
}
