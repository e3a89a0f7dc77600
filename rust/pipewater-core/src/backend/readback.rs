//! What the GPU backends read back from the device, and how each read is matched to the state it
//! belongs to: one piece for both GPU backends (wgpu here, Godot's RenderingDevice in the engine
//! crate), which differ only in how they record the copy and learn that it arrived.
//!
//! * Every read starts with a [`Header`]: the ledger counters, the total water and the largest
//!   speed and depth of the frame it was taken at.
//! * After the header a read holds either the texels of every cell ([`Coverage::Texels`], 32
//!   bytes a cell: what textures filled on the CPU need) or those of the tiles queries touched
//!   recently ([`Coverage::Tiles`], [`GATHER_TILE`]² cells each, at most [`MAX_TILES_PER_READ`]:
//!   what queries need when the grid itself stays on the device). [`TileRequests`] keeps the
//!   tiles asked for.
//! * [`Readbacks`] keeps the host snapshot: it says what the next frame reads ([`Readbacks::next_read`])
//!   and applies reads as they arrive ([`Readbacks::accept`]). A read carries the frame it shows
//!   and the load generation it belongs to; one from before the last `load` or `restore`, or
//!   older than what the snapshot already shows, is discarded, so a query never answers with
//!   water from before a load.

use crate::grid::Grid;
use crate::state::{copy_in_parallel, Counters, Snapshot, SpareSnapshots, State};
use std::collections::HashMap;
use std::sync::Arc;

/// Cells along each side of a tile; `GATHER_TILE` in shaders/snapshot.wgsl.
pub const GATHER_TILE: u32 = 8;
/// Words in front of the texels: 10 ledger words ([`Counters::to_device_words`]), then total
/// (low, high), largest speed and depth.
pub const HEADER_WORDS: usize = 14;
/// Bytes of the [`Header`].
pub const HEADER_BYTES: usize = HEADER_WORDS * 4;
/// Most tiles read back in one frame (512 KiB). Past it the tiles asked for most recently win.
pub const MAX_TILES_PER_READ: usize = 256;
/// Frames a tile keeps being read after the last query that touched it.
pub const TILE_KEEP_FRAMES: u64 = 120;
/// Bytes of one cell's texels in a read: a height and a flow texel.
pub const CELL_TEXEL_BYTES: usize = 32;
/// Bytes of one tile in a read.
pub const TILE_BYTES: usize = (GATHER_TILE * GATHER_TILE) as usize * CELL_TEXEL_BYTES;

/// The front of every read: the ledger and the totals of the frame it belongs to.
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

impl Header {
    /// Decodes the header at the start of `bytes` (little-endian words, any alignment). `None`
    /// when `bytes` is shorter than [`HEADER_BYTES`].
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        if bytes.len() < HEADER_BYTES {
            return None;
        }
        let words: [u32; HEADER_WORDS] = std::array::from_fn(|k| word(bytes, k));
        let wide = words[10] as u64 | (words[11] as u64) << 32;
        Some(Header {
            counters: Counters::from_device_words(&words[..10]),
            total_quanta: wide as i64,
            max_speed: f32::from_bits(words[12]),
            max_depth: f32::from_bits(words[13]),
        })
    }
}

/// Little-endian word `k` of `bytes`.
fn word(bytes: &[u8], k: usize) -> u32 {
    u32::from_le_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]])
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

    /// Bytes a read of `tiles` tiles takes, header included.
    pub fn readback_bytes(tiles: usize) -> usize {
        HEADER_BYTES + tiles * TILE_BYTES
    }

    /// Writes the texels of `tiles`, read back as `bytes` (the `gather` layout: header, then per
    /// tile and cell in row-major order a height and a flow texel), into `snapshot`. False, with
    /// `snapshot` untouched, when `bytes` is too short for them.
    pub fn apply(&self, tiles: &[u32], bytes: &[u8], snapshot: &mut Snapshot) -> bool {
        if bytes.len() < Self::readback_bytes(tiles.len()) {
            return false;
        }
        let g = snapshot.grid;
        let texel = |at: usize| -> [f32; 4] { std::array::from_fn(|k| f32::from_bits(word(bytes, at + k))) };
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
        true
    }
}

/// What a read holds after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Every cell's height texels, then every cell's flow texels (16 bytes each).
    Texels,
    /// The listed tiles, in the `gather` layout ([`TileRequests::apply`]).
    Tiles(Vec<u32>),
}

