//! Backends run the step of [`crate::pipes`] over a [`State`]. The CPU backend is the reference;
//! the GPU backend must give the same answers within the tolerance its tests state.

pub mod cpu;
pub mod frame;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod gpu_host;
pub mod limits;
pub mod pending;
pub mod readback;
pub mod recovery;
pub mod sleep;
pub mod step_kernel;
pub mod tile_snapshot;

use crate::detail::{DetailFrame, DetailLayout, DetailTexels};
pub use crate::cell_edits::{CellDisplacement, CellTerrain, CellWater, PipeNudge};
use crate::erosion::ErosionFields;
use crate::error::{Error, Result};
use crate::quanta::MAX_TERRAIN_ABS;
use crate::params::ErosionParams;
use crate::pipes::StepConstants;
use crate::state::{Counters, Snapshot, State};
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

/// The entries that turn the displacement of the cells in `displaced` into `cells` (each cell
/// once): `cells` themselves, then every cell of `displaced` that `cells` leave out, back to 0.
/// `displaced` becomes the cells `cells` displace. Every backend keeps its displaced cells this
/// way, so clearing last frame's bodies costs what they covered, not the grid.
pub fn displacement_changes(displaced: &mut Vec<u32>, cells: &[CellDisplacement]) -> Vec<CellDisplacement> {
    let mut changes: Vec<CellDisplacement> = cells.to_vec();
    let now: std::collections::HashSet<u32> = cells.iter().map(|c| c.cell).collect();
    changes.extend(displaced.iter().filter(|c| !now.contains(c)).map(|&cell| CellDisplacement { cell, head: 0.0 }));
    *displaced = cells.iter().filter(|c| c.head != 0.0).map(|c| c.cell).collect();
    changes
}

/// What a GPU backend queues for the bodies between frames: the displacement changes and the
/// nudges for its next submission, and the heads in force (to restore after a new terrain).
#[derive(Debug, Default)]
pub struct BodyQueue {
    displaced: Vec<u32>,
    heads: Vec<CellDisplacement>,
    /// Displacement entries for the next submission, each cell once.
    pub displacement: Vec<CellDisplacement>,
    /// Nudges for the next submission, each cell once.
    pub nudges: Vec<PipeNudge>,
}

impl BodyQueue {
    /// [`Backend::set_displacement`]: queues the changes from the heads in force to `cells`.
    pub fn set_displacement(&mut self, cells: &[CellDisplacement], cell_count: usize) -> Result<()> {
        check_displacement(cells, cell_count)?;
        let changes = displacement_changes(&mut self.displaced, cells);
        // A later change of a cell replaces an earlier one not yet applied.
        let changed: std::collections::HashSet<u32> = changes.iter().map(|c| c.cell).collect();
        self.displacement.retain(|d| !changed.contains(&d.cell));
        self.displacement.extend(changes);
        self.heads = cells.iter().filter(|c| c.head != 0.0).copied().collect();
        Ok(())
    }

    /// [`Backend::nudge_pipes`]: queues `nudges`; true when a cell is queued already, in which
    /// case the caller applies the queue first (one list names each cell once).
    pub fn nudge(&mut self, nudges: &[PipeNudge], cell_count: usize) -> Result<bool> {
        check_nudges(nudges, cell_count)?;
        let queued: std::collections::HashSet<u32> = self.nudges.iter().map(|n| n.cell).collect();
        Ok(nudges.iter().any(|n| queued.contains(&n.cell)))
    }

    /// After a new terrain was uploaded (the step's bed with it): the heads in force again.
    pub fn restore_heads(&mut self) {
        let heads: std::collections::HashSet<u32> = self.heads.iter().map(|h| h.cell).collect();
        self.displacement.retain(|d| !heads.contains(&d.cell));
        self.displacement.extend_from_slice(&self.heads);
    }

    /// Everything queued or in force is dropped (a new state was loaded, whose bed has none).
    pub fn clear(&mut self) {
        *self = BodyQueue::default();
    }

