//! The one recipe of a GPU frame: which passes a frame records and in what order, with the copy of
//! the ping-pong fields each pass reads. Both GPU backends (wgpu in [`super::gpu`], Godot's
//! RenderingDevice in the engine crate) record the passes of a [`FrameRecipe`] as they come, each
//! in its own API; what is theirs is only how a pass becomes a dispatch or a copy, and how "beside
//! the first step" is done (wgpu: in the same compute pass with no barrier between; the
//! RenderingDevice: a compute list of its own that Godot's graph runs beside the step's).
//!
//! The order, as [`FrameRecipe::plan`] writes it:
//! 1. the queued edits ([`EditCounts::passes`]), on the copy that holds the state;
//! 2. per step: its sources and drains ([`FramePass::Forcing`]), the tile plan, the step (which
//!    reads one copy and writes the other: the state moves to the other copy), and after the
//!    first step the detail waves over the copy that step read;
//! 3. after a frame of steps, the report of the awake tiles (with the last step's plan bindings);
//! 4. the snapshot passes over the copy that now holds the state, and the gather of the tiles
//!    queries read;
//! 5. in a frame without steps, the detail waves over the water as it is, after the snapshot;
//! 6. last, what leaves the device: the snapshot read (with the sleeping report behind it) and,
//!    when one is due, the recovery read of the whole state.
//!
//! Compute passes come first and reads last, so a backend may end its compute pass at the first
//! read. The recipe is refilled in place every frame: no allocation once it has grown.

use super::pending::{EditCounts, EditPass};

/// One pass of a frame. `copy` is the copy of depth and pipes (0 or 1) the pass reads or, for
/// edits, changes in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramePass {
    /// A queued edit pass over `count` list entries.
    Edit {
        /// Which edit pass.
        pass: EditPass,
        /// Entries of its list.
        count: usize,
        /// The copy it changes.
        copy: usize,
    },
    /// A step's sources and drains (`apply_water` over the forcing list of `count` entries).
    Forcing {
        /// Entries of the forcing list.
        count: usize,
        /// The copy it changes.
        copy: usize,
    },
    /// The tiles the next step runs, listed on the device as its dispatch (`tiles.wgsl`): the
    /// frame's first plan takes the host's marks, the later ones only the last step's flags.
    PlanTiles {
        /// Whether this is the frame's first step.
        first: bool,
        /// The copy the step reads.
        copy: usize,
    },
    /// The step from `copy` to the other copy, dispatched from the awake list of `copy`.
    Step {
        /// The copy it reads.
        copy: usize,
    },
    /// The detail waves' queued frame, over the flow of `copy` (read only).
    Detail {
        /// The copy of the flow the layer reads.
        copy: usize,
    },
    /// The frame's report of awake tiles, with the plan bindings of the last step (from `copy`).
    ReportAwake {
        /// The copy the last step read.
        copy: usize,
    },
    /// The snapshot's texels and shares of the totals for stale tiles, then the totals.
    Snapshot {
        /// The copy holding the state.
        copy: usize,
    },
    /// The gather of `tiles` tiles queries read, behind the header.
    Gather {
        /// Tiles gathered.
        tiles: usize,
        /// The copy holding the state.
        copy: usize,
    },
    /// The copy of the snapshot read and the sleeping report to the host.
    ReadSnapshot,
    /// The copy of the whole state of `copy` to the host ([`super::recovery`]).
    ReadRecovery {
        /// The copy holding the state.
        copy: usize,
    },
}

impl FramePass {
    /// Whether the pass copies to the host rather than computing on the device.
    pub fn is_read(&self) -> bool {
        matches!(self, FramePass::ReadSnapshot | FramePass::ReadRecovery { .. })
    }
}

/// What a frame holds, as the backend knows it before recording.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameInputs {
    /// Steps of the frame.
    pub substeps: u32,
    /// The queued edits' lists.
    pub edits: EditCounts,
    /// Entries of the forcing list applied before each step (sources and drains by cell).
    pub forcing: usize,
    /// Whether the detail waves run this frame.
    pub detail: bool,
    /// The snapshot read the frame issues, if any.
    pub snapshot: SnapshotRead,
    /// Whether a recovery read is issued after the frame.
    pub recovery: bool,
}

/// The snapshot read a frame issues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SnapshotRead {
    /// None: nothing asked for a snapshot since the last read.
    #[default]
    None,
    /// Every cell's texels.
    Texels,
    /// The texels of this many tiles, gathered behind the header.
    Tiles(usize),
}

/// The passes of one frame, in order, and the copy that holds the state after them.
#[derive(Debug, Clone, Default)]
pub struct FrameRecipe {
    passes: Vec<FramePass>,
    current: usize,
}

impl FrameRecipe {
    /// Refills the recipe with the frame `inputs` describes, the state starting in copy `current`.
    pub fn plan(&mut self, inputs: &FrameInputs, current: usize) -> &[FramePass] {
        let passes = &mut self.passes;
        passes.clear();
        let mut copy = current;
        for (pass, count) in inputs.edits.passes() {
            passes.push(FramePass::Edit { pass, count, copy });
        }
        for substep in 0..inputs.substeps {
            if inputs.forcing > 0 {
                passes.push(FramePass::Forcing { count: inputs.forcing, copy });
            }
            passes.push(FramePass::PlanTiles { first: substep == 0, copy });
            passes.push(FramePass::Step { copy });
            // The layer reads the water the first step reads, from the copy it reads: nothing
            // orders the two, so a device runs them side by side.
            if substep == 0 && inputs.detail {
                passes.push(FramePass::Detail { copy });
            }
            copy = 1 - copy;
        }
        if inputs.substeps > 0 {
            passes.push(FramePass::ReportAwake { copy: 1 - copy });
        }
        if inputs.snapshot != SnapshotRead::None {
            passes.push(FramePass::Snapshot { copy });
        }
        if let SnapshotRead::Tiles(tiles) = inputs.snapshot {
            passes.push(FramePass::Gather { tiles, copy });
        }
        if inputs.substeps == 0 && inputs.detail {
            passes.push(FramePass::Detail { copy });
        }
        if inputs.snapshot != SnapshotRead::None {
            passes.push(FramePass::ReadSnapshot);
        }
        if inputs.recovery {
            passes.push(FramePass::ReadRecovery { copy });
        }
        self.current = copy;
        &self.passes
    }

