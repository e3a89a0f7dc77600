//! The detail waves of a world on the device (`world_water/detail.rs` decides each frame): the
//! flow region under the detail window gathered from the pages into dense buffers of the region's
//! size (`world_detail.wgsl`), then the dense grid's detail layer ([`GpuDetail`], the same
//! `detail.wgsl`) over those buffers as its flow grid. Both are dispatched in the world's frame,
//! after its edits and before its first step ([`World::advance`]), so the waves read the water
//! the frame's first step reads, as on a dense grid; what the host asks for (the texels, the
//! heights of the tiles queries touch) comes back through the layer's own readbacks, mapped
//! without waiting and picked up a frame or two later.

use super::coarse::PagePass;
use super::{CoarseParams, World};
use crate::backend::gpu::bind_buffers as bind;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::detail::{DetailRecording, GpuDetail};
use crate::backend::gpu::shaders;
use crate::detail::{DetailFrame, DetailLayout, DetailTexels};
use crate::error::{Error, Result};
use crate::pipes::StepConstants;
use std::sync::Arc;

/// Side of the square workgroup of the region's gather (`world_detail.wgsl` REGION_WG).
pub const REGION_WORKGROUP: u32 = 8;

/// The layer of a world: the gather's pipeline and region buffers, and the dense layer over them.
pub(super) struct WorldDetailLayer {
    layer: GpuDetail,
    /// The gather from the pages into the region's buffers.
    gather: PagePass,
    /// The region gathered: its first cell and size ([`CoarseParams`]), and the step constants
    /// the detail kernel reads it with (the region's size as the grid's).
    area: wgpu::Buffer,
    constants: wgpu::Buffer,
    terrain: wgpu::Buffer,
    depth: wgpu::Buffer,
    flux: wgpu::Buffer,
    /// Group 0 of the detail passes: the region as the flow.
    flow_group: wgpu::BindGroup,
    /// Cells of the region of the frame queued, if one is.
    queued: Option<[u32; 2]>,
}

/// A frame of the layer between [`WorldDetailLayer::prepare`] and [`WorldDetailLayer::finish`].
pub(super) struct PreparedDetail {
    recording: DetailRecording,
    /// The gather's groups: the world's fields (0) and the region's buffers (3).
    world_group: wgpu::BindGroup,
    gather_group: wgpu::BindGroup,
    groups: [u32; 2],
}

impl WorldDetailLayer {
    fn new(ctx: &Arc<GpuContext>, layout: DetailLayout) -> Result<WorldDetailLayer> {
        let layer = GpuDetail::new(ctx, layout)?;
        let device = &ctx.device;
        use wgpu::BufferBindingType as B;
        let writes = B::Storage { read_only: false };
        // The pages' slots, the region's area, then its terrain, depth and pipes.
        let gather = PagePass::new(ctx, &shaders::WORLD_DETAIL, "world detail region", "gather_detail_region", &[B::Storage { read_only: true }, B::Uniform, writes, writes, writes]);
        // The region is the window's flow cells and two more each way (world_water/detail.rs).
        let side = layout.flow_side() as u64 + 2;
        let cells = side * side;
        let limit = ctx.limits.max_storage_buffer_binding_size.min(ctx.limits.max_buffer_size);
        if cells * 16 > limit {
            return Err(Error::Gpu(format!(
                "a {0}x{0} detail window at subdivision {1} reads a region of {side}x{side} cells, whose pipes need a {2}-byte storage binding; {3} allows {limit}",
                layout.window,
                layout.subdivision,
                cells * 16,
                ctx.adapter.name
            )));
        }
        use wgpu::BufferUsages as U;
        let buffer = |label: &str, bytes: u64, usage: U| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage, mapped_at_creation: false });
        let area = buffer("world detail area", std::mem::size_of::<CoarseParams>() as u64, U::UNIFORM | U::COPY_DST);
        let constants = buffer("world detail constants", std::mem::size_of::<StepConstants>() as u64, U::UNIFORM | U::COPY_DST);
        let terrain = buffer("world detail terrain", cells * 4, U::STORAGE);
        let depth = buffer("world detail depth", cells * 4, U::STORAGE);
        let flux = buffer("world detail flux", cells * 16, U::STORAGE);
        let flow_group = bind(device, &ctx.detail_flow_layout, "world detail flow", &[&constants, &terrain, &depth, &flux]);
        ctx.check().map_err(|e| Error::Gpu(format!("the world's detail region pass failed to build: {e}")))?;
        Ok(WorldDetailLayer { layer, gather, area, constants, terrain, depth, flux, flow_group, queued: None })
    }

    /// Readies the queued frame for the world's frame pass: the layer's uploads, and the gather's
    /// bindings over the world's fields as they are now (`fields`: terrain, depth and pipes of
    /// the copy the frame's first step reads). `None` when no frame is queued.
    pub(super) fn prepare(&mut self, ctx: &GpuContext, world_fields: [&wgpu::Buffer; 5]) -> Result<Option<PreparedDetail>> {
        let Some(size) = self.queued.take() else { return Ok(None) };
        let Some(recording) = self.layer.prepare()? else { return Ok(None) };
        let [uniforms, terrain, depth, flux, page_slots] = world_fields;
        let world_group = bind(&ctx.device, &ctx.detail_flow_layout, "world detail fields", &[uniforms, terrain, depth, flux]);
        let gather_group = bind(&ctx.device, &self.gather.layout, "world detail region", &[page_slots, &self.area, &self.terrain, &self.depth, &self.flux]);
        let groups = [size[0].div_ceil(REGION_WORKGROUP), size[1].div_ceil(REGION_WORKGROUP)];
        Ok(Some(PreparedDetail { recording, world_group, gather_group, groups }))
    }

    /// Dispatches a prepared frame into the world's frame pass: the gather, then the layer's
    /// passes reading the region.
    pub(super) fn dispatch(&mut self, pass: &mut wgpu::ComputePass, prepared: &PreparedDetail) {
        pass.set_pipeline(&self.gather.pipeline);
        pass.set_bind_group(0, &prepared.world_group, &[]);
        pass.set_bind_group(3, &prepared.gather_group, &[]);
        pass.dispatch_workgroups(prepared.groups[0].max(1), prepared.groups[1].max(1), 1);
        self.layer.dispatch(pass, &self.flow_group, &prepared.recording);
    }

    /// Records the layer's readback copies after the pass; the slot to hand to
    /// [`WorldDetailLayer::submitted`].
    pub(super) fn finish(&mut self, encoder: &mut wgpu::CommandEncoder, prepared: PreparedDetail) -> Result<Option<usize>> {
        self.layer.finish(encoder, prepared.recording)
    }

    /// Maps the readback once the frame's encoder is submitted.
    pub(super) fn submitted(&mut self, read: Option<usize>) {
        self.layer.submitted(read);
    }
}

