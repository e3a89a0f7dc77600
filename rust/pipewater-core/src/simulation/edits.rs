//! What callers do to the water and the ground: adding and removing water, filling basins,
//! digging and raising terrain, with the exact split of a volume into quanta.

use super::{EXACT_EDIT_DEPTH, MAX_EDIT_VOLUME, MAX_TERRAIN_DELTA, MIN_STEP, check_edge_limits, Simulation};
use crate::backend::{BackendKind, CellTerrain, CellWater, EditOutcome, FramePlan};
use crate::error::{check_range, Error, Result};
use crate::grid::CellRect;
use crate::lattice::neighbour_steps;
use crate::params::NeighbourMode;
use crate::pipes::StepConstants;
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
use crate::state::State;

impl Simulation {
    /// Splits `quanta` over a footprint in proportion to its weights, exactly (largest remainder):
    /// (cell, quanta) pairs that sum to `quanta`, before any check against what a cell holds.
    ///
    /// The shares of a request far beyond what the footprint holds (10⁹ m³ on 1 mm cells is
    /// 10²¹ quanta, saturated to `i64::MAX` on the way in) are rounded in `f64` and may sum to
    /// more than an `i64` holds, so they are summed and balanced in `i128`; a share saturates
    /// rather than wrapping. Callers refuse or clip any share past [`MAX_DEPTH_QUANTA`].
    pub(super) fn distribute(&self, footprint: &[(u32, f32)], quanta: i64) -> Vec<(u32, i64)> {
        distribute_quanta(footprint, quanta)
    }

    /// The largest volume (m³) whose share for the heaviest cell of `footprint` is the
    /// [`MAX_DEPTH`] a cell holds, rounded down to six significant digits.
    pub(super) fn largest_fitting_volume(&self, footprint: &[(u32, f32)]) -> f64 {
        let total_weight: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
        let heaviest = footprint.iter().map(|&(_, w)| w as f64).fold(0.0, f64::max);
        let fits = MAX_DEPTH_QUANTA as f64 * self.quantum_volume() * total_weight / heaviest;
        let scale = 10f64.powi(5 - fits.log10().floor() as i32);
        (fits * scale).floor() / scale
    }

    pub(crate) fn check_edit(&self, volume: f32, radius: f32) -> Result<()> {
        check_range("volume", volume, 0.0, MAX_EDIT_VOLUME)?;
        let [ex, ez] = self.grid.extent();
        check_range("radius", radius, 0.0, ex.max(ez) * 2.0)?;
        Ok(())
    }

    pub(crate) fn check_point(x: f32, z: f32) -> Result<()> {
        if !(x.is_finite() && z.is_finite()) {
            return Err(Error::invalid("position", format!("({x}, {z})"), "finite coordinates"));
        }
        Ok(())
    }

    /// Validates a water edit and splits `volume` (rounded to whole quanta) over the footprint of
    /// radius `radius` around local `(x, z)`: (cell, quanta) pairs. `None` when there is nothing
    /// to do.
    pub(super) fn water_edit_shares(&self, x: f32, z: f32, volume: f32, radius: f32) -> Result<Option<Vec<(u32, i64)>>> {
        Self::check_point(x, z)?;
        self.check_edit(volume, radius)?;
        let footprint = self.lattice().footprint(x, z, radius);
        if footprint.is_empty() || volume == 0.0 {
            return Ok(None);
        }
        // Saturates past i64::MAX quanta (10⁹ m³ on cells under 3 cm): far more than the
        // footprint holds, which adding refuses and removing clips to what is there.
        let quanta = (volume as f64 / self.quantum_volume()).round() as i64;
        Ok(Some(self.distribute(&footprint, quanta)))
    }

