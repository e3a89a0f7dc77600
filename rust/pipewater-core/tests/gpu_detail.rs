//! The detail wave layer on the wgpu backend gives the CPU reference's waves, leaves the water
//! alone, and answers queries from tiles read back a frame or two late.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::bodies::{couple, Body, HullShape};
use pipewater_core::detail::DetailParams;
use pipewater_core::glam::Vec3;
use pipewater_core::quanta::DEPTH_QUANTUM;
use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation, State};

/// Largest difference of a detail height or vertical velocity between the backends, as a
/// fraction of the largest on the CPU. Both run the same operations in the same order; a GPU may
/// fuse `a·b + c` and divide to within 2.5 ulp, and the flow's velocities it samples may differ
/// in their last bits (see `gpu_agreement.rs`). The waves are linear in those inputs, so the
/// differences stay at the size of the rounding.
const MAX_DETAIL_DIFFERENCE: f32 = 1.0e-3;

/// How far the GPU's fields `gpu` lie from the CPU's `cpu`: the largest height and vertical
/// velocity on the CPU, and the largest difference of each.
struct Spread {
    scale: f32,
    vscale: f32,
    dh: f32,
    dv: f32,
}

impl Spread {
    fn between(cpu: &[[f32; 2]], gpu: &[[f32; 2]]) -> Spread {
        let largest = |k: usize| cpu.iter().fold(0.0f32, |m, f| m.max(f[k].abs()));
        let difference = |k: usize| cpu.iter().zip(gpu).fold(0.0f32, |m, (x, y)| m.max((x[k] - y[k]).abs()));
        Spread { scale: largest(0), vscale: largest(1), dh: difference(0), dv: difference(1) }
    }
}

/// A valley with a river running through it, moving water over ground of every depth.
fn valley(preference: BackendPreference) -> Simulation {
    let g = Grid::new(48, 40, 1.0).unwrap();
    let (mut state, spring) = scenarios::river_valley(g, 5, 2.5);
    state.fill_to_level(0.5).expect("a level within the depth limit");
    let mut sim = Simulation::new(state, Params::default(), preference).unwrap();
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).unwrap();
    sim.set_initial_current([-20.0, -20.0], [20.0, 20.0], [0.4, -0.2]).unwrap();
    sim
}

#[test]
fn detail_waves_on_the_gpu_match_the_cpu() {
    if !gpu_or_skip("detail_waves_on_the_gpu_match_the_cpu") {
        return;
    }
    let params = DetailParams { window: 128, rain_rate: 5.0, rain_drop: 0.02, ..DetailParams::default() };
    let (mut cpu, mut gpu) = (valley(BackendPreference::Cpu), valley(BackendPreference::Gpu));
    for sim in [&mut cpu, &mut gpu] {
        sim.set_detail(Some(params)).unwrap();
    }
    let mut worst = (0.0f32, 0.0f32);
    for frame in 0..90u32 {
        let t = frame as f32 * 0.05;
        // The same hull pressure on both: one coupling from the CPU's water.
        let mut boat = Body::new(Vec3::new(-8.0 + 2.0 * t, 0.4, 1.0), HullShape::Box { half_extents: Vec3::new(1.5, 0.4, 0.7) });
        boat.linear_velocity = Vec3::new(2.0, 0.0, 0.0);
        let coupling = couple(&cpu.snapshot().unwrap(), std::slice::from_ref(&boat), 0.05, 1000.0, 9.81);
        for sim in [&mut cpu, &mut gpu] {
            // The window wanders, so scrolling is compared too.
            sim.set_detail_focus(-3.0 + 0.2 * t, 1.0 - 0.1 * t);
            sim.apply_detail_pressure(std::slice::from_ref(&boat), &coupling.forces);
            if frame % 15 == 3 {
                sim.add_ripple(-4.0 + t, 2.0 - t, 0.1, 1.5).unwrap();
            }
            sim.run_steps(0.0125, 4).unwrap();
        }
        if frame % 30 == 29 {
            let (a, b) = (cpu.read_detail().unwrap(), gpu.read_detail().unwrap());
            assert_eq!(cpu.detail_window().unwrap().origin, gpu.detail_window().unwrap().origin);
            let Spread { scale, vscale, dh, dv } = Spread::between(&a, &b);
            let identical = a.iter().zip(&b).filter(|(x, y)| x[0].to_bits() == y[0].to_bits() && x[1].to_bits() == y[1].to_bits()).count();
            println!(
                "frame {}: h max |Δ| {dh:.3e} of {scale:.3e} m, v max |Δ| {dv:.3e} of {vscale:.3e} m/s; {identical} of {} cells identical to the bit",
                frame + 1,
                a.len()
            );
            assert!(scale > 1.0e-3, "the layer has waves to compare");
            worst = (worst.0.max(dh / scale), worst.1.max(dv / vscale));
        }
    }
    println!("largest differences: {:.2e} (h), {:.2e} (v) of the largest on the CPU; tolerance {MAX_DETAIL_DIFFERENCE:e}", worst.0, worst.1);
    assert!(worst.0 < MAX_DETAIL_DIFFERENCE && worst.1 < MAX_DETAIL_DIFFERENCE);
}

