//! A multiplayer server's capture on the wgpu backend ([`Backend::begin_tile_changes`],
//! `shaders/tile_changes.wgsl`): the device compares the water with the copy the last capture
//! took, tile by tile and bit for bit, describes each tile that differs in 24 bytes (total,
//! hash, change) and copies only the tiles the server asks for (the ones it will send next) into
//! a small buffer that one `map_async` brings back, begun at one sync and taken at the next. The
//! host's part then follows what the clients are sent, not what changed: a flood across the grid
//! reads back a record per changed tile and the water of the few tiles the budgets let through,
//! and never waits for the device. Nothing is made until a server resets
//! the comparison ([`Backend::reset_tile_changes`]): a game that is not a server pays nothing.
//!
//! The device's part is one pass over the state (two reads of depth and flow a sync), which a
//! GPU does in microseconds; it does not trust which tiles stepped, so a tile changed by an edit,
//! a body, cooling or a neighbour's flow is found however it changed.
//!
//! [`Backend::begin_tile_changes`]: crate::backend::Backend::begin_tile_changes
//! [`Backend::reset_tile_changes`]: crate::backend::Backend::reset_tile_changes

use super::{context, shaders, GpuBackend, GpuContext, DEVICE_WAIT_LIMIT, SLOT_FAILED, SLOT_FREE, SLOT_PENDING, SLOT_READY};
use crate::backend::sleep::TileGrid;
use crate::backend::{TileChanges, TileChangesReader, TileRequest};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Most cells one comparison reads back (20 MiB of depths and flows): at most this many cells'
/// worth of tiles are read per capture, the rest at the next.
pub const MAX_TILE_CHANGE_CELLS: usize = 1 << 20;

/// `TileChangeParams` of tile_changes.wgsl, for both GPU backends (Godot's RenderingDevice
/// checks its layout against the WGSL).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TileChangeParams {
    /// Grid cells along x.
    pub width: u32,
    /// Grid cells along y.
    pub height: u32,
    /// Cells along each side of a tile.
    pub tile_size: u32,
    /// Tiles along x.
    pub tiles_x: u32,
    /// Most tiles read (slots).
    pub limit: u32,
    /// 1: every tile that differs is read (within the slots), not only the wanted ones.
    pub read_every_change: u32,
    /// Tiles of the grid (the room for records in the report).
    pub tile_count: u32,
    /// The uniform's padding to 32 bytes.
    pub pad: u32,
}

impl TileChangeParams {
    /// The comparison of `tiles` (square ones) reading at most `limit` of them, every one that
    /// differs when `read_every_change`.
    pub fn new(tiles: &TileGrid, limit: usize, read_every_change: bool) -> Self {
        TileChangeParams {
            width: tiles.cells[0],
            height: tiles.cells[1],
            tile_size: tiles.size[0],
            tiles_x: tiles.tiles[0],
            limit: limit as u32,
            read_every_change: read_every_change as u32,
            tile_count: tiles.count() as u32,
            pad: 0,
        }
    }
}

/// Words of the wanted tiles' bits over `tiles` (one bit a tile).
pub fn wanted_words(tiles: &TileGrid) -> usize {
    tiles.count().div_ceil(32)
}

/// The wanted bits of `request` for a buffer of [`wanted_words`] of `tiles`, as bytes.
pub fn wanted_bytes(tiles: &TileGrid, request: &TileRequest) -> Vec<u8> {
    let mut words = vec![0u32; wanted_words(tiles)];
    for (to, from) in words.iter_mut().zip(&request.wanted) {
        *to = *from;
    }
    bytemuck::cast_slice(&words).to_vec()
}

/// The comparison's layout and pipeline, shared by every simulation of the process.
pub(super) struct TileChangePipelines {
    layout: wgpu::BindGroupLayout,
    compare: wgpu::ComputePipeline,
}

impl TileChangePipelines {
    fn shared(ctx: &GpuContext) -> Arc<TileChangePipelines> {
        ctx.tile_change_pipelines.get_or_init(|| Arc::new(TileChangePipelines::build(ctx))).clone()
    }

    fn build(ctx: &GpuContext) -> TileChangePipelines {
        let device = &ctx.device;
        // Bindings of tile_changes.wgsl: the parameters, the state's copy (read only), the
        // captured copy and the report the pass writes, the wanted tiles (read only), and which
        // tiles differed last time.
        let entry = |binding: u32| {
            let ty = match binding {
                0 => wgpu::BufferBindingType::Uniform,
                1 | 2 | 6 => wgpu::BufferBindingType::Storage { read_only: true },
                _ => wgpu::BufferBindingType::Storage { read_only: false },
            };
            wgpu::BindGroupLayoutEntry { binding, visibility: wgpu::ShaderStages::COMPUTE, ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None }, count: None }
        };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..8).map(entry).collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("tile changes"), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("tile changes"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(shaders::TILE_CHANGES.file()), source: wgpu::ShaderSource::Wgsl(shaders::TILE_CHANGES.source().into()) });
        let compare = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("compare_tiles"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("compare_tiles"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        TileChangePipelines { layout, compare }
    }
}

