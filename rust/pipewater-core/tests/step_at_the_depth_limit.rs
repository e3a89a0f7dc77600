//! The step at the deepest water a cell can hold (`MAX_DEPTH_QUANTA`, about 2048 m): a cell at
//! the limit takes in no more, the cells that would pour into it keep their water, a fixed level
//! beyond the edge adds only what fits, and the ledger stays exact; the GPU does the same.

mod common;
mod gpu_support;

use common::{assert_physical, grid, mass_identity};
use gpu_support::gpu_or_skip;
use pipewater_core::{Boundary, BackendPreference, Edge, Params, Simulation, State, DEPTH_QUANTUM, MAX_DEPTH_QUANTA};

/// How close to the limit a filled pit must come, quanta: the room factor leaves its margin
/// (2⁻²⁰ of the room) and each pipe rounds down to whole quanta, so the last few quanta of room
/// fill slowly; 64 quanta are 61 µm.
const FILLED_WITHIN: i32 = 64;

/// A 9×9 basin of 10 m of water on a flat bed at 0 m, with a pit in the middle whose bed lies
/// 2040 m down and which holds `MAX_DEPTH_QUANTA − 500` quanta: its surface stands 2 m below the
/// water around it, which pours in until the pit is full.
fn pit_at_the_limit() -> (State, usize) {
    let g = grid(9, 9, 1.0);
    let pit = g.index(4, 4);
    // Filled over a flat bed first: a level 2050 m above the pit's bed would be refused.
    let mut state = State::new(g);
    state.fill_to_level(10.0).expect("10 m over a flat bed fits");
    state.terrain[pit] = -2040.0;
    state.depth[pit] = MAX_DEPTH_QUANTA - 500;
    (state, pit)
}

fn run_pit(preference: BackendPreference, label: &str) -> State {
    let (state, pit) = pit_at_the_limit();
    let around_before = state.depth[pit + 1];
    let mut sim = Simulation::new(state, Params::default(), preference).expect("simulation");
    let mut deepest = 0;
    for frame in 0..60 {
        sim.run_steps(0.02, 5).expect("run_steps");
        let now = sim.read_state().expect("read_state");
        assert_physical(&now, label);
        deepest = deepest.max(now.depth[pit]);
        let (actual, expected) = mass_identity(&mut sim);
        assert_eq!(actual, expected, "{label}: ledger at frame {frame}");
    }
    let end = sim.read_state().expect("read_state");
    let surface = |i: usize| end.terrain[i] + end.depth[i] as f32 * DEPTH_QUANTUM;
    println!(
        "{label}: pit {} quanta ({} below the limit, deepest ever {}); the cell beside it {} -> {} quanta, surface {:.4} m against the pit's {:.4} m",
        end.depth[pit],
        MAX_DEPTH_QUANTA - end.depth[pit],
        deepest,
        around_before,
        end.depth[pit + 1],
        surface(pit + 1),
        surface(pit)
    );
    assert!(deepest <= MAX_DEPTH_QUANTA, "{label}: never past the limit");
    assert!(MAX_DEPTH_QUANTA - end.depth[pit] <= FILLED_WITHIN, "{label}: the pit fills to within {FILLED_WITHIN} quanta of the limit");
    assert!(surface(pit + 1) > surface(pit) + 1.0, "{label}: the water that does not fit stays around the pit");
    end
}

#[test]
fn a_cell_at_the_depth_limit_takes_no_more_and_its_neighbours_keep_their_water() {
    run_pit(BackendPreference::Cpu, "CPU");
}

#[test]
fn a_fixed_level_above_a_full_edge_cell_adds_only_what_fits() {
    // A 6×2 channel whose east edge opens onto a sea standing at the deepest water its beds
    // hold (2048 m above them: a level higher still is refused when it is set); its cells are
    // nearly full.
    let g = grid(6, 2, 1.0);
    let mut state = State::with_terrain(g, vec![-2000.0; 12]).expect("terrain");
    state.depth.iter_mut().for_each(|d| *d = MAX_DEPTH_QUANTA - 3000);
    let mut params = Params::default();
    params.boundaries[Edge::East as usize] = Boundary::Level { level: -2000.0 + pipewater_core::MAX_DEPTH };
    let mut sim = Simulation::new(state, params, BackendPreference::Cpu).expect("simulation");
    for frame in 0..40 {
        sim.run_steps(0.02, 5).expect("run_steps");
        let now = sim.read_state().expect("read_state");
        assert_physical(&now, "level edge");
        let (actual, expected) = mass_identity(&mut sim);
        assert_eq!(actual, expected, "ledger at frame {frame}");
    }
    let end = sim.read_state().expect("read_state");
    let ledger = sim.ledger().expect("ledger");
    println!("level edge: depths {:?} quanta below the limit; boundary in {} quanta", end.depth.iter().map(|d| MAX_DEPTH_QUANTA - d).collect::<Vec<_>>(), ledger.counters.boundary_in);
    assert!(end.depth.iter().all(|&d| d <= MAX_DEPTH_QUANTA));
    assert!(ledger.counters.boundary_in <= 12 * 3000, "only what fitted came in: {}", ledger.counters.boundary_in);
    assert!(ledger.counters.boundary_in > 0, "the sea filled the channel up to the limit");
}

#[test]
fn the_gpu_fills_a_pit_to_the_limit_as_the_cpu_does() {
    if !gpu_support::gpu_or_skip("the_gpu_fills_a_pit_to_the_limit_as_the_cpu_does") {
        return;
    }
    let cpu = run_pit(BackendPreference::Cpu, "CPU");
    let gpu = run_pit(BackendPreference::Gpu, "GPU");
    let d = gpu_support::difference(&cpu, &gpu);
    println!("CPU vs GPU: depth max |Δ| {:.3e} m, totals {:?}", d.max_depth, d.totals);
    assert_eq!(d.totals.0, d.totals.1, "walls: the totals agree exactly");
    assert!(d.max_depth <= gpu_support::MAX_DEPTH_DIFFERENCE * d.depth_scale, "depths agree within the stated tolerance");
}

/// The CPU, and wgpu where an adapter exists.
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
fn an_inflow_edge_into_full_cells_adds_only_what_fits() {
    for backend in backends("an_inflow_edge_into_full_cells_adds_only_what_fits") {
        let grid = grid(8, 8, 1.0);
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
fn a_level_edge_beside_full_cells_never_counts_negative_inflow() {
    for backend in backends("a_level_edge_beside_full_cells_never_counts_negative_inflow") {
        // Full cells at the west edge, held by a level edge at the limit, with water pouring
        // towards them from higher ground in the east.
        let grid = grid(12, 6, 1.0);
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
