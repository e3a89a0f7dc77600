//! The GPU backend on Godot's own RenderingDevice: the wgpu backend's WGSL (translated to
//! SPIR-V by [`spirv`]) recorded into compute lists on the main rendering device, which Godot
//! submits with the frame.
//!
//! * Fields live in RD storage buffers, laid out as in the wgpu backend: terrain (`f32`), depth
//!   (`i32` quanta) and flux (`vec4<f32>`), depth and flux twice for the fused step's ping-pong.
//! * Each frame records the queued edits, every substep (forcing, fused step) and the
//!   `tile_images` pass, which writes `height_texture` and `flux_texture` as RD textures that the
//!   node hands to materials through `Texture2DRD`: nothing crosses to the host for rendering.
//!   Like the wgpu backend's snapshot it recomputes only the tiles stepped since the last frame
//!   (`snapshot.wgsl` says why that is exact); `sum_tiles` then adds up the tiles' totals.
//! * Queries read a host snapshot whose cells are filled in tile by tile
//!   ([`pipewater_core::backend::readback`], shared with the wgpu backend): the `gather` pass
//!   computes the tiles queries touched recently, behind the ledger and totals, into one small
//!   buffer that is read back. With Godot 4.4+ that read is asynchronous
//!   (`buffer_get_data_async`, looked up at runtime) and lands `frame latency` frames later; Godot
//!   4.3 has only `buffer_get_data`, which waits for the GPU, so there the read happens at once
//!   and costs a wait for the frame's GPU work. Before a tile's first read arrives, queries on it
//!   answer from the state the backend was loaded with. Each read carries the load generation it
//!   was issued in: one that arrives after a `load` or `restore` is discarded.
//! * Queued edits are the core's [`PendingEdits`], as on wgpu; this backend only records them.
//! * Multiplayer: a server's capture compares its tiles on the device and reads back only those
//!   that changed (`tile_changes.rs`, asynchronously on Godot 4.4+), and a client writes the
//!   server's tiles cell by cell on the device (`overwrite.rs`), both with the wgpu backend's WGSL.
//! * Sleeping tiles run as on wgpu (`pipewater_core::backend::gpu` says how): before each step
//!   `tiles.wgsl` lists the awake tiles on the device, and the step is dispatched indirectly from
//!   that list (`compute_list_dispatch_indirect`). The sleeping report is read with the header,
//!   16 bytes more; [`Backend::awake_tiles`] reads the last step's flags, waiting for the GPU.
//! * Before anything is created the grid is checked against the device's limits: what Godot
//!   reports (`limit_get`: 2D texture size, workgroup counts) and the storage binding range of the
//!   Vulkan adapter of the same name, which Godot does not report.
//! * Godot reports no device loss to extensions. The backend counts its device as lost when
//!   Godot's RenderingDevice or the backend's textures on it are gone, or when
//!   [`Backend::simulate_device_loss`] says so; the simulation then moves to wgpu.
//! * Everything runs on the render thread, which is the main thread under Godot's default
//!   thread model; the node checks that before choosing this backend.

pub mod detail;
mod list;
mod overwrite;
pub mod spirv;
pub mod textures;
mod tile_changes;

use godot::classes::rendering_device::{DataFormat, ShaderStage, StorageBufferUsage, TextureType, TextureUsageBits, UniformType};
use godot::classes::{RdShaderSpirv, RdTextureFormat, RdTextureView, RdUniform, RenderingDevice, RenderingServer};
use godot::prelude::*;
use parking_lot::Mutex;
use list::{max_workgroups_x, DeviceList};
use pipewater_core::backend::frame::FramePass;
use pipewater_core::backend::gpu::cooling::COOLING_WORKGROUP;
use pipewater_core::backend::gpu::{list_workgroups, storage_binding_limit_of, EDIT_WORKGROUP, TILES_WORKGROUP};
use pipewater_core::backend::gpu_host::{DeviceField, DeviceOverwrite, GpuHost};
use pipewater_core::backend::limits::DeviceLimits;
use pipewater_core::backend::pending::{EditBatch, EditPass};
use pipewater_core::backend::readback::{Coverage, Read, TileRequests, MAX_TILES_PER_READ};
use pipewater_core::backend::recovery::{decode_point, RecoveryRead, COUNTER_BYTES};
use pipewater_core::backend::sleep::{snapshot_slices, ConstantsChange, TileParams, AWAKE_LIST_HEADER, EMPTY_AWAKE_LIST, SLEEP_REPORT_BYTES};
use pipewater_core::backend::{Backend, BackendKind, CellDisplacement, CellTerrain, CellWater, FramePlan, PipeNudge};
use pipewater_core::backend::step_kernel::{ColumnKernel, StepMode};
use pipewater_core::detail::DetailLayout;
use pipewater_core::pipes::StepConstants;
use pipewater_core::state::{Counters, State};
use pipewater_core::{Error, Grid, Result};
use spirv::{BindingKind, Program};
use std::collections::HashMap;
use std::sync::Arc;

/// Godot's main rendering device, when the running renderer has one (Forward+ and Mobile; not
/// the Compatibility renderer, not `--headless`).
pub fn main_device() -> Option<Gd<RenderingDevice>> {
    RenderingServer::singleton().get_rendering_device()
}

/// Why this backend cannot run here, or `None` when it can.
pub fn unavailable_reason() -> Option<String> {
    if main_device().is_none() {
        return Some("the renderer has no RenderingDevice (Compatibility renderer or headless)".into());
    }
    if !RenderingServer::singleton().is_on_render_thread() {
        return Some("rendering runs on a thread of its own (rendering/driver/threads/thread_model); the RenderingDevice backend needs the default single-threaded model".into());
    }
    None
}

fn device() -> Result<Gd<RenderingDevice>> {
    main_device().ok_or_else(|| Error::DeviceLost("Godot's RenderingDevice is gone".into()))
}

/// What Godot's main rendering device allows: the limits it reports (`limit_get`), and the
/// storage binding range of the Vulkan adapter of the same name, which it does not report
/// (unknown: taken as unlimited, and Godot refuses what does not fit when it binds it).
fn device_limits(rd: &Gd<RenderingDevice>, kernel: ColumnKernel) -> DeviceLimits {
    use godot::classes::rendering_device::Limit;
    let name = rd.get_device_name().to_string();
    let limit = |l: Limit| rd.limit_get(l).min(u32::MAX as u64) as u32;
    DeviceLimits {
        max_storage_binding: storage_binding_limit_of(&name).unwrap_or(u64::MAX),
        device: name,
        // `storage_buffer_create` takes a 32-bit size.
        max_buffer: u32::MAX as u64,
        full_reads: false,
        max_texture_side: limit(Limit::MAX_TEXTURE_SIZE_2D),
        max_workgroups: [limit(Limit::MAX_COMPUTE_WORKGROUP_COUNT_X), limit(Limit::MAX_COMPUTE_WORKGROUP_COUNT_Y)],
        step_kernel: kernel,
    }
}

