//! Building the simulation from the node's properties: core parameters, terrain (from heights,
//! a heightmap texture or an image), the backend with its fallback, and when a property change
//! needs a rebuild rather than an update.
//!
//! Apart from the image reading, this is plain Rust, tested without Godot.

use crate::errors::ErrorLog;
use super::modes::{WaterBackend, WaterBoundary, WaterCrossSection, WaterNeighbours};
use crate::rendering_device::{self, RdBackend};
use crate::texels::terrain_from_rf_bytes;
use crate::validate;
use godot::classes::image::Format;
use godot::classes::{Image, Texture2D};
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::params::MAX_SUBSTEPS_RANGE;
use pipewater_core::save::{saved_fields, SavedFields};
use pipewater_core::{
    Backend, BackendKind, BackendPreference, Boundary, CrossSection, Error as CoreError, Grid, NeighbourMode, Params, Simulation, State,
};

/// The node's simulation properties, as Godot holds them.
pub struct ParamInputs {
    pub gravity: f64,
    pub damping: f64,
    pub neighbours: WaterNeighbours,
    pub cross_section: WaterCrossSection,
    pub momentum_advection: bool,
    pub pipe_depth: f64,
    /// The north (−Z), east (+X), south (+Z) and west (−X) edges.
    pub boundaries: [EdgeInputs; 4],
    pub courant: f64,
    pub max_step: f64,
    pub max_substeps: i64,
    /// From the `erosion` resource ([`crate::erosion_settings::PipeWaterErosion`]); off without one.
    pub erosion: pipewater_core::ErosionParams,
    /// Viscosity (m²/s) and solidify rate (m/s) from the `fluid` resource
    /// ([`crate::fluid_settings::PipeWaterFluid`]); water's without one.
    pub fluid: (f32, f32),
}

/// One edge's properties: `boundary_*`, `inflow_rate_*` (m³/s) and `boundary_level_*` (local m).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EdgeInputs {
    pub mode: WaterBoundary,
    pub inflow_rate: f64,
    pub level: f64,
}

/// The core's parameters for the node's properties (edges in [`pipewater_core::Edge`] order).
pub fn core_params(p: &ParamInputs) -> Params {
    let boundary = |edge: EdgeInputs| match edge.mode {
        WaterBoundary::Wall => Boundary::Wall,
        WaterBoundary::Open => Boundary::Open,
        WaterBoundary::Inflow => Boundary::Inflow { rate: edge.inflow_rate as f32 },
        WaterBoundary::Level => Boundary::Level { level: edge.level as f32 },
    };
    Params {
        gravity: p.gravity as f32,
        damping: p.damping as f32,
        neighbours: match p.neighbours {
            WaterNeighbours::Four => NeighbourMode::Four,
            WaterNeighbours::Eight => NeighbourMode::Eight,
            WaterNeighbours::Triangular => NeighbourMode::Triangular,
        },
        cross_section: match p.cross_section {
            WaterCrossSection::Classic => CrossSection::Classic,
            WaterCrossSection::DepthDependent => CrossSection::DepthDependent,
        },
        pipe_depth: p.pipe_depth as f32,
        momentum_advection: p.momentum_advection,
        boundaries: p.boundaries.map(boundary),
        cfl: p.courant as f32,
        max_step: p.max_step as f32,
        max_substeps: p.max_substeps.clamp(MAX_SUBSTEPS_RANGE.min as i64, MAX_SUBSTEPS_RANGE.max as i64) as u32,
        erosion: p.erosion,
        viscosity: p.fluid.0,
        solidify_rate: p.fluid.1,
    }
}

/// What the node must do before its simulation answers: the outcome of the property changes
/// since it last asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Build a new simulation (water restarts from `initial_water_level`).
    Build,
    /// Keep the simulation, replacing its terrain and/or parameters.
    Update { terrain: bool, params: bool },
    /// There is no simulation and the last build failed; nothing changed that could help.
    Unavailable,
}

