//! Erosion and deposition: the water carries the ground away where it runs fast and lets it
//! settle where it slows, after Mei, Decaudin and Hu (2007), "Fast Hydraulic Erosion Simulation
//! and Visualization on GPU"; slopes steeper than a talus angle slide (thermal erosion).
//!
//! A pass of its own after each water step ([`Erosion::step`]): the water step is the same
//! whether erosion is on or off, and off costs nothing.
//!
//! Every grain is counted, as every drop of water is: the ground's change and the suspended
//! sediment are integer counts of [`DEPTH_QUANTUM`] metres per cell, and each exchange moves
//! one whole number between two counts (ground to sediment where water dissolves, sediment to
//! ground where it settles, sediment to sediment along the pipes the water took, ground to ground
//! where a slope slides, sediment out of the grid with water leaving across an open edge). So
//! `Σ ground change + Σ sediment + sediment out = initial` holds exactly ([`SedimentLedger`]),
//! step after step. The terrain the water sees is the uneroded ground plus the ground change,
//! composed in `f64` ([`compose`]): one quantum of change is below an `f32` terrain's step at
//! heights above 8 m, so adding changes to the `f32` field would lose them.
//!
//! One step of length `dt` (after the water step, which moved whole quanta through each pipe):
//! 1. **Exchange.** Each cell's capacity is `C = Kc · max(sin α, min_tilt) · |v|` (m), with `α`
//!    the ground's tilt (central differences) and `|v|` the water's speed (the flow texels'
//!    speed). With `s` the sediment it carries (m), `round(min(1, Ks·dt) · (C − s))` quanta of
//!    ground dissolve where `s < C`, `round(min(1, Kd·dt) · (s − C))` settle where `s > C`; a dry
//!    cell lets all its sediment settle.
//! 2. **Transport.** Sediment goes where the water went: each pipe that moved `q` quanta out of
//!    a cell that held `d` carries `floor(s · q / d)` quanta of its sediment (upwind, well mixed;
//!    the exact counterpart of the paper's semi-Lagrangian advection), and water leaving across
//!    an edge takes its share out of the grid.
//! 3. **Slide.** Towards each lower neighbour whose drop exceeds `tan(talus) · distance` by `e`,
//!    a cell sheds `floor(min(1, Kt·dt) · e / 16)`: with at most eight neighbours giving or
//!    taking `e/16` each, no step overshoots the talus slope.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::params::ErosionParams;
use crate::pipes::{NEIGHBOUR_OFFSETS, PIPE_OFFSETS};
use crate::quanta::{DEPTH_QUANTUM, MAX_TERRAIN_ABS};
use crate::state::State;
use rayon::prelude::*;

/// The sediment bookkeeping: `Σ ground change + Σ sediment = initial − out`, in quanta.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SedimentLedger {
    /// Ground change plus sediment when erosion started (or the terrain was last replaced), quanta.
    pub initial: i64,
    /// Sediment carried out of the grid by water leaving across its edges, quanta.
    pub out: u64,
}

impl SedimentLedger {
    /// What `Σ ground change + Σ sediment` must be, quanta.
    pub fn expected_total(&self) -> i64 {
        self.initial.wrapping_sub(self.out as i64)
    }
}

/// The erosion fields of a grid, row-major, in quanta of [`DEPTH_QUANTUM`] m.
#[derive(Debug, Clone, PartialEq)]
pub struct ErosionFields {
    /// Suspended sediment per cell (as a height of ground), quanta, `≥ 0`.
    pub sediment: Vec<i32>,
    /// Change of the ground since erosion started, quanta: negative where it dissolved or slid
    /// away, positive where sediment settled or ground slid in.
    pub ground: Vec<i32>,
    /// The ledger the fields must satisfy.
    pub ledger: SedimentLedger,
}

impl ErosionFields {
    /// `Σ ground change + Σ sediment − expected`, quanta: zero when every grain is counted.
    pub fn discrepancy(&self) -> i64 {
        let total: i64 = self.ground.iter().map(|&g| g as i64).sum::<i64>() + self.sediment.iter().map(|&s| s as i64).sum::<i64>();
        total.wrapping_sub(self.ledger.expected_total())
    }
}

/// The terrain (m) of uneroded ground `base` changed by `ground` quanta, in `f64` so that no
/// quantum is lost to the `f32` result's rounding, within the terrain's valid range.
#[inline]
pub fn compose(base: f32, ground: i32) -> f32 {
    (base as f64 + ground as f64 * DEPTH_QUANTUM as f64).clamp(-MAX_TERRAIN_ABS as f64, MAX_TERRAIN_ABS as f64) as f32
}

