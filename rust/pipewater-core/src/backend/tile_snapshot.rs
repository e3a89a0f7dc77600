//! The CPU backend's snapshots, following its sleeping tiles: a snapshot is written over an
//! earlier one that nobody holds any more, and only the tiles whose texels changed since that
//! one are computed again. Water at rest then costs its snapshot as little as its step.
//!
//! A cell's texels ([`State::cell_texels`]) read the cell and its eight neighbours. Between
//! snapshots they change only where a step ran, where an edit touched a cell or a neighbour, or
//! everywhere (a new terrain, or constants that change what texels show). A step changes cells
//! only in the tiles it runs, and a change within one cell of a tile's cells at a step wakes
//! that tile ([`super::sleep`]: the tile holds the step's reach), so marking the tiles each step
//! runs covers every texel the step changed. Edits mark their tile and the eight around it.
//!
//! Each mark records the snapshot count at which it happened; each snapshot buffer records the
//! count it was written at. Reusing a buffer written at count `s` recomputes the tiles marked
//! after `s`, and with them each tile's share of the totals (water, largest speed and depth),
//! which are then summed over the tiles.

use super::sleep::TileGrid;
use crate::state::{Counters, Snapshot, State};
use rayon::prelude::*;
use std::sync::Arc;

/// A tile's share of a snapshot's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Share {
    quanta: i64,
    max_speed: f32,
    max_depth: f32,
}

/// Snapshots written tile by tile over earlier ones.
#[derive(Debug)]
pub struct TileSnapshots {
    tiles: TileGrid,
    /// Snapshots written so far: the count a mark or a buffer carries.
    count: u64,
    /// Per tile: the count at its last mark.
    marked_at: Vec<u64>,
    /// Per tile: its share as of the last snapshot that computed it.
    shares: Vec<Share>,
    /// The current snapshot, if one was written since the last change, with its count.
    current: Option<(u64, Arc<Snapshot>)>,
    /// Replaced snapshots kept for their buffers: the newest two, since the one just replaced
    /// may still be on screen while the next is written.
    spares: Vec<(u64, Arc<Snapshot>)>,
    /// Tiles the last snapshot written computed.
    written: usize,
    /// Per row and tile column: the row's part of the tile's share, while a snapshot is written.
    row_shares: Vec<Share>,
}

impl TileSnapshots {
    /// Snapshots of a grid cut into `tiles`.
    pub fn new(tiles: TileGrid) -> Self {
        let n = tiles.count();
        TileSnapshots { tiles, count: 0, marked_at: vec![0; n], shares: vec![Share::default(); n], current: None, spares: Vec::new(), written: 0, row_shares: Vec::new() }
    }

    /// The fields may have changed: the next [`TileSnapshots::get`] writes a new snapshot.
    pub fn invalidate(&mut self) {
        if let Some(old) = self.current.take() {
            self.spares.push(old);
            if self.spares.len() > 2 {
                self.spares.remove(0);
            }
        }
    }

    /// Tile `t` changed (a step ran it).
    pub fn mark(&mut self, t: usize) {
        self.marked_at[t] = self.count;
    }

    /// Cell `cell` (row-major index) changed outside a step: its tile and the eight around it.
    pub fn mark_around(&mut self, cell: u32) {
        let Some(t) = self.tiles.tile_of_cell(cell) else { return };
        let [tw, th] = self.tiles.tiles.map(|n| n as i64);
        let (tx, ty) = ((t as i64) % tw, (t as i64) / tw);
        for y in (ty - 1).max(0)..=(ty + 1).min(th - 1) {
            for x in (tx - 1).max(0)..=(tx + 1).min(tw - 1) {
                self.marked_at[(y * tw + x) as usize] = self.count;
            }
        }
    }

    /// Every tile changed.
    pub fn mark_all(&mut self) {
        self.marked_at.fill(self.count);
    }

