//! What both sides do to their own [`Simulation`]: the server applies edits and says how they
//! were applied; a client runs the server's frames, sets its water to the server's tiles at the
//! frames they describe and applies the server's edits at theirs, and pulls towards a copy that
//! came too late without popping.

use super::{blend_toward, gather_tile, tile_values_flow, Edit, SyncClient};
use crate::backend::sleep::TileGrid;
use crate::backend::{BackendKind, CellWater};
use crate::error::{Error, Result};
use crate::quanta::DEPTH_QUANTUM;
use crate::simulation::{CellOverwrite, Simulation};
use crate::sources::SourceId;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Applies `edit` to `sim` (the server's, or a client's own with `source_ids` mapping the
/// server's source ids to its own) and returns it as applied: an [`Edit::AddSource`] carries the
/// id `sim` gave the source. An edit out of the simulation's ranges is an error and changes
/// nothing.
pub fn apply_edit(sim: &mut Simulation, edit: Edit, source_ids: Option<&mut HashMap<u32, SourceId>>) -> Result<Edit> {
    let local = |id: u32, ids: &Option<&mut HashMap<u32, SourceId>>| -> Result<SourceId> {
        match ids {
            None => Ok(SourceId(id)),
            Some(map) => map.get(&id).copied().ok_or_else(|| Error::invalid("source id", id, "a source the server added")),
        }
    };
    Ok(match edit {
        Edit::AddWater { x, z, volume, radius } => {
            sim.add_water(x, z, volume, radius)?;
            edit
        }
        Edit::RemoveWater { x, z, volume, radius } => {
            sim.remove_water(x, z, volume, radius)?;
            edit
        }
        Edit::ModifyTerrain { x, z, delta_height, radius } => {
            sim.modify_terrain(x, z, delta_height, radius)?;
            edit
        }
        Edit::AddSource { id, x, z, rate, radius } => {
            let mine = sim.add_source(x, z, rate, radius)?;
            match source_ids {
                Some(map) => {
                    map.insert(id, mine);
                    edit
                }
                None => Edit::AddSource { id: mine.0, x, z, rate, radius },
            }
        }
        Edit::SetSourceRate { id, rate } => {
            let mine = local(id, &source_ids)?;
            if !sim.set_source_rate(mine, rate)? {
                return Err(Error::invalid("source id", id, "a source that exists"));
            }
            edit
        }
        Edit::RemoveSource { id } => {
            let mine = local(id, &source_ids)?;
            if !sim.remove_source(mine) {
                return Err(Error::invalid("source id", id, "a source that exists"));
            }
            if let Some(map) = source_ids {
                map.remove(&id);
            }
            edit
        }
    })
}

/// What [`Replica::frame`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplicaFrame {
    /// Server frames the client's water ran.
    pub frames: usize,
    /// Server edits applied to the client's own water.
    pub edits: usize,
    /// Server edits that failed on the client's water (a source it does not know).
    pub edits_failed: usize,
    /// Tiles set exactly to the server's water at the frame it describes.
    pub tiles_exact: usize,
    /// Tiles whose copy came after the client had run past its frame, blended instead.
    pub tiles_late: usize,
    /// Tiles whose water moved towards the server's this frame (exact or blended).
    pub tiles_corrected: usize,
    /// Tiles still blending after this frame.
    pub tiles_blending: usize,
    /// Largest difference between the client's water and the server's copy just before a
    /// correction this frame, m: at the copy's own frame for exact tiles (how far the client's
    /// own steps had gone from the server's), else at whatever frame the client was. Measured
    /// only where `difference_measured` says so.
    pub largest_difference: f32,
    /// Whether `largest_difference` was measured this frame: always where tiles blended or on the
    /// CPU; on a GPU, whose depths come back with a whole read that waits for the device, the
    /// exact copies' difference (a figure for display) is measured once in
    /// [`GPU_DIFFERENCE_EVERY`] frames that set tiles, not at each.
    pub difference_measured: bool,
}

/// Frames that set tiles between two measurements of how far a GPU client's water was from the
/// copies it set (about a second at the 30 Hz sync).
pub const GPU_DIFFERENCE_EVERY: u64 = 30;

