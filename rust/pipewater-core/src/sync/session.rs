//! One side of a sync session around a [`Simulation`], as an engine layer drives it once a frame:
//! the server captures its water at the sync rate and polls every client, and answers edit
//! requests after the game's decision; a client pulls its own water towards the server's
//! ([`Replica`]) and sends what its [`SyncClient`] polls. Nothing here moves bytes: the engine
//! hands in what arrived (peer id and bytes) and sends what comes out, reliably or not as
//! [`Outgoing::reliable`] says.

use super::{apply_edit, terrain_hash, ClientEvent, Edit, Outgoing, Replica, ReplicaFrame, ServerEvent, SyncClient, SyncConfig, SyncServer, SERVER_PEER};
use crate::backend::{TileChanges, TileChangesReader};
use crate::error::{Error, Result};
use crate::simulation::Simulation;

/// Syncs a second (captures of the server's water and polls of each side). Half of a 60 Hz
/// physics rate: a tile's change is sent at most 33 ms after it happened.
pub const SYNC_HZ: f64 = 30.0;

/// Frames a client's water runs behind the newest server frame it was told of (67 ms at 60 Hz):
/// room for tile updates that arrive after the frame log of their frame.
pub const CLIENT_LAG_FRAMES: usize = 4;
/// Most server frames a client runs in one of its frames when catching up.
pub const MAX_CATCH_UP_FRAMES: usize = 32;

/// A client's request as the server's game sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EditRequest {
    /// The client's peer id.
    pub peer: i32,
    /// The client's id of the request.
    pub request: u32,
    /// What it asks for.
    pub edit: Edit,
}

/// The server's side of a session: the protocol's server over the simulation it owns.
#[derive(Debug)]
pub struct ServerSession {
    server: SyncServer,
    requests: Vec<EditRequest>,
    next_sync: f64,
    captures: u64,
    tiles_read: u64,
    tiles_changed: u64,
    /// The water as the last whole read took it (quanta, and the pipes' flows), row-major; empty
    /// until a capture needs one.
    depth: Vec<i32>,
    flow: Vec<[f32; 4]>,
    /// The changed tiles' water as the last capture on the CPU read it (kept for its buffers).
    tile_reads: TileChanges,
    costs: SyncCosts,
    /// Whether the backend compares the tiles on its device ([`Simulation::begin_tile_changes`]),
    /// from the copy the last whole read took.
    on_device: bool,
    /// The comparison begun at the last sync, and the server frames run when it began.
    pending: Option<(u64, PendingChanges)>,
    /// Tiles that differed at the last comparison: while a keyframe waits, the next reads up to
    /// twice as many.
    last_differing: usize,
    /// Whether the last sync found the comparison still on the device and left it.
    waited_once: bool,
}

/// A comparison of the tiles begun on the device.
struct PendingChanges(TileChangesReader);

impl std::fmt::Debug for PendingChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingChanges")
    }
}

/// Fewest tiles that change a comparison on the device reads back while a keyframe waits for
/// every tile's water (more differ only when the water moves in more places than a river: the
/// next reads twice as many as differed), beyond the tiles the clients are to be sent.
pub const MIN_TILES_READ: usize = 64;

/// Where the server's sync spent its time, summed over the session ([`ServerSession::costs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SyncCosts {
    /// Reading the changed tiles' water from the backend and comparing it with the last capture.
    pub capture: std::time::Duration,
    /// Polling the clients: choosing, delta-coding and compressing their tiles, the frame log,
    /// edits and checksums.
    pub poll: std::time::Duration,
    /// Beginning the device's comparison after the polls (recording it with the tiles they want
    /// read); part of `capture`.
    pub begin: std::time::Duration,
}

impl ServerSession {
    /// A server for `sim`'s water as it is now (its terrain's hash is what clients must match).
    pub fn start(config: SyncConfig, sim: &mut Simulation) -> Result<Self> {
        let state = sim.read_state()?;
        let hash = terrain_hash(&state.grid, &state.terrain);
        let server = SyncServer::new(config, state.grid, hash, &state.depth, &state.flow, sim.frames())?;
        // What changed before the start is in `state`: the next capture looks only past it (a
        // GPU compares with a copy of this water on its device).
        let _ = sim.take_changed_tiles();
        let on_device = sim.reset_tile_changes(&server.tiles())?;
        Ok(ServerSession {
            server,
            requests: Vec::new(),
            next_sync: f64::NEG_INFINITY,
            captures: 0,
            tiles_read: 0,
            tiles_changed: 0,
            depth: Vec::new(),
            flow: Vec::new(),
            tile_reads: TileChanges::default(),
            costs: SyncCosts::default(),
            on_device,
            pending: None,
            last_differing: 0,
            waited_once: false,
        })
    }