    /// Whether anything waits for the next submission.
    pub fn is_empty(&self) -> bool {
        self.displacement.is_empty() && self.nudges.is_empty()
    }
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
    /// One part of a load applied over several frames ([`crate::Simulation::poll_restore`]):
    /// writes rows `rows` of `state` (terrain, depth, pipes; bodies' displacement back to none)
    /// into the fields the next step starts from, and nothing else, so the snapshot and the
    /// ledger still show the water being replaced. The simulation neither steps nor edits until
    /// [`Backend::finish_restore`]. Returns false, having written nothing, where this backend
    /// loads only whole (the default): `finish_restore` then does all of it.
    fn restore_rows(&mut self, state: &State, rows: std::ops::Range<u32>) -> Result<bool> {
        let _ = (state, rows);
        Ok(false)
    }
    /// Ends a load whose rows [`Backend::restore_rows`] wrote, every one of them when
    /// `rows_written` (else it is [`Backend::restore`] of `restored`): the counters, the frame
    /// count, the snapshot and whatever else `restore` resets. `restored` was made on the worker
    /// that decoded the save, so what it holds costs the caller nothing here.
    fn finish_restore(&mut self, restored: &RestoredState, rows_written: bool) -> Result<()> {
        let _ = rows_written;
        let point = &restored.point;
        self.restore(&point.state, point.counters, point.frame)
    }
    /// Changes water in some cells, before the next step.
    fn edit_water(&mut self, cells: &[CellWater]) -> Result<EditOutcome>;
    /// Changes terrain in some cells, before the next step.
    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> Result<()>;
    /// Replaces the displacement of bodies ([`CellDisplacement`], each cell at most once): the
    /// cells named take their head, every other cell goes back to none. Applied before the next
    /// step; `load` and `restore` clear it.
    fn set_displacement(&mut self, cells: &[CellDisplacement]) -> Result<()>;
    /// Drags the pipes of some cells towards velocities ([`PipeNudge`], each cell at most once),
    /// before the next step.
    fn nudge_pipes(&mut self, nudges: &[PipeNudge]) -> Result<()>;
    /// Replaces the terrain everywhere, keeping depth and flux.
    fn set_terrain(&mut self, terrain: &[f32]) -> Result<()>;
    /// Runs one frame of steps.
    fn advance(&mut self, plan: &FramePlan) -> Result<()>;
    /// Cooling after a frame ([`crate::cooling::solidify`]): turns up to `quanta` quanta of every
    /// still cell's depth into its ground, judged with the step constants `c`, before any edit
    /// queued after it. The quanta turned are counted in this backend's
    /// [`Counters::solidified`], as the counters of edits are (on the device for the GPU
    /// backends, which need not wait for it). Returns false where this backend does not cool
    /// (the default), having changed nothing.
    fn solidify(&mut self, c: &StepConstants, quanta: i32) -> Result<bool> {
        let _ = (c, quanta);
        Ok(false)
    }
    /// The newest complete snapshot, if one exists yet. Never blocks on the device.
    fn snapshot(&mut self) -> Option<Arc<Snapshot>>;
    /// Reads the whole current state, waiting for the device if needed. For tests, saving and
    /// resets; not for every frame.
    fn read_state(&mut self) -> Result<State>;
    /// Counters as of the current state, waiting for the device if needed.
    fn read_counters(&mut self) -> Result<Counters>;
    /// Starts reading the whole current state and its counters without waiting for the device:
    /// what [`crate::Simulation::begin_save`] takes. The reader it returns runs on a worker
    /// thread and waits there (for the device, for a copy out of mapped memory), so the caller
    /// only records the read. Edits queued so far are applied first. The default reads now, on
    /// the caller's thread ([`Backend::read_state`]), for backends without an asynchronous read.
    fn begin_state_read(&mut self) -> Result<StateReader> {
        let (state, counters) = (self.read_state()?, self.read_counters()?);
        Ok(Box::new(move || Ok((state, counters))))
    }
    /// What the water goes on from if this backend's device is lost: the newest state of every
    /// cell of one frame that the host holds without asking the device (which may be gone). The
    /// default, for backends whose snapshot always covers every cell, is the snapshot; the GPU
    /// backends keep [`recovery`] points. `None` where nothing whole exists yet.
    fn recovery_point(&mut self) -> Option<recovery::RecoveryPoint> {
        self.snapshot().map(recovery::RecoveryPoint::Snapshot)
    }
    /// Cells that queries are about to read from the snapshot. A backend whose snapshot holds
    /// only what queries asked for (the grid itself staying on the device) reads these back from
    /// now on; backends whose snapshot covers the grid ignore it.
    fn want_cells(&mut self, _cells: &[usize]) {}
    /// Whether snapshots must cover every cell (`true`: textures are filled from them on the
    /// CPU) or only the cells queries ask for through [`Backend::want_cells`] (`false`: the
    /// grid stays on the device and a frame reads back only those). Backends whose snapshot always
    /// covers the grid ignore it.
    fn want_full_snapshots(&mut self, _full: bool) {}
    /// Bytes the last frame copied from the device to the host for snapshots and queries (0 on
    /// the CPU): the figure that shows whether a GPU path keeps the fields on the device.
    fn last_readback_bytes(&self) -> u64 {
        0
    }
    /// Makes the device this backend runs on lost, as a driver reset would, so that games and
    /// tests can see what follows ([`crate::Simulation`] moves the water to the next backend).
    /// On wgpu it destroys the process-wide device, so every simulation on it is affected.
    /// False where there is no device to lose (the CPU).
    fn simulate_device_loss(&mut self) -> bool {
        false
    }

