//! The save of a world stored in pages (`backend/gpu/world.rs`): its size, its ground, the
//! ledger, and only the pages that differ from a dry world at that ground: the terrain of pages
//! whose terrain was set, the depth and pipes of pages with water, each LZ4-compressed. A world
//! of 40000² cells with one basin saves to a few kilobytes.
//!
//! Every field a file gives is checked before anything is made from it (a file may come from
//! anyone): sizes within the world's limits, counts no larger than the bytes could hold, page
//! indices on the world and in increasing order, each block decompressed to exactly its page's
//! size, heights finite and within ±[`MAX_TERRAIN_ABS`], depth not negative, pipes finite, and
//! the water held equal to what the ledger says entered (the ledger must balance).
//!
//! After the pages comes the world's sources and drains (saves written before, whose magic says
//! so, lack the section and load with none; in a save that has it the section is required, so a
//! save cut before it is refused): what each inflow edge owes its next frame (a section of the
//! first version, which lacks it, owes nothing), then each source's id, rate, the fraction of a
//! quantum it owes, whether it drains a hole of the terrain source (not in the first version)
//! and its cells with their shares, checked the same way (cells on the world,
//! shares that sum to one, rates within what `add_source` takes, ids distinct, remainders finite
//! and not negative).

use crate::error::{Error, Result};
use crate::quanta::MAX_TERRAIN_ABS;
use crate::state::Counters;

/// The first bytes of a world's save: one that ends with its sources' section.
pub const WORLD_MAGIC: &[u8; 8] = b"PWWORLD2";
/// The first bytes of a save written before sources were saved: its pages end the file.
pub const WORLD_MAGIC_WITHOUT_SOURCES: &[u8; 8] = b"PWWORLD1";
/// Largest side of a page a save may hold.
pub const MAX_SAVED_PAGE_SIDE: u32 = 1024;
/// Largest side of a world, cells.
pub const MAX_WORLD_SIDE: u32 = i32::MAX as u32 / 2;
/// Bytes in front of the pages: magic, width, height, page side, ground, four counters, steps,
/// and the two page counts.
const HEADER_BYTES: usize = 8 + 4 * 4 + 8 * 4 + 8 + 8 + 8;
/// Bytes of a page's entry in front of its block: its index and the block's length.
const ENTRY_BYTES: usize = 8 + 4;
/// The first bytes of the sources' section: the inflow edges' remainders, then the sources.
const SOURCES_MAGIC: &[u8; 8] = b"PWSRCS02";
/// The first bytes of a sources' section written before the inflow edges' remainders were saved.
const SOURCES_MAGIC_WITHOUT_INFLOW: &[u8; 8] = b"PWSRCS01";
/// Bytes of the sources' section in front of its sources: magic, four remainders, count.
const SOURCES_HEADER_BYTES: usize = 8 + 4 * 8 + 4;
/// Bytes of a source in front of its cells: id, rate, carry, flags, cell count.
const SOURCE_BYTES: usize = 4 + 4 + 8 + 4 + 4;
/// Bytes of a source in front of its cells in a section of the first version: no flags.
const SOURCE_BYTES_WITHOUT_FLAGS: usize = 4 + 4 + 8 + 4;
/// A source's flags: it drains a hole of the world's terrain source ([`WorldSource::hole_drain`]).
const SOURCE_HOLE_DRAIN: u32 = 1;
/// A source's flags: a source node of the scene placed it ([`WorldSource::for_node`]).
const SOURCE_FOR_NODE: u32 = 2;
/// Bytes of a source's cell: x, y, share.
const SOURCE_CELL_BYTES: usize = 4 + 4 + 8;
/// Largest rate of a saved source, m³/s (what `WorldWater::add_source` takes).
pub const MAX_SAVED_SOURCE_RATE: f32 = crate::simulation::MAX_EDIT_VOLUME;

