//! What an editor's tools do to a world, as [`crate::authoring`] does to a dense grid: exact
//! regions of depth and ground, the water and smoothing brushes, a fill to a clicked shore,
//! picking by ray, and a record of what a stroke changed for an undo history.
//!
//! A dense grid's stroke compares the whole grid before and after; a world cannot (16384² cells
//! are 1 GiB of depths). A world keeps a [`ChangeRecord`] instead: while one is open, every edit
//! first copies the values of the blocks of [`RECORD_BLOCK`]² cells it is about to change that
//! the record does not hold yet, and [`WorldWater::finish_record`] compares those blocks with
//! what they hold now. The blocks an edit reaches are known before it runs (a brush's footprint,
//! a fill's basin), so the record costs what the stroke touched, not the world. A world does not
//! step while a record is open: the record would hold the flow's changes too.

use super::WorldWater;
use crate::authoring::{brush_quanta, changed_rect, check_region_heights, crop, downhill_below, ray_hit, smoothing, RegionChange};
use crate::error::{check_range, Error, Result};
use crate::grid::{CellRect, Grid};
use crate::lattice::Lattice;
use crate::pipes::fixed_flux_per_stored;
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
use crate::simulation::{basin_fill_within, sample_surface_on};
use std::collections::BTreeMap;

/// Cells a fill to a shore reaches from its point each way ([`WorldWater::fill_to_shore`]): a
/// basin up to about a kilometre across at 1 m cells fills at once; one reaching farther is
/// refused (a source fills it over time).
pub const FILL_REACH: u32 = 512;

/// Side of the blocks of cells a [`ChangeRecord`] copies.
pub const RECORD_BLOCK: u32 = 64;

/// Farthest a brush, a source or an edit reaches from its point on a world, cells: a footprint
/// of at most 4001² cells, which a change record holds whole (64² of its blocks).
pub const MAX_BRUSH_REACH: u32 = 2000;

/// Most cells a region read (or a depth region written, which reads it first) covers at once,
/// and a change record holds: 4096², 64 MiB of depths.
pub const MAX_REGION_CELLS: usize = 4096 * 4096;

/// Cells of horizontal travel a ray is followed through at a time ([`WorldWater::raycast`]).
const RAY_SEGMENT_CELLS: f64 = 48.0;
/// Most segments a ray is followed through: about 196 000 cells of travel, past the diagonal of
/// any world a view shows.
const RAY_MOST_SEGMENTS: u32 = 4096;

/// One field's change over a rectangle: its values before and after, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionValues<T> {
    /// The smallest rectangle holding every cell that changed.
    pub rect: CellRect,
    /// The values of `rect` when the record began.
    pub before: Vec<T>,
    /// The values of `rect` now.
    pub after: Vec<T>,
}

/// What the edits made while a record was open changed ([`WorldWater::finish_record`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedChanges {
    /// Depths (quanta), compared exactly; `None` when no depth changed.
    pub water: Option<RegionValues<i32>>,
    /// Ground heights (m), compared bit for bit; `None` when no height changed.
    pub terrain: Option<RegionValues<f32>>,
}

/// The blocks of cells a record holds, by block (x, y): depths and heights as they were before
/// the first edit that reached them.
#[derive(Debug, Default)]
pub(super) struct ChangeRecord {
    blocks: BTreeMap<(u32, u32), (Vec<i32>, Vec<f32>)>,
}

impl WorldWater {
    /// Refuses a rectangle not inside the world or holding no cell.
    pub(super) fn check_rect(&self, rect: CellRect) -> Result<()> {
        let [w, h] = self.size();
        let fits = |start: u32, size: u32, side: u32| size > 0 && start < side && size <= side - start;
        if fits(rect.x, rect.width, w) && fits(rect.y, rect.height, h) {
            Ok(())
        } else {
            Err(Error::invalid("region", format!("{}x{} cells at ({}, {})", rect.width, rect.height, rect.x, rect.y), format!("at least one cell, inside the {w}x{h} world")))
        }
    }

    /// Refuses a radius past [`MAX_BRUSH_REACH`] cells (or not finite, or negative).
    pub(super) fn check_radius(&self, radius: f32) -> Result<()> {
        let most = MAX_BRUSH_REACH as f32 * self.cell_size;
        if radius.is_finite() && (0.0..=most).contains(&radius) {
            return Ok(());
        }
        Err(Error::invalid("radius", format!("{radius} m"), format!("0 ..= {most} m ({MAX_BRUSH_REACH} cells of this world; a larger area takes several edits)")))
    }

