//! Detail wave benchmark: what the detail layer costs per frame next to the flow's step, measured
//! in the same process on the same backend, interleaved. Prints Markdown rows for
//! docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example detail_bench -- [--backend gpu|cpu]
//! [--sizes 512,1024,2048] [--windows 512,2048] [--steps 1] [--frames 240] [--seconds 1]`
//!
//! A frame is 1/60 s: `--steps` substeps of the flow (the benchmark lake, eight neighbours,
//! steps of 1/60 s split evenly) and one frame of the detail layer at its default settings
//! (cells of a quarter flow cell, celerity cap 2 m/s: one detail substep) over a window of each
//! `--windows` side, centred on the grid. Three kinds of frame, timed in spans of `--frames`
//! frames (4 s of the flood by default) taken in rotation: the step alone, the layer alone
//! (frames of no flow substeps), and both, again and again until each has run about `--seconds`
//! (and at least five times). Each span starts from the lake loaded afresh: the flood spreads and
//! sleeping tiles wake as it goes, so the step and the step beside the layer must cover the same
//! frames of it. A row gives each kind's median span, and what the layer adds as the median (and
//! quartiles) of (both − step) / step over the rotations: spans taken side by side share the
//! GPU's clocks and the machine's load, which drift over seconds by as much as a small layer
//! costs.
//! Beside each kind's wall time per frame, the CPU time per frame of the thread that drives the
//! simulation (Linux): a frame whose CPU time is close to its wall time waited on the host, not on
//! the GPU.
//! `--node` measures instead the frame a `PipeWater` node runs, through `Simulation`: `advance`
//! of 1/60 s in the substeps stability asks for, with the snapshot it reads every frame, and with
//! the layer on the texels its `detail_texture` copies; the same spans, from `Simulation::reset`.
//! `PIPEWATER_GPU_DETAIL_WGSL=<file>` replaces `shaders/detail.wgsl` (shader experiments, in a
//! build with `--features shader-overrides`).

use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::{Backend, FramePlan};
use pipewater_core::detail::{DetailDriver, DetailParams};
use pipewater_core::pipes::StepConstants;
use pipewater_core::simulation::Simulation;
use pipewater_core::{scenarios, Error, Grid, Params, State};
use std::time::Instant;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn list(args: &[String], name: &str, default: &[u32]) -> Vec<u32> {
    arg::<String>(args, name).map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect()).unwrap_or_else(|| default.to_vec())
}

/// Frame length, s.
const FRAME: f32 = 1.0 / 60.0;

fn backend(kind: &str, state: &pipewater_core::State) -> Result<Box<dyn Backend>, String> {
    match kind {
        "cpu" => Ok(Box::new(CpuBackend::new(state))),
        #[cfg(feature = "gpu")]
        "gpu" => Ok(Box::new(pipewater_core::backend::gpu::GpuBackend::new(state).map_err(|e| e.to_string())?)),
        other => Err(format!("unknown backend {other} (gpu or cpu)")),
    }
}

/// What one loop runs each frame.
#[derive(Clone, Copy, PartialEq)]
enum Work {
    Step,
    Layer,
    Both,
}

/// CPU time the calling thread has run, ns (Linux's scheduler statistics; `None` elsewhere): what
/// recording and submitting the frames cost the thread that drives the simulation, without the
/// driver's own threads (a software adapter runs the GPU's work on those).
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// One span's figures: milliseconds of wall time per frame, and of the calling thread's CPU time.
#[derive(Clone, Copy)]
struct Timing {
    wall_ms: f64,
    cpu_ms: Option<f64>,
}

/// The median of `values` (not empty).
fn median(values: &mut [f64]) -> f64 {
    quantile(values, 0.5)
}

/// The `q` quantile of `values` (not empty), by the nearest rank.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// The spans of one kind of frame: their medians.
fn median_timing(spans: &[Timing]) -> Timing {
    let wall_ms = median(&mut spans.iter().map(|t| t.wall_ms).collect::<Vec<_>>());
    let cpu: Option<Vec<f64>> = spans.iter().map(|t| t.cpu_ms).collect();
    Timing { wall_ms, cpu_ms: cpu.map(|mut c| median(&mut c)) }
}

/// The CPU column of a table row: each kind's median CPU ms per frame, "–" where unknown.
fn cpu_column(timings: &[Timing]) -> String {
    timings.iter().map(|t| t.cpu_ms.map_or("–".to_string(), |ms| format!("{ms:.3}"))).collect::<Vec<_>>().join(", ")
}

/// What `with` adds to `without`, span by span of the same rotation: the median and quartiles
/// of (with − without) / without, formatted as a table cell.
fn adds_column(without: &[Timing], with: &[Timing]) -> String {
    let mut ratios: Vec<f64> = without.iter().zip(with).map(|(a, b)| 100.0 * (b.wall_ms - a.wall_ms) / a.wall_ms).collect();
    let (low, high) = (quantile(&mut ratios, 0.25), quantile(&mut ratios, 0.75));
    format!("{:+.1} % ({low:+.1} to {high:+.1})", median(&mut ratios))
}

