//! The detail wave layer ([`pipewater_core::detail`]) on Godot's RenderingDevice: the same WGSL
//! passes as the wgpu backend (`shaders/detail.wgsl`, translated by [`super::spirv`]) recorded
//! into a compute list of their own after each frame's steps. The output is an RD texture
//! (`RGBA16F`, the window's texels in storage order) that the node shows as a `Texture2DRD`:
//! nothing crosses to the host for rendering. Queries read 8×8-cell tiles back, asynchronously on
//! Godot 4.4+ and at once on 4.3, as the flow's tiles are ([`super::tiles`]).

use super::list::{max_workgroups_x, DeviceList};
use super::spirv::{self, Program};
use super::{bytes_of, callable_variant, create_uniform_set, free_all, main_device, update};
use godot::classes::rendering_device::{DataFormat, ShaderStage, TextureType, TextureUsageBits};
use godot::classes::{RdShaderSpirv, RdTextureFormat, RdTextureView, RenderingDevice};
use godot::prelude::*;
use parking_lot::Mutex;
use pipewater_core::backend::gpu::shaders;
use pipewater_core::detail::host::{DetailEntry, DetailHost, DetailStart};
use pipewater_core::detail::tiles::{DetailTiles, DETAIL_TILE_BYTES, MAX_DETAIL_TILES_PER_READ};
use pipewater_core::detail::{DetailConstants, DetailFrame, DetailLayout};
use pipewater_core::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The entry points of `detail.wgsl` this backend runs, in [`Entry`] order.
pub const DETAIL_ENTRY_POINTS: [&str; 6] = ["detail_press", "detail_scroll", "detail_force", "detail_substep", "detail_store_image", "detail_gather"];

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Entry {
    Press = 0,
    Scroll,
    Force,
    Substep,
    Image,
    Gather,
}

impl Entry {
    /// The entry point that runs `pass` here: the rendering output is the storage image.
    fn of(pass: DetailEntry) -> Entry {
        match pass {
            DetailEntry::Press => Entry::Press,
            DetailEntry::Scroll => Entry::Scroll,
            DetailEntry::Force => Entry::Force,
            DetailEntry::Substep => Entry::Substep,
            DetailEntry::Output => Entry::Image,
            DetailEntry::Gather => Entry::Gather,
        }
    }
}

/// Which of the two field buffers a pass reads and which it writes: `Forward` reads 0 and
/// writes 1, `Back` reads 1 and writes 0. A substep from field k reads k; an in-place pass on
/// field k writes k (it updates `detail_out`); the output passes read it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Direction {
    Forward,
    Back,
}

impl Direction {
    /// The direction that reads field `k`.
    fn reading(k: usize) -> Direction {
        if k == 0 {
            Direction::Forward
        } else {
            Direction::Back
        }
    }

}

/// The flow's resources the passes read (`@group(0)` of snapshot.wgsl), and which of the
/// backend's two copies of depth and flux they are.
#[derive(Clone, Copy, Debug)]
pub struct FlowFields {
    /// The step constants' uniform buffer.
    pub constants: Rid,
    /// Terrain heights.
    pub terrain: Rid,
    /// Depth, current copy.
    pub depth: Rid,
    /// Pipes, current copy.
    pub flux: Rid,
    /// Which copy (0 or 1).
    pub copy: usize,
}

/// The layer on one RenderingDevice simulation.
pub struct RdDetail {
    /// The frame queued, which of `fields` holds the state, the tiles asked for, the passes.
    host: DetailHost,
    pipelines: Vec<(Program, Rid, Rid)>,
    uniforms: Rid,
    fields: [Rid; 2],
    pressure: Rid,
    ripples: DeviceList,
    pressed: DeviceList,
    tile_list: DeviceList,
    /// The most workgroups a dispatch takes along x.
    max_workgroups: u32,
    gathered: Rid,
    texture: Rid,
    /// Uniform sets by (entry point, set, direction, flow copy).
    sets: HashMap<(Entry, u32, Direction, usize), Rid>,
    /// `buffer_get_data_async` exists (Godot 4.4+).
    async_reads: bool,
    /// Tile reads issued and not yet arrived: (frame, epoch, tiles).
    in_flight: VecDeque<(u64, u64, Vec<[i32; 2]>)>,
    arrived: Arc<Mutex<Vec<(u64, Vec<u8>)>>>,
}

