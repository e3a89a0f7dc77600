//! Authoring: what an editor's tools do to the water and the ground, and the regions of cells an
//! undo history keeps.
//!
//! Brushes change the fields through the ordinary edits, so the ledger counts every quantum they
//! add or remove. An undoable stroke keeps the rectangle of cells it changed, before and after, as
//! exact values: depths in whole quanta (`i32`), terrain heights as `f32`.
//! [`Simulation::set_depth_region`] and [`Simulation::set_terrain_region`] write such a region back
//! bit for bit on every backend: the depth through water edits of the exact difference (which the
//! ledger counts as added and removed water), the terrain by replacing the heights, with no float
//! arithmetic on them. On a GPU backend both are queued like any edit and applied before the next
//! step, or at once by [`Simulation::apply_edits`].
//!
//! Reading a region reads the whole state (a GPU backend waits for its device): tools read once
//! when a stroke starts and once when it ends, not every frame.

use crate::backend::{CellTerrain, CellWater};
use crate::error::{check_range, Error, Result};
use crate::grid::{CellRect, Grid};
use crate::lattice::{neighbour_steps, Lattice};
use crate::params::NeighbourMode;
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA};
use crate::simulation::Simulation;
use crate::quanta::MAX_TERRAIN_ABS;
use crate::state::State;

/// Bisection steps of a ray's last interval: 2⁻²⁴ of a half-cell step is far below any height
/// that shows.
const RAY_BISECTIONS: u32 = 24;
/// Fewest samples along a ray inside the box the surface can occupy, so that a steep ray (seen
/// from straight above) still brackets the surface before bisecting.
const RAY_MIN_SAMPLES: f64 = 64.0;
/// Most samples along a ray: half-cell steps along the diagonal of the largest grid
/// ([`crate::grid::MAX_GRID_SIDE`]² cells) take about 46 000, so this bounds the work of any ray
/// without coarsening one that crosses a real grid.
const RAY_MAX_SAMPLES: f64 = 65536.0;

/// What writing a region of depths did, in quanta: the water the ledger counts as added and as
/// removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionChange {
    /// Quanta added to cells that were shallower than asked.
    pub added: u64,
    /// Quanta removed from cells that were deeper than asked.
    pub removed: u64,
}

/// The values of `rect` out of a whole-grid field, row-major. `rect` must lie inside `grid`.
pub fn crop<T: Copy>(grid: &Grid, field: &[T], rect: CellRect) -> Vec<T> {
    let mut out = Vec::with_capacity(rect.cell_count());
    for y in rect.y..rect.y + rect.height {
        let start = grid.index(rect.x, y);
        out.extend_from_slice(&field[start..start + rect.width as usize]);
    }
    out
}

/// Writes `values` (row-major over `rect`) into a whole-grid field. `rect` must lie inside `grid`
/// and `values` hold its cells.
pub fn paste<T: Copy>(grid: &Grid, field: &mut [T], rect: CellRect, values: &[T]) {
    for (row, y) in (rect.y..rect.y + rect.height).enumerate() {
        let start = grid.index(rect.x, y);
        let w = rect.width as usize;
        field[start..start + w].copy_from_slice(&values[row * w..(row + 1) * w]);
    }
}

/// Refuses `values` (named `name`) as terrain heights of `rect`: a length other than the
/// rectangle's cell count, or a value not finite or beyond ±[`MAX_TERRAIN_ABS`].
pub(crate) fn check_region_heights(name: &'static str, values: &[f32], rect: CellRect) -> Result<()> {
    if values.len() != rect.cell_count() {
        return Err(Error::WrongLength { name, expected: rect.cell_count(), actual: values.len() });
    }
    if let Some(i) = values.iter().position(|h| !(h.is_finite() && h.abs() <= MAX_TERRAIN_ABS)) {
        return Err(Error::invalid(name, format!("{} m at index {i}", values[i]), format!("finite, -{MAX_TERRAIN_ABS} ..= {MAX_TERRAIN_ABS} m")));
    }
    Ok(())
}