    /// Refuses a rectangle past [`MAX_REGION_CELLS`] to read at once.
    fn check_read(&self, rect: CellRect) -> Result<()> {
        self.check_rect(rect)?;
        if rect.cell_count() > MAX_REGION_CELLS {
            return Err(Error::invalid(
                "region",
                format!("{}x{} cells ({} cells)", rect.width, rect.height, rect.cell_count()),
                format!("at most {MAX_REGION_CELLS} cells (4096²) at once: read or write a larger area in parts"),
            ));
        }
        Ok(())
    }

    /// The depths of `rect` in quanta of [`DEPTH_QUANTUM`] m, row-major: exact values, for
    /// [`WorldWater::set_depth_region`]. Waits for the device (edits made before are in). At
    /// most [`MAX_REGION_CELLS`] at once.
    pub fn depth_region(&mut self, rect: CellRect) -> Result<Vec<i32>> {
        self.check_read(rect)?;
        self.world.read_depth(rect.x, rect.y, rect.width, rect.height)
    }

    /// The ground heights of `rect` (m, as edited), row-major, from the host: no wait. At most
    /// [`MAX_REGION_CELLS`] at once.
    pub fn terrain_rect(&self, rect: CellRect) -> Result<Vec<f32>> {
        self.check_read(rect)?;
        self.world.terrain_region(rect.x, rect.y, rect.width, rect.height)
    }

    /// Sets the depth of every cell of `rect` to `depths` (quanta, row-major, each
    /// `0 ..= MAX_DEPTH_QUANTA`), exactly, keeping the flow: each cell that differs gets the
    /// difference as a water edit, which the ledger counts as added or removed. Waits for the
    /// device. Returns the quanta added and removed. At most [`MAX_REGION_CELLS`] at once.
    pub fn set_depth_region(&mut self, rect: CellRect, depths: &[i32]) -> Result<RegionChange> {
        self.check_read(rect)?;
        if depths.len() != rect.cell_count() {
            return Err(Error::WrongLength { name: "depths", expected: rect.cell_count(), actual: depths.len() });
        }
        if let Some(i) = depths.iter().position(|&d| !(0..=MAX_DEPTH_QUANTA).contains(&d)) {
            return Err(Error::invalid("depths", format!("{} quanta at index {i}", depths[i]), format!("0 ..= {MAX_DEPTH_QUANTA} quanta")));
        }
        self.note_change(rect)?;
        let now = self.world.read_depth(rect.x, rect.y, rect.width, rect.height)?;
        let mut change = RegionChange::default();
        let mut cells = Vec::new();
        for (k, (&was, &wanted)) in now.iter().zip(depths).enumerate() {
            let difference = wanted - was;
            if difference != 0 {
                cells.push((rect.x + k as u32 % rect.width, rect.y + k as u32 / rect.width, difference));
                change.added += difference.max(0) as u64;
                change.removed += (-difference).max(0) as u64;
            }
        }
        self.world.add_water(&cells)?;
        let deepest = depths.iter().copied().max().unwrap_or(0);
        self.depth_bound = self.depth_bound.max(deepest as f32 * DEPTH_QUANTUM);
        Ok(change)
    }

    /// Sets the ground of `rect` to `heights` (m, row-major, finite, within
    /// ±[`MAX_TERRAIN_ABS`]) bit for bit, keeping the water depth.
    pub fn set_terrain_rect(&mut self, rect: CellRect, heights: &[f32]) -> Result<()> {
        self.check_rect(rect)?;
        check_region_heights("heights", heights, rect)?;
        self.note_change(rect)?;
        self.world.set_terrain_region(rect.x, rect.y, rect.width, rect.height, heights)
    }