/// Sediment capacity `C = Kc · max(sin α, min_tilt) · |v|` (m) of water moving at `speed` m/s
/// over ground of gradient `gradient` (rise over run along x and y).
#[inline]
pub fn capacity(params: &ErosionParams, gradient: [f32; 2], speed: f32) -> f32 {
    let slope = gradient[0].hypot(gradient[1]);
    let sine = slope / (1.0 + slope * slope).sqrt();
    params.capacity * sine.max(params.min_tilt) * speed
}

/// Quanta of ground that dissolve into (positive) or settle from (negative) the water of a cell
/// carrying `sediment` quanta with capacity `capacity` m, over a step of `dt` s; `wet` is whether
/// the cell holds water (a dry cell lets everything settle).
#[inline]
pub fn exchange_quanta(params: &ErosionParams, capacity: f32, sediment: i32, wet: bool, dt: f32) -> i64 {
    if !wet {
        return -(sediment as i64);
    }
    let carried = sediment as f64 * DEPTH_QUANTUM as f64;
    let gap = capacity as f64 - carried;
    let rate = if gap > 0.0 { params.dissolve_rate } else { params.deposit_rate };
    let amount = (rate as f64 * dt as f64).min(1.0) * gap / DEPTH_QUANTUM as f64;
    (amount.round() as i64).max(-(sediment as i64))
}

/// Ground gradient at cell `(x, y)` of `terrain` (central differences, one-sided at the edges).
#[inline]
fn gradient(grid: Grid, terrain: &[f32], x: usize, y: usize) -> [f32; 2] {
    let (w, h) = (grid.width as usize, grid.height as usize);
    let at = |x: usize, y: usize| terrain[y * w + x] as f64;
    let along = |lo: f64, hi: f64, span: usize| ((hi - lo) / (span as f64 * grid.cell_size as f64)) as f32;
    let (x0, x1) = (x.saturating_sub(1), (x + 1).min(w - 1));
    let (y0, y1) = (y.saturating_sub(1), (y + 1).min(h - 1));
    let gx = if x1 > x0 { along(at(x0, y), at(x1, y), x1 - x0) } else { 0.0 };
    let gy = if y1 > y0 { along(at(x, y0), at(x, y1), y1 - y0) } else { 0.0 };
    [gx, gy]
}

/// What the erosion pass reads of the water step before it, filled by the backend that ran it.
#[derive(Debug, Default)]
pub struct StepRecord {
    /// Water of each cell when the step moved it (after the edges' inflow), quanta.
    pub depth_before: Vec<i32>,
    /// Whole quanta each owned pipe (E, S, SE, SW) moved in the step, positive leaving its owner.
    pub transfers: Vec<[i32; 4]>,
    /// Quanta each cell lost across the grid's edges in the step.
    pub edge_out: Vec<i32>,
}

/// The erosion state a backend keeps beside the water: the uneroded ground, the integer fields,
/// the ledger, and the scratch the pass reuses.
#[derive(Debug)]
pub struct Erosion {
    params: ErosionParams,
    grid: Grid,
    /// The ground without erosion's change, m: the terrain edits and replacements act on it.
    base: Vec<f32>,
    sediment: Vec<i32>,
    ground: Vec<i32>,
    ledger: SedimentLedger,
    /// Filled by the backend before each [`Erosion::step`].
    pub record: StepRecord,
    speed: Vec<f32>,
    outgoing: Vec<[i32; 8]>,
    sediment_next: Vec<i32>,
    ground_before: Vec<i32>,
}

impl Erosion {
    /// Erosion starting over `state`'s terrain: no sediment, no change yet. `params` are valid
    /// ([`ErosionParams::validate`]: the backend's `configure_erosion` checks them).
    pub fn new(params: ErosionParams, state: &State) -> Self {
        let n = state.grid.cell_count();
        Erosion {
            params,
            grid: state.grid,
            base: state.terrain.clone(),
            sediment: vec![0; n],
            ground: vec![0; n],
            ledger: SedimentLedger::default(),
            record: StepRecord { depth_before: vec![0; n], transfers: vec![[0; 4]; n], edge_out: vec![0; n] },
            speed: vec![0.0; n],
            outgoing: vec![[0; 8]; n],
            sediment_next: vec![0; n],
            ground_before: vec![0; n],
        }
    }

    /// Takes new parameters, keeping the fields.
    pub fn set_params(&mut self, params: ErosionParams) -> Result<()> {
        params.validate()?;
        self.params = params;
        Ok(())
    }

    /// The parameters in force.
    pub fn params(&self) -> &ErosionParams {
        &self.params
    }