    /// The protocol's server (figures, settings).
    pub fn server(&self) -> &SyncServer {
        &self.server
    }

    /// Changes the budgets (see [`SyncServer::set_config`]).
    pub fn set_config(&mut self, config: SyncConfig) -> Result<()> {
        self.server.set_config(config)
    }

    /// A packet from client `peer`: refused (with the reason, changing nothing) when it is not a
    /// well-formed client packet; an edit request is kept for [`ServerSession::take_requests`].
    pub fn receive(&mut self, peer: i32, bytes: &[u8], now: f64) -> Result<()> {
        if let Some(ServerEvent::EditRequested { peer, request, edit }) = self.server.receive(peer, bytes, now)? {
            self.requests.push(EditRequest { peer, request, edit });
        }
        Ok(())
    }

    /// The edit requests that arrived, in order: answer each with [`ServerSession::accept`] or
    /// [`ServerSession::refuse`].
    pub fn take_requests(&mut self) -> Vec<EditRequest> {
        std::mem::take(&mut self.requests)
    }

    /// Applies a request the game accepted to `sim` and sends it to every client; an edit the
    /// simulation refuses (out of its ranges) is refused to the client with that error.
    pub fn accept(&mut self, sim: &mut Simulation, request: EditRequest) -> Result<u32> {
        match apply_edit(sim, request.edit, None) {
            Ok(applied) => Ok(self.server.accept_edit(request.peer, applied)),
            Err(e) => {
                // The client hears why; the server's game hears it as the error.
                self.server.refuse_edit(request.peer, request.request, &e.to_string())?;
                Err(e)
            }
        }
    }

    /// Refuses a request, telling the client `reason`. A client that left meanwhile is no error.
    pub fn refuse(&mut self, request: EditRequest, reason: &str) {
        let _ = self.server.refuse_edit(request.peer, request.request, reason);
    }

    /// An edit the server's own game made (already applied to its simulation): every client
    /// gets it in order. For [`Edit::AddSource`], `id` is the server's id of the new source.
    pub fn broadcast(&mut self, edit: Edit) -> u32 {
        self.server.accept_edit(SERVER_PEER, edit)
    }

    /// A client disconnected.
    pub fn remove_client(&mut self, peer: i32) -> bool {
        self.server.remove_client(peer)
    }

    /// Once a frame, after the step: notes the frame the water ran (its step and steps, which
    /// the clients run too), and at the sync rate captures the water and returns every
    /// client's packets (peer, packet); between syncs, nothing. Must be called after every
    /// frame that ran steps: two frames run since the last call are an error (the clients
    /// could not run the first as the server did).
    pub fn frame(&mut self, sim: &mut Simulation, now: f64) -> Result<Vec<(i32, Outgoing)>> {
        let missed = sim.frames().saturating_sub(self.server.frame());
        if missed > 1 {
            return Err(Error::invalid("frames since the last ServerSession::frame", missed, "0 ..= 1 (call it after every advance)"));
        }
        if missed == 1 {
            let report = sim.last_report();
            self.server.record_frame(report.step, report.substeps)?;
        }
        if now < self.next_sync {
            return Ok(Vec::new());
        }
        // Catch up by whole periods so a long frame does not cause a burst of syncs after it.
        self.next_sync = if self.next_sync.is_finite() && now - self.next_sync < 1.0 { self.next_sync + 1.0 / SYNC_HZ } else { now + 1.0 / SYNC_HZ };
        if self.server.clients().is_empty() {
            // Nobody to send to: no need to read the water (a single player with sync on). The
            // first capture after a join compares against the last one, so nothing is missed.
            return Ok(Vec::new());
        }
        let started = std::time::Instant::now();
        self.capture(sim)?;
        let polled = std::time::Instant::now();
        self.costs.capture += polled - started;
        let out = self.poll_clients(now);
        let begun = std::time::Instant::now();
        self.costs.poll += begun - polled;
        // After the polls: the comparison reads the tiles they are to send next.
        self.begin_comparison(sim)?;
        self.costs.capture += begun.elapsed();
        self.costs.begin += begun.elapsed();
        out
    }

