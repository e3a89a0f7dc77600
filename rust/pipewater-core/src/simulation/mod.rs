//! [`Simulation`]: the one API engines drive, whatever the backend.
//!
//! It turns user-level requests (a frame of `delta` seconds, a volume of water at a point, a
//! source with a rate) into the integer work of a backend, keeps the bookkeeping that must not
//! depend on the backend (inflow and source remainders, the step plan), and answers queries
//! from the newest snapshot.
//!
//! This file holds the struct, its construction, the backend it runs on and the stepping
//! (`advance`, `run_steps`); the rest of its API lives by job in files whose names mirror the
//! node's `node/` in pipewater-godot: `edits.rs` (water and terrain), `sources.rs`, `bodies.rs`,
//! `detail.rs` (the detail waves), `queries.rs`, `persistence.rs` (the reset state, initial
//! flow, load, save and restore) and `recovery.rs` (device losses).

mod bodies;
mod cooling;
mod detail;
mod edits;
mod overwrite;
pub use overwrite::CellOverwrite;
pub(crate) use overwrite::write_overwrites;
mod erosion;
mod persistence;
mod queries;
mod recovery;
mod save_jobs;
mod sources;

pub use edits::{basin_fill, basin_fill_within};
pub use queries::{sample_surface, sample_surface_on};
// For the world in pages (world_water.rs), which splits an edit as the dense grid does.
#[cfg(feature = "gpu")]
pub(crate) use edits::distribute_quanta;
pub use recovery::DeviceLoss;
pub use save_jobs::{RestoreJob, SaveJob, DEFAULT_RESTORE_BYTES_PER_POLL, RESTORE_BYTES_PER_CELL};

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendKind, CellWater, FramePlan, PipeNudge};
use crate::detail::DetailDriver;
use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use crate::lattice::Lattice;
use crate::params::{Boundary, CrossSection, Params, LONGEST_STEP};
use crate::pipes::{edge_cell_count, StepConstants};
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
use crate::state::State;
use crate::frame::FrameReport;
use crate::sources::Source;
use std::collections::HashMap;

/// Which backend to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendPreference {
    /// The GPU when an adapter exists, else the CPU.
    #[default]
    Auto,
    /// The GPU only: creating the simulation fails without an adapter.
    Gpu,
    /// The CPU only.
    Cpu,
}

/// Largest volume one edit may add or remove, m³.
pub const MAX_EDIT_VOLUME: f32 = 1.0e9;
/// Largest terrain change of one edit, m (magnitude).
pub const MAX_TERRAIN_DELTA: f32 = 1.0e4;
/// Shortest step, s: a 0.001 m cell under 2048 m of water at g = 100 needs 7·10⁻⁷ s.
pub const MIN_STEP: f32 = 1.0e-7;
/// Longest frame one `advance` accepts, s.
pub const MAX_FRAME_DELTA: f32 = 10.0;
/// Fastest initial velocity accepted, m/s (magnitude of each component).
pub const MAX_INITIAL_SPEED: f32 = 1.0e3;
/// Longest single step [`Simulation::run_steps`] accepts, s. Steps longer than
/// [`LONGEST_STEP`] (which `advance` never takes) may ask sources and inflow edges for more than a
/// cell holds; they add what fits and owe nothing more.
pub const MAX_STEP_LENGTH: f32 = 10.0;
/// Deepest water (m) a GPU backend's newest snapshot may show, with what was added since,
/// for [`Simulation::add_water`] to count the water it places from the request alone. Past it
/// the placed volume is read from the device's ledger (waiting for it), since cells may be close
/// to [`MAX_DEPTH`]; half of it leaves room for the frames a snapshot lags and for waves that
/// pile water up.
pub const EXACT_EDIT_DEPTH: f32 = MAX_DEPTH / 2.0;
/// Each edge's inflow rate as the node's properties name it, by [`crate::Edge`] index.
const INFLOW_RATE_NAMES: [&str; 4] = ["inflow_rate_north", "inflow_rate_east", "inflow_rate_south", "inflow_rate_west"];
/// Each edge's level as the node's properties name it, by [`crate::Edge`] index.
const BOUNDARY_LEVEL_NAMES: [&str; 4] = ["boundary_level_north", "boundary_level_east", "boundary_level_south", "boundary_level_west"];

