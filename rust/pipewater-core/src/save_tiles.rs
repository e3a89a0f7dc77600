//! The fields of a format version 3 save ([`crate::save`]): the terrain of every cell and the water
//! of the tiles that have any, compressed with LZ4 band by band.
//!
//! The grid is cut into square tiles of [`SAVE_TILE`] cells (the sleeping tiles' size, and the
//! unit a paged world will keep its water in). A tile is *wet* when a cell of it holds water or a
//! pipe of it keeps a value whose bits are not zero; a dry tile's depth and pipes are zero, so
//! only its terrain is saved. A *band* is one row of tiles. For each band, in order:
//!
//! | bytes | content |
//! |---|---|
//! | ⌈tiles across / 8⌉ | which of the band's tiles are wet, one bit each, lowest bit first |
//! | 4 + n | terrain: compressed length `u32`, then the LZ4 block of the band's terrain |
//! | 4 + n | water: compressed length `u32`, then the LZ4 block of its wet tiles' water |
//!
//! The terrain of a band is its cells row by row, each `f32`'s bits as the wrapping difference
//! from the bits of the cell before it in the row (the first of a row: from the cell above it in
//! the band, the band's first cell: from 0), laid out in byte planes (every word's lowest byte,
//! then every second byte, ...): smooth ground repeats its high bytes, which LZ4 then finds. The
//! water of a band is, for each wet tile left to right, its cells' depths (`i32` quanta, row by
//! row within the tile), then for each of the same cells the four pipes' values (E, S, SE, SW,
//! `f32`), all of them in byte planes.
//!
//! Both blocks' sizes follow from the grid and the bitmap, so the decoder knows what each must
//! hold before it decompresses: it decompresses into a buffer of exactly that size (LZ4 cannot
//! write past it), refuses a block that holds more or less, and refuses a file too short to hold
//! the grid it claims at LZ4's best ratio before it allocates the grid's fields.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::state::State;
use rayon::prelude::*;

/// Cells per side of a save's tiles: the sleeping tiles' size ([`crate::backend::cpu::CPU_TILE`]).
pub const SAVE_TILE: u32 = crate::backend::cpu::CPU_TILE;
/// Smallest and largest tile side a version 3 save may declare.
const TILE_SIDES: std::ops::RangeInclusive<u32> = 4..=1024;
/// Bytes of water a cell of a wet tile takes before compression: depth and four pipes.
pub const WET_CELL_BYTES: usize = 4 + 16;
/// Most bytes an LZ4 block can expand to per byte of it (a sequence of at most 15 + 255·k literal
/// and match lengths in 1 + k bytes: under 255 to 1); a claimed size past it cannot be real.
const LZ4_MOST_EXPANSION: usize = 255;

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidSave(why.into())
}

/// The tiles of `grid` at side `tile`: tiles across and down.
fn tile_counts(grid: Grid, tile: u32) -> [usize; 2] {
    [grid.width.div_ceil(tile) as usize, grid.height.div_ceil(tile) as usize]
}

/// The cells of tile `tx` of band `ty`: columns and rows.
fn tile_cells(grid: Grid, tile: u32, tx: usize, ty: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let t = tile as usize;
    let (w, h) = (grid.width as usize, grid.height as usize);
    (tx * t..((tx + 1) * t).min(w), ty * t..((ty + 1) * t).min(h))
}

/// The bits a cell's terrain is predicted to have from the cells before it in its row (`row[..x]`)
/// and the first cell of the row above (`above`, 0 in a band's first row): the line through the
/// two before it, where there are two. Smooth ground differs from it by its curvature, which
/// takes fewer bits than its slope.
fn predicted(row: &[f32], x: usize, above: u32) -> u32 {
    match x {
        0 => above,
        1 => row[0].to_bits(),
        _ => row[x - 1].to_bits().wrapping_mul(2).wrapping_sub(row[x - 2].to_bits()),
    }
}

/// Folds a wrapped difference so that small negative ones are small too (0, −1, 1, −2 … →
/// 0, 1, 2, 3 …): their high bytes are then zero, not 0xFF.
fn zigzag(v: u32) -> u32 {
    (v << 1) ^ ((v as i32 >> 31) as u32)
}

/// The difference [`zigzag`] folded.
fn unzigzag(v: u32) -> u32 {
    (v >> 1) ^ (v & 1).wrapping_neg()
}

