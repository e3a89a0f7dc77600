//! Moving a running simulation to another backend keeps its water, its sources and its ledger.

mod gpu_support;

use gpu_support::{gpu_or_skip, mass_identity};
use pipewater_core::params::{Boundary, Edge};
use pipewater_core::{BackendKind, BackendPreference, Grid, Params, Simulation, State};

fn running_valley() -> Simulation {
    let grid = Grid::new(48, 40, 0.5).unwrap();
    let terrain: Vec<f32> = (0..grid.cell_count()).map(|i| 0.02 * (i as u32 % grid.width) as f32 + 0.1 * ((i / 7) % 3) as f32).collect();
    let mut state = State::with_terrain(grid, terrain).unwrap();
    state.fill_to_level(0.6).expect("the test level lies within a cell's depth limit");
    let mut params = Params::default();
    params.boundaries[Edge::East as usize] = Boundary::Open;
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 0.5 };
    let mut sim = Simulation::new(state, params, BackendPreference::Cpu).unwrap();
    sim.add_source(-5.0, 2.0, 0.8, 1.5).unwrap();
    sim.add_water(3.0, -4.0, 2.0, 2.0).unwrap();
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    sim
}

#[test]
fn switching_backends_keeps_the_water_and_the_ledger_identity() {
    if !gpu_or_skip("switching_backends_keeps_the_water_and_the_ledger_identity") {
        return;
    }
    let mut sim = running_valley();
    let before = sim.read_state().unwrap();
    let ledger_before = sim.ledger().unwrap();
    sim.switch_to(BackendPreference::Gpu).unwrap();
    assert_eq!(sim.backend_kind(), BackendKind::Gpu);
    let after = sim.read_state().unwrap();
    let ledger_after = sim.ledger().unwrap();
    println!("CPU → GPU: total {} → {} quanta; ledger {:?} → {:?}", before.total_quanta(), after.total_quanta(), ledger_before, ledger_after);
    assert_eq!(before, after, "the GPU starts from exactly the CPU's fields");
    assert_eq!(ledger_before, ledger_after, "the ledger carries over");
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    sim.switch_to(BackendPreference::Cpu).unwrap();
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let (actual, expected) = mass_identity(&mut sim);
    let ledger = sim.ledger().unwrap();
    println!("after CPU → GPU → CPU and 60 frames: total {actual}, expected {expected}; counters {:?}", ledger.counters);
    assert_eq!(actual, expected, "mass identity across two switches");
    assert!(ledger.counters.added > ledger_before.counters.added, "the source kept adding after the switches");
    assert!(ledger.counters.boundary_in > ledger_before.counters.boundary_in, "the inflow edge kept its rate");
}

#[test]
fn a_failed_switch_leaves_the_running_backend_untouched() {
    let mut sim = running_valley();
    let before = sim.read_state().unwrap();
    let error = sim.switch_backend(|_| Err(pipewater_core::Error::GpuUnavailable("no device in this test".into()))).unwrap_err();
    println!("switch refused: {error}");
    assert_eq!(sim.backend_kind(), BackendKind::Cpu);
    assert_eq!(sim.read_state().unwrap(), before);
    let (actual, expected) = mass_identity(&mut sim);
    assert_eq!(actual, expected);
}
