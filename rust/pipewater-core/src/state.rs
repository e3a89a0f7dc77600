//! The fields of a simulation, and the read-only snapshot that queries and textures use.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::params::Params;
use crate::pipes::{carried_depth, centre_velocity, discharge, face_depth, flux_per_stored, lattice_discharge_and_velocity, pipe_direction, pipe_width, stored_for_flux, StepConstants, NEIGHBOUR_OFFSETS, PIPE_OFFSETS};
use crate::quanta::{depth_to_quanta, quanta_to_depth, MAX_DEPTH, MAX_TERRAIN_ABS};
use rayon::prelude::*;
use std::sync::Arc;

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
    /// Flow of each owned pipe per cell (E, S, SE, SW), m²/s, positive leaving the owner: the
    /// velocity of the water in the pipe times the pipe's width. A pipe carries its flow times
    /// its [`crate::pipes::carried_depth`] in m³/s. In depth-dependent mode without momentum
    /// advection (the pressure-only pipe model) pipes keep their flux, m³/s, instead
    /// ([`crate::pipes::flux_per_stored`]).
    pub flow: Vec<[f32; 4]>,
}

impl State {
    /// A dry state over flat ground at height 0.
    pub fn new(grid: Grid) -> Self {
        let n = grid.cell_count();
        State { grid, terrain: vec![0.0; n], depth: vec![0; n], flow: vec![[0.0; 4]; n] }
    }

    /// A state with the given terrain (validated) and no water.
    pub fn with_terrain(grid: Grid, terrain: Vec<f32>) -> Result<Self> {
        check_terrain(&grid, &terrain)?;
        let mut state = State::new(grid);
        state.terrain = terrain;
        Ok(state)
    }

    /// Fills every cell whose terrain lies below `level` up to `level` (local metres).
    ///
    /// Fails, leaving the water as it was, when `level` stands more than [`MAX_DEPTH`] above the
    /// lowest terrain ([`State::check_fill_level`]).
    pub fn fill_to_level(&mut self, level: f32) -> Result<()> {
        self.check_fill_level(level)?;
        for (d, &b) in self.depth.iter_mut().zip(&self.terrain) {
            // f64: for terrain near ±1e6 m an f32 difference would round by metres.
            *d = depth_to_quanta((level as f64 - b as f64).max(0.0) as f32);
        }
        Ok(())
    }

    /// Whether [`State::fill_to_level`] can fill to `level`: an error naming the limit and the
    /// highest level that fits this terrain when `level` stands more than [`MAX_DEPTH`] above its
    /// lowest ground (no cell holds that much water), or is not finite.
    pub fn check_fill_level(&self, level: f32) -> Result<()> {
        let Some(i) = (0..self.terrain.len()).min_by(|&a, &b| self.terrain[a].total_cmp(&self.terrain[b])) else { return Ok(()) };
        let floor = self.terrain[i];
        if level.is_finite() && level as f64 - floor as f64 <= MAX_DEPTH as f64 {
            return Ok(());
        }
        let (x, y) = (i as u32 % self.grid.width, i as u32 / self.grid.width);
        Err(Error::invalid(
            "level",
            format!("{level} m"),
            format!(
                "-{MAX_TERRAIN_ABS} ..= {} m on this terrain: its lowest ground is {floor} m (cell ({x}, {y})), and a cell holds at most {MAX_DEPTH} m of water",
                floor as f64 + MAX_DEPTH as f64
            ),
        ))
    }

    /// The state a snapshot shows, as far as its texels tell: terrain and depth from the height
    /// texels (depth rounded to whole quanta: exact below 16 m, within `f32` rounding deeper),
    /// each pipe's flow from the velocities of its two cells ([`State::set_velocity`] with
    /// `params`). What a simulation recovers when the device that held the fields is lost.
    pub fn from_snapshot(snapshot: &Snapshot, params: &Params) -> State {
        let g = snapshot.grid;
        let finite = |v: f32| if v.is_finite() { v } else { 0.0 };
        let mut state = State::new(g);
        for (i, texel) in snapshot.height.iter().enumerate() {
            state.terrain[i] = finite(texel[2]).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
            state.depth[i] = depth_to_quanta(finite(texel[1]));
        }
        let w = g.width;
        state.set_velocity(params, |x, y| {
            let v = snapshot.flow[(y * w + x) as usize];
            [finite(v[0]), finite(v[1])]
        });
        state
    }

