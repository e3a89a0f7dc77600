//! The depth limit as a contract at the edges of the model: every edit and parameter that puts
//! water into a cell respects `MAX_DEPTH_QUANTA` (about 2048 m). A request that cannot fit by
//! itself is refused with an error that names the limit; one that fits partly places what fits
//! and counts exactly that. Each test runs on the CPU and, where an adapter exists, on wgpu
//! (`PIPEWATER_REQUIRE_GPU=1` makes a missing adapter a failure).
//!
//! The step's own transfers at the limit (flow into a full cell, inflow and level edges beside
//! full cells) are tested in `step_at_the_depth_limit.rs`.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::quanta::{quantum_volume, MAX_DEPTH_QUANTA};
use pipewater_core::{BackendPreference, Boundary, Edge, Error, Grid, Params, Simulation, State, MAX_DEPTH};

/// The backends to test: the CPU, and wgpu where an adapter exists.
fn backends(test: &str) -> Vec<BackendPreference> {
    let mut list = vec![BackendPreference::Cpu];
    if gpu_or_skip(test) {
        list.push(BackendPreference::Gpu);
    }
    list
}

/// The error's text, which must name the limit.
fn names_the_limit(e: &Error) -> bool {
    e.to_string().contains(&MAX_DEPTH.to_string())
}

/// A flat 8 × 8 pool of 1 m cells, every cell holding `quanta`.
fn pool(quanta: i32) -> State {
    let mut state = State::new(Grid::new(8, 8, 1.0).unwrap());
    state.depth.fill(quanta);
    state
}

#[test]
fn an_initial_level_past_the_limit_above_the_lowest_ground_is_refused_and_one_at_it_fills_to_the_limit() {
    let grid = Grid::new(6, 4, 1.0).unwrap();
    let mut terrain = vec![10.0; grid.cell_count()];
    terrain[grid.index(2, 1)] = -5.0;
    let mut state = State::with_terrain(grid, terrain).unwrap();
    let refused = state.fill_to_level(-5.0 + 3000.0);
    let untouched = state.total_quanta();
    let at_limit = state.fill_to_level(-5.0 + MAX_DEPTH);
    let deepest = *state.depth.iter().max().unwrap();
    println!("level 2995 m: {refused:?}; water left: {untouched} quanta; level -5 + {MAX_DEPTH} m: {at_limit:?}, deepest cell {deepest} quanta (limit {MAX_DEPTH_QUANTA})");
    let Err(e) = refused else { panic!("3000 m of water above the lowest cell cannot fit") };
    assert!(names_the_limit(&e) && e.to_string().contains("2043"), "names the limit and the highest level (-5 + 2048): {e}");
    assert_eq!(untouched, 0, "a refused fill leaves the water as it was");
    assert_eq!(at_limit, Ok(()));
    assert_eq!(deepest, MAX_DEPTH_QUANTA, "a level exactly at the limit fills the lowest cell to it");
}

