//! Save benchmark: how large a save is and how long the game's thread is held while it saves and
//! loads, blocking (`save_state` / `restore_state`) beside asynchronous (`begin_save` polled once
//! a frame / `begin_restore` + `poll_restore`), for lakes covering 5 %, 50 % and 100 % of a grid.
//! Prints Markdown rows for docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example save_bench -- [--backend cpu|gpu]
//! [--sizes 2048,4096] [--wet 5,50,100] [--moving] [--part-kib 8192]`
//!
//! `--part-kib`: what each `poll_restore` of the asynchronous load applies (default 8 MiB); the
//! load column gives the longest hold, the number of parts and the median part's hold.
//!
//! The ground is smooth hills (about 60 m of relief at 1 m cells, f32 heights as a generated or
//! sculpted terrain has them); the lake fills the lowest `wet` % of the cells to one level, at
//! rest (`--moving`: with a current of (0.4, 0.2) m/s, so every wet pipe keeps a value).
//! While a save or load runs the simulation keeps advancing frames of 1/60 s; the hold per frame
//! is the time the save's or load's own calls take on the caller's thread in that frame (the
//! frame's step is not counted: it is the same with or without a save). "Dense" is what format 3
//! wrote for the same grid: 24 bytes a cell.

use pipewater_core::{BackendPreference, Grid, Params, Simulation, State};
use std::time::{Duration, Instant};

const FRAME: f32 = 1.0 / 60.0;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn list(args: &[String], name: &str, default: &str) -> Vec<u32> {
    arg(args, name).unwrap_or_else(|| default.into()).split(',').map(|v| v.trim().parse().expect("a whole number")).collect()
}

/// Smooth hills: long waves and a tilt, as a generated terrain has them.
fn hills(side: u32) -> Vec<f32> {
    let n = side as usize;
    (0..n * n)
        .map(|i| {
            let (x, y) = ((i % n) as f32, (i / n) as f32);
            20.0 * (x / 311.0).sin() * (y / 257.0).cos() + 8.0 * (x / 57.0 + y / 91.0).sin() + 3.0 * (x / 23.0).cos() * (y / 31.0).sin() + 0.004 * x
        })
        .collect()
}

/// A simulation of `side`² cells with the lowest `wet` % of them under one level.
fn lake(side: u32, wet: u32, moving: bool, backend: BackendPreference) -> Simulation {
    let grid = Grid::new(side, side, 1.0).unwrap();
    let terrain = hills(side);
    let mut sorted = terrain.clone();
    sorted.sort_by(f32::total_cmp);
    let level = if wet >= 100 { sorted[sorted.len() - 1] + 0.5 } else { sorted[(sorted.len() as u64 * wet as u64 / 100) as usize] };
    let mut state = State::with_terrain(grid, terrain).unwrap();
    state.fill_to_level(level).unwrap();
    let params = Params::default();
    if moving {
        state.set_velocity(&params, |_, _| [0.4, 0.2]);
    }
    Simulation::new(state, params, backend).unwrap()
}

/// What one asynchronous run measured.
struct Async {
    /// Longest time the save's or load's calls held the caller in one frame.
    longest_hold: Duration,
    /// Which call it was.
    longest_at: &'static str,
    /// From the first call to the result.
    total: Duration,
    frames: u32,
    /// Each poll that applied a part of a load: wall time.
    parts: Vec<Duration>,
    /// The same polls' CPU time on the calling thread.
    parts_cpu: Vec<Duration>,
}

impl Async {
    fn new() -> Self {
        Async { longest_hold: Duration::ZERO, longest_at: "", total: Duration::ZERO, frames: 0, parts: Vec::new(), parts_cpu: Vec::new() }
    }

    fn held(&mut self, time: Duration, at: &'static str) {
        if time > self.longest_hold {
            (self.longest_hold, self.longest_at) = (time, at);
        }
    }
}

/// CPU time the calling thread has used: what a call costs the game's thread, whatever else the
/// machine runs (wall time also counts the time other processes took the core).
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn async_save(sim: &mut Simulation) -> (Vec<u8>, Async) {
    let mut m = Async::new();
    let start = Instant::now();
    let (job, begin) = timed(|| sim.begin_save().unwrap());
    let mut job = job;
    m.held(begin, "begin_save");
    loop {
        sim.advance(FRAME).unwrap();
        m.frames += 1;
        let (polled, poll) = timed(|| job.poll());
        m.held(poll, "poll");
        if let Some(bytes) = polled {
            m.total = start.elapsed();
            return (bytes.unwrap(), m);
        }
    }
}

