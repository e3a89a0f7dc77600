//! The detail layer's host side on a GPU backend, in one piece both GPU backends embed (the wgpu
//! one and Godot's RenderingDevice one): the frame queued for the next submission, which of the
//! two field buffers holds the waves, the tiles queries asked for, the clears that make older
//! reads stale, and the ordered passes of a frame. A backend keeps only what touches its device:
//! its buffers, how it binds "read field k", and how its reads come back.

use super::tiles::DetailTiles;
use super::{DetailFrame, DetailLayout};
use crate::dispatch::list_workgroups;

/// Side of the square workgroup of the passes over the window (`DETAIL_WG`).
pub const DETAIL_WORKGROUP: u32 = 16;
/// Workgroup of the list passes (`DETAIL_LIST_WG`).
pub const DETAIL_LIST_WORKGROUP: u32 = 64;

/// An entry point of `shaders/detail.wgsl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DetailEntry {
    /// `detail_press`: the hulls' pressure changes into the pressure field.
    Press,
    /// `detail_scroll`: the strips the window moved into start at rest.
    Scroll,
    /// `detail_force`: ripples and rain.
    Force,
    /// `detail_substep`: one wave substep, reading one field and writing the other.
    Substep,
    /// The rendering output: texels for the host (wgpu) or the storage image (Godot).
    Output,
    /// `detail_gather`: the tiles queries asked for, into the gather buffer.
    Gather,
}

/// One dispatch of a detail frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetailPass {
    /// The entry point it runs.
    pub entry: DetailEntry,
    /// The field the pass binds as `detail_in` (the other is `detail_out`). A pass that updates
    /// the waves in place on field k writes it through `detail_out`, so it reads `1 − k`.
    pub reads: usize,
    /// Workgroups along x and y, at least 1 each.
    pub groups: [u32; 2],
}

/// What a backend records for the frame [`DetailHost::start`] took.
#[derive(Debug)]
pub struct DetailStart {
    /// The frame queued.
    pub frame: DetailFrame,
    /// The tiles the frame reads back for queries, in the order they are gathered.
    pub tiles: Vec<[i32; 2]>,
}

/// The host side of the detail layer on a GPU backend.
#[derive(Debug)]
pub struct DetailHost {
    layout: DetailLayout,
    queued: Option<DetailFrame>,
    tiles: DetailTiles,
    /// Which of the two field buffers holds the waves.
    current: usize,
    /// Frames recorded.
    frames: u64,
    /// Clears so far: a read recorded before the last clear no longer holds.
    epoch: u64,
    passes: Vec<DetailPass>,
}

impl DetailHost {
    /// The host side of a layer of `layout`, at rest.
    pub fn new(layout: DetailLayout) -> Self {
        DetailHost { layout, queued: None, tiles: DetailTiles::default(), current: 0, frames: 0, epoch: 0, passes: Vec::with_capacity(16) }
    }

    /// The layout the backend allocated.
    pub fn layout(&self) -> DetailLayout {
        self.layout
    }

    /// The field buffer holding the waves.
    pub fn current(&self) -> usize {
        self.current
    }

    /// Frames recorded so far: a read is stamped with the count after its frame.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Clears so far, to stamp a read with.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Keeps `frame` for the next [`DetailHost::start`] (a newer one replaces it).
    pub fn queue(&mut self, frame: DetailFrame) {
        self.queued = Some(frame);
    }

    /// The waves are put at rest (a new state was loaded): the queued frame is dropped and what
    /// arrived, or is still on its way, no longer holds. Returns the field the backend clears.
    pub fn clear(&mut self) -> usize {
        self.queued = None;
        self.tiles.clear();
        self.epoch += 1;
        self.current
    }

    /// The cells' coordinates moved by `by` detail cells ([`DetailTiles::shift`]): the tiles that
    /// arrived follow their cells; reads on their way, listed in the old coordinates, are dropped.
    pub fn shift_tiles(&mut self, by: [i32; 2]) {
        self.tiles.shift(by);
        self.epoch += 1;
    }

    /// Takes the queued frame, if any, with the tiles it reads back.
    pub fn start(&mut self) -> Option<DetailStart> {
        let frame = self.queued.take()?;
        let tiles = self.tiles.to_read();
        Some(DetailStart { frame, tiles })
    }

