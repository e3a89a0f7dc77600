//! The step at the depth limit: transfers, inflow edges and level edges never put a cell past
//! `MAX_DEPTH_QUANTA` (a receiving cell takes only what fits, the giver keeps the rest), nothing
//! wraps or is lost, and the ledger counts what entered, on the CPU and on wgpu.
//!
//! These tests describe the step kernel that caps transfers at the limit. The step in this tree
//! does not yet (the CPU clamps a full cell after the transfer, which loses the water and turns
//! the level edge's inflow negative; the WGSL wraps), so they are ignored here and run with
//! `cargo test -p pipewater-core --test depth_limit_step -- --ignored` until that step lands.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::{assert_physical, gpu_or_skip, mass_identity};
use pipewater_core::quanta::MAX_DEPTH_QUANTA;
use pipewater_core::{BackendPreference, Boundary, Edge, Grid, Params, Simulation, State};

/// Why these tests are ignored for now.
const UNTIL: &str = "passes once the step caps transfers and edge inflow at MAX_DEPTH_QUANTA";

fn backends(test: &str) -> Vec<BackendPreference> {
    let mut list = vec![BackendPreference::Cpu];
    if gpu_or_skip(test) {
        list.push(BackendPreference::Gpu);
    }
    list
}

/// Runs `frames` frames of 1/60 s and checks, every frame, that no cell passed the limit or went
/// negative, and at the end that the mass identity holds exactly. Returns the final state.
fn run_at_the_limit(sim: &mut Simulation, frames: u32, what: &str) -> State {
    for frame in 0..frames {
        sim.advance(1.0 / 60.0).unwrap();
        let state = sim.read_state().unwrap();
        assert_physical(&state, &format!("{what}, frame {frame}"));
    }
    let (actual, expected) = mass_identity(sim);
    let ledger = sim.ledger().unwrap();
    println!("{what}: total {actual}, expected {expected} quanta; counters {:?}", ledger.counters);
    assert_eq!(actual, expected, "{what}: the ledger counts what entered, nothing wraps or is lost");
    sim.read_state().unwrap()
}

#[test]
#[ignore = "passes once the step caps transfers and edge inflow at MAX_DEPTH_QUANTA"]
fn water_flowing_into_a_full_cell_stays_with_the_giver() {
    println!("{UNTIL}");
    for backend in backends("water_flowing_into_a_full_cell_stays_with_the_giver") {
        // A full cell at the bottom of a step of terrain: its neighbours' surface stands higher.
        let grid = Grid::new(8, 8, 1.0).unwrap();
        let mut state = State::new(grid);
        let full = grid.index(4, 4);
        for (i, t) in state.terrain.iter_mut().enumerate() {
            *t = if i == full { 0.0 } else { 2047.0 };
        }
        state.depth.fill(2 << 20);
        state.depth[full] = MAX_DEPTH_QUANTA;
        let total = state.total_quanta();
        let mut sim = Simulation::new(state, Params::default(), backend).unwrap();
        let after = run_at_the_limit(&mut sim, 30, &format!("{backend:?}: flow into a full cell"));
        println!("{backend:?}: full cell {} quanta; total {} vs {total}", after.depth[full], after.total_quanta());
        assert_eq!(after.total_quanta(), total, "{backend:?}: walls: the water is all still there");
        assert_eq!(after.depth[full], MAX_DEPTH_QUANTA);
    }
}

#[test]
#[ignore = "passes once the step caps transfers and edge inflow at MAX_DEPTH_QUANTA"]
fn an_inflow_edge_into_full_cells_adds_only_what_fits() {
    println!("{UNTIL}");
    for backend in backends("an_inflow_edge_into_full_cells_adds_only_what_fits") {
        let grid = Grid::new(8, 8, 1.0).unwrap();
        let mut state = State::new(grid);
        state.depth.fill(MAX_DEPTH_QUANTA - 50);
        let mut params = Params::default();
        params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 100.0 };
        let mut sim = Simulation::new(state, params, backend).unwrap();
        let after = run_at_the_limit(&mut sim, 20, &format!("{backend:?}: inflow into full cells"));
        let entered = sim.ledger().unwrap().counters.boundary_in;
        println!("{backend:?}: {entered} quanta entered through the edge (room: {} quanta)", 50 * grid.cell_count());
        assert!(entered <= 50 * grid.cell_count() as u64, "{backend:?}: at most the room there was");
        assert!(after.depth.iter().all(|&d| d <= MAX_DEPTH_QUANTA));
    }
}

#[test]
#[ignore = "passes once the step caps transfers and edge inflow at MAX_DEPTH_QUANTA"]
fn a_level_edge_beside_full_cells_never_counts_negative_inflow() {
    println!("{UNTIL}");
    for backend in backends("a_level_edge_beside_full_cells_never_counts_negative_inflow") {
        // Full cells at the west edge, held by a level edge at the limit, with water pouring
        // towards them from higher ground in the east.
        let grid = Grid::new(12, 6, 1.0).unwrap();
        let mut state = State::new(grid);
        for y in 0..grid.height {
            for x in 0..grid.width {
                let i = grid.index(x, y);
                state.terrain[i] = if x < 4 { 0.0 } else { 2040.0 };
                state.depth[i] = if x < 4 { MAX_DEPTH_QUANTA } else { 10 << 20 };
            }
        }
        let mut params = Params::default();
        params.boundaries[Edge::West as usize] = Boundary::Level { level: 2048.0 };
        let mut sim = Simulation::new(state, params, backend).unwrap();
        run_at_the_limit(&mut sim, 30, &format!("{backend:?}: level edge beside full cells"));
        let counters = sim.ledger().unwrap().counters;
        assert!(counters.boundary_in < 1 << 40, "{backend:?}: no negative inflow counted as a huge unsigned one: {counters:?}");
    }
}
