//! Shader overrides for kernel experiments: `PIPEWATER_GPU_STEP_WGSL=<file>` builds the step,
//! `PIPEWATER_GPU_DETAIL_WGSL=<file>` the detail layer's passes, from another WGSL file, so that
//! a benchmark compares variants in one run without being rebuilt.
//!
//! Both kernels are built without naga's bounds checks (their SAFETY comments say why the tree's
//! WGSL needs none), so an override is trusted code. Only a build with the `shader-overrides`
//! feature reads the variables: the benchmarks turn it on (`cargo run --release -p pipewater-core
//! --features shader-overrides --example gpu_bench`); the library a game ships is built without
//! it and never reads them, whatever the environment holds.

use crate::error::{Error, Result};

/// The variable that names a replacement for `shaders/step_columns.wgsl`.
pub const STEP_WGSL: &str = "PIPEWATER_GPU_STEP_WGSL";
/// The variable that names a replacement for `shaders/detail.wgsl`.
pub const DETAIL_WGSL: &str = "PIPEWATER_GPU_DETAIL_WGSL";

/// Whether this build reads the override variables (the `shader-overrides` feature).
pub const ENABLED: bool = cfg!(feature = "shader-overrides");

/// The WGSL of the file the variable `name` names, in a build with the `shader-overrides` feature
/// where the variable is set; `None` otherwise (the tree's WGSL is used). An unreadable file is
/// an error that names the variable.
pub fn wgsl(name: &str) -> Result<Option<String>> {
    if !ENABLED {
        return Ok(None);
    }
    match std::env::var(name) {
        Ok(path) => std::fs::read_to_string(&path).map(Some).map_err(|e| Error::GpuUnavailable(format!("{name}={path}: {e}"))),
        Err(_) => Ok(None),
    }
}

/// For a benchmark that documents the variables: an error naming the feature when one of them is
/// set but this build ignores it, so that a run meant to time a variant never times the tree's
/// kernel under the variant's name.
pub fn check_requested() -> std::result::Result<(), String> {
    for name in [STEP_WGSL, DETAIL_WGSL] {
        if !ENABLED && std::env::var_os(name).is_some() {
            return Err(format!("{name} is set, but this build ignores it: build the benchmark with `--features shader-overrides`"));
        }
    }
    Ok(())
}
