//! Backends run the step of [`crate::pipes`] over a [`State`]. The CPU backend is the reference;
//! the GPU backend must give the same answers within the tolerance its tests state.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;

use crate::error::Result;
use crate::pipes::StepConstants;
use crate::state::{Counters, Snapshot, State};
use bytemuck::{Pod, Zeroable};
use std::sync::Arc;

/// Which backend runs a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The multithreaded CPU reference.
    Cpu,
    /// wgpu compute shaders.
    Gpu,
    /// The same compute shaders on the host engine's own GPU device (Godot's RenderingDevice),
    /// supplied by the engine's crate through [`crate::Simulation::with_backend`].
    EngineGpu,
}

/// A change of water in one cell, in quanta. Positive adds (up to the cell's maximum depth),
/// negative removes (never more than the cell holds). The ledger counts what really happened.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct CellWater {
    /// Linear cell index.
    pub cell: u32,
    /// Quanta to add (positive) or remove (negative).
    pub quanta: i32,
}

/// A change of terrain height in one cell, metres. Water depth is kept, so the surface moves with
/// the ground.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct CellTerrain {
    /// Linear cell index.
    pub cell: u32,
    /// Height change, m.
    pub delta: f32,
}

/// Result of an edit: applied at once (CPU), or queued for the next frame (GPU), in which case
/// the exact figures reach the ledger with the snapshot that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOutcome {
    /// Applied now: quanta really added and removed.
    Applied {
        /// Quanta really added.
        added: u64,
        /// Quanta really removed.
        removed: u64,
    },
    /// Queued; applied before the next step on the device.
    Queued,
}

/// One frame of work: `substeps` steps of `constants.dt`, each preceded by `forcing`.
#[derive(Debug, Clone)]
pub struct FramePlan<'a> {
    /// Constants of every step of the frame.
    pub constants: StepConstants,
    /// Number of steps.
    pub substeps: u32,
    /// Per-step water changes from sources (positive) and drains (negative).
    pub forcing: &'a [CellWater],
}

/// A simulation engine.
pub trait Backend: Send {
    /// Which kind of backend this is.
    fn kind(&self) -> BackendKind;
    /// Human-readable description (thread count, adapter name and driver).
    fn description(&self) -> String;
    /// Replaces the whole state and zeroes the counters.
    fn load(&mut self, state: &State) -> Result<()>;
    /// Replaces the whole state, sets the ledger counters to `counters` and the frame count to
    /// `frames`: a saved state going on where it stopped. `state` has this backend's grid (the
    /// caller checks it) and pending edits are dropped.
    fn restore(&mut self, state: &State, counters: Counters, frames: u64) -> Result<()>;
    /// Changes water in some cells, before the next step.
    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome>;
    /// Changes terrain in some cells, before the next step.
    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()>;
    /// Replaces the terrain everywhere, keeping depth and flux.
    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()>;
    /// Runs one frame of steps.
    fn advance(&mut self, plan: &FramePlan) -> Result<()>;
    /// The newest complete snapshot, if one exists yet. Never blocks on the device.
    fn snapshot(&mut self) -> Option<Arc<Snapshot>>;
    /// Reads the whole current state, waiting for the device if needed. For tests, saving and
    /// resets; not for every frame.
    fn read_state(&mut self) -> Result<State>;
    /// Counters as of the current state, waiting for the device if needed.
    fn read_counters(&mut self) -> Result<Counters>;
    /// Cells that queries are about to read from the snapshot. A backend whose snapshot holds
    /// only what queries asked for (the grid itself staying on the device) reads these back from
    /// now on; backends whose snapshot covers the grid ignore it.
    fn want_cells(&mut self, _cells: &[usize]) {}
    /// Bytes the last frame copied from the device to the host for snapshots and queries (0 on
    /// the CPU): the figure that shows whether a GPU path keeps the fields on the device.
    fn last_readback_bytes(&self) -> u64 {
        0
    }
}

/// Frames between a GPU `advance` and the snapshot that shows it; 0 on the CPU.
pub const CPU_SNAPSHOT_LATENCY: u32 = 0;