/// A water simulation over one grid.
pub struct Simulation {
    grid: Grid,
    params: Params,
    backend: Box<dyn Backend>,
    initial: State,
    initial_total: i64,
    sources: Vec<Source>,
    next_source_id: u32,
    inflow_carry: [f64; 4],
    /// Largest depth (m) that edits, sources and inflow may have added to one cell: since the last
    /// frame, during the last frame, and during the one before. A GPU snapshot can be two frames
    /// old, so the step estimate adds all three to the snapshot's deepest water.
    recent_gain: [f32; 3],
    frames: u64,
    elapsed: f64,
    last_report: FrameReport,
    /// Time of frames too short for one step, s, carried into the next `advance`.
    carried_time: f32,
    /// Velocity of each cell at the reset point (m/s, local X and Z), when one was set.
    initial_velocity: Option<Vec<[f32; 2]>>,
    gpu_unavailable: Option<Error>,
    /// Drags on the pipes for the next frame (bodies and pushes), one per cell: (weight,
    /// velocity along grid x and y).
    pending_nudges: HashMap<u32, (f32, [f32; 2])>,
    /// Devices lost since the engine last asked ([`Simulation::take_device_losses`]).
    device_losses: Vec<DeviceLoss>,
    /// The detail wave layer, when it is on ([`crate::detail`]).
    detail: Option<DetailDriver>,
    /// Whether tiles at rest may sleep ([`Simulation::set_sleeping`]).
    sleeping: bool,
    /// Quanta per cell that cooling owes from earlier frames ([`crate::cooling::quanta_per_cell`]).
    cooling_carry: f64,
    /// A load being applied over several frames ([`Simulation::poll_restore`]): until it lands
    /// the water waits and edits are refused.
    restoring: Option<Box<save_jobs::Applying>>,
}

impl Simulation {
    /// Creates a simulation of `state` with `params` on the preferred backend.
    pub fn new(state: State, params: Params, preference: BackendPreference) -> Result<Self> {
        check_state(&state, &params)?;
        let (mut backend, gpu_unavailable) = match (preference, params.erosion.enabled) {
            // Erosion runs on the CPU backend only: Auto takes it, and says why.
            (BackendPreference::Auto, true) => (Box::new(CpuBackend::new(&state)) as Box<dyn Backend>, Some(erosion::gpu_refusal())),
            _ => create_backend(&state, preference)?,
        };
        backend.configure_erosion(erosion::config(&params))?;
        Ok(Simulation::assemble(state, params, backend, gpu_unavailable))
    }

    /// Creates a simulation of `state` with `params` on a backend that `make` builds from the
    /// state: for backends that live outside this crate (a game engine's own GPU device).
    pub fn with_backend(state: State, params: Params, make: impl FnOnce(&State) -> Result<Box<dyn Backend>>) -> Result<Self> {
        check_state(&state, &params)?;
        let mut backend = make(&state)?;
        backend.configure_erosion(erosion::config(&params))?;
        Ok(Simulation::assemble(state, params, backend, None))
    }

    fn assemble(state: State, params: Params, backend: Box<dyn Backend>, gpu_unavailable: Option<Error>) -> Self {
        let initial_total = state.total_quanta();
        Simulation {
            grid: state.grid,
            params,
            backend,
            initial: state,
            initial_total,
            sources: Vec::new(),
            next_source_id: 1,
            inflow_carry: [0.0; 4],
            recent_gain: [0.0; 3],
            frames: 0,
            elapsed: 0.0,
            last_report: FrameReport::default(),
            carried_time: 0.0,
            initial_velocity: None,
            gpu_unavailable,
            pending_nudges: HashMap::new(),
            device_losses: Vec::new(),
            detail: None,
            sleeping: true,
            cooling_carry: 0.0,
            restoring: None,
        }
    }

    /// Moves the running water to another backend, which `make` builds from the current state:
    /// fields, sources, clock and ledger carry over (the ledger identity keeps holding across
    /// the switch). Waits for the device of the current backend. On error the current backend
    /// keeps running, untouched.
    pub fn switch_backend(&mut self, make: impl FnOnce(&State) -> Result<Box<dyn Backend>>) -> Result<()> {
        let state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        let mut backend = make(&state)?;
        backend.restore(&state, counters, self.frames)?;
        backend.configure_erosion(erosion::config(&self.params))?;
        backend.set_sleeping(self.sleeping);
        if let Some(detail) = &mut self.detail {
            backend.configure_detail(Some(detail.layout()))?;
            detail.restart();
        }
        self.backend = backend;
        self.gpu_unavailable = None;
        Ok(())
    }

