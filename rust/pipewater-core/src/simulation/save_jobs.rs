//! Saves and loads that do not stop the game: [`Simulation::begin_save`] and
//! [`Simulation::begin_restore`] do the slow part (waiting for the device, compressing, writing
//! or reading the file, decompressing, validating) on a worker thread, and the game polls once a
//! frame while the simulation keeps running.
//!
//! What stays on the caller's thread: starting the read of the state (on a GPU backend, recording
//! a copy; on the CPU backend, a copy of the fields in memory), each poll (a look at a flag), and
//! the upload of a decoded load, a bounded part per poll ([`crate::Backend::restore_rows`],
//! [`RestoreJob::set_bytes_per_poll`]) while the water waits, then a landing that swaps in what the
//! worker made beside the decoding (the snapshot, the recovery point) and sets the ledger.
//! `examples/save_bench.rs` measures each of them.

use super::{check_edge_limits, Simulation};
use crate::backend::recovery::ExactPoint;
use crate::backend::RestoredState;
use crate::error::{Error, Result};
use crate::save::SavedState;
use crate::state::State;
use crate::BackendKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Writes `bytes` to `path` through a file beside it, renamed over `path` once complete, so that
/// a crash while saving leaves the last good save in place.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let failed = |e: std::io::Error| Error::invalid("path", path.display(), format!("a file this process can write ({e})"));
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, bytes).map_err(failed)?;
    std::fs::rename(&partial, path).map_err(failed)
}

/// Waits for a worker and turns a panic in it into an error that says what was running.
fn join<T>(worker: JoinHandle<Result<T>>, what: &str) -> Result<T> {
    worker.join().unwrap_or_else(|_| Err(Error::InvalidSave(format!("the worker thread {what} stopped with a panic"))))
}

/// A save running on a worker thread ([`Simulation::begin_save`]): the state of the frame it
/// began on, being read, compressed and (with [`Simulation::begin_save_to`]) written.
#[derive(Debug)]
pub struct SaveJob {
    frame: u64,
    worker: Option<JoinHandle<Result<Vec<u8>>>>,
}

impl SaveJob {
    /// The frame whose state it saves ([`Simulation::frames`] when it began).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Whether the save has finished (successfully or not): [`SaveJob::poll`] then returns at
    /// once.
    pub fn is_finished(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }

    /// The saved bytes (also when they were written to a file), once the worker has finished;
    /// `None` while it runs. Never waits. Gives the result once; later calls return `None`.
    pub fn poll(&mut self) -> Option<Result<Vec<u8>>> {
        if !self.is_finished() {
            return None;
        }
        self.worker.take().map(|w| join(w, "saving the state"))
    }

    /// Waits for the save and returns its bytes (for tests and for quitting a game).
    pub fn wait(mut self) -> Result<Vec<u8>> {
        match self.worker.take() {
            Some(worker) => join(worker, "saving the state"),
            None => Err(Error::InvalidSave("its result was already taken by poll".into())),
        }
    }
}

impl Drop for SaveJob {
    /// Waits for a save still running: on a GPU backend its worker holds a mapped buffer of the
    /// device, which must not outlive the process's device (the driver crashes on exit under it).
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Bytes of saved fields a cell holds while a load is applied: terrain (`f32`), depth (`i32`)
/// and the four pipes (`[f32; 4]`).
pub const RESTORE_BYTES_PER_CELL: u64 = 24;

/// Bytes of fields [`Simulation::poll_restore`] applies per call unless
/// [`RestoreJob::set_bytes_per_poll`] says otherwise: about 2 ms of copying on this project's
/// 2-core test machine (docs/BENCHMARKS.md), a 4096² state in 48 polls.
pub const DEFAULT_RESTORE_BYTES_PER_POLL: u64 = 8 << 20;

/// What the worker of a [`RestoreJob`] hands over: the save's fields ready for the backend and
/// everything else it holds.
#[derive(Debug)]
struct Decoded {
    restored: RestoredState,
    /// The save without its fields (they are in `restored`).
    rest: SavedState,
}

/// A saved state being read and decoded on a worker thread ([`Simulation::begin_restore`]);
/// [`Simulation::poll_restore`] applies it once decoded, a bounded part per call.
#[derive(Debug)]
pub struct RestoreJob {
    worker: Option<JoinHandle<Result<Decoded>>>,
    bytes_per_poll: u64,
    /// Shared with the simulation's [`Applying`]: set when the job is dropped while its load
    /// is applied, so that the simulation finishes it without being polled.
    abandoned: Arc<AtomicBool>,
    /// Rows written by the last poll, and by all polls so far, of `rows` in all.
    last_poll_rows: u32,
    rows_written: u32,
    rows: u32,
    width: u32,
}

impl RestoreJob {
    /// Whether decoding has finished: [`Simulation::poll_restore`] then starts applying it (or
    /// reports its error) without waiting for the worker.
    pub fn is_finished(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }

    /// Sets how many bytes of fields ([`RESTORE_BYTES_PER_CELL`] a cell) each
    /// [`Simulation::poll_restore`] applies: whole rows of cells, at least one row a poll.
    /// `bytes` within `1 ..= 2^40`.
    pub fn set_bytes_per_poll(&mut self, bytes: u64) -> Result<()> {
        if !(1..=1 << 40).contains(&bytes) {
            return Err(Error::invalid("bytes", bytes, "1 ..= 2^40"));
        }
        self.bytes_per_poll = bytes;
        Ok(())
    }

    /// Bytes of fields the last [`Simulation::poll_restore`] applied (0 while decoding).
    pub fn last_poll_bytes(&self) -> u64 {
        self.last_poll_rows as u64 * self.width as u64 * RESTORE_BYTES_PER_CELL
    }

    /// Rows of cells applied so far, of how many in all (0 of 0 while decoding).
    pub fn rows_applied(&self) -> (u32, u32) {
        (self.rows_written, self.rows)
    }
}

impl Drop for RestoreJob {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Relaxed);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// A load being applied ([`Simulation::poll_restore`]): the decoded save, and the rows of it the
/// backend holds so far.
#[derive(Debug)]
pub(super) struct Applying {
    decoded: Decoded,
    next_row: u32,
    /// Whether the backend writes rows at all ([`crate::Backend::restore_rows`]).
    in_rows: bool,
    /// The backend the rows went to: after a device loss the water runs on another, which gets
    /// every row again.
    backend: usize,
    abandoned: Arc<AtomicBool>,
}

impl Simulation {
    /// Starts saving the complete state of the current frame, as [`Simulation::save_state`] does,
    /// without holding the caller for the read and the compression: a worker thread waits for the
    /// device, encodes and compresses. The simulation may go on (frames, edits, queries) while it
    /// runs: the save holds the state of the frame it began on ([`SaveJob::frame`]). Poll the job
    /// once a frame ([`SaveJob::poll`]).
    ///
    /// On the caller's thread: edits queued so far are applied and the read is recorded (a GPU
    /// backend copies its fields on the device), or the fields are copied in memory (the CPU
    /// backend, about 24 bytes a cell; backends without an asynchronous read wait for the device
    /// here, as `save_state` does).
    pub fn begin_save(&mut self) -> Result<SaveJob> {
        self.start_save(None)
    }

    /// [`Simulation::begin_save`], and the worker then writes the bytes to `path` (through a
    /// `.partial` file beside it, renamed over `path` when complete, so a crash while saving keeps
    /// the last good save). A path that cannot be written is an error of the job.
    pub fn begin_save_to(&mut self, path: impl Into<PathBuf>) -> Result<SaveJob> {
        self.start_save(Some(path.into()))
    }

    fn start_save(&mut self, path: Option<PathBuf>) -> Result<SaveJob> {
        let reader = self.on_backend(|b| b.begin_state_read())?;
        // The state and counters come from the worker; everything else is this frame's, now.
        let fields_to_come = crate::state::State { grid: self.grid, terrain: Vec::new(), depth: Vec::new(), flow: Vec::new() };
        let saved = self.saved_state(fields_to_come, crate::state::Counters::default());
        let worker = std::thread::Builder::new()
            .name("pipewater save".into())
            .spawn(move || {
                let (state, counters) = reader()?;
                let bytes = SavedState { state, counters, ..saved }.encode();
                if let Some(path) = path {
                    write_whole(&path, &bytes)?;
                }
                Ok(bytes)
            })
            .map_err(|e| Error::InvalidSave(format!("no thread to save on: {e}")))?;
        Ok(SaveJob { frame: self.frames, worker: Some(worker) })
    }

