//! The server's side: the versions of each tile, and per client what it acknowledged, what is
//! in flight, where it looks and how much of its budget is left.

use super::codec::{encode_tile, Packet, TileChecksum, TileChunk, Welcome, MAX_CHECKSUMS_PER_PACKET, MAX_CHUNK_DATA, MAX_FRAMES_PER_PACKET, MAX_FRAME_SUBSTEPS};
use super::{gather_tile_values, tile_hash, tile_rect, tile_values_depth, Edit, Outgoing, SyncConfig, PACKET_OVERHEAD_BYTES, SERVER_PEER};
use crate::backend::sleep::TileGrid;
use crate::backend::{TileChanges, TileRequest};
use crate::error::{Error, Result};
use crate::grid::Grid;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// Newest versions of a tile kept whatever the clients did with them: the newest is what goes
/// out next; the one before it may be in flight to a client whose last sent version it was not.
const KEPT_NEWEST_VERSIONS: usize = 2;
/// Most replayed edits kept for late joiners (terrain and sources).
const MAX_EDIT_LOG: usize = 65_536;
/// Most frames of the frame log kept for clients that have not been sent them yet (18 minutes
/// at 60 Hz); a client further behind starts over with a new welcome.
const MAX_FRAME_LOG: usize = 65_536;
/// Seconds of budget a client may save up (a burst).
const BURST_SECONDS: f64 = 0.1;
/// Most tiles a capture compares on the calling thread; more go to the thread pool.
const SERIAL_CAPTURE_TILES: usize = 64;
/// Most encoded tile updates kept for reuse ([`SyncServer::poll`]).
const MAX_ENCODED: usize = 1024;
/// Priority of a tile that the client has never received: above any change count, so a
/// keyframe goes before updates (nearest first).
const KEYFRAME_PRIORITY: f64 = 1.0e15;
/// Captures on the device that read every change and the tiles without their water, while a
/// keyframe waits for every tile's water of one frame, before the server asks for a whole read
/// instead (water that moves in more tiles than a read holds never gets there).
const KEYFRAME_CAPTURES_BEFORE_WHOLE: u32 = 4;
/// Tiles that start to change (did not differ at the last comparison) a comparison on the
/// device reads at once, beyond those the polls want.
const STARTING_TILES_READ: usize = 32;
/// Bytes a tile update is guessed to cost before any was encoded.
const FIRST_UPDATE_BYTES_GUESS: f64 = 2048.0;

/// One version of a tile's water: depths and pipe flows.
#[derive(Debug, Clone)]
struct TileVersion {
    version: u32,
    /// Server frames run when it was taken.
    frame: u64,
    /// Sum over captures up to this version of the quanta that changed (|Δ| per cell): the
    /// difference of two versions' `change` says how much moved between them.
    change: u64,
    total: i64,
    hash: u32,
    /// [`super::gather_tile_values`]: depths, then the flows' bits. `None` where the device
    /// described the version without reading it back ([`SyncServer::capture_records`]): no
    /// client was to be sent it.
    values: Option<Arc<[i32]>>,
}

/// A client as the server sees it.
#[derive(Debug)]
struct Client {
    /// Per tile, the version the client acknowledged (0: none).
    acked: Vec<u32>,
    /// Per tile, the version last sent and when (s).
    sent: Vec<(u32, f64)>,
    /// Per tile, since when (s) what was sent has gone unacknowledged (infinite: nothing
    /// outstanding); past `resend_after`, the tile's next send goes reliable.
    unacknowledged_since: Vec<f64>,
    /// The tiles whose acknowledged version may not be the one the client should have (a new
    /// version was taken, the client joined or asked again), flagged and listed: a poll looks at
    /// these only, not at every tile of the grid (4 096 at 2048², most of a river's sync).
    stale: TileSet,
    focus: Vec<[f32; 2]>,
    /// Bytes the client may still be sent now; negative after a packet that went past it.
    tokens: f64,
    last_poll: Option<f64>,
    seq: u32,
    reliable: VecDeque<Packet>,
    checksum_cursor: usize,
    checksum_credit: f64,
    keyframe_complete: bool,
    /// While the keyframe is incomplete: every tile's version as of the first capture after the
    /// join, which the keyframe sends, so that all its tiles describe one frame and the client
    /// can start from them at once (tiles of different frames side by side run differently).
    keyframe: Vec<TileVersion>,
    joined_at: f64,
    /// Seconds from the join to the last tile of the keyframe acknowledged.
    join_seconds: Option<f64>,
    bytes_sent: u64,
    /// Frames of the frame log sent to it so far (the first not sent); before its welcome,
    /// the frame it joined at (the log is kept from there).
    frames_sent: u64,
    /// Its welcome, until the keyframe starts: the welcome names the keyframe's frame, the
    /// newest complete capture's from the join on, and goes ahead of everything else.
    welcome: Option<Welcome>,
}

/// What a client's packet asks of the game.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A new client said hello (or a known one asked to start over).
    Joined(i32),
    /// A client asks for an edit: answer with [`SyncServer::accept_edit`] or
    /// [`SyncServer::refuse_edit`].
    EditRequested {
        /// The client's peer id.
        peer: i32,
        /// The client's id of the request.
        request: u32,
        /// The edit.
        edit: Edit,
    },
}

/// Figures about one client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientStats {
    /// Bytes sent, overhead included.
    pub bytes_sent: u64,
    /// Tiles whose acknowledged version is the server's latest.
    pub tiles_current: usize,
    /// Seconds from its hello until every tile was acknowledged once, when that happened.
    pub join_seconds: Option<f64>,
}

