//! The node's erosion ([`crate::erosion_settings::PipeWaterErosion`] in its `erosion` property):
//! the resource followed through its `changed` signal into the simulation's parameters, and the
//! sediment ledger scripts read.

use super::PipeWater;
use crate::erosion_settings::PipeWaterErosion;
use godot::prelude::*;
use pipewater_core::ErosionParams;

/// The method the `erosion` resource's `changed` signal calls.
const ON_CHANGED: &str = "_erosion_changed";

impl PipeWater {
    /// Sets `erosion`, following the new resource's changes instead of the old one's.
    pub(super) fn store_erosion(&mut self, value: Option<Gd<PipeWaterErosion>>) {
        let callable = self.to_gd().callable(ON_CHANGED);
        if let Some(mut old) = self.erosion.take() {
            if old.is_connected("changed", &callable) {
                old.disconnect("changed", &callable);
            }
        }
        if let Some(new) = &value {
            let mut new = new.clone();
            if !new.is_connected("changed", &callable) {
                new.connect("changed", &callable);
            }
        }
        self.erosion = value;
        self.pending.params();
    }

    /// The core's erosion parameters: the resource's, or off without one.
    pub(super) fn erosion_params(&self) -> ErosionParams {
        self.erosion.as_ref().map_or_else(ErosionParams::default, |e| e.bind().params())
    }
}

#[godot_api(secondary)]
impl PipeWater {
    /// Called by the `erosion` resource's `changed` signal: the parameters are applied at the next
    /// frame or query.
    #[func]
    fn _erosion_changed(&mut self) {
        self.pending.params();
    }

    /// The sediment ledger, m³: `sediment` (carried by the water now), `ground_change` (net change
    /// of the ground: negative where more dissolved than settled), `sediment_out` (carried out of
    /// the grid by water leaving across open edges), `initial` and `discrepancy` (`ground_change +
    /// sediment + sediment_out − initial`, 0 when every grain is counted, as it always is). Empty
    /// while erosion is off. Reads the whole grid: for debugging and tests, not every frame.
    #[func]
    fn get_erosion_totals(&mut self) -> VarDictionary {
        let mut totals = VarDictionary::new();
        if !self.ensure_sim() {
            return totals;
        }
        let Some(sim) = self.sim.as_mut() else { return totals };
        let qv = sim.quantum_volume();
        match sim.read_erosion() {
            Ok(Some(fields)) => {
                let sum = |v: &[i32]| v.iter().map(|&q| q as i64).sum::<i64>() as f64 * qv;
                totals.set("sediment", sum(&fields.sediment));
                totals.set("ground_change", sum(&fields.ground));
                totals.set("sediment_out", fields.ledger.out as f64 * qv);
                totals.set("initial", fields.ledger.initial as f64 * qv);
                totals.set("discrepancy", fields.discrepancy() as f64 * qv);
            }
            Ok(None) => {}
            Err(e) => self.errors.reject(format!("get_erosion_totals: {e}")),
        }
        totals
    }
}

impl PipeWater {
    /// Before `params` turn erosion on in a running simulation: with `BACKEND_AUTO` on a GPU
    /// backend, the water moves to the CPU first (with a warning), since only the CPU has the
    /// erosion pass. With `BACKEND_GPU` or `BACKEND_RENDERING_DEVICE` it stays, and the
    /// parameters are refused with an error.
    pub(super) fn erosion_to_cpu(&mut self, params: &pipewater_core::Params) {
        let on_gpu = self.sim.as_ref().is_some_and(|s| s.backend_kind() != pipewater_core::BackendKind::Cpu);
        if params.erosion.enabled && on_gpu && self.backend == super::WaterBackend::Auto {
            godot_warn!("PipeWater: erosion runs on the CPU backend only: BACKEND_AUTO moves the water to the CPU while it is on");
            self.switch_backend_to(super::WaterBackend::Cpu);
        }
    }
}
