//! The GPU backend on Godot's own RenderingDevice: the wgpu backend's WGSL (translated to
//! SPIR-V by [`spirv`]) recorded into compute lists on the main rendering device, which Godot
//! submits with the frame.
//!
//! * Fields live in RD storage buffers, laid out as in the wgpu backend: terrain (`f32`), depth
//!   (`i32` quanta) and flux (`vec4<f32>`), depth and flux twice for the fused step's ping-pong.
//! * Each frame records the queued edits, every substep (forcing, fused step) and the `images`
//!   pass, which writes `height_texture` and `flux_texture` as RD textures that the node hands to
//!   materials through `Texture2DRD`: nothing crosses to the host for rendering.
//! * Queries read a host snapshot whose cells are filled in tile by tile ([`tiles`]): the `gather`
//!   pass computes the tiles queries touched recently, behind the ledger and totals, into one
//!   small buffer that is read back. With Godot 4.4+ that read is asynchronous
//!   (`buffer_get_data_async`, looked up at runtime) and lands `frame latency` frames later; Godot
//!   4.3 has only `buffer_get_data`, which waits for the GPU, so there the read happens at once
//!   and costs a wait for the frame's GPU work. Before a tile's first read arrives, queries on it
//!   answer from the state the backend was loaded with.
//! * Everything runs on the render thread, which is the main thread under Godot's default
//!   thread model; the node checks that before choosing this backend.

pub mod detail;
pub mod spirv;
pub mod textures;
pub mod tiles;

use godot::classes::rendering_device::{DataFormat, ShaderStage, TextureType, TextureUsageBits, UniformType};
use godot::classes::{RdShaderSpirv, RdTextureFormat, RdTextureView, RdUniform, RenderingDevice, RenderingServer};
use godot::prelude::*;
use parking_lot::Mutex;
use pipewater_core::backend::gpu::{EDIT_WORKGROUP, SNAPSHOT_WORKGROUP};
use pipewater_core::backend::step_kernel::{ColumnKernel, StepMode};
use pipewater_core::detail::{DetailFrame, DetailLayout};
use pipewater_core::backend::{Backend, BackendKind, BodyQueue, CellDisplacement, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use pipewater_core::pipes::StepConstants;
use pipewater_core::state::{check_terrain, Counters, Snapshot, State};
use pipewater_core::{Error, Grid, Params, Result};
use spirv::{BindingKind, Program};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tiles::{Header, TileRequests, MAX_TILES_PER_READ};

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
    main_device().ok_or_else(|| Error::Gpu("Godot's RenderingDevice is gone".into()))
}

fn bytes_of(data: &[u8]) -> PackedByteArray {
    PackedByteArray::from(data)
}

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

/// A list of edits or tiles on the device: `[count, 0, items…]`, grown by powers of two. The
/// header is padded to `header_bytes` (16-byte items start 16 bytes in, as WGSL aligns them).
struct List {
    buffer: Rid,
    capacity_bytes: usize,
    header_bytes: usize,
}

/// Which edit list a water-edit pass reads.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum WaterList {
    User,
    Forcing,
}

/// The RenderingDevice backend.
pub struct RdBackend {
    grid: Grid,
    /// Constants of the last frame (the grid's defaults before the first).
    constants: StepConstants,
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
    current: usize,
    counters: Rid,
    stats: Rid,
    height_texture: Rid,
    flow_texture: Rid,
    water_edits: List,
    forcing: List,
    terrain_edits: List,
    tile_list: List,
    displaced_list: List,
    nudge_list: List,
    bodies: BodyQueue,
    gathered: Rid,
    /// Uniform sets by (entry point, set, current copy, water list).
    sets: HashMap<(usize, u32, usize, WaterList), Rid>,
    pending_water: Vec<CellWater>,
    pending_terrain: Vec<CellTerrain>,
    requests: TileRequests,
    latest: Arc<Snapshot>,
    frames: u64,
    epoch: u64,
    /// `buffer_get_data_async` exists (Godot 4.4+).
    async_reads: bool,
    /// Reads issued and not yet arrived: (frame, epoch, tiles).
    in_flight: VecDeque<(u64, u64, Vec<u32>)>,
    /// Reads arrived from Godot's callbacks: (frame, bytes).
    arrived: Arc<Mutex<Vec<(u64, Vec<u8>)>>>,
    /// Bytes read back by the last frame.
    last_read_bytes: usize,
    description: String,
    /// The detail wave layer, when it is on (`detail.rs`).
    detail: Option<detail::RdDetail>,
}

