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
//! * [`Backend::advance`] records every substep of a frame (forcing, the step) and the snapshot pass into one command buffer and submits it once. Edits are
//!   queued ([`PendingEdits`]) and applied by a pass at the start of the next submission; the
//!   grid is uploaded only by `load` and `set_terrain`.
//! * Readback is asynchronous and bounded by what is used ([`crate::backend::readback`]): a
//!   frame after which a snapshot was asked for copies the header (ledger, totals, CFL
//!   extremes) and either every cell's texels (when textures are filled from the snapshot,
//!   [`Backend::want_full_snapshots`]) or only the tiles queries touched, into one of
//!   [`MAX_FRAMES_IN_FLIGHT`] staging buffers, mapped with `map_async` and picked up by
//!   [`Backend::snapshot`] without waiting. See [`GPU_SNAPSHOT_LATENCY`].
//! * Sleeping tiles ([`crate::backend::sleep`]): the tiles are the step kernel's workgroup
//!   domains ([`crate::backend::step_kernel::ColumnKernel::tiles`]). Before each step a small
//!   pass (`shaders/tiles.wgsl`) lists the awake tiles on the device, as the step's indirect
//!   dispatch, from the flags the last step wrote per tile (changed, moving), the host's marks
//!   (edits, bodies and terrain for the frame's first step; sources and drains for every step)
//!   and how the constants changed. Skipping is exact with ping-pong copies: every step's input
//!   copy holds the whole state, and a tile skipped at step s was stepped without a change (or
//!   skipped) at step s − 1, so the copy step s writes already holds its bits. Edits change the
//!   current copy in place and mark their tiles, which the next step then runs. With sleeping
//!   off the list holds every tile, and the step kernel is the same. [`Backend::sleep_report`]
//!   arrives with the snapshot's readback, as late as the snapshot. The snapshot follows the
//!   tiles too: the plan marks the tiles a step runs stale, and the snapshot pass recomputes
//!   only stale tiles' texels and shares of the totals (`snapshot.wgsl`), so a frame over water
//!   at rest costs little more than its passes' launches.
//! * All simulations of a process share one device ([`GpuContext::shared`]). When it is lost
//!   (or reports an error) every call fails with that error, and the next `GpuContext::shared`
//!   makes a fresh device.

mod context;
pub mod cooling;
pub mod detail;
mod list;
pub mod overrides;
pub mod overwrite;
pub mod shaders;
pub mod tile_changes;
mod timing;
pub mod world;

pub use context::{GpuContext, EDIT_WORKGROUP, TILES_WORKGROUP};
pub use timing::Stamp;

/// A bind group of `buffers`, whole, at bindings 0, 1, 2, … of `layout`.
pub(super) fn bind_buffers(device: &wgpu::Device, layout: &wgpu::BindGroupLayout, label: &str, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
}
pub use crate::dispatch::list_workgroups;
use list::DeviceList;

use super::frame::FramePass;
use super::gpu_host::{DeviceField, GpuHost};
use super::sleep::{snapshot_slices, ConstantsChange, TileGrid, TileParams, AWAKE_LIST_HEADER, EMPTY_AWAKE_LIST};
use super::step_kernel::StepMode;
use super::pending::{list_bytes, list_header_bytes, EditBatch, EditCounts, EditPass};
use super::readback::{Coverage, Read, TileRequests, HEADER_BYTES, MAX_TILES_PER_READ};
use super::recovery::{decode_point, recovery_read_bytes, RecoveryRead, COUNTER_BYTES};
use super::{Backend, BackendKind, CellWater, FramePlan};
use crate::detail::{DetailLayout, DetailTexels};
use crate::error::{Error, Result};
use crate::pipes::StepConstants;
use crate::state::{Counters, State};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most frames submitted and not yet finished on the device, and the number of staging buffers.
/// `advance` waits for the frame this many submissions back before it submits another, so a
/// device slower than the frame rate cannot build an ever longer queue (and an ever older
/// snapshot).
pub const MAX_FRAMES_IN_FLIGHT: usize = 2;

/// Frames between an `advance` and the snapshot that shows it, at most: after `advance` of frame
/// N, [`Backend::snapshot`] shows frame N − 2 or later, on any device and under any load, as
/// long as a snapshot was asked for since the `advance` of frame N − 3 ([`crate::Simulation`]
/// asks before every frame). It shows N − 1 or N when the device has finished those by then
/// (small grids, fast devices); 1 is typical in a game loop that queries right after advancing.
///
/// Why it holds by construction: before recording frame N, `advance` waits until the device has
/// finished frame N − 2 and until that frame's readback has arrived on the host (its `map_async`
/// callback may run on another thread that polls the same device, so it waits for the callback
/// itself, not only for the device), and applies it. Then at most frame N − 1's readback is
/// still in flight, so one of the [`MAX_FRAMES_IN_FLIGHT`] staging buffers is free for frame N:
/// every frame after which a snapshot was asked has its readback.
pub const GPU_SNAPSHOT_LATENCY: u32 = MAX_FRAMES_IN_FLIGHT as u32;

/// Longest any wait for the device may take (a frame to finish, a readback's callback to run, a
/// blocking read): a device that does not answer within it counts as lost. A real GPU that
/// takes this long on one frame has been reset by its driver long before.
pub const DEVICE_WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Bytes a snapshot read carries behind the snapshot's own: the frame's sleeping report.
/// [`Backend::last_readback_bytes`] counts them.
pub const SLEEP_REPORT_BYTES: usize = super::sleep::SLEEP_REPORT_BYTES;

/// The wgpu backend's sleeping tiles: the device's buffers (the host's side is [`GpuHost::sleep`]).
struct Sleeping {
    params: wgpu::Buffer,
    /// Flags per tile (`TILE_*` of common.wgsl), written by the step from copy k.
    flags: [wgpu::Buffer; 2],
    /// Awake lists, the step from copy k's dispatch arguments.
    lists: [wgpu::Buffer; 2],
    /// Host marks per tile.
    wakes: wgpu::Buffer,
    /// The frame's report (`sleep_stats` of tiles.wgsl), cleared before each frame with steps.
    stats: wgpu::Buffer,
    /// Per tile: whether its snapshot texels are stale (snapshot.wgsl; its share of the
    /// snapshot's reductions lives in a buffer only `snapshot_group` names).
    stale: wgpu::Buffer,
    /// The plan before the step from copy k.
    plan_groups: [wgpu::BindGroup; 2],
    /// The snapshot's tiles (group 2 of `tile_texels` and `sum_tiles`).
    snapshot_group: wgpu::BindGroup,
}

