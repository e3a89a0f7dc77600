//! The CPU reference backend: the step of [`crate::pipes`] written to be read, rows in parallel
//! with rayon.

use super::sleep::{constants_change, AwakeTiles, ConstantsChange, SleepReport, TileGrid};
use super::tile_snapshot::TileSnapshots;
use super::{check_displacement, check_nudges, displacement_changes, Backend, BackendKind, CellDisplacement, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use crate::detail::{CpuDetail, DetailFrame, DetailLayout, DetailTexels};
use crate::erosion::{Erosion, ErosionFields};
use crate::error::{Error, Result};
use crate::params::ErosionParams;
use crate::pipes::{
    accelerate_advecting, accelerate_carried, advect_held, advect_weighted, advection_weights, carried_depth, held_water, cell_limits, discharge, edge_outflow, fixed_flux_per_stored,
    flux_per_stored, inflow_for_cell, is_diagonal, kept_flow, level_edge_inflow_quanta, nudged_pipe, pipe_class, pipe_quanta, pipe_width, transfer_limit, upstream_split,
    CellLimits, StepConstants, Upstream, CLASS_DIAGONAL, CLASS_ORTHOGONAL, PIPE_OFFSETS,
};
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH_QUANTA};
use crate::quanta::MAX_TERRAIN_ABS;
use crate::state::{check_terrain, Counters, Snapshot, State};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The CPU backend.
pub struct CpuBackend {
    state: State,
    /// The bed the step sees: terrain plus the displacement of bodies.
    step_terrain: Vec<f32>,
    /// Pressure head of bodies per cell, m ([`CellDisplacement`]).
    displacement: Vec<f32>,
    /// Cells whose displacement is not zero.
    displaced: Vec<u32>,
    /// Nudges for the start of the next frame.
    pending_nudges: Vec<PipeNudge>,
    /// Unlimited fluxes after phase 1, read by phases 2 and 3.
    accelerated: Vec<[f32; 4]>,
    /// Each owned pipe's flux before the step, from phase 0 (with advection). Kept apart from
    /// `accelerated` so that a sleeping tile's values stay valid for its awake neighbours.
    old_flux: Vec<[f32; 4]>,
    /// What each owned pipe keeps before the limit, from phase 1 ([`Accelerated::stored`]).
    stored: Vec<[f32; 4]>,
    /// What advection reads from each cell as the source of its pipes' water (phase 0, with
    /// advection).
    sources: Vec<Source>,
    /// Depth carrying each owned pipe's flow this step ([`carried_depth`]), from phase 1.
    carried: Vec<[f32; 4]>,
    /// Limit factors per cell from phase 2.
    limits: Vec<CellLimits>,
    /// The constant depth that turned the pipes' stored values into fluxes in the last step,
    /// if it was constant, for the snapshot ([`State::snapshot_reusing`]).
    fixed_flux_per_stored: Option<f32>,
    /// Whether the last frame's steps ran on the triangular lattice: its flow texels sum the
    /// pipes along the lattice's directions.
    triangular: bool,
    counters: Counters,
    frames: u64,
    /// Snapshots, written over older ones tile by tile as the sleeping tiles change.
    snapshots: TileSnapshots,
    /// The detail layer when it is on, its frame for the next `advance`, and its texels once
    /// asked for.
    detail: Option<CpuDetail>,
    queued_detail: Option<DetailFrame>,
    detail_texels: Option<Arc<DetailTexels>>,
    sleeping: Sleeping,
    /// The erosion pass and its fields, when erosion is on ([`crate::erosion`]).
    erosion: Option<Erosion>,
    /// Cells whose ground the last erosion pass changed (scratch).
    eroded: Vec<u32>,
}

/// Cells per side of the CPU backend's sleeping tiles: wider than the step's reach (five
/// columns, three rows), and few enough that planning costs nothing beside the step (1024 tiles
/// at 1024²).
pub const CPU_TILE: u32 = 32;

/// The CPU backend's sleeping tiles ([`super::sleep`]).
struct Sleeping {
    enabled: bool,
    tiles: TileGrid,
    /// Per tile: whether a bit of its depth or pipes changed (or it exchanged water with the
    /// outside) in the last step, or an edit changed it since.
    changed: Vec<AtomicBool>,
    /// Per tile: whether a pipe of it carried flow after the last step that stepped it.
    moving: Vec<AtomicBool>,
    /// Constants of the last step; `None` wakes every tile at the next.
    last: Option<StepConstants>,
    /// Per tile: whether the current step steps it.
    awake: Vec<bool>,
    /// Per tile: whether a step stepped it since [`Backend::take_changed_tiles`] last asked (all
    /// of a new state's tiles count as stepped).
    stepped_since_taken: Vec<bool>,
    /// Per row of tiles: the columns of its awake tiles, as runs of cells.
    runs: Vec<Vec<Range<usize>>>,
    report: SleepReport,
}

impl Sleeping {
    fn new(width: u32, height: u32, enabled: bool) -> Self {
        let tiles = TileGrid::new(width, height, [CPU_TILE, CPU_TILE]);
        let n = tiles.count();
        Sleeping {
            enabled,
            tiles,
            changed: (0..n).map(|_| AtomicBool::new(true)).collect(),
            moving: (0..n).map(|_| AtomicBool::new(true)).collect(),
            last: None,
            awake: vec![true; n],
            stepped_since_taken: vec![true; n],
            runs: Vec::new(),
            report: SleepReport { enabled, tiles: Some(tiles), ..SleepReport::default() },
        }
    }

    /// Marks the tile of cell index `cell` changed (an edit or forcing).
    fn mark(&self, cell: u32) {
        if let Some(t) = self.tiles.tile_of_cell(cell) {
            self.changed[t].store(true, Ordering::Relaxed);
        }
    }

    /// The tiles stepped since the last call, and those an edit, forcing or cooling changed that
    /// no step has planned yet: every tile whose depth may differ from what the caller saw.
    fn take_changed(&mut self) -> Vec<bool> {
        let changed = self.stepped_since_taken.iter().zip(&self.changed).map(|(&s, c)| s || c.load(Ordering::Relaxed)).collect();
        self.stepped_since_taken.fill(false);
        changed
    }

    /// Wakes every tile for the next step (a new state, terrain or setting).
    fn wake_all(&mut self) {
        self.last = None;
    }