/// A client's own water kept on the server's: the protocol's client and what the corrections
/// need between frames. The water runs the server's frames ([`SyncClient::take_frame`]), not
/// its own clock, so that with the same backend on both sides each step is the server's.
#[derive(Debug)]
pub struct Replica {
    /// The protocol's client: give it the server's packets, send what it polls.
    pub client: SyncClient,
    /// Differences up to this many quanta are snapped at once; larger ones blend.
    pub snap_quanta: i32,
    /// Share of a larger difference taken per frame, `0 < fraction ≤ 1`.
    pub blend_fraction: f32,
    blending: BTreeSet<usize>,
    /// Tiles whose newest copy the water has not been set to yet.
    waiting: BTreeSet<usize>,
    /// Per tile, the version of the copy the water was last set to at its frame (0: none since
    /// the start).
    applied: Vec<u32>,
    /// Frames that set tiles so far ([`GPU_DIFFERENCE_EVERY`]).
    setting_frames: u64,
    /// Server edits not applied yet: (sequence, peer, edit, frames run before it).
    edits: VecDeque<(u32, i32, Edit, u64)>,
    source_ids: HashMap<u32, SourceId>,
    /// Whether the water was set whole to the server's keyframe: until then the clock waits.
    started: bool,
    /// The client's own depths (quanta, row-major) as last read, tile by tile: only the tiles
    /// being set or blended are read.
    depth: Vec<i32>,
}

/// Default snap threshold: 1 cm, below what a player sees on a water surface.
pub const DEFAULT_SNAP_DEPTH: f32 = 0.01;
/// Default share of a larger difference taken per frame: about 0.2 s to blend at 60 fps.
pub const DEFAULT_BLEND_FRACTION: f32 = 0.25;

impl Replica {
    /// A replica around `client`, with the default snap threshold and blend rate.
    pub fn new(client: SyncClient) -> Self {
        Replica {
            client,
            snap_quanta: (DEFAULT_SNAP_DEPTH / DEPTH_QUANTUM) as i32,
            blend_fraction: DEFAULT_BLEND_FRACTION,
            blending: BTreeSet::new(),
            waiting: BTreeSet::new(),
            applied: Vec::new(),
            setting_frames: 0,
            edits: VecDeque::new(),
            source_ids: HashMap::new(),
            started: false,
            depth: Vec::new(),
        }
    }

    /// Forgets the session: see [`SyncClient::reset`].
    pub fn reset(&mut self) {
        self.client.reset();
        self.blending.clear();
        self.waiting.clear();
        self.edits.clear();
        self.source_ids.clear();
        self.started = false;
    }

    /// The server welcomed the client again (a new session): the water waits for the new
    /// keyframe.
    pub fn restart(&mut self) {
        self.blending.clear();
        self.waiting.clear();
        self.started = false;
    }

    /// Whether the water runs on the server's clock (the keyframe was applied).
    pub fn started(&self) -> bool {
        self.started
    }

    /// Once every tile has come: sets the whole water to the keyframe (every tile's first copy,
    /// all of the frame the server took them at) and moves the clock there. The server's edits
    /// of earlier frames that changed only water are in the keyframe and are dropped; the
    /// others (ground, sources) are applied. Returns whether the water started.
    fn start(&mut self, sim: &mut Simulation, report: &mut ReplicaFrame) -> Result<bool> {
        let Some(tiles) = self.client.tiles() else { return Ok(false) };
        if !self.client.is_complete() {
            return Ok(false);
        }
        let frames: Vec<u64> = (0..tiles.count()).filter_map(|t| self.client.tile_first_values(t).map(|(f, _)| f)).collect();
        let frame = frames.iter().copied().max().unwrap_or(0);
        let consistent = frames.iter().all(|&f| f == frame);
        let width = tiles.cells[0] as usize;
        let mut cells = Vec::with_capacity(sim.grid().cell_count());
        for t in 0..tiles.count() {
            // Tiles of another frame (the keyframe's copy was dropped for newer ones): the newest
            // copy, blended later if the water runs differently.
            let (Some((_, values)), Some(rect)) = (if consistent { self.client.tile_first_values(t) } else { self.client.tile_values(t).map(|(_, f, v)| (f, v)) }, self.client.tile_rect(t)) else { continue };
            let n = (rect.width * rect.height) as usize;
            for i in 0..n {
                let cell = (rect.y as usize + i / rect.width as usize) * width + rect.x as usize + i % rect.width as usize;
                cells.push(CellOverwrite { cell: cell as u32, depth: values[i], flow: tile_values_flow(values, n, i) });
            }
        }
        sim.overwrite_cells(&cells)?;
        self.client.forget_first_copies();
        self.client.skip_to(frame);
        while self.edits.front().is_some_and(|e| e.3 < frame) {
            let (_seq, _peer, edit, _frame) = self.edits.pop_front().expect("checked above");
            if edit.replayed_on_join() {
                match apply_edit(sim, edit, Some(&mut self.source_ids)) {
                    Ok(_) => report.edits += 1,
                    Err(_) => report.edits_failed += 1,
                }
            }
        }
        // Newer copies than the keyframe's are set at their own frames.
        self.waiting = (0..tiles.count()).filter(|&t| self.client.tile_values(t).is_some_and(|(_, f, _)| f > frame)).collect();
        self.applied = vec![0; tiles.count()];
        report.tiles_exact += tiles.count();
        self.started = true;
        Ok(true)
    }