    // ---- Sleeping tiles ([`sleep`]): water at rest is not stepped. ----

    /// Lets tiles at rest sleep (`true`, the default on backends that have sleeping) or steps
    /// every cell (`false`, for comparison). Both give the same water bit for bit.
    fn set_sleeping(&mut self, _on: bool) {}
    /// What sleeping did in the last frame; `None` on backends without sleeping. On a GPU it
    /// arrives with the snapshot, as late as the snapshot.
    fn sleep_report(&self) -> Option<sleep::SleepReport> {
        None
    }
    /// Which tiles the last step stepped (on a GPU, as of the newest snapshot), for debug views;
    /// `None` on backends without sleeping.
    fn awake_tiles(&mut self) -> Option<sleep::AwakeTiles> {
        None
    }
    /// The tiles whose depth may have changed since the last call (stepped in any step since,
    /// or touched by an edit, forcing, cooling or a new state that no step has planned yet), and
    /// forgets them: what a sync server compares instead of every tile. `None` where the backend
    /// does not track this (then any tile may have changed). One caller per backend: a second
    /// one would take the first one's tiles.
    fn take_changed_tiles(&mut self) -> Option<sleep::AwakeTiles> {
        None
    }
    /// Copies the current depth quanta of the cells in the tiles `which` marks (of `tiles`, or
    /// every cell when `None`) into `depth` (row-major, a cell each); other cells are left as
    /// they are. Waits for the device. Queued edits are applied first, as for
    /// [`Backend::read_state`], which the default reads whole.
    fn read_depth(&mut self, which: Option<(&sleep::TileGrid, &[bool])>, depth: &mut [i32]) -> Result<()> {
        let state = self.read_state()?;
        copy_tiles(&state.depth, which, depth)
    }
    /// [`Backend::read_depth`] for the pipes' flows ([`State::flow`]).
    fn read_flow(&mut self, which: Option<(&sleep::TileGrid, &[bool])>, flow: &mut [[f32; 4]]) -> Result<()> {
        let state = self.read_state()?;
        copy_tiles(&state.flow, which, flow)
    }
    /// The current water (depth quanta and pipe flows) of the tiles `which` of `tiles`, each
    /// alone, into `out` ([`TileChanges`], every tile counted as differing; its buffers are
    /// reused): what a sync server compares, without grid-sized copies. Waits for the device;
    /// the default reads the state whole.
    fn read_tiles(&mut self, tiles: &sleep::TileGrid, which: &[u32], out: &mut TileChanges) -> Result<()> {
        let state = self.read_state()?;
        out.gather(tiles, which, &state.depth, &state.flow)
    }
    /// Sets the depth and pipe flows of `cells` (checked by the caller: on the grid, depths in
    /// range, flows finite) to exactly the values given, booking the depth changed as added or
    /// removed water, and wakes their tiles as an edit does: a multiplayer client setting the
    /// server's tiles ([`crate::Simulation::overwrite_cells`]). False, changing nothing, where
    /// the backend has no such write (the caller then reads and restores the whole state).
    fn overwrite_cells(&mut self, _cells: &[crate::simulation::CellOverwrite]) -> Result<bool> {
        Ok(false)
    }
    /// Takes the water as it is now (queued edits applied) as the copy that
    /// [`Backend::begin_tile_changes`] compares with, over `tiles`. False where the backend has
    /// no such comparison (the CPU reports its changed tiles instead,
    /// [`Backend::take_changed_tiles`]).
    fn reset_tile_changes(&mut self, _tiles: &sleep::TileGrid) -> Result<bool> {
        Ok(false)
    }
    /// Starts, without waiting for the device, the comparison of the water as it is after the
    /// work submitted so far (queued edits applied) with the copy the last comparison or
    /// [`Backend::reset_tile_changes`] took, tile by tile over the same `tiles`, bit for bit:
    /// every tile that differs is taken into the copy and described by a [`TileRecord`] (its
    /// total, hash and change); of the tiles `request` asks for (those it wants, and with
    /// [`TileRequest::read_every_change`] every one that differs) and those that differ now but
    /// did not at the last comparison (they started to change: an edit on still water), at most
    /// [`TileRequest::max_tiles`] are read back (depths and flows); the others are asked for
    /// again. The reader it returns gives them, waiting little when called a frame or more
    /// later. `None` where the backend has no such comparison, none was reset over these tiles,
    /// or the last reader is still out.
    fn begin_tile_changes(&mut self, _tiles: &sleep::TileGrid, _request: &TileRequest) -> Result<Option<TileChangesReader>> {
        Ok(None)
    }
    /// Starts reading every cell's depth quanta as they are after the work submitted so far,
    /// without waiting for the device: the reader it returns waits (little, when called a frame
    /// or more later) and gives them. `None` where the backend has no such read (the caller
    /// reads with [`Backend::read_depth`]) or while the last one's reader has not finished.
    fn begin_depth_read(&mut self) -> Result<Option<DepthReader>> {
        Ok(None)
    }