/// One read a backend issued: the frame it shows, the load generation it belongs to, and what it
/// covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Frame count of the state it shows.
    pub frame: u64,
    /// [`Readbacks::generation`] when it was issued.
    pub generation: u64,
    /// What it holds after the header.
    pub coverage: Coverage,
}

impl Read {
    /// Bytes the read takes on a grid of `cells` cells, header included.
    pub fn bytes(&self, cells: usize) -> usize {
        match &self.coverage {
            Coverage::Texels => HEADER_BYTES + CELL_TEXEL_BYTES * cells,
            Coverage::Tiles(tiles) => TileRequests::readback_bytes(tiles.len()),
        }
    }
}

/// The host side of a GPU backend's readbacks: the newest snapshot, the tiles queries want, and
/// the matching of arrived reads to the state they belong to.
#[derive(Debug)]
pub struct Readbacks {
    grid: Grid,
    generation: u64,
    requests: TileRequests,
    /// Read every cell's texels (textures filled on the CPU use them), not only the tiles asked for.
    full: bool,
    /// Every cell of the snapshot shows the same frame: it came from a full read, or from a load
    /// with no tile read applied since.
    whole: bool,
    /// A snapshot or cells were asked for since the last read was issued.
    wanted: bool,
    latest: Arc<Snapshot>,
    spares: SpareSnapshots,
}

impl Readbacks {
    /// Reads for `state` (frame 0, zero counters): its own snapshot answers until the first read
    /// arrives. `full` chooses [`Coverage::Texels`] over [`Coverage::Tiles`].
    pub fn new(state: &State, full: bool) -> Self {
        Readbacks {
            grid: state.grid,
            generation: 0,
            requests: TileRequests::new(state.grid),
            full,
            whole: true,
            wanted: false,
            latest: Arc::new(state.snapshot(0, Counters::default())),
            spares: SpareSnapshots::default(),
        }
    }

    /// A new state was loaded (or restored) as of frame `frames` with `counters`: reads issued
    /// before are discarded when they arrive, and until the first read after it the snapshot
    /// shows `state` itself.
    pub fn load(&mut self, state: &State, counters: Counters, frames: u64) {
        self.generation += 1;
        self.whole = true;
        self.latest = Arc::new(state.snapshot(frames, counters));
    }

    /// [`Readbacks::load`] with the loaded state's snapshot made already (on the worker that
    /// decoded a save). Returns the snapshot it replaced.
    pub fn load_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Arc<Snapshot> {
        self.generation += 1;
        self.whole = true;
        std::mem::replace(&mut self.latest, snapshot)
    }

    /// Whether every cell of [`Readbacks::latest`] shows its frame (a full read, or the load with
    /// no tile read since): whether the snapshot is a state the water could go on from.
    pub fn latest_is_whole(&self) -> bool {
        self.whole
    }

    /// The load generation: how many times [`Readbacks::load`] was called.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Asks for a snapshot: the next frame issues a read.
    pub fn want_snapshot(&mut self) {
        self.wanted = true;
    }

    /// Asks for the cells `cells` (queries are about to read them) during frame `frame`.
    pub fn want_cells(&mut self, cells: &[usize], frame: u64) {
        self.requests.want(cells, self.grid.width, frame);
        self.wanted = true;
    }

    /// Chooses between reading every cell's texels (`true`) and only the tiles asked for.
    pub fn set_full(&mut self, full: bool) {
        self.full = full;
    }

    /// Whether reads cover every cell.
    pub fn full(&self) -> bool {
        self.full
    }

    /// The read the frame about to be recorded, `frame`, should issue: `None` when nothing was
    /// asked for since the last one.
    pub fn next_read(&mut self, frame: u64) -> Option<Read> {
        if !std::mem::take(&mut self.wanted) {
            return None;
        }
        let coverage = if self.full { Coverage::Texels } else { Coverage::Tiles(self.requests.to_read(frame)) };
        Some(Read { frame, generation: self.generation, coverage })
    }

