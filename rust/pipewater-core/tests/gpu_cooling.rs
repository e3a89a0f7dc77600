//! Lava that cools on the wgpu backend (`shaders/cooling.wgsl`) against the CPU's cooling
//! (`cooling::solidify`), bit for bit, and the ledger with it (`PIPEWATER_REQUIRE_GPU=1` makes a
//! missing adapter a failure).
#![cfg(feature = "gpu")]

mod gpu_support;
mod lava_fields;

use gpu_support::*;
use lava_fields::{ground_gain_quanta, lava_field};
use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::gpu::GpuBackend;
use pipewater_core::backend::{Backend, CellWater, FramePlan};
use pipewater_core::cooling::{quanta_per_cell, solidify};
use pipewater_core::pipes::StepConstants;
use pipewater_core::{BackendPreference, Boundary, Params, Simulation, State, DEPTH_QUANTUM};

/// A runny lava (ν = 0.02 m²/s, so that it spreads over the basin within seconds) cooling at
/// 1 mm/s, walled in.
fn lava() -> Params {
    Params { viscosity: 0.02, solidify_rate: 1.0e-3, boundaries: [Boundary::Wall; 4], ..Params::default() }
}

/// Cells whose depth or terrain bits differ between `a` and `b`.
fn differing_fields(a: &State, b: &State) -> usize {
    (0..a.depth.len()).filter(|&i| a.depth[i] != b.depth[i] || a.terrain[i].to_bits() != b.terrain[i].to_bits()).count()
}

/// Over 300 frames of lava released on an incline and poured behind it for 3 s, spreading into
/// the basin and setting there, each frame's GPU cooling turns the state the GPU stepped to into exactly what
/// `cooling::solidify` makes of that same state: every depth and every terrain bit, and the
/// device's solidified counter grows by the quanta the CPU turned; the pipes are left alone and
/// the ledger is exact after every frame. A CPU backend run in lockstep (same frames, same
/// source) is compared at the end and its difference printed: the flow's own rounding
/// (`pow`, `sqrt`, division on the device) may set it apart from the GPU's, cooling may not.
#[test]
fn gpu_cooling_turns_each_frames_state_into_what_the_cpus_cooling_makes_of_it_bit_for_bit() {
    if !gpu_or_skip("gpu_cooling_turns_each_frames_state_into_what_the_cpus_cooling_makes_of_it_bit_for_bit") {
        return;
    }
    let mut state = lava_field();
    let g = state.grid;
    // A block of lava 0.3 m deep on the incline, released at once, and the source behind it.
    for y in 4..12 {
        for x in 18..24 {
            state.depth[g.index(x, y)] = (0.3 / DEPTH_QUANTUM) as i32;
        }
    }
    let params = lava();
    let initial = state.total_quanta();
    let mut gpu = GpuBackend::new(&state).unwrap();
    let mut cpu = CpuBackend::new(&state);
    let (dt, substeps) = (1.0 / 120.0, 4u32);
    let frame_time = dt as f64 * substeps as f64;
    let c = StepConstants::new(&params, g.width, g.height, g.cell_size, dt, [0; 4]);
    // A source of 20 L/s over four cells of the incline, for the first 3 s.
    let source: Vec<CellWater> = [(24, 7), (25, 7), (24, 8), (25, 8)]
        .iter()
        .map(|&(x, y)| CellWater { cell: g.index(x, y) as u32, quanta: (0.02 * dt / 4.0 / (g.cell_size * g.cell_size) / DEPTH_QUANTUM).round() as i32 })
        .collect();
    let (mut carry, mut frames_turning, mut turned_total, mut most_in_a_frame) = (0.0, 0, 0u64, 0u64);
    for frame in 0..300 {
        let forcing: &[CellWater] = if frame < 90 { &source } else { &[] };
        let plan = FramePlan { constants: c, substeps, forcing };
        gpu.advance(&plan).unwrap();
        cpu.advance(&plan).unwrap();
        let (quanta, next) = quanta_per_cell(params.solidify_rate, frame_time, carry);
        carry = next;
        let stepped = gpu.read_state().unwrap();
        let solidified_before = gpu.read_counters().unwrap().solidified;
        assert!(gpu.solidify(&c, quanta).unwrap(), "the wgpu backend cools");
        assert!(cpu.solidify(&c, quanta).unwrap());
        let mut expected = stepped.clone();
        let (turned, _) = solidify(&c, &mut expected, &stepped.terrain, quanta);
        let cooled = gpu.read_state().unwrap();
        let counters = gpu.read_counters().unwrap();
        let differing = differing_fields(&cooled, &expected);
        assert_eq!(differing, 0, "frame {frame}: {differing} cells differ from the CPU's cooling of the same state ({turned} quanta turned at {quanta} a cell)");
        assert!(cooled.flow.iter().zip(&stepped.flow).all(|(a, b)| a.map(f32::to_bits) == b.map(f32::to_bits)), "frame {frame}: cooling left the pipes alone");
        assert_eq!(counters.solidified - solidified_before, turned, "frame {frame}: the device counted what turned");
        let expected_total = initial + counters.net() - counters.solidified as i64;
        assert_eq!(cooled.total_quanta(), expected_total, "frame {frame}: the ledger is exact");
        if turned > 0 {
            frames_turning += 1;
        }
        turned_total += turned;
        most_in_a_frame = most_in_a_frame.max(turned);
    }
    let (end_gpu, end_cpu) = (gpu.read_state().unwrap(), cpu.read_state().unwrap());
    let (gpu_counters, cpu_counters) = (gpu.read_counters().unwrap(), cpu.read_counters().unwrap());
    let set_cells = state.terrain.iter().zip(&end_gpu.terrain).filter(|(b, a)| a > b).count();
    let liquid_cells = end_gpu.depth.iter().filter(|&&d| d > 0).count();
    println!(
        "300 frames of {frame_time} s on {}: {frames_turning} frames turned lava, {turned_total} quanta in all ({:.5} m³, at most {most_in_a_frame} in a frame); \
         {set_cells} cells set, {liquid_cells} still liquid; added {}, total {}; every frame equal to the CPU's cooling of the GPU's state. \
         Lockstep CPU backend: {} cells differ, solidified {} (GPU {}), added {} (GPU {})",
        gpu.description(),
        turned_total as f64 * DEPTH_QUANTUM as f64 * (g.cell_size * g.cell_size) as f64,
        gpu_counters.added,
        end_gpu.total_quanta(),
        differing_fields(&end_gpu, &end_cpu),
        cpu_counters.solidified,
        gpu_counters.solidified,
        cpu_counters.added,
        gpu_counters.added,
    );
    assert_eq!(gpu_counters.solidified, turned_total);
    assert!(frames_turning > 100 && set_cells > 50, "the lava set over many frames and cells");
    assert!(liquid_cells > 0, "some lava is still liquid");
}

