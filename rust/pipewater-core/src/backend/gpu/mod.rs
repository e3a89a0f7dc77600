//! The wgpu backend: the step of [`crate::pipes`] as WGSL compute passes over storage buffers.
//!
//! * Fields live on the device: terrain (`f32`), depth (`i32` quanta) and the pipes' stored
//!   flows (`vec4<f32>` per cell: E, S, SE, SW). Depth and pipes exist twice and ping-pong:
//!   the step (`shaders/step_columns.wgsl`, one pass per step, its pipeline specialised for the
//!   model's mode, see [`crate::backend::step_kernel`]) reads one copy while it writes the
//!   other.
//! * Each pipe is written by the one invocation of the cell that owns it, and both cells of a
//!   pipe compute the same whole number of quanta from the same inputs, so mass is exact here
//!   too: ledger counters are 64-bit integers kept with 32-bit atomics and a carry.
//! * [`Backend::advance`] records every substep of a frame (forcing, the step) and the
//!   snapshot pass into one command buffer and submits it once. Edits are
//!   queued as cell lists and applied by a pass at the start of the next submission; the grid is
//!   uploaded only by `load` and `set_terrain`.
//! * Readback is asynchronous: the snapshot pass writes the height and flow texels, the
//!   totals and the CFL extremes; they are copied with the ledger into one of two staging
//!   buffers, mapped with `map_async`, and picked up by [`Backend::snapshot`] without waiting.
//!   See [`GPU_SNAPSHOT_LATENCY`].
//! * All simulations of a process share one device ([`GpuContext::shared`]).

mod context;
pub mod detail;
pub mod shaders;

pub use context::{GpuContext, EDIT_WORKGROUP, SNAPSHOT_WORKGROUP};

use super::step_kernel::StepMode;
use crate::detail::{DetailFrame, DetailLayout, DetailTexels};
use super::{Backend, BackendKind, BodyQueue, CellDisplacement, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::params::Params;
use crate::pipes::StepConstants;
use crate::state::{check_terrain, copy_in_parallel, Counters, Snapshot, SpareSnapshots, State};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Most frames submitted and not yet finished on the device. `advance` waits for the frame this
/// many submissions back before submitting another, so a device slower than the frame rate
/// cannot build an ever longer queue (and an ever older snapshot).
pub const MAX_FRAMES_IN_FLIGHT: usize = 2;

/// Frames between an `advance` and the snapshot that shows it: 0 when the device has finished
/// the frame by the time `snapshot` is called (small grids, fast devices), at most
/// [`MAX_FRAMES_IN_FLIGHT`] otherwise; 1 is typical in a game loop that queries right after
/// advancing. `tests/gpu_readback.rs` measures it.
pub const GPU_SNAPSHOT_LATENCY: u32 = MAX_FRAMES_IN_FLIGHT as u32;

/// Bytes of the readback header: 4 ledger counters and 4 stats words (total lo/hi, largest
/// speed, largest depth).
const HEADER_BYTES: u64 = 48;


/// Longest `sync` waits for a readback's `map_async` callback after the device finished: it runs
/// on the thread that found the copy done, within microseconds unless that thread is busy with
/// callbacks of its own.
const READBACK_CALLBACK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

const SLOT_FREE: u32 = 0;
const SLOT_PENDING: u32 = 1;
const SLOT_READY: u32 = 2;
const SLOT_FAILED: u32 = 3;

/// One staging buffer of the readback ring.
struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU32>,
    /// Frame count the readback shows.
    sequence: u64,
    /// `load` generation it belongs to.
    epoch: u64,
}

/// A list of edits on the device: `[count, 0, items…]`, grown by powers of two. The header is
/// padded to the items' size (16-byte items start 16 bytes in, as WGSL aligns them).
struct EditList {
    buffer: wgpu::Buffer,
    capacity: usize,
    /// Bytes per item.
    item_bytes: usize,
}

impl EditList {
    fn new(device: &wgpu::Device, label: &str, capacity: usize, item_bytes: usize) -> Self {
        let capacity = capacity.max(16).next_power_of_two();
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (item_bytes.max(8) + item_bytes * capacity) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        EditList { buffer, capacity, item_bytes }
    }