    /// Sets every pipe's flow so that the water moves with `velocity(x, y)` (m/s along grid x and
    /// y, i.e. local X and Z) for the pipe widths of `params`: each pipe's flow is its width
    /// times the mean velocity of its two cells along the pipe. For uniform
    /// flow the cells' velocity ([`Snapshot`]'s flow texels) is exactly `velocity` wherever the
    /// water is level. Pipes over dry faces carry nothing.
    pub fn set_velocity(&mut self, params: &Params, velocity: impl Fn(u32, u32) -> [f32; 2]) {
        let g = self.grid;
        let c = StepConstants::new(params, g.width, g.height, g.cell_size, 0.0, [0; 4]);
        for y in 0..g.height {
            for x in 0..g.width {
                let i = g.index(x, y);
                let mut pipes = [0.0f32; 4];
                for (p, pipe) in pipes.iter_mut().enumerate() {
                    let (ox, oy) = PIPE_OFFSETS[p];
                    let (nx, ny) = (x as i64 + ox as i64, y as i64 + oy as i64);
                    if !c.pipe_active(p, y) || nx < 0 || ny < 0 || nx >= g.width as i64 || ny >= g.height as i64 {
                        continue;
                    }
                    let j = g.index(nx as u32, ny as u32);
                    let (va, vb) = (velocity(x, y), velocity(nx as u32, ny as u32));
                    let e = pipe_direction(&c, p, y);
                    let along = 0.5 * ((va[0] + vb[0]) * e[0] + (va[1] + vb[1]) * e[1]);
                    let (ba, bb) = (self.terrain[i], self.terrain[j]);
                    let depth = face_depth(ba + self.depth_m(i), ba, bb + self.depth_m(j), bb);
                    if depth > 0.0 {
                        // What the pipe keeps, times flux_per_stored, is its flux w·d·u.
                        let flux = pipe_width(&c, p, x, y) * depth * along;
                        *pipe = stored_for_flux(&c, flux, depth);
                    }
                }
                self.flow[i] = pipes;
            }
        }
    }

