//! The node's textures when the RenderingDevice backend runs: two `Texture2DRD`s that wrap the
//! RD textures its `tile_images` pass writes, so materials sample the simulation where it lives.

use godot::classes::image::Format;
use godot::classes::{Image, Texture2Drd};
use godot::prelude::*;

/// `height_texture` and `flux_texture` as `Texture2DRD`s. The objects live as long as the node;
/// the RD textures they show belong to the backend and are detached before it is dropped.
pub struct RdTextures {
    /// Surface, depth, terrain, wetness.
    pub height: Gd<Texture2Drd>,
    /// Velocity, speed, discharge.
    pub flux: Gd<Texture2Drd>,
}

impl RdTextures {
    /// Two textures showing nothing yet.
    pub fn new() -> Self {
        RdTextures { height: Texture2Drd::new_gd(), flux: Texture2Drd::new_gd() }
    }

    /// Shows the backend's RD textures (height, flux).
    pub fn attach(&mut self, (height, flux): (Rid, Rid)) {
        self.height.set_texture_rd_rid(height);
        self.flux.set_texture_rd_rid(flux);
    }

    /// Lets go of the backend's textures, before the backend frees them.
    pub fn detach(&mut self) {
        self.height.set_texture_rd_rid(Rid::Invalid);
        self.flux.set_texture_rd_rid(Rid::Invalid);
    }
}

/// The texels of one of the backend's RD textures as an `Image.FORMAT_RGBAF` image, read from the
/// GPU (waiting for it). `Texture2DRD.get_image()` cannot serve here: Godot 4.3 maps the texture's
/// 32-bit RGBA format to a 3-channel image and returns nothing.
pub fn read_image(texture: Rid) -> Option<Gd<Image>> {
    let mut rd = super::main_device()?;
    if !texture.is_valid() || !rd.texture_is_valid(texture) {
        return None;
    }
    let format = rd.texture_get_format(texture)?;
    let (w, h) = (format.get_width() as i32, format.get_height() as i32);
    let bytes = rd.texture_get_data(texture, 0);
    Image::create_from_data(w, h, false, Format::RGBAF, &bytes)
}

impl Default for RdTextures {
    fn default() -> Self {
        RdTextures::new()
    }
}