fn bytes_of(data: &[u8]) -> PackedByteArray {
    PackedByteArray::from(data)
}

/// Workgroup memory every Vulkan device offers, bytes (`maxComputeSharedMemorySize`).
const VULKAN_MINIMUM_WORKGROUP_BYTES: u32 = 16384;
/// Invocations per workgroup, and along x, every Vulkan device offers.
const VULKAN_MINIMUM_INVOCATIONS: u32 = 128;

/// A compiled entry point.
struct Pipeline {
    program: Program,
    shader: Rid,
    pipeline: Rid,
}

impl Pipeline {
    /// Compiles `program` on `rd`; nothing is left allocated when it fails.
    fn create(rd: &mut Gd<RenderingDevice>, program: Program) -> Result<Self> {
        let mut spirv = RdShaderSpirv::new_gd();
        spirv.set_stage_bytecode(ShaderStage::COMPUTE, &bytes_of(&program.bytes()));
        let shader = rd.shader_create_from_spirv_ex(&spirv).name(program.entry_point).done();
        if !shader.is_valid() {
            return Err(Error::GpuUnavailable(format!("Godot refused the SPIR-V of `{}` (see the errors above)", program.entry_point)));
        }
        let pipeline = rd.compute_pipeline_create(shader);
        if !pipeline.is_valid() {
            rd.free_rid(shader);
            return Err(Error::GpuUnavailable(format!("Godot could not create the pipeline of `{}`", program.entry_point)));
        }
        Ok(Pipeline { program, shader, pipeline })
    }
}

/// Which edit list a water-edit pass reads.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum WaterList {
    User,
    Forcing,
}

/// The RenderingDevice backend.
pub struct RdBackend {
    /// What both GPU backends keep on the host: edits, reads, sleeping, recovery, the frame
    /// count and the copy holding the state.
    host: GpuHost,
    /// The entry points of [`spirv::ENTRY_POINTS`], then the step specialised for each mode in
    /// `step_entries`.
    pipelines: Vec<Pipeline>,
    /// The step kernel's shape on this device.
    kernel: ColumnKernel,
    /// Index in `pipelines` of the step for each mode met so far.
    step_entries: HashMap<StepMode, usize>,
    uniforms: Rid,
    terrain: Rid,
    /// The bed the step reads: terrain plus the displacement of bodies (bodies.wgsl).
    step_terrain: Rid,
    /// Pressure head of bodies per cell, m.
    displacement: Rid,
    depth: [Rid; 2],
    flux: [Rid; 2],
    counters: Rid,
    stats: Rid,
    height_texture: Rid,
    flow_texture: Rid,
    water_edits: DeviceList,
    forcing: DeviceList,
    terrain_edits: DeviceList,
    tile_list: DeviceList,
    displaced_list: DeviceList,
    nudge_list: DeviceList,
    /// A multiplayer client's cells to set (`overwrite.rs`).
    overwrite_list: DeviceList,
    /// The most workgroups a dispatch takes along x.
    max_workgroups: u32,
    gathered: Rid,
    /// Uniform sets by (entry point, set, current copy, water list).
    sets: HashMap<(usize, u32, usize, WaterList), Rid>,
    /// `buffer_get_data_async` exists (Godot 4.4+).
    async_reads: bool,
    /// Reads arrived from Godot's callbacks, each with the read it answers.
    arrived: Arc<Mutex<Vec<(Read, Vec<u8>)>>>,
    /// Bytes read back by the last frame.
    last_read_bytes: usize,
    /// Why the device counts as lost, once it does.
    lost: Option<String>,
    description: String,
    /// The detail wave layer, when it is on (`detail.rs`).
    detail: Option<detail::RdDetail>,
    /// Sleeping tiles: the device's buffers (the host's side is `host.sleep`, as on wgpu).
    tile_params: Rid,
    /// Flags per tile, written by the step from copy k; awake lists, the step from copy k's
    /// dispatch arguments; host marks per tile; the frame's report.
    tile_flags: [Rid; 2],
    awake_lists: [Rid; 2],
    tile_wakes: Rid,
    sleep_stats: Rid,
    /// Per tile: whether its snapshot texels are stale, and its share of the snapshot's
    /// reductions (snapshot.wgsl).
    tile_stale: Rid,
    tile_totals: Rid,
    /// Sleeping reports arrived from Godot's callbacks.
    sleep_arrived: Arc<Mutex<Vec<ArrivedSleepReport>>>,
    /// Parts of recovery reads arrived from Godot's callbacks: (read, part, bytes), the parts
    /// being the counters, terrain, depth and flows.
    recovery_arrived: Arc<Mutex<Vec<(RecoveryRead, usize, Vec<u8>)>>>,
    /// Recovery reads some of whose parts have arrived.
    recovery_parts: Vec<(RecoveryRead, [Option<Vec<u8>>; 4])>,
    /// Cooling's quanta of the frame and of each cell (`Cooling` of cooling.wgsl), made by the
    /// first frame that cools.
    cooling: Option<Rid>,
    /// A multiplayer server's comparison of its tiles (`tile_changes.rs`), made by its first
    /// reset.
    tile_changes: Option<tile_changes::RdTileChanges>,
}

/// A frame's sleeping report as read back, with the load generation it was issued in.
struct ArrivedSleepReport {
    generation: u64,
    frame: u64,
    steps: u32,
    bytes: Vec<u8>,
}

// Indices of spirv::ENTRY_POINTS in `pipelines`; step pipelines follow them, one per mode met.
const ENTRY_WATER: usize = 0;
const ENTRY_TERRAIN: usize = 1;
const ENTRY_TILE_IMAGES: usize = 2;
const ENTRY_GATHER: usize = 3;
const ENTRY_REFRESH: usize = 4;
const ENTRY_DISPLACE: usize = 5;
const ENTRY_NUDGE: usize = 6;
const ENTRY_PLAN_FRAME_START: usize = 7;
const ENTRY_PLAN_NEXT_STEP: usize = 8;
const ENTRY_REPORT_AWAKE_TILES: usize = 9;
const ENTRY_SUM_TILES: usize = 10;
const ENTRY_JUDGE_COOLING: usize = 11;
const ENTRY_APPLY_COOLING: usize = 12;
const ENTRY_COMPARE_TILES: usize = 13;
const ENTRY_OVERWRITE_CELLS: usize = 14;

