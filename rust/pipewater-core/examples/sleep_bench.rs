//! Sleeping tiles benchmark: frame cost with sleeping on and off, the two simulations of each
//! scene stepped in alternating rounds in one process, so both see the same machine. Prints
//! Markdown rows for docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example sleep_bench -- [--backend cpu|gpu]
//! [--size 4096] [--frames 8] [--rounds 3] [--scenes demo,lake,breach,moving] [--demo-size 256]
//! [--demo-seconds 120] [--control]`
//!
//! Scenes:
//! - `demo`: the demo's landscape (`--demo-size`², 256² by default, the reservoir, the spring, the dam dug through at 20 s)
//!   after 120 s, when the flood has settled and only the river still runs.
//! - `lake`: a lake at rest over rough ground (`--size`², 4 m relief filled to 2 m) with one
//!   boat crossing it at 3 m/s.
//! - `breach`: the same lake with a spring pouring 20 m³/s into it and a 64 m block of water
//!   1.5 m high released at the start (a breach): a few per cent of the cells move.
//! - `moving`: every cell moving (the lake with a current of (0.5, 0.25) m/s everywhere): the
//!   worst case, where sleeping can only cost its bookkeeping.

use pipewater_core::bodies::{Body, HullShape};
use pipewater_core::glam::Vec3;
use pipewater_core::quanta::depth_to_quanta;
use pipewater_core::scenarios::{demo_landscape, rough_lake, DemoLandscape};
use pipewater_core::{BackendPreference, Boundary, Edge, Grid, Params, Simulation, State};
use std::time::Instant;

const FRAME: f32 = 1.0 / 60.0;
/// Every frame runs this many fixed steps, so that both runs of a scene step alike on a GPU too
/// (`advance` picks its step from a snapshot whose age varies with the device's timing) and both
/// pay for the same number of steps.
const SUBSTEPS: u32 = 4;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// A scene: its simulation and what it does before each frame.
struct Scene {
    sim: Simulation,
    boat: Option<Body>,
}

impl Scene {
    fn frame(&mut self) {
        if let Some(boat) = &mut self.boat {
            boat.position.x += boat.linear_velocity.x * FRAME;
            self.sim.couple_bodies(std::slice::from_ref(boat), FRAME, 1000.0).expect("couple");
        }
        self.sim.run_steps(FRAME / SUBSTEPS as f32, SUBSTEPS).expect("run_steps");
        // What a game's queries do each frame: a GPU reads back the header, the sleeping report
        // and the tiles asked for (none here), not the grid.
        self.sim.snapshot();
    }
}

fn lake(side: u32) -> State {
    rough_lake(Grid::new(side, side, 1.0).unwrap(), 42, 4.0, 2.0)
}

fn build(name: &str, side: u32, preference: BackendPreference, sleeping: bool, demo: (u32, f32)) -> Scene {
    let (demo_side, demo_seconds) = demo;
    let make = |state: State, params: Params| {
        let mut sim = Simulation::new(state, params, preference).expect("simulation");
        sim.set_sleeping(sleeping);
        sim.want_full_snapshots(false);
        sim
    };
    match name {
        "demo" => {
            let grid = Grid::new(demo_side, demo_side, 1.0).unwrap();
            let DemoLandscape { state, source, dam, dam_crest, .. } = demo_landscape(grid, 7, 0.55, 20.0);
            let mut params = Params::default();
            params.boundaries[Edge::East as usize] = Boundary::Open;
            let mut sim = make(state, params);
            sim.add_source(source.x, source.z, source.rate, source.radius).unwrap();
            let extent = grid.extent();
            for frame in 0..(demo_seconds / FRAME) as u32 {
                if frame == (20.0 / FRAME) as u32 {
                    for k in -1..=1 {
                        sim.modify_terrain(dam[0] + k as f32 * 0.015 * extent[0], dam[1], -0.43 * dam_crest, 0.025 * extent[0]).unwrap();
                    }
                }
                sim.run_steps(FRAME / SUBSTEPS as f32, SUBSTEPS).unwrap();
            }
            Scene { sim, boat: None }
        }
        "lake" => {
            let mut scene = Scene { sim: make(lake(side), Params::default()), boat: None };
            // Let the filled lake settle (it starts at rest to the quantum).
            for _ in 0..30 {
                scene.frame();
            }
            // The boat starts on the first water at least 1 m deep along the line z = 0, west of
            // the centre, floating 0.3 m deep, and heads east.
            let start = (0..side / 2).map(|k| -0.4 * side as f32 + k as f32).find(|&x| scene.sim.depth(x, 0.0).unwrap_or(0.0) > 1.0).expect("water on the line");
            let mut boat = Body::new(Vec3::new(start, 2.0 + 0.1, 0.0), HullShape::Box { half_extents: Vec3::new(1.5, 0.4, 0.7) });
            boat.linear_velocity = Vec3::new(3.0, 0.0, 0.0);
            scene.boat = Some(boat);
            scene
        }
        "breach" => {
            let mut state = lake(side);
            let g = state.grid;
            let (x0, y0) = (side / 3, side / 3);
            for y in y0..y0 + 64 {
                for x in x0..x0 + 64 {
                    state.depth[g.index(x, y)] += depth_to_quanta(1.5);
                }
            }
            let mut sim = make(state, Params::default());
            sim.add_source(0.2 * side as f32, -0.2 * side as f32, 20.0, 4.0).unwrap();
            let mut scene = Scene { sim, boat: None };
            for _ in 0..60 {
                scene.frame();
            }
            scene
        }
        "moving" => {
            let params = Params::default();
            let mut state = lake(side);
            state.set_velocity(&params, |_, _| [0.5, 0.25]);
            let mut scene = Scene { sim: make(state, params), boat: None };
            for _ in 0..5 {
                scene.frame();
            }
            scene
        }
        other => panic!("unknown scene {other}: demo, lake, breach or moving"),
    }
}

