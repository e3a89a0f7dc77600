//! Floating bodies on a world: the `PipeWaterBody` hulls that push a `PipeWaterWorld`, coupled
//! with its water once per physics frame as `PipeWater` couples its own (`node/bodies.rs`; the
//! gathering and the forces are the plain functions of `water_body.rs`).

use super::PipeWaterWorld;
use crate::fluid_settings::WATER;
use crate::water_body::{gather_bodies, hand_out_forces};
use godot::prelude::*;

impl PipeWaterWorld {
    /// Couples every `PipeWaterBody` that pushes this world for a physics frame of `delta`
    /// seconds and applies the water's forces to them; water of [`WATER`]'s density. Bodies that
    /// left (freed, disabled) simply stop displacing water.
    pub(super) fn couple_bodies(&mut self, delta: f64) {
        let transform = self.base().get_global_transform();
        let (members, bodies) = gather_bodies(&self.to_gd().upcast(), &transform, delta);
        if bodies.is_empty() && !self.had_bodies {
            return;
        }
        self.had_bodies = !bodies.is_empty();
        let result = self.water.as_mut().map(|w| w.couple_bodies(&bodies, delta as f32, WATER.density as f32));
        let Some(forces) = self.core("bodies", result) else { return };
        hand_out_forces(members, &transform, forces);
    }
}
