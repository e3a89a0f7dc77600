//! Which parts of the grid queries read, when the grid itself stays on the GPU.
//!
//! The grid is cut into tiles of [`GATHER_TILE`]² cells. A query marks the tiles its bilinear
//! sample touches; every frame the backend's `gather` pass (shaders/snapshot.wgsl) computes the
//! texels of the tiles asked for in the last [`TILE_KEEP_FRAMES`] frames, at most
//! [`MAX_TILES_PER_READ`], behind a header with the ledger and the frame's totals, and that one
//! small buffer is read back. What reaches the host per frame is bounded by the queries, never
//! by the grid: 48 bytes plus 2 KiB per tile.

use pipewater_core::state::{Counters, Snapshot};
use pipewater_core::Grid;
use std::collections::HashMap;

/// Cells along each side of a tile; `GATHER_TILE` in shaders/snapshot.wgsl.
pub const GATHER_TILE: u32 = 8;
/// Words in front of the tiles: 8 ledger words, then total (low, high), largest speed and depth.
pub const HEADER_WORDS: usize = 12;
/// Most tiles read back in one frame (512 KiB). Past it the tiles asked for most recently win.
pub const MAX_TILES_PER_READ: usize = 256;
/// Frames a tile keeps being read after the last query that touched it.
pub const TILE_KEEP_FRAMES: u64 = 120;
/// Bytes of one tile in the readback: a height and a flow texel per cell.
pub const TILE_BYTES: usize = (GATHER_TILE * GATHER_TILE) as usize * 32;

/// The readback header: the ledger and the totals of the frame it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Header {
    /// Ledger counters.
    pub counters: Counters,
    /// Total water, quanta.
    pub total_quanta: i64,
    /// Largest speed, m/s.
    pub max_speed: f32,
    /// Largest depth, m.
    pub max_depth: f32,
}

/// The tiles queries have asked for, and when.
#[derive(Debug, Clone)]
pub struct TileRequests {
    tiles_x: u32,
    tiles_y: u32,
    /// Tile → frame of the last query that touched it.
    asked: HashMap<u32, u64>,
}

impl TileRequests {
    /// No tiles asked for yet, over `grid`.
    pub fn new(grid: Grid) -> Self {
        TileRequests { tiles_x: grid.width.div_ceil(GATHER_TILE), tiles_y: grid.height.div_ceil(GATHER_TILE), asked: HashMap::new() }
    }

    /// The tile holding cell `index` of a grid `width` cells wide.
    pub fn tile_of(&self, index: usize, width: u32) -> u32 {
        let (x, y) = (index as u32 % width, index as u32 / width);
        (y / GATHER_TILE) * self.tiles_x + x / GATHER_TILE
    }

    /// Records that queries read `cells` during frame `frame`. Returns true when one of them lies
    /// in a tile that was not being read.
    pub fn want(&mut self, cells: &[usize], width: u32, frame: u64) -> bool {
        let mut new = false;
        for &cell in cells {
            let tile = self.tile_of(cell, width);
            if tile < self.tiles_x * self.tiles_y {
                new |= self.asked.insert(tile, frame).is_none();
            }
        }
        new
    }

    /// The tiles to read back at frame `frame`: those asked for within [`TILE_KEEP_FRAMES`],
    /// the most recently asked first, at most [`MAX_TILES_PER_READ`]. Older ones are forgotten.
    pub fn to_read(&mut self, frame: u64) -> Vec<u32> {
        self.asked.retain(|_, &mut asked| frame.saturating_sub(asked) <= TILE_KEEP_FRAMES);
        let mut tiles: Vec<(u64, u32)> = self.asked.iter().map(|(&t, &f)| (f, t)).collect();
        tiles.sort_unstable_by(|a, b| b.cmp(a));
        tiles.truncate(MAX_TILES_PER_READ);
        let mut tiles: Vec<u32> = tiles.into_iter().map(|(_, t)| t).collect();
        tiles.sort_unstable();
        tiles
    }

    /// Bytes a readback of `tiles` tiles takes.
    pub fn readback_bytes(tiles: usize) -> usize {
        HEADER_WORDS * 4 + tiles * TILE_BYTES
    }

