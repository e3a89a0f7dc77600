//! Sleeping tiles are exact: water at rest is not stepped, and the fields, ledger and counters
//! are the same bit for bit as when every cell is stepped. A sleeping lake wakes for every kind
//! of disturbance (an edit of water or terrain, a source, a body, a flood arriving at its
//! border) and answers exactly as a lake that never slept. Every test prints the figures it
//! compares: cells stepped with sleeping on and off, and the states' fingerprints.

mod common;

use common::*;
use pipewater_core::backend::sleep::SleepReport;
use pipewater_core::bodies::{Body, HullShape};
use pipewater_core::glam::Vec3;
use pipewater_core::{scenarios, BackendPreference, Boundary, Edge, Grid, Params, Simulation, State};

/// Width of the flood scene (`common::lake_with_flood`): 6 × 5 tiles of 32 on the CPU.
const FLOOD_WIDTH: u32 = 192;

fn sim(state: &State, params: Params, sleeping: bool) -> Simulation {
    let mut sim = Simulation::new(state.clone(), params, BackendPreference::Cpu).unwrap();
    sim.set_sleeping(sleeping);
    sim
}

fn report(sim: &Simulation) -> SleepReport {
    sim.sleep_report().expect("the CPU backend has sleeping")
}

/// Whether the tile holding world point `(x, z)` was stepped in the last step.
fn tile_awake(sim: &mut Simulation, x: f32, z: f32) -> bool {
    let tiles = sim.awake_tiles().expect("the CPU backend has sleeping");
    let g = sim.grid();
    let (cx, cy) = g.cell_at(x, z).expect("on the grid");
    tiles.awake[tiles.tiles.tile_of(cx, cy)]
}

/// Runs both simulations through the same frames, calling `disturb(frame, sim)` on each before
/// its frame; asserts bit-identical states and ledgers every 25 frames. Returns the cells each
/// stepped (sleeping on, off).
fn run_pair(on: &mut Simulation, off: &mut Simulation, frames: u32, mut disturb: impl FnMut(u32, &mut Simulation), name: &str) -> (u64, u64) {
    let (mut stepped_on, mut stepped_off) = (0u64, 0u64);
    for frame in 0..frames {
        for sim in [&mut *on, &mut *off] {
            disturb(frame, sim);
            sim.advance(1.0 / 60.0).unwrap();
        }
        stepped_on += report(on).cells_stepped;
        stepped_off += report(off).cells_stepped;
        if frame % 25 == 24 || frame + 1 == frames {
            let (a, b) = (on.read_state().unwrap(), off.read_state().unwrap());
            let (la, lb) = (on.ledger().unwrap(), off.ledger().unwrap());
            let differing = differing_cells(&a, &b);
            println!(
                "{name} frame {frame:>3}: fingerprints {:016x} / {:016x}, {differing} cells differ; awake tiles {} of {}; cells stepped so far {stepped_on} / {stepped_off}",
                fingerprint(&a),
                fingerprint(&b),
                report(on).awake_tiles,
                report(on).tiles.map_or(0, |t| t.count()),
            );
            assert_eq!(differing, 0, "{name}: sleeping changed the water at frame {frame}");
            assert_eq!(la.counters, lb.counters, "{name}: sleeping changed the ledger at frame {frame}");
            assert_eq!(a.total_quanta(), la.expected_total(), "{name}: the ledger identity broke");
        }
    }
    (stepped_on, stepped_off)
}

#[test]
fn sleeping_gives_the_same_bits_through_a_flood_edits_sources_and_bodies() {
    let state = lake_with_flood(FLOOD_WIDTH);
    for (advection, open_east) in [(true, false), (false, true)] {
        let mut params = Params { momentum_advection: advection, ..Params::default() };
        if open_east {
            params.boundaries[Edge::East as usize] = Boundary::Open;
        }
        let (mut on, mut off) = (sim(&state, params, true), sim(&state, params, false));
        let boat = Body::new(Vec3::new(40.0, 0.8, -30.0), HullShape::Sphere { radius: 2.0 });
        let name = format!("advection {advection}, open east edge {open_east}");
        let mut source = None;
        let (stepped_on, stepped_off) = run_pair(
            &mut on,
            &mut off,
            400,
            |frame, sim| match frame {
                60 => {
                    sim.add_water(50.0, 40.0, 6.0, 3.0).unwrap();
                }
                120 => source = Some(sim.add_source(-20.0, 50.0, 2.0, 2.0).unwrap()),
                200 => {
                    sim.remove_source(source.unwrap());
                }
                150 => sim.modify_terrain(60.0, -50.0, -0.4, 4.0).unwrap(),
                250..=330 => {
                    // The same body on both simulations: it moves 0.1 m a frame.
                    let mut b = boat.clone();
                    b.position.x -= (frame - 250) as f32 * 0.1;
                    b.linear_velocity.x = -6.0;
                    sim.couple_bodies(std::slice::from_ref(&b), 1.0 / 60.0, 1000.0).unwrap();
                }
                _ => {}
            },
            &name,
        );
        println!("{name}: {stepped_on} cells stepped with sleeping, {stepped_off} without ({:.2}×)", stepped_off as f64 / stepped_on as f64);
        assert!(stepped_on < stepped_off, "{name}: nothing slept");
    }
}