    // ---- Detail waves ([`crate::detail`]): a layer of its own, run beside the frame's steps. ----

    /// Turns the detail layer on with `layout`, its waves at rest (also when it was on with
    /// another layout), or off (`None`), freeing its fields. `load` and `restore` keep it on and
    /// put its waves at rest.
    fn configure_detail(&mut self, layout: Option<DetailLayout>) -> Result<()> {
        match layout {
            None => Ok(()),
            Some(_) => Err(Error::invalid("detail waves", "on", format!("off: the {:?} backend has no detail layer", self.kind()))),
        }
    }
    /// The layer's frame for the next [`Backend::advance`], which runs it over the water its first
    /// step reads: after the frame's edits and nudges and that step's sources and drains, before
    /// the step (and before the edges' inflow it adds), so that a GPU runs the layer beside the
    /// step rather than after it. A frame without steps runs it over the water as it is. Ignored
    /// while the layer is off.
    fn queue_detail(&mut self, _frame: DetailFrame) -> Result<()> {
        Ok(())
    }
    /// Heights (m) of world detail cells as of the newest frame the host has (0 outside the window
    /// or where nothing has been read yet). A GPU backend reads these cells back from now on.
    fn detail_heights(&mut self, cells: &[[i32; 2]]) -> Vec<f32> {
        vec![0.0; cells.len()]
    }
    /// Texels of the detail texture ([`DetailTexels`]) of the newest frame the host has, for
    /// engines that copy them into a texture; asking for them makes a GPU backend read them back
    /// from the next frame on. `None` while the layer is off, before the first frame, and on
    /// backends whose texture stays on the device.
    fn detail_texels(&mut self) -> Option<std::sync::Arc<DetailTexels>> {
        None
    }
    /// The texture the layer writes on the device, as the host engine's own handle (Godot's
    /// RenderingDevice: the texture's RID), for backends whose texture never leaves the GPU;
    /// `None` elsewhere and while the layer is off.
    fn detail_device_texture(&self) -> Option<u64> {
        None
    }
    /// The layer's fields, `(h, v)` per storage cell, waiting for the device: tests and
    /// benchmarks.
    fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        Err(Error::invalid("detail waves", "off", "on (configure_detail)"))
    }

    // ---- Erosion ([`crate::erosion`]): a pass of its own after each step. ----

    /// Turns erosion on with `params` (keeping its fields when it was on already) or off
    /// (`None`), dropping its fields. `load` and `restore` keep it on, starting over the new
    /// state's ground. Backends without the pass refuse to turn it on.
    fn configure_erosion(&mut self, params: Option<ErosionParams>) -> Result<()> {
        match params {
            None => Ok(()),
            Some(_) => Err(Error::invalid("erosion", "on", format!("off: the {:?} backend has no erosion pass (erosion runs on the CPU backend)", self.kind()))),
        }
    }
    /// The erosion fields and their ledger, waiting for the device if needed; `None` while
    /// erosion is off.
    fn read_erosion(&mut self) -> Result<Option<ErosionFields>> {
        Ok(None)
    }
}

