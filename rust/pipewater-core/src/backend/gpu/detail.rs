//! The detail wave layer ([`crate::detail`]) on the wgpu backend: its fields in storage buffers,
//! the passes of `shaders/detail.wgsl` submitted with each frame's steps, and the readbacks of
//! what the host asks for (the tiles queries read, the texels an engine copies into a texture).
//!
//! * Fields: `(h, v)` per storage cell twice: each substep reads one and writes the other, and
//!   `current` says which holds the state between frames. The hulls' pressure. The passes read
//!   the flow's own fields (group 0, read only), so the layer keeps no copy of the flow region.
//! * A frame rides in the flow's frame, in its compute pass right after the first step, over the
//!   copy of the fields that step reads: nothing orders the two, so they run side by side
//!   ([`GpuDetail::prepare`], [`GpuDetail::dispatch`], [`GpuDetail::finish`]): pressure list,
//!   scroll, forcing, the substeps, and when asked the texels and the gather of tiles,
//!   copied into a staging buffer mapped with `map_async`. Nothing waits; what arrived is picked
//!   up by the next call (a frame or two later, as the backend's snapshots).
//! * The pipelines are built once per process, like the backend's own ([`GpuContext`]).

use super::list::DeviceList;
use super::GpuContext;
use super::shaders;
use crate::detail::host::{DetailEntry, DetailHost, DetailStart};
use crate::detail::tiles::{DETAIL_TILE_BYTES, MAX_DETAIL_TILES_PER_READ};
use crate::detail::{DetailConstants, DetailFrame, DetailLayout, DetailTexels};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub use crate::detail::host::{DETAIL_LIST_WORKGROUP, DETAIL_WORKGROUP};

/// The group the layer's own bindings are in (`@group(3)`).
pub const DETAIL_GROUP: u32 = 3;

/// Bindings of group 3 the wgpu passes use, and whether each is read-only (the storage texture
/// of binding 10 serves Godot's RenderingDevice only).
pub const DETAIL_BINDINGS: [(u32, BindingUse); 9] = [
    (0, BindingUse::Uniform),
    (2, BindingUse::Storage { read_only: true }),
    (3, BindingUse::Storage { read_only: false }),
    (4, BindingUse::Storage { read_only: false }),
    (5, BindingUse::Storage { read_only: true }),
    (6, BindingUse::Storage { read_only: true }),
    (7, BindingUse::Storage { read_only: true }),
    (8, BindingUse::Storage { read_only: false }),
    (9, BindingUse::Storage { read_only: false }),
];

/// How a binding of [`DETAIL_BINDINGS`] is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingUse {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage>`, read-only or not.
    Storage {
        /// `var<storage, read>`.
        read_only: bool,
    },
}

/// The layer's pipelines, shared by every simulation of the process.
pub(super) struct DetailPipelines {
    layout: wgpu::BindGroupLayout,
    press: wgpu::ComputePipeline,
    scroll: wgpu::ComputePipeline,
    force: wgpu::ComputePipeline,
    substep: wgpu::ComputePipeline,
    texels: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
}

impl DetailPipelines {
    fn shared(ctx: &GpuContext) -> Result<Arc<DetailPipelines>> {
        ctx.detail_pipelines.get_or_init(|| DetailPipelines::build(ctx).map(Arc::new)).clone()
    }