    /// Chooses the tiles of the next step with constants `c` and clears the changes it used.
    fn plan(&mut self, c: &StepConstants) {
        let change = if self.enabled { constants_change(self.last.as_ref(), c) } else { ConstantsChange::Mode };
        let (changed, moving) = (&self.changed, &self.moving);
        self.awake = self.tiles.awake(c, change, |t| changed[t].load(Ordering::Relaxed), |t| moving[t].load(Ordering::Relaxed));
        for flag in &self.changed {
            flag.store(false, Ordering::Relaxed);
        }
        // Phase 3 sets it again for the tiles it steps whose pipes still carry flow.
        for (flag, _) in self.moving.iter().zip(&self.awake).filter(|(_, &awake)| awake) {
            flag.store(false, Ordering::Relaxed);
        }
        self.last = Some(*c);
        self.stepped_since_taken.iter_mut().zip(&self.awake).for_each(|(s, &a)| *s |= a);
        let [tw, th] = self.tiles.tiles.map(|n| n as usize);
        let (size, width) = (CPU_TILE as usize, self.tiles.cells[0] as usize);
        self.runs.clear();
        for ty in 0..th {
            let mut runs: Vec<Range<usize>> = Vec::new();
            for tx in (0..tw).filter(|&tx| self.awake[ty * tw + tx]) {
                let cells = tx * size..((tx + 1) * size).min(width);
                match runs.last_mut() {
                    Some(run) if run.end == cells.start => run.end = cells.end,
                    _ => runs.push(cells),
                }
            }
            self.runs.push(runs);
        }
        let awake = self.awake.iter().filter(|&&a| a).count();
        self.report.steps += 1;
        self.report.awake_tiles = awake as u32;
        self.report.cells_stepped += (0..self.awake.len()).filter(|&t| self.awake[t]).map(|t| self.tiles.cells_in(t)).sum::<u64>();
    }
}

/// The cells `run` of a row, split where the row's interior (`inner`) starts and ends: the
/// cells before it, in it, and after it.
#[inline]
fn split_run(run: &Range<usize>, inner: (usize, usize)) -> [Range<usize>; 3] {
    let (start, end) = inner;
    [run.start..run.end.min(start), run.start.max(start)..run.end.min(end), run.start.max(end)..run.end]
}

impl CpuBackend {
    /// A backend holding `state`.
    pub fn new(state: &State) -> Self {
        let n = state.grid.cell_count();
        CpuBackend {
            state: state.clone(),
            step_terrain: state.terrain.clone(),
            displacement: vec![0.0; n],
            displaced: Vec::new(),
            pending_nudges: Vec::new(),
            accelerated: vec![[0.0; 4]; n],
            old_flux: vec![[0.0; 4]; n],
            stored: vec![[0.0; 4]; n],
            sources: vec![Source::default(); n],
            carried: vec![[0.0; 4]; n],
            limits: vec![CellLimits::default(); n],
            fixed_flux_per_stored: None,
            triangular: false,
            counters: Counters::default(),
            frames: 0,
            snapshots: TileSnapshots::new(TileGrid::new(state.grid.width, state.grid.height, [CPU_TILE, CPU_TILE])),
            detail: None,
            queued_detail: None,
            detail_texels: None,
            sleeping: Sleeping::new(state.grid.width, state.grid.height, true),
            erosion: None,
            eroded: Vec::new(),
        }
    }

    /// A backend holding `state` with the detail layer of `self` kept on, its waves at rest.
    fn reloaded(&mut self, state: &State) -> Self {
        let mut fresh = CpuBackend::new(state);
        fresh.sleeping = Sleeping::new(state.grid.width, state.grid.height, self.sleeping.enabled);
        fresh.detail = self.detail.take().map(|mut d| {
            d.clear();
            d
        });
        fresh.erosion = self.erosion.as_ref().map(|e| Erosion::new(*e.params(), state));
        fresh
    }

    /// Marks the snapshot stale, keeping it for its buffers.
    fn invalidate_snapshot(&mut self) {
        self.snapshots.invalidate();
    }

    /// Tiles the last snapshot written computed: the rest kept the texels of the older snapshot
    /// it was written over ([`TileSnapshots`]).
    pub fn snapshot_tiles_written(&self) -> usize {
        self.snapshots.tiles_written()
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
    /// Marks the tiles of the cells it changed in `sleeping`.
    fn apply_water(depth: &mut [i32], cells: &[CellWater], sleeping: &Sleeping) -> (u64, u64) {
        let (mut added, mut removed) = (0u64, 0u64);
        for c in cells {
            let Some(d) = depth.get_mut(c.cell as usize) else { continue };
            let new = (*d as i64 + c.quanta as i64).clamp(0, MAX_DEPTH_QUANTA as i64) as i32;
            if new > *d {
                added += (new - *d) as u64;
            } else {
                removed += (*d - new) as u64;
            }
            if new != *d {
                sleeping.mark(c.cell);
            }
            *d = new;
        }
        (added, removed)
    }

    /// Applies the queued nudges to the pipes, as the GPU's `nudge_pipes` does.
    fn apply_nudges(&mut self, c: &StepConstants) {
        let w = c.width;
        for nudge in std::mem::take(&mut self.pending_nudges) {
            self.sleeping.mark(nudge.cell);
            self.snapshots.mark_around(nudge.cell);
            let i = nudge.cell as usize;
            let (x, y) = (nudge.cell % w, nudge.cell / w);
            for p in 0..4 {
                if !(c.pipe_active(p, y) && c.pipe_in_grid(x, y, p)) {
                    continue;
                }
                let (ox, oy) = PIPE_OFFSETS[p];
                let j = ((y as i32 + oy) as u32 * w + (x as i32 + ox) as u32) as usize;
                let carried = carried_depth(c, self.step_terrain[i], self.state.depth[i], self.step_terrain[j], self.state.depth[j]);
                let width = pipe_width(c, p, x, y);
                self.state.flow[i][p] = nudged_pipe(c, p, y, self.state.flow[i][p], [nudge.velocity_x, nudge.velocity_y], nudge.weight, width, carried);
            }
        }
    }

    /// A step's sources and drains, before it.
    fn apply_forcing(&mut self, forcing: &[CellWater]) {
        let (added, removed) = Self::apply_water(&mut self.state.depth, forcing, &self.sleeping);
        // Modulo 2⁶⁴, as the GPU's counters and `Counters::net` count.
        self.counters = self.counters.wrapping_add(Counters { added, removed, ..Counters::default() });
    }

    /// One step after its forcing: the edges' inflow, then accelerate, limit and transfer.
    fn step(&mut self, c: &StepConstants) {
        let (w, h) = (c.width as usize, c.height as usize);

        let inflow = AtomicU64::new(0);
        if c.boundary.contains(&crate::pipes::BOUNDARY_INFLOW) {
            let sleeping = &self.sleeping;
            self.state.depth.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                let mut entered = 0u64;
                for (x, d) in row.iter_mut().enumerate() {
                    let q = inflow_for_cell(c, x as u32, y as u32);
                    if q > 0 {
                        let new = (*d as i64 + q as i64).min(MAX_DEPTH_QUANTA as i64) as i32;
                        if new != *d {
                            sleeping.mark((y * w + x) as u32);
                        }
                        entered += (new - *d) as u64;
                        *d = new;
                    }
                }
                inflow.fetch_add(entered, Ordering::Relaxed);
            });
        }
        self.counters = self.counters.wrapping_add(Counters { boundary_in: inflow.into_inner(), ..Counters::default() });
        self.sleeping.plan(c);
        for t in (0..self.sleeping.awake.len()).filter(|&t| self.sleeping.awake[t]) {
            self.snapshots.mark(t);
        }
        let runs = &self.sleeping.runs;
        let tile = CPU_TILE as usize;