fn async_load(sim: &mut Simulation, bytes: Vec<u8>, part_bytes: Option<u64>) -> Async {
    let mut m = Async::new();
    let start = Instant::now();
    let (job, begin) = timed(|| sim.begin_restore(bytes).unwrap());
    let mut job = job;
    if let Some(part_bytes) = part_bytes {
        job.set_bytes_per_poll(part_bytes).unwrap();
    }
    m.held(begin, "begin_restore");
    let mut longest_step = Duration::ZERO;
    loop {
        let (_, step) = timed(|| sim.advance(FRAME).unwrap());
        longest_step = longest_step.max(step);
        m.frames += 1;
        let cpu_before = thread_cpu_time();
        let (outcome, poll) = timed(|| sim.poll_restore(&mut job));
        let poll_cpu = thread_cpu_time() - cpu_before;
        let at = match (&outcome, job.last_poll_bytes() > 0) {
            (Some(_), _) => "poll_restore, landing",
            (None, true) => "poll_restore, a part",
            (None, false) => "poll_restore",
        };
        if job.last_poll_bytes() > 0 {
            m.parts.push(poll);
            m.parts_cpu.push(poll_cpu);
        }
        m.held(poll, at);
        if let Some(outcome) = outcome {
            outcome.unwrap();
            m.total = start.elapsed();
            if std::env::var_os("SAVE_BENCH_PARTS").is_some() {
                eprintln!("longest advance while loading: {} ms", ms(longest_step));
            }
            return m;
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let backend = match arg(&args, "--backend").as_deref() {
        Some("gpu") => BackendPreference::Gpu,
        _ => BackendPreference::Cpu,
    };
    let moving = args.iter().any(|a| a == "--moving");
    let sizes = list(&args, "--sizes", "2048,4096");
    let wets = list(&args, "--wet", "5,50,100");
    // Bytes of fields a poll applies while loading (`RestoreJob::set_bytes_per_poll`; default 8 MiB).
    let part_bytes = arg(&args, "--part-kib").map(|k| k.parse::<u64>().expect("KiB") << 10);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("save_bench: backend {backend:?}, {threads} hardware threads, water {}", if moving { "moving" } else { "at rest" });
    println!();
    println!("| grid | wet cells | wet tiles | dense (v3) | written (v4) | ratio | save_state holds | begin_save: longest hold a frame | total, frames | restore_state holds | begin_restore: longest hold a frame | total, frames |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &side in &sizes {
        for &wet in &wets {
            let mut sim = lake(side, wet, moving, backend);
            if wet == wets[0] {
                eprintln!("{}", sim.backend_description());
            }
            sim.advance(FRAME).unwrap();
            let state = sim.read_state().unwrap();
            let wet_cells = state.depth.iter().filter(|&&d| d > 0).count() as f64 / state.depth.len() as f64;
            let tiles = pipewater_core::save_tiles::wet_tiles(&state, pipewater_core::save_tiles::SAVE_TILE);
            let wet_tiles = tiles.iter().filter(|&&w| w).count() as f64 / tiles.len() as f64;
            drop((state, tiles));
            let dense = 24 * (side as u64 * side as u64);
            let (blocking, save_hold) = timed(|| sim.save_state().unwrap());
            let (bytes, saving) = async_save(&mut sim);
            assert_eq!(bytes.len(), blocking.len(), "both saves write the same format");
            drop(blocking);
            let (_, restore_hold) = timed(|| sim.restore_state(&bytes).unwrap());
            let loading = async_load(&mut sim, bytes.clone(), part_bytes);
            if std::env::var_os("SAVE_BENCH_PARTS").is_some() {
                let tenths = |v: &[Duration]| v.iter().map(|d| (d.as_secs_f64() * 1e4).round() / 10.0).collect::<Vec<_>>();
                eprintln!("each part's hold, ms: {:?}", tenths(&loading.parts));
                eprintln!("each part's CPU time on the calling thread, ms: {:?}", tenths(&loading.parts_cpu));
            }
            let mut parts = loading.parts.clone();
            parts.sort();
            let median_part = parts.get(parts.len() / 2).copied().unwrap_or_default();
            let longest_part_cpu = loading.parts_cpu.iter().max().copied().unwrap_or_default();
            println!(
                "| {side}² | {:.1} % | {:.1} % | {:.1} MB | {:.2} MB | 1/{:.0} | {} ms | {} ms ({}) | {} ms, {} | {} ms | {} ms ({}); {} parts, median {} ms, CPU time at most {} ms | {} ms, {} |",
                100.0 * wet_cells,
                100.0 * wet_tiles,
                dense as f64 / 1e6,
                bytes.len() as f64 / 1e6,
                dense as f64 / bytes.len() as f64,
                ms(save_hold),
                ms(saving.longest_hold),
                saving.longest_at,
                ms(saving.total),
                saving.frames,
                ms(restore_hold),
                ms(loading.longest_hold),
                loading.longest_at,
                parts.len(),
                ms(median_part),
                ms(longest_part_cpu),
                ms(loading.total),
                loading.frames
            );
        }
    }
}