impl RdDetail {
    /// Compiles the layer's passes and allocates a window of `layout`, at rest.
    pub fn new(rd: &mut Gd<RenderingDevice>, layout: DetailLayout) -> Result<Self> {
        let limit = rd.limit_get(godot::classes::rendering_device::Limit::MAX_TEXTURE_SIZE_2D);
        if layout.window as u64 > limit {
            return Err(Error::Gpu(format!("a {0}x{0} detail window exceeds the device's largest 2D texture ({limit})", layout.window)));
        }
        let mut pipelines = Vec::new();
        for entry in DETAIL_ENTRY_POINTS {
            let made = detail_program(entry).map_err(Error::Gpu).and_then(|program| {
                let mut source = RdShaderSpirv::new_gd();
                source.set_stage_bytecode(ShaderStage::COMPUTE, &bytes_of(&program.bytes()));
                let shader = rd.shader_create_from_spirv_ex(&source).name(entry).done();
                if !shader.is_valid() {
                    return Err(Error::GpuUnavailable(format!("Godot refused the SPIR-V of `{entry}` (see the errors above)")));
                }
                let pipeline = rd.compute_pipeline_create(shader);
                if !pipeline.is_valid() {
                    rd.free_rid(shader);
                    return Err(Error::GpuUnavailable(format!("Godot could not create the pipeline of `{entry}`")));
                }
                Ok((program, shader, pipeline))
            });
            match made {
                Ok(p) => pipelines.push(p),
                Err(e) => {
                    free_all(rd, pipelines.iter().flat_map(|(_, s, p)| [*p, *s]));
                    return Err(e);
                }
            }
        }
        let n = layout.cells();
        let storage = |rd: &mut Gd<RenderingDevice>, bytes: usize| rd.storage_buffer_create(bytes.max(16) as u32);
        let mut format = RdTextureFormat::new_gd();
        format.set_format(DataFormat::R16G16B16A16_SFLOAT);
        format.set_width(layout.window);
        format.set_height(layout.window);
        format.set_texture_type(TextureType::TYPE_2D);
        format.set_usage_bits(TextureUsageBits::SAMPLING_BIT | TextureUsageBits::STORAGE_BIT | TextureUsageBits::CAN_COPY_FROM_BIT | TextureUsageBits::CAN_COPY_TO_BIT);
        let texture = rd.texture_create(&format, &RdTextureView::new_gd());
        let detail = RdDetail {
            host: DetailHost::new(layout),
            uniforms: rd.uniform_buffer_create(std::mem::size_of::<DetailConstants>() as u32),
            fields: [storage(rd, n * 8), storage(rd, n * 8)],
            pressure: storage(rd, n * 4),
            ripples: DeviceList::new(rd, 16, 16),
            pressed: DeviceList::new(rd, 64, 8),
            tile_list: DeviceList::new(rd, MAX_DETAIL_TILES_PER_READ, 8),
            max_workgroups: max_workgroups_x(rd),
            gathered: storage(rd, MAX_DETAIL_TILES_PER_READ * DETAIL_TILE_BYTES),
            texture,
            pipelines,
            sets: HashMap::new(),
            async_reads: rd.has_method("buffer_get_data_async"),
            in_flight: VecDeque::new(),
            arrived: Arc::new(Mutex::new(Vec::new())),
        };
        let made = [detail.uniforms, detail.fields[0], detail.fields[1], detail.pressure, detail.gathered, detail.texture];
        if made.iter().any(|r| !r.is_valid()) {
            return Err(Error::Gpu(format!("Godot could not allocate a {0}x{0} detail window", layout.window)));
        }
        // Godot leaves a new buffer's contents undefined: the fields and the pressure start at
        // rest, and the texture shows calm water until the first frame writes it.
        for (buffer, bytes) in [(detail.fields[0], n * 8), (detail.fields[1], n * 8), (detail.pressure, n * 4)] {
            rd.buffer_clear(buffer, 0, bytes as u32);
        }
        rd.texture_clear(detail.texture, Color::from_rgba(0.0, 0.0, 0.0, 0.0), 0, 1, 0, 1);
        Ok(detail)
    }

    /// The layout it was made for.
    pub fn layout(&self) -> DetailLayout {
        self.host.layout()
    }

    /// The RD texture the image pass writes (`RGBA16F`, the window in storage order).
    pub fn texture(&self) -> Rid {
        self.texture
    }

    /// Puts every wave at rest (a new state was loaded); the hulls' pressure stays.
    pub fn clear(&mut self, rd: &mut Gd<RenderingDevice>) {
        let cleared = self.host.clear();
        rd.buffer_clear(self.fields[cleared], 0, (self.host.layout().cells() * 8) as u32);
        rd.texture_clear(self.texture, Color::from_rgba(0.0, 0.0, 0.0, 0.0), 0, 1, 0, 1);
        self.in_flight.clear();
        self.arrived.lock().clear();
    }

    /// Keeps `frame` for the next [`RdDetail::run`].
    pub fn queue(&mut self, frame: DetailFrame) {
        self.host.queue(frame);
    }

