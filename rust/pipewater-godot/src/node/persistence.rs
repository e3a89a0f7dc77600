//! Saving and loading the water: `save_state()` and `load_state()` with a [`PipeWaterState`],
//! and their asynchronous forms (`save_state_async()`, `load_state_async()`,
//! `load_state_file_async()`), whose jobs the node polls once a physics frame.

use super::PipeWater;
use crate::errors::core_message;
use crate::saved_state::PipeWaterState;
use godot::classes::ProjectSettings;
use godot::global::Error as GodotError;
use godot::prelude::*;
use pipewater_core::simulation::{RestoreJob, SaveJob};
use pipewater_core::Error as CoreError;

/// A save on a worker thread, with what its `PipeWaterState` describes.
struct RunningSave {
    /// The path as the script gave it (empty: no file).
    path: GString,
    job: SaveJob,
    grid_size: Vector2i,
    elapsed: f64,
}

/// A load on a worker thread, then applied a part per frame.
struct RunningLoad {
    /// The path as the script gave it (empty: from a `PipeWaterState`).
    path: GString,
    job: RestoreJob,
}

/// The node's asynchronous save and load, one of each at a time.
#[derive(Default)]
pub struct StateJobs {
    save: Option<RunningSave>,
    load: Option<RunningLoad>,
}

/// Godot's error code for a core error of an asynchronous save (`saving`) or load.
fn error_code(e: &CoreError, saving: bool) -> GodotError {
    match e {
        CoreError::InvalidArgument { name: "path", .. } if saving => GodotError::ERR_FILE_CANT_WRITE,
        CoreError::InvalidArgument { name: "path", .. } => GodotError::ERR_FILE_CANT_OPEN,
        CoreError::InvalidSave(_) => GodotError::ERR_INVALID_DATA,
        CoreError::Busy(_) => GodotError::ERR_BUSY,
        _ => GodotError::FAILED,
    }
}

/// A core error of an asynchronous save or load in words: a file that cannot be written or read
/// reads "path = … is not a file this process can write (why)".
fn job_message(e: &CoreError) -> String {
    match e {
        CoreError::InvalidArgument { name: "path", value, valid } => format!("path = {value} is not {valid}"),
        other => core_message(other),
    }
}

/// `path` (`user://`, `res://` or absolute) as a path of the file system.
fn file_path(path: &GString) -> String {
    ProjectSettings::singleton().globalize_path(path).to_string()
}

#[godot_api(secondary)]
impl PipeWater {
    /// The water as it is now, to give to `load_state()` later: depths, flow, terrain (digging
    /// included), sources and drains, the ledger (`get_mass_ledger()`) and the simulated clock.
    /// Reads the whole state (waiting for the GPU): meant for save games and checkpoints, not
    /// for every frame. Returns null, with an error, when there is no simulation or it cannot be
    /// read. The node's properties are not part of it.
    #[func]
    fn save_state(&mut self) -> Option<Gd<PipeWaterState>> {
        if !self.ensure_sim() {
            self.errors.reject(
                "save_state: there is no simulation to save (see the earlier errors)".into(),
            );
            return None;
        }
        self.sync_sources();
        let result = self.sim.as_mut().map(|s| s.save_state());
        let bytes = self.errors.core_result("save_state", result)?;
        let elapsed = self.sim.as_ref().map_or(0.0, |s| s.elapsed());
        Some(PipeWaterState::from_saved(&bytes, self.grid_size, elapsed))
    }

    /// Puts back the water saved in `state` by `save_state()`, exactly: depths, flow, terrain,
    /// sources and drains, ledger and clock; the textures follow at once. A `PipeWaterSource`
    /// node whose source the state holds (saved by the same run) goes on with it; the others
    /// are placed again. The node's properties
    /// (gravity, boundaries, …) stay as they are and apply from the next step. Returns false,
    /// with an error naming the problem, and keeps the current water when `state` is null, was
    /// saved for another `grid_size` or `cell_size`, is truncated or corrupt, or comes from a
    /// newer PipeWater.
    #[func]
    fn load_state(&mut self, state: Option<Gd<PipeWaterState>>) -> bool {
        let Some(state) = state else {
            self.errors.reject(
                "load_state: state is null: pass a PipeWaterState from save_state()".into(),
            );
            return false;
        };
        if !self.ensure_sim() {
            self.errors.reject(
                "load_state: there is no simulation to load into (see the earlier errors)".into(),
            );
            return false;
        }
        let bytes = state.bind().bytes().clone();
        let result = self.sim.as_mut().map(|s| s.restore_state(bytes.as_slice()));
        if self.errors.core_result("load_state", result).is_none() {
            return false;
        }
        self.state_loaded();
        true
    }