    /// The passes of `frame` in order, and the frame counted: the in-place passes, the
    /// substeps (each flips the field), then, when `output`, the rendering output and, for
    /// `gathered` tiles, the gather. `max_workgroups`: the device's limit along one dimension.
    pub fn passes(&mut self, frame: &DetailFrame, output: bool, gathered: usize, max_workgroups: u32) -> &[DetailPass] {
        let c = &frame.constants;
        let window = c.window.div_ceil(DETAIL_WORKGROUP).clamp(1, max_workgroups.max(1));
        let passes = &mut self.passes;
        passes.clear();
        let mut current = self.current;
        if !frame.pressure.is_empty() {
            passes.push(DetailPass { entry: DetailEntry::Press, reads: current, groups: [list_workgroups(frame.pressure.len(), DETAIL_LIST_WORKGROUP, max_workgroups), 1] });
        }
        if frame.scrolls() {
            passes.push(DetailPass { entry: DetailEntry::Scroll, reads: 1 - current, groups: [window; 2] });
        }
        if frame.forces() {
            passes.push(DetailPass { entry: DetailEntry::Force, reads: 1 - current, groups: [window; 2] });
        }
        for _ in 0..c.substeps {
            passes.push(DetailPass { entry: DetailEntry::Substep, reads: current, groups: [window; 2] });
            current = 1 - current;
        }
        if output {
            passes.push(DetailPass { entry: DetailEntry::Output, reads: current, groups: [window; 2] });
        }
        if gathered > 0 {
            passes.push(DetailPass { entry: DetailEntry::Gather, reads: current, groups: [list_workgroups(gathered, 1, max_workgroups), 1] });
        }
        self.current = current;
        self.frames += 1;
        &self.passes
    }

    /// Pass `at` of the last [`DetailHost::passes`] (a backend that needs itself mutably while it
    /// records takes them by index, with no copy of the list).
    pub fn pass(&self, at: usize) -> Option<DetailPass> {
        self.passes.get(at).copied()
    }

    /// Takes a read of `tiles` recorded in epoch `epoch` (the bytes [`DetailTiles::apply`]
    /// expects); one from before the last clear is dropped. Reads are handed in the order their
    /// frames were recorded.
    pub fn arrived(&mut self, epoch: u64, tiles: &[[i32; 2]], bytes: &[u8]) -> bool {
        let current = epoch == self.epoch;
        if current {
            self.tiles.apply(tiles, bytes);
        }
        current
    }

    /// Heights of world detail cells from the newest tiles that arrived ([`DetailTiles`]).
    pub fn heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        self.tiles.heights(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::{DetailConstants, DetailPressure};
    use bytemuck::Zeroable;

    const LAYOUT: DetailLayout = DetailLayout { window: 64, subdivision: 4 };

    fn frame(layout: DetailLayout, substeps: u32, scroll: bool, pressure: usize) -> DetailFrame {
        let mut constants = DetailConstants::zeroed();
        (constants.window, constants.subdivision, constants.substeps) = (layout.window, layout.subdivision, substeps);
        constants.origin_x = scroll as i32;
        DetailFrame { constants, ripples: Vec::new(), pressure: vec![DetailPressure::zeroed(); pressure] }
    }

    /// The order both GPU backends run a detail frame in: pressure, then the in-place passes
    /// writing the field that holds the waves, then the substeps alternating the fields, then
    /// the output and the gather reading the field the last substep wrote; a frame's passes
    /// start from the field the previous frame ended in.
    #[test]
    fn a_detail_frame_runs_its_passes_in_order_over_the_field_holding_the_waves() {
        let layout = LAYOUT;
        let mut host = DetailHost::new(layout);
        let f = frame(layout, 3, true, 5);
        let passes: Vec<(DetailEntry, usize)> = host.passes(&f, true, 2, 65535).iter().map(|p| (p.entry, p.reads)).collect();
        println!("{passes:?}");
        use DetailEntry::*;
        assert_eq!(passes, vec![(Press, 0), (Scroll, 1), (Substep, 0), (Substep, 1), (Substep, 0), (Output, 1), (Gather, 1)]);
        assert_eq!((host.current(), host.frames()), (1, 1));
        let next: Vec<(DetailEntry, usize)> = host.passes(&frame(layout, 1, false, 0), false, 0, 65535).iter().map(|p| (p.entry, p.reads)).collect();
        assert_eq!(next, vec![(Substep, 1)]);
        assert_eq!(host.current(), 0);
    }

    /// Workgroup counts respect the device's limit along a dimension (a long pressure list
    /// strides; the shader loops over the rest).
    #[test]
    fn detail_workgroups_stay_within_the_device_limit() {
        let layout = LAYOUT;
        let mut host = DetailHost::new(layout);
        let f = frame(layout, 1, false, 70_000 * DETAIL_LIST_WORKGROUP as usize);
        let press = host.passes(&f, false, 0, 4096)[0];
        println!("{press:?}");
        assert_eq!((press.entry, press.groups), (DetailEntry::Press, [4096, 1]));
    }

    /// A read recorded before a clear does not reach the queries.
    #[test]
    fn reads_from_before_a_clear_are_dropped() {
        let layout = LAYOUT;
        let mut host = DetailHost::new(layout);
        host.heights(&[[0, 0]]);
        let start = { host.queue(frame(layout, 1, false, 0)); host.start().expect("queued") };
        let old_epoch = host.epoch();
        host.clear();
        let bytes = vec![1u8; start.tiles.len() * crate::detail::tiles::DETAIL_TILE_BYTES];
        assert!(!host.arrived(old_epoch, &start.tiles, &bytes));
        assert_eq!(host.heights(&[[0, 0]]), vec![0.0]);
        assert!(host.arrived(host.epoch(), &start.tiles, &bytes));
        assert_ne!(host.heights(&[[0, 0]]), vec![0.0]);
    }
}