        let State { depth, flow, .. } = &mut self.state;
        let eight = c.eight_neighbours != 0;

        let terrain: &[f32] = &self.step_terrain;
        let depth_before: &[i32] = depth;
        let flow_before: &[[f32; 4]] = flow;
        let offsets = pipe_index_offsets(w);

        // Each phase steps only the awake tiles' cells: the runs of each row. What a phase reads
        // of a sleeping tile is what it computed there when it last ran, which is what it would
        // compute now (the tile and its neighbours have not changed since: `super::sleep`).

        // Phase 0 (advection): the depth that carries each owned pipe this step, its flux before
        // the step, and from those the
        // discharge at every cell's centre, split once per cell into what advection reads from
        // the cell as the source of a pipe's water ([`Source`]). Pipes that lead off the grid
        // (or diagonals in four-neighbour mode) carry nothing. Without advection phase 1 finds
        // each carried depth itself.
        let advects = c.advection != 0;
        // Only open, inflow and fixed-level edges move water across the grid's edge.
        let exchange = c.has_edge_exchange();
        if advects {
            self.carried.par_chunks_mut(w).zip(self.old_flux.par_chunks_mut(w)).enumerate().for_each(|(y, (carried_row, flux_row))| {
                let c = &advecting(c);
                // Cells with a neighbour on every side but above own all their pipes.
                let inner = if y + 1 < h && w > 2 { (1, w - 1) } else { (w, w) };
                let fields = StepFields { terrain, depth: depth_before, flow: flow_before, carried: &[], sources: &[], offsets, w, h, eight };
                for run in &runs[y / tile] {
                    let [before, interior, after] = split_run(run, inner);
                    for x in before {
                        (carried_row[x], flux_row[x]) = fields.carried_and_flux(c, x, y);
                    }
                    if !interior.is_empty() {
                        // Cell x reads columns x ..= x + 1 of row y and x − 1 ..= x + 1 of row
                        // y + 1: windows of them, so that no read needs a bounds check.
                        let (here, below) = (y * w, (y + 1) * w);
                        let (start, end) = (interior.start, interior.end);
                        let terrain_here = terrain[here + start..here + end + 1].windows(2);
                        let terrain_below = terrain[below + start - 1..below + end + 1].windows(3);
                        let depth_here = depth_before[here + start..here + end + 1].windows(2);
                        let depth_below = depth_before[below + start - 1..below + end + 1].windows(3);
                        let cells = carried_row[interior.clone()].iter_mut().zip(&mut flux_row[interior]).zip(&flow_before[here + start..here + end]);
                        let windows = terrain_here.zip(terrain_below).zip(depth_here.zip(depth_below));
                        for (((carried, flux), flow), ((terrain_here, terrain_below), (depth_here, depth_below))) in cells.zip(windows) {
                            (*carried, *flux) = interior_carried_and_flux(c, flow, terrain_here, terrain_below, depth_here, depth_below);
                        }
                    }
                    for x in after {
                        (carried_row[x], flux_row[x]) = fields.carried_and_flux(c, x, y);
                    }
                }
            });
            let old_flux = &self.old_flux;
            self.sources.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                // Local copies, which the compiler keeps in registers across the loop's stores.
                let (c, w, old_flux) = (&advecting(c), w, old_flux);
                let source = |leaving: [f32; 8]| Source::new(c, w, discharge(c.cell_size, &leaving));
                // Cells with a neighbour on every side but below.
                let inner = if y >= 1 && w > 2 { (1, w - 1) } else { (w, w) };
                for run in &runs[y / tile] {
                    let [before, interior, after] = split_run(run, inner);
                    for x in before {
                        row[x] = source(leaving_fluxes(old_flux, w, x, y, y * w + x));
                    }
                    if !interior.is_empty() {
                        // Cell x reads columns x − 1 ..= x + 1 of row y − 1 and x − 1 ..= x of
                        // row y: windows of them, so that no read needs a bounds check.
                        let (above, here) = old_flux[(y - 1) * w..(y + 1) * w].split_at(w);
                        let above = above[interior.start - 1..interior.end + 1].windows(3);
                        let here = here[interior.start - 1..interior.end].windows(2);
                        for ((out, above), here) in row[interior].iter_mut().zip(above).zip(here) {
                            *out = source(interior_leaving_fluxes(above, here));
                        }
                    }
                    for x in after {
                        row[x] = source(leaving_fluxes(old_flux, w, x, y, y * w + x));
                    }
                }
            });
        }

        // Phase 1: accelerate every owned pipe from the surface difference across it (with
        // advection, from the water upstream of it too): its flux this step, and what it will
        // keep before the limit.
        let fields = StepFields { terrain, depth: depth_before, flow: flow_before, carried: &self.carried, sources: &self.sources, offsets, w, h, eight };
        // One loop per mode, each in its own function, so that neither shares registers or code
        // with the other.
        let rows = self.accelerated.par_chunks_mut(w).zip(self.stored.par_chunks_mut(w)).enumerate();
        if advects {
            rows.for_each(|(y, (flux_row, stored_row))| {
                // A local copy, which the compiler keeps in registers across the loop's stores.
                let fields = fields;
                for run in &runs[y / tile] {
                    fields.run::<true>(&advecting(c), y, run, flux_row, stored_row);
                }
            });
        } else {
            rows.for_each(|(y, (flux_row, stored_row))| {
                let fields = fields;
                for run in &runs[y / tile] {
                    fields.run::<false>(&not_advecting(c), y, run, flux_row, stored_row);
                }
            });
        }

        // Phase 2: the limit factors of each cell from everything that wants to leave or enter it.
        let accelerated = &self.accelerated;
        self.limits.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for run in &runs[y / tile] {
                for x in run.clone() {
                    let i = y * w + x;
                    let leaving = leaving_fluxes(accelerated, w, x, y, i);
                    let edge = if exchange { edge_outflow(c, x as u32, y as u32, terrain[i], depth_before[i]) } else { 0.0 };
                    row[x] = cell_limits(c.flux_to_quanta, depth_before[i], &leaving, edge);
                }
            }
        });

        // Phase 3: move whole quanta; both ends of a pipe compute the same integer from the same
        // flux and limit factors. Owned pipes keep their limited flow. Each tile notes whether a
        // bit of it changed and whether its pipes still carry flow, for the next step's plan.
        let limits = &self.limits;
        let stored = &self.stored;
        let outflow = AtomicU64::new(0);
        let level_inflow = AtomicU64::new(0);
        let sleeping = &self.sleeping;
        let tiles_per_row = sleeping.tiles.tiles[0] as usize;
        depth.par_chunks_mut(w).zip(flow.par_chunks_mut(w)).enumerate().for_each(|(y, (depth_row, flow_row))| {
            let (mut left, mut entered) = (0u64, 0u64);
            let first_tile = (y / tile) * tiles_per_row;
            for run in &runs[y / tile] {
                let mut start = run.start;
                while start < run.end {
                    // The run's cells in one tile.
                    let end = ((start / tile + 1) * tile).min(run.end);
                    let (mut changed, mut moving) = (false, false);
                    for x in start..end {
                        let i = y * w + x;
                        let mut net: i64 = 0;
                        let mut kept = [0.0f32; 4];
                        for p in 0..4 {
                            // Owned pipe p, from i to i + offset: zero when it does not exist.
                            let f = accelerated[i][p];
                            if f != 0.0 {
                                let j = (i as isize + offsets[p]) as usize;
                                let k = transfer_limit(f, limits[i], limits[j]);
                                net -= pipe_quanta(c.flux_to_quanta, f, k) as i64;
                                kept[p] = kept_flow(stored[i][p], k);
                            }
                            // The same pipe owned by the cell at i − offset, pointing here.
                            if let Some(owner) = pipe_owner_towards(w, h, x, y, p) {
                                let f = accelerated[owner][p];
                                if f != 0.0 {
                                    let k = transfer_limit(f, limits[owner], limits[i]);
                                    net += pipe_quanta(c.flux_to_quanta, f, k) as i64;
                                }
                            }
                        }
                        let (bed, d) = (terrain[i], depth_row[x]);
                        let mut exchanged = false;
                        if exchange {
                            let edge = edge_outflow(c, x as u32, y as u32, bed, d);
                            if edge > 0.0 {
                                let gone = pipe_quanta(c.flux_to_quanta, edge, limits[i].outflow) as i64;
                                net -= gone;
                                left += gone as u64;
                                exchanged |= gone != 0;
                            }
                        }
                        let new = d as i64 + net;
                        debug_assert!((0..=MAX_DEPTH_QUANTA as i64).contains(&new), "cell {x},{y} left its range: {new}");
                        // Water from a fixed level beyond the edge, up to the deepest a cell holds.
                        let came = if exchange { level_edge_inflow_quanta(c, x as u32, y as u32, bed, d) as i64 } else { 0 };
                        let new_with_inflow = (new + came).min(MAX_DEPTH_QUANTA as i64);
                        entered += (new_with_inflow - new) as u64;
                        exchanged |= came != 0;
                        changed |= exchanged || new_with_inflow != d as i64 || kept.map(f32::to_bits) != flow_row[x].map(f32::to_bits);
                        moving |= kept != [0.0; 4];
                        depth_row[x] = new_with_inflow as i32;
                        flow_row[x] = kept;
                    }
                    let t = first_tile + start / tile;
                    if changed {
                        sleeping.changed[t].store(true, Ordering::Relaxed);
                    }
                    if moving {
                        sleeping.moving[t].store(true, Ordering::Relaxed);
                    }
                    start = end;
                }
            }
            outflow.fetch_add(left, Ordering::Relaxed);
            level_inflow.fetch_add(entered, Ordering::Relaxed);
        });
        self.counters = self.counters.wrapping_add(Counters { boundary_in: level_inflow.into_inner(), boundary_out: outflow.into_inner(), ..Counters::default() });
    }
}