#[test]
fn add_water_past_the_limit_for_one_cell_is_refused_and_nearly_full_cells_take_exactly_what_fits() {
    for backend in backends("add_water_past_the_limit_for_one_cell_is_refused_and_nearly_full_cells_take_exactly_what_fits") {
        let room = 1000i32;
        let mut state = pool(0);
        let full_cell = state.grid.index(4, 4);
        state.depth[full_cell] = MAX_DEPTH_QUANTA - room;
        let mut sim = Simulation::new(state, Params::default(), backend).unwrap();
        let qv = quantum_volume(1.0);
        let before = sim.ledger().unwrap();
        // Radius 0: the whole volume goes to the cell under the point, whose centre is (0.5, 0.5).
        let refused = sim.add_water(0.5, 0.5, 3000.0, 0.0);
        let after_refusal = sim.ledger().unwrap();
        let asked = 5000.0 * qv;
        let placed = sim.add_water(0.5, 0.5, asked as f32, 0.0).unwrap();
        let ledger = sim.ledger().unwrap();
        let state = sim.read_state().unwrap();
        println!(
            "{backend:?}: 3000 m³ on one 1 m² cell: {refused:?}; {:.0} quanta asked into a cell with room for {room}: {:.0} placed, ledger added {}, cell at {} of {MAX_DEPTH_QUANTA}",
            asked / qv,
            placed / qv,
            ledger.counters.added - before.counters.added,
            state.depth[full_cell]
        );
        let Err(e) = refused else { panic!("{backend:?}: 3000 m of water on one cell cannot fit") };
        assert!(names_the_limit(&e), "{backend:?}: {e}");
        assert_eq!(after_refusal, before, "{backend:?}: a refused edit adds nothing");
        assert_eq!((placed / qv).round() as i32, room, "{backend:?}: the call returns exactly what fit");
        assert_eq!(ledger.counters.added - before.counters.added, room as u64, "{backend:?}: the ledger counts what entered");
        assert_eq!(state.depth[full_cell], MAX_DEPTH_QUANTA, "{backend:?}: the cell is full, not wrapped");
        assert_eq!(state.total_quanta(), ledger.expected_total(), "{backend:?}: the mass identity holds");
    }
}

#[test]
fn a_basin_fill_past_the_limit_is_refused_and_one_at_the_limit_fills_to_it() {
    for backend in backends("a_basin_fill_past_the_limit_is_refused_and_one_at_the_limit_fills_to_it") {
        let mut sim = Simulation::new(pool(0), Params::default(), backend).unwrap();
        let refused = sim.fill_basin(0.5, 0.5, 2500.0);
        let ledger = sim.ledger().unwrap();
        let added = sim.fill_basin(0.5, 0.5, MAX_DEPTH).unwrap();
        let state = sim.read_state().unwrap();
        let ledger_after = sim.ledger().unwrap();
        println!("{backend:?}: fill to 2500 m: {refused:?}; fill to {MAX_DEPTH} m: {added} m³, deepest {} quanta", state.depth.iter().max().unwrap());
        let Err(e) = refused else { panic!("{backend:?}: a 2500 m deep basin cannot fit") };
        assert!(names_the_limit(&e), "{backend:?}: {e}");
        assert_eq!(ledger.counters.added, 0, "{backend:?}: the refused fill added nothing");
        assert!(state.depth.iter().all(|&d| d == MAX_DEPTH_QUANTA), "{backend:?}: every cell is full to the limit");
        assert_eq!(state.total_quanta(), ledger_after.expected_total(), "{backend:?}: the mass identity holds");
    }
}

#[test]
fn a_source_whose_rate_cannot_fit_is_refused_and_one_into_a_full_cell_adds_nothing() {
    for backend in backends("a_source_whose_rate_cannot_fit_is_refused_and_one_into_a_full_cell_adds_nothing") {
        let mut sim = Simulation::new(pool(MAX_DEPTH_QUANTA), Params::default(), backend).unwrap();
        // One 1 m² cell may gain 2048 m in a step of up to 1 s: 2048 m³/s.
        let refused = sim.add_source(0.5, 0.5, 3000.0, 0.0);
        let drain_refused = sim.add_source(0.5, 0.5, -3000.0, 0.0);
        let source = sim.add_source(0.5, 0.5, 2000.0, 0.0).unwrap();
        let raised = sim.set_source_rate(source, 1.0e4);
        for _ in 0..5 {
            sim.advance(1.0 / 60.0).unwrap();
        }
        let state = sim.read_state().unwrap();
        let ledger = sim.ledger().unwrap();
        println!("{backend:?}: 3000 m³/s: {refused:?}; drain: {drain_refused:?}; raised to 1e4: {raised:?}; after 5 frames into full cells: ledger {:?}", ledger.counters);
        for r in [refused.map(drop), drain_refused.map(drop), raised.map(drop)] {
            let Err(e) = r else { panic!("{backend:?}: a rate past 2048 m³/s for one cell is refused") };
            assert!(names_the_limit(&e) && e.to_string().contains("-2048 ..= 2048 m³/s"), "{backend:?}: names the limit and the largest rate: {e}");
        }
        assert_eq!(ledger.counters.added, 0, "{backend:?}: a full cell takes nothing from a source");
        assert!(state.depth.iter().all(|&d| d == MAX_DEPTH_QUANTA), "{backend:?}: every cell stays at the limit");
        assert_eq!(state.total_quanta(), ledger.expected_total(), "{backend:?}: the mass identity holds");
    }
}