#[test]
fn a_lake_at_rest_sleeps_and_wakes_for_every_disturbance() {
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
        ("body", |s| {
            let mut b = Body::new(Vec3::new(30.0, 0.9, 30.0), HullShape::Sphere { radius: 2.0 });
            b.linear_velocity = Vec3::new(3.0, -1.0, 0.0);
            s.couple_bodies(std::slice::from_ref(&b), 1.0 / 60.0, 1000.0).unwrap();
        }),
    ];
    for (name, disturb) in disturbances {
        let (mut on, mut off) = (sim(&lake, Params::default(), true), sim(&lake, Params::default(), false));
        for sim in [&mut on, &mut off] {
            for _ in 0..10 {
                sim.advance(1.0 / 60.0).unwrap();
            }
        }
        let before = on.read_state().unwrap();
        let asleep = report(&on);
        println!("{name}: before, {} of {} tiles awake, {} cells stepped in the last frame", asleep.awake_tiles, asleep.tiles.unwrap().count(), asleep.cells_stepped);
        assert_eq!(asleep.awake_tiles, 0, "{name}: a lake at rest did not fall asleep");
        assert!(!tile_awake(&mut on, 30.0, 30.0));
        let (stepped_on, stepped_off) = run_pair(&mut on, &mut off, 120, |frame, sim| if frame == 0 { disturb(sim) }, name);
        let after = on.read_state().unwrap();
        let moved = differing_cells(&before, &after);
        println!("{name}: {moved} cells changed; {stepped_on} cells stepped with sleeping, {stepped_off} without");
        assert!(moved > 0, "{name}: the disturbance moved no water");
        assert!(stepped_on < stepped_off, "{name}: the far side of the lake did not keep sleeping");
    }
}

#[test]
fn a_flood_wakes_the_tiles_it_reaches() {
    let state = lake_with_flood(FLOOD_WIDTH);
    let (mut on, mut off) = (sim(&state, Params::default(), true), sim(&state, Params::default(), false));
    // A point of the lake 60 m east of the plateau's edge.
    let (x, z) = (-96.0 + 100.0, 0.0);
    let mut slept_until = None;
    let mut woke_at = None;
    for frame in 0..600u32 {
        for sim in [&mut on, &mut off] {
            sim.advance(1.0 / 60.0).unwrap();
        }
        let awake = tile_awake(&mut on, x, z);
        if !awake && woke_at.is_none() {
            slept_until = Some(frame);
        }
        if awake && slept_until.is_some() && woke_at.is_none() {
            woke_at = Some(frame);
        }
    }
    let (a, b) = (on.read_state().unwrap(), off.read_state().unwrap());
    println!("the lake at ({x}, {z}) slept until frame {slept_until:?} and woke at frame {woke_at:?}; {} cells differ at the end", differing_cells(&a, &b));
    assert!(slept_until.is_some() && woke_at.is_some(), "the lake's tile should sleep, then wake when the flood arrives");
    assert_eq!(differing_cells(&a, &b), 0);
    assert_eq!(on.ledger().unwrap().counters, off.ledger().unwrap().counters);
}