/// Through [`Simulation`] on the GPU: lava poured from a source cools, `cools()` says so, and
/// after every frame the ledger is exact (initial + added − solidified = total, with the
/// solidified quanta read from the device's counters) and the ground has risen by exactly the
/// quanta the ledger counts as solidified; the newest snapshot's ledger balances its own total
/// (its solidified counter came with it).
#[test]
fn gpu_lava_cools_into_ground_quantum_for_quantum_with_the_ledger_exact() {
    if !gpu_or_skip("gpu_lava_cools_into_ground_quantum_for_quantum_with_the_ledger_exact") {
        return;
    }
    let state = lava_field();
    let before = state.clone();
    let mut sim = Simulation::new(state, lava(), BackendPreference::Gpu).unwrap();
    sim.add_source(6.0, 0.0, 0.02, 1.0).unwrap();
    let mut snapshots_checked = 0;
    for frame in 0..300 {
        sim.advance(1.0 / 30.0).unwrap();
        let now = sim.read_state().unwrap();
        let ledger = sim.ledger().unwrap();
        assert_eq!(ledger.discrepancy(now.total_quanta()), 0, "frame {frame}: the ledger is exact");
        assert_eq!(ground_gain_quanta(&before, &now), ledger.solidified as i64, "frame {frame}: the ground gained what the fluid lost");
        if let Some((snapshot_ledger, total)) = sim.snapshot_ledger() {
            assert_eq!(snapshot_ledger.discrepancy(total), 0, "frame {frame}: the snapshot's ledger balances its total");
            snapshots_checked += 1;
        }
    }
    let end = sim.read_state().unwrap();
    let ledger = sim.ledger().unwrap();
    let set_cells = before.terrain.iter().zip(&end.terrain).filter(|(b, a)| a > b).count();
    println!(
        "10 s of lava on the GPU: added {} quanta, solidified {} ({:.4} m³), ground gained {} quanta, total {}, discrepancy {}; {set_cells} cells set; {snapshots_checked} snapshot ledgers balanced; cools {}",
        ledger.counters.added,
        ledger.solidified,
        ledger.solidified as f64 * DEPTH_QUANTUM as f64 * 0.25,
        ground_gain_quanta(&before, &end),
        end.total_quanta(),
        ledger.discrepancy(end.total_quanta()),
        sim.cools()
    );
    assert!(sim.cools());
    assert!(ledger.solidified > 0 && set_cells > 0, "some lava set");
    assert!(snapshots_checked > 250);
}