/// The smallest rectangle holding every cell where the whole-grid fields `before` and `after`
/// differ (as `same` judges); `None` when nothing changed.
pub fn changed_rect<T>(grid: &Grid, before: &[T], after: &[T], same: impl Fn(&T, &T) -> bool) -> Option<CellRect> {
    let differing = before.iter().zip(after).enumerate().filter(|(_, (b, a))| !same(b, a));
    CellRect::bounding(differing.map(|(i, _)| (i as u32 % grid.width, i as u32 / grid.width)))
}

/// The water edits that turn the depths of `rect` in the whole-grid field `current` into
/// `target` (row-major over `rect`, quanta): one entry per cell that differs, with the exact
/// difference.
pub fn region_edits(grid: &Grid, current: &[i32], rect: CellRect, target: &[i32]) -> Vec<CellWater> {
    let mut cells = Vec::new();
    for (row, y) in (rect.y..rect.y + rect.height).enumerate() {
        for (col, x) in (rect.x..rect.x + rect.width).enumerate() {
            let i = grid.index(x, y);
            // Both lie in 0 ..= i32::MAX, so the difference fits an i32.
            let change = target[row * rect.width as usize + col] - current[i];
            if change != 0 {
                cells.push(CellWater { cell: i as u32, quanta: change });
            }
        }
    }
    cells
}

/// A brush's water: `depth` m (negative removes) times each footprint cell's weight, in whole
/// quanta (rounded to nearest); cells that round to nothing are left out.
pub fn brush_quanta(footprint: &[(u32, f32)], depth: f32) -> Vec<CellWater> {
    footprint
        .iter()
        .filter_map(|&(cell, weight)| {
            let quanta = (depth as f64 * weight as f64 / DEPTH_QUANTUM as f64).round().clamp(-(MAX_DEPTH_QUANTA as f64), MAX_DEPTH_QUANTA as f64) as i32;
            (quanta != 0).then_some(CellWater { cell, quanta })
        })
        .collect()
}

/// The terrain changes of a smoothing brush: each cell of `footprint` moves towards the mean of
/// its neighbourhood (the cells on the grid of its 3 × 3 square, or itself and its six
/// neighbours on the triangular lattice) by `strength × weight` of the way (`strength`
/// `0 ..= 1`). Every cell is moved from the heights before the brush, so the result does not
/// depend on the order of the cells.
pub fn smoothing(lattice: &Lattice, terrain: &[f32], footprint: &[(u32, f32)], strength: f32) -> Vec<CellTerrain> {
    let grid = lattice.grid;
    let around = |y: u32| if lattice.triangular { neighbour_steps(NeighbourMode::Triangular, y) } else { neighbour_steps(NeighbourMode::Eight, y) };
    footprint
        .iter()
        .filter_map(|&(cell, weight)| {
            let (cx, cy) = ((cell % grid.width) as i64, (cell / grid.width) as i64);
            let (mut sum, mut count) = (terrain[cell as usize] as f64, 1.0f64);
            for &(dx, dy) in around(cy as u32) {
                let (x, y) = (cx + dx, cy + dy);
                if x >= 0 && y >= 0 && x < grid.width as i64 && y < grid.height as i64 {
                    sum += terrain[grid.index(x as u32, y as u32)] as f64;
                    count += 1.0;
                }
            }
            let delta = ((sum / count - terrain[cell as usize] as f64) * (strength * weight) as f64) as f32;
            (delta != 0.0).then_some(CellTerrain { cell, delta })
        })
        .collect()
}

/// Where a fill that makes `start` its shore begins: `start` itself when its ground lies below
/// `level`, else the first cell below `level` on the path of steepest descent from it (over the
/// cells `neighbours` connects, [`neighbour_steps`]). `None` when that path ends in a low point at
/// or above `level`: there is no basin below the point to fill.
pub fn downhill_below(state: &State, start: (u32, u32), level: f32, neighbours: NeighbourMode) -> Option<(u32, u32)> {
    let grid = state.grid;
    let (mut x, mut y) = start;
    loop {
        let here = state.terrain[grid.index(x, y)];
        if here < level {
            return Some((x, y));
        }
        let mut lowest = ((x, y), here);
        for &(dx, dy) in neighbour_steps(neighbours, y) {
            let (nx, ny) = (x as i64 + dx, y as i64 + dy);
            if nx < 0 || ny < 0 || nx >= grid.width as i64 || ny >= grid.height as i64 {
                continue;
            }
            let h = state.terrain[grid.index(nx as u32, ny as u32)];
            if h < lowest.1 {
                lowest = ((nx as u32, ny as u32), h);
            }
        }
        if lowest.0 == (x, y) {
            return None;
        }
        (x, y) = lowest.0;
    }
}

