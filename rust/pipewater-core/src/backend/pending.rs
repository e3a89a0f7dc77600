//! The edits a GPU backend queues between frames: water and terrain edits, the bodies'
//! displacement and drag ([`BodyQueue`]), in one piece that both GPU backends (wgpu here, Godot's
//! RenderingDevice in the engine crate) keep. A backend only uploads the lists of an
//! [`EditBatch`] and records the passes [`EditCounts::passes`] names, in that order.

use super::{BodyQueue, CellDisplacement, CellTerrain, CellWater, PipeNudge};
use crate::error::Result;
use std::collections::HashMap;

/// Edits waiting for the next submission.
#[derive(Debug)]
pub struct PendingEdits {
    cell_count: usize,
    water: Vec<CellWater>,
    terrain: Vec<CellTerrain>,
    /// Where each cell's entry lies in `terrain`.
    terrain_index: HashMap<u32, usize>,
    bodies: BodyQueue,
}

/// The edits one submission applies.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EditBatch {
    /// Water added or removed per cell (a cell may appear more than once).
    pub water: Vec<CellWater>,
    /// Terrain raised or dug per cell, each cell once (the edits queued for it summed in the
    /// order they came).
    pub terrain: Vec<CellTerrain>,
    /// Displacement of bodies, each cell once.
    pub displacement: Vec<CellDisplacement>,
    /// Drags on the pipes, each cell once.
    pub nudges: Vec<PipeNudge>,
}

/// An edit pass, in the order [`EditCounts::passes`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditPass {
    /// `apply_terrain` over [`EditBatch::terrain`].
    Terrain,
    /// `apply_water` over [`EditBatch::water`].
    Water,
    /// `refresh_step_terrain` over [`EditBatch::terrain`]: the step's bed follows the new ground.
    RefreshStepTerrain,
    /// `displace` over [`EditBatch::displacement`].
    Displace,
    /// `nudge_pipes` over [`EditBatch::nudges`].
    Nudge,
}

/// How many entries each list of an [`EditBatch`] holds: what a backend keeps between uploading
/// the lists and recording the passes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EditCounts {
    /// Water edits.
    pub water: usize,
    /// Terrain edits.
    pub terrain: usize,
    /// Displacement entries.
    pub displacement: usize,
    /// Nudges.
    pub nudges: usize,
}

impl EditBatch {
    /// Whether the batch applies nothing.
    pub fn is_empty(&self) -> bool {
        self.counts() == EditCounts::default()
    }

    /// The length of each list.
    pub fn counts(&self) -> EditCounts {
        EditCounts { water: self.water.len(), terrain: self.terrain.len(), displacement: self.displacement.len(), nudges: self.nudges.len() }
    }
}

impl EditCounts {
    /// The passes that apply a batch of these counts, with the entries each one reads, in the
    /// order the CPU backend applies the same edits: terrain, water, the bodies' bed where
    /// terrain changed, their displacement, their drag. Passes with nothing to do are left out.
    pub fn passes(&self) -> Vec<(EditPass, usize)> {
        [
            (EditPass::Terrain, self.terrain),
            (EditPass::Water, self.water),
            (EditPass::RefreshStepTerrain, self.terrain),
            (EditPass::Displace, self.displacement),
            (EditPass::Nudge, self.nudges),
        ]
        .into_iter()
        .filter(|&(_, count)| count > 0)
        .collect()
    }
}

impl PendingEdits {
    /// Nothing queued, for a grid of `cell_count` cells.
    pub fn new(cell_count: usize) -> Self {
        PendingEdits { cell_count, water: Vec::new(), terrain: Vec::new(), terrain_index: HashMap::new(), bodies: BodyQueue::default() }
    }

    /// [`super::Backend::edit_water`]: queues water changes.
    pub fn edit_water(&mut self, cells: &[CellWater]) {
        self.water.extend_from_slice(cells);
    }

    /// [`super::Backend::edit_terrain`]: queues terrain changes (non-finite ones are dropped).
    /// Edits of a cell already queued are added to its entry, in the order they come: a GPU
    /// applies a list's entries in whatever order its invocations meet, and float additions to
    /// one cell in another order give other bits (two runs of the same overlapping digs would end
    /// with different terrain and water).
    pub fn edit_terrain(&mut self, cells: &[CellTerrain]) {
        for c in cells.iter().filter(|c| c.delta.is_finite()) {
            match self.terrain_index.get(&c.cell) {
                Some(&k) => self.terrain[k].delta += c.delta,
                None => {
                    self.terrain_index.insert(c.cell, self.terrain.len());
                    self.terrain.push(*c);
                }
            }
        }
    }

    /// A whole new terrain was uploaded: terrain edits queued before it would be overwritten
    /// anyway, and the displaced cells' bed is the new terrain plus their head again.
    pub fn new_terrain(&mut self) {
        self.terrain.clear();
        self.terrain_index.clear();
        self.bodies.restore_heads();
    }

    /// [`super::Backend::set_displacement`]: queues the change from the heads in force to `cells`.
    pub fn set_displacement(&mut self, cells: &[CellDisplacement]) -> Result<()> {
        self.bodies.set_displacement(cells, self.cell_count)
    }

    /// [`super::Backend::nudge_pipes`]: queues `nudges`. When one names a cell already queued,
    /// returns what was queued before them, which the backend applies first (a list names each
    /// cell once).
    pub fn nudge(&mut self, nudges: &[PipeNudge]) -> Result<Option<EditBatch>> {
        let earlier = if self.bodies.nudge(nudges, self.cell_count)? { Some(self.take()) } else { None };
        self.bodies.nudges.extend_from_slice(nudges);
        Ok(earlier)
    }