impl Sleeping {
    fn new(ctx: &GpuContext, tiles: TileGrid, uniforms: &wgpu::Buffer) -> Self {
        use wgpu::BufferUsages as U;
        let device = &ctx.device;
        let n = tiles.count();
        let buffer = |label: &str, bytes: usize, usage: U| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16) as u64, usage, mapped_at_creation: false });
        let params = buffer("tile params", std::mem::size_of::<TileParams>(), U::UNIFORM | U::COPY_DST);
        let flags = [0, 1].map(|k| buffer(&format!("tile flags {k}"), 4 * n, U::STORAGE | U::COPY_SRC));
        let lists = [0, 1].map(|k| buffer(&format!("awake tiles {k}"), 4 * (AWAKE_LIST_HEADER + n), U::STORAGE | U::INDIRECT | U::COPY_SRC | U::COPY_DST));
        // Created zeroed: no marks.
        let wakes = buffer("tile wakes", 4 * n, U::STORAGE | U::COPY_DST);
        let stats = buffer("sleep stats", 16, U::STORAGE | U::COPY_SRC | U::COPY_DST);
        let stale = buffer("stale snapshot tiles", 4 * n, U::STORAGE | U::COPY_DST);
        let totals = buffer("snapshot tile totals", 16 * n * snapshot_slices(&tiles) as usize, U::STORAGE);
        fn entries<'a>(buffers: &[(u32, &'a wgpu::Buffer)]) -> Vec<wgpu::BindGroupEntry<'a>> {
            buffers.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect()
        }
        let group = |k: usize| {
            let buffers = [uniforms, &params, &flags[1 - k], &flags[k], &wakes, &lists[k], &lists[1 - k], &stats, &stale];
            let numbered: Vec<(u32, &wgpu::Buffer)> = buffers.iter().enumerate().map(|(i, &b)| (i as u32, b)).collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("tiles"), layout: &ctx.tiles_layout, entries: &entries(&numbered) })
        };
        let plan_groups = [group(0), group(1)];
        let snapshot_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("snapshot tiles"),
            layout: &ctx.snapshot_tiles_layout,
            entries: &entries(&[(3, &params), (4, &stale), (5, &totals)]),
        });
        // The snapshot reads the tiles' shape before any step has set the parameters.
        ctx.queue.write_buffer(&params, 0, bytemuck::bytes_of(&TileParams::new(&tiles, false, ConstantsChange::Mode)));
        let sleeping = Sleeping { params, flags, lists, wakes, stats, stale, plan_groups, snapshot_group };
        sleeping.reset_lists(ctx);
        sleeping
    }

    /// Empties both awake lists (each plan empties the next step's, which holds only while steps
    /// alternate between the copies: a new state breaks that) and sets their dispatches' y and z.
    fn reset_lists(&self, ctx: &GpuContext) {
        for list in &self.lists {
            ctx.queue.write_buffer(list, 0, bytemuck::cast_slice(&EMPTY_AWAKE_LIST));
        }
    }

    /// Before a frame of steps: the parameters and, when they changed, the marks on the device.
    fn start_frame(&self, ctx: &GpuContext, start: Option<(TileParams, Option<&[u32]>)>) {
        if let Some((params, marks)) = start {
            ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
            if let Some(marks) = marks {
                ctx.queue.write_buffer(&self.wakes, 0, bytemuck::cast_slice(marks));
            }
        }
    }
}

const SLOT_FREE: u32 = 0;
const SLOT_PENDING: u32 = 1;
const SLOT_READY: u32 = 2;
const SLOT_FAILED: u32 = 3;
/// Work recorded to ride on the backend's next submission rather than make one of its own: on a
/// fast device the host's cost of a command encoder (creating and finishing it: tens of
/// microseconds) and of a submission is most of a small job's cost. The next frame records its
/// steps on after it in the same encoder; any other submission of the backend finishes and
/// submits it first, so it runs exactly where it was recorded in the queue's order; whoever
/// needs its result before the backend submits again (no frame followed) submits it alone.
#[derive(Clone, Default)]
struct Riding(Arc<parking_lot::Mutex<Option<RidingWork>>>);

struct RidingWork {
    /// The encoder holding the work, still open (taken by the frame that carries it).
    encoder: Option<wgpu::CommandEncoder>,
    /// Runs with `true` right after the submission that carried the encoder (a `map_async` of
    /// what it wrote, which must follow it), or with `false` when it was dropped unsubmitted (a
    /// frame that failed before its submission), so that its reader is not left waiting.
    then: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl RidingWork {
    /// The submission that carried the encoder was made.
    fn submitted(mut self) {
        if let Some(then) = self.then.take() {
            then(true);
        }
    }
}

impl Drop for RidingWork {
    fn drop(&mut self) {
        if let Some(then) = self.then.take() {
            then(false);
        }
    }
}

impl Riding {
    /// Makes `work` ride; work already riding is submitted first, alone, keeping the order.
    fn set(&self, queue: &wgpu::Queue, work: RidingWork) {
        self.submit_alone(queue);
        *self.0.lock() = Some(work);
    }

    fn take(&self) -> Option<RidingWork> {
        self.0.lock().take()
    }

