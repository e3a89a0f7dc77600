//! The step at the deepest water a cell can hold (`MAX_DEPTH_QUANTA`, about 2048 m): a cell at
//! the limit takes in no more, the cells that would pour into it keep their water, a fixed level
//! beyond the edge adds only what fits, and the ledger stays exact; the GPU does the same.

mod common;
mod gpu_support;

use common::{assert_physical, grid, mass_identity};
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
    let mut terrain = vec![0.0f32; g.cell_count()];
    let pit = g.index(4, 4);
    terrain[pit] = -2040.0;
    let mut state = State::with_terrain(g, terrain).expect("terrain");
    state.fill_to_level(10.0);
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
    // A 6×2 channel whose east edge opens onto a sea standing 100 m above its beds' 2000 m of
    // water; its cells are nearly full.
    let g = grid(6, 2, 1.0);
    let mut state = State::with_terrain(g, vec![-2000.0; 12]).expect("terrain");
    state.depth.iter_mut().for_each(|d| *d = MAX_DEPTH_QUANTA - 3000);
    let mut params = Params::default();
    params.boundaries[Edge::East as usize] = Boundary::Level { level: 100.0 };
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
