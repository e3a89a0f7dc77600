//! Inputs for the CUDA twin of the step kernel (`docs/tools/step_columns_twin.cu`): the benchmark
//! lake with every wet cell moving, as raw little-endian files in DIR (`constants.bin`, the
//! 144-byte `StepConstants`; `terrain.bin`, `depth.bin`, `flow.bin`), and with STEPS > 0 the CPU
//! backend's depth and pipes after that many steps (`depth_ref.bin`, `flow_ref.bin`).
//!
//! `cargo run --release -p pipewater-core --example twin_input -- SIDE ADVECTION(0|1) STEPS DIR`
use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::{Backend, FramePlan};
use pipewater_core::pipes::StepConstants;
use pipewater_core::{scenarios, Grid, Params};

fn write(dir: &str, name: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(format!("{dir}/{name}"), bytes).map_err(|e| format!("{dir}/{name}: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    let [side, advection, steps, dir] = args else {
        return Err("usage: twin_input SIDE ADVECTION(0|1) STEPS DIR".into());
    };
    let side: u32 = side.parse().map_err(|_| format!("SIDE must be a grid side in cells, got {side}"))?;
    let steps: u32 = steps.parse().map_err(|_| format!("STEPS must be a count, got {steps}"))?;
    let params = Params { momentum_advection: advection == "1", ..Params::default() };
    let grid = Grid::new(side, side, 1.0).map_err(|e| e.to_string())?;
    let mut state = scenarios::benchmark_lake(grid);
    state.set_velocity(&params, |_, _| [1.0, 0.5]);
    let constants = StepConstants::new(&params, side, side, 1.0, 0.02, [0; 4]);
    write(dir, "constants.bin", bytemuck::bytes_of(&constants))?;
    write(dir, "terrain.bin", bytemuck::cast_slice(&state.terrain))?;
    write(dir, "depth.bin", bytemuck::cast_slice(&state.depth))?;
    write(dir, "flow.bin", bytemuck::cast_slice(&state.flow))?;
    if steps > 0 {
        let mut cpu = CpuBackend::new(&state);
        cpu.advance(&FramePlan { constants, substeps: steps, forcing: &[] }).map_err(|e| e.to_string())?;
        let after = cpu.read_state().map_err(|e| e.to_string())?;
        write(dir, "depth_ref.bin", bytemuck::cast_slice(&after.depth))?;
        write(dir, "flow_ref.bin", bytemuck::cast_slice(&after.flow))?;
    }
    let total: i64 = state.depth.iter().map(|&d| d as i64).sum();
    println!("{side}² benchmark lake, advection {}, {steps} CPU steps for reference: {total} quanta in {dir}", params.momentum_advection);
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("twin_input: {e}");
        std::process::exit(2);
    }
}