/// The server's side of water sync.
#[derive(Debug)]
pub struct SyncServer {
    config: SyncConfig,
    grid: Grid,
    tiles: TileGrid,
    terrain_hash: u32,
    /// Per tile, its versions, oldest first; the last is the current one.
    history: Vec<Vec<TileVersion>>,
    clients: BTreeMap<i32, Client>,
    next_edit_seq: u32,
    edit_log: Vec<(u32, i32, Edit, u64)>,
    captures: u64,
    /// Frames the water has run ([`SyncServer::record_frame`]).
    frame: u64,
    /// Step length and steps of frames `frame_log_start ..` (the frames clients still need).
    frame_log: VecDeque<(f32, u32)>,
    frame_log_start: u64,
    /// Server frames run when the water of the newest capture was taken.
    captured_frame: u64,
    /// The newest frame at which every tile's newest version is the water (the newest complete
    /// capture's), and whether it is the newest capture's: what a keyframe describes.
    whole_frame: u64,
    whole: bool,
    /// Encoded tile updates by (tile, base version, version): a tile that waits for the budget,
    /// or goes to several clients, is encoded once.
    encoded: HashMap<(usize, u32, u32), Arc<(usize, Vec<u8>)>>,
    /// Tiles whose newest version has no water ([`TileVersion::values`]).
    without_values: usize,
    /// Tiles the polls want read at the next capture on the device: their newest version has no
    /// water and a client is to be sent it ([`SyncServer::tile_request`]).
    wanted: TileRequest,
    /// Captures on the device since a keyframe began waiting for every tile's water.
    keyframe_captures: u32,
    /// Bytes of the tile updates encoded, as a running mean: the cost guessed for a tile whose
    /// water was not read yet.
    mean_update_bytes: f64,
    /// Tiles read back whose hash or total the device described otherwise (a fault: the host's
    /// figures are taken).
    record_mismatches: u64,
}

impl SyncServer {
    /// A server for water on `grid`, whose terrain at the start hashes to `terrain_hash`
    /// ([`super::terrain_hash`]), holding `depth` (quanta, row-major) and pipe `flow` now, after
    /// `frame` frames ([`crate::Simulation::frames`]).
    pub fn new(config: SyncConfig, grid: Grid, terrain_hash: u32, depth: &[i32], flow: &[[f32; 4]], frame: u64) -> Result<Self> {
        config.check()?;
        let tiles = TileGrid::new(grid.width, grid.height, [config.tile_size; 2]);
        let mut server = SyncServer {
            config,
            grid,
            tiles,
            terrain_hash,
            history: vec![Vec::new(); tiles.count()],
            clients: BTreeMap::new(),
            next_edit_seq: 1,
            edit_log: Vec::new(),
            captures: 0,
            frame,
            frame_log: VecDeque::new(),
            frame_log_start: frame,
            captured_frame: frame,
            whole_frame: frame,
            whole: true,
            encoded: HashMap::new(),
            without_values: 0,
            wanted: TileRequest::default(),
            keyframe_captures: 0,
            mean_update_bytes: FIRST_UPDATE_BYTES_GUESS,
            record_mismatches: 0,
        };
        server.capture(depth, flow, None)?;
        Ok(server)
    }

    /// Frames the water has run, as the server's clock says.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The water ran one more frame of `substeps` steps of `step` seconds
    /// ([`crate::Simulation::run_steps`]): clients run the same frames in the same order. Call it
    /// after every frame that ran a step, before the next capture or edit.
    pub fn record_frame(&mut self, step: f32, substeps: u32) -> Result<()> {
        if !(crate::simulation::MIN_STEP..=crate::simulation::MAX_STEP_LENGTH).contains(&step) {
            return Err(Error::invalid("step", step, format!("{} ..= {} s", crate::simulation::MIN_STEP, crate::simulation::MAX_STEP_LENGTH)));
        }
        if !(1..=MAX_FRAME_SUBSTEPS).contains(&substeps) {
            return Err(Error::invalid("substeps", substeps, format!("1 ..= {MAX_FRAME_SUBSTEPS}")));
        }
        self.frame += 1;
        self.frame_log.push_back((step, substeps));
        // Keep what the furthest-behind client still needs, and a joiner from the frame its
        // keyframe may describe, within a bound.
        let needed = self.clients.values().map(|c| c.frames_sent).min().unwrap_or(self.frame);
        while self.frame_log_start < needed || self.frame_log.len() > MAX_FRAME_LOG {
            if self.frame_log.pop_front().is_none() {
                break;
            }
            self.frame_log_start += 1;
        }
        Ok(())
    }

    /// The tiles.
    pub fn tiles(&self) -> TileGrid {
        self.tiles
    }

    /// The settings.
    pub fn config(&self) -> &SyncConfig {
        &self.config
    }

    /// Changes the budgets, radius and rates (not the tile size, which the clients were told).
    pub fn set_config(&mut self, config: SyncConfig) -> Result<()> {
        config.check()?;
        if config.tile_size != self.config.tile_size {
            return Err(Error::invalid("tile_size", config.tile_size, format!("{} (fixed when the server starts)", self.config.tile_size)));
        }
        self.config = config;
        Ok(())
    }

    /// Takes the water as it is now, after [`SyncServer::frame`] frames (`depth`, quanta, and
    /// the pipes' `flow`, row-major): each tile whose depths or flows differ from its current
    /// version gets a new one. `candidates`, when given (one flag per tile), limits the
    /// comparison to those tiles, e.g. the tiles the backend stepped or edited since the last
    /// capture; a tile outside them must not have changed. Returns how many tiles changed.
    pub fn capture(&mut self, depth: &[i32], flow: &[[f32; 4]], candidates: Option<&[bool]>) -> Result<usize> {
        self.capture_at(depth, flow, candidates, self.frame, true)
    }