/// Writes `words` in byte planes: every word's lowest byte, then every second byte, ...
fn to_planes(words: &[u32], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + 4 * words.len(), 0);
    let planes = &mut out[start..];
    let n = words.len();
    for (i, w) in words.iter().enumerate() {
        let b = w.to_le_bytes();
        planes[i] = b[0];
        planes[n + i] = b[1];
        planes[2 * n + i] = b[2];
        planes[3 * n + i] = b[3];
    }
}

/// The words of [`to_planes`] back from `planes` (4 bytes a word).
fn from_planes(planes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let n = planes.len() / 4;
    (0..n).map(move |i| u32::from_le_bytes([planes[i], planes[n + i], planes[2 * n + i], planes[3 * n + i]]))
}

/// Whether the tile has water: a depth or a pipe whose bits are not zero (a `-0.0` pipe counts,
/// so that a round trip keeps every bit).
fn is_wet(state: &State, tile: u32, tx: usize, ty: usize) -> bool {
    let (columns, rows) = tile_cells(state.grid, tile, tx, ty);
    let w = state.grid.width as usize;
    rows.into_iter().any(|y| {
        let cells = y * w + columns.start..y * w + columns.end;
        state.depth[cells.clone()].iter().any(|&d| d != 0) || state.flow[cells].iter().flatten().any(|v| v.to_bits() != 0)
    })
}

/// Which tiles of `state` are wet, row-major over the tiles.
pub fn wet_tiles(state: &State, tile: u32) -> Vec<bool> {
    let [tw, th] = tile_counts(state.grid, tile);
    (0..tw * th).into_par_iter().map(|t| is_wet(state, tile, t % tw, t / tw)).collect()
}

/// One band's bytes (bitmap, terrain block, water block).
fn encode_band(state: &State, tile: u32, ty: usize, wet: &[bool]) -> Vec<u8> {
    let g = state.grid;
    let w = g.width as usize;
    let (_, rows) = tile_cells(g, tile, 0, ty);
    let mut out = vec![0u8; wet.len().div_ceil(8)];
    for (tx, _) in wet.iter().enumerate().filter(|(_, &wet)| wet) {
        out[tx / 8] |= 1 << (tx % 8);
    }
    let mut terrain = Vec::with_capacity(rows.len() * w);
    for y in rows.clone() {
        let row = &state.terrain[y * w..(y + 1) * w];
        let above = if y == rows.start { 0 } else { state.terrain[(y - 1) * w].to_bits() };
        for x in 0..w {
            terrain.push(zigzag(row[x].to_bits().wrapping_sub(predicted(row, x, above))));
        }
    }
    let mut planes = Vec::new();
    to_planes(&terrain, &mut planes);
    push_block(&mut out, &planes);
    let (mut depths, mut pipes) = (Vec::new(), Vec::new());
    for (tx, _) in wet.iter().enumerate().filter(|(_, &wet)| wet) {
        let (columns, rows) = tile_cells(g, tile, tx, ty);
        for y in rows {
            for i in y * w + columns.start..y * w + columns.end {
                depths.push(state.depth[i] as u32);
                pipes.extend(state.flow[i].iter().map(|v| v.to_bits()));
            }
        }
    }
    planes.clear();
    to_planes(&depths, &mut planes);
    to_planes(&pipes, &mut planes);
    push_block(&mut out, &planes);
    out
}

/// Appends `bytes` compressed, after their compressed length.
fn push_block(out: &mut Vec<u8>, bytes: &[u8]) {
    let block = lz4_flex::block::compress(bytes);
    out.extend_from_slice(&(block.len() as u32).to_le_bytes());
    out.extend_from_slice(&block);
}

/// Appends the fields of `state` in tiles of `tile` cells (the layout above, after the tile side).
pub fn encode_fields(state: &State, tile: u32, out: &mut Vec<u8>) {
    let [tw, th] = tile_counts(state.grid, tile);
    let wet = wet_tiles(state, tile);
    out.extend_from_slice(&tile.to_le_bytes());
    let bands: Vec<Vec<u8>> = (0..th).into_par_iter().map(|ty| encode_band(state, tile, ty, &wet[ty * tw..(ty + 1) * tw])).collect();
    out.reserve(bands.iter().map(Vec::len).sum());
    bands.iter().for_each(|band| out.extend_from_slice(band));
}

/// Where one band's blocks lie in the payload, found before anything is decompressed.
struct Band<'a> {
    wet: Vec<bool>,
    terrain: &'a [u8],
    water: &'a [u8],
}

