//! Running the simulation: keeping it in step with the properties (build or update), advancing,
//! resetting, and handing each result on to the outputs and the surface.

use super::{PipeWater, WaterBackend, WaterCrossSection};
use super::build::{self, EdgeInputs, ParamInputs, Plan, TerrainInputs};
use crate::saved_state::PipeWaterState;
use crate::surface::SurfaceInputs;
use crate::validate;
use godot::classes::image::Format;
use godot::classes::node::InternalMode;
use godot::classes::{Engine, Image, Texture2D};
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::{Grid, Params};
use std::time::Instant;

#[godot_api(secondary)]
impl PipeWater {
    /// Restores the initial water (`initial_state`, or filled to `initial_water_level`) and
    /// terrain, zeroes the ledger and clock. Sources are kept. Emits `simulation_reset`.
    #[func]
    fn reset(&mut self) {
        if !self.ensure_sim() {
            return;
        }
        let result = self.sim.as_mut().map(|s| s.reset());
        if self.errors.core_result("reset", result).is_some() {
            self.outputs.forget_shown();
            self.update_outputs();
            self.base_mut().emit_signal("simulation_reset", &[]);
        }
    }

    /// Gives the water in `region` (local XZ, m: `position.x`/`y` are local X/Z) a uniform
    /// current of `velocity` m/s (`x` along local X, `y` along local Z; each within ±1000 m/s):
    /// the cells whose centres lie inside it get it, the others keep theirs (zero unless set).
    /// The current starts at once and after every `reset()`: the simulation restarts from its
    /// initial water (as `reset()` does, ledger and clock included) with this flow, and emits
    /// `simulation_reset`. A rebuild forgets it. Meant for setting up a level (a river already
    /// flowing). Returns false, with an error naming the argument and its range, when rejected.
    #[func]
    fn set_initial_current(&mut self, region: Rect2, velocity: Vector2) -> bool {
        let (position, size) = ([region.position.x, region.position.y], [region.size.x, region.size.y]);
        if self.errors.accept(validate::local_region("set_initial_current", position, size)).is_none() {
            return false;
        }
        let velocity = validate::initial_velocity("set_initial_current: velocity", [velocity.x, velocity.y]);
        let Some(velocity) = self.errors.accept(velocity) else {
            return false;
        };
        if !self.ensure_sim() {
            return false;
        }
        let max = [position[0] + size[0], position[1] + size[1]];
        let result = self.sim.as_mut().map(|s| s.set_initial_current(position, max, velocity));
        self.initial_flow_set("set_initial_current", result)
    }

    /// Sets the velocity of every cell's water: `velocities[i]` (m/s, `x` along local X, `y`
    /// along local Z, each within ±1000) for cell `i` in row-major order (`i = y × grid_size.x +
    /// x`), exactly `grid_size.x × grid_size.y` values. The current starts at once and after
    /// every `reset()`, like `set_initial_current`, whose field it replaces. Returns false, with
    /// an error naming the argument and its range, when rejected.
    #[func]
    fn set_initial_velocity(&mut self, velocities: PackedVector2Array) -> bool {
        if !self.ensure_sim() {
            return false;
        }
        let Some(grid) = self.sim.as_ref().map(|s| s.grid()) else { return false };
        let field: Vec<[f32; 2]> = velocities.as_slice().iter().map(|v| [v.x, v.y]).collect();
        if self.errors.accept(validate::initial_velocities(&field, grid.width, grid.height)).is_none() {
            return false;
        }
        let result = self.sim.as_mut().map(|s| s.set_initial_velocity(&field));
        self.initial_flow_set("set_initial_velocity", result)
    }

    /// Advances the simulation by `delta` s (`0 ..= 10`, not scaled by `time_scale`, also while
    /// `paused`) and updates the textures; `PipeWaterSource` nodes are placed, moved or removed
    /// first. Returns the number of substeps taken (0 when rejected).
    #[func]
    fn step(&mut self, delta: f64) -> i64 {
        let Some(delta) = self.errors.accept(validate::step_delta(delta)) else {
            return 0;
        };
        if !self.ensure_sim() {
            return 0;
        }
        self.sync_sources();
        let substeps = self.advance(delta);
        self.update_outputs();
        substeps as i64
    }

    /// Rebuilds the simulation now from the current properties (otherwise done at the next
    /// physics frame or query). Returns false when it could not be built.
    #[func]
    fn rebuild(&mut self) -> bool {
        self.pending.rebuild();
        let ok = self.ensure_sim();
        self.update_outputs();
        ok
    }