// Indices of spirv::ENTRY_POINTS in `pipelines`; step pipelines follow them, one per mode met.
const ENTRY_WATER: usize = 0;
const ENTRY_TERRAIN: usize = 1;
const ENTRY_IMAGES: usize = 2;
const ENTRY_GATHER: usize = 3;
const ENTRY_REFRESH: usize = 4;
const ENTRY_DISPLACE: usize = 5;
const ENTRY_NUDGE: usize = 6;

impl RdBackend {
    /// Compiles the shaders on Godot's main rendering device and uploads `state`.
    pub fn new(state: &State) -> Result<Self> {
        if let Some(why) = unavailable_reason() {
            return Err(Error::GpuUnavailable(why));
        }
        let mut rd = device()?;
        use godot::classes::rendering_device::Limit;
        let limit = |rd: &Gd<RenderingDevice>, which: Limit| rd.limit_get(which).min(u32::MAX as u64) as u32;
        let kernel = ColumnKernel::for_limits(
            limit(&rd, Limit::MAX_COMPUTE_SHARED_MEMORY_SIZE),
            limit(&rd, Limit::MAX_COMPUTE_WORKGROUP_INVOCATIONS),
            limit(&rd, Limit::MAX_COMPUTE_WORKGROUP_SIZE_X),
        )
        .ok_or_else(|| Error::GpuUnavailable("the RenderingDevice allows too little workgroup memory for the step".into()))?;
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
        let limit = rd.limit_get(godot::classes::rendering_device::Limit::MAX_TEXTURE_SIZE_2D);
        if (grid.width.max(grid.height) as u64) > limit {
            free_all(&mut rd, pipelines.iter().flat_map(|p| [p.pipeline, p.shader]));
            return Err(Error::Gpu(format!("a {}x{} grid exceeds the device's largest 2D texture ({limit})", grid.width, grid.height)));
        }
        let storage = |rd: &mut Gd<RenderingDevice>, bytes: usize| rd.storage_buffer_create(bytes.max(16) as u32);
        let uniforms = rd.uniform_buffer_create(std::mem::size_of::<StepConstants>() as u32);
        let terrain = storage(&mut rd, n * 4);
        let step_terrain = storage(&mut rd, n * 4);
        let displacement = storage(&mut rd, n * 4);
        let depth = [storage(&mut rd, n * 4), storage(&mut rd, n * 4)];
        let flux = [storage(&mut rd, n * 16), storage(&mut rd, n * 16)];
        let counters = storage(&mut rd, 32);
        let stats = storage(&mut rd, 16);
        let height_texture = texture(&mut rd, grid);
        let flow_texture = texture(&mut rd, grid);
        let gathered = storage(&mut rd, TileRequests::readback_bytes(MAX_TILES_PER_READ));
        let list = |rd: &mut Gd<RenderingDevice>, capacity_bytes: usize| List { buffer: storage(rd, capacity_bytes), capacity_bytes, header_bytes: 8 };
        let async_reads = rd.has_method("buffer_get_data_async");
        let description = format!("RenderingDevice: {} ({})", rd.get_device_name(), rd.get_device_vendor_name());
        let mut backend = RdBackend {
            grid,
            constants: StepConstants::new(&Params::default(), grid.width, grid.height, grid.cell_size, 0.0, [0; 4]),
            uniforms,
            terrain,
            depth,
            flux,
            current: 0,
            counters,
            stats,
            height_texture,
            flow_texture,
            water_edits: list(&mut rd, 8 + 8 * 64),
            forcing: list(&mut rd, 8 + 8 * 64),
            terrain_edits: list(&mut rd, 8 + 8 * 64),
            tile_list: list(&mut rd, 8 + 4 * MAX_TILES_PER_READ),
            displaced_list: list(&mut rd, 8 + 8 * 64),
            nudge_list: List { header_bytes: 16, ..list(&mut rd, 16 + 16 * 64) },
            bodies: BodyQueue::default(),
            step_terrain,
            displacement,
            gathered,
            pipelines,
            kernel,
            step_entries: HashMap::new(),
            sets: HashMap::new(),
            pending_water: Vec::new(),
            pending_terrain: Vec::new(),
            requests: TileRequests::new(grid),
            latest: Arc::new(state.snapshot(0, Counters::default())),
            frames: 0,
            epoch: 0,
            async_reads,
            in_flight: VecDeque::new(),
            arrived: Arc::new(Mutex::new(Vec::new())),
            last_read_bytes: 0,
            description,
            detail: None,
        };
        let made = [backend.uniforms, backend.terrain, backend.step_terrain, backend.displacement, backend.counters, backend.stats, backend.gathered, backend.height_texture, backend.flow_texture];
        if made.iter().chain(&backend.depth).chain(&backend.flux).any(|r| !r.is_valid()) {
            return Err(Error::Gpu(format!("Godot could not allocate the fields of a {}x{} grid", grid.width, grid.height)));
        }
        backend.upload(state, Counters::default(), 0)?;
        Ok(backend)
    }

