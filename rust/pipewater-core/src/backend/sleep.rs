//! Sleeping tiles: water at rest is not stepped, and the step's cost follows the water that
//! moves.
//!
//! The grid is cut into tiles. The step of a cell reads the fields within a few cells of it
//! (at most four columns and three rows), fewer than a tile's side, so a tile and its eight
//! neighbours hold everything its cells' step reads. If none of those nine tiles changed a bit
//! of depth or pipe flow in the last step, and nothing else touched them since, the step gives
//! the tile's cells exactly the values they already hold: it is skipped. Skipping is therefore
//! exact, not an approximation: fields, ledger and counters are the same bit for bit with
//! sleeping on and off (`tests/sleeping.rs`). What makes water at rest stop changing bits is
//! the model's own rule ([`crate::pipes::settles`]).
//!
//! What wakes a tile before its next step: a change in it or a neighbour in the last step (a
//! flood arriving at its border), an edit of water or terrain, a source or drain, a body's
//! displacement or push, a new terrain or state, a grid edge that exchanges water (open, inflow
//! or fixed level: their tiles never sleep), and new step constants. A change of the step length
//! alone (every frame picks its own) wakes only tiles near moving pipes: a tile whose pipes and
//! whose neighbours' pipes all carry nothing gives the same bits for any step length (an undriven
//! pipe stays empty; a driven one drains a dry cell, whose limit factor is 0 at any step length).
//! Any other change of the constants wakes every tile.
//!
//! On the GPU backends the snapshot follows the same tiles: a cell's texels change only when its
//! tile steps (or one next to it, which by the same reach argument wakes it), so only tiles
//! stepped since the last snapshot are recomputed ([`DeviceSleep::snapshot_all_stale`] says when
//! all are).

use crate::pipes::{StepConstants, BOUNDARY_WALL};

/// How the step's constants changed since the last step, for sleeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstantsChange {
    /// The same constants.
    None,
    /// Only what follows from the step length (and the damping and inflow rates): tiles near
    /// moving pipes wake.
    StepLength,
    /// Something else (neighbours, cross-section, advection, edges, gravity, cell size, pipe
    /// widths): every tile wakes.
    Mode,
}

/// How the constants of the step after `old` (if any) differ in `new`.
pub fn constants_change(old: Option<&StepConstants>, new: &StepConstants) -> ConstantsChange {
    let Some(old) = old else { return ConstantsChange::Mode };
    if old == new {
        return ConstantsChange::None;
    }
    let mode = |c: &StepConstants| {
        (
            (c.width, c.height, c.eight_neighbours, c.depth_dependent, c.advection, c.boundary),
            [c.gravity, c.cell_size, c.pipe_depth].map(f32::to_bits),
            c.boundary_level.map(f32::to_bits),
            c.widths.map(f32::to_bits),
        )
    };
    if mode(old) == mode(new) {
        ConstantsChange::StepLength
    } else {
        ConstantsChange::Mode
    }
}

/// A grid cut into tiles of `size` cells (the last row and column of tiles may be smaller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileGrid {
    /// Cells per tile along x and y.
    pub size: [u32; 2],
    /// Tiles along x and y.
    pub tiles: [u32; 2],
    /// Grid cells along x and y.
    pub cells: [u32; 2],
}

impl TileGrid {
    /// A `width × height` grid cut into tiles of `size` cells.
    pub fn new(width: u32, height: u32, size: [u32; 2]) -> Self {
        TileGrid { size, tiles: [width.div_ceil(size[0]).max(1), height.div_ceil(size[1]).max(1)], cells: [width, height] }
    }

    /// Number of tiles.
    pub fn count(&self) -> usize {
        self.tiles[0] as usize * self.tiles[1] as usize
    }