#[test]
fn the_gpu_water_and_its_ledger_never_see_the_detail_layer() {
    if !gpu_or_skip("the_gpu_water_and_its_ledger_never_see_the_detail_layer") {
        return;
    }
    let (mut with, mut without) = (valley(BackendPreference::Gpu), valley(BackendPreference::Gpu));
    with.set_detail(Some(DetailParams { rain_rate: 20.0, ..DetailParams::default() })).unwrap();
    for frame in 0..60 {
        for sim in [&mut with, &mut without] {
            let mut boat = Body::new(Vec3::new(-8.0 + 0.1 * frame as f32, 0.4, 1.0), HullShape::Box { half_extents: Vec3::new(1.5, 0.4, 0.7) });
            boat.linear_velocity = Vec3::new(6.0, 0.0, 0.0);
            sim.couple_bodies(std::slice::from_ref(&boat), 1.0 / 60.0, 1000.0).unwrap();
            sim.run_steps(0.0125, 2).unwrap();
        }
        with.add_ripple(0.0, 0.0, 0.3, 2.0).unwrap();
    }
    let (a, b) = (with.read_state().unwrap(), without.read_state().unwrap());
    let (la, lb) = (with.ledger().unwrap(), without.ledger().unwrap());
    let waves = with.read_detail().unwrap().iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
    println!("GPU, 60 frames with a boat, rain and ripples (largest detail height {waves:.4} m): ledger {la:?} vs {lb:?}, totals {} / {}", a.total_quanta(), b.total_quanta());
    assert!(waves > 1.0e-3);
    assert_eq!(la, lb);
    assert!(a.depth == b.depth, "depth identical");
    assert!(a.flow.iter().flatten().zip(b.flow.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits()), "pipe flows identical to the bit");
}

#[test]
fn gpu_detail_queries_arrive_within_the_readback_latency() {
    if !gpu_or_skip("gpu_detail_queries_arrive_within_the_readback_latency") {
        return;
    }
    let state = scenarios::flat_pool(Grid::new(32, 32, 1.0).unwrap(), 1.0);
    let mut gpu = Simulation::new(state.clone(), Params::default(), BackendPreference::Gpu).unwrap();
    let mut cpu = Simulation::cpu(state, Params::default()).unwrap();
    for sim in [&mut gpu, &mut cpu] {
        sim.set_detail(Some(DetailParams { damping: 0.0, max_celerity: 0.05, ..DetailParams::default() })).unwrap();
        sim.add_ripple(2.0, -1.0, 0.1, 2.0).unwrap();
    }
    let mut arrived = None;
    for frame in 0..8 {
        let h = gpu.detail_height(2.0, -1.0).unwrap();
        if h != 0.0 && arrived.is_none() {
            arrived = Some(frame);
        }
        for sim in [&mut gpu, &mut cpu] {
            sim.advance(1.0 / 60.0).unwrap();
        }
    }
    // After the first arrival, a query answers with a frame at most `latency` old: on a still,
    // slow wave both agree closely.
    let (g, c) = (gpu.detail_height(2.0, -1.0).unwrap(), cpu.detail_height(2.0, -1.0).unwrap());
    println!("the first non-zero detail height arrived after {arrived:?} frames; now GPU {g:.6} m, CPU {c:.6} m");
    assert!(arrived.is_some_and(|f| f <= 3), "tiles arrive within 3 frames");
    assert!((g - c).abs() < 2.0e-3 * c.abs().max(0.05));
}