    fn build(ctx: &GpuContext) -> Result<DetailPipelines> {
        let device = &ctx.device;
        let entries: Vec<wgpu::BindGroupLayoutEntry> = DETAIL_BINDINGS
            .iter()
            .map(|&(binding, kind)| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: match kind {
                    BindingUse::Uniform => wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
                    BindingUse::Storage { read_only } => {
                        wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only }, has_dynamic_offset: false, min_binding_size: None }
                    }
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("detail"), entries: &entries });
        // A build with the `shader-overrides` feature may build the layer's passes from another
        // detail.wgsl (the family's shared fragments in front as usual), with the same bindings and
        // entry points: variants compared in one benchmark run ([`super::overrides`]).
        let source = match super::overrides::wgsl(super::overrides::DETAIL_WGSL)? {
            Some(variant) => shaders::DETAIL.source_with(&variant),
            None => shaders::DETAIL.source(),
        };
        let desc = wgpu::ShaderModuleDescriptor { label: Some(shaders::DETAIL.file()), source: wgpu::ShaderSource::Wgsl(source.into()) };
        // SAFETY: as for the step kernel (context.rs), without naga's injected bounds checks:
        // every storage index the layer forms is a window cell tested with `inside`, clamped
        // into the window or bounded by the dispatch (`gid < window`), a flow cell tested
        // against the region and the grid (`region_flow_cell`) or a neighbour of one replaced by
        // the cell itself when off the grid, or a list item below a count the host wrote with
        // the list (ripples and pressure cells also against `arrayLength`); the substep's
        // workgroup arrays are indexed inside their boxes (the advection's first sample clamped
        // to its reach around the cell, the wave box clamped to that reach around the tile, the
        // velocities tested against their box); its loops have fixed bounds or run over those
        // counts. The buffers are sized for the layout in `GpuDetail::new`.
        // With naga's checks the layer ran 1.7× as long at a 2048² window on an H100.
        let module = unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) };
        // Every pass sees the flow at group 0 (those that read the flow use it), read only, so that
        // nothing orders the layer after the step that reads the same fields. Group 0 is there even
        // for passes that do not read the flow: with wgpu 30 on lavapipe a pipeline layout that
        // begins with an empty slot dispatched nothing, without an error.
        let with_flow = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("detail"),
            bind_group_layouts: &[Some(&ctx.detail_flow_layout), None, None, Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&with_flow),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let pipelines = DetailPipelines {
            press: pipeline("detail_press"),
            scroll: pipeline("detail_scroll"),
            force: pipeline("detail_force"),
            substep: pipeline("detail_substep"),
            texels: pipeline("detail_pack_texels"),
            gather: pipeline("detail_gather"),
            layout,
        };
        ctx.check().map_err(|e| Error::Gpu(format!("the detail shaders failed to build: {e}")))?;
        Ok(pipelines)
    }
}

const SLOT_FREE: u32 = 0;
const SLOT_PENDING: u32 = 1;
const SLOT_READY: u32 = 2;
const SLOT_FAILED: u32 = 3;

/// A staging buffer of the readback ring: the gathered tiles, then (when asked) the texels.
struct ReadSlot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU32>,
    tiles: Vec<[i32; 2]>,
    texels: bool,
    /// Frames the layer had run when the copy was recorded, to keep the newest.
    frame: u64,
    /// Clears ([`GpuDetail::clear`]) before the copy: older reads no longer hold.
    epoch: u64,
}

/// A frame of the layer between [`GpuDetail::prepare`] and [`GpuDetail::finish`].
pub struct DetailRecording {
    frame: DetailFrame,
    /// The tiles whose heights the frame gathers (none when no staging buffer was free).
    tiles: Vec<[i32; 2]>,
    /// The staging buffer the frame's reads are copied into, if any.
    readback: Option<usize>,
}

/// The layer on one wgpu simulation.
pub struct GpuDetail {
    ctx: Arc<GpuContext>,
    pipelines: Arc<DetailPipelines>,
    /// The frame queued, which of `fields` holds the state, the tiles asked for, the passes.
    host: DetailHost,
    uniforms: wgpu::Buffer,
    fields: [wgpu::Buffer; 2],
    pressure: wgpu::Buffer,
    ripples: DeviceList,
    pressed: DeviceList,
    tile_list: DeviceList,
    gathered: wgpu::Buffer,
    texels: wgpu::Buffer,
    /// Group 3 reading `fields[k]` and writing the other, for k = 0, 1 ([`GpuDetail::bind_groups`]).
    groups: Option<[wgpu::BindGroup; 2]>,
    slots: Vec<ReadSlot>,
    /// Texels were asked for since the last readback was issued.
    texels_wanted: bool,
    latest_texels: Option<Arc<DetailTexels>>,
}

