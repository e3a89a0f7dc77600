//! The saved-state format: everything a [`crate::Simulation`] needs to go on exactly where it
//! stopped, as bytes (see [`crate::Simulation::save_state`] and
//! [`crate::Simulation::restore_state`]).
//!
//! Layout, all numbers little-endian:
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic [`SAVE_MAGIC`], `PIPEWATR` |
//! | 4 | format version, `u32` ([`SAVE_FORMAT_VERSION`]) |
//! | 8 | payload length in bytes, `u64` |
//! | 4 | CRC-32 (IEEE) of the payload, `u32` |
//! | … | payload |
//!
//! Payload, version 4 (older versions differ where said):
//! 1. grid: width `u32`, height `u32`, cell size `f32` (m);
//! 2. params: gravity `f32`, damping `f32`, neighbours `u8` (4 or 8, or 6 for the triangular
//!    lattice: a value added without a new version, since older files never hold it and an older
//!    build refuses it by name), cross-section `u8`
//!    (0 classic, 1 depth-dependent), pipe depth `f32`, four boundaries (N, E, S, W) as kind `u8`
//!    (0 wall, 1 open, 2 inflow, 3 fixed level) and its inflow rate or level `f32`, cfl `f32`, max step `f32`, max substeps
//!    `u32`, and from version 2 on momentum advection `u8` (0 off, 1 on; version 1 states were
//!    saved by builds without it and load with it off, so they go on as they ran), and from
//!    version 3 on viscosity `f32` (m²/s) and solidify rate `f32` (m/s) (older states were saved
//!    by builds whose fluid was water: they load with water's viscosity and no cooling);
//! 3. clock: frames `u64`, simulated seconds `f64`, the last frame's report (substeps `u32`,
//!    step, simulated and dropped seconds `f32`), the recent depth gains that enter the step
//!    estimate (3 × `f32`, m);
//! 4. ledger: initial total `i64`, added, removed, boundary in, boundary out (`u64`), quanta, and
//!    from version 3 on solidified `u64` (quanta) and the cooling remainder `f64` (quanta per
//!    cell; 0 and 0 for older states);
//! 5. inflow remainders of the four edges (4 × `f64`, quanta);
//! 6. sources and drains: next id `u32`, count `u32`, then each: id `u32`, rate `f32` (m³/s),
//!    remainder `f64` (quanta), cell count `u32`, and per cell its index `u32` and share `f64`;
//! 7. fields, from version 4 on: the terrain of every cell and the water (depth and pipes) of
//!    the tiles that hold any, compressed band by band ([`crate::save_tiles`]): dry land costs its
//!    compressed terrain, a few bytes a cell or less. Versions 1 ..= 3 ([`DENSE_FORMAT_VERSION`]):
//!    dense, one value per cell in row-major order: terrain `f32` (m, as edited), depth `i32`
//!    (quanta), then what the four owned pipes keep (E, S, SE, SW) `f32` ([`State::flow`]:
//!    their flow in m²/s, or their flux in m³/s without momentum advection, which is how
//!    version 1 states, loaded with advection off, stored them); 24 bytes a cell.
//!
//! The payload length tells a truncated file from a corrupt one; the checksum catches corruption;
//! a newer version is refused rather than misread. A decoded state is validated like any other
//! input (ranges, finite values, the mass identity) before anything uses it.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::params::{Boundary, CrossSection, NeighbourMode, Params};
use crate::frame::FrameReport;
use crate::sources::{Source, SourceId, MAX_SOURCE_RATE};
use crate::grid::MAX_GRID_SIDE;
use crate::simulation::{MAX_FRAME_DELTA, MAX_STEP_LENGTH};
use crate::state::{check_pipes, check_terrain, Counters, State};

/// The first eight bytes of every saved state.
pub const SAVE_MAGIC: [u8; 8] = *b"PIPEWATR";
/// The format version this build writes, and the newest it reads.
pub const SAVE_FORMAT_VERSION: u32 = 4;
/// The last format version whose fields are dense (24 bytes a cell, uncompressed): saves of
/// versions 1 ..= 3 load as they are.
pub const DENSE_FORMAT_VERSION: u32 = 3;
/// Bytes before the payload: magic, version, payload length, checksum.
pub const SAVE_HEADER_BYTES: usize = 24;
/// Bytes per cell in the dense fields (versions 1 ..= 3): terrain, depth and four fluxes.
const CELL_BYTES: usize = 4 + 4 + 16;