    /// Starts saving the water as `save_state()` does, without holding the game: the state of
    /// this frame is read and compressed on a worker thread (and written to `path`, a
    /// `user://`, `res://` or absolute file path, unless `path` is empty) while the water goes on;
    /// `state_saved` brings the `PipeWaterState` a few frames later. The file holds the bytes of
    /// `PipeWaterState.data`: written whole beside `path` and renamed over it, so a crash while
    /// saving keeps the previous file. Returns `OK` when the save started, else (with an error)
    /// `ERR_BUSY` while an earlier save runs or a load is being applied, `ERR_UNCONFIGURED`
    /// when there is no simulation. On the CPU backend the fields are copied on the calling
    /// thread (24 bytes a cell, see docs/BENCHMARKS.md); on the GPU backends a copy is recorded.
    #[func]
    fn save_state_async(&mut self, path: GString) -> GodotError {
        if self.state_jobs.save.is_some() {
            self.errors.reject("save_state_async: a save is already running: wait for state_saved".into());
            return GodotError::ERR_BUSY;
        }
        if !self.ensure_sim() {
            self.errors.reject("save_state_async: there is no simulation to save (see the earlier errors)".into());
            return GodotError::ERR_UNCONFIGURED;
        }
        if self.sim.as_ref().is_some_and(|s| !s.is_applying_restore()) {
            self.sync_sources();
        }
        let target = (!path.is_empty()).then(|| file_path(&path));
        let Some(sim) = self.sim.as_mut() else { return GodotError::ERR_UNCONFIGURED };
        let elapsed = sim.elapsed();
        let started = match target {
            Some(file) => sim.begin_save_to(file),
            None => sim.begin_save(),
        };
        match started {
            Ok(job) => {
                self.state_jobs.save = Some(RunningSave { path, job, grid_size: self.grid_size, elapsed });
                GodotError::OK
            }
            Err(e) => {
                self.errors.reject(format!("save_state_async: {}", job_message(&e)));
                error_code(&e, true)
            }
        }
    }

    /// Starts loading `state` as `load_state()` does, without holding the game: it is decoded
    /// and checked on a worker thread while the water goes on, then uploaded a bounded part per
    /// physics frame while the water waits (it does not step, and edits such as `add_water()`
    /// are refused with an error; queries show the water being replaced), and `state_loaded`
    /// (with an empty `path`) says when it landed or why not. Returns `OK` when the load
    /// started, else (with an error) `ERR_INVALID_PARAMETER` for a null `state`, `ERR_BUSY`
    /// while another load runs, `ERR_UNCONFIGURED` when there is no simulation.
    #[func]
    fn load_state_async(&mut self, state: Option<Gd<PipeWaterState>>) -> GodotError {
        let Some(state) = state else {
            self.errors.reject("load_state_async: state is null: pass a PipeWaterState from save_state() or state_saved".into());
            return GodotError::ERR_INVALID_PARAMETER;
        };
        let bytes = state.bind().bytes().to_vec();
        self.start_load("load_state_async", GString::new(), move |sim| sim.begin_restore(bytes))
    }

    /// `load_state_async()` of the file at `path` that `save_state_async(path)` wrote (a
    /// `user://`, `res://` or absolute path), read on the worker thread too. Returns
    /// `ERR_INVALID_PARAMETER` for an empty `path`; a missing or unreadable file is reported by
    /// `state_loaded` (`ERR_FILE_CANT_OPEN`), the water kept.
    #[func]
    fn load_state_file_async(&mut self, path: GString) -> GodotError {
        if path.is_empty() {
            self.errors.reject("load_state_file_async: path is empty: pass the file save_state_async() wrote".into());
            return GodotError::ERR_INVALID_PARAMETER;
        }
        let file = file_path(&path);
        self.start_load("load_state_file_async", path, move |sim| sim.begin_restore_from(file))
    }

