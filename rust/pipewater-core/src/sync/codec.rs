//! The wire format: packets, and the tile payload (a delta against a base, compressed).
//!
//! Every packet starts with [`MAGIC`], [`PROTOCOL_VERSION`], its kind and the sender's sequence
//! number; integers are little-endian. No packet is longer than [`MAX_PACKET_BYTES`], so each
//! fits one unfragmented ENet packet on a 1280-byte path MTU (ENet's own headers and the one
//! byte `SceneMultiplayer` puts before `send_bytes` payloads come on top).
//!
//! Decoding checks everything a packet claims (lengths, counts, finite numbers, which side
//! may send the kind) before returning it; it never allocates more than the packet's own size
//! except for a tile payload, whose decompressed size is bounded by the tile's cell count.

use super::Edit;
use crate::error::{Error, Result};

/// First bytes of every sync packet.
pub const MAGIC: [u8; 3] = *b"PWS";
/// Version of this wire format; a packet of another version is refused (with both versions
/// named, so a peer of an older build is told to update). 2: tiles carry their pipes' flows
/// and the server frame they describe; edits carry their frame; the frame log ([`Packet::Frames`]).
/// 3: checksums carry [`super::tile_hash`]'s sum of mixed values, which a GPU computes, instead
/// of CRC-32.
pub const PROTOCOL_VERSION: u8 = 3;
/// Most bytes of one packet (header included).
pub const MAX_PACKET_BYTES: usize = 1200;
/// Bytes of the header: magic, version, kind, sequence.
pub const HEADER_BYTES: usize = 3 + 1 + 1 + 4;
/// Bytes of a tile chunk's own header: tile, base, version, frame, raw length, index, count, data length.
pub const CHUNK_HEADER_BYTES: usize = 4 + 4 + 4 + 8 + 4 + 2 + 2 + 2;
/// Most compressed payload bytes in one chunk.
pub const MAX_CHUNK_DATA: usize = MAX_PACKET_BYTES - HEADER_BYTES - CHUNK_HEADER_BYTES;
/// Bytes of one checksum entry: tile, version, total quanta, hash.
pub const CHECKSUM_ENTRY_BYTES: usize = 4 + 4 + 8 + 4;
/// Most checksum entries in one packet.
pub const MAX_CHECKSUMS_PER_PACKET: usize = (MAX_PACKET_BYTES - HEADER_BYTES - 2) / CHECKSUM_ENTRY_BYTES;
/// Most acknowledgements (tile, version) in one packet.
pub const MAX_ACKS_PER_PACKET: usize = (MAX_PACKET_BYTES - HEADER_BYTES - 2) / 8;
/// Most tiles named in one resync request.
pub const MAX_RESYNC_PER_PACKET: usize = (MAX_PACKET_BYTES - HEADER_BYTES - 2) / 4;
/// Most focus points a client reports (camera, player, …).
pub const MAX_FOCUS_POINTS: usize = 8;
/// Most bytes of a refusal's reason (UTF-8); longer reasons are cut at a character boundary.
pub const MAX_REASON_BYTES: usize = 256;
/// Bytes a varint of one `i32` takes at most.
const MAX_VARINT_BYTES: usize = 5;
/// Values a tile carries per cell: its depth (quanta) and the bits of its four pipes' flows
/// (E, S, SE, SW, [`crate::State::flow`]), each field a plane of the tile's cells in that order.
/// The flows travel as their exact `f32` bits: the client's next step reads them, and any
/// rounding would make its water run differently from the server's.
pub const VALUES_PER_CELL: usize = 5;
/// Most frames one [`Packet::Frames`] carries.
pub const MAX_FRAMES_PER_PACKET: usize = (MAX_PACKET_BYTES - HEADER_BYTES - 8 - 2) / 8;
/// Most steps of one server frame ([`crate::Params::max_substeps`]'s range).
pub const MAX_FRAME_SUBSTEPS: u32 = 100_000;