/// Times spans of `frames` frames for each of `kinds` kinds of frame in rotation (a span of
/// kind 0, one of kind 1, …, then again) until each kind has run about `seconds`, and at least
/// five rotations: the GPU's clocks and the machine's other load drift over seconds, and spans
/// taken side by side drift together. Each span starts from `restart(kind)` (the lake's flood
/// spreads and its tiles wake and sleep as it goes, so spans that started later would step other
/// cells), the first of each kind after three frames of warm-up (pipelines, first allocations),
/// and is timed between two `sync`s, blocking reads that wait for the device. Returns each kind's
/// spans, in rotation order.
fn rotated_spans<S>(
    sim: &mut S,
    kinds: usize,
    frames: u64,
    seconds: f64,
    mut restart: impl FnMut(&mut S, usize) -> Result<(), String>,
    sync: impl Fn(&mut S) -> Result<(), String>,
    mut frame: impl FnMut(&mut S, usize) -> Result<(), String>,
) -> Result<Vec<Vec<Timing>>, String> {
    let mut spans = vec![Vec::new(); kinds];
    let mut wall = 0.0;
    while wall < seconds * kinds as f64 || spans[0].len() < 5 {
        for (kind, timings) in spans.iter_mut().enumerate() {
            restart(sim, kind)?;
            if timings.is_empty() {
                for _ in 0..3 {
                    frame(sim, kind)?;
                }
                restart(sim, kind)?;
            }
            sync(sim)?;
            let start = Instant::now();
            let cpu_start = thread_cpu_ns();
            for _ in 0..frames {
                frame(sim, kind)?;
            }
            sync(sim)?;
            let elapsed = start.elapsed().as_secs_f64();
            let cpu = cpu_start.zip(thread_cpu_ns()).map(|(a, b)| (b - a) as f64 * 1e-6 / frames as f64);
            wall += elapsed;
            timings.push(Timing { wall_ms: elapsed * 1e3 / frames as f64, cpu_ms: cpu });
        }
    }
    Ok(spans)
}

/// The backend table's kinds of frame, in rotation order.
const WORKS: [Work; 3] = [Work::Step, Work::Layer, Work::Both];

/// Spans of the step alone, the layer alone and both, in rotation, from `state`.
fn measure(sim: &mut Box<dyn Backend>, state: &State, driver: &mut DetailDriver, constants: StepConstants, steps: u32, frames: u64, seconds: f64) -> Result<Vec<Vec<Timing>>, String> {
    let frame = |sim: &mut Box<dyn Backend>, kind: usize| -> Result<(), String> {
        let work = WORKS[kind];
        if work != Work::Step {
            let detail = driver.frame(FRAME, constants.gravity).ok_or("no detail frame")?;
            sim.queue_detail(detail).map_err(|e| e.to_string())?;
        }
        let substeps = if work == Work::Layer { 0 } else { steps };
        sim.advance(&FramePlan { constants, substeps, forcing: &[] }).map_err(|e| e.to_string())
    };
    // Every span starts from the same water (and the layer at rest).
    let restart = |sim: &mut Box<dyn Backend>, _: usize| sim.load(state).map_err(|e| e.to_string());
    let sync = |sim: &mut Box<dyn Backend>| sim.read_counters().map(|_| ()).map_err(|e| e.to_string());
    rotated_spans(sim, WORKS.len(), frames, seconds, restart, sync, frame)
}

/// `--node`: spans of the frame a `PipeWater` node runs, through [`Simulation`], without the
/// layer and with it, in rotation: `advance(1/60 s)` in the substeps stability asks for (with the
/// snapshot it reads every frame), and with the layer on, the texels its `detail_texture` copies
/// (the wgpu backend's way; on Godot's RenderingDevice they stay on the GPU). Each span from
/// [`Simulation::reset`]. Returns the spans and the substeps a frame.
fn measure_node(sim: &mut Simulation, detail: DetailParams, frames: u64, seconds: f64) -> Result<(Vec<Vec<Timing>>, f64), String> {
    let (mut substeps, mut run) = (0u64, 0u64);
    let frame = |sim: &mut Simulation, kind: usize| -> Result<(), String> {
        let report = sim.advance(FRAME).map_err(|e| e.to_string())?;
        if kind == 1 {
            sim.detail_texels();
        }
        substeps += report.substeps as u64;
        run += 1;
        Ok(())
    };
    let restart = |sim: &mut Simulation, kind: usize| {
        sim.set_detail((kind == 1).then_some(detail)).map_err(|e| e.to_string())?;
        sim.reset().map_err(|e| e.to_string())
    };
    let sync = |sim: &mut Simulation| sim.ledger().map(|_| ()).map_err(|e| e.to_string());
    let spans = rotated_spans(sim, 2, frames, seconds, restart, sync, frame)?;
    Ok((spans, substeps as f64 / run as f64))
}

