//! What erosion costs a step on the CPU backend: the same river valley stepped with erosion off
//! and on, in interleaved rounds (off, on, off, on, …) so that both see the same machine.
//!
//! `cargo run --release -p pipewater-core --example erosion_cost -- [--size 256] [--steps 100]
//! [--rounds 5] [--no-sleep] [--no-slide]`: `--no-sleep` steps every cell (sleeping tiles are on
//! otherwise, as in a game); `--no-slide` turns thermal erosion off (thermal rate 0). Prints ns per cell-step over every cell of the grid, for each round and the median.

use pipewater_core::{scenarios, Boundary, Edge, ErosionParams, Grid, Params, Simulation};
use std::time::Instant;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

/// The river valley of `side`² cells of 1 m with its spring, an inflow edge and an open edge,
/// erosion on or off, after 200 steps of 0.02 s so that the river runs.
fn valley(side: u32, erosion: bool, sleeping: bool, slide: bool) -> Simulation {
    let grid = Grid::new(side, side, 1.0).expect("grid");
    let (mut state, spring) = scenarios::river_valley(grid, 7, 3.0);
    state.fill_to_level(0.4).expect("level");
    let mut params = Params::default();
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 2.0 };
    params.boundaries[Edge::East as usize] = Boundary::Open;
    params.erosion = ErosionParams { enabled: erosion, thermal_rate: if slide { ErosionParams::default().thermal_rate } else { 0.0 }, ..ErosionParams::default() };
    let mut sim = Simulation::cpu(state, params).expect("simulation");
    sim.set_sleeping(sleeping);
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    sim.run_steps(0.02, 200).expect("warm-up");
    sim
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size").unwrap_or(256);
    let steps: u32 = arg(&args, "--steps").unwrap_or(100);
    let rounds: u32 = arg(&args, "--rounds").unwrap_or(5);
    let sleeping = !args.iter().any(|a| a == "--no-sleep");
    let slide = !args.iter().any(|a| a == "--no-slide");
    let mut sims = [valley(side, false, sleeping, slide), valley(side, true, sleeping, slide)];
    let mut ns = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for (k, sim) in sims.iter_mut().enumerate() {
            let start = Instant::now();
            sim.run_steps(0.02, steps).expect("steps");
            let per = start.elapsed().as_secs_f64() * 1e9 / (side as f64 * side as f64 * steps as f64);
            ns[k].push(per);
            println!("round {round}: erosion {}: {per:.2} ns per cell-step", if k == 0 { "off" } else { "on " });
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut ns[0]), median(&mut ns[1]));
    let fields = sims[1].read_erosion().expect("read").expect("on");
    let moved: i64 = fields.ground.iter().map(|&g| (g as i64).abs()).sum();
    println!(
        "{side}², {steps} steps × {rounds} rounds, sleeping {sleeping}, slide {slide}, {} threads: median {off:.2} ns per cell-step off, {on:.2} on ({:+.0} %); ground moved {:.2} m³",
        rayon::current_num_threads(),
        100.0 * (on / off - 1.0),
        moved as f64 * sims[1].quantum_volume()
    );
}