/// A copy of the constants of a step that advects with the mode fields that this implies set
/// as literals, so that the compiler folds the branches on them in the loops that use it (and,
/// being local, knows that no store of those loops changes it).
#[inline(always)]
fn advecting(c: &StepConstants) -> StepConstants {
    debug_assert!(c.advection != 0 && c.depth_dependent != 0);
    let mut c = c.clone();
    c.advection = 1;
    c.depth_dependent = 1;
    c
}

/// [`advecting`] for a step that does not advect.
#[inline(always)]
fn not_advecting(c: &StepConstants) -> StepConstants {
    debug_assert!(c.advection == 0);
    let mut c = c.clone();
    c.advection = 0;
    c
}

/// What phases 0 and 1 read: the fields before the step and, in phase 1 with advection,
/// phase 0's carried depths and sources.
#[derive(Clone, Copy)]
struct StepFields<'a> {
    terrain: &'a [f32],
    depth: &'a [i32],
    flow: &'a [[f32; 4]],
    carried: &'a [[f32; 4]],
    sources: &'a [Source],
    offsets: [isize; 4],
    w: usize,
    h: usize,
    eight: bool,
}

impl StepFields<'_> {
    /// Phase 0 for cell `(x, y)`: the depth that carries each owned pipe and its flux before the
    /// step (zero where a pipe does not exist).
    #[inline(always)]
    fn carried_and_flux(&self, c: &StepConstants, x: usize, y: usize) -> ([f32; 4], [f32; 4]) {
        let i = y * self.w + x;
        let (mut carried, mut flux) = ([0.0; 4], [0.0; 4]);
        for p in 0..4 {
            if pipe_exists(self.eight, self.w, self.h, x, y, p) && c.pipe_active(p, y as u32) {
                let j = (i as isize + self.offsets[p]) as usize;
                carried[p] = carried_depth(c, self.terrain[i], self.depth[i], self.terrain[j], self.depth[j]);
                flux[p] = self.flow[i][p] * flux_per_stored(c, carried[p]);
            }
        }
        (carried, flux)
    }

    /// Phase 1 for the cells `run` of row `y`: the flux of every owned pipe this step and what
    /// it keeps before the limit. `ADVECTS` is whether `c` advects.
    #[inline(always)]
    fn run<const ADVECTS: bool>(&self, c: &StepConstants, y: usize, run: &Range<usize>, flux_row: &mut [[f32; 4]], stored_row: &mut [[f32; 4]]) {
        let w = self.w;
        // Two cells or more from every edge, every pipe exists, has its inner class, and every
        // pipe advection reads upstream lies on the grid.
        let inner = if y >= 2 && y + 2 < self.h && w > 4 { (2, w - 2) } else { (w, w) };
        let [before, interior, after] = split_run(run, inner);
        for x in before {
            (flux_row[x], stored_row[x]) = self.cell::<ADVECTS, false>(c, x, y);
        }
        for x in interior {
            (flux_row[x], stored_row[x]) = self.cell::<ADVECTS, true>(c, x, y);
        }
        for x in after {
            (flux_row[x], stored_row[x]) = self.cell::<ADVECTS, false>(c, x, y);
        }
    }

    /// Phase 1 for the owned pipes of cell `(x, y)`, two or more cells from every edge where
    /// `INTERIOR`: their fluxes and what they keep before the limit (zero where a pipe does not
    /// exist).
    #[inline(always)]
    fn cell<const ADVECTS: bool, const INTERIOR: bool>(&self, c: &StepConstants, x: usize, y: usize) -> ([f32; 4], [f32; 4]) {
        let (w, h) = (self.w, self.h);
        let i = y * w + x;
        let (x32, y32) = (x as u32, y as u32);
        let old = OldFields { c, flow: self.flow, sources: self.sources };
        // The cell's own depth in metres and half the cell size, for advection's water held
        // (pipes::held_water), once for the four pipes.
        let (depth_here, half_cell) = (self.depth[i] as f32 * DEPTH_QUANTUM, 0.5 * c.cell_size);
        let (mut fluxes, mut stored) = ([0.0; 4], [0.0; 4]);
        for p in 0..4 {
            let exists = if INTERIOR { c.pipe_active(p, y32) } else { pipe_exists(self.eight, w, h, x, y, p) && c.pipe_active(p, y32) };
            if !exists {
                continue;
            }
            let j = (i as isize + self.offsets[p]) as usize;
            let f = self.flow[i][p];
            let (bed_a, depth_a, bed_b, depth_b) = (self.terrain[i], self.depth[i], self.terrain[j], self.depth[j]);
            let class = if INTERIOR { INTERIOR_CLASSES[p] } else { pipe_class(c, p, x32, y32) };
            let new = if ADVECTS {
                accelerate_advecting(c, class, f, bed_a, depth_a, bed_b, depth_b, self.carried[i][p], |flow, depth_a, depth_b| {
                    if INTERIOR {
                        // depth_here is depth_a, converted once for the cell.
                        old.advect_interior(p, i, flow, class, held_water(depth_here, depth_b, half_cell))
                    } else {
                        old.advect_edge(p, x32, y32, flow, class, depth_a, depth_b)
                    }
                })
            } else {
                accelerate_carried(c, class, f, bed_a, depth_a, bed_b, depth_b, carried_depth(c, bed_a, depth_a, bed_b, depth_b), Upstream::default())
            };
            fluxes[p] = new.flux;
            stored[p] = new.stored;
        }
        (fluxes, stored)
    }
}

