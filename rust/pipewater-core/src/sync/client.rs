//! The client's side: its exact copy of the server's tiles, the updates being reassembled, the
//! acknowledgements and requests to send, and the server's edits in order.

use super::codec::{decode_tile, max_raw_len, Packet, TileChecksum, TileChunk, Welcome, MAX_ACKS_PER_PACKET, MAX_CHUNK_DATA, MAX_RESYNC_PER_PACKET, VALUES_PER_CELL};
use super::{tile_hash, tile_rect, tile_values_depth, scatter_tile, Edit, Outgoing, SERVER_PEER};
use crate::backend::sleep::TileGrid;
use crate::error::{Error, Result};
use crate::grid::{CellRect, Grid};
use crate::quanta::MAX_DEPTH_QUANTA;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// Versions of a tile a client keeps: deltas in flight may be against any of them.
const MAX_VERSIONS_PER_TILE: usize = 8;
/// Most edits a client holds waiting for an earlier one.
const MAX_BUFFERED_EDITS: usize = 65_536;
/// Seconds between hellos while no welcome came.
const HELLO_INTERVAL: f64 = 1.0;
/// Seconds between focus reports.
const FOCUS_INTERVAL: f64 = 0.25;
/// Most frames of the server's clock a client holds not yet run (18 minutes at 60 Hz).
const MAX_PENDING_FRAMES: usize = 65_536;

/// A tile update whose chunks are still arriving.
#[derive(Debug)]
struct Partial {
    base: u32,
    raw_len: u32,
    chunks: Vec<Option<Vec<u8>>>,
    received: usize,
    /// Order of arrival, to drop the oldest when too many are open.
    born: u64,
}

/// What a server packet did.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// The server welcomed the client: the copy starts empty and fills as tiles arrive.
    Welcomed,
    /// A tile now holds a newer version of the server's water.
    TileUpdated(usize),
    /// A tile's checksum did not match the server's: the tile was dropped and asked for again.
    ChecksumMismatch(usize),
    /// Edits are ready in order ([`SyncClient::take_edits`]).
    EditsReady,
    /// The server refused an edit request.
    Refused {
        /// The request's id ([`SyncClient::request_edit`]).
        request: u32,
        /// The game's reason.
        reason: String,
    },
}

/// Figures about what a client received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Packets accepted.
    pub packets: u64,
    /// Bytes of accepted packets.
    pub bytes: u64,
    /// Tile updates applied.
    pub tiles_applied: u64,
    /// Tile chunks ignored as late, doubled, or against a base the client no longer has.
    pub stale_chunks: u64,
    /// Tiles whose checksum failed.
    pub checksum_mismatches: u64,
    /// Server packets ignored because no welcome had come yet.
    pub before_welcome: u64,
    /// Frames of the server's clock skipped because the server no longer had them.
    pub frames_skipped: u64,
}

/// The client's side of water sync.
#[derive(Debug)]
pub struct SyncClient {
    grid: Grid,
    terrain_hash: u32,
    tiles: Option<TileGrid>,
    /// Per tile, its versions (version, server frame, values as [`super::gather_tile_values`]
    /// lays them out), oldest first; the last is the current copy. Empty: not received.
    versions: Vec<Vec<(u32, u64, Arc<[i32]>)>>,
    /// Updates being reassembled, by tile, version and base (a tile's version can be sent
    /// against several bases as acknowledgements arrive).
    partials: HashMap<(u32, u32, u32), Partial>,
    born: u64,
    acks: BTreeMap<u32, u32>,
    /// An update the client already had came again: the server did not hear its
    /// acknowledgement, so the next goes reliable (a link may drop every unreliable packet).
    acks_again: bool,
    seq: u32,
    reliable: VecDeque<Packet>,
    next_request: u32,
    focus: Vec<[f32; 2]>,
    focus_sent_at: f64,
    hello_sent_at: Option<f64>,
    next_edit_seq: u32,
    replay_expected: u32,
    replay: BTreeMap<u32, (i32, Edit, u64)>,
    replay_done: bool,
    live: BTreeMap<u32, (i32, Edit, u64)>,
    ready: Vec<(u32, i32, Edit, u64)>,
    corrections: Vec<bool>,
    /// Tiles whose copy a checksum found still the server's current water.
    confirmations: Vec<bool>,
    /// Per tile, the first copy received since the welcome (the keyframe's), kept until the
    /// water starts from it ([`SyncClient::forget_first_copies`]) however many follow.
    first_copies: Vec<Option<(u64, Arc<[i32]>)>>,
    stats: ClientStats,
    /// The server's frames not yet run: `frames[0]` is frame `next_frame`.
    frames: VecDeque<(f32, u32)>,
    next_frame: u64,
}

