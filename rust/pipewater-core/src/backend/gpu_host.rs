//! What both GPU backends keep on the host, in one piece each embeds: the queued edits, the
//! snapshot reads, the sleeping tiles' bookkeeping, the recovery reads, the frame count, which
//! copy of the ping-pong fields holds the state, and the frame's [`FrameRecipe`]. The `Backend`
//! methods that only forward to that bookkeeping are written here once; a backend adds only what
//! touches its device.

use super::frame::{FrameInputs, FramePass, FrameRecipe, SnapshotRead};
use super::pending::{water_by_cell, EditBatch, PendingEdits};
use super::readback::{Coverage, Read, Readbacks};
use super::recovery::{RecoveryPoint, RecoveryReads};
use super::step_kernel::ColumnKernel;
use super::sleep::{AwakeTiles, DeviceSleep, SleepReport, TileGrid, TileParams};
use super::{CellDisplacement, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::params::Params;
use crate::pipes::StepConstants;
use crate::state::{check_terrain, Counters, State};

/// The host side of a GPU backend.
#[derive(Debug)]
pub struct GpuHost {
    /// The grid the device's fields hold.
    pub grid: Grid,
    /// Constants of the last frame (the grid's defaults before the first).
    pub constants: StepConstants,
    /// Edits waiting for the next submission.
    pub edits: PendingEdits,
    /// The host snapshot and the reads that fill it.
    pub reads: Readbacks,
    /// Sleeping tiles: marks, the change of constants, the report.
    pub sleep: DeviceSleep,
    /// The recovery reads of the whole state.
    pub recovery: RecoveryReads,
    /// Frames recorded since the state was loaded (or as restored).
    pub frames: u64,
    /// Which copy (0 or 1) of depth and pipes holds the state.
    pub current: usize,
    recipe: FrameRecipe,
}

/// What a frame takes from the host before it is recorded ([`GpuHost::start_frame`]).
#[derive(Debug)]
pub struct FrameStart {
    /// The queued edits, their tiles marked for the first step.
    pub edits: EditBatch,
    /// The forcing list applied before each step, each cell's entries side by side
    /// ([`water_by_cell`]); empty in a frame without steps.
    pub forcing: Vec<CellWater>,
    /// The snapshot read the frame issues, if one was asked for.
    pub read: Option<Read>,
}

impl GpuHost {
    /// The host side of a backend loaded with `state` (frame 0), stepping over the step kernel's
    /// `tiles`; `full_reads`: whether snapshots cover every cell.
    pub fn new(state: &State, tiles: TileGrid, full_reads: bool) -> Self {
        let exact = ColumnKernel::tiles_hold_the_step(&tiles);
        let grid = state.grid;
        GpuHost {
            grid,
            constants: StepConstants::new(&Params::default(), grid.width, grid.height, grid.cell_size, 0.0, [0; 4]),
            edits: PendingEdits::new(grid.cell_count()),
            reads: Readbacks::new(state, full_reads),
            sleep: DeviceSleep::new(tiles, exact),
            recovery: RecoveryReads::new(state),
            frames: 0,
            current: 0,
            recipe: FrameRecipe::default(),
        }
    }

    /// Refuses `state` of another grid than the device's (`what` names the argument).
    pub fn check_grid(&self, state: &State, what: &'static str) -> Result<()> {
        if state.grid != self.grid {
            return Err(Error::invalid(what, format!("{:?}", state.grid), format!("{:?}", self.grid)));
        }
        Ok(())
    }

    /// Refuses a plan for another grid.
    pub fn check_plan(&self, plan: &FramePlan) -> Result<()> {
        let (c, g) = (&plan.constants, self.grid);
        if c.width != g.width || c.height != g.height {
            return Err(Error::invalid("plan grid", format!("{}x{}", c.width, c.height), format!("{}x{}", g.width, g.height)));
        }
        Ok(())
    }

    /// A new state was uploaded as of frame `frames` with `counters`: edits queued are dropped,
    /// the state is in copy 0, every tile wakes, and reads in flight are discarded when they come.
    pub fn loaded(&mut self, state: &State, counters: Counters, frames: u64) {
        self.edits.clear();
        self.current = 0;
        self.frames = frames;
        self.sleep.loaded(frames);
        self.reads.load(state, counters, frames);
        self.recovery.load(state, counters, frames);
    }

    /// [`GpuHost::loaded`] at the end of a load applied in parts ([`super::Backend::finish_restore`]):
    /// the snapshot and the recovery point come made with `restored`.
    pub fn loaded_restored(&mut self, restored: &super::RestoredState) {
        let frames = restored.point.frame;
        self.edits.clear();
        self.current = 0;
        self.frames = frames;
        self.sleep.loaded(frames);
        let replaced = (self.reads.load_snapshot(restored.snapshot()), self.recovery.load_point(restored.point.clone()));
        super::drop_elsewhere(replaced);
    }

    /// [`super::Backend::edit_water`]: queued.
    pub fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome> {
        self.edits.edit_water(cells);
        Ok(EditOutcome::Queued)
    }

    /// [`super::Backend::edit_terrain`]: queued.
    pub fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        self.edits.edit_terrain(cells);
        Ok(())
    }

    /// [`super::Backend::set_displacement`]: queued.
    pub fn set_displacement(&mut self, cells: &[CellDisplacement]) -> Result<()> {
        self.edits.set_displacement(cells)
    }

    /// [`super::Backend::nudge_pipes`]: queued; returns the edits to apply first when a nudge
    /// names a cell already queued.
    pub fn nudge_pipes(&mut self, nudges: &[PipeNudge]) -> Result<Option<EditBatch>> {
        let earlier = self.edits.nudge(nudges)?;
        if let Some(batch) = &earlier {
            self.sleep.mark_edits(batch);
        }
        Ok(earlier)
    }

    /// [`super::Backend::overwrite_cells`]: the list the device's `overwrite_cells` pass
    /// (`overwrite.wgsl`) applies, each cell once with the last entry given for it (what the CPU
    /// leaves, and its booking: the depth changed telescopes to the last minus the first), and
    /// every listed cell's tile marked for the next step. The host cannot tell which cells the
    /// write changes, so a tile set to the water it held wakes too (a sleeping tile that steps
    /// gives the same water). Apply the queued edits before this list: they were made first.
    pub fn overwrites(&mut self, cells: &[crate::simulation::CellOverwrite]) -> Vec<DeviceOverwrite> {
        let mut items: Vec<DeviceOverwrite> = cells.iter().map(|c| DeviceOverwrite { cell: c.cell, depth: c.depth, pad: [0; 2], flow_bits: c.flow.map(f32::to_bits) }).collect();
        // Stable: a cell's entries stay in the order given, and the last one is kept.
        items.sort_by_key(|o| o.cell);
        items.dedup_by(|later, kept| {
            let same = later.cell == kept.cell;
            if same {
                *kept = *later;
            }
            same
        });
        self.sleep.mark_edited(items.iter().map(|o| o.cell));
        items
    }

    /// Before [`super::Backend::set_terrain`] uploads `terrain`: checks it, drops the terrain
    /// edits it overwrites and wakes every tile.
    pub fn new_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        check_terrain(&self.grid, terrain)?;
        self.edits.new_terrain();
        self.sleep.wake_all();
        Ok(())
    }

    /// [`super::Backend::want_cells`].
    pub fn want_cells(&mut self, cells: &[usize]) {
        self.reads.want_cells(cells, self.frames);
    }

    /// [`super::Backend::recovery_point`], from what has arrived (waiting for reads being
    /// decoded on other threads).
    pub fn recovery_point(&mut self) -> RecoveryPoint {
        self.recovery.settle();
        self.recovery.newest(&self.reads)
    }

    /// [`super::Backend::set_sleeping`].
    pub fn set_sleeping(&mut self, on: bool) {
        self.sleep.set_enabled(on);
    }

    /// [`super::Backend::sleep_report`].
    pub fn sleep_report(&self) -> SleepReport {
        self.sleep.report()
    }

    /// For [`super::Backend::awake_tiles`]: the copy whose tile flags the last step wrote, or
    /// `None` when no step ran since the upload (all count as awake).
    pub fn last_step_flags(&self) -> Option<usize> {
        self.sleep.stepped().then(|| 1 - self.current)
    }

    /// [`super::Backend::awake_tiles`] from the flags [`GpuHost::last_step_flags`] named.
    pub fn awake_tiles(&self, flags: Option<&[u8]>) -> AwakeTiles {
        self.sleep.awake_tiles(flags.map(bytemuck::pod_collect_to_vec::<u8, u32>).as_deref())
    }

    /// The queued edits, for a frame or a blocking read, their tiles marked for the next step.
    pub fn take_edits(&mut self) -> EditBatch {
        let batch = self.edits.take();
        self.sleep.mark_edits(&batch);
        batch
    }

    /// Starts recording a frame of `plan`: its constants, the queued edits, the forcing by cell
    /// and the snapshot read.
    pub fn start_frame(&mut self, plan: &FramePlan) -> FrameStart {
        self.constants = plan.constants;
        let edits = self.take_edits();
        // A source and a drain on one cell apply in the order the CPU applies them.
        let forcing = water_by_cell(if plan.substeps > 0 { plan.forcing } else { &[] });
        let read = self.reads.next_read(self.frames + 1);
        FrameStart { edits, forcing, read }
    }

    /// After the frame's lists are uploaded: the tiles' parameters and, when they changed, the
    /// marks to upload (`None` in a frame without steps), then the stale marks to upload when the
    /// snapshot must recompute every tile. The order matters: the frame's start tells whether its
    /// plan marks the edits' tiles stale.
    pub fn start_tiles(&mut self, plan: &FramePlan, start: &FrameStart, upload: impl FnOnce(Option<(TileParams, Option<&[u32]>)>)) -> Option<Vec<u32>> {
        upload(self.sleep.start_frame(&plan.constants, plan.substeps, &start.forcing));
        match start.read {
            Some(_) => self.sleep.snapshot_all_stale(&plan.constants),
            None => None,
        }
    }

    /// The frame's passes, in order ([`FrameRecipe`]); `detail` and `recovery` say whether the
    /// detail waves run and whether a recovery read is issued.
    pub fn recipe(&mut self, plan: &FramePlan, start: &FrameStart, detail: bool, recovery: bool) -> &[FramePass] {
        let snapshot = match start.read.as_ref().map(|r| &r.coverage) {
            None => SnapshotRead::None,
            Some(Coverage::Texels) => SnapshotRead::Texels,
            Some(Coverage::Tiles(tiles)) => SnapshotRead::Tiles(tiles.len()),
        };
        let inputs = FrameInputs { substeps: plan.substeps, edits: start.edits.counts(), forcing: start.forcing.len(), detail, snapshot, recovery };
        self.recipe.plan(&inputs, self.current)
    }

    /// Pass `at` of the last [`GpuHost::recipe`] (a backend records them by index, as it needs
    /// itself mutably while it records).
    pub fn pass(&self, at: usize) -> Option<FramePass> {
        self.recipe.passes().get(at).copied()
    }

    /// The copy holding the state after the last [`GpuHost::recipe`].
    pub fn current_after_recipe(&self) -> usize {
        self.recipe.current()
    }

    /// The ledger counters read back as the device keeps them ([`super::recovery::COUNTER_BYTES`]).
    pub fn counters_from(bytes: &[u8]) -> Counters {
        Counters::from_device_words(&bytemuck::pod_collect_to_vec::<u8, u32>(bytes))
    }

    /// The state read back as its three fields' bytes.
    pub fn state_from(&self, terrain: &[u8], depth: &[u8], flow: &[u8]) -> State {
        State { grid: self.grid, terrain: bytemuck::pod_collect_to_vec(terrain), depth: bytemuck::pod_collect_to_vec(depth), flow: bytemuck::pod_collect_to_vec(flow) }
    }
}