/// What the server tells a client that said hello.
#[derive(Debug, Clone, PartialEq)]
pub struct Welcome {
    /// Grid cells along x and y: the client's grid must match.
    pub cells: [u32; 2],
    /// Cells of a tile along each side (the unit of sync).
    pub tile_size: u32,
    /// [`super::terrain_hash`] of the server's terrain at its start (before any edit): a client
    /// whose terrain differs cannot show the server's water.
    pub terrain_hash: u32,
    /// Sequence number of the next edit the server will apply.
    pub next_edit_seq: u32,
    /// Earlier edits (terrain, sources) the server sends again, with their own sequence numbers
    /// below `next_edit_seq`, so that a late joiner's ground and springs match.
    pub replay_count: u32,
    /// Frames the server's water had run ([`crate::Simulation::frames`]) when the water its
    /// keyframe carries was taken: the client's clock starts here, and [`Packet::Frames`]
    /// continues from it.
    pub frame: u64,
}

/// One piece of a tile's update: the tile's compressed payload is cut into chunks of at most
/// [`MAX_CHUNK_DATA`] bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct TileChunk {
    /// Tile index, row-major over the tile grid.
    pub tile: u32,
    /// Version of the tile the delta is taken against; 0 for the whole tile (a keyframe).
    pub base: u32,
    /// Version the tile has after the update.
    pub version: u32,
    /// Server frames run when the tile was taken: the client applies it once its own water has
    /// run as many.
    pub frame: u64,
    /// Bytes of the uncompressed payload.
    pub raw_len: u32,
    /// This chunk's index, `0 .. count`.
    pub index: u16,
    /// Chunks of this update.
    pub count: u16,
    /// The chunk's compressed bytes.
    pub data: Vec<u8>,
}

/// A tile's checksum at a version: what the server holds, for a client to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileChecksum {
    /// Tile index.
    pub tile: u32,
    /// The server's current version of the tile.
    pub version: u32,
    /// Sum of the tile's depths, quanta.
    pub total: i64,
    /// [`super::tile_hash`] of the tile's values (depths and flows' bits).
    pub hash: u32,
}

/// Every packet of the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Packet {
    /// Server → client: the session's layout, in answer to [`Packet::Hello`] (reliable).
    Welcome(Welcome),
    /// Server → client: part of a tile's update (unreliable).
    TileChunk(TileChunk),
    /// Server → client: checksums of tiles (unreliable).
    Checksums(Vec<TileChecksum>),
    /// Server → client: an edit the server applied, in step order (reliable).
    EditApplied {
        /// Sequence number: edits reach the game in this order.
        seq: u32,
        /// Peer that asked for it (1: the server itself).
        peer: i32,
        /// Server frames run before the edit was applied: the client applies it after running
        /// as many.
        frame: u64,
        /// The edit.
        edit: Edit,
    },
    /// Server → client: an edit request the game refused (reliable).
    EditRefused {
        /// The client's request id.
        request: u32,
        /// Why, as the game said it.
        reason: String,
    },
    /// Server → client: the step length (s) and step count of each server frame from `first`
    /// on, which a client runs in the same order to keep the server's clock (reliable).
    Frames {
        /// Index of the first frame listed (frames run before it).
        first: u64,
        /// Per frame: step length, s, and steps.
        steps: Vec<(f32, u32)>,
    },
    /// Client → server: join, or start over (reliable).
    Hello,
    /// Client → server: tile versions the client now holds (unreliable).
    Ack(Vec<(u32, u32)>),
    /// Client → server: an edit the client asks for (reliable).
    EditRequest {
        /// The client's id for the request, echoed in a refusal.
        request: u32,
        /// The edit.
        edit: Edit,
    },
    /// Client → server: tiles to send whole again (a checksum failed); empty: every tile.
    Resync(Vec<u32>),
    /// Client → server: where the client looks, local X, Z metres (unreliable).
    Focus(Vec<[f32; 2]>),
}

/// Packet kinds on the wire.
mod kind {
    pub const WELCOME: u8 = 1;
    pub const TILE_CHUNK: u8 = 2;
    pub const CHECKSUMS: u8 = 3;
    pub const EDIT_APPLIED: u8 = 4;
    pub const EDIT_REFUSED: u8 = 5;
    pub const FRAMES: u8 = 6;
    pub const HELLO: u8 = 16;
    pub const ACK: u8 = 17;
    pub const EDIT_REQUEST: u8 = 18;
    pub const RESYNC: u8 = 19;
    pub const FOCUS: u8 = 20;
}

