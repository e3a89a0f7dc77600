//! Cooling after each frame: still fluid turning into ground ([`crate::cooling`]), counted in the
//! ledger as solidified.

use super::Simulation;
use crate::cooling::quanta_per_cell;
use crate::error::Result;
use crate::pipes::StepConstants;

impl Simulation {
    /// After a frame of `frame_time` seconds stepped with `constants`: with a
    /// [`crate::Params::solidify_rate`], every still cell gives the frame's quanta of its depth to
    /// its ground, and the backend's ledger counters count them as solidified. Without one
    /// nothing runs (no pass is recorded on a GPU) and nothing is owed later; a backend that does
    /// not cool leaves the fluid as it is and owes nothing later either.
    pub(super) fn cool(&mut self, constants: &StepConstants, frame_time: f64) -> Result<()> {
        if self.params.solidify_rate <= 0.0 {
            self.cooling_carry = 0.0;
            return Ok(());
        }
        let (quanta, carry) = quanta_per_cell(self.params.solidify_rate, frame_time, self.cooling_carry);
        let cooled = quanta == 0 || self.on_backend(|b| b.solidify(constants, quanta))?;
        self.cooling_carry = if cooled { carry } else { 0.0 };
        Ok(())
    }

    /// Whether fluid cools on this simulation: a [`crate::Params::solidify_rate`] above 0 (every
    /// backend cools: the CPU, wgpu and Godot's RenderingDevice).
    pub fn cools(&self) -> bool {
        self.params.solidify_rate > 0.0
    }
}