    /// Records the queued frame, if any, in a compute list of its own, reading the flow of `flow`
    /// (the fields the frame's first step reads, read only); then reads back the tiles queries
    /// asked for.
    pub fn run(&mut self, rd: &mut Gd<RenderingDevice>, flow: FlowFields) -> Result<()> {
        self.harvest();
        let Some(DetailStart { frame, tiles }) = self.host.start() else { return Ok(()) };
        update(rd, self.uniforms, bytemuck::bytes_of(&frame.constants));
        let mut stale = false;
        if !frame.ripples.is_empty() {
            stale |= self.ripples.fill(rd, bytemuck::cast_slice(&frame.ripples));
        }
        if !frame.pressure.is_empty() {
            stale |= self.pressed.fill(rd, bytemuck::cast_slice(&frame.pressure));
        }
        if !tiles.is_empty() {
            stale |= self.tile_list.fill(rd, bytemuck::cast_slice(&tiles));
        }
        if stale {
            self.drop_sets(rd);
        }
        // The image pass runs every frame: the node shows the texture it writes.
        let count = self.host.passes(&frame, true, tiles.len(), self.max_workgroups).len();
        let list = rd.compute_list_begin();
        let recorded = (0..count).try_for_each(|at| match self.host.pass(at) {
            Some(p) => self.dispatch(rd, list, Entry::of(p.entry), Direction::reading(p.reads), &flow, p.groups),
            None => Ok(()),
        });
        rd.compute_list_end();
        recorded?;
        if !tiles.is_empty() {
            self.read_tiles(rd, tiles);
        }
        Ok(())
    }

    /// Heights of world detail cells from the newest tiles that arrived ([`DetailTiles`]).
    pub fn heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        self.harvest();
        self.host.heights(cells)
    }

    /// The fields, `(h, v)` per storage cell, waiting for the GPU.
    pub fn read_fields(&self, rd: &mut Gd<RenderingDevice>) -> Result<Vec<[f32; 2]>> {
        let bytes = self.host.layout().cells() * 8;
        let data = rd.buffer_get_data_ex(self.fields[self.host.current()]).offset_bytes(0).size_bytes(bytes as u32).done();
        if data.len() != bytes {
            return Err(Error::Gpu(format!("reading the {bytes}-byte detail fields back returned {} bytes", data.len())));
        }
        Ok(bytemuck::pod_collect_to_vec(data.as_slice()))
    }

    /// Binds entry point `entry` with all its sets and dispatches it.
    fn dispatch(&mut self, rd: &mut Gd<RenderingDevice>, list: i64, entry: Entry, direction: Direction, flow: &FlowFields, groups: [u32; 2]) -> Result<()> {
        let (pipeline, sets) = {
            let (program, _, pipeline) = &self.pipelines[entry as usize];
            (*pipeline, program.sets())
        };
        rd.compute_list_bind_compute_pipeline(list, pipeline);
        for set in sets {
            let rid = self.uniform_set(rd, entry, set, direction, flow)?;
            rd.compute_list_bind_uniform_set(list, rid, set);
        }
        rd.compute_list_dispatch(list, groups[0].max(1), groups[1].max(1), 1);
        rd.compute_list_add_barrier(list);
        Ok(())
    }

    /// The resource a binding names.
    fn resource(&self, name: &str, direction: Direction, flow: &FlowFields) -> Option<Rid> {
        let (input, output) = match direction {
            Direction::Forward => (self.fields[0], self.fields[1]),
            Direction::Back => (self.fields[1], self.fields[0]),
        };
        Some(match name {
            "c" => flow.constants,
            "terrain" => flow.terrain,
            "depth" => flow.depth,
            "flux" => flow.flux,
            "dc" => self.uniforms,
            "detail_in" => input,
            "detail_out" => output,
            "detail_pressure" => self.pressure,
            "detail_ripples" => self.ripples.buffer,
            "detail_pressed" => self.pressed.buffer,
            "detail_tiles" => self.tile_list.buffer,
            "detail_gathered" => self.gathered,
            "detail_image" => self.texture,
            _ => return None,
        })
    }

    /// The uniform set `set` of `entry` for `direction` (and the flow's copy), made on first use.
    fn uniform_set(&mut self, rd: &mut Gd<RenderingDevice>, entry: Entry, set: u32, direction: Direction, flow: &FlowFields) -> Result<Rid> {
        let copy = if set == 0 { flow.copy } else { 0 };
        let key = (entry, set, direction, copy);
        if let Some(&rid) = self.sets.get(&key) {
            return Ok(rid);
        }
        let (program, shader, _) = &self.pipelines[entry as usize];
        let rid = create_uniform_set(rd, program, *shader, set, "the detail layer", |name| self.resource(name, direction, flow))?;
        self.sets.insert(key, rid);
        Ok(rid)
    }

    fn drop_sets(&mut self, rd: &mut Gd<RenderingDevice>) {
        for (_, set) in self.sets.drain() {
            if rd.uniform_set_is_valid(set) {
                rd.free_rid(set);
            }
        }
    }

    /// Reads the tiles the frame just recorded gathered: asynchronously where Godot can.
    fn read_tiles(&mut self, rd: &mut Gd<RenderingDevice>, tiles: Vec<[i32; 2]>) {
        let size = DetailTiles::readback_bytes(tiles.len());
        let (frame, epoch) = (self.host.frames(), self.host.epoch());
        if self.async_reads {
            let arrived = self.arrived.clone();
            let callback = Callable::from_fn("pipewater_detail_readback", move |args: &[&Variant]| {
                if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                    arrived.lock().push((frame, bytes.to_vec()));
                }
            });
            let error = rd.call("buffer_get_data_async", &[self.gathered.to_variant(), callable_variant(&callback), 0.to_variant(), (size as i64).to_variant()]);
            if error.try_to::<i64>().unwrap_or(1) == 0 {
                self.in_flight.push_back((frame, epoch, tiles));
            }
        } else {
            let bytes = rd.buffer_get_data_ex(self.gathered).offset_bytes(0).size_bytes(size as u32).done();
            self.in_flight.push_back((frame, epoch, tiles));
            self.arrived.lock().push((frame, bytes.to_vec()));
            self.harvest();
        }
    }

    /// Applies the tile reads that have arrived, oldest first.
    fn harvest(&mut self) {
        let mut arrived = std::mem::take(&mut *self.arrived.lock());
        arrived.sort_by_key(|(frame, _)| *frame);
        for (frame, bytes) in arrived {
            while self.in_flight.front().is_some_and(|(f, _, _)| *f < frame) {
                self.in_flight.pop_front();
            }
            let Some((f, epoch, tiles)) = self.in_flight.pop_front() else { continue };
            if f == frame {
                self.host.arrived(epoch, &tiles, &bytes);
            }
        }
    }
}