/// A decoded save on its way into a backend ([`Backend::restore_rows`], [`Backend::finish_restore`]):
/// the state with its counters and frame, shared so that a GPU backend keeps it as its recovery
/// point without a copy, and that state's snapshot where the backend shows one from the load on.
#[derive(Debug, Clone)]
pub struct RestoredState {
    /// The state, its ledger counters and its frame count.
    pub point: Arc<recovery::ExactPoint>,
    /// [`State::snapshot`] of the state at its frame, made beside the decoding; `None` where the
    /// backend had no use for it (the CPU's snapshot follows its fields).
    pub snapshot: Option<Arc<Snapshot>>,
}

impl RestoredState {
    /// The snapshot of the restored state: the one made beside the decoding, or one made now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let point = &self.point;
        self.snapshot.clone().unwrap_or_else(|| Arc::new(point.state.snapshot(point.frame, point.counters)))
    }
}

/// Copies the cells of the tiles `which` marks (every cell when `None`) from `from` into `to`,
/// both row-major over the tiles' grid: what [`Backend::read_depth`] hands back.
pub fn copy_tiles<T: Copy>(from: &[T], which: Option<(&sleep::TileGrid, &[bool])>, to: &mut [T]) -> Result<()> {
    if to.len() != from.len() {
        return Err(Error::WrongLength { name: "depth", expected: from.len(), actual: to.len() });
    }
    let Some((tiles, marked)) = which else {
        to.copy_from_slice(from);
        return Ok(());
    };
    let cells = tiles.cells[0] as usize * tiles.cells[1] as usize;
    if cells != from.len() {
        return Err(Error::WrongLength { name: "depth", expected: cells, actual: from.len() });
    }
    if marked.len() != tiles.count() {
        return Err(Error::WrongLength { name: "tiles", expected: tiles.count(), actual: marked.len() });
    }
    let width = tiles.cells[0] as usize;
    for t in (0..marked.len()).filter(|&t| marked[t]) {
        let (xs, ys) = tiles.cell_ranges(t);
        for y in ys {
            let row = y as usize * width;
            let cols = row + xs.start as usize..row + xs.end as usize;
            to[cols.clone()].copy_from_slice(&from[cols]);
        }
    }
    Ok(())
}

/// Drops `value` on a thread of its own: freeing a large grid's fields gives their pages back to
/// the system, which holds a frame for milliseconds (a 4096² state's 400 MB: 20 ms on 2 cores).
pub fn drop_elsewhere<T: Send + 'static>(value: T) {
    // Without a thread, the value is dropped here after all.
    let _ = std::thread::Builder::new().name("pipewater free".into()).spawn(move || drop(value));
}

/// The rest of a [`Backend::begin_state_read`]: run on a worker thread, it gives the state and
/// counters of the frame the read began on.
pub type StateReader = Box<dyn FnOnce() -> Result<(State, Counters)> + Send>;

/// The rest of a [`Backend::begin_depth_read`]: every cell's depth quanta (row-major) as they
/// were when the read began.
pub type DepthReader = Box<dyn FnOnce() -> Result<Vec<i32>> + Send>;

/// The rest of a [`Backend::begin_tile_changes`].
pub struct TileChangesReader {
    /// Whether the read has arrived, so that [`TileChangesReader::read`] does not wait (asks the
    /// device, without waiting, to deliver what it has finished).
    pub ready: Box<dyn Fn() -> bool + Send>,
    /// The tiles that differed and their water, waiting for the device if they have not arrived.
    pub read: Box<dyn FnOnce() -> Result<TileChanges> + Send>,
}