    /// The snapshot of `state` (frame `sequence`, ledger `counters`, `fixed_flux_per_stored` as
    /// for [`State::snapshot_reusing`]): the current one, or a new one written over a free spare
    /// (only the tiles marked since that spare was written) or into new buffers.
    pub fn get(&mut self, state: &State, sequence: u64, counters: Counters, fixed_flux_per_stored: Option<f32>, triangular: bool) -> Arc<Snapshot> {
        if let Some((_, snapshot)) = &self.current {
            return snapshot.clone();
        }
        let free = self.spares.iter().position(|(_, s)| Arc::strong_count(s) == 1);
        let spare = free.and_then(|k| {
            let (written, s) = self.spares.remove(k);
            Arc::try_unwrap(s).ok().map(|s| (written, s))
        });
        let cells = state.grid.cell_count();
        let (written, height, flow) = match spare {
            Some((written, s)) if s.height.len() == cells && s.flow.len() == cells => (Some(written), s.height, s.flow),
            _ => (None, vec![[0.0; 4]; cells], vec![[0.0; 4]; cells]),
        };
        let stale: Vec<bool> = self.marked_at.iter().map(|&m| written.is_none_or(|w| m > w)).collect();
        self.written = stale.iter().filter(|&&s| s).count();
        let mut snapshot = Snapshot { grid: state.grid, sequence, height, flow, total_quanta: 0, counters, max_speed: 0.0, max_depth: 0.0 };
        self.write_stale(state, &mut snapshot, &stale, fixed_flux_per_stored, triangular);
        let total = self.shares.iter().copied().fold(Share::default(), add_shares);
        snapshot.total_quanta = total.quanta;
        snapshot.max_speed = total.max_speed;
        snapshot.max_depth = total.max_depth;
        let snapshot = Arc::new(snapshot);
        self.current = Some((self.count, snapshot.clone()));
        self.count += 1;
        snapshot
    }

    /// Tiles the last snapshot written computed (all of them when it had new buffers).
    pub fn tiles_written(&self) -> usize {
        self.written
    }

    /// Writes the texels and shares of the `stale` tiles. Rows are shared out among the
    /// threads (a few tiles' rows are as many tasks as a whole band's), each row keeping its
    /// part of each tile's share; the parts are then added up per tile.
    fn write_stale(&mut self, state: &State, snapshot: &mut Snapshot, stale: &[bool], fixed_flux_per_stored: Option<f32>, triangular: bool) {
        let [size_x, size_y] = self.tiles.size.map(|s| s as usize);
        let [tw, th] = self.tiles.tiles.map(|n| n as usize);
        let (w, h) = (state.grid.width as usize, state.grid.height as usize);
        self.row_shares.resize(h * tw, Share::default());
        snapshot
            .height
            .par_chunks_mut(w)
            .zip(snapshot.flow.par_chunks_mut(w))
            .zip(self.row_shares.par_chunks_mut(tw))
            .enumerate()
            .for_each(|(y, ((height, flow), parts))| {
                let ty = y / size_y;
                for (tx, part) in parts.iter_mut().enumerate().filter(|(tx, _)| stale[ty * tw + tx]) {
                    let mut s = Share::default();
                    for x in tx * size_x..((tx + 1) * size_x).min(w) {
                        let (hx, fx) = state.cell_texels(x as u32, y as u32, fixed_flux_per_stored, triangular);
                        height[x] = hx;
                        flow[x] = fx;
                        s.quanta += state.depth[y * w + x] as i64;
                        s.max_speed = s.max_speed.max(fx[2]);
                        s.max_depth = s.max_depth.max(hx[1]);
                    }
                    *part = s;
                }
            });
        for t in (0..tw * th).filter(|&t| stale[t]) {
            let (tx, ty) = (t % tw, t / tw);
            let rows = ty * size_y..((ty + 1) * size_y).min(h);
            self.shares[t] = rows.map(|y| self.row_shares[y * tw + tx]).fold(Share::default(), add_shares);
        }
    }
}