/// [`StepFields::carried_and_flux`] of a cell with a neighbour on every side but above, whose
/// stored pipes are `flow`: `terrain_here` and `depth_here` hold the cell and its right
/// neighbour, `terrain_below` and `depth_below` the three cells below them, left to right.
#[inline(always)]
fn interior_carried_and_flux(c: &StepConstants, flow: &[f32; 4], terrain_here: &[f32], terrain_below: &[f32], depth_here: &[i32], depth_below: &[i32]) -> ([f32; 4], [f32; 4]) {
    let (&[bed, bed_e], &[bed_sw, bed_s, bed_se]) = (terrain_here, terrain_below) else {
        unreachable!("windows of two and three cells")
    };
    let (&[depth, depth_e], &[depth_sw, depth_s, depth_se]) = (depth_here, depth_below) else {
        unreachable!("windows of two and three cells")
    };
    // The far ends of the pipes E, S, SE, SW.
    let ends = [(bed_e, depth_e), (bed_s, depth_s), (bed_se, depth_se), (bed_sw, depth_sw)];
    let (mut carried, mut flux) = ([0.0; 4], [0.0; 4]);
    // Only advection reads these, and it never runs on the triangular lattice (Params::advects),
    // so no row's parity masks a diagonal here.
    debug_assert!(!c.triangular());
    for p in 0..4 {
        if !is_diagonal(p) || c.eight_neighbours != 0 {
            carried[p] = carried_depth(c, bed, depth, ends[p].0, ends[p].1);
            flux[p] = flow[p] * flux_per_stored(c, carried[p]);
        }
    }
    (carried, flux)
}

/// What advection reads from a cell as the source of a pipe's water: [`upstream_split`] of the
/// discharge at its centre, as [`advection_weights`], computed once per cell in phase 0.
#[derive(Debug, Clone, Copy, Default)]
struct Source {
    /// [`advection_weights`] of the two parts.
    weights: [f32; 2],
    /// `weights[0] + weights[1]`.
    total: f32,
    /// The two grid offsets `(dx, dy)` of the parts as `dy·stride + dx` ([`Source::stride`]):
    /// on grids wide enough to have interior cells the index offsets, so that the displaced
    /// pipe of cell `i` lies at `i − delta`.
    deltas: [i32; 2],
}

impl Source {
    /// The source data of a cell whose discharge is `q`, on a grid `w` cells wide.
    #[inline]
    fn new(c: &StepConstants, w: usize, q: [f32; 2]) -> Self {
        let (offsets, parts) = upstream_split(c, q);
        let weights = advection_weights(c, parts);
        let stride = Self::stride(w);
        Source { weights, total: weights[0] + weights[1], deltas: offsets.map(|(dx, dy)| dy * stride + dx) }
    }

    /// What a grid offset's `dy` is multiplied by in [`Source::deltas`]: the grid's width, or 3
    /// on grids narrower than that, so that every offset has its own delta.
    #[inline]
    fn stride(w: usize) -> i32 {
        (w as i32).max(3)
    }

    /// The grid offsets `(dx, dy)` of the parts, on a grid `w` cells wide.
    #[inline]
    fn offsets(&self, w: usize) -> [(i32, i32); 2] {
        let stride = Self::stride(w);
        self.deltas.map(|d| {
            // d = dy·stride + dx with dx in -1..=1 and stride ≥ 3.
            let dy = (d + 1).div_euclid(stride);
            (d - dy * stride, dy)
        })
    }
}

/// What phase 1's advection reads: the pipes' flows before the step and phase 0's sources. A
/// part of [`StepFields`] kept apart and copied per cell: with these methods on `StepFields`
/// the advecting step took 1.2 % more instructions with every cell moving (registers).
#[derive(Clone, Copy)]
struct OldFields<'a> {
    c: &'a StepConstants,
    flow: &'a [[f32; 4]],
    sources: &'a [Source],
}

