//! Cooling on the wgpu backend ([`crate::cooling`], `shaders/cooling.wgsl`): after a frame, a
//! submission of its own with two dispatches over every cell, the judge (which cells are still,
//! and how many quanta each turns) and the change (depth, terrain, the step's bed, the ledger's
//! solidified counter, and the marks that wake the changed tiles and redraw them). Nothing is
//! made until the first frame that cools: a simulation that never cools pays nothing.
//!
//! Recorded after the frame's own submission (whose snapshot and recovery reads were taken
//! before it), so the fields and counters any read sees belong to one instant; the next frame's
//! snapshot shows the cooled cells.

use super::{shaders, GpuBackend, GpuContext};
use crate::error::Result;
use crate::pipes::StepConstants;
use std::sync::Arc;

/// Invocations along each side of a cooling workgroup (`COOLING_WORKGROUP` in cooling.wgsl).
pub const COOLING_WORKGROUP: u32 = 8;

/// The cooling passes' layout and pipelines, shared by every simulation of the process.
pub(super) struct CoolingPipelines {
    layout: wgpu::BindGroupLayout,
    judge: wgpu::ComputePipeline,
    apply: wgpu::ComputePipeline,
}

impl CoolingPipelines {
    fn shared(ctx: &GpuContext) -> Arc<CoolingPipelines> {
        ctx.cooling_pipelines.get_or_init(|| Arc::new(CoolingPipelines::build(ctx))).clone()
    }

    fn build(ctx: &GpuContext) -> CoolingPipelines {
        let device = &ctx.device;
        // Bindings of cooling.wgsl: the constants and the tiles' parameters, then storage, read
        // only where the shader only reads (the displacement, the pipes).
        let entry = |binding: u32| {
            let ty = match binding {
                0 | 1 => wgpu::BufferBindingType::Uniform,
                4 | 6 => wgpu::BufferBindingType::Storage { read_only: true },
                _ => wgpu::BufferBindingType::Storage { read_only: false },
            };
            wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            }
        };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..11).map(entry).collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("cooling"), entries: &entries });
        let pipeline_layout =
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("cooling"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(shaders::COOLING.file()),
            source: wgpu::ShaderSource::Wgsl(shaders::COOLING.source().into()),
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            })
        };
        CoolingPipelines { judge: pipeline("judge_cooling"), apply: pipeline("apply_cooling"), layout }
    }
}

/// A backend's cooling: the quanta of the frame and of each cell (`Cooling` of cooling.wgsl),
/// and its bind groups per current copy.
pub(super) struct GpuCooling {
    pipelines: Arc<CoolingPipelines>,
    cells: wgpu::Buffer,
    groups: [wgpu::BindGroup; 2],
}

impl GpuCooling {
    /// Made for `backend`'s buffers (which live as long as it does).
    fn new(backend: &GpuBackend) -> GpuCooling {
        let ctx = &backend.ctx;
        let pipelines = CoolingPipelines::shared(ctx);
        let n = backend.host.grid.cell_count() as u64;
        let cells = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cooling"),
            size: 4 + 4 * n,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let groups = [0, 1].map(|k| {
            let buffers = [
                &backend.uniforms,
                &backend.sleeping.params,
                &backend.step_terrain,
                &backend.terrain,
                &backend.displacement,
                &backend.depth[k],
                &backend.flux[k],
                &backend.counters,
                // The flags the last step wrote (the step from the other copy), which the next
                // frame's first plan reads.
                &backend.sleeping.flags[1 - k],
                &backend.sleeping.stale,
                &cells,
            ];
            super::bind_buffers(&ctx.device, &pipelines.layout, "cooling", &buffers)
        });
        GpuCooling { pipelines, cells, groups }
    }
}

impl GpuBackend {
    /// [`crate::backend::Backend::solidify`]: the edits queued so far, then the judge and the
    /// change over copy `host.current`, in a submission of their own.
    pub(super) fn record_cooling(&mut self, c: &StepConstants, quanta: i32) -> Result<()> {
        self.check()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        if self.cooling.is_none() {
            self.cooling = Some(GpuCooling::new(self));
        }
        let Some(cooling) = &self.cooling else { return Ok(()) };
        let q = &self.ctx.queue;
        q.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(c));
        q.write_buffer(&cooling.cells, 0, bytemuck::bytes_of(&quanta));
        let groups = [c.width.div_ceil(COOLING_WORKGROUP), c.height.div_ceil(COOLING_WORKGROUP)];
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("cooling") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("cooling"), timestamp_writes: None });
            pass.set_bind_group(0, &cooling.groups[self.host.current], &[]);
            // wgpu orders the second dispatch after the first: it writes what the first reads.
            pass.set_pipeline(&cooling.pipelines.judge);
            pass.dispatch_workgroups(groups[0], groups[1], 1);
            pass.set_pipeline(&cooling.pipelines.apply);
            pass.dispatch_workgroups(groups[0], groups[1], 1);
        }
        self.submit(encoder);
        self.check()
    }
}