impl SyncClient {
    /// A client whose own water runs on `grid` over a terrain that hashes to `terrain_hash`
    /// ([`super::terrain_hash`] of the terrain before any edit): the server's must match.
    pub fn new(grid: Grid, terrain_hash: u32) -> Self {
        SyncClient {
            grid,
            terrain_hash,
            tiles: None,
            versions: Vec::new(),
            partials: HashMap::new(),
            born: 0,
            acks: BTreeMap::new(),
            acks_again: false,
            seq: 0,
            reliable: VecDeque::new(),
            next_request: 1,
            focus: Vec::new(),
            focus_sent_at: f64::NEG_INFINITY,
            hello_sent_at: None,
            next_edit_seq: 1,
            replay_expected: 0,
            replay: BTreeMap::new(),
            replay_done: false,
            live: BTreeMap::new(),
            ready: Vec::new(),
            corrections: Vec::new(),
            confirmations: Vec::new(),
            first_copies: Vec::new(),
            stats: ClientStats::default(),
            frames: VecDeque::new(),
            next_frame: 0,
        }
    }

    /// The next frame of the server's clock to run, and its step length (s) and steps, when
    /// the server has told it; taking it says the client's water runs it now.
    pub fn take_frame(&mut self) -> Option<(u64, f32, u32)> {
        let (step, substeps) = self.frames.pop_front()?;
        self.next_frame += 1;
        Some((self.next_frame - 1, step, substeps))
    }

    /// Index of the next frame of the server's clock the client's water runs (frames run so
    /// far, counted as the server counts them).
    pub fn next_frame(&self) -> u64 {
        self.next_frame
    }

    /// Moves the clock to `frame` without running the frames before it (the water was set to
    /// the server's at that frame): they are dropped. Does nothing for a frame already passed.
    pub fn skip_to(&mut self, frame: u64) {
        while self.next_frame < frame && self.frames.pop_front().is_some() {
            self.next_frame += 1;
        }
        self.next_frame = self.next_frame.max(frame);
    }

    /// Frames the server told of that the client has not run yet.
    pub fn frames_pending(&self) -> usize {
        self.frames.len()
    }

    /// Forgets the session (the connection was lost, or the server went away): the copy,
    /// updates half received and buffered edits are dropped, and the next poll says hello again.
    pub fn reset(&mut self) {
        let stats = self.stats;
        *self = SyncClient::new(self.grid, self.terrain_hash);
        self.stats = stats;
    }

    /// The tiles, once welcomed.
    pub fn tiles(&self) -> Option<TileGrid> {
        self.tiles
    }

    /// The cells of tile `t`, once welcomed.
    pub fn tile_rect(&self, t: usize) -> Option<CellRect> {
        self.tiles.filter(|g| t < g.count()).map(|g| tile_rect(&g, t))
    }

    /// The server's depths of tile `t` (quanta, row-major over the tile) as last received, and
    /// their version; `None` before the tile's first update.
    pub fn tile_depths(&self, t: usize) -> Option<(u32, &[i32])> {
        self.versions.get(t)?.last().map(|(v, _, d)| (*v, tile_values_depth(d)))
    }

    /// The server's water of tile `t` as last received: its version, the server frame it
    /// describes and its values (depths and flows' bits, [`super::gather_tile_values`]).
    pub fn tile_values(&self, t: usize) -> Option<(u32, u64, &[i32])> {
        self.versions.get(t)?.last().map(|(v, f, d)| (*v, *f, &**d))
    }