impl OldFields<'_> {
    /// [`crate::pipes::advect`] of owned pipe `p` (class `class`) of cell `(x, y)`, whose flow
    /// is `flow`, between cells `depth_a` and `depth_b` m deep.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn advect_edge(&self, p: usize, x: u32, y: u32, flow: f32, class: usize, depth_a: f32, depth_b: f32) -> f32 {
        let c = self.c;
        if flow == 0.0 {
            // No upstream: nothing is advected.
            return flow;
        }
        let w = c.width as usize;
        let (ox, oy) = PIPE_OFFSETS[p];
        let (ux, uy) = if flow > 0.0 { (x, y) } else { ((x as i64 + ox as i64) as u32, (y as i64 + oy as i64) as u32) };
        let source = self.sources[uy as usize * w + ux as usize];
        let own = flow * c.inverse_widths[pipe_class(c, p, x, y)];
        let velocity = source.offsets(w).map(|(dx, dy)| displaced_velocity(c, self.flow, p, x, y, dx, dy, own));
        advect_weighted(c, flow, class, depth_a, depth_b, source.weights, source.total, velocity)
    }

    /// [`Self::advect_edge`] for owned pipe `p` of cell `i`, two or more cells from every edge of
    /// the grid, over a wet face whose cells hold `held` ([`held_water`], positive: one of them
    /// holds water): every displaced pipe lies on the grid, with its inner class.
    #[inline]
    fn advect_interior(&self, p: usize, i: usize, flow: f32, class: usize, held: f32) -> f32 {
        let c = self.c;
        if flow == 0.0 {
            return flow;
        }
        let w = c.width as usize;
        let (ox, oy) = PIPE_OFFSETS[p];
        let source = if flow > 0.0 { i } else { (i as isize + oy as isize * w as isize + ox as isize) as usize };
        debug_assert!(source < self.sources.len() && self.sources.len() == c.width as usize * c.height as usize);
        // SAFETY: `source` is cell `i` or its neighbour through pipe `p`, both on the grid, and
        // `sources` holds one entry per cell.
        let source = unsafe { *self.sources.get_unchecked(source) };
        if source.total <= 0.0 {
            // Still water upstream: advect_weighted returns the flow whatever the velocities.
            return flow;
        }
        let inverse = c.inverse_widths[class];
        let velocity = source.deltas.map(|d| {
            let j = (i as isize - d as isize) as usize;
            debug_assert!(j < self.flow.len() && self.flow.len() == c.width as usize * c.height as usize);
            // SAFETY: cell `i` lies two or more cells from every edge of the grid, and `d` is
            // `dy·w + dx` with `dx` and `dy` in -1..=1 (`Source::new` on this grid, whose stride
            // is `w` since a grid with interior cells is more than 4 wide), so `j` is the index
            // of a cell of the grid, and `flow` holds one entry per cell.
            unsafe { self.flow.get_unchecked(j)[p] * inverse }
        });
        debug_assert!(held > 0.0);
        advect_held(c, flow, class, held, source.weights, source.total, velocity)
    }
}

/// The class of each owned pipe of a cell away from the grid's edges ([`pipe_class`]).
const INTERIOR_CLASSES: [usize; 4] = [CLASS_ORTHOGONAL, CLASS_ORTHOGONAL, CLASS_DIAGONAL, CLASS_DIAGONAL];

/// Velocity (m/s) along pipe `p` of the pipe of the same direction displaced from the one owned
/// by `(x, y)` by `−(dx, dy)` (its velocity `own`): its flow over its width where it lies on the
/// grid, and `own` where it would reach beyond the grid's edge, so that an edge neither drags
/// the water along it nor pushes it (a free-slip, zero-gradient edge).
#[allow(clippy::too_many_arguments)]
#[inline]
fn displaced_velocity(c: &StepConstants, flow: &[[f32; 4]], p: usize, x: u32, y: u32, dx: i32, dy: i32, own: f32) -> f32 {
    let (ox, oy) = PIPE_OFFSETS[p];
    let inside = |x: i64, y: i64| x >= 0 && y >= 0 && x < c.width as i64 && y < c.height as i64;
    let (sx, sy) = (x as i64 - dx as i64, y as i64 - dy as i64);
    if inside(sx, sy) && inside(sx + ox as i64, sy + oy as i64) {
        flow[sy as usize * c.width as usize + sx as usize][p] * c.inverse_widths[pipe_class(c, p, sx as u32, sy as u32)]
    } else {
        own
    }
}

