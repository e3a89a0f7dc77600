//! The edits a GPU backend queues between frames: water and terrain edits, the bodies'
//! displacement and drag ([`BodyQueue`]), in one piece that both GPU backends (wgpu here, Godot's
//! RenderingDevice in the engine crate) keep. A backend only uploads the lists of an
//! [`EditBatch`] and records the passes [`EditCounts::passes`] names, in that order.

use super::{BodyQueue, CellDisplacement, CellTerrain, CellWater, PipeNudge};
use crate::error::Result;
use crate::quanta::MAX_DEPTH_QUANTA;

/// Edits waiting for the next submission.
#[derive(Debug)]
pub struct PendingEdits {
    cell_count: usize,
    /// Water edits in the order they were made.
    water: Vec<CellWater>,
    /// Terrain edits in the order they were made.
    terrain: Vec<CellTerrain>,
    bodies: BodyQueue,
}

/// The edits one submission applies.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EditBatch {
    /// Water added or removed per cell, each cell's entries side by side in the order they were
    /// made ([`water_by_cell`]).
    pub water: Vec<CellWater>,
    /// Terrain raised or dug per cell, each cell's entries side by side in the order they were
    /// made ([`terrain_by_cell`]).
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
    /// The frame's own order around them is [`super::frame::FrameRecipe`]'s.
    pub fn passes(&self) -> impl Iterator<Item = (EditPass, usize)> {
        [
            (EditPass::Terrain, self.terrain),
            (EditPass::Water, self.water),
            (EditPass::RefreshStepTerrain, self.terrain),
            (EditPass::Displace, self.displacement),
            (EditPass::Nudge, self.nudges),
        ]
        .into_iter()
        .filter(|&(_, count)| count > 0)
    }
}

impl PendingEdits {
    /// Nothing queued, for a grid of `cell_count` cells.
    pub fn new(cell_count: usize) -> Self {
        PendingEdits { cell_count, water: Vec::new(), terrain: Vec::new(), bodies: BodyQueue::default() }
    }

    /// [`super::Backend::edit_water`]: queues water changes.
    pub fn edit_water(&mut self, cells: &[CellWater]) {
        self.water.extend_from_slice(cells);
    }

    /// [`super::Backend::edit_terrain`]: queues terrain changes (non-finite ones are dropped).
    pub fn edit_terrain(&mut self, cells: &[CellTerrain]) {
        self.terrain.extend(cells.iter().filter(|c| c.delta.is_finite()));
    }

