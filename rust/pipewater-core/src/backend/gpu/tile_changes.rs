//! A multiplayer server's capture on the wgpu backend ([`Backend::begin_tile_changes`],
//! `shaders/tile_changes.wgsl`): the device compares the water with the copy the last capture
//! took, tile by tile and bit for bit, and copies only the tiles that differ into a small buffer
//! that one `map_async` brings back, begun at one sync and taken at the next. The host's part
//! then follows the tiles that changed: a sleeping world with a river reads back the river's
//! tiles, not the grid, and never waits for the device. Nothing is made until a server resets
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
use crate::backend::{TileChanges, TileChangesReader};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Most cells one comparison reads back (20 MiB of depths and flows): at most this many cells'
/// worth of tiles are read per capture, the rest at the next.
pub const MAX_TILE_CHANGE_CELLS: usize = 1 << 20;

/// `TileChangeParams` of tile_changes.wgsl, for both GPU backends (Godot's RenderingDevice
/// checks its layout against the WGSL).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
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
    /// The uniform's padding to 32 bytes.
    pub pad: [u32; 3],
}

impl TileChangeParams {
    /// The comparison of `tiles` (square ones) reading at most `limit` of them.
    pub fn new(tiles: &TileGrid, limit: usize) -> Self {
        TileChangeParams { width: tiles.cells[0], height: tiles.cells[1], tile_size: tiles.size[0], tiles_x: tiles.tiles[0], limit: limit as u32, pad: [0; 3] }
    }
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
        // Bindings of tile_changes.wgsl: the parameters, the state's copy (read only), then what
        // the pass writes.
        let entry = |binding: u32| {
            let ty = match binding {
                0 => wgpu::BufferBindingType::Uniform,
                1 | 2 => wgpu::BufferBindingType::Storage { read_only: true },
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

/// A backend's comparison over one cutting into tiles: the captured copy, the slots read back
/// and their staging buffer, and the bind groups per current copy.
pub(super) struct GpuTileChanges {
    pipelines: Arc<TileChangePipelines>,
    tiles: TileGrid,
    /// Most tiles one comparison reads.
    capacity: usize,
    params: wgpu::Buffer,
    captured_depth: wgpu::Buffer,
    captured_flow: wgpu::Buffer,
    found: wgpu::Buffer,
    read_depth: wgpu::Buffer,
    read_flow: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// The staging buffer's state (`SLOT_*`): one read at a time.
    state: Arc<AtomicU32>,
    groups: [wgpu::BindGroup; 2],
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
        let found = buffer("tiles found", 4 * (1 + capacity), U::STORAGE | U::COPY_SRC | U::COPY_DST);
        let read_depth = buffer("tile change depth", 4 * capacity * stride, U::STORAGE | U::COPY_SRC);
        let read_flow = buffer("tile change flow", 16 * capacity * stride, U::STORAGE | U::COPY_SRC);
        let staging = buffer("tile change staging", TileChanges::staged_bytes(capacity, stride), U::MAP_READ | U::COPY_DST);
        let groups = [0, 1].map(|k| {
            let buffers = [&params, &backend.depth[k], &backend.flux[k], &captured_depth, &captured_flow, &found, &read_depth, &read_flow];
            super::bind_buffers(&ctx.device, &pipelines.layout, "tile changes", &buffers)
        });
        GpuTileChanges { pipelines, tiles, capacity, params, captured_depth, captured_flow, found, read_depth, read_flow, staging, state: Arc::new(AtomicU32::new(SLOT_FREE)), groups }
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
        self.submit(encoder);
        self.check()?;
        Ok(true)
    }

    /// [`crate::backend::Backend::begin_tile_changes`]: the comparison over copy `host.current`
    /// and the copy of its first `max_tiles` slots into the staging buffer, in a submission of
    /// their own after the work submitted so far; the reader maps and decodes them.
    pub(super) fn begin_tile_changes_now(&mut self, tiles: &TileGrid, max_tiles: usize) -> Result<Option<TileChangesReader>> {
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
        let changes = self.tile_changes.as_ref().expect("checked above");
        let limit = max_tiles.clamp(1, changes.capacity);
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        let params = TileChangeParams::new(tiles, limit);
        self.ctx.queue.write_buffer(&changes.params, 0, bytemuck::bytes_of(&params));
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tile changes") });
        encoder.clear_buffer(&changes.found, 0, Some(4));
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tile changes"), timestamp_writes: None });
            pass.set_pipeline(&changes.pipelines.compare);
            pass.set_bind_group(0, &changes.groups[self.host.current], &[]);
            pass.dispatch_workgroups(tiles.tiles[0], tiles.tiles[1], 1);
        }
        let (ids, depth_bytes) = (4 * (1 + limit) as u64, 4 * (limit * stride) as u64);
        encoder.copy_buffer_to_buffer(&changes.found, 0, &changes.staging, 0, ids);
        encoder.copy_buffer_to_buffer(&changes.read_depth, 0, &changes.staging, ids, depth_bytes);
        encoder.copy_buffer_to_buffer(&changes.read_flow, 0, &changes.staging, ids + depth_bytes, 4 * depth_bytes);
        let (staging, state) = (changes.staging.clone(), changes.state.clone());
        state.store(SLOT_PENDING, Ordering::Release);
        let total = TileChanges::staged_bytes(limit, stride) as u64;
        // The comparison rides on the next frame's submission (a server steps on at once): one
        // submission fewer a sync, which on a fast device was most of its cost. It runs before
        // that frame's steps, on the water of the frame it was begun at, as alone.
        let (mapped, flag) = (staging.clone(), state.clone());
        let then = Box::new(move || mapped.map_async(wgpu::MapMode::Read, ..total, move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release)));
        self.riding.set(&self.ctx.queue, super::RidingWork { commands: encoder.finish(), then });
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
            // Only the tiles that differed are taken from the mapping: the buffer holds room for
            // `limit` of them (64 at least, 1.3 MB), and copying it whole cost a sync more than
            // the rest of its capture.
            let decoded = staging.get_mapped_range(..total).map_err(|e| Error::Gpu(e.to_string())).and_then(|view| TileChanges::from_staged(&view, limit, stride));
            staging.unmap();
            state.store(SLOT_FREE, Ordering::Release);
            decoded
        }) }))
    }
}