/// Property changes not yet applied to the simulation.
///
/// A failed build is not retried on every query or frame (each attempt logs an error); it is
/// retried once any property changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    rebuild: bool,
    terrain: bool,
    params: bool,
    build_failed: bool,
}

impl Default for Pending {
    /// A new node has no simulation yet: the first question builds one.
    fn default() -> Self {
        Pending { rebuild: true, terrain: false, params: false, build_failed: false }
    }
}

impl Pending {
    /// A property that shapes the simulation (grid, cell size, initial water, backend) changed.
    pub fn rebuild(&mut self) {
        self.rebuild = true;
    }

    /// A terrain property changed: the water is kept.
    pub fn terrain(&mut self) {
        self.terrain = true;
    }

    /// A parameter of the step changed.
    pub fn params(&mut self) {
        self.params = true;
    }

    /// Takes the pending changes as a plan, for a node that has a simulation or not. A `Build`
    /// must be followed by [`Pending::built`].
    pub fn take(&mut self, has_sim: bool) -> Plan {
        let changed = self.terrain || self.params;
        if self.rebuild || (!has_sim && (!self.build_failed || changed)) {
            self.rebuild = false;
            self.terrain = false;
            self.params = false;
            return Plan::Build;
        }
        if !has_sim {
            return Plan::Unavailable;
        }
        let plan = Plan::Update { terrain: self.terrain, params: self.params };
        self.terrain = false;
        self.params = false;
        plan
    }

    /// Records whether the build asked for by [`Pending::take`] left a simulation.
    pub fn built(&mut self, has_sim: bool) {
        self.build_failed = !has_sim;
    }
}

/// The grid of the node's `grid_size` and `cell_size`.
pub fn grid(grid_size: Vector2i, cell_size: f64) -> Result<Grid, String> {
    let (w, h) = validate::grid_size(grid_size.x as i64, grid_size.y as i64)?;
    Grid::new(w, h, cell_size as f32).map_err(|e| format!("grid: {e}"))
}

/// The terrain properties, as Godot holds them.
pub struct TerrainInputs<'a> {
    /// `terrain_heights`; cleared when it no longer fits the grid.
    pub heights: &'a mut PackedFloat32Array,
    pub heightmap: Option<&'a Gd<Texture2D>>,
    pub height_scale: f64,
    pub height_offset: f64,
}

/// Terrain for `grid` from `terrain_heights`, else the heightmap, else flat ground at 0.
/// What cannot be used is reported and skipped.
pub fn terrain(grid: Grid, inputs: TerrainInputs, errors: &mut ErrorLog) -> Vec<f32> {
    let flat = vec![0.0; grid.cell_count()];
    if !inputs.heights.is_empty() {
        match validate::terrain_heights(inputs.heights.as_slice(), grid.width, grid.height) {
            Ok(()) => return inputs.heights.as_slice().to_vec(),
            Err(why) => {
                errors.reject(format!("{why}; terrain_heights cleared (the grid changed size)"));
                *inputs.heights = PackedFloat32Array::new();
            }
        }
    }
    let Some(texture) = inputs.heightmap else { return flat };
    match heightmap_terrain(texture, grid, inputs.height_scale as f32, inputs.height_offset as f32) {
        Ok(terrain) => terrain,
        Err(why) => {
            errors.reject(format!("heightmap: {why}; using flat ground"));
            flat
        }
    }
}