// Bounds on what a decoded state holds besides its fields: what runs of the model produce, so
// that no crafted value sends a later sum or step past what its type holds.

/// Most frames a saved run may have taken: 2⁵³ (285 000 years at 1000 frames a second), so
/// that counting on never overflows.
const MAX_SAVED_FRAMES: u64 = 1 << 53;
/// Longest frame a report may describe, s: a frame simulates and drops at most the
/// [`MAX_FRAME_DELTA`] it was asked for plus the time carried from shorter ones (under
/// [`crate::simulation::MIN_STEP`]); a second more leaves room for rounding.
const MAX_REPORTED_FRAME: f32 = MAX_FRAME_DELTA + 1.0;
/// Largest remainder (quanta) one cell of a source or an inflow edge may carry: under one
/// quantum per step and cell, for at most `u32::MAX` steps of a frame.
const MAX_CARRY_PER_CELL: f64 = 4_294_967_296.0;
/// Largest initial total magnitude, quanta: 2⁶², eight times the most water a grid holds
/// (16384² cells of 2³¹ quanta, under 2⁵⁹), leaving room for what device recoveries move it by.
const MAX_SAVED_TOTAL: i64 = 1 << 62;
/// How far the shares of a source's cells may sum from 1: they are weights over their sum, in
/// `f64`, whose rounding over the most cells a footprint covers (16384², 2.7·10⁸ × 2⁻⁵³) stays
/// under 10⁻⁷.
const SHARE_SUM_TOLERANCE: f64 = 1.0e-6;

/// Everything a simulation saves, decoded and validated (except against the simulation that
/// restores it: [`crate::Simulation::restore_state`] checks the grid).
#[derive(Debug, Clone)]
pub(crate) struct SavedState {
    pub params: Params,
    pub frames: u64,
    pub elapsed: f64,
    pub last_report: FrameReport,
    pub recent_gain: [f32; 3],
    pub initial_total: i64,
    /// The ledger's counters, with the quanta of fluid that cooled into ground
    /// ([`Counters::solidified`]).
    pub counters: Counters,
    /// Quanta per cell that cooling owes from earlier frames ([`crate::cooling::quanta_per_cell`]).
    pub cooling_carry: f64,
    pub inflow_carry: [f64; 4],
    pub next_source_id: u32,
    pub sources: Vec<Source>,
    /// Grid, terrain, depth and flux.
    pub state: State,
}

/// The fields and parameters of a saved state: what a simulation that starts from it (an
/// editor's baked water) needs, without the clock, ledger or sources of the run that saved it.
#[derive(Debug, Clone)]
pub struct SavedFields {
    /// Grid, terrain (as edited), depth (quanta) and what the pipes keep.
    pub state: State,
    /// The parameters the pipes' values were saved under ([`State::flow`] means flow or flux
    /// according to them).
    pub params: Params,
}

/// Decodes and validates `bytes` from [`crate::Simulation::save_state`] (as
/// [`crate::Simulation::restore_state`] does) and returns its fields and parameters.
pub fn saved_fields(bytes: &[u8]) -> Result<SavedFields> {
    let saved = SavedState::decode(bytes)?;
    Ok(SavedFields { state: saved.state, params: saved.params })
}

/// A saved state (any version this build reads) rewritten in the dense layout of
/// [`DENSE_FORMAT_VERSION`]: every field at a fixed offset, 24 bytes a cell, uncompressed. For
/// tools that read or patch a save's fields in place (and tests that do); it loads like any
/// other. Validates `bytes` as [`crate::Simulation::restore_state`] does.
pub fn dense_state(bytes: &[u8]) -> Result<Vec<u8>> {
    Ok(SavedState::decode(bytes)?.encode_as(DENSE_FORMAT_VERSION))
}

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidSave(why.into())
}

impl SavedState {
    /// The saved state as bytes (header and payload).
    pub fn encode(&self) -> Vec<u8> {
        self.encode_as(SAVE_FORMAT_VERSION)
    }

