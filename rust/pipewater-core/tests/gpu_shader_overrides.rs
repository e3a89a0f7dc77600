//! The shader override variables are read only by builds with the `shader-overrides` feature (the
//! benchmarks): a library built without it, as a game ships it, builds the tree's kernels whatever
//! `PIPEWATER_GPU_STEP_WGSL` and `PIPEWATER_GPU_DETAIL_WGSL` name. One test in a binary of its own,
//! since it sets the variables before the process's device is made.
#![cfg(feature = "gpu")]

use pipewater_core::backend::gpu::{overrides, GpuContext};
use pipewater_core::{BackendKind, BackendPreference, DetailParams, Grid, Params, Simulation, State};

/// A path no file lies at: a build that reads the variables fails to make its kernels.
const MISSING: &str = "/nonexistent/pipewater-override-test.wgsl";

/// Without the feature the variables are ignored and the step and the detail layer build and
/// run; with it, the device fails with an error naming the variable.
#[test]
fn override_variables_are_ignored_unless_the_shader_overrides_feature_is_on() {
    std::env::set_var(overrides::STEP_WGSL, MISSING);
    std::env::set_var(overrides::DETAIL_WGSL, MISSING);
    let context = GpuContext::shared();
    println!("shader-overrides feature: {}; {}={MISSING}; context: {:?}", overrides::ENABLED, overrides::STEP_WGSL, context.as_ref().map(|c| c.adapter_description()));
    if overrides::ENABLED {
        let error = context.err().expect("a build that reads the variables cannot build a missing file");
        assert!(error.to_string().contains(overrides::STEP_WGSL), "the error names the variable: {error}");
        return;
    }
    match context {
        Ok(_) => {}
        Err(e) if e.to_string().contains("PIPEWATER_GPU_") => panic!("a build without the feature read an override: {e}"),
        Err(e) if std::env::var("PIPEWATER_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("PIPEWATER_REQUIRE_GPU=1 but there is no GPU: {e}"),
        Err(e) => {
            println!("SKIP: no GPU adapter ({e}); PIPEWATER_REQUIRE_GPU=1 turns this into a failure");
            return;
        }
    }
    let mut sim = Simulation::new(State::new(Grid::new(32, 32, 1.0).unwrap()), Params::default(), BackendPreference::Gpu).unwrap();
    assert_eq!(sim.backend_kind(), BackendKind::Gpu, "the GPU backend came up: {:?}", sim.gpu_fallback_reason());
    sim.set_detail(Some(DetailParams::default())).expect("the detail layer builds from the tree's WGSL");
    sim.add_water(0.0, 0.0, 10.0, 4.0).unwrap();
    sim.advance(1.0 / 60.0).unwrap();
    let total = sim.read_state().unwrap().depth.iter().map(|&d| d as f64).sum::<f64>() * sim.quantum_volume();
    println!("one frame on the tree's kernels: total water {total:.6} m³");
    assert!((total - 10.0).abs() < 1e-3, "the water is all there");
}