    /// Applies reads that arrived, each with its bytes: those of another load generation, older
    /// than the snapshot, too short, or followed by a full read are skipped. Returns how many were
    /// applied.
    pub fn accept(&mut self, arrived: &[(&Read, &[u8])]) -> usize {
        let mut fresh: Vec<&(&Read, &[u8])> =
            arrived.iter().filter(|(read, _)| read.generation == self.generation && read.frame > self.latest.sequence).collect();
        fresh.sort_by_key(|(read, _)| read.frame);
        // A full read covers every cell: what came before it is replaced anyway.
        if let Some(last_full) = fresh.iter().rposition(|(read, _)| read.coverage == Coverage::Texels) {
            fresh.drain(..last_full);
        }
        let mut applied = 0;
        for (read, bytes) in fresh {
            if bytes.len() < read.bytes(self.grid.cell_count()) {
                continue;
            }
            let Some(header) = Header::decode(bytes) else { continue };
            match &read.coverage {
                Coverage::Texels => {
                    self.apply_texels(bytes);
                    self.whole = true;
                }
                Coverage::Tiles(tiles) => {
                    self.whole = false;
                    let snapshot = Arc::make_mut(&mut self.latest);
                    self.requests.apply(tiles, bytes, snapshot);
                }
            }
            let snapshot = Arc::make_mut(&mut self.latest);
            snapshot.sequence = read.frame;
            snapshot.counters = header.counters;
            snapshot.total_quanta = header.total_quanta;
            snapshot.max_speed = header.max_speed;
            snapshot.max_depth = header.max_depth;
            applied += 1;
        }
        applied
    }

    /// Replaces the snapshot with one holding a full read's texels (in a spare one's buffers
    /// when nobody holds it any more).
    fn apply_texels(&mut self, bytes: &[u8]) {
        let n = self.grid.cell_count();
        let (mut height, mut flow) = Snapshot::texel_buffers(self.spares.take(), n);
        // Cast our aligned buffers to bytes, not the read bytes to texels: the mapped range's
        // alignment is the driver's.
        let h = HEADER_BYTES;
        copy_in_parallel(bytemuck::cast_slice_mut::<[f32; 4], u8>(&mut height), &bytes[h..h + 16 * n]);
        copy_in_parallel(bytemuck::cast_slice_mut::<[f32; 4], u8>(&mut flow), &bytes[h + 16 * n..h + 32 * n]);
        let l = &self.latest;
        let snapshot = Snapshot { grid: l.grid, sequence: l.sequence, height, flow, total_quanta: l.total_quanta, counters: l.counters, max_speed: l.max_speed, max_depth: l.max_depth };
        let old = std::mem::replace(&mut self.latest, Arc::new(snapshot));
        self.spares.keep(old);
    }