    /// Cost of the last physics frame on the main thread, µs: `step_usec` (advancing: on the GPU
    /// encoding and submitting, on the CPU the whole step) and `texture_usec` (bringing the
    /// textures up to date), of which `snapshot_usec` is taking the newest snapshot (on the GPU
    /// decoding a finished readback, on the CPU building it from the state) and the rest copying
    /// it into both textures. Also `substeps`, `step` (s each), `simulated` and `dropped` (s), and
    /// `readback_bytes`: what the frame copied from the GPU to the CPU — the 48-byte header (ledger
    /// and totals), the sleeping report's 16 bytes and the 2 KiB tiles queries touched, or on wgpu
    /// every cell's 32 bytes while a material or script uses the textures; 0 on the CPU. With sleeping (`can_sleep`, on
    /// backends that have it): `tiles` (how many the grid is cut into), `awake_tiles` (stepped in
    /// the frame's last step) and `cells_stepped` (cells stepped over the frame's substeps, at most
    /// `substeps` × the grid's cells); on the GPU these arrive with the snapshot, a frame or two
    /// late.
    #[func]
    fn get_frame_stats(&mut self) -> VarDictionary {
        let mut d = VarDictionary::new();
        let (texture_usec, snapshot_usec) = self.outputs.timings_usec();
        d.set("step_usec", self.step_usec);
        d.set("texture_usec", texture_usec);
        d.set("snapshot_usec", snapshot_usec);
        if let Some(sim) = self.sim.as_ref() {
            let r = sim.last_report();
            d.set("substeps", r.substeps as i64);
            d.set("step", r.step as f64);
            d.set("simulated", r.simulated as f64);
            d.set("dropped", r.dropped as f64);
            d.set("readback_bytes", sim.last_readback_bytes() as i64);
            if let Some(sleep) = sim.sleep_report() {
                d.set("tiles", sleep.tiles.map_or(0, |t| t.count() as i64));
                d.set("awake_tiles", sleep.awake_tiles as i64);
                d.set("cells_stepped", sleep.cells_stepped as i64);
            }
        }
        d
    }

    /// Which tiles of the grid the last step stepped, for a debug view: an `Image.FORMAT_L8`
    /// with one pixel per tile (255 stepped, 0 asleep), tile (0, 0) at the local −X −Z corner; a
    /// tile covers `grid_size / image size` cells, rounded up. On a GPU backend this waits for the
    /// device (a debug view, not for every frame). Null before the first build.
    #[func]
    fn get_awake_tiles(&mut self) -> Option<Gd<Image>> {
        if !self.ensure_sim() {
            return None;
        }
        let tiles = self.sim.as_mut()?.awake_tiles()?;
        let [w, h] = tiles.tiles.tiles;
        let bytes: Vec<u8> = tiles.awake.iter().map(|&a| if a { 255 } else { 0 }).collect();
        Image::create_from_data(w as i32, h as i32, false, Format::L8, &PackedByteArray::from(bytes.as_slice()))
    }

    /// Makes the GPU device the water runs on lost, as a driver reset would, so that a game can
    /// see what follows: at the next step the node warns once and goes on on the next backend
    /// (RenderingDevice → wgpu → CPU) with the water of its recovery point; `active_backend`
    /// changes and `simulation_rebuilt` is emitted. On wgpu the device of the whole process is
    /// lost, so every `PipeWater` node on it moves; nodes built later get a fresh device.
    /// Returns false on the CPU backend, which has no device to lose.
    #[func]
    fn simulate_device_loss(&mut self) -> bool {
        if !self.ensure_sim() {
            return false;
        }
        self.sim.as_mut().is_some_and(|s| s.simulate_device_loss())
    }

    /// Description of the running backend (GPU adapter and driver, or CPU threads).
    #[func]
    fn get_backend_description(&mut self) -> GString {
        if !self.ensure_sim() {
            return GString::new();
        }
        self.sim.as_ref().map(|s| GString::from(s.backend_description().as_str())).unwrap_or_default()
    }
}

impl PipeWater {
    /// `set_heightmap`'s work: refuses a texture with no readable image.
    pub(super) fn store_heightmap(&mut self, value: Option<Gd<Texture2D>>) {
        if let Some(texture) = &value {
            if let Err(why) = build::readable_image(texture) {
                self.errors.reject(format!("heightmap: {why}"));
                return;
            }
        }
        self.heightmap = value;
        self.pending.terrain();
    }

