//! Sleeping tiles on the wgpu backend are exact: the step kernel runs only the tiles the device
//! lists as awake, and the fields, ledger and counters are the same bit for bit as when every
//! tile runs, through a flood, edits, a source, a terrain edit, bodies, pushes and changes of
//! step length. A lake at rest sleeps (no tile listed) and wakes where it is disturbed, and the
//! GPU with sleeping agrees with the CPU as `gpu_agreement.rs` asks. Every test prints what it
//! compares. Figures printed here come from whatever adapter runs the tests (in CI, Mesa's
//! software Vulkan): they show what was stepped, not how fast. The flood scene is
//! `common::lake_with_flood`; the GPU's tiles are the step's workgroups (56 × 10 cells here), so
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

/// Largest difference of GPU texels from the CPU's computation of the same state, relative to
/// the texel's largest component: rounding only (a stale tile differs by whole parts).
const TEXEL_TOLERANCE: f32 = 1.0e-4;

/// The snapshot recomputes only stale tiles (those stepped or next to one, or all after a change
/// without a step); every other tile keeps its texels and its share of the totals from an
/// earlier snapshot. Whatever changed the water, and whether or not snapshots were asked for in
/// between, the snapshot after `sync` must show the state of that instant in every cell: each
/// stage compares it with the CPU's snapshot of the state read back, and prints how many cells'
/// texels changed since the last stage (a stale tile would show them as they were).
#[test]
fn gpu_snapshots_recompute_every_tile_whose_water_changed_and_only_sleep_where_nothing_did() {
    use pipewater_core::backend::gpu::GpuBackend;
    use pipewater_core::backend::{Backend, CellTerrain, CellWater, FramePlan};
    use pipewater_core::pipes::StepConstants;
    if !gpu_or_skip("gpu_snapshots_recompute_every_tile_whose_water_changed_and_only_sleep_where_nothing_did") {
        return;
    }
    let state = lake_with_flood(384);
    let g = state.grid;
    let mut gpu = GpuBackend::new(&state).unwrap();
    gpu.want_full_snapshots(true);
    let params = Params::default();
    let constants = |params: &Params, dt: f32| StepConstants::new(params, g.width, g.height, g.cell_size, dt, [0; 4]);
    let mut previous: Option<pipewater_core::Snapshot> = None;
    let mut check = |gpu: &mut GpuBackend, c: &StepConstants, stage: &str, expect_change: bool| {
        gpu.sync().unwrap();
        let snapshot = gpu.snapshot().unwrap();
        let counters = gpu.read_counters().unwrap();
        let reference = gpu.read_state().unwrap().snapshot_reusing(snapshot.sequence, counters, None, pipewater_core::pipes::fixed_flux_per_stored(c), c.triangular());
        // Relative to the texel's largest component: a velocity component that nearly cancels
        // carries the rounding of the whole sum.
        let mut worst = 0.0f32;
        for (a, b) in snapshot.height.iter().zip(&reference.height).chain(snapshot.flow.iter().zip(&reference.flow)) {
            let scale = b.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
            worst = (0..4).fold(worst, |w, k| w.max((a[k] - b[k]).abs() / scale));
        }
        let changed = previous.as_ref().map_or(g.cell_count(), |p| {
            p.height.iter().zip(&reference.height).zip(p.flow.iter().zip(&reference.flow)).filter(|((h0, h1), (f0, f1))| h0 != h1 || f0 != f1).count()
        });
        let report = gpu.sleep_report().unwrap();
        println!(
            "{stage}: {changed} cells' texels changed since the last stage; worst relative texel difference {worst:.2e}; totals {} / {} quanta; max depth {} / {} m; last step ran {} of {} tiles",
            snapshot.total_quanta,
            reference.total_quanta,
            snapshot.max_depth,
            reference.max_depth,
            report.awake_tiles,
            report.tiles.map_or(0, |t| t.count()),
        );
        assert!(worst <= TEXEL_TOLERANCE, "{stage}: the snapshot shows texels that are not the state's ({worst} relative)");
        assert_eq!(snapshot.total_quanta, reference.total_quanta, "{stage}: total water");
        assert_eq!(snapshot.max_depth, reference.max_depth, "{stage}: largest depth");
        assert!((snapshot.max_speed - reference.max_speed).abs() <= TEXEL_TOLERANCE * reference.max_speed.max(1e-3), "{stage}: largest speed");
        assert_eq!(changed > 0, expect_change, "{stage}: the stage {} the water", if expect_change { "did not change" } else { "changed" });
        previous = Some(reference);
    };
    let run = |gpu: &mut GpuBackend, c: StepConstants, frames: u32, ask: bool| {
        for _ in 0..frames {
            if ask {
                let _ = gpu.snapshot();
            }
            gpu.advance(&FramePlan { constants: c, substeps: 3, forcing: &[] }).unwrap();
        }
    };
    let still = |gpu: &mut GpuBackend, c: StepConstants| gpu.advance(&FramePlan { constants: c, substeps: 0, forcing: &[] }).unwrap();
    let c = constants(&params, 0.02);
    check(&mut gpu, &c, "the state as loaded", true);
    run(&mut gpu, c, 30, true);
    check(&mut gpu, &c, "30 frames of the flood, a snapshot asked before each", true);
    run(&mut gpu, c, 40, false);
    check(&mut gpu, &c, "40 more frames, no snapshot asked", true);
    let report = gpu.sleep_report().unwrap();
    assert!(report.awake_tiles < report.tiles.unwrap().count() as u32, "tiles far from the flood must sleep for this test to mean anything");
    // Cells far east, in tiles asleep since the start.
    let east = g.index(g.width - 20, 80);
    gpu.edit_water(&[CellWater { cell: east as u32, quanta: 40_000 }]).unwrap();
    let _ = gpu.snapshot();
    still(&mut gpu, c);
    check(&mut gpu, &c, "water added in a frame without steps", true);
    gpu.edit_terrain(&[CellTerrain { cell: g.index(g.width - 40, 20) as u32, delta: 0.75 }]).unwrap();
    still(&mut gpu, c);
    check(&mut gpu, &c, "terrain raised in a frame without steps, no snapshot asked before it", true);
    let mut terrain = gpu.read_state().unwrap().terrain;
    for t in terrain.iter_mut().skip(g.index(0, 140)) {
        *t += 0.25;
    }
    gpu.set_terrain(&terrain).unwrap();
    still(&mut gpu, c);
    check(&mut gpu, &c, "a new terrain, no step", true);
    let classic = Params { cross_section: pipewater_core::CrossSection::Classic, ..params };
    let classic = constants(&classic, 0.02);
    still(&mut gpu, classic);
    check(&mut gpu, &classic, "the classic cross-section (texels show flux per pipe depth), no step", true);
    still(&mut gpu, classic);
    check(&mut gpu, &classic, "a frame without steps or edits", false);
    run(&mut gpu, c, 20, true);
    check(&mut gpu, &c, "20 frames back in the default mode", true);
}