    /// The tiles on the grid's edges, each once, in increasing order.
    pub fn edge_tiles(&self) -> impl Iterator<Item = usize> + '_ {
        let [tx, ty] = self.tiles.map(|n| n as usize);
        (0..ty).flat_map(move |y| {
            let row = y * tx;
            let edge_row = y == 0 || y + 1 == ty;
            // An edge row has all its tiles on an edge; a row inside, its first and last.
            let (first, last) = if edge_row { (0..tx, None) } else { (0..1.min(tx), (tx > 1).then_some(tx - 1)) };
            first.chain(last).map(move |x| row + x)
        })
    }

    /// The tile of cell `(x, y)`.
    #[inline]
    pub fn tile_of(&self, x: u32, y: u32) -> usize {
        (y / self.size[1]) as usize * self.tiles[0] as usize + (x / self.size[0]) as usize
    }

    /// The tile of cell index `cell` (row-major), if on the grid.
    #[inline]
    pub fn tile_of_cell(&self, cell: u32) -> Option<usize> {
        let (w, h) = (self.cells[0], self.cells[1]);
        (w > 0 && cell / w < h).then(|| self.tile_of(cell % w, cell / w))
    }

    /// Cells in tile `t`.
    pub fn cells_in(&self, t: usize) -> u64 {
        let (tx, ty) = ((t % self.tiles[0] as usize) as u32, (t / self.tiles[0] as usize) as u32);
        let span = |k: u32, n: u32, size: u32| (n - k * size).min(size) as u64;
        span(tx, self.cells[0], self.size[0]) * span(ty, self.cells[1], self.size[1])
    }

    /// The columns and rows of cells tile `t` covers.
    pub fn cell_ranges(&self, t: usize) -> (std::ops::Range<u32>, std::ops::Range<u32>) {
        let (tx, ty) = ((t % self.tiles[0] as usize) as u32, (t / self.tiles[0] as usize) as u32);
        let span = |k: u32, n: u32, size: u32| (k * size).min(n)..((k + 1) * size).min(n);
        (span(tx, self.cells[0], self.size[0]), span(ty, self.cells[1], self.size[1]))
    }

    /// The tiles of `other` (a cutting of the same cells) that share a cell with a tile `which`
    /// marks: a change known by this grid's tiles, told in `other`'s. `None` when the two cut
    /// different grids.
    pub fn cover(&self, which: &[bool], other: &TileGrid) -> Option<Vec<bool>> {
        if self.cells != other.cells || which.len() != self.count() {
            return None;
        }
        let mut marked = vec![false; other.count()];
        for t in (0..which.len()).filter(|&t| which[t]) {
            let (xs, ys) = self.cell_ranges(t);
            if xs.is_empty() || ys.is_empty() {
                continue;
            }
            let (x0, x1) = (xs.start / other.size[0], (xs.end - 1) / other.size[0]);
            for oy in ys.start / other.size[1]..=(ys.end - 1) / other.size[1] {
                for ox in x0..=x1 {
                    marked[(oy * other.tiles[0] + ox) as usize] = true;
                }
            }
        }
        Some(marked)
    }

    /// Whether tile `t` has cells on a grid edge that exchanges water with the outside under `c`
    /// (open, inflow or fixed level): such tiles never sleep.
    pub fn on_exchanging_edge(&self, c: &StepConstants, t: usize) -> bool {
        let (tx, ty) = ((t % self.tiles[0] as usize) as u32, (t / self.tiles[0] as usize) as u32);
        // Edges in the order of StepConstants::boundary: north, east, south, west.
        let on = [ty == 0, tx + 1 == self.tiles[0], ty + 1 == self.tiles[1], tx == 0];
        (0..4).any(|e| on[e] && c.boundary[e] != BOUNDARY_WALL)
    }

    /// Tiles to step from the tiles that `changed` (in the last step, or by edits since) and
    /// those that hold `moving` pipes: every tile within one of a changed tile; after a change
    /// of constants also those within one of a moving tile ([`ConstantsChange::StepLength`])
    /// or all ([`ConstantsChange::Mode`]); and tiles on exchanging edges.
    pub fn awake(&self, c: &StepConstants, change: ConstantsChange, changed: impl Fn(usize) -> bool, moving: impl Fn(usize) -> bool) -> Vec<bool> {
        let n = self.count();
        if change == ConstantsChange::Mode {
            return vec![true; n];
        }
        let (tw, th) = (self.tiles[0] as i64, self.tiles[1] as i64);
        let wakes = |t: usize| changed(t) || (change == ConstantsChange::StepLength && moving(t));
        let source: Vec<bool> = (0..n).map(wakes).collect();
        let mut awake = vec![false; n];
        for ty in 0..th {
            for tx in 0..tw {
                let t = (ty * tw + tx) as usize;
                let mut any = self.on_exchanging_edge(c, t);
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let (x, y) = (tx + dx, ty + dy);
                        any |= x >= 0 && y >= 0 && x < tw && y < th && source[(y * tw + x) as usize];
                    }
                }
                awake[t] = any;
            }
        }
        awake
    }
}