impl RdBackend {
    /// Compiles the shaders on Godot's main rendering device and uploads `state`.
    pub fn new(state: &State) -> Result<Self> {
        if let Some(why) = unavailable_reason() {
            return Err(Error::GpuUnavailable(why));
        }
        let mut rd = device()?;
        // Godot 4.3's Vulkan driver does not report the workgroup-memory limit (asking prints an
        // error and answers 0), so the kernel is shaped for what every Vulkan device guarantees:
        // 16 KiB of workgroup memory and 128 invocations, which fit the 64-column kernel.
        let kernel = ColumnKernel::for_limits(VULKAN_MINIMUM_WORKGROUP_BYTES, VULKAN_MINIMUM_INVOCATIONS, VULKAN_MINIMUM_INVOCATIONS)
            .ok_or_else(|| Error::GpuUnavailable("the step kernel does not fit Vulkan's minimum workgroup limits".into()))?;
        device_limits(&rd, kernel).check(state.grid)?;
        let programs = spirv::all_programs().map_err(Error::Gpu)?;
        let mut pipelines = Vec::new();
        for program in programs {
            match Pipeline::create(&mut rd, program) {
                Ok(p) => pipelines.push(p),
                Err(e) => {
                    free_all(&mut rd, pipelines.iter().flat_map(|p: &Pipeline| [p.pipeline, p.shader]));
                    return Err(e);
                }
            }
        }
        let grid = state.grid;
        let n = grid.cell_count();
        let storage = |rd: &mut Gd<RenderingDevice>, bytes: usize| rd.storage_buffer_create(bytes.max(16) as u32);
        let uniforms = rd.uniform_buffer_create(std::mem::size_of::<StepConstants>() as u32);
        let terrain = storage(&mut rd, n * 4);
        let step_terrain = storage(&mut rd, n * 4);
        let displacement = storage(&mut rd, n * 4);
        let depth = [storage(&mut rd, n * 4), storage(&mut rd, n * 4)];
        let flux = [storage(&mut rd, n * 16), storage(&mut rd, n * 16)];
        let counters = storage(&mut rd, COUNTER_BYTES);
        let stats = storage(&mut rd, 16);
        let height_texture = texture(&mut rd, grid);
        let flow_texture = texture(&mut rd, grid);
        let gathered = storage(&mut rd, TileRequests::readback_bytes(MAX_TILES_PER_READ));
        let async_reads = rd.has_method("buffer_get_data_async");
        let tiles = kernel.tiles(grid.width, grid.height);
        let tile_count = tiles.count();
        let tile_params = rd.uniform_buffer_create(std::mem::size_of::<TileParams>() as u32);
        let tile_flags = [storage(&mut rd, 4 * tile_count), storage(&mut rd, 4 * tile_count)];
        let awake_list = |rd: &mut Gd<RenderingDevice>| rd.storage_buffer_create_ex((4 * (AWAKE_LIST_HEADER + tile_count)) as u32).usage(StorageBufferUsage::DISPATCH_INDIRECT).done();
        let awake_lists = [awake_list(&mut rd), awake_list(&mut rd)];
        let tile_wakes = storage(&mut rd, 4 * tile_count);
        let sleep_stats = storage(&mut rd, SLEEP_REPORT_BYTES);
        let tile_stale = storage(&mut rd, 4 * tile_count);
        let tile_totals = storage(&mut rd, 16 * tile_count * snapshot_slices(&tiles) as usize);
        let description = format!("RenderingDevice: {} ({})", rd.get_device_name(), rd.get_device_vendor_name());
        let mut backend = RdBackend {
            // The textures are written on the GPU: reads are for queries, tile by tile.
            host: GpuHost::new(state, tiles, false),
            height_texture,
            uniforms,
            depth,
            flux,
            terrain,
            stats,
            counters,
            flow_texture,
            water_edits: DeviceList::new(&mut rd, 64, std::mem::size_of::<CellWater>()),
            forcing: DeviceList::new(&mut rd, 64, std::mem::size_of::<CellWater>()),
            terrain_edits: DeviceList::new(&mut rd, 64, std::mem::size_of::<CellTerrain>()),
            tile_list: DeviceList::new(&mut rd, MAX_TILES_PER_READ, 4),
            displaced_list: DeviceList::new(&mut rd, 64, std::mem::size_of::<CellDisplacement>()),
            nudge_list: DeviceList::new(&mut rd, 64, std::mem::size_of::<PipeNudge>()),
            overwrite_list: DeviceList::new(&mut rd, 64, std::mem::size_of::<DeviceOverwrite>()),
            max_workgroups: max_workgroups_x(&rd),
            step_terrain,
            displacement,
            gathered,
            pipelines,
            kernel,
            step_entries: HashMap::new(),
            sets: HashMap::new(),
            async_reads,
            arrived: Arc::new(Mutex::new(Vec::new())),
            last_read_bytes: 0,
            lost: None,
            description,
            detail: None,
            tile_params,
            tile_flags,
            awake_lists,
            tile_wakes,
            sleep_stats,
            tile_stale,
            tile_totals,
            sleep_arrived: Arc::new(Mutex::new(Vec::new())),
            recovery_arrived: Arc::new(Mutex::new(Vec::new())),
            recovery_parts: Vec::new(),
            cooling: None,
            tile_changes: None,
        };
        let made = [backend.uniforms, backend.terrain, backend.step_terrain, backend.displacement, backend.counters, backend.stats, backend.gathered, backend.height_texture, backend.flow_texture];
        let sleeping = [backend.tile_params, backend.tile_wakes, backend.sleep_stats, backend.tile_stale, backend.tile_totals];
        if made.iter().chain(&backend.depth).chain(&backend.flux).chain(&sleeping).chain(&backend.tile_flags).chain(&backend.awake_lists).any(|r| !r.is_valid()) {
            return Err(Error::Gpu(format!("Godot could not allocate the fields of a {}x{} grid", grid.width, grid.height)));
        }
        // The snapshot reads the tiles' shape before any step has set the parameters.
        update(&mut rd, backend.tile_params, bytemuck::bytes_of(&TileParams::new(&tiles, false, ConstantsChange::Mode)));
        backend.upload(state, Counters::default(), 0)?;
        Ok(backend)
    }

    /// The RD textures the `tile_images` pass writes: (height, flux), in the documented layouts.
    pub fn textures(&self) -> (Rid, Rid) {
        (self.height_texture, self.flow_texture)
    }

    /// Frames between an `advance` and the snapshot header that shows it: 0 on Godot 4.3 (the
    /// read waits), Godot's frame delay with asynchronous reads.
    pub fn read_latency_frames(&self) -> u32 {
        if self.async_reads {
            main_device().map_or(2, |rd| rd.get_frame_delay())
        } else {
            0
        }
    }