    /// A copy of the fields and the ledger.
    pub fn fields(&self) -> ErosionFields {
        ErosionFields { sediment: self.sediment.clone(), ground: self.ground.clone(), ledger: self.ledger }
    }

    /// Suspended sediment of each cell, quanta.
    pub fn sediment(&self) -> &[i32] {
        &self.sediment
    }

    /// A terrain edit of `delta` m at `cell` acts on the uneroded ground; returns the new terrain.
    pub fn edit_ground(&mut self, cell: usize, delta: f32) -> Option<f32> {
        let base = self.base.get_mut(cell)?;
        *base = (*base + delta).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
        Some(compose(*base, self.ground[cell]))
    }

    /// The terrain was replaced by `terrain`: it becomes the uneroded ground, and the change so far
    /// becomes part of it (the ledger's initial total drops by that change, so the identity
    /// keeps holding with the sediment still in the water).
    pub fn replace_ground(&mut self, terrain: &[f32]) -> Result<()> {
        if terrain.len() != self.base.len() {
            return Err(Error::WrongLength { name: "terrain", expected: self.base.len(), actual: terrain.len() });
        }
        let change: i64 = self.ground.iter().map(|&g| g as i64).sum();
        self.ledger.initial = self.ledger.initial.wrapping_sub(change);
        self.base.copy_from_slice(terrain);
        self.ground.fill(0);
        Ok(())
    }