/// What sleeping did in a backend's last frame ([`crate::Backend::sleep_report`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SleepReport {
    /// Whether tiles may sleep ([`crate::Backend::set_sleeping`]).
    pub enabled: bool,
    /// The tiles.
    pub tiles: Option<TileGrid>,
    /// Steps in the frame.
    pub steps: u32,
    /// Tiles stepped in the frame's last step.
    pub awake_tiles: u32,
    /// Cells stepped, summed over the frame's steps (tiles on the grid's far edges count their
    /// own cells).
    pub cells_stepped: u64,
}

/// Which tiles the last step stepped, for debug views ([`crate::Backend::awake_tiles`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwakeTiles {
    /// The tiles.
    pub tiles: TileGrid,
    /// Per tile, row-major: whether it was stepped.
    pub awake: Vec<bool>,
}

/// `TileParams` of `common.wgsl`: what the GPU's plan (`tiles.wgsl`) and step kernel read of the
/// tiles.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TileParams {
    /// Tiles along x (strips) and y (bands).
    pub tiles: [u32; 2],
    /// Cells of a tile along x and y.
    pub size: [u32; 2],
    /// 1 when tiles may sleep.
    pub sleeping: u32,
    /// [`ConstantsChange`] before the frame's first step: 0 none, 1 step length, 2 mode.
    pub change: u32,
    /// [`snapshot_slices`] of the tiles.
    pub snapshot_slices: u32,
    /// Padding to the uniform's 32 bytes.
    pub padding: u32,
}

/// Most workgroups the GPU snapshot wants over the grid: a small grid's few tiles are cut into
/// slices of rows, so that recomputing them all is not one long loop per tile on an idle GPU.
pub const SNAPSHOT_WORKGROUPS: usize = 1024;
/// Most slices of a tile's snapshot.
pub const MAX_SNAPSHOT_SLICES: u32 = 8;

/// Slices of rows each tile's snapshot is cut into on the GPU (`snapshot.wgsl`), one workgroup
/// each: enough to give a small grid about [`SNAPSHOT_WORKGROUPS`] workgroups, at most
/// [`MAX_SNAPSHOT_SLICES`] and never more than the tile's rows; 1 from about 2048² on.
pub fn snapshot_slices(tiles: &TileGrid) -> u32 {
    (SNAPSHOT_WORKGROUPS.div_ceil(tiles.count().max(1)) as u32).clamp(1, MAX_SNAPSHOT_SLICES.min(tiles.size[1].max(1)))
}

impl TileParams {
    /// The parameters of `tiles` for a frame whose first step follows a change `change`.
    pub fn new(tiles: &TileGrid, sleeping: bool, change: ConstantsChange) -> Self {
        let change = match change {
            ConstantsChange::None => 0,
            ConstantsChange::StepLength => 1,
            ConstantsChange::Mode => 2,
        };
        TileParams { tiles: tiles.tiles, size: tiles.size, sleeping: sleeping as u32, change, snapshot_slices: snapshot_slices(tiles), padding: 0 }
    }
}

