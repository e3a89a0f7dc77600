//! Water that several players share: a server owns the water, clients show it.
//!
//! This is the protocol alone, in plain Rust: what the server sends each client, what a client
//! does with it, and the wire format ([`codec`]). An engine layer moves the bytes (Godot's
//! `SceneMultiplayer.send_bytes`, reliable or not as [`Outgoing::reliable`] says) and calls the
//! simulation; nothing here knows about sockets or clocks beyond the seconds it is given.
//!
//! - **The unit of sync is a tile** of [`SyncConfig::tile_size`]² cells (by default the CPU
//!   backend's sleeping tile): its water depths in integer quanta and its pipes' flows. The server numbers each
//!   tile's contents with a version that grows when a cell changes.
//! - **Deltas against what the client acknowledged**: per client and tile the server knows the
//!   version the client acknowledged and sends the difference from it (version 0, nothing, for
//!   a keyframe), compressed ([`codec::encode_tile`]) and cut into chunks of at most
//!   [`codec::MAX_PACKET_BYTES`] bytes. A client applies an update only when it holds its base
//!   and it is newer than what it has, so lost, late and doubled packets do no harm; it keeps
//!   a few past versions of each tile, since deltas against an older acknowledgement may still
//!   be in flight.
//! - **A budget per client** ([`SyncConfig::budget_kbps`]): tiles near the client's focus points
//!   and tiles that changed most since the client's version go first; the rest wait.
//! - **Checksums** ([`tile_hash`] and the total quanta) of tiles the client should hold exactly,
//!   at a low rate: a mismatch makes the client ask for the tile whole again.
//! - **Edits are requests**: a client's [`Edit`] goes to the server, the game accepts or refuses
//!   it (with the peer id), and accepted edits reach every client with consecutive sequence
//!   numbers, in the order the server applied them.
//!
//! - **One clock, the server's frames**: the server logs the step and steps of every frame its
//!   water runs ([`SyncServer::record_frame`]); tiles carry depths and the pipes' flows (their
//!   exact bits, [`codec::VALUES_PER_CELL`]) stamped with the frame they were taken at, and edits
//!   the frame after which they were applied.
//!
//! A client's water runs the server's frames, a few behind ([`ClientSession::step`]), and is
//! set to each tile's copy at the frame the copy describes ([`Replica::frame`]): with the same
//! backend on both sides its steps are the server's, bit for bit, and the surface moves at the
//! frame rate however few tiles the budget lets through. A copy a checksum confirms is blended
//! towards ([`blend_toward`]), so that across backends a correction does not pop.

pub mod client;
pub mod codec;
pub mod replica;
pub mod server;
pub mod session;

pub use client::{ClientEvent, SyncClient};
pub use codec::{Packet, MAX_PACKET_BYTES};
pub use replica::{apply_edit, Replica, ReplicaFrame};
pub use server::{ServerEvent, SyncServer};
pub use session::{ClientSession, EditRequest, ServerSession, SyncCosts, SYNC_HZ};

use crate::backend::sleep::TileGrid;
use crate::error::{check_range, Error, Result};
use crate::grid::{CellRect, Grid};

/// Peer id of the server in Godot's multiplayer API.
pub const SERVER_PEER: i32 = 1;
/// Bytes a packet costs on the wire beyond its payload, counted against the budget: IPv4 and
/// UDP headers (28) and ENet's command headers (about 12).
pub const PACKET_OVERHEAD_BYTES: usize = 40;