    /// Replaces the fields with `state`'s and the ledger with `counters`, as of frame `frames`.
    fn upload(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        let mut rd = device()?;
        update(&mut rd, self.terrain, bytemuck::cast_slice(&state.terrain));
        update(&mut rd, self.step_terrain, bytemuck::cast_slice(&state.terrain));
        update(&mut rd, self.displacement, bytemuck::cast_slice(&vec![0.0f32; state.terrain.len()]));
        update(&mut rd, self.depth[0], bytemuck::cast_slice(&state.depth));
        update(&mut rd, self.flux[0], bytemuck::cast_slice(&state.flow));
        update(&mut rd, self.counters, bytemuck::cast_slice(&counters.to_device_words()));
        // Each plan empties the next step's list, which holds only while steps alternate
        // between the copies: a new state starts both empty, and wakes every tile. Reads still in
        // flight belong to the old state: a new generation makes `harvest` discard them whenever
        // their callbacks come.
        self.host.loaded(state, counters, frames);
        self.start_from_loaded_state(&mut rd)
    }

    /// After a new state's fields and the host's side are in (`upload`, `finish_restore`): both
    /// awake lists empty, no tile marked, no recovery part or detail wave of the old state, and
    /// the state drawn into the textures at once, so that an editor that does not simulate, or a
    /// paused game, shows it without ever stepping.
    fn start_from_loaded_state(&mut self, rd: &mut Gd<RenderingDevice>) -> Result<()> {
        for list in self.awake_lists {
            update(rd, list, bytemuck::cast_slice(&EMPTY_AWAKE_LIST));
        }
        update(rd, self.tile_wakes, &vec![0u8; 4 * self.host.sleep.tiles().count()]);
        self.recovery_parts.clear();
        if let Some(detail) = &mut self.detail {
            detail.clear(rd);
        }
        self.record_frame(&FramePlan { constants: self.host.constants, substeps: 0, forcing: &[] })
    }

    /// Uploads `items` (records of `item_bytes`) into `list`, replacing its buffer when it is too
    /// small (which invalidates the uniform sets that name it).
    fn fill_list(&mut self, which: ListId, items: &[u8]) -> Result<()> {
        let mut rd = device()?;
        if self.list_mut(which).fill(&mut rd, items) {
            self.drop_sets(&mut rd);
        }
        Ok(())
    }

    fn list_mut(&mut self, which: ListId) -> &mut DeviceList {
        match which {
            ListId::Water => &mut self.water_edits,
            ListId::Forcing => &mut self.forcing,
            ListId::Terrain => &mut self.terrain_edits,
            ListId::Tiles => &mut self.tile_list,
            ListId::Displaced => &mut self.displaced_list,
            ListId::Nudges => &mut self.nudge_list,
            ListId::Overwrites => &mut self.overwrite_list,
        }
    }

    fn drop_sets(&mut self, rd: &mut Gd<RenderingDevice>) {
        for (_, set) in self.sets.drain() {
            if rd.uniform_set_is_valid(set) {
                rd.free_rid(set);
            }
        }
    }

    /// The resource a binding names, for copy `k` and the water list `water`.
    fn resource(&self, name: &str, k: usize, water: WaterList) -> Option<Rid> {
        Some(match name {
            "c" => self.uniforms,
            "terrain" | "terrain_bits" => self.terrain,
            "step_terrain" => self.step_terrain,
            "displacement" => self.displacement,
            "displaced" => self.displaced_list.buffer,
            "nudges" => self.nudge_list.buffer,
            "depth_in" | "depth" => self.depth[k],
            "flux_in" | "flux" => self.flux[k],
            "depth_out" => self.depth[1 - k],
            "flux_out" => self.flux[1 - k],
            "counters" => self.counters,
            "stats" => self.stats,
            "water" => match water {
                WaterList::User => self.water_edits.buffer,
                WaterList::Forcing => self.forcing.buffer,
            },
            "ground" => self.terrain_edits.buffer,
            "height_image" => self.height_texture,
            "flow_image" => self.flow_texture,
            "gather_tiles" => self.tile_list.buffer,
            "gathered" => self.gathered,
            "tiles" => self.tile_params,
            "tile_flags" => self.tile_flags[k],
            "tile_flags_before" => self.tile_flags[1 - k],
            "tile_wakes" => self.tile_wakes,
            "awake_list" => self.awake_lists[k],
            "next_awake_list" => self.awake_lists[1 - k],
            "sleep_stats" => self.sleep_stats,
            "tile_stale" => self.tile_stale,
            "tile_totals" => self.tile_totals,
            "cooling" => self.cooling?,
            // A sync server's comparison (tile_changes.wgsl) and a client's write (overwrite.wgsl).
            "flow" => self.flux[k],
            "changes" => self.tile_changes.as_ref()?.params,
            "captured_depth" => self.tile_changes.as_ref()?.captured_depth,
            "captured_flow" => self.tile_changes.as_ref()?.captured_flow,
            "report" => self.tile_changes.as_ref()?.report,
            "wanted" => self.tile_changes.as_ref()?.wanted,
            "differed" => self.tile_changes.as_ref()?.differed,
            "overwrites" => self.overwrite_list.buffer,
            _ => return None,
        })
    }

    /// The uniform set `set` of entry point `entry`, created on first use.
    fn uniform_set(&mut self, rd: &mut Gd<RenderingDevice>, entry: usize, set: u32, water: WaterList) -> Result<Rid> {
        let key = (entry, set, self.host.current, water);
        if let Some(&rid) = self.sets.get(&key) {
            return Ok(rid);
        }
        let pipeline = &self.pipelines[entry];
        let current = self.host.current;
        let rid = create_uniform_set(rd, &pipeline.program, pipeline.shader, set, "the RenderingDevice backend", |name| self.resource(name, current, water))?;
        self.sets.insert(key, rid);
        Ok(rid)
    }

    /// Binds entry point `entry` with all its sets and dispatches it.
    fn dispatch(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, entry: usize, water: WaterList, groups: [u32; 2]) -> Result<()> {
        self.bind(rd, list, entry, water)?;
        rd.compute_list_dispatch(list, groups[0].max(1), groups[1].max(1), 1);
        rd.compute_list_add_barrier(list);
        Ok(())
    }

    /// [`RdBackend::dispatch`] over `groups` in three dimensions, with the user water list.
    fn dispatch_3d(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, entry: usize, groups: [u32; 3]) -> Result<()> {
        self.bind(rd, list, entry, WaterList::User)?;
        rd.compute_list_dispatch(list, groups[0].max(1), groups[1].max(1), groups[2].max(1));
        rd.compute_list_add_barrier(list);
        Ok(())
    }