/// Host marks of a tile in `tile_wakes` (`tiles.wgsl`): wake it for every step of the frame
/// (a source or drain in it).
pub const WAKE_EVERY_STEP: u32 = 1;
/// Host marks: wake a tile for the frame's first step (an edit, a body, terrain).
pub const WAKE_FIRST_STEP: u32 = 2;
/// `TILE_AWAKE` of a tile's flags word (`common.wgsl`).
pub const TILE_AWAKE: u32 = 4;
/// `TILE_WET` of a tile's flags word: in a world of pages, a cell of the tile holds water.
pub const TILE_WET: u32 = 8;
/// The lowest of the eight bits of a tile's flags (`common.wgsl` `TILE_NEAR_NORTH`) that say which
/// neighbours of its page a wet cell lies within half a page of: north, east, south, west, then
/// north-east, south-east, south-west, north-west (both borders, for a corner).
pub const TILE_NEAR_NORTH: u32 = 0x2000;
/// Words in front of the tiles of an awake list: the indirect dispatch's arguments and a spare.
pub const AWAKE_LIST_HEADER: usize = 4;
/// An empty awake list's header: no tile, and the dispatch's y and z.
pub const EMPTY_AWAKE_LIST: [u32; AWAKE_LIST_HEADER] = [0, 1, 1, 0];
/// Bytes of a GPU frame's sleeping report as read back: cells stepped (low and high words), the
/// awake tiles of its last step, one spare word.
pub const SLEEP_REPORT_BYTES: usize = 16;

/// The host's side of sleeping tiles on a GPU backend (both run `tiles.wgsl` and the same step
/// kernel): the marks edits and forcing leave, the change of constants, and the report read
/// back. The device holds everything else.
#[derive(Debug, Clone)]
pub struct DeviceSleep {
    enabled: bool,
    tiles: TileGrid,
    /// Whether the tiles hold the step's reach; if not, every tile steps.
    exact: bool,
    /// Marks for the next frame with steps, and those on the device.
    marks: Vec<u32>,
    uploaded: Vec<u32>,
    /// Constants of the last step; `None` wakes every tile at the next.
    last: Option<StepConstants>,
    /// Whether a step has run since the fields were uploaded.
    stepped: bool,
    /// Steps of the last frame recorded.
    frame_steps: u32,
    report: SleepReport,
    report_frame: u64,
    /// Whether the next snapshot recomputes every tile (`snapshot.wgsl`): set by what changes
    /// cells without a step of their tiles (a new state or terrain) and at the start.
    snapshot_all: bool,
    /// Whether edits reached the device since the last frame with steps, whose plan marks their
    /// tiles stale.
    edited_without_plan: bool,
    /// Constants of the last snapshot: texels depend on the model's mode.
    snapshot_constants: Option<StepConstants>,
}

impl DeviceSleep {
    /// Sleeping on `tiles`, on; `exact` is whether the tiles hold the step's reach.
    pub fn new(tiles: TileGrid, exact: bool) -> Self {
        let n = tiles.count();
        DeviceSleep {
            enabled: true,
            tiles,
            exact,
            marks: vec![0; n],
            uploaded: vec![0; n],
            last: None,
            stepped: false,
            frame_steps: 0,
            report: SleepReport { enabled: true, tiles: Some(tiles), ..SleepReport::default() },
            report_frame: 0,
            snapshot_all: true,
            edited_without_plan: false,
            snapshot_constants: None,
        }
    }

    /// The tiles.
    pub fn tiles(&self) -> TileGrid {
        self.tiles
    }

    /// Whether tiles may sleep.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// [`crate::Backend::set_sleeping`]: a change wakes every tile.
    pub fn set_enabled(&mut self, on: bool) {
        if on != self.enabled {
            self.enabled = on;
            self.report.enabled = on;
            self.wake_all();
        }
    }

    /// Every tile steps at the next step, and the next snapshot recomputes every tile (a new
    /// terrain).
    pub fn wake_all(&mut self) {
        self.last = None;
        self.snapshot_all = true;
    }

