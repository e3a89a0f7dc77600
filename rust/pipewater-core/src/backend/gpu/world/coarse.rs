//! The far water of a world: the water of a large area summed over blocks of `stride × stride`
//! cells on the device (`world_coarse.wgsl`, the snapshot's `cell_texels` read from the pages)
//! and read back as one small buffer, without holding the caller
//! ([`World::begin_coarse`], [`World::poll_coarse`]); the ground of each block from the host's
//! copy of the terrain, which holds every page's ([`World::terrain_block_means`]).
//! [`crate::world_water::WorldWater::read_coarse_window`] turns both into texels.

use super::{World, READ_FAILED, READ_PENDING, READ_READY, ZERO_SLOT};
use crate::backend::gpu::bind_buffers as bind;
use crate::backend::gpu::context::GpuContext;
use crate::backend::gpu::shaders;
use crate::error::{Error, Result};
use crate::pipes::StepConstants;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Invocations summing one block (`world_coarse.wgsl` COARSE_WORKGROUP).
pub const COARSE_WORKGROUP: u32 = 64;
/// Sums the pass writes per block (`world_coarse.wgsl` COARSE_SUMS): Σ surface over wet cells,
/// Σ terrain over wet cells, wet cells, Σ depth, Σ depth·velocity x, Σ depth·velocity z,
/// Σ depth·speed, Σ discharge (m, m/s, m²/s as their texels).
pub const COARSE_SUMS: usize = 8;

/// What the pass covers (`texels_paged.wgsl` CoarseParams, byte for byte).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CoarseParams {
    /// First cell (x, y) of the area: a multiple of `stride`.
    pub origin: [u32; 2],
    /// Blocks along x and y.
    pub blocks: [u32; 2],
    /// Cells along a block's side.
    pub stride: u32,
    /// Cells along a page's side.
    pub page_side: u32,
    /// Pages along x.
    pub pages_x: u32,
    /// Blocks the pass sums (those within a cell of a page with water fields).
    pub listed: u32,
}

/// Most workgroups a dispatch has along x (`world_coarse.wgsl` COARSE_ROW): the listed blocks run
/// as rows of this many.
const COARSE_ROW: u32 = 65_535;

/// A pass over the world's pages, compiled from a family of `texels_paged.wgsl` (the far water's
/// blocks, the detail region's gather): group 0 is the world's fields as the snapshot binds them
/// (the detail layer's flow layout: constants, terrain, depth, pipes), groups 1 and 2 the
/// snapshot's, unused here, and group 3 the pass's own buffers, `bindings` in order.
pub(super) struct PagePass {
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) pipeline: wgpu::ComputePipeline,
}

impl PagePass {
    pub(super) fn new(ctx: &GpuContext, family: &shaders::Family, label: &str, entry_point: &str, bindings: &[wgpu::BufferBindingType]) -> PagePass {
        let device = &ctx.device;
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0u32..)
            .zip(bindings)
            .map(|(binding, &ty)| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries: &entries });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(family.file()), source: wgpu::ShaderSource::Wgsl(family.source().into()) });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&ctx.detail_flow_layout), None, None, Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry_point),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(entry_point),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        PagePass { layout, pipeline }
    }

    /// The far water's pass: the pages' slots, its area, its sums, its listed blocks.
    fn coarse(ctx: &GpuContext) -> PagePass {
        use wgpu::BufferBindingType as B;
        Self::new(ctx, &shaders::WORLD_COARSE, "world coarse", "coarse_blocks", &[B::Storage { read_only: true }, B::Uniform, B::Storage { read_only: false }, B::Storage { read_only: true }])
    }
}

/// A read of the far water on its way ([`World::begin_coarse`]).
pub struct CoarseRead {
    staging: wgpu::Buffer,
    state: Arc<AtomicU32>,
    params: CoarseParams,
    /// The blocks summed, in the order of their sums.
    listed: Vec<u32>,
    step: u64,
}

impl CoarseRead {
    /// What the read covers.
    pub fn params(&self) -> CoarseParams {
        self.params
    }

    /// The world's step count the read holds the water of.
    pub fn step(&self) -> u64 {
        self.step
    }
}