    /// Binds entry point `entry` with all its sets.
    fn bind(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, entry: usize, water: WaterList) -> Result<()> {
        rd.compute_list_bind_compute_pipeline(list, self.pipelines[entry].pipeline);
        for set in self.pipelines[entry].program.sets() {
            let rid = self.uniform_set(rd, entry, set, water)?;
            rd.compute_list_bind_uniform_set(list, rid, set);
        }
        Ok(())
    }

    fn edit_groups(&self, count: usize) -> [u32; 2] {
        [list_workgroups(count, EDIT_WORKGROUP, self.max_workgroups), 1]
    }

    /// Records the frame of `plan` as the core's recipe lists its passes
    /// ([`pipewater_core::backend::frame`]): the queued edits, the steps with their forcing and
    /// plans, the detail waves, the awake report and the snapshot passes into compute lists; then
    /// issues the small readbacks.
    fn record_frame(&mut self, plan: &FramePlan) -> Result<()> {
        let mut rd = device()?;
        update(&mut rd, self.uniforms, bytemuck::bytes_of(&plan.constants));
        // The header (HEADER_BYTES) is read every frame, so that totals and the ledger follow.
        self.host.reads.want_snapshot();
        let mut start = self.host.start_frame(plan);
        self.upload_edits(&start.edits)?;
        if !start.forcing.is_empty() {
            self.fill_list(ListId::Forcing, bytemuck::cast_slice(&start.forcing))?;
        }
        let tiles: &[u32] = match start.read.as_ref().map(|r| &r.coverage) {
            Some(Coverage::Tiles(tiles)) => tiles,
            _ => &[],
        };
        self.fill_list(ListId::Tiles, bytemuck::cast_slice(tiles))?;
        rd.buffer_clear(self.stats, 0, 16);
        let (tile_params, tile_wakes, sleep_stats) = (self.tile_params, self.tile_wakes, self.sleep_stats);
        let all_stale = self.host.start_tiles(plan, &start, |tiles| {
            if let Some((params, marks)) = tiles {
                update(&mut rd, tile_params, bytemuck::bytes_of(&params));
                if let Some(marks) = marks {
                    update(&mut rd, tile_wakes, bytemuck::cast_slice(marks));
                }
                rd.buffer_clear(sleep_stats, 0, SLEEP_REPORT_BYTES as u32);
            }
        });
        if let Some(all) = all_stale {
            update(&mut rd, self.tile_stale, bytemuck::cast_slice(&all));
        }
        let recovery = self.host.recovery.due(self.host.frames + 1).is_some();
        self.host.recipe(plan, &start, self.detail.is_some(), recovery);
        let step = if plan.substeps > 0 { self.step_entry(&mut rd, StepMode::of(&plan.constants))? } else { 0 };
        // The recipe's compute passes, in compute lists opened as needed; its reads follow.
        let mut list = None;
        let mut at = 0;
        let recorded = (|| -> Result<()> {
            while let Some(pass) = self.host.pass(at).filter(|p| !p.is_read()) {
                self.record_pass(&mut rd, &mut list, pass, step)?;
                at += 1;
            }
            Ok(())
        })();
        if list.is_some() {
            rd.compute_list_end();
        }
        recorded?;
        self.host.current = self.host.current_after_recipe();
        self.host.frames += 1;
        while let Some(pass) = self.host.pass(at) {
            match pass {
                FramePass::ReadSnapshot => {
                    if let Some(read) = start.read.take() {
                        self.read_back(&mut rd, read);
                    }
                    self.read_sleep_report(&mut rd);
                }
                FramePass::ReadRecovery { copy } => self.read_recovery(&mut rd, copy),
                _ => {}
            }
            at += 1;
        }
        Ok(())
    }

    /// Records one compute pass of the frame's recipe. `list` is the compute list open, if any:
    /// opened by the first dispatch after it was ended, ended for the detail waves' own list.
    fn record_pass(&mut self, rd: &mut Gd<RenderingDevice>, list: &mut Option<i64>, pass: FramePass, step: usize) -> Result<()> {
        if let FramePass::Detail { copy } = pass {
            // The detail waves read the water the first step reads, from the copy it reads, in a
            // list of their own recorded right after it: Godot's graph finds nothing that orders
            // the two and runs them side by side.
            if list.take().is_some() {
                rd.compute_list_end();
            }
            return self.run_detail(rd, copy);
        }
        let open = *list.get_or_insert_with(|| rd.compute_list_begin());
        match pass {
            FramePass::Edit { pass, count, copy } => {
                self.host.current = copy;
                self.record_edit(rd, open, pass, count)
            }
            FramePass::Forcing { count, copy } => {
                self.host.current = copy;
                self.dispatch(rd, open, ENTRY_WATER, WaterList::Forcing, self.edit_groups(count))
            }
            FramePass::PlanTiles { first, copy } => {
                self.host.current = copy;
                let entry = if first { ENTRY_PLAN_FRAME_START } else { ENTRY_PLAN_NEXT_STEP };
                self.dispatch(rd, open, entry, WaterList::User, [(self.host.sleep.tiles().count() as u32).div_ceil(TILES_WORKGROUP), 1])
            }
            FramePass::Step { copy } => {
                self.host.current = copy;
                self.bind(rd, open, step, WaterList::User)?;
                rd.compute_list_dispatch_indirect(open, self.awake_lists[copy], 0);
                rd.compute_list_add_barrier(open);
                Ok(())
            }
            FramePass::ReportAwake { copy } => {
                self.host.current = copy;
                self.dispatch(rd, open, ENTRY_REPORT_AWAKE_TILES, WaterList::User, [1, 1])
            }
            FramePass::Snapshot { copy } => {
                self.host.current = copy;
                let tiles = self.host.sleep.tiles();
                self.dispatch_3d(rd, open, ENTRY_TILE_IMAGES, [tiles.tiles[0], tiles.tiles[1], snapshot_slices(&tiles)])?;
                self.dispatch(rd, open, ENTRY_SUM_TILES, WaterList::User, [1, 1])
            }
            FramePass::Gather { tiles, copy } => {
                self.host.current = copy;
                self.dispatch(rd, open, ENTRY_GATHER, WaterList::User, [(tiles as u32).max(1), 1])
            }
            FramePass::Detail { .. } | FramePass::ReadSnapshot | FramePass::ReadRecovery { .. } => Ok(()),
        }
    }