/// A backend's comparison over one cutting into tiles: the captured copy, the report read back
/// and its staging buffer, and the bind groups per current copy.
pub(super) struct GpuTileChanges {
    pipelines: Arc<TileChangePipelines>,
    tiles: TileGrid,
    /// Most tiles one comparison reads.
    capacity: usize,
    params: wgpu::Buffer,
    captured_depth: wgpu::Buffer,
    captured_flow: wgpu::Buffer,
    /// What the pass writes for the host, laid out as staged ([`TileChanges::staged_bytes`]).
    report: wgpu::Buffer,
    wanted: wgpu::Buffer,
    /// Per tile, whether it differed at the last comparison (a tile that starts to change is
    /// read at once).
    differed: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// The staging buffer's state (`SLOT_*`): one read at a time.
    state: Arc<AtomicU32>,
    groups: [wgpu::BindGroup; 2],
    /// What `params` and `wanted` hold: a sync that asks the same writes nothing (a write is a
    /// staging allocation and a copy on the next submission).
    written: Option<(TileChangeParams, bool)>,
}

impl GpuTileChanges {
    fn new(backend: &GpuBackend, tiles: TileGrid) -> GpuTileChanges {
        use wgpu::BufferUsages as U;
        let ctx = &backend.ctx;
        let pipelines = TileChangePipelines::shared(ctx);
        let n = backend.host.grid.cell_count();
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        let capacity = (MAX_TILE_CHANGE_CELLS / stride).clamp(1, tiles.count());
        let buffer = |label: &str, bytes: usize, usage: U| ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16) as u64, usage, mapped_at_creation: false });
        let params = buffer("tile change params", std::mem::size_of::<TileChangeParams>(), U::UNIFORM | U::COPY_DST);
        let captured_depth = buffer("captured depth", 4 * n, U::STORAGE | U::COPY_DST);
        let captured_flow = buffer("captured flow", 16 * n, U::STORAGE | U::COPY_DST);
        let report_bytes = TileChanges::staged_bytes(capacity, stride, tiles.count());
        let report = buffer("tile change report", report_bytes, U::STORAGE | U::COPY_SRC | U::COPY_DST);
        let wanted = buffer("wanted tiles", 4 * wanted_words(&tiles), U::STORAGE | U::COPY_DST);
        let differed = buffer("tiles differed", 4 * tiles.count(), U::STORAGE | U::COPY_DST);
        let staging = buffer("tile change staging", report_bytes, U::MAP_READ | U::COPY_DST);
        let groups = [0, 1].map(|k| {
            let buffers = [&params, &backend.depth[k], &backend.flux[k], &captured_depth, &captured_flow, &report, &wanted, &differed];
            super::bind_buffers(&ctx.device, &pipelines.layout, "tile changes", &buffers)
        });
        GpuTileChanges { pipelines, tiles, capacity, params, captured_depth, captured_flow, report, wanted, differed, staging, state: Arc::new(AtomicU32::new(SLOT_FREE)), groups, written: None }
    }
}

impl GpuBackend {
    /// [`crate::backend::Backend::reset_tile_changes`]: the captured copy made (or remade, for
    /// other tiles) and set to the current copy of the fields, edits queued so far applied.
    pub(super) fn reset_tile_changes_now(&mut self, tiles: &TileGrid) -> Result<bool> {
        self.check()?;
        if tiles.cells != [self.host.grid.width, self.host.grid.height] || tiles.size[0] != tiles.size[1] || tiles.size[0] == 0 {
            return Err(Error::invalid("tiles", format!("{:?} of {:?} cells", tiles.size, tiles.cells), format!("square tiles of the grid's {} × {} cells", self.host.grid.width, self.host.grid.height)));
        }
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        if self.tile_changes.as_ref().is_none_or(|c| c.tiles != *tiles) {
            self.tile_changes = Some(GpuTileChanges::new(self, *tiles));
        }
        let changes = self.tile_changes.as_ref().expect("made above");
        let n = self.host.grid.cell_count() as u64;
        let k = self.host.current;
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tile changes reset") });
        encoder.copy_buffer_to_buffer(&self.depth[k], 0, &changes.captured_depth, 0, 4 * n);
        encoder.copy_buffer_to_buffer(&self.flux[k], 0, &changes.captured_flow, 0, 16 * n);
        encoder.clear_buffer(&changes.differed, 0, None);
        self.submit(encoder);
        self.check()?;
        Ok(true)
    }

