//! Saves and loads that do not stop the game: [`Simulation::begin_save`] and
//! [`Simulation::begin_restore`] do the slow part (waiting for the device, compressing, writing
//! or reading the file, decompressing, validating) on a worker thread, and the game polls once a
//! frame while the simulation keeps running.
//!
//! What stays on the caller's thread: starting the read of the state (on a GPU backend, recording
//! a copy; on the CPU backend, a copy of the fields in memory), each poll (a look at a flag), and
//! at the end of a load the upload of the decoded state ([`crate::Backend::restore`]).
//! `examples/save_bench.rs` measures each of them.

use super::Simulation;
use crate::error::{Error, Result};
use crate::save::SavedState;
use std::path::{Path, PathBuf};
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

/// A saved state being read and decoded on a worker thread ([`Simulation::begin_restore`]);
/// [`Simulation::poll_restore`] applies it once decoded.
#[derive(Debug)]
pub struct RestoreJob {
    worker: Option<JoinHandle<Result<SavedState>>>,
}

impl RestoreJob {
    /// Whether decoding has finished: [`Simulation::poll_restore`] then applies it (or reports its
    /// error) without waiting for the worker.
    pub fn is_finished(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }
}

impl Drop for RestoreJob {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
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
    /// [`Simulation::restore_state`] does. The simulation runs on as it is until then.
    pub fn begin_restore(&self, bytes: Vec<u8>) -> Result<RestoreJob> {
        Self::start_restore(move || SavedState::decode(&bytes))
    }

    /// [`Simulation::begin_restore`] of the file at `path`, read on the worker thread too. A file
    /// that cannot be read is an error of the job.
    pub fn begin_restore_from(&self, path: impl Into<PathBuf>) -> Result<RestoreJob> {
        let path = path.into();
        Self::start_restore(move || {
            let bytes = std::fs::read(&path).map_err(|e| Error::invalid("path", path.display(), format!("a saved state this process can read ({e})")))?;
            SavedState::decode(&bytes)
        })
    }

    fn start_restore(decode: impl FnOnce() -> Result<SavedState> + Send + 'static) -> Result<RestoreJob> {
        let worker = std::thread::Builder::new().name("pipewater restore".into()).spawn(decode).map_err(|e| Error::InvalidSave(format!("no thread to restore on: {e}")))?;
        Ok(RestoreJob { worker: Some(worker) })
    }

    /// Applies `job` once its worker has decoded the state: `None` while it runs (never waits),
    /// then once its outcome: `Ok` when the simulation now goes on from the saved state, or the
    /// error of [`Simulation::restore_state`] (the simulation untouched). Later calls return
    /// `None`. Applying uploads the state to the backend on the caller's thread.
    pub fn poll_restore(&mut self, job: &mut RestoreJob) -> Option<Result<()>> {
        if !job.is_finished() {
            return None;
        }
        let saved = join(job.worker.take()?, "decoding the saved state");
        Some(saved.and_then(|saved| self.apply_saved(saved)))
    }
}
