//! Edits of one cell within one frame apply in the order they were made on every backend: the GPU
//! ends each cell where the CPU, which applies every call at once, ends it (depth to the quantum,
//! terrain to the bit) and its ledger counts the same water added and removed, however the calls
//! clamp at a dry cell, at the depth limit or at the terrain limit, and whichever order the
//! device's invocations meet.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::{gpu_or_skip, pair};
use pipewater_core::{CellRect, Grid, Params, Simulation, State, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};

/// Grid side, cells: enough cells that one call's list spans many workgroups of the edit pass,
/// which a device runs side by side.
const SIDE: u32 = 64;
/// Rows whose cells are taken from and given to, each cell by calls of its own.
const EDITED_ROWS: u32 = 48;
/// Brush radius that reaches only the cell under the point, m (cells are 1 m).
const ONE_CELL: f32 = 0.3;
/// Times the GPU run is repeated: an order left to the device may change from run to run.
const RUNS: usize = 4;

/// Local position of the centre of cell `(x, y)`.
fn centre(x: u32, y: u32) -> (f32, f32) {
    (x as f32 + 0.5 - SIDE as f32 * 0.5, y as f32 + 0.5 - SIDE as f32 * 0.5)
}

/// The volume of `quanta` quanta on a 1 m cell, m³.
fn volume(sim: &Simulation, quanta: i64) -> f32 {
    (quanta as f64 * sim.quantum_volume()) as f32
}

/// Dry flat ground except: every cell of the edited rows holds 3 quanta, one cell stands 10 quanta
/// below the depth limit, and two cells carry terrain that a sum of their edits would round or
/// clamp otherwise than the edits one after the other.
fn start() -> State {
    let grid = Grid::new(SIDE, SIDE, 1.0).unwrap();
    let mut state = State::new(grid);
    for cell in 0..(EDITED_ROWS * SIDE) as usize {
        state.depth[cell] = 3;
    }
    state.depth[grid.index(5, 50)] = MAX_DEPTH_QUANTA - 10;
    state.terrain[grid.index(7, 60)] = 1.0;
    state.terrain[grid.index(9, 60)] = MAX_TERRAIN_ABS - 1.0;
    state
}

/// One frame's calls, each clamping somewhere, and the net volumes the calls returned.
fn edit(sim: &mut Simulation) -> Vec<f64> {
    let mut returned = Vec::new();
    // The edited rows (3 quanta a cell): take 5 (clamps at dry), then give 5; the other order ends at 3.
    for y in 0..EDITED_ROWS {
        for x in 0..SIDE {
            let (cx, cz) = centre(x, y);
            returned.push(-sim.remove_water(cx, cz, volume(sim, 5), ONE_CELL).unwrap());
        }
    }
    for y in 0..EDITED_ROWS {
        for x in 0..SIDE {
            let (cx, cz) = centre(x, y);
            returned.push(sim.add_water(cx, cz, volume(sim, 5), ONE_CELL).unwrap());
        }
    }
    // Near the depth limit: add 100 (clamps at the limit), then take 100.
    let (lx, lz) = centre(5, 50);
    returned.push(sim.add_water(lx, lz, volume(sim, 100), ONE_CELL).unwrap());
    returned.push(-sim.remove_water(lx, lz, volume(sim, 100), ONE_CELL).unwrap());
    // An exact region, then edits over it: 100 quanta, take 200 (clamps), give 50.
    let (ex, ey) = (3u32, 55u32);
    let change = sim.set_depth_region(CellRect { x: ex, y: ey, width: 1, height: 1 }, &[100]).unwrap();
    returned.push((change.added as f64 - change.removed as f64) * sim.quantum_volume());
    let (sx, sz) = centre(ex, ey);
    returned.push(-sim.remove_water(sx, sz, volume(sim, 200), ONE_CELL).unwrap());
    returned.push(sim.add_water(sx, sz, volume(sim, 50), ONE_CELL).unwrap());
    // Terrain: two digs below half an ulp each, which only a sum would see, and a raise that
    // clamps at the terrain limit before a dig.
    let (tx, tz) = centre(7, 60);
    sim.modify_terrain(tx, tz, 5.0e-8, ONE_CELL).unwrap();
    sim.modify_terrain(tx, tz, 5.0e-8, ONE_CELL).unwrap();
    let (mx, mz) = centre(9, 60);
    sim.modify_terrain(mx, mz, 5.0, ONE_CELL).unwrap();
    sim.modify_terrain(mx, mz, -5.0, ONE_CELL).unwrap();
    returned
}