    /// The newest copy of tile `t` described a frame the client's water had already run, so it
    /// was not set (the first send of a tile that then stopped changing was lost, say, and the
    /// resend came late): it is forgotten and not acknowledged, so that the server sends the
    /// tile again, stamped with its newest capture's frame, which the client has not run yet.
    /// Where the acknowledgement already went out, the tile is asked for whole instead.
    /// Without this the client held the copy, acknowledged, while its water never took it.
    pub fn forget_late_copy(&mut self, t: usize) {
        let Some(&(version, _, _)) = self.versions.get(t).and_then(|v| v.last()) else { return };
        if self.acks.get(&(t as u32)) == Some(&version) {
            self.acks.remove(&(t as u32));
            self.versions[t].pop();
        } else {
            self.versions[t].clear();
            self.acks.remove(&(t as u32));
            self.reliable.push_back(Packet::Resync(vec![t as u32]));
        }
    }

    /// The newest kept copy of tile `t` that describes the water after exactly `frame` server
    /// frames: its version, frame and values. The client keeps a few copies of each tile, so one
    /// received before the client ran its frame is still there when a newer copy has come.
    pub fn tile_values_of_frame(&self, t: usize, frame: u64) -> Option<(u32, u64, &[i32])> {
        self.versions.get(t)?.iter().rev().find(|(_, f, _)| *f == frame).map(|(v, f, d)| (*v, *f, &**d))
    }

    /// The first copy of tile `t` received since the welcome, until
    /// [`SyncClient::forget_first_copies`]: the server frame it describes and its values. The
    /// keyframe's copies all describe one frame.
    pub fn tile_first_values(&self, t: usize) -> Option<(u64, &[i32])> {
        self.first_copies.get(t)?.as_ref().map(|(f, d)| (*f, &**d))
    }

    /// Drops the keyframe's copies once the water started from them.
    pub fn forget_first_copies(&mut self) {
        self.first_copies = Vec::new();
    }

    /// Whether every tile has been received at least once.
    pub fn is_complete(&self) -> bool {
        self.tiles.is_some() && self.versions.iter().all(|v| !v.is_empty())
    }

    /// The server's water as received, row-major quanta (0 where no tile came yet).
    pub fn depths(&self) -> Vec<i32> {
        let mut field = vec![0; self.grid.cell_count()];
        if let Some(tiles) = self.tiles {
            for (t, v) in self.versions.iter().enumerate() {
                if let Some((_, _, d)) = v.last() {
                    scatter_tile(&tiles, &mut field, t, tile_values_depth(d));
                }
            }
        }
        field
    }

    /// Figures.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Where this client looks (camera, player), local X, Z metres; at most
    /// [`super::codec::MAX_FOCUS_POINTS`], finite.
    pub fn set_focus(&mut self, points: &[[f32; 2]]) -> Result<()> {
        if points.len() > super::codec::MAX_FOCUS_POINTS {
            return Err(Error::invalid("focus", format!("{} points", points.len()), format!("0 ..= {} points", super::codec::MAX_FOCUS_POINTS)));
        }
        if let Some(p) = points.iter().find(|p| !(p[0].is_finite() && p[1].is_finite())) {
            return Err(Error::invalid("focus", format!("({}, {})", p[0], p[1]), "finite local X, Z metres"));
        }
        self.focus = points.to_vec();
        Ok(())
    }

    /// Asks the server for an edit; returns the request's id, which a refusal names.
    pub fn request_edit(&mut self, edit: Edit) -> u32 {
        let request = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        self.reliable.push_back(Packet::EditRequest { request, edit });
        request
    }

    /// The server's edits that are due, in the order the server applied them: (sequence
    /// number, peer that asked, edit, server frames run before it). Apply them to the client's
    /// own water in this order, each after running its frame count (a replayed edit of a late
    /// joiner names a frame from before the join: apply it at once).
    pub fn take_edits(&mut self) -> Vec<(u32, i32, Edit, u64)> {
        std::mem::take(&mut self.ready)
    }