/// Reads a block's compressed length and bytes at `*at`.
fn block<'a>(bytes: &'a [u8], at: &mut usize, what: &str) -> Result<&'a [u8]> {
    let length = bytes.get(*at..*at + 4).ok_or_else(|| invalid(format!("the payload ends at byte {} before the length of {what}", bytes.len())))?;
    let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
    let start = *at + 4;
    let block = bytes.get(start..start + length).ok_or_else(|| invalid(format!("{what}: {length} compressed bytes announced, {} left", bytes.len().saturating_sub(start))))?;
    *at = start + length;
    Ok(block)
}

/// Decompresses `block` into `out`, which it must fill exactly.
fn decompress_exact(block: &[u8], out: &mut [u8], what: &str) -> Result<()> {
    if out.len() > LZ4_MOST_EXPANSION * block.len() + 16 {
        return Err(invalid(format!("{what}: {} compressed bytes cannot hold the {} it must", block.len(), out.len())));
    }
    match lz4_flex::block::decompress_into(block, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(n) => Err(invalid(format!("{what}: its block holds {n} bytes, {} expected", out.len()))),
        Err(e) => Err(invalid(format!("{what}: its LZ4 block is corrupt ({e})"))),
    }
}

/// Reads the fields of a `grid` from `bytes` (everything left of the payload, which they must
/// fill exactly): the inverse of [`encode_fields`].
pub fn decode_fields(grid: Grid, bytes: &[u8]) -> Result<State> {
    let tile = bytes.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok_or_else(|| invalid("the payload ends before the fields' tile size"))?;
    if !TILE_SIDES.contains(&tile) {
        return Err(invalid(format!("tile size {tile} cells ({}..={} accepted)", TILE_SIDES.start(), TILE_SIDES.end())));
    }
    let [tw, th] = tile_counts(grid, tile);
    let w = grid.width as usize;
    let mut at = 4;
    let mut bands = Vec::with_capacity(th);
    for ty in 0..th {
        let bitmap = bytes.get(at..at + tw.div_ceil(8)).ok_or_else(|| invalid(format!("the payload ends in the wet tiles of band {ty}")))?;
        let wet: Vec<bool> = (0..tw).map(|tx| bitmap[tx / 8] & (1 << (tx % 8)) != 0).collect();
        if tw % 8 != 0 && bitmap[tw / 8] >> (tw % 8) != 0 {
            return Err(invalid(format!("band {ty} marks tiles past the grid's {tw} across as wet")));
        }
        at += tw.div_ceil(8);
        let terrain = block(bytes, &mut at, &format!("the terrain of band {ty}"))?;
        let water = block(bytes, &mut at, &format!("the water of band {ty}"))?;
        bands.push(Band { wet, terrain, water });
    }
    if at != bytes.len() {
        return Err(invalid(format!("{} bytes follow the fields", bytes.len() - at)));
    }
    // Before the grid's fields are allocated: could these blocks hold them at all?
    let compressed: usize = bands.iter().map(|b| b.terrain.len()).sum();
    if 4 * grid.cell_count() > LZ4_MOST_EXPANSION * compressed + 16 * th {
        return Err(invalid(format!("its terrain blocks ({compressed} bytes) cannot hold the terrain of a {}x{} grid", grid.width, grid.height)));
    }
    let mut state = State::new(grid);
    let band_cells = tile as usize * w;
    let State { terrain, depth, flow, .. } = &mut state;
    terrain
        .par_chunks_mut(band_cells)
        .zip(depth.par_chunks_mut(band_cells))
        .zip(flow.par_chunks_mut(band_cells))
        .zip(bands.par_iter())
        .enumerate()
        .try_for_each(|(ty, (((terrain, depth), flow), band))| decode_band(grid, tile, ty, band, terrain, depth, flow))?;
    Ok(state)
}