    /// Uploads `items` (records of `item_bytes`); true when the buffer had to be replaced.
    fn upload(&mut self, ctx: &GpuContext, label: &str, items: &[u8]) -> bool {
        let count = items.len() / self.item_bytes;
        let grown = count > self.capacity;
        if grown {
            *self = EditList::new(&ctx.device, label, count, self.item_bytes);
        }
        let header = self.item_bytes.max(8);
        let mut bytes = Vec::with_capacity(header + items.len());
        bytes.extend_from_slice(&(count as u32).to_le_bytes());
        bytes.resize(header, 0);
        bytes.extend_from_slice(items);
        ctx.queue.write_buffer(&self.buffer, 0, &bytes);
        grown
    }
}

/// The GPU backend.
pub struct GpuBackend {
    ctx: Arc<GpuContext>,
    grid: Grid,
    constants: StepConstants,
    uniforms: wgpu::Buffer,
    terrain: wgpu::Buffer,
    /// The bed the step kernels read: terrain plus the displacement of bodies (bodies.wgsl).
    step_terrain: wgpu::Buffer,
    /// Pressure head of bodies per cell, m.
    displacement: wgpu::Buffer,
    displaced_list: EditList,
    nudge_list: EditList,
    /// Body passes' bind groups per current copy.
    body_groups: Option<[wgpu::BindGroup; 2]>,
    bodies: BodyQueue,
    /// Displacement entries and nudges uploaded for the next recorded edits.
    queued_bodies: (u32, u32),
    /// Depth and flux, twice: `current` indexes the copy that holds the state.
    depth: [wgpu::Buffer; 2],
    flux: [wgpu::Buffer; 2],
    current: usize,
    counters: wgpu::Buffer,
    stats: wgpu::Buffer,
    height_texels: wgpu::Buffer,
    flow_texels: wgpu::Buffer,
    /// Per current copy: the step (from that copy to the other), the snapshot.
    step_groups: [wgpu::BindGroup; 2],
    snapshot_groups: [wgpu::BindGroup; 2],
    water_edits: EditList,
    forcing: EditList,
    terrain_edits: EditList,
    /// Edit passes' bind groups per current copy: (user water edits, terrain edits) and
    /// (forcing, terrain edits).
    edit_groups: Option<[[wgpu::BindGroup; 2]; 2]>,
    pending_water: Vec<CellWater>,
    pending_terrain: Vec<CellTerrain>,
    slots: Vec<Slot>,
    in_flight: VecDeque<wgpu::SubmissionIndex>,
    /// Whether `snapshot` was asked for since the last readback was issued.
    wanted: bool,
    frames: u64,
    epoch: u64,
    latest: Option<Arc<Snapshot>>,
    spares: SpareSnapshots,
    /// Bytes the last frame's readback copies to the host.
    readback_bytes: u64,
    /// The detail wave layer, when it is on (`detail.rs`).
    detail: Option<detail::GpuDetail>,
}