/// What a sync server asks of a comparison ([`Backend::begin_tile_changes`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TileRequest {
    /// Most tiles read back.
    pub max_tiles: usize,
    /// One bit per tile (bit `t % 32` of word `t / 32`): tiles to read whether they differ or
    /// not (the ones the server will send next). Shorter than the tiles' words: the rest unset.
    pub wanted: Vec<u32>,
    /// Every tile that differs is read too (a keyframe needs every tile's water of one frame).
    pub read_every_change: bool,
}

impl TileRequest {
    /// Whether tile `t` is wanted.
    pub fn wants(&self, t: usize) -> bool {
        self.wanted.get(t / 32).is_some_and(|w| w >> (t % 32) & 1 != 0)
    }

    /// Marks tile `t` wanted.
    pub fn want(&mut self, t: usize) {
        if self.wanted.len() <= t / 32 {
            self.wanted.resize(t / 32 + 1, 0);
        }
        self.wanted[t / 32] |= 1 << (t % 32);
    }

    /// Tiles wanted.
    pub fn wanted_count(&self) -> usize {
        self.wanted.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// A tile that differed at a comparison on the device ([`Backend::begin_tile_changes`]), as the
/// device described it without reading it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileRecord {
    /// The tile.
    pub tile: u32,
    /// Its depth quanta summed.
    pub total: i64,
    /// [`crate::sync::tile_hash`] of its values.
    pub hash: u32,
    /// |Δ depth| summed over its cells since the copy it was compared with (quanta).
    pub change: u64,
}

/// Words of a [`TileRecord`] as `shaders/tile_changes.wgsl` writes it.
pub const TILE_RECORD_WORDS: usize = 6;

/// The tiles whose water differed from the copy a comparison ([`Backend::begin_tile_changes`])
/// took before, and the water of the tiles read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TileChanges {
    /// Tiles that differed.
    pub differing: usize,
    /// Per tile that differed, what the device found of it (a comparison on the device only;
    /// empty where the host compares what it read).
    pub records: Vec<TileRecord>,
    /// Tiles that were to be read, including those past the read's limit, which were not.
    pub to_read: usize,
    /// The tiles read, each with its water below.
    pub tiles: Vec<u32>,
    /// Per tile read, `tile_size²` cells: its cells' depth quanta row-major over the tile (an
    /// edge tile fills the first of them).
    pub depth: Vec<i32>,
    /// The same cells' pipe flows ([`State::flow`]).
    pub flow: Vec<[f32; 4]>,
}

impl TileChanges {
    /// Sets these to the tiles `which` of `tiles` taken from row-major `depth` and `flow`, in the
    /// buffers they have (a server's every sync would otherwise map and fault in fresh pages).
    /// Fails, leaving them empty, when a tile or the lengths do not fit `tiles`.
    pub fn gather(&mut self, tiles: &sleep::TileGrid, which: &[u32], depth: &[i32], flow: &[[f32; 4]]) -> Result<()> {
        self.differing = 0;
        self.to_read = 0;
        self.records.clear();
        self.tiles.clear();
        self.depth.clear();
        self.flow.clear();
        let cells = tiles.cells[0] as usize * tiles.cells[1] as usize;
        if depth.len() != cells || flow.len() != cells {
            return Err(Error::WrongLength { name: "depth", expected: cells, actual: depth.len().min(flow.len()) });
        }
        if let Some(&t) = which.iter().find(|&&t| t as usize >= tiles.count()) {
            return Err(Error::invalid("tile", t, format!("0 ..= {}", tiles.count() - 1)));
        }
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        self.depth.resize(which.len() * stride, 0);
        self.flow.resize(which.len() * stride, [0.0; 4]);
        let width = tiles.cells[0] as usize;
        for (slot, &t) in which.iter().enumerate() {
            let (xs, ys) = tiles.cell_ranges(t as usize);
            let w = xs.len();
            for (row, y) in ys.enumerate() {
                let to = slot * stride + row * w;
                let from = y as usize * width + xs.start as usize;
                self.depth[to..to + w].copy_from_slice(&depth[from..from + w]);
                self.flow[to..to + w].copy_from_slice(&flow[from..from + w]);
            }
        }
        self.differing = which.len();
        self.to_read = which.len();
        self.tiles.extend_from_slice(which);
        Ok(())
    }