    /// [`SyncServer::capture`] of water taken after `frame` frames (at most
    /// [`SyncServer::frame`], and no older than the last capture's: a read that arrives a sync
    /// late). `complete`: every tile that changed since the last capture is among `candidates`
    /// and was read; when not, the tiles left out are read at a later capture, and until a
    /// complete capture no keyframe is started (its tiles must all describe one frame).
    pub fn capture_at(&mut self, depth: &[i32], flow: &[[f32; 4]], candidates: Option<&[bool]>, frame: u64, complete: bool) -> Result<usize> {
        self.check_capture_frame(frame)?;
        if depth.len() != self.grid.cell_count() {
            return Err(Error::WrongLength { name: "depth", expected: self.grid.cell_count(), actual: depth.len() });
        }
        if flow.len() != self.grid.cell_count() {
            return Err(Error::WrongLength { name: "flow", expected: self.grid.cell_count(), actual: flow.len() });
        }
        if let Some(c) = candidates {
            if c.len() != self.tiles.count() {
                return Err(Error::WrongLength { name: "candidates", expected: self.tiles.count(), actual: c.len() });
            }
        }
        let tiles = self.tiles;
        let compared: Vec<usize> = match candidates {
            Some(c) => (0..tiles.count()).filter(|&t| c[t]).collect(),
            None => (0..tiles.count()).collect(),
        };
        Ok(self.capture_gathered(&compared, frame, complete, |t, scratch| gather_tile_values(&tiles, depth, flow, t, scratch)))
    }

    /// [`SyncServer::capture_at`] of the tiles a backend read ([`TileChanges`]: each tile's water
    /// alone, as read), without the grid-sized copies a capture of whole fields needs: only the
    /// tiles read are compared, and every other tile must not have changed since the last capture
    /// (as with `candidates`). `complete`: every tile that changed was read.
    pub fn capture_tiles(&mut self, changes: &TileChanges, frame: u64, complete: bool) -> Result<usize> {
        self.check_capture_frame(frame)?;
        let tiles = self.tiles;
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        if changes.depth.len() < changes.tiles.len() * stride || changes.flow.len() < changes.tiles.len() * stride {
            return Err(Error::WrongLength { name: "tile changes", expected: changes.tiles.len() * stride, actual: changes.depth.len().min(changes.flow.len()) });
        }
        let mut seen = vec![false; tiles.count()];
        for &t in &changes.tiles {
            if t as usize >= tiles.count() || std::mem::replace(&mut seen[t as usize], true) {
                return Err(Error::invalid("tile", t, format!("distinct tiles of 0 ..= {}", tiles.count() - 1)));
            }
        }
        let slots: HashMap<usize, usize> = changes.tiles.iter().enumerate().map(|(slot, &t)| (t as usize, slot)).collect();
        let compared: Vec<usize> = changes.tiles.iter().map(|&t| t as usize).collect();
        Ok(self.capture_gathered(&compared, frame, complete, |t, scratch| {
            let r = tile_rect(&tiles, t);
            let from = slots[&t] * stride;
            let cells = &changes.flow[from..from + (r.width * r.height) as usize];
            scratch.clear();
            scratch.extend_from_slice(&changes.depth[from..from + cells.len()]);
            for pipe in 0..4 {
                scratch.extend(cells.iter().map(|f| f[pipe].to_bits() as i32));
            }
        }))
    }

    /// A capture's `frame` is at most the server's now and no older than the last capture's.
    fn check_capture_frame(&self, frame: u64) -> Result<()> {
        if frame > self.frame || frame < self.captured_frame {
            return Err(Error::invalid("capture frame", frame, format!("{} ..= {} (the last capture's to the server's now)", self.captured_frame, self.frame)));
        }
        Ok(())
    }

    /// The capture of the tiles `compared`, each gathered into its values
    /// ([`gather_tile_values`]'s layout) by `gather`, taken after `frame` frames (checked by the
    /// caller). Returns how many tiles changed.
    fn capture_gathered(&mut self, compared: &[usize], frame: u64, complete: bool, gather: impl Fn(usize, &mut Vec<i32>) + Sync) -> usize {
        self.captures += 1;
        let captures = self.captures.min(u32::MAX as u64 - 1) as u32;
        let history = &self.history;
        let version_of = |scratch: &mut Vec<i32>, t: usize| -> Option<(usize, Taken)> {
            gather(t, scratch);
            let last = history[t].last();
            let hash = tile_hash(scratch);
            let now = tile_values_depth(scratch);
            let total = now.iter().map(|&d| d as i64).sum();
            match last {
                Some(v) if v.values.as_deref().is_some_and(|values| values == scratch.as_slice()) => return None,
                // A version the device described without its water: the same figures are the
                // same water (the device compared the bits), which this read now holds.
                Some(v) if v.values.is_none() && v.hash == hash && v.total == total => return Some((t, Taken::Water(Arc::from(scratch.as_slice())))),
                _ => {}
            }
            let moved: u64 = match last.and_then(|v| v.values.as_deref()) {
                Some(values) => tile_values_depth(values).iter().zip(now).map(|(&a, &b)| (a as i64 - b as i64).unsigned_abs()).sum(),
                None => now.iter().map(|&d| d.unsigned_abs() as u64).sum(),
            };
            Some((
                t,
                Taken::Version(TileVersion {
                    // Versions follow the capture count, so a tile's versions grow with time
                    // and a version names one capture.
                    version: captures,
                    frame,
                    change: last.map_or(0, |v| v.change).saturating_add(moved.max(1)),
                    total,
                    hash,
                    values: Some(Arc::from(scratch.as_slice())),
                }),
            ))
        };
        // A few tiles (a river in a world at rest) are compared on this thread: waking the
        // thread pool for them cost more than comparing them.
        let taken: Vec<(usize, Taken)> = if compared.len() <= SERIAL_CAPTURE_TILES {
            let mut scratch = Vec::new();
            compared.iter().filter_map(|&t| version_of(&mut scratch, t)).collect()
        } else {
            compared.par_iter().map_init(Vec::new, |scratch, &t| version_of(scratch, t)).flatten().collect()
        };
        let mut changed = 0;
        for (t, taken) in taken {
            match taken {
                Taken::Version(version) => {
                    changed += 1;
                    self.push_version(t, version);
                }
                Taken::Water(values) => self.give_water(t, values),
            }
        }
        self.captured(frame, complete);
        changed
    }