    /// Adds `volume` m³ of water around local point `(x, z)` within `radius` m. Returns the volume
    /// that arrives: the request rounded to whole quanta (within one quantum volume per cell),
    /// less what does not fit where cells would pass [`MAX_DEPTH`] (they fill to it; the ledger
    /// counts what entered). 0 when the footprint misses the grid.
    ///
    /// Fails, adding nothing, when the request itself cannot fit: a share of more than
    /// [`MAX_DEPTH`] m of water for one cell even if it were dry (the error names the limit and
    /// the largest volume that fits in that footprint).
    ///
    /// On a GPU backend the edit is applied with the next frame. While the newest snapshot shows
    /// water shallower than [`EXACT_EDIT_DEPTH`] everywhere, no cell can fill up and the request
    /// is what arrives; deeper, the call waits for the device and returns the exact figure.
    pub fn add_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<f64> {
        let Some(shares) = self.water_edit_shares(x, z, volume, radius)? else { return Ok(0.0) };
        if let Some(&(cell, most)) = shares.iter().max_by_key(|s| s.1).filter(|s| s.1 > MAX_DEPTH_QUANTA as i64) {
            // From the weights, not from `most`: a request past i64::MAX quanta saturated.
            let depth = volume as f64 / self.lattice().cell_area() * most as f64 / shares.iter().map(|s| s.1 as f64).sum::<f64>();
            let fits = self.largest_fitting_volume(&self.lattice().footprint(x, z, radius));
            let (cx, cy) = (cell % self.grid.width, cell / self.grid.width);
            return Err(Error::invalid(
                "volume",
                format!("{volume} m³"),
                format!(
                    "0 ..= {fits} m³ within radius {radius} m here: it would put {depth:.1} m of water on cell ({cx}, {cy}), past the {MAX_DEPTH} m a cell holds (spread it over a larger radius)"
                ),
            ));
        }
        let cells: Vec<CellWater> = shares.into_iter().map(|(cell, q)| CellWater { cell, quanta: q as i32 }).collect();
        self.add_cells(&cells)
    }

    /// Adds water cell by cell (positive quanta, each at most [`MAX_DEPTH_QUANTA`]); returns the
    /// volume that arrives, m³.
    pub(super) fn add_cells(&mut self, cells: &[CellWater]) -> Result<f64> {
        self.change_water(cells)
    }

    /// Changes water cell by cell (positive quanta add, negative remove, never more than is
    /// there) through the backend's edits, so that the ledger counts every quantum. Returns the
    /// net volume, m³: added minus removed. A GPU backend applies the edits before its next step
    /// (or [`Simulation::apply_edits`]); its figure is then what was asked for, the removals
    /// limited to what the newest snapshot says is there, and the ledger gets the exact figures
    /// from the device.
    pub(crate) fn change_water(&mut self, cells: &[CellWater]) -> Result<f64> {
        // Deeper water shortens the stable step before a snapshot shows it.
        let peak = cells.iter().map(|c| c.quanta).max().unwrap_or(0).max(0);
        self.recent_gain[0] += peak as f32 * DEPTH_QUANTUM;
        let requested: i64 = cells.iter().map(|c| c.quanta.max(0) as i64).sum();
        // A GPU applies the edit later: where cells may be near the limit, the device's ledger
        // says what really entered.
        let before = if requested > 0 && self.backend.kind() != BackendKind::Cpu && self.may_be_near_depth_limit() {
            Some(self.on_backend(|b| b.read_counters())?)
        } else {
            None
        };
        let quanta = match (self.on_backend(|b| b.edit_water(cells))?, before) {
            (EditOutcome::Applied { added, removed }, _) => added as f64 - removed as f64,
            (EditOutcome::Queued, Some(before)) => {
                let after = self.on_backend(|b| b.read_counters())?;
                // The counters count modulo 2⁶⁴ ([`Counters::net`]).
                after.added.wrapping_sub(before.added) as f64 - after.removed.wrapping_sub(before.removed) as f64
            }
            (EditOutcome::Queued, None) => {
                let snapshot = self.backend.snapshot();
                let removed: f64 = cells
                    .iter()
                    .filter(|c| c.quanta < 0)
                    .map(|c| {
                        let there = snapshot.as_ref().map_or(0.0, |s| s.height[c.cell as usize][1] as f64 / DEPTH_QUANTUM as f64);
                        (-c.quanta as f64).min(there.floor())
                    })
                    .sum();
                requested as f64 - removed
            }
        };
        Ok(quanta * self.quantum_volume())
    }