    /// Bytes of a GPU comparison's read of `slots` tiles of `stride` cells over `tile_count`
    /// tiles as both GPU backends stage it (the first bytes of `shaders/tile_changes.wgsl`'s
    /// report, copied as they are): the counts of tiles that differed and of tiles to read, the
    /// slots' tiles, a record per tile, then the slots' depths, then their flows.
    pub fn staged_bytes(slots: usize, stride: usize, tile_count: usize) -> usize {
        4 * (2 + slots) + 4 * TILE_RECORD_WORDS * tile_count + 20 * slots * stride
    }

    /// The tiles a staged read of `limit` slots of `stride` cells over `tile_count` tiles holds
    /// ([`TileChanges::staged_bytes`]): only the records and slots that were filled are copied
    /// out. Fails when `bytes` is shorter than that or its counts are past the tiles.
    pub fn from_staged(bytes: &[u8], limit: usize, stride: usize, tile_count: usize) -> Result<TileChanges> {
        let expected = Self::staged_bytes(limit, stride, tile_count);
        if bytes.len() < expected {
            return Err(Error::Gpu(format!("the tile changes' read holds {} bytes, expected {expected}", bytes.len())));
        }
        let words = |from: usize, count: usize| -> Vec<u32> { bytemuck::pod_collect_to_vec(&bytes[4 * from..4 * (from + count)]) };
        let counts = words(0, 2);
        let (differing, to_read) = (counts[0] as usize, counts[1] as usize);
        if differing > tile_count || to_read > tile_count {
            return Err(Error::Gpu(format!("the tile changes' read counts {differing} tiles differing and {to_read} to read of {tile_count}")));
        }
        let read = to_read.min(limit);
        let records_at = 2 + limit;
        let depth_at = records_at + TILE_RECORD_WORDS * tile_count;
        let flow_at = depth_at + limit * stride;
        let records = words(records_at, TILE_RECORD_WORDS * differing)
            .chunks_exact(TILE_RECORD_WORDS)
            .map(|r| TileRecord {
                tile: r[0],
                total: ((r[2] as i32 as i64) << 16) + r[1] as i64,
                hash: r[3],
                change: ((r[5] as u64) << 16) + r[4] as u64,
            })
            .collect();
        Ok(TileChanges {
            differing,
            records,
            to_read,
            tiles: words(2, read),
            depth: bytemuck::pod_collect_to_vec(&bytes[4 * depth_at..4 * (depth_at + read * stride)]),
            flow: bytemuck::pod_collect_to_vec(&bytes[4 * flow_at..4 * (flow_at + 4 * read * stride)]),
        })
    }

    /// Whether every tile that was to be read was read.
    pub fn complete(&self) -> bool {
        self.tiles.len() == self.to_read
    }

    /// Writes the tiles read into row-major `depth` and `flow` over `tiles` and marks them in
    /// the returned flags (one per tile). Fails, writing nothing, when a tile or the lengths do
    /// not fit `tiles`.
    pub fn scatter(&self, tiles: &sleep::TileGrid, depth: &mut [i32], flow: &mut [[f32; 4]]) -> Result<Vec<bool>> {
        let cells = tiles.cells[0] as usize * tiles.cells[1] as usize;
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        if depth.len() != cells || flow.len() != cells {
            return Err(Error::WrongLength { name: "depth", expected: cells, actual: depth.len().min(flow.len()) });
        }
        if self.depth.len() < self.tiles.len() * stride || self.flow.len() < self.tiles.len() * stride {
            return Err(Error::WrongLength { name: "tile changes", expected: self.tiles.len() * stride, actual: self.depth.len().min(self.flow.len()) });
        }
        if let Some(&t) = self.tiles.iter().find(|&&t| t as usize >= tiles.count()) {
            return Err(Error::invalid("tile", t, format!("0 ..= {}", tiles.count() - 1)));
        }
        let mut marked = vec![false; tiles.count()];
        let width = tiles.cells[0] as usize;
        for (slot, &t) in self.tiles.iter().enumerate() {
            marked[t as usize] = true;
            let (xs, ys) = tiles.cell_ranges(t as usize);
            let w = xs.len();
            for (row, y) in ys.enumerate() {
                let from = slot * stride + row * w;
                let to = y as usize * width + xs.start as usize;
                depth[to..to + w].copy_from_slice(&self.depth[from..from + w]);
                flow[to..to + w].copy_from_slice(&self.flow[from..from + w]);
            }
        }
        Ok(marked)
    }
}