    /// One frame of the client's own water: runs up to `frames` of the server's frames that
    /// the client was told of, each as the server ran it ([`Simulation::run_steps`] with the
    /// server's step and steps). Before each, the tiles whose copy describes the water after
    /// exactly the frames run so far are set to it, depths and flows, bit for bit
    /// ([`Simulation::overwrite_cells`]), and the server's edits stamped with that frame are
    /// applied in order. A copy that came after its frame was run is dropped; a copy a checksum
    /// confirmed is blended towards (snapped when close, [`blend_toward`]). Until every tile has
    /// come once the clock waits, then the water is set whole to the keyframe.
    pub fn frame(&mut self, sim: &mut Simulation, frames: usize) -> Result<ReplicaFrame> {
        let mut report = ReplicaFrame::default();
        self.edits.extend(self.client.take_edits());
        self.waiting.extend(self.client.take_corrections());
        let confirmed = self.client.take_confirmations();
        if !self.started && !self.start(sim, &mut report)? {
            return Ok(report);
        }
        self.blending.extend(confirmed);
        for _ in 0..frames {
            self.at_frame(sim, self.client.next_frame(), &mut report)?;
            let Some((_, step, substeps)) = self.client.take_frame() else { break };
            sim.run_steps(step, substeps)?;
            report.frames += 1;
        }
        self.at_frame(sim, self.client.next_frame(), &mut report)?;
        self.blend(sim, &mut report)?;
        Ok(report)
    }

    /// What is due when the water has run `frame` of the server's frames: the copies of that
    /// frame exactly, then the edits the server applied after it.
    fn at_frame(&mut self, sim: &mut Simulation, frame: u64, report: &mut ReplicaFrame) -> Result<()> {
        let Some(tiles) = self.client.tiles() else { return Ok(()) };
        if self.applied.len() != tiles.count() {
            self.applied = vec![0; tiles.count()];
        }
        let mut due = Vec::new();
        let mut late = Vec::new();
        let mut done = Vec::new();
        for &t in &self.waiting {
            let newest = self.client.tile_values(t).map_or(0, |(_, f, _)| f);
            // The kept copy of this very frame, not only the newest: a tile that changes at every
            // capture has its newest copy always a few frames ahead of the client's clock, and
            // waiting for the newest would set it only once it came to rest (a change only the
            // server made there, a body's push, would reach the client only then).
            match self.client.tile_values_of_frame(t, frame) {
                Some((v, _, _)) if v > self.applied[t] => due.push((t, v)),
                _ if newest > frame => {}
                _ if newest == frame => done.push(t),
                // A copy of a frame already run is not the server's water now: forgotten, so
                // the server sends the tile again, stamped with a frame still to come.
                _ => late.push(t),
            }
        }
        for t in late {
            self.waiting.remove(&t);
            self.client.forget_late_copy(t);
            report.tiles_late += 1;
        }
        for t in done {
            self.waiting.remove(&t);
        }
        if !due.is_empty() {
            // The copies are set whatever the water was; reading it first only measures how far
            // it had drifted, which on a GPU costs a read that waits for the device.
            let measure = sim.backend_kind() == BackendKind::Cpu || self.setting_frames % GPU_DIFFERENCE_EVERY == 0;
            self.setting_frames += 1;
            if measure {
                read_tiles_depth(sim, &tiles, due.iter().map(|&(t, _)| t), &mut self.depth)?;
                report.difference_measured = true;
            }
            let depth = measure.then_some(&self.depth);
            let width = tiles.cells[0] as usize;
            let mut cells = Vec::new();
            for &(t, version) in &due {
                self.applied[t] = version;
                self.blending.remove(&t);
                if self.client.tile_values(t).is_none_or(|(_, f, _)| f <= frame) {
                    self.waiting.remove(&t);
                }
                let (Some((_, _, values)), Some(rect)) = (self.client.tile_values_of_frame(t, frame), self.client.tile_rect(t)) else { continue };
                let n = (rect.width * rect.height) as usize;
                for i in 0..n {
                    let cell = (rect.y as usize + i / rect.width as usize) * width + rect.x as usize + i % rect.width as usize;
                    if let Some(depth) = depth {
                        let off = (values[i] as i64 - depth[cell] as i64).unsigned_abs();
                        report.largest_difference = report.largest_difference.max(off as f32 * DEPTH_QUANTUM);
                    }
                    cells.push(CellOverwrite { cell: cell as u32, depth: values[i], flow: tile_values_flow(values, n, i) });
                }
                report.tiles_exact += 1;
                report.tiles_corrected += 1;
            }
            sim.overwrite_cells(&cells)?;
        }
        while self.edits.front().is_some_and(|e| e.3 <= frame) {
            let (_seq, _peer, edit, _frame) = self.edits.pop_front().expect("checked above");
            match apply_edit(sim, edit, Some(&mut self.source_ids)) {
                Ok(_) => report.edits += 1,
                Err(_) => report.edits_failed += 1,
            }
        }
        Ok(())
    }