    /// Everything queued, for the next submission; the heads in force are kept.
    pub fn take(&mut self) -> EditBatch {
        EditBatch {
            water: std::mem::take(&mut self.water),
            terrain: {
                self.terrain_index.clear();
                std::mem::take(&mut self.terrain)
            },
            displacement: std::mem::take(&mut self.bodies.displacement),
            nudges: std::mem::take(&mut self.bodies.nudges),
        }
    }

    /// A new state was loaded, whose bed has no bodies: everything queued or in force is dropped.
    pub fn clear(&mut self) {
        *self = PendingEdits::new(self.cell_count);
    }

    /// Whether anything waits for the next submission.
    pub fn is_empty(&self) -> bool {
        self.water.is_empty() && self.terrain.is_empty() && self.bodies.is_empty()
    }
}

/// A list of `item_bytes`-byte records as the edit and gather shaders read it: `[count, 0,
/// items…]`, the header padded to the items' size (16-byte items start 16 bytes in, as WGSL
/// aligns them).
pub fn list_bytes(items: &[u8], item_bytes: usize) -> Vec<u8> {
    let header = list_header_bytes(item_bytes);
    let mut bytes = Vec::with_capacity(header + items.len());
    bytes.extend_from_slice(&((items.len() / item_bytes) as u32).to_le_bytes());
    bytes.resize(header, 0);
    bytes.extend_from_slice(items);
    bytes
}

/// Bytes in front of the items of a [`list_bytes`] list.
pub fn list_header_bytes(item_bytes: usize) -> usize {
    item_bytes.max(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_terrain_edits_queue_one_entry_per_cell_summed_in_order() {
        let mut edits = PendingEdits::new(16);
        let dig = |delta: f32| [CellTerrain { cell: 3, delta }, CellTerrain { cell: 4, delta: 0.5 * delta }];
        edits.edit_terrain(&dig(-0.1));
        edits.edit_terrain(&dig(-0.3));
        edits.edit_terrain(&[CellTerrain { cell: 9, delta: f32::NAN }, CellTerrain { cell: 3, delta: -0.7 }]);
        let batch = edits.take();
        println!("queued: {:?}", batch.terrain);
        assert_eq!(batch.terrain.len(), 2, "one entry per cell, the non-finite edit dropped");
        assert_eq!(batch.terrain[0], CellTerrain { cell: 3, delta: (-0.1f32 + -0.3) + -0.7 });
        assert_eq!(batch.terrain[1], CellTerrain { cell: 4, delta: -0.05f32 + -0.15 });
        edits.edit_terrain(&dig(1.0));
        assert_eq!(edits.take().terrain.len(), 2, "a new batch starts empty");
    }

    #[test]
    fn a_nudge_on_a_queued_cell_hands_back_the_earlier_edits_to_apply_first() {
        let mut edits = PendingEdits::new(16);
        edits.edit_water(&[CellWater { cell: 1, quanta: 5 }]);
        let nudge = |cell| PipeNudge { cell, velocity_x: 1.0, velocity_y: 0.0, weight: 0.5 };
        assert_eq!(edits.nudge(&[nudge(3)]).unwrap(), None, "a new cell joins the queue");
        let earlier = edits.nudge(&[nudge(3)]).unwrap().expect("cell 3 is queued already");
        let now = edits.take();
        println!("applied first: {earlier:?}; queued after: {now:?}");
        assert_eq!(earlier.water, vec![CellWater { cell: 1, quanta: 5 }]);
        assert_eq!(earlier.nudges, vec![nudge(3)]);
        assert_eq!((now.water.len(), now.nudges.clone()), (0, vec![nudge(3)]));
    }

    #[test]
    fn a_new_terrain_drops_queued_terrain_edits_and_brings_back_the_heads_in_force() {
        let mut edits = PendingEdits::new(16);
        let head = CellDisplacement { cell: 2, head: 0.3 };
        edits.set_displacement(&[head]).unwrap();
        edits.take();
        edits.edit_terrain(&[CellTerrain { cell: 4, delta: 1.0 }, CellTerrain { cell: 5, delta: f32::NAN }]);
        let queued = edits.terrain.len();
        edits.new_terrain();
        let batch = edits.take();
        println!("terrain edits queued {queued} (NaN dropped); after the new terrain: {batch:?}");
        assert_eq!(queued, 1);
        assert!(batch.terrain.is_empty());
        assert_eq!(batch.displacement, vec![head]);
        assert_eq!(batch.counts().passes(), vec![(EditPass::Displace, 1)]);
    }

    #[test]
    fn passes_run_terrain_water_bed_displacement_then_drag() {
        let batch = EditBatch {
            water: vec![CellWater { cell: 0, quanta: 1 }; 2],
            terrain: vec![CellTerrain { cell: 0, delta: 1.0 }],
            displacement: Vec::new(),
            nudges: vec![PipeNudge { cell: 0, velocity_x: 0.0, velocity_y: 0.0, weight: 1.0 }],
        };
        let passes = batch.counts().passes();
        println!("{passes:?}");
        assert_eq!(passes, vec![(EditPass::Terrain, 1), (EditPass::Water, 2), (EditPass::RefreshStepTerrain, 1), (EditPass::Nudge, 1)]);
    }

    #[test]
    fn lists_carry_their_count_in_front_of_items_aligned_to_their_size() {
        let eight = list_bytes(&[1, 0, 0, 0, 2, 0, 0, 0], 8);
        let sixteen = list_bytes(&[7; 32], 16);
        println!("8-byte items: {eight:?}; 16-byte items: header {:?}", &sixteen[..16]);
        assert_eq!(eight, vec![1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&sixteen[..4], &[2, 0, 0, 0]);
        assert_eq!(sixteen.len(), 16 + 32);
    }
}