/// The server's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncConfig {
    /// Cells of a tile along each side, `8 ..= 128`. 32 by default (the CPU backend's sleeping
    /// tile): a tile's update is then one or two packets.
    pub tile_size: u32,
    /// Steady bandwidth per client, kbit/s, `8 ..= 1 000 000`, payload and
    /// [`PACKET_OVERHEAD_BYTES`] counted. 256 by default.
    pub budget_kbps: f32,
    /// Bandwidth per client while its keyframe is incomplete (after a join or a full resync),
    /// kbit/s, same range. 16 000 by default: a LAN or loopback join in seconds.
    pub join_budget_kbps: f32,
    /// Distance from a client's focus points (m) within which changed tiles go first; tiles
    /// further out are sent with a sixteenth of the priority. `0 ..= 1e6`; 0: no preference.
    pub focus_radius: f32,
    /// Seconds after which a tile update that was not acknowledged is sent again, `0.01 ..= 60`.
    pub resend_after: f32,
    /// Seconds in which every tile a client holds is checksummed once, `0.1 ..= 600`.
    pub checksum_interval: f32,
    /// Most clients at once, `1 ..= 4096`.
    pub max_clients: u32,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { tile_size: 32, budget_kbps: 256.0, join_budget_kbps: 16_000.0, focus_radius: 128.0, resend_after: 0.3, checksum_interval: 4.0, max_clients: 64 }
    }
}

impl SyncConfig {
    /// Checks every field, naming the first that is out of its range.
    pub fn check(&self) -> Result<()> {
        if !(8..=128).contains(&self.tile_size) {
            return Err(Error::invalid("tile_size", self.tile_size, "8 ..= 128 cells"));
        }
        check_range("budget_kbps", self.budget_kbps, 8.0, 1.0e6)?;
        check_range("join_budget_kbps", self.join_budget_kbps, 8.0, 1.0e6)?;
        check_range("focus_radius", self.focus_radius, 0.0, 1.0e6)?;
        check_range("resend_after", self.resend_after, 0.01, 60.0)?;
        check_range("checksum_interval", self.checksum_interval, 0.1, 600.0)?;
        if !(1..=4096).contains(&self.max_clients) {
            return Err(Error::invalid("max_clients", self.max_clients, "1 ..= 4096"));
        }
        Ok(())
    }
}

/// A packet to send, and whether it needs the reliable channel (welcome, edits, refusals,
/// hello, edit requests and resync requests do; tiles, checksums, acknowledgements and focus
/// are sent again or superseded when lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The packet's bytes (at most [`MAX_PACKET_BYTES`]).
    pub bytes: Vec<u8>,
    /// Whether to send it reliably and in order.
    pub reliable: bool,
}

/// An edit of the water or the ground, as it crosses the wire. Positions are local X, Z metres
/// of the `PipeWater` node; the simulation checks the ranges when the edit is applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Edit {
    /// [`crate::Simulation::add_water`]: `volume` m³ within `radius` m.
    AddWater {
        /// Local X, m.
        x: f32,
        /// Local Z, m.
        z: f32,
        /// m³.
        volume: f32,
        /// m.
        radius: f32,
    },
    /// [`crate::Simulation::remove_water`]: up to `volume` m³ within `radius` m.
    RemoveWater {
        /// Local X, m.
        x: f32,
        /// Local Z, m.
        z: f32,
        /// m³.
        volume: f32,
        /// m.
        radius: f32,
    },
    /// [`crate::Simulation::modify_terrain`]: raise (or lower) the ground by `delta_height` m.
    ModifyTerrain {
        /// Local X, m.
        x: f32,
        /// Local Z, m.
        z: f32,
        /// m.
        delta_height: f32,
        /// m.
        radius: f32,
    },
    /// [`crate::Simulation::add_source`]; `id` is the server's [`crate::SourceId`] value, by
    /// which later edits name the source (a client keeps its own ids and maps them).
    AddSource {
        /// The server's id of the new source.
        id: u32,
        /// Local X, m.
        x: f32,
        /// Local Z, m.
        z: f32,
        /// m³/s (negative: a drain).
        rate: f32,
        /// m.
        radius: f32,
    },
    /// [`crate::Simulation::set_source_rate`].
    SetSourceRate {
        /// The server's id of the source.
        id: u32,
        /// m³/s.
        rate: f32,
    },
    /// [`crate::Simulation::remove_source`].
    RemoveSource {
        /// The server's id of the source.
        id: u32,
    },
}

