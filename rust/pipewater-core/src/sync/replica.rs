//! What both sides do to their own [`Simulation`]: the server applies edits and says how they
//! were applied; a client applies the server's edits in order and pulls its own water towards
//! the server's copy without popping.

use super::{blend_toward, gather_tile, Edit, SyncClient};
use crate::backend::CellWater;
use crate::error::{Error, Result};
use crate::quanta::DEPTH_QUANTUM;
use crate::simulation::Simulation;
use crate::sources::SourceId;
use std::collections::{BTreeSet, HashMap};

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
    /// Server edits applied to the client's own water.
    pub edits: usize,
    /// Server edits that failed on the client's water (a source it does not know).
    pub edits_failed: usize,
    /// Tiles whose water moved towards the server's this frame.
    pub tiles_corrected: usize,
    /// Tiles still blending after this frame.
    pub tiles_blending: usize,
    /// Largest difference from the server's copy before this frame's correction, m.
    pub largest_difference: f32,
}

/// A client's own water kept near the server's: the protocol's client and what the corrections
/// need between frames.
#[derive(Debug)]
pub struct Replica {
    /// The protocol's client: give it the server's packets, send what it polls.
    pub client: SyncClient,
    /// Differences up to this many quanta are snapped at once; larger ones blend.
    pub snap_quanta: i32,
    /// Share of a larger difference taken per frame, `0 < fraction ≤ 1`.
    pub blend_fraction: f32,
    blending: BTreeSet<usize>,
    source_ids: HashMap<u32, SourceId>,
}

/// Default snap threshold: 1 cm, below what a player sees on a water surface.
pub const DEFAULT_SNAP_DEPTH: f32 = 0.01;
/// Default share of a larger difference taken per frame: about 0.2 s to blend at 60 fps.
pub const DEFAULT_BLEND_FRACTION: f32 = 0.25;

impl Replica {
    /// A replica around `client`, with the default snap threshold and blend rate.
    pub fn new(client: SyncClient) -> Self {
        Replica { client, snap_quanta: (DEFAULT_SNAP_DEPTH / DEPTH_QUANTUM) as i32, blend_fraction: DEFAULT_BLEND_FRACTION, blending: BTreeSet::new(), source_ids: HashMap::new() }
    }

    /// Forgets the session: see [`SyncClient::reset`].
    pub fn reset(&mut self) {
        self.client.reset();
        self.blending.clear();
        self.source_ids.clear();
    }

    /// One frame of the client's own water, before it steps: the server's edits in order, then
    /// every tile with news from the server moves towards the server's copy (snapped when
    /// close, blended otherwise, [`blend_toward`]). Reads `sim`'s state once.
    pub fn frame(&mut self, sim: &mut Simulation) -> Result<ReplicaFrame> {
        let mut report = ReplicaFrame::default();
        for (_seq, _peer, edit) in self.client.take_edits() {
            match apply_edit(sim, edit, Some(&mut self.source_ids)) {
                Ok(_) => report.edits += 1,
                Err(_) => report.edits_failed += 1,
            }
        }
        self.blending.extend(self.client.take_corrections());
        let Some(tiles) = self.client.tiles() else { return Ok(report) };
        if self.blending.is_empty() {
            return Ok(report);
        }
        let state = sim.read_state()?;
        let mut local = Vec::new();
        let mut cells = Vec::new();
        let width = tiles.cells[0] as usize;
        let mut done = Vec::new();
        for &t in &self.blending {
            let (Some((_, target)), Some(rect)) = (self.client.tile_depths(t), self.client.tile_rect(t)) else {
                done.push(t);
                continue;
            };
            gather_tile(&tiles, &state.depth, t, &mut local);
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
        Ok(report)
    }
}