    /// Tiles whose copy changed since the last call: the client's own water there should be
    /// set to [`SyncClient::tile_values`] at the frame the copy describes.
    pub fn take_corrections(&mut self) -> Vec<usize> {
        let out: Vec<usize> = self.corrections.iter().enumerate().filter(|(_, &c)| c).map(|(t, _)| t).collect();
        self.corrections.fill(false);
        out
    }

    /// Tiles whose copy a checksum confirmed as the server's current water since the last
    /// call: the client's own water there should come to rest on it ([`super::blend_toward`]).
    pub fn take_confirmations(&mut self) -> Vec<usize> {
        let out: Vec<usize> = self.confirmations.iter().enumerate().filter(|(_, &c)| c).map(|(t, _)| t).collect();
        self.confirmations.fill(false);
        out
    }

    /// Changes one cell of the copy without the server: only for tests of drift detection
    /// (a copy damaged in memory, or a bug), which the checksums must catch.
    #[doc(hidden)]
    pub fn damage_copy_for_tests(&mut self, t: usize, cell: usize, delta: i32) -> bool {
        let Some((_, _, d)) = self.versions.get_mut(t).and_then(|v| v.last_mut()) else { return false };
        let mut copy = d.to_vec();
        let Some(c) = copy.get_mut(cell) else { return false };
        *c = c.wrapping_add(delta);
        *d = Arc::from(copy);
        true
    }

    /// A packet from peer `from`. Refuses (with the reason, changing nothing) anything not from
    /// the server, a kind only clients send, tiles off the grid,
    /// payloads that do not decode to a tile, and depths out of range. Server packets before the
    /// welcome are ignored.
    pub fn receive(&mut self, from: i32, bytes: &[u8]) -> Result<Option<ClientEvent>> {
        let result = self.receive_checked(from, bytes);
        if result.is_ok() {
            self.stats.packets += 1;
            self.stats.bytes += bytes.len() as u64;
        }
        result
    }

    fn receive_checked(&mut self, from: i32, bytes: &[u8]) -> Result<Option<ClientEvent>> {
        if from != SERVER_PEER {
            return Err(Error::invalid("sender", from, format!("{SERVER_PEER} (only the server sends water)")));
        }
        let (packet, _seq) = Packet::decode(bytes)?;
        if !packet.from_server() {
            return Err(Error::invalid("packet kind", packet.name(), "a server's packet (welcome, tile chunk, checksums, edit applied, edit refused, frames)"));
        }
        if let Packet::Welcome(w) = packet {
            return self.welcome(w).map(Some);
        }
        let Some(tiles) = self.tiles else {
            // The unreliable channel can overtake the welcome, and packets of a session this
            // client left can still arrive: nothing to check them against, nothing to do.
            self.stats.before_welcome += 1;
            return Ok(None);
        };
        match packet {
            Packet::TileChunk(chunk) => self.chunk(&tiles, chunk),
            Packet::Checksums(entries) => self.checksums(&tiles, &entries),
            Packet::EditApplied { seq, peer, frame, edit } => self.edit(seq, peer, frame, edit),
            Packet::Frames { first, steps } => self.frames(first, &steps),
            Packet::EditRefused { request, reason } => Ok(Some(ClientEvent::Refused { request, reason })),
            _ => unreachable!("client kinds refused above"),
        }
    }

