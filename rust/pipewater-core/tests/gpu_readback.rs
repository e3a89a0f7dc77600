//! The GPU backend's CPU mirror: `snapshot` never waits for the device, lags `advance` by at
//! most `GPU_SNAPSHOT_LATENCY` frames, and holds texels, totals and ledger of one instant that
//! agree with the state read back at that instant. All simulations share one device.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::backend::gpu::{GpuBackend, GpuContext, GPU_SNAPSHOT_LATENCY};
use pipewater_core::backend::{Backend, CellWater, FramePlan};
use pipewater_core::pipes::StepConstants;
use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Relative tolerance of texel values against the CPU's `State::snapshot` of the same state:
/// both evaluate the same formulas, but a GPU's `length` and division may differ from Rust's
/// correctly rounded `hypot` and `/` by a few ulp.
const TEXEL_TOLERANCE: f32 = 1.0e-5;

#[test]
fn snapshot_never_waits_and_lags_advance_by_at_most_the_documented_frames() {
    if !gpu_or_skip("snapshot_never_waits_and_lags_advance_by_at_most_the_documented_frames") {
        return;
    }
    let state = scenarios::dam_break(Grid::new(128, 128, 0.5).unwrap(), 40, 1.0, 0.1);
    let mut sim = Simulation::new(state, Params::default(), BackendPreference::Gpu).unwrap();
    let mut lags = [0u32; 8];
    let mut slowest_snapshot = 0.0f64;
    for frame in 1..=60u64 {
        sim.advance(1.0 / 60.0).unwrap();
        let t = Instant::now();
        let s = sim.snapshot().expect("the GPU backend always has a snapshot");
        slowest_snapshot = slowest_snapshot.max(t.elapsed().as_secs_f64());
        let lag = frame - s.sequence;
        lags[(lag as usize).min(7)] += 1;
        assert!(lag <= GPU_SNAPSHOT_LATENCY as u64, "frame {frame}: snapshot shows frame {} ({lag} behind)", s.sequence);
    }
    println!("snapshot lag in frames (0..7+): {lags:?}; documented bound {GPU_SNAPSHOT_LATENCY}; slowest snapshot() call {:.2} ms", slowest_snapshot * 1e3);
}

#[test]
fn snapshot_texels_totals_and_ledger_match_the_state_of_the_same_instant() {
    if !gpu_or_skip("snapshot_texels_totals_and_ledger_match_the_state_of_the_same_instant") {
        return;
    }
    let grid = Grid::new(70, 45, 0.5).unwrap();
    let (state, _) = scenarios::river_valley(grid, 5, 3.0);
    let mut state = state;
    state.fill_to_level(1.2);
    let mut gpu = GpuBackend::new(&state).unwrap();
    let params = Params { boundaries: [pipewater_core::Boundary::Open; 4], ..Params::default() };
    let constants = StepConstants::new(&params, grid.width, grid.height, grid.cell_size, 0.02, [0; 4]);
    let forcing = [CellWater { cell: 100, quanta: 5000 }];
    for _ in 0..5 {
        // Asking for a snapshot is what makes the next frame read one back.
        let _ = gpu.snapshot();
        gpu.advance(&FramePlan { constants, substeps: 20, forcing: &forcing }).unwrap();
    }
    gpu.sync().unwrap();
    let snapshot = gpu.snapshot().unwrap();
    assert_eq!(snapshot.sequence, 5, "after sync the newest readback is the last frame's");
    let now = gpu.read_state().unwrap();
    let counters = gpu.read_counters().unwrap();
    let reference = now.snapshot(5, counters);
    let mut worst = 0.0f32;
    for (a, b) in snapshot.height.iter().zip(&reference.height).chain(snapshot.flow.iter().zip(&reference.flow)) {
        for k in 0..4 {
            worst = worst.max((a[k] - b[k]).abs() / b[k].abs().max(1e-3));
        }
    }
    println!(
        "texels: worst relative difference {worst:.2e}; total {} vs {} quanta; max depth {} vs {} m; max speed {} vs {} m/s; counters {:?}",
        snapshot.total_quanta, reference.total_quanta, snapshot.max_depth, reference.max_depth, snapshot.max_speed, reference.max_speed, snapshot.counters
    );
    assert!(worst <= TEXEL_TOLERANCE, "texels differ by {worst} (relative)");
    assert_eq!(snapshot.total_quanta, reference.total_quanta);
    assert_eq!(snapshot.counters, counters);
    assert!(counters.boundary_out > 0 && counters.added > 0, "the scenario exercises the ledger");
    assert_eq!(snapshot.max_depth, reference.max_depth);
    assert!((snapshot.max_speed - reference.max_speed).abs() <= TEXEL_TOLERANCE * reference.max_speed.max(1e-3));
}