    /// [`SyncServer::capture_at`] of a comparison on the device ([`TileChanges::records`]): each
    /// tile that differed gets a new version with the device's total, hash and change, and its
    /// water where it was read; a tile read that did not differ gives its water to its newest
    /// version, which the device described without it. Every tile that changed since the last
    /// capture must be among the records (the device compared them all with the water of the
    /// last capture). Returns how many tiles changed.
    pub fn capture_records(&mut self, changes: &TileChanges, frame: u64) -> Result<usize> {
        self.check_capture_frame(frame)?;
        let tiles = self.tiles;
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        if changes.depth.len() < changes.tiles.len() * stride || changes.flow.len() < changes.tiles.len() * stride {
            return Err(Error::WrongLength { name: "tile changes", expected: changes.tiles.len() * stride, actual: changes.depth.len().min(changes.flow.len()) });
        }
        let mut seen = vec![(false, false); tiles.count()];
        for &t in &changes.tiles {
            if t as usize >= tiles.count() || std::mem::replace(&mut seen[t as usize].0, true) {
                return Err(Error::invalid("tile read", t, format!("distinct tiles of 0 ..= {}", tiles.count() - 1)));
            }
        }
        for r in &changes.records {
            if r.tile as usize >= tiles.count() || std::mem::replace(&mut seen[r.tile as usize].1, true) {
                return Err(Error::invalid("tile record", r.tile, format!("distinct tiles of 0 ..= {}", tiles.count() - 1)));
            }
        }
        let slots: HashMap<usize, usize> = changes.tiles.iter().enumerate().map(|(slot, &t)| (t as usize, slot)).collect();
        let values_of = |t: usize| -> Option<Arc<[i32]>> {
            let slot = *slots.get(&t)?;
            let r = tile_rect(&tiles, t);
            let from = slot * stride;
            let cells = &changes.flow[from..from + (r.width * r.height) as usize];
            let mut values = Vec::with_capacity(cells.len() * super::codec::VALUES_PER_CELL);
            values.extend_from_slice(&changes.depth[from..from + cells.len()]);
            for pipe in 0..4 {
                values.extend(cells.iter().map(|f| f[pipe].to_bits() as i32));
            }
            Some(Arc::from(values))
        };
        self.captures += 1;
        let captures = self.captures.min(u32::MAX as u64 - 1) as u32;
        for r in &changes.records {
            let t = r.tile as usize;
            let values = values_of(t);
            let (mut total, mut hash) = (r.total, r.hash);
            if let Some(values) = &values {
                // The tiles read are few (those to be sent): checking the device's figures
                // against their water costs little and catches a fault before a client does.
                let host = (tile_values_depth(values).iter().map(|&d| d as i64).sum::<i64>(), tile_hash(values));
                if host != (total, hash) {
                    self.record_mismatches += 1;
                    (total, hash) = host;
                }
            }
            let change = self.history[t].last().map_or(0, |v| v.change).saturating_add(r.change.max(1));
            self.push_version(t, TileVersion { version: captures, frame, change, total, hash, values });
        }
        for &t in &changes.tiles {
            let t = t as usize;
            if seen[t].1 {
                continue;
            }
            let values = values_of(t).expect("a tile read");
            let host = (tile_values_depth(&values).iter().map(|&d| d as i64).sum::<i64>(), tile_hash(&values));
            match self.history[t].last() {
                Some(v) if v.values.is_none() && (v.total, v.hash) == host => self.give_water(t, values),
                Some(v) if v.values.is_some() => {}
                // The device's copy and the server's newest version disagree (a fault): the
                // water read becomes the newest version.
                last => {
                    self.record_mismatches += 1;
                    let change = last.map_or(0, |v| v.change).saturating_add(1);
                    self.push_version(t, TileVersion { version: captures, frame, change, total: host.0, hash: host.1, values: Some(values) });
                }
            }
        }
        self.captured(frame, true);
        Ok(changes.records.len())
    }

    /// Tile `t`'s new newest version, and the versions no client can use any more dropped.
    fn push_version(&mut self, t: usize, version: TileVersion) {
        let history = &mut self.history[t];
        let had = history.last().is_none_or(|v| v.values.is_some());
        let has = version.values.is_some();
        self.without_values = self.without_values + usize::from(had && !has) - usize::from(!had && has);
        history.push(version);
        for client in self.clients.values_mut() {
            client.stale.insert(t);
        }
        // Keep what a client can still use: the newest, each client's acknowledged version (the
        // base of its next delta) and the version it was sent last (its ack may be on the way).
        // A version no client was sent never becomes a base; keeping every version since a
        // client's base held up to 64 of 20 KB a tile while water moved where the client's
        // budget did not reach (a flood across a 2048² grid: gigabytes).
        let newest_from = history.len().saturating_sub(KEPT_NEWEST_VERSIONS);
        let clients = &self.clients;
        let mut i = 0;
        history.retain(|v| {
            let keep = i >= newest_from || clients.values().any(|c| c.acked[t] == v.version || c.sent[t].0 == v.version);
            i += 1;
            keep
        });
    }

    /// Tile `t`'s newest version, described without its water, gets `values`.
    fn give_water(&mut self, t: usize, values: Arc<[i32]>) {
        let newest = self.history[t].last_mut().expect("a version to give water to");
        if newest.values.is_none() {
            newest.values = Some(values);
            self.without_values -= 1;
        }
    }

