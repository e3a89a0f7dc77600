//! The CPU reference backend: the step of [`crate::pipes`] written to be read, rows in parallel
//! with rayon.

use super::{Backend, BackendKind, CellTerrain, CellWater, EditOutcome, FramePlan};
use crate::error::{Error, Result};
use crate::pipes::{accelerate, edge_outflow, inflow_for_cell, level_edge_inflow_quanta, limit_factor, pipe_quanta, requested_quanta, StepConstants, PIPE_OFFSETS};
use crate::quanta::MAX_DEPTH_QUANTA;
use crate::state::{check_terrain, Counters, Snapshot, SpareSnapshots, State, MAX_TERRAIN_ABS};
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
    spares: SpareSnapshots,
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
            spares: SpareSnapshots::default(),
        }
    }

    /// Marks the snapshot stale, keeping it for its buffers.
    fn invalidate_snapshot(&mut self) {
        if let Some(old) = self.cached.take() {
            self.spares.keep(old);
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
        let eight = c.eight_neighbours != 0;

        let terrain: &[f32] = terrain;
        let depth_before: &[i32] = depth;
        let flux_before: &[[f32; 4]] = flux;


        // Phase 1: accelerate every owned pipe from the surface difference across it. Pipes that
        // lead off the grid (or diagonals in four-neighbour mode) stay at zero.
        self.accelerated.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            let below = y + 1 < h;
            for (x, pipes) in row.iter_mut().enumerate() {
                let i = y * w + x;
                let (b, d, f) = (terrain[i], depth_before[i], flux_before[i]);
                let (x32, y32) = (x as u32, y as u32);
                let mut new = [0.0f32; 4];
                if x + 1 < w {
                    new[0] = accelerate(c, 0, x32, y32, f[0], b, d, terrain[i + 1], depth_before[i + 1]);
                }
                if below {
                    let j = i + w;
                    new[1] = accelerate(c, 1, x32, y32, f[1], b, d, terrain[j], depth_before[j]);
                    if eight && x + 1 < w {
                        new[2] = accelerate(c, 2, x32, y32, f[2], b, d, terrain[j + 1], depth_before[j + 1]);
                    }
                    if eight && x > 0 {
                        new[3] = accelerate(c, 3, x32, y32, f[3], b, d, terrain[j - 1], depth_before[j - 1]);
                    }
                }
                *pipes = new;
            }
        });

        // Phase 2: limit factor of each cell from everything that wants to leave it.
        let accelerated = &self.accelerated;
        self.limit.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, k) in row.iter_mut().enumerate() {
                let i = y * w + x;
                let leaving = leaving_fluxes(accelerated, w, x, y, i);
                let mut requested = requested_quanta(c.flux_to_quanta, &leaving);
                let edge = edge_outflow(c, x as u32, y as u32, terrain[i], depth_before[i]);
                if edge > 0.0 {
                    requested += (edge * c.flux_to_quanta).abs();
                }
                *k = limit_factor(depth_before[i], requested);
            }
        });

        // Phase 3: move whole quanta; both ends of a pipe compute the same integer from the same
        // flux and the limit factor of the cell it drains. Owned pipes keep their limited flux.
        let limit = &self.limit;
        let outflow = AtomicU64::new(0);
        let level_inflow = AtomicU64::new(0);
        let offsets = pipe_index_offsets(w);
        depth.par_chunks_mut(w).zip(flux.par_chunks_mut(w)).enumerate().for_each(|(y, (depth_row, flux_row))| {
            let (mut left, mut entered) = (0u64, 0u64);
            for x in 0..w {
                let i = y * w + x;
                let mut net: i64 = 0;
                let mut kept = [0.0f32; 4];
                for p in 0..4 {
                    // Owned pipe p, from i to i + offset: zero when it does not exist.
                    let f = accelerated[i][p];
                    if f != 0.0 {
                        let j = (i as isize + offsets[p]) as usize;
                        let k = if f > 0.0 { limit[i] } else { limit[j] };
                        net -= pipe_quanta(c.flux_to_quanta, f, k) as i64;
                        kept[p] = f * k;
                    }
                    // The same pipe owned by the cell at i − offset, pointing here.
                    if let Some(owner) = pipe_owner_towards(w, h, x, y, p) {
                        let f = accelerated[owner][p];
                        if f != 0.0 {
                            let k = if f > 0.0 { limit[owner] } else { limit[i] };
                            net += pipe_quanta(c.flux_to_quanta, f, k) as i64;
                        }
                    }
                }
                let (bed, d) = (terrain[i], depth_row[x]);
                let edge = edge_outflow(c, x as u32, y as u32, bed, d);
                if edge > 0.0 {
                    let gone = pipe_quanta(c.flux_to_quanta, edge, limit[i]) as i64;
                    net -= gone;
                    left += gone as u64;
                }
                let new = d as i64 + net;
                debug_assert!(new >= 0, "cell {x},{y} went negative: {new}");
                // Water from a fixed level beyond the edge, up to the deepest a cell holds.
                let came = level_edge_inflow_quanta(c, x as u32, y as u32, bed, d) as i64;
                let new_with_inflow = (new + came).min(MAX_DEPTH_QUANTA as i64);
                entered += (new_with_inflow - new) as u64;
                depth_row[x] = new_with_inflow as i32;
                flux_row[x] = kept;
            }
            outflow.fetch_add(left, Ordering::Relaxed);
            level_inflow.fetch_add(entered, Ordering::Relaxed);
        });
        self.counters.boundary_out += outflow.into_inner();
        self.counters.boundary_in += level_inflow.into_inner();
    }
}

