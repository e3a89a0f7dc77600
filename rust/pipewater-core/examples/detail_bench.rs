//! Detail wave benchmark: what the detail layer costs per frame next to the flow's step, measured
//! in the same process on the same backend, interleaved. Prints Markdown rows for
//! docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example detail_bench -- [--backend gpu|cpu]
//! [--sizes 512,1024,2048] [--windows 512,2048] [--steps 1] [--frames 240] [--seconds 1]
//! [--rounds 2]`
//!
//! A frame is 1/60 s: `--steps` substeps of the flow (the benchmark lake, eight neighbours,
//! steps of 1/60 s split evenly) and one frame of the detail layer at its default settings
//! (cells of a quarter flow cell, celerity cap 2 m/s: one detail substep) over a window of each
//! `--windows` side, centred on the grid. Three loops, each repeated `--rounds` times in turn:
//! the step alone, the layer alone (frames of no flow substeps), and both. Each loop runs spans of
//! `--frames` frames (4 s of the flood by default) until they add up to `--seconds`, each span
//! from the lake loaded afresh and timed between two device synchronisations (blocking ledger
//! reads): the flood spreads and sleeping tiles wake as it goes, so the step and the step beside
//! the layer must cover the same frames of it.
//! Beside each loop's wall time per frame, the CPU time per frame of the thread that drives the
//! simulation (Linux): a frame whose CPU time is close to its wall time waited on the host, not on
//! the GPU.
//! `--node` measures instead the frame a `PipeWater` node runs, through `Simulation`: `advance`
//! of 1/60 s in the substeps stability asks for, with the snapshot it reads every frame, and with
//! the layer on the texels its `detail_texture` copies; the same spans, from `Simulation::reset`.
//! `PIPEWATER_GPU_DETAIL_WGSL=<file>` replaces `shaders/detail.wgsl` (shader experiments).

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

/// One loop's figures: milliseconds of wall time per frame, and of the calling thread's CPU time.
#[derive(Clone, Copy)]
struct Timing {
    wall_ms: f64,
    cpu_ms: Option<f64>,
}

impl Timing {
    /// No loop yet: slower than any.
    const NONE: Timing = Timing { wall_ms: f64::INFINITY, cpu_ms: None };

    /// The loop of the two that ran faster, with its own CPU time.
    fn faster(self, other: Timing) -> Timing {
        if other.wall_ms < self.wall_ms {
            other
        } else {
            self
        }
    }
}

/// The CPU column of a table row: each loop's CPU ms per frame, "–" where unknown.
fn cpu_column(timings: &[Timing]) -> String {
    timings.iter().map(|t| t.cpu_ms.map_or("–".to_string(), |ms| format!("{ms:.3}"))).collect::<Vec<_>>().join(", ")
}

/// Milliseconds per frame of `work`, over spans of `frames` frames from `state`, as many as fill
/// `seconds`.
fn measure(sim: &mut Box<dyn Backend>, state: &State, driver: &mut DetailDriver, constants: StepConstants, steps: u32, work: Work, frames: u64, seconds: f64) -> Result<Timing, String> {
    let substeps = if work == Work::Layer { 0 } else { steps };
    let plan = FramePlan { constants, substeps, forcing: &[] };
    let frame = |sim: &mut Box<dyn Backend>| -> Result<(), String> {
        if work != Work::Step {
            let detail = driver.frame(FRAME, constants.gravity).ok_or("no detail frame")?;
            sim.queue_detail(detail).map_err(|e| e.to_string())?;
        }
        sim.advance(&plan).map_err(|e| e.to_string())
    };
    // Every span starts from the same water (and the layer at rest).
    let restart = |sim: &mut Box<dyn Backend>| sim.load(state).map_err(|e| e.to_string());
    let sync = |sim: &mut Box<dyn Backend>| sim.read_counters().map(|_| ()).map_err(|e| e.to_string());
    timed_spans(sim, frames, seconds, restart, sync, frame)
}

/// Times spans of `frames` frames of `frame` until they add up to `seconds`: each span starts
/// from `restart` (the lake's flood spreads and its tiles wake and sleep as it goes, so spans that
/// started later would step other cells), the first after three frames of warm-up (pipelines,
/// first allocations), and is timed between two `sync`s, blocking reads that wait for the device.
fn timed_spans<S>(
    sim: &mut S,
    frames: u64,
    seconds: f64,
    restart: impl Fn(&mut S) -> Result<(), String>,
    sync: impl Fn(&mut S) -> Result<(), String>,
    mut frame: impl FnMut(&mut S) -> Result<(), String>,
) -> Result<Timing, String> {
    let (mut wall, mut cpu, mut spans) = (0.0, Some(0u64), 0u64);
    while wall < seconds || spans == 0 {
        restart(sim)?;
        if spans == 0 {
            for _ in 0..3 {
                frame(sim)?;
            }
            restart(sim)?;
        }
        sync(sim)?;
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        for _ in 0..frames {
            frame(sim)?;
        }
        sync(sim)?;
        wall += start.elapsed().as_secs_f64();
        cpu = cpu.zip(cpu_start.zip(thread_cpu_ns())).map(|(total, (a, b))| total + (b - a));
        spans += 1;
    }
    let counted = (spans * frames) as f64;
    Ok(Timing { wall_ms: wall * 1e3 / counted, cpu_ms: cpu.map(|ns| ns as f64 * 1e-6 / counted) })
}