/// Frames between a GPU `advance` and the snapshot that shows it; 0 on the CPU.
pub const CPU_SNAPSHOT_LATENCY: u32 = 0;

/// Checks displacement entries: cells on the grid, heads finite and in range.
pub fn check_displacement(cells: &[CellDisplacement], cell_count: usize) -> Result<()> {
    for c in cells {
        if c.cell as usize >= cell_count {
            return Err(Error::invalid("displacement cell", c.cell, format!("0 .. {cell_count}")));
        }
        if !(c.head.is_finite() && (0.0..=MAX_TERRAIN_ABS).contains(&c.head)) {
            return Err(Error::invalid("displacement head", c.head, format!("0 ..= {MAX_TERRAIN_ABS} m")));
        }
    }
    Ok(())
}

/// Checks nudges: cells on the grid, velocities finite, weights in 0..1.
pub fn check_nudges(nudges: &[PipeNudge], cell_count: usize) -> Result<()> {
    for n in nudges {
        if n.cell as usize >= cell_count {
            return Err(Error::invalid("nudge cell", n.cell, format!("0 .. {cell_count}")));
        }
        if !(n.velocity_x.is_finite() && n.velocity_y.is_finite()) {
            return Err(Error::invalid("nudge velocity", format!("({}, {})", n.velocity_x, n.velocity_y), "finite m/s"));
        }
        if !(0.0..=1.0).contains(&n.weight) {
            return Err(Error::invalid("nudge weight", n.weight, "0 ..= 1"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{TileChanges, TileRecord, TILE_RECORD_WORDS};

    /// A staged read decodes as both GPU backends lay it out: the counts (the reads also past
    /// the limit), the slots' tiles, the records of the tiles that differed (totals and changes
    /// from their 16-bit halves' sums, a negative high sum kept negative), and only the read
    /// tiles' depths and flows from their places; a short read or counts past the tiles are
    /// errors, not panics.
    #[test]
    fn a_staged_read_decodes_the_slots_up_to_the_limit() {
        let (limit, stride, tile_count) = (2, 4, 9);
        let mut words = vec![0u32; TileChanges::staged_bytes(limit, stride, tile_count) / 4];
        words[0] = 2; // two tiles differed
        words[1] = 5; // five to read, two read
        words[2] = 7;
        words[3] = 3;
        let records = 2 + limit;
        words[records..records + 6].copy_from_slice(&[7, 0xffff, 3, 0xdead_beef, 10, 2]);
        words[records + 6..records + 12].copy_from_slice(&[1, 5, (-1i32) as u32, 1, 0, 0]);
        let depth_at = records + TILE_RECORD_WORDS * tile_count;
        for i in 0..limit * stride {
            words[depth_at + i] = 100 + i as u32;
        }
        for i in 0..4 * limit * stride {
            words[depth_at + limit * stride + i] = (i as f32).to_bits();
        }
        let changes = TileChanges::from_staged(bytemuck::cast_slice(&words), limit, stride, tile_count).unwrap();
        println!("{changes:?}");
        assert_eq!((changes.differing, changes.to_read, changes.tiles.clone()), (2, 5, vec![7, 3]));
        assert_eq!(changes.records[0], TileRecord { tile: 7, total: 3 * 65536 + 0xffff, hash: 0xdead_beef, change: 2 * 65536 + 10 });
        assert_eq!(changes.records[1], TileRecord { tile: 1, total: -65536 + 5, hash: 1, change: 0 });
        assert!(!changes.complete());
        assert_eq!(changes.depth, (100..108).collect::<Vec<i32>>());
        assert_eq!(changes.flow[1], [4.0, 5.0, 6.0, 7.0]);
        assert!(TileChanges::from_staged(&[0u8; 8], limit, stride, tile_count).is_err());
        words[0] = 10;
        assert!(TileChanges::from_staged(bytemuck::cast_slice(&words), limit, stride, tile_count).is_err());
    }
}
