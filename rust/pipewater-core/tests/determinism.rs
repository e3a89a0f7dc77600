//! The CPU backend is deterministic: the same inputs give bit-identical depth, flux, terrain and
//! ledger whatever the number of threads, so games can use it for replays and lockstep
//! multiplayer. Rows are split among threads, but each cell's result depends only on its
//! neighbours' values, the only sums across rows are integer (ledger counters), and the only
//! floating-point reductions are maxima (snapshot extremes), which do not depend on order.

mod common;

use common::*;
use pipewater_core::{BackendPreference, MassLedger, State};

/// Frames of the busy valley each run simulates.
const FRAMES: u32 = 400;

/// Runs the busy valley in a rayon pool of `threads` threads; returns the final state, ledger
/// and the step length of the last frame.
fn run_with_threads(threads: usize) -> (State, MassLedger, f32) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
    pool.install(|| {
        let mut sim = busy_valley(BackendPreference::Cpu);
        drive_busy_valley(&mut sim, 0, FRAMES, Stepping::Advance);
        println!("{threads:>2} threads: backend {}", sim.backend_description());
        (sim.read_state().unwrap(), sim.ledger().unwrap(), sim.last_report().step)
    })
}

#[test]
fn cpu_results_are_bit_identical_with_1_2_and_16_threads() {
    let (reference, ledger, step) = run_with_threads(1);
    println!(
        " 1 thread : fingerprint {:016x}, total {} quanta, ledger {:?}, last step {step:e} s",
        fingerprint(&reference),
        reference.total_quanta(),
        ledger.counters
    );
    assert!(ledger.counters.boundary_in > 0 && ledger.counters.boundary_out > 0, "the scenario crosses the edges");
    assert!(ledger.counters.added > 0 && ledger.counters.removed > 0, "the scenario adds and removes water");
    for threads in [2, 16] {
        let (state, other_ledger, other_step) = run_with_threads(threads);
        let differing = differing_cells(&reference, &state);
        println!(
            "{threads:>2} threads: fingerprint {:016x}, total {} quanta, ledger {:?}, last step {other_step:e} s; {differing} of {} cells differ from 1 thread",
            fingerprint(&state),
            state.total_quanta(),
            other_ledger.counters,
            state.depth.len()
        );
        assert_eq!(differing, 0, "{threads} threads: {differing} cells differ in depth, flux or terrain bits");
        assert_eq!(other_ledger, ledger, "{threads} threads: the ledger differs");
        assert_eq!(other_step.to_bits(), step.to_bits(), "{threads} threads: the step length differs");
    }
}
