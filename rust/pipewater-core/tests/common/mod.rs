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
    if let Some((i, f)) = state.flow.iter().enumerate().find(|(_, f)| f.iter().any(|v| !v.is_finite())) {
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

/// How a scenario drives its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stepping {
    /// `advance(1/60)`: the step length follows the water (snapshot extremes, recent gains).
    Advance,
    /// `run_steps(0.02, 4)`: a fixed step, for comparisons whose backends choose steps from
    /// snapshots of different ages.
    Fixed,
}

/// A river valley exercising everything that carries state between frames: an inflow edge
/// (west) and open edges (east, south) in eight-neighbour mode, a spring and a drain with
/// remainders, and edits of water and terrain on some frames.
pub fn busy_valley(preference: pipewater_core::BackendPreference) -> Simulation {
    use pipewater_core::{scenarios, Boundary, Edge, NeighbourMode};
    let g = grid(72, 48, 1.0);
    let (mut state, spring) = scenarios::river_valley(g, 7, 3.0);
    state.fill_to_level(0.6).expect("the test level lies within a cell's depth limit");
    let mut params = Params { neighbours: NeighbourMode::Eight, ..Params::default() };
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 0.37 };
    params.boundaries[Edge::East as usize] = Boundary::Open;
    params.boundaries[Edge::South as usize] = Boundary::Open;
    let mut sim = Simulation::new(state, params, preference).expect("busy valley");
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    sim.add_source(10.0, 3.0, -0.21, 2.5).expect("drain");
    sim
}

/// Runs frames `from..to` of [`busy_valley`]: the frame step and, on some frames, edits.
pub fn drive_busy_valley(sim: &mut Simulation, from: u32, to: u32, stepping: Stepping) {
    for frame in from..to {
        match frame % 97 {
            13 => {
                sim.add_water(-12.0 + (frame % 7) as f32, 4.0, 3.3, 3.0).expect("add_water");
            }
            41 => {
                sim.remove_water(8.0, -2.0, 1.7, 4.0).expect("remove_water");
            }
            71 => sim.modify_terrain(0.0, (frame % 5) as f32 - 2.0, -0.15, 3.5).expect("modify_terrain"),
            _ => {}
        }
        if frame == 150 {
            let spring = sim.source_ids()[0];
            sim.set_source_rate(spring, 1.9).expect("set_source_rate");
        }
        match stepping {
            Stepping::Advance => {
                sim.advance(1.0 / 60.0).expect("advance");
            }
            Stepping::Fixed => sim.run_steps(0.02, 4).expect("run_steps"),
        }
    }
}

/// A short fingerprint of a state's bits (FNV-1a over depth, flux and terrain), for printing.
pub fn fingerprint(state: &State) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |word: u32| {
        for b in word.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    state.depth.iter().for_each(|&d| eat(d as u32));
    state.flow.iter().flatten().for_each(|f| eat(f.to_bits()));
    state.terrain.iter().for_each(|b| eat(b.to_bits()));
    h
}

/// Cells whose depth, flux or terrain bits differ between two states of one grid.
pub fn differing_cells(a: &State, b: &State) -> usize {
    (0..a.depth.len())
        .filter(|&i| {
            a.depth[i] != b.depth[i]
                || a.terrain[i].to_bits() != b.terrain[i].to_bits()
                || a.flow[i].iter().zip(&b.flow[i]).any(|(x, y)| x.to_bits() != y.to_bits())
        })
        .count()
}

/// A lake at rest over rough ground, `width` × 160 cells of 1 m, with a dry plateau 40 cells wide
/// on its west side holding a block of water 1.2 m deep that floods down into the lake: the flood
/// reaches tiles that slept until then (`sleeping.rs`, `gpu_sleeping.rs`).
pub fn lake_with_flood(width: u32) -> State {
    let g = grid(width, 160, 1.0);
    let mut state = pipewater_core::scenarios::rough_lake(g, 11, 1.5, 1.0);
    for y in 0..g.height {
        for x in 0..40 {
            let i = g.index(x, y);
            state.terrain[i] = 2.5;
            state.depth[i] = 0;
        }
    }
    for y in 60..100 {
        for x in 4..30 {
            state.depth[g.index(x, y)] = pipewater_core::quanta::depth_to_quanta(1.2);
        }
    }
    state
}
