//! The fields of a simulation, and the read-only snapshot that queries and textures use.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::pipes::{discharge, velocity, PIPE_OFFSETS};
use crate::quanta::{depth_to_quanta, quanta_to_depth, MAX_DEPTH};
use rayon::prelude::*;

/// Largest terrain height magnitude, m. Keeps surface differences far from `f32` overflow.
pub const MAX_TERRAIN_ABS: f32 = 1.0e6;

/// Depth (m) above which a cell counts as wet in the height texture's alpha channel.
pub const WET_DEPTH: f32 = 1.0e-3;

/// The full state of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// Grid the fields live on.
    pub grid: Grid,
    /// Terrain height per cell, local metres, row-major.
    pub terrain: Vec<f32>,
    /// Water depth per cell, in quanta of [`crate::DEPTH_QUANTUM`] metres.
    pub depth: Vec<i32>,
    /// Owned pipe fluxes per cell (E, S, SE, SW), m³/s, positive leaving the owner.
    pub flux: Vec<[f32; 4]>,
}

impl State {
    /// A dry state over flat ground at height 0.
    pub fn new(grid: Grid) -> Self {
        let n = grid.cell_count();
        State { grid, terrain: vec![0.0; n], depth: vec![0; n], flux: vec![[0.0; 4]; n] }
    }

    /// A state with the given terrain (validated) and no water.
    pub fn with_terrain(grid: Grid, terrain: Vec<f32>) -> Result<Self> {
        check_terrain(&grid, &terrain)?;
        let mut state = State::new(grid);
        state.terrain = terrain;
        Ok(state)
    }

    /// Fills every cell whose terrain lies below `level` up to `level` (local metres).
    pub fn fill_to_level(&mut self, level: f32) {
        for (d, &b) in self.depth.iter_mut().zip(&self.terrain) {
            *d = depth_to_quanta((level - b).clamp(0.0, MAX_DEPTH));
        }
    }

    /// Water depth of cell `i`, m.
    #[inline]
    pub fn depth_m(&self, i: usize) -> f32 {
        quanta_to_depth(self.depth[i])
    }

    /// Total water, in quanta.
    pub fn total_quanta(&self) -> i64 {
        self.depth.iter().map(|&d| d as i64).sum()
    }

    /// Flux leaving cell `(x, y)` towards each of its eight neighbours (see
    /// [`crate::pipes::NEIGHBOUR_OFFSETS`]); pipes leading off the grid read zero.
    pub fn outgoing_fluxes(&self, x: u32, y: u32) -> [f32; 8] {
        let g = &self.grid;
        let mut out = [0.0; 8];
        let i = g.index(x, y);
        out[..4].copy_from_slice(&self.flux[i]);
        for p in 0..4 {
            // The neighbour at −offset owns pipe p pointing at this cell.
            let (ox, oy) = PIPE_OFFSETS[p];
            let (nx, ny) = (x as i64 - ox as i64, y as i64 - oy as i64);
            if nx >= 0 && ny >= 0 && nx < g.width as i64 && ny < g.height as i64 {
                out[4 + p] = -self.flux[g.index(nx as u32, ny as u32)][p];
            }
        }
        out
    }

    /// Builds the snapshot that queries and textures read (rows in parallel).
    pub fn snapshot(&self, sequence: u64, counters: Counters) -> Snapshot {
        let g = self.grid;
        let w = g.width as usize;
        let mut height = vec![[0.0f32; 4]; g.cell_count()];
        let mut flow = vec![[0.0f32; 4]; g.cell_count()];
        let (max_speed, max_depth) = height
            .par_chunks_mut(w)
            .zip(flow.par_chunks_mut(w))
            .enumerate()
            .map(|(y, (height_row, flow_row))| {
                let mut extremes = (0.0f32, 0.0f32);
                for x in 0..w {
                    let i = y * w + x;
                    let d = self.depth_m(i);
                    let b = self.terrain[i];
                    let q = discharge(g.cell_size, &self.outgoing_fluxes(x as u32, y as u32));
                    let v = velocity(q, d);
                    let speed = v[0].hypot(v[1]);
                    height_row[x] = [b + d, d, b, if d > WET_DEPTH { 1.0 } else { 0.0 }];
                    flow_row[x] = [v[0], v[1], speed, q[0].hypot(q[1])];
                    extremes = (extremes.0.max(speed), extremes.1.max(d));
                }
                extremes
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
        Snapshot { grid: g, sequence, height, flow, total_quanta: self.total_quanta(), counters, max_speed, max_depth }
    }
}

/// Validates a terrain array: one finite value per cell, within ±[`MAX_TERRAIN_ABS`].
pub fn check_terrain(grid: &Grid, terrain: &[f32]) -> Result<()> {
    if terrain.len() != grid.cell_count() {
        return Err(Error::WrongLength { name: "terrain", expected: grid.cell_count(), actual: terrain.len() });
    }
    if let Some((i, v)) = terrain.iter().enumerate().find(|(_, v)| !v.is_finite() || v.abs() > MAX_TERRAIN_ABS) {
        return Err(Error::invalid("terrain", format!("{v} at cell {i}"), format!("finite, -{MAX_TERRAIN_ABS} ..= {MAX_TERRAIN_ABS} m")));
    }
    Ok(())
}

/// Cumulative water moved across the domain's limits since the state was loaded, in quanta.
/// Together with the initial total they give the mass identity
/// `total = initial + added − removed + boundary_in − boundary_out`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Added by edits and sources.
    pub added: u64,
    /// Removed by edits and drains (what was really there to remove).
    pub removed: u64,
    /// Entered through inflow edges.
    pub boundary_in: u64,
    /// Left through open edges.
    pub boundary_out: u64,
}

impl Counters {
    /// Net change of total water these counters account for, quanta.
    pub fn net(&self) -> i64 {
        self.added as i64 - self.removed as i64 + self.boundary_in as i64 - self.boundary_out as i64
    }
}

/// What queries and textures read: per-cell values in the documented texture layouts, and the
/// totals that belong to the same instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Grid of the fields.
    pub grid: Grid,
    /// Number of frames advanced when this snapshot was taken.
    pub sequence: u64,
    /// Height texels: (surface height m, depth m, terrain height m, 1 if wet else 0).
    pub height: Vec<[f32; 4]>,
    /// Flow texels: (velocity along local +X m/s, velocity along local +Z m/s, speed m/s,
    /// discharge per metre of width m²/s).
    pub flow: Vec<[f32; 4]>,
    /// Total water, quanta.
    pub total_quanta: i64,
    /// Ledger counters at the same instant.
    pub counters: Counters,
    /// Largest flow speed over the grid, m/s, for choosing the next step length.
    pub max_speed: f32,
    /// Largest depth over the grid, m, for choosing the next step length.
    pub max_depth: f32,
}
