//! Main-thread cost of one `PipeWater` physics frame, the parts that run without Godot:
//!
//! - `advance`: `Simulation::advance(1/60 s)` on the backend `Auto` picks (on the GPU: encoding
//!   and submitting the frame's substeps and polling the readback; on the CPU: the whole step);
//! - `snapshot`: taking the newest snapshot (on the CPU backend this builds it);
//! - `pack`: copying both snapshots' texels into byte buffers, the copy the node makes into a
//!   `PackedByteArray` before `Image.set_data` (Godot's own `set_data` and `ImageTexture.update`
//!   are not measured here: they need a running engine).
//!
//! Run with `cargo bench -p pipewater-godot --bench node_frame [-- --sizes 1024,2048]`.
//! Under `cargo test` (no `--bench` argument) it only says so and exits.

use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation};
use pipewater_godot::texels::pack_texels_into;
use std::time::{Duration, Instant};

const FRAMES: usize = 30;
const FRAME: f32 = 1.0 / 60.0;

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1.0e3
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("node_frame: a benchmark; run it with `cargo bench -p pipewater-godot --bench node_frame`");
        return;
    }
    let sizes: Vec<u32> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|v| v.parse().ok()).collect())
        .unwrap_or_else(|| vec![1024, 2048]);
    println!("node_frame: {} logical CPUs, {}", std::thread::available_parallelism().map_or(0, |n| n.get()), cpu_model());
    println!("| grid | backend | advance ms | snapshot ms | pack ms (2 textures) | bytes packed |");
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        let grid = match Grid::new(n, n, 1.0) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skipping {n}: {e}");
                continue;
            }
        };
        let state = scenarios::rough_lake(grid, 7, 4.0, 1.0);
        let mut sim = match Simulation::new(state, Params::default(), BackendPreference::Auto) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipping {n}: {e}");
                continue;
            }
        };
        let backend = sim.backend_description();
        let (mut advance, mut snapshot, mut pack) = (Vec::new(), Vec::new(), Vec::new());
        let (mut height_bytes, mut flow_bytes) = (Vec::new(), Vec::new());
        for frame in 0..FRAMES + 3 {
            let t0 = Instant::now();
            if let Err(e) = sim.advance(FRAME) {
                eprintln!("advance failed: {e}");
                return;
            }
            let t1 = Instant::now();
            let snap = sim.snapshot();
            let t2 = Instant::now();
            if let Some(s) = &snap {
                pack_texels_into(&s.height, &mut height_bytes);
                pack_texels_into(&s.flow, &mut flow_bytes);
            }
            let t3 = Instant::now();
            if frame >= 3 {
                advance.push(t1 - t0);
                snapshot.push(t2 - t1);
                pack.push(t3 - t2);
            }
        }
        println!(
            "| {n}² | {backend} | {:.3} | {:.3} | {:.3} | {} |",
            median(advance),
            median(snapshot),
            median(pack),
            height_bytes.len() + flow_bytes.len()
        );
    }
}