impl World {
    /// Begins summing the water of `blocks` blocks of `stride × stride` cells from cell `origin`
    /// (a multiple of `stride`; blocks past the world's edge hold only their cells on it) on the
    /// device, with the texel constants `constants` (the world's size); [`World::poll_coarse`]
    /// hands the sums over once they are back. The sums hold the water after the work submitted
    /// so far (edits waiting for the next frame applied first). Refused, naming the argument,
    /// for an area off the world or a stride of 0.
    pub fn begin_coarse(&mut self, constants: &StepConstants, origin: [u32; 2], blocks: [u32; 2], stride: u32) -> Result<CoarseRead> {
        let (w, h) = (self.width, self.height);
        if stride == 0 {
            return Err(Error::invalid("stride", stride, "1 or more cells a block"));
        }
        if constants.width != w || constants.height != h {
            return Err(Error::invalid("texel constants", format!("for a {}x{} grid", constants.width, constants.height), format!("constants made for the {w}x{h} world")));
        }
        let most = self.ctx.limits.max_compute_workgroups_per_dimension;
        for (axis, (first, count, size)) in [("x", (origin[0], blocks[0], w)), ("y", (origin[1], blocks[1], h))] {
            if !first.is_multiple_of(stride) || first >= size {
                return Err(Error::invalid(axis, first, format!("a multiple of the stride {stride} within the world's 0 ..< {size} cells")));
            }
            if count == 0 || count > most || (first as u64 + (count as u64 - 1) * stride as u64) >= size as u64 {
                return Err(Error::invalid("blocks", format!("{} x {}", blocks[0], blocks[1]), format!("1 ..= {most} a side, each block starting on the world")));
            }
        }
        self.flush_edits()?;
        // The blocks within a cell of a page with water fields (a cell's texels read its
        // neighbours' pipes): every other block's cells are dry and still, and sum to zero.
        let mut wanted = vec![false; blocks[0] as usize * blocks[1] as usize];
        let (side, pages_x) = (self.side, self.pages.tiles[0]);
        let area_end = [origin[0] + blocks[0] * stride, origin[1] + blocks[1] * stride];
        for (page, slots) in self.slots.iter().enumerate() {
            if slots[1] == ZERO_SLOT {
                continue;
            }
            let (px, py) = (page as u32 % pages_x, page as u32 / pages_x);
            let (x0, y0) = ((px * side).saturating_sub(1).max(origin[0]), (py * side).saturating_sub(1).max(origin[1]));
            let (x1, y1) = (((px + 1) * side + 1).min(area_end[0]), ((py + 1) * side + 1).min(area_end[1]));
            if x0 >= x1 || y0 >= y1 {
                continue;
            }
            for by in (y0 - origin[1]) / stride..=(y1 - 1 - origin[1]) / stride {
                for bx in (x0 - origin[0]) / stride..=(x1 - 1 - origin[0]) / stride {
                    wanted[(by * blocks[0] + bx) as usize] = true;
                }
            }
        }
        let listed: Vec<u32> = wanted.iter().enumerate().filter(|(_, &w)| w).map(|(k, _)| k as u32).collect();
        let params = CoarseParams { origin, blocks, stride, page_side: side, pages_x, listed: listed.len() as u32 };
        let device = &self.ctx.device;
        use wgpu::BufferUsages as U;
        let pipeline = self.coarse_pipeline.get_or_insert_with(|| PagePass::coarse(&self.ctx));
        let buffer = |label: &str, bytes: u64, usage: U| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage, mapped_at_creation: false });
        let sums_bytes = listed.len() as u64 * (COARSE_SUMS * 4) as u64;
        let uniforms = buffer("world coarse constants", std::mem::size_of::<StepConstants>() as u64, U::UNIFORM | U::COPY_DST);
        let coarse = buffer("world coarse params", std::mem::size_of::<CoarseParams>() as u64, U::UNIFORM | U::COPY_DST);
        let sums = buffer("world coarse sums", sums_bytes, U::STORAGE | U::COPY_SRC);
        let staging = buffer("world coarse read", sums_bytes, U::MAP_READ | U::COPY_DST);
        let list = buffer("world coarse blocks", 4 * listed.len() as u64, U::STORAGE | U::COPY_DST);
        self.ctx.queue.write_buffer(&list, 0, bytemuck::cast_slice(&listed));
        self.ctx.queue.write_buffer(&uniforms, 0, bytemuck::bytes_of(constants));
        self.ctx.queue.write_buffer(&coarse, 0, bytemuck::bytes_of(&params));
        let fields = bind(device, &self.ctx.detail_flow_layout, "world coarse fields", &[&uniforms, &self.fields.terrain, &self.fields.depth[self.current], &self.fields.flux[self.current]]);
        let pages = bind(device, &pipeline.layout, "world coarse pages", &[&self.page_slots, &coarse, &sums, &list]);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world coarse") });
        if !listed.is_empty() {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("world coarse"), timestamp_writes: None });
            pass.set_pipeline(&pipeline.pipeline);
            pass.set_bind_group(0, &fields, &[]);
            pass.set_bind_group(3, &pages, &[]);
            let n = listed.len() as u32;
            pass.dispatch_workgroups(n.min(COARSE_ROW), n.div_ceil(COARSE_ROW), 1);
        }
        if sums_bytes > 0 {
            encoder.copy_buffer_to_buffer(&sums, 0, &staging, 0, sums_bytes);
        }
        self.ctx.queue.submit([encoder.finish()]);
        let state = Arc::new(AtomicU32::new(READ_PENDING));
        let flag = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { READ_READY } else { READ_FAILED }, Ordering::Release));
        self.ctx.check()?;
        Ok(CoarseRead { staging, state, params, listed, step: self.report.steps })
    }

    /// The sums of a [`World::begin_coarse`] once the device has them (`None` until then; a
    /// look, never a wait): per block, row-major, the [`COARSE_SUMS`] sums.
    pub fn poll_coarse(&mut self, read: &CoarseRead) -> Option<Result<Vec<[f32; COARSE_SUMS]>>> {
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        match read.state.load(Ordering::Acquire) {
            READ_PENDING => None,
            READ_READY => {
                let sums = read.staging.get_mapped_range(..).map(|bytes| {
                    let mut sums = vec![[0.0f32; COARSE_SUMS]; read.params.blocks[0] as usize * read.params.blocks[1] as usize];
                    let got: Vec<[f32; COARSE_SUMS]> = bytemuck::pod_collect_to_vec(&bytes[..read.listed.len() * COARSE_SUMS * 4]);
                    for (&block, s) in read.listed.iter().zip(got) {
                        sums[block as usize] = s;
                    }
                    sums
                });
                Some(sums.map_err(|e| Error::Gpu(e.to_string())))
            }
            _ => Some(Err(Error::Gpu("mapping the world's far water failed".into()))),
        }
    }

    /// [`World::poll_coarse`], waiting for the device.
    pub fn wait_coarse(&mut self, read: &CoarseRead) -> Result<Vec<[f32; COARSE_SUMS]>> {
        if read.state.load(Ordering::Acquire) == READ_PENDING {
            let state = read.state.clone();
            super::super::context::poll_until(&self.ctx.device, super::DEVICE_WAIT_LIMIT, "the world's far water", || state.load(Ordering::Acquire) != READ_PENDING)?;
        }
        self.poll_coarse(read).unwrap_or_else(|| Err(Error::Gpu("the world's far water did not arrive".into())))
    }

    /// Mean terrain (m) of each of `blocks` blocks of `stride × stride` cells from cell `origin`
    /// (a multiple of `stride`), row-major, over the block's cells on the world: from the host's
    /// copy, which holds every page's terrain, resident or not. A page's sums over the blocks of a
    /// stride it meets are kept until its terrain changes, so an area read again costs a few
    /// additions a block, not one a cell, and areas of several strides (the far water's levels)
    /// keep theirs side by side. With `needed` (a flag a block, row-major), only the pages under
    /// the blocks flagged are summed cell by cell; every other block gets the mean of its pages'
    /// means, each weighted by the cells it shares with the block (exact where the block's pages
    /// are level or the block is whole pages): a far level over a whole 16384² world sums the
    /// pages near its water, not all 85 849 (15–22 ms a read on this project's machine, 0.6 ms
    /// with 400 blocks needed).
    pub fn terrain_block_means(&mut self, origin: [u32; 2], blocks: [u32; 2], stride: u32, needed: Option<&[bool]>) -> Result<Vec<f32>> {
        let (w, h) = (self.width as u64, self.height as u64);
        let count = blocks[0] as usize * blocks[1] as usize;
        if stride == 0 || !origin[0].is_multiple_of(stride) || !origin[1].is_multiple_of(stride) || origin[0] as u64 >= w || origin[1] as u64 >= h || blocks[0] == 0 || blocks[1] == 0 {
            return Err(Error::invalid("blocks", format!("{}x{} of {stride} cells at ({}, {})", blocks[0], blocks[1], origin[0], origin[1]), "blocks of 1 or more cells from a multiple of the stride on the world"));
        }
        if needed.is_some_and(|n| n.len() != count) {
            return Err(Error::invalid("needed", needed.map_or(0, |n| n.len()), format!("one flag a block, {count}")));
        }
        let end = [(origin[0] as u64 + blocks[0] as u64 * stride as u64).min(w) as u32, (origin[1] as u64 + blocks[1] as u64 * stride as u64).min(h) as u32];
        let side = self.side;
        let first_block = [origin[0] / stride, origin[1] / stride];
        let pages: Vec<[u32; 2]> = match needed {
            None => (origin[1] / side..=(end[1] - 1) / side).flat_map(|py| (origin[0] / side..=(end[0] - 1) / side).map(move |px| [px, py])).collect(),
            Some(needed) => {
                let mut pages = std::collections::BTreeSet::new();
                for k in (0..count).filter(|&k| needed[k]) {
                    let (bx, by) = (k as u32 % blocks[0], k as u32 / blocks[0]);
                    let x = [origin[0] + bx * stride, (origin[0] + (bx + 1) * stride).min(end[0])];
                    let y = [origin[1] + by * stride, (origin[1] + (by + 1) * stride).min(end[1])];
                    if x[0] >= x[1] || y[0] >= y[1] {
                        continue;
                    }
                    for py in y[0] / side..=(y[1] - 1) / side {
                        for px in x[0] / side..=(x[1] - 1) / side {
                            pages.insert([py, px]);
                        }
                    }
                }
                pages.into_iter().map(|[py, px]| [px, py]).collect()
            }
        };
        let mut sums = vec![0.0f64; count];
        for [px, py] in pages {
            self.add_page_block_sums(px, py, stride, |bx, by, sum| {
                if bx >= first_block[0] && by >= first_block[1] && bx - first_block[0] < blocks[0] && by - first_block[1] < blocks[1] {
                    sums[((by - first_block[1]) * blocks[0] + (bx - first_block[0])) as usize] += sum;
                }
            });
        }
        let cells = |first: u32, count: u32, end: u32| (first + count * stride).min(end).saturating_sub(first) as f64;
        Ok(sums
            .iter()
            .enumerate()
            .map(|(k, &sum)| {
                let (bx, by) = (k as u32 % blocks[0], k as u32 / blocks[0]);
                let n = cells(origin[0] + bx * stride, 1, end[0]) * cells(origin[1] + by * stride, 1, end[1]);
                let x = origin[0] + bx * stride;
                let y = origin[1] + by * stride;
                match needed {
                    _ if n <= 0.0 => self.ground,
                    Some(needed) if !needed[k] => self.page_means_over([x, (x + stride).min(end[0])], [y, (y + stride).min(end[1])]),
                    _ => (sum / n) as f32,
                }
            })
            .collect())
    }

    /// The mean of the page means ([`World::page_terrain_mean`]) over the cells `x[0] ..< x[1]`,
    /// `y[0] ..< y[1]`, each page weighted by the cells it holds of them.
    fn page_means_over(&self, x: [u32; 2], y: [u32; 2]) -> f32 {
        let side = self.side;
        let (mut sum, mut cells) = (0.0f64, 0.0f64);
        for py in y[0] / side..=(y[1] - 1) / side {
            for px in x[0] / side..=(x[1] - 1) / side {
                let shared = ((x[1].min((px + 1) * side) - x[0].max(px * side)) as f64) * ((y[1].min((py + 1) * side) - y[0].max(py * side)) as f64);
                sum += self.page_terrain_means[self.pages.tile_of(px * side, py * side)] as f64 * shared;
                cells += shared;
            }
        }
        if cells > 0.0 { (sum / cells) as f32 } else { self.ground }
    }

    /// Page (px, py)'s terrain summed over each block of `stride` it meets, handed to `add` as
    /// (block column, block row, sum), blocks numbered on the world; a page whose terrain was set
    /// keeps its sums for the stride until its terrain changes.
    fn add_page_block_sums(&mut self, px: u32, py: u32, stride: u32, mut add: impl FnMut(u32, u32, f64)) {
        let side = self.side;
        let page = (py * self.pages.tiles[0] + px) as usize;
        let (x0, y0) = (px * side, py * side);
        let (x1, y1) = ((x0 + side).min(self.width), (y0 + side).min(self.height));
        let (bx0, by0) = (x0 / stride, y0 / stride);
        let across = (x1 - 1) / stride - bx0 + 1;
        let down = (y1 - 1) / stride - by0 + 1;
        let Some(heights) = &self.terrain[page] else {
            // The ground times the cells each block shares with the page.
            let overlap = |b: u32, lo: u32, hi: u32| ((b + 1) * stride).min(hi) - (b * stride).max(lo);
            for k in 0..down * across {
                let (bx, by) = (bx0 + k % across, by0 + k / across);
                add(bx, by, self.ground as f64 * overlap(bx, x0, x1) as f64 * overlap(by, y0, y1) as f64);
            }
            return;
        };
        let kept = self.terrain_block_sums.entry(page).or_default();
        let at = match kept.iter().position(|(s, _)| *s == stride) {
            Some(at) => at,
            None => {
                let mut sums = vec![0.0; (across * down) as usize];
                for y in y0..y1 {
                    for x in x0..x1 {
                        sums[((y / stride - by0) * across + (x / stride - bx0)) as usize] += heights[((y - y0) * side + (x - x0)) as usize] as f64;
                    }
                }
                kept.push((stride, sums));
                kept.len() - 1
            }
        };
        for (k, &sum) in kept[at].1.iter().enumerate() {
            add(bx0 + k as u32 % across, by0 + k as u32 / across, sum);
        }
    }
}