    fn welcome(&mut self, w: Welcome) -> Result<ClientEvent> {
        if w.cells != [self.grid.width, self.grid.height] {
            return Err(Error::invalid("welcome cells", format!("{}×{}", w.cells[0], w.cells[1]), format!("{}×{} (this client's grid)", self.grid.width, self.grid.height)));
        }
        if !(8..=128).contains(&w.tile_size) {
            return Err(Error::invalid("welcome tile_size", w.tile_size, "8 ..= 128 cells"));
        }
        if w.terrain_hash != self.terrain_hash {
            return Err(Error::invalid("welcome terrain_hash", format!("{:08x}", w.terrain_hash), format!("{:08x} (this client's terrain: load the server's)", self.terrain_hash)));
        }
        if w.replay_count as usize > MAX_BUFFERED_EDITS || w.next_edit_seq == 0 {
            return Err(Error::invalid("welcome replay_count", w.replay_count, format!("0 ..= {MAX_BUFFERED_EDITS}, with next_edit_seq ≥ 1")));
        }
        if w.frame > u64::MAX / 2 {
            return Err(Error::invalid("welcome frame", w.frame, format!("0 ..= {}", u64::MAX / 2)));
        }
        let stats = self.stats;
        let (focus, hello) = (std::mem::take(&mut self.focus), self.hello_sent_at);
        // Requests not yet sent survive; the rest of the session starts over.
        let requests: Vec<Packet> = self.reliable.drain(..).filter(|p| matches!(p, Packet::EditRequest { .. })).collect();
        let next_request = self.next_request;
        *self = SyncClient::new(self.grid, self.terrain_hash);
        let tiles = TileGrid::new(w.cells[0], w.cells[1], [w.tile_size; 2]);
        self.tiles = Some(tiles);
        self.versions = vec![Vec::new(); tiles.count()];
        self.corrections = vec![false; tiles.count()];
        self.confirmations = vec![false; tiles.count()];
        self.first_copies = vec![None; tiles.count()];
        self.next_edit_seq = w.next_edit_seq;
        self.replay_expected = w.replay_count;
        self.replay_done = w.replay_count == 0;
        self.stats = stats;
        self.focus = focus;
        self.hello_sent_at = hello;
        self.reliable.extend(requests);
        self.next_request = next_request;
        self.next_frame = w.frame;
        Ok(ClientEvent::Welcomed)
    }

    fn frames(&mut self, first: u64, steps: &[(f32, u32)]) -> Result<Option<ClientEvent>> {
        let known_end = self.next_frame + self.frames.len() as u64;
        let end = first + steps.len() as u64;
        if end <= known_end {
            return Ok(None);
        }
        if first > known_end {
            // The server dropped frames this client was not sent (it fell far behind): run on
            // from where the server is; the tiles it receives correct the water.
            self.stats.frames_skipped += first - known_end;
            self.frames.clear();
            self.next_frame = first;
        }
        let known_end = self.next_frame + self.frames.len() as u64;
        let new = &steps[(known_end - first) as usize..];
        if self.frames.len() + new.len() > MAX_PENDING_FRAMES {
            return Err(Error::invalid("frames", format!("{} pending", self.frames.len() + new.len()), format!("0 ..= {MAX_PENDING_FRAMES} not yet run")));
        }
        self.frames.extend(new.iter().copied());
        Ok(None)
    }

