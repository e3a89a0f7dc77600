//! Bodies and pushes: the `PipeWaterBody` hulls coupled with the water once per physics frame,
//! and `push_water` for scripted pushes (paddles, explosions).

use super::PipeWater;
use crate::water_body::{gather_bodies, hand_out_forces};
use godot::prelude::*;

#[godot_api(secondary)]
impl PipeWater {
    /// Drags the water within `radius` m (`0 ..= 2 × grid extent`) of `global_position` towards
    /// `velocity` (global, m/s; its horizontal part counts, each axis `-1e4 ..= 1e4`) in the next
    /// frame: fully at the centre, fading smoothly to nothing at `radius`. Only momentum moves,
    /// never water. A paddle calls it every frame; an explosion calls it once per direction
    /// (`velocity` pointing away from the blast). Returns false when an argument is rejected or
    /// the point is off the grid.
    #[func]
    fn push_water(&mut self, global_position: Vector3, velocity: Vector3, radius: f64) -> bool {
        let Some((transform, xz)) = self.local_point("push_water", global_position) else {
            return false;
        };
        if !velocity.is_finite() {
            self.errors.reject(format!("push_water: velocity = {velocity} is not finite: valid range is finite m/s"));
            return false;
        }
        let local = transform.basis.orthonormalized().transposed() * velocity;
        let result = self.sim.as_mut().map(|s| s.push_water(xz[0], xz[1], [local.x, local.z], radius as f32));
        self.errors.core_result("push_water", result).is_some()
    }
}

impl PipeWater {
    /// Couples every `PipeWaterBody` that pushes this water for a physics frame of `delta`
    /// seconds and applies the water's forces to them. Bodies that left (freed, disabled) simply
    /// stop displacing water.
    pub(super) fn couple_bodies(&mut self, delta: f64) {
        let transform = self.global_transform();
        let (members, bodies) = gather_bodies(&self.to_gd().upcast(), &transform, delta);
        if bodies.is_empty() && !self.had_bodies {
            return;
        }
        if self.sim.as_ref().is_some_and(|s| s.lattice().triangular) {
            // Refused by the core every frame; said once, when bodies arrive, rather than each
            // physics frame. The hulls get no force from the water.
            if !bodies.is_empty() && !self.had_bodies {
                self.errors.reject(format!("bodies: {} PipeWaterBody hull(s) are not coupled: neighbour_mode = NEIGHBOURS_TRIANGULAR is out of range: valid range is NEIGHBOURS_FOUR or NEIGHBOURS_EIGHT while floating bodies are coupled (bodies are written for the square grid)", bodies.len()));
            }
            self.had_bodies = !bodies.is_empty();
            for mut hull in members {
                hull.bind_mut().clear_figures();
            }
            return;
        }
        self.had_bodies = !bodies.is_empty();
        let density = self.fluid_density();
        let result = self.sim.as_mut().map(|s| s.couple_bodies(&bodies, delta as f32, density));
        let Some(forces) = self.errors.core_result("bodies", result) else { return };
        hand_out_forces(members, &transform, forces);
    }
}
