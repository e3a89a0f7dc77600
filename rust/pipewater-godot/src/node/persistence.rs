//! Saving and loading the water: `save_state()` and `load_state()` with a [`PipeWaterState`].

use super::PipeWater;
use crate::saved_state::PipeWaterState;
use godot::prelude::*;

#[godot_api(secondary)]
impl PipeWater {
    /// The water as it is now, to give to `load_state()` later: depths, flow, terrain (digging
    /// included), sources and drains, the ledger (`get_mass_ledger()`) and the simulated clock.
    /// Reads the whole state (waiting for the GPU): meant for save games and checkpoints, not
    /// for every frame. Returns null, with an error, when there is no simulation or it cannot be
    /// read. The node's properties are not part of it.
    #[func]
    fn save_state(&mut self) -> Option<Gd<PipeWaterState>> {
        if !self.ensure_sim() {
            self.errors.reject(
                "save_state: there is no simulation to save (see the earlier errors)".into(),
            );
            return None;
        }
        self.sync_sources();
        let result = self.sim.as_mut().map(|s| s.save_state());
        let bytes = self.errors.core_result("save_state", result)?;
        let elapsed = self.sim.as_ref().map_or(0.0, |s| s.elapsed());
        Some(PipeWaterState::from_saved(&bytes, self.grid_size, elapsed))
    }

    /// Puts back the water saved in `state` by `save_state()`, exactly: depths, flow, terrain,
    /// sources and drains, ledger and clock; the textures follow at once. A `PipeWaterSource`
    /// node whose source the state holds (saved by the same run) goes on with it; the others
    /// are placed again. The node's properties
    /// (gravity, boundaries, …) stay as they are and apply from the next step. Returns false,
    /// with an error naming the problem, and keeps the current water when `state` is null, was
    /// saved for another `grid_size` or `cell_size`, is truncated or corrupt, or comes from a
    /// newer PipeWater.
    #[func]
    fn load_state(&mut self, state: Option<Gd<PipeWaterState>>) -> bool {
        let Some(state) = state else {
            self.errors.reject(
                "load_state: state is null: pass a PipeWaterState from save_state()".into(),
            );
            return false;
        };
        if !self.ensure_sim() {
            self.errors.reject(
                "load_state: there is no simulation to load into (see the earlier errors)".into(),
            );
            return false;
        }
        let bytes = state.bind().bytes().clone();
        let result = self.sim.as_mut().map(|s| s.restore_state(bytes.as_slice()));
        if self.errors.core_result("load_state", result).is_none() {
            return false;
        }
        // The source nodes whose sources the state holds go on with them; the others are placed
        // again.
        let live = self.sim.as_ref().map(|s| s.source_ids().iter().map(|id| id.0).collect()).unwrap_or_default();
        self.source_placements.keep_live(&live);
        self.sync_sources();
        // The saved parameters give way to the node's properties, which stay the truth.
        self.pending.params();
        self.ensure_sim();
        self.outputs.forget_shown();
        self.update_outputs();
        true
    }
}