    fn chunk(&mut self, tiles: &TileGrid, c: TileChunk) -> Result<Option<ClientEvent>> {
        if c.tile as usize >= tiles.count() {
            return Err(Error::invalid("tile", c.tile, format!("0 ..= {} (tiles of this grid)", tiles.count() - 1)));
        }
        let t = c.tile as usize;
        let cells = tiles.cells_in(t) as usize;
        let max_raw = max_raw_len(cells * VALUES_PER_CELL);
        if (c.raw_len as usize) < cells * VALUES_PER_CELL || c.raw_len as usize > max_raw {
            return Err(Error::invalid("raw_len", c.raw_len, format!("{} ..= {max_raw} bytes for tile {t}", cells * VALUES_PER_CELL)));
        }
        let max_chunks = lz4_flex::block::get_maximum_output_size(c.raw_len as usize).div_ceil(MAX_CHUNK_DATA);
        if c.count as usize > max_chunks {
            return Err(Error::invalid("chunk count", c.count, format!("1 ..= {max_chunks} for {} raw bytes", c.raw_len)));
        }
        if c.frame > u64::MAX / 2 {
            return Err(Error::invalid("frame", c.frame, format!("0 ..= {}", u64::MAX / 2)));
        }
        let current = self.versions[t].last().map_or(0, |v| v.0);
        let has_base = c.base == 0 || self.versions[t].iter().any(|v| v.0 == c.base);
        if c.version <= current || !has_base {
            // Late, doubled, or against a version this client no longer holds: telling the
            // server what it has makes its next delta one the client can apply.
            self.stats.stale_chunks += 1;
            if current != 0 {
                self.acks.insert(c.tile, current);
                self.acks_again = true;
            }
            return Ok(None);
        }
        let key = (c.tile, c.version, c.base);
        let received = match self.partials.get(&key) {
            Some(p) => {
                if p.base != c.base || p.raw_len != c.raw_len || p.chunks.len() != c.count as usize {
                    return Err(Error::invalid("chunk", format!("tile {} version {} base {} raw_len {} count {}", c.tile, c.version, c.base, c.raw_len, c.count), format!("the same base {}, raw_len {} and count {} as its other chunks", p.base, p.raw_len, p.chunks.len())));
                }
                if p.chunks[c.index as usize].is_some() {
                    self.stats.stale_chunks += 1;
                    return Ok(None);
                }
                p.received
            }
            None => 0,
        };
        if received + 1 < c.count as usize {
            if !self.partials.contains_key(&key) {
                // Bound what half-received updates hold: drop the oldest.
                let limit = tiles.count().min(4096) + 64;
                while self.partials.len() >= limit {
                    let Some(oldest) = self.partials.iter().min_by_key(|(_, p)| p.born).map(|(k, _)| *k) else { break };
                    self.partials.remove(&oldest);
                }
                self.born += 1;
                self.partials.insert(key, Partial { base: c.base, raw_len: c.raw_len, chunks: vec![None; c.count as usize], received: 0, born: self.born });
            }
            let partial = self.partials.get_mut(&key).expect("inserted above");
            partial.chunks[c.index as usize] = Some(c.data);
            partial.received += 1;
            return Ok(None);
        }
        // The last chunk: decode before touching anything, so that a bad payload changes nothing.
        let mut compressed = Vec::new();
        for i in 0..c.count as usize {
            let earlier = self.partials.get(&key).and_then(|p| p.chunks[i].as_deref());
            compressed.extend_from_slice(if i == c.index as usize { &c.data } else { earlier.unwrap_or(&[]) });
        }
        let base = (c.base != 0).then(|| self.versions[t].iter().find(|v| v.0 == c.base).map(|v| &*v.2)).flatten();
        let width = tile_rect(tiles, t).width as usize;
        let values = decode_tile(&compressed, c.raw_len as usize, base, cells * VALUES_PER_CELL, width)?;
        if let Some(i) = values[..cells].iter().position(|&d| !(0..=MAX_DEPTH_QUANTA).contains(&d)) {
            return Err(Error::invalid("tile depth", format!("{} quanta at cell {i} of tile {t}", values[i]), format!("0 ..= {MAX_DEPTH_QUANTA} quanta")));
        }
        if let Some(i) = values[cells..].iter().position(|&bits| !f32::from_bits(bits as u32).is_finite()) {
            return Err(Error::invalid("tile flow", format!("{} at pipe {} of cell {} of tile {t}", f32::from_bits(values[cells + i] as u32), i / cells, i % cells), "a finite number"));
        }
        self.partials.retain(|&(tile, version, _), _| tile != c.tile || version > c.version);
        let values: Arc<[i32]> = Arc::from(values);
        if let Some(first @ None) = self.first_copies.get_mut(t) {
            *first = Some((c.frame, values.clone()));
        }
        let versions = &mut self.versions[t];
        versions.push((c.version, c.frame, values));
        if versions.len() > MAX_VERSIONS_PER_TILE {
            versions.remove(0);
        }
        self.acks.insert(c.tile, c.version);
        self.corrections[t] = true;
        self.stats.tiles_applied += 1;
        Ok(Some(ClientEvent::TileUpdated(t)))
    }