    /// `set_terrain_heights`'s work: refuses anything but `grid_size` finite heights or none.
    pub(super) fn store_terrain_heights(&mut self, value: PackedFloat32Array) {
        if !value.is_empty() {
            let (w, h) = (self.grid_size.x as u32, self.grid_size.y as u32);
            if self.errors.accept(validate::terrain_heights(value.as_slice(), w, h)).is_none() {
                return;
            }
        }
        self.terrain_heights = value;
        self.pending.terrain();
    }

    /// `set_initial_water_level`'s work: refuses a level the terrain of a running simulation's
    /// reset state cannot hold.
    pub(super) fn store_initial_water_level(&mut self, value: f64) {
        let Some(level) = self.errors.accept(validate::local_height("initial_water_level", value)) else { return };
        // Checked against the terrain a running simulation resets to; a first build checks it.
        if self.sim.is_some() && self.ensure_sim() {
            if let Some(Err(e)) = self.sim.as_ref().map(|s| s.reset_state().check_fill_level(level)) {
                self.errors.reject(crate::errors::property_message("initial_water_level", &e));
                return;
            }
        }
        self.initial_water_level = value;
        self.pending.rebuild();
    }

    /// `set_initial_state`'s work: refuses a state saved for another grid, or unreadable.
    pub(super) fn store_initial_state(&mut self, value: Option<Gd<PipeWaterState>>) {
        if let Some(state) = &value {
            let bytes = state.bind().bytes().clone();
            if let Err(why) = build::baked_fields(bytes.as_slice(), self.grid_size, self.cell_size) {
                self.errors.reject(format!("initial_state: {why}; the previous initial_state and the water are kept"));
                return;
            }
        }
        self.initial_state = value;
        self.pending.rebuild();
    }

    /// A property setter's work: when `checked` accepted the value, `store` sets the property and
    /// `mark` tells [`Pending`](build::Pending) what the simulation must take (a rebuild, the
    /// terrain, the parameters); a rejected value is logged and the property keeps its value.
    pub(super) fn set_checked<T>(&mut self, checked: Result<T, String>, store: impl FnOnce(&mut Self), mark: fn(&mut build::Pending)) {
        if self.errors.accept(checked).is_some() {
            store(self);
            mark(&mut self.pending);
        }
    }

    /// One physics frame: sources in step with their nodes, bodies coupled (not in the editor),
    /// the detail window moved and the water advanced by `delta × time_scale` unless paused,
    /// then the outputs.
    pub(super) fn physics_frame(&mut self, delta: f64) {
        if self.poll_state_jobs() {
            // A load is being applied: the water waits, and the textures show it as it was.
            return;
        }
        if !self.ensure_sim() {
            return;
        }
        self.sync_fluid();
        self.sync_sources();
        let in_editor = Engine::singleton().is_editor_hint();
        if !self.paused && (!in_editor || self.simulate_in_editor) {
            let frame = validate::scaled_frame_delta(delta, self.time_scale as f32);
            if !in_editor {
                self.couple_bodies(frame as f64);
            }
            self.follow_detail_focus();
            self.advance(frame);
        }
        self.update_outputs();
    }

    /// Builds or updates the simulation from the properties. False when none can run.
    pub(super) fn ensure_sim(&mut self) -> bool {
        self.report_device_losses();
        self.take_terrain_source_edits();
        match self.pending.take(self.sim.is_some()) {
            Plan::Build => {
                self.backend_changed = false;
                self.build();
                self.pending.built(self.sim.is_some());
                if self.sim.is_some() {
                    self.apply_detail();
                    self.terrain_source_built();
                }
                self.sim.is_some()
            }
            Plan::Unavailable => false,
            Plan::Update { terrain, params } => {
                if std::mem::take(&mut self.backend_changed) {
                    self.switch_backend();
                }
                if terrain {
                    if let Some(grid) = self.sim.as_ref().map(|s| s.grid()) {
                        let terrain = self.terrain_for(grid);
                        let result = self.sim.as_mut().map(|s| s.set_terrain(&terrain));
                        self.errors.core_result("terrain", result);
                        self.outputs.forget_shown();
                    }
                }
                if params {
                    let params = self.params();
                    self.erosion_to_cpu(&params);
                    let triangular = params.neighbours == pipewater_core::NeighbourMode::Triangular;
                    let result = self.sim.as_mut().map(|s| s.set_params(params));
                    if self.errors.core_result("parameters", result).is_some() {
                        self.warn_lattice_limits(triangular);
                    }
                    // The neighbour mode may have moved the cells onto or off the triangular
                    // lattice: the mesh and the shader follow.
                    self.sync_surface();
                }
                if self.detail_changed {
                    self.apply_detail();
                }
                true
            }
        }
    }

