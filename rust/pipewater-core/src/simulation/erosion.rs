//! Erosion and deposition of the ground by the water ([`crate::erosion`]): what the simulation
//! tells its backend, and what it reads back.

use super::Simulation;
use crate::erosion::ErosionFields;
use crate::error::{Error, Result};
use crate::params::{ErosionParams, Params};

/// What [`crate::backend::Backend::configure_erosion`] gets for `params`: the erosion settings
/// while erosion is on.
pub(super) fn config(params: &Params) -> Option<ErosionParams> {
    params.erosion.enabled.then_some(params.erosion)
}

/// Why [`crate::BackendPreference::Auto`] runs a simulation with erosion on the CPU.
pub(super) fn gpu_refusal() -> Error {
    Error::invalid("backend", "GPU", "CPU while erosion is on: the erosion pass runs on the CPU backend only")
}

impl Simulation {
    /// The erosion fields (suspended sediment and ground change per cell, quanta of
    /// [`crate::DEPTH_QUANTUM`] m) and their ledger, waiting for the device if needed; `None`
    /// while erosion is off ([`crate::ErosionParams::enabled`]). For tests, debug views and
    /// saving; the terrain the erosion changed is in every snapshot already.
    pub fn read_erosion(&mut self) -> Result<Option<ErosionFields>> {
        self.on_backend(|b| b.read_erosion())
    }
}
