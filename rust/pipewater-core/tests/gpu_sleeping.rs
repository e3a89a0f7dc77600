//! Sleeping tiles on the wgpu backend are exact: the step kernel runs only the tiles the device
//! lists as awake, and the fields, ledger and counters are the same bit for bit as when every
//! tile runs, through a flood, edits, a source, a terrain edit, bodies, pushes and changes of
//! step length. A lake at rest sleeps (no tile listed) and wakes where it is disturbed, and the
//! GPU with sleeping agrees with the CPU as `gpu_agreement.rs` asks. Every test prints what it
//! compares. Figures printed here come from whatever adapter runs the tests (in CI, Mesa's
//! software Vulkan): they show what was stepped, not how fast. The flood scene is
//! `common::lake_with_flood`; the GPU's tiles are the step's workgroups (54 × 32 cells here), so
//! the tests that want tiles far from the flood take it wider than `sleeping.rs` does.
#![cfg(feature = "gpu")]

mod common;
mod gpu_support;

use common::{differing_cells, fingerprint, lake_with_flood};
use gpu_support::*;
use pipewater_core::bodies::{couple, Body, Coupling, HullShape};
use pipewater_core::glam::Vec3;
use pipewater_core::{scenarios, BackendPreference, Boundary, Edge, Grid, Params, Simulation, State};

fn gpu(state: &State, params: Params, sleeping: bool) -> Simulation {
    let mut sim = Simulation::new(state.clone(), params, BackendPreference::Gpu).expect("GPU simulation");
    assert_eq!(sim.backend_kind(), pipewater_core::BackendKind::Gpu);
    sim.set_sleeping(sleeping);
    sim
}

/// Tiles the last step ran, read from the device.
fn awake_count(sim: &mut Simulation) -> usize {
    sim.awake_tiles().expect("the GPU backend has sleeping").awake.iter().filter(|&&a| a).count()
}

/// Step length of frame `frame`: it changes now and then, as a game's frames do, which wakes
/// the tiles near moving pipes.
fn step_of(frame: u32) -> f32 {
    if (frame / 40) % 2 == 0 {
        0.02
    } else {
        0.025
    }
}

/// Runs both through `frames` frames of three fixed steps, calling `disturb(frame, sim)` on each
/// before its frame (the same disturbance on both: bodies are coupled once, from `off`'s
/// snapshot). Each frame asks for a snapshot first, as a game does: the sleeping report arrives
/// with it. Asserts bit-identical states and ledgers every 40 frames. Returns the cells
/// each stepped, summed over the reports that arrived.
fn run_pair(on: &mut Simulation, off: &mut Simulation, frames: u32, disturb: impl Fn(u32, &mut Simulation, Option<&Coupling>), bodies: impl Fn(u32) -> Vec<Body>, name: &str) -> (u64, u64) {
    let (mut stepped_on, mut stepped_off) = (0u64, 0u64);
    for frame in 0..frames {
        let bodies = bodies(frame);
        let coupling = (!bodies.is_empty()).then(|| couple(&off.snapshot().unwrap(), &bodies, 0.3, 1000.0, 9.81));
        for sim in [&mut *on, &mut *off] {
            let _ = sim.snapshot();
            disturb(frame, sim, coupling.as_ref());
            sim.run_steps(step_of(frame), 3).unwrap();
        }
        stepped_on += on.sleep_report().unwrap().cells_stepped;
        stepped_off += off.sleep_report().unwrap().cells_stepped;
        if frame % 40 == 39 || frame + 1 == frames {
            let (a, b) = (on.read_state().unwrap(), off.read_state().unwrap());
            let (la, lb) = (on.ledger().unwrap(), off.ledger().unwrap());
            let differing = differing_cells(&a, &b);
            let report = on.sleep_report().unwrap();
            println!(
                "{name} frame {frame:>3}: fingerprints {:016x} / {:016x}, {differing} cells differ; awake tiles {} of {} now ({} in the last report); cells stepped so far {stepped_on} / {stepped_off}",
                fingerprint(&a),
                fingerprint(&b),
                awake_count(on),
                report.tiles.map_or(0, |t| t.count()),
                report.awake_tiles,
            );
            assert_eq!(differing, 0, "{name}: sleeping changed the water at frame {frame}");
            assert_eq!(a.flow.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>(), b.flow.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>(), "{name}: pipes differ");
            assert_eq!(la.counters, lb.counters, "{name}: sleeping changed the ledger at frame {frame}");
            assert_eq!(a.total_quanta(), la.expected_total(), "{name}: the ledger identity broke");
        }
    }
    (stepped_on, stepped_off)
}