/// A source or drain of a world, as [`crate::world_water::WorldWater`] keeps it and its save
/// holds it: `rate` m³/s spread over `cells` (x, y, share of the rate; the shares sum to one),
/// owing `carry` quanta to its next frame.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldSource {
    /// The id `add_source` gave it (above 0, one per source).
    pub id: u32,
    /// m³/s; negative for a drain.
    pub rate: f32,
    /// Quanta owed to its next frame.
    pub carry: f64,
    /// Whether the world's terrain link placed it for a hole of its terrain source (the link
    /// replaces those where the source changes; a game's own are its to keep).
    pub hole_drain: bool,
    /// Whether a source node of the scene (`PipeWaterSource`) placed it: a world made from the
    /// save drops those, since the nodes place their sources again.
    pub for_node: bool,
    /// (x, y, share of the rate) of each of its cells.
    pub cells: Vec<(u32, u32, f64)>,
}

/// A world's save, as [`WorldSave::encode`] writes it and [`WorldSave::decode`] reads it back.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldSave {
    /// Cells along x.
    pub width: u32,
    /// Cells along y.
    pub height: u32,
    /// Cells along a page's side: a page's fields are `side²` cells, row-major, those past the
    /// world's edge included.
    pub side: u32,
    /// Height of the ground wherever no page's terrain was set, m.
    pub ground: f32,
    /// The ledger.
    pub counters: Counters,
    /// Steps the world had run.
    pub steps: u64,
    /// Terrain of the pages whose terrain was set: (page index, `side²` heights), by index.
    pub terrain: Vec<(u64, Vec<f32>)>,
    /// Water of the pages that hold any: (page index, `side²` depths in quanta, `side²` pipes),
    /// by index.
    pub water: Vec<(u64, Vec<i32>, Vec<[f32; 4]>)>,
    /// Sources and drains (by the world's step-independent bookkeeping, not the device's).
    pub sources: Vec<WorldSource>,
    /// Quanta each inflow edge (north, east, south, west) owes its next frame: under a quantum
    /// a cell of the edge a step, which a load would otherwise lose.
    pub inflow_carry: [f64; 4],
}

/// The little-endian words at `at` of bytes whose length the caller checked.
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidSave(format!("world save: {}", why.into()))
}

impl WorldSave {
    /// Pages along x and y.
    pub fn pages(&self) -> [u64; 2] {
        [self.width.div_ceil(self.side) as u64, self.height.div_ceil(self.side) as u64]
    }

    /// The save's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES);
        out.extend_from_slice(WORLD_MAGIC);
        for v in [self.width, self.height, self.side, self.ground.to_bits()] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let c = &self.counters;
        for v in [c.added, c.removed, c.boundary_in, c.boundary_out, self.steps, self.terrain.len() as u64, self.water.len() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut entry = |page: u64, raw: &[u8]| {
            let block = lz4_flex::block::compress(raw);
            out.extend_from_slice(&page.to_le_bytes());
            out.extend_from_slice(&(block.len() as u32).to_le_bytes());
            out.extend_from_slice(&block);
        };
        for (page, heights) in &self.terrain {
            entry(*page, bytemuck::cast_slice(heights));
        }
        for (page, depth, flow) in &self.water {
            let mut raw = Vec::with_capacity(depth.len() * 20);
            raw.extend_from_slice(bytemuck::cast_slice(depth));
            raw.extend_from_slice(bytemuck::cast_slice(flow));
            entry(*page, &raw);
        }
        Self::encode_sources(&self.sources, self.inflow_carry, &mut out);
        out
    }