    /// Whether some cell may hold more than [`EXACT_EDIT_DEPTH`] of water: the newest snapshot's
    /// deepest water plus what edits, sources and inflow added since (no snapshot: maybe).
    pub(super) fn may_be_near_depth_limit(&mut self) -> bool {
        let deepest = self.backend.snapshot().map_or(f32::INFINITY, |s| s.max_depth);
        deepest + self.recent_gain.iter().sum::<f32>() > EXACT_EDIT_DEPTH
    }

    /// Changes terrain cell by cell through the backend's edits (water depth is kept).
    pub(crate) fn change_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        self.on_backend(|b| b.edit_terrain(cells))
    }

    /// Replaces the terrain everywhere (validated), keeping the water depth and the reset point:
    /// what an edit of the ground does, exactly (no float arithmetic on the heights).
    pub(crate) fn replace_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        crate::state::check_terrain(&self.grid, terrain)?;
        self.on_backend(|b| b.set_terrain(terrain))
    }

    /// Applies the edits a GPU backend has queued (water, terrain, the bodies' displacement) and
    /// brings its outputs (snapshot, textures) up to date, without stepping: for an editor or a
    /// paused game that must show an edit at once. On the CPU edits apply as they are made and
    /// this does nothing.
    pub fn apply_edits(&mut self) -> Result<()> {
        if self.backend.kind() == BackendKind::Cpu {
            return Ok(());
        }
        let step = self.last_report.step.max(MIN_STEP);
        let constants = StepConstants::new(&self.params, self.grid.width, self.grid.height, self.grid.cell_size, step, [0; 4]);
        let plan = FramePlan { constants, substeps: 0, forcing: &[] };
        self.on_backend(|b| b.advance(&plan))
    }

    /// Removes up to `volume` m³ of water around local point `(x, z)` within `radius` m, never
    /// more than is there. Returns the volume removed (on a GPU backend, the volume the newest
    /// snapshot says is there to remove; the ledger gets the exact figure from the device). A
    /// snapshot that holds only the tiles queries read (Godot's RenderingDevice backend) shows
    /// other cells at their depth of the last load, so there the figure is bounded by those
    /// depths, not exact; [`Simulation::paint_water`] likewise.
    pub fn remove_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<f64> {
        let Some(shares) = self.water_edit_shares(x, z, volume, radius)? else { return Ok(0.0) };
        // No cell holds more than MAX_DEPTH_QUANTA: asking for more removes all it has.
        let cells: Vec<CellWater> = shares.into_iter().map(|(cell, q)| CellWater { cell, quanta: -(q.min(MAX_DEPTH_QUANTA as i64) as i32) }).collect();
        Ok(-self.change_water(&cells)?)
    }

    /// Fills the basin around local point `(x, z)` with still water up to `level` (local Y, m),
    /// as if water were poured there until its surface stood at `level`: every cell reachable
    /// from the point's cell through cells whose terrain lies below `level` (by the steps water
    /// takes: diagonals in eight-neighbour mode, the six neighbours on the triangular lattice) gets water up to that
    /// surface. Water is only added, never removed. Returns the volume added, m³ (0 when the
    /// point's ground is at or above `level`).
    ///
    /// Fails, adding nothing, when `level` stands more than [`MAX_DEPTH`] above the lowest ground
    /// of the basin (the error names the limit and the highest level that fits).
    ///
    /// Reads the current state, waiting for the device on a GPU backend: meant for setting up a
    /// level or answering a player's action, not for every frame. A basin that reaches an open
    /// edge fills and then drains through it.
    pub fn fill_basin(&mut self, x: f32, z: f32, level: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("level", level, -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS)?;
        let Some((cx, cy)) = self.lattice().cell_at(x, z) else {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point over the grid"));
        };
        let state = self.on_backend(|b| b.read_state())?;
        self.fill_basin_from(&state, (cx, cy), level)
    }

    /// Fills the basin of `state` connected to cell `start` up to `level` (see
    /// [`basin_fill`]); returns the volume added, m³.
    pub(crate) fn fill_basin_from(&mut self, state: &State, start: (u32, u32), level: f32) -> Result<f64> {
        let cells = basin_fill(state, start, level, self.params.neighbours)?;
        if cells.is_empty() {
            return Ok(0.0);
        }
        self.add_cells(&cells)
    }

    /// Raises (positive) or digs (negative) the terrain by up to `delta_height` m around local
    /// point `(x, z)`, with a smooth falloff to zero at `radius`. Water depth is kept.
    pub fn modify_terrain(&mut self, x: f32, z: f32, delta_height: f32, radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        check_range("delta_height", delta_height, -MAX_TERRAIN_DELTA, MAX_TERRAIN_DELTA)?;
        self.check_edit(0.0, radius)?;
        let cells: Vec<CellTerrain> =
            self.lattice().footprint(x, z, radius).into_iter().map(|(cell, w)| CellTerrain { cell, delta: delta_height * w }).collect();
        self.on_backend(|b| b.edit_terrain(&cells))
    }

    /// Moves the ground of `rect` from `previous` to `heights` (row-major, local m, finite,
    /// within ±[`MAX_TERRAIN_ABS`]) as queued terrain edits, keeping the water depth and the
    /// ledger, as [`Simulation::modify_terrain`] does: it costs the rectangle, not the grid (a
    /// game's terrain tool re-sculpting a few vertices of a large world). Each cell moves by
    /// `heights − previous`, so a cell whose ground is still `previous` lands on `heights` (to
    /// the rounding of one `f32` addition), and changes made since (digging, erosion) stay on
    /// top; [`Simulation::set_terrain_region`] sets exact values instead, reading the whole
    /// state. Cells that do not move cost nothing.
    pub fn move_terrain_region(&mut self, rect: CellRect, previous: &[f32], heights: &[f32]) -> Result<()> {
        self.grid.check_rect(rect)?;
        crate::authoring::check_region_heights("previous", previous, rect)?;
        crate::authoring::check_region_heights("heights", heights, rect)?;
        let width = rect.width as usize;
        let cells: Vec<CellTerrain> = previous
            .iter()
            .zip(heights)
            .enumerate()
            .filter(|(_, (from, to))| from.to_bits() != to.to_bits())
            .map(|(k, (from, to))| CellTerrain { cell: self.grid.index(rect.x + (k % width) as u32, rect.y + (k / width) as u32) as u32, delta: to - from })
            .collect();
        if cells.is_empty() {
            return Ok(());
        }
        self.on_backend(|b| b.edit_terrain(&cells))
    }

    /// Replaces the terrain everywhere (validated), keeping the water depth. Refused when a
    /// fixed-level edge would then stand more than [`MAX_DEPTH`] above the ground along it.
    pub fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        crate::state::check_terrain(&self.grid, terrain)?;
        check_edge_limits(&self.params, self.grid, terrain)?;
        self.on_backend(|b| b.set_terrain(terrain))?;
        self.initial.terrain.copy_from_slice(terrain);
        self.apply_initial_velocity();
        Ok(())
    }
}

