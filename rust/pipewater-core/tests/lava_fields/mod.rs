//! Shared by the cooling tests (`viscosity.rs` on the CPU, `gpu_cooling.rs` on the GPU): the
//! field lava is poured on and the count of what set into ground. A module of its own because the
//! two files take their other helpers from `common` and `gpu_support`, which both define
//! `mass_identity`.
#![allow(dead_code)]

use pipewater_core::{Grid, State, DEPTH_QUANTUM};

/// Beds that are whole quanta under 16 m, so that a raised bed is exact in `f32` and the ground's
/// gain can be counted in quanta: a basin (x < 16) beside an incline rising 0.1 m a cell towards
/// +X, 32 × 16 cells of 0.5 m.
pub fn lava_field() -> State {
    let g = Grid::new(32, 16, 0.5).unwrap();
    let mut state = State::new(g);
    for y in 0..16 {
        for x in 0..32u32 {
            let height = if x < 16 { 0.0 } else { 0.1 * (x - 15) as f32 };
            state.terrain[g.index(x, y)] = (height / DEPTH_QUANTUM).round() * DEPTH_QUANTUM;
        }
    }
    state
}

/// The ground's gain from `before` to `after`, quanta; asserts each cell rose by a whole number of
/// quanta.
pub fn ground_gain_quanta(before: &State, after: &State) -> i64 {
    before.terrain.iter().zip(&after.terrain).map(|(&b, &a)| {
        let gain = (a as f64 - b as f64) / DEPTH_QUANTUM as f64;
        assert_eq!(gain, gain.round(), "a bed rose by whole quanta");
        gain as i64
    }).sum()
}