    /// Warns that `momentum_advection` is ignored on the triangular lattice (its advection is not
    /// written: the step there is pressure-driven, fronts run at about 40 % of the shallow-water
    /// speed). A warning, not a refusal: advection is on by default, and the lattice's step is a
    /// complete model without it.
    fn warn_lattice_limits(&self, triangular: bool) {
        if triangular && self.momentum_advection && self.cross_section == WaterCrossSection::DepthDependent {
            godot_warn!("PipeWater: momentum_advection is ignored with neighbour_mode = NEIGHBOURS_TRIANGULAR (advection is written for the square grid; the lattice's step is pressure-driven, see docs/MODEL.md); set momentum_advection = false to say so");
        }
    }

    /// Replaces the simulation with a new one from the properties; on failure (reported) the
    /// old one, if any, keeps running. The source nodes are placed again in the new one.
    fn build(&mut self) {
        let Some(grid) = self.errors.accept(build::grid(self.grid_size, self.cell_size)) else { return };
        let Some(start) = self.start(grid) else { return };
        let params = self.params();
        self.warn_lattice_limits(params.neighbours == pipewater_core::NeighbourMode::Triangular);
        // The RD textures let go of the old backend's RIDs before it frees them.
        let old = self.outputs.release_rendering_device();
        self.detail_output.release();
        let built = build::simulation(start, params, self.backend, &mut self.errors);
        let Some((sim, rd_textures)) = built else {
            if let Some(rids) = old {
                self.outputs.use_rendering_device(rids);
            }
            return;
        };
        self.sim = Some(sim);
        if let Some(sim) = self.sim.as_mut() {
            sim.set_sleeping(self.can_sleep);
        }
        self.source_placements.clear();
        self.outputs.resize(grid, &mut self.errors);
        self.show_backend(rd_textures);
        self.sync_sources();
    }

    /// The water a new simulation of `grid` starts from: `initial_state` when it is set and fits
    /// the grid, else the terrain of the properties filled to `initial_water_level`.
    fn start(&mut self, grid: Grid) -> Option<build::Start> {
        if let Some(state) = &self.initial_state {
            let bytes = state.bind().bytes().clone();
            match build::baked_fields(bytes.as_slice(), self.grid_size, self.cell_size) {
                Ok(fields) => return Some(build::Start { state: fields.state, saved_params: Some(fields.params) }),
                Err(why) => self.errors.reject(format!("initial_state: {why}; starting from initial_water_level instead")),
            }
        }
        let terrain = self.terrain_for(grid);
        build::level_start(grid, terrain, self.initial_water_level, &mut self.errors)
    }

    /// Moves the running water to the backend `backend` now asks for (see [`build::switch`]).
    fn switch_backend(&mut self) {
        self.switch_backend_to(self.backend);
    }

    /// Moves the running water to `backend` (see [`build::switch`]).
    pub(super) fn switch_backend_to(&mut self, backend: WaterBackend) {
        let Some(mut sim) = self.sim.take() else { return };
        let old = self.outputs.release_rendering_device();
        self.detail_output.release();
        let was = build::active_backend(&sim);
        let rd_textures = build::switch(&mut sim, backend, &mut self.errors);
        let now = build::active_backend(&sim);
        self.sim = Some(sim);
        // A failed switch keeps the RenderingDevice backend: show its textures again.
        self.show_backend(rd_textures.or(old.filter(|_| now == was)));
    }

    /// Points `active_backend`, the textures and the surface at the running backend (with its RD
    /// textures when it is the RenderingDevice one) and emits `simulation_rebuilt`.
    fn show_backend(&mut self, rd_textures: Option<(Rid, Rid)>) {
        let Some(sim) = self.sim.as_ref() else { return };
        self.active_backend = build::active_backend(sim);
        if let Some(rids) = rd_textures.filter(|_| self.active_backend == WaterBackend::RenderingDevice) {
            self.outputs.use_rendering_device(rids);
        }
        self.outputs.forget_shown();
        self.sync_surface();
        let active = self.active_backend as i64;
        self.base_mut().emit_signal("simulation_rebuilt", &[active.to_variant()]);
    }

    /// Shows the restart an initial current caused, or reports why it was refused.
    fn initial_flow_set(&mut self, method: &str, result: Option<pipewater_core::Result<()>>) -> bool {
        if self.errors.core_result(method, result).is_none() {
            return false;
        }
        self.outputs.forget_shown();
        self.update_outputs();
        self.base_mut().emit_signal("simulation_reset", &[]);
        true
    }

