//! What queries read of the detail waves when their fields stay on a GPU: the bookkeeping both
//! GPU backends share (the wgpu one and Godot's RenderingDevice one).
//!
//! Queries ask for the heights of some world detail cells ([`DetailTiles::heights`]). Those
//! cells' tiles of [`DETAIL_TILE`]² cells are read back from then on, every frame, for
//! [`DETAIL_TILE_KEEP_FRAMES`] frames after the last query that touched them, at most
//! [`MAX_DETAIL_TILES_PER_READ`] a frame; a query answers from the newest tiles that arrived (0
//! before its tile's first read). What reaches the host per frame is bounded by the queries:
//! 256 bytes a tile.

use std::collections::HashMap;

/// Detail cells along each side of a tile; `DETAIL_TILE` in shaders/detail.wgsl.
pub const DETAIL_TILE: u32 = 8;
/// Most tiles read back in one frame (64 KiB).
pub const MAX_DETAIL_TILES_PER_READ: usize = 256;
/// Frames a tile keeps being read after the last query that touched it.
pub const DETAIL_TILE_KEEP_FRAMES: u64 = 120;
/// Bytes of one tile in a readback: a height (`f32`) per cell, row-major.
pub const DETAIL_TILE_BYTES: usize = (DETAIL_TILE * DETAIL_TILE) as usize * 4;

/// Tiles asked for and the heights that arrived.
#[derive(Debug, Clone, Default)]
pub struct DetailTiles {
    /// Tile → frame of the last query that touched it.
    asked: HashMap<[i32; 2], u64>,
    /// Tile → heights of its cells, row-major.
    arrived: HashMap<[i32; 2], Vec<f32>>,
    frame: u64,
}

impl DetailTiles {
    /// The tile holding world detail cell `g`.
    pub fn tile_of(g: [i32; 2]) -> [i32; 2] {
        let t = DETAIL_TILE as i32;
        [g[0].div_euclid(t), g[1].div_euclid(t)]
    }

    /// Heights (m) of world detail cells `cells` from the newest tiles that arrived (0 where none
    /// has yet); their tiles are read from now on.
    pub fn heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        let t = DETAIL_TILE as i32;
        cells
            .iter()
            .map(|&g| {
                let tile = Self::tile_of(g);
                self.asked.insert(tile, self.frame);
                self.arrived.get(&tile).map_or(0.0, |h| h[(g[1].rem_euclid(t) * t + g[0].rem_euclid(t)) as usize])
            })
            .collect()
    }

    /// The tiles to read back with the frame about to be recorded, most recently asked first;
    /// tiles nobody asked about for [`DETAIL_TILE_KEEP_FRAMES`] are forgotten.
    pub fn to_read(&mut self) -> Vec<[i32; 2]> {
        self.frame += 1;
        let frame = self.frame;
        self.asked.retain(|_, &mut last| frame - last <= DETAIL_TILE_KEEP_FRAMES);
        let asked = &self.asked;
        self.arrived.retain(|tile, _| asked.contains_key(tile));
        let mut tiles: Vec<([i32; 2], u64)> = self.asked.iter().map(|(&t, &f)| (t, f)).collect();
        tiles.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        tiles.truncate(MAX_DETAIL_TILES_PER_READ);
        tiles.into_iter().map(|(t, _)| t).collect()
    }

    /// Takes a readback of `tiles` (as listed by [`DetailTiles::to_read`]): [`DETAIL_TILE_BYTES`]
    /// per tile, in order. A short read is ignored.
    pub fn apply(&mut self, tiles: &[[i32; 2]], bytes: &[u8]) {
        if bytes.len() < tiles.len() * DETAIL_TILE_BYTES {
            return;
        }
        for (k, &tile) in tiles.iter().enumerate() {
            let chunk = &bytes[k * DETAIL_TILE_BYTES..(k + 1) * DETAIL_TILE_BYTES];
            self.arrived.insert(tile, bytemuck::pod_collect_to_vec(chunk));
        }
    }

    /// The waves were put at rest: what arrived no longer holds.
    pub fn clear(&mut self) {
        self.arrived.clear();
    }

    /// The cells' coordinates moved by `by` detail cells (a world's window counts them from an
    /// anchor that moved, `world_water/detail.rs`): cell `g` is now `g − by`. Tiles asked for and
    /// arrived follow their cells when `by` is a whole number of tiles; otherwise they are
    /// forgotten (asked for again by the next query).
    pub fn shift(&mut self, by: [i32; 2]) {
        let t = DETAIL_TILE as i32;
        if by[0] % t != 0 || by[1] % t != 0 {
            self.asked.clear();
            self.arrived.clear();
            return;
        }
        let moved = |tile: [i32; 2]| [tile[0] - by[0] / t, tile[1] - by[1] / t];
        self.asked = self.asked.drain().map(|(tile, frame)| (moved(tile), frame)).collect();
        self.arrived = self.arrived.drain().map(|(tile, heights)| (moved(tile), heights)).collect();
    }

    /// Bytes of a readback of `tiles` tiles.
    pub fn readback_bytes(tiles: usize) -> usize {
        tiles * DETAIL_TILE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_answers_from_the_tile_read_after_it_asked() {
        let mut tiles = DetailTiles::default();
        let before = tiles.heights(&[[-3, 17]]);
        let listed = tiles.to_read();
        println!("first answer {before:?}; tiles to read {listed:?}");
        assert_eq!(before, vec![0.0]);
        assert_eq!(listed, vec![[-1, 2]]);
        let heights: Vec<f32> = (0..64).map(|i| i as f32 * 0.01).collect();
        tiles.apply(&listed, bytemuck::cast_slice(&heights));
        // Cell (−3, 17) is (5, 1) inside tile (−1, 2): index 13.
        let after = tiles.heights(&[[-3, 17]]);
        println!("after the read: {after:?}");
        assert_eq!(after, vec![0.13]);
        for _ in 0..DETAIL_TILE_KEEP_FRAMES + 1 {
            tiles.to_read();
        }
        assert!(tiles.to_read().is_empty(), "a tile nobody asks about is dropped");
    }

    /// When the coordinates move by whole tiles, a height that arrived answers for its cell under
    /// its new coordinates (and the tile is read under them); by anything else, nothing is kept.
    #[test]
    fn heights_follow_their_cells_when_the_coordinates_move() {
        let mut tiles = DetailTiles::default();
        tiles.heights(&[[3, 5]]);
        let listed = tiles.to_read();
        let heights: Vec<f32> = (0..64).map(|i| i as f32).collect();
        tiles.apply(&listed, bytemuck::cast_slice(&heights));
        tiles.shift([256, -16]);
        let moved = tiles.heights(&[[3 - 256, 5 + 16]]);
        let listed = tiles.to_read();
        println!("after a shift of (256, -16): {moved:?}, tiles to read {listed:?}");
        assert_eq!(moved, vec![43.0]);
        assert_eq!(listed, vec![[-32, 2]]);
        tiles.shift([4, 0]);
        assert_eq!(tiles.heights(&[[3 - 260, 5 + 16]]), vec![0.0], "a shift of part of a tile keeps nothing");
    }
}