    /// Submits the riding work on its own, if no submission has carried it yet.
    fn submit_alone(&self, queue: &wgpu::Queue) {
        if let Some(mut work) = self.take() {
            if let Some(encoder) = work.encoder.take() {
                queue.submit([encoder.finish()]);
            }
            work.submitted();
        }
    }
}

/// Taken off the device, its bytes being decoded on another thread.
const SLOT_DECODING: u32 = 4;

/// One staging buffer of the readback ring.
struct Slot {
    /// Grown to the largest read it carried.
    buffer: Option<wgpu::Buffer>,
    state: Arc<AtomicU32>,
    /// The read it carries while pending or ready.
    read: Option<Read>,
    /// Our sequence number of the submission that fills it.
    submitted: u64,
    /// Steps of the frame it reads (for the sleeping report behind the snapshot).
    steps: u32,
}

/// The recovery reads ([`crate::backend::recovery`]): the whole state of a frame, copied at a
/// bounded rate into a staging buffer of its own (made with the backend), so that a lost device
/// does not take the water with it.
struct RecoveryCopy {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU32>,
    /// The read the buffer carries while pending or ready.
    read: Option<RecoveryRead>,
}

/// The GPU backend.
pub struct GpuBackend {
    ctx: Arc<GpuContext>,
    /// What both GPU backends keep on the host: edits, reads, sleeping, recovery, the frame
    /// count and the copy holding the state.
    host: GpuHost,
    uniforms: wgpu::Buffer,
    terrain: wgpu::Buffer,
    /// The bed the step kernels read: terrain plus the displacement of bodies (bodies.wgsl).
    step_terrain: wgpu::Buffer,
    /// Pressure head of bodies per cell, m.
    displacement: wgpu::Buffer,
    displaced_list: DeviceList,
    nudge_list: DeviceList,
    /// Body passes' bind groups per current copy.
    body_groups: Option<[wgpu::BindGroup; 2]>,
    /// Depth and flux, twice: `host.current` indexes the copy that holds the state.
    depth: [wgpu::Buffer; 2],
    flux: [wgpu::Buffer; 2],
    counters: wgpu::Buffer,
    stats: wgpu::Buffer,
    height_texels: wgpu::Buffer,
    flow_texels: wgpu::Buffer,
    /// The tiles `gather` reads, and what it writes: header and tiles, the bytes a tile read copies.
    tile_list: wgpu::Buffer,
    gathered: wgpu::Buffer,
    gather_group: wgpu::BindGroup,
    /// Per current copy: the step (from that copy to the other), the snapshot.
    step_groups: [wgpu::BindGroup; 2],
    snapshot_groups: [wgpu::BindGroup; 2],
    /// Per current copy: the flow as the detail waves read it (read only).
    detail_flow_groups: [wgpu::BindGroup; 2],
    water_edits: DeviceList,
    forcing: DeviceList,
    terrain_edits: DeviceList,
    /// Edit passes' bind groups per current copy: (user water edits, terrain edits) and
    /// (forcing, terrain edits).
    edit_groups: Option<[[wgpu::BindGroup; 2]; 2]>,
    slots: Vec<Slot>,
    /// The mappable buffer of the grid's depth that [`Backend::begin_depth_read`] reads into,
    /// made on its first use and kept (making one of a large grid's size holds the caller), and
    /// its state (`SLOT_*`): one read at a time.
    depth_read: Option<(wgpu::Buffer, Arc<AtomicU32>)>,
    /// Frames submitted by `advance` and not yet waited for: (our sequence number, set when the
    /// device has finished it).
    in_flight: VecDeque<(u64, Arc<AtomicBool>)>,
    /// Submissions made, and how many of them the device is known to have finished (everything up
    /// to the last one waited for: a queue runs its submissions in order).
    submissions: u64,
    finished: u64,
    /// A readback that failed: every later call reports it.
    failure: Option<Error>,
    /// Bytes the last frame's readback copies to the host.
    readback_bytes: u64,
    /// The detail wave layer, when it is on (`detail.rs`).
    detail: Option<detail::GpuDetail>,
    sleeping: Sleeping,
    recovery: RecoveryCopy,
    /// Cooling's buffer and bind groups, made by the first frame that cools (`cooling.rs`).
    cooling: Option<cooling::GpuCooling>,
    /// A sync server's comparison of its tiles (`tile_changes.rs`), made by its first reset.
    tile_changes: Option<tile_changes::GpuTileChanges>,
    /// Work that rides on the next submission instead of a submission of its own.
    riding: Riding,
    /// A sync client's write of cells (`overwrite.rs`), made by its first write.
    overwrite: Option<overwrite::GpuOverwrite>,
    /// Timestamps of the frames' dispatches, while a benchmark asks for them (timing.rs).
    timer: Option<timing::DispatchTimer>,
}

impl GpuBackend {
    /// Creates the backend on the process-wide device and uploads `state`. A grid past the
    /// device's limits is refused before anything is created, naming the largest grid the
    /// device runs ([`crate::backend::limits::DeviceLimits::check`]).
    pub fn new(state: &State) -> Result<Self> {
        let ctx = GpuContext::shared()?;
        ctx.check()?;
        let grid = state.grid;
        ctx.device_limits().check(grid)?;
        let n = grid.cell_count() as u64;
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
        let counters = field("ledger counters", COUNTER_BYTES as u64, io);
        let stats = field("snapshot stats", 16, io);
        let height_texels = field("height texels", n * 16, U::COPY_SRC);
        let flow_texels = field("flow texels", n * 16, U::COPY_SRC);
        let tile_list = field("gather tiles", (list_header_bytes(4) + 4 * MAX_TILES_PER_READ) as u64, U::COPY_DST);
        let gathered = field("gathered tiles", TileRequests::readback_bytes(MAX_TILES_PER_READ) as u64, U::COPY_SRC);
        let group = |layout: &wgpu::BindGroupLayout, label: &str, buffers: &[&wgpu::Buffer]| bind_buffers(device, layout, label, buffers);
        let tiles = ctx.kernel.tiles(grid.width, grid.height);
        let sleeping = Sleeping::new(&ctx, tiles, &uniforms);
        let step_groups = [0, 1].map(|k| {
            group(
                &ctx.step_layout,
                "step",
                &[&uniforms, &step_terrain, &depth[k], &flux[k], &depth[1 - k], &flux[1 - k], &counters, &sleeping.params, &sleeping.lists[k], &sleeping.flags[k]],
            )
        });
        let snapshot_groups =
            [0, 1].map(|k| group(&ctx.snapshot_layout, "snapshot", &[&uniforms, &terrain, &depth[k], &flux[k], &height_texels, &flow_texels, &stats]));
        let detail_flow_groups = [0, 1].map(|k| group(&ctx.detail_flow_layout, "detail flow", &[&uniforms, &terrain, &depth[k], &flux[k]]));
        let gather_group = group(&ctx.gather_layout, "gather", &[&tile_list, &gathered, &counters]);
        let slots = (0..MAX_FRAMES_IN_FLIGHT).map(|_| Slot { buffer: None, state: Arc::new(AtomicU32::new(SLOT_FREE)), read: None, submitted: 0, steps: 0 }).collect();
        let mut backend = GpuBackend {
            water_edits: DeviceList::new(device, "water edits", 16, 8),
            forcing: DeviceList::new(device, "forcing", 16, 8),
            terrain_edits: DeviceList::new(device, "terrain edits", 16, 8),
            displaced_list: DeviceList::new(device, "displacement", 16, 8),
            nudge_list: DeviceList::new(device, "nudges", 16, 16),
            step_terrain,
            displacement,
            body_groups: None,
            ctx: ctx.clone(),
            host: GpuHost::new(state, tiles, true),
            uniforms,
            terrain,
            depth,
            flux,
            counters,
            stats,
            height_texels,
            flow_texels,
            tile_list,
            gathered,
            gather_group,
            step_groups,
            snapshot_groups,
            detail_flow_groups,
            edit_groups: None,
            slots,
            depth_read: None,
            in_flight: VecDeque::new(),
            submissions: 0,
            finished: 0,
            failure: None,
            readback_bytes: 0,
            detail: None,
            sleeping,
            // Made now, not at the first read: creating a 400 MB mappable buffer (4096²) takes a
            // frame 0.14 s on an H100's host.
            recovery: RecoveryCopy {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("recovery staging"),
                    size: recovery_read_bytes(grid.cell_count()) as u64,
                    usage: U::MAP_READ | U::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU32::new(SLOT_FREE)),
                read: None,
            },
            cooling: None,
            tile_changes: None,
            riding: Riding::default(),
            overwrite: None,
            timer: None,
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
        self.wait_for_device()?;
        self.finished = self.submissions;
        self.in_flight.clear();
        self.check()
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
    /// * the last frame may have no readback at all, when no snapshot was asked for before it;
    ///   then `sync` reads the snapshot back itself.
    pub fn sync(&mut self) -> Result<()> {
        self.wait_idle()?;
        self.settle_readbacks()?;
        self.harvest();
        self.check()?;
        if self.host.reads.latest().sequence < self.host.frames {
            self.read_back_now()?;
        }
        Ok(())
    }

    /// Fails with the device's error, or with a readback's that failed.
    fn check(&self) -> Result<()> {
        self.ctx.check()?;
        match &self.failure {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Waits, at most [`DEVICE_WAIT_LIMIT`], until the device has finished the work submitted so
    /// far ([`context::poll_until`] says why not in a blocking poll).
    fn wait_for_device(&self) -> Result<()> {
        context::wait_for_submitted(&self.ctx.device, &self.ctx.queue, DEVICE_WAIT_LIMIT, "the device's work")
    }

    /// Polls the device until `done` holds, at most [`DEVICE_WAIT_LIMIT`]: for `map_async`
    /// callbacks of work the device has finished. Our poll fires the callbacks it finds; one
    /// that another thread's poll has taken runs there, after that thread's earlier callbacks.
    fn wait_for_callbacks(&self, what: &str, done: impl Fn() -> bool) -> Result<()> {
        context::poll_until(&self.ctx.device, DEVICE_WAIT_LIMIT, &format!("{what}: its map callback"), done)
    }

    /// Waits until the readback of every submission the device has finished has arrived: its
    /// `map_async` callback has run. What [`GPU_SNAPSHOT_LATENCY`] rests on.
    fn settle_readbacks(&self) -> Result<()> {
        let finished = self.finished;
        let slots: Vec<(Arc<AtomicU32>, u64)> = self.slots.iter().map(|s| (s.state.clone(), s.submitted)).collect();
        self.wait_for_callbacks("a snapshot readback", || {
            !slots.iter().any(|(state, submitted)| *submitted <= finished && state.load(Ordering::Acquire) == SLOT_PENDING)
        })
    }

    /// Applies every readback that has arrived (those of an earlier load are discarded) and
    /// frees its staging buffer. A readback that failed is kept as the error every later call
    /// returns: a snapshot that stops following the water must not go unnoticed.
    fn harvest(&mut self) {
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        self.harvest_recovery();
        let mut ready = Vec::new();
        for (k, slot) in self.slots.iter_mut().enumerate() {
            match slot.state.load(Ordering::Acquire) {
                SLOT_READY => ready.push(k),
                SLOT_FAILED => {
                    let frame = slot.read.take().map_or(0, |r| r.frame);
                    slot.state.store(SLOT_FREE, Ordering::Release);
                    if self.failure.is_none() {
                        let why = match self.ctx.check() {
                            Err(e) => e,
                            Ok(()) => Error::Gpu(format!("the readback of frame {frame} could not be mapped")),
                        };
                        self.failure = Some(why);
                    }
                }
                _ => {}
            }
        }
        if ready.is_empty() {
            return;
        }
        let n = self.host.grid.cell_count();
        let mut views = Vec::new();
        for &k in &ready {
            let slot = &mut self.slots[k];
            let (Some(read), Some(buffer)) = (slot.read.take(), slot.buffer.as_ref()) else { continue };
            match buffer.get_mapped_range(..(read.bytes(n) + SLEEP_REPORT_BYTES) as u64) {
                Ok(view) => {
                    // A read of an earlier load reports on water that is gone.
                    if read.generation == self.host.reads.generation() {
                        self.host.sleep.accept(read.frame, slot.steps, &view[read.bytes(n)..]);
                    }
                    views.push((read, view))
                }
                Err(e) => {
                    self.failure.get_or_insert(Error::Gpu(format!("the readback of frame {} could not be read: {e}", read.frame)));
                }
            }
        }
        let arrived: Vec<(&Read, &[u8])> = views.iter().map(|(read, view)| (read, &view[..read.bytes(n)])).collect();
        self.host.reads.accept(&arrived);
        drop(arrived);
        drop(views);
        for k in ready {
            if let Some(buffer) = &self.slots[k].buffer {
                buffer.unmap();
            }
            self.slots[k].state.store(SLOT_FREE, Ordering::Release);
        }
    }

    /// Benchmarks: records timestamps between the dispatches of the next frames, up to
    /// `queries` of them, for [`GpuBackend::dispatch_times`]. False, recording nothing, when the
    /// device was made without timestamps inside passes (`PIPEWATER_GPU_TIMESTAMPS=1` asks for
    /// them where the adapter has them).
    #[doc(hidden)]
    pub fn time_dispatches(&mut self, queries: u32) -> bool {
        self.timer = timing::DispatchTimer::new(&self.ctx, queries);
        self.timer.is_some()
    }

    /// Benchmarks: what ended at each timestamp recorded since [`GpuBackend::time_dispatches`]
    /// and when, in nanoseconds of the device's clock (waiting for the device); stops recording.
    #[doc(hidden)]
    pub fn dispatch_times(&mut self) -> Result<Vec<(Stamp, u64)>> {
        self.timer.take().map_or(Ok(Vec::new()), |timer| timer.read(&self.ctx))
    }

    /// A free staging buffer large enough for `read`. Before `advance` records a frame every
    /// finished readback has been applied, so at most the previous frame's is still pending and
    /// one of the [`MAX_FRAMES_IN_FLIGHT`] buffers is free.
    fn free_slot(&mut self, read: &Read) -> Result<usize> {
        let k = self
            .slots
            .iter()
            .position(|s| s.state.load(Ordering::Acquire) == SLOT_FREE)
            .ok_or_else(|| Error::Gpu("no staging buffer is free after every finished readback was applied".into()))?;
        let needed = (read.bytes(self.host.grid.cell_count()) + SLEEP_REPORT_BYTES) as u64;
        let slot = &mut self.slots[k];
        if slot.buffer.as_ref().is_none_or(|b| b.size() < needed) {
            // Tile reads grow with the tiles asked for: size for the most at once.
            let size = match read.coverage {
                Coverage::Texels => needed,
                Coverage::Tiles(_) => needed.max((TileRequests::readback_bytes(MAX_TILES_PER_READ) + SLEEP_REPORT_BYTES) as u64),
            };
            slot.buffer = Some(self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("snapshot staging {k}")),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        Ok(k)
    }

    /// What `read` needs before the frame's compute pass: every tile marked stale when the
    /// plans' marks do not cover what changed, the stats cleared for the reductions, and the
    /// list of tiles `gather` reads.
    fn prepare_read(&mut self, encoder: &mut wgpu::CommandEncoder, read: &Read, all_stale: Option<Vec<u32>>) {
        if let Some(all) = all_stale {
            self.ctx.queue.write_buffer(&self.sleeping.stale, 0, bytemuck::cast_slice(&all));
        }
        encoder.clear_buffer(&self.stats, 0, None);
        if let Coverage::Tiles(tiles) = &read.coverage {
            self.ctx.queue.write_buffer(&self.tile_list, 0, &list_bytes(bytemuck::cast_slice(tiles), 4));
        }
    }

    /// Records one compute pass of the frame's recipe into `pass`; `step` is the frame's step
    /// pipeline and `detail` the detail waves' prepared frame. Reads are recorded on the encoder
    /// after the pass ([`GpuBackend::record_read`]).
    fn record_pass(&mut self, pass: &mut wgpu::ComputePass, frame_pass: FramePass, step: &wgpu::ComputePipeline, detail: Option<&detail::DetailRecording>) {
        match frame_pass {
            FramePass::Edit { pass: edit, count, copy } => self.record_edit(pass, edit, count, copy),
            FramePass::Forcing { count, copy } => {
                let Some(edit_groups) = &self.edit_groups else { return };
                pass.set_pipeline(&self.ctx.apply_water);
                pass.set_bind_group(0, &edit_groups[copy][1], &[]);
                pass.dispatch_workgroups(self.edit_groups_for(count as u32), 1, 1);
            }
            FramePass::PlanTiles { first, copy } => {
                pass.set_pipeline(if first { &self.ctx.plan_frame_start } else { &self.ctx.plan_next_step });
                pass.set_bind_group(0, &self.sleeping.plan_groups[copy], &[]);
                pass.dispatch_workgroups((self.host.sleep.tiles().count() as u32).div_ceil(TILES_WORKGROUP), 1, 1);
            }
            FramePass::Step { copy } => {
                pass.set_pipeline(step);
                pass.set_bind_group(0, &self.step_groups[copy], &[]);
                pass.dispatch_workgroups_indirect(&self.sleeping.lists[copy], 0);
            }
            // Recorded right after the first step and only reading what it reads, the layer needs
            // no barrier and runs beside the step instead of after it.
            FramePass::Detail { copy } => {
                if let (Some(layer), Some(frame)) = (&mut self.detail, detail) {
                    layer.dispatch(pass, &self.detail_flow_groups[copy], frame);
                }
            }
            FramePass::ReportAwake { copy } => {
                pass.set_pipeline(&self.ctx.report_awake_tiles);
                pass.set_bind_group(0, &self.sleeping.plan_groups[copy], &[]);
                pass.dispatch_workgroups(1, 1, 1);
            }
            FramePass::Snapshot { copy } => self.record_snapshot(pass, copy),
            FramePass::Gather { tiles, copy } => self.record_gather(pass, tiles, copy),
            FramePass::ReadSnapshot | FramePass::ReadRecovery { .. } => {}
        }
    }

    /// Records the snapshot passes over copy `copy` of the fields: texels and shares of the
    /// reductions of stale tiles, then the reductions.
    fn record_snapshot(&self, pass: &mut wgpu::ComputePass, copy: usize) {
        let tiles = self.host.sleep.tiles();
        pass.set_pipeline(&self.ctx.tile_texels);
        pass.set_bind_group(0, &self.snapshot_groups[copy], &[]);
        pass.set_bind_group(2, &self.sleeping.snapshot_group, &[]);
        pass.dispatch_workgroups(tiles.tiles[0], tiles.tiles[1], snapshot_slices(&tiles));
        pass.set_pipeline(&self.ctx.sum_tiles);
        pass.dispatch_workgroups(1, 1, 1);
    }

    /// Records the gathering of a tile read's `tiles` tiles of copy `copy` behind the header.
    fn record_gather(&self, pass: &mut wgpu::ComputePass, tiles: usize, copy: usize) {
        pass.set_pipeline(&self.ctx.gather);
        pass.set_bind_group(0, &self.snapshot_groups[copy], &[]);
        pass.set_bind_group(2, &self.gather_group, &[]);
        pass.dispatch_workgroups((tiles as u32).max(1), 1, 1);
    }

    /// Takes the recovery points decoded since the last call, and hands a recovery read that has
    /// arrived to a thread of its own: copying a 4096² grid's 400 MB out of mapped memory took
    /// the frame that did it 0.3 s on an H100's host. That thread unmaps and frees the buffer.
    fn harvest_recovery(&mut self) {
        self.host.recovery.take_decoded();
        let copy = &mut self.recovery;
        match copy.state.load(Ordering::Acquire) {
            SLOT_READY => match copy.read.take() {
                Some(read) => {
                    let buffer = copy.buffer.clone();
                    copy.state.store(SLOT_DECODING, Ordering::Release);
                    let flag = copy.state.clone();
                    self.host.recovery.decode_later(read, move |grid| {
                        let n = grid.cell_count();
                        let point = buffer.get_mapped_range(..recovery_read_bytes(n) as u64).ok().and_then(|view| {
                            let (counters, fields) = view.split_at(COUNTER_BYTES);
                            let (terrain, rest) = fields.split_at(4 * n);
                            let (depth, flow) = rest.split_at(4 * n);
                            decode_point(grid, read, counters, terrain, depth, flow)
                        });
                        buffer.unmap();
                        flag.store(SLOT_FREE, Ordering::Release);
                        point
                    });
                }
                None => copy.state.store(SLOT_FREE, Ordering::Release),
            },
            // A failed map means a failed device, which every later call reports.
            SLOT_FAILED => {
                copy.read = None;
                copy.state.store(SLOT_FREE, Ordering::Release);
            }
            _ => {}
        }
    }

    /// Records the copy of the whole state (copy `current` of the fields) into the recovery
    /// buffer when a recovery read is due after frame `self.host.frames` and the buffer is free;
    /// returns the read to map once submitted.
    fn record_recovery_copy(&mut self, encoder: &mut wgpu::CommandEncoder, current: usize) -> Option<RecoveryRead> {
        let copy = &mut self.recovery;
        if copy.state.load(Ordering::Acquire) != SLOT_FREE {
            return None;
        }
        let read = self.host.recovery.due(self.host.frames)?;
        let n = self.host.grid.cell_count() as u64;
        let buffer = &copy.buffer;
        let c = COUNTER_BYTES as u64;
        encoder.copy_buffer_to_buffer(&self.counters, 0, buffer, 0, c);
        encoder.copy_buffer_to_buffer(&self.terrain, 0, buffer, c, 4 * n);
        encoder.copy_buffer_to_buffer(&self.depth[current], 0, buffer, c + 4 * n, 4 * n);
        encoder.copy_buffer_to_buffer(&self.flux[current], 0, buffer, c + 8 * n, 16 * n);
        self.host.recovery.issued(read);
        Some(read)
    }

    /// Maps the recovery buffer once the submission that fills it with `read` is done.
    fn map_recovery(&mut self, read: RecoveryRead) {
        let copy = &mut self.recovery;
        copy.read = Some(read);
        copy.state.store(SLOT_PENDING, Ordering::Release);
        let flag = copy.state.clone();
        copy.buffer.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
    }

    /// Records the copy of `read`'s bytes into staging buffer `k`.
    fn record_read_copy(&self, encoder: &mut wgpu::CommandEncoder, read: &Read, k: usize) {
        let staging = self.slots[k].buffer.as_ref().expect("sized by free_slot");
        let h = HEADER_BYTES as u64;
        match &read.coverage {
            Coverage::Texels => {
                let n16 = self.host.grid.cell_count() as u64 * 16;
                let c = COUNTER_BYTES as u64;
                encoder.copy_buffer_to_buffer(&self.counters, 0, staging, 0, c);
                encoder.copy_buffer_to_buffer(&self.stats, 0, staging, c, 16);
                encoder.copy_buffer_to_buffer(&self.height_texels, 0, staging, h, n16);
                encoder.copy_buffer_to_buffer(&self.flow_texels, 0, staging, h + n16, n16);
            }
            Coverage::Tiles(tiles) => {
                encoder.copy_buffer_to_buffer(&self.gathered, 0, staging, 0, TileRequests::readback_bytes(tiles.len()) as u64);
            }
        }
        // The sleeping report behind it.
        let behind = read.bytes(self.host.grid.cell_count()) as u64;
        encoder.copy_buffer_to_buffer(&self.sleeping.stats, 0, staging, behind, SLEEP_REPORT_BYTES as u64);
    }

    /// Maps staging buffer `k` once submission `submitted` (which fills it with `read`) is done.
    fn map_read(&mut self, k: usize, read: Read, submitted: u64) {
        let bytes = (read.bytes(self.host.grid.cell_count()) + SLEEP_REPORT_BYTES) as u64;
        let slot = &mut self.slots[k];
        slot.read = Some(read);
        slot.submitted = submitted;
        slot.steps = self.host.sleep.frame_steps();
        slot.state.store(SLOT_PENDING, Ordering::Release);
        let flag = slot.state.clone();
        let buffer = slot.buffer.as_ref().expect("sized by free_slot");
        buffer.map_async(wgpu::MapMode::Read, ..bytes, move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
    }

    /// Submits `encoder`; returns our sequence number of the submission and wgpu's index.
    fn submit(&mut self, encoder: wgpu::CommandEncoder) -> (u64, wgpu::SubmissionIndex) {
        let index = match self.riding.take() {
            Some(mut work) => {
                let riding = work.encoder.take().map(wgpu::CommandEncoder::finish);
                let index = self.ctx.queue.submit(riding.into_iter().chain([encoder.finish()]));
                work.submitted();
                index
            }
            None => self.ctx.queue.submit([encoder.finish()]),
        };
        self.submissions += 1;
        (self.submissions, index)
    }

    /// Reads the current state's snapshot back now and waits for it (for `sync`, when the last
    /// frame had no readback).
    fn read_back_now(&mut self) -> Result<()> {
        self.host.reads.want_snapshot();
        let read = self.host.reads.next_read(self.host.frames).expect("a snapshot was just asked for");
        let k = self.free_slot(&read)?;
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("snapshot") });
        let all_stale = self.host.sleep.snapshot_all_stale(&self.host.constants);
        self.prepare_read(&mut encoder, &read, all_stale);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("snapshot"), timestamp_writes: None });
            let current = self.host.current;
            self.record_snapshot(&mut pass, current);
            if let Coverage::Tiles(tiles) = &read.coverage {
                self.record_gather(&mut pass, tiles.len(), current);
            }
        }
        self.record_read_copy(&mut encoder, &read, k);
        let (submitted, _) = self.submit(encoder);
        self.map_read(k, read, submitted);
        self.wait_idle()?;
        self.settle_readbacks()?;
        self.harvest();
        self.check()?;
        match self.host.reads.latest().sequence == self.host.frames {
            true => Ok(()),
            false => Err(Error::Gpu("the snapshot read back by sync did not arrive".into())),
        }
    }