#[test]
fn gpu_sleeping_gives_the_same_bits_through_a_flood_edits_sources_terrain_and_bodies() {
    if !gpu_or_skip("gpu_sleeping_gives_the_same_bits_through_a_flood_edits_sources_terrain_and_bodies") {
        return;
    }
    let state = lake_with_flood(384);
    for (advection, open_east) in [(true, false), (false, true)] {
        let mut params = Params { momentum_advection: advection, ..Params::default() };
        if open_east {
            params.boundaries[Edge::East as usize] = Boundary::Open;
        }
        let (mut on, mut off) = (gpu(&state, params, true), gpu(&state, params, false));
        let name = format!("GPU, advection {advection}, open east edge {open_east}");
        let source = std::cell::Cell::new(None);
        let (stepped_on, stepped_off) = run_pair(
            &mut on,
            &mut off,
            240,
            |frame, sim, coupling| {
                match frame {
                    30 => {
                        sim.add_water(50.0, 40.0, 6.0, 3.0).unwrap();
                    }
                    60 => {
                        let id = sim.add_source(-20.0, 50.0, 2.0, 2.0).unwrap();
                        // Both simulations number their sources alike.
                        source.set(Some(id));
                    }
                    100 => {
                        sim.remove_source(source.get().unwrap());
                    }
                    80 => sim.modify_terrain(60.0, -50.0, -0.4, 4.0).unwrap(),
                    150..=170 => sim.push_water(30.0, -20.0, [-2.0, 1.0], 3.0).unwrap(),
                    _ => {}
                }
                match coupling {
                    Some(c) => sim.apply_coupling(c).unwrap(),
                    None if frame == 211 => sim.apply_coupling(&Coupling::default()).unwrap(),
                    None => {}
                }
            },
            |frame| {
                if (180..=210).contains(&frame) {
                    let mut boat = Body::new(Vec3::new(40.0 - (frame - 180) as f32 * 0.2, 0.8, -30.0), HullShape::Sphere { radius: 2.0 });
                    boat.linear_velocity.x = -12.0;
                    vec![boat]
                } else {
                    Vec::new()
                }
            },
            &name,
        );
        println!("{name}: {stepped_on} cells stepped with sleeping, {stepped_off} without ({:.2}x)", stepped_off as f64 / stepped_on.max(1) as f64);
        assert!(stepped_on < stepped_off, "{name}: nothing slept");
    }
}

