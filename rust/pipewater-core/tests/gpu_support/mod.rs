//! Shared by the GPU tests: finding the adapter (or skipping), and comparing two states.
#![allow(dead_code)]

#[cfg(feature = "gpu")]
use pipewater_core::backend::gpu::GpuContext;
use pipewater_core::{BackendPreference, Params, Simulation, State};

/// Largest depth difference allowed after a scenario, as a fraction of its deepest water:
/// rounding moves single quanta (1e-6 m), and even a few thousand of them stay far below this.
pub const MAX_DEPTH_DIFFERENCE: f32 = 2.0e-3;
/// Largest mean depth difference, as a fraction of the deepest water.
pub const MEAN_DEPTH_DIFFERENCE: f64 = 1.0e-4;
/// Largest difference of total water, as a fraction of the total: only boundary outflow and
/// clamped drains depend on the rounding; on walls the totals agree exactly.
pub const TOTAL_DIFFERENCE: f64 = 1.0e-4;

/// Whether a GPU adapter is there. Without one, prints a single `SKIP` line and returns false,
/// unless `PIPEWATER_REQUIRE_GPU=1` (CI sets it), where a missing adapter fails the test.
#[cfg(feature = "gpu")]
pub fn gpu_or_skip(test: &str) -> bool {
    match GpuContext::shared() {
        Ok(ctx) => {
            println!("{test}: adapter {}", ctx.adapter_description());
            true
        }
        Err(e) => {
            if std::env::var("PIPEWATER_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: PIPEWATER_REQUIRE_GPU=1 but there is no GPU: {e}");
            }
            println!("SKIP {test}: no GPU adapter ({e}); PIPEWATER_REQUIRE_GPU=1 turns this into a failure");
            false
        }
    }
}

/// Without the `gpu` feature (the CPU-only core a server or a web build uses) there is no GPU
/// backend to test, whatever `PIPEWATER_REQUIRE_GPU` says: one `SKIP` line.
#[cfg(not(feature = "gpu"))]
pub fn gpu_or_skip(test: &str) -> bool {
    println!("SKIP {test}: pipewater-core was built without the `gpu` feature");
    false
}

/// The same state and parameters on the CPU and on the GPU.
pub fn pair(state: State, params: Params) -> (Simulation, Simulation) {
    let cpu = Simulation::new(state.clone(), params, BackendPreference::Cpu).expect("CPU simulation");
    let gpu = Simulation::new(state, params, BackendPreference::Gpu).expect("GPU simulation");
    (cpu, gpu)
}

/// How far two states of the same grid are apart.
#[derive(Debug, Clone, Copy)]
pub struct Difference {
    /// Largest depth difference, m.
    pub max_depth: f32,
    /// Cell (x, z index) of the largest depth difference, and the reference depth there, m.
    pub max_depth_at: ((usize, usize), f32),
    /// Mean depth difference, m.
    pub mean_depth: f64,
    /// Largest depth of the reference, m (the scale the differences compare with).
    pub depth_scale: f32,
    /// Largest flux difference, m³/s.
    pub max_flux: f32,
    /// Largest flux magnitude of the reference, m³/s.
    pub flux_scale: f32,
    /// Largest terrain difference, m.
    pub max_terrain: f32,
    /// Total water of each, quanta.
    pub totals: (i64, i64),
}

/// Compares `other` with `reference` cell by cell.
pub fn difference(reference: &State, other: &State) -> Difference {
    let q = pipewater_core::DEPTH_QUANTUM;
    let width = reference.grid.width as usize;
    let mut d = Difference { max_depth: 0.0, max_depth_at: ((0, 0), 0.0), mean_depth: 0.0, depth_scale: 0.0, max_flux: 0.0, flux_scale: 0.0, max_terrain: 0.0, totals: (reference.total_quanta(), other.total_quanta()) };
    for i in 0..reference.depth.len() {
        let diff = (reference.depth[i] as i64 - other.depth[i] as i64).unsigned_abs() as f32 * q;
        if diff > d.max_depth {
            d.max_depth = diff;
            d.max_depth_at = ((i % width, i / width), reference.depth[i] as f32 * q);
        }
        d.mean_depth += diff as f64;
        d.depth_scale = d.depth_scale.max(reference.depth[i] as f32 * q);
        d.max_terrain = d.max_terrain.max((reference.terrain[i] - other.terrain[i]).abs());
        for p in 0..4 {
            d.max_flux = d.max_flux.max((reference.flow[i][p] - other.flow[i][p]).abs());
            d.flux_scale = d.flux_scale.max(reference.flow[i][p].abs());
        }
    }
    d.mean_depth /= reference.depth.len() as f64;
    d
}

/// Asserts every depth is non-negative and every flux finite.
pub fn assert_physical(state: &State, context: &str) {
    if let Some((i, d)) = state.depth.iter().enumerate().find(|(_, &d)| d < 0) {
        panic!("{context}: depth {d} quanta below zero at cell {i}");
    }
    if let Some((i, f)) = state.flow.iter().enumerate().find(|(_, f)| f.iter().any(|v| !v.is_finite())) {
        panic!("{context}: non-finite flux {f:?} at cell {i}");
    }
}

/// Checks the mass identity of `sim` exactly; returns (actual, expected) quanta.
pub fn mass_identity(sim: &mut Simulation) -> (i64, i64) {
    let state = sim.read_state().expect("read_state");
    let ledger = sim.ledger().expect("ledger");
    (state.total_quanta(), ledger.expected_total())
}