    /// The water brush: adds (`depth` > 0) or removes (`depth` < 0) up to `|depth|` m of water
    /// (`±MAX_DEPTH`) at local `(x, z)`, falling smoothly to nothing at `radius` m (the dense
    /// grid's footprint and rounding, [`brush_quanta`]), never more than a cell holds nor less
    /// than nothing. Returns the net volume, m³, exactly (it reads the footprint's depths first,
    /// waiting for the device).
    pub fn paint_water(&mut self, x: f32, z: f32, depth: f32, radius: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("depth", depth, -MAX_DEPTH, MAX_DEPTH)?;
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        let Some(rect) = CellRect::bounding(footprint.iter().map(|&(cx, cy, _)| (cx, cy))) else { return Ok(0.0) };
        let weights: Vec<(u32, f32)> = footprint.iter().enumerate().map(|(k, &(_, _, weight))| (k as u32, weight)).collect();
        let quanta = brush_quanta(&weights, depth);
        if quanta.is_empty() {
            return Ok(0.0);
        }
        self.note_change(rect)?;
        let now = self.world.read_depth(rect.x, rect.y, rect.width, rect.height)?;
        let mut cells = Vec::with_capacity(quanta.len());
        let mut net = 0i64;
        for q in quanta {
            let (cx, cy, _) = footprint[q.cell as usize];
            let was = now[((cy - rect.y) * rect.width + (cx - rect.x)) as usize];
            let change = q.quanta.clamp(-was, MAX_DEPTH_QUANTA - was);
            if change != 0 {
                cells.push((cx, cy, change));
                net += change as i64;
                self.depth_bound = self.depth_bound.max((was + change) as f32 * DEPTH_QUANTUM);
            }
        }
        self.world.add_water(&cells)?;
        Ok(net as f64 * self.quantum_volume())
    }

    /// The smoothing brush: each cell within `radius` m of local `(x, z)` moves towards the mean
    /// of its 3 × 3 neighbourhood by `strength` (`0 ..= 1`) times its brush weight, as on a dense
    /// grid ([`smoothing`]); water depth kept. The ground comes from the host: no wait.
    pub fn smooth_terrain(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        check_range("strength", strength, 0.0, 1.0)?;
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        let Some(rect) = CellRect::bounding(footprint.iter().map(|&(cx, cy, _)| (cx, cy))) else { return Ok(()) };
        if strength == 0.0 {
            return Ok(());
        }
        // One cell more each way: each cell's mean reads its neighbours.
        let [w, h] = self.size();
        let (x0, y0) = (rect.x.saturating_sub(1), rect.y.saturating_sub(1));
        let around = CellRect { x: x0, y: y0, width: (rect.x + rect.width + 1).min(w) - x0, height: (rect.y + rect.height + 1).min(h) - y0 };
        let heights = self.world.terrain_region(around.x, around.y, around.width, around.height)?;
        // The smoothing reads only the grid's sides; the area is small, never past a world's side.
        let grid = Grid { width: around.width, height: around.height, cell_size: self.cell_size };
        let local: Vec<(u32, f32)> = footprint.iter().map(|&(cx, cy, weight)| ((cy - y0) * around.width + (cx - x0), weight)).collect();
        let moves = smoothing(&Lattice::square(grid), &heights, &local, strength);
        let mut smoothed = crop(&grid, &heights, CellRect { x: rect.x - x0, y: rect.y - y0, ..rect });
        for m in moves {
            let (cx, cy) = (x0 + m.cell % around.width, y0 + m.cell / around.width);
            let at = ((cy - rect.y) * rect.width + (cx - rect.x)) as usize;
            smoothed[at] = (smoothed[at] + m.delta).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
        }
        self.note_change(rect)?;
        self.world.set_terrain_region(rect.x, rect.y, rect.width, rect.height, &smoothed)
    }