/// Index offsets from a cell to the neighbour at the far end of each owned pipe.
#[inline]
fn pipe_index_offsets(w: usize) -> [isize; 4] {
    PIPE_OFFSETS.map(|(ox, oy)| oy as isize * w as isize + ox as isize)
}

/// The cell that owns pipe `p` pointing at cell `(x, y)` — the one at `(x, y) − offset(p)` — if
/// it is on the grid.
#[inline]
fn pipe_owner_towards(w: usize, h: usize, x: usize, y: usize, p: usize) -> Option<usize> {
    let (ox, oy) = PIPE_OFFSETS[p];
    let (nx, ny) = (x as isize - ox as isize, y as isize - oy as isize);
    (nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h).then(|| ny as usize * w + nx as usize)
}

/// Flux leaving cell `i = (x, y)` towards each of its eight neighbours, in
/// [`crate::pipes::NEIGHBOUR_OFFSETS`] order: its own four pipes, then the neighbours' pipes
/// pointing at it, negated. Pipes that do not exist hold zero flux.
#[inline]
fn leaving_fluxes(accelerated: &[[f32; 4]], w: usize, x: usize, y: usize, i: usize) -> [f32; 8] {
    let own = accelerated[i];
    let mut leaving = [own[0], own[1], own[2], own[3], 0.0, 0.0, 0.0, 0.0];
    if x > 0 {
        leaving[4] = -accelerated[i - 1][0];
    }
    if y > 0 {
        leaving[5] = -accelerated[i - w][1];
        if x > 0 {
            leaving[6] = -accelerated[i - w - 1][2];
        }
        if x + 1 < w {
            leaving[7] = -accelerated[i - w + 1][3];
        }
    }
    leaving
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

    fn restore(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        if state.grid != self.state.grid {
            return Err(Error::invalid("restored grid", format!("{:?}", state.grid), format!("{:?}", self.state.grid)));
        }
        *self = CpuBackend::new(state);
        self.counters = counters;
        self.frames = frames;
        Ok(())
    }

    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome> {
        let (added, removed) = Self::apply_water(&mut self.state.depth, cells);
        self.counters.added += added;
        self.counters.removed += removed;
        self.invalidate_snapshot();
        Ok(EditOutcome::Applied { added, removed })
    }

    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        for c in cells {
            if let Some(b) = self.state.terrain.get_mut(c.cell as usize) {
                *b = (*b + c.delta).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
            }
        }
        self.invalidate_snapshot();
        Ok(())
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        check_terrain(&self.state.grid, terrain)?;
        self.state.terrain.copy_from_slice(terrain);
        self.invalidate_snapshot();
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
        self.invalidate_snapshot();
        Ok(())
    }

    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        if self.cached.is_none() {
            let spare = self.spares.take();
            self.cached = Some(Arc::new(self.state.snapshot_reusing(self.frames, self.counters, spare)));
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
