//! `cargo xtask bench`: cell-steps per second of each backend across grid sizes.
//!
//! Each measurement loads a rough lake with a dam-break column (so every pipe carries flow and the
//! limiter works), runs a warm-up frame, then times frames of fixed steps until at least
//! `--seconds` have passed, waiting for the device at the end so GPU time is counted in full.
//! Results print as a table with the hardware; paste them into docs/BENCHMARKS.md. Sleeping tiles
//! are on, as in games (the lake's still parts are not stepped, and cell-steps count every cell
//! of the grid); `--no-sleep` steps every cell.

use pipewater_core::{scenarios, BackendKind, BackendPreference, Grid, NeighbourMode, Params, Simulation};
use std::time::Instant;

struct Options {
    backends: Vec<BackendPreference>,
    sizes: Vec<u32>,
    modes: Vec<NeighbourMode>,
    steps_per_frame: u32,
    seconds: f64,
    momentum_advection: bool,
    sleeping: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        backends: vec![BackendPreference::Cpu, BackendPreference::Gpu],
        sizes: Vec::new(),
        modes: vec![NeighbourMode::Four, NeighbourMode::Eight],
        steps_per_frame: 8,
        seconds: 2.0,
        momentum_advection: true,
        sleeping: true,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--backend" => {
                options.backends = match value()?.as_str() {
                    "cpu" => vec![BackendPreference::Cpu],
                    "gpu" => vec![BackendPreference::Gpu],
                    "all" => vec![BackendPreference::Cpu, BackendPreference::Gpu],
                    other => return Err(format!("--backend {other}: expected cpu, gpu or all")),
                }
            }
            "--sizes" => {
                options.sizes = value()?.split(',').map(|s| s.trim().parse::<u32>().map_err(|e| format!("--sizes {s}: {e}"))).collect::<Result<_, _>>()?
            }
            "--modes" => {
                options.modes = value()?
                    .split(',')
                    .map(|m| NeighbourMode::from_name(m).map_err(|e| format!("--modes: {e} (4, 8, 6 or a list such as 4,8,6)")))
                    .collect::<Result<_, _>>()?
            }
            "--steps" => options.steps_per_frame = value()?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--seconds" => options.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--no-advection" => options.momentum_advection = false,
            "--no-sleep" => options.sleeping = false,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// Times one backend, size and mode; returns (cell-steps per second, ns per step, description).
fn measure(preference: BackendPreference, side: u32, params: Params, options: &Options) -> Result<(f64, f64, String), String> {
    let (steps_per_frame, seconds) = (options.steps_per_frame, options.seconds);
    let grid = Grid::new(side, side, 1.0).map_err(|e| e.to_string())?;
    let state = scenarios::benchmark_lake(grid);
    let mut sim = Simulation::new(state, params, preference).map_err(|e| e.to_string())?;
    sim.set_sleeping(options.sleeping);
    let dt = 0.02;
    sim.run_steps(dt, steps_per_frame).map_err(|e| e.to_string())?;
    sim.ledger().map_err(|e| e.to_string())?; // waits for the device
    let start = Instant::now();
    let mut steps = 0u64;
    while start.elapsed().as_secs_f64() < seconds || steps < 2 * steps_per_frame as u64 {
        sim.run_steps(dt, steps_per_frame).map_err(|e| e.to_string())?;
        steps += steps_per_frame as u64;
        if steps % (steps_per_frame as u64 * 16) == 0 {
            sim.ledger().map_err(|e| e.to_string())?;
        }
    }
    sim.ledger().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed().as_secs_f64();
    let rate = steps as f64 * grid.cell_count() as f64 / elapsed;
    Ok((rate, elapsed * 1e9 / steps as f64, sim.backend_description()))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| info.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    println!("host: {} ({} logical cores)", cpu_model(), std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("| backend | grid | neighbours | cell-steps/s | ms/step | device |");
    println!("|---|---|---|---|---|---|");
    for &preference in &options.backends {
        let kind = if preference == BackendPreference::Cpu { BackendKind::Cpu } else { BackendKind::Gpu };
        let sizes = if options.sizes.is_empty() {
            match kind {
                BackendKind::Cpu => vec![256, 1024, 2048],
                BackendKind::Gpu | BackendKind::EngineGpu => vec![512, 1024, 2048, 4096],
            }
        } else {
            options.sizes.clone()
        };
        for &side in &sizes {
            for &mode in &options.modes {
                match measure(preference, side, Params { neighbours: mode, momentum_advection: options.momentum_advection, ..Params::default() }, &options) {
                    Ok((rate, ns, device)) => println!(
                        "| {kind:?} | {side}² | {} | {:.3} G | {:.3} | {device} |",
                        match mode {
                            NeighbourMode::Four => 4,
                            NeighbourMode::Eight => 8,
                            NeighbourMode::Triangular => 6,
                        },
                        rate / 1e9,
                        ns / 1e6
                    ),
                    Err(why) => {
                        println!("| {kind:?} | {side}² | - | - | - | unavailable: {why} |");
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}