    /// Records the detail waves' queued frame, if the layer is on, over copy `k` of the fields.
    fn run_detail(&mut self, rd: &mut Gd<RenderingDevice>, k: usize) -> Result<()> {
        let flow = detail::FlowFields { constants: self.uniforms, terrain: self.terrain, depth: self.depth[k], flux: self.flux[k], copy: k };
        match &mut self.detail {
            Some(detail) => detail.run(rd, flow),
            None => Ok(()),
        }
    }

    /// The entry (index in `pipelines`) of the step specialised for `mode`, compiled on first use.
    fn step_entry(&mut self, rd: &mut Gd<RenderingDevice>, mode: StepMode) -> Result<usize> {
        if let Some(&entry) = self.step_entries.get(&mode) {
            return Ok(entry);
        }
        let program = spirv::step_program(mode, &self.kernel).map_err(Error::Gpu)?;
        self.pipelines.push(Pipeline::create(rd, program)?);
        let entry = self.pipelines.len() - 1;
        self.step_entries.insert(mode, entry);
        Ok(entry)
    }

    /// Reads the header and the gathered tiles of the frame just recorded.
    fn read_back(&mut self, rd: &mut Gd<RenderingDevice>, read: Read) {
        let size = read.bytes(self.host.grid.cell_count());
        self.last_read_bytes = size;
        if self.async_reads {
            let arrived = self.arrived.clone();
            let answers = read.clone();
            let callback = Callable::from_fn("pipewater_readback", move |args: &[&Variant]| {
                if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                    arrived.lock().push((answers.clone(), bytes.to_vec()));
                }
            });
            // A read Godot refuses never arrives; the next frame's takes its place.
            rd.call("buffer_get_data_async", &[self.gathered.to_variant(), callable_variant(&callback), 0.to_variant(), (size as i64).to_variant()]);
        } else {
            let bytes = rd.buffer_get_data_ex(self.gathered).offset_bytes(0).size_bytes(size as u32).done();
            self.arrived.lock().push((read, bytes.to_vec()));
            self.harvest();
        }
    }

    /// Reads the frame's sleeping report, as the header is read.
    fn read_sleep_report(&mut self, rd: &mut Gd<RenderingDevice>) {
        let (generation, frame, steps) = (self.host.reads.generation(), self.host.frames, self.host.sleep.frame_steps());
        if self.async_reads {
            let arrived = self.sleep_arrived.clone();
            let callback = Callable::from_fn("pipewater_sleep_report", move |args: &[&Variant]| {
                if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                    arrived.lock().push(ArrivedSleepReport { generation, frame, steps, bytes: bytes.to_vec() });
                }
            });
            rd.call("buffer_get_data_async", &[self.sleep_stats.to_variant(), callable_variant(&callback), 0.to_variant(), (SLEEP_REPORT_BYTES as i64).to_variant()]);
        } else {
            let bytes = rd.buffer_get_data_ex(self.sleep_stats).offset_bytes(0).size_bytes(SLEEP_REPORT_BYTES as u32).done();
            self.host.sleep.accept(frame, steps, bytes.as_slice());
        }
        self.last_read_bytes += SLEEP_REPORT_BYTES;
    }

    /// Reads the whole state of the frame just recorded (copy `current` of the fields) when a recovery read is due: four reads
    /// (counters, terrain, depth, flows), asynchronous where Godot has them. On Godot 4.3 each
    /// waits for the GPU, once every recovery interval.
    fn read_recovery(&mut self, rd: &mut Gd<RenderingDevice>, current: usize) {
        let Some(read) = self.host.recovery.due(self.host.frames) else { return };
        self.host.recovery.issued(read);
        let n = self.host.grid.cell_count();
        let parts = [(self.counters, COUNTER_BYTES), (self.terrain, 4 * n), (self.depth[current], 4 * n), (self.flux[current], 16 * n)];
        if self.async_reads {
            // A part Godot refuses never arrives: that read is never taken, and the next one
            // falls due an interval later.
            for (part, (buffer, size)) in parts.into_iter().enumerate() {
                let arrived = self.recovery_arrived.clone();
                let callback = Callable::from_fn("pipewater_recovery", move |args: &[&Variant]| {
                    if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                        arrived.lock().push((read, part, bytes.to_vec()));
                    }
                });
                rd.call("buffer_get_data_async", &[buffer.to_variant(), callable_variant(&callback), 0.to_variant(), (size as i64).to_variant()]);
            }
        } else {
            let [c, t, d, f] = parts.map(|(buffer, size)| rd.buffer_get_data_ex(buffer).offset_bytes(0).size_bytes(size as u32).done().to_vec());
            self.host.recovery.decode_later(read, move |grid| decode_point(grid, read, &c, &t, &d, &f));
        }
    }

    /// Takes the recovery reads whose four parts have all arrived; drops parts of reads that can
    /// no longer be taken (of an earlier load, or older than the point).
    fn harvest_recovery(&mut self) {
        self.host.recovery.take_decoded();
        for (read, part, bytes) in std::mem::take(&mut *self.recovery_arrived.lock()) {
            let at = match self.recovery_parts.iter().position(|(r, _)| *r == read) {
                Some(at) => at,
                None => {
                    self.recovery_parts.push((read, [None, None, None, None]));
                    self.recovery_parts.len() - 1
                }
            };
            self.recovery_parts[at].1[part] = Some(bytes);
        }
        let (generation, newest) = (self.host.recovery.generation(), self.host.recovery.point().frame);
        self.recovery_parts.retain(|(read, _)| read.generation == generation && read.frame > newest);
        self.recovery_parts.sort_by_key(|(read, _)| read.frame);
        if let Some(at) = self.recovery_parts.iter().rposition(|(_, parts)| parts.iter().all(Option::is_some)) {
            let (read, parts) = self.recovery_parts.remove(at);
            // Decoded on a thread of its own: a 4096² grid's 400 MB must not hold up the frame.
            if let [Some(c), Some(t), Some(d), Some(f)] = parts {
                self.host.recovery.decode_later(read, move |grid| decode_point(grid, read, &c, &t, &d, &f));
            }
            self.recovery_parts.retain(|(r, _)| r.frame > read.frame);
        }
    }

    /// Applies the reads that have arrived; those issued before the last load are discarded.
    fn harvest(&mut self) {
        self.harvest_recovery();
        // A report of an earlier load is about water that is gone.
        for report in std::mem::take(&mut *self.sleep_arrived.lock()).into_iter().filter(|r| r.generation == self.host.reads.generation()) {
            self.host.sleep.accept(report.frame, report.steps, &report.bytes);
        }
        let arrived = std::mem::take(&mut *self.arrived.lock());
        let arrived: Vec<(&Read, &[u8])> = arrived.iter().map(|(read, bytes)| (read, bytes.as_slice())).collect();
        self.host.reads.accept(&arrived);
    }

    /// Whether the device is still there: Godot reports no loss to extensions, so the backend
    /// looks for its own textures on Godot's device.
    fn check_device(&mut self) -> Result<Gd<RenderingDevice>> {
        if let Some(why) = &self.lost {
            return Err(Error::DeviceLost(why.clone()));
        }
        let mut rd = device()?;
        if !rd.texture_is_valid(self.height_texture) {
            let why = "the backend's textures are gone from Godot's RenderingDevice".to_string();
            self.lost = Some(why.clone());
            return Err(Error::DeviceLost(why));
        }
        Ok(rd)
    }

    /// Applies `batch` in a compute list of its own (queued edits before a blocking read, or
    /// before nudges on cells already queued).
    fn submit_edits(&mut self, batch: EditBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut rd = device()?;
        self.upload_edits(&batch)?;
        let list = rd.compute_list_begin();
        let result = batch.counts().passes().try_for_each(|(pass, count)| self.record_edit(&mut rd, list, pass, count));
        rd.compute_list_end();
        result
    }

    /// Uploads the lists of `batch` for the edit passes that follow.
    fn upload_edits(&mut self, batch: &EditBatch) -> Result<()> {
        if !batch.water.is_empty() {
            self.fill_list(ListId::Water, bytemuck::cast_slice(&batch.water))?;
        }
        if !batch.terrain.is_empty() {
            self.fill_list(ListId::Terrain, bytemuck::cast_slice(&batch.terrain))?;
        }
        if !batch.displacement.is_empty() {
            self.fill_list(ListId::Displaced, bytemuck::cast_slice(&batch.displacement))?;
        }
        if !batch.nudges.is_empty() {
            self.fill_list(ListId::Nudges, bytemuck::cast_slice(&batch.nudges))?;
        }
        Ok(())
    }

    /// Records edit pass `pass` over `count` entries of its uploaded list into `list`, on the
    /// current copy.
    fn record_edit(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, pass: EditPass, count: usize) -> Result<()> {
        let entry = match pass {
            EditPass::Terrain => ENTRY_TERRAIN,
            EditPass::Water => ENTRY_WATER,
            EditPass::RefreshStepTerrain => ENTRY_REFRESH,
            EditPass::Displace => ENTRY_DISPLACE,
            EditPass::Nudge => ENTRY_NUDGE,
        };
        self.dispatch(rd, list, entry, WaterList::User, self.edit_groups(count))
    }

    /// Reads `fields` back whole, each as its bytes, after the queued edits, waiting for the GPU.
    fn read_whole(&mut self, fields: &[DeviceField]) -> Result<Vec<Vec<u8>>> {
        let (cells, tiles) = (self.host.grid.cell_count(), self.host.sleep.tiles().count());
        fields
            .iter()
            .map(|&field| {
                let buffer = match field {
                    DeviceField::Terrain => self.terrain,
                    DeviceField::Depth(k) => self.depth[k],
                    DeviceField::Flow(k) => self.flux[k],
                    DeviceField::Counters => self.counters,
                    DeviceField::TileFlags(k) => self.tile_flags[k],
                };
                self.read_buffer(buffer, field.bytes(cells, tiles))
            })
            .collect()
    }

    /// Reads a whole buffer, waiting for the GPU.
    fn read_buffer(&mut self, buffer: Rid, bytes: usize) -> Result<Vec<u8>> {
        self.check_device()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let mut rd = device()?;
        let data = rd.buffer_get_data_ex(buffer).offset_bytes(0).size_bytes(bytes as u32).done();
        if data.len() != bytes {
            return Err(Error::Gpu(format!("reading a {bytes}-byte buffer back returned {} bytes", data.len())));
        }
        Ok(data.to_vec())
    }
}