    /// Starts restoring a state from [`Simulation::save_state`] or a [`SaveJob`]: a worker thread
    /// decodes and validates `bytes`; [`Simulation::poll_restore`] then replaces the state, as
    /// [`Simulation::restore_state`] does, over as many calls as its size needs. The simulation
    /// runs on as it is until the decoding is done.
    pub fn begin_restore(&self, bytes: Vec<u8>) -> Result<RestoreJob> {
        self.start_restore(move || SavedState::decode(&bytes))
    }

    /// [`Simulation::begin_restore`] of the file at `path`, read on the worker thread too. A file
    /// that cannot be read is an error of the job.
    pub fn begin_restore_from(&self, path: impl Into<PathBuf>) -> Result<RestoreJob> {
        let path = path.into();
        self.start_restore(move || {
            let bytes = std::fs::read(&path).map_err(|e| Error::invalid("path", path.display(), format!("a saved state this process can read ({e})")))?;
            SavedState::decode(&bytes)
        })
    }

    fn start_restore(&self, decode: impl FnOnce() -> Result<SavedState> + Send + 'static) -> Result<RestoreJob> {
        // The GPU backends show the loaded state's snapshot from the moment it lands: made here,
        // beside the decoding, it costs the frame nothing.
        let wants_snapshot = self.backend.kind() != BackendKind::Cpu;
        let prepare = move || {
            let mut saved = decode()?;
            check_edge_limits(&saved.params, saved.state.grid, &saved.state.terrain).map_err(|e| Error::InvalidSave(format!("its parameters do not fit its terrain: {e}")))?;
            let grid = saved.state.grid;
            let state = std::mem::replace(&mut saved.state, State { grid, terrain: Vec::new(), depth: Vec::new(), flow: Vec::new() });
            let snapshot = wants_snapshot.then(|| Arc::new(state.snapshot(saved.frames, saved.counters)));
            let point = Arc::new(ExactPoint { state, counters: saved.counters, frame: saved.frames });
            Ok(Decoded { restored: RestoredState { point, snapshot }, rest: saved })
        };
        let worker = std::thread::Builder::new().name("pipewater restore".into()).spawn(prepare).map_err(|e| Error::InvalidSave(format!("no thread to restore on: {e}")))?;
        let abandoned = Arc::new(AtomicBool::new(false));
        Ok(RestoreJob { worker: Some(worker), bytes_per_poll: DEFAULT_RESTORE_BYTES_PER_POLL, abandoned, last_poll_rows: 0, rows_written: 0, rows: 0, width: 0 })
    }

    /// Goes on with `job`: `None` while its worker decodes (never waits) and while its load is
    /// being applied, then once its outcome: `Ok` when the simulation goes on from the saved
    /// state, or the error of [`Simulation::restore_state`] (the simulation untouched). Later
    /// calls return `None`.
    ///
    /// Once decoded, each call writes at most [`RestoreJob::set_bytes_per_poll`] bytes of the
    /// saved fields into the backend (whole rows, at least one), so no frame holds the caller for
    /// the whole state; the last call sets the ledger, clock and sources and the load lands.
    /// While it is applied the water waits: [`Simulation::advance`] steps nothing (its report
    /// says 0 steps), and reads, edits and steps through the backend are refused with an error;
    /// queries show the water being replaced. A job dropped while its load is applied is
    /// finished by the next `advance` calls, one part each.
    pub fn poll_restore(&mut self, job: &mut RestoreJob) -> Option<Result<()>> {
        if self.restoring.is_none() {
            if job.worker.is_none() && job.rows_written < job.rows {
                // Its apply began in another simulation, which is gone (a node rebuilt its own).
                job.rows_written = job.rows;
                return Some(Err(Error::InvalidSave("the simulation it was being applied to was replaced before it landed".into())));
            }
            if !job.is_finished() {
                return None;
            }
            let decoded = match join(job.worker.take()?, "decoding the saved state") {
                Ok(decoded) => decoded,
                Err(e) => return Some(Err(e)),
            };
            let g = decoded.restored.point.state.grid;
            if g != self.grid {
                return Some(Err(Error::InvalidSave(format!(
                    "it was saved for a {}x{} grid of {} m cells; this simulation has {}x{} cells of {} m",
                    g.width, g.height, g.cell_size, self.grid.width, self.grid.height, self.grid.cell_size
                ))));
            }
            (job.rows, job.width, job.rows_written) = (g.height, g.width, 0);
            self.restoring = Some(Box::new(Applying { decoded, next_row: 0, in_rows: true, backend: self.backend_address(), abandoned: job.abandoned.clone() }));
        } else if !Arc::ptr_eq(&job.abandoned, &self.restoring.as_ref()?.abandoned) {
            // Another job's load is being applied; this one has not started.
            return None;
        }
        let rows_per_poll = (job.bytes_per_poll / (job.width as u64 * RESTORE_BYTES_PER_CELL).max(1)).clamp(1, u32::MAX as u64) as u32;
        let before = self.restoring.as_ref().map_or(0, |a| a.next_row);
        let outcome = self.apply_restore_part(rows_per_poll);
        let after = self.restoring.as_ref().map_or(job.rows, |a| a.next_row);
        job.last_poll_rows = after.saturating_sub(before);
        job.rows_written = after;
        outcome
    }