impl GpuDetail {
    /// The layer of `layout`, at rest, on `ctx`.
    pub fn new(ctx: &Arc<GpuContext>, layout: DetailLayout) -> Result<Self> {
        let pipelines = DetailPipelines::shared(ctx)?;
        let device = &ctx.device;
        let n = layout.cells() as u64;
        let limits = &ctx.limits;
        if n * 16 > limits.max_storage_buffer_binding_size {
            return Err(Error::Gpu(format!("a {0}x{0} detail window needs {1}-byte storage bindings; {2} allows {3}", layout.window, n * 16, ctx.adapter.name, limits.max_storage_buffer_binding_size)));
        }
        use wgpu::BufferUsages as U;
        let buffer = |label: &str, bytes: u64, usage: U| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage, mapped_at_creation: false });
        let detail = GpuDetail {
            ctx: ctx.clone(),
            uniforms: buffer("detail constants", std::mem::size_of::<DetailConstants>() as u64, U::UNIFORM | U::COPY_DST),
            fields: [buffer("detail fields 0", n * 8, U::STORAGE | U::COPY_SRC | U::COPY_DST), buffer("detail fields 1", n * 8, U::STORAGE | U::COPY_SRC | U::COPY_DST)],
            pressure: buffer("detail pressure", n * 4, U::STORAGE | U::COPY_DST),
            ripples: DeviceList::new(device, "detail ripples", 16, 16),
            pressed: DeviceList::new(device, "detail pressure list", 64, 8),
            tile_list: DeviceList::new(device, "detail tiles", MAX_DETAIL_TILES_PER_READ, 8),
            gathered: buffer("detail gathered", (MAX_DETAIL_TILES_PER_READ * DETAIL_TILE_BYTES) as u64, U::STORAGE | U::COPY_SRC),
            texels: buffer("detail texels", n * 16, U::STORAGE | U::COPY_SRC),
            pipelines,
            host: DetailHost::new(layout),
            groups: None,
            slots: Vec::new(),
            texels_wanted: false,
            latest_texels: None,
        };
        ctx.check()?;
        Ok(detail)
    }

    /// The layout it was made for.
    pub fn layout(&self) -> DetailLayout {
        self.host.layout()
    }

    /// Puts every wave at rest (a new state was loaded); the hulls' pressure stays.
    pub fn clear(&mut self) {
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("detail clear") });
        encoder.clear_buffer(&self.fields[self.host.clear()], 0, None);
        self.ctx.queue.submit([encoder.finish()]);
        self.latest_texels = None;
    }

    /// The cells' coordinates moved by `by` detail cells (a world's anchor moved): the heights
    /// that arrived follow their cells ([`DetailHost::shift_tiles`]).
    pub fn shift_reads(&mut self, by: [i32; 2]) {
        self.host.shift_tiles(by);
    }

    /// Keeps `frame` for the next [`GpuDetail::prepare`].
    pub fn queue(&mut self, frame: DetailFrame) {
        self.host.queue(frame);
    }

    /// Readies the queued frame, if any, for recording in the flow's frame: uploads its
    /// constants and lists and picks a readback slot. The frame is then dispatched into the
    /// frame's own compute pass ([`GpuDetail::dispatch`]) and its copies recorded after it
    /// ([`GpuDetail::finish`]): the layer rides in the frame's pass and submission, which spares
    /// a pass's and a submission's fixed cost on the host a frame.
    pub fn prepare(&mut self) -> Result<Option<DetailRecording>> {
        self.harvest();
        let Some(DetailStart { frame, tiles }) = self.host.start() else { return Ok(None) };
        let ctx = self.ctx.clone();
        let (device, queue) = (&ctx.device, &ctx.queue);
        queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&frame.constants));
        let mut stale = self.groups.is_none();
        if !frame.ripples.is_empty() {
            stale |= self.ripples.upload(device, queue, "detail ripples", bytemuck::cast_slice(&frame.ripples));
        }
        if !frame.pressure.is_empty() {
            stale |= self.pressed.upload(device, queue, "detail pressure list", bytemuck::cast_slice(&frame.pressure));
        }
        if !tiles.is_empty() {
            stale |= self.tile_list.upload(device, queue, "detail tiles", bytemuck::cast_slice(&tiles));
        }
        if stale {
            self.groups = Some(self.bind_groups());
        }
        let readback = if !tiles.is_empty() || self.texels_wanted { self.free_slot() } else { None };
        let tiles = if readback.is_some() { tiles } else { Vec::new() };
        Ok(Some(DetailRecording { frame, tiles, readback }))
    }

    /// Dispatches a prepared frame into `pass`, reading the flow through `flow_group` (the
    /// backend's read-only group of the fields the frame's first step reads).
    pub fn dispatch(&mut self, pass: &mut wgpu::ComputePass, flow_group: &wgpu::BindGroup, recording: &DetailRecording) {
        let Some(groups) = &self.groups else { return };
        let output = recording.readback.is_some_and(|slot| self.slots[slot].texels);
        let max_workgroups = self.ctx.limits.max_compute_workgroups_per_dimension;
        // Group 0, the flow's fields, stays bound for every pass.
        pass.set_bind_group(0, flow_group, &[]);
        for p in self.host.passes(&recording.frame, output, recording.tiles.len(), max_workgroups) {
            let pipelines = &self.pipelines;
            pass.set_pipeline(match p.entry {
                DetailEntry::Press => &pipelines.press,
                DetailEntry::Scroll => &pipelines.scroll,
                DetailEntry::Force => &pipelines.force,
                DetailEntry::Substep => &pipelines.substep,
                DetailEntry::Output => &pipelines.texels,
                DetailEntry::Gather => &pipelines.gather,
            });
            pass.set_bind_group(DETAIL_GROUP, &groups[p.reads], &[]);
            pass.dispatch_workgroups(p.groups[0], p.groups[1], 1);
        }
    }

    /// Records a dispatched frame's readback copies into `encoder`, after its pass. Returns the
    /// readback slot to hand to [`GpuDetail::submitted`] once `encoder` is submitted.
    pub fn finish(&mut self, encoder: &mut wgpu::CommandEncoder, recording: DetailRecording) -> Result<Option<usize>> {
        if let Some(k) = recording.readback {
            let bytes = recording.tiles.len() * DETAIL_TILE_BYTES;
            let slot = &mut self.slots[k];
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(&self.gathered, 0, &slot.buffer, 0, bytes as u64);
            }
            if slot.texels {
                let at = (MAX_DETAIL_TILES_PER_READ * DETAIL_TILE_BYTES) as u64;
                encoder.copy_buffer_to_buffer(&self.texels, 0, &slot.buffer, at, self.host.layout().cells() as u64 * 16);
            }
            slot.tiles = recording.tiles;
            slot.frame = self.host.frames();
            slot.epoch = self.host.epoch();
        }
        self.ctx.check()?;
        Ok(recording.readback)
    }

    /// Maps the readback slot [`GpuDetail::finish`] returned, after its encoder was submitted.
    pub fn submitted(&mut self, readback: Option<usize>) {
        if let Some(k) = readback {
            let slot = &self.slots[k];
            slot.state.store(SLOT_PENDING, Ordering::Release);
            let flag = slot.state.clone();
            slot.buffer.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
            self.texels_wanted &= !slot.texels;
        }
    }

    /// Heights of world detail cells from the newest tiles that arrived ([`DetailTiles`]).
    pub fn heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        self.harvest();
        self.host.heights(cells)
    }

    /// The newest texels that arrived; asks for them from the next frame on.
    pub fn texels(&mut self) -> Option<Arc<DetailTexels>> {
        self.texels_wanted = true;
        self.harvest();
        self.latest_texels.clone()
    }

    /// The fields, `(h, v)` per storage cell, waiting for the device.
    pub fn read_fields(&mut self) -> Result<Vec<[f32; 2]>> {
        let device = &self.ctx.device;
        let bytes = self.host.layout().cells() as u64 * 8;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("detail fields read"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("detail fields read") });
        encoder.copy_buffer_to_buffer(&self.fields[self.host.current()], 0, &staging, 0, bytes);
        self.ctx.queue.submit([encoder.finish()]);
        let state = Arc::new(AtomicU32::new(SLOT_PENDING));
        let flag = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { SLOT_READY } else { SLOT_FAILED }, Ordering::Release));
        super::context::poll_until(device, super::DEVICE_WAIT_LIMIT, "the detail waves' read", || state.load(Ordering::Acquire) != SLOT_PENDING)?;
        self.ctx.check()?;
        if state.load(Ordering::Acquire) != SLOT_READY {
            return Err(Error::Gpu("mapping the detail fields failed".into()));
        }
        let fields = bytemuck::pod_collect_to_vec(&staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?);
        staging.unmap();
        Ok(fields)
    }

    /// The group-3 bind groups: `detail_in` fields 0 and `detail_out` fields 1, and the reverse.
    /// A substep from field k binds the k-th; an in-place pass on field k binds the other (it
    /// updates `detail_out`); the output passes read field k through the k-th.
    fn bind_groups(&self) -> [wgpu::BindGroup; 2] {
        let make = |input: &wgpu::Buffer, output: &wgpu::Buffer, label: &str| {
            let buffers = [
                &self.uniforms,
                input,
                output,
                &self.pressure,
                &self.ripples.buffer,
                &self.pressed.buffer,
                &self.tile_list.buffer,
                &self.gathered,
                &self.texels,
            ];
            let entries: Vec<wgpu::BindGroupEntry> =
                DETAIL_BINDINGS.iter().zip(buffers).map(|(&(binding, _), b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
            self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout: &self.pipelines.layout, entries: &entries })
        };
        [make(&self.fields[0], &self.fields[1], "detail 0 → 1"), make(&self.fields[1], &self.fields[0], "detail 1 → 0")]
    }

    /// A free staging buffer, sized for the texels when they are wanted; `None` when both are busy.
    fn free_slot(&mut self) -> Option<usize> {
        let texel_bytes = if self.texels_wanted { self.host.layout().cells() * 16 } else { 0 };
        let size = (MAX_DETAIL_TILES_PER_READ * DETAIL_TILE_BYTES + texel_bytes) as u64;
        if let Some(k) = self.slots.iter().position(|s| s.state.load(Ordering::Acquire) == SLOT_FREE && s.buffer.size() >= size) {
            self.slots[k].texels = self.texels_wanted;
            return Some(k);
        }
        let replace = self.slots.iter().position(|s| s.state.load(Ordering::Acquire) == SLOT_FREE);
        if replace.is_none() && self.slots.len() >= 2 {
            return None;
        }
        let slot = ReadSlot {
            buffer: self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("detail readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            state: Arc::new(AtomicU32::new(SLOT_FREE)),
            tiles: Vec::new(),
            texels: self.texels_wanted,
            frame: 0,
            epoch: self.host.epoch(),
        };
        match replace {
            Some(k) => {
                self.slots[k] = slot;
                Some(k)
            }
            None => {
                self.slots.push(slot);
                Some(self.slots.len() - 1)
            }
        }
    }

    /// Takes what finished readbacks hold, oldest first, without waiting.
    fn harvest(&mut self) {
        if self.slots.iter().all(|s| s.state.load(Ordering::Acquire) == SLOT_FREE) {
            return;
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        let mut ready: Vec<usize> = (0..self.slots.len()).filter(|&k| self.slots[k].state.load(Ordering::Acquire) != SLOT_FREE).collect();
        ready.sort_by_key(|&k| self.slots[k].frame);
        for k in ready {
            let slot = &self.slots[k];
            match slot.state.load(Ordering::Acquire) {
                SLOT_READY => {
                    if let Ok(view) = slot.buffer.get_mapped_range(..) {
                        if self.host.arrived(slot.epoch, &slot.tiles, &view[..slot.tiles.len() * DETAIL_TILE_BYTES]) && slot.texels {
                            let at = MAX_DETAIL_TILES_PER_READ * DETAIL_TILE_BYTES;
                            let texels: DetailTexels = bytemuck::pod_collect_to_vec(&view[at..at + self.host.layout().cells() * 16]);
                            self.latest_texels = Some(Arc::new(texels));
                        }
                    }
                    slot.buffer.unmap();
                    slot.state.store(SLOT_FREE, Ordering::Release);
                }
                SLOT_FAILED => slot.state.store(SLOT_FREE, Ordering::Release),
                _ => {}
            }
        }
    }
}
