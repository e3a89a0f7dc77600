//! Water that several players share (`multiplayer_sync`): the node's multiplayer authority (the
//! server, peer 1) simulates and serves; every other peer steps its own copy pulled towards the
//! server's (docs/MULTIPLAYER.md). The protocol and what each side does to its simulation live in
//! `pipewater_core::sync` ([`ServerSession`], [`ClientSession`]); this file only moves bytes over
//! the node's `SceneMultiplayer` (`send_bytes` and its `peer_packet` signal), asks the game about
//! client edits and reports errors to Godot.

use super::PipeWater;
use crate::mapping::global_to_local_point;
use godot::classes::multiplayer_peer::{ConnectionStatus, TransferMode};
use godot::classes::{Camera3D, MultiplayerApi, Node3D, SceneMultiplayer, Time};
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::sync::codec::MAGIC;
use pipewater_core::sync::{ClientSession, Edit, EditRequest, Outgoing, ServerSession, SyncConfig, SERVER_PEER};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Refused packets reported to Godot's log one by one; past it they are only counted
/// (`get_sync_stats()["packets_refused"]`), so a hostile peer cannot flood the log.
const MAX_REPORTED_REFUSALS: u64 = 20;
/// The `SceneMultiplayer` channel the water's packets use.
const CHANNEL: i32 = 0;
/// Most packets waiting for the next physics frame; past it new ones are dropped (the protocol
/// recovers from loss), so a node out of the tree, or a flood, cannot grow the inbox without end.
const MAX_INBOX_PACKETS: usize = 16_384;

/// What the multiplayer's signals delivered since the last frame.
#[derive(Default)]
struct Inbox {
    packets: Vec<(i32, Vec<u8>)>,
    disconnected: Vec<i32>,
}

/// This peer's part in the session.
enum Role {
    Server(ServerSession),
    Client(ClientSession),
}

