//! What the recovery reads ([`pipewater_core::backend::recovery`]) cost a game's frame on wgpu:
//! the host time of each frame (one step, one query, as a game in tile mode does) over two
//! recovery intervals, with the frames around each recovery read named. The read itself is an
//! asynchronous copy; what can show is the frame that takes the arrived copy into host memory.
//!
//! `cargo run --release -p pipewater-core --example recovery_cost -- [--sizes 1024,2048,4096]`

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("recovery_cost needs the `gpu` feature");
}

#[cfg(feature = "gpu")]
fn main() {
    use pipewater_core::backend::recovery::recovery_interval_frames;
    use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation};
    use std::time::Instant;

    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<u32> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| vec![1024, 2048]);
    println!("| grid | interval (frames) | median frame (ms) | p99 (ms) | slowest (ms), at frame | frames past 3× median |");
    println!("|---|---|---|---|---|---|");
    for side in sizes {
        let grid = Grid::new(side, side, 1.0).expect("grid");
        let mut sim = Simulation::new(scenarios::dam_break(grid, side / 3, 2.0, 0.5), Params::default(), BackendPreference::Gpu).expect("a GPU simulation");
        sim.want_full_snapshots(false);
        let interval = recovery_interval_frames(grid.cell_count());
        let frames = 2 * interval + 8;
        let mut times = Vec::with_capacity(frames as usize);
        for _ in 0..frames {
            let start = Instant::now();
            sim.run_steps(0.02, 1).expect("step");
            let _ = sim.surface_height(0.0, 0.0);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        // The first frames build pipelines.
        let settled = &times[8..];
        let mut sorted = settled.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let p99 = sorted[sorted.len() * 99 / 100];
        let (slowest_at, slowest) = settled.iter().enumerate().fold((0, 0.0f64), |best, (i, &t)| if t > best.1 { (i + 8, t) } else { best });
        let slow: Vec<String> = settled.iter().enumerate().filter(|(_, &t)| t > 3.0 * median).map(|(i, t)| format!("{}: {t:.1}", i + 8)).collect();
        println!("| {side}² | {interval} | {median:.2} | {p99:.2} | {slowest:.1} at {slowest_at} | {} |", if slow.is_empty() { "none".into() } else { slow.join(", ") });
    }
}
