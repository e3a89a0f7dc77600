//! Detail wave benchmark: what the detail layer costs per frame next to the flow's step, measured
//! in the same process on the same backend, interleaved. Prints Markdown rows for
//! docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example detail_bench -- [--backend gpu|cpu]
//! [--sizes 512,1024,2048] [--windows 512,2048] [--steps 1] [--seconds 2] [--rounds 2]`
//!
//! A frame is 1/60 s: `--steps` substeps of the flow (the benchmark lake, eight neighbours,
//! steps of 1/60 s split evenly) and one frame of the detail layer at its default settings
//! (cells of a quarter flow cell, celerity cap 2 m/s: one detail substep) over a window of each
//! `--windows` side, centred on the grid. Three loops, each repeated `--rounds` times in turn:
//! the step alone, the layer alone (frames of no flow substeps), and both. Each loop runs frames
//! until `--seconds` have passed, the device synchronised at both ends (a blocking ledger read).
//! `PIPEWATER_GPU_DETAIL_WGSL=<file>` replaces `shaders/detail.wgsl` (shader experiments).

use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::{Backend, FramePlan};
use pipewater_core::detail::{DetailDriver, DetailParams};
use pipewater_core::pipes::StepConstants;
use pipewater_core::{scenarios, Grid, Params};
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

/// Milliseconds per frame of `work`, over at least `seconds`.
fn measure(sim: &mut dyn Backend, driver: &mut DetailDriver, constants: StepConstants, steps: u32, work: Work, seconds: f64) -> Result<f64, String> {
    let substeps = if work == Work::Layer { 0 } else { steps };
    let plan = FramePlan { constants, substeps, forcing: &[] };
    let mut frame = |sim: &mut dyn Backend| -> Result<(), String> {
        if work != Work::Step {
            let detail = driver.frame(FRAME, constants.gravity).ok_or("no detail frame")?;
            sim.queue_detail(detail).map_err(|e| e.to_string())?;
        }
        sim.advance(&plan).map_err(|e| e.to_string())
    };
    // Warm up: pipelines, first allocations.
    for _ in 0..3 {
        frame(sim)?;
    }
    sim.read_counters().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut frames = 0u64;
    while start.elapsed().as_secs_f64() < seconds || frames < 5 {
        frame(sim)?;
        frames += 1;
    }
    sim.read_counters().map_err(|e| e.to_string())?;
    Ok(start.elapsed().as_secs_f64() * 1e3 / frames as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind: String = arg(&args, "--backend").unwrap_or_else(|| "gpu".into());
    let sizes = list(&args, "--sizes", &[512, 1024, 2048]);
    let windows = list(&args, "--windows", &[512, 2048]);
    let steps: u32 = arg(&args, "--steps").unwrap_or(1);
    let seconds: f64 = arg(&args, "--seconds").unwrap_or(2.0);
    let rounds: u32 = arg(&args, "--rounds").unwrap_or(2);
    let params = Params::default();
    let mut described = false;
    for &side in &sizes {
        let grid = match Grid::new(side, side, 1.0) {
            Ok(g) => g,
            Err(e) => {
                println!("| {side}² | – | – | {e} | | | |");
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
                    println!("| {side}² | {steps} | {window}² | failed: {e} | | | |");
                    continue;
                }
            };
            if !described {
                println!("backend: {}\n", sim.description());
                println!("| flow grid | flow substeps | detail window | step ms/frame | layer ms/frame | step + layer ms/frame | layer adds |");
                println!("|---|---|---|---|---|---|---|");
                described = true;
            }
            let mut driver = match DetailDriver::new(detail, grid) {
                Ok(d) => d,
                Err(e) => {
                    println!("| {side}² | {steps} | {window}² | {e} | | | |");
                    continue;
                }
            };
            if let Err(e) = sim.configure_detail(Some(driver.layout())) {
                println!("| {side}² | {steps} | {window}² | detail layer refused: {e} | | | |");
                continue;
            }
            let mut best = [f64::INFINITY; 3];
            let mut failed = None;
            for _ in 0..rounds {
                for (k, work) in [Work::Step, Work::Layer, Work::Both].into_iter().enumerate() {
                    match measure(sim.as_mut(), &mut driver, constants, steps, work, seconds) {
                        Ok(ms) => best[k] = best[k].min(ms),
                        Err(e) => failed = Some(e),
                    }
                }
            }
            if let Some(e) = failed {
                println!("| {side}² | {steps} | {window}² | failed: {e} | | | |");
                continue;
            }
            let [step, layer, both] = best;
            println!("| {side}² | {steps} | {window}² | {step:.3} | {layer:.3} | {both:.3} | {:+.1} % |", 100.0 * (both - step) / step);
        }
    }
}