    /// Drops the simulation, letting the RD textures go first.
    pub(super) fn drop_simulation(&mut self) {
        self.outputs.release_rendering_device();
        self.detail_output.release();
        self.sim = None;
    }

    /// Runs one frame of `delta` simulated seconds; returns the substeps taken.
    pub(super) fn advance(&mut self, delta: f32) -> u32 {
        if self.is_sync_client() {
            // A multiplayer client's water runs the server's frames (in `sync_before_step`), not
            // its own clock: its steps are then the server's.
            return 0;
        }
        let started = Instant::now();
        let result = self.sim.as_mut().map(|s| s.advance(delta));
        let report = self.errors.core_result("step", result);
        self.step_usec = started.elapsed().as_micros() as i64;
        self.report_device_losses();
        report.map_or(0, |r| r.substeps)
    }

    /// Brings the textures up to the newest snapshot (unless `update_textures` is off).
    pub(super) fn update_outputs(&mut self) {
        self.report_device_losses();
        self.outputs.update(self.sim.as_mut(), self.update_textures);
        self.update_detail_output();
    }

    /// Warns once about each GPU device lost under the simulation, which has moved the water to
    /// the next backend, and shows that backend: the RenderingDevice textures let go of the lost
    /// backend's resources before it is dropped.
    pub(super) fn report_device_losses(&mut self) {
        let Some(losses) = self.sim.as_mut().map(|s| s.take_device_losses()) else { return };
        if losses.is_empty() {
            return;
        }
        self.outputs.release_rendering_device();
        for loss in &losses {
            godot_warn!("PipeWater: {loss}");
        }
        drop(losses);
        self.show_backend(None);
    }

    /// Before a script reads the textures' images: after the textures were idle (nobody used
    /// them, so a GPU backend read back only the tiles queries touched), shows the water as it is
    /// now, waiting for the GPU. Either way the textures count as used from now on.
    pub(super) fn catch_up_images(&mut self, method: &str) {
        self.outputs.mark_asked();
        if !(self.update_textures && self.outputs.idle()) {
            return;
        }
        let result = self.sim.as_mut().map(|s| s.read_snapshot());
        if let Some(snapshot) = self.errors.core_result(method, result) {
            self.outputs.show_now(std::sync::Arc::new(snapshot));
        }
    }

    /// Creates, updates or frees the helper mesh to match `show_mesh`, the grid and the material.
    pub(super) fn sync_surface(&mut self) {
        if !self.show_mesh {
            self.surface.free();
            return;
        }
        let Some(lattice) = self.sim.as_ref().map(|s| s.lattice()) else { return };
        if let Some(mesh_instance) = self.surface.instance_to_add() {
            self.base_mut().add_child_ex(&mesh_instance).internal(InternalMode::FRONT).done();
        }
        self.surface.update(SurfaceInputs {
            lattice,
            material: self.water_material.as_ref(),
            height_texture: self.outputs.height_texture().to_variant(),
            flux_texture: self.outputs.flux_texture().to_variant(),
        });
    }

    fn params(&self) -> Params {
        build::core_params(&ParamInputs {
            gravity: self.gravity,
            damping: self.damping,
            neighbours: self.neighbour_mode,
            cross_section: self.cross_section,
            momentum_advection: self.momentum_advection,
            pipe_depth: self.pipe_depth,
            boundaries: [
                EdgeInputs { mode: self.boundary_north, inflow_rate: self.inflow_rate_north, level: self.boundary_level_north },
                EdgeInputs { mode: self.boundary_east, inflow_rate: self.inflow_rate_east, level: self.boundary_level_east },
                EdgeInputs { mode: self.boundary_south, inflow_rate: self.inflow_rate_south, level: self.boundary_level_south },
                EdgeInputs { mode: self.boundary_west, inflow_rate: self.inflow_rate_west, level: self.boundary_level_west },
            ],
            courant: self.courant,
            max_step: self.max_step,
            max_substeps: self.max_substeps,
            erosion: self.erosion_params(),
            fluid: self.fluid_model(),
        })
    }

    fn terrain_for(&mut self, grid: Grid) -> Vec<f32> {
        if let Some(heights) = self.terrain_from_source(grid) {
            return heights;
        }
        let inputs = TerrainInputs {
            heights: &mut self.terrain_heights,
            heightmap: self.heightmap.as_ref(),
            height_scale: self.height_scale,
            height_offset: self.height_offset,
        };
        build::terrain(grid, inputs, &mut self.errors)
    }
}