/// Decodes one band into its rows of the fields.
fn decode_band(grid: Grid, tile: u32, ty: usize, band: &Band, terrain: &mut [f32], depth: &mut [i32], flow: &mut [[f32; 4]]) -> Result<()> {
    let w = grid.width as usize;
    let mut planes = vec![0u8; 4 * terrain.len()];
    decompress_exact(band.terrain, &mut planes, &format!("the terrain of band {ty}"))?;
    for (i, residual) in from_planes(&planes).enumerate() {
        let (row_start, x) = (i - i % w, i % w);
        let above = if row_start == 0 { 0 } else { terrain[row_start - w].to_bits() };
        let bits = unzigzag(residual).wrapping_add(predicted(&terrain[row_start..i], x, above));
        terrain[i] = f32::from_bits(bits);
    }
    let rows0 = ty * tile as usize;
    let wet_cells: usize = band.wet.iter().enumerate().filter(|(_, &wet)| wet).map(|(tx, _)| {
        let (columns, rows) = tile_cells(grid, tile, tx, ty);
        columns.len() * rows.len()
    }).sum();
    let mut planes = vec![0u8; WET_CELL_BYTES * wet_cells];
    decompress_exact(band.water, &mut planes, &format!("the water of band {ty}"))?;
    let (depth_planes, pipe_planes) = planes.split_at(4 * wet_cells);
    let mut depths = from_planes(depth_planes);
    let mut pipes = from_planes(pipe_planes);
    for (tx, _) in band.wet.iter().enumerate().filter(|(_, &wet)| wet) {
        let (columns, rows) = tile_cells(grid, tile, tx, ty);
        for y in rows {
            for x in columns.clone() {
                let i = (y - rows0) * w + x;
                // Both iterators hold exactly the wet cells' words: the sizes were checked.
                depth[i] = depths.next().unwrap_or(0) as i32;
                flow[i] = std::array::from_fn(|_| f32::from_bits(pipes.next().unwrap_or(0)));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state whose terrain, depth and pipes differ in every cell (negative zeros and subnormals
    /// among them), wet in the tiles `wet(tx, ty)` says.
    fn state(grid: Grid, wet: impl Fn(usize, usize) -> bool) -> State {
        let mut s = State::new(grid);
        let w = grid.width as usize;
        for i in 0..grid.cell_count() {
            let (x, y) = (i % w, i / w);
            s.terrain[i] = (x as f32 * 0.37).sin() * 12.5 - y as f32 * 0.011 + if i % 97 == 0 { -0.0 } else { 0.0 };
            if wet(x / SAVE_TILE as usize, y / SAVE_TILE as usize) {
                s.depth[i] = (i * 7919 % 50_000) as i32;
                s.flow[i] = [i as f32 * 1.0e-3, -0.0, f32::from_bits(1 + i as u32 % 5), -(i as f32).sqrt()];
            }
        }
        s
    }

    /// Every bit of terrain, depth and pipes comes back, for grids whose sides are and are not
    /// whole tiles, all wet, all dry and a checkerboard; the bytes per cell are printed.
    #[test]
    fn fields_come_back_bit_for_bit_whatever_is_wet() {
        for (width, height) in [(64u32, 64u32), (70, 33), (2, 2), (100, 129)] {
            let grid = Grid::new(width, height, 0.5).unwrap();
            for (case, wet) in [("all wet", (|_, _| true) as fn(usize, usize) -> bool), ("all dry", |_, _| false), ("checkerboard", |x, y| (x + y) % 2 == 0)] {
                let original = state(grid, wet);
                let mut bytes = Vec::new();
                encode_fields(&original, SAVE_TILE, &mut bytes);
                let back = decode_fields(grid, &bytes).unwrap();
                let same = |a: &[u32], b: &[u32]| a == b;
                let bits = |s: &State| (s.terrain.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), s.depth.iter().map(|&d| d as u32).collect::<Vec<_>>(), s.flow.iter().flatten().map(|v| v.to_bits()).collect::<Vec<_>>());
                let (a, b) = (bits(&original), bits(&back));
                println!("{width}x{height} {case}: {} bytes, {:.2} a cell (dense 24)", bytes.len(), bytes.len() as f64 / grid.cell_count() as f64);
                assert!(same(&a.0, &b.0) && same(&a.1, &b.1) && same(&a.2, &b.2), "{width}x{height} {case}: a bit differs");
            }
        }
    }

    /// A block that claims more than LZ4 can expand to, one cut short and bytes after the fields
    /// are refused with an error naming them, before anything of the grid's size is allocated.
    #[test]
    fn blocks_that_cannot_hold_their_fields_are_refused() {
        let grid = Grid::new(64, 64, 1.0).unwrap();
        let mut bytes = Vec::new();
        encode_fields(&state(grid, |x, _| x == 0), SAVE_TILE, &mut bytes);
        let huge = Grid::new(16384, 16384, 1.0).unwrap();
        let claimed = decode_fields(huge, &bytes);
        let mut longer = bytes.clone();
        longer.push(0);
        let short = decode_fields(grid, &bytes[..bytes.len() - 3]);
        println!("a 16384² grid from {} bytes: {claimed:?}\none byte more: {:?}\nthree bytes short: {short:?}", bytes.len(), decode_fields(grid, &longer));
        assert!(matches!(claimed, Err(Error::InvalidSave(_))));
        assert!(matches!(decode_fields(grid, &longer), Err(Error::InvalidSave(why)) if why.contains("follow")));
        assert!(matches!(short, Err(Error::InvalidSave(_))));
    }
}