/// Terrain heights for the node's grid from an image, for `set_terrain_from_image`: the red
/// channel (or luminance) × `height_scale` + `height_offset`, resampled to the grid. `None` when
/// an argument or the image is rejected (reported), or the grid properties do not make a grid
/// (reported when they were set).
pub fn terrain_from_image(
    image: Option<Gd<Image>>,
    grid_size: Vector2i,
    cell_size: f64,
    height_scale: f64,
    height_offset: f64,
    errors: &mut ErrorLog,
) -> Option<Vec<f32>> {
    let Some(image) = image else {
        errors.reject("set_terrain_from_image: image is null: pass an Image".into());
        return None;
    };
    let (lo, hi) = validate::HEIGHT_SCALE_RANGE;
    let scale = errors.accept(validate::float_in("set_terrain_from_image: height_scale", height_scale, lo, hi, " m"))?;
    let offset = errors.accept(validate::local_height("set_terrain_from_image: height_offset", height_offset))?;
    let grid = grid(grid_size, cell_size).ok()?;
    match prepared_image(&image).and_then(|copy| image_terrain(copy, grid, scale, offset)) {
        Ok(terrain) => Some(terrain),
        Err(why) => {
            errors.reject(format!("set_terrain_from_image: {why}"));
            None
        }
    }
}

/// The water a simulation starts from: its fields, and the parameters the pipes' values are
/// expressed in.
pub struct Start {
    /// Terrain, depth and pipes.
    pub state: State,
    /// The parameters `state.flow` was saved under (a baked state's), or `None` for the node's.
    pub saved_params: Option<Params>,
}

/// Dry ground of `terrain` filled to `water_level` (local m). `None` (reported) when the terrain
/// is refused.
pub fn level_start(grid: Grid, terrain: Vec<f32>, water_level: f64, errors: &mut ErrorLog) -> Option<Start> {
    let mut state = match State::with_terrain(grid, terrain) {
        Ok(s) => s,
        Err(e) => {
            errors.reject(format!("terrain: {e}"));
            return None;
        }
    };
    if let Err(e) = state.fill_to_level(water_level as f32) {
        errors.reject(crate::errors::property_message("initial_water_level", &e));
        return None;
    }
    Some(Start { state, saved_params: None })
}

/// The fields of a baked state (`initial_state`'s bytes) for a node of `grid_size` and
/// `cell_size`: refused, with the reason, when it cannot be read or was saved for another grid.
pub fn baked_fields(bytes: &[u8], grid_size: Vector2i, cell_size: f64) -> Result<SavedFields, String> {
    let node_grid = grid(grid_size, cell_size)?;
    let fields = saved_fields(bytes).map_err(|e| e.to_string())?;
    validate::saved_grid(fields.state.grid, node_grid)?;
    Ok(fields)
}

/// A simulation of `start` with `params`, on the backend asked for, and the RD textures (height,
/// flux) when it runs on the RenderingDevice. Falls back along RenderingDevice → wgpu → CPU: with
/// a warning under `BACKEND_AUTO`, with an error when the backend was asked for by name, so
/// that the scene still has water. `None` (reported) when nothing can run.
pub fn simulation(start: Start, params: Params, backend: WaterBackend, errors: &mut ErrorLog) -> Option<(Simulation, Option<(Rid, Rid)>)> {
    let Start { state, saved_params } = start;
    let (mut sim, textures) = started(state, saved_params.unwrap_or(params), backend, errors)?;
    if saved_params.is_some_and(|saved| saved != params) {
        // The pipes' values change meaning with some parameters: set_params converts them.
        let result = sim.set_params(params);
        errors.accept(result.map_err(|e| format!("parameters: {e}")));
    }
    Some((sim, textures))
}

/// [`simulation`] with the parameters the state's pipes are expressed in.
fn started(state: State, params: Params, backend: WaterBackend, errors: &mut ErrorLog) -> Option<(Simulation, Option<(Rid, Rid)>)> {
    // Erosion runs on the CPU only: BACKEND_AUTO leaves the RenderingDevice to Simulation::new,
    // which takes the CPU and says why.
    if wants_rendering_device(backend) && !(params.erosion.enabled && backend == WaterBackend::Auto) {
        let mut textures = None;
        let started = Simulation::with_backend(state.clone(), params, |state| rendering_device_backend(state, &mut textures));
        match started {
            Ok(sim) => return Some((sim, textures)),
            Err(e) => rendering_device_refused(backend, &e, errors),
        }
    }
    match Simulation::new(state.clone(), params, backend_preference(backend)) {
        Ok(sim) => {
            if let Some(why) = sim.gpu_fallback_reason() {
                godot_warn!("PipeWater: no GPU backend, running on the CPU ({why})");
            }
            Some((sim, None))
        }
        Err(CoreError::GpuUnavailable(why)) => {
            errors.reject(format!("backend = BACKEND_GPU but no GPU is usable ({why}); running on the CPU"));
            let result = Simulation::new(state, params, BackendPreference::Cpu);
            errors.accept(result.map(|sim| (sim, None)).map_err(|e| format!("simulation: {e}")))
        }
        Err(e) => {
            errors.reject(format!("simulation: {e}"));
            None
        }
    }
}