    /// A new state as of frame `frames`: every tile steps at the next step, and until then all
    /// count as awake.
    pub fn loaded(&mut self, frames: u64) {
        self.wake_all();
        self.stepped = false;
        self.report_frame = frames;
        self.marks.fill(0);
    }

    /// Marks the tile of `cell` with `bits` ([`WAKE_EVERY_STEP`], [`WAKE_FIRST_STEP`]).
    pub fn mark(&mut self, cell: u32, bits: u32) {
        if let Some(t) = self.tiles.tile_of_cell(cell) {
            self.marks[t] |= bits;
        }
    }

    /// Marks the tiles of every cell `batch` touches for the next step.
    pub fn mark_edits(&mut self, batch: &super::pending::EditBatch) {
        let cells = batch.water.iter().map(|e| e.cell).chain(batch.terrain.iter().map(|e| e.cell));
        self.mark_edited(cells.chain(batch.displacement.iter().map(|e| e.cell)).chain(batch.nudges.iter().map(|e| e.cell)));
    }

    /// Marks the tiles of `cells`, whose water or ground changed on the device outside a step,
    /// for the next step, and the snapshot to redraw them.
    pub fn mark_edited(&mut self, cells: impl IntoIterator<Item = u32>) {
        for cell in cells {
            self.mark(cell, WAKE_FIRST_STEP);
            self.edited_without_plan = true;
        }
    }

    /// Starts a frame of `substeps` steps with constants `c` and `forcing`: the parameters to
    /// upload, and the marks when they differ from those on the device. `None` for a frame
    /// without steps, whose marks wait for the next.
    pub fn start_frame(&mut self, c: &StepConstants, substeps: u32, forcing: &[super::CellWater]) -> Option<(TileParams, Option<&[u32]>)> {
        self.frame_steps = substeps;
        if substeps == 0 {
            return None;
        }
        for f in forcing.iter().filter(|f| f.quanta != 0) {
            self.mark(f.cell, WAKE_EVERY_STEP);
        }
        let change = if self.enabled { constants_change(self.last.as_ref(), c) } else { ConstantsChange::Mode };
        self.last = Some(*c);
        self.stepped = true;
        // This frame's first plan marks the edited tiles stale.
        self.edited_without_plan = false;
        let params = TileParams::new(&self.tiles, self.enabled && self.exact, change);
        let changed = self.marks != self.uploaded;
        std::mem::swap(&mut self.marks, &mut self.uploaded);
        self.marks.fill(0);
        Some((params, changed.then_some(&self.uploaded[..])))
    }

    /// Before recording a snapshot with constants `c`: the stale marks to upload when it must
    /// recompute every tile, not only those the plans marked since the last one. That is after
    /// a new state or terrain, after edits that no step's plan saw, and when `c` changes the
    /// model's mode (texels depend on the cell size, the pipe depth and the cross-section rule).
    pub fn snapshot_all_stale(&mut self, c: &StepConstants) -> Option<Vec<u32>> {
        let all = self.snapshot_all || self.edited_without_plan || constants_change(self.snapshot_constants.as_ref(), c) == ConstantsChange::Mode;
        self.snapshot_all = false;
        self.edited_without_plan = false;
        self.snapshot_constants = Some(*c);
        all.then(|| vec![1; self.tiles.count()])
    }

    /// Steps of the last frame recorded (what its report's read carries).
    pub fn frame_steps(&self) -> u32 {
        self.frame_steps
    }

