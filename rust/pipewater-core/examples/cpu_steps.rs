//! Runs a fixed number of CPU steps on the benchmark lake, for instruction counts that do not
//! depend on what else the machine is doing:
//!
//! `RAYON_NUM_THREADS=1 valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='*CpuBackend*step*' target/release/examples/cpu_steps -- [--size 256]
//! [--steps 16] [--no-advection] [--current U] [--four | --triangular] [--no-sleep]`: `--no-sleep` steps every
//! cell (sleeping tiles are on otherwise, as in a simulation).
//!
//! Prints the wall time too (meaningful on an idle machine only).

use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::{Backend, FramePlan};
use pipewater_core::pipes::StepConstants;
use pipewater_core::{scenarios, Grid, NeighbourMode, Params};
use std::time::Instant;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size").unwrap_or(256);
    let steps: u32 = arg(&args, "--steps").unwrap_or(16);
    let current: f32 = arg(&args, "--current").unwrap_or(0.0);
    let neighbours = if args.iter().any(|a| a == "--four") {
        NeighbourMode::Four
    } else if args.iter().any(|a| a == "--triangular") {
        NeighbourMode::Triangular
    } else {
        NeighbourMode::Eight
    };
    let params = Params { neighbours, momentum_advection: !args.iter().any(|a| a == "--no-advection"), ..Params::default() };
    let grid = Grid::new(side, side, 1.0).expect("grid");
    let mut state = scenarios::benchmark_lake(grid);
    if current != 0.0 {
        state.set_velocity(&params, |_, _| [current, 0.5 * current]);
    }
    let mut cpu = CpuBackend::new(&state);
    cpu.set_sleeping(!args.iter().any(|a| a == "--no-sleep"));
    let constants = StepConstants::new(&params, side, side, 1.0, 0.02, [0; 4]);
    // One frame to set the water moving, then the measured ones.
    cpu.advance(&FramePlan { constants, substeps: 8, forcing: &[] }).expect("warm-up");
    let start = Instant::now();
    cpu.advance(&FramePlan { constants, substeps: steps, forcing: &[] }).expect("advance");
    let seconds = start.elapsed().as_secs_f64();
    let cells = side as f64 * side as f64 * steps as f64;
    println!(
        "{side}², {steps} steps, {:?} neighbours, advection {}: {:.2} ms/step, {:.1} M cell-steps/s, total water {} quanta",
        neighbours,
        params.momentum_advection,
        seconds * 1e3 / steps as f64,
        cells / seconds / 1e6,
        cpu.state().total_quanta()
    );
}