    /// Fills the basin below local `(x, z)` until its surface stands at `level` (m): the point
    /// marks the shore, as [`crate::Simulation::fill_to_shore`]. The fill starts at the point's
    /// cell when its ground lies below `level`, else at the first cell below it down the
    /// steepest descent, and reaches at most [`FILL_REACH`] cells each way: a basin reaching
    /// farther (not held by the world's edge) is refused, nothing added. Water is only added.
    /// Returns the volume added, m³ (0 when no ground below `level` lies downhill). Waits for
    /// the device.
    pub fn fill_to_shore(&mut self, x: f32, z: f32, level: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("level", level, -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS)?;
        let at = self.to_cells(x, z);
        let [w, h] = self.size();
        if !(at[0] >= 0.0 && at[1] >= 0.0 && at[0] < w as f64 && at[1] < h as f64) {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point over the world"));
        }
        let Some((x0, y0, grid)) = self.region_around(at, FILL_REACH as f64) else { return Ok(0.0) };
        let state = self.region_state(x0, y0, grid)?;
        let cell = ((at[0] as u32).min(x0 + grid.width - 1) - x0, (at[1] as u32).min(y0 + grid.height - 1) - y0);
        let Some(start) = downhill_below(&state, cell, level, self.params.neighbours) else { return Ok(0.0) };
        let (cells, basin) = basin_fill_within(&state, start, level, self.params.neighbours)?;
        // A side of the region inside the world is a wall the basin would not have.
        let cut = (basin.x == 0 && x0 > 0)
            || (basin.y == 0 && y0 > 0)
            || (basin.x + basin.width == grid.width && x0 + grid.width < w)
            || (basin.y + basin.height == grid.height && y0 + grid.height < h);
        if cut {
            return Err(Error::invalid(
                "level",
                format!("{level} m"),
                format!("a level whose basin lies within {FILL_REACH} cells of the point: the basin below it reaches farther (pour it with add_water or a source)"),
            ));
        }
        let Some(rect) = CellRect::bounding(cells.iter().map(|c| (x0 + c.cell % grid.width, y0 + c.cell / grid.width))) else { return Ok(0.0) };
        self.note_change(rect)?;
        let placed: Vec<(u32, u32, i32)> = cells.iter().map(|c| (x0 + c.cell % grid.width, y0 + c.cell / grid.width, c.quanta)).collect();
        self.world.add_water(&placed)?;
        let deepest = cells.iter().map(|c| state.depth[c.cell as usize] as i64 + c.quanta as i64).max().unwrap_or(0);
        self.depth_bound = self.depth_bound.max(deepest as f32 * DEPTH_QUANTUM);
        Ok(cells.iter().map(|c| c.quanta as f64).sum::<f64>() * self.quantum_volume())
    }

    /// Where a ray from local `origin` along `direction` first meets the water surface, or the
    /// ground where it is dry (the surface [`WorldWater::surface_height`] answers with), as a
    /// local point; `None` when it misses. Followed through the world in segments: a segment
    /// whose ray passes above its ground plus the deepest water the world has seen is skipped on
    /// the host's ground alone; the others read their water (a wait for the device each). For
    /// picking the point under a mouse.
    pub fn raycast(&mut self, origin: [f32; 3], direction: [f32; 3]) -> Result<Option<[f32; 3]>> {
        let length = direction.iter().map(|&d| (d as f64).powi(2)).sum::<f64>().sqrt();
        if origin.iter().chain(&direction).any(|v| !v.is_finite()) || length.is_nan() || length <= 0.0 {
            return Err(Error::invalid("ray", format!("{origin:?} along {direction:?}"), "a finite origin and a finite, non-zero direction"));
        }
        let o = origin.map(f64::from);
        let d = direction.map(|v| v as f64 / length);
        let [ex, ez] = self.extent().map(f64::from);
        let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
        for (axis, half) in [(0, 0.5 * ex), (2, 0.5 * ez)] {
            if d[axis].abs() < 1.0e-12 {
                if o[axis].abs() > half {
                    return Ok(None);
                }
                continue;
            }
            let (a, b) = ((-half - o[axis]) / d[axis], (half - o[axis]) / d[axis]);
            t0 = t0.max(a.min(b));
            t1 = t1.min(a.max(b));
        }
        if t0.is_nan() || t1.is_nan() || t0 > t1 {
            return Ok(None);
        }
        let cell = self.cell_size as f64;
        let horizontal = (d[0] * d[0] + d[2] * d[2]).sqrt();
        if horizontal * RAY_SEGMENT_CELLS < 1.0e-9 {
            // Straight up or down: the one column under the origin.
            let ([x, _, z], y) = (origin, o[1]);
            return Ok(self.surface_height(x, z)?.filter(|&h| (d[1] < 0.0 && y >= h as f64) || (d[1] > 0.0 && y <= h as f64)).map(|h| [x, h, z]));
        }
        let segment = RAY_SEGMENT_CELLS * cell / horizontal;
        let point = |t: f64| [o[0] + d[0] * t, o[1] + d[1] * t, o[2] + d[2] * t];
        let mut t = t0;
        for _ in 0..RAY_MOST_SEGMENTS {
            if t >= t1 {
                break;
            }
            let end = (t + segment).min(t1);
            let (a, b) = (point(t), point(end));
            let Some((x0, y0, grid)) = self.segment_region(a, b) else { break };
            let ground = self.world.terrain_region(x0, y0, grid.width, grid.height)?;
            let top = ground.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64 + self.depth_bound as f64 + cell;
            if a[1].min(b[1]) <= top {
                if let Some(hit) = self.ray_through_region(x0, y0, grid, o, d)? {
                    return Ok(Some(hit));
                }
            }
            t = end;
        }
        Ok(None)
    }

