//! Timestamps between the dispatches of the frames, for the benchmarks (`world_bench --timing`,
//! issue #48): where the device's time goes (the plans, the steps, the rest), and how long it sits
//! idle between frames, the host's share. Asked for with `PIPEWATER_GPU_TIMESTAMPS=1`, which makes
//! the device with timestamps inside passes where the adapter has them; never on otherwise.

use super::context::GpuContext;
use crate::error::{Error, Result};

/// The features timestamps between dispatches need.
pub(crate) const TIMESTAMP_FEATURES: wgpu::Features =
    wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS).union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

/// Timestamps a frame may take at most: a frame is recorded whole or not at all.
const MOST_STAMPS_A_FRAME: u32 = 128;

/// What ended at a timestamp.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// Nothing: a frame's first work begins.
    FrameStart,
    /// A step's plan of its awake tiles.
    Plan,
    /// A step.
    Step,
    /// Anything else of the frame (edits, reports, snapshots, reads' copies).
    Other,
}

/// The timestamps of the frames recorded since it was made.
pub(crate) struct DispatchTimer {
    queries: wgpu::QuerySet,
    capacity: u32,
    stamps: Vec<Stamp>,
    /// Whether the frame being recorded is stamped (there was room for it when it began).
    in_frame: bool,
}

impl DispatchTimer {
    /// Room for `capacity` timestamps; `None` when the device was made without them.
    pub(crate) fn new(ctx: &GpuContext, capacity: u32) -> Option<DispatchTimer> {
        if !ctx.device.features().contains(TIMESTAMP_FEATURES) {
            return None;
        }
        let capacity = capacity.clamp(1, wgpu::QUERY_SET_MAX_QUERIES);
        let queries = ctx.device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("dispatch times"), ty: wgpu::QueryType::Timestamp, count: capacity });
        Some(DispatchTimer { queries, capacity, stamps: Vec::new(), in_frame: false })
    }

    /// The next query of a stamp `what`, if the frame is stamped.
    fn next(&mut self, what: Stamp) -> Option<u32> {
        if what == Stamp::FrameStart {
            self.in_frame = self.stamps.len() as u32 + MOST_STAMPS_A_FRAME <= self.capacity;
        }
        if !self.in_frame || self.stamps.len() as u32 >= self.capacity {
            return None;
        }
        self.stamps.push(what);
        Some(self.stamps.len() as u32 - 1)
    }

    pub(crate) fn stamp_pass(&mut self, pass: &mut wgpu::ComputePass, what: Stamp) {
        if let Some(at) = self.next(what) {
            pass.write_timestamp(&self.queries, at);
        }
    }

    pub(crate) fn stamp_encoder(&mut self, encoder: &mut wgpu::CommandEncoder, what: Stamp) {
        if let Some(at) = self.next(what) {
            encoder.write_timestamp(&self.queries, at);
        }
    }

    /// Each stamp and its time in nanoseconds of the device's clock, waiting for the device.
    pub(crate) fn read(self, ctx: &GpuContext) -> Result<Vec<(Stamp, u64)>> {
        let used = self.stamps.len() as u32;
        if used == 0 {
            return Ok(Vec::new());
        }
        use wgpu::BufferUsages as U;
        let bytes = 8 * used as u64;
        let buffer = |label: &str, usage: U| ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes, usage, mapped_at_creation: false });
        let resolved = buffer("dispatch times", U::QUERY_RESOLVE | U::COPY_SRC);
        let staging = buffer("dispatch times read", U::MAP_READ | U::COPY_DST);
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("dispatch times") });
        encoder.resolve_query_set(&self.queries, 0..used, &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &staging, 0, bytes);
        ctx.queue.submit([encoder.finish()]);
        let state = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let flag = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { 1 } else { 2 }, std::sync::atomic::Ordering::Release));
        super::context::poll_until(&ctx.device, std::time::Duration::from_secs(60), "the dispatch times", || state.load(std::sync::atomic::Ordering::Acquire) != 0)?;
        if state.load(std::sync::atomic::Ordering::Acquire) != 1 {
            return Err(Error::Gpu("mapping the dispatch times failed".into()));
        }
        let period = ctx.queue.get_timestamp_period() as f64;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..]);
        Ok(self.stamps.into_iter().zip(ticks).map(|(what, t)| (what, (t as f64 * period) as u64)).collect())
    }
}
