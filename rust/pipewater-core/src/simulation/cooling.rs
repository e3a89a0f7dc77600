//! Cooling after each frame: still fluid turning into ground ([`crate::cooling`]), counted in the
//! ledger as solidified.

use super::Simulation;
use crate::cooling::quanta_per_cell;
use crate::error::Result;
use crate::pipes::StepConstants;

impl Simulation {
    /// After a frame of `frame_time` seconds stepped with `constants`: with a
    /// [`crate::Params::solidify_rate`], every still cell gives the frame's quanta of its depth to
    /// its ground, and the ledger counts them as solidified. A backend that does not cool (the GPU
    /// backends) leaves the fluid as it is and owes nothing later.
    pub(super) fn cool(&mut self, constants: &StepConstants, frame_time: f64) -> Result<()> {
        if self.params.solidify_rate <= 0.0 {
            self.cooling_carry = 0.0;
            return Ok(());
        }
        let (quanta, carry) = quanta_per_cell(self.params.solidify_rate, frame_time, self.cooling_carry);
        match self.on_backend(|b| b.solidify(constants, quanta))? {
            Some(turned) => {
                self.solidified = self.solidified.wrapping_add(turned);
                self.cooling_carry = carry;
            }
            None => self.cooling_carry = 0.0,
        }
        Ok(())
    }

    /// Whether fluid cools on this simulation: a [`crate::Params::solidify_rate`] above 0 on a
    /// backend that cools (the CPU backend; the GPU backends leave the fluid as it is).
    pub fn cools(&self) -> bool {
        self.params.solidify_rate > 0.0 && self.backend_kind() == crate::BackendKind::Cpu
    }
}