/// The share of two parts of the grid together.
fn add_shares(a: Share, b: Share) -> Share {
    Share { quanta: a.quanta + b.quanta, max_speed: a.max_speed.max(b.max_speed), max_depth: a.max_depth.max(b.max_depth) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::scenarios::rough_lake;

    fn bits(s: &Snapshot) -> (Vec<u32>, i64, u32, u32) {
        (s.height.iter().chain(&s.flow).flatten().map(|v| v.to_bits()).collect(), s.total_quanta, s.max_speed.to_bits(), s.max_depth.to_bits())
    }

    /// Changes written into reused buffers, tile by tile, give the snapshot a fresh build gives,
    /// bit for bit, while the replaced snapshots are still held (new buffers) and after they
    /// are let go (reused buffers, only marked tiles written).
    #[test]
    fn a_snapshot_written_over_an_older_one_equals_a_fresh_one() {
        let g = Grid::new(100, 70, 1.0).unwrap();
        let mut state = rough_lake(g, 3, 1.5, 1.0);
        let tiles = TileGrid::new(g.width, g.height, [32, 32]);
        let mut snapshots = TileSnapshots::new(tiles);
        let mut held = Vec::new();
        for round in 0..6u32 {
            // A change in one cell on a tile corner: its neighbours' texels change too.
            let cell = g.index(31 + round, 31);
            state.depth[cell] += 5000;
            state.flow[cell] = [0.25 * round as f32, -0.1, 0.0, 0.05];
            snapshots.invalidate();
            snapshots.mark_around(cell as u32);
            let incremental = snapshots.get(&state, round as u64, Counters::default(), None, false);
            let fresh = state.snapshot(round as u64, Counters::default());
            let differing = incremental.height.iter().zip(&fresh.height).chain(incremental.flow.iter().zip(&fresh.flow)).filter(|(a, b)| a != b).count();
            let written = snapshots.tiles_written();
            println!("round {round}: {written} of {} tiles written; {differing} texels differ; totals {} / {}", tiles.count(), incremental.total_quanta, fresh.total_quanta);
            assert_eq!(bits(&incremental), bits(&fresh), "round {round}");
            // Rounds 0 to 3 find every spare held; 4 and 5 write over round 2's and 3's.
            assert_eq!(written == tiles.count(), round <= 3, "round {round}: {written} tiles written");
            // The first rounds hold their snapshots, so new buffers are written in full.
            if round < 3 {
                held.push(incremental);
            } else {
                held.clear();
            }
        }
    }

    /// Only tiles marked since the reused buffer was written are computed: a tile left out of
    /// the marks keeps what the buffer showed, even when the state under it changed.
    #[test]
    fn unmarked_tiles_keep_the_texels_of_the_buffer_written_over() {
        let g = Grid::new(96, 64, 1.0).unwrap();
        let mut state = rough_lake(g, 4, 1.5, 1.0);
        let mut snapshots = TileSnapshots::new(TileGrid::new(g.width, g.height, [32, 32]));
        let first = snapshots.get(&state, 0, Counters::default(), None, false).height[g.index(80, 10)];
        // The first snapshot becomes the free spare; a cell of tile 2 changes without a mark.
        snapshots.invalidate();
        state.depth[g.index(80, 10)] += 100_000;
        let again = snapshots.get(&state, 1, Counters::default(), None, false).height[g.index(80, 10)];
        println!("unmarked cell depth texel: before {} after {} (state now {})", first[1], again[1], state.depth_m(g.index(80, 10)));
        assert_eq!(first, again, "an unmarked tile was written");
        snapshots.invalidate();
        snapshots.mark(2);
        let marked = snapshots.get(&state, 2, Counters::default(), None, false);
        println!("after marking tile 2: {}", marked.height[g.index(80, 10)][1]);
        assert_eq!(marked.height[g.index(80, 10)][1], state.depth_m(g.index(80, 10)));
    }
}