impl Edit {
    /// Whether a late joiner needs this edit replayed: it changes the ground or the springs,
    /// which the water it receives does not carry.
    pub fn replayed_on_join(&self) -> bool {
        !matches!(self, Edit::AddWater { .. } | Edit::RemoveWater { .. })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let (tag, id, floats): (u8, Option<u32>, Vec<f32>) = match *self {
            Edit::AddWater { x, z, volume, radius } => (1, None, vec![x, z, volume, radius]),
            Edit::RemoveWater { x, z, volume, radius } => (2, None, vec![x, z, volume, radius]),
            Edit::ModifyTerrain { x, z, delta_height, radius } => (3, None, vec![x, z, delta_height, radius]),
            Edit::AddSource { id, x, z, rate, radius } => (4, Some(id), vec![x, z, rate, radius]),
            Edit::SetSourceRate { id, rate } => (5, Some(id), vec![rate]),
            Edit::RemoveSource { id } => (6, Some(id), vec![]),
        };
        out.push(tag);
        if let Some(id) = id {
            out.extend_from_slice(&id.to_le_bytes());
        }
        for f in floats {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }

    fn decode(r: &mut codec::Reader) -> Result<Edit> {
        let tag = r.u8("edit kind")?;
        let id = if (4..=6).contains(&tag) { r.take(4, "source id")?.iter().rev().fold(0u32, |id, &b| id << 8 | b as u32) } else { 0 };
        Ok(match tag {
            1 => Edit::AddWater { x: r.f32("x")?, z: r.f32("z")?, volume: r.f32("volume")?, radius: r.f32("radius")? },
            2 => Edit::RemoveWater { x: r.f32("x")?, z: r.f32("z")?, volume: r.f32("volume")?, radius: r.f32("radius")? },
            3 => Edit::ModifyTerrain { x: r.f32("x")?, z: r.f32("z")?, delta_height: r.f32("delta_height")?, radius: r.f32("radius")? },
            4 => Edit::AddSource { id, x: r.f32("x")?, z: r.f32("z")?, rate: r.f32("rate")?, radius: r.f32("radius")? },
            5 => Edit::SetSourceRate { id, rate: r.f32("rate")? },
            6 => Edit::RemoveSource { id },
            other => return Err(Error::invalid("edit kind", other, "1 ..= 6")),
        })
    }
}

/// A hash of a tile's values ([`gather_tile_values`]: depths, then the flows' bits): with the
/// total quanta it tells a client whether its copy is the server's. The wrapping sum over the
/// values of a mix of each value and its place, so that a GPU computes it as it compares a tile,
/// summing the cells in any order (`shaders/tile_changes.wgsl`, `hash_term`), and the server
/// numbers a changed tile without reading its water. A single changed value always changes it
/// (each term is a bijection of its value); two changes cancel with a chance of 2⁻³².
pub fn tile_hash(values: &[i32]) -> u32 {
    values.iter().enumerate().fold(0u32, |h, (k, &v)| h.wrapping_add(tile_hash_term(k as u32, v as u32)))
}

/// Value `v` at place `k` of a tile's values, as [`tile_hash`] sums it (the detail layer's
/// lowbias32, which `shaders/common.wgsl` has for the device).
fn tile_hash_term(k: u32, v: u32) -> u32 {
    use crate::detail::kernel::hash;
    hash(v ^ hash(k ^ 0x9e37_79b9))
}

/// A hash of a terrain (CRC-32 of the heights' bits and the grid's size), which server and
/// client compare at the join.
pub fn terrain_hash(grid: &Grid, terrain: &[f32]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&grid.width.to_le_bytes());
    h.update(&grid.height.to_le_bytes());
    for t in terrain {
        h.update(&t.to_bits().to_le_bytes());
    }
    h.finalize()
}

/// The cells of tile `t` of `tiles`.
pub fn tile_rect(tiles: &TileGrid, t: usize) -> CellRect {
    let (tx, ty) = ((t % tiles.tiles[0] as usize) as u32, (t / tiles.tiles[0] as usize) as u32);
    let (x, y) = (tx * tiles.size[0], ty * tiles.size[1]);
    CellRect { x, y, width: (tiles.cells[0] - x).min(tiles.size[0]), height: (tiles.cells[1] - y).min(tiles.size[1]) }
}