    fn checksums(&mut self, tiles: &TileGrid, entries: &[TileChecksum]) -> Result<Option<ClientEvent>> {
        if let Some(e) = entries.iter().find(|e| e.tile as usize >= tiles.count()) {
            return Err(Error::invalid("tile", e.tile, format!("0 ..= {} (tiles of this grid)", tiles.count() - 1)));
        }
        let mut event = None;
        let mut resync = Vec::new();
        for e in entries {
            let t = e.tile as usize;
            let Some((version, _, values)) = self.versions[t].last() else { continue };
            if *version != e.version {
                continue;
            }
            let total: i64 = tile_values_depth(values).iter().map(|&d| d as i64).sum();
            if total == e.total && tile_hash(values) == e.hash {
                // The server's tile has not changed since: the client's own water there should
                // now come to rest on this copy.
                self.confirmations[t] = true;
                continue;
            }
            self.versions[t].clear();
            self.acks.remove(&e.tile);
            self.stats.checksum_mismatches += 1;
            resync.push(e.tile);
            event = Some(ClientEvent::ChecksumMismatch(t));
        }
        for part in resync.chunks(MAX_RESYNC_PER_PACKET) {
            self.reliable.push_back(Packet::Resync(part.to_vec()));
        }
        Ok(event)
    }

    fn edit(&mut self, seq: u32, peer: i32, frame: u64, edit: Edit) -> Result<Option<ClientEvent>> {
        if seq == 0 {
            return Err(Error::invalid("edit seq", seq, "≥ 1"));
        }
        if frame > u64::MAX / 2 {
            return Err(Error::invalid("edit frame", frame, format!("0 ..= {}", u64::MAX / 2)));
        }
        let before = self.ready.len();
        if seq < self.next_edit_seq && !self.replay_done {
            if self.replay.len() as u32 >= self.replay_expected && !self.replay.contains_key(&seq) {
                return Err(Error::invalid("edit seq", seq, format!("one of the {} replayed edits, or ≥ {}", self.replay_expected, self.next_edit_seq)));
            }
            self.replay.insert(seq, (peer, edit, frame));
        } else if seq >= self.next_edit_seq {
            if self.live.len() >= MAX_BUFFERED_EDITS && !self.live.contains_key(&seq) {
                return Err(Error::invalid("edit seq", seq, format!("within {MAX_BUFFERED_EDITS} of {}", self.next_edit_seq)));
            }
            self.live.insert(seq, (peer, edit, frame));
        }
        if !self.replay_done && self.replay.len() as u32 == self.replay_expected {
            self.ready.extend(std::mem::take(&mut self.replay).into_iter().map(|(s, (p, e, f))| (s, p, e, f)));
            self.replay_done = true;
        }
        if self.replay_done {
            while let Some((p, e, f)) = self.live.remove(&self.next_edit_seq) {
                self.ready.push((self.next_edit_seq, p, e, f));
                self.next_edit_seq = self.next_edit_seq.wrapping_add(1).max(1);
            }
        }
        Ok((self.ready.len() > before).then_some(ClientEvent::EditsReady))
    }

    /// The packets to send the server at time `now` (s): hello until welcomed, requests,
    /// acknowledgements of the tiles applied, and the focus points now and then.
    pub fn poll(&mut self, now: f64) -> Vec<Outgoing> {
        let mut out = Vec::new();
        let mut send = |seq: &mut u32, packet: Packet, reliable: bool| {
            // Every packet built here is within its limits by construction.
            if let Ok(bytes) = packet.encode(*seq) {
                *seq = seq.wrapping_add(1);
                out.push(Outgoing { bytes, reliable });
            }
        };
        if self.tiles.is_none() {
            if self.hello_sent_at.is_none_or(|t| now - t >= HELLO_INTERVAL || now < t) {
                self.hello_sent_at = Some(now);
                send(&mut self.seq, Packet::Hello, true);
            }
            return out;
        }
        while let Some(packet) = self.reliable.pop_front() {
            send(&mut self.seq, packet, true);
        }
        let acks: Vec<(u32, u32)> = std::mem::take(&mut self.acks).into_iter().collect();
        let again = std::mem::take(&mut self.acks_again);
        for part in acks.chunks(MAX_ACKS_PER_PACKET) {
            send(&mut self.seq, Packet::Ack(part.to_vec()), again);
        }
        if !self.focus.is_empty() && (now - self.focus_sent_at >= FOCUS_INTERVAL || now < self.focus_sent_at) {
            self.focus_sent_at = now;
            send(&mut self.seq, Packet::Focus(self.focus.clone()), false);
        }
        out
    }
}