    /// The region of cells around the ray's segment from `a` to `b` (local points), two cells
    /// wider each way, clipped to the world.
    fn segment_region(&self, a: [f64; 3], b: [f64; 3]) -> Option<(u32, u32, Grid)> {
        let (ca, cb) = (self.to_cells(a[0] as f32, a[2] as f32), self.to_cells(b[0] as f32, b[2] as f32));
        let centre = [0.5 * (ca[0] + cb[0]), 0.5 * (ca[1] + cb[1])];
        let reach = 0.5 * (ca[0] - cb[0]).abs().max((ca[1] - cb[1]).abs()) + 2.0;
        self.region_around(centre, reach)
    }

    /// The first point of the ray within the region whose water was read, as
    /// [`crate::Simulation::raycast`] finds it on a grid of the region's size.
    fn ray_through_region(&mut self, x0: u32, y0: u32, grid: Grid, o: [f64; 3], d: [f64; 3]) -> Result<Option<[f32; 3]>> {
        let state = self.region_state(x0, y0, grid)?;
        let fixed = fixed_flux_per_stored(&self.texel_constants());
        let snapshot = state.snapshot_reusing(0, Default::default(), None, fixed, false);
        let y_range = snapshot.height.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), texel| (lo.min(texel[2]), hi.max(texel[0])));
        // The region's local frame: the world's, moved to the region's centre.
        let [w, h] = self.size();
        let cell = self.cell_size as f64;
        let shift = [(x0 as f64 + grid.width as f64 * 0.5 - w as f64 * 0.5) * cell, (y0 as f64 + grid.height as f64 * 0.5 - h as f64 * 0.5) * cell];
        let local = [(o[0] - shift[0]) as f32, o[1] as f32, (o[2] - shift[1]) as f32];
        let lattice = Lattice::square(grid);
        let hit = ray_hit(&lattice, y_range, local, d.map(|v| v as f32), |x, z| sample_surface_on(&lattice, &snapshot, x, z));
        Ok(hit.map(|p| [(p[0] as f64 + shift[0]) as f32, p[1], (p[2] as f64 + shift[1]) as f32]))
    }

    /// Opens a record of what the edits from now on change ([`WorldWater::finish_record`]),
    /// dropping one still open. The world does not step while it is open.
    pub fn begin_record(&mut self) {
        self.record = Some(ChangeRecord::default());
    }

    /// Refuses to step while a record is open: the flow would change cells the record does
    /// not hold, and an undo would then rewind part of the flow.
    pub(super) fn refuse_while_recording(&self) -> Result<()> {
        if self.record.is_some() {
            return Err(Error::Busy("the world does not step while a change record is open (an editor's stroke): finish_record first".into()));
        }
        Ok(())
    }

    /// Whether a record is open.
    pub fn is_recording(&self) -> bool {
        self.record.is_some()
    }

    /// Closes the open record: the smallest rectangle of each field holding every cell the edits
    /// since [`WorldWater::begin_record`] changed, with its values then and now (exact: depths in
    /// quanta, heights bit for bit), for an undo history ([`WorldWater::set_depth_region`] and
    /// [`WorldWater::set_terrain_rect`] put either back). Nothing when no record was open.
    /// Waits for the device.
    pub fn finish_record(&mut self) -> Result<RecordedChanges> {
        let Some(record) = self.record.take() else { return Ok(RecordedChanges::default()) };
        let Some(&first) = record.blocks.keys().next() else { return Ok(RecordedChanges::default()) };
        let [w, h] = self.size();
        let bounds = record.blocks.keys().fold(self.block_rect(first), |r, &key| r.union(self.block_rect(key)));
        if bounds.cell_count() > MAX_REGION_CELLS {
            return Err(Error::invalid(
                "change record",
                format!("edits spread over {}x{} cells", bounds.width, bounds.height),
                format!("edits within {MAX_REGION_CELLS} cells (4096²): an undo payload that large is not kept; the edits stay"),
            ));
        }
        let depth_now = self.world.read_depth(bounds.x, bounds.y, bounds.width, bounds.height)?;
        let ground_now = self.world.terrain_region(bounds.x, bounds.y, bounds.width, bounds.height)?;
        let (mut depth_then, mut ground_then) = (depth_now.clone(), ground_now.clone());
        for (&key, (depths, heights)) in &record.blocks {
            let block = self.block_rect(key);
            for row in 0..block.height {
                let from = (row * block.width) as usize;
                let to = ((block.y + row - bounds.y) * bounds.width + (block.x - bounds.x)) as usize;
                depth_then[to..to + block.width as usize].copy_from_slice(&depths[from..from + block.width as usize]);
                ground_then[to..to + block.width as usize].copy_from_slice(&heights[from..from + block.width as usize]);
            }
        }
        debug_assert!(bounds.x + bounds.width <= w && bounds.y + bounds.height <= h);
        Ok(RecordedChanges {
            water: changed_values(bounds, depth_then, depth_now, |a, b| a == b),
            terrain: changed_values(bounds, ground_then, ground_now, |a, b| a.to_bits() == b.to_bits()),
        })
    }

    /// Before an edit of `rect`: the record copies the blocks it reaches that it does not hold.
    pub(super) fn note_change(&mut self, rect: CellRect) -> Result<()> {
        let Some(record) = self.record.as_ref() else { return Ok(()) };
        let (bx0, by0) = (rect.x / RECORD_BLOCK, rect.y / RECORD_BLOCK);
        let (bx1, by1) = ((rect.x + rect.width - 1) / RECORD_BLOCK, (rect.y + rect.height - 1) / RECORD_BLOCK);
        let most = MAX_REGION_CELLS / (RECORD_BLOCK * RECORD_BLOCK) as usize;
        if (bx1 - bx0 + 1) as usize * (by1 - by0 + 1) as usize > most {
            return Err(Error::invalid("edit", format!("{}x{} cells while a change record is open", rect.width, rect.height), format!("edits a record can hold: at most {MAX_REGION_CELLS} cells")));
        }
        let missing: Vec<(u32, u32)> = (by0..=by1).flat_map(|by| (bx0..=bx1).map(move |bx| (bx, by))).filter(|key| !record.blocks.contains_key(key)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        if record.blocks.len() + missing.len() > most {
            return Err(Error::invalid(
                "edit",
                format!("one more edit while a change record holds {} blocks of {RECORD_BLOCK}² cells", record.blocks.len()),
                format!("edits a record can hold: at most {most} blocks ({MAX_REGION_CELLS} cells); finish the record (finish_record) first"),
            ));
        }
        // One read of the depths of every missing block, one wait.
        let span = missing.iter().fold(self.block_rect(missing[0]), |r, &key| r.union(self.block_rect(key)));
        let depths = self.world.read_depth(span.x, span.y, span.width, span.height)?;
        let mut copied = Vec::with_capacity(missing.len());
        for key in missing {
            let block = self.block_rect(key);
            let mut values = Vec::with_capacity(block.cell_count());
            for row in 0..block.height {
                let from = ((block.y + row - span.y) * span.width + (block.x - span.x)) as usize;
                values.extend_from_slice(&depths[from..from + block.width as usize]);
            }
            let heights = self.world.terrain_region(block.x, block.y, block.width, block.height)?;
            copied.push((key, (values, heights)));
        }
        if let Some(record) = self.record.as_mut() {
            record.blocks.extend(copied);
        }
        Ok(())
    }

    /// The cells of record block `key`, clipped to the world.
    fn block_rect(&self, (bx, by): (u32, u32)) -> CellRect {
        let [w, h] = self.size();
        let (x, y) = (bx * RECORD_BLOCK, by * RECORD_BLOCK);
        CellRect { x, y, width: RECORD_BLOCK.min(w - x), height: RECORD_BLOCK.min(h - y) }
    }

    /// Refuses a local point that is not finite.
    pub(super) fn check_point(x: f32, z: f32) -> Result<()> {
        for (name, v) in [("x", x), ("z", z)] {
            if !v.is_finite() {
                return Err(Error::invalid(name, v, "a finite local position, m"));
            }
        }
        Ok(())
    }
}

/// The cells of `bounds` whose values differ (as `same` judges), as the smallest rectangle with
/// its values then and now; `None` when none differs.
fn changed_values<T: Copy>(bounds: CellRect, then: Vec<T>, now: Vec<T>, same: impl Fn(&T, &T) -> bool) -> Option<RegionValues<T>> {
    // The bounds as a grid of their own: the dense grid's comparison and crop serve it.
    let grid = Grid { width: bounds.width, height: bounds.height, cell_size: 1.0 };
    let within = changed_rect(&grid, &then, &now, same)?;
    let rect = CellRect { x: bounds.x + within.x, y: bounds.y + within.y, ..within };
    Some(RegionValues { rect, before: crop(&grid, &then, within), after: crop(&grid, &now, within) })
}
