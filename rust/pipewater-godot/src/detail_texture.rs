//! `detail_texture`: the detail waves ([`pipewater_core::detail`]) as a texture materials sample.
//!
//! On the RenderingDevice backend it is a `Texture2DRD` showing the RD texture the layer's image
//! pass writes on the GPU: nothing is copied. Elsewhere it is an `ImageTexture` of half floats
//! (`Image.FORMAT_RGBAH`, 8 bytes a texel) filled from the newest texels the simulation has: on
//! the CPU computed from its fields, on wgpu read back asynchronously (a frame or two old). With
//! the layer off it shows a single calm texel.

use crate::texels::{pack_half_texels, BYTES_PER_HALF_TEXEL};
use godot::classes::image::Format;
use godot::classes::{Image, ImageTexture, Texture2D, Texture2Drd};
use godot::prelude::*;
use pipewater_core::detail::DetailTexels;
use pipewater_core::Simulation;
use std::sync::Arc;

/// The node's `detail_texture` and what fills it.
pub struct DetailTexture {
    image_texture: Gd<ImageTexture>,
    image: Option<Gd<Image>>,
    bytes: PackedByteArray,
    rd: Gd<Texture2Drd>,
    /// The RD texture shown, while the RenderingDevice backend runs the layer.
    rd_texture: Option<Rid>,
    /// Texels shown, to skip copying the same ones again.
    shown: Option<Arc<DetailTexels>>,
}

impl Default for DetailTexture {
    fn default() -> Self {
        let mut texture = DetailTexture {
            image_texture: ImageTexture::new_gd(),
            image: None,
            bytes: PackedByteArray::new(),
            rd: Texture2Drd::new_gd(),
            rd_texture: None,
            shown: None,
        };
        texture.show_calm();
        texture
    }
}

impl DetailTexture {
    /// `detail_texture`: the same object while the same kind of backend runs the layer.
    pub fn texture(&self) -> Gd<Texture2D> {
        match self.rd_texture {
            Some(_) => self.rd.clone().upcast(),
            None => self.image_texture.clone().upcast(),
        }
    }

    /// Lets go of the RD texture (before the layer or its backend frees it).
    pub fn release(&mut self) {
        if self.rd_texture.take().is_some() {
            self.rd.set_texture_rd_rid(Rid::Invalid);
        }
        self.shown = None;
    }

    /// Brings the texture up to the simulation's detail waves: the RD texture where the layer
    /// keeps one on the device, else (with `copy_texels`, the node's `update_textures`) the
    /// newest texels. Returns whether the texture object changed (materials must be given the
    /// new one).
    pub fn update(&mut self, sim: Option<&mut Simulation>, copy_texels: bool) -> bool {
        let before = self.texture().instance_id();
        match sim {
            Some(sim) if sim.detail_params().is_some() => {
                if let Some(handle) = sim.detail_device_texture() {
                    let rid = Rid::new(handle);
                    if self.rd_texture != Some(rid) {
                        self.rd.set_texture_rd_rid(rid);
                        self.rd_texture = Some(rid);
                    }
                } else {
                    self.release();
                    if copy_texels {
                        if let Some(texels) = sim.detail_texels() {
                            self.show(&texels, sim.detail_params().map_or(0, |p| p.window));
                        }
                    }
                }
            }
            _ => {
                self.release();
                if self.image.as_ref().is_none_or(|i| i.get_width() != 1) {
                    self.show_calm();
                }
            }
        }
        self.texture().instance_id() != before
    }

    /// Copies `texels` (a `window`² field) into the image texture, unless they are shown already.
    fn show(&mut self, texels: &Arc<DetailTexels>, window: u32) {
        if self.shown.as_ref().is_some_and(|s| Arc::ptr_eq(s, texels)) || texels.len() != window as usize * window as usize {
            return;
        }
        let len = texels.len() * BYTES_PER_HALF_TEXEL;
        if self.bytes.len() != len {
            self.bytes.resize(len);
        }
        pack_half_texels(texels, self.bytes.as_mut_slice());
        self.set_image(window as i32);
        self.shown = Some(texels.clone());
    }

    /// One calm texel: what materials see while the layer is off.
    fn show_calm(&mut self) {
        self.bytes = PackedByteArray::from(&[0u8; BYTES_PER_HALF_TEXEL][..]);
        self.set_image(1);
        self.shown = None;
    }

    fn set_image(&mut self, side: i32) {
        let same = self.image.as_ref().is_some_and(|i| i.get_width() == side);
        match self.image.as_mut() {
            Some(image) => image.set_data(side, side, false, Format::RGBAH, &self.bytes),
            None => self.image = Image::create_from_data(side, side, false, Format::RGBAH, &self.bytes),
        }
        let Some(image) = self.image.as_ref() else { return };
        if same {
            self.image_texture.update(image);
        } else {
            self.image_texture.set_image(image);
        }
    }
}
