//! The triangular lattice on the GPU step (`shaders/step_columns.wgsl`, specialised with the
//! `TRIANGULAR` override) gives the CPU backend's answers, within the tolerances every other mode
//! meets on the GPU (`gpu_agreement.rs` says why not bit for bit), with the mass identity exact,
//! and a lake at rest stays exactly at rest.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::quanta::depth_to_quanta;
use pipewater_core::{Boundary, Edge, Grid, Lattice, NeighbourMode, Params, Simulation, State};

fn triangular() -> Params {
    Params { neighbours: NeighbourMode::Triangular, damping: 0.0, ..Params::default() }
}

/// Runs both for `frames` frames of `steps` steps of `dt`, calling `between` on each before every
/// frame, and checks the GPU against the CPU: depth within [`MAX_DEPTH_DIFFERENCE`] of the
/// deepest water, the mean within [`MEAN_DEPTH_DIFFERENCE`], the GPU's ledger exact. Returns the
/// number of cells whose depth differs.
fn compare(name: &str, cpu: &mut Simulation, gpu: &mut Simulation, dt: f32, frames: u32, steps: u32, between: impl Fn(u32, &mut Simulation)) -> usize {
    for frame in 0..frames {
        between(frame, cpu);
        between(frame, gpu);
        cpu.run_steps(dt, steps).unwrap();
        gpu.run_steps(dt, steps).unwrap();
    }
    let (reference, state) = (cpu.read_state().unwrap(), gpu.read_state().unwrap());
    assert_physical(&state, name);
    let (actual, expected) = mass_identity(gpu);
    let d = difference(&reference, &state);
    let differing = reference.depth.iter().zip(&state.depth).filter(|(a, b)| a != b).count();
    let scale = d.depth_scale.max(1e-6);
    println!(
        "{name}: {} steps; {differing} of {} depths differ, max |Δ| {:.3e} m ({:.2e} of {scale:.3} m), mean {:.3e} m; flux max |Δ| {:.3e} of {:.3e}; totals CPU {} GPU {}; GPU mass identity {actual} vs {expected}",
        frames * steps,
        reference.depth.len(),
        d.max_depth,
        d.max_depth / scale,
        d.mean_depth,
        d.max_flux,
        d.flux_scale,
        d.totals.0,
        d.totals.1
    );
    assert_eq!(actual, expected, "{name}: GPU mass identity");
    assert!(d.max_depth / scale <= MAX_DEPTH_DIFFERENCE, "{name}: max depth difference {} m", d.max_depth);
    assert!(d.mean_depth / scale as f64 <= MEAN_DEPTH_DIFFERENCE, "{name}: mean depth difference {} m", d.mean_depth);
    differing
}

/// A released column on the triangular lattice, with an open edge and an inflow edge, runs on the
/// GPU as on the CPU; pushes (the nudge pass, whose pipe directions follow the lattice) too.
#[test]
fn a_released_column_on_the_triangular_lattice_on_gpu_matches_cpu() {
    if !gpu_or_skip("a_released_column_on_the_triangular_lattice_on_gpu_matches_cpu") {
        return;
    }
    let g = Grid::new(70, 80, 0.5).unwrap();
    let lattice = Lattice::new(g, NeighbourMode::Triangular);
    let mut state = State::new(g);
    for y in 0..g.height {
        for x in 0..g.width {
            let [cx, cz] = lattice.cell_centre(x, y);
            state.terrain[g.index(x, y)] = 0.05 * (cx * 0.4).sin();
            state.depth[g.index(x, y)] = depth_to_quanta(if (cx + 3.0).hypot(cz) < 5.0 { 1.0 } else { 0.02 });
        }
    }
    let mut params = triangular();
    params.boundaries[Edge::East as usize] = Boundary::Open;
    params.boundaries[Edge::North as usize] = Boundary::Inflow { rate: 0.2 };
    let (mut cpu, mut gpu) = pair(state, params);
    compare("triangular column", &mut cpu, &mut gpu, 0.02, 10, 30, |frame, sim| {
        if frame % 3 == 1 {
            sim.push_water(4.0, -2.0, [1.5, -1.0], 2.0).unwrap();
        }
    });
}

