//! A sync client's cost of taking the server's tiles (issue 49): `Simulation::overwrite_cells`
//! and the client's step after it, on the backend asked for.
//!
//! `cargo run --release -p pipewater-core --example overwrite_bench -- [--size 512] [--warmup 300]
//! [--frames 240] [--tile 32] [--max-tiles 64] [--backend cpu|gpu]`
//!
//! A server and a client simulation of `scenarios::river_valley` (the spring of `sync_bench`)
//! run side by side for `--warmup` frames of 1/60 s, so a river flows through water at rest;
//! then for `--frames` frames both step, and at 30 Hz (every second frame) the tiles of
//! `--tile`² cells whose water changed on the server since the last sync (at most `--max-tiles`,
//! what a client is sent) are written into the client with `overwrite_cells`. The server's water
//! is read whole outside the timing. Prints the write's time per sync, the client's step time a
//! frame (a write that wakes tiles costs steps), the cells written, and how far the client's
//! water is from the server's at the end (0 when every changed tile was sent).
//!
//! The figure to compare is printed for whichever build runs it: for a before/after, run this
//! file against the build before the change as well (it uses only the public API).

use pipewater_core::scenarios::river_valley;
use pipewater_core::simulation::CellOverwrite;
use pipewater_core::{BackendPreference, Grid, Params, Simulation, DEPTH_QUANTUM};
use std::time::{Duration, Instant};

const FRAME: f32 = 1.0 / 60.0;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size", 512);
    let warmup: u32 = arg(&args, "--warmup", 300);
    let frames: u32 = arg(&args, "--frames", 240);
    let tile: u32 = arg(&args, "--tile", 32);
    let max_tiles: usize = arg(&args, "--max-tiles", 64);
    let backend: String = arg(&args, "--backend", "gpu".to_string());
    let preference = if backend == "gpu" { BackendPreference::Gpu } else { BackendPreference::Cpu };

    let grid = Grid::new(side, side, 1.0).expect("grid");
    let (state, spring) = river_valley(grid, 7, 8.0);
    let mut server = Simulation::new(state.clone(), Params::default(), preference).expect("server");
    let mut client = Simulation::new(state, Params::default(), preference).expect("client");
    for sim in [&mut server, &mut client] {
        sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    }
    let started = Instant::now();
    for _ in 0..warmup {
        server.advance(FRAME).expect("advance");
        client.advance(FRAME).expect("advance");
    }
    println!("{}: {side}², warm-up of {warmup} frames in {:.1} s", client.backend_description(), started.elapsed().as_secs_f64());
    let tiles_x = side.div_ceil(tile);
    let mut last = server.read_state().expect("state");
    let (mut write, mut step) = (Duration::ZERO, Duration::ZERO);
    let (mut writes, mut cells_written, mut tiles_written) = (0u32, 0usize, 0usize);
    for frame in 0..frames {
        server.advance(FRAME).expect("advance");
        let t = Instant::now();
        client.advance(FRAME).expect("advance");
        // The step's cost shows only when the frame's work is done: read the ledger's counters
        // (a few bytes that wait for the device) inside the timing.
        client.ledger().expect("ledger");
        step += t.elapsed();
        if frame % 2 != 0 {
            continue;
        }
        let now = server.read_state().expect("state");
        let mut cells = Vec::new();
        let mut sent = 0;
        for t in 0..(tiles_x * tiles_x) as usize {
            if sent == max_tiles {
                break;
            }
            let (x0, y0) = ((t as u32 % tiles_x) * tile, (t as u32 / tiles_x) * tile);
            let ys = y0..(y0 + tile).min(side);
            let xs = x0..(x0 + tile).min(side);
            let index = |x: u32, y: u32| (y * side + x) as usize;
            let changed = ys.clone().any(|y| xs.clone().any(|x| now.depth[index(x, y)] != last.depth[index(x, y)] || now.flow[index(x, y)].map(f32::to_bits) != last.flow[index(x, y)].map(f32::to_bits)));
            if !changed {
                continue;
            }
            sent += 1;
            for y in ys {
                for x in xs.clone() {
                    let i = index(x, y);
                    cells.push(CellOverwrite { cell: i as u32, depth: now.depth[i], flow: now.flow[i] });
                }
            }
        }
        last = now;
        let t = Instant::now();
        client.overwrite_cells(&cells).expect("overwrite");
        write += t.elapsed();
        writes += 1;
        cells_written += cells.len();
        tiles_written += sent;
    }
    let (mine, theirs) = (client.read_state().expect("state"), server.read_state().expect("state"));
    let off = mine.depth.iter().zip(&theirs.depth).map(|(&a, &b)| (a as i64 - b as i64).unsigned_abs()).max().unwrap_or(0) as f32 * DEPTH_QUANTUM;
    let ms = |d: Duration, n: u32| d.as_secs_f64() * 1000.0 / n.max(1) as f64;
    println!("| grid | backend | overwrite_cells ms/sync | client step ms/frame | tiles (cells) written per sync | client vs server at the end, m |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {side}² | {} | {:.3} | {:.2} | {:.1} ({:.0}) | {off:.6} |",
        client.backend_description(),
        ms(write, writes),
        ms(step, frames),
        tiles_written as f64 / writes.max(1) as f64,
        cells_written as f64 / writes.max(1) as f64,
    );
}