/// Makes the uniform set `set` of `program` (compiled as `shader`), each binding's resource found
/// by name with `resource`; an error names the binding `owner` lacks, or Godot's refusal.
pub(crate) fn create_uniform_set(
    rd: &mut Gd<RenderingDevice>,
    program: &Program,
    shader: Rid,
    set: u32,
    owner: &str,
    resource: impl Fn(&str) -> Option<Rid>,
) -> Result<Rid> {
    let mut uniforms: Array<Gd<RdUniform>> = Array::new();
    for b in program.bindings.iter().filter(|b| b.set == set) {
        let rid = resource(&b.name).ok_or_else(|| Error::Gpu(format!("`{}` binds `{}`, which {owner} does not have", program.entry_point, b.name)))?;
        let mut u = RdUniform::new_gd();
        u.set_uniform_type(match b.kind {
            BindingKind::UniformBuffer => UniformType::UNIFORM_BUFFER,
            BindingKind::StorageBuffer => UniformType::STORAGE_BUFFER,
            BindingKind::Image => UniformType::IMAGE,
        });
        u.set_binding(b.binding as i32);
        u.add_id(rid);
        uniforms.push(&u);
    }
    let rid = rd.uniform_set_create(&uniforms, shader, set);
    if !rid.is_valid() {
        return Err(Error::Gpu(format!("Godot refused the uniform set {set} of `{}`", program.entry_point)));
    }
    Ok(rid)
}

#[derive(Clone, Copy)]
enum ListId {
    Water,
    Forcing,
    Terrain,
    Tiles,
    Displaced,
    Nudges,
    Overwrites,
}

fn callable_variant(c: &Callable) -> Variant {
    c.to_variant()
}

fn update(rd: &mut Gd<RenderingDevice>, buffer: Rid, bytes: &[u8]) {
    update_at(rd, buffer, 0, bytes);
}

/// [`update`] of the part of `buffer` from byte `offset` on.
fn update_at(rd: &mut Gd<RenderingDevice>, buffer: Rid, offset: u32, bytes: &[u8]) {
    if !bytes.is_empty() {
        rd.buffer_update(buffer, offset, bytes.len() as u32, &bytes_of(bytes));
    }
}

fn texture(rd: &mut Gd<RenderingDevice>, grid: Grid) -> Rid {
    let mut format = RdTextureFormat::new_gd();
    format.set_format(DataFormat::R32G32B32A32_SFLOAT);
    format.set_width(grid.width);
    format.set_height(grid.height);
    format.set_texture_type(TextureType::TYPE_2D);
    format.set_usage_bits(TextureUsageBits::SAMPLING_BIT | TextureUsageBits::STORAGE_BIT | TextureUsageBits::CAN_COPY_FROM_BIT | TextureUsageBits::CAN_UPDATE_BIT);
    rd.texture_create(&format, &RdTextureView::new_gd())
}