/// A lake filled to one level over uneven ground on the triangular lattice stays exactly at rest
/// on the GPU: no depth changes, no pipe carries anything.
#[test]
fn a_lake_at_rest_on_the_triangular_lattice_stays_exactly_still_on_gpu() {
    if !gpu_or_skip("a_lake_at_rest_on_the_triangular_lattice_stays_exactly_still_on_gpu") {
        return;
    }
    let g = Grid::new(64, 72, 1.0).unwrap();
    let mut state = State::new(g);
    for y in 0..g.height {
        for x in 0..g.width {
            state.terrain[g.index(x, y)] = 1.5 * ((x as f32) * 0.3).sin() * ((y as f32) * 0.23).cos() + 0.1 * ((x * 3 + y * 5) % 7) as f32;
        }
    }
    state.fill_to_level(0.9).unwrap();
    let initial = state.clone();
    let (mut cpu, mut gpu) = pair(state, triangular());
    let differing = compare("triangular lake at rest", &mut cpu, &mut gpu, 0.05, 10, 30, |_, _| {});
    let after = gpu.read_state().unwrap();
    let changed = initial.depth.iter().zip(&after.depth).filter(|(a, b)| a != b).count();
    let largest_flow = after.flow.iter().flatten().fold(0.0f32, |m, f| m.max(f.abs()));
    println!("triangular lake at rest on the GPU: {changed} depths changed, largest |flow| {largest_flow:e}");
    assert_eq!((changed, largest_flow, differing), (0, 0.0, 0));
}

/// The device's own snapshot pass (`snapshot.wgsl`) sums the flow texels along the triangular
/// lattice's directions as the CPU does (`State::snapshot_reusing` with `triangular`): after
/// five frames of a flowing column its texels match the CPU's of the same state within the
/// tolerance `gpu_readback.rs` uses for every mode (1e-4 relative: a GPU may fuse multiply-adds).
#[test]
fn the_device_snapshot_reads_the_triangular_lattices_flow_as_the_cpu_does() {
    use pipewater_core::backend::gpu::GpuBackend;
    use pipewater_core::backend::{Backend, FramePlan};
    use pipewater_core::pipes::{fixed_flux_per_stored, StepConstants};
    const TEXEL_TOLERANCE: f32 = 1.0e-4;
    if !gpu_or_skip("the_device_snapshot_reads_the_triangular_lattices_flow_as_the_cpu_does") {
        return;
    }
    let g = Grid::new(40, 46, 0.5).unwrap();
    let mut state = State::new(g);
    for i in 0..g.cell_count() {
        state.depth[i] = depth_to_quanta(if (i as u32 % 40) < 12 && (i as u32 / 40) < 20 { 1.0 } else { 0.05 });
    }
    let mut gpu = GpuBackend::new(&state).unwrap();
    let constants = StepConstants::new(&triangular(), g.width, g.height, g.cell_size, 0.02, [0; 4]);
    for _ in 0..5 {
        let _ = gpu.snapshot();
        gpu.advance(&FramePlan { constants, substeps: 20, forcing: &[] }).unwrap();
    }
    gpu.sync().unwrap();
    let snapshot = gpu.snapshot().unwrap();
    let counters = gpu.read_counters().unwrap();
    let reference = gpu.read_state().unwrap().snapshot_reusing(snapshot.sequence, counters, None, fixed_flux_per_stored(&constants), true);
    let mut worst = 0.0f32;
    for (a, b) in snapshot.flow.iter().zip(&reference.flow) {
        for k in 0..4 {
            worst = worst.max((a[k] - b[k]).abs() / b[k].abs().max(1e-3));
        }
    }
    println!("triangular flow texels, device vs CPU: worst relative difference {worst:.2e}; fastest {} vs {} m/s", snapshot.max_speed, reference.max_speed);
    assert!(reference.max_speed > 0.1, "the water moves");
    assert!(worst <= TEXEL_TOLERANCE);
}