/// One cell of the list `overwrite.wgsl` applies (`CellOverwrite` there): the cell, its depth
/// (quanta) and its four pipe flows as f32 bits, 32 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeviceOverwrite {
    /// Row-major cell index.
    pub cell: u32,
    /// Depth, quanta.
    pub depth: i32,
    /// Padding to the flows' 16-byte alignment.
    pub pad: [u32; 2],
    /// Flows of the E, S, SE and SW pipes, as f32 bits.
    pub flow_bits: [u32; 4],
}

/// A device buffer a GPU backend reads back whole, waiting for the device (tests, saving,
/// debug views): what [`gpu_backend_methods`] asks a backend's `read_whole` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceField {
    /// Terrain heights (`f32` a cell).
    Terrain,
    /// Depth quanta (`i32` a cell) of a copy.
    Depth(usize),
    /// Pipe flows (`vec4<f32>` a cell) of a copy.
    Flow(usize),
    /// The ledger counters ([`super::recovery::COUNTER_BYTES`]).
    Counters,
    /// The tile flags (`u32` a tile) the step from a copy wrote.
    TileFlags(usize),
}

impl DeviceField {
    /// Bytes of the field on a grid of `cells` cells and `tiles` tiles.
    pub fn bytes(self, cells: usize, tiles: usize) -> usize {
        match self {
            DeviceField::Terrain | DeviceField::Depth(_) => 4 * cells,
            DeviceField::Flow(_) => 16 * cells,
            DeviceField::Counters => super::recovery::COUNTER_BYTES,
            DeviceField::TileFlags(_) => 4 * tiles,
        }
    }
}