    /// Takes the water into the server's tiles, reading as little as the backend allows:
    /// - on the CPU, the tiles it stepped or edited since the last capture (only those can
    ///   differ), now;
    /// - on wgpu and Godot's RenderingDevice, what the device's comparison with the last
    ///   capture's copy found ([`ServerSession::begin_comparison`], begun at the last sync after
    ///   the polls; taken now or, when the device has not finished it, at the next sync,
    ///   waiting then): a record of each tile that changed, and the water of only the tiles the
    ///   polls want to send, so a capture describes the water of a sync or two before
    ///   ([`SyncServer::capture_records`]);
    /// - elsewhere (or when a keyframe needs every tile of one frame and the device's reads
    ///   could not gather them, or a read failed) every tile, waiting for the device.
    fn capture(&mut self, sim: &mut Simulation) -> Result<()> {
        let tiles = self.server.tiles();
        if let Some(changed) = sim.take_changed_tiles().and_then(|c| c.tiles.cover(&c.awake, &tiles)) {
            self.pending = None;
            // Each changed tile read alone and compared as read: no grid-sized copy between.
            let which: Vec<u32> = (0..changed.len() as u32).filter(|&t| changed[t as usize]).collect();
            sim.read_tiles(&tiles, &which, &mut self.tile_reads)?;
            self.tiles_read += which.len() as u64;
            let frame = self.server.frame();
            self.tiles_changed += self.server.capture_tiles(&self.tile_reads, frame, true)? as u64;
            self.captures += 1;
            return Ok(());
        }
        if !self.waited_once && self.pending.as_ref().is_some_and(|(_, p)| !(p.0.ready)()) && !self.server.welcome_pending() {
            // The device is behind: take it at the next sync rather than wait for it (then wait:
            // a read begun two syncs ago is as late as a capture may be).
            self.waited_once = true;
            return Ok(());
        }
        self.waited_once = false;
        let mut taken = self.on_device;
        if let Some((frame, PendingChanges(reader))) = self.pending.take() {
            // A read that failed (a lost device) is not taken: the whole read below starts over.
            taken = false;
            if let Ok(changes) = (reader.read)() {
                self.tiles_read += changes.tiles.len() as u64;
                self.last_differing = changes.differing;
                self.tiles_changed += self.server.capture_records(&changes, frame)? as u64;
                self.captures += 1;
                taken = true;
            }
        }
        if taken && !self.server.keyframe_needs_whole_read() {
            return Ok(());
        }
        // Made at the first whole read: a CPU server, which reads its changed tiles alone,
        // never holds a grid-sized copy of the water (a GPU server does, from its first one).
        let cells = self.server.tiles().cells.iter().map(|&n| n as usize).product();
        self.depth.resize(cells, 0);
        self.flow.resize(cells, [0.0; 4]);
        sim.read_depth(None, &mut self.depth)?;
        sim.read_flow(None, &mut self.flow)?;
        self.tiles_read += tiles.count() as u64;
        self.tiles_changed += self.server.capture(&self.depth, &self.flow, None)? as u64;
        self.captures += 1;
        // The device compares with this water from now on.
        self.on_device = sim.reset_tile_changes(&tiles)?;
        Ok(())
    }

    /// Begins the device's comparison with the last capture's copy, reading the tiles the
    /// server asks for ([`SyncServer::tile_request`]), where the backend compares on its device
    /// and no comparison is out.
    fn begin_comparison(&mut self, sim: &mut Simulation) -> Result<()> {
        if !self.on_device || self.pending.is_some() || self.server.clients().is_empty() {
            return Ok(());
        }
        let mut request = self.server.tile_request();
        if request.read_every_change {
            request.max_tiles += (2 * self.last_differing).max(MIN_TILES_READ);
        }
        if let Some(reader) = sim.begin_tile_changes(&self.server.tiles(), &request)? {
            self.server.tile_request_begun();
            self.pending = Some((sim.frames(), PendingChanges(reader)));
        }
        Ok(())
    }

    /// Every client's packets as of now.
    fn poll_clients(&mut self, now: f64) -> Result<Vec<(i32, Outgoing)>> {
        let mut out = Vec::new();
        for peer in self.server.clients() {
            out.extend(self.server.poll(peer, now)?.into_iter().map(|o| (peer, o)));
        }
        Ok(out)
    }

    /// Captures of the water taken so far.
    pub fn captures(&self) -> u64 {
        self.captures
    }

    /// Tiles whose water was read back over all captures so far: on the CPU those that changed;
    /// on a GPU those the clients were to be sent next (and, while a keyframe waits, every one
    /// that changed); every tile each capture on a backend that cannot tell which changed.
    pub fn tiles_read(&self) -> u64 {
        self.tiles_read
    }

    /// Tiles whose water changed, over all captures so far: on a GPU, more than it read back
    /// (it reads those it sends).
    pub fn tiles_changed(&self) -> u64 {
        self.tiles_changed
    }