    /// The newest snapshot.
    pub fn latest(&self) -> Arc<Snapshot> {
        self.latest.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A read of `tiles` whose header says `added` and `total`, and whose cell `local` of each
    /// tile has height `100 + local` and flow `-local`.
    fn tile_bytes(tiles: usize, added: u32, total: u32) -> Vec<u8> {
        let mut words = vec![0u32; TileRequests::readback_bytes(tiles) / 4];
        words[0] = added;
        words[10] = total;
        words[13] = 2.5f32.to_bits();
        for slot in 0..tiles {
            for local in 0..64 {
                let at = HEADER_WORDS + (slot * 64 + local) * 8;
                words[at] = (100.0 + local as f32).to_bits();
                words[at + 4] = (-(local as f32)).to_bits();
            }
        }
        bytemuck::cast_slice(&words).to_vec()
    }

    #[test]
    fn a_gathered_readback_lands_on_the_cells_of_its_tiles() {
        let grid = Grid::new(12, 9, 1.0).unwrap();
        let requests = TileRequests::new(grid);
        let mut snapshot = State::new(grid).snapshot(0, Counters::default());
        let tiles = [3u32]; // tiles are 2 wide: tile 3 is x 8..12, y 8..9 (overhanging both ways)
        let bytes = tile_bytes(1, 7, 5);
        let header = Header::decode(&bytes).expect("long enough");
        assert!(requests.apply(&tiles, &bytes, &mut snapshot));
        println!("header {header:?}; cell (9,8) height {:?} flow {:?}", snapshot.height[grid.index(9, 8)], snapshot.flow[grid.index(9, 8)]);
        assert_eq!(header.counters.added, 7);
        assert_eq!(header.total_quanta, 5);
        assert_eq!(header.max_depth, 2.5);
        assert_eq!(snapshot.height[grid.index(9, 8)][0], 101.0, "local cell 1 of the tile");
        assert_eq!(snapshot.flow[grid.index(11, 8)][0], -3.0);
        assert_eq!(snapshot.height[grid.index(7, 8)][0], 0.0, "outside the tile: untouched");
        assert!(!requests.apply(&tiles, &bytes[..bytes.len() - 1], &mut snapshot), "short readback refused");
    }

    #[test]
    fn the_header_decodes_64_bit_counters_and_totals_from_low_and_high_words() {
        let counters = Counters { added: 5 << 32 | 7, removed: 1, boundary_in: u32::MAX as u64 + 1, boundary_out: 3, solidified: 6 << 32 | 2 };
        let mut words = counters.to_device_words().to_vec();
        let total: i64 = 9 << 32 | 11;
        words.extend([total as u32, (total >> 32) as u32, 1.5f32.to_bits(), 4.0f32.to_bits()]);
        let header = Header::decode(bytemuck::cast_slice(&words)).unwrap();
        println!("{header:?}");
        assert_eq!(header, Header { counters, total_quanta: total, max_speed: 1.5, max_depth: 4.0 });
        assert_eq!(Header::decode(&[0u8; HEADER_BYTES - 1]), None, "a short header is refused");
    }

    #[test]
    fn a_read_issued_before_a_load_is_discarded_even_when_its_frame_number_comes_again() {
        let grid = Grid::new(16, 8, 1.0).unwrap();
        let state = State::new(grid);
        let mut reads = Readbacks::new(&state, false);
        reads.want_cells(&[0], 0);
        let before = reads.next_read(5).expect("cells were asked for");
        // A load restarts the frame count: the next read shows frame 5 again, of the new state.
        reads.load(&state, Counters::default(), 4);
        reads.want_cells(&[0], 4);
        let after = reads.next_read(5).expect("cells were asked for");
        let (old_bytes, new_bytes) = (tile_bytes(1, 99, 99), tile_bytes(1, 1, 1));
        let stale = reads.accept(&[(&before, &old_bytes)]);
        let shown_after_stale = reads.latest().counters.added;
        let fresh = reads.accept(&[(&after, &new_bytes)]);
        let shown = reads.latest();
        println!(
            "stale read applied: {stale}, ledger shown after it: {shown_after_stale}; fresh read applied: {fresh}, ledger {} at frame {}",
            shown.counters.added, shown.sequence
        );
        assert_eq!((stale, shown_after_stale), (0, 0), "the read from before the load never reaches the snapshot");
        assert_eq!((fresh, shown.counters.added, shown.sequence), (1, 1, 5));
    }

    #[test]
    fn reads_apply_oldest_first_and_never_step_back() {
        let grid = Grid::new(16, 16, 1.0).unwrap();
        let mut reads = Readbacks::new(&State::new(grid), false);
        reads.want_cells(&[0], 0);
        let first = reads.next_read(1).unwrap();
        assert_eq!(reads.next_read(2), None, "nothing was asked for since the last read");
        reads.want_cells(&[grid.index(15, 15)], 1);
        let second = reads.next_read(2).unwrap();
        let (a, b) = (tile_bytes(1, 10, 10), tile_bytes(2, 20, 20));
        let applied = reads.accept(&[(&second, &b), (&first, &a)]);
        let late = reads.accept(&[(&first, &a)]);
        let shown = reads.latest();
        println!("applied {applied} then {late}; shown frame {}, added {}", shown.sequence, shown.counters.added);
        assert_eq!((applied, late), (2, 0));
        assert_eq!((shown.sequence, shown.counters.added), (2, 20));
    }

    #[test]
    fn a_full_read_replaces_every_cell_and_makes_earlier_reads_moot() {
        let grid = Grid::new(4, 2, 1.0).unwrap();
        let n = grid.cell_count();
        let mut reads = Readbacks::new(&State::new(grid), true);
        reads.want_snapshot();
        let full = reads.next_read(3).unwrap();
        assert_eq!(full.coverage, Coverage::Texels);
        let mut words = vec![0u32; full.bytes(n) / 4];
        words[0] = 42;
        for i in 0..n {
            words[HEADER_WORDS + 4 * i] = (i as f32).to_bits();
            words[HEADER_WORDS + 4 * n + 4 * i + 2] = 0.5f32.to_bits();
        }
        let tiles = Read { frame: 2, generation: 0, coverage: Coverage::Tiles(vec![0]) };
        let tile = tile_bytes(1, 1, 1);
        let applied = reads.accept(&[(&tiles, &tile), (&full, bytemuck::cast_slice(&words))]);
        let shown = reads.latest();
        println!("applied {applied}; cell 7 height {:?}, flow {:?}, added {}", shown.height[7], shown.flow[7], shown.counters.added);
        assert_eq!(applied, 1, "the tile read before the full one is skipped");
        assert_eq!(shown.height[7][0], 7.0);
        assert_eq!(shown.flow[7][2], 0.5);
        assert_eq!((shown.sequence, shown.counters.added), (3, 42));
    }
}