#[test]
fn inflow_rates_and_edge_levels_that_cannot_fit_are_refused_naming_their_edge_and_the_limit() {
    let grid = Grid::new(10, 4, 1.0).unwrap();
    let mut terrain = vec![0.0; grid.cell_count()];
    terrain[grid.index(9, 2)] = -100.0;
    let state = State::with_terrain(grid, terrain).unwrap();
    // The east edge has 4 cells of 1 m²: 4 · 2048 m in a step of up to 1 s, 8192 m³/s.
    let mut inflow = Params::default();
    inflow.boundaries[Edge::East as usize] = Boundary::Inflow { rate: 9000.0 };
    let mut level = Params::default();
    level.boundaries[Edge::East as usize] = Boundary::Level { level: 2000.0 };
    let refused_inflow = Simulation::cpu(state.clone(), inflow).map(drop);
    let refused_level = Simulation::cpu(state.clone(), level).map(drop);
    let mut sim = Simulation::cpu(state.clone(), Params::default()).unwrap();
    let refused_later = sim.set_params(level);
    let mut fits = Params::default();
    fits.boundaries[Edge::East as usize] = Boundary::Level { level: 1900.0 };
    fits.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 8000.0 };
    let accepted = sim.set_params(fits);
    println!("inflow 9000 m³/s: {refused_inflow:?}\nlevel 2000 m over ground at -100 m: {refused_level:?}\nset_params: {refused_later:?}\nlevel 1900 m and inflow 8000 m³/s: {accepted:?}");
    let Err(Error::InvalidArgument { name, .. }) = &refused_inflow else { panic!("9000 m³/s into 4 cells cannot fit") };
    assert_eq!(*name, "inflow_rate_east");
    assert!(names_the_limit(&refused_inflow.clone().unwrap_err()) && refused_inflow.unwrap_err().to_string().contains("8192"));
    for refused in [refused_level, refused_later] {
        let Err(e @ Error::InvalidArgument { name: "boundary_level_east", .. }) = refused else { panic!("a level 2100 m above the edge's lowest ground cannot fit") };
        assert!(names_the_limit(&e) && e.to_string().contains("1948"), "names the limit and the highest level (-100 + 2048): {e}");
    }
    assert_eq!(accepted, Ok(()));
}

#[test]
fn a_state_with_cells_at_the_limit_saves_and_restores_exactly() {
    for backend in backends("a_state_with_cells_at_the_limit_saves_and_restores_exactly") {
        let mut state = pool(0);
        state.depth[10] = MAX_DEPTH_QUANTA;
        state.depth[11] = MAX_DEPTH_QUANTA - 1;
        let mut sim = Simulation::new(state.clone(), Params::default(), backend).unwrap();
        let bytes = sim.save_state().unwrap();
        let mut other = Simulation::new(pool(5), Params::default(), backend).unwrap();
        other.restore_state(&bytes).unwrap();
        let restored = other.read_state().unwrap();
        println!("{backend:?}: cells 10 and 11 restored as {} and {} quanta (limit {MAX_DEPTH_QUANTA})", restored.depth[10], restored.depth[11]);
        assert_eq!(restored.depth, state.depth, "{backend:?}: the depths at the limit come back exactly");
    }
}