#[test]
fn waves_carried_several_cells_a_substep_match_the_cpu() {
    if !gpu_or_skip("waves_carried_several_cells_a_substep_match_the_cpu") {
        return;
    }
    // A current of 2.8 m/s across the middle of a wide pool, under detail cells of 6.25 cm and
    // substeps of 0.16 s: the flow carries the waves about 7 cells a substep (5 along each axis), where the GPU's
    // substep reads farthest from its workgroup's tile. The current runs diagonally, so the
    // tile's box reaches ahead along one axis and behind along the other. The window sees uniform
    // flow until what the walls send back reaches it (after about 4 s): the two backends' flows
    // agree there, so what is compared is the layer.
    let params = DetailParams { subdivision: 16, window: 256, max_celerity: 0.05, damping: 0.1, rain_rate: 20.0, rain_drop: 0.02, ..DetailParams::default() };
    let frame_time = 0.16;
    let cell = 1.0 / params.subdivision as f32;
    let current = [2.0f32, -2.0];
    let make = |preference| {
        let mut sim = Simulation::new(scenarios::flat_pool(Grid::new(64, 64, 1.0).unwrap(), 1.0), Params::default(), preference).unwrap();
        sim.set_initial_current([-32.0, -32.0], [32.0, 32.0], current).unwrap();
        sim.set_detail(Some(params)).unwrap();
        sim.set_detail_focus(0.0, 0.0);
        sim
    };
    let (mut cpu, mut gpu) = (make(BackendPreference::Cpu), make(BackendPreference::Gpu));
    let reach = (current[0].hypot(current[1]) * frame_time / cell, current[0] * frame_time / cell, current[1] * frame_time / cell);
    println!("the current carries the waves {:.1} detail cells a substep ({:.1}, {:.1})", reach.0, reach.1, reach.2);
    let mut worst = (0.0f32, 0.0f32);
    for frame in 0..20u32 {
        for sim in [&mut cpu, &mut gpu] {
            if frame % 5 == 0 {
                sim.add_ripple(-3.0 + 0.5 * frame as f32, 2.0 - 0.3 * frame as f32, 0.05, 0.5).unwrap();
            }
            sim.run_steps(frame_time / 4.0, 4).unwrap();
        }
        if frame % 5 == 4 {
            let (a, b) = (cpu.read_detail().unwrap(), gpu.read_detail().unwrap());
            let (flow_cpu, flow_gpu) = (cpu.read_state().unwrap(), gpu.read_state().unwrap());
            let depth_differs = flow_cpu.depth.iter().zip(&flow_gpu.depth).filter(|(x, y)| x != y).count();
            let Spread { scale, vscale, dh, dv } = Spread::between(&a, &b);
            println!(
                "frame {}: {depth_differs} flow cells' depths differ; h max |Δ| {dh:.3e} of {scale:.3e} m, v max |Δ| {dv:.3e} of {vscale:.3e} m/s",
                frame + 1
            );
            assert!(scale > 1.0e-3, "the layer has waves to compare");
            worst = (worst.0.max(dh / scale), worst.1.max(dv / vscale));
        }
    }
    println!("largest differences: {:.2e} (h), {:.2e} (v) of the largest on the CPU; tolerance {MAX_DETAIL_DIFFERENCE:e}", worst.0, worst.1);
    assert!(reach.1.abs() > 4.0 && reach.2.abs() > 4.0, "the test carries the waves more than 4 cells a substep along both axes");
    assert!(worst.0 < MAX_DETAIL_DIFFERENCE && worst.1 < MAX_DETAIL_DIFFERENCE);
}