    /// The RD textures the `images` pass writes: (height, flux), in the documented layouts.
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
        self.current = 0;
        update(&mut rd, self.terrain, bytemuck::cast_slice(&state.terrain));
        update(&mut rd, self.step_terrain, bytemuck::cast_slice(&state.terrain));
        update(&mut rd, self.displacement, bytemuck::cast_slice(&vec![0.0f32; state.terrain.len()]));
        self.bodies.clear();
        update(&mut rd, self.depth[0], bytemuck::cast_slice(&state.depth));
        update(&mut rd, self.flux[0], bytemuck::cast_slice(&state.flow));
        let words: Vec<u32> = [counters.added, counters.removed, counters.boundary_in, counters.boundary_out]
            .iter()
            .flat_map(|&c| [c as u32, (c >> 32) as u32])
            .collect();
        update(&mut rd, self.counters, bytemuck::cast_slice(&words));
        self.frames = frames;
        self.pending_water.clear();
        self.pending_terrain.clear();
        self.epoch += 1;
        self.in_flight.clear();
        self.arrived.lock().clear();
        self.latest = Arc::new(state.snapshot(self.frames, counters));
        if let Some(detail) = &mut self.detail {
            detail.clear(&mut rd);
        }
        // Draw the loaded state into the textures at once: an editor that does not simulate, or a
        // paused game, shows it without ever stepping.
        let constants = self.constants;
        self.record_frame(&constants, 0, &[])
    }

    /// Uploads `items` into `list`, replacing its buffer when it is too small (which invalidates
    /// the uniform sets that name it).
    fn fill_list(&mut self, which: ListId, items: &[u8], count: usize) -> Result<()> {
        let mut rd = device()?;
        let header = self.list_mut(which).header_bytes;
        let needed = header + items.len();
        let list = self.list_mut(which);
        if needed > list.capacity_bytes {
            let capacity_bytes = needed.next_power_of_two();
            let old = list.buffer;
            list.buffer = rd.storage_buffer_create(capacity_bytes as u32);
            list.capacity_bytes = capacity_bytes;
            self.drop_sets(&mut rd);
            rd.free_rid(old);
        }
        let mut bytes = Vec::with_capacity(needed);
        bytes.extend_from_slice(&(count as u32).to_le_bytes());
        bytes.resize(header, 0);
        bytes.extend_from_slice(items);
        update(&mut rd, self.list_mut(which).buffer, &bytes);
        Ok(())
    }

    fn list_mut(&mut self, which: ListId) -> &mut List {
        match which {
            ListId::Water => &mut self.water_edits,
            ListId::Forcing => &mut self.forcing,
            ListId::Terrain => &mut self.terrain_edits,
            ListId::Tiles => &mut self.tile_list,
            ListId::Displaced => &mut self.displaced_list,
            ListId::Nudges => &mut self.nudge_list,
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
            _ => return None,
        })
    }

    /// The uniform set `set` of entry point `entry`, created on first use.
    fn uniform_set(&mut self, rd: &mut Gd<RenderingDevice>, entry: usize, set: u32, water: WaterList) -> Result<Rid> {
        let key = (entry, set, self.current, water);
        if let Some(&rid) = self.sets.get(&key) {
            return Ok(rid);
        }
        let pipeline = &self.pipelines[entry];
        let mut uniforms: Array<Gd<RdUniform>> = Array::new();
        for b in pipeline.program.bindings.iter().filter(|b| b.set == set) {
            let rid = self
                .resource(&b.name, self.current, water)
                .ok_or_else(|| Error::Gpu(format!("`{}` binds `{}`, which the RenderingDevice backend does not have", pipeline.program.entry_point, b.name)))?;
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
        let rid = rd.uniform_set_create(&uniforms, pipeline.shader, set);
        if !rid.is_valid() {
            return Err(Error::Gpu(format!("Godot refused the uniform set {set} of `{}`", pipeline.program.entry_point)));
        }
        self.sets.insert(key, rid);
        Ok(rid)
    }

    /// Binds entry point `entry` with all its sets and dispatches it.
    fn dispatch(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, entry: usize, water: WaterList, groups: [u32; 2]) -> Result<()> {
        rd.compute_list_bind_compute_pipeline(list, self.pipelines[entry].pipeline);
        for set in self.pipelines[entry].program.sets() {
            let rid = self.uniform_set(rd, entry, set, water)?;
            rd.compute_list_bind_uniform_set(list, rid, set);
        }
        rd.compute_list_dispatch(list, groups[0].max(1), groups[1].max(1), 1);
        rd.compute_list_add_barrier(list);
        Ok(())
    }

    fn edit_groups(count: usize) -> [u32; 2] {
        [(count as u32).div_ceil(EDIT_WORKGROUP).clamp(1, 65535), 1]
    }

    /// Records the queued edits, `substeps` steps with `forcing`, and the outputs, into one
    /// compute list; then issues the small readback.
    fn record_frame(&mut self, constants: &StepConstants, substeps: u32, forcing: &[CellWater]) -> Result<()> {
        let mut rd = device()?;
        self.constants = *constants;
        update(&mut rd, self.uniforms, bytemuck::bytes_of(constants));
        let edits = self.upload_edits()?;
        let forcing = if substeps > 0 { forcing } else { &[] };
        if !forcing.is_empty() {
            self.fill_list(ListId::Forcing, bytemuck::cast_slice(forcing), forcing.len())?;
        }
        let tiles = self.requests.to_read(self.frames + 1);
        self.fill_list(ListId::Tiles, bytemuck::cast_slice(&tiles), tiles.len())?;
        rd.buffer_clear(self.stats, 0, 16);

        let g = self.grid;
        let list = rd.compute_list_begin();
        let result = (|| -> Result<()> {
            self.record_edits(&mut rd, list, edits)?;
            let step = if substeps > 0 { self.step_entry(&mut rd, StepMode::of(constants))? } else { 0 };
            let bands = self.kernel.dispatch(g.width, g.height);
            for _ in 0..substeps {
                if !forcing.is_empty() {
                    self.dispatch(&mut rd, list, ENTRY_WATER, WaterList::Forcing, Self::edit_groups(forcing.len()))?;
                }
                self.dispatch(&mut rd, list, step, WaterList::User, bands)?;
                self.current = 1 - self.current;
            }
            let snapshot = [g.width.div_ceil(SNAPSHOT_WORKGROUP), g.height.div_ceil(SNAPSHOT_WORKGROUP)];
            self.dispatch(&mut rd, list, ENTRY_IMAGES, WaterList::User, snapshot)?;
            self.dispatch(&mut rd, list, ENTRY_GATHER, WaterList::User, [(tiles.len() as u32).max(1), 1])?;
            Ok(())
        })();
        rd.compute_list_end();
        result?;
        self.frames += 1;
        self.read_back(&mut rd, tiles);
        // The detail waves: a compute list of their own, over the fields the steps left.
        if let Some(detail) = &mut self.detail {
            let k = self.current;
            detail.run(&mut rd, detail::FlowFields { constants: self.uniforms, terrain: self.terrain, depth: self.depth[k], flux: self.flux[k], copy: k })?;
        }
        Ok(())
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
    fn read_back(&mut self, rd: &mut Gd<RenderingDevice>, tiles: Vec<u32>) {
        let size = TileRequests::readback_bytes(tiles.len());
        self.last_read_bytes = size;
        let (frame, epoch) = (self.frames, self.epoch);
        if self.async_reads {
            let arrived = self.arrived.clone();
            let callback = Callable::from_fn("pipewater_readback", move |args: &[&Variant]| {
                if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                    arrived.lock().push((frame, bytes.to_vec()));
                }
            });
            let error = rd.call("buffer_get_data_async", &[self.gathered.to_variant(), callable_variant(&callback), 0.to_variant(), (size as i64).to_variant()]);
            if error.try_to::<i64>().unwrap_or(1) == 0 {
                self.in_flight.push_back((frame, epoch, tiles));
            }
        } else {
            let bytes = rd.buffer_get_data_ex(self.gathered).offset_bytes(0).size_bytes(size as u32).done();
            self.in_flight.push_back((frame, epoch, tiles));
            self.arrived.lock().push((frame, bytes.to_vec()));
            self.harvest();
        }
    }

    /// Applies the reads that have arrived, oldest first.
    fn harvest(&mut self) {
        let mut arrived = std::mem::take(&mut *self.arrived.lock());
        arrived.sort_by_key(|(frame, _)| *frame);
        for (frame, bytes) in arrived {
            while self.in_flight.front().is_some_and(|(f, _, _)| *f < frame) {
                self.in_flight.pop_front();
            }
            let Some((f, epoch, tiles)) = self.in_flight.pop_front() else { continue };
            if f != frame || epoch != self.epoch {
                continue;
            }
            let snapshot = Arc::make_mut(&mut self.latest);
            if let Some(Header { counters, total_quanta, max_speed, max_depth }) = self.requests.apply(&tiles, &bytes, snapshot) {
                snapshot.sequence = frame;
                snapshot.counters = counters;
                snapshot.total_quanta = total_quanta;
                snapshot.max_speed = max_speed;
                snapshot.max_depth = max_depth;
            }
        }
    }

    /// Applies the queued edits on their own, before a blocking read.
    fn flush_edits(&mut self) -> Result<()> {
        if self.pending_water.is_empty() && self.pending_terrain.is_empty() && self.bodies.is_empty() {
            return Ok(());
        }
        let mut rd = device()?;
        let edits = self.upload_edits()?;
        let list = rd.compute_list_begin();
        let result = self.record_edits(&mut rd, list, edits);
        rd.compute_list_end();
        result
    }

    /// Moves the queued water and terrain edits, displacement and nudges into their device
    /// lists; returns how many of each the next [`RdBackend::record_edits`] applies.
    fn upload_edits(&mut self) -> Result<Edits> {
        let water = std::mem::take(&mut self.pending_water);
        let terrain = std::mem::take(&mut self.pending_terrain);
        let displaced = std::mem::take(&mut self.bodies.displacement);
        let nudges = std::mem::take(&mut self.bodies.nudges);
        if !water.is_empty() {
            self.fill_list(ListId::Water, bytemuck::cast_slice(&water), water.len())?;
        }
        if !terrain.is_empty() {
            self.fill_list(ListId::Terrain, bytemuck::cast_slice(&terrain), terrain.len())?;
        }
        if !displaced.is_empty() {
            self.fill_list(ListId::Displaced, bytemuck::cast_slice(&displaced), displaced.len())?;
        }
        if !nudges.is_empty() {
            self.fill_list(ListId::Nudges, bytemuck::cast_slice(&nudges), nudges.len())?;
        }
        Ok(Edits { water: water.len(), terrain: terrain.len(), displaced: displaced.len(), nudges: nudges.len() })
    }

    /// Records the uploaded edits into `list` in the wgpu backend's order: terrain, water, the
    /// step's bed where terrain changed, the bodies' displacement, their drag.
    fn record_edits(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, edits: Edits) -> Result<()> {
        let passes = [
            (edits.terrain, ENTRY_TERRAIN),
            (edits.water, ENTRY_WATER),
            (edits.terrain, ENTRY_REFRESH),
            (edits.displaced, ENTRY_DISPLACE),
            (edits.nudges, ENTRY_NUDGE),
        ];
        for (count, entry) in passes {
            if count > 0 {
                self.dispatch(rd, list, entry, WaterList::User, Self::edit_groups(count))?;
            }
        }
        Ok(())
    }

    /// Reads a whole buffer, waiting for the GPU.
    fn read_buffer(&mut self, buffer: Rid, bytes: usize) -> Result<Vec<u8>> {
        self.flush_edits()?;
        let mut rd = device()?;
        let data = rd.buffer_get_data_ex(buffer).offset_bytes(0).size_bytes(bytes as u32).done();
        if data.len() != bytes {
            return Err(Error::Gpu(format!("reading a {bytes}-byte buffer back returned {} bytes", data.len())));
        }
        Ok(data.to_vec())
    }
}