fn free_all(rd: &mut Gd<RenderingDevice>, rids: impl IntoIterator<Item = Rid>) {
    for rid in rids {
        if rid.is_valid() {
            rd.free_rid(rid);
        }
    }
}

impl Drop for RdBackend {
    fn drop(&mut self) {
        let Some(mut rd) = main_device() else { return };
        self.drop_sets(&mut rd);
        if let Some(changes) = self.tile_changes.take() {
            changes.free(&mut rd);
        }
        let lists = [self.water_edits.buffer, self.forcing.buffer, self.terrain_edits.buffer, self.tile_list.buffer, self.displaced_list.buffer, self.nudge_list.buffer, self.overwrite_list.buffer];
        let fields = [self.uniforms, self.terrain, self.step_terrain, self.displacement, self.depth[0], self.depth[1], self.flux[0], self.flux[1], self.counters, self.stats, self.gathered];
        let sleeping = [self.tile_params, self.tile_flags[0], self.tile_flags[1], self.awake_lists[0], self.awake_lists[1], self.tile_wakes, self.sleep_stats, self.tile_stale, self.tile_totals];
        let pipelines: Vec<Rid> = self.pipelines.iter().flat_map(|p| [p.pipeline, p.shader]).collect();
        free_all(&mut rd, pipelines.into_iter().chain(lists).chain(fields).chain(sleeping).chain([self.height_texture, self.flow_texture]).chain(self.cooling));
    }
}

impl Backend for RdBackend {
    pipewater_core::gpu_backend_methods!();

    fn kind(&self) -> BackendKind {
        BackendKind::EngineGpu
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn restore_rows(&mut self, state: &State, rows: std::ops::Range<u32>) -> Result<bool> {
        let mut rd = self.check_device()?;
        self.host.check_grid(state, "restored grid")?;
        let w = state.grid.width as usize;
        let cells = rows.start as usize * w..(rows.end as usize * w).min(state.terrain.len());
        let at = |bytes_per_cell: usize| (cells.start * bytes_per_cell) as u32;
        // Into copy 0, where `upload` puts a whole state: `finish_restore` makes it current.
        update_at(&mut rd, self.terrain, at(4), bytemuck::cast_slice(&state.terrain[cells.clone()]));
        update_at(&mut rd, self.step_terrain, at(4), bytemuck::cast_slice(&state.terrain[cells.clone()]));
        update_at(&mut rd, self.displacement, at(4), bytemuck::cast_slice(&vec![0.0f32; cells.len()]));
        update_at(&mut rd, self.depth[0], at(4), bytemuck::cast_slice(&state.depth[cells.clone()]));
        update_at(&mut rd, self.flux[0], at(16), bytemuck::cast_slice(&state.flow[cells]));
        Ok(true)
    }

    fn finish_restore(&mut self, restored: &pipewater_core::backend::RestoredState, rows_written: bool) -> Result<()> {
        let point = &restored.point;
        if !rows_written {
            return self.restore(&point.state, point.counters, point.frame);
        }
        let mut rd = self.check_device()?;
        update(&mut rd, self.counters, bytemuck::cast_slice(&point.counters.to_device_words()));
        // What `upload` does after the fields, with the snapshot and recovery point made on the
        // worker that decoded the save.
        self.host.loaded_restored(restored);
        self.start_from_loaded_state(&mut rd)
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        let mut rd = self.check_device()?;
        self.host.new_terrain(terrain)?;
        update(&mut rd, self.terrain, bytemuck::cast_slice(terrain));
        update(&mut rd, self.step_terrain, bytemuck::cast_slice(terrain));
        Ok(())
    }

    fn advance(&mut self, plan: &FramePlan) -> Result<()> {
        self.check_device()?;
        self.host.check_plan(plan)?;
        self.harvest();
        self.record_frame(plan)
    }

    /// The judge and the change of `cooling.wgsl` over the current copy, in a compute list of
    /// their own after the frame's (whose reads were issued before it), the edits queued so far
    /// first; the quanta turned are counted on the device with the other counters.
    fn solidify(&mut self, c: &StepConstants, quanta: i32) -> Result<bool> {
        let mut rd = self.check_device()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let cooling = match self.cooling {
            Some(rid) => rid,
            None => {
                let rid = rd.storage_buffer_create((4 + 4 * self.host.grid.cell_count()) as u32);
                if !rid.is_valid() {
                    return Err(Error::Gpu(format!("Godot could not allocate the cooling buffer of a {}x{} grid", c.width, c.height)));
                }
                self.cooling = Some(rid);
                rid
            }
        };
        update(&mut rd, self.uniforms, bytemuck::bytes_of(c));
        update(&mut rd, cooling, bytemuck::bytes_of(&quanta));
        let groups = [c.width.div_ceil(COOLING_WORKGROUP), c.height.div_ceil(COOLING_WORKGROUP)];
        let list = rd.compute_list_begin();
        let recorded = self.dispatch(&mut rd, list, ENTRY_JUDGE_COOLING, WaterList::User, groups).and_then(|()| self.dispatch(&mut rd, list, ENTRY_APPLY_COOLING, WaterList::User, groups));
        rd.compute_list_end();
        recorded?;
        Ok(true)
    }

    fn overwrite_cells(&mut self, cells: &[pipewater_core::simulation::CellOverwrite]) -> Result<bool> {
        self.overwrite_cells_now(cells)
    }

    fn reset_tile_changes(&mut self, tiles: &pipewater_core::backend::sleep::TileGrid) -> Result<bool> {
        self.reset_tile_changes_now(tiles)
    }

    fn begin_tile_changes(&mut self, tiles: &pipewater_core::backend::sleep::TileGrid, request: &pipewater_core::backend::TileRequest) -> Result<Option<pipewater_core::backend::TileChangesReader>> {
        self.begin_tile_changes_now(tiles, request)
    }

    fn last_readback_bytes(&self) -> u64 {
        self.last_read_bytes as u64
    }

    /// Godot cannot be asked to lose its device: the backend counts it as lost from now on.
    fn simulate_device_loss(&mut self) -> bool {
        self.lost = Some("simulate_device_loss() was called".into());
        true
    }

    // ---- Detail waves: everything in `detail.rs`. ----

    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = None;
        if let Some(layout) = layout {
            self.detail = Some(detail::RdDetail::new(&mut device()?, layout)?);
        }
        Ok(())
    }

    fn detail_device_texture(&self) -> Option<u64> {
        self.detail.as_ref().map(|d| d.texture().to_u64())
    }

    fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        self.check_device()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        match &self.detail {
            Some(detail) => detail.read_fields(&mut device()?),
            None => Err(Error::invalid("detail waves", "off", "on (configure_detail)")),
        }
    }
}
