//! The CPU reference backend: the step of [`crate::pipes`] written to be read, rows in parallel
//! with rayon.

use super::{Backend, BackendKind, CellTerrain, CellWater, EditOutcome, FramePlan};
use crate::error::{Error, Result};
use crate::pipes::{accelerate, inflow_for_cell, requested_quanta, limit_factor, open_edge_count, open_edge_outflow, pipe_quanta, StepConstants, PIPE_OFFSETS};
use crate::quanta::{quanta_to_depth, MAX_DEPTH_QUANTA};
use crate::state::{check_terrain, Counters, Snapshot, State, MAX_TERRAIN_ABS};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The CPU backend.
pub struct CpuBackend {
    state: State,
    /// Unlimited fluxes after phase 1, read by phases 2 and 3.
    accelerated: Vec<[f32; 4]>,
    /// Limit factor per cell from phase 2.
    limit: Vec<f32>,
    counters: Counters,
    frames: u64,
    cached: Option<Arc<Snapshot>>,
}

impl CpuBackend {
    /// A backend holding `state`.
    pub fn new(state: &State) -> Self {
        let n = state.grid.cell_count();
        CpuBackend {
            state: state.clone(),
            accelerated: vec![[0.0; 4]; n],
            limit: vec![1.0; n],
            counters: Counters::default(),
            frames: 0,
            cached: None,
        }
    }

    /// The current state, without copying.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Current counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Applies per-cell water changes, clamped to `0 ..= MAX_DEPTH_QUANTA`, and returns the quanta
    /// really added and removed.
    fn apply_water(depth: &mut [i32], cells: &[CellWater]) -> (u64, u64) {
        let (mut added, mut removed) = (0u64, 0u64);
        for c in cells {
            let Some(d) = depth.get_mut(c.cell as usize) else { continue };
            let new = (*d as i64 + c.quanta as i64).clamp(0, MAX_DEPTH_QUANTA as i64) as i32;
            if new > *d {
                added += (new - *d) as u64;
            } else {
                removed += (*d - new) as u64;
            }
            *d = new;
        }
        (added, removed)
    }

    /// One step: forcing, then accelerate, limit and transfer.
    fn step(&mut self, c: &StepConstants, forcing: &[CellWater]) {
        let (w, h) = (c.width as usize, c.height as usize);

        let (added, removed) = Self::apply_water(&mut self.state.depth, forcing);
        self.counters.added += added;
        self.counters.removed += removed;
        let inflow = AtomicU64::new(0);
        if c.boundary.contains(&crate::pipes::BOUNDARY_INFLOW) {
            self.state.depth.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                let mut entered = 0u64;
                for (x, d) in row.iter_mut().enumerate() {
                    let q = inflow_for_cell(c, x as u32, y as u32);
                    if q > 0 {
                        let new = (*d as i64 + q as i64).min(MAX_DEPTH_QUANTA as i64) as i32;
                        entered += (new - *d) as u64;
                        *d = new;
                    }
                }
                inflow.fetch_add(entered, Ordering::Relaxed);
            });
        }
        self.counters.boundary_in += inflow.into_inner();

        let State { terrain, depth, flux, .. } = &mut self.state;

        // Phase 1: accelerate every owned pipe from the surface difference across it.
        let terrain: &[f32] = terrain;
        let depth_before: &[i32] = depth;
        self.accelerated.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, pipes) in row.iter_mut().enumerate() {
                let i = y * w + x;
                for p in 0..4 {
                    pipes[p] = if c.pipe_active(p) && c.pipe_in_grid(x as u32, y as u32, p) {
                        let (ox, oy) = PIPE_OFFSETS[p];
                        let j = (y as i64 + oy as i64) as usize * w + (x as i64 + ox as i64) as usize;
                        accelerate(c, p, flux[i][p], terrain[i], depth_before[i], terrain[j], depth_before[j])
                    } else {
                        0.0
                    };
                }
            }
        });

        // Phase 2: limit factor of each cell from everything that wants to leave it.
        let accelerated = &self.accelerated;
        let depth_now: &[i32] = depth_before;
        self.limit.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, k) in row.iter_mut().enumerate() {
                let i = y * w + x;
                let mut leaving = [0.0f32; 8];
                for_each_pipe(c, w, h, x, y, |owned, j, p| {
                    leaving[if owned { p } else { p + 4 }] = if owned { accelerated[i][p] } else { -accelerated[j][p] };
                });
                let mut requested = requested_quanta(c.flux_to_quanta, &leaving);
                let open = open_edge_count(c, x as u32, y as u32);
                if open > 0 {
                    requested += (open_edge_outflow(c, quanta_to_depth(depth_now[i])) * open as f32 * c.flux_to_quanta).abs();
                }
                *k = limit_factor(depth_now[i], requested);
            }
        });

        // Phase 3: move whole quanta; both ends of a pipe compute the same integer.
        let limit = &self.limit;
        let outflow = AtomicU64::new(0);
        depth.par_chunks_mut(w).zip(flux.par_chunks_mut(w)).enumerate().for_each(|(y, (depth_row, flux_row))| {
            let mut left = 0u64;
            for x in 0..w {
                let i = y * w + x;
                let mut net: i64 = 0;
                for_each_pipe(c, w, h, x, y, |owned, j, p| {
                    let owner = if owned { i } else { j };
                    let f = accelerated[owner][p];
                    let drainer_is_owner = f > 0.0;
                    let drainer = if drainer_is_owner == owned { i } else { j };
                    let moved = pipe_quanta(c.flux_to_quanta, f, limit[drainer]) as i64;
                    net += if owned { -moved } else { moved };
                });
                let open = open_edge_count(c, x as u32, y as u32);
                if open > 0 {
                    let q = open_edge_outflow(c, quanta_to_depth(depth_row[x])) * open as f32;
                    let gone = pipe_quanta(c.flux_to_quanta, q, limit[i]) as i64;
                    net -= gone;
                    left += gone as u64;
                }
                let new = depth_row[x] as i64 + net;
                debug_assert!(new >= 0, "cell {x},{y} went negative: {new}");
                depth_row[x] = new as i32;
                // Keep the limited flux: what the pipe could really carry.
                for p in 0..4 {
                    let f = accelerated[i][p];
                    let k = if f > 0.0 { limit[i] } else if c.pipe_active(p) && c.pipe_in_grid(x as u32, y as u32, p) {
                        let (ox, oy) = PIPE_OFFSETS[p];
                        limit[(y as i64 + oy as i64) as usize * w + (x as i64 + ox as i64) as usize]
                    } else {
                        1.0
                    };
                    flux_row[x][p] = f * k;
                }
            }
            outflow.fetch_add(left, Ordering::Relaxed);
        });
        self.counters.boundary_out += outflow.into_inner();
    }
}

