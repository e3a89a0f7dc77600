//! Viscous fluids on the wgpu backend: the same viscous film as `tests/viscosity.rs` against
//! Nusselt's thickness and against the CPU backend (cooling on the GPU: `tests/gpu_cooling.rs`).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::validation::{FILM_DURATION, MUD_FILM};

/// Largest relative difference between the film's mean depth and Nusselt's thickness, as on the
/// CPU (`tests/viscosity.rs` says why).
const FILM_TOLERANCE: f64 = 0.01;
/// Largest relative difference of the mean depth between the GPU and the CPU: the step is the
/// same operations, so only the GPU's rounding of `pow`, `sqrt` and the division separates them.
const BACKEND_TOLERANCE: f64 = 1.0e-3;

/// The mud-like film (ν = 1 m²/s, q = 0.02 m²/s, 5 % slope) on the GPU reaches Nusselt's
/// thickness within [`FILM_TOLERANCE`] and the CPU's film within [`BACKEND_TOLERANCE`], with the
/// ledger exact.
#[test]
fn a_viscous_film_on_the_gpu_has_nusselts_thickness_and_the_cpus() {
    if !gpu_or_skip("a_viscous_film_on_the_gpu_has_nusselts_thickness_and_the_cpus") {
        return;
    }
    let (state, params) = MUD_FILM.setup();
    let (mut cpu, mut gpu) = pair(state, params);
    let on_cpu = MUD_FILM.run(&mut cpu, FILM_DURATION);
    let on_gpu = MUD_FILM.run(&mut gpu, FILM_DURATION);
    let between = (on_gpu.mean - on_cpu.mean).abs() / on_cpu.mean;
    println!(
        "film on {}: mean depth {:.5} m (cells {:.5} ..= {:.5}), Nusselt {:.5} m, error {:.3} %, drift {:.2e}, mass error {}; CPU {:.5} m, GPU − CPU {:.2e} relative",
        gpu.backend_description(),
        on_gpu.mean,
        on_gpu.range.0,
        on_gpu.range.1,
        on_gpu.exact,
        100.0 * on_gpu.relative_error,
        on_gpu.drift,
        on_gpu.mass_error,
        on_cpu.mean,
        between
    );
    assert!(on_gpu.relative_error < FILM_TOLERANCE);
    assert!(between < BACKEND_TOLERANCE);
    assert_eq!(on_gpu.mass_error, 0);
}