    /// After a capture of the water after `frame` frames: whether every tile's newest version
    /// now holds the water of that frame (`complete`: every tile that changed was taken), which
    /// a keyframe needs.
    fn captured(&mut self, frame: u64, complete: bool) {
        self.captured_frame = frame;
        self.whole = complete && self.without_values == 0;
        if self.whole {
            self.whole_frame = frame;
        }
        let keyframe_waits = self.clients.values().any(|c| !c.keyframe_complete && c.keyframe.is_empty());
        self.keyframe_captures = if keyframe_waits && !self.whole { self.keyframe_captures + 1 } else { 0 };
    }

    /// What the next comparison on the device should read ([`crate::Simulation::begin_tile_changes`]):
    /// the tiles the clients are to be sent next whose newest version has no water; while a
    /// keyframe waits, every tile that changes and every tile without its water too; and room
    /// for the tiles that start to change, which the device reads at once.
    pub fn tile_request(&self) -> TileRequest {
        let mut request = self.wanted.clone();
        if self.clients.values().any(|c| !c.keyframe_complete && c.keyframe.is_empty()) {
            for (t, versions) in self.history.iter().enumerate() {
                if versions.last().is_some_and(|v| v.values.is_none()) {
                    request.want(t);
                }
            }
            request.read_every_change = true;
        }
        // Room for the tiles that start to change too (the device reads them at once: an edit
        // on still water goes out at the next poll); more of them go as records, then wanted.
        request.max_tiles = request.wanted_count() + STARTING_TILES_READ;
        request
    }

    /// The request of [`SyncServer::tile_request`] was begun: the polls from now on want anew.
    pub fn tile_request_begun(&mut self) {
        self.wanted = TileRequest::default();
    }

    /// Tiles whose newest version the device described without reading its water.
    pub fn tiles_without_water(&self) -> usize {
        self.without_values
    }

    /// Tiles read back whose hash or total the device described otherwise: 0 unless the GPU's
    /// hash and the host's disagree.
    pub fn record_mismatches(&self) -> u64 {
        self.record_mismatches
    }

    /// Tile versions the server holds with their water (as bases of deltas and to send), in all
    /// and most of one tile: figures for tests and benchmarks.
    pub fn versions_held(&self) -> (usize, usize) {
        (self.history.iter().map(Vec::len).sum(), self.history.iter().map(Vec::len).max().unwrap_or(0))
    }

    /// Server frames run when the water of the newest capture was taken.
    pub fn captured_frame(&self) -> u64 {
        self.captured_frame
    }

    /// Whether a client waits for a keyframe that cannot start until a complete capture (every
    /// tile's newest version with its water, [`SyncServer::capture_at`]): a capture on the
    /// device then reads every change ([`SyncServer::tile_request`]), and a caller that cannot
    /// should read every tile at the next ([`SyncServer::keyframe_needs_whole_read`]).
    pub fn needs_complete_capture(&self) -> bool {
        !self.whole && self.clients.values().any(|c| !c.keyframe_complete && c.keyframe.is_empty())
    }

    /// Whether a keyframe has waited four captures on the device
    /// for every tile's water (the water moves in more tiles than a read holds): the caller
    /// should read every tile at the next.
    pub fn keyframe_needs_whole_read(&self) -> bool {
        self.needs_complete_capture() && self.keyframe_captures >= KEYFRAME_CAPTURES_BEFORE_WHOLE
    }

    /// Whether a client waits for its welcome (a capture of the water from its join on).
    pub fn welcome_pending(&self) -> bool {
        self.clients.values().any(|c| c.welcome.is_some())
    }

    /// Tile `t`'s newest version: (version, total quanta, hash); `None` off the tiles.
    pub fn tile_summary(&self, t: usize) -> Option<(u32, i64, u32)> {
        self.history.get(t)?.last().map(|v| (v.version, v.total, v.hash))
    }