/// Calls `visit(owned, other, pipe)` for each of the eight pipes of cell `(x, y)` that exist in
/// this mode and lead to a cell on the grid: `owned` tells whether the cell owns the pipe,
/// `other` is the index of the cell at its other end.
#[inline]
fn for_each_pipe(c: &StepConstants, w: usize, h: usize, x: usize, y: usize, mut visit: impl FnMut(bool, usize, usize)) {
    for p in 0..4 {
        if !c.pipe_active(p) {
            continue;
        }
        let (ox, oy) = PIPE_OFFSETS[p];
        for (owned, sign) in [(true, 1i64), (false, -1i64)] {
            let nx = x as i64 + sign * ox as i64;
            let ny = y as i64 + sign * oy as i64;
            if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                visit(owned, ny as usize * w + nx as usize, p);
            }
        }
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn description(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }

    fn load(&mut self, state: &State) -> Result<()> {
        *self = CpuBackend::new(state);
        Ok(())
    }

    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome> {
        let (added, removed) = Self::apply_water(&mut self.state.depth, cells);
        self.counters.added += added;
        self.counters.removed += removed;
        self.cached = None;
        Ok(EditOutcome::Applied { added, removed })
    }

    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        for c in cells {
            if let Some(b) = self.state.terrain.get_mut(c.cell as usize) {
                *b = (*b + c.delta).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
            }
        }
        self.cached = None;
        Ok(())
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        check_terrain(&self.state.grid, terrain)?;
        self.state.terrain.copy_from_slice(terrain);
        self.cached = None;
        Ok(())
    }

    fn advance(&mut self, plan: &FramePlan) -> Result<()> {
        let g = self.state.grid;
        if plan.constants.width != g.width || plan.constants.height != g.height {
            return Err(Error::invalid("plan grid", format!("{}x{}", plan.constants.width, plan.constants.height), format!("{}x{}", g.width, g.height)));
        }
        for _ in 0..plan.substeps {
            self.step(&plan.constants, plan.forcing);
        }
        self.frames += 1;
        self.cached = None;
        Ok(())
    }

    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        if self.cached.is_none() {
            self.cached = Some(Arc::new(self.state.snapshot(self.frames, self.counters)));
        }
        self.cached.clone()
    }

    fn read_state(&mut self) -> Result<State> {
        Ok(self.state.clone())
    }

    fn read_counters(&mut self) -> Result<Counters> {
        Ok(self.counters)
    }
}