    /// One erosion step of `dt` s after a water step: exchange, transport, slide (see the module
    /// documentation). `self.record` holds what the water step moved; `state.terrain` gets the new
    /// ground. `eight` is whether the water has diagonal pipes (the slide then has diagonal
    /// neighbours too). `changed` is called once for every cell whose ground changed.
    pub fn step(&mut self, state: &mut State, fixed_flux_per_stored: Option<f32>, dt: f32, eight: bool, mut changed: impl FnMut(usize)) {
        let grid = self.grid;
        let w = grid.width as usize;
        let p = self.params;
        self.ground_before.copy_from_slice(&self.ground);

        // 1. Exchange, from the water's speed after the step and the ground's tilt before it.
        {
            let state_ref = &*state;
            self.speed.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                for (x, speed) in row.iter_mut().enumerate() {
                    // Dry cells carry nothing, whatever their pipes say.
                    *speed = if state_ref.depth[y * w + x] > 0 { state_ref.cell_texels(x as u32, y as u32, fixed_flux_per_stored, false).1[2] } else { 0.0 };
                }
            });
        }
        let (terrain, depth) = (&state.terrain, &state.depth);
        let speed = &self.speed;
        self.sediment.par_chunks_mut(w).zip(self.ground.par_chunks_mut(w)).enumerate().for_each(|(y, (sediment_row, ground_row))| {
            for x in 0..w {
                let i = y * w + x;
                let wet = depth[i] > 0;
                let c = if wet { capacity(&p, gradient(grid, terrain, x, y), speed[i]) } else { 0.0 };
                let mut k = exchange_quanta(&p, c, sediment_row[x], wet, dt);
                // Both counts stay within i32: the exchange is cut, never clamped on one side.
                k = k.min(i32::MAX as i64 - sediment_row[x] as i64).min(ground_row[x] as i64 - i32::MIN as i64);
                k = k.max(-(i32::MAX as i64 - ground_row[x] as i64));
                sediment_row[x] += k as i32;
                ground_row[x] -= k as i32;
            }
        });

        // 2. Transport along the pipes the water took.
        let out = self.transport();
        self.ledger.out = self.ledger.out.wrapping_add(out);

        // 3. Slide where the ground is steeper than the talus angle.
        if p.thermal_rate > 0.0 {
            self.slide(dt, eight);
        }

        for i in 0..self.ground.len() {
            if self.ground[i] != self.ground_before[i] {
                state.terrain[i] = compose(self.base[i], self.ground[i]);
                changed(i);
            }
        }
    }

    /// Step 2: moves sediment with the water of `self.record`; returns the quanta that left the grid.
    fn transport(&mut self) -> u64 {
        let (w, h) = (self.grid.width as usize, self.grid.height as usize);
        let record = &self.record;
        let sediment = &self.sediment;
        // Quanta of water that left cell i towards each neighbour (NEIGHBOUR_OFFSETS order).
        let leaving = |i: usize, x: usize, y: usize| -> [i64; 8] {
            let mut q = [0i64; 8];
            for p in 0..4 {
                q[p] = record.transfers[i][p] as i64;
                let (ox, oy) = PIPE_OFFSETS[p];
                let (nx, ny) = (x as isize - ox as isize, y as isize - oy as isize);
                if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                    q[4 + p] = -(record.transfers[ny as usize * w + nx as usize][p] as i64);
                }
            }
            q
        };
        let gone = std::sync::atomic::AtomicU64::new(0);
        self.outgoing.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            let mut left = 0u64;
            for (x, out) in row.iter_mut().enumerate() {
                let i = y * w + x;
                *out = [0; 8];
                let s = sediment[i] as i64;
                if s == 0 {
                    continue;
                }
                let q = leaving(i, x, y);
                let edge = record.edge_out[i] as i64;
                let total: i64 = q.iter().filter(|&&v| v > 0).sum::<i64>() + edge;
                if total == 0 {
                    continue;
                }
                // The share of the cell's water each way; never more than all of it.
                let held = (record.depth_before[i] as i64).max(total);
                for k in 0..8 {
                    if q[k] > 0 {
                        out[k] = (s * q[k] / held) as i32;
                    }
                }
                left += (s * edge / held) as u64;
            }
            gone.fetch_add(left, std::sync::atomic::Ordering::Relaxed);
        });
        let outgoing = &self.outgoing;
        let edge_share = |i: usize| -> i64 {
            let s = sediment[i] as i64;
            let q = leaving(i, i % w, i / w);
            let edge = record.edge_out[i] as i64;
            let total: i64 = q.iter().filter(|&&v| v > 0).sum::<i64>() + edge;
            if s == 0 || edge == 0 {
                0
            } else {
                s * edge / (record.depth_before[i] as i64).max(total)
            }
        };
        let mut next = std::mem::take(&mut self.sediment_next);
        next.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, new) in row.iter_mut().enumerate() {
                let i = y * w + x;
                let mut s = sediment[i] as i64 - outgoing[i].iter().map(|&o| o as i64).sum::<i64>() - edge_share(i);
                for (k, &(ox, oy)) in NEIGHBOUR_OFFSETS.iter().enumerate() {
                    let (nx, ny) = (x as isize + ox as isize, y as isize + oy as isize);
                    if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                        s += outgoing[ny as usize * w + nx as usize][(k + 4) % 8] as i64;
                    }
                }
                *new = s.clamp(0, i32::MAX as i64) as i32;
            }
        });
        self.sediment_next = std::mem::replace(&mut self.sediment, next);
        gone.into_inner()
    }

    /// Step 3: thermal erosion, ground sliding towards neighbours lower than the talus slope.
    fn slide(&mut self, dt: f32, eight: bool) {
        let (w, h) = (self.grid.width as usize, self.grid.height as usize);
        let cell = self.grid.cell_size as f64;
        let talus = (self.params.talus_angle as f64).to_radians().tan();
        let share = (self.params.thermal_rate as f64 * dt as f64).min(1.0) / 16.0;
        let (base, ground) = (&self.base, &self.ground);
        let height = |i: usize| base[i] as f64 + ground[i] as f64 * DEPTH_QUANTUM as f64;
        let directions = if eight { 8 } else { 4 };
        // NEIGHBOUR_OFFSETS is E, S, SE, SW, W, N, NW, NE: the orthogonal four are 0, 1, 4, 5.
        let used = |k: usize| directions == 8 || matches!(k, 0 | 1 | 4 | 5);
        self.outgoing.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, out) in row.iter_mut().enumerate() {
                let i = y * w + x;
                *out = [0; 8];
                let here = height(i);
                for (k, &(ox, oy)) in NEIGHBOUR_OFFSETS.iter().enumerate() {
                    let (nx, ny) = (x as isize + ox as isize, y as isize + oy as isize);
                    if !used(k) || nx < 0 || ny < 0 || nx as usize >= w || ny as usize >= h {
                        continue;
                    }
                    let distance = if ox != 0 && oy != 0 { cell * std::f64::consts::SQRT_2 } else { cell };
                    let excess = here - height(ny as usize * w + nx as usize) - talus * distance;
                    if excess > 0.0 {
                        out[k] = (share * excess / DEPTH_QUANTUM as f64).floor().min(i32::MAX as f64 / 8.0) as i32;
                    }
                }
            }
        });
        let outgoing = &self.outgoing;
        self.ground.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, g) in row.iter_mut().enumerate() {
                let i = y * w + x;
                let mut change = -outgoing[i].iter().map(|&o| o as i64).sum::<i64>();
                for (k, &(ox, oy)) in NEIGHBOUR_OFFSETS.iter().enumerate() {
                    let (nx, ny) = (x as isize + ox as isize, y as isize + oy as isize);
                    if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                        change += outgoing[ny as usize * w + nx as usize][(k + 4) % 8] as i64;
                    }
                }
                *g = (*g as i64 + change) as i32;
            }
        });
    }
}