/// Whether owned pipe `p` of cell `(x, y)` exists: its far end lies on the `w × h` grid, and
/// diagonals only with eight neighbours.
#[inline]
fn pipe_exists(eight: bool, w: usize, h: usize, x: usize, y: usize, p: usize) -> bool {
    let below = y + 1 < h;
    match p {
        0 => x + 1 < w,
        1 => below,
        2 => eight && below && x + 1 < w,
        _ => eight && below && x > 0,
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

/// [`leaving_fluxes`] of a cell that has neighbours left, right and above: every pipe exists, so
/// no edge tests. `here` holds the cell's left neighbour and the cell, `above` the three cells
/// above them.
#[inline(always)]
fn interior_leaving_fluxes(above: &[[f32; 4]], here: &[[f32; 4]]) -> [f32; 8] {
    let (&[left, own], &[above_left, above, above_right]) = (here, above) else {
        unreachable!("windows of two and three cells")
    };
    [own[0], own[1], own[2], own[3], -left[0], -above[1], -above_left[2], -above_right[3]]
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn description(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }

    fn load(&mut self, state: &State) -> Result<()> {
        *self = self.reloaded(state);
        Ok(())
    }

    fn restore(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()> {
        if state.grid != self.state.grid {
            return Err(Error::invalid("restored grid", format!("{:?}", state.grid), format!("{:?}", self.state.grid)));
        }
        *self = self.reloaded(state);
        self.counters = counters;
        self.frames = frames;
        Ok(())
    }

    fn restore_rows(&mut self, state: &State, rows: std::ops::Range<u32>) -> Result<bool> {
        if state.grid != self.state.grid {
            return Err(Error::invalid("restored grid", format!("{:?}", state.grid), format!("{:?}", self.state.grid)));
        }
        let w = state.grid.width as usize;
        let cells = rows.start as usize * w..(rows.end as usize * w).min(state.terrain.len());
        // The snapshot is left as it is: queries see the water being replaced until the end.
        self.state.terrain[cells.clone()].copy_from_slice(&state.terrain[cells.clone()]);
        self.state.depth[cells.clone()].copy_from_slice(&state.depth[cells.clone()]);
        self.state.flow[cells.clone()].copy_from_slice(&state.flow[cells.clone()]);
        self.step_terrain[cells.clone()].copy_from_slice(&state.terrain[cells.clone()]);
        self.displacement[cells].fill(0.0);
        Ok(true)
    }

    fn finish_restore(&mut self, restored: &super::RestoredState, rows_written: bool) -> Result<()> {
        let point = &restored.point;
        if !rows_written {
            return self.restore(&point.state, point.counters, point.frame);
        }
        // What `reloaded` starts over, keeping the buffers: the step's scratch fields are written
        // before they are read once every tile is awake, as they are at the first step.
        self.displaced.clear();
        self.pending_nudges.clear();
        self.fixed_flux_per_stored = None;
        self.counters = point.counters;
        self.frames = point.frame;
        self.snapshots.invalidate();
        self.snapshots.mark_all();
        let g = self.state.grid;
        self.sleeping = Sleeping::new(g.width, g.height, self.sleeping.enabled);
        if let Some(detail) = &mut self.detail {
            detail.clear();
        }
        self.queued_detail = None;
        self.detail_texels = None;
        if let Some(erosion) = &self.erosion {
            self.erosion = Some(Erosion::new(*erosion.params(), &self.state));
        }
        Ok(())
    }

    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome> {
        let (added, removed) = Self::apply_water(&mut self.state.depth, cells, &self.sleeping);
        self.counters = self.counters.wrapping_add(Counters { added, removed, ..Counters::default() });
        for c in cells {
            self.snapshots.mark_around(c.cell);
        }
        self.invalidate_snapshot();
        Ok(EditOutcome::Applied { added, removed })
    }

    fn overwrite_cells(&mut self, cells: &[crate::simulation::CellOverwrite]) -> Result<bool> {
        let (sleeping, snapshots) = (&mut self.sleeping, &mut self.snapshots);
        let booked = crate::simulation::write_overwrites(&mut self.state.depth, &mut self.state.flow, cells, |cell| {
            // As a nudge of the pipes does: the tile and its neighbours step next, and the
            // snapshot redraws around the cell.
            sleeping.mark(cell);
            snapshots.mark_around(cell);
        });
        self.counters = self.counters.wrapping_add(booked);
        self.invalidate_snapshot();
        Ok(true)
    }

    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        for c in cells {
            let i = c.cell as usize;
            if let Some(b) = self.state.terrain.get_mut(i) {
                // With erosion on, the edit acts on the uneroded ground and the terrain is
                // composed again from it (`crate::erosion::compose`).
                *b = match self.erosion.as_mut().and_then(|e| e.edit_ground(i, c.delta)) {
                    Some(eroded) => eroded,
                    None => (*b + c.delta).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS),
                };
                self.step_terrain[i] = *b + self.displacement[i];
                self.sleeping.mark(c.cell);
                self.snapshots.mark_around(c.cell);
            }
        }
        self.invalidate_snapshot();
        Ok(())
    }

    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        check_terrain(&self.state.grid, terrain)?;
        if let Some(erosion) = &mut self.erosion {
            erosion.replace_ground(terrain)?;
        }
        self.state.terrain.copy_from_slice(terrain);
        for ((step, &bed), &head) in self.step_terrain.iter_mut().zip(terrain).zip(&self.displacement) {
            *step = bed + head;
        }
        self.sleeping.wake_all();
        self.snapshots.mark_all();
        self.invalidate_snapshot();
        Ok(())
    }

    fn set_displacement(&mut self, cells: &[CellDisplacement]) -> Result<()> {
        let n = self.displacement.len();
        check_displacement(cells, n)?;
        for change in displacement_changes(&mut self.displaced, cells) {
            let i = change.cell as usize;
            self.displacement[i] = change.head;
            self.step_terrain[i] = self.state.terrain[i] + change.head;
            self.sleeping.mark(change.cell);
        }
        Ok(())
    }

    fn nudge_pipes(&mut self, nudges: &[PipeNudge]) -> Result<()> {
        check_nudges(nudges, self.displacement.len())?;
        self.pending_nudges.extend_from_slice(nudges);
        Ok(())
    }

    fn advance(&mut self, plan: &FramePlan) -> Result<()> {
        let g = self.state.grid;
        if plan.constants.width != g.width || plan.constants.height != g.height {
            return Err(Error::invalid("plan grid", format!("{}x{}", plan.constants.width, plan.constants.height), format!("{}x{}", g.width, g.height)));
        }
        self.apply_nudges(&plan.constants);
        self.sleeping.report.steps = 0;
        self.sleeping.report.cells_stepped = 0;
        let fixed = fixed_flux_per_stored(&plan.constants);
        // The detail layer reads this frame's flow texels.
        let triangular_before = std::mem::replace(&mut self.triangular, plan.constants.triangular());
        if plan.substeps == 0 {
            self.advance_detail(fixed)?;
        }
        for substep in 0..plan.substeps {
            self.apply_forcing(plan.forcing);
            if substep == 0 {
                self.advance_detail(fixed)?;
            }
            if let Some(erosion) = &mut self.erosion {
                erosion.record.depth_before.copy_from_slice(&self.state.depth);
            }
            self.step(&plan.constants);
            if self.erosion.is_some() {
                self.erode(&plan.constants, fixed);
            }
        }
        if fixed.map(f32::to_bits) != self.fixed_flux_per_stored.map(f32::to_bits) || triangular_before != self.triangular {
            // What every cell's flow texels show changed.
            self.snapshots.mark_all();
        }
        self.fixed_flux_per_stored = fixed;
        self.frames += 1;
        self.invalidate_snapshot();
        Ok(())
    }

    fn solidify(&mut self, c: &StepConstants, quanta: i32) -> Result<bool> {
        // Still cells sleep, and cooling must reach them: every cell is judged, and a cell that
        // changes wakes its tile (its surface stays where it was, but its bed does not).
        let depth_before = self.erosion.is_some().then(|| self.state.depth.clone());
        let (turned, changed) = crate::cooling::solidify(c, &mut self.state, &self.step_terrain, quanta);
        for &cell in &changed {
            let i = cell as usize;
            // With erosion on, the rock joins the uneroded ground the terrain is composed from
            // (as a terrain edit does): written to the terrain alone, the next erosion step that
            // changed this cell's ground would compose it away. `fits · 2⁻²⁰` is exact, so the
            // ground rises as `raised_bed` raises a bed.
            if let (Some(erosion), Some(before)) = (self.erosion.as_mut(), &depth_before) {
                if let Some(composed) = erosion.edit_ground(i, (before[i] - self.state.depth[i]) as f32 * DEPTH_QUANTUM) {
                    self.state.terrain[i] = composed;
                }
            }
            self.step_terrain[i] = self.state.terrain[i] + self.displacement[i];
            self.sleeping.mark(cell);
            self.snapshots.mark_around(cell);
        }
        if !changed.is_empty() {
            self.invalidate_snapshot();
        }
        self.counters.solidified = self.counters.solidified.wrapping_add(turned);
        Ok(true)
    }

    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        Some(self.snapshots.get(&self.state, self.frames, self.counters, self.fixed_flux_per_stored, self.triangular))
    }

    fn read_state(&mut self) -> Result<State> {
        Ok(self.state.clone())
    }

    fn read_counters(&mut self) -> Result<Counters> {
        Ok(self.counters)
    }

    fn set_sleeping(&mut self, on: bool) {
        if on != self.sleeping.enabled {
            self.sleeping.enabled = on;
            self.sleeping.report.enabled = on;
            self.sleeping.wake_all();
        }
    }

    fn sleep_report(&self) -> Option<SleepReport> {
        Some(self.sleeping.report)
    }

    fn awake_tiles(&mut self) -> Option<AwakeTiles> {
        Some(AwakeTiles { tiles: self.sleeping.tiles, awake: self.sleeping.awake.clone() })
    }

    fn take_changed_tiles(&mut self) -> Option<AwakeTiles> {
        Some(AwakeTiles { tiles: self.sleeping.tiles, awake: self.sleeping.take_changed() })
    }

    fn read_depth(&mut self, which: Option<(&TileGrid, &[bool])>, depth: &mut [i32]) -> Result<()> {
        super::copy_tiles(&self.state.depth, which, depth)
    }

    fn read_flow(&mut self, which: Option<(&TileGrid, &[bool])>, flow: &mut [[f32; 4]]) -> Result<()> {
        super::copy_tiles(&self.state.flow, which, flow)
    }

    fn read_tiles(&mut self, tiles: &TileGrid, which: &[u32], out: &mut super::TileChanges) -> Result<()> {
        out.gather(tiles, which, &self.state.depth, &self.state.flow)
    }

    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        self.detail = layout.map(CpuDetail::new);
        self.queued_detail = None;
        self.detail_texels = None;
        Ok(())
    }

    fn queue_detail(&mut self, frame: DetailFrame) -> Result<()> {
        if self.detail.is_some() {
            self.queued_detail = Some(frame);
        }
        Ok(())
    }

    fn detail_heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        match &self.detail {
            Some(d) => cells.iter().map(|&g| d.height(g)).collect(),
            None => vec![0.0; cells.len()],
        }
    }

    fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        if self.detail_texels.is_none() {
            self.detail_texels = self.detail.as_ref()?.texels().map(Arc::new);
        }
        self.detail_texels.clone()
    }

    fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        match &self.detail {
            Some(d) => Ok(d.fields().to_vec()),
            None => Err(Error::invalid("detail waves", "off", "on (configure_detail)")),
        }
    }

    fn configure_erosion(&mut self, params: Option<ErosionParams>) -> Result<()> {
        match (params, &mut self.erosion) {
            (None, _) => self.erosion = None,
            (Some(p), Some(erosion)) => erosion.set_params(p)?,
            (Some(p), None) => {
                p.validate()?;
                self.erosion = Some(Erosion::new(p, &self.state));
            }
        }
        Ok(())
    }

    fn read_erosion(&mut self) -> Result<Option<ErosionFields>> {
        Ok(self.erosion.as_ref().map(Erosion::fields))
    }
}