    /// A client's packet: its effect on the server's view of the client, and what the game must
    /// answer. Refuses (with the reason, changing nothing) a packet that does not decode, a kind
    /// only the server sends, a peer that has not said hello, and tiles or versions the server
    /// never had.
    pub fn receive(&mut self, peer: i32, bytes: &[u8], now: f64) -> Result<Option<ServerEvent>> {
        let (packet, _seq) = Packet::decode(bytes)?;
        if packet.from_server() {
            return Err(Error::invalid("packet kind", packet.name(), format!("a client's packet (hello, ack, edit request, resync, focus): peer {peer} sent one only the server sends")));
        }
        if peer == SERVER_PEER || peer <= 0 {
            return Err(Error::invalid("peer", peer, "a client's id (≥ 2)"));
        }
        if !matches!(packet, Packet::Hello) && !self.clients.contains_key(&peer) {
            return Err(Error::invalid("peer", peer, "a client that said hello"));
        }
        match packet {
            Packet::Hello => {
                if !self.clients.contains_key(&peer) && self.clients.len() >= self.config.max_clients as usize {
                    return Err(Error::invalid("clients", self.clients.len() + 1, format!("1 ..= {} (max_clients)", self.config.max_clients)));
                }
                self.join(peer, now);
                Ok(Some(ServerEvent::Joined(peer)))
            }
            Packet::Ack(entries) => {
                // Every entry is checked before any is taken, so a bad packet changes nothing.
                for &(t, v) in &entries {
                    self.check_tile(t)?;
                    let current = self.current_version(t as usize);
                    if v > current {
                        return Err(Error::invalid("ack version", v, format!("0 ..= {current} (tile {t}'s newest)")));
                    }
                }
                let client = self.clients.get_mut(&peer).expect("checked above");
                for (t, v) in entries {
                    let t = t as usize;
                    // An acknowledgement older than one already taken is a late packet. One of a
                    // version the server no longer holds (neither newest nor last sent when it
                    // arrived) is taken all the same: the client's base is then unknown here and
                    // the tile goes whole next; keeping the older base would send deltas against
                    // a version the client may have dropped, forever.
                    if v > client.acked[t] {
                        client.acked[t] = v;
                        // The link carries this tile: what is still outstanding waits from now.
                        client.unacknowledged_since[t] = if client.sent[t].0 > v { now } else { f64::INFINITY };
                    }
                }
                if !client.keyframe_complete && client.acked.iter().all(|&v| v != 0) {
                    client.keyframe_complete = true;
                    client.keyframe = Vec::new();
                    client.join_seconds = Some(now - client.joined_at);
                }
                Ok(None)
            }
            Packet::EditRequest { request, edit } => Ok(Some(ServerEvent::EditRequested { peer, request, edit })),
            Packet::Resync(tiles) => {
                for &t in &tiles {
                    self.check_tile(t)?;
                }
                let client = self.clients.get_mut(&peer).expect("checked above");
                if tiles.is_empty() {
                    client.acked.fill(0);
                    client.keyframe_complete = false;
                    client.keyframe = Vec::new();
                    client.stale = TileSet::all(client.acked.len());
                    client.unacknowledged_since.fill(f64::INFINITY);
                } else {
                    for t in tiles {
                        client.acked[t as usize] = 0;
                        client.sent[t as usize] = (0, f64::NEG_INFINITY);
                        client.unacknowledged_since[t as usize] = f64::INFINITY;
                        client.stale.insert(t as usize);
                    }
                }
                Ok(None)
            }
            Packet::Focus(points) => {
                let half = self.grid.extent().map(|e| e * 0.5 + self.config.focus_radius);
                if let Some(p) = points.iter().find(|p| p[0].abs() > half[0] || p[1].abs() > half[1]) {
                    return Err(Error::invalid("focus", format!("({}, {})", p[0], p[1]), format!("within ±{} m, ±{} m (the grid and the focus radius)", half[0], half[1])));
                }
                self.clients.get_mut(&peer).expect("checked above").focus = points;
                Ok(None)
            }
            Packet::Welcome(_) | Packet::TileChunk(_) | Packet::Checksums(_) | Packet::EditApplied { .. } | Packet::EditRefused { .. } | Packet::Frames { .. } => unreachable!("refused above"),
        }
    }

    fn check_tile(&self, t: u32) -> Result<()> {
        if t as usize >= self.tiles.count() {
            return Err(Error::invalid("tile", t, format!("0 ..= {} (tiles of this grid)", self.tiles.count() - 1)));
        }
        Ok(())
    }

    fn current_version(&self, t: usize) -> u32 {
        self.history[t].last().map_or(0, |v| v.version)
    }

    fn join(&mut self, peer: i32, now: f64) {
        let n = self.tiles.count();
        let mut reliable = VecDeque::new();
        let replay: Vec<_> = self.edit_log.iter().map(|&(seq, peer, edit, frame)| Packet::EditApplied { seq, peer, frame, edit }).collect();
        // Sent ahead of these when the keyframe starts, with its frame.
        let welcome = Welcome {
            cells: self.tiles.cells,
            tile_size: self.config.tile_size,
            terrain_hash: self.terrain_hash,
            next_edit_seq: self.next_edit_seq,
            replay_count: replay.len() as u32,
            frame: self.frame,
        };
        reliable.extend(replay);
        let client = Client {
            acked: vec![0; n],
            sent: vec![(0, f64::NEG_INFINITY); n],
            unacknowledged_since: vec![f64::INFINITY; n],
            stale: TileSet::all(n),
            focus: Vec::new(),
            tokens: 0.0,
            last_poll: None,
            seq: self.clients.get(&peer).map_or(0, |c| c.seq),
            reliable,
            checksum_cursor: 0,
            checksum_credit: 0.0,
            keyframe_complete: false,
            keyframe: Vec::new(),
            joined_at: now,
            join_seconds: None,
            bytes_sent: self.clients.get(&peer).map_or(0, |c| c.bytes_sent),
            frames_sent: self.frame,
            welcome: Some(welcome),
        };
        self.clients.insert(peer, client);
    }

    /// Forgets a client (it disconnected): whatever was in flight to it is dropped.
    pub fn remove_client(&mut self, peer: i32) -> bool {
        self.clients.remove(&peer).is_some()
    }

    /// The clients' peer ids.
    pub fn clients(&self) -> Vec<i32> {
        self.clients.keys().copied().collect()
    }

    /// Figures about a client.
    pub fn client_stats(&self, peer: i32) -> Option<ClientStats> {
        let c = self.clients.get(&peer)?;
        let tiles_current = (0..self.tiles.count()).filter(|&t| c.acked[t] == self.current_version(t)).count();
        Some(ClientStats { bytes_sent: c.bytes_sent, tiles_current, join_seconds: c.join_seconds })
    }

    /// Accepts an edit (from a client's request, or the server's own with peer
    /// [`SERVER_PEER`]): every client gets it with the returned sequence number. The caller
    /// applies it to the simulation before its next step, in the order of the sequence numbers.
    pub fn accept_edit(&mut self, peer: i32, edit: Edit) -> u32 {
        let seq = self.next_edit_seq;
        self.next_edit_seq = self.next_edit_seq.wrapping_add(1).max(1);
        if edit.replayed_on_join() && self.edit_log.len() < MAX_EDIT_LOG {
            self.edit_log.push((seq, peer, edit, self.frame));
        }
        let frame = self.frame;
        for client in self.clients.values_mut() {
            client.reliable.push_back(Packet::EditApplied { seq, peer, frame, edit });
        }
        seq
    }

    /// Refuses a client's edit request, telling the client why.
    pub fn refuse_edit(&mut self, peer: i32, request: u32, reason: &str) -> Result<()> {
        let client = self.clients.get_mut(&peer).ok_or_else(|| Error::invalid("peer", peer, "a client that said hello"))?;
        client.reliable.push_back(Packet::EditRefused { request, reason: reason.to_string() });
        Ok(())
    }