    /// Replaces every field with `state`'s, the ledger with `counters` and the frame count with
    /// `frames`: the one full upload.
    fn upload(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        // Riding work reads the fields as they were: it goes before the writes below.
        self.riding.submit_alone(&self.ctx.queue);
        let q = &self.ctx.queue;
        q.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&self.host.constants));
        q.write_buffer(&self.terrain, 0, bytemuck::cast_slice(&state.terrain));
        q.write_buffer(&self.step_terrain, 0, bytemuck::cast_slice(&state.terrain));
        q.write_buffer(&self.displacement, 0, bytemuck::cast_slice(&vec![0.0f32; state.terrain.len()]));
        q.write_buffer(&self.depth[0], 0, bytemuck::cast_slice(&state.depth));
        q.write_buffer(&self.flux[0], 0, bytemuck::cast_slice(&state.flow));
        q.write_buffer(&self.counters, 0, bytemuck::cast_slice(&counters.to_device_words()));
        // Reads in flight show the old state: they are discarded when they arrive, and the first
        // snapshot comes from the state itself, so queries work before any readback.
        self.host.loaded(state, counters, frames);
        self.sleeping.reset_lists(&self.ctx);
        if let Some(detail) = &mut self.detail {
            detail.clear();
        }
        self.ctx.queue.submit([]);
        self.check()
    }

    /// Uploads the lists of `batch` and the step's `forcing`; returns what the next recorded
    /// edits apply ([`GpuBackend::record_edits`]).
    fn upload_edits(&mut self, batch: &EditBatch, forcing: &[CellWater]) -> EditCounts {
        let ctx = self.ctx.clone();
        let mut grown = self.edit_groups.is_none();
        let mut terrain_grown = false;
        if !batch.water.is_empty() {
            grown |= self.water_edits.upload(&ctx.device, &ctx.queue, "water edits", bytemuck::cast_slice(&batch.water));
        }
        if !batch.terrain.is_empty() {
            terrain_grown = self.terrain_edits.upload(&ctx.device, &ctx.queue, "terrain edits", bytemuck::cast_slice(&batch.terrain));
            grown |= terrain_grown;
        }
        // The terrain edits' list also tells the body pass which cells' bed to refresh.
        let mut bodies_grown = terrain_grown;
        if !batch.displacement.is_empty() {
            bodies_grown |= self.displaced_list.upload(&ctx.device, &ctx.queue, "displacement", bytemuck::cast_slice(&batch.displacement));
        }
        if !batch.nudges.is_empty() {
            bodies_grown |= self.nudge_list.upload(&ctx.device, &ctx.queue, "nudges", bytemuck::cast_slice(&batch.nudges));
        }
        if bodies_grown {
            self.body_groups = None;
        }
        if !forcing.is_empty() {
            grown |= self.forcing.upload(&ctx.device, &ctx.queue, "forcing", bytemuck::cast_slice(forcing));
        }
        if grown {
            let make = |k: usize, list: &wgpu::Buffer, label: &str| {
                bind_buffers(&ctx.device, &ctx.edit_layout, label, &[&self.terrain, &self.depth[k], &self.counters, list, &self.terrain_edits.buffer])
            };
            self.edit_groups =
                Some([0, 1].map(|k| [make(k, &self.water_edits.buffer, "water edits"), make(k, &self.forcing.buffer, "forcing")]));
        }
        batch.counts()
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
                bind_buffers(&ctx.device, &ctx.bodies_layout, "bodies", &buffers)
            };
            self.body_groups = Some([make(0), make(1)]);
        }
        self.body_groups.as_ref().expect("made")
    }

    /// Workgroups for an edit list of `count` entries (the shader strides over the rest).
    fn edit_groups_for(&self, count: u32) -> u32 {
        list_workgroups(count as usize, EDIT_WORKGROUP, self.ctx.limits.max_compute_workgroups_per_dimension)
    }

    /// Records edit pass `edit` over `count` entries of its uploaded list, on copy `copy`.
    fn record_edit(&mut self, pass: &mut wgpu::ComputePass, edit: EditPass, count: usize, copy: usize) {
        self.body_groups();
        // Edit groups exist from the first upload on, body groups once `body_groups` made them.
        let (Some(edit_groups), Some(body_groups)) = (&self.edit_groups, &self.body_groups) else { return };
        let (pipeline, group) = match edit {
            EditPass::Terrain => (&self.ctx.apply_terrain, &edit_groups[copy][0]),
            EditPass::Water => (&self.ctx.apply_water, &edit_groups[copy][0]),
            EditPass::RefreshStepTerrain => (&self.ctx.refresh_step_terrain, &body_groups[copy]),
            EditPass::Displace => (&self.ctx.displace, &body_groups[copy]),
            EditPass::Nudge => (&self.ctx.nudge_pipes, &body_groups[copy]),
        };
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(self.edit_groups_for(count as u32), 1, 1);
    }

    /// Applies `batch` in a submission of its own (queued edits before a blocking read, or
    /// before nudges on cells already queued).
    fn submit_edits(&mut self, batch: EditBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let counts = self.upload_edits(&batch, &[]);
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("edits") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("edits"), timestamp_writes: None });
            for (edit, count) in counts.passes() {
                self.record_edit(&mut pass, edit, count, self.host.current);
            }
        }
        self.submit(encoder);
        self.check()
    }

    /// Reads `fields` back whole, each as its bytes, after the queued edits, in one blocking read.
    fn read_whole(&mut self, fields: &[DeviceField]) -> Result<Vec<Vec<u8>>> {
        let (cells, tiles) = (self.host.grid.cell_count(), self.host.sleep.tiles().count());
        let ranges: Vec<(wgpu::Buffer, u64)> = fields
            .iter()
            .map(|&field| {
                let buffer = match field {
                    DeviceField::Terrain => &self.terrain,
                    DeviceField::Depth(k) => &self.depth[k],
                    DeviceField::Flow(k) => &self.flux[k],
                    DeviceField::Counters => &self.counters,
                    DeviceField::TileFlags(k) => &self.sleeping.flags[k],
                };
                (buffer.clone(), field.bytes(cells, tiles) as u64)
            })
            .collect();
        let ranges: Vec<(&wgpu::Buffer, u64)> = ranges.iter().map(|(b, size)| (b, *size)).collect();
        let bytes = self.read_blocking(&ranges)?;
        let mut at = 0;
        Ok(ranges.iter().map(|&(_, size)| {
            at += size as usize;
            bytes[at - size as usize..at].to_vec()
        }).collect())
    }

    /// Copies `ranges` of device buffers into one mapped buffer and waits for it, at most
    /// [`DEVICE_WAIT_LIMIT`] for the device and as long again for the callback: for the blocking
    /// reads only.
    fn read_blocking(&mut self, ranges: &[(&wgpu::Buffer, u64)]) -> Result<Vec<u8>> {
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
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
        self.submit(encoder);
        let state = Arc::new(AtomicU32::new(SLOT_PENDING));
        let flag = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
        self.wait_for_device()?;
        self.wait_for_callbacks("a blocking read", || state.load(Ordering::Acquire) != SLOT_PENDING)?;
        self.check()?;
        if state.load(Ordering::Acquire) != SLOT_READY {
            return Err(Error::Gpu("mapping a readback buffer failed".into()));
        }
        let bytes = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..total as usize].to_vec();
        staging.unmap();
        Ok(bytes)
    }

}

