//! The node's outputs for materials: `height_texture` and `flux_texture`, brought up to date
//! from the simulation's newest snapshot, with what that costs on the main thread.
//!
//! [`WaterOutputs`] is what the node talks to. Getting texels into the textures is the job of a
//! sink: [`ImageUpload`] copies a CPU snapshot into `Image`s that Godot uploads (wgpu and CPU
//! backends); [`RdTextures`] wraps the RD textures the RenderingDevice backend writes on the GPU
//! in `Texture2DRD`s, so nothing is copied at all.

use crate::errors::ErrorLog;
use crate::rendering_device::textures::{self, RdTextures};
use crate::texels::{self as texel_packing, texel_bytes};
use godot::classes::image::Format;
use godot::classes::{Image, ImageTexture, Texture2D};
use godot::prelude::*;
use pipewater_core::state::copy_in_parallel;
use pipewater_core::{BackendKind, Grid, Simulation, Snapshot};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

/// Updates during which the image textures count as used after a script last asked for their
/// images or the terrain they show (two seconds at 60 frames a second).
pub const TEXTURE_KEEP_UPDATES: u64 = 120;

/// The textures materials read, and the snapshot they show.
pub struct WaterOutputs {
    sink: ImageUpload,
    rd: RdTextures,
    /// The RD textures (height, flux) shown while the RenderingDevice backend runs.
    rd_rids: Option<(Rid, Rid)>,
    /// Snapshot the textures show, to skip re-uploading the same one.
    shown: Option<Arc<Snapshot>>,
    texture_usec: i64,
    snapshot_usec: i64,
    /// Calls of [`WaterOutputs::update`] so far.
    updates: u64,
    /// The update during which a script last asked for the images or the terrain they show.
    asked_at: Cell<Option<u64>>,
    /// Whether the last update left the image textures behind the water (nobody used them).
    idle: bool,
}

impl Default for WaterOutputs {
    fn default() -> Self {
        WaterOutputs {
            sink: ImageUpload::new(),
            rd: RdTextures::new(),
            rd_rids: None,
            shown: None,
            texture_usec: 0,
            snapshot_usec: 0,
            updates: 0,
            asked_at: Cell::new(None),
            idle: false,
        }
    }
}

impl WaterOutputs {
    /// `height_texture`: the same object while the same kind of backend runs (from the node's
    /// creation, so that materials can take it before the first build).
    pub fn height_texture(&self) -> Gd<Texture2D> {
        match self.rd_rids {
            Some(_) => self.rd.height.clone().upcast(),
            None => self.sink.height.texture.clone().upcast(),
        }
    }

    /// `flux_texture`, like [`WaterOutputs::height_texture`].
    pub fn flux_texture(&self) -> Gd<Texture2D> {
        match self.rd_rids {
            Some(_) => self.rd.flux.clone().upcast(),
            None => self.sink.flux.texture.clone().upcast(),
        }
    }

    /// The image last copied into `height_texture`; on the RenderingDevice a new one read from
    /// the GPU (waiting for it). `None` before the first build. Counts as a use of the textures.
    pub fn height_image(&self) -> Option<Gd<Image>> {
        self.mark_asked();
        match self.rd_rids {
            Some((height, _)) => textures::read_image(height),
            None => self.sink.height.image.clone(),
        }
    }

    /// The image last copied into `flux_texture`, like [`WaterOutputs::height_image`].
    pub fn flux_image(&self) -> Option<Gd<Image>> {
        self.mark_asked();
        match self.rd_rids {
            Some((_, flux)) => textures::read_image(flux),
            None => self.sink.flux.image.clone(),
        }
    }

    /// Shows the RD textures of a RenderingDevice backend that just started.
    pub fn use_rendering_device(&mut self, rids: (Rid, Rid)) {
        self.rd.attach(rids);
        self.rd_rids = Some(rids);
        self.shown = None;
    }