    /// Applies the report read behind frame `frame`, which ran `steps` steps (`bytes`:
    /// [`SLEEP_REPORT_BYTES`]), if it is not older than the one held.
    pub fn accept(&mut self, frame: u64, steps: u32, bytes: &[u8]) {
        if bytes.len() < 12 || frame < self.report_frame {
            return;
        }
        let word = |k: usize| u32::from_le_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]]);
        self.report_frame = frame;
        self.report.steps = steps;
        // A frame without steps leaves the last one's words: it stepped no cell.
        self.report.cells_stepped = if steps > 0 { word(0) as u64 | (word(1) as u64) << 32 } else { 0 };
        self.report.awake_tiles = word(2);
    }

    /// The newest report read back.
    pub fn report(&self) -> SleepReport {
        self.report
    }

    /// The awake tiles from the last step's flags words (`None`: no step since the upload, all
    /// count as awake).
    pub fn awake_tiles(&self, flags: Option<&[u32]>) -> AwakeTiles {
        let awake = match flags {
            Some(words) if self.stepped => words.iter().map(|w| w & TILE_AWAKE != 0).collect(),
            _ => vec![true; self.tiles.count()],
        };
        AwakeTiles { tiles: self.tiles, awake }
    }

    /// Whether a step has run since the fields were uploaded (before it, the flags on the device
    /// mean nothing).
    pub fn stepped(&self) -> bool {
        self.stepped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edge tiles are exactly the tiles in the first or last row or column, once each and
    /// in order, for grids of one tile, one row, one column and several of each.
    #[test]
    fn the_edge_tiles_are_the_tiles_on_an_edge() {
        for [w, h] in [[1, 1], [5, 1], [1, 4], [2, 2], [4, 3], [7, 6]] {
            let grid = TileGrid::new(w * 10, h * 10, [10, 10]);
            let expected: Vec<usize> = (0..grid.count()).filter(|&t| {
                let (x, y) = (t as u32 % w, t as u32 / w);
                x == 0 || y == 0 || x + 1 == w || y + 1 == h
            }).collect();
            let edge: Vec<usize> = grid.edge_tiles().collect();
            println!("{w}x{h}: {} edge tiles", edge.len());
            assert_eq!(edge, expected, "{w}x{h} tiles");
        }
    }
    use crate::pipes::BOUNDARY_OPEN;
    use crate::Params;

    fn constants(dt: f32) -> StepConstants {
        StepConstants::new(&Params::default(), 100, 70, 1.0, dt, [0; 4])
    }

    #[test]
    fn a_change_wakes_its_tile_and_the_eight_around_it_and_only_those() {
        let tiles = TileGrid::new(100, 70, [32, 32]);
        assert_eq!(tiles.tiles, [4, 3]);
        let c = constants(0.01);
        let awake = tiles.awake(&c, ConstantsChange::None, |t| t == 5, |_| true);
        let expected: Vec<usize> = vec![0, 1, 2, 4, 5, 6, 8, 9, 10];
        let got: Vec<usize> = (0..12).filter(|&t| awake[t]).collect();
        println!("changed tile 5 of 4x3: awake {got:?}");
        assert_eq!(got, expected);
        assert_eq!(tiles.cells_in(11), (100 - 96) * (70 - 64));
    }

    #[test]
    fn step_length_wakes_moving_tiles_mode_changes_wake_all_and_open_edges_never_sleep() {
        let tiles = TileGrid::new(100, 70, [32, 32]);
        let (a, b) = (constants(0.01), constants(0.02));
        assert_eq!(constants_change(Some(&a), &a), ConstantsChange::None);
        assert_eq!(constants_change(Some(&a), &b), ConstantsChange::StepLength);
        assert_eq!(constants_change(None, &a), ConstantsChange::Mode);
        let mut eight = a;
        eight.eight_neighbours = 1 - eight.eight_neighbours;
        assert_eq!(constants_change(Some(&a), &eight), ConstantsChange::Mode);
        let moving = tiles.awake(&b, ConstantsChange::StepLength, |_| false, |t| t == 0);
        println!("moving tile 0, new step length: {moving:?}");
        assert_eq!(moving.iter().filter(|&&a| a).count(), 4);
        assert!(tiles.awake(&b, ConstantsChange::Mode, |_| false, |_| false).iter().all(|&a| a));
        let mut open = a;
        open.boundary[1] = BOUNDARY_OPEN;
        let east = tiles.awake(&open, ConstantsChange::None, |_| false, |_| false);
        println!("east edge open: {east:?}");
        assert_eq!((0..12).filter(|&t| east[t]).collect::<Vec<_>>(), vec![3, 7, 11]);
    }
}