#[derive(Clone, Copy)]
enum ListId {
    Water,
    Forcing,
    Terrain,
    Tiles,
    Displaced,
    Nudges,
}

/// How many entries of each list the next recorded edits apply.
#[derive(Clone, Copy)]
struct Edits {
    water: usize,
    terrain: usize,
    displaced: usize,
    nudges: usize,
}

fn callable_variant(c: &Callable) -> Variant {
    c.to_variant()
}

fn update(rd: &mut Gd<RenderingDevice>, buffer: Rid, bytes: &[u8]) {
    if !bytes.is_empty() {
        rd.buffer_update(buffer, 0, bytes.len() as u32, &bytes_of(bytes));
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
        let lists = [self.water_edits.buffer, self.forcing.buffer, self.terrain_edits.buffer, self.tile_list.buffer, self.displaced_list.buffer, self.nudge_list.buffer];
        let fields = [self.uniforms, self.terrain, self.step_terrain, self.displacement, self.depth[0], self.depth[1], self.flux[0], self.flux[1], self.counters, self.stats, self.gathered];
        let pipelines: Vec<Rid> = self.pipelines.iter().flat_map(|p| [p.pipeline, p.shader]).collect();
        free_all(&mut rd, pipelines.into_iter().chain(lists).chain(fields).chain([self.height_texture, self.flow_texture]));
    }
}