impl Packet {
    fn kind(&self) -> u8 {
        match self {
            Packet::Welcome(_) => kind::WELCOME,
            Packet::TileChunk(_) => kind::TILE_CHUNK,
            Packet::Checksums(_) => kind::CHECKSUMS,
            Packet::EditApplied { .. } => kind::EDIT_APPLIED,
            Packet::EditRefused { .. } => kind::EDIT_REFUSED,
            Packet::Frames { .. } => kind::FRAMES,
            Packet::Hello => kind::HELLO,
            Packet::Ack(_) => kind::ACK,
            Packet::EditRequest { .. } => kind::EDIT_REQUEST,
            Packet::Resync(_) => kind::RESYNC,
            Packet::Focus(_) => kind::FOCUS,
        }
    }

    /// The kind's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Packet::Welcome(_) => "welcome",
            Packet::TileChunk(_) => "tile chunk",
            Packet::Checksums(_) => "checksums",
            Packet::EditApplied { .. } => "edit applied",
            Packet::EditRefused { .. } => "edit refused",
            Packet::Frames { .. } => "frames",
            Packet::Hello => "hello",
            Packet::Ack(_) => "ack",
            Packet::EditRequest { .. } => "edit request",
            Packet::Resync(_) => "resync",
            Packet::Focus(_) => "focus",
        }
    }

    /// Whether only the server may send this kind.
    pub fn from_server(&self) -> bool {
        self.kind() < kind::HELLO
    }

    /// The packet's bytes, with sender sequence number `seq`. Fails if it would exceed
    /// [`MAX_PACKET_BYTES`] (too many entries, a chunk too long).
    pub fn encode(&self, seq: u32) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&MAGIC);
        out.push(PROTOCOL_VERSION);
        out.push(self.kind());
        put_u32(&mut out, seq);
        match self {
            Packet::Welcome(w) => {
                for v in [w.cells[0], w.cells[1], w.tile_size, w.terrain_hash, w.next_edit_seq, w.replay_count] {
                    put_u32(&mut out, v);
                }
                out.extend_from_slice(&w.frame.to_le_bytes());
            }
            Packet::TileChunk(c) => {
                for v in [c.tile, c.base, c.version] {
                    put_u32(&mut out, v);
                }
                out.extend_from_slice(&c.frame.to_le_bytes());
                put_u32(&mut out, c.raw_len);
                out.extend_from_slice(&c.index.to_le_bytes());
                out.extend_from_slice(&c.count.to_le_bytes());
                out.extend_from_slice(&(c.data.len().min(u16::MAX as usize) as u16).to_le_bytes());
                out.extend_from_slice(&c.data);
            }
            Packet::Checksums(entries) => {
                put_count(&mut out, entries.len(), MAX_CHECKSUMS_PER_PACKET, "checksum entries")?;
                for e in entries {
                    put_u32(&mut out, e.tile);
                    put_u32(&mut out, e.version);
                    out.extend_from_slice(&e.total.to_le_bytes());
                    put_u32(&mut out, e.hash);
                }
            }
            Packet::EditApplied { seq, peer, frame, edit } => {
                put_u32(&mut out, *seq);
                out.extend_from_slice(&peer.to_le_bytes());
                out.extend_from_slice(&frame.to_le_bytes());
                edit.encode(&mut out);
            }
            Packet::Frames { first, steps } => {
                out.extend_from_slice(&first.to_le_bytes());
                put_count(&mut out, steps.len(), MAX_FRAMES_PER_PACKET, "frames")?;
                for &(step, substeps) in steps {
                    out.extend_from_slice(&step.to_le_bytes());
                    put_u32(&mut out, substeps);
                }
            }
            Packet::EditRefused { request, reason } => {
                put_u32(&mut out, *request);
                let mut cut = reason.len().min(MAX_REASON_BYTES);
                while !reason.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.extend_from_slice(&(cut as u16).to_le_bytes());
                out.extend_from_slice(&reason.as_bytes()[..cut]);
            }
            Packet::Hello => {}
            Packet::Ack(entries) => {
                put_count(&mut out, entries.len(), MAX_ACKS_PER_PACKET, "acknowledgements")?;
                for &(tile, version) in entries {
                    put_u32(&mut out, tile);
                    put_u32(&mut out, version);
                }
            }
            Packet::EditRequest { request, edit } => {
                put_u32(&mut out, *request);
                edit.encode(&mut out);
            }
            Packet::Resync(tiles) => {
                put_count(&mut out, tiles.len(), MAX_RESYNC_PER_PACKET, "resync tiles")?;
                for &t in tiles {
                    put_u32(&mut out, t);
                }
            }
            Packet::Focus(points) => {
                put_count(&mut out, points.len(), MAX_FOCUS_POINTS, "focus points")?;
                for p in points {
                    out.extend_from_slice(&p[0].to_le_bytes());
                    out.extend_from_slice(&p[1].to_le_bytes());
                }
            }
        }
        if out.len() > MAX_PACKET_BYTES {
            return Err(Error::invalid("packet", format!("{} bytes", out.len()), format!("at most {MAX_PACKET_BYTES} bytes")));
        }
        Ok(out)
    }

    /// The packet in `bytes` and its sequence number. Refuses, with an error naming what is
    /// wrong, a packet that is not ours, of another version, of an unknown kind, of the wrong
    /// length, with a count past its limit, or with a number that is not finite.
    pub fn decode(bytes: &[u8]) -> Result<(Packet, u32)> {
        if bytes.len() > MAX_PACKET_BYTES {
            return Err(Error::invalid("packet", format!("{} bytes", bytes.len()), format!("at most {MAX_PACKET_BYTES} bytes")));
        }
        let mut r = Reader { bytes, at: 0 };
        let magic = r.take(3, "packet magic")?;
        if magic != MAGIC {
            return Err(Error::invalid("packet magic", format!("{magic:?}"), format!("{MAGIC:?} (\"PWS\")")));
        }
        let version = r.u8("packet version")?;
        if version != PROTOCOL_VERSION {
            return Err(Error::invalid("packet version", version, format!("{PROTOCOL_VERSION} (this build's protocol: the peer runs another PipeWater version; update both sides to the same one)")));
        }
        let kind = r.u8("packet kind")?;
        let seq = r.u32("packet sequence")?;
        let packet = match kind {
            kind::WELCOME => {
                let mut v = [0u32; 6];
                for x in &mut v {
                    *x = r.u32("welcome")?;
                }
                Packet::Welcome(Welcome { cells: [v[0], v[1]], tile_size: v[2], terrain_hash: v[3], next_edit_seq: v[4], replay_count: v[5], frame: r.u64("welcome frame")? })
            }
            kind::TILE_CHUNK => {
                let (tile, base, version, frame, raw_len) = (r.u32("tile")?, r.u32("base")?, r.u32("version")?, r.u64("frame")?, r.u32("raw_len")?);
                let (index, count, len) = (r.u16("chunk index")?, r.u16("chunk count")?, r.u16("chunk length")? as usize);
                if count == 0 || index >= count {
                    return Err(Error::invalid("chunk index", format!("{index} of {count}"), "0 ..= count − 1, count ≥ 1"));
                }
                if version == 0 || base >= version {
                    return Err(Error::invalid("version", format!("{version} from base {base}"), "≥ 1 and above the base"));
                }
                let data = r.take(len, "chunk data")?.to_vec();
                Packet::TileChunk(TileChunk { tile, base, version, frame, raw_len, index, count, data })
            }
            kind::CHECKSUMS => {
                let n = r.count(MAX_CHECKSUMS_PER_PACKET, CHECKSUM_ENTRY_BYTES, "checksum entries")?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let (tile, version) = (r.u32("tile")?, r.u32("version")?);
                    let total = i64::from_le_bytes(r.array("total")?);
                    entries.push(TileChecksum { tile, version, total, hash: r.u32("hash")? });
                }
                Packet::Checksums(entries)
            }
            kind::EDIT_APPLIED => {
                let seq = r.u32("edit seq")?;
                let peer = i32::from_le_bytes(r.array("peer")?);
                let frame = r.u64("edit frame")?;
                Packet::EditApplied { seq, peer, frame, edit: Edit::decode(&mut r)? }
            }
            kind::FRAMES => {
                let first = r.u64("first frame")?;
                let n = r.count(MAX_FRAMES_PER_PACKET, 8, "frames")?;
                let mut steps = Vec::with_capacity(n);
                for _ in 0..n {
                    let step = r.f32("frame step")?;
                    if !(crate::simulation::MIN_STEP..=crate::simulation::MAX_STEP_LENGTH).contains(&step) {
                        return Err(Error::invalid("frame step", step, format!("{} ..= {} s", crate::simulation::MIN_STEP, crate::simulation::MAX_STEP_LENGTH)));
                    }
                    let substeps = r.u32("frame substeps")?;
                    if !(1..=MAX_FRAME_SUBSTEPS).contains(&substeps) {
                        return Err(Error::invalid("frame substeps", substeps, format!("1 ..= {MAX_FRAME_SUBSTEPS}")));
                    }
                    steps.push((step, substeps));
                }
                if first.checked_add(n as u64).is_none() {
                    return Err(Error::invalid("first frame", first, format!("0 ..= {} with {n} frames", u64::MAX - n as u64)));
                }
                Packet::Frames { first, steps }
            }
            kind::EDIT_REFUSED => {
                let request = r.u32("request")?;
                let len = r.u16("reason length")? as usize;
                if len > MAX_REASON_BYTES {
                    return Err(Error::invalid("reason length", len, format!("0 ..= {MAX_REASON_BYTES} bytes")));
                }
                let reason = String::from_utf8_lossy(r.take(len, "reason")?).into_owned();
                Packet::EditRefused { request, reason }
            }
            kind::HELLO => Packet::Hello,
            kind::ACK => {
                let n = r.count(MAX_ACKS_PER_PACKET, 8, "acknowledgements")?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((r.u32("tile")?, r.u32("version")?));
                }
                Packet::Ack(entries)
            }
            kind::EDIT_REQUEST => {
                let request = r.u32("request")?;
                Packet::EditRequest { request, edit: Edit::decode(&mut r)? }
            }
            kind::RESYNC => {
                let n = r.count(MAX_RESYNC_PER_PACKET, 4, "resync tiles")?;
                let mut tiles = Vec::with_capacity(n);
                for _ in 0..n {
                    tiles.push(r.u32("tile")?);
                }
                Packet::Resync(tiles)
            }
            kind::FOCUS => {
                let n = r.count(MAX_FOCUS_POINTS, 8, "focus points")?;
                let mut points = Vec::with_capacity(n);
                for _ in 0..n {
                    points.push([r.f32("focus x")?, r.f32("focus z")?]);
                }
                Packet::Focus(points)
            }
            other => return Err(Error::invalid("packet kind", other, "1 ..= 6 (server) or 16 ..= 20 (client)")),
        };
        if r.at != bytes.len() {
            return Err(Error::invalid("packet length", format!("{} bytes", bytes.len()), format!("{} bytes for this packet", r.at)));
        }
        Ok((packet, seq))
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_count(out: &mut Vec<u8>, n: usize, max: usize, what: &'static str) -> Result<()> {
    if n > max {
        return Err(Error::invalid(what, n, format!("0 ..= {max} per packet")));
    }
    out.extend_from_slice(&(n as u16).to_le_bytes());
    Ok(())
}