    /// Server frames run when the water of the newest capture was taken (on a GPU, a capture
    /// holds the tiles read at the sync before it).
    pub fn captured_frame(&self) -> u64 {
        self.server.captured_frame()
    }

    /// Time spent capturing and polling so far.
    pub fn costs(&self) -> SyncCosts {
        self.costs
    }
}

/// A client's side of a session: its own water kept near the server's.
#[derive(Debug)]
pub struct ClientSession {
    replica: Replica,
    refusals: Vec<(u32, String)>,
    largest_difference: f32,
    next_sync: f64,
}

impl ClientSession {
    /// A client whose own water is `sim` (its terrain now must be the server's at its start).
    pub fn start(sim: &mut Simulation) -> Result<Self> {
        let state = sim.read_state()?;
        let hash = terrain_hash(&state.grid, &state.terrain);
        Ok(ClientSession { replica: Replica::new(SyncClient::new(state.grid, hash)), refusals: Vec::new(), largest_difference: 0.0, next_sync: f64::NEG_INFINITY })
    }

    /// The protocol's client (figures, the exact copy of the server's tiles).
    pub fn client(&self) -> &SyncClient {
        &self.replica.client
    }

    /// A packet from peer `from`: refused (with the reason, changing nothing) unless it is a
    /// well-formed packet from the server (peer 1).
    pub fn receive(&mut self, from: i32, bytes: &[u8]) -> Result<()> {
        match self.replica.client.receive(from, bytes)? {
            Some(ClientEvent::Refused { request, reason }) => self.refusals.push((request, reason)),
            Some(ClientEvent::Welcomed) => self.replica.restart(),
            _ => {}
        }
        Ok(())
    }

    /// Sends the server a request for `edit`; returns its id.
    pub fn request(&mut self, edit: Edit) -> u32 {
        self.replica.client.request_edit(edit)
    }

    /// Requests the server refused: (request id, reason).
    pub fn take_refusals(&mut self) -> Vec<(u32, String)> {
        std::mem::take(&mut self.refusals)
    }

    /// Where the player looks (local X, Z m); see [`SyncClient::set_focus`].
    pub fn set_focus(&mut self, points: &[[f32; 2]]) -> Result<()> {
        self.replica.client.set_focus(points)
    }

    /// Once a frame, instead of advancing `sim` itself: runs the server's frames that are due
    /// ([`Replica::frame`]), at the server's pace and [`CLIENT_LAG_FRAMES`] behind the newest
    /// the client was told of, so that a tile update arriving up to that many frames after
    /// the frame log is still applied at its own frame. When the server's frames pile up (a
    /// client slower than the server, a stall), it catches up by a quarter of the excess a
    /// frame (at most [`MAX_CATCH_UP_FRAMES`]), so that its water still shows most frames.
    pub fn step(&mut self, sim: &mut Simulation) -> Result<ReplicaFrame> {
        let pending = self.replica.client.frames_pending();
        let frames = if pending > CLIENT_LAG_FRAMES { (1 + (pending - CLIENT_LAG_FRAMES - 1) / 4).min(MAX_CATCH_UP_FRAMES) } else { 0 };
        let frame = self.replica.frame(sim, frames)?;
        if frame.difference_measured {
            self.largest_difference = frame.largest_difference;
        }
        Ok(frame)
    }

    /// Once a frame: at the sync rate, the packets for the server.
    pub fn frame(&mut self, now: f64) -> Vec<Outgoing> {
        if now < self.next_sync {
            return Vec::new();
        }
        self.next_sync = if self.next_sync.is_finite() && now - self.next_sync < 1.0 { self.next_sync + 1.0 / SYNC_HZ } else { now + 1.0 / SYNC_HZ };
        self.replica.client.poll(now)
    }

    /// Whether the client's water started from the server's keyframe and runs the server's
    /// frames ([`Replica::started`]).
    pub fn started(&self) -> bool {
        self.replica.started()
    }

    /// Largest difference (m) between the client's own water and the server's copy, over the
    /// tiles corrected in the last frame that measured it (every frame that corrects on the CPU,
    /// about once a second of corrections on a GPU: [`super::replica::GPU_DIFFERENCE_EVERY`]):
    /// how far the client's own step had drifted from the server's water at the copy's version.
    pub fn largest_difference(&self) -> f32 {
        self.largest_difference
    }

    /// The server went away: forget the session; the next poll says hello again.
    pub fn reset(&mut self) {
        self.replica.reset();
        self.refusals.clear();
    }
}