    /// Moves the running water to the preferred built-in backend; see
    /// [`Simulation::switch_backend`].
    pub fn switch_to(&mut self, preference: BackendPreference) -> Result<()> {
        let mut fallback = None;
        let eroding = self.params.erosion.enabled;
        self.switch_backend(|state| {
            let (backend, why) = match (preference, eroding) {
                (BackendPreference::Auto, true) => (Box::new(CpuBackend::new(state)) as Box<dyn Backend>, Some(erosion::gpu_refusal())),
                _ => create_backend(state, preference)?,
            };
            fallback = why;
            Ok(backend)
        })?;
        self.gpu_unavailable = fallback;
        Ok(())
    }

    /// Lets parts of the grid whose water is at rest sleep (`true`, the default): they are not
    /// stepped until something reaches them, so the step's cost follows the moving water. Off
    /// steps every cell, for comparison; the water is the same bit for bit either way
    /// ([`crate::backend::sleep`]).
    pub fn set_sleeping(&mut self, on: bool) {
        self.sleeping = on;
        self.backend.set_sleeping(on);
    }

    /// Whether tiles at rest may sleep ([`Simulation::set_sleeping`]).
    pub fn sleeping(&self) -> bool {
        self.sleeping
    }

    /// What sleeping did in the last frame (on a GPU as late as the snapshot); `None` where the
    /// backend has no sleeping.
    pub fn sleep_report(&self) -> Option<crate::backend::sleep::SleepReport> {
        self.backend.sleep_report()
    }

    /// Which tiles the last step stepped, for debug views; `None` where the backend has no
    /// sleeping.
    pub fn awake_tiles(&mut self) -> Option<crate::backend::sleep::AwakeTiles> {
        self.backend.awake_tiles()
    }

    /// Creates a simulation on the CPU backend.
    pub fn cpu(state: State, params: Params) -> Result<Self> {
        Simulation::new(state, params, BackendPreference::Cpu)
    }

    /// The grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The parameters in force.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Replaces the parameters after validating them; the state is kept.
    pub fn set_params(&mut self, params: Params) -> Result<()> {
        params.validate()?;
        check_edge_limits(&params, self.grid, &self.initial.terrain)?;
        if params.erosion != self.params.erosion {
            // First, so that a backend that refuses erosion leaves everything as it was.
            self.on_backend(|b| b.configure_erosion(erosion::config(&params)))?;
        }
        if pipe_storage(&self.params) != pipe_storage(&params) {
            // What the pipes keep changes meaning (flux or flow, over which depth): convert the
            // running fields and the reset point so that every pipe carries the same flux.
            let (from, to) = (self.step_constants(&self.params), self.step_constants(&params));
            let mut state = self.on_backend(|b| b.read_state())?;
            state.convert_pipes(&from, &to);
            let counters = self.on_backend(|b| b.read_counters())?;
            let frames = self.frames;
            self.on_backend(|b| b.restore(&state, counters, frames))?;
            self.initial.convert_pipes(&from, &to);
        }
        self.params = params;
        // Pipe widths may have changed: the reset point's current is rebuilt for them.
        self.apply_initial_velocity();
        Ok(())
    }

    /// Step constants of this grid for `params` (for conversions; no step length).
    fn step_constants(&self, params: &Params) -> crate::pipes::StepConstants {
        crate::pipes::StepConstants::new(params, self.grid.width, self.grid.height, self.grid.cell_size, 0.0, [0; 4])
    }

    /// Which backend runs.
    pub fn backend_kind(&self) -> BackendKind {
        self.backend.kind()
    }

    /// Description of the backend (threads, or adapter and driver).
    pub fn backend_description(&self) -> String {
        self.backend.description()
    }

    /// Bytes the backend's last frame copied from the device to the host (0 on the CPU).
    pub fn last_readback_bytes(&self) -> u64 {
        self.backend.last_readback_bytes()
    }

    /// Whether snapshots must cover every cell (textures are filled from them on the CPU) or only
    /// the cells queries read ([`Backend::want_full_snapshots`]): on a GPU backend the second
    /// reads back a few tiles a frame instead of the grid. GPU backends start with `true`.
    pub fn want_full_snapshots(&mut self, full: bool) {
        self.backend.want_full_snapshots(full);
    }

    /// Why the GPU was not used when [`BackendPreference::Auto`] fell back to the CPU.
    pub fn gpu_fallback_reason(&self) -> Option<&Error> {
        self.gpu_unavailable.as_ref()
    }

    /// Simulated time since the start or the last reset, s.
    pub fn elapsed(&self) -> f64 {
        self.elapsed
    }