    /// [`crate::backend::Backend::begin_tile_changes`]: the comparison over copy `host.current`
    /// and the copy of its records and first `request.max_tiles` slots into the staging buffer,
    /// riding on the next submission after the work submitted so far; the reader maps and
    /// decodes them.
    pub(super) fn begin_tile_changes_now(&mut self, tiles: &TileGrid, request: &TileRequest) -> Result<Option<TileChangesReader>> {
        self.check()?;
        let Some(changes) = self.tile_changes.as_ref().filter(|c| c.tiles == *tiles) else { return Ok(None) };
        match changes.state.load(Ordering::Acquire) {
            // A read whose reader was dropped unread: its mapping is given back here.
            SLOT_READY => {
                changes.staging.unmap();
                changes.state.store(SLOT_FREE, Ordering::Release);
            }
            SLOT_FAILED => changes.state.store(SLOT_FREE, Ordering::Release),
            SLOT_FREE => {}
            _ => return Ok(None),
        }
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let changes = self.tile_changes.as_mut().expect("checked above");
        let limit = request.max_tiles.clamp(1, changes.capacity);
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        let tile_count = tiles.count();
        let params = TileChangeParams::new(tiles, limit, request.read_every_change);
        let none_wanted = request.wanted.iter().all(|&w| w == 0);
        if changes.written.is_none_or(|(p, _)| p != params) {
            self.ctx.queue.write_buffer(&changes.params, 0, bytemuck::bytes_of(&params));
        }
        if !(none_wanted && changes.written.is_some_and(|(_, none)| none)) {
            self.ctx.queue.write_buffer(&changes.wanted, 0, &wanted_bytes(tiles, request));
        }
        changes.written = Some((params, none_wanted));
        let changes = self.tile_changes.as_ref().expect("checked above");
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tile changes") });
        encoder.clear_buffer(&changes.report, 0, Some(8));
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tile changes"), timestamp_writes: None });
            pass.set_pipeline(&changes.pipelines.compare);
            pass.set_bind_group(0, &changes.groups[self.host.current], &[]);
            pass.dispatch_workgroups(tiles.tiles[0], tiles.tiles[1], 1);
        }
        // The report of `limit` slots is its first bytes, as staged.
        let total = TileChanges::staged_bytes(limit, stride, tile_count) as u64;
        encoder.copy_buffer_to_buffer(&changes.report, 0, &changes.staging, 0, total);
        let (staging, state) = (changes.staging.clone(), changes.state.clone());
        state.store(SLOT_PENDING, Ordering::Release);
        // The comparison rides on the next frame's submission (a server steps on at once), in
        // the encoder the frame records its steps into: an encoder and a submission fewer a sync,
        // which on a fast device were most of its cost. It runs before that frame's steps, on the
        // water of the frame it was begun at, as alone.
        let (mapped, flag) = (staging.clone(), state.clone());
        let then: Box<dyn FnOnce(bool) + Send> = Box::new(move |submitted| {
            if submitted {
                mapped.map_async(wgpu::MapMode::Read, ..total, move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
            } else {
                flag.store(SLOT_FAILED, Ordering::Release);
            }
        });
        self.riding.set(&self.ctx.queue, super::RidingWork { encoder: Some(encoder), then: Some(then) });
        self.check()?;
        let (device, queue) = (self.ctx.device.clone(), self.ctx.queue.clone());
        let (polled, arrived, riding) = (device.clone(), state.clone(), self.riding.clone());
        let flushed = queue.clone();
        let ready = Box::new(move || {
            // No frame followed (a paused server): the comparison goes alone.
            riding.submit_alone(&flushed);
            let _ = polled.poll(wgpu::PollType::Poll);
            arrived.load(Ordering::Acquire) != SLOT_PENDING
        });
        let riding = self.riding.clone();
        Ok(Some(TileChangesReader { ready, read: Box::new(move || {
            riding.submit_alone(&queue);
            context::poll_until(&device, DEVICE_WAIT_LIMIT, "the tile changes' read", || state.load(Ordering::Acquire) != SLOT_PENDING)?;
            if state.load(Ordering::Acquire) != SLOT_READY {
                state.store(SLOT_FREE, Ordering::Release);
                return Err(Error::Gpu("mapping the tile changes' read failed".into()));
            }
            // Only the records and slots filled are taken from the mapping: the buffer holds room
            // for `limit` tiles (1.3 MB for 64), and copying it whole cost a sync more than the
            // rest of its capture.
            let decoded = staging.get_mapped_range(..total).map_err(|e| Error::Gpu(e.to_string())).and_then(|view| TileChanges::from_staged(&view, limit, stride, tile_count));
            staging.unmap();
            state.store(SLOT_FREE, Ordering::Release);
            decoded
        }) }))
    }
}