/// Copies tile `t` of a row-major field into `out` (row-major over the tile).
pub fn gather_tile(tiles: &TileGrid, field: &[i32], t: usize, out: &mut Vec<i32>) {
    let r = tile_rect(tiles, t);
    out.clear();
    let w = tiles.cells[0] as usize;
    for y in r.y..r.y + r.height {
        let start = y as usize * w + r.x as usize;
        out.extend_from_slice(&field[start..start + r.width as usize]);
    }
}

/// Copies tile `t`'s depths and pipe flows into `out` as [`codec::VALUES_PER_CELL`] planes of
/// the tile's cells (row-major): depths (quanta), then the bits of the E, S, SE and SW flows.
pub fn gather_tile_values(tiles: &TileGrid, depth: &[i32], flow: &[[f32; 4]], t: usize, out: &mut Vec<i32>) {
    let r = tile_rect(tiles, t);
    out.clear();
    let w = tiles.cells[0] as usize;
    for y in r.y..r.y + r.height {
        let start = y as usize * w + r.x as usize;
        out.extend_from_slice(&depth[start..start + r.width as usize]);
    }
    for pipe in 0..4 {
        for y in r.y..r.y + r.height {
            let start = y as usize * w + r.x as usize;
            out.extend(flow[start..start + r.width as usize].iter().map(|f| f[pipe].to_bits() as i32));
        }
    }
}

/// The depths (the first plane) of a tile's values ([`gather_tile_values`]).
pub fn tile_values_depth(values: &[i32]) -> &[i32] {
    &values[..values.len() / codec::VALUES_PER_CELL]
}

/// The flow of cell `i` of a tile of `cells` cells from its values ([`gather_tile_values`]).
pub fn tile_values_flow(values: &[i32], cells: usize, i: usize) -> [f32; 4] {
    std::array::from_fn(|pipe| f32::from_bits(values[(pipe + 1) * cells + i] as u32))
}

/// Writes `values` (row-major over tile `t`) into a row-major field.
pub fn scatter_tile(tiles: &TileGrid, field: &mut [i32], t: usize, values: &[i32]) {
    let r = tile_rect(tiles, t);
    let w = tiles.cells[0] as usize;
    for (row, y) in (r.y..r.y + r.height).enumerate() {
        let start = y as usize * w + r.x as usize;
        field[start..start + r.width as usize].copy_from_slice(&values[row * r.width as usize..(row + 1) * r.width as usize]);
    }
}

/// Moves a client's own water (`local`, quanta) towards the server's (`target`) so that a
/// correction does not pop: when no cell is more than `snap_quanta` off, every cell takes the
/// target exactly (a step too small to see); otherwise each cell moves by `fraction`
/// (`0 < fraction ≤ 1`) of its difference, at least one quantum. Returns whether `local` now
/// equals `target`. Called once a frame per tile being corrected, it converges in about
/// `ln(max difference / snap) / fraction` frames.
pub fn blend_toward(local: &mut [i32], target: &[i32], snap_quanta: i32, fraction: f32) -> bool {
    let worst = local.iter().zip(target).map(|(&l, &t)| (t as i64 - l as i64).unsigned_abs()).max().unwrap_or(0);
    if worst <= snap_quanta.max(0) as u64 {
        local.copy_from_slice(target);
        return true;
    }
    let fraction = if fraction.is_finite() { fraction.clamp(1.0e-3, 1.0) } else { 1.0 } as f64;
    for (l, &t) in local.iter_mut().zip(target) {
        let diff = t as i64 - *l as i64;
        if diff != 0 {
            let step = ((diff as f64 * fraction).round() as i64).clamp(-diff.abs(), diff.abs());
            let step = if step == 0 { diff.signum() } else { step };
            *l = (*l as i64 + step) as i32;
        }
    }
    false
}
