//! Cost of bodies per frame: 1, 16 and 256 boats (box hulls 4 × 1 × 2 m, moving at 3 m/s and
//! turning) on the benchmark lake, against the same frames with no body. Reports, per frame, the
//! host time of `couple_bodies` and the whole frame (coupling + `advance` of `--steps` fixed
//! steps, device synchronised by the ledger read at the end). Prints Markdown rows for
//! docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example bodies_bench -- [--sizes 1024,2048]
//! [--bodies 1,16,256] [--frames 120] [--steps 4] [--cpu]`

use pipewater_core::bodies::{Body, HullShape};
use pipewater_core::glam::{Quat, Vec3};
use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation};
use std::time::Instant;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn list(args: &[String], name: &str, default: &[u32]) -> Vec<u32> {
    arg::<String>(args, name).map_or(default.to_vec(), |v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
}

/// Milliseconds per frame over `frames` frames: (coupling, whole frame).
fn run(sim: &mut Simulation, bodies: &mut [Body], frames: u32, steps: u32) -> (f64, f64) {
    let dt = 0.02;
    let (mut coupling, start) = (0.0f64, Instant::now());
    for _ in 0..frames {
        let t = Instant::now();
        if !bodies.is_empty() {
            sim.couple_bodies(bodies, dt * steps as f32, 1000.0).expect("coupling");
        }
        coupling += t.elapsed().as_secs_f64();
        sim.run_steps(dt, steps).expect("steps");
        for b in bodies.iter_mut() {
            b.rotation = (Quat::from_rotation_y(0.3 * dt * steps as f32) * b.rotation).normalize();
            b.linear_velocity = b.rotation * Vec3::new(3.0, 0.0, 0.0);
            b.position += b.linear_velocity * dt * steps as f32;
        }
    }
    sim.ledger().expect("ledger");
    (1e3 * coupling / frames as f64, 1e3 * start.elapsed().as_secs_f64() / frames as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes = list(&args, "--sizes", &[1024, 2048]);
    let counts = list(&args, "--bodies", &[1, 16, 256]);
    let frames: u32 = arg(&args, "--frames").unwrap_or(120);
    let steps: u32 = arg(&args, "--steps").unwrap_or(4);
    let preference = if args.iter().any(|a| a == "--cpu") { BackendPreference::Cpu } else { BackendPreference::Gpu };
    println!("| grid | bodies | backend | coupling ms/frame | frame ms ({steps} steps) | frame ms without bodies | bodies add |");
    println!("|---|---|---|---|---|---|---|");
    for &size in &sizes {
        let grid = Grid::new(size, size, 1.0).expect("grid");
        let mut sim = Simulation::new(scenarios::benchmark_lake(grid), Params::default(), preference).expect("simulation");
        let backend = sim.backend_description();
        // Warm-up, then the frames without bodies.
        run(&mut sim, &mut [], 10, steps);
        let (_, bare) = run(&mut sim, &mut [], frames, steps);
        for &n in &counts {
            let mut rng = scenarios::SplitMix64::new(n as u64);
            let half = 0.4 * size as f32;
            let mut bodies: Vec<Body> = (0..n)
                .map(|_| {
                    let mut b = Body::new(Vec3::new(rng.range(-half, half), 2.0, rng.range(-half, half)), HullShape::Box { half_extents: Vec3::new(2.0, 0.5, 1.0) });
                    b.rotation = Quat::from_rotation_y(rng.range(0.0, 6.28));
                    b
                })
                .collect();
            run(&mut sim, &mut bodies, 10, steps);
            let (coupling, frame) = run(&mut sim, &mut bodies, frames, steps);
            println!("| {size}² | {n} | {backend} | {coupling:.3} | {frame:.3} | {bare:.3} | {:+.3} ms |", frame - bare);
            sim.couple_bodies(&[], 0.02, 1000.0).expect("clear");
        }
    }
}