impl GpuBackend {
    /// Records the copy of the whole state and its counters (the current copy of the fields,
    /// edits queued so far applied first) into the recovery reads' staging buffer, submits it and
    /// returns the reader that waits for it on a worker thread, copies it out and frees the
    /// buffer: a save's read, which holds the caller for the recording only. The recovery buffer
    /// is borrowed (no recovery read starts until the reader is done with it) because making a
    /// mappable buffer of a large grid's size holds the caller itself (0.1 s at 4096² on an H200's
    /// host); only while a recovery read has it is a buffer made for the save.
    fn begin_whole_read(&mut self) -> Result<super::StateReader> {
        /// Gives the borrowed recovery buffer back when the reader is done, whatever happened.
        struct Borrowed(Option<Arc<AtomicU32>>);
        impl Drop for Borrowed {
            fn drop(&mut self) {
                if let Some(flag) = &self.0 {
                    flag.store(SLOT_FREE, Ordering::Release);
                }
            }
        }
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let (grid, current) = (self.host.grid, self.host.current);
        let n = grid.cell_count() as u64;
        let c = COUNTER_BYTES as u64;
        let device = self.ctx.device.clone();
        let free = self.recovery.state.compare_exchange(SLOT_FREE, SLOT_DECODING, Ordering::AcqRel, Ordering::Acquire).is_ok();
        let (staging, borrowed) = if free {
            (self.recovery.buffer.clone(), Borrowed(Some(self.recovery.state.clone())))
        } else {
            let made = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("save read"),
                size: recovery_read_bytes(grid.cell_count()) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (made, Borrowed(None))
        };
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("save read") });
        encoder.copy_buffer_to_buffer(&self.counters, 0, &staging, 0, c);
        encoder.copy_buffer_to_buffer(&self.terrain, 0, &staging, c, 4 * n);
        encoder.copy_buffer_to_buffer(&self.depth[current], 0, &staging, c + 4 * n, 4 * n);
        encoder.copy_buffer_to_buffer(&self.flux[current], 0, &staging, c + 8 * n, 16 * n);
        self.submit(encoder);
        let mapped = Arc::new(AtomicU32::new(SLOT_PENDING));
        let flag = mapped.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
        let frame = self.host.frames;
        Ok(Box::new(move || {
            let _give_back = borrowed;
            // The map's callback runs once the copy is done: that is the wait.
            context::poll_until(&device, DEVICE_WAIT_LIMIT, "a save's read", || mapped.load(Ordering::Acquire) != SLOT_PENDING)?;
            if mapped.load(Ordering::Acquire) != SLOT_READY {
                return Err(Error::Gpu("mapping a save's read failed".into()));
            }
            let read = RecoveryRead { frame, generation: 0 };
            let point = {
                let view = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?;
                let (counters, fields) = view.split_at(COUNTER_BYTES);
                let (terrain, rest) = fields.split_at(4 * n as usize);
                let (depth, flow) = rest.split_at(4 * n as usize);
                decode_point(grid, read, counters, terrain, depth, flow)
            };
            staging.unmap();
            let point = point.ok_or_else(|| Error::Gpu("a save's read came back short".into()))?;
            Ok((point.state, point.counters))
        }))
    }
}