    /// The packets for client `peer` at time `now` (s): reliable ones first, then checksums
    /// and tile updates within the client's budget, nearest and most changed tiles first.
    pub fn poll(&mut self, peer: i32, now: f64) -> Result<Vec<Outgoing>> {
        let tiles = self.tiles;
        let config = self.config.clone();
        let grid = self.grid;
        let history = &self.history;
        let (frame_log, frame_log_start, whole_frame, whole, captured_frame) = (&self.frame_log, self.frame_log_start, self.whole_frame, self.whole, self.captured_frame);
        let encoded = &mut self.encoded;
        let (wanted, mean_update_bytes) = (&mut self.wanted, &mut self.mean_update_bytes);
        let client = self.clients.get_mut(&peer).ok_or_else(|| Error::invalid("peer", peer, "a client that said hello"))?;
        let kbps = if client.keyframe_complete { config.budget_kbps } else { config.join_budget_kbps };
        // A version holds from the capture that took it until the next: after a complete
        // capture every tile's newest is the water at that capture's frame, which the keyframe
        // says of them all. A joiner's keyframe is of a capture from its join on (the frame log
        // holds the frames from there), and its welcome names that frame.
        let joined_before = client.welcome.as_ref().is_none_or(|_| whole_frame >= client.frames_sent);
        if !client.keyframe_complete && client.keyframe.is_empty() && whole && joined_before {
            client.keyframe = history.iter().map(|v| TileVersion { frame: whole_frame, ..v.last().expect("every tile has a version from the first capture").clone() }).collect();
            if let Some(welcome) = client.welcome.take() {
                client.reliable.push_front(Packet::Welcome(Welcome { frame: whole_frame, ..welcome }));
                client.frames_sent = whole_frame;
            }
        }
        if client.welcome.is_some() {
            // Nothing before the welcome.
            client.last_poll = Some(now);
            return Ok(Vec::new());
        }
        let rate = kbps as f64 * 1000.0 / 8.0;
        let dt = client.last_poll.map_or(0.0, |t| (now - t).clamp(0.0, 1.0));
        client.last_poll = Some(now);
        let cap = (rate * BURST_SECONDS).max((super::MAX_PACKET_BYTES + PACKET_OVERHEAD_BYTES) as f64);
        client.tokens = (client.tokens + rate * dt).min(cap);
        let mut out = Vec::new();
        let mut send = |client: &mut Client, packet: &Packet, reliable: bool| -> Result<()> {
            let bytes = packet.encode(client.seq)?;
            client.seq = client.seq.wrapping_add(1);
            let cost = (bytes.len() + PACKET_OVERHEAD_BYTES) as f64;
            client.tokens -= cost;
            client.bytes_sent += cost as u64;
            out.push(Outgoing { bytes, reliable });
            Ok(())
        };
        // The frames first: edits name the frame after which they apply, and the client runs
        // only frames it was told of. Reliable and in order with the edits. Only up to the
        // newest capture's frame: a client runs a few frames behind what it was told, which is
        // then room for that capture's tiles to arrive in time also where captures describe an
        // earlier frame than the server's now (a GPU's, read a sync later).
        let log_end = (frame_log_start + frame_log.len() as u64).min(captured_frame.max(frame_log_start));
        let mut from = client.frames_sent.max(frame_log_start);
        while from < log_end {
            let n = ((log_end - from) as usize).min(MAX_FRAMES_PER_PACKET);
            let at = (from - frame_log_start) as usize;
            let steps: Vec<(f32, u32)> = frame_log.range(at..at + n).copied().collect();
            send(client, &Packet::Frames { first: from, steps }, true)?;
            from += n as u64;
        }
        client.frames_sent = from;
        while let Some(packet) = client.reliable.pop_front() {
            send(client, &packet, true)?;
        }
        // Checksums: each tile the client should hold exactly, once per checksum interval.
        client.checksum_credit = (client.checksum_credit + dt * tiles.count() as f64 / config.checksum_interval as f64).min(tiles.count() as f64);
        // A full packet's worth at a time (or every tile, on a small grid).
        let batch = MAX_CHECKSUMS_PER_PACKET.min(tiles.count()) as f64;
        while client.tokens > 0.0 && client.checksum_credit >= batch {
            let mut entries = Vec::new();
            let mut looked = 0;
            while entries.len() < MAX_CHECKSUMS_PER_PACKET && looked < tiles.count() {
                let t = client.checksum_cursor;
                client.checksum_cursor = (t + 1) % tiles.count();
                looked += 1;
                let Some(v) = history[t].last() else { continue };
                if client.acked[t] == v.version {
                    entries.push(TileChecksum { tile: t as u32, version: v.version, total: v.total, hash: v.hash });
                }
            }
            client.checksum_credit -= looked as f64;
            if entries.is_empty() {
                break;
            }
            send(client, &Packet::Checksums(entries), false)?;
        }
        // Tile updates, by priority: sent while the budget holds them, and queued past it as far
        // as the budget of the next poll reaches, where a tile's newest version has no water yet
        // (the device described it without reading it): the next capture reads it, so that it
        // is here when the budget is.
        let refill = rate * dt.clamp(1.0 / 60.0, BURST_SECONDS);
        let mut room = client.tokens + refill;
        if room <= 0.0 {
            return Ok(out);
        }
        let focus: Vec<[f32; 2]> = client.focus.clone();
        let tile_side = config.tile_size as f32 * grid.cell_size;
        let mut queue: Vec<(f64, usize)> = Vec::new();
        let mut i = 0;
        while i < client.stale.list.len() {
            let t = client.stale.list[i] as usize;
            let versions = &history[t];
            let acked = client.acked[t];
            if acked == 0 && !client.keyframe_complete && client.keyframe.is_empty() {
                // A keyframe not started yet (no complete capture since the join): its tiles
                // must all describe one frame.
                i += 1;
                continue;
            }
            let Some(current) = (if acked == 0 { client.keyframe.get(t) } else { None }).or(versions.last()) else {
                i += 1;
                continue;
            };
            if acked == current.version {
                client.stale.remove_at(i);
                continue;
            }
            i += 1;
            let (sent_version, sent_at) = client.sent[t];
            if sent_version == current.version && now - sent_at < config.resend_after as f64 {
                continue;
            }
            let base = versions.iter().find(|v| v.version == acked);
            let weight = match base {
                _ if acked == 0 => KEYFRAME_PRIORITY,
                Some(b) => (current.change - b.change) as f64,
                None => current.change as f64,
            };
            let r = tile_rect(&tiles, t);
            let centre = grid.cell_centre(r.x + r.width / 2, r.y + r.height / 2);
            let distance = focus.iter().map(|f| (f[0] - centre[0]).hypot(f[1] - centre[1])).fold(f32::INFINITY, f32::min);
            let distance = if distance.is_finite() { distance } else { 0.0 };
            let far = if config.focus_radius > 0.0 && distance > config.focus_radius { 1.0 / 16.0 } else { 1.0 };
            let in_tiles = (distance / tile_side) as f64;
            queue.push((weight * far / (1.0 + in_tiles * in_tiles), t));
        }
        queue.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut sending = true;
        for (_, t) in queue {
            sending &= client.tokens > 0.0;
            if room <= 0.0 && !sending {
                break;
            }
            let versions = &history[t];
            let acked = client.acked[t];
            let current = (if acked == 0 { client.keyframe.get(t) } else { None }).or(versions.last()).expect("queued tiles have a version").clone();
            let Some(values) = current.values.as_deref() else {
                if room > 0.0 {
                    wanted.want(t);
                    room -= *mean_update_bytes;
                }
                continue;
            };
            if !sending {
                continue;
            }
            // An acknowledged version is one the client was sent, which had its water.
            let base = versions.iter().find(|v| v.version == acked && v.version != 0).and_then(|b| Some((b.version, b.values.as_deref()?)));
            let key = (t, base.map_or(0, |b| b.0), current.version);
            let update = match encoded.get(&key) {
                Some(update) => update.clone(),
                None => {
                    if encoded.len() >= MAX_ENCODED {
                        encoded.clear();
                    }
                    let update = Arc::new(encode_tile(values, base.map(|b| b.1), tile_rect(&tiles, t).width as usize));
                    *mean_update_bytes += (update.1.len() as f64 - *mean_update_bytes) * 0.1;
                    encoded.insert(key, update.clone());
                    update
                }
            };
            let (raw_len, compressed) = (update.0, &update.1);
            let count = compressed.len().div_ceil(MAX_CHUNK_DATA).max(1);
            // Only what the budget holds now: a tile larger than the whole bucket waits for a
            // half-full one (and then leaves a debt), so the average stays at the budget. Half,
            // not full: the frame log and checksums take a little of every poll, so a bucket
            // may never be full when the tiles' turn comes.
            let cost = (compressed.len() + count * (super::codec::HEADER_BYTES + super::codec::CHUNK_HEADER_BYTES + PACKET_OVERHEAD_BYTES)) as f64;
            room -= cost;
            if cost > client.tokens && client.tokens < cap * 0.5 {
                sending = false;
                continue;
            }
            // Unreliable while the client acknowledges what it is sent (a newer version may
            // replace a lost one before it matters); reliable once nothing sent of this tile was
            // acknowledged for `resend_after`: the link may drop every unreliable packet for a
            // while (ENet's throttle did, all of them, to a listen server's client whose frames
            // stalled), and a tile must arrive whether it stopped changing or changes at every
            // capture.
            let again = now - client.unacknowledged_since[t] >= config.resend_after as f64;
            if client.unacknowledged_since[t].is_infinite() {
                client.unacknowledged_since[t] = now;
            }
            // A tile's newest version is its water at every frame since, up to the newest
            // capture's (every capture compares every tile that can have changed): stamped with
            // that, a resend (or a first send of a tile at rest) describes a frame the client has
            // not run yet. A keyframe's tiles all keep the keyframe's frame.
            let newest = versions.last().is_some_and(|v| v.version == current.version);
            let frame = if client.keyframe_complete && newest { captured_frame.max(current.frame) } else { current.frame };
            for (index, data) in compressed.chunks(MAX_CHUNK_DATA).enumerate() {
                let chunk = TileChunk { tile: t as u32, base: base.map_or(0, |b| b.0), version: current.version, frame, raw_len: raw_len as u32, index: index as u16, count: count as u16, data: data.to_vec() };
                send(client, &Packet::TileChunk(chunk), again)?;
            }
            client.sent[t] = (current.version, now);
        }
        Ok(out)
    }
}

/// What a host capture took of a tile.
enum Taken {
    /// A new version.
    Version(TileVersion),
    /// The water of the newest version, which the device had described without it.
    Water(Arc<[i32]>),
}

/// A set of tiles, flagged per tile and listed (in no order): inserting and removing in O(1),
/// iterating in O(members).
#[derive(Debug, Clone, Default)]
struct TileSet {
    member: Vec<bool>,
    list: Vec<u32>,
}

impl TileSet {
    /// Every one of `n` tiles.
    fn all(n: usize) -> TileSet {
        TileSet { member: vec![true; n], list: (0..n as u32).collect() }
    }

    fn insert(&mut self, t: usize) {
        if !std::mem::replace(&mut self.member[t], true) {
            self.list.push(t as u32);
        }
    }

    /// Removes the tile at place `i` of the list (the last takes its place).
    fn remove_at(&mut self, i: usize) {
        let t = self.list.swap_remove(i);
        self.member[t as usize] = false;
    }
}