/// Where a ray from local `origin` along `direction` first meets the surface `height(x, z)` of a
/// grid (`None` off the grid) whose heights lie within `y_range`: marches in half-cell steps
/// (at least [`RAY_MIN_SAMPLES`] inside the box the surface can occupy, at most
/// [`RAY_MAX_SAMPLES`]) until the ray passes below the surface, then bisects. Returns the point on
/// the surface, or `None` when the ray misses the grid or never passes below its surface.
///
/// The march counts its samples rather than adding steps to a distance: far from the grid (a
/// camera 2·10⁶ m up) a half-cell step is below half an `f32` step of the distance, and `t + step`
/// would stop moving. Distances and points are taken in `f64` for the same reason; only the
/// heights asked of `height` are `f32`.
pub fn ray_hit(lattice: &Lattice, y_range: (f32, f32), origin: [f32; 3], direction: [f32; 3], mut height: impl FnMut(f32, f32) -> Option<f32>) -> Option<[f32; 3]> {
    let origin = origin.map(f64::from);
    let direction = direction.map(f64::from);
    let length = direction.iter().map(|d| d * d).sum::<f64>().sqrt();
    if !(length > 0.0 && length.is_finite()) || origin.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let d = direction.map(|v| v / length);
    // The lattice's own rectangle: on the triangular lattice half a cell wider and √3/2 as deep.
    let [ex, ez] = lattice.extent().map(f64::from);
    let cell = lattice.grid.cell_size as f64;
    // Padded by a cell, so that flat ground still makes a box of some height.
    let low = [-0.5 * ex, y_range.0 as f64 - cell, -0.5 * ez];
    let high = [0.5 * ex, y_range.1 as f64 + cell, 0.5 * ez];
    let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
    for axis in 0..3 {
        if d[axis].abs() < 1.0e-12 {
            if origin[axis] < low[axis] || origin[axis] > high[axis] {
                return None;
            }
            continue;
        }
        let (a, b) = ((low[axis] - origin[axis]) / d[axis], (high[axis] - origin[axis]) / d[axis]);
        t0 = t0.max(a.min(b));
        t1 = t1.min(a.max(b));
    }
    if !(t0 <= t1) {
        return None;
    }
    let at = |t: f64| [(origin[0] + d[0] * t) as f32, (origin[1] + d[1] * t) as f32, (origin[2] + d[2] * t) as f32];
    let mut below = |t: f64| {
        let p = at(t);
        height(p[0], p[2]).map(|h| p[1] <= h)
    };
    let horizontal = (d[0] * d[0] + d[2] * d[2]).sqrt();
    let span = t1 - t0;
    let half_cells = if horizontal > 1.0e-6 { span * horizontal / (0.5 * cell) } else { 0.0 };
    let samples = half_cells.ceil().clamp(RAY_MIN_SAMPLES, RAY_MAX_SAMPLES) as u32;
    let step = span / samples as f64;
    if below(t0) == Some(true) {
        return surface_point(at(t0), &mut height);
    }
    let mut above_at = t0;
    for sample in 1..=samples {
        let t = if sample == samples { t1 } else { t0 + sample as f64 * step };
        if below(t) == Some(true) {
            let (mut lo, mut hi) = (above_at, t);
            for _ in 0..RAY_BISECTIONS {
                let mid = 0.5 * (lo + hi);
                if below(mid) == Some(true) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            return surface_point(at(hi), &mut height);
        }
        above_at = t;
    }
    None
}

/// The point of the surface under `p`.
fn surface_point(p: [f32; 3], height: &mut impl FnMut(f32, f32) -> Option<f32>) -> Option<[f32; 3]> {
    height(p[0], p[2]).map(|h| [p[0], h, p[2]])
}

impl Simulation {
    /// The water depths of `rect` in quanta of [`DEPTH_QUANTUM`] m, row-major: exact values, to
    /// give back to [`Simulation::set_depth_region`]. Reads the whole state (a GPU backend waits
    /// for its device, applying its queued edits first).
    pub fn depth_region(&mut self, rect: CellRect) -> Result<Vec<i32>> {
        self.grid().check_rect(rect)?;
        let state = self.read_state()?;
        Ok(crop(&self.grid(), &state.depth, rect))
    }

    /// The terrain heights of `rect` (local m, as edited), row-major, to give back to
    /// [`Simulation::set_terrain_region`]. Reads the whole state, like
    /// [`Simulation::depth_region`].
    pub fn terrain_region(&mut self, rect: CellRect) -> Result<Vec<f32>> {
        self.grid().check_rect(rect)?;
        let state = self.read_state()?;
        Ok(crop(&self.grid(), &state.terrain, rect))
    }

    /// Sets the water depth of every cell of `rect` to `depths` (quanta, row-major, each
    /// `0 ..= i32::MAX`), exactly: each cell that differs gets the difference as a water edit, so
    /// the ledger counts it as added or removed water and keeps balancing. The flow is kept. On a
    /// GPU backend the edits are queued and applied before the next step (or by
    /// [`Simulation::apply_edits`]); the cells end at `depths` exactly all the same, since the
    /// differences are taken from the state with every earlier edit applied and nothing runs in
    /// between. Returns the quanta added and removed. Reads the whole state.
    pub fn set_depth_region(&mut self, rect: CellRect, depths: &[i32]) -> Result<RegionChange> {
        self.grid().check_rect(rect)?;
        if depths.len() != rect.cell_count() {
            return Err(Error::WrongLength { name: "depths", expected: rect.cell_count(), actual: depths.len() });
        }
        if let Some(i) = depths.iter().position(|&d| d < 0) {
            return Err(Error::invalid("depths", format!("{} quanta at index {i}", depths[i]), format!("0 ..= {MAX_DEPTH_QUANTA} quanta")));
        }
        let state = self.read_state()?;
        let cells = region_edits(&self.grid(), &state.depth, rect, depths);
        let change = RegionChange {
            added: cells.iter().map(|c| c.quanta.max(0) as u64).sum(),
            removed: cells.iter().map(|c| (-(c.quanta as i64)).max(0) as u64).sum(),
        };
        if !cells.is_empty() {
            self.change_water(&cells)?;
        }
        Ok(change)
    }

    /// Sets the terrain heights of `rect` to `heights` (local m, row-major, finite, within
    /// ±[`MAX_TERRAIN_ABS`]), bit for bit, keeping the water depth (the surface moves with the
    /// ground) and the reset point, as [`Simulation::modify_terrain`] does. Reads the whole state.
    pub fn set_terrain_region(&mut self, rect: CellRect, heights: &[f32]) -> Result<()> {
        self.grid().check_rect(rect)?;
        check_region_heights("heights", heights, rect)?;
        let mut terrain = self.read_state()?.terrain;
        paste(&self.grid(), &mut terrain, rect, heights);
        self.replace_terrain(&terrain)
    }

    /// Adds (`depth` > 0) or removes (`depth` < 0) up to `|depth|` m of water (`±2048 m`) at local
    /// point `(x, z)`, falling smoothly to nothing at `radius` m (`0 ..= 2 × grid extent`; the
    /// footprint of [`Lattice::footprint`]), in whole quanta; removal never takes more than is
    /// there. Returns the net volume, m³ (negative when water was removed; on a GPU backend as
    /// [`Simulation::remove_water`] estimates it).
    pub fn paint_water(&mut self, x: f32, z: f32, depth: f32, radius: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("depth", depth, -MAX_DEPTH, MAX_DEPTH)?;
        self.check_edit(0.0, radius)?;
        let cells = brush_quanta(&self.lattice().footprint(x, z, radius), depth);
        if cells.is_empty() {
            return Ok(0.0);
        }
        self.change_water(&cells)
    }

    /// Smooths the terrain around local point `(x, z)`: each cell within `radius` m moves towards
    /// the mean height of its neighbourhood ([`smoothing`]) by `strength` (`0 ..= 1`) times its brush
    /// weight (1 at the centre, falling smoothly to 0 at `radius`). Water depth is kept. Reads
    /// the whole state (a GPU backend waits for its device).
    pub fn smooth_terrain(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        check_range("strength", strength, 0.0, 1.0)?;
        self.check_edit(0.0, radius)?;
        let footprint = self.lattice().footprint(x, z, radius);
        if footprint.is_empty() || strength == 0.0 {
            return Ok(());
        }
        let state = self.read_state()?;
        let cells = smoothing(&self.lattice(), &state.terrain, &footprint, strength);
        self.change_terrain(&cells)
    }

    /// Fills the basin below local point `(x, z)` until its surface stands at `level` (local Y,
    /// m): the point marks the new shoreline. The fill starts from the point's cell when its
    /// ground lies below `level`, else from the first cell below `level` down the steepest
    /// descent from it ([`downhill_below`]), and spreads as [`Simulation::fill_basin`] does. Water
    /// is only added. Returns the volume added, m³: 0 when no ground below `level` lies downhill
    /// of the point. Reads the whole state.
    pub fn fill_to_shore(&mut self, x: f32, z: f32, level: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("level", level, -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS)?;
        let Some(cell) = self.lattice().cell_at(x, z) else {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point over the grid"));
        };
        let state = self.read_state()?;
        match downhill_below(&state, cell, level, self.params().neighbours) {
            Some(start) => self.fill_basin_from(&state, start, level),
            None => Ok(0.0),
        }
    }

    /// Where a ray from local `origin` along `direction` first meets the water surface, or the
    /// terrain where it is dry (the surface [`Simulation::surface_height`] answers with), as a
    /// local point; `None` when it misses the grid. Reads the newest snapshot, never waiting for
    /// a device: for picking a point under the mouse.
    pub fn raycast(&mut self, origin: [f32; 3], direction: [f32; 3]) -> Option<[f32; 3]> {
        let snapshot = self.snapshot()?;
        let y_range = snapshot.height.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), texel| (lo.min(texel[2]), hi.max(texel[0])));
        if !(y_range.0.is_finite() && y_range.1.is_finite()) {
            return None;
        }
        let lattice = self.lattice();
        ray_hit(&lattice, y_range, origin, direction, |x, z| self.surface_height(x, z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(w: u32, h: u32) -> Grid {
        Grid::new(w, h, 1.0).unwrap()
    }

    #[test]
    fn crop_and_paste_move_a_rectangle_row_by_row() {
        let g = grid(5, 4);
        let field: Vec<i32> = (0..20).collect();
        let rect = CellRect { x: 1, y: 2, width: 3, height: 2 };
        let cropped = crop(&g, &field, rect);
        println!("cells (1..4, 2..4) of a 5 × 4 field numbered row-major: {cropped:?}");
        assert_eq!(cropped, vec![11, 12, 13, 16, 17, 18]);
        let mut copy = vec![0; 20];
        paste(&g, &mut copy, rect, &cropped);
        assert_eq!(crop(&g, &copy, rect), cropped);
        assert_eq!(copy.iter().filter(|&&v| v != 0).count(), 6);
    }

    #[test]
    fn the_changed_rectangle_bounds_exactly_the_cells_that_differ() {
        let g = grid(6, 5);
        let before = vec![0.0f32; 30];
        let mut after = before.clone();
        after[g.index(1, 3)] = 1.0;
        after[g.index(4, 1)] = -0.5;
        let rect = changed_rect(&g, &before, &after, |a, b| a.to_bits() == b.to_bits());
        println!("cells (1, 3) and (4, 1) changed: {rect:?}");
        assert_eq!(rect, Some(CellRect { x: 1, y: 1, width: 4, height: 3 }));
        assert_eq!(changed_rect(&g, &before, &before, |a, b| a == b), None);
    }

    #[test]
    fn region_edits_carry_the_exact_difference_of_each_changed_cell() {
        let g = grid(4, 4);
        let mut current = vec![0i32; 16];
        current[g.index(1, 1)] = 7;
        current[g.index(2, 1)] = i32::MAX;
        let rect = CellRect { x: 1, y: 1, width: 2, height: 1 };
        let edits = region_edits(&g, &current, rect, &[3, 0]);
        println!("{edits:?}");
        assert_eq!(edits, vec![CellWater { cell: 5, quanta: -4 }, CellWater { cell: 6, quanta: -i32::MAX }]);
        assert!(region_edits(&g, &current, rect, &[7, i32::MAX]).is_empty());
    }

    #[test]
    fn smoothing_a_spike_at_full_strength_brings_it_to_its_neighbourhood_mean() {
        let g = grid(5, 5);
        let mut terrain = vec![0.0f32; 25];
        terrain[g.index(2, 2)] = 9.0;
        let edits = smoothing(&Lattice::square(g), &terrain, &[(g.index(2, 2) as u32, 1.0)], 1.0);
        println!("{edits:?}");
        assert_eq!(edits, vec![CellTerrain { cell: 12, delta: -8.0 }]);
        assert!(smoothing(&Lattice::square(g), &vec![2.0; 25], &[(12, 1.0)], 1.0).is_empty(), "flat ground stays as it is");
    }

    #[test]
    fn the_fill_of_a_bank_starts_at_the_first_cell_below_its_level_downhill() {
        // A slope falling towards +x: heights 4, 3, 2, 1, 0 along each row.
        let g = grid(5, 3);
        let mut state = State::new(g);
        for y in 0..3 {
            for x in 0..5 {
                state.terrain[g.index(x, y)] = 4.0 - x as f32;
            }
        }
        let start = downhill_below(&state, (0, 1), 1.5, NeighbourMode::Eight);
        println!("from the top of the slope to level 1.5: {start:?}");
        assert_eq!(start, Some((3, 1)));
        assert_eq!(downhill_below(&state, (4, 1), 1.5, NeighbourMode::Four), Some((4, 1)));
        assert_eq!(downhill_below(&state, (0, 1), -1.0, NeighbourMode::Eight), None, "no ground below -1 m");
    }

    #[test]
    fn a_brush_rounds_each_cell_to_whole_quanta_and_leaves_out_nothing_at_all() {
        let cells = brush_quanta(&[(0, 1.0), (1, 0.5), (2, 1.0e-9)], 1.0e-3);
        println!("{cells:?}");
        assert_eq!(cells, vec![CellWater { cell: 0, quanta: 1049 }, CellWater { cell: 1, quanta: 524 }]);
    }

    #[test]
    fn a_ray_meets_flat_ground_where_geometry_says_from_any_angle() {
        let g = grid(64, 64);
        let ground = |x: f32, z: f32| g.contains(x, z).then_some(2.0f32);
        for direction in [[0.0, -1.0, 0.0], [1.0, -1.0, 0.5], [-3.0, -2.0, 0.0]] {
            let hit = ray_hit(&Lattice::square(g), (2.0, 2.0), [-5.0, 12.0, 1.0], direction, ground).expect("a hit");
            // The plane y = 2 is 10 m below the origin.
            let t = 10.0 / -direction[1];
            let expected = [-5.0 + direction[0] * t, 2.0, 1.0 + direction[2] * t];
            println!("direction {direction:?}: hit {hit:?}, expected {expected:?}");
            assert!(hit.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1.0e-3));
        }
        assert_eq!(ray_hit(&Lattice::square(g), (2.0, 2.0), [-5.0, 12.0, 1.0], [0.0, 1.0, 0.0], ground), None, "a ray upwards misses");
        assert_eq!(ray_hit(&Lattice::square(g), (2.0, 2.0), [100.0, 12.0, 0.0], [0.0, -1.0, 0.0], ground), None, "a ray beside the grid misses");
    }
}