impl Backend for GpuBackend {
    crate::gpu_backend_methods!();

    fn restore_rows(&mut self, state: &State, rows: std::ops::Range<u32>) -> Result<bool> {
        self.host.check_grid(state, "restored grid")?;
        self.riding.submit_alone(&self.ctx.queue);
        let w = state.grid.width as usize;
        let cells = rows.start as usize * w..(rows.end as usize * w).min(state.terrain.len());
        let (q, at) = (&self.ctx.queue, |bytes_per_cell: usize| (cells.start * bytes_per_cell) as u64);
        // Into copy 0, where `upload` puts a whole state: `finish_restore` makes it current.
        q.write_buffer(&self.terrain, at(4), bytemuck::cast_slice(&state.terrain[cells.clone()]));
        q.write_buffer(&self.step_terrain, at(4), bytemuck::cast_slice(&state.terrain[cells.clone()]));
        q.write_buffer(&self.displacement, at(4), bytemuck::cast_slice(&vec![0.0f32; cells.len()]));
        q.write_buffer(&self.depth[0], at(4), bytemuck::cast_slice(&state.depth[cells.clone()]));
        q.write_buffer(&self.flux[0], at(16), bytemuck::cast_slice(&state.flow[cells]));
        // Submitted part by part, so the staging memory holds one part, not the whole state.
        q.submit([]);
        self.check()?;
        Ok(true)
    }