    /// Moves the water of the tiles being blended a step towards their copies.
    fn blend(&mut self, sim: &mut Simulation, report: &mut ReplicaFrame) -> Result<()> {
        let Some(tiles) = self.client.tiles() else { return Ok(()) };
        if self.blending.is_empty() {
            return Ok(());
        }
        read_tiles_depth(sim, &tiles, self.blending.iter().copied(), &mut self.depth)?;
        report.difference_measured = true;
        let state_depth = &self.depth;
        let mut local = Vec::new();
        let mut cells = Vec::new();
        let width = tiles.cells[0] as usize;
        let mut done = Vec::new();
        for &t in &self.blending {
            let (Some((_, target)), Some(rect)) = (self.client.tile_depths(t), self.client.tile_rect(t)) else {
                done.push(t);
                continue;
            };
            gather_tile(&tiles, state_depth, t, &mut local);
            let before = local.clone();
            let worst = before.iter().zip(target).map(|(&a, &b)| (a as i64 - b as i64).unsigned_abs()).max().unwrap_or(0);
            report.largest_difference = report.largest_difference.max(worst as f32 * DEPTH_QUANTUM);
            if blend_toward(&mut local, target, self.snap_quanta, self.blend_fraction) {
                done.push(t);
            }
            for (i, (&new, &old)) in local.iter().zip(&before).enumerate() {
                if new != old {
                    let (x, y) = (rect.x as usize + i % rect.width as usize, rect.y as usize + i / rect.width as usize);
                    cells.push(CellWater { cell: (y * width + x) as u32, quanta: new - old });
                }
            }
            report.tiles_corrected += 1;
        }
        for t in done {
            self.blending.remove(&t);
        }
        report.tiles_blending = self.blending.len();
        if !cells.is_empty() {
            sim.change_water(&cells)?;
        }
        Ok(())
    }
}

/// Reads the simulation's depths of the tiles `which` (those on `tiles`) into `depth`, row-major
/// (zero-filled first when it is not the grid's length), the other cells left as last read.
fn read_tiles_depth(sim: &mut Simulation, tiles: &TileGrid, which: impl IntoIterator<Item = usize>, depth: &mut Vec<i32>) -> Result<()> {
    let mut marked = vec![false; tiles.count()];
    let count = marked.len();
    which.into_iter().filter(|&t| t < count).for_each(|t| marked[t] = true);
    let n = sim.grid().cell_count();
    if depth.len() != n {
        *depth = vec![0; n];
    }
    sim.read_depth(Some((tiles, &marked)), depth)
}