impl World {
    /// Puts the detail layer of `layout` on the device (its waves at rest), or takes it off with
    /// `None`. Refused when the device cannot hold the window (naming its figure).
    pub fn set_detail_layer(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = match layout {
            Some(layout) => Some(WorldDetailLayer::new(&self.ctx, layout)?),
            None => None,
        };
        Ok(())
    }

    /// The layout of the device's detail layer, while there is one.
    pub fn detail_layout(&self) -> Option<DetailLayout> {
        self.detail.as_ref().map(|d| d.layer.layout())
    }

    /// Queues `frame` for the next [`World::advance`]: it runs over the `size` cells from cell
    /// `first` (the region `world_water/detail.rs` names, within the world), read with
    /// `constants` (made for a grid of the region's size). A frame queued before replaces it.
    /// Refused, naming it, for a region off the world or larger than the layer's buffers.
    pub fn queue_detail(&mut self, frame: DetailFrame, first: [u32; 2], size: [u32; 2], constants: &StepConstants) -> Result<()> {
        let (width, height, side) = (self.width, self.height, self.side);
        let pages_x = self.pages.tiles[0];
        let Some(detail) = &mut self.detail else { return Err(Error::invalid("detail waves", "off", "on (set_detail_layer)")) };
        let most = detail.layer.layout().flow_side() + 2;
        let on_world = first[0] as u64 + size[0] as u64 <= width as u64 && first[1] as u64 + size[1] as u64 <= height as u64;
        if !on_world || size[0] == 0 || size[1] == 0 || size[0] > most || size[1] > most || constants.width != size[0] || constants.height != size[1] {
            return Err(Error::invalid(
                "detail region",
                format!("{}x{} cells at ({}, {}) read as {}x{}", size[0], size[1], first[0], first[1], constants.width, constants.height),
                format!("1 ..= {most} cells a side within the {width}x{height} world, its constants made for its size"),
            ));
        }
        let area = CoarseParams { origin: first, blocks: size, stride: 1, page_side: side, pages_x, listed: 0 };
        self.ctx.queue.write_buffer(&detail.area, 0, bytemuck::bytes_of(&area));
        self.ctx.queue.write_buffer(&detail.constants, 0, bytemuck::bytes_of(constants));
        detail.layer.queue(frame);
        detail.queued = Some(size);
        Ok(())
    }

    /// Heights of detail cells `cells` (in the kernel's coordinates) from the newest tiles that
    /// came back, 0 where none has yet; their tiles are read back from the next frame on.
    pub fn detail_heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        match &mut self.detail {
            Some(d) => d.layer.heights(cells),
            None => vec![0.0; cells.len()],
        }
    }

    /// The kernel's coordinates moved by `by` detail cells: the heights that came back follow.
    pub fn shift_detail_reads(&mut self, by: [i32; 2]) {
        if let Some(d) = &mut self.detail {
            d.layer.shift_reads(by);
        }
    }

    /// The newest detail texels that came back (storage order); asks for them from the next frame.
    pub fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        self.detail.as_mut()?.layer.texels()
    }

    /// The detail fields, `(h, v)` per storage cell, waiting for the device (tests, tools).
    pub fn read_detail_fields(&mut self) -> Result<Vec<[f32; 2]>> {
        match &mut self.detail {
            Some(d) => d.layer.read_fields(),
            None => Err(Error::invalid("detail waves", "off", "on (set_detail_layer)")),
        }
    }
}