/// Moves a running simulation's water, sources and ledger to the backend asked for. Returns the
/// RD textures when it now runs on the RenderingDevice backend; on failure (reported) the
/// current backend keeps running.
pub fn switch(sim: &mut Simulation, backend: WaterBackend, errors: &mut ErrorLog) -> Option<(Rid, Rid)> {
    if wants_rendering_device(backend) {
        let mut textures = None;
        match sim.switch_backend(|state| rendering_device_backend(state, &mut textures)) {
            Ok(()) => return textures,
            Err(e) => rendering_device_refused(backend, &e, errors),
        }
    }
    if let Err(e) = sim.switch_to(backend_preference(backend)) {
        errors.reject(format!("backend: could not move the water to the requested backend ({e}); the current one keeps running"));
    }
    None
}

/// Whether `backend` asks for the RenderingDevice backend here and now.
fn wants_rendering_device(backend: WaterBackend) -> bool {
    match backend {
        WaterBackend::RenderingDevice => true,
        WaterBackend::Auto => rendering_device::unavailable_reason().is_none(),
        WaterBackend::Gpu | WaterBackend::Cpu => false,
    }
}

fn rendering_device_backend(state: &State, textures: &mut Option<(Rid, Rid)>) -> pipewater_core::Result<Box<dyn Backend>> {
    let backend = RdBackend::new(state)?;
    *textures = Some(backend.textures());
    Ok(Box::new(backend))
}

fn rendering_device_refused(backend: WaterBackend, why: &CoreError, errors: &mut ErrorLog) {
    if backend == WaterBackend::RenderingDevice {
        errors.reject(format!("backend = BACKEND_RENDERING_DEVICE cannot run ({why}); using BACKEND_AUTO's choice"));
    } else {
        godot_warn!("PipeWater: the RenderingDevice backend cannot run ({why}); trying wgpu");
    }
}

fn backend_preference(backend: WaterBackend) -> BackendPreference {
    match backend {
        WaterBackend::Auto | WaterBackend::RenderingDevice => BackendPreference::Auto,
        WaterBackend::Gpu => BackendPreference::Gpu,
        WaterBackend::Cpu => BackendPreference::Cpu,
    }
}

/// The `active_backend` value of a running simulation.
pub fn active_backend(sim: &Simulation) -> WaterBackend {
    match sim.backend_kind() {
        BackendKind::EngineGpu => WaterBackend::RenderingDevice,
        BackendKind::Gpu => WaterBackend::Gpu,
        BackendKind::Cpu => WaterBackend::Cpu,
    }
}

/// The texture's image, checked to be non-empty and uncompressed (or decompressible).
pub fn readable_image(texture: &Gd<Texture2D>) -> Result<Gd<Image>, String> {
    let image = texture.get_image().ok_or("the texture has no image data (is it a GPU-only texture?)")?;
    prepared_image(&image)
}

/// A copy of `image` that can be converted: non-empty and uncompressed (or decompressible).
fn prepared_image(image: &Gd<Image>) -> Result<Gd<Image>, String> {
    if image.is_empty() || image.get_width() < 1 || image.get_height() < 1 {
        return Err("the image is empty: valid heightmaps have at least 1×1 pixels".into());
    }
    let mut copy = image.duplicate_resource();
    if copy.is_compressed() {
        copy.decompress();
        if copy.is_compressed() {
            return Err(format!(
                "the image is compressed ({:?}) and cannot be decompressed: use an uncompressed (e.g. L8, R8, RF, RGBA8) image",
                copy.get_format()
            ));
        }
    }
    Ok(copy)
}