/// `--node`: milliseconds per frame of the frame a `PipeWater` node runs, through [`Simulation`]:
/// `advance(1/60 s)` in the substeps stability asks for (with the snapshot it reads every frame),
/// and with the layer on, the texels its `detail_texture` copies (the wgpu backend's way; on
/// Godot's RenderingDevice they stay on the GPU). Spans as in [`measure`], from
/// [`Simulation::reset`]. Returns the timing and the substeps a frame.
fn measure_node(sim: &mut Simulation, layer: bool, frames: u64, seconds: f64) -> Result<(Timing, f64), String> {
    let (mut substeps, mut run) = (0u64, 0u64);
    let frame = |sim: &mut Simulation| -> Result<(), String> {
        let report = sim.advance(FRAME).map_err(|e| e.to_string())?;
        if layer {
            sim.detail_texels();
        }
        substeps += report.substeps as u64;
        run += 1;
        Ok(())
    };
    let restart = |sim: &mut Simulation| sim.reset().map_err(|e| e.to_string());
    let sync = |sim: &mut Simulation| sim.ledger().map(|_| ()).map_err(|e| e.to_string());
    let timing = timed_spans(sim, frames, seconds, restart, sync, frame)?;
    Ok((timing, substeps as f64 / run as f64))
}

/// The `--node` table: the node's frame without the layer and with it, per grid and window.
fn node_frames(kind: &str, sizes: &[u32], windows: &[u32], frames: u64, seconds: f64, rounds: u32) {
    println!("| flow grid | detail window | substeps a frame | frame without the layer ms | with the layer ms | layer adds | thread CPU ms/frame: without, with |");
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
            let mut best = [Timing::NONE; 2];
            let mut substeps = 0.0;
            let mut failed = None;
            for _ in 0..rounds {
                for (k, layer) in [false, true].into_iter().enumerate() {
                    let measured = sim
                        .set_detail(layer.then_some(detail))
                        .map_err(|e| e.to_string())
                        .and_then(|_| measure_node(&mut sim, layer, frames, seconds));
                    match measured {
                        Ok((t, s)) => {
                            substeps = s;
                            best[k] = best[k].faster(t);
                        }
                        Err(e) => failed = Some(e),
                    }
                }
            }
            if let Some(e) = failed {
                println!("| {side}² | {window}² | failed: {e} | | | | |");
                continue;
            }
            let [without, with] = best.map(|t| t.wall_ms);
            println!("| {side}² | {window}² | {substeps:.2} | {without:.3} | {with:.3} | {:+.1} % | {} |", 100.0 * (with - without) / without, cpu_column(&best));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind: String = arg(&args, "--backend").unwrap_or_else(|| "gpu".into());
    let sizes = list(&args, "--sizes", &[512, 1024, 2048]);
    let windows = list(&args, "--windows", &[512, 2048]);
    let steps: u32 = arg(&args, "--steps").unwrap_or(1);
    let frames: u64 = arg::<u64>(&args, "--frames").unwrap_or(240).max(1);
    let seconds: f64 = arg(&args, "--seconds").unwrap_or(1.0);
    let rounds: u32 = arg(&args, "--rounds").unwrap_or(2);
    if args.iter().any(|a| a == "--node") {
        node_frames(&kind, &sizes, &windows, frames, seconds, rounds);
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
                println!("| flow grid | flow substeps | detail window | step ms/frame | layer ms/frame | step + layer ms/frame | layer adds | thread CPU ms/frame: step, layer, both |");
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
            let mut best = [Timing::NONE; 3];
            let mut failed = None;
            for _ in 0..rounds {
                for (k, work) in [Work::Step, Work::Layer, Work::Both].into_iter().enumerate() {
                    match measure(&mut sim, &state, &mut driver, constants, steps, work, frames, seconds) {
                        Ok(t) => best[k] = best[k].faster(t),
                        Err(e) => failed = Some(e),
                    }
                }
            }
            if let Some(e) = failed {
                println!("| {side}² | {steps} | {window}² | failed: {e} | | | | |");
                continue;
            }
            let [step, layer, both] = best.map(|t| t.wall_ms);
            println!("| {side}² | {steps} | {window}² | {step:.3} | {layer:.3} | {both:.3} | {:+.1} % | {} |", 100.0 * (both - step) / step, cpu_column(&best));
        }
    }
}