/// The node's link to the other peers: the session, the signals it listens to, and figures.
#[derive(Default)]
pub struct SyncLink {
    role: Option<Role>,
    inbox: Rc<RefCell<Inbox>>,
    /// The `SceneMultiplayer` whose signals fill `inbox`, and the callables connected to it.
    listening: Option<(Gd<SceneMultiplayer>, Vec<(&'static str, Callable)>)>,
    started_at: f64,
    /// Client: seconds from its session's start to every tile received.
    join_seconds: Option<f64>,
    bytes_sent: u64,
    bytes_received: u64,
    packets_refused: u64,
    /// A reason this peer cannot take part, reported once until it changes.
    reported: String,
}

/// The kind and (amount, radius) of an edit as GDScript sees it; local X, Z.
pub(super) fn edit_fields(edit: &Edit) -> (&'static str, [f32; 2], f32, f32) {
    match *edit {
        Edit::AddWater { x, z, volume, radius } => ("add_water", [x, z], volume, radius),
        Edit::RemoveWater { x, z, volume, radius } => ("remove_water", [x, z], volume, radius),
        Edit::ModifyTerrain { x, z, delta_height, radius } => ("modify_terrain", [x, z], delta_height, radius),
        Edit::AddSource { x, z, rate, radius, .. } => ("add_source", [x, z], rate, radius),
        Edit::SetSourceRate { rate, .. } => ("set_source_rate", [0.0, 0.0], rate, 0.0),
        Edit::RemoveSource { .. } => ("remove_source", [0.0, 0.0], 0.0, 0.0),
    }
}

/// What the game's `edit_filter` answered: `true` accepts; `false`, null or anything else
/// refuses, with the string as the reason when it returns one.
pub(super) fn filter_verdict(answer: &Variant) -> Result<(), String> {
    if let Ok(ok) = answer.try_to::<bool>() {
        return if ok { Ok(()) } else { Err("refused by the server's edit_filter".to_string()) };
    }
    if let Ok(reason) = answer.try_to::<GString>() {
        let reason = reason.to_string();
        return Err(if reason.is_empty() { "refused by the server's edit_filter".to_string() } else { reason });
    }
    Err(format!("refused: the server's edit_filter returned {answer} (expected a bool, or a String to refuse with a reason)"))
}

fn seconds_now() -> f64 {
    Time::singleton().get_ticks_usec() as f64 * 1.0e-6
}

impl PipeWater {
    /// Whether this node's water is a multiplayer client's, which runs the server's frames.
    pub(super) fn is_sync_client(&self) -> bool {
        matches!(self.sync_link.role, Some(Role::Client(_)))
    }

    /// Before the step: follows the multiplayer's state (server, client, or neither), takes what
    /// arrived, answers edit requests (server) or runs the server's frames that are due, setting
    /// the water to the server's tiles at theirs (client).
    pub(super) fn sync_before_step(&mut self) {
        if !self.multiplayer_sync || godot::classes::Engine::singleton().is_editor_hint() {
            if self.sync_link.role.is_some() || self.sync_link.listening.is_some() {
                self.stop_sync();
            }
            return;
        }
        // While a load is applied in parts the water waits, and every call that reads it is
        // refused (Error::Busy): the session picks up once it has landed.
        if self.sim.as_ref().is_none_or(|s| s.is_applying_restore()) || !self.base().is_inside_tree() {
            return;
        }
        self.follow_multiplayer_role();
        self.take_inbox();
        match self.sync_link.role {
            Some(Role::Server(_)) => self.answer_requests(),
            Some(Role::Client(_)) => {
                self.send_focus();
                let (Some(Role::Client(session)), Some(sim)) = (self.sync_link.role.as_mut(), self.sim.as_mut()) else { return };
                let started = std::time::Instant::now();
                let result = session.step(sim).map(|_| ());
                self.step_usec = started.elapsed().as_micros() as i64;
                let refusals = session.take_refusals();
                if session.client().is_complete() && self.sync_link.join_seconds.is_none() {
                    self.sync_link.join_seconds = Some(seconds_now() - self.sync_link.started_at);
                }
                self.errors.core_result("multiplayer_sync", Some(result));
                for (request, reason) in refusals {
                    godot_warn!("PipeWater: multiplayer_sync: the server refused edit request {request}: {reason}");
                    self.base_mut().emit_signal("edit_refused", &[(request as i64).to_variant(), reason.to_variant()]);
                }
            }
            None => {}
        }
    }

    /// After the step: the packets of this frame (at the sync rate) go out.
    pub(super) fn sync_after_step(&mut self) {
        if self.sim.as_ref().is_some_and(|s| s.is_applying_restore()) {
            return;
        }
        let now = seconds_now();
        let outgoing: Vec<(i32, Outgoing)> = match (self.sync_link.role.as_mut(), self.sim.as_mut()) {
            (Some(Role::Server(session)), Some(sim)) => match session.frame(sim, now) {
                Ok(out) => out,
                Err(e) => {
                    self.errors.core_result::<()>("multiplayer_sync", Some(Err(e)));
                    return;
                }
            },
            (Some(Role::Client(session)), _) => session.frame(now).into_iter().map(|o| (SERVER_PEER, o)).collect(),
            _ => return,
        };
        self.send_packets(outgoing);
    }

    /// In a client session: sends `edit` to the server as a request and returns `Some(true)`;
    /// on a peer that should be a client but has no connection, reports that and returns
    /// `Some(false)` (nothing changes); `None` where the node edits its own water (no sync, or
    /// the server).
    pub(super) fn sync_client_edit(&mut self, method: &str, edit: Edit) -> Option<bool> {
        if !self.sync_is_client() {
            return None;
        }
        if !matches!(edit, Edit::AddWater { .. } | Edit::RemoveWater { .. } | Edit::ModifyTerrain { .. }) {
            self.errors.reject(format!("{method}: on a multiplayer client (multiplayer_sync on, not the multiplayer authority) sources are the server's; ask the server with an RPC, or call it on the server"));
            return Some(false);
        }
        self.follow_multiplayer_role();
        match self.sync_link.role.as_mut() {
            Some(Role::Client(session)) => {
                session.request(edit);
                Some(true)
            }
            _ => {
                self.errors.reject(format!("{method}: not connected to the water's server (multiplayer_sync is on and this peer is not the multiplayer authority): the edit is refused"));
                Some(false)
            }
        }
    }

    /// On the server: an edit the server's own game made (already applied) reaches every client.
    pub(super) fn sync_server_edit(&mut self, edit: Edit) {
        if let Some(Role::Server(session)) = self.sync_link.role.as_mut() {
            session.broadcast(edit);
        }
    }

    /// Whether the water's edits here would be sent to a server rather than applied: a
    /// `multiplayer_sync` node that is not the multiplayer authority.
    pub(super) fn sync_is_client(&self) -> bool {
        self.multiplayer_sync && self.multiplayer_api().is_some_and(|api| api.has_multiplayer_peer()) && !self.base().is_multiplayer_authority()
    }

    /// The node's multiplayer while it is in the tree.
    fn multiplayer_api(&self) -> Option<Gd<MultiplayerApi>> {
        if self.base().is_inside_tree() { self.base().get_multiplayer() } else { None }
    }

    /// The figures of `get_sync_stats()`.
    pub(super) fn sync_stats(&self) -> VarDictionary {
        let mut d = VarDictionary::new();
        let link = &self.sync_link;
        let role = match &link.role {
            Some(Role::Server(_)) => "server",
            Some(Role::Client(_)) => "client",
            None if self.multiplayer_sync => "waiting",
            None => "off",
        };
        d.set("role", role);
        d.set("bytes_sent", link.bytes_sent as i64);
        d.set("bytes_received", link.bytes_received as i64);
        d.set("packets_refused", link.packets_refused as i64);
        d.set("seconds", if link.role.is_some() { seconds_now() - link.started_at } else { 0.0 });
        match &link.role {
            Some(Role::Server(session)) => {
                let server = session.server();
                let mut clients = VarDictionary::new();
                for peer in server.clients() {
                    let Some(s) = server.client_stats(peer) else { continue };
                    let mut c = VarDictionary::new();
                    c.set("bytes_sent", s.bytes_sent as i64);
                    c.set("tiles_current", s.tiles_current as i64);
                    c.set("join_seconds", s.join_seconds.unwrap_or(-1.0));
                    clients.set(peer as i64, &c.to_variant());
                }
                d.set("clients", &clients.to_variant());
                d.set("tiles", server.tiles().count() as i64);
                d.set("captures", session.captures() as i64);
                d.set("tiles_read", session.tiles_read() as i64);
                d.set("frame", server.frame() as i64);
            }
            Some(Role::Client(session)) => {
                let client = session.client();
                let stats = client.stats();
                d.set("tiles", client.tiles().map_or(0, |t| t.count() as i64));
                d.set("tiles_applied", stats.tiles_applied as i64);
                d.set("checksum_mismatches", stats.checksum_mismatches as i64);
                d.set("complete", client.is_complete());
                d.set("join_seconds", link.join_seconds.unwrap_or(-1.0));
                d.set("largest_difference", session.largest_difference() as f64);
                d.set("frame", client.next_frame() as i64);
                d.set("started", session.started());
            }
            None => {}
        }
        d
    }

    /// Takes the role the multiplayer gives this peer now, starting or ending sessions.
    fn follow_multiplayer_role(&mut self) {
        let Some(api) = self.multiplayer_api() else { return };
        if !api.has_multiplayer_peer() {
            // No peer at all (not even Godot's offline one): nobody to serve or to listen to.
            self.end_role();
            return;
        }
        let Ok(scene) = api.clone().try_cast::<SceneMultiplayer>() else {
            self.report_once("multiplayer_sync needs the node's multiplayer to be a SceneMultiplayer (Godot's default MultiplayerAPI)".to_string());
            return;
        };
        self.listen_to(&scene);
        let authority = self.base().get_multiplayer_authority();
        let me = api.get_unique_id();
        let wanted_server = self.base().is_multiplayer_authority();
        if authority != SERVER_PEER {
            self.report_once(format!("multiplayer_sync: the node's multiplayer authority is peer {authority}; the water's server must be peer {SERVER_PEER} (the multiplayer server), so this peer ({me}) neither serves nor shows the water"));
            self.end_role();
            return;
        }
        let connected = connected(&api);
        match (&self.sync_link.role, wanted_server, connected) {
            (Some(Role::Server(_)), true, _) | (Some(Role::Client(_)), false, true) => {}
            (_, true, _) => self.begin_role(true),
            (_, false, true) => self.begin_role(false),
            (_, false, false) => self.end_role(),
        }
    }

    fn begin_role(&mut self, server: bool) {
        let Some(sim) = self.sim.as_mut() else { return };
        let result = if server {
            let config = SyncConfig { budget_kbps: self.sync_budget_kbps as f32, ..SyncConfig::default() };
            ServerSession::start(config, sim).map(Role::Server)
        } else {
            ClientSession::start(sim).map(Role::Client)
        };
        if let Some(role) = self.errors.core_result("multiplayer_sync", Some(result)) {
            self.sync_link.role = Some(role);
            self.sync_link.started_at = seconds_now();
            self.sync_link.join_seconds = None;
            self.sync_link.reported.clear();
            // Packets of an earlier session say nothing about this one.
            self.sync_link.inbox.borrow_mut().packets.clear();
        }
    }

    fn end_role(&mut self) {
        self.sync_link.role = None;
    }

    /// Ends the session and lets go of the multiplayer's signals (also when the node is freed).
    pub(super) fn stop_sync(&mut self) {
        self.end_role();
        if let Some((mut scene, callables)) = self.sync_link.listening.take() {
            for (signal, callable) in callables {
                if scene.is_connected(signal, &callable) {
                    scene.disconnect(signal, &callable);
                }
            }
        }
    }

    /// Connects the multiplayer's `peer_packet` and `peer_disconnected` to the inbox (once per
    /// `SceneMultiplayer`).
    fn listen_to(&mut self, scene: &Gd<SceneMultiplayer>) {
        if self.sync_link.listening.as_ref().is_some_and(|(s, _)| s == scene) {
            return;
        }
        self.stop_sync();
        let mut scene = scene.clone();
        let inbox = self.sync_link.inbox.clone();
        let packet = Callable::from_fn("pipe_water_sync_packet", move |args: &[&Variant]| {
            if let (Some(id), Some(bytes)) = (args.first().and_then(|v| v.try_to::<i64>().ok()), args.get(1).and_then(|v| v.try_to::<PackedByteArray>().ok())) {
                // Other parts of the game may use send_bytes too: only ours start with the magic.
                let mut inbox = inbox.borrow_mut();
                if bytes.as_slice().starts_with(&MAGIC) && inbox.packets.len() < MAX_INBOX_PACKETS {
                    inbox.packets.push((id as i32, bytes.to_vec()));
                }
            }
            Variant::nil()
        });
        let inbox = self.sync_link.inbox.clone();
        let gone = Callable::from_fn("pipe_water_sync_peer_gone", move |args: &[&Variant]| {
            if let Some(id) = args.first().and_then(|v| v.try_to::<i64>().ok()) {
                inbox.borrow_mut().disconnected.push(id as i32);
            }
            Variant::nil()
        });
        scene.connect("peer_packet", &packet);
        scene.connect("peer_disconnected", &gone);
        self.sync_link.listening = Some((scene, vec![("peer_packet", packet), ("peer_disconnected", gone)]));
    }

    /// Hands what arrived to the session; a refused packet is reported (the first few) and
    /// counted, and changes nothing.
    fn take_inbox(&mut self) {
        let Inbox { packets, disconnected } = std::mem::take(&mut *self.sync_link.inbox.borrow_mut());
        let now = seconds_now();
        for (peer, bytes) in packets {
            let result = match self.sync_link.role.as_mut() {
                Some(Role::Server(session)) => session.receive(peer, &bytes, now),
                Some(Role::Client(session)) => session.receive(peer, &bytes),
                None => continue,
            };
            match result {
                Ok(()) => self.sync_link.bytes_received += bytes.len() as u64,
                Err(e) => {
                    self.sync_link.packets_refused += 1;
                    if self.sync_link.packets_refused <= MAX_REPORTED_REFUSALS {
                        self.errors.reject(format!("multiplayer_sync: refused a packet of {} bytes from peer {peer}: {}", bytes.len(), crate::errors::core_message(&e)));
                    }
                }
            }
        }
        for peer in disconnected {
            match self.sync_link.role.as_mut() {
                Some(Role::Server(session)) => {
                    session.remove_client(peer);
                }
                Some(Role::Client(session)) if peer == SERVER_PEER => session.reset(),
                _ => {}
            }
        }
    }

    /// Server: asks the game about each client edit (`allow_client_edits`, then `edit_filter`),
    /// applies the accepted ones and tells every client, and emits `edit_requested`.
    fn answer_requests(&mut self) {
        let requests = match self.sync_link.role.as_mut() {
            Some(Role::Server(session)) => session.take_requests(),
            _ => return,
        };
        let transform = self.global_transform();
        for request in requests {
            let (kind, xz, amount, radius) = edit_fields(&request.edit);
            let position = transform * Vector3::new(xz[0], 0.0, xz[1]);
            let mut verdict = if !self.allow_client_edits {
                Err("client edits are not allowed on this server (allow_client_edits is off)".to_string())
            } else if self.edit_filter.is_valid() {
                let filter = self.edit_filter.clone();
                let args = varray![request.peer, kind, position, amount, radius];
                // Through base_mut(), so that the filter may call back into this node.
                let guard = self.base_mut();
                let answer = filter.callv(&args);
                drop(guard);
                filter_verdict(&answer)
            } else {
                Ok(())
            };
            if verdict.is_ok() {
                verdict = self.apply_client_edit(request);
            } else if let (Err(reason), Some(Role::Server(session))) = (&verdict, self.sync_link.role.as_mut()) {
                session.refuse(request, reason);
            }
            self.base_mut().emit_signal("edit_requested", &[request.peer.to_variant(), kind.to_variant(), position.to_variant(), amount.to_variant(), radius.to_variant(), verdict.is_ok().to_variant()]);
        }
    }

    fn apply_client_edit(&mut self, request: EditRequest) -> Result<(), String> {
        let (Some(Role::Server(session)), Some(sim)) = (self.sync_link.role.as_mut(), self.sim.as_mut()) else { return Err("no simulation".to_string()) };
        match session.accept(sim, request) {
            Ok(_) => {
                self.show_edit();
                Ok(())
            }
            Err(e) => {
                let message = crate::errors::core_message(&e);
                self.errors.reject(format!("multiplayer_sync: peer {}'s {} request: {message}", request.peer, edit_fields(&request.edit).0));
                Err(message)
            }
        }
    }

    /// Client: tells the server where this player looks (`sync_focus_nodes`, else the camera).
    fn send_focus(&mut self) {
        let transform = self.global_transform();
        let mut points = Vec::new();
        let nodes: Vec<NodePath> = self.sync_focus_nodes.iter_shared().collect();
        for path in nodes.iter().take(pipewater_core::sync::codec::MAX_FOCUS_POINTS) {
            if let Some(node) = self.base().get_node_or_null(path).and_then(|n| n.try_cast::<Node3D>().ok()) {
                points.push(node.get_global_position());
            }
        }
        if nodes.is_empty() {
            let camera: Option<Gd<Camera3D>> = self.base().get_viewport().and_then(|v| v.get_camera_3d());
            points.extend(camera.map(|c| c.get_global_position()));
        }
        let local: Vec<[f32; 2]> = points.into_iter().filter_map(|p| global_to_local_point(&transform, p)).map(|l| [l.x, l.z]).collect();
        if let Some(Role::Client(session)) = self.sync_link.role.as_mut() {
            // Points far off the grid are the server's to refuse; here only non-finite ones fail.
            let _ = session.set_focus(&local);
        }
    }

    fn send_packets(&mut self, outgoing: Vec<(i32, Outgoing)>) {
        let Some((scene, _)) = self.sync_link.listening.as_ref() else { return };
        let mut scene = scene.clone();
        let mut failed: BTreeMap<i32, godot::global::Error> = BTreeMap::new();
        for (peer, out) in outgoing {
            let mode = if out.reliable { TransferMode::RELIABLE } else { TransferMode::UNRELIABLE };
            let error = scene.send_bytes_ex(&PackedByteArray::from(out.bytes.as_slice())).id(peer).mode(mode).channel(CHANNEL).done();
            if error == godot::global::Error::OK {
                self.sync_link.bytes_sent += out.bytes.len() as u64;
            } else {
                failed.insert(peer, error);
            }
        }
        for (peer, error) in failed {
            // A peer that left this frame; its disconnection arrives by signal.
            self.report_once(format!("multiplayer_sync: send_bytes to peer {peer} failed ({error:?})"));
        }
    }

    /// Sets `sync_budget_kbps` (`8 ..= 1000000`); a running server takes it at once.
    pub(super) fn store_sync_budget(&mut self, value: f64) {
        if self.errors.accept(crate::validate::float_in("sync_budget_kbps", value, 8.0, 1.0e6, " kbit/s")).is_none() {
            return;
        }
        self.sync_budget_kbps = value;
        if let Some(Role::Server(session)) = self.sync_link.role.as_mut() {
            let config = SyncConfig { budget_kbps: value as f32, ..session.server().config().clone() };
            let result = session.set_config(config);
            self.errors.core_result("sync_budget_kbps", Some(result));
        }
    }

    fn report_once(&mut self, message: String) {
        if self.sync_link.reported != message {
            self.errors.reject(message.clone());
            self.sync_link.reported = message;
        }
    }
}

/// Whether the multiplayer has a peer connected to its server (a client's view).
fn connected(api: &Gd<MultiplayerApi>) -> bool {
    api.has_multiplayer_peer() && api.get_multiplayer_peer().is_some_and(|p| p.get_connection_status() == ConnectionStatus::CONNECTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every edit kind names the method a script calls and carries its amount and radius.
    #[test]
    fn edits_read_as_the_methods_that_make_them() {
        let add = Edit::AddWater { x: 1.0, z: -2.0, volume: 3.0, radius: 4.0 };
        assert_eq!(edit_fields(&add), ("add_water", [1.0, -2.0], 3.0, 4.0));
        let dig = Edit::ModifyTerrain { x: 0.5, z: 0.25, delta_height: -1.5, radius: 2.0 };
        assert_eq!(edit_fields(&dig), ("modify_terrain", [0.5, 0.25], -1.5, 2.0));
        assert_eq!(edit_fields(&Edit::RemoveSource { id: 7 }).0, "remove_source");
    }
}