    /// The saved state as bytes in format `version`: [`SAVE_FORMAT_VERSION`] or
    /// [`DENSE_FORMAT_VERSION`] (the same but for its dense fields).
    fn encode_as(&self, version: u32) -> Vec<u8> {
        let g = self.state.grid;
        let cells: usize = self.sources.iter().map(|s| s.cells.len()).sum();
        let mut p = Vec::with_capacity(256 + 20 * self.sources.len() + 12 * cells + g.cell_count());
        fn u8_(p: &mut Vec<u8>, v: u8) {
            p.push(v)
        }
        fn u32_(p: &mut Vec<u8>, v: u32) {
            p.extend_from_slice(&v.to_le_bytes())
        }
        fn u64_(p: &mut Vec<u8>, v: u64) {
            p.extend_from_slice(&v.to_le_bytes())
        }
        fn f32_(p: &mut Vec<u8>, v: f32) {
            p.extend_from_slice(&v.to_le_bytes())
        }
        fn f64_(p: &mut Vec<u8>, v: f64) {
            p.extend_from_slice(&v.to_le_bytes())
        }
        u32_(&mut p, g.width);
        u32_(&mut p, g.height);
        f32_(&mut p, g.cell_size);
        let pr = &self.params;
        f32_(&mut p, pr.gravity);
        f32_(&mut p, pr.damping);
        u8_(&mut p, match pr.neighbours {
            NeighbourMode::Four => 4,
            NeighbourMode::Eight => 8,
            NeighbourMode::Triangular => 6,
        });
        u8_(&mut p, match pr.cross_section {
            CrossSection::Classic => 0,
            CrossSection::DepthDependent => 1,
        });
        f32_(&mut p, pr.pipe_depth);
        for boundary in pr.boundaries {
            let (kind, rate) = match boundary {
                Boundary::Wall => (0, 0.0),
                Boundary::Open => (1, 0.0),
                Boundary::Inflow { rate } => (2, rate),
                Boundary::Level { level } => (3, level),
            };
            u8_(&mut p, kind);
            f32_(&mut p, rate);
        }
        f32_(&mut p, pr.cfl);
        f32_(&mut p, pr.max_step);
        u32_(&mut p, pr.max_substeps);
        u8_(&mut p, pr.momentum_advection as u8);
        f32_(&mut p, pr.viscosity);
        f32_(&mut p, pr.solidify_rate);
        u64_(&mut p, self.frames);
        f64_(&mut p, self.elapsed);
        u32_(&mut p, self.last_report.substeps);
        f32_(&mut p, self.last_report.step);
        f32_(&mut p, self.last_report.simulated);
        f32_(&mut p, self.last_report.dropped);
        self.recent_gain.iter().for_each(|&v| f32_(&mut p, v));
        u64_(&mut p, self.initial_total as u64);
        let c = self.counters;
        [c.added, c.removed, c.boundary_in, c.boundary_out].iter().for_each(|&v| u64_(&mut p, v));
        u64_(&mut p, c.solidified);
        f64_(&mut p, self.cooling_carry);
        self.inflow_carry.iter().for_each(|&v| f64_(&mut p, v));
        u32_(&mut p, self.next_source_id);
        u32_(&mut p, self.sources.len() as u32);
        for s in &self.sources {
            u32_(&mut p, s.id.0);
            f32_(&mut p, s.rate);
            f64_(&mut p, s.carry);
            u32_(&mut p, s.cells.len() as u32);
            for &(cell, share) in &s.cells {
                u32_(&mut p, cell);
                f64_(&mut p, share);
            }
        }
        if version > DENSE_FORMAT_VERSION {
            crate::save_tiles::encode_fields(&self.state, crate::save_tiles::SAVE_TILE, &mut p);
        } else {
            p.reserve(CELL_BYTES * g.cell_count());
            self.state.terrain.iter().for_each(|&v| f32_(&mut p, v));
            self.state.depth.iter().for_each(|&v| u32_(&mut p, v as u32));
            self.state.flow.iter().flatten().for_each(|&v| f32_(&mut p, v));
        }

        let mut bytes = Vec::with_capacity(SAVE_HEADER_BYTES + p.len());
        bytes.extend_from_slice(&SAVE_MAGIC);
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&(p.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&p).to_le_bytes());
        bytes.extend_from_slice(&p);
        bytes
    }

    /// Reads and validates a saved state. Every problem is an [`Error::InvalidSave`] that says
    /// what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<SavedState> {
        if bytes.len() < SAVE_MAGIC.len() || bytes[..SAVE_MAGIC.len()] != SAVE_MAGIC {
            return Err(invalid(format!("not a PipeWater state: it does not start with the magic bytes {:?}", String::from_utf8_lossy(&SAVE_MAGIC))));
        }
        if bytes.len() < SAVE_HEADER_BYTES {
            return Err(invalid(format!("truncated: {} bytes, shorter than the {SAVE_HEADER_BYTES}-byte header", bytes.len())));
        }
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let version = word(8);
        if version > SAVE_FORMAT_VERSION {
            return Err(invalid(format!(
                "format version {version} is newer than this build of PipeWater reads (up to {SAVE_FORMAT_VERSION}): it was saved by a later version"
            )));
        }
        if version == 0 {
            return Err(invalid("format version 0 does not exist"));
        }
        let length = word(12) as u64 | (word(16) as u64) << 32;
        let stored_crc = word(20);
        let have = (bytes.len() - SAVE_HEADER_BYTES) as u64;
        if have < length {
            return Err(invalid(format!("truncated: the header announces {length} bytes of payload, the data holds {have}")));
        }
        if have > length {
            return Err(invalid(format!("{} bytes follow the {length}-byte payload the header announces", have - length)));
        }
        let payload = &bytes[SAVE_HEADER_BYTES..];
        let crc = crc32fast::hash(payload);
        if crc != stored_crc {
            return Err(invalid(format!("corrupt: the payload's CRC-32 is {crc:08x}, the header says {stored_crc:08x}")));
        }
        let saved = Reader { bytes: payload, at: 0, version }.saved_state()?;
        saved.validate()?;
        Ok(saved)
    }

    /// Checks what the checksum cannot: ranges, finite values, references and the mass identity.
    fn validate(&self) -> Result<()> {
        self.params.validate().map_err(|e| invalid(format!("its parameters: {e}")))?;
        let s = &self.state;
        let n = s.grid.cell_count();
        check_terrain(&s.grid, &s.terrain).map_err(|e| invalid(format!("its terrain: {e}")))?;
        if let Some(i) = s.depth.iter().position(|&d| d < 0) {
            return Err(invalid(format!("negative depth {} quanta at cell {i}", s.depth[i])));
        }
        check_pipes(&s.grid, &self.params, &s.flow).map_err(|e| invalid(format!("its pipes: {e}")))?;
        if self.frames > MAX_SAVED_FRAMES {
            return Err(invalid(format!("frame count {} is past {MAX_SAVED_FRAMES}", self.frames)));
        }
        let finite_non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !finite_non_negative(self.elapsed) {
            return Err(invalid(format!("simulated time {} s is not a finite, non-negative number", self.elapsed)));
        }
        let report = self.last_report;
        if ![report.step, report.simulated, report.dropped].iter().chain(&self.recent_gain).all(|&v| finite_non_negative(v as f64)) {
            return Err(invalid("the last frame's report or the recent depth gains hold a negative or non-finite value"));
        }
        if report.step > MAX_STEP_LENGTH || report.simulated > MAX_REPORTED_FRAME || report.dropped > MAX_REPORTED_FRAME {
            return Err(invalid(format!(
                "the last frame's report: steps of {} s (at most {MAX_STEP_LENGTH}), {} s simulated and {} s dropped (each at most {MAX_REPORTED_FRAME})",
                report.step, report.simulated, report.dropped
            )));
        }
        if let Some(e) = self.inflow_carry.iter().position(|v| !(v.is_finite() && v.abs() <= MAX_CARRY_PER_CELL * MAX_GRID_SIDE as f64)) {
            return Err(invalid(format!("the inflow remainder of edge {e} is {} quanta (at most {} in magnitude)", self.inflow_carry[e], MAX_CARRY_PER_CELL * MAX_GRID_SIDE as f64)));
        }
        if !(self.cooling_carry.is_finite() && (0.0..1.0).contains(&self.cooling_carry)) {
            return Err(invalid(format!("the cooling remainder is {} quanta (0 ..< 1)", self.cooling_carry)));
        }
        if !(-MAX_SAVED_TOTAL..=MAX_SAVED_TOTAL).contains(&self.initial_total) {
            return Err(invalid(format!("initial total {} quanta is past ±{MAX_SAVED_TOTAL}", self.initial_total)));
        }
        for (k, source) in self.sources.iter().enumerate() {
            if source.id.0 == 0 || source.id.0 >= self.next_source_id || self.sources[..k].iter().any(|o| o.id == source.id) {
                return Err(invalid(format!("source id {} is repeated, zero or not below the next id {}", source.id.0, self.next_source_id)));
            }
            let largest_carry = MAX_CARRY_PER_CELL * source.cells.len().max(1) as f64;
            if !source.rate.is_finite() || source.rate.abs() > MAX_SOURCE_RATE || !(source.carry.is_finite() && source.carry.abs() <= largest_carry) {
                return Err(invalid(format!(
                    "source {}: rate {} m³/s (at most {MAX_SOURCE_RATE}) or remainder {} quanta (at most {largest_carry}) out of range",
                    source.id.0, source.rate, source.carry
                )));
            }
            if let Some(&(cell, share)) = source.cells.iter().find(|&&(cell, share)| cell as usize >= n || !(finite_non_negative(share) && share <= 1.0)) {
                return Err(invalid(format!("source {}: cell {cell} with share {share} (the grid has {n} cells, a share is 0 ..= 1)", source.id.0)));
            }
            let shares: f64 = source.cells.iter().map(|&(_, share)| share).sum();
            if (shares - 1.0).abs() > SHARE_SUM_TOLERANCE {
                return Err(invalid(format!("source {}: its cells' shares sum to {shares}, not 1", source.id.0)));
            }
        }
        let total = s.total_quanta();
        // The net of the counters is exact modulo 2⁶⁴ (`Counters::net`), and a balancing
        // ledger's initial total plus it is the total the fields hold: no overflow.
        let expected = self.initial_total.checked_add(self.counters.net()).and_then(|e| e.checked_sub(i64::try_from(self.counters.solidified).ok()?));
        if expected != Some(total) {
            return Err(invalid(format!(
                "the ledger does not balance: the fields hold {total} quanta, initial {} + counters {:?} − solidified {} say {}",
                self.initial_total,
                self.counters,
                self.counters.solidified,
                expected.map_or("more than 64 bits hold".to_string(), |e| e.to_string())
            )));
        }
        Ok(())
    }
}