/// Terrain heights for `grid` from a heightmap texture (red channel, resampled to the grid).
fn heightmap_terrain(texture: &Gd<Texture2D>, grid: Grid, scale: f32, offset: f32) -> Result<Vec<f32>, String> {
    image_terrain(readable_image(texture)?, grid, scale, offset)
}

/// Terrain heights for `grid` from a prepared image copy (red channel, resampled to the grid).
fn image_terrain(mut image: Gd<Image>, grid: Grid, scale: f32, offset: f32) -> Result<Vec<f32>, String> {
    image.clear_mipmaps();
    image.convert(Format::RF);
    if image.get_width() != grid.width as i32 || image.get_height() != grid.height as i32 {
        image.resize(grid.width as i32, grid.height as i32);
    }
    let bytes = image.get_data();
    terrain_from_rf_bytes(bytes.as_slice(), grid.width, grid.height, scale, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewater_core::Edge;

    fn defaults() -> ParamInputs {
        let p = Params::default();
        ParamInputs {
            gravity: p.gravity as f64,
            damping: p.damping as f64,
            neighbours: WaterNeighbours::default(),
            cross_section: WaterCrossSection::default(),
            momentum_advection: true,
            pipe_depth: p.pipe_depth as f64,
            boundaries: [EdgeInputs::default(); 4],
            courant: p.cfl as f64,
            max_step: p.max_step as f64,
            max_substeps: p.max_substeps as i64,
            erosion: p.erosion,
            fluid: (p.viscosity, p.solidify_rate),
        }
    }

    #[test]
    fn the_node_defaults_give_the_core_defaults() {
        let params = core_params(&defaults());
        println!("node defaults -> {params:?}");
        assert_eq!(params, Params::default());
        assert_eq!(params.validate(), Ok(()));
    }

    fn edge(mode: WaterBoundary, inflow_rate: f64, level: f64) -> EdgeInputs {
        EdgeInputs { mode, inflow_rate, level }
    }

    #[test]
    fn boundary_properties_map_to_their_edges_with_the_inflow_rate() {
        let mut inputs = defaults();
        inputs.boundaries = [
            edge(WaterBoundary::Open, 9.0, 1.0),
            edge(WaterBoundary::Inflow, 2.5, 1.0),
            edge(WaterBoundary::Wall, 7.0, 1.0),
            edge(WaterBoundary::Inflow, 0.0, 1.0),
        ];
        let b = core_params(&inputs).boundaries;
        println!("north/east/south/west properties -> {b:?}");
        assert_eq!(b[Edge::North as usize], Boundary::Open);
        assert_eq!(b[Edge::East as usize], Boundary::Inflow { rate: 2.5 });
        assert_eq!(b[Edge::South as usize], Boundary::Wall);
        assert_eq!(b[Edge::West as usize], Boundary::Inflow { rate: 0.0 });
    }

    #[test]
    fn level_boundaries_hold_their_own_edges_level_and_ignore_the_inflow_rate() {
        let mut inputs = defaults();
        inputs.boundaries = [
            edge(WaterBoundary::Level, 5.0, -2.5),
            edge(WaterBoundary::Wall, 0.0, 3.0),
            edge(WaterBoundary::Level, 0.0, 0.0),
            edge(WaterBoundary::Level, 1.0, 1.0e6),
        ];
        let params = core_params(&inputs);
        let b = params.boundaries;
        println!("north/east/south/west with levels -> {b:?}");
        assert_eq!(b[Edge::North as usize], Boundary::Level { level: -2.5 });
        assert_eq!(b[Edge::East as usize], Boundary::Wall);
        assert_eq!(b[Edge::South as usize], Boundary::Level { level: 0.0 });
        assert_eq!(b[Edge::West as usize], Boundary::Level { level: 1.0e6 });
        assert_eq!(params.validate(), Ok(()));
    }

    #[test]
    fn mode_enums_map_to_the_core_modes() {
        let mut inputs = defaults();
        inputs.neighbours = WaterNeighbours::Four;
        inputs.cross_section = WaterCrossSection::Classic;
        let p = core_params(&inputs);
        println!("FOUR, CLASSIC -> {:?}, {:?}", p.neighbours, p.cross_section);
        assert_eq!((p.neighbours, p.cross_section), (NeighbourMode::Four, CrossSection::Classic));
        inputs.neighbours = WaterNeighbours::Triangular;
        let p = core_params(&inputs);
        println!("TRIANGULAR -> {:?}", p.neighbours);
        assert_eq!(p.neighbours, NeighbourMode::Triangular);
    }

    #[test]
    fn a_baked_state_is_taken_for_its_own_grid_only() {
        let grid = Grid::new(16, 8, 0.5).unwrap();
        let mut state = State::new(grid);
        state.fill_to_level(0.25).expect("a level within the depth limit");
        let mut sim = Simulation::cpu(state.clone(), Params::default()).unwrap();
        let bytes = sim.save_state().unwrap();
        let fields = baked_fields(&bytes, Vector2i::new(16, 8), 0.5).expect("its own grid");
        println!("baked {} quanta on {:?}", fields.state.total_quanta(), fields.state.grid);
        assert_eq!(fields.state, state);
        for (size, cell) in [(Vector2i::new(8, 16), 0.5), (Vector2i::new(16, 8), 1.0)] {
            let why = baked_fields(&bytes, size, cell).err().expect("another grid is refused");
            println!("{size} × {cell} m: {why}");
            assert!(why.contains("16 × 8 grid of 0.5 m cells") && why.contains("grid_size"));
        }
        let corrupt = baked_fields(&bytes[..40], Vector2i::new(16, 8), 0.5).err().expect("a truncated state is refused");
        println!("{corrupt}");
        assert!(corrupt.contains("truncated"));
    }

    #[test]
    fn a_new_node_builds_on_its_first_question_and_then_has_nothing_to_do() {
        let mut pending = Pending::default();
        let first = pending.take(false);
        pending.built(true);
        let second = pending.take(true);
        println!("first: {first:?}, second: {second:?}");
        assert_eq!(first, Plan::Build);
        assert_eq!(second, Plan::Update { terrain: false, params: false });
    }

    #[test]
    fn terrain_and_parameter_changes_update_a_running_simulation_once() {
        let mut pending = Pending::default();
        pending.take(false);
        pending.built(true);
        pending.terrain();
        pending.params();
        let first = pending.take(true);
        let second = pending.take(true);
        println!("after terrain + params: {first:?}, then {second:?}");
        assert_eq!(first, Plan::Update { terrain: true, params: true });
        assert_eq!(second, Plan::Update { terrain: false, params: false });
    }

    #[test]
    fn a_rebuild_request_wins_over_updates_and_clears_them() {
        let mut pending = Pending::default();
        pending.take(false);
        pending.built(true);
        pending.terrain();
        pending.rebuild();
        let first = pending.take(true);
        pending.built(true);
        let second = pending.take(true);
        println!("rebuild + terrain: {first:?}, then {second:?}");
        assert_eq!(first, Plan::Build);
        assert_eq!(second, Plan::Update { terrain: false, params: false });
    }

    #[test]
    fn a_failed_build_is_retried_only_after_a_property_changes() {
        let mut pending = Pending::default();
        pending.take(false);
        pending.built(false);
        let idle = pending.take(false);
        pending.params();
        let after_change = pending.take(false);
        println!("after a failed build: {idle:?}; after a parameter change: {after_change:?}");
        assert_eq!(idle, Plan::Unavailable);
        assert_eq!(after_change, Plan::Build);
    }
}