    /// Re-expresses what every pipe keeps ([`State::flow`]) for steps of constants `to`, from
    /// steps of constants `from`, so that each pipe carries the same flux as before.
    pub fn convert_pipes(&mut self, from: &StepConstants, to: &StepConstants) {
        let g = self.grid;
        for y in 0..g.height {
            for x in 0..g.width {
                let i = g.index(x, y);
                for (p, &(ox, oy)) in PIPE_OFFSETS.iter().enumerate() {
                    let (nx, ny) = (x as i64 + ox as i64, y as i64 + oy as i64);
                    if nx < 0 || ny < 0 || nx >= g.width as i64 || ny >= g.height as i64 {
                        continue;
                    }
                    let j = g.index(nx as u32, ny as u32);
                    let (ta, da, tb, db) = (self.terrain[i], self.depth[i], self.terrain[j], self.depth[j]);
                    let flux = self.flow[i][p] * flux_per_stored(from, carried_depth(from, ta, da, tb, db));
                    self.flow[i][p] = stored_for_flux(to, flux, carried_depth(to, ta, da, tb, db));
                }
            }
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

    /// Flow (m²/s, see [`State::flow`]) leaving cell `(x, y)` towards each of its eight
    /// neighbours (see [`crate::pipes::NEIGHBOUR_OFFSETS`]); pipes leading off the grid read zero.
    pub fn outgoing_flows(&self, x: u32, y: u32) -> [f32; 8] {
        let g = &self.grid;
        let mut out = [0.0; 8];
        let i = g.index(x, y);
        out[..4].copy_from_slice(&self.flow[i]);
        for p in 0..4 {
            // The neighbour at −offset owns pipe p pointing at this cell.
            let (ox, oy) = PIPE_OFFSETS[p];
            let (nx, ny) = (x as i64 - ox as i64, y as i64 - oy as i64);
            if nx >= 0 && ny >= 0 && nx < g.width as i64 && ny < g.height as i64 {
                out[4 + p] = -self.flow[g.index(nx as u32, ny as u32)][p];
            }
        }
        out
    }

    /// Face depth (m, see [`face_depth`]) of the pipe from cell `(x, y)` towards each of its eight
    /// neighbours, in [`crate::pipes::NEIGHBOUR_OFFSETS`] order; 0 off the grid.
    pub fn face_depths(&self, x: u32, y: u32) -> [f32; 8] {
        let g = &self.grid;
        let i = g.index(x, y);
        let (bed, surface) = (self.terrain[i], self.terrain[i] + self.depth_m(i));
        let mut faces = [0.0; 8];
        for (n, &(ox, oy)) in NEIGHBOUR_OFFSETS.iter().enumerate() {
            let (nx, ny) = (x as i64 + ox as i64, y as i64 + oy as i64);
            if nx >= 0 && ny >= 0 && nx < g.width as i64 && ny < g.height as i64 {
                let j = g.index(nx as u32, ny as u32);
                faces[n] = face_depth(surface, bed, self.terrain[j] + self.depth_m(j), self.terrain[j]);
            }
        }
        faces
    }

    /// The height and flow texels of cell `(x, y)` (the layouts of [`Snapshot::height`] and
    /// [`Snapshot::flow`]); `fixed_flux_per_stored` and `triangular` as for
    /// [`State::snapshot_reusing`]. The snapshot and the detail layer ([`crate::detail`]) read
    /// each cell through this one function.
    pub fn cell_texels(&self, x: u32, y: u32, fixed_flux_per_stored: Option<f32>, triangular: bool) -> ([f32; 4], [f32; 4]) {
        let g = self.grid;
        let i = g.index(x, y);
        let d = self.depth_m(i);
        let b = self.terrain[i];
        let faces = self.face_depths(x, y);
        let mut outgoing = self.outgoing_flows(x, y);
        for (flow, face) in outgoing.iter_mut().zip(faces) {
            *flow *= fixed_flux_per_stored.unwrap_or(face);
        }
        let (q, v) = if triangular {
            lattice_discharge_and_velocity(g.cell_size, y, &outgoing, &faces)
        } else {
            (discharge(g.cell_size, &outgoing), centre_velocity(g.cell_size, &outgoing, &faces))
        };
        let speed = v[0].hypot(v[1]);
        ([b + d, d, b, if d > WET_DEPTH { 1.0 } else { 0.0 }], [v[0], v[1], speed, q[0].hypot(q[1])])
    }

    /// Builds the snapshot that queries and textures read (rows in parallel), for pipes that carry
    /// their flow over the face depth (depth-dependent mode), on the square grid.
    pub fn snapshot(&self, sequence: u64, counters: Counters) -> Snapshot {
        self.snapshot_reusing(sequence, counters, None, None, false)
    }

    /// [`State::snapshot`], writing into the buffers of `spare` (an earlier snapshot nobody holds
    /// any more) when it has them: a large grid's fresh buffers cost more in page faults than
    /// the writing itself. `fixed_flux_per_stored` is [`crate::pipes::fixed_flux_per_stored`] of
    /// the step that made the fields: `None` where the pipes' flow is carried over the face depth.
    /// `triangular` ([`crate::pipes::StepConstants::triangular`]): the flow texels sum the pipes
    /// along the triangular lattice's directions ([`lattice_discharge_and_velocity`]).
    pub fn snapshot_reusing(&self, sequence: u64, counters: Counters, spare: Option<Snapshot>, fixed_flux_per_stored: Option<f32>, triangular: bool) -> Snapshot {
        let g = self.grid;
        let w = g.width as usize;
        let (mut height, mut flow) = Snapshot::texel_buffers(spare, g.cell_count());
        let (max_speed, max_depth) = height
            .par_chunks_mut(w)
            .zip(flow.par_chunks_mut(w))
            .enumerate()
            .map(|(y, (height_row, flow_row))| {
                let mut extremes = (0.0f32, 0.0f32);
                for x in 0..w {
                    let (height, flow) = self.cell_texels(x as u32, y as u32, fixed_flux_per_stored, triangular);
                    height_row[x] = height;
                    flow_row[x] = flow;
                    extremes = (extremes.0.max(flow[2]), extremes.1.max(height[1]));
                }
                extremes
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
        Snapshot { grid: g, sequence, height, flow, total_quanta: self.total_quanta(), counters, max_speed, max_depth }
    }
}

impl Snapshot {
    /// Buffers for the height and flow texels of `cells` cells: `spare`'s when it has that many
    /// (their contents are to be overwritten), else new ones.
    pub fn texel_buffers(spare: Option<Snapshot>, cells: usize) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        match spare {
            Some(s) if s.height.len() == cells && s.flow.len() == cells => (s.height, s.flow),
            _ => (vec![[0.0; 4]; cells], vec![[0.0; 4]; cells]),
        }
    }
}

/// Bytes per chunk of [`copy_in_parallel`]: large enough that a thread's start is noise.
const PARALLEL_COPY_CHUNK: usize = 1 << 20;

/// `dst.copy_from_slice(src)` spread over the thread pool in 1 MiB chunks. Snapshot and texture
/// copies of big grids run at one core's memory bandwidth otherwise (about 5 GB/s seen on a
/// server core: 25 ms for the 128 MiB of a 2048² snapshot).
///
/// # Panics
/// When the lengths differ, like `copy_from_slice`.
pub fn copy_in_parallel(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_in_parallel: lengths differ");
    dst.par_chunks_mut(PARALLEL_COPY_CHUNK).zip(src.par_chunks(PARALLEL_COPY_CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// Replaced snapshots kept for their buffers: the newest two, since the one just replaced may
/// still be on screen while the next is built.
#[derive(Debug, Default)]
pub struct SpareSnapshots(Vec<Arc<Snapshot>>);

impl SpareSnapshots {
    /// Keeps a replaced snapshot.
    pub fn keep(&mut self, old: Arc<Snapshot>) {
        self.0.push(old);
        if self.0.len() > 2 {
            self.0.remove(0);
        }
    }

    /// A kept snapshot that nobody else holds any more, to write the next one into.
    pub fn take(&mut self) -> Option<Snapshot> {
        let free = self.0.iter().position(|s| Arc::strong_count(s) == 1)?;
        Arc::try_unwrap(self.0.remove(free)).ok()
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

/// Fastest water a pipe may keep, m/s along the pipe (its stored flow over its width, at most the
/// cell size): 10⁹ m/s. No water the model moves comes near it: gravity is at most 100 m/s² and
/// surfaces differ by at most 2·10⁶ m + [`MAX_DEPTH`], over which free fall reaches 2·10⁴ m/s.
/// Within it every product of a step, a snapshot and a body's drag stays far inside `f32` (the
/// largest, advection's weight times a velocity difference on 1 mm cells, about 10²⁴); past it
/// (a crafted save's `3·10³⁸`) the first step overflows and leaves NaN in the pipe.
pub const MAX_PIPE_SPEED: f32 = 1.0e9;

/// Largest magnitude of what a pipe keeps ([`State::flow`]) on cells of `cell_size` m under
/// `params`: [`MAX_PIPE_SPEED`] times the widest pipe (the cell size), times the deepest water
/// ([`MAX_DEPTH`]) where pipes keep their flux rather than their flow.
pub fn largest_kept_pipe_value(params: &Params, cell_size: f32) -> f32 {
    let flow = MAX_PIPE_SPEED * cell_size;
    if params.cross_section == crate::params::CrossSection::DepthDependent && !params.momentum_advection {
        flow * MAX_DEPTH
    } else {
        flow
    }
}

/// Validates what the pipes keep: one finite value per pipe of each cell, within
/// ±[`largest_kept_pipe_value`].
pub fn check_pipes(grid: &Grid, params: &Params, flow: &[[f32; 4]]) -> Result<()> {
    if flow.len() != grid.cell_count() {
        return Err(Error::WrongLength { name: "flow", expected: grid.cell_count(), actual: flow.len() });
    }
    let largest = largest_kept_pipe_value(params, grid.cell_size);
    if let Some(i) = flow.iter().position(|pipes| pipes.iter().any(|v| !(v.is_finite() && v.abs() <= largest))) {
        return Err(Error::invalid("flow", format!("{:?} at cell {i}", flow[i]), format!("finite, -{largest} ..= {largest} (pipes faster than {MAX_PIPE_SPEED} m/s)")));
    }
    Ok(())
}

/// Cumulative water moved across the domain's limits since the state was loaded, in quanta.
/// Together with the initial total they give the mass identity
/// `total = initial + added − removed + boundary_in − boundary_out − solidified`.
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
    /// Turned into ground by cooling ([`crate::cooling`]): left the water and raised the terrain
    /// by as many quanta. Kept with the others, on the device where the fluid cools there, so
    /// that a snapshot's ledger and its total belong to the same instant. Not in [`Counters::net`]
    /// ([`crate::MassLedger::solidified`] subtracts it).
    pub solidified: u64,
}

impl Counters {
    /// The counters as the devices keep them: each `u64` as its (low, high) `u32` words, in the
    /// order added, removed, boundary in, boundary out, solidified (`COUNTER_*` in
    /// shaders/common.wgsl; [`crate::backend::recovery::COUNTER_BYTES`] bytes).
    pub fn to_device_words(&self) -> [u32; 10] {
        let wide = [self.added, self.removed, self.boundary_in, self.boundary_out, self.solidified];
        std::array::from_fn(|k| (wide[k / 2] >> (32 * (k % 2))) as u32)
    }

    /// Counters from the ten words of [`Counters::to_device_words`].
    ///
    /// # Panics
    /// When `words` has fewer than ten words.
    pub fn from_device_words(words: &[u32]) -> Counters {
        let wide = |k: usize| words[k] as u64 | (words[k + 1] as u64) << 32;
        Counters { added: wide(0), removed: wide(2), boundary_in: wide(4), boundary_out: wide(6), solidified: wide(8) }
    }

    /// Net change of total water these counters account for, quanta.
    ///
    /// The counters count modulo 2⁶⁴, as the devices keep them (two `u32` words with a carry):
    /// a legal run can pass 2⁶⁴ quanta (a source of 5·10⁵ m³/s on 1 mm cells adds 5·10¹⁷ quanta
    /// a second, while a drain takes as much). The net change itself is always small, since the
    /// water a grid holds is (at most 16384² cells of 2³¹ quanta, under 2⁵⁹), so it is exact
    /// taken modulo 2⁶⁴ too, whatever the counters, and no sum can overflow.
    pub fn net(&self) -> i64 {
        self.added.wrapping_sub(self.removed).wrapping_add(self.boundary_in).wrapping_sub(self.boundary_out) as i64
    }

    /// These counters plus `other`'s, each modulo 2⁶⁴ ([`Counters::net`]).
    pub fn wrapping_add(&self, other: Counters) -> Counters {
        Counters {
            added: self.added.wrapping_add(other.added),
            removed: self.removed.wrapping_add(other.removed),
            boundary_in: self.boundary_in.wrapping_add(other.boundary_in),
            boundary_out: self.boundary_out.wrapping_add(other.boundary_out),
            solidified: self.solidified.wrapping_add(other.solidified),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_copy_equals_the_source_across_chunk_edges() {
        let src: Vec<u8> = (0..(3 * PARALLEL_COPY_CHUNK + 12_345)).map(|i| (i * 7 % 251) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        copy_in_parallel(&mut dst, &src);
        let first_difference = dst.iter().zip(&src).position(|(a, b)| a != b);
        println!("{} bytes copied in {} chunks; first difference: {first_difference:?}", src.len(), src.len().div_ceil(PARALLEL_COPY_CHUNK));
        assert_eq!(first_difference, None);
    }

    #[test]
    fn a_spare_snapshot_is_reused_only_once_nobody_holds_it() {
        let grid = Grid::new(4, 3, 1.0).unwrap();
        let state = State::new(grid);
        let mut spares = SpareSnapshots::default();
        let on_screen = Arc::new(state.snapshot(1, Counters::default()));
        spares.keep(on_screen.clone());
        let while_held = spares.take().is_some();
        let address = on_screen.height.as_ptr();
        drop(on_screen);
        let reused = spares.take();
        let next = state.snapshot_reusing(2, Counters::default(), reused, None, false);
        println!("taken while held: {while_held}; next snapshot reuses the buffer: {}", next.height.as_ptr() == address);
        assert!(!while_held, "a snapshot still held is never written into");
        assert_eq!(next.height.as_ptr(), address, "a released snapshot's buffer is reused");
        assert_eq!(next.sequence, 2);
        assert_eq!(next, state.snapshot(2, Counters::default()), "reusing buffers changes nothing in the result");
    }
}
