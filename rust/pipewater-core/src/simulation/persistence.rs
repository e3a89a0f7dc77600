//! The water the simulation starts, resets and is saved from: the reset state and its initial
//! flow, `reset`, `load`, `save_state` and `restore_state`.

use super::{MAX_INITIAL_SPEED, check_edge_limits, check_state, Simulation};
use crate::error::{check_range, Error, Result};
use crate::state::State;
use crate::save::SavedState;

impl Simulation {
    /// Sets the velocity the water has at the start and after every [`Simulation::reset`]:
    /// `velocity[i]` (m/s, local X and Z) for cell `i` in row-major order, each component within
    /// ±[`MAX_INITIAL_SPEED`]. It is turned into pipe fluxes ([`State::set_velocity`]) once, on
    /// the CPU, and the simulation restarts from the reset point with it, so every backend starts
    /// from the same fluxes. Meant for setting up a level (a river already flowing), not for
    /// every frame.
    pub fn set_initial_velocity(&mut self, velocity: &[[f32; 2]]) -> Result<()> {
        if velocity.len() != self.grid.cell_count() {
            return Err(Error::WrongLength { name: "velocity", expected: self.grid.cell_count(), actual: velocity.len() });
        }
        for v in velocity.iter().flatten() {
            check_range("velocity", *v, -MAX_INITIAL_SPEED, MAX_INITIAL_SPEED)?;
        }
        self.initial_velocity = Some(velocity.to_vec());
        self.apply_initial_velocity();
        self.reset()
    }

    /// Sets a uniform current of `velocity` (m/s, local X and Z) at the start and after every
    /// reset in the cells whose centres lie within the local rectangle from `min` to `max`
    /// (X, Z; m), keeping the initial velocity of the other cells (zero unless set), then
    /// restarts from the reset point like [`Simulation::set_initial_velocity`].
    pub fn set_initial_current(&mut self, min: [f32; 2], max: [f32; 2], velocity: [f32; 2]) -> Result<()> {
        Self::check_point(min[0], min[1])?;
        Self::check_point(max[0], max[1])?;
        for v in velocity {
            check_range("velocity", v, -MAX_INITIAL_SPEED, MAX_INITIAL_SPEED)?;
        }
        let g = self.grid;
        let mut field = self.initial_velocity.clone().unwrap_or_else(|| vec![[0.0; 2]; g.cell_count()]);
        for y in 0..g.height {
            for x in 0..g.width {
                let [px, pz] = g.cell_centre(x, y);
                if px >= min[0].min(max[0]) && px <= min[0].max(max[0]) && pz >= min[1].min(max[1]) && pz <= min[1].max(max[1]) {
                    field[g.index(x, y)] = velocity;
                }
            }
        }
        self.set_initial_velocity(&field)
    }

    /// Rewrites the reset point's fluxes from the initial velocity, when one is set.
    pub(super) fn apply_initial_velocity(&mut self) {
        if let Some(field) = &self.initial_velocity {
            let w = self.grid.width;
            self.initial.set_velocity(&self.params, |x, y| field[(y * w + x) as usize]);
        }
    }

    /// The state [`Simulation::reset`] restores: the one the simulation was created or loaded
    /// with, terrain from the last [`Simulation::set_terrain`], initial velocity applied.
    pub fn reset_state(&self) -> &State {
        &self.initial
    }

    /// Restores the state the simulation was created with (terrain from the last
    /// [`Simulation::set_terrain`]), zeroes the ledger and the clock. Sources are kept.
    pub fn reset(&mut self) -> Result<()> {
        let initial = self.initial.clone();
        self.on_backend(|b| b.load(&initial))?;
        self.pending_nudges.clear();
        if let Some(detail) = &mut self.detail {
            detail.restart();
        }
        self.initial_total = self.initial.total_quanta();
        self.cooling_carry = 0.0;
        self.inflow_carry = [0.0; 4];
        for s in &mut self.sources {
            s.carry = 0.0;
        }
        self.elapsed = 0.0;
        self.carried_time = 0.0;
        self.recent_gain = [0.0; 3];
        Ok(())
    }

    /// Replaces the whole state (a new terrain and water) and the reset point.
    pub fn load(&mut self, state: State) -> Result<()> {
        if state.grid != self.grid {
            return Err(Error::invalid("state grid", format!("{:?}", state.grid), format!("{:?}", self.grid)));
        }
        check_state(&state, &self.params)?;
        self.initial = state;
        self.initial_velocity = None;
        self.reset()
    }