    fn finish_restore(&mut self, restored: &super::RestoredState, rows_written: bool) -> Result<()> {
        let point = &restored.point;
        if !rows_written {
            return self.restore(&point.state, point.counters, point.frame);
        }
        let q = &self.ctx.queue;
        q.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&self.host.constants));
        q.write_buffer(&self.counters, 0, bytemuck::cast_slice(&point.counters.to_device_words()));
        self.host.loaded_restored(restored);
        self.sleeping.reset_lists(&self.ctx);
        if let Some(detail) = &mut self.detail {
            detail.clear();
        }
        self.ctx.queue.submit([]);
        self.check()
    }

    fn begin_state_read(&mut self) -> Result<super::StateReader> {
        self.begin_whole_read()
    }

    fn begin_depth_read(&mut self) -> Result<Option<super::DepthReader>> {
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let bytes = 4 * self.host.grid.cell_count() as u64;
        if let Some((buffer, state)) = &self.depth_read {
            match state.load(Ordering::Acquire) {
                // A read whose reader was dropped unread: its mapping is given back here.
                SLOT_READY => {
                    buffer.unmap();
                    state.store(SLOT_FREE, Ordering::Release);
                }
                SLOT_FAILED => state.store(SLOT_FREE, Ordering::Release),
                SLOT_FREE => {}
                _ => return Ok(None),
            }
        }
        if self.depth_read.as_ref().is_none_or(|(buffer, _)| buffer.size() != bytes) {
            let buffer = self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("depth read"), size: bytes, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
            self.depth_read = Some((buffer, Arc::new(AtomicU32::new(SLOT_FREE))));
        }
        let (buffer, state) = self.depth_read.clone().expect("made above");
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("depth read") });
        encoder.copy_buffer_to_buffer(&self.depth[self.host.current], 0, &buffer, 0, bytes);
        self.submit(encoder);
        state.store(SLOT_PENDING, Ordering::Release);
        let flag = state.clone();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
        let device = self.ctx.device.clone();
        Ok(Some(Box::new(move || {
            context::poll_until(&device, DEVICE_WAIT_LIMIT, "the depth read", || state.load(Ordering::Acquire) != SLOT_PENDING)?;
            if state.load(Ordering::Acquire) != SLOT_READY {
                state.store(SLOT_FREE, Ordering::Release);
                return Err(Error::Gpu("mapping the depth read failed".into()));
            }
            let depth = buffer.get_mapped_range(..).map(|view| bytemuck::pod_collect_to_vec::<u8, i32>(&view)).map_err(|e| Error::Gpu(e.to_string()));
            buffer.unmap();
            state.store(SLOT_FREE, Ordering::Release);
            depth
        })))
    }

    fn overwrite_cells(&mut self, cells: &[crate::simulation::CellOverwrite]) -> Result<bool> {
        self.overwrite_cells_now(cells)
    }

    fn reset_tile_changes(&mut self, tiles: &super::sleep::TileGrid) -> Result<bool> {
        self.reset_tile_changes_now(tiles)
    }

    fn begin_tile_changes(&mut self, tiles: &super::sleep::TileGrid, request: &super::TileRequest) -> Result<Option<super::TileChangesReader>> {
        self.begin_tile_changes_now(tiles, request)
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn description(&self) -> String {
        format!("GPU: {}", self.ctx.adapter_description())
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        self.host.new_terrain(terrain)?;
        self.ctx.queue.write_buffer(&self.terrain, 0, bytemuck::cast_slice(terrain));
        self.ctx.queue.write_buffer(&self.step_terrain, 0, bytemuck::cast_slice(terrain));
        Ok(())
    }

    fn advance(&mut self, plan: &FramePlan) -> Result<()> {
        self.check()?;
        self.host.check_plan(plan)?;
        // Back-pressure: never more than MAX_FRAMES_IN_FLIGHT frames queued on the device.
        while self.in_flight.len() >= MAX_FRAMES_IN_FLIGHT {
            let (submitted, oldest) = self.in_flight.pop_front().expect("non-empty");
            context::poll_until(&self.ctx.device, DEVICE_WAIT_LIMIT, "a frame in flight", || oldest.load(Ordering::Acquire))?;
            self.finished = submitted;
        }
        // Every finished frame's readback arrives and is applied before this frame is recorded:
        // the bound of GPU_SNAPSHOT_LATENCY, and a free staging buffer, rest on it.
        self.settle_readbacks()?;
        self.harvest();
        self.check()?;
        let start = self.host.start_frame(plan);
        self.ctx.queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&plan.constants));
        self.upload_edits(&start.edits, &start.forcing);
        let slot = match &start.read {
            Some(read) => Some(self.free_slot(read)?),
            None => None,
        };
        // The detail waves' uploads, before the frame's pass that dispatches them.
        let detail_frame = match &mut self.detail {
            Some(detail) => detail.prepare()?,
            None => None,
        };
        // Work riding on this submission (a sync server's comparison) is already in an encoder:
        // the frame's steps go on after it there.
        let mut riding = self.riding.take();
        let mut encoder = match riding.as_mut().and_then(|work| work.encoder.take()) {
            Some(encoder) => encoder,
            None => self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") }),
        };
        let (sleeping, ctx) = (&self.sleeping, &self.ctx);
        let all_stale = self.host.start_tiles(plan, &start, |tiles| sleeping.start_frame(ctx, tiles));
        if let Some(read) = &start.read {
            self.prepare_read(&mut encoder, read, all_stale);
        }
        if plan.substeps > 0 {
            encoder.clear_buffer(&self.sleeping.stats, 0, None);
        }
        let recovery = self.recovery.state.load(Ordering::Acquire) == SLOT_FREE && self.host.recovery.due(self.host.frames + 1).is_some();
        self.host.recipe(plan, &start, detail_frame.is_some(), recovery);
        let step = self.ctx.step_pipeline(StepMode::of(&plan.constants));
        // The recipe's compute passes go into one pass; its reads follow on the encoder.
        let mut at = 0;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("frame"), timestamp_writes: None });
            let mut timer = self.timer.take();
            if let Some(timer) = &mut timer {
                timer.stamp_pass(&mut pass, Stamp::FrameStart);
            }
            while let Some(frame_pass) = self.host.pass(at).filter(|p| !p.is_read()) {
                self.record_pass(&mut pass, frame_pass, &step, detail_frame.as_ref());
                if let Some(timer) = &mut timer {
                    let what = match frame_pass {
                        FramePass::PlanTiles { .. } => Stamp::Plan,
                        FramePass::Step { .. } => Stamp::Step,
                        _ => Stamp::Other,
                    };
                    timer.stamp_pass(&mut pass, what);
                }
                at += 1;
            }
            self.timer = timer;
        }
        self.host.current = self.host.current_after_recipe();
        let detail_read = match (&mut self.detail, detail_frame) {
            (Some(detail), Some(frame)) => detail.finish(&mut encoder, frame)?,
            _ => None,
        };
        self.host.frames += 1;
        self.readback_bytes = start.read.as_ref().map_or(0, |r| (r.bytes(self.host.grid.cell_count()) + SLEEP_REPORT_BYTES) as u64);
        let mut recovery = None;
        while let Some(frame_pass) = self.host.pass(at) {
            match (frame_pass, &start.read, slot) {
                (FramePass::ReadSnapshot, Some(read), Some(k)) => self.record_read_copy(&mut encoder, read, k),
                (FramePass::ReadRecovery { copy }, _, _) => recovery = self.record_recovery_copy(&mut encoder, copy),
                _ => {}
            }
            at += 1;
        }
        if let Some(timer) = &mut self.timer {
            timer.stamp_encoder(&mut encoder, Stamp::Other);
        }
        let (submitted, _) = self.submit(encoder);
        if let Some(work) = riding {
            work.submitted();
        }
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        self.ctx.queue.on_submitted_work_done(move || flag.store(true, Ordering::Release));
        self.in_flight.push_back((submitted, finished));
        if let Some(detail) = &mut self.detail {
            detail.submitted(detail_read);
        }
        if let (Some(read), Some(k)) = (start.read, slot) {
            self.map_read(k, read, submitted);
        }
        if let Some(recovery) = recovery {
            self.map_recovery(recovery);
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        self.check()
    }

    fn solidify(&mut self, c: &StepConstants, quanta: i32) -> Result<bool> {
        self.record_cooling(c, quanta)?;
        Ok(true)
    }

    fn want_full_snapshots(&mut self, full: bool) {
        self.host.reads.set_full(full);
    }

    fn last_readback_bytes(&self) -> u64 {
        self.readback_bytes
    }

    fn simulate_device_loss(&mut self) -> bool {
        self.ctx.device.destroy();
        true
    }

    // ---- Detail waves: everything in `detail.rs`. ----

    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = layout.map(|l| detail::GpuDetail::new(&self.ctx, l)).transpose()?;
        Ok(())
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

/// The largest storage binding (bytes) of the Vulkan adapter called `device_name`, as wgpu reads
/// it: for backends on a device that does not report it themselves (Godot's RenderingDevice).
/// `None` when no adapter of that name is found. Looked up once per name and process.
pub fn storage_binding_limit_of(device_name: &str) -> Option<u64> {
    static FOUND: parking_lot::Mutex<Vec<(String, Option<u64>)>> = parking_lot::Mutex::new(Vec::new());
    let mut found = FOUND.lock();
    if let Some((_, limit)) = found.iter().find(|(name, _)| name == device_name) {
        return *limit;
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let adapters = pollster::block_on(wgpu::Instance::new(desc).enumerate_adapters(wgpu::Backends::VULKAN));
    let limit = adapters.iter().find(|a| a.get_info().name == device_name).map(|a| a.limits().max_storage_buffer_binding_size);
    found.push((device_name.to_string(), limit));
    limit
}