/// The water a basin fill adds: for every cell connected to `start` through cells whose terrain
/// lies below `level` (the cells `neighbours` connects, [`neighbour_steps`]: four, eight, or the
/// triangular lattice's six), the whole quanta that raise its surface to
/// `level`. Cells already at or above `level` add nothing but still connect the basin.
///
/// Fails when `level` stands more than [`MAX_DEPTH`] above the basin's lowest ground: the
/// error names the limit and the highest level that fits.
pub fn basin_fill(state: &State, start: (u32, u32), level: f32, neighbours: NeighbourMode) -> Result<Vec<CellWater>> {
    basin_fill_within(state, start, level, neighbours).map(|(cells, _)| cells)
}

/// [`basin_fill`], and the smallest rectangle holding every cell of the basin (those at or
/// above `level` that connect it among them; empty when `start` is not below `level`): whether
/// the basin reaches the edge of `state`, which a caller filling part of a larger grid needs.
pub fn basin_fill_within(state: &State, start: (u32, u32), level: f32, neighbours: NeighbourMode) -> Result<(Vec<CellWater>, CellRect)> {
    let grid = state.grid;
    let (w, h) = (grid.width as i64, grid.height as i64);
    let below = |i: usize| state.terrain[i] < level;
    let first = grid.index(start.0, start.1);
    if !below(first) {
        return Ok((Vec::new(), CellRect::default()));
    }
    let mut seen = vec![false; grid.cell_count()];
    let mut stack = vec![(start.0 as i64, start.1 as i64)];
    seen[first] = true;
    let mut cells = Vec::new();
    let mut lowest = first;
    let mut extent = CellRect { x: start.0, y: start.1, width: 1, height: 1 };
    while let Some((x, y)) = stack.pop() {
        let i = grid.index(x as u32, y as u32);
        extent = extent.union(CellRect { x: x as u32, y: y as u32, width: 1, height: 1 });
        if state.terrain[i] < state.terrain[lowest] {
            lowest = i;
        }
        // f64: a level 1e6 m above a cell is 2^40 quanta, past f32's exact integers.
        let target = ((level as f64 - state.terrain[i] as f64) / DEPTH_QUANTUM as f64).floor().min(MAX_DEPTH_QUANTA as f64) as i64;
        let add = target - state.depth[i] as i64;
        if add > 0 {
            cells.push(CellWater { cell: i as u32, quanta: add as i32 });
        }
        for &(dx, dy) in neighbour_steps(neighbours, y as u32) {
            let (nx, ny) = (x + dx, y + dy);
            if nx < 0 || ny < 0 || nx >= w || ny >= h {
                continue;
            }
            let n = grid.index(nx as u32, ny as u32);
            if !seen[n] && below(n) {
                seen[n] = true;
                stack.push((nx, ny));
            }
        }
    }
    let floor = state.terrain[lowest];
    if level as f64 - floor as f64 > MAX_DEPTH as f64 {
        let (x, y) = (lowest as u32 % grid.width, lowest as u32 / grid.width);
        return Err(Error::invalid(
            "level",
            format!("{level} m"),
            format!("-{MAX_TERRAIN_ABS} ..= {} m for this basin: its lowest ground is {floor} m (cell ({x}, {y})), and a cell holds at most {MAX_DEPTH} m of water", floor as f64 + MAX_DEPTH as f64),
        ));
    }
    Ok((cells, extent))
}