impl CpuBackend {
    /// The erosion pass after a step of constants `c` ([`crate::erosion`]): records the whole
    /// quanta the step moved through each pipe and across the edges (the same integers phase 3
    /// applied, from the same fluxes and limit factors; zero in sleeping tiles, which moved
    /// none), runs the pass, and treats the ground it changed as a terrain edit (the step's bed,
    /// the sleeping tiles and the snapshot follow).
    fn erode(&mut self, c: &StepConstants, fixed: Option<f32>) {
        let Some(erosion) = self.erosion.as_mut() else { return };
        let (w, h) = (c.width as usize, c.height as usize);
        let offsets = pipe_index_offsets(w);
        let (accelerated, limits, terrain) = (&self.accelerated, &self.limits, &self.step_terrain);
        let exchange = c.has_edge_exchange();
        let inflow = c.boundary.contains(&crate::pipes::BOUNDARY_INFLOW);
        let runs = &self.sleeping.runs;
        let tile = CPU_TILE as usize;
        let record = &mut erosion.record;
        record
            .transfers
            .par_chunks_mut(w)
            .zip(record.edge_out.par_chunks_mut(w))
            .zip(record.depth_before.par_chunks_mut(w))
            .enumerate()
            .for_each(|(y, ((transfer_row, edge_row), depth_row))| {
                transfer_row.fill([0; 4]);
                edge_row.fill(0);
                for run in &runs[y / tile] {
                    for x in run.clone() {
                        let i = y * w + x;
                        // The water phase 3 moved: the step added the edges' inflow first.
                        if inflow {
                            depth_row[x] = (depth_row[x] as i64 + inflow_for_cell(c, x as u32, y as u32).max(0) as i64).min(MAX_DEPTH_QUANTA as i64) as i32;
                        }
                        for p in 0..4 {
                            let f = accelerated[i][p];
                            if f != 0.0 {
                                let j = (i as isize + offsets[p]) as usize;
                                transfer_row[x][p] = pipe_quanta(c.flux_to_quanta, f, transfer_limit(f, limits[i], limits[j]));
                            }
                        }
                        if exchange {
                            let edge = edge_outflow(c, x as u32, y as u32, terrain[i], depth_row[x]);
                            if edge > 0.0 {
                                edge_row[x] = pipe_quanta(c.flux_to_quanta, edge, limits[i].outflow);
                            }
                        }
                    }
                }
            });
        debug_assert!(h == self.state.grid.height as usize);
        let eroded = &mut self.eroded;
        eroded.clear();
        erosion.step(&mut self.state, fixed, c.dt, c.eight_neighbours != 0, |i| eroded.push(i as u32));
        for &cell in &self.eroded {
            let i = cell as usize;
            self.step_terrain[i] = self.state.terrain[i] + self.displacement[i];
            self.sleeping.mark(cell);
            self.snapshots.mark_around(cell);
        }
    }
}

impl CpuBackend {
    /// The detail layer's frame over the water the frame's first step reads
    /// ([`Backend::queue_detail`]), whose flow texels `fixed` gives the pipes' fixed conductance.
    fn advance_detail(&mut self, fixed: Option<f32>) -> Result<()> {
        let (Some(detail), Some(frame)) = (self.detail.as_mut(), self.queued_detail.take()) else { return Ok(()) };
        let state = &self.state;
        let triangular = self.triangular;
        detail.advance(&frame, |x, y| state.cell_texels(x, y, fixed, triangular))?;
        self.detail_texels = None;
        Ok(())
    }
}