impl GpuBackend {
    /// Creates the backend on the process-wide device and uploads `state`.
    pub fn new(state: &State) -> Result<Self> {
        let ctx = GpuContext::shared()?;
        ctx.check()?;
        let grid = state.grid;
        let n = grid.cell_count() as u64;
        let largest = n * 16;
        let limits = &ctx.limits;
        let staging_bytes = HEADER_BYTES + 32 * n;
        if largest > limits.max_storage_buffer_binding_size || staging_bytes > limits.max_buffer_size {
            return Err(Error::Gpu(format!(
                "a {}x{} grid needs {largest}-byte storage bindings and {staging_bytes}-byte buffers; {} allows {} and {}",
                grid.width, grid.height, ctx.adapter.name, limits.max_storage_buffer_binding_size, limits.max_buffer_size
            )));
        }
        let device = &ctx.device;
        use wgpu::BufferUsages as U;
        let field = |label: &str, bytes: u64, extra: U| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage: U::STORAGE | extra, mapped_at_creation: false })
        };
        let io = U::COPY_DST | U::COPY_SRC;
        let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step constants"),
            size: std::mem::size_of::<StepConstants>() as u64,
            usage: U::UNIFORM | U::COPY_DST,
            mapped_at_creation: false,
        });
        let terrain = field("terrain", n * 4, io);
        let step_terrain = field("step terrain", n * 4, U::COPY_DST);
        let displacement = field("displacement", n * 4, U::COPY_DST);
        let depth = [field("depth 0", n * 4, io), field("depth 1", n * 4, io)];
        let flux = [field("flux 0", n * 16, io), field("flux 1", n * 16, io)];
        let counters = field("ledger counters", 32, io);
        let stats = field("snapshot stats", 16, io);
        let height_texels = field("height texels", n * 16, U::COPY_SRC);
        let flow_texels = field("flow texels", n * 16, U::COPY_SRC);
        let group = |layout: &wgpu::BindGroupLayout, label: &str, buffers: &[&wgpu::Buffer]| {
            let entries: Vec<wgpu::BindGroupEntry> =
                buffers.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
        };
        let step_groups =
            [0, 1].map(|k| group(&ctx.step_layout, "step", &[&uniforms, &step_terrain, &depth[k], &flux[k], &depth[1 - k], &flux[1 - k], &counters]));
        let snapshot_groups =
            [0, 1].map(|k| group(&ctx.snapshot_layout, "snapshot", &[&uniforms, &terrain, &depth[k], &flux[k], &height_texels, &flow_texels, &stats]));
        let slots = (0..2)
            .map(|i| Slot {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("snapshot staging {i}")),
                    size: staging_bytes,
                    usage: U::MAP_READ | U::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU32::new(SLOT_FREE)),
                sequence: 0,
                epoch: 0,
            })
            .collect();
        let constants = StepConstants::new(&Params::default(), grid.width, grid.height, grid.cell_size, 0.0, [0; 4]);
        let mut backend = GpuBackend {
            water_edits: EditList::new(device, "water edits", 16, 8),
            forcing: EditList::new(device, "forcing", 16, 8),
            terrain_edits: EditList::new(device, "terrain edits", 16, 8),
            displaced_list: EditList::new(device, "displacement", 16, 8),
            nudge_list: EditList::new(device, "nudges", 16, 16),
            step_terrain,
            displacement,
            body_groups: None,
            bodies: BodyQueue::default(),
            queued_bodies: (0, 0),
            ctx: ctx.clone(),
            grid,
            constants,
            uniforms,
            terrain,
            depth,
            flux,
            current: 0,
            counters,
            stats,
            height_texels,
            flow_texels,
            step_groups,
            snapshot_groups,
            edit_groups: None,
            pending_water: Vec::new(),
            pending_terrain: Vec::new(),
            slots,
            in_flight: VecDeque::new(),
            wanted: false,
            frames: 0,
            epoch: 0,
            latest: None,
            spares: SpareSnapshots::default(),
            readback_bytes: 0,
            detail: None,
        };
        backend.upload(state, Counters::default(), 0)?;
        Ok(backend)
    }

    /// The shared context this backend runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Waits until the device has finished everything submitted so far, without reading
    /// anything back (benchmarks).
    pub fn wait_idle(&mut self) -> Result<()> {
        self.ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).map_err(|e| Error::Gpu(e.to_string()))?;
        self.in_flight.clear();
        self.ctx.check()
    }

    /// Waits until the device has finished everything submitted so far and until
    /// [`Backend::snapshot`] shows the last frame (tests).
    ///
    /// Contract: after `sync`, `snapshot()` returns the state, totals and ledger as of the end of
    /// the last `advance` (edits queued since then are not in it). Two things stand between a
    /// finished device and that snapshot, and `sync` waits out both:
    /// * the readback's `map_async` callback runs on whichever thread polls or submits to the
    ///   shared device first once the copy is done, after that thread's earlier callbacks; when
    ///   another simulation or thread got there first, the callback may not have run yet when
    ///   our own poll returns, so `sync` waits for the callbacks themselves;
    /// * the last frame may have no readback at all, when both staging buffers were busy at its
    ///   `advance`; then `sync` reads the snapshot back itself.
    pub fn sync(&mut self) -> Result<()> {
        self.wait_idle()?;
        self.wait_for_readbacks()?;
        self.harvest(true);
        if self.latest.as_ref().is_none_or(|s| s.sequence < self.frames) {
            self.read_back_snapshot()?;
        }
        Ok(())
    }

    /// Waits until no readback is pending: its copy done and its `map_async` callback run.
    fn wait_for_readbacks(&mut self) -> Result<()> {
        let start = std::time::Instant::now();
        while self.slots.iter().any(|s| s.state.load(Ordering::Acquire) == SLOT_PENDING) {
            // Our poll fires the callbacks it finds; one that another thread has taken runs
            // there, soon.
            self.ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).map_err(|e| Error::Gpu(e.to_string()))?;
            if start.elapsed() > READBACK_CALLBACK_WAIT {
                return Err(Error::Gpu(format!("a snapshot readback's map callback did not run within {READBACK_CALLBACK_WAIT:?} of the device finishing")));
            }
            std::thread::yield_now();
        }
        self.ctx.check()
    }

    /// Reads the current state's snapshot back now and waits for it (for `sync`, when the last
    /// frame had no readback).
    fn read_back_snapshot(&mut self) -> Result<()> {
        let Some(k) = self.slots.iter().position(|s| s.state.load(Ordering::Acquire) == SLOT_FREE) else {
            return Err(Error::Gpu("no staging buffer is free after every readback was picked up".into()));
        };
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("snapshot") });
        encoder.clear_buffer(&self.stats, 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("snapshot"), timestamp_writes: None });
            self.record_texels(&mut pass);
        }
        self.record_readback_copy(&mut encoder, k);
        self.ctx.queue.submit([encoder.finish()]);
        self.map_readback(k);
        self.wait_idle()?;
        self.wait_for_readbacks()?;
        self.harvest(true);
        self.wanted = false;
        match &self.latest {
            Some(s) if s.sequence == self.frames => Ok(()),
            _ => Err(Error::Gpu("the snapshot read back by sync did not arrive".into())),
        }
    }

    /// Records the snapshot pass over the current fields into `pass`.
    fn record_texels(&self, pass: &mut wgpu::ComputePass) {
        let g = self.grid;
        pass.set_pipeline(&self.ctx.texels);
        pass.set_bind_group(0, &self.snapshot_groups[self.current], &[]);
        pass.dispatch_workgroups(g.width.div_ceil(SNAPSHOT_WORKGROUP), g.height.div_ceil(SNAPSHOT_WORKGROUP), 1);
    }

    /// Records the copy of ledger, stats and texels into staging buffer `k`, which then shows
    /// the current frame.
    fn record_readback_copy(&mut self, encoder: &mut wgpu::CommandEncoder, k: usize) {
        let n16 = self.grid.cell_count() as u64 * 16;
        let slot = &mut self.slots[k];
        encoder.copy_buffer_to_buffer(&self.counters, 0, &slot.buffer, 0, 32);
        encoder.copy_buffer_to_buffer(&self.stats, 0, &slot.buffer, 32, 16);
        encoder.copy_buffer_to_buffer(&self.height_texels, 0, &slot.buffer, HEADER_BYTES, n16);
        encoder.copy_buffer_to_buffer(&self.flow_texels, 0, &slot.buffer, HEADER_BYTES + n16, n16);
        slot.sequence = self.frames;
        slot.epoch = self.epoch;
    }

    /// Maps staging buffer `k` once the submission that fills it is done.
    fn map_readback(&self, k: usize) {
        let slot = &self.slots[k];
        slot.state.store(SLOT_PENDING, Ordering::Release);
        let flag = slot.state.clone();
        slot.buffer.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
    }

    /// Replaces every field with `state`'s, the ledger with `counters` and the frame count with
    /// `frames`: the one full upload.
    fn upload(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        let q = &self.ctx.queue;
        q.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&self.constants));
        q.write_buffer(&self.terrain, 0, bytemuck::cast_slice(&state.terrain));
        q.write_buffer(&self.step_terrain, 0, bytemuck::cast_slice(&state.terrain));
        q.write_buffer(&self.displacement, 0, bytemuck::cast_slice(&vec![0.0f32; state.terrain.len()]));
        self.bodies.clear();
        self.current = 0;
        q.write_buffer(&self.depth[0], 0, bytemuck::cast_slice(&state.depth));
        q.write_buffer(&self.flux[0], 0, bytemuck::cast_slice(&state.flow));
        // Each counter is a u64 kept as (low, high) u32 words: its little-endian bytes.
        let words = [counters.added, counters.removed, counters.boundary_in, counters.boundary_out];
        q.write_buffer(&self.counters, 0, bytemuck::cast_slice(&words.map(u64::to_le)[..]));
        self.pending_water.clear();
        self.pending_terrain.clear();
        self.frames = frames;
        self.epoch += 1;
        // The first snapshot comes from the state itself, so queries work before any readback.
        self.latest = Some(Arc::new(state.snapshot(frames, counters)));
        if let Some(detail) = &mut self.detail {
            detail.clear();
        }
        self.ctx.queue.submit([]);
        self.ctx.check()
    }

    /// Uploads the queued edits and returns how many water, terrain and forcing edits the next
    /// submission must apply (with the bodies' displacement and nudges, [`Self::prepare_bodies`]).
    fn prepare_edits(&mut self, forcing: &[CellWater]) -> (u32, u32, u32) {
        let ctx = self.ctx.clone();
        let mut grown = self.edit_groups.is_none();
        let (w, t, f) = (self.pending_water.len() as u32, self.pending_terrain.len() as u32, forcing.len() as u32);
        if w > 0 {
            grown |= self.water_edits.upload(&ctx, "water edits", bytemuck::cast_slice(&self.pending_water));
            self.pending_water.clear();
        }
        let mut terrain_grown = false;
        if t > 0 {
            terrain_grown = self.terrain_edits.upload(&ctx, "terrain edits", bytemuck::cast_slice(&self.pending_terrain));
            grown |= terrain_grown;
            self.pending_terrain.clear();
        }
        // The terrain edits' list also tells the body pass which cells' bed to refresh.
        self.prepare_bodies(terrain_grown);
        if f > 0 {
            grown |= self.forcing.upload(&ctx, "forcing", bytemuck::cast_slice(forcing));
        }
        if grown {
            let make = |k: usize, list: &wgpu::Buffer, label: &str| {
                let buffers = [&self.terrain, &self.depth[k], &self.counters, list, &self.terrain_edits.buffer];
                let entries: Vec<wgpu::BindGroupEntry> =
                    buffers.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect();
                ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout: &ctx.edit_layout, entries: &entries })
            };
            self.edit_groups =
                Some([0, 1].map(|k| [make(k, &self.water_edits.buffer, "water edits"), make(k, &self.forcing.buffer, "forcing")]));
        }
        (w, t, f)
    }

    /// Uploads the queued displacement and nudges; (re)makes the body passes' bind groups when a
    /// list grew or `terrain_grows` may replace the terrain edits' list.
    fn prepare_bodies(&mut self, terrain_grows: bool) -> (u32, u32) {
        let ctx = self.ctx.clone();
        let (d, n) = (self.bodies.displacement.len() as u32, self.bodies.nudges.len() as u32);
        let mut grown = self.body_groups.is_none() || terrain_grows;
        if d > 0 {
            grown |= self.displaced_list.upload(&ctx, "displacement", bytemuck::cast_slice(&self.bodies.displacement));
            self.bodies.displacement.clear();
        }
        if n > 0 {
            grown |= self.nudge_list.upload(&ctx, "nudges", bytemuck::cast_slice(&self.bodies.nudges));
            self.bodies.nudges.clear();
        }
        self.queued_bodies = (d, n);
        if grown {
            self.body_groups = None;
        }
        (d, n)
    }

    /// The body passes' bind groups, made after every list they name has its final buffer.
    fn body_groups(&mut self) -> &[wgpu::BindGroup; 2] {
        if self.body_groups.is_none() {
            let ctx = &self.ctx;
            let make = |k: usize| {
                let buffers = [
                    &self.uniforms,
                    &self.terrain,
                    &self.step_terrain,
                    &self.displacement,
                    &self.depth[k],
                    &self.flux[k],
                    &self.displaced_list.buffer,
                    &self.terrain_edits.buffer,
                    &self.nudge_list.buffer,
                ];
                let entries: Vec<wgpu::BindGroupEntry> =
                    buffers.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect();
                ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("bodies"), layout: &ctx.bodies_layout, entries: &entries })
            };
            self.body_groups = Some([make(0), make(1)]);
        }
        self.body_groups.as_ref().expect("made")
    }

    /// Workgroups for an edit list of `count` entries (the shader strides over the rest).
    fn edit_groups_for(&self, count: u32) -> u32 {
        count.div_ceil(EDIT_WORKGROUP).clamp(1, self.ctx.limits.max_compute_workgroups_per_dimension.min(65535))
    }

    /// Records the queued edits into `pass`: terrain, water, then the bodies' bed (refreshed
    /// where terrain changed, displaced where bodies are) and their drag, as the CPU applies them.
    fn record_edits(&mut self, pass: &mut wgpu::ComputePass, water: u32, terrain: u32) {
        let (displaced, nudges) = std::mem::take(&mut self.queued_bodies);
        if terrain > 0 || displaced > 0 || nudges > 0 {
            self.body_groups();
        }
        let Some(groups) = &self.edit_groups else { return };
        let groups = &groups[self.current];
        if terrain > 0 {
            pass.set_pipeline(&self.ctx.apply_terrain);
            pass.set_bind_group(0, &groups[0], &[]);
            pass.dispatch_workgroups(self.edit_groups_for(terrain), 1, 1);
        }
        if water > 0 {
            pass.set_pipeline(&self.ctx.apply_water);
            pass.set_bind_group(0, &groups[0], &[]);
            pass.dispatch_workgroups(self.edit_groups_for(water), 1, 1);
        }
        let Some(bodies) = &self.body_groups else { return };
        let bodies = &bodies[self.current];
        for (count, pipeline) in [(terrain, &self.ctx.refresh_step_terrain), (displaced, &self.ctx.displace), (nudges, &self.ctx.nudge_pipes)] {
            if count > 0 {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bodies, &[]);
                pass.dispatch_workgroups(self.edit_groups_for(count), 1, 1);
            }
        }
    }

    /// Submits the queued edits on their own (before a blocking read).
    fn flush_edits(&mut self) -> Result<()> {
        if self.pending_water.is_empty() && self.pending_terrain.is_empty() && self.bodies.is_empty() {
            return Ok(());
        }
        let (w, t, _) = self.prepare_edits(&[]);
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("edits") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("edits"), timestamp_writes: None });
            self.record_edits(&mut pass, w, t);
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.ctx.check()
    }

    /// Copies `ranges` of device buffers into one mapped buffer and waits for it: for the
    /// blocking reads only.
    fn read_blocking(&mut self, ranges: &[(&wgpu::Buffer, u64)]) -> Result<Vec<u8>> {
        self.flush_edits()?;
        let total: u64 = ranges.iter().map(|r| r.1).sum();
        let device = &self.ctx.device;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("blocking read"),
            size: total.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("blocking read") });
        let mut at = 0;
        for &(buffer, size) in ranges {
            encoder.copy_buffer_to_buffer(buffer, 0, &staging, at, size);
            at += size;
        }
        let index = self.ctx.queue.submit([encoder.finish()]);
        let state = Arc::new(AtomicU32::new(SLOT_PENDING));
        let flag = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None }).map_err(|e| Error::Gpu(e.to_string()))?;
        while state.load(Ordering::Acquire) == SLOT_PENDING {
            device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).map_err(|e| Error::Gpu(e.to_string()))?;
        }
        self.ctx.check()?;
        if state.load(Ordering::Acquire) != SLOT_READY {
            return Err(Error::Gpu("mapping a readback buffer failed".into()));
        }
        let bytes = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..total as usize].to_vec();
        staging.unmap();
        Ok(bytes)
    }

    /// Polls the device without waiting. With `consume`, turns the newest finished readback
    /// into the current snapshot; otherwise only frees a staging buffer when none is free,
    /// dropping the oldest finished readback (nobody asked for it).
    fn harvest(&mut self, consume: bool) {
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        let mut ready: Vec<usize> = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            match slot.state.load(Ordering::Acquire) {
                SLOT_READY if slot.epoch == self.epoch => ready.push(i),
                SLOT_READY => {
                    slot.buffer.unmap();
                    slot.state.store(SLOT_FREE, Ordering::Release);
                }
                SLOT_FAILED => slot.state.store(SLOT_FREE, Ordering::Release),
                _ => {}
            }
        }
        ready.sort_by_key(|&i| self.slots[i].sequence);
        if consume {
            if let Some(&newest) = ready.last() {
                let slot = &self.slots[newest];
                if self.latest.as_ref().is_none_or(|s| s.sequence <= slot.sequence) {
                    let spare = self.spares.take();
                    if let Some(s) = self.decode(slot, spare) {
                        if let Some(old) = self.latest.replace(Arc::new(s)) {
                            self.spares.keep(old);
                        }
                    }
                }
            }
            for &i in &ready {
                self.slots[i].buffer.unmap();
                self.slots[i].state.store(SLOT_FREE, Ordering::Release);
            }
        } else if !self.slots.iter().any(|s| s.state.load(Ordering::Acquire) == SLOT_FREE) {
            if let Some(&oldest) = ready.first() {
                self.slots[oldest].buffer.unmap();
                self.slots[oldest].state.store(SLOT_FREE, Ordering::Release);
            }
        }
    }

    /// Builds a snapshot from a mapped staging buffer, in `spare`'s buffers when it has them.
    fn decode(&self, slot: &Slot, spare: Option<Snapshot>) -> Option<Snapshot> {
        let view = slot.buffer.get_mapped_range(..).ok()?;
        let n = self.grid.cell_count();
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&view[..HEADER_BYTES as usize]);
        let wide = |k: usize| words[k] as u64 | (words[k + 1] as u64) << 32;
        let counters = Counters { added: wide(0), removed: wide(2), boundary_in: wide(4), boundary_out: wide(6) };
        let h = HEADER_BYTES as usize;
        let (mut height, mut flow) = Snapshot::texel_buffers(spare, n);
        // Cast our aligned buffers to bytes, not the mapped range to texels: its alignment is
        // the driver's.
        copy_in_parallel(bytemuck::cast_slice_mut::<[f32; 4], u8>(&mut height), &view[h..h + 16 * n]);
        copy_in_parallel(bytemuck::cast_slice_mut::<[f32; 4], u8>(&mut flow), &view[h + 16 * n..h + 32 * n]);
        Some(Snapshot {
            grid: self.grid,
            sequence: slot.sequence,
            height,
            flow,
            total_quanta: wide(8) as i64,
            counters,
            max_speed: f32::from_bits(words[10]),
            max_depth: f32::from_bits(words[11]),
        })
    }

}