/// Reads the payload front to back; running out of bytes is an error naming what was read.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The format version the payload was written in.
    version: u32,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(invalid(format!("the payload ends at byte {} while reading {what} ({n} bytes needed)", self.bytes.len())));
        };
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }
    fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// A count of items of `item_bytes` each that must fit in what is left.
    fn count(&mut self, item_bytes: usize, what: &str) -> Result<usize> {
        let count = self.u32(what)? as usize;
        let left = self.bytes.len() - self.at;
        if count.saturating_mul(item_bytes) > left {
            return Err(invalid(format!("{what} = {count} cannot fit in the {left} bytes that are left")));
        }
        Ok(count)
    }

    fn saved_state(mut self) -> Result<SavedState> {
        let (width, height, cell_size) = (self.u32("grid width")?, self.u32("grid height")?, self.f32("cell size")?);
        let grid = Grid::new(width, height, cell_size).map_err(|e| invalid(format!("its grid: {e}")))?;
        let gravity = self.f32("gravity")?;
        let damping = self.f32("damping")?;
        let neighbours = match self.u8("neighbour mode")? {
            4 => NeighbourMode::Four,
            8 => NeighbourMode::Eight,
            6 => NeighbourMode::Triangular,
            other => return Err(invalid(format!("neighbour mode {other} (4, 8 or 6)"))),
        };
        let cross_section = match self.u8("cross-section mode")? {
            0 => CrossSection::Classic,
            1 => CrossSection::DepthDependent,
            other => return Err(invalid(format!("cross-section mode {other} (0 or 1)"))),
        };
        let pipe_depth = self.f32("pipe depth")?;
        let mut boundaries = [Boundary::Wall; 4];
        for (edge, boundary) in boundaries.iter_mut().enumerate() {
            let (kind, value) = (self.u8("boundary kind")?, self.f32("inflow rate or level")?);
            *boundary = match kind {
                0 => Boundary::Wall,
                1 => Boundary::Open,
                2 => Boundary::Inflow { rate: value },
                3 => Boundary::Level { level: value },
                other => return Err(invalid(format!("boundary kind {other} on edge {edge} (0 wall, 1 open, 2 inflow, 3 level)"))),
            };
        }
        let params = Params {
            gravity,
            damping,
            neighbours,
            cross_section,
            pipe_depth,
            boundaries,
            cfl: self.f32("cfl")?,
            max_step: self.f32("max step")?,
            max_substeps: self.u32("max substeps")?,
            momentum_advection: false,
            viscosity: crate::params::WATER_VISCOSITY,
            solidify_rate: 0.0,
            // Saves hold the water, not the game's settings of the ground: erosion goes on as
            // the caller's parameters say (`Simulation::set_params`).
            erosion: crate::params::ErosionParams::default(),
        };
        // Version 1 states come from builds without advection: they go on as they ran.
        let momentum_advection = self.version >= 2
            && match self.u8("momentum advection")? {
                0 => false,
                1 => true,
                other => return Err(invalid(format!("momentum advection flag {other} (0 or 1)"))),
            };
        // Version 3 adds the fluid; older states were water that did not cool.
        let (viscosity, solidify_rate) = if self.version >= 3 { (self.f32("viscosity")?, self.f32("solidify rate")?) } else { (crate::params::WATER_VISCOSITY, 0.0) };
        let params = Params { momentum_advection, viscosity, solidify_rate, ..params };
        let frames = self.u64("frame count")?;
        let elapsed = self.f64("simulated time")?;
        let last_report = FrameReport {
            substeps: self.u32("last substeps")?,
            step: self.f32("last step")?,
            simulated: self.f32("last simulated time")?,
            dropped: self.f32("last dropped time")?,
        };
        let recent_gain = [self.f32("recent gain")?, self.f32("recent gain")?, self.f32("recent gain")?];
        let initial_total = self.u64("initial total")? as i64;
        let mut counters = Counters {
            added: self.u64("added")?,
            removed: self.u64("removed")?,
            boundary_in: self.u64("boundary inflow")?,
            boundary_out: self.u64("boundary outflow")?,
            solidified: 0,
        };
        let cooling_carry = if self.version >= 3 {
            counters.solidified = self.u64("solidified")?;
            self.f64("cooling remainder")?
        } else {
            0.0
        };
        let inflow_carry = [self.f64("inflow remainder")?, self.f64("inflow remainder")?, self.f64("inflow remainder")?, self.f64("inflow remainder")?];
        let next_source_id = self.u32("next source id")?;
        let source_count = self.count(20, "source count")?;
        let mut sources = Vec::with_capacity(source_count);
        for _ in 0..source_count {
            let id = SourceId(self.u32("source id")?);
            let rate = self.f32("source rate")?;
            let carry = self.f64("source remainder")?;
            let cell_count = self.count(12, "source cell count")?;
            let mut cells = Vec::with_capacity(cell_count);
            for _ in 0..cell_count {
                cells.push((self.u32("source cell")?, self.f64("source share")?));
            }
            sources.push(Source { id, cells, rate, carry });
        }
        let n = grid.cell_count();
        let left = self.bytes.len() - self.at;
        if self.version > DENSE_FORMAT_VERSION {
            let state = crate::save_tiles::decode_fields(grid, &self.bytes[self.at..])?;
            return Ok(SavedState { params, frames, elapsed, last_report, recent_gain, initial_total, counters, cooling_carry, inflow_carry, next_source_id, sources, state });
        }
        if left != CELL_BYTES * n {
            return Err(invalid(format!(
                "the fields of a {width}x{height} grid take {} bytes, the payload has {left} left",
                CELL_BYTES * n
            )));
        }
        let words = |bytes: &[u8]| bytes.chunks_exact(4).map(|w| [w[0], w[1], w[2], w[3]]).collect::<Vec<[u8; 4]>>();
        let terrain: Vec<f32> = words(self.take(4 * n, "terrain")?).into_iter().map(f32::from_le_bytes).collect();
        let depth: Vec<i32> = words(self.take(4 * n, "depth")?).into_iter().map(i32::from_le_bytes).collect();
        let pipe_words: Vec<f32> = words(self.take(16 * n, "pipes")?).into_iter().map(f32::from_le_bytes).collect();
        let pipes: Vec<[f32; 4]> = pipe_words.chunks_exact(4).map(|f| [f[0], f[1], f[2], f[3]]).collect();
        let state = State { grid, terrain, depth, flow: pipes };
        Ok(SavedState {
            params,
            frames,
            elapsed,
            last_report,
            recent_gain,
            initial_total,
            counters,
            cooling_carry,
            inflow_carry,
            next_source_id,
            sources,
            state,
        })
    }
}