    /// A whole new terrain was uploaded: terrain edits queued before it would be overwritten
    /// anyway, and the displaced cells' bed is the new terrain plus their head again.
    pub fn new_terrain(&mut self) {
        self.terrain.clear();
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

    /// Everything queued, for the next submission, each cell's water and terrain edits side by
    /// side in the order they were made; the heads in force are kept.
    pub fn take(&mut self) -> EditBatch {
        EditBatch {
            water: water_by_cell(&std::mem::take(&mut self.water)),
            terrain: terrain_by_cell(std::mem::take(&mut self.terrain)),
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

/// Water edits as a GPU applies them (`apply_water` in edits.wgsl, for queued edits and for a
/// step's sources and drains alike): each cell's entries side by side, in the order of `cells`,
/// so that one invocation applies them one after the other as the CPU applies `cells` in order.
/// Each entry clamps at a dry cell and at [`MAX_DEPTH_QUANTA`], so an order left to the device
/// would change the water and the ledger. Neighbouring entries of the same sign are summed
/// (two additions clamp once at the limit where one after the other would, two removals once at
/// a dry cell), so a cell's run only changes sign from entry to entry; entries of 0 are dropped.
pub fn water_by_cell(cells: &[CellWater]) -> Vec<CellWater> {
    let mut sorted: Vec<CellWater> = cells.iter().filter(|c| c.quanta != 0).copied().collect();
    sorted.sort_by_key(|c| c.cell);
    let mut runs: Vec<CellWater> = Vec::with_capacity(sorted.len());
    for c in sorted {
        match runs.last_mut() {
            Some(last) if last.cell == c.cell && (last.quanta > 0) == (c.quanta > 0) => {
                // Past the limit either way the cell ends full or dry, as it would after both.
                last.quanta = (last.quanta as i64 + c.quanta as i64).clamp(-(MAX_DEPTH_QUANTA as i64), MAX_DEPTH_QUANTA as i64) as i32;
            }
            _ => runs.push(c),
        }
    }
    runs
}

/// Terrain edits as a GPU applies them (`apply_terrain` in edits.wgsl): each cell's entries side
/// by side, in the order of `cells`, each applied and clamped in turn as the CPU does. Float
/// additions to one cell in another order, or summed first, give other bits.
pub fn terrain_by_cell(mut cells: Vec<CellTerrain>) -> Vec<CellTerrain> {
    cells.sort_by_key(|c| c.cell);
    cells
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

    /// `d + q` clamped to `0 ..= MAX_DEPTH_QUANTA`, with what it added and removed: CPU
    /// `apply_water` for one entry, and `add_depth_clamped` in common.wgsl.
    fn apply_one(d: i32, q: i32) -> (i32, u64, u64) {
        let next = (d as i64 + q as i64).clamp(0, MAX_DEPTH_QUANTA as i64) as i32;
        (next, (next - d).max(0) as u64, (d - next).max(0) as u64)
    }

    /// Applies `list` as edits.wgsl does: runs of entries of one cell, each run one after the
    /// other in list order; the runs themselves in reverse order (a device may meet them in any).
    /// Returns what was added and removed.
    fn apply_as_the_device(depth: &mut [i32], list: &[CellWater]) -> (u64, u64) {
        let (mut added, mut removed) = (0, 0);
        let heads: Vec<usize> = (0..list.len()).filter(|&e| e == 0 || list[e - 1].cell != list[e].cell).collect();
        for &head in heads.iter().rev() {
            let cell = list[head].cell as usize;
            for entry in list[head..].iter().take_while(|c| c.cell as usize == cell) {
                let (next, a, r) = apply_one(depth[cell], entry.quanta);
                (depth[cell], added, removed) = (next, added + a, removed + r);
            }
        }
        (added, removed)
    }

    /// Water edits of one cell made in one frame reach the device side by side in the order they
    /// were made, so that applying each cell's run in turn, whichever cell comes first, ends every
    /// cell where the calls one after the other end it (clamping at a dry cell and at the depth
    /// limit) and counts the same water added and removed. Checked over a thousand random frames.
    #[test]
    fn a_frames_water_edits_reach_the_device_by_cell_in_call_order_with_the_cpus_result() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut differing_frames, mut scattered_frames, mut entries_in, mut entries_out) = (0, 0, 0, 0);
        for frame in 0..1000 {
            let start: Vec<i32> = (0..4).map(|_| if next(2) == 0 { next(8) as i32 } else { MAX_DEPTH_QUANTA - next(8) as i32 }).collect();
            let mut edits = PendingEdits::new(start.len());
            let mut calls = Vec::new();
            for _ in 0..1 + next(5) {
                let call: Vec<CellWater> = (0..1 + next(3))
                    .map(|_| {
                        let size = if next(4) == 0 { MAX_DEPTH_QUANTA - next(3) as i32 } else { next(10) as i32 };
                        CellWater { cell: next(4) as u32, quanta: if next(2) == 0 { size } else { -size } }
                    })
                    .collect();
                edits.edit_water(&call);
                calls.extend(call);
            }
            let (mut cpu, mut cpu_added, mut cpu_removed) = (start.clone(), 0, 0);
            for c in &calls {
                let (d, a, r) = apply_one(cpu[c.cell as usize], c.quanta);
                (cpu[c.cell as usize], cpu_added, cpu_removed) = (d, cpu_added + a, cpu_removed + r);
            }
            let batch = edits.take();
            let runs = (0..batch.water.len()).filter(|&e| e == 0 || batch.water[e - 1].cell != batch.water[e].cell).count();
            let cells = batch.water.iter().map(|c| c.cell).collect::<std::collections::HashSet<_>>().len();
            let mut device = start.clone();
            let (added, removed) = apply_as_the_device(&mut device, &batch.water);
            if frame < 3 {
                println!("frame {frame}: start {start:?}, calls {calls:?}\n  listed {:?}\n  CPU {cpu:?} +{cpu_added} -{cpu_removed}; device {device:?} +{added} -{removed}", batch.water);
            }
            scattered_frames += (runs != cells) as u32;
            differing_frames += (device != cpu || (added, removed) != (cpu_added, cpu_removed)) as u32;
            (entries_in, entries_out) = (entries_in + calls.len(), entries_out + batch.water.len());
        }
        println!("of 1000 frames: {scattered_frames} list a cell's edits apart, {differing_frames} end elsewhere than the CPU; {entries_in} entries made, {entries_out} listed");
        assert_eq!(scattered_frames, 0, "each cell's entries lie side by side");
        assert_eq!(differing_frames, 0, "the device's water and ledger are the CPU's");
    }

    /// Terrain edits of one cell reach the device side by side in the order they were made, each
    /// applied in turn (non-finite ones dropped): adding them up first would round and clamp
    /// otherwise than the CPU, which applies each as it comes.
    #[test]
    fn a_frames_terrain_edits_reach_the_device_by_cell_in_call_order() {
        let mut edits = PendingEdits::new(16);
        let dig = |delta: f32| [CellTerrain { cell: 4, delta }, CellTerrain { cell: 3, delta: 0.5 * delta }];
        edits.edit_terrain(&dig(-0.1));
        edits.edit_terrain(&dig(-0.3));
        edits.edit_terrain(&[CellTerrain { cell: 9, delta: f32::NAN }, CellTerrain { cell: 4, delta: -0.7 }]);
        let batch = edits.take();
        println!("queued: {:?}", batch.terrain);
        let listed: Vec<(u32, f32)> = batch.terrain.iter().map(|c| (c.cell, c.delta)).collect();
        assert_eq!(listed, vec![(3, -0.05), (3, -0.15), (4, -0.1), (4, -0.3), (4, -0.7)], "by cell, in call order, the NaN dropped");
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
        assert_eq!(batch.counts().passes().collect::<Vec<_>>(), vec![(EditPass::Displace, 1)]);
    }

    #[test]
    fn passes_run_terrain_water_bed_displacement_then_drag() {
        let batch = EditBatch {
            water: vec![CellWater { cell: 0, quanta: 1 }; 2],
            terrain: vec![CellTerrain { cell: 0, delta: 1.0 }],
            displacement: Vec::new(),
            nudges: vec![PipeNudge { cell: 0, velocity_x: 0.0, velocity_y: 0.0, weight: 1.0 }],
        };
        let passes: Vec<_> = batch.counts().passes().collect();
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