    /// The identity of the backend now running, to tell when a device loss replaced it.
    fn backend_address(&self) -> usize {
        self.backend.as_ref() as *const dyn crate::Backend as *const () as usize
    }

    /// Writes the next `rows` rows of the load being applied, or lands it once every row is in:
    /// `None` while rows remain, then its outcome.
    fn apply_restore_part(&mut self, rows: u32) -> Option<Result<()>> {
        let mut applying = self.restoring.take()?;
        let height = self.grid.height;
        if applying.backend != self.backend_address() {
            (applying.next_row, applying.backend) = (0, self.backend_address());
        }
        if applying.in_rows && applying.next_row < height {
            let part = applying.next_row..(applying.next_row + rows).min(height);
            let state = &applying.decoded.restored.point.state;
            match self.on_backend(|b| b.restore_rows(state, part.clone())) {
                Ok(true) => applying.next_row = part.end,
                Ok(false) => (applying.in_rows, applying.next_row) = (false, height),
                // Only a device failure that recovery could not mend gets here: the water is
                // what the recovery left.
                Err(e) => return Some(Err(e)),
            }
            // A device lost on the way moved the water to another backend, whose rows start over.
            if applying.backend != self.backend_address() {
                (applying.next_row, applying.backend) = (0, self.backend_address());
            }
            if applying.next_row < height {
                self.restoring = Some(applying);
                return None;
            }
        }
        let Decoded { restored, rest } = applying.decoded;
        if let Err(e) = self.on_backend(|b| b.finish_restore(&restored, applying.in_rows)) {
            return Some(Err(e));
        }
        // The CPU backend copied the fields, and they are freed here unless a thread does it.
        crate::backend::drop_elsewhere(restored);
        Some(self.take_saved(rest))
    }

    /// The water waits for a load being applied: no steps; a load whose job was dropped goes on
    /// one part per frame.
    pub(super) fn wait_for_restore(&mut self) -> Result<crate::FrameReport> {
        let abandoned = self.restoring.as_ref().is_some_and(|a| a.abandoned.load(Ordering::Relaxed));
        if abandoned {
            let width = self.grid.width as u64;
            let rows = (DEFAULT_RESTORE_BYTES_PER_POLL / (width * RESTORE_BYTES_PER_CELL)).max(1) as u32;
            if let Some(Err(e)) = self.apply_restore_part(rows) {
                return Err(e);
            }
        }
        let report = crate::FrameReport::default();
        self.last_report = report;
        Ok(report)
    }

    /// An error for `what` while a load is being applied ([`Simulation::poll_restore`]).
    pub(super) fn refuse_while_restoring(&self, what: &str) -> Result<()> {
        match &self.restoring {
            None => Ok(()),
            Some(applying) => Err(Error::Busy(format!(
                "{what} is refused while a load is being applied ({} of {} rows in): the water waits until the load lands",
                applying.next_row, self.grid.height
            ))),
        }
    }

    /// Whether a load is being applied ([`Simulation::poll_restore`]): the water waits.
    pub fn is_applying_restore(&self) -> bool {
        self.restoring.is_some()
    }
}