    /// Whether a `save_state_async()` is running (`state_saved` not yet emitted).
    #[func]
    fn is_saving_state(&self) -> bool {
        self.state_jobs.save.is_some()
    }

    /// Whether a `load_state_async()` or `load_state_file_async()` is running
    /// (`state_loaded` not yet emitted).
    #[func]
    fn is_loading_state(&self) -> bool {
        self.state_jobs.load.is_some()
    }
}

impl PipeWater {
    /// Starts a load with `begin` for the method `method`.
    fn start_load(&mut self, method: &str, path: GString, begin: impl FnOnce(&pipewater_core::Simulation) -> pipewater_core::Result<RestoreJob>) -> GodotError {
        if self.state_jobs.load.is_some() {
            self.errors.reject(format!("{method}: a load is already running: wait for state_loaded"));
            return GodotError::ERR_BUSY;
        }
        if !self.ensure_sim() {
            self.errors.reject(format!("{method}: there is no simulation to load into (see the earlier errors)"));
            return GodotError::ERR_UNCONFIGURED;
        }
        let Some(sim) = self.sim.as_ref() else { return GodotError::ERR_UNCONFIGURED };
        match begin(sim) {
            Ok(job) => {
                self.state_jobs.load = Some(RunningLoad { path, job });
                GodotError::OK
            }
            Err(e) => {
                self.errors.reject(format!("{method}: {}", job_message(&e)));
                error_code(&e, false)
            }
        }
    }

    /// After the simulation took a saved state: the source nodes whose sources it holds go on
    /// with them (the others are placed again), the node's properties apply again, and the
    /// textures show it.
    fn state_loaded(&mut self) {
        let live = self.sim.as_ref().map(|s| s.source_ids().iter().map(|id| id.0).collect()).unwrap_or_default();
        self.source_placements.keep_live(&live);
        self.sync_sources();
        // The saved parameters give way to the node's properties, which stay the truth.
        self.pending.params();
        self.ensure_sim();
        self.outputs.forget_shown();
        self.update_outputs();
    }

    /// Goes on with the asynchronous save and load (once a physics frame, before the water
    /// steps), emitting `state_saved` and `state_loaded` as they finish. Returns true while a
    /// load is being applied: the water waits this frame.
    pub(super) fn poll_state_jobs(&mut self) -> bool {
        if let Some(outcome) = self.state_jobs.save.as_mut().and_then(|save| save.job.poll()) {
            let save = self.state_jobs.save.take().expect("polled above");
            let (error, state) = match outcome {
                Ok(bytes) => (GodotError::OK, Some(PipeWaterState::from_saved(&bytes, save.grid_size, save.elapsed))),
                Err(e) => {
                    self.errors.reject(format!("save_state_async: {}", job_message(&e)));
                    (error_code(&e, true), None)
                }
            };
            self.base_mut().emit_signal("state_saved", &[save.path.to_variant(), (error.ord() as i64).to_variant(), state.to_variant()]);
        }
        let Some(load) = self.state_jobs.load.as_mut() else { return false };
        let outcome = match self.sim.as_mut() {
            Some(sim) => match sim.poll_restore(&mut load.job) {
                None => return sim.is_applying_restore(),
                Some(outcome) => outcome,
            },
            None => Err(CoreError::InvalidSave("the simulation it was loading into was removed (see the earlier errors)".into())),
        };
        let load = self.state_jobs.load.take().expect("polled above");
        let error = match outcome {
            Ok(()) => {
                self.state_loaded();
                GodotError::OK
            }
            Err(e) => {
                let method = if load.path.is_empty() { "load_state_async" } else { "load_state_file_async" };
                self.errors.reject(format!("{method}: {}; the water is kept", job_message(&e)));
                error_code(&e, false)
            }
        };
        self.base_mut().emit_signal("state_loaded", &[load.path.to_variant(), (error.ord() as i64).to_variant()]);
        false
    }
}