    /// Report of the last `advance`.
    pub fn last_report(&self) -> FrameReport {
        self.last_report
    }

    /// Volume of one depth quantum in one cell, m³ (a hexagonal cell of the triangular lattice
    /// covers `cell_size²·√3/2`).
    pub fn quantum_volume(&self) -> f64 {
        self.lattice().quantum_volume()
    }

    /// Where the cells lie in the world for the neighbour mode in force ([`Lattice`]): queries,
    /// edits, sources and bodies place and read cells through it.
    pub fn lattice(&self) -> Lattice {
        Lattice::new(self.grid, self.params.neighbours)
    }

    /// The longest stable step for the current state, s: `cfl · dx / (|u| + c)`, where `c` is
    /// the speed of small waves, `√(g·d_max)` (or `√(g·pipe_depth)` in classic mode), and `|u|`
    /// the fastest water when the model advects momentum (the upstream transport it adds must
    /// not carry water more than a cell per step). Capped by `max_step`.
    pub fn stable_step(&mut self) -> f32 {
        let snapshot = self.backend.snapshot();
        let depth = match self.params.cross_section {
            CrossSection::DepthDependent => snapshot.as_ref().map_or(0.0, |s| s.max_depth) + self.recent_gain.iter().sum::<f32>(),
            CrossSection::Classic => self.params.pipe_depth,
        };
        let flow = if self.params.advects() { snapshot.as_ref().map_or(0.0, |s| s.max_speed) } else { 0.0 };
        let wave = (self.params.gravity * depth).sqrt() + flow;
        let stable = if wave > 0.0 { self.params.cfl * self.grid.cell_size / wave } else { f32::INFINITY };
        stable.clamp(MIN_STEP, self.params.max_step)
    }

    /// Advances by `delta` seconds of simulated time, in as many equal steps as stability needs
    /// (at most `max_substeps`; past that, time is dropped rather than stability). Frames shorter
    /// than [`MIN_STEP`] are not dropped: their time is carried into the next frame.
    pub fn advance(&mut self, delta: f32) -> Result<FrameReport> {
        check_range("delta", delta, 0.0, MAX_FRAME_DELTA)?;
        if self.restoring.is_some() {
            // The water waits for a load being applied (see `poll_restore`).
            return self.wait_for_restore();
        }
        let delta = delta + self.carried_time;
        if delta < MIN_STEP {
            self.carried_time = delta;
            let report = FrameReport::default();
            self.last_report = report;
            return Ok(report);
        }
        self.carried_time = 0.0;
        let stable = self.stable_step();
        let wanted = (delta / stable).ceil().max(1.0);
        let capped = wanted > self.params.max_substeps as f32;
        let substeps = (wanted.min(self.params.max_substeps as f32)) as u32;
        let step = if capped { stable } else { (delta / substeps as f32).max(MIN_STEP) };
        let simulated = step * substeps as f32;
        // Only a capped frame drops time; otherwise `step · substeps` differs from `delta` by
        // float rounding alone, which is no time lost.
        let dropped = if capped { (delta - simulated).max(0.0) } else { 0.0 };
        let report = FrameReport { substeps, step, simulated, dropped };
        self.run_steps(step, substeps)?;
        self.last_report = report;
        Ok(report)
    }