/// Rounds of [`after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device`]:
/// each is three frames, each asking for a snapshot, then `sync`.
const SYNC_ROUNDS: u64 = 300;

/// How long the other thread's readback callback works, ms: callbacks of one poll run one after
/// another on the thread that polled, so ours may wait behind it.
const OTHER_CALLBACK_MS: u64 = 1;

/// The contract of `GpuBackend::sync`: afterwards `snapshot` shows the last frame. Readback
/// callbacks of `map_async` run on whichever thread polls or submits to the shared device
/// first once the copy is done, after that thread's earlier callbacks. So `sync` must wait for
/// the callbacks themselves, not only for the device: here another thread keeps reading its own
/// buffer back with a callback that takes a while, as another simulation (or a game's own
/// wgpu work) on the same device may.
#[test]
fn after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device() {
    if !gpu_or_skip("after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device") {
        return;
    }
    let ctx = GpuContext::shared().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let other = {
        let (ctx, stop) = (ctx.clone(), stop.clone());
        std::thread::spawn(move || {
            use wgpu::BufferUsages as U;
            let buffer = |usage| ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("other"), size: 256, usage, mapped_at_creation: false });
            let (source, staging) = (buffer(U::COPY_SRC), buffer(U::MAP_READ | U::COPY_DST));
            let mut readbacks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("other") });
                encoder.copy_buffer_to_buffer(&source, 0, &staging, 0, 256);
                ctx.queue.submit([encoder.finish()]);
                let done = Arc::new(AtomicBool::new(false));
                let flag = done.clone();
                staging.map_async(wgpu::MapMode::Read, .., move |_| {
                    std::thread::sleep(std::time::Duration::from_millis(OTHER_CALLBACK_MS));
                    flag.store(true, Ordering::Release);
                });
                while !done.load(Ordering::Acquire) {
                    let _ = ctx.device.poll(wgpu::PollType::Poll);
                }
                staging.unmap();
                readbacks += 1;
            }
            readbacks
        })
    };
    let grid = Grid::new(24, 16, 1.0).unwrap();
    let mut gpu = GpuBackend::new(&scenarios::dam_break(grid, 8, 1.0, 0.1)).unwrap();
    let constants = StepConstants::new(&Params::default(), grid.width, grid.height, grid.cell_size, 0.02, [0; 4]);
    let (mut frames, mut behind, mut worst) = (0u64, 0u64, 0u64);
    for _ in 0..SYNC_ROUNDS {
        for _ in 0..3 {
            let _ = gpu.snapshot();
            gpu.advance(&FramePlan { constants, substeps: 2, forcing: &[] }).unwrap();
            frames += 1;
        }
        gpu.sync().unwrap();
        let shown = gpu.snapshot().unwrap().sequence;
        if shown != frames {
            behind += 1;
            worst = worst.max(frames - shown);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let readbacks = other.join().unwrap();
    println!("{SYNC_ROUNDS} syncs while another thread read back {readbacks} times: the snapshot was behind the last frame after {behind} of them (by up to {worst} frames)");
    assert_eq!(behind, 0, "after sync the newest snapshot is the last frame's");
}

#[test]
fn all_gpu_simulations_share_one_device() {
    if !gpu_or_skip("all_gpu_simulations_share_one_device") {
        return;
    }
    let a = GpuBackend::new(&scenarios::flat_pool(Grid::new(8, 8, 1.0).unwrap(), 0.1)).unwrap();
    let b = GpuBackend::new(&scenarios::flat_pool(Grid::new(16, 4, 1.0).unwrap(), 0.2)).unwrap();
    println!("backends: {} / {}", a.description(), b.description());
    assert!(Arc::ptr_eq(a.context(), b.context()), "two backends created two devices");
}

#[test]
fn edits_are_queued_and_reach_the_ledger_exactly() {
    if !gpu_or_skip("edits_are_queued_and_reach_the_ledger_exactly") {
        return;
    }
    let grid = Grid::new(32, 32, 1.0).unwrap();
    let mut sim = Simulation::new(scenarios::flat_pool(grid, 0.001), Params::default(), BackendPreference::Gpu).unwrap();
    let quantum = sim.quantum_volume();
    let added = sim.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
    // Removing far more than is there: the device clamps and counts what was really there.
    sim.remove_water(10.0, 10.0, 1000.0, 3.0).unwrap();
    let ledger = sim.ledger().unwrap();
    let state = sim.read_state().unwrap();
    println!("added {added} m³ ({} quanta), ledger {:?}, total {} quanta", added / quantum, ledger.counters, state.total_quanta());
    assert_eq!(ledger.counters.added as f64, (added / quantum).round());
    assert!(ledger.counters.removed > 0);
    assert_eq!(state.total_quanta(), ledger.expected_total());
}
