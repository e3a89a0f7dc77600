//! Erosion has no GPU pass yet: the GPU backends refuse it with an error that says so, never
//! running water whose ground silently stays put (`PIPEWATER_REQUIRE_GPU=1` makes a missing
//! adapter a failure).

mod gpu_support;

use gpu_support::*;
use pipewater_core::{scenarios, BackendKind, BackendPreference, ErosionParams, Grid, Params, Simulation};

/// On the wgpu backend: building with erosion on fails with an error naming erosion and the CPU
/// backend; turning it on in a running simulation fails the same way and leaves the parameters
/// and the water as they were (erosion off, the ledger exact, the water still stepping); `Auto`
/// with erosion on runs on the CPU and says why.
#[test]
fn the_gpu_backends_refuse_erosion_with_an_error_and_auto_takes_the_cpu() {
    if !gpu_or_skip("the_gpu_backends_refuse_erosion_with_an_error_and_auto_takes_the_cpu") {
        return;
    }
    let state = scenarios::dam_break(Grid::new(32, 16, 1.0).expect("grid"), 10, 1.0, 0.2);
    let eroding = Params { erosion: ErosionParams { enabled: true, ..ErosionParams::default() }, ..Params::default() };
    let built = Simulation::new(state.clone(), eroding, BackendPreference::Gpu);
    let message = built.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    println!("GPU with erosion on: {message}");
    assert!(message.contains("erosion") && message.contains("CPU"), "expected a refusal naming erosion and the CPU backend, got {:?}", built.map(|s| s.backend_kind()));

    let mut sim = Simulation::new(state.clone(), Params::default(), BackendPreference::Gpu).expect("GPU simulation");
    sim.run_steps(0.02, 10).expect("steps");
    let refused = sim.set_params(eroding);
    println!("set_params with erosion on the GPU: {refused:?}");
    assert!(refused.as_ref().is_err_and(|e| e.to_string().contains("erosion")), "{refused:?}");
    assert!(!sim.params().erosion.enabled, "the refused parameters must not be kept");
    assert!(sim.read_erosion().expect("read").is_none());
    sim.run_steps(0.02, 10).expect("steps after the refusal");
    let (total, expected) = mass_identity(&mut sim);
    assert_eq!(total, expected, "the water ledger after a refused erosion");

    let auto = Simulation::new(state, eroding, BackendPreference::Auto).expect("Auto with erosion");
    let why = auto.gpu_fallback_reason().map(|e| e.to_string()).unwrap_or_default();
    println!("Auto with erosion: {:?}, because {why}", auto.backend_kind());
    assert_eq!(auto.backend_kind(), BackendKind::Cpu);
    assert!(why.contains("erosion"), "{why}");
}