    /// Runs exactly `substeps` steps of `step` seconds, whatever their stability. For tests and
    /// benchmarks that need a fixed step; games call [`Simulation::advance`].
    pub fn run_steps(&mut self, step: f32, substeps: u32) -> Result<()> {
        check_range("step", step, MIN_STEP, MAX_STEP_LENGTH)?;
        self.refuse_while_restoring("run_steps")?;
        if substeps == 0 {
            return Ok(());
        }
        let frame_time = step as f64 * substeps as f64;
        let qv = self.quantum_volume();
        let inflow_quanta = inflow_quanta_per_step(&self.params, self.grid.width, self.grid.height, frame_time, substeps, qv, &mut self.inflow_carry);
        let mut forcing = Vec::new();
        for source in &mut self.sources {
            let owed = source.rate as f64 * frame_time / qv + source.carry;
            let (mut planned, mut capped) = (0.0, false);
            for &(cell, share) in &source.cells {
                let wanted = (owed * share / substeps as f64).trunc();
                let per_step = wanted.clamp(-(MAX_DEPTH_QUANTA as f64), MAX_DEPTH_QUANTA as f64);
                capped |= per_step != wanted;
                if per_step != 0.0 {
                    forcing.push(CellWater { cell, quanta: per_step as i32 });
                    planned += per_step * substeps as f64;
                }
            }
            // What a cell cannot hold in one step is not owed later (steps past LONGEST_STEP).
            source.carry = if capped { 0.0 } else { owed - planned };
        }
        let constants = StepConstants::new(&self.params, self.grid.width, self.grid.height, self.grid.cell_size, step, inflow_quanta);
        if !self.pending_nudges.is_empty() {
            let mut nudges: Vec<PipeNudge> =
                self.pending_nudges.drain().map(|(cell, (weight, v))| PipeNudge { cell, velocity_x: v[0], velocity_y: v[1], weight }).collect();
            nudges.sort_unstable_by_key(|n| n.cell);
            self.on_backend(|b| b.nudge_pipes(&nudges))?;
        }
        if let Some(frame) = self.detail.as_mut().and_then(|d| d.frame(frame_time as f32, self.params.gravity)) {
            // Only kept until the advance: a device lost in it costs the new backend this frame's waves.
            self.backend.queue_detail(frame)?;
        }
        let plan = FramePlan { constants, substeps, forcing: &forcing };
        self.on_backend(|b| b.advance(&plan))?;
        self.cool(&constants, frame_time)?;
        self.frames += 1;
        self.elapsed += frame_time;
        let per_step_gain = forcing.iter().map(|f| f.quanta.max(0)).max().unwrap_or(0) as f32 + inflow_quanta.iter().map(|&q| q as f32).sum::<f32>();
        self.recent_gain = [0.0, self.recent_gain[0] + per_step_gain * substeps as f32 * DEPTH_QUANTUM, self.recent_gain[1]];
        Ok(())
    }
}

/// The checks every new simulation's state and parameters pass.
fn check_state(state: &State, params: &Params) -> Result<()> {
    params.validate()?;
    crate::state::check_terrain(&state.grid, &state.terrain)?;
    if state.depth.len() != state.grid.cell_count() || state.flow.len() != state.grid.cell_count() {
        return Err(Error::WrongLength { name: "depth", expected: state.grid.cell_count(), actual: state.depth.len() });
    }
    if let Some(i) = state.depth.iter().position(|d| !(0..=MAX_DEPTH_QUANTA).contains(d)) {
        return Err(Error::invalid("depth", format!("{} at cell {i}", state.depth[i]), format!("0 ..= {MAX_DEPTH_QUANTA} quanta ({MAX_DEPTH} m)")));
    }
    crate::state::check_pipes(&state.grid, params, &state.flow)?;
    check_edge_limits(params, state.grid, &state.terrain)
}

/// Refuses edges that would put more water into a cell than it holds ([`MAX_DEPTH`]) on this
/// grid and terrain: an inflow edge whose rate adds more than that to each of its cells in one
/// step of up to [`LONGEST_STEP`] s, or a fixed-level edge whose level stands more than that
/// above the lowest ground along it. The errors name the edge's property (`inflow_rate_north`,
/// `boundary_level_east`, …) and its valid range here.
fn check_edge_limits(params: &Params, grid: Grid, terrain: &[f32]) -> Result<()> {
    for (e, boundary) in params.boundaries.iter().enumerate() {
        match *boundary {
            Boundary::Inflow { rate } => {
                let cells = edge_cell_count(grid.width, grid.height, e) as f64;
                let area = Lattice::new(grid, params.neighbours).cell_area();
                let fits = MAX_DEPTH as f64 * cells * area / LONGEST_STEP as f64;
                if rate as f64 > fits {
                    return Err(Error::invalid(
                        INFLOW_RATE_NAMES[e],
                        format!("{rate} m³/s"),
                        format!(
                            "0 ..= {} m³/s on this grid: the edge's {cells} cells of {area} m² may each gain at most the {MAX_DEPTH} m of water a cell holds in one step of up to {LONGEST_STEP} s",
                            (fits * 1000.0).floor() / 1000.0
                        ),
                    ));
                }
            }
            Boundary::Level { level } => {
                let (w, h) = (grid.width, grid.height);
                let edge: Vec<(u32, u32)> = match e {
                    0 => (0..w).map(|x| (x, 0)).collect(),
                    1 => (0..h).map(|y| (w - 1, y)).collect(),
                    2 => (0..w).map(|x| (x, h - 1)).collect(),
                    _ => (0..h).map(|y| (0, y)).collect(),
                };
                let Some(&(x, y)) = edge.iter().min_by(|a, b| terrain[grid.index(a.0, a.1)].total_cmp(&terrain[grid.index(b.0, b.1)])) else { continue };
                let lowest = terrain[grid.index(x, y)];
                if level as f64 - lowest as f64 > MAX_DEPTH as f64 {
                    return Err(Error::invalid(
                        BOUNDARY_LEVEL_NAMES[e],
                        format!("{level} m"),
                        format!(
                            "-{MAX_TERRAIN_ABS} ..= {} m on this terrain: the lowest ground along the edge is {lowest} m (cell ({x}, {y})), and a cell holds at most {MAX_DEPTH} m of water",
                            lowest as f64 + MAX_DEPTH as f64
                        ),
                    ));
                }
            }
            Boundary::Wall | Boundary::Open => {}
        }
    }
    Ok(())
}

