//! Helpers shared by the specification tests.
#![allow(dead_code)]

use pipewater_core::{Grid, Params, Simulation, State};

/// Runs `frames` fixed steps of `dt` and returns the final state.
pub fn run_fixed(sim: &mut Simulation, dt: f32, steps: u32) -> State {
    sim.run_steps(dt, steps).expect("run_steps");
    sim.read_state().expect("read_state")
}

/// The mass identity `total = initial + added − removed + in − out`, in quanta, for the current
/// state: returns (actual, expected).
pub fn mass_identity(sim: &mut Simulation) -> (i64, i64) {
    let state = sim.read_state().expect("read_state");
    let ledger = sim.ledger().expect("ledger");
    (state.total_quanta(), ledger.expected_total())
}

/// Asserts every depth is non-negative and every flux finite.
pub fn assert_physical(state: &State, context: &str) {
    if let Some((i, d)) = state.depth.iter().enumerate().find(|(_, &d)| d < 0) {
        panic!("{context}: depth {d} quanta below zero at cell {i}");
    }
    if let Some((i, f)) = state.flux.iter().enumerate().find(|(_, f)| f.iter().any(|v| !v.is_finite())) {
        panic!("{context}: non-finite flux {f:?} at cell {i}");
    }
}

/// A grid, panicking on invalid sizes (tests use valid ones).
pub fn grid(w: u32, h: u32, dx: f32) -> Grid {
    Grid::new(w, h, dx).expect("valid grid")
}

/// Undamped depth-dependent parameters, for physics checks.
pub fn physical_params() -> Params {
    Params { damping: 0.0, ..Params::default() }
}