impl Backend for RdBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::EngineGpu
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn load(&mut self, state: &State) -> Result<()> {
        if state.grid != self.grid {
            return Err(Error::invalid("state grid", format!("{:?}", state.grid), format!("{:?} (the RenderingDevice backend keeps its grid)", self.grid)));
        }
        self.upload(state, Counters::default(), 0)
    }

    fn restore(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        if state.grid != self.grid {
            return Err(Error::invalid("restored grid", format!("{:?}", state.grid), format!("{:?}", self.grid)));
        }
        self.upload(state, counters, frames)
    }

    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome> {
        self.pending_water.extend_from_slice(cells);
        Ok(EditOutcome::Queued)
    }

    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        self.pending_terrain.extend(cells.iter().filter(|c| c.delta.is_finite()));
        Ok(())
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        check_terrain(&self.grid, terrain)?;
        self.pending_terrain.clear();
        let mut rd = device()?;
        update(&mut rd, self.terrain, bytemuck::cast_slice(terrain));
        update(&mut rd, self.step_terrain, bytemuck::cast_slice(terrain));
        // The displaced cells' bed is the new terrain plus their head again.
        self.bodies.restore_heads();
        Ok(())
    }

    fn set_displacement(&mut self, cells: &[CellDisplacement]) -> Result<()> {
        self.bodies.set_displacement(cells, self.grid.cell_count())
    }

    fn nudge_pipes(&mut self, nudges: &[PipeNudge]) -> Result<()> {
        if self.bodies.nudge(nudges, self.grid.cell_count())? {
            self.flush_edits()?;
        }
        self.bodies.nudges.extend_from_slice(nudges);
        Ok(())
    }

    fn advance(&mut self, plan: &FramePlan) -> Result<()> {
        let g = self.grid;
        if plan.constants.width != g.width || plan.constants.height != g.height {
            return Err(Error::invalid("plan grid", format!("{}x{}", plan.constants.width, plan.constants.height), format!("{}x{}", g.width, g.height)));
        }
        self.harvest();
        self.record_frame(&plan.constants, plan.substeps, plan.forcing)
    }

    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        self.harvest();
        Some(self.latest.clone())
    }

    fn read_state(&mut self) -> Result<State> {
        let n = self.grid.cell_count();
        let (terrain, depth, flux) = (self.terrain, self.depth[self.current], self.flux[self.current]);
        let terrain = self.read_buffer(terrain, n * 4)?;
        let depth = self.read_buffer(depth, n * 4)?;
        let flux = self.read_buffer(flux, n * 16)?;
        Ok(State {
            grid: self.grid,
            terrain: bytemuck::pod_collect_to_vec(&terrain),
            depth: bytemuck::pod_collect_to_vec(&depth),
            flow: bytemuck::pod_collect_to_vec(&flux),
        })
    }

    fn read_counters(&mut self) -> Result<Counters> {
        let counters = self.counters;
        let bytes = self.read_buffer(counters, 32)?;
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let wide = |k: usize| words[k] as u64 | (words[k + 1] as u64) << 32;
        Ok(Counters { added: wide(0), removed: wide(2), boundary_in: wide(4), boundary_out: wide(6) })
    }

    fn want_cells(&mut self, cells: &[usize]) {
        self.requests.want(cells, self.grid.width, self.frames);
    }

    fn last_readback_bytes(&self) -> u64 {
        self.last_read_bytes as u64
    }

    // ---- Detail waves: everything in `detail.rs`. ----

    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = None;
        if let Some(layout) = layout {
            self.detail = Some(detail::RdDetail::new(&mut device()?, layout)?);
        }
        Ok(())
    }

    fn queue_detail(&mut self, frame: DetailFrame) -> Result<()> {
        if let Some(detail) = &mut self.detail {
            detail.queue(frame);
        }
        Ok(())
    }

    fn detail_heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        self.detail.as_mut().map_or_else(|| vec![0.0; cells.len()], |d| d.heights(cells))
    }

    fn detail_device_texture(&self) -> Option<u64> {
        self.detail.as_ref().map(|d| d.texture().to_u64())
    }

    fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        self.flush_edits()?;
        match &self.detail {
            Some(detail) => detail.read_fields(&mut device()?),
            None => Err(Error::invalid("detail waves", "off", "on (configure_detail)")),
        }
    }
}
