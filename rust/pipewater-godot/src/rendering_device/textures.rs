//! The node's textures when the RenderingDevice backend runs: two `Texture2DRD`s that wrap the
//! RD textures its `images` pass writes, so materials sample the simulation where it lives.

use godot::classes::Texture2Drd;
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

impl Default for RdTextures {
    fn default() -> Self {
        RdTextures::new()
    }
}