#[test]
fn a_frames_edits_of_one_cell_end_where_the_cpu_ends_them_with_the_same_ledger() {
    if !gpu_or_skip("a_frames_edits_of_one_cell_end_where_the_cpu_ends_them_with_the_same_ledger") {
        return;
    }
    let (mut cpu, _) = pair(start(), Params::default());
    edit(&mut cpu);
    let (reference, reference_ledger) = (cpu.read_state().unwrap(), cpu.ledger().unwrap());
    let grid = reference.grid;
    let watched = [(0u32, 0u32), (SIDE - 1, EDITED_ROWS - 1), (5, 50), (3, 55)];
    let show = |s: &State| watched.iter().map(|&(x, y)| s.depth[grid.index(x, y)]).collect::<Vec<_>>();
    let terrain = |s: &State| [s.terrain[grid.index(7, 60)], s.terrain[grid.index(9, 60)]];
    println!("CPU: depths {:?} (quanta) terrain {:?} ledger {:?}", show(&reference), terrain(&reference), reference_ledger.counters);
    let mut failures = Vec::new();
    for run in 0..RUNS {
        let (_, mut gpu) = pair(start(), Params::default());
        edit(&mut gpu);
        gpu.apply_edits().unwrap();
        let (state, ledger) = (gpu.read_state().unwrap(), gpu.ledger().unwrap());
        let depth_cells = state.depth.iter().zip(&reference.depth).filter(|(a, b)| a != b).count();
        let terrain_cells = state.terrain.iter().zip(&reference.terrain).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        println!(
            "GPU run {run}: depths {:?} terrain {:?} ledger {:?}; {depth_cells} depths and {terrain_cells} heights differ from the CPU",
            show(&state),
            terrain(&state),
            ledger.counters
        );
        if depth_cells + terrain_cells > 0 || ledger.counters != reference_ledger.counters {
            failures.push(run);
        }
    }
    assert!(failures.is_empty(), "GPU runs {failures:?} differ from the CPU (see the figures above)");
}

/// A drain and a source on the same cell, the drain made first: each step the drain finds the cell
/// dry and takes nothing, then the source adds. The GPU's ledger after one step counts what the
/// CPU's does.
#[test]
fn a_drain_and_a_source_on_one_cell_apply_in_the_order_they_were_made() {
    if !gpu_or_skip("a_drain_and_a_source_on_one_cell_apply_in_the_order_they_were_made") {
        return;
    }
    let grid = Grid::new(SIDE, SIDE, 1.0).unwrap();
    let (mut cpu, mut gpu) = pair(State::new(grid), Params::default());
    for sim in [&mut cpu, &mut gpu] {
        // Every drain before every source, so that one cell's two entries lie far apart in the
        // step's list, in workgroups a device runs side by side.
        for rate in [-0.5, 0.5] {
            for y in 0..SIDE {
                for x in 0..SIDE {
                    let (cx, cz) = centre(x, y);
                    sim.add_source(cx, cz, rate, ONE_CELL).unwrap();
                }
            }
        }
        sim.run_steps(0.01, 1).unwrap();
    }
    let (c, g) = (cpu.ledger().unwrap().counters, gpu.ledger().unwrap().counters);
    println!("after one step: CPU ledger {c:?}, GPU ledger {g:?}");
    assert!(c.added > 0 && c.removed == 0, "the reference takes nothing from dry cells");
    assert_eq!((g.added, g.removed), (c.added, c.removed));
}
