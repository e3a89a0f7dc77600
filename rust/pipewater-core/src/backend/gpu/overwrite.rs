//! A multiplayer client's write of the server's tiles on the wgpu backend
//! ([`crate::backend::Backend::overwrite_cells`], `shaders/overwrite.wgsl`): the cells given
//! (each its depth and four flows' bits, 32 bytes) are uploaded in one small list and scattered
//! into the copy that holds the state by one dispatch, which also books the depth changed in the
//! ledger on the device; the host marks their tiles to step next ([`GpuHost::overwrites`]). No
//! whole state crosses between host and device, and no tile wakes but those written.
//!
//! Recorded in a submission of its own after the edits queued before it (which the CPU applied
//! first), so it lands between the frame before and the frame after as on the CPU. Like an edit
//! it writes only the current copy: the next step runs the marked tiles from it, and every tile
//! it skips already holds its bits in both copies (`super` says why that is exact). Nothing is
//! made until the first write: a game that is not a client pays nothing.
//!
//! [`GpuHost::overwrites`]: crate::backend::gpu_host::GpuHost::overwrites

use super::list::DeviceList;
use super::{list_workgroups, shaders, GpuBackend, GpuContext};
use crate::error::Result;
use crate::simulation::CellOverwrite;
use std::sync::Arc;

/// Invocations of an `overwrite_cells` workgroup (`OVERWRITE_WORKGROUP` in overwrite.wgsl).
pub const OVERWRITE_WORKGROUP: u32 = 64;

/// The write's layout and pipeline, shared by every simulation of the process.
pub(super) struct OverwritePipelines {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl OverwritePipelines {
    fn shared(ctx: &GpuContext) -> Arc<OverwritePipelines> {
        ctx.overwrite_pipelines.get_or_init(|| Arc::new(OverwritePipelines::build(ctx))).clone()
    }

    fn build(ctx: &GpuContext) -> OverwritePipelines {
        let device = &ctx.device;
        // Bindings of overwrite.wgsl: depth, flows and counters written, the list read.
        let entry = |binding: u32| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only: binding == 3 }, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..4).map(entry).collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("overwrite cells"), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("overwrite cells"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(shaders::OVERWRITE.file()), source: wgpu::ShaderSource::Wgsl(shaders::OVERWRITE.source().into()) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("overwrite_cells"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("overwrite_cells"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        OverwritePipelines { layout, pipeline }
    }
}

/// A backend's write: the list and the bind groups per current copy (remade when the list grows).
pub(super) struct GpuOverwrite {
    pipelines: Arc<OverwritePipelines>,
    list: DeviceList,
    groups: Option<[wgpu::BindGroup; 2]>,
}

impl GpuBackend {
    /// [`crate::backend::Backend::overwrite_cells`]: the queued edits, then the write, each in a
    /// submission of its own.
    pub(super) fn overwrite_cells_now(&mut self, cells: &[CellOverwrite]) -> Result<bool> {
        self.check()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let items = self.host.overwrites(cells);
        if items.is_empty() {
            return Ok(true);
        }
        let ctx = self.ctx.clone();
        let write = self.overwrite.get_or_insert_with(|| GpuOverwrite {
            pipelines: OverwritePipelines::shared(&ctx),
            list: DeviceList::new(&ctx.device, "overwrites", 1024, std::mem::size_of::<crate::backend::gpu_host::DeviceOverwrite>()),
            groups: None,
        });
        if write.list.upload(&ctx.device, &ctx.queue, "overwrites", bytemuck::cast_slice(&items)) {
            write.groups = None;
        }
        let (depth, flux, counters) = (&self.depth, &self.flux, &self.counters);
        let groups = write.groups.get_or_insert_with(|| [0, 1].map(|k| super::bind_buffers(&ctx.device, &write.pipelines.layout, "overwrite cells", &[&depth[k], &flux[k], counters, &write.list.buffer])));
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("overwrite cells") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("overwrite cells"), timestamp_writes: None });
            pass.set_pipeline(&write.pipelines.pipeline);
            pass.set_bind_group(0, &groups[self.host.current], &[]);
            pass.dispatch_workgroups(list_workgroups(items.len(), OVERWRITE_WORKGROUP, ctx.limits.max_compute_workgroups_per_dimension), 1, 1);
        }
        self.submit(encoder);
        self.check()?;
        Ok(true)
    }
}
