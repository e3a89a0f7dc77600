//! What a viscous fluid and cooling cost a step on the CPU or wgpu backend: the same river valley stepped
//! as water (ν = 10⁻⁶ m²/s, the default), as lava (ν = 100 m²/s) and as lava that sets
//! (solidify rate 1 mm/s, judged and applied once per frame of `--steps` steps), in interleaved
//! rounds (water, lava, cooling lava, water, …) so that all three see the same machine.
//!
//! `cargo run --release -p pipewater-core --example viscosity_cost -- [--size 256] [--steps 100]
//! [--rounds 5] [--frames 1] [--no-sleep] [--backend cpu|gpu]`: each round runs `--frames` frames
//! of `--steps` steps (cooling runs once a frame, so fewer steps a frame weigh it more); `--no-sleep` steps every cell (sleeping tiles
//! are on otherwise, as in a game, and then the slower lava leaves more of the grid asleep);
//! `--backend gpu` runs on wgpu (cooling's own passes after each frame, `shaders/cooling.wgsl`),
//! each round ending with a wait for the device (a read of the ledger, the same for all three).
//! Prints ns per cell-step over every cell of the grid, for each round and the median.

use pipewater_core::{scenarios, BackendPreference, Boundary, Edge, Grid, Params, Simulation};
use std::time::Instant;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

/// The river valley of `side`² cells of 1 m with its spring, an inflow edge and an open edge,
/// with viscosity `viscosity` m²/s and solidify rate `solidify_rate` m/s, after 200 steps of
/// 0.02 s so that it runs.
fn valley(side: u32, viscosity: f32, solidify_rate: f32, sleeping: bool, backend: BackendPreference) -> Simulation {
    let grid = Grid::new(side, side, 1.0).expect("grid");
    let (mut state, spring) = scenarios::river_valley(grid, 7, 3.0);
    state.fill_to_level(0.4).expect("level");
    let mut params = Params { viscosity, solidify_rate, ..Params::default() };
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 2.0 };
    params.boundaries[Edge::East as usize] = Boundary::Open;
    let mut sim = Simulation::new(state, params, backend).expect("simulation");
    sim.set_sleeping(sleeping);
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    sim.run_steps(0.02, 200).expect("warm-up");
    sim
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size").unwrap_or(256);
    let steps: u32 = arg(&args, "--steps").unwrap_or(100);
    let frames: u32 = arg(&args, "--frames").unwrap_or(1).max(1);
    let rounds: u32 = arg(&args, "--rounds").unwrap_or(5);
    let sleeping = !args.iter().any(|a| a == "--no-sleep");
    let backend = match arg::<String>(&args, "--backend").as_deref() {
        Some("gpu") => BackendPreference::Gpu,
        None | Some("cpu") => BackendPreference::Cpu,
        Some(other) => {
            eprintln!("--backend {other}: expected cpu or gpu");
            std::process::exit(2);
        }
    };
    let names = ["water", "lava", "cooling lava"];
    let mut sims = [valley(side, 1.0e-6, 0.0, sleeping, backend), valley(side, 100.0, 0.0, sleeping, backend), valley(side, 100.0, 1.0e-3, sleeping, backend)];
    println!("backend: {}", sims[0].backend_description());
    let mut ns = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..rounds {
        for (k, sim) in sims.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..frames {
                sim.run_steps(0.02, steps).expect("steps");
            }
            // Waits for the device on the GPU (the ledger's counters are read back).
            sim.ledger().expect("ledger");
            let per = start.elapsed().as_secs_f64() * 1e9 / (side as f64 * side as f64 * steps as f64 * frames as f64);
            ns[k].push(per);
            println!("round {round}: {:>12}: {per:.2} ns per cell-step", names[k]);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let m: Vec<f64> = ns.iter_mut().map(median).collect();
    let solidified = sims[2].ledger().expect("ledger").solidified as f64 * sims[2].quantum_volume();
    println!(
        "{side}², {frames} frames of {steps} steps × {rounds} rounds, sleeping {sleeping}, {} threads: median ns per cell-step: water {:.2}, lava {:.2} ({:+.0} %), cooling lava {:.2} ({:+.0} % over lava); {solidified:.2} m³ set",
        rayon::current_num_threads(),
        m[0],
        m[1],
        100.0 * (m[1] / m[0] - 1.0),
        m[2],
        100.0 * (m[2] / m[1] - 1.0)
    );
}