/// Which water the layer reads (`Backend::queue_detail`): the water the frame's first step reads,
/// after that step's sources and drains and before the step. One frame of one substep: a ripple
/// over a dam (a pool 1 m deep beside dry ground) and one over a source that pours onto dry
/// ground in the same frame. The waves must stand over the pool and over the source's water, and
/// nowhere on the ground the step itself wetted beside the dam; on both backends, which agree.
#[test]
fn the_layer_reads_the_water_the_first_step_reads() {
    if !gpu_or_skip("the_layer_reads_the_water_the_first_step_reads") {
        return;
    }
    const POOL_COLUMNS: u32 = 8;
    const SOURCE_COLUMNS: u32 = 14;
    let g = Grid::new(24, 24, 1.0).unwrap();
    let mut fields = Vec::new();
    for preference in [BackendPreference::Cpu, BackendPreference::Gpu] {
        let mut state = State::new(g);
        for y in 0..g.height {
            for x in 0..POOL_COLUMNS {
                state.depth[(y * g.width + x) as usize] = (1.0 / DEPTH_QUANTUM) as i32;
            }
        }
        let mut sim = Simulation::new(state, Params::default(), preference).unwrap();
        sim.set_detail(Some(DetailParams { window: 128, ..DetailParams::default() })).unwrap();
        sim.add_source(6.5, 0.5, 50.0, 1.5).unwrap();
        assert!(sim.add_ripple(-4.0, 0.0, 0.1, 3.0).unwrap() && sim.add_ripple(6.5, 0.5, 0.1, 2.0).unwrap());
        sim.run_steps(0.05, 1).unwrap();
        let after = sim.read_state().unwrap();
        let window = sim.detail_window().unwrap();
        let waves = sim.read_detail().unwrap();
        let s = window.layout.subdivision as i32;
        // Largest |h| or |v| over the pool, over the source's columns, and over the cells beside
        // the dam that were dry before the frame and hold water after it.
        let (mut pool, mut source, mut step_wetted, mut wetted_cells) = (0.0f32, 0.0f32, 0.0f32, 0usize);
        for (i, field) in waves.iter().enumerate() {
            let [gx, gy] = window.world_cell(i);
            let (fx, fy) = (gx.div_euclid(s), gy.div_euclid(s));
            if fx < 0 || fy < 0 || fx >= g.width as i32 || fy >= g.height as i32 {
                continue;
            }
            let wet_after = after.depth[(fy as u32 * g.width + fx as u32) as usize] as f32 * DEPTH_QUANTUM > 1.0e-3;
            let h = field[0].abs().max(field[1].abs());
            match fx as u32 {
                x if x < POOL_COLUMNS => pool = pool.max(h),
                x if x >= SOURCE_COLUMNS => source = source.max(h),
                x if wet_after && x < POOL_COLUMNS + 3 => {
                    step_wetted = step_wetted.max(h);
                    wetted_cells += 1;
                }
                _ => {}
            }
        }
        println!(
            "{preference:?}: largest |h| or |v| over the pool {pool:.3e}, over the source's water {source:.3e}, over the {} detail cells the step wetted {step_wetted:e}",
            wetted_cells
        );
        assert!(wetted_cells > 0, "the step wets ground beside the dam");
        assert!(pool > 1.0e-3 && source > 1.0e-3, "the ripples stand on the pool and on the source's water");
        assert_eq!(step_wetted, 0.0, "no wave on ground only the step wetted");
        fields.push(waves);
    }
    let Spread { scale, vscale, dh, dv } = Spread::between(&fields[0], &fields[1]);
    println!("GPU against CPU: h max |Δ| {dh:.3e} of {scale:.3e} m, v max |Δ| {dv:.3e} of {vscale:.3e} m/s; tolerance {MAX_DETAIL_DIFFERENCE:e} of the largest");
    assert!(dh <= MAX_DETAIL_DIFFERENCE * scale && dv <= MAX_DETAIL_DIFFERENCE * vscale);
}
