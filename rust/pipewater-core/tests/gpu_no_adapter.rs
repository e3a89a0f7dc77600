//! Without a usable adapter the GPU backend fails with a clear error, `Auto` falls back to the
//! CPU and says why. (Own test binary: the adapter choice is made once per process.)
#![cfg(feature = "gpu")]

#[cfg(feature = "gpu")]
#[test]
fn without_an_adapter_gpu_creation_fails_clearly_and_auto_falls_back_to_cpu() {
    // No Metal on this platform: the instance finds no adapter.
    if cfg!(any(target_os = "macos", target_os = "ios")) {
        println!("SKIP without_an_adapter…: Metal exists here");
        return;
    }
    std::env::set_var("WGPU_BACKEND", "metal");
    let state = pipewater_core::scenarios::flat_pool(pipewater_core::Grid::new(8, 8, 1.0).unwrap(), 0.1);
    let params = pipewater_core::Params::default();
    let err = pipewater_core::Simulation::new(state.clone(), params, pipewater_core::BackendPreference::Gpu).err().expect("no adapter, no GPU simulation");
    println!("error: {err}");
    assert!(matches!(err, pipewater_core::Error::GpuUnavailable(_)), "{err:?}");
    assert!(err.to_string().contains("no wgpu adapter"), "{err}");
    let sim = pipewater_core::Simulation::new(state, params, pipewater_core::BackendPreference::Auto).unwrap();
    assert_eq!(sim.backend_kind(), pipewater_core::BackendKind::Cpu);
    println!("Auto fell back to {} because: {}", sim.backend_description(), sim.gpu_fallback_reason().expect("a reason"));
}