impl Drop for RdDetail {
    fn drop(&mut self) {
        let Some(mut rd) = main_device() else { return };
        self.drop_sets(&mut rd);
        let pipelines: Vec<Rid> = self.pipelines.iter().flat_map(|(_, s, p)| [*p, *s]).collect();
        let buffers = [self.uniforms, self.fields[0], self.fields[1], self.pressure, self.gathered, self.ripples.buffer, self.pressed.buffer, self.tile_list.buffer, self.texture];
        free_all(&mut rd, pipelines.into_iter().chain(buffers));
    }
}

/// One pass of the layer, as the wgpu backend runs it (trusted: see the SAFETY note of its
/// module in pipewater-core's `backend/gpu/detail.rs`; the bounds checks cost the layer 40 % on
/// an H100).
fn detail_program(entry: &'static str) -> std::result::Result<Program, String> {
    spirv::translate(shaders::DETAIL, entry, true)
}

/// Compiles every entry point of the layer, for the tests of the translation.
pub fn detail_programs() -> std::result::Result<Vec<Program>, String> {
    DETAIL_ENTRY_POINTS.iter().map(|&entry| detail_program(entry)).collect()
}

#[cfg(test)]
mod tests {
    use super::spirv::BindingKind;
    use super::*;

    #[test]
    fn every_detail_pass_translates_with_only_the_bindings_it_uses() {
        let programs = detail_programs().expect("translates");
        for p in &programs {
            let names: Vec<(u32, &str)> = p.bindings.iter().map(|b| (b.set, b.name.as_str())).collect();
            println!("{}: {} words, workgroup {:?}, sets {:?}, bindings {names:?}", p.entry_point, p.words.len(), p.workgroup_size, p.sets());
            assert_eq!(p.words[0], 0x0723_0203, "{}: SPIR-V magic number", p.entry_point);
        }
        let find = |name: &str| programs.iter().find(|p| p.entry_point == name).expect(name);
        // The passes that look at the water read the flow's fields (set 0), the others only their
        // own; the wgpu-only texel buffer never reaches Godot, and the image pass binds the
        // storage image.
        for (entry, sets) in [
            ("detail_press", vec![3]),
            ("detail_scroll", vec![3]),
            ("detail_force", vec![0, 3]),
            ("detail_substep", vec![0, 3]),
            ("detail_store_image", vec![0, 3]),
            ("detail_gather", vec![3]),
        ] {
            assert_eq!(find(entry).sets(), sets, "{entry}");
        }
        assert!(!programs.iter().any(|p| p.bindings.iter().any(|b| b.name == "detail_texels")));
        assert!(find("detail_store_image").bindings.iter().any(|b| b.name == "detail_image" && b.kind == BindingKind::Image));
    }
}
