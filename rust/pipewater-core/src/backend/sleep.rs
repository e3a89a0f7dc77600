//! Sleeping tiles: water at rest is not stepped, and the step's cost follows the water that
//! moves.
//!
//! The grid is cut into tiles. The step of a cell reads the fields within a few cells of it
//! (at most five columns and three rows), fewer than a tile's side, so a tile and its eight
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

#[cfg(test)]
mod tests {
    use super::*;
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