/// The [`super::Backend`] methods whose logic is the same on every GPU backend, written once: put
/// `pipewater_core::gpu_backend_methods!();` in the backend's `impl Backend` block. The backend
/// has a `host: GpuHost` field, a `detail: Option<_>` layer with `layout`, `queue` and `heights`,
/// and the inherent methods `new(state)`, `upload(state, counters, frames)`, `submit_edits(batch)`, `harvest()` and
/// `read_whole(&[DeviceField]) -> Result<Vec<Vec<u8>>>` (which applies the queued edits first).
#[macro_export]
macro_rules! gpu_backend_methods {
    () => {
        fn load(&mut self, state: &$crate::state::State) -> $crate::Result<()> {
            if state.grid != self.host.grid {
                // Another grid is another backend (the old one frees its resources as it goes),
                // with this one's sleeping and detail layer.
                let (sleeping, detail) = (self.host.sleep.enabled(), self.detail.as_ref().map(|d| d.layout()));
                *self = Self::new(state)?;
                self.set_sleeping(sleeping);
                return self.configure_detail(detail);
            }
            self.upload(state, $crate::state::Counters::default(), 0)
        }

        fn restore(&mut self, state: &$crate::state::State, counters: $crate::state::Counters, frames: u64) -> $crate::Result<()> {
            self.host.check_grid(state, "restored grid")?;
            self.upload(state, counters, frames)
        }

        fn edit_water(&mut self, cells: &[$crate::backend::CellWater]) -> $crate::Result<$crate::backend::EditOutcome> {
            self.host.edit_water(cells)
        }

        fn edit_terrain(&mut self, cells: &[$crate::backend::CellTerrain]) -> $crate::Result<()> {
            self.host.edit_terrain(cells)
        }

        fn set_displacement(&mut self, cells: &[$crate::backend::CellDisplacement]) -> $crate::Result<()> {
            self.host.set_displacement(cells)
        }

        fn nudge_pipes(&mut self, nudges: &[$crate::backend::PipeNudge]) -> $crate::Result<()> {
            match self.host.nudge_pipes(nudges)? {
                Some(earlier) => self.submit_edits(earlier),
                None => Ok(()),
            }
        }

        fn snapshot(&mut self) -> Option<std::sync::Arc<$crate::state::Snapshot>> {
            self.host.reads.want_snapshot();
            self.harvest();
            Some(self.host.reads.latest())
        }

        fn read_state(&mut self) -> $crate::Result<$crate::state::State> {
            use $crate::backend::gpu_host::DeviceField;
            let k = self.host.current;
            let fields = self.read_whole(&[DeviceField::Terrain, DeviceField::Depth(k), DeviceField::Flow(k)])?;
            Ok(self.host.state_from(&fields[0], &fields[1], &fields[2]))
        }

        fn read_depth(&mut self, which: Option<(&$crate::backend::sleep::TileGrid, &[bool])>, depth: &mut [i32]) -> $crate::Result<()> {
            // The depth alone: a sixth of what `read_state` moves from the device.
            let k = self.host.current;
            let bytes = self.read_whole(&[$crate::backend::gpu_host::DeviceField::Depth(k)])?.remove(0);
            $crate::backend::copy_tiles(&bytemuck::pod_collect_to_vec::<u8, i32>(&bytes), which, depth)
        }

        fn recovery_point(&mut self) -> Option<$crate::backend::recovery::RecoveryPoint> {
            self.harvest();
            Some(self.host.recovery_point())
        }

        fn read_counters(&mut self) -> $crate::Result<$crate::state::Counters> {
            let fields = self.read_whole(&[$crate::backend::gpu_host::DeviceField::Counters])?;
            Ok($crate::backend::gpu_host::GpuHost::counters_from(&fields[0]))
        }

        fn want_cells(&mut self, cells: &[usize]) {
            self.host.want_cells(cells);
        }

        fn set_sleeping(&mut self, on: bool) {
            self.host.set_sleeping(on);
        }

        fn sleep_report(&self) -> Option<$crate::backend::sleep::SleepReport> {
            Some(self.host.sleep_report())
        }

        fn awake_tiles(&mut self) -> Option<$crate::backend::sleep::AwakeTiles> {
            // The flags of the last step: a small read that waits for the device.
            let flags = match self.host.last_step_flags() {
                Some(copy) => Some(self.read_whole(&[$crate::backend::gpu_host::DeviceField::TileFlags(copy)]).ok()?.remove(0)),
                None => None,
            };
            Some(self.host.awake_tiles(flags.as_deref()))
        }

        fn queue_detail(&mut self, frame: $crate::detail::DetailFrame) -> $crate::Result<()> {
            if let Some(detail) = &mut self.detail {
                detail.queue(frame);
            }
            Ok(())
        }

        fn detail_heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
            self.detail.as_mut().map_or_else(|| vec![0.0; cells.len()], |d| d.heights(cells))
        }
    };
}