/// The CPU writes each snapshot over an older one and computes only the tiles that changed
/// since (`backend/tile_snapshot.rs`). Whatever changed the water, and whether or not snapshots
/// were taken in between, every snapshot must equal one built from scratch of the same state,
/// bit for bit: each stage compares them and prints how many tiles were computed and how many
/// cells' texels changed since the last stage (a tile left out would show them as they were).
#[test]
fn cpu_snapshots_written_tile_by_tile_equal_fresh_ones_after_every_kind_of_change() {
    use pipewater_core::backend::cpu::CpuBackend;
    use pipewater_core::backend::{Backend, CellTerrain, CellWater, FramePlan, PipeNudge};
    use pipewater_core::pipes::{fixed_flux_per_stored, StepConstants};
    let state = lake_with_flood(FLOOD_WIDTH);
    let g = state.grid;
    let mut cpu = CpuBackend::new(&state);
    let constants = |params: &Params| StepConstants::new(params, g.width, g.height, g.cell_size, 0.02, [0; 4]);
    let mut previous: Option<pipewater_core::Snapshot> = None;
    // Holding the last stage's snapshot (as a picture on screen would) leaves one spare free:
    // the next stage writes over the one before it, computing what changed over two stages.
    let mut held = std::collections::VecDeque::new();
    let mut check = |cpu: &mut CpuBackend, c: &StepConstants, stage: &str, expect_change: bool| {
        let snapshot = cpu.snapshot().unwrap();
        let counters = cpu.read_counters().unwrap();
        let fresh = cpu.state().snapshot_reusing(snapshot.sequence, counters, None, fixed_flux_per_stored(c), c.triangular());
        let texels = |s: &pipewater_core::Snapshot| -> Vec<u32> { s.height.iter().chain(&s.flow).flatten().map(|v| v.to_bits()).collect() };
        let differing = texels(&snapshot).iter().zip(texels(&fresh)).filter(|(a, b)| **a != *b).count();
        let changed = previous.as_ref().map_or(g.cell_count(), |p| p.height.iter().zip(&fresh.height).zip(p.flow.iter().zip(&fresh.flow)).filter(|((a, b), (c, d))| a != b || c != d).count());
        println!(
            "{stage}: {} of {} tiles computed; {changed} cells' texels changed since the last stage; {differing} texel words differ from a fresh snapshot; totals {} / {}",
            cpu.snapshot_tiles_written(),
            report_tiles(cpu),
            snapshot.total_quanta,
            fresh.total_quanta,
        );
        assert_eq!(differing, 0, "{stage}: the snapshot is not the state's");
        assert_eq!((snapshot.total_quanta, snapshot.max_speed.to_bits(), snapshot.max_depth.to_bits()), (fresh.total_quanta, fresh.max_speed.to_bits(), fresh.max_depth.to_bits()), "{stage}: totals");
        assert_eq!(changed > 0, expect_change, "{stage}");
        previous = Some(fresh);
        held.push_back(snapshot);
        if held.len() > 1 {
            held.pop_front();
        }
    };
    fn report_tiles(cpu: &CpuBackend) -> usize {
        cpu.sleep_report().unwrap().tiles.map_or(0, |t| t.count())
    }
    let run = |cpu: &mut CpuBackend, c: StepConstants, frames: u32, snapshots: bool| {
        for _ in 0..frames {
            cpu.advance(&FramePlan { constants: c, substeps: 3, forcing: &[] }).unwrap();
            if snapshots {
                let _ = cpu.snapshot();
            }
        }
    };
    let still = |cpu: &mut CpuBackend, c: StepConstants| cpu.advance(&FramePlan { constants: c, substeps: 0, forcing: &[] }).unwrap();
    let params = Params::default();
    let c = constants(&params);
    check(&mut cpu, &c, "the state as loaded", true);
    for round in 0..4 {
        run(&mut cpu, c, 20, round % 2 == 0);
        check(&mut cpu, &c, &format!("20 frames of the flood ({})", if round % 2 == 0 { "a snapshot each" } else { "no snapshot" }), true);
    }
    let east = g.index(g.width - 20, 80) as u32;
    cpu.edit_water(&[CellWater { cell: east, quanta: 40_000 }]).unwrap();
    check(&mut cpu, &c, "water added on a tile corner far from the flood, no step", true);
    cpu.edit_terrain(&[CellTerrain { cell: g.index(160, 32) as u32, delta: 0.75 }]).unwrap();
    still(&mut cpu, c);
    check(&mut cpu, &c, "terrain raised on a tile corner, a frame without steps", true);
    cpu.nudge_pipes(&[PipeNudge { cell: g.index(128, 95) as u32, velocity_x: 0.5, velocity_y: -0.3, weight: 0.5 }]).unwrap();
    still(&mut cpu, c);
    check(&mut cpu, &c, "pipes pushed on a tile corner, a frame without steps", true);
    let mut terrain = cpu.state().terrain.clone();
    for t in terrain.iter_mut().skip(g.index(0, 140)) {
        *t += 0.25;
    }
    cpu.set_terrain(&terrain).unwrap();
    check(&mut cpu, &c, "a new terrain", true);
    let classic = constants(&Params { cross_section: pipewater_core::CrossSection::Classic, ..params });
    still(&mut cpu, classic);
    check(&mut cpu, &classic, "the classic cross-section, no step", true);
    still(&mut cpu, classic);
    check(&mut cpu, &classic, "a frame without steps or edits", false);
    run(&mut cpu, c, 30, false);
    check(&mut cpu, &c, "30 frames back in the default mode", true);
}