/// Splits `quanta` over a footprint in proportion to its weights, exactly (largest remainder):
/// see [`Simulation::distribute`]. Shared with the world in pages ([`crate::world_water`]).
pub(crate) fn distribute_quanta(footprint: &[(u32, f32)], quanta: i64) -> Vec<(u32, i64)> {
    let total_weight: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
    let mut shares: Vec<(u32, i64, f64)> = footprint
        .iter()
        .map(|&(cell, w)| {
            let exact = quanta as f64 * w as f64 / total_weight;
            (cell, exact.floor() as i64, exact - exact.floor())
        })
        .collect();
    // Positive: quanta still to hand out, largest remainders first; negative: the floors
    // rounded up past the request (f64 rounding), taken back from the smallest remainders.
    let mut left = quanta as i128 - shares.iter().map(|s| s.1 as i128).sum::<i128>();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| shares[b].2.total_cmp(&shares[a].2));
    for &i in order.iter().cycle().take(shares.len() * 2) {
        if left <= 0 {
            break;
        }
        shares[i].1 = shares[i].1.saturating_add(1);
        left -= 1;
    }
    for &i in order.iter().rev().cycle().take(shares.len() * 2) {
        if left >= 0 {
            break;
        }
        if shares[i].1 > 0 {
            shares[i].1 -= 1;
            left += 1;
        }
    }
    shares.into_iter().map(|(cell, q, _)| (cell, q)).collect()
}