impl Backend for GpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn description(&self) -> String {
        format!("GPU: {}", self.ctx.adapter_description())
    }

    fn load(&mut self, state: &State) -> Result<()> {
        if state.grid != self.grid {
            *self = GpuBackend::new(state)?;
            return Ok(());
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
        // Earlier terrain edits would be overwritten anyway.
        self.pending_terrain.clear();
        self.ctx.queue.write_buffer(&self.terrain, 0, bytemuck::cast_slice(terrain));
        self.ctx.queue.write_buffer(&self.step_terrain, 0, bytemuck::cast_slice(terrain));
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
        self.ctx.check()?;
        let g = self.grid;
        if plan.constants.width != g.width || plan.constants.height != g.height {
            return Err(Error::invalid("plan grid", format!("{}x{}", plan.constants.width, plan.constants.height), format!("{}x{}", g.width, g.height)));
        }
        // Back-pressure: never more than MAX_FRAMES_IN_FLIGHT frames queued on the device.
        while self.in_flight.len() >= MAX_FRAMES_IN_FLIGHT {
            let oldest = self.in_flight.pop_front().expect("non-empty");
            self.ctx
                .device
                .poll(wgpu::PollType::Wait { submission_index: Some(oldest), timeout: None })
                .map_err(|e| Error::Gpu(e.to_string()))?;
        }
        // Pick up finished readbacks now if snapshots are wanted, so that a staging buffer is
        // free for this frame without dropping the newest finished one.
        self.harvest(self.wanted);
        self.constants = plan.constants;
        self.ctx.queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&self.constants));
        let (water, terrain, forcing) = self.prepare_edits(if plan.substeps > 0 { plan.forcing } else { &[] });
        let readback = if self.wanted { self.slots.iter().position(|s| s.state.load(Ordering::Acquire) == SLOT_FREE) } else { None };

        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
        if readback.is_some() {
            encoder.clear_buffer(&self.stats, 0, None);
        }
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("frame"), timestamp_writes: None });
            self.record_edits(&mut pass, water, terrain);
            let forcing_groups = self.edit_groups_for(forcing);
            let step = self.ctx.step_pipeline(StepMode::of(&plan.constants));
            let [strips, bands] = self.ctx.kernel.dispatch(g.width, g.height);
            for _ in 0..plan.substeps {
                let k = self.current;
                if forcing > 0 {
                    pass.set_pipeline(&self.ctx.apply_water);
                    pass.set_bind_group(0, &self.edit_groups.as_ref().expect("prepared")[k][1], &[]);
                    pass.dispatch_workgroups(forcing_groups, 1, 1);
                }
                pass.set_pipeline(&step);
                pass.set_bind_group(0, &self.step_groups[k], &[]);
                pass.dispatch_workgroups(strips, bands, 1);
                self.current = 1 - k;
            }
            if readback.is_some() {
                self.record_texels(&mut pass);
            }
        }
        self.frames += 1;
        self.readback_bytes = if readback.is_some() { HEADER_BYTES + 32 * g.cell_count() as u64 } else { 0 };
        if let Some(k) = readback {
            self.record_readback_copy(&mut encoder, k);
        }
        let index = self.ctx.queue.submit([encoder.finish()]);
        self.in_flight.push_back(index);
        // The detail waves: their own submission, over the fields the steps left.
        if let Some(detail) = &mut self.detail {
            detail.run(&self.snapshot_groups[self.current])?;
        }
        if let Some(k) = readback {
            self.map_readback(k);
            self.wanted = false;
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        self.ctx.check()
    }

    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        self.wanted = true;
        self.harvest(true);
        self.latest.clone()
    }

    fn read_state(&mut self) -> Result<State> {
        let n = self.grid.cell_count() as u64;
        let (terrain, depth, flux) = (self.terrain.clone(), self.depth[self.current].clone(), self.flux[self.current].clone());
        let bytes = self.read_blocking(&[(&terrain, n * 4), (&depth, n * 4), (&flux, n * 16)])?;
        let n = n as usize;
        Ok(State {
            grid: self.grid,
            terrain: bytemuck::pod_collect_to_vec(&bytes[..4 * n]),
            depth: bytemuck::pod_collect_to_vec(&bytes[4 * n..8 * n]),
            flow: bytemuck::pod_collect_to_vec(&bytes[8 * n..24 * n]),
        })
    }

    fn last_readback_bytes(&self) -> u64 {
        self.readback_bytes
    }

    fn read_counters(&mut self) -> Result<Counters> {
        let counters = self.counters.clone();
        let bytes = self.read_blocking(&[(&counters, 32)])?;
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let wide = |k: usize| words[k] as u64 | (words[k + 1] as u64) << 32;
        Ok(Counters { added: wide(0), removed: wide(2), boundary_in: wide(4), boundary_out: wide(6) })
    }

    // ---- Detail waves: everything in `detail.rs`. ----

    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = layout.map(|l| detail::GpuDetail::new(&self.ctx, l)).transpose()?;
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

    fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        self.detail.as_mut()?.texels()
    }

    fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        match &mut self.detail {
            Some(detail) => detail.read_fields(),
            None => Err(Error::invalid("detail waves", "off", "on (configure_detail)")),
        }
    }
}