/// The `--node` table: the node's frame without the layer and with it, per grid and window.
fn node_frames(kind: &str, sizes: &[u32], windows: &[u32], frames: u64, seconds: f64) {
    println!("| flow grid | detail window | substeps a frame | frame without the layer ms | with the layer ms | layer adds: median (quartiles) | thread CPU ms/frame: without, with |");
    println!("|---|---|---|---|---|---|---|");
    for &side in sizes {
        let grid = match Grid::new(side, side, 1.0) {
            Ok(g) => g,
            Err(e) => {
                println!("| {side}² | – | {e} | | | | |");
                continue;
            }
        };
        let state = scenarios::benchmark_lake(grid);
        for &window in windows {
            let made = Simulation::with_backend(state.clone(), Params::default(), |s| backend(kind, s).map_err(Error::GpuUnavailable));
            let mut sim = match made {
                Ok(sim) => sim,
                Err(e) => {
                    println!("| {side}² | {window}² | failed: {e} | | | | |");
                    continue;
                }
            };
            let detail = DetailParams { window, ..DetailParams::default() };
            match measure_node(&mut sim, detail, frames, seconds) {
                Ok((spans, substeps)) => {
                    let medians = [median_timing(&spans[0]), median_timing(&spans[1])];
                    println!(
                        "| {side}² | {window}² | {substeps:.2} | {:.3} | {:.3} | {} | {} |",
                        medians[0].wall_ms,
                        medians[1].wall_ms,
                        adds_column(&spans[0], &spans[1]),
                        cpu_column(&medians)
                    );
                }
                Err(e) => println!("| {side}² | {window}² | failed: {e} | | | | |"),
            }
        }
    }
}

fn main() {
    #[cfg(feature = "gpu")]
    if let Err(why) = pipewater_core::backend::gpu::overrides::check_requested() {
        eprintln!("detail_bench: {why}");
        std::process::exit(2);
    }
    let args: Vec<String> = std::env::args().collect();
    let kind: String = arg(&args, "--backend").unwrap_or_else(|| "gpu".into());
    let sizes = list(&args, "--sizes", &[512, 1024, 2048]);
    let windows = list(&args, "--windows", &[512, 2048]);
    let steps: u32 = arg(&args, "--steps").unwrap_or(1);
    let frames: u64 = arg::<u64>(&args, "--frames").unwrap_or(240).max(1);
    let seconds: f64 = arg(&args, "--seconds").unwrap_or(1.0);
    if args.iter().any(|a| a == "--node") {
        node_frames(&kind, &sizes, &windows, frames, seconds);
        return;
    }
    let params = Params::default();
    let mut described = false;
    for &side in &sizes {
        let grid = match Grid::new(side, side, 1.0) {
            Ok(g) => g,
            Err(e) => {
                println!("| {side}² | – | – | {e} | | | | |");
                continue;
            }
        };
        let state = scenarios::benchmark_lake(grid);
        let constants = StepConstants::new(&params, side, side, 1.0, FRAME / steps as f32, [0; 4]);
        for &window in &windows {
            let detail = DetailParams { window, ..DetailParams::default() };
            let mut sim = match backend(&kind, &state) {
                Ok(b) => b,
                Err(e) => {
                    println!("| {side}² | {steps} | {window}² | failed: {e} | | | | |");
                    continue;
                }
            };
            if !described {
                println!("backend: {}\n", sim.description());
                println!("| flow grid | flow substeps | detail window | step ms/frame | layer ms/frame | step + layer ms/frame | layer adds: median (quartiles) | thread CPU ms/frame: step, layer, both |");
                println!("|---|---|---|---|---|---|---|---|");
                described = true;
            }
            let mut driver = match DetailDriver::new(detail, grid) {
                Ok(d) => d,
                Err(e) => {
                    println!("| {side}² | {steps} | {window}² | {e} | | | | |");
                    continue;
                }
            };
            if let Err(e) = sim.configure_detail(Some(driver.layout())) {
                println!("| {side}² | {steps} | {window}² | detail layer refused: {e} | | | | |");
                continue;
            }
            match measure(&mut sim, &state, &mut driver, constants, steps, frames, seconds) {
                Ok(spans) => {
                    let medians = [median_timing(&spans[0]), median_timing(&spans[1]), median_timing(&spans[2])];
                    let [step, layer, both] = medians.map(|t| t.wall_ms);
                    println!("| {side}² | {steps} | {window}² | {step:.3} | {layer:.3} | {both:.3} | {} | {} |", adds_column(&spans[0], &spans[2]), cpu_column(&medians));
                }
                Err(e) => println!("| {side}² | {steps} | {window}² | failed: {e} | | | | |"),
            }
        }
    }
}