/// Seconds per frame over `frames` frames, waiting for the device at the end.
fn time(scene: &mut Scene, frames: u32) -> (f64, u64, u64) {
    let started = Instant::now();
    let (mut stepped, mut total) = (0u64, 0u64);
    for _ in 0..frames {
        scene.frame();
        let cells = scene.sim.grid().cell_count() as u64 * SUBSTEPS as u64;
        total += cells;
        // On a GPU the report arrives with the snapshot, up to two frames late.
        stepped += scene.sim.sleep_report().map_or(cells, |r| r.cells_stepped);
    }
    scene.sim.ledger().expect("ledger");
    (started.elapsed().as_secs_f64() / frames as f64, stepped, total)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preference = match arg(&args, "--backend").as_deref() {
        Some("gpu") => BackendPreference::Gpu,
        _ => BackendPreference::Cpu,
    };
    let side: u32 = arg(&args, "--size").and_then(|v| v.parse().ok()).unwrap_or(4096);
    let frames: u32 = arg(&args, "--frames").and_then(|v| v.parse().ok()).unwrap_or(8);
    let rounds: u32 = arg(&args, "--rounds").and_then(|v| v.parse().ok()).unwrap_or(3);
    let demo_side: u32 = arg(&args, "--demo-size").and_then(|v| v.parse().ok()).unwrap_or(256);
    let demo_seconds: f32 = arg(&args, "--demo-seconds").and_then(|v| v.parse().ok()).unwrap_or(120.0);
    let scenes = arg(&args, "--scenes").unwrap_or_else(|| "demo,lake,breach,moving".into());
    println!("| scene | cells | sleeping off, ms/frame | on, ms/frame | off / on | cells stepped with sleeping |");
    println!("|---|---|---|---|---|---|");
    for name in scenes.split(',') {
        // `--control`: both runs without sleeping, to see whether a difference between the runs
        // comes from sleeping or from the device.
        let mut on = build(name, side, preference, !args.iter().any(|a| a == "--control"), (demo_side, demo_seconds));
        let mut off = build(name, side, preference, false, (demo_side, demo_seconds));
        let description = on.sim.backend_description();
        let (mut best_on, mut best_off) = (f64::INFINITY, f64::INFINITY);
        let (mut stepped, mut total) = (0u64, 0u64);
        for round in 0..rounds {
            let (t_off, _, _) = time(&mut off, frames);
            let (t_on, s, t) = time(&mut on, frames);
            eprintln!("{name} round {round}: off {:.3} ms, on {:.3} ms per frame ({description})", t_off * 1e3, t_on * 1e3);
            best_on = best_on.min(t_on);
            best_off = best_off.min(t_off);
            stepped += s;
            total += t;
        }
        // The two runs must still hold the same water (sleeping is exact). On a GPU the boat's
        // coupling reads snapshots whose age varies with the device's timing, so with a boat the
        // two runs may differ there for that reason alone.
        let (a, b) = (on.sim.read_state().unwrap(), off.sim.read_state().unwrap());
        let same = a.depth == b.depth && a.flow.iter().flatten().map(|f| f.to_bits()).eq(b.flow.iter().flatten().map(|f| f.to_bits()));
        let g = on.sim.grid();
        println!(
            "| {name} | {}² | {:.3} | {:.3} | {:.2}× | {:.1} %{} |",
            g.width,
            best_off * 1e3,
            best_on * 1e3,
            best_off / best_on,
            100.0 * stepped as f64 / total.max(1) as f64,
            if same { "" } else { " (states differ)" }
        );
    }
}
