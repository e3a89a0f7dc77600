//! The client's side: its exact copy of the server's tiles, the updates being reassembled, the
//! acknowledgements and requests to send, and the server's edits in order.

use super::codec::{decode_tile, max_raw_len, Packet, TileChecksum, TileChunk, Welcome, MAX_ACKS_PER_PACKET, MAX_CHUNK_DATA, MAX_RESYNC_PER_PACKET};
use super::{tile_hash, tile_rect, scatter_tile, Edit, Outgoing, SERVER_PEER};
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
}

/// The client's side of water sync.
#[derive(Debug)]
pub struct SyncClient {
    grid: Grid,
    terrain_hash: u32,
    tiles: Option<TileGrid>,
    /// Per tile, its versions, oldest first; the last is the current copy. Empty: not received.
    versions: Vec<Vec<(u32, Arc<[i32]>)>>,
    /// Updates being reassembled, by tile, version and base (a tile's version can be sent
    /// against several bases as acknowledgements arrive).
    partials: HashMap<(u32, u32, u32), Partial>,
    born: u64,
    acks: BTreeMap<u32, u32>,
    seq: u32,
    reliable: VecDeque<Packet>,
    next_request: u32,
    focus: Vec<[f32; 2]>,
    focus_sent_at: f64,
    hello_sent_at: Option<f64>,
    next_edit_seq: u32,
    replay_expected: u32,
    replay: BTreeMap<u32, (i32, Edit)>,
    replay_done: bool,
    live: BTreeMap<u32, (i32, Edit)>,
    ready: Vec<(u32, i32, Edit)>,
    corrections: Vec<bool>,
    stats: ClientStats,
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
            stats: ClientStats::default(),
        }
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
        self.versions.get(t)?.last().map(|(v, d)| (*v, &**d))
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
                if let Some((_, d)) = v.last() {
                    scatter_tile(&tiles, &mut field, t, d);
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
    /// number, peer that asked, edit). Apply them to the client's own water in this order.
    pub fn take_edits(&mut self) -> Vec<(u32, i32, Edit)> {
        std::mem::take(&mut self.ready)
    }

    /// Tiles whose copy changed or was confirmed current since the last call: the client's own
    /// water there should move to [`SyncClient::tile_depths`] ([`super::blend_toward`]).
    pub fn take_corrections(&mut self) -> Vec<usize> {
        let out: Vec<usize> = self.corrections.iter().enumerate().filter(|(_, &c)| c).map(|(t, _)| t).collect();
        self.corrections.fill(false);
        out
    }

    /// Changes one cell of the copy without the server: only for tests of drift detection
    /// (a copy damaged in memory, or a bug), which the checksums must catch.
    #[doc(hidden)]
    pub fn damage_copy_for_tests(&mut self, t: usize, cell: usize, delta: i32) -> bool {
        let Some((_, d)) = self.versions.get_mut(t).and_then(|v| v.last_mut()) else { return false };
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
            return Err(Error::invalid("packet kind", packet.name(), "a server's packet (welcome, tile chunk, checksums, edit applied, edit refused)"));
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
            Packet::EditApplied { seq, peer, edit } => self.edit(seq, peer, edit),
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
        self.next_edit_seq = w.next_edit_seq;
        self.replay_expected = w.replay_count;
        self.replay_done = w.replay_count == 0;
        self.stats = stats;
        self.focus = focus;
        self.hello_sent_at = hello;
        self.reliable.extend(requests);
        self.next_request = next_request;
        Ok(ClientEvent::Welcomed)
    }

    fn chunk(&mut self, tiles: &TileGrid, c: TileChunk) -> Result<Option<ClientEvent>> {
        if c.tile as usize >= tiles.count() {
            return Err(Error::invalid("tile", c.tile, format!("0 ..= {} (tiles of this grid)", tiles.count() - 1)));
        }
        let t = c.tile as usize;
        let cells = tiles.cells_in(t) as usize;
        let max_raw = max_raw_len(cells);
        if (c.raw_len as usize) < cells || c.raw_len as usize > max_raw {
            return Err(Error::invalid("raw_len", c.raw_len, format!("{cells} ..= {max_raw} bytes for tile {t}")));
        }
        let max_chunks = lz4_flex::block::get_maximum_output_size(c.raw_len as usize).div_ceil(MAX_CHUNK_DATA);
        if c.count as usize > max_chunks {
            return Err(Error::invalid("chunk count", c.count, format!("1 ..= {max_chunks} for {} raw bytes", c.raw_len)));
        }
        let current = self.versions[t].last().map_or(0, |v| v.0);
        let has_base = c.base == 0 || self.versions[t].iter().any(|v| v.0 == c.base);
        if c.version <= current || !has_base {
            // Late, doubled, or against a version this client no longer holds: telling the
            // server what it has makes its next delta one the client can apply.
            self.stats.stale_chunks += 1;
            if current != 0 {
                self.acks.insert(c.tile, current);
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
        let base = (c.base != 0).then(|| self.versions[t].iter().find(|v| v.0 == c.base).map(|v| &*v.1)).flatten();
        let width = tile_rect(tiles, t).width as usize;
        let values = decode_tile(&compressed, c.raw_len as usize, base, cells, width)?;
        if let Some(i) = values.iter().position(|&d| !(0..=MAX_DEPTH_QUANTA).contains(&d)) {
            return Err(Error::invalid("tile depth", format!("{} quanta at cell {i} of tile {t}", values[i]), format!("0 ..= {MAX_DEPTH_QUANTA} quanta")));
        }
        self.partials.retain(|&(tile, version, _), _| tile != c.tile || version > c.version);
        let versions = &mut self.versions[t];
        versions.push((c.version, Arc::from(values)));
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
            let Some((version, depths)) = self.versions[t].last() else { continue };
            if *version != e.version {
                continue;
            }
            let total: i64 = depths.iter().map(|&d| d as i64).sum();
            if total == e.total && tile_hash(depths) == e.hash {
                // The server's tile has not changed since: the client's own water there should
                // now come to rest on this copy.
                self.corrections[t] = true;
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

    fn edit(&mut self, seq: u32, peer: i32, edit: Edit) -> Result<Option<ClientEvent>> {
        if seq == 0 {
            return Err(Error::invalid("edit seq", seq, "≥ 1"));
        }
        let before = self.ready.len();
        if seq < self.next_edit_seq && !self.replay_done {
            if self.replay.len() as u32 >= self.replay_expected && !self.replay.contains_key(&seq) {
                return Err(Error::invalid("edit seq", seq, format!("one of the {} replayed edits, or ≥ {}", self.replay_expected, self.next_edit_seq)));
            }
            self.replay.insert(seq, (peer, edit));
        } else if seq >= self.next_edit_seq {
            if self.live.len() >= MAX_BUFFERED_EDITS && !self.live.contains_key(&seq) {
                return Err(Error::invalid("edit seq", seq, format!("within {MAX_BUFFERED_EDITS} of {}", self.next_edit_seq)));
            }
            self.live.insert(seq, (peer, edit));
        }
        if !self.replay_done && self.replay.len() as u32 == self.replay_expected {
            self.ready.extend(std::mem::take(&mut self.replay).into_iter().map(|(s, (p, e))| (s, p, e)));
            self.replay_done = true;
        }
        if self.replay_done {
            while let Some((p, e)) = self.live.remove(&self.next_edit_seq) {
                self.ready.push((self.next_edit_seq, p, e));
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
        for part in acks.chunks(MAX_ACKS_PER_PACKET) {
            send(&mut self.seq, Packet::Ack(part.to_vec()), false);
        }
        if !self.focus.is_empty() && (now - self.focus_sent_at >= FOCUS_INTERVAL || now < self.focus_sent_at) {
            self.focus_sent_at = now;
            send(&mut self.seq, Packet::Focus(self.focus.clone()), false);
        }
        out
    }
}