#[test]
fn a_gpu_lake_at_rest_lists_no_tile_and_wakes_where_it_is_disturbed() {
    if !gpu_or_skip("a_gpu_lake_at_rest_lists_no_tile_and_wakes_where_it_is_disturbed") {
        return;
    }
    let g = Grid::new(160, 160, 1.0).unwrap();
    let lake = scenarios::rough_lake(g, 5, 1.5, 1.0);
    type Disturbance = fn(&mut Simulation);
    let disturbances: [(&str, Disturbance); 4] = [
        ("add_water", |s| {
            s.add_water(30.0, 30.0, 4.0, 2.0).unwrap();
        }),
        ("source", |s| {
            s.add_source(30.0, 30.0, 3.0, 2.0).unwrap();
        }),
        ("terrain", |s| s.modify_terrain(30.0, 30.0, 0.5, 3.0).unwrap()),
        ("push", |s| s.push_water(30.0, 30.0, [3.0, -1.0], 2.0).unwrap()),
    ];
    for (name, disturb) in disturbances {
        let (mut on, mut off) = (gpu(&lake, Params::default(), true), gpu(&lake, Params::default(), false));
        for sim in [&mut on, &mut off] {
            for _ in 0..12 {
                let _ = sim.snapshot();
                sim.run_steps(0.02, 3).unwrap();
            }
            // The report of the last frame, which the reads above asked for.
            let _ = sim.read_state().unwrap();
            let _ = sim.snapshot();
        }
        let before = on.read_state().unwrap();
        let asleep = awake_count(&mut on);
        let report = on.sleep_report().unwrap();
        let tiles = on.awake_tiles().unwrap().tiles;
        println!(
            "{name}: lake at rest on {}x{} tiles of {}x{} cells: {asleep} awake now; the last report (frame with {} steps) lists {} awake, {} cells stepped",
            tiles.tiles[0], tiles.tiles[1], tiles.size[0], tiles.size[1], report.steps, report.awake_tiles, report.cells_stepped
        );
        assert_eq!(asleep, 0, "{name}: a lake at rest did not fall asleep");
        assert_eq!((report.awake_tiles, report.cells_stepped), (0, 0), "{name}: the report shows work on a lake at rest");
        assert_eq!(awake_count(&mut off), tiles.count(), "{name}: with sleeping off every tile steps");
        for sim in [&mut on, &mut off] {
            disturb(sim);
            sim.run_steps(0.02, 3).unwrap();
        }
        let awake = on.awake_tiles().unwrap();
        let (cx, cy) = g.cell_at(30.0, 30.0).unwrap();
        let here = awake.awake[awake.tiles.tile_of(cx, cy)];
        println!("{name}: after the disturbance {} tiles awake, the disturbed one {here}", awake.awake.iter().filter(|&&a| a).count());
        assert!(here, "{name}: the disturbed tile did not wake");
        let (stepped_on, stepped_off) = run_pair(&mut on, &mut off, 80, |_, _, _| {}, |_| Vec::new(), name);
        let moved = differing_cells(&before, &on.read_state().unwrap());
        println!("{name}: {moved} cells changed; {stepped_on} cells stepped with sleeping, {stepped_off} without");
        assert!(moved > 0, "{name}: the disturbance moved no water");
        assert!(stepped_on < stepped_off, "{name}: the far side of the lake did not keep sleeping");
    }
}

#[test]
fn the_gpu_with_sleeping_agrees_with_the_cpu_through_a_flood() {
    if !gpu_or_skip("the_gpu_with_sleeping_agrees_with_the_cpu_through_a_flood") {
        return;
    }
    let state = lake_with_flood(192);
    let (mut cpu, mut gpu) = pair(state, Params::default());
    assert!(cpu.sleeping() && gpu.sleeping(), "sleeping is on by default");
    for frame in 0..60 {
        for sim in [&mut cpu, &mut gpu] {
            if frame == 20 {
                sim.add_water(50.0, 40.0, 6.0, 3.0).unwrap();
            }
            sim.run_steps(step_of(frame), 3).unwrap();
        }
    }
    let (reference, state) = (cpu.read_state().unwrap(), gpu.read_state().unwrap());
    let d = difference(&reference, &state);
    let (actual, expected) = common::mass_identity(&mut gpu);
    let scale = d.depth_scale.max(1e-6);
    println!(
        "flood, CPU and GPU both sleeping: depth max |Δ| {:.3e} m ({:.2e} of {scale:.3} m), mean |Δ| {:.3e} m; totals CPU {} GPU {}; GPU mass identity {actual} vs {expected}; GPU awake tiles {} of {}",
        d.max_depth,
        d.max_depth / scale,
        d.mean_depth,
        d.totals.0,
        d.totals.1,
        awake_count(&mut gpu),
        gpu.awake_tiles().unwrap().tiles.count(),
    );
    assert_eq!(actual, expected, "GPU mass identity");
    assert!(d.max_depth / scale <= MAX_DEPTH_DIFFERENCE);
    assert!(d.mean_depth / scale as f64 <= MEAN_DEPTH_DIFFERENCE);
    assert_eq!(d.totals.0, d.totals.1, "on walls the totals agree exactly");
}