/// Reads a packet, failing with the name of the field that runs past its end.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(Error::invalid(what, format!("{n} bytes at offset {}", self.at), format!("within the packet's {} bytes", self.bytes.len())));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A finite `f32`.
    pub(super) fn f32(&mut self, what: &'static str) -> Result<f32> {
        let v = f32::from_le_bytes(self.array(what)?);
        if !v.is_finite() {
            return Err(Error::invalid(what, v, "a finite number"));
        }
        Ok(v)
    }

    /// A `u16` count of entries of `entry` bytes each: at most `max`, and no more than the
    /// packet holds (so that nothing is allocated for entries that are not there).
    fn count(&mut self, max: usize, entry: usize, what: &'static str) -> Result<usize> {
        let n = self.u16(what)? as usize;
        let room = (self.bytes.len() - self.at) / entry;
        if n > max || n > room {
            return Err(Error::invalid(what, n, format!("0 ..= {} (at most {max} per packet, {room} fit in this one)", max.min(room))));
        }
        Ok(n)
    }
}

/// Most bytes the uncompressed payload of a tile of `cells` cells can take.
pub fn max_raw_len(cells: usize) -> usize {
    cells * MAX_VARINT_BYTES
}

/// The uncompressed payload of a tile's update from `base` to `values` (same length, row-major
/// over a tile `width` cells wide): each cell's wrapping difference from its base, minus the
/// difference of the cell to its left (so that a smooth change is a run of small numbers),
/// zigzag-coded as LEB128 varints. A cell that did not change costs one byte, and lz4 folds
/// the runs of them.
pub fn encode_tile_raw(values: &[i32], base: Option<&[i32]>, width: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() + 16);
    let mut left = 0i32;
    for (i, &v) in values.iter().enumerate() {
        let delta = v.wrapping_sub(base.map_or(0, |b| b[i]));
        let residual = if i % width.max(1) == 0 { delta } else { delta.wrapping_sub(left) };
        left = delta;
        let mut z = ((residual << 1) ^ (residual >> 31)) as u32;
        loop {
            let byte = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// The tile `values` that `raw` ([`encode_tile_raw`]) makes from `base`: exactly `cells` varints
/// filling `raw`, or an error (a varint too long or cut short, bytes left over, too few cells).
pub fn decode_tile_raw(raw: &[u8], base: Option<&[i32]>, cells: usize, width: usize) -> Result<Vec<i32>> {
    let mut values = Vec::with_capacity(cells);
    let (mut at, mut left) = (0usize, 0i32);
    for i in 0..cells {
        let mut z = 0u32;
        let mut shift = 0;
        loop {
            let Some(&byte) = raw.get(at) else {
                return Err(Error::invalid("tile payload", format!("{} bytes", raw.len()), format!("{cells} varints (cut short at cell {i})")));
            };
            at += 1;
            if shift == 28 && byte > 0x0f {
                return Err(Error::invalid("tile payload", format!("a varint at byte {}", at - 1), "varints of at most 32 bits"));
            }
            z |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let residual = ((z >> 1) as i32) ^ -((z & 1) as i32);
        let delta = if i % width.max(1) == 0 { residual } else { residual.wrapping_add(left) };
        left = delta;
        values.push(base.map_or(0, |b| b[i]).wrapping_add(delta));
    }
    if at != raw.len() {
        return Err(Error::invalid("tile payload", format!("{} bytes", raw.len()), format!("{at} bytes for {cells} cells")));
    }
    Ok(values)
}

/// [`encode_tile_raw`] compressed with lz4 (block format; the raw length travels in the chunk
/// header). Returns the raw length and the compressed bytes.
pub fn encode_tile(values: &[i32], base: Option<&[i32]>, width: usize) -> (usize, Vec<u8>) {
    let raw = encode_tile_raw(values, base, width);
    (raw.len(), lz4_flex::block::compress(&raw))
}

/// The tile that `compressed` (from [`encode_tile`], `raw_len` bytes uncompressed) makes from
/// `base`. Refuses a `raw_len` past what a tile of `cells` cells can take before allocating
/// (a decompression bomb), and any payload that does not decompress to exactly `raw_len` bytes.
pub fn decode_tile(compressed: &[u8], raw_len: usize, base: Option<&[i32]>, cells: usize, width: usize) -> Result<Vec<i32>> {
    if raw_len > max_raw_len(cells) || raw_len < cells {
        return Err(Error::invalid("raw_len", raw_len, format!("{cells} ..= {} bytes for a tile of {cells} cells", max_raw_len(cells))));
    }
    if compressed.len() > lz4_flex::block::get_maximum_output_size(raw_len) {
        return Err(Error::invalid("tile payload", format!("{} compressed bytes", compressed.len()), format!("at most {} for {raw_len} raw bytes", lz4_flex::block::get_maximum_output_size(raw_len))));
    }
    let raw = lz4_flex::block::decompress(compressed, raw_len).map_err(|e| Error::invalid("tile payload", format!("{} compressed bytes", compressed.len()), format!("an lz4 block ({e})")))?;
    if raw.len() != raw_len {
        return Err(Error::invalid("tile payload", format!("{} decompressed bytes", raw.len()), format!("{raw_len} bytes, as raw_len says")));
    }
    decode_tile_raw(&raw, base, cells, width)
}