/// The backend to run, and why the GPU is not used when `Auto` fell back to the CPU.
fn create_backend(state: &State, preference: BackendPreference) -> Result<(Box<dyn Backend>, Option<Error>)> {
    match preference {
        BackendPreference::Cpu => Ok((Box::new(CpuBackend::new(state)), None)),
        BackendPreference::Gpu => Ok((gpu_backend(state)?, None)),
        BackendPreference::Auto => match auto_gpu_backend(state) {
            Ok(gpu) => Ok((gpu, None)),
            Err(why) => Ok((Box::new(CpuBackend::new(state)), Some(why))),
        },
    }
}

#[cfg(feature = "gpu")]
fn gpu_backend(state: &State) -> Result<Box<dyn Backend>> {
    Ok(Box::new(crate::backend::gpu::GpuBackend::new(state)?))
}

/// The GPU backend that [`BackendPreference::Auto`] takes: none on a software adapter, where the
/// multithreaded CPU backend runs the same water several times faster (a default 256² node in
/// headless Godot: 100–113 ms a frame on Mesa's lavapipe, 16.5 ms on the CPU backend, on 2
/// cores). [`BackendPreference::Gpu`] still runs on one.
#[cfg(feature = "gpu")]
fn auto_gpu_backend(state: &State) -> Result<Box<dyn Backend>> {
    let ctx = crate::backend::gpu::GpuContext::shared()?;
    if ctx.is_software() {
        return Err(Error::GpuUnavailable(format!(
            "the only GPU adapter is a software rasteriser, {}, slower than the CPU backend; choose the GPU backend by name to run on it anyway",
            ctx.adapter_description()
        )));
    }
    gpu_backend(state)
}

#[cfg(not(feature = "gpu"))]
fn auto_gpu_backend(state: &State) -> Result<Box<dyn Backend>> {
    gpu_backend(state)
}

#[cfg(not(feature = "gpu"))]
fn gpu_backend(_state: &State) -> Result<Box<dyn Backend>> {
    Err(Error::GpuUnavailable("pipewater-core was built without the `gpu` feature".into()))
}

/// What decides the meaning of the pipes' stored values ([`State::flow`]): whether they keep
/// their flux, and over which depth they carry their flow.
fn pipe_storage(params: &Params) -> (bool, CrossSection, u32) {
    let keeps_flux = params.cross_section == CrossSection::DepthDependent && !params.momentum_advection;
    (keeps_flux, params.cross_section, params.pipe_depth.to_bits())
}

/// Quanta each cell of an `Inflow` edge gains per step over a frame of `substeps` steps lasting
/// `frame_time` s, with `carry` (quanta owed per edge) kept between frames so that the rate is
/// met exactly over time. Shared by the dense grid and the world in pages.
pub(crate) fn inflow_quanta_per_step(params: &Params, width: u32, height: u32, frame_time: f64, substeps: u32, qv: f64, carry: &mut [f64; 4]) -> [i32; 4] {
    let mut inflow_quanta = [0i32; 4];
    for (e, boundary) in params.boundaries.iter().enumerate() {
        if let Boundary::Inflow { rate } = *boundary {
            let cells = edge_cell_count(width, height, e) as f64 * substeps as f64;
            let owed = rate as f64 * frame_time / qv + carry[e];
            let wanted = (owed / cells).floor();
            let per_cell = wanted.clamp(0.0, MAX_DEPTH_QUANTA as f64);
            inflow_quanta[e] = per_cell as i32;
            // What a cell cannot hold in one step is not owed later (steps past LONGEST_STEP).
            carry[e] = if per_cell < wanted { 0.0 } else { owed - per_cell * cells };
        } else {
            carry[e] = 0.0;
        }
    }
    inflow_quanta
}