    /// Lets go of the RenderingDevice backend's textures (before that backend is dropped) and
    /// returns them; the image textures are shown again.
    pub fn release_rendering_device(&mut self) -> Option<(Rid, Rid)> {
        let rids = self.rd_rids.take();
        if rids.is_some() {
            self.rd.detach();
        }
        self.shown = None;
        rids
    }

    /// Whether the textures are the RenderingDevice backend's.
    pub fn on_rendering_device(&self) -> bool {
        self.rd_rids.is_some()
    }

    /// Chooses 16-bit (`FORMAT_RGBAH`) or 32-bit float texels for the image textures.
    pub fn set_half_float(&mut self, half: bool, grid: Option<Grid>, errors: &mut ErrorLog) {
        self.sink.half = half;
        if let Some(grid) = grid {
            self.sink.resize(grid, errors);
        }
        self.shown = None;
    }

    /// Terrain heights (local m, row-major) of the snapshot shown; `None` before the first one,
    /// and while the textures are idle. Counts as a use of the textures.
    pub fn shown_terrain(&self) -> Option<PackedFloat32Array> {
        self.mark_asked();
        // The RenderingDevice backend's snapshot holds only the tiles queries read.
        if self.rd_rids.is_some() {
            return None;
        }
        let shown = self.shown.as_ref()?;
        let heights: Vec<f32> = shown.height.iter().map(|t| t[2]).collect();
        Some(PackedFloat32Array::from(heights.as_slice()))
    }

    /// Main-thread cost of the last update, µs: the whole of it, and taking the snapshot.
    pub fn timings_usec(&self) -> (i64, i64) {
        (self.texture_usec, self.snapshot_usec)
    }

    /// Forgets the snapshot shown, after the simulation was rebuilt, reset or given new terrain,
    /// so that the next update draws whatever snapshot comes.
    pub fn forget_shown(&mut self) {
        self.shown = None;
    }

    /// Gives the textures images of the new grid size.
    pub fn resize(&mut self, grid: Grid, errors: &mut ErrorLog) {
        self.sink.resize(grid, errors);
    }

    /// Records that a script asked for the images or the terrain the textures show: they count
    /// as used for the next [`TEXTURE_KEEP_UPDATES`] updates.
    pub fn mark_asked(&self) {
        self.asked_at.set(Some(self.updates));
    }

    /// Whether the image textures are used: a material or script holds one (the node's own
    /// reference aside), or a script asked for their images within [`TEXTURE_KEEP_UPDATES`].
    fn images_used(&self) -> bool {
        let held = |t: &Gd<ImageTexture>| t.get_reference_count() > 1;
        held(&self.sink.height.texture)
            || held(&self.sink.flux.texture)
            || self.asked_at.get().is_some_and(|at| self.updates.saturating_sub(at) <= TEXTURE_KEEP_UPDATES)
    }

    /// Whether the last update left the image textures behind the water because nobody used
    /// them (on a GPU backend, which then reads back only the tiles queries touch).
    pub fn idle(&self) -> bool {
        self.idle
    }

    /// Copies `snapshot` into the textures now, whatever the last update did (a script asked for
    /// the images after they were idle).
    pub fn show_now(&mut self, snapshot: Arc<Snapshot>) {
        self.sink.show(&snapshot);
        self.shown = Some(snapshot);
        self.idle = false;
    }