    /// The passes of the last [`FrameRecipe::plan`].
    pub fn passes(&self) -> &[FramePass] {
        &self.passes
    }

    /// The copy that holds the state after the frame.
    pub fn current(&self) -> usize {
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(passes: &[FramePass]) -> Vec<String> {
        passes
            .iter()
            .map(|p| match p {
                FramePass::Edit { pass, count, copy } => format!("edit {pass:?}×{count}@{copy}"),
                FramePass::Forcing { count, copy } => format!("forcing×{count}@{copy}"),
                FramePass::PlanTiles { first, copy } => format!("plan{}@{copy}", if *first { " first" } else { "" }),
                FramePass::Step { copy } => format!("step@{copy}"),
                FramePass::Detail { copy } => format!("detail@{copy}"),
                FramePass::ReportAwake { copy } => format!("report@{copy}"),
                FramePass::Snapshot { copy } => format!("snapshot@{copy}"),
                FramePass::Gather { tiles, copy } => format!("gather×{tiles}@{copy}"),
                FramePass::ReadSnapshot => "read snapshot".to_string(),
                FramePass::ReadRecovery { copy } => format!("read recovery@{copy}"),
            })
            .collect()
    }

    /// The frame's order, pinned without a GPU: edits before the first step's forcing, each step
    /// planned then run from the copy the last one wrote, the detail waves right after the first
    /// step over the copy it read, the awake report with the last step's copy, the snapshot and
    /// gather over the copy holding the state, reads last. A frame without steps runs the detail
    /// waves after the snapshot over the water as it is; a frame without a read has no snapshot.
    #[test]
    fn a_frame_runs_edits_forcing_plan_step_detail_beside_the_first_step_report_snapshot_then_reads() {
        let mut recipe = FrameRecipe::default();
        let edits = EditCounts { water: 3, terrain: 1, displacement: 0, nudges: 2 };
        let two_steps = FrameInputs { substeps: 2, edits, forcing: 4, detail: true, snapshot: SnapshotRead::Tiles(5), recovery: true };
        let got = names(recipe.plan(&two_steps, 1));
        println!("two steps from copy 1: {got:?}, state ends in copy {}", recipe.current());
        let expected = [
            "edit Terrain×1@1",
            "edit Water×3@1",
            "edit RefreshStepTerrain×1@1",
            "edit Nudge×2@1",
            "forcing×4@1",
            "plan first@1",
            "step@1",
            "detail@1",
            "forcing×4@0",
            "plan@0",
            "step@0",
            "report@0",
            "snapshot@1",
            "gather×5@1",
            "read snapshot",
            "read recovery@1",
        ];
        assert_eq!(got, expected);
        assert_eq!(recipe.current(), 1, "two steps come back to the copy they started from");

        let still = FrameInputs { substeps: 0, edits: EditCounts { water: 1, ..EditCounts::default() }, forcing: 4, detail: true, snapshot: SnapshotRead::Texels, recovery: false };
        let got = names(recipe.plan(&still, 0));
        println!("no steps, full read: {got:?}");
        assert_eq!(got, ["edit Water×1@0", "snapshot@0", "detail@0", "read snapshot"], "no forcing without steps; detail after the snapshot");
        assert_eq!(recipe.current(), 0);

        let one = FrameInputs { substeps: 1, detail: false, ..FrameInputs::default() };
        let got = names(recipe.plan(&one, 0));
        println!("one step, nothing read: {got:?}");
        assert_eq!(got, ["plan first@0", "step@0", "report@0"]);
        assert_eq!(recipe.current(), 1);

        for inputs in [two_steps, still, one] {
            let passes = recipe.plan(&inputs, 0);
            let first_read = passes.iter().position(FramePass::is_read).unwrap_or(passes.len());
            assert!(passes[first_read..].iter().all(FramePass::is_read), "reads come after every compute pass: {:?}", names(passes));
        }
    }

    /// Refilling the recipe every frame keeps its buffer: a frame allocates nothing once the
    /// recipe has grown to the largest frame.
    #[test]
    fn replanning_reuses_the_recipes_buffer() {
        let mut recipe = FrameRecipe::default();
        let big = FrameInputs { substeps: 8, forcing: 1, detail: true, snapshot: SnapshotRead::Tiles(1), recovery: true, ..FrameInputs::default() };
        recipe.plan(&big, 0);
        let (at, capacity) = (recipe.passes.as_ptr(), recipe.passes.capacity());
        for substeps in [1, 4, 8, 0, 8] {
            recipe.plan(&FrameInputs { substeps, ..big }, 0);
        }
        println!("capacity {capacity} after the first plan, {} after five more", recipe.passes.capacity());
        assert_eq!((recipe.passes.as_ptr(), recipe.passes.capacity()), (at, capacity));
    }
}