    /// Writes the texels of `tiles`, read back as `bytes` (the `gather` layout), into `snapshot`,
    /// and returns the header. `None` when `bytes` is too short for them.
    pub fn apply(&self, tiles: &[u32], bytes: &[u8], snapshot: &mut Snapshot) -> Option<Header> {
        if bytes.len() < Self::readback_bytes(tiles.len()) {
            return None;
        }
        let word = |k: usize| u32::from_le_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]]);
        let wide = |k: usize| word(k) as u64 | (word(k + 1) as u64) << 32;
        let header = Header {
            counters: Counters { added: wide(0), removed: wide(2), boundary_in: wide(4), boundary_out: wide(6) },
            total_quanta: wide(8) as i64,
            max_speed: f32::from_bits(word(10)),
            max_depth: f32::from_bits(word(11)),
        };
        let g = snapshot.grid;
        let texel = |at: usize| -> [f32; 4] { std::array::from_fn(|k| f32::from_bits(word(at + k))) };
        for (slot, &tile) in tiles.iter().enumerate() {
            let (tx, ty) = (tile % self.tiles_x, tile / self.tiles_x);
            for local in 0..GATHER_TILE * GATHER_TILE {
                let (x, y) = (tx * GATHER_TILE + local % GATHER_TILE, ty * GATHER_TILE + local / GATHER_TILE);
                if x >= g.width || y >= g.height {
                    continue;
                }
                let at = HEADER_WORDS + (slot * (GATHER_TILE * GATHER_TILE) as usize + local as usize) * 8;
                let i = g.index(x, y);
                snapshot.height[i] = texel(at);
                snapshot.flow[i] = texel(at + 4);
            }
        }
        Some(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewater_core::State;

    #[test]
    fn queries_mark_the_tiles_of_their_cells_and_unasked_tiles_expire() {
        let grid = Grid::new(20, 10, 1.0).unwrap();
        let mut requests = TileRequests::new(grid);
        // Cells (0,0), (9,0) and (19,9): tiles 0, 1 and 2 + 1·3 = 5 of a 3×2 tiling.
        let cells = [grid.index(0, 0), grid.index(9, 0), grid.index(19, 9)];
        assert!(requests.want(&cells, grid.width, 10));
        assert!(!requests.want(&cells[..1], grid.width, 20), "an already read tile is not new");
        println!("tiles at frame 20: {:?}", requests.to_read(20));
        assert_eq!(requests.to_read(20), vec![0, 1, 5]);
        let late = 10 + TILE_KEEP_FRAMES + 1;
        println!("tiles at frame {late}: {:?}", requests.to_read(late));
        assert_eq!(requests.to_read(late), vec![0], "tiles 1 and 5 were last asked at frame 10");
    }

    #[test]
    fn at_most_the_cap_is_read_the_most_recent_first() {
        let grid = Grid::new(8 * 40, 8 * 40, 1.0).unwrap();
        let mut requests = TileRequests::new(grid);
        // Three tiles a frame, tile t at frame t / 3: all within TILE_KEEP_FRAMES of the read.
        let asked = MAX_TILES_PER_READ as u64 + 10;
        for t in 0..asked {
            let cell = grid.index((t as u32 % 40) * 8, (t as u32 / 40) * 8);
            requests.want(&[cell], grid.width, t / 3);
        }
        let tiles = requests.to_read(asked / 3);
        println!("{} tiles asked, {} read, oldest read {:?}", MAX_TILES_PER_READ + 10, tiles.len(), tiles.first());
        assert_eq!(tiles.len(), MAX_TILES_PER_READ);
        assert_eq!(*tiles.first().unwrap(), 10, "the ten asked first are left out");
    }

    #[test]
    fn a_gathered_readback_lands_on_the_cells_of_its_tiles() {
        let grid = Grid::new(12, 9, 1.0).unwrap();
        let requests = TileRequests::new(grid);
        let mut snapshot = State::new(grid).snapshot(0, Counters::default());
        let tiles = [3u32]; // tiles are 2 wide: tile 3 is x 8..12, y 8..9 (overhanging both ways)
        let mut words = vec![0u32; TileRequests::readback_bytes(1) / 4];
        words[0] = 7; // added, low word
        words[8] = 5; // total, low word
        words[11] = 2.5f32.to_bits();
        for local in 0..64 {
            let at = HEADER_WORDS + local * 8;
            words[at] = (100.0 + local as f32).to_bits();
            words[at + 4] = (-(local as f32)).to_bits();
        }
        let bytes: Vec<u8> = bytemuck::cast_slice(&words).to_vec();
        let header = requests.apply(&tiles, &bytes, &mut snapshot).expect("long enough");
        println!("header {header:?}; cell (9,8) height {:?} flow {:?}", snapshot.height[grid.index(9, 8)], snapshot.flow[grid.index(9, 8)]);
        assert_eq!(header.counters.added, 7);
        assert_eq!(header.total_quanta, 5);
        assert_eq!(header.max_depth, 2.5);
        assert_eq!(snapshot.height[grid.index(9, 8)][0], 101.0, "local cell 1 of the tile");
        assert_eq!(snapshot.flow[grid.index(11, 8)][0], -3.0);
        assert_eq!(snapshot.height[grid.index(7, 8)][0], 0.0, "outside the tile: untouched");
        assert!(requests.apply(&tiles, &bytes[..bytes.len() - 1], &mut snapshot).is_none(), "short readback refused");
    }
}