    /// Copies the newest snapshot into the textures when it changed, and tells the simulation
    /// whether its snapshots must cover every cell. With `enabled` false, or on the
    /// RenderingDevice backend (whose textures are written on the GPU), copies nothing. On a GPU
    /// backend copies nothing either while nobody uses the textures ([`WaterOutputs::idle`]):
    /// the backend then reads back only what queries touch. The CPU backend's snapshot covers the
    /// grid anyway, so there the textures always follow.
    pub fn update(&mut self, sim: Option<&mut Simulation>, enabled: bool) {
        self.updates += 1;
        let on_cpu = sim.as_ref().is_some_and(|s| s.backend_kind() == BackendKind::Cpu);
        let used = enabled && self.rd_rids.is_none() && (on_cpu || self.images_used());
        let sim = sim.map(|s| {
            s.want_full_snapshots(used);
            s
        });
        self.idle = enabled && self.rd_rids.is_none() && !used;
        if !used {
            self.texture_usec = 0;
            self.snapshot_usec = 0;
            if self.idle {
                // Let go of the snapshot so that the backend writes the tiles it reads into it
                // in place.
                self.shown = None;
            }
            return;
        }
        let started = Instant::now();
        let Some(snapshot) = sim.and_then(|s| s.snapshot()) else { return };
        self.snapshot_usec = started.elapsed().as_micros() as i64;
        if self.shown.as_ref().is_some_and(|shown| Arc::ptr_eq(shown, &snapshot)) {
            self.texture_usec = self.snapshot_usec;
            return;
        }
        self.sink.show(&snapshot);
        self.shown = Some(snapshot);
        self.texture_usec = started.elapsed().as_micros() as i64;
    }
}

/// The CPU sink: snapshot texels → byte arrays → `Image`s → `ImageTexture`s.
struct ImageUpload {
    height: UploadedTexture,
    flux: UploadedTexture,
    /// 16-bit float texels (`FORMAT_RGBAH`) instead of 32-bit ones.
    half: bool,
    /// Which of each texture's two byte arrays is written next.
    parity: usize,
}

/// One texture of [`ImageUpload`] with the image and bytes it is filled from.
struct UploadedTexture {
    texture: Gd<ImageTexture>,
    image: Option<Gd<Image>>,
    /// Two byte arrays that alternate (see [`ImageUpload::show`]).
    bytes: [PackedByteArray; 2],
}

impl UploadedTexture {
    fn new() -> Self {
        UploadedTexture { texture: ImageTexture::new_gd(), image: None, bytes: Default::default() }
    }
}

impl ImageUpload {
    fn new() -> Self {
        ImageUpload { height: UploadedTexture::new(), flux: UploadedTexture::new(), half: false, parity: 0 }
    }

    fn resize(&mut self, grid: Grid, errors: &mut ErrorLog) {
        let (w, h) = (grid.width as i32, grid.height as i32);
        let format = self.format();
        for slot in [&mut self.height, &mut self.flux] {
            let Some(image) = Image::create_empty(w, h, false, format) else {
                errors.reject(format!("could not create a {w}×{h} {format:?} image for the textures"));
                continue;
            };
            slot.texture.set_image(&image);
            slot.image = Some(image);
        }
    }

    fn show(&mut self, snapshot: &Snapshot) {
        let (w, h) = (snapshot.grid.width as i32, snapshot.grid.height as i32);
        // Each texture alternates between two byte arrays: the one its image shared last frame
        // is free again once the image holds the other, so writing it neither copies on write
        // nor allocates (fresh pages of a 64 MiB array cost more than filling them).
        let parity = self.parity;
        let (half, format) = (self.half, self.format());
        for (texels, slot) in [(&snapshot.height, &mut self.height), (&snapshot.flow, &mut self.flux)] {
            let Some(image) = slot.image.as_mut() else { continue };
            let bytes = &mut slot.bytes[parity];
            let len = texels.len() * if half { texel_packing::BYTES_PER_HALF_TEXEL } else { texel_packing::BYTES_PER_TEXEL };
            if bytes.len() != len {
                bytes.resize(len);
            }
            if half {
                texel_packing::pack_half_texels(texels, bytes.as_mut_slice());
            } else {
                copy_in_parallel(bytes.as_mut_slice(), texel_bytes(texels));
            }
            let same_size = image.get_width() == w && image.get_height() == h && image.get_format() == format;
            image.set_data(w, h, false, format, &*bytes);
            if same_size {
                slot.texture.update(&*image);
            } else {
                slot.texture.set_image(&*image);
            }
        }
        self.parity = 1 - parity;
    }

    fn format(&self) -> Format {
        if self.half {
            Format::RGBAH
        } else {
            Format::RGBAF
        }
    }
}