    /// Puts `sources` and the inflow edges' remainders in place of the empty sources' section
    /// that ends `bytes` (a save [`WorldSave::encode`] wrote with none): a world's pages are
    /// encoded where its device is read, its sources where they are kept. Looks at the last bytes
    /// only: a large save is not read again on the calling thread.
    pub fn replace_sources(bytes: &mut Vec<u8>, sources: &[WorldSource], inflow_carry: [f64; 4]) -> Result<()> {
        let mut empty = Vec::new();
        Self::encode_sources(&[], [0.0; 4], &mut empty);
        if bytes.len() < HEADER_BYTES + empty.len() || &bytes[..8] != WORLD_MAGIC || !bytes.ends_with(&empty) {
            return Err(invalid("a save whose sources' section is not the empty one its pages' writer ends it with"));
        }
        bytes.truncate(bytes.len() - empty.len());
        Self::encode_sources(sources, inflow_carry, bytes);
        Ok(())
    }

    fn encode_sources(sources: &[WorldSource], inflow_carry: [f64; 4], out: &mut Vec<u8>) {
        out.extend_from_slice(SOURCES_MAGIC);
        for carry in inflow_carry {
            out.extend_from_slice(&carry.to_bits().to_le_bytes());
        }
        out.extend_from_slice(&(sources.len() as u32).to_le_bytes());
        for source in sources {
            out.extend_from_slice(&source.id.to_le_bytes());
            out.extend_from_slice(&source.rate.to_bits().to_le_bytes());
            out.extend_from_slice(&source.carry.to_bits().to_le_bytes());
            let flags = if source.hole_drain { SOURCE_HOLE_DRAIN } else { 0 } | if source.for_node { SOURCE_FOR_NODE } else { 0 };
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&(source.cells.len() as u32).to_le_bytes());
            for &(x, y, share) in &source.cells {
                out.extend_from_slice(&x.to_le_bytes());
                out.extend_from_slice(&y.to_le_bytes());
                out.extend_from_slice(&share.to_bits().to_le_bytes());
            }
        }
    }

    /// The sources' section from `at` to the end of `bytes` and the inflow edges' remainders,
    /// refusing what `encode` would not have written.
    fn decode_sources(bytes: &[u8], mut at: usize, width: u32, height: u32) -> Result<(Vec<WorldSource>, [f64; 4])> {
        let magic = bytes.get(at..at + 8);
        let mut inflow_carry = [0.0; 4];
        let mut source_bytes = SOURCE_BYTES;
        if magic == Some(SOURCES_MAGIC.as_slice()) && bytes.len() - at >= SOURCES_HEADER_BYTES {
            for (e, carry) in inflow_carry.iter_mut().enumerate() {
                *carry = f64::from_bits(u64_at(bytes, at + 8 + 8 * e));
                // Owed water, less than a quantum a cell of the edge each step: not negative,
                // and nothing near 2^53.
                if !(carry.is_finite() && (0.0..=(1u64 << 53) as f64).contains(carry)) {
                    return Err(invalid(format!("inflow edge {e} owes {carry} quanta, not within 0 ..= 2^53")));
                }
            }
            at += 8 + 4 * 8;
        } else if magic == Some(SOURCES_MAGIC_WITHOUT_INFLOW.as_slice()) && bytes.len() - at >= 12 {
            at += 8;
            source_bytes = SOURCE_BYTES_WITHOUT_FLAGS;
        } else {
            return Err(invalid(format!("{} bytes after the last page where the sources' section belongs", bytes.len() - at)));
        }
        let count = u32_at(bytes, at) as usize;
        at += 4;
        if count > (bytes.len() - at) / source_bytes {
            return Err(invalid(format!("{count} sources in {} bytes", bytes.len() - at)));
        }
        let mut sources: Vec<WorldSource> = Vec::with_capacity(count);
        for k in 0..count {
            if bytes.len() - at < source_bytes {
                return Err(invalid(format!("the file ends inside source {k}")));
            }
            let (id, rate, carry) = (u32_at(bytes, at), f32::from_bits(u32_at(bytes, at + 4)), f64::from_bits(u64_at(bytes, at + 8)));
            let flags = if source_bytes == SOURCE_BYTES { u32_at(bytes, at + 16) } else { 0 };
            let cells = u32_at(bytes, at + source_bytes - 4) as usize;
            at += source_bytes;
            let known = SOURCE_HOLE_DRAIN | SOURCE_FOR_NODE;
            if flags & !known != 0 {
                return Err(invalid(format!("source {id}: flags {flags:#x}, of which only {known:#x} have a meaning")));
            }
            if id == 0 || sources.iter().any(|s| s.id == id) {
                return Err(invalid(format!("source {k}: id {id}, which must be above 0 and not another source's")));
            }
            if !rate.is_finite() || rate.abs() > MAX_SAVED_SOURCE_RATE {
                return Err(invalid(format!("source {id}: rate {rate} m³/s, not finite within ±{MAX_SAVED_SOURCE_RATE}")));
            }
            // A frame owes less than one quantum a cell: anything near 2^53 is not a carry.
            if !carry.is_finite() || carry.abs() > (1u64 << 53) as f64 {
                return Err(invalid(format!("source {id}: carry {carry} quanta, not finite within ±2^53")));
            }
            if cells == 0 || cells > (bytes.len() - at) / SOURCE_CELL_BYTES {
                return Err(invalid(format!("source {id}: {cells} cells in {} bytes", bytes.len() - at)));
            }
            let mut list = Vec::with_capacity(cells);
            for _ in 0..cells {
                let (x, y, share) = (u32_at(bytes, at), u32_at(bytes, at + 4), f64::from_bits(u64_at(bytes, at + 8)));
                at += SOURCE_CELL_BYTES;
                if x >= width || y >= height {
                    return Err(invalid(format!("source {id}: cell ({x}, {y}) off the {width}x{height} world")));
                }
                if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
                    return Err(invalid(format!("source {id}: a share of {share}, not within 0 ..= 1")));
                }
                list.push((x, y, share));
            }
            let total: f64 = list.iter().map(|c| c.2).sum();
            if (total - 1.0).abs() > 1e-6 {
                return Err(invalid(format!("source {id}: shares summing to {total}, not 1")));
            }
            sources.push(WorldSource { id, rate, carry, hole_drain: flags & SOURCE_HOLE_DRAIN != 0, for_node: flags & SOURCE_FOR_NODE != 0, cells: list });
        }
        if at != bytes.len() {
            return Err(invalid(format!("{} bytes after the last source", bytes.len() - at)));
        }
        Ok((sources, inflow_carry))
    }

    /// Reads a save back, refusing (with what is wrong) anything [`WorldSave::encode`] would not
    /// have written.
    pub fn decode(bytes: &[u8]) -> Result<WorldSave> {
        if bytes.len() < HEADER_BYTES || (&bytes[..8] != WORLD_MAGIC && &bytes[..8] != WORLD_MAGIC_WITHOUT_SOURCES) {
            return Err(invalid(format!("{} bytes that do not start with a world save's header", bytes.len())));
        }
        let (width, height, side, ground) = (u32_at(bytes, 8), u32_at(bytes, 12), u32_at(bytes, 16), f32::from_bits(u32_at(bytes, 20)));
        if !(1..=MAX_WORLD_SIDE).contains(&width) || !(1..=MAX_WORLD_SIDE).contains(&height) {
            return Err(invalid(format!("a world of {width}x{height} cells: each side must be 1 ..= {MAX_WORLD_SIDE}")));
        }
        if !(1..=MAX_SAVED_PAGE_SIDE).contains(&side) {
            return Err(invalid(format!("pages of {side} cells a side: must be 1 ..= {MAX_SAVED_PAGE_SIDE}")));
        }
        if !ground.is_finite() || ground.abs() > MAX_TERRAIN_ABS {
            return Err(invalid(format!("ground {ground} m: must be finite, within ±{MAX_TERRAIN_ABS} m")));
        }
        // A world does not cool: nothing solidified.
        let counters = Counters { added: u64_at(bytes, 24), removed: u64_at(bytes, 32), boundary_in: u64_at(bytes, 40), boundary_out: u64_at(bytes, 48), solidified: 0 };
        let steps = u64_at(bytes, 56);
        let (terrain_count, water_count) = (u64_at(bytes, 64), u64_at(bytes, 72));
        let pages = width.div_ceil(side) as u64 * height.div_ceil(side) as u64;
        let room = ((bytes.len() - HEADER_BYTES) / ENTRY_BYTES) as u64;
        if terrain_count > pages || water_count > pages || terrain_count.saturating_add(water_count) > room {
            return Err(invalid(format!("{terrain_count} terrain and {water_count} water pages: a world of {pages} pages whose save holds room for {room} at most")));
        }
        let page_cells = side as usize * side as usize;
        let mut at = HEADER_BYTES;
        let mut next_block = |raw_len: usize, what: &str| -> Result<(u64, Vec<u8>)> {
            if bytes.len() - at < ENTRY_BYTES {
                return Err(invalid(format!("the file ends inside a {what} page's entry")));
            }
            let (page, len) = (u64_at(bytes, at), u32_at(bytes, at + 8) as usize);
            at += ENTRY_BYTES;
            if page >= pages {
                return Err(invalid(format!("{what} page {page} of a world of {pages} pages")));
            }
            if len > bytes.len() - at || len > lz4_flex::block::get_maximum_output_size(raw_len) {
                return Err(invalid(format!("{what} page {page}: a block of {len} bytes for {raw_len} bytes of fields ({} left in the file)", bytes.len() - at)));
            }
            let raw = lz4_flex::block::decompress(&bytes[at..at + len], raw_len).map_err(|e| invalid(format!("{what} page {page}: {e}")))?;
            if raw.len() != raw_len {
                return Err(invalid(format!("{what} page {page}: {} bytes of fields, not {raw_len}", raw.len())));
            }
            at += len;
            Ok((page, raw))
        };
        let increasing = |previous: Option<u64>, page: u64, what: &str| match previous {
            Some(p) if p >= page => Err(invalid(format!("{what} page {page} after page {p}: pages must come in increasing order, each once"))),
            _ => Ok(()),
        };
        let mut terrain = Vec::with_capacity(terrain_count as usize);
        for _ in 0..terrain_count {
            let (page, raw) = next_block(page_cells * 4, "terrain")?;
            increasing(terrain.last().map(|t: &(u64, Vec<f32>)| t.0), page, "terrain")?;
            let heights: Vec<f32> = bytemuck::pod_collect_to_vec(&raw);
            if let Some(bad) = heights.iter().find(|v| !v.is_finite() || v.abs() > MAX_TERRAIN_ABS) {
                return Err(invalid(format!("terrain page {page}: height {bad} m, not finite within ±{MAX_TERRAIN_ABS} m")));
            }
            terrain.push((page, heights));
        }
        let mut water = Vec::with_capacity(water_count as usize);
        let mut held: i128 = 0;
        for _ in 0..water_count {
            let (page, raw) = next_block(page_cells * 20, "water")?;
            increasing(water.last().map(|w: &(u64, Vec<i32>, Vec<[f32; 4]>)| w.0), page, "water")?;
            let depth: Vec<i32> = bytemuck::pod_collect_to_vec(&raw[..page_cells * 4]);
            let flow: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&raw[page_cells * 4..]);
            if let Some(bad) = depth.iter().find(|&&d| d < 0) {
                return Err(invalid(format!("water page {page}: depth {bad} quanta, below zero")));
            }
            if flow.iter().flatten().any(|v| !v.is_finite()) {
                return Err(invalid(format!("water page {page}: a pipe that is not finite")));
            }
            held += depth.iter().map(|&d| d as i128).sum::<i128>();
            water.push((page, depth, flow));
        }
        let (sources, inflow_carry) = if &bytes[..8] == WORLD_MAGIC {
            Self::decode_sources(bytes, at, width, height)?
        } else if at != bytes.len() {
            return Err(invalid(format!("{} bytes after the last page", bytes.len() - at)));
        } else {
            (Vec::new(), [0.0; 4])
        };
        let entered = counters.added as i128 - counters.removed as i128 + counters.boundary_in as i128 - counters.boundary_out as i128;
        if held != entered {
            return Err(invalid(format!("the pages hold {held} quanta, the ledger says {entered} entered")));
        }
        Ok(WorldSave { width, height, side, ground, counters, steps, terrain, water, sources, inflow_carry })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save() -> WorldSave {
        let side = 8u32;
        let n = (side * side) as usize;
        let depth: Vec<i32> = (0..n as i32).map(|i| i % 5).collect();
        let held: i64 = depth.iter().map(|&d| d as i64).sum();
        WorldSave {
            width: 30,
            height: 20,
            side,
            ground: 1.5,
            counters: Counters { added: held as u64 + 7, removed: 7, ..Counters::default() },
            steps: 99,
            terrain: vec![(1, (0..n).map(|i| i as f32 * 0.25).collect()), (5, vec![-3.0; n])],
            water: vec![(5, depth, (0..n).map(|i| [i as f32, -0.5, 0.0, 1e-3]).collect())],
            sources: vec![
                WorldSource { id: 3, rate: 2.5, carry: 0.75, hole_drain: false, for_node: true, cells: vec![(4, 4, 0.5), (5, 4, 0.25), (4, 5, 0.25)] },
                WorldSource { id: 7, rate: -1.0, carry: -0.5, hole_drain: true, for_node: false, cells: vec![(29, 19, 1.0)] },
            ],
            inflow_carry: [0.0, 12.5, 0.0, 3.25],
        }
    }

    /// What is encoded decodes to the same save, field for field.
    #[test]
    fn a_world_save_comes_back_as_it_was_written() {
        let s = save();
        let bytes = s.encode();
        println!("{} bytes for {} terrain and {} water pages of {}²", bytes.len(), s.terrain.len(), s.water.len(), s.side);
        assert_eq!(WorldSave::decode(&bytes).unwrap(), s);
        // A save written before the sources' section: its magic and pages alone load with none.
        let without = WorldSave { sources: Vec::new(), inflow_carry: [0.0; 4], ..s.clone() };
        let section = SOURCES_HEADER_BYTES + 2 * SOURCE_BYTES + 4 * SOURCE_CELL_BYTES;
        let old_bytes = [WORLD_MAGIC_WITHOUT_SOURCES.to_vec(), bytes[8..bytes.len() - section].to_vec()].concat();
        assert_eq!(WorldSave::decode(&old_bytes).unwrap(), without);
        // A section of the first version (no inflow edges' remainders, no flags): its sources
        // load, none a hole's drain, owing nothing at the edges.
        let pages_end = bytes.len() - section;
        let mut first_version = [&bytes[..pages_end], SOURCES_MAGIC_WITHOUT_INFLOW.as_slice(), &bytes[pages_end + 8 + 32..pages_end + SOURCES_HEADER_BYTES]].concat();
        let mut at = pages_end + SOURCES_HEADER_BYTES;
        for source in &s.sources {
            first_version.extend_from_slice(&bytes[at..at + 16]);
            first_version.extend_from_slice(&bytes[at + 20..at + SOURCE_BYTES + source.cells.len() * SOURCE_CELL_BYTES]);
            at += SOURCE_BYTES + source.cells.len() * SOURCE_CELL_BYTES;
        }
        let mut expected = WorldSave { inflow_carry: [0.0; 4], ..s.clone() };
        expected.sources.iter_mut().for_each(|source| (source.hole_drain, source.for_node) = (false, false));
        assert_eq!(WorldSave::decode(&first_version).unwrap(), expected);
        // Sources put in place of a save's own: what a world's save gets from where they are kept.
        let mut replaced = without.encode();
        WorldSave::replace_sources(&mut replaced, &s.sources, s.inflow_carry).unwrap();
        assert_eq!(replaced, bytes);
    }

    /// A file from anyone: every way of breaking the format is refused with what is wrong, and
    /// no corruption of a valid save's bytes panics (every single-byte change and every cut).
    #[test]
    fn hostile_world_saves_are_refused() {
        let good = save();
        let bytes = good.encode();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut with = |what: &'static str, f: &dyn Fn(&mut WorldSave)| {
            let mut s = save();
            f(&mut s);
            cases.push((what, s.encode()));
        };
        with("a page off the world", &|s| s.terrain[1].0 = 1_000);
        with("pages out of order", &|s| s.terrain.swap(0, 1));
        with("a page twice", &|s| s.terrain[1].0 = 1);
        with("a height that is not finite", &|s| s.terrain[0].1[3] = f32::NAN);
        with("a height past the limit", &|s| s.terrain[0].1[3] = 1e9);
        with("negative depth", &|s| s.water[0].1[2] = -1);
        with("a pipe that is not finite", &|s| s.water[0].2[2][1] = f32::INFINITY);
        with("a ledger that does not balance", &|s| s.counters.added += 1);
        with("pages of no cells", &|s| s.side = 0);
        with("a world of no cells", &|s| s.width = 0);
        with("a ground that is not finite", &|s| s.ground = f32::NAN);
        with("a source's cell off the world", &|s| s.sources[0].cells[1].0 = 30);
        with("a source's shares not summing to one", &|s| s.sources[0].cells[1].2 = 0.3);
        with("a negative share", &|s| s.sources[0].cells[1].2 = -0.25);
        with("a rate that is not finite", &|s| s.sources[1].rate = f32::NAN);
        with("a rate past the limit", &|s| s.sources[1].rate = 1e12);
        with("a carry that is not finite", &|s| s.sources[0].carry = f64::INFINITY);
        with("two sources with one id", &|s| s.sources[1].id = 3);
        with("a source of no cells", &|s| s.sources[1].cells.clear());
        with("an inflow edge owing less than nothing", &|s| s.inflow_carry[2] = -1.0);
        with("an inflow edge owing what is not a number", &|s| s.inflow_carry[1] = f64::NAN);
        let mut counts = bytes.clone();
        counts[64..72].copy_from_slice(&u64::MAX.to_le_bytes());
        cases.push(("absurd page counts", counts));
        let sources_at = bytes.len() - (SOURCES_HEADER_BYTES + 2 * SOURCE_BYTES + 4 * SOURCE_CELL_BYTES);
        assert_eq!(&bytes[sources_at..sources_at + 8], SOURCES_MAGIC, "the sources' section where the test expects it");
        let count_at = sources_at + SOURCES_HEADER_BYTES - 4;
        let mut source_count = bytes.clone();
        source_count[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        cases.push(("an absurd source count", source_count));
        let mut cell_count = bytes.clone();
        cell_count[count_at + 4 + 20..count_at + 4 + 24].copy_from_slice(&u32::MAX.to_le_bytes());
        cases.push(("an absurd cell count", cell_count));
        let mut flags = bytes.clone();
        flags[count_at + 4 + 16..count_at + 4 + 20].copy_from_slice(&6u32.to_le_bytes());
        cases.push(("flags without a meaning", flags));
        cases.push(("trailing bytes", [bytes.clone(), vec![0; 5]].concat()));
        cases.push(("a wrong magic", [b"PWWORLD9".to_vec(), bytes[8..].to_vec()].concat()));
        for (what, case) in &cases {
            let refused = WorldSave::decode(case).expect_err(what);
            println!("{what}: {refused}");
        }
        let mut refused = 0;
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                refused += WorldSave::decode(&b).is_err() as usize;
            }
        }
        for cut in 0..bytes.len() {
            assert!(WorldSave::decode(&bytes[..cut]).is_err(), "a save cut at {cut} of {} bytes is refused", bytes.len());
        }
        println!("{refused} of {} single-byte corruptions refused, none panicked; every cut refused", bytes.len() * 3);
    }
}