    /// The complete water state as bytes, to be given back to [`Simulation::restore_state`]:
    /// parameters, terrain as edited, depth, fluxes, sources and drains with their remainders,
    /// inflow remainders, the ledger and the clock. The format is described in [`crate::save`];
    /// it is the same for every backend, so a state saved on the GPU restores on the CPU and
    /// the other way round. The reset point ([`Simulation::reset`]) is not part of it.
    ///
    /// Reads the current state, waiting for the device on a GPU backend (edits queued so far are
    /// applied first), and encodes it on the caller's thread: a large grid holds the caller for
    /// its whole read and compression (a second for a 4096² grid on the GPU). A game saves with
    /// [`Simulation::begin_save`] instead, which does both on a worker thread. Only tiles with
    /// water store their depth and pipes ([`crate::save_tiles`]).
    pub fn save_state(&mut self) -> Result<Vec<u8>> {
        let state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        Ok(self.saved_state(state, counters).encode())
    }

    /// Everything a save holds besides the fields and the counters, as of now, with those.
    pub(super) fn saved_state(&self, state: State, counters: crate::state::Counters) -> SavedState {
        SavedState {
            params: self.params,
            frames: self.frames,
            elapsed: self.elapsed,
            last_report: self.last_report,
            recent_gain: self.recent_gain,
            initial_total: self.initial_total,
            counters,
            cooling_carry: self.cooling_carry,
            inflow_carry: self.inflow_carry,
            next_source_id: self.next_source_id,
            sources: self.sources.clone(),
            state,
        }
    }

    /// Replaces the water state with one from [`Simulation::save_state`]: the run goes on
    /// exactly where the saved one stopped. Parameters, fields, sources and drains (with their
    /// ids), remainders, ledger and clock all come from `bytes`; the backend and the reset point
    /// stay this simulation's.
    ///
    /// On the CPU backend a restored run gives bit-identical results to one that never stopped.
    /// On a GPU backend the fields and ledger are restored exactly; later frames agree with an
    /// uninterrupted run within the GPU's rounding (see `tests/gpu_agreement.rs`).
    ///
    /// Fails with [`Error::InvalidSave`], leaving this simulation untouched, when `bytes` is not
    /// a PipeWater state, is truncated or corrupt, comes from a newer format version, holds
    /// values out of range, or was saved for another grid (size or cell size).
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<()> {
        let saved = SavedState::decode(bytes)?;
        self.apply_saved(saved)
    }

    /// Goes on from a decoded save: checks it against this simulation, then replaces the state.
    pub(super) fn apply_saved(&mut self, saved: SavedState) -> Result<()> {
        let g = saved.state.grid;
        if g != self.grid {
            return Err(Error::InvalidSave(format!(
                "it was saved for a {}x{} grid of {} m cells; this simulation has {}x{} cells of {} m",
                g.width, g.height, g.cell_size, self.grid.width, self.grid.height, self.grid.cell_size
            )));
        }
        check_edge_limits(&saved.params, g, &saved.state.terrain).map_err(|e| Error::InvalidSave(format!("its parameters do not fit its terrain: {e}")))?;
        self.on_backend(|b| b.restore(&saved.state, saved.counters, saved.frames))?;
        self.take_saved(saved)
    }

    /// After the backend holds a save's fields: everything else the save holds (parameters,
    /// sources, remainders, clock); the detail waves start at rest.
    pub(super) fn take_saved(&mut self, saved: SavedState) -> Result<()> {
        self.pending_nudges.clear();
        if let Some(detail) = &mut self.detail {
            detail.restart();
        }
        // Saves hold no erosion settings: erosion goes on as this simulation had it.
        self.params = crate::params::Params { erosion: self.params.erosion, ..saved.params };
        self.initial_total = saved.initial_total;
        self.cooling_carry = saved.cooling_carry;
        self.sources = saved.sources;
        self.next_source_id = saved.next_source_id;
        self.inflow_carry = saved.inflow_carry;
        self.recent_gain = saved.recent_gain;
        self.frames = saved.frames;
        self.elapsed = saved.elapsed;
        self.last_report = saved.last_report;
        Ok(())
    }
}
