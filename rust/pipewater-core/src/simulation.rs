//! [`Simulation`]: the one API engines drive, whatever the backend.
//!
//! It turns user-level requests (a frame of `delta` seconds, a volume of water at a point, a
//! source with a rate) into the integer work of a backend, keeps the bookkeeping that must not
//! depend on the backend (inflow and source remainders, the step plan), and answers queries
//! from the newest snapshot.

use crate::backend::cpu::CpuBackend;
use crate::backend::recovery::RecoveryPoint;
use crate::backend::{Backend, BackendKind, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use crate::bodies::{self, Body, BodyForce, Coupling};
use crate::detail::{self, DetailDriver, DetailParams, DetailTexels, DetailWindow};
use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use crate::ledger::MassLedger;
use crate::params::{Boundary, CrossSection, NeighbourMode, Params, LONGEST_STEP};
use crate::pipes::{edge_cell_count, StepConstants};
use crate::quanta::{quantum_volume, DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
use crate::state::{Snapshot, State};
use crate::frame::FrameReport;
use crate::save::SavedState;
use crate::sources::{Source, SourceId, MAX_SOURCE_RATE};

use std::collections::HashMap;
use std::sync::Arc;

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
}

/// A GPU device lost under a running simulation, and where its water went: the simulation took
/// the lost backend's recovery point (the whole state of a recent frame, which the backend copies
/// to the host at a bounded rate, or a newer snapshot that covers every cell) and goes on on the
/// next backend — Godot's RenderingDevice → wgpu (a fresh device) → CPU — with its sources, clock
/// and the ledger counters of that point.
pub struct DeviceLoss {
    /// The backend whose device was lost.
    pub from: BackendKind,
    /// The backend the water runs on now.
    pub to: BackendKind,
    /// What the lost backend reported.
    pub reason: Error,
    /// Frame the recovered water shows (the backend's recovery point,
    /// [`crate::backend::recovery`]), and the frame the simulation had reached: what the frames
    /// between did (their flow, their edits, what their sources and edges added) is lost, along
    /// with edits queued on the device. A GPU backend keeps a recovery point at most
    /// [`crate::backend::recovery::recovery_interval_frames`] frames old, plus its readback
    /// latency.
    pub recovered_frame: u64,
    /// See `recovered_frame`.
    pub frame: u64,
    /// Whether the recovered water is the device's own state of that frame, every field exact
    /// (`true`), or rebuilt from a snapshot's texels that covered every cell (`false`: depths
    /// exact below 16 m, pipe flows from the cells' velocities).
    pub exact: bool,
    /// Water in the recovered state minus the recovery point's exact total, m³: 0 for an exact
    /// point; for one rebuilt from texels, the depths' rounding. The ledger's initial total
    /// absorbs it, so the mass identity keeps holding.
    pub difference_m3: f64,
    /// The lost backend, kept so that an engine can let go of what shows its resources (a
    /// texture on Godot's device) before it is dropped with this notice.
    pub retired: Box<dyn Backend>,
}

impl std::fmt::Debug for DeviceLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceLoss")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("reason", &self.reason)
            .field("recovered_frame", &self.recovered_frame)
            .field("frame", &self.frame)
            .field("exact", &self.exact)
            .field("difference_m3", &self.difference_m3)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for DeviceLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |kind: BackendKind| match kind {
            BackendKind::EngineGpu => "the engine's GPU device",
            BackendKind::Gpu => "the wgpu device",
            BackendKind::Cpu => "the CPU",
        };
        let why = match &self.reason {
            Error::DeviceLost(why) => why.clone(),
            other => other.to_string(),
        };
        write!(
            f,
            "{} was lost ({why}); the water goes on on {} from {} of frame {} (the simulation was at frame {}: what the {} frames between did is lost), {:+.3} m³ from that point's total",
            name(self.from),
            name(self.to),
            if self.exact { "the device's whole state" } else { "a snapshot of every cell" },
            self.recovered_frame,
            self.frame,
            self.frame.saturating_sub(self.recovered_frame),
            self.difference_m3
        )
    }
}

impl Simulation {
    /// Creates a simulation of `state` with `params` on the preferred backend.
    pub fn new(state: State, params: Params, preference: BackendPreference) -> Result<Self> {
        check_state(&state, &params)?;
        let (backend, gpu_unavailable) = create_backend(&state, preference)?;
        Ok(Simulation::assemble(state, params, backend, gpu_unavailable))
    }

    /// Creates a simulation of `state` with `params` on a backend that `make` builds from the
    /// state: for backends that live outside this crate (a game engine's own GPU device).
    pub fn with_backend(state: State, params: Params, make: impl FnOnce(&State) -> Result<Box<dyn Backend>>) -> Result<Self> {
        check_state(&state, &params)?;
        let backend = make(&state)?;
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
        self.switch_backend(|state| {
            let (backend, why) = create_backend(state, preference)?;
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

    /// Makes the GPU device the simulation runs on lost, as a driver reset would
    /// ([`Backend::simulate_device_loss`]): the next call that reaches the device moves the water
    /// to the next backend and records a [`DeviceLoss`]. On wgpu the process-wide device goes,
    /// so every wgpu simulation moves; a new one gets a fresh device. False on the CPU.
    pub fn simulate_device_loss(&mut self) -> bool {
        self.backend.simulate_device_loss()
    }

    /// The device losses since the last call, oldest first. An engine warns about each, and lets
    /// go of whatever shows the lost backend's resources before dropping the notice (which drops
    /// the backend).
    pub fn take_device_losses(&mut self) -> Vec<DeviceLoss> {
        std::mem::take(&mut self.device_losses)
    }

    /// Runs `call` on the backend. When the backend's device has failed ([`Error::is_device_failure`]),
    /// moves the water to the next backend ([`Simulation::recover`]) and runs `call` there.
    fn on_backend<T>(&mut self, call: impl Fn(&mut dyn Backend) -> Result<T>) -> Result<T> {
        match call(self.backend.as_mut()) {
            Err(e) if e.is_device_failure() && self.backend.kind() != BackendKind::Cpu => {
                self.recover(e)?;
                call(self.backend.as_mut())
            }
            result => result,
        }
    }

    /// Moves the water of the lost backend's recovery point ([`Backend::recovery_point`]) to the
    /// next backend: Godot's RenderingDevice goes on on wgpu (a fresh device) where one exists,
    /// wgpu on the CPU. The ledger keeps the point's counters; for a point rebuilt from texels its
    /// initial total absorbs what the rebuilt state differs from the point's exact total, so the
    /// mass identity keeps holding. Records a [`DeviceLoss`].
    fn recover(&mut self, reason: Error) -> Result<()> {
        let from = self.backend.kind();
        let Some(point) = self.backend.recovery_point() else { return Err(reason) };
        let recovered_frame = point.frame();
        let (state, counters, difference, exact) = match point {
            RecoveryPoint::Exact(point) => (point.state.clone(), point.counters, 0, true),
            RecoveryPoint::Snapshot(snapshot) => {
                let state = State::from_snapshot(&snapshot, &self.params);
                let difference = state.total_quanta() - snapshot.total_quanta;
                (state, snapshot.counters, difference, false)
            }
        };
        let gpu = match from {
            BackendKind::EngineGpu => gpu_backend(&state).ok(),
            BackendKind::Gpu | BackendKind::Cpu => None,
        };
        let mut next = gpu.unwrap_or_else(|| Box::new(CpuBackend::new(&state)));
        if next.restore(&state, counters, self.frames).is_err() {
            next = Box::new(CpuBackend::new(&state));
            next.restore(&state, counters, self.frames)?;
        }
        self.initial_total += difference;
        next.set_sleeping(self.sleeping);
        let retired = std::mem::replace(&mut self.backend, next);
        // The detail waves start again at rest on the new backend; one without the layer
        // turns it off rather than stopping the water.
        if let Some(detail) = &mut self.detail {
            match self.backend.configure_detail(Some(detail.layout())) {
                Ok(()) => detail.restart(),
                Err(_) => self.detail = None,
            }
        }
        self.device_losses.push(DeviceLoss {
            from,
            to: self.backend.kind(),
            reason,
            recovered_frame,
            frame: self.frames,
            exact,
            difference_m3: difference as f64 * self.quantum_volume(),
            retired,
        });
        Ok(())
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

    /// Volume of one depth quantum in one cell, m³.
    pub fn quantum_volume(&self) -> f64 {
        quantum_volume(self.grid.cell_size)
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
        if substeps == 0 {
            return Ok(());
        }
        let frame_time = step as f64 * substeps as f64;
        let qv = self.quantum_volume();
        let mut inflow_quanta = [0i32; 4];
        for (e, boundary) in self.params.boundaries.iter().enumerate() {
            if let Boundary::Inflow { rate } = *boundary {
                let cells = edge_cell_count(self.grid.width, self.grid.height, e) as f64 * substeps as f64;
                let owed = rate as f64 * frame_time / qv + self.inflow_carry[e];
                let wanted = (owed / cells).floor();
                let per_cell = wanted.clamp(0.0, MAX_DEPTH_QUANTA as f64);
                inflow_quanta[e] = per_cell as i32;
                // What a cell cannot hold in one step is not owed later (steps past LONGEST_STEP).
                self.inflow_carry[e] = if per_cell < wanted { 0.0 } else { owed - per_cell * cells };
            } else {
                self.inflow_carry[e] = 0.0;
            }
        }
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
        self.frames += 1;
        self.elapsed += frame_time;
        let per_step_gain = forcing.iter().map(|f| f.quanta.max(0)).max().unwrap_or(0) as f32 + inflow_quanta.iter().map(|&q| q as f32).sum::<f32>();
        self.recent_gain = [0.0, self.recent_gain[0] + per_step_gain * substeps as f32 * DEPTH_QUANTUM, self.recent_gain[1]];
        Ok(())
    }

    /// Splits `quanta` over a footprint in proportion to its weights, exactly (largest remainder):
    /// (cell, quanta) pairs that sum to `quanta`, before any check against what a cell holds.
    ///
    /// The shares of a request far beyond what the footprint holds (10⁹ m³ on 1 mm cells is
    /// 10²¹ quanta, saturated to `i64::MAX` on the way in) are rounded in `f64` and may sum to
    /// more than an `i64` holds, so they are summed and balanced in `i128`; a share saturates
    /// rather than wrapping. Callers refuse or clip any share past [`MAX_DEPTH_QUANTA`].
    fn distribute(&self, footprint: &[(u32, f32)], quanta: i64) -> Vec<(u32, i64)> {
        let total_weight: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
        let mut shares: Vec<(u32, i64, f64)> = footprint
            .iter()
            .map(|&(cell, w)| {
                let exact = quanta as f64 * w as f64 / total_weight;
                (cell, exact.floor() as i64, exact - exact.floor())
            })
            .collect();
        // Positive: quanta still to hand out, largest remainders first; negative: the floors
        // rounded up past the request (f64 rounding), taken back from the smallest remainders.
        let mut left = quanta as i128 - shares.iter().map(|s| s.1 as i128).sum::<i128>();
        let mut order: Vec<usize> = (0..shares.len()).collect();
        order.sort_by(|&a, &b| shares[b].2.total_cmp(&shares[a].2));
        for &i in order.iter().cycle().take(shares.len() * 2) {
            if left <= 0 {
                break;
            }
            shares[i].1 = shares[i].1.saturating_add(1);
            left -= 1;
        }
        for &i in order.iter().rev().cycle().take(shares.len() * 2) {
            if left >= 0 {
                break;
            }
            if shares[i].1 > 0 {
                shares[i].1 -= 1;
                left += 1;
            }
        }
        shares.into_iter().map(|(cell, q, _)| (cell, q)).collect()
    }

    /// The largest volume (m³) whose share for the heaviest cell of `footprint` is the
    /// [`MAX_DEPTH`] a cell holds, rounded down to six significant digits.
    fn largest_fitting_volume(&self, footprint: &[(u32, f32)]) -> f64 {
        let total_weight: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
        let heaviest = footprint.iter().map(|&(_, w)| w as f64).fold(0.0, f64::max);
        let fits = MAX_DEPTH_QUANTA as f64 * self.quantum_volume() * total_weight / heaviest;
        let scale = 10f64.powi(5 - fits.log10().floor() as i32);
        (fits * scale).floor() / scale
    }

    pub(crate) fn check_edit(&self, volume: f32, radius: f32) -> Result<()> {
        check_range("volume", volume, 0.0, MAX_EDIT_VOLUME)?;
        let [ex, ez] = self.grid.extent();
        check_range("radius", radius, 0.0, ex.max(ez) * 2.0)?;
        Ok(())
    }

    pub(crate) fn check_point(x: f32, z: f32) -> Result<()> {
        if !(x.is_finite() && z.is_finite()) {
            return Err(Error::invalid("position", format!("({x}, {z})"), "finite coordinates"));
        }
        Ok(())
    }

    /// Validates a water edit and splits `volume` (rounded to whole quanta) over the footprint of
    /// radius `radius` around local `(x, z)`: (cell, quanta) pairs. `None` when there is nothing
    /// to do.
    fn water_edit_shares(&self, x: f32, z: f32, volume: f32, radius: f32) -> Result<Option<Vec<(u32, i64)>>> {
        Self::check_point(x, z)?;
        self.check_edit(volume, radius)?;
        let footprint = self.grid.footprint(x, z, radius);
        if footprint.is_empty() || volume == 0.0 {
            return Ok(None);
        }
        // Saturates past i64::MAX quanta (10⁹ m³ on cells under 3 cm): far more than the
        // footprint holds, which adding refuses and removing clips to what is there.
        let quanta = (volume as f64 / self.quantum_volume()).round() as i64;
        Ok(Some(self.distribute(&footprint, quanta)))
    }

    /// Adds `volume` m³ of water around local point `(x, z)` within `radius` m. Returns the volume
    /// that arrives: the request rounded to whole quanta (within one quantum volume per cell),
    /// less what does not fit where cells would pass [`MAX_DEPTH`] (they fill to it; the ledger
    /// counts what entered). 0 when the footprint misses the grid.
    ///
    /// Fails, adding nothing, when the request itself cannot fit: a share of more than
    /// [`MAX_DEPTH`] m of water for one cell even if it were dry (the error names the limit and
    /// the largest volume that fits in that footprint).
    ///
    /// On a GPU backend the edit is applied with the next frame. While the newest snapshot shows
    /// water shallower than [`EXACT_EDIT_DEPTH`] everywhere, no cell can fill up and the request
    /// is what arrives; deeper, the call waits for the device and returns the exact figure.
    pub fn add_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<f64> {
        let Some(shares) = self.water_edit_shares(x, z, volume, radius)? else { return Ok(0.0) };
        if let Some(&(cell, most)) = shares.iter().max_by_key(|s| s.1).filter(|s| s.1 > MAX_DEPTH_QUANTA as i64) {
            // From the weights, not from `most`: a request past i64::MAX quanta saturated.
            let depth = volume as f64 / self.grid.cell_area() as f64 * most as f64 / shares.iter().map(|s| s.1 as f64).sum::<f64>();
            let fits = self.largest_fitting_volume(&self.grid.footprint(x, z, radius));
            let (cx, cy) = (cell % self.grid.width, cell / self.grid.width);
            return Err(Error::invalid(
                "volume",
                format!("{volume} m³"),
                format!(
                    "0 ..= {fits} m³ within radius {radius} m here: it would put {depth:.1} m of water on cell ({cx}, {cy}), past the {MAX_DEPTH} m a cell holds (spread it over a larger radius)"
                ),
            ));
        }
        let cells: Vec<CellWater> = shares.into_iter().map(|(cell, q)| CellWater { cell, quanta: q as i32 }).collect();
        self.add_cells(&cells)
    }

    /// Adds water cell by cell (positive quanta, each at most [`MAX_DEPTH_QUANTA`]); returns the
    /// volume that arrives, m³.
    fn add_cells(&mut self, cells: &[CellWater]) -> Result<f64> {
        self.change_water(cells)
    }

    /// Changes water cell by cell (positive quanta add, negative remove, never more than is
    /// there) through the backend's edits, so that the ledger counts every quantum. Returns the
    /// net volume, m³: added minus removed. A GPU backend applies the edits before its next step
    /// (or [`Simulation::apply_edits`]); its figure is then what was asked for, the removals
    /// limited to what the newest snapshot says is there, and the ledger gets the exact figures
    /// from the device.
    pub(crate) fn change_water(&mut self, cells: &[CellWater]) -> Result<f64> {
        // Deeper water shortens the stable step before a snapshot shows it.
        let peak = cells.iter().map(|c| c.quanta).max().unwrap_or(0).max(0);
        self.recent_gain[0] += peak as f32 * DEPTH_QUANTUM;
        let requested: i64 = cells.iter().map(|c| c.quanta.max(0) as i64).sum();
        // A GPU applies the edit later: where cells may be near the limit, the device's ledger
        // says what really entered.
        let before = if requested > 0 && self.backend.kind() != BackendKind::Cpu && self.may_be_near_depth_limit() {
            Some(self.on_backend(|b| b.read_counters())?)
        } else {
            None
        };
        let quanta = match (self.on_backend(|b| b.edit_water(cells))?, before) {
            (EditOutcome::Applied { added, removed }, _) => added as f64 - removed as f64,
            (EditOutcome::Queued, Some(before)) => {
                let after = self.on_backend(|b| b.read_counters())?;
                // The counters count modulo 2⁶⁴ ([`Counters::net`]).
                after.added.wrapping_sub(before.added) as f64 - after.removed.wrapping_sub(before.removed) as f64
            }
            (EditOutcome::Queued, None) => {
                let snapshot = self.backend.snapshot();
                let removed: f64 = cells
                    .iter()
                    .filter(|c| c.quanta < 0)
                    .map(|c| {
                        let there = snapshot.as_ref().map_or(0.0, |s| s.height[c.cell as usize][1] as f64 / DEPTH_QUANTUM as f64);
                        (-c.quanta as f64).min(there.floor())
                    })
                    .sum();
                requested as f64 - removed
            }
        };
        Ok(quanta * self.quantum_volume())
    }

    /// Whether some cell may hold more than [`EXACT_EDIT_DEPTH`] of water: the newest snapshot's
    /// deepest water plus what edits, sources and inflow added since (no snapshot: maybe).
    fn may_be_near_depth_limit(&mut self) -> bool {
        let deepest = self.backend.snapshot().map_or(f32::INFINITY, |s| s.max_depth);
        deepest + self.recent_gain.iter().sum::<f32>() > EXACT_EDIT_DEPTH
    }

    /// Changes terrain cell by cell through the backend's edits (water depth is kept).
    pub(crate) fn change_terrain(&mut self, cells: &[CellTerrain]) -> Result<()> {
        self.on_backend(|b| b.edit_terrain(cells))
    }

    /// Replaces the terrain everywhere (validated), keeping the water depth and the reset point:
    /// what an edit of the ground does, exactly (no float arithmetic on the heights).
    pub(crate) fn replace_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        crate::state::check_terrain(&self.grid, terrain)?;
        self.on_backend(|b| b.set_terrain(terrain))
    }

    /// Applies the edits a GPU backend has queued (water, terrain, the bodies' displacement) and
    /// brings its outputs (snapshot, textures) up to date, without stepping: for an editor or a
    /// paused game that must show an edit at once. On the CPU edits apply as they are made and
    /// this does nothing.
    pub fn apply_edits(&mut self) -> Result<()> {
        if self.backend.kind() == BackendKind::Cpu {
            return Ok(());
        }
        let step = self.last_report.step.max(MIN_STEP);
        let constants = StepConstants::new(&self.params, self.grid.width, self.grid.height, self.grid.cell_size, step, [0; 4]);
        let plan = FramePlan { constants, substeps: 0, forcing: &[] };
        self.on_backend(|b| b.advance(&plan))
    }

    /// Removes up to `volume` m³ of water around local point `(x, z)` within `radius` m, never
    /// more than is there. Returns the volume removed (on a GPU backend, the volume the newest
    /// snapshot says is there to remove; the ledger gets the exact figure from the device). A
    /// snapshot that holds only the tiles queries read (Godot's RenderingDevice backend) shows
    /// other cells at their depth of the last load, so there the figure is bounded by those
    /// depths, not exact; [`Simulation::paint_water`] likewise.
    pub fn remove_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<f64> {
        let Some(shares) = self.water_edit_shares(x, z, volume, radius)? else { return Ok(0.0) };
        // No cell holds more than MAX_DEPTH_QUANTA: asking for more removes all it has.
        let cells: Vec<CellWater> = shares.into_iter().map(|(cell, q)| CellWater { cell, quanta: -(q.min(MAX_DEPTH_QUANTA as i64) as i32) }).collect();
        Ok(-self.change_water(&cells)?)
    }

    /// Fills the basin around local point `(x, z)` with still water up to `level` (local Y, m),
    /// as if water were poured there until its surface stood at `level`: every cell reachable
    /// from the point's cell through cells whose terrain lies below `level` (diagonal steps
    /// included in eight-neighbour mode, where water takes them too) gets water up to that
    /// surface. Water is only added, never removed. Returns the volume added, m³ (0 when the
    /// point's ground is at or above `level`).
    ///
    /// Fails, adding nothing, when `level` stands more than [`MAX_DEPTH`] above the lowest ground
    /// of the basin (the error names the limit and the highest level that fits).
    ///
    /// Reads the current state, waiting for the device on a GPU backend: meant for setting up a
    /// level or answering a player's action, not for every frame. A basin that reaches an open
    /// edge fills and then drains through it.
    pub fn fill_basin(&mut self, x: f32, z: f32, level: f32) -> Result<f64> {
        Self::check_point(x, z)?;
        check_range("level", level, -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS)?;
        let Some((cx, cy)) = self.grid.cell_at(x, z) else {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point over the grid"));
        };
        let state = self.on_backend(|b| b.read_state())?;
        self.fill_basin_from(&state, (cx, cy), level)
    }

    /// Fills the basin of `state` connected to cell `start` up to `level` (see
    /// [`basin_fill`]); returns the volume added, m³.
    pub(crate) fn fill_basin_from(&mut self, state: &State, start: (u32, u32), level: f32) -> Result<f64> {
        let cells = basin_fill(state, start, level, self.diagonal())?;
        if cells.is_empty() {
            return Ok(0.0);
        }
        self.add_cells(&cells)
    }

    /// Whether water takes diagonal steps (eight-neighbour mode).
    pub(crate) fn diagonal(&self) -> bool {
        self.params.neighbours == NeighbourMode::Eight
    }

    /// Raises (positive) or digs (negative) the terrain by up to `delta_height` m around local
    /// point `(x, z)`, with a smooth falloff to zero at `radius`. Water depth is kept.
    pub fn modify_terrain(&mut self, x: f32, z: f32, delta_height: f32, radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        check_range("delta_height", delta_height, -MAX_TERRAIN_DELTA, MAX_TERRAIN_DELTA)?;
        self.check_edit(0.0, radius)?;
        let cells: Vec<CellTerrain> =
            self.grid.footprint(x, z, radius).into_iter().map(|(cell, w)| CellTerrain { cell, delta: delta_height * w }).collect();
        self.on_backend(|b| b.edit_terrain(&cells))
    }

    /// Replaces the terrain everywhere (validated), keeping the water depth. Refused when a
    /// fixed-level edge would then stand more than [`MAX_DEPTH`] above the ground along it.
    pub fn set_terrain(&mut self, terrain: &[f32]) -> Result<()> {
        crate::state::check_terrain(&self.grid, terrain)?;
        check_edge_limits(&self.params, self.grid, terrain)?;
        self.on_backend(|b| b.set_terrain(terrain))?;
        self.initial.terrain.copy_from_slice(terrain);
        self.apply_initial_velocity();
        Ok(())
    }

    /// Sets the velocity the water has at the start and after every [`Simulation::reset`]:
    /// `velocity[i]` (m/s, local X and Z) for cell `i` in row-major order, each component within
    /// ±[`MAX_INITIAL_SPEED`]. It is turned into pipe fluxes ([`State::set_velocity`]) once, on
    /// the CPU, and the simulation restarts from the reset point with it, so every backend starts
    /// from the same fluxes. Meant for setting up a level (a river already flowing), not for
    /// every frame.
    pub fn set_initial_velocity(&mut self, velocity: &[[f32; 2]]) -> Result<()> {
        if velocity.len() != self.grid.cell_count() {
            return Err(Error::WrongLength { name: "velocity", expected: self.grid.cell_count(), actual: velocity.len() });
        }
        for v in velocity.iter().flatten() {
            check_range("velocity", *v, -MAX_INITIAL_SPEED, MAX_INITIAL_SPEED)?;
        }
        self.initial_velocity = Some(velocity.to_vec());
        self.apply_initial_velocity();
        self.reset()
    }

    /// Sets a uniform current of `velocity` (m/s, local X and Z) at the start and after every
    /// reset in the cells whose centres lie within the local rectangle from `min` to `max`
    /// (X, Z; m), keeping the initial velocity of the other cells (zero unless set), then
    /// restarts from the reset point like [`Simulation::set_initial_velocity`].
    pub fn set_initial_current(&mut self, min: [f32; 2], max: [f32; 2], velocity: [f32; 2]) -> Result<()> {
        Self::check_point(min[0], min[1])?;
        Self::check_point(max[0], max[1])?;
        for v in velocity {
            check_range("velocity", v, -MAX_INITIAL_SPEED, MAX_INITIAL_SPEED)?;
        }
        let g = self.grid;
        let mut field = self.initial_velocity.clone().unwrap_or_else(|| vec![[0.0; 2]; g.cell_count()]);
        for y in 0..g.height {
            for x in 0..g.width {
                let [px, pz] = g.cell_centre(x, y);
                if px >= min[0].min(max[0]) && px <= min[0].max(max[0]) && pz >= min[1].min(max[1]) && pz <= min[1].max(max[1]) {
                    field[g.index(x, y)] = velocity;
                }
            }
        }
        self.set_initial_velocity(&field)
    }

    /// Rewrites the reset point's fluxes from the initial velocity, when one is set.
    fn apply_initial_velocity(&mut self) {
        if let Some(field) = &self.initial_velocity {
            let w = self.grid.width;
            self.initial.set_velocity(&self.params, |x, y| field[(y * w + x) as usize]);
        }
    }

    /// Adds a source (`rate` > 0) or drain (`rate` < 0) of `|rate|` m³/s spread over the cells
    /// within `radius` m of local point `(x, z)`. A drain never removes more than is there; a
    /// source stops adding to a cell that holds [`MAX_DEPTH`] (the ledger counts what entered).
    ///
    /// Refused when the rate itself cannot fit: more than [`MAX_DEPTH`] m of water for its
    /// heaviest cell within one step of up to [`LONGEST_STEP`] s (the error names the limit
    /// and the largest rate for that footprint).
    pub fn add_source(&mut self, x: f32, z: f32, rate: f32, radius: f32) -> Result<SourceId> {
        Self::check_point(x, z)?;
        check_range("rate", rate, -MAX_SOURCE_RATE, MAX_SOURCE_RATE)?;
        self.check_edit(0.0, radius)?;
        let cells = self.source_cells(x, z, radius)?;
        self.check_source_rate(rate, &cells)?;
        let id = SourceId(self.next_source_id);
        // Only a state restored from a crafted save starts this near the end of the ids.
        let Some(next) = self.next_source_id.checked_add(1) else {
            return Err(Error::invalid("source id", self.next_source_id, format!("1 ..= {}: every source id has been used (remove sources and restart from a state with fewer)", u32::MAX - 1)));
        };
        self.next_source_id = next;
        self.sources.push(Source { id, cells, rate, carry: 0.0 });
        Ok(id)
    }

    /// Moves a source or drain to local point `(x, z)` with a new `radius` (m), keeping its id,
    /// rate and remainder. False when no such source exists.
    pub fn move_source(&mut self, id: SourceId, x: f32, z: f32, radius: f32) -> Result<bool> {
        Self::check_point(x, z)?;
        self.check_edit(0.0, radius)?;
        let cells = self.source_cells(x, z, radius)?;
        let Some(index) = self.sources.iter().position(|s| s.id == id) else { return Ok(false) };
        // A smaller footprint gives its heaviest cell a larger share of the same rate.
        self.check_source_rate(self.sources[index].rate, &cells)?;
        self.sources[index].cells = cells;
        Ok(true)
    }

    /// The cells of a source within `radius` m of local `(x, z)` and their shares of its rate.
    fn source_cells(&self, x: f32, z: f32, radius: f32) -> Result<Vec<(u32, f64)>> {
        let footprint = self.grid.footprint(x, z, radius);
        if footprint.is_empty() {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point whose radius reaches the grid"));
        }
        let total: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
        Ok(footprint.into_iter().map(|(c, w)| (c, w as f64 / total)).collect())
    }

    /// Changes the rate of a source, m³/s (refused like [`Simulation::add_source`]'s). False
    /// when no such source exists.
    pub fn set_source_rate(&mut self, id: SourceId, rate: f32) -> Result<bool> {
        check_range("rate", rate, -MAX_SOURCE_RATE, MAX_SOURCE_RATE)?;
        let Some(index) = self.sources.iter().position(|s| s.id == id) else { return Ok(false) };
        self.check_source_rate(rate, &self.sources[index].cells)?;
        self.sources[index].rate = rate;
        Ok(true)
    }

    /// Refuses a source or drain rate that would move more than [`MAX_DEPTH`] m of water in or out
    /// of its heaviest cell (`cells`: cells and shares) in one step of [`LONGEST_STEP`] s.
    fn check_source_rate(&self, rate: f32, cells: &[(u32, f64)]) -> Result<()> {
        let share = cells.iter().map(|&(_, share)| share).fold(0.0, f64::max);
        let area = self.grid.cell_area() as f64;
        let per_step = rate.abs() as f64 * share * LONGEST_STEP as f64 / area;
        if per_step <= MAX_DEPTH as f64 {
            return Ok(());
        }
        let fits = (MAX_DEPTH as f64 * area / (share * LONGEST_STEP as f64) * 1000.0).floor() / 1000.0;
        Err(Error::invalid(
            "rate",
            format!("{rate} m³/s"),
            format!(
                "-{fits} ..= {fits} m³/s for this footprint: its heaviest cell takes {:.1} % of the rate, and a cell may gain at most the {MAX_DEPTH} m of water it holds in one step of up to {LONGEST_STEP} s (spread it over a larger radius)",
                share * 100.0
            ),
        ))
    }

    /// Removes a source. False when no such source exists.
    pub fn remove_source(&mut self, id: SourceId) -> bool {
        let before = self.sources.len();
        self.sources.retain(|s| s.id != id);
        self.sources.len() != before
    }

    /// Ids of the sources and drains in place.
    pub fn source_ids(&self) -> Vec<SourceId> {
        self.sources.iter().map(|s| s.id).collect()
    }

    /// The state [`Simulation::reset`] restores: the one the simulation was created or loaded
    /// with, terrain from the last [`Simulation::set_terrain`], initial velocity applied.
    pub fn reset_state(&self) -> &State {
        &self.initial
    }

    /// Restores the state the simulation was created with (terrain from the last
    /// [`Simulation::set_terrain`]), zeroes the ledger and the clock. Sources are kept.
    pub fn reset(&mut self) -> Result<()> {
        let initial = self.initial.clone();
        self.on_backend(|b| b.load(&initial))?;
        self.pending_nudges.clear();
        if let Some(detail) = &mut self.detail {
            detail.restart();
        }
        self.initial_total = self.initial.total_quanta();
        self.inflow_carry = [0.0; 4];
        for s in &mut self.sources {
            s.carry = 0.0;
        }
        self.elapsed = 0.0;
        self.carried_time = 0.0;
        self.recent_gain = [0.0; 3];
        Ok(())
    }

    /// Replaces the whole state (a new terrain and water) and the reset point.
    pub fn load(&mut self, state: State) -> Result<()> {
        if state.grid != self.grid {
            return Err(Error::invalid("state grid", format!("{:?}", state.grid), format!("{:?}", self.grid)));
        }
        check_state(&state, &self.params)?;
        self.initial = state;
        self.initial_velocity = None;
        self.reset()
    }

    /// The complete water state as bytes, to be given back to [`Simulation::restore_state`]:
    /// parameters, terrain as edited, depth, fluxes, sources and drains with their remainders,
    /// inflow remainders, the ledger and the clock. The format is described in [`crate::save`];
    /// it is the same for every backend, so a state saved on the GPU restores on the CPU and
    /// the other way round. The reset point ([`Simulation::reset`]) is not part of it.
    ///
    /// Reads the current state, waiting for the device on a GPU backend (edits queued so far are
    /// applied first): meant for saving a game, not for every frame. About 24 bytes per cell.
    pub fn save_state(&mut self) -> Result<Vec<u8>> {
        let state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        let saved = SavedState {
            params: self.params,
            frames: self.frames,
            elapsed: self.elapsed,
            last_report: self.last_report,
            recent_gain: self.recent_gain,
            initial_total: self.initial_total,
            counters,
            inflow_carry: self.inflow_carry,
            next_source_id: self.next_source_id,
            sources: self.sources.clone(),
            state,
        };
        Ok(saved.encode())
    }

    /// Replaces the water state with one from [`Simulation::save_state`]: the run goes on
    /// exactly where the saved one stopped. Parameters, fields, sources and drains (with their
    /// ids), remainders, ledger and clock all come from `bytes`; the backend and the reset point
    /// stay this simulation's.
    ///
    /// On the CPU backend a restored run gives bit-identical results to one that never stopped.
    /// On a GPU backend the fields and ledger are restored exactly; later frames agree with an
    /// uninterrupted run within the GPU's rounding (see `tests/gpu_agreement.rs`).
    ///
    /// Fails with [`Error::InvalidSave`], leaving this simulation untouched, when `bytes` is not
    /// a PipeWater state, is truncated or corrupt, comes from a newer format version, holds
    /// values out of range, or was saved for another grid (size or cell size).
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<()> {
        let saved = SavedState::decode(bytes)?;
        let g = saved.state.grid;
        if g != self.grid {
            return Err(Error::InvalidSave(format!(
                "it was saved for a {}x{} grid of {} m cells; this simulation has {}x{} cells of {} m",
                g.width, g.height, g.cell_size, self.grid.width, self.grid.height, self.grid.cell_size
            )));
        }
        check_edge_limits(&saved.params, g, &saved.state.terrain).map_err(|e| Error::InvalidSave(format!("its parameters do not fit its terrain: {e}")))?;
        self.on_backend(|b| b.restore(&saved.state, saved.counters, saved.frames))?;
        self.pending_nudges.clear();
        if let Some(detail) = &mut self.detail {
            detail.restart();
        }
        self.params = saved.params;
        self.initial_total = saved.initial_total;
        self.sources = saved.sources;
        self.next_source_id = saved.next_source_id;
        self.inflow_carry = saved.inflow_carry;
        self.recent_gain = saved.recent_gain;
        self.frames = saved.frames;
        self.elapsed = saved.elapsed;
        self.last_report = saved.last_report;
        Ok(())
    }

    /// Couples `bodies` (in this grid's local frame) with the water for the coming frame of
    /// `frame_dt` seconds, water being `density` kg/m³ ([`crate::bodies`]): replaces the
    /// displacement of last frame's bodies with theirs, queues their drag on the water, and
    /// returns the forces the water puts on each body (or why that body was left out). Call it
    /// once per frame before [`Simulation::advance`], with every body (an empty list takes the
    /// last ones out). Reads the newest snapshot, so on a GPU the bodies see water one or two
    /// frames old.
    pub fn couple_bodies(&mut self, bodies: &[Body], frame_dt: f32, density: f32) -> Result<Vec<Result<BodyForce>>> {
        check_range("frame_dt", frame_dt, 0.0, MAX_FRAME_DELTA)?;
        check_range("density", density, 1.0, 1.0e5)?;
        if bodies.is_empty() {
            self.on_backend(|b| b.set_displacement(&[]))?;
            self.apply_detail_pressure(&[], &[]);
            return Ok(Vec::new());
        }
        let cells = bodies::cells_to_read(&self.grid, bodies);
        if !cells.is_empty() {
            self.backend.want_cells(&cells);
        }
        let Some(snapshot) = self.backend.snapshot() else {
            self.on_backend(|b| b.set_displacement(&[]))?;
            self.apply_detail_pressure(&[], &[]);
            return Ok(bodies.iter().map(|b| b.check().map(|_| BodyForce::default())).collect());
        };
        let coupling = bodies::couple(&snapshot, bodies, frame_dt, density, self.params.gravity);
        self.apply_coupling(&coupling)?;
        let mut forces = coupling.forces;
        self.apply_detail_pressure(bodies, &forces);
        for (force, body) in forces.iter_mut().zip(bodies) {
            if let Ok(f) = force {
                if body.rides_detail_waves {
                    self.ride_detail(body, f, density);
                }
            }
        }
        Ok(forces)
    }

    /// Puts the pressure of `bodies` on the detail waves ([`detail::hulls::hull_pressure`]) for the
    /// next frame, at the water levels their coupling found (`forces`, one per body, as
    /// [`bodies::couple`] returns them); an empty list takes it away. [`Simulation::couple_bodies`]
    /// does this itself; engines that couple with [`bodies::couple`] and
    /// [`Simulation::apply_coupling`] call it after. Nothing while the layer is off.
    pub fn apply_detail_pressure(&mut self, bodies: &[Body], forces: &[Result<BodyForce>]) {
        let Some(driver) = &mut self.detail else { return };
        let levels: Vec<Option<f32>> = forces.iter().map(|f| f.as_ref().ok().and_then(|f| f.water_level)).collect();
        let pressure = detail::hulls::hull_pressure(&driver.window(), bodies, &levels, driver.params().hull_strength);
        driver.set_pressure(pressure);
    }

    /// Adds to `force` what the detail waves over `body`'s waterplane push on it
    /// ([`detail::hulls::riding_force`]).
    fn ride_detail(&mut self, body: &Body, force: &mut BodyForce, density: f32) {
        let (Some(driver), Some(level)) = (&self.detail, force.water_level) else { return };
        let window = driver.current_window();
        let cells = detail::hulls::waterplane(&window, body, level);
        if cells.is_empty() {
            return;
        }
        let heights = self.backend.detail_heights(&cells);
        let (lift, torque) = detail::hulls::riding_force(&window, body, level, &cells, &heights, density, self.params.gravity);
        force.force += lift;
        force.torque += torque;
    }

    /// Applies a coupling computed by [`bodies::couple`]: its displacement replaces the last
    /// one, its nudges join the frame's.
    pub fn apply_coupling(&mut self, coupling: &Coupling) -> Result<()> {
        self.on_backend(|b| b.set_displacement(&coupling.displacement))?;
        for n in &coupling.nudges {
            bodies::merge_nudge(&mut self.pending_nudges, n.cell, n.weight, [n.velocity_x, n.velocity_y]);
        }
        Ok(())
    }

    /// Drags the water within `radius` m of local `(x, z)` towards `velocity` (m/s along local X
    /// and Z) in the next frame: fully at the centre, fading smoothly to nothing at `radius`. A
    /// paddle calls it every frame; an explosion calls it once per direction. Only momentum
    /// moves, never water. A point off the grid reaches the cells its radius overlaps.
    pub fn push_water(&mut self, x: f32, z: f32, velocity: [f32; 2], radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        let [ex, ez] = self.grid.extent();
        check_range("radius", radius, 0.0, ex.max(ez) * 2.0)?;
        for (axis, v) in ["velocity x", "velocity z"].into_iter().zip(velocity) {
            check_range(axis, v, -bodies::MAX_BODY_SPEED, bodies::MAX_BODY_SPEED)?;
        }
        if radius == 0.0 {
            return Ok(());
        }
        for (cell, weight) in self.grid.footprint(x, z, radius) {
            bodies::merge_nudge(&mut self.pending_nudges, cell, weight, velocity);
        }
        Ok(())
    }

    // ---- Detail waves ------------------------------------------------------------------------

    /// Turns the detail wave layer ([`crate::detail`]) on with `params` (validated) or off
    /// (`None`). Changing the window or the subdivision puts the waves at rest; the other settings
    /// apply from the next frame. On error (bad settings, a backend that cannot allocate the
    /// window) the layer stays as it was.
    pub fn set_detail(&mut self, params: Option<DetailParams>) -> Result<()> {
        let Some(params) = params else {
            self.backend.configure_detail(None)?;
            self.detail = None;
            return Ok(());
        };
        params.validate()?;
        match &mut self.detail {
            Some(driver) => {
                let layout = driver.layout();
                let mut updated = driver.clone();
                updated.set_params(params)?;
                if updated.layout() != layout {
                    self.backend.configure_detail(Some(updated.layout()))?;
                }
                *driver = updated;
            }
            None => {
                let driver = DetailDriver::new(params, self.grid)?;
                self.backend.configure_detail(Some(driver.layout()))?;
                self.detail = Some(driver);
            }
        }
        Ok(())
    }

    /// The detail layer's settings; `None` while it is off.
    pub fn detail_params(&self) -> Option<&DetailParams> {
        self.detail.as_ref().map(|d| d.params())
    }

    /// Centres the detail window on local point `(x, z)` (m) from the next frame on (the camera,
    /// or a node it follows). Non-finite points are ignored.
    pub fn set_detail_focus(&mut self, x: f32, z: f32) {
        if let Some(d) = &mut self.detail {
            d.set_focus(x, z);
        }
    }

    /// Where the detail window's fields are now; `None` while the layer is off.
    pub fn detail_window(&self) -> Option<DetailWindow> {
        self.detail.as_ref().map(|d| d.current_window())
    }

    /// Adds a ripple to the detail waves at the next frame: the surface raised by `strength` m
    /// (negative: pressed down) at local `(x, z)`, falling to a ring trough and to nothing at
    /// `radius` m, with no net volume ([`detail::ripple_shape`]). Refused, with the argument and
    /// its range named, for a non-finite point, `strength` beyond ±10 m or `radius` outside
    /// `> 0 ..= 2 × the grid's extent`. Returns whether the ripple reaches the window (false while
    /// the layer is off). Radii under 1.5 detail cells are drawn at 1.5 cells.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        detail::check_ripple(&self.grid, x, z, strength, radius)?;
        match &mut self.detail {
            Some(d) => d.add_ripple(x, z, strength, radius),
            None => Ok(false),
        }
    }

    /// Height (m) of the detail waves at local `(x, z)`, bilinear: 0 while the layer is off, and
    /// outside its window; `None` off the grid. On a GPU backend the first query of a region
    /// answers 0 and later ones show the waves a frame or two old (`crate::detail::tiles`).
    pub fn detail_height(&mut self, x: f32, z: f32) -> Option<f32> {
        if !self.grid.contains(x, z) {
            return None;
        }
        let Some(d) = &self.detail else { return Some(0.0) };
        let window = d.current_window();
        let backend = &mut self.backend;
        Some(detail::bilinear_height(&window, x, z, |cells| {
            let h = backend.detail_heights(cells);
            [h[0], h[1], h[2], h[3]]
        }))
    }

    /// [`Simulation::surface_height`] with the detail waves' height added (over wet water).
    pub fn surface_height_with_detail(&mut self, x: f32, z: f32) -> Option<f32> {
        let surface = self.surface_height(x, z)?;
        Some(surface + self.detail_height(x, z).unwrap_or(0.0))
    }

    /// The detail texture's texels of the newest frame ([`DetailTexels`]), for engines that copy
    /// them into a texture; `None` while the layer is off, before its first frame, and on
    /// backends that keep the texture on the device.
    pub fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        self.detail.as_ref()?;
        self.backend.detail_texels()
    }

    /// The engine's handle of the texture the detail layer writes on the device (Godot's
    /// RenderingDevice backend: the texture's RID), `None` where the texels come through
    /// [`Simulation::detail_texels`] instead, or while the layer is off.
    pub fn detail_device_texture(&self) -> Option<u64> {
        self.detail.as_ref()?;
        self.backend.detail_device_texture()
    }

    /// The detail layer's fields, `(h, v)` per storage cell ([`DetailWindow::world_cell`] says
    /// where each is), waiting for the device: tests and benchmarks.
    pub fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        self.backend.read_detail()
    }

    /// The newest snapshot (never blocks on a device).
    pub fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        self.backend.snapshot()
    }

    /// A snapshot of every cell as of now, built from the whole current state (waiting for the
    /// device on a GPU backend): for an engine that needs full texels at once after a backend
    /// read back only the tiles queries touched ([`Simulation::want_full_snapshots`]). Not for
    /// every frame.
    pub fn read_snapshot(&mut self) -> Result<Snapshot> {
        let state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        let fixed = crate::pipes::fixed_flux_per_stored(&self.step_constants(&self.params));
        Ok(state.snapshot_reusing(self.frames, counters, None, fixed))
    }

    /// Reads the whole current state, waiting for the device if needed.
    pub fn read_state(&mut self) -> Result<State> {
        self.on_backend(|b| b.read_state())
    }

    /// The ledger as of the current state (waits for the device if needed).
    pub fn ledger(&mut self) -> Result<MassLedger> {
        let counters = self.on_backend(|b| b.read_counters())?;
        Ok(MassLedger { initial: self.initial_total, counters })
    }

    /// The ledger and total that belong to the newest snapshot (no waiting).
    pub fn snapshot_ledger(&mut self) -> Option<(MassLedger, i64)> {
        let s = self.backend.snapshot()?;
        Some((MassLedger { initial: self.initial_total, counters: s.counters }, s.total_quanta))
    }

    /// Total water in the newest snapshot, m³.
    pub fn total_water(&mut self) -> f64 {
        self.backend.snapshot().map_or(0.0, |s| s.total_quanta as f64) * self.quantum_volume()
    }

    /// Water surface height (local Y, m) at local `(x, z)`: bilinear over the wet cells around
    /// the point, the terrain height where all four are dry. `None` off the grid.
    pub fn surface_height(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        sample_surface(&s, x, z)
    }

    /// Water depth (m) at local `(x, z)`, bilinear. `None` off the grid.
    pub fn depth(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        self.grid.sample_bilinear(x, z, |i| s.height[i][1], lerp)
    }

    /// Terrain height (local Y, m) at local `(x, z)`, bilinear. `None` off the grid.
    pub fn terrain_height(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        self.grid.sample_bilinear(x, z, |i| s.height[i][2], lerp)
    }

    /// Depth-averaged flow velocity (local X, local Z; m/s) at local `(x, z)`, bilinear. `None`
    /// off the grid.
    pub fn flow_velocity(&mut self, x: f32, z: f32) -> Option<[f32; 2]> {
        let s = self.queried_snapshot(x, z)?;
        self.grid.sample_bilinear(x, z, |i| [s.flow[i][0], s.flow[i][1]], |a, b, t| [lerp(a[0], b[0], t), lerp(a[1], b[1], t)])
    }

    /// The snapshot a query at local `(x, z)` reads, once the backend knows which cells it
    /// needs. `None` off the grid or before any snapshot exists.
    fn queried_snapshot(&mut self, x: f32, z: f32) -> Option<Arc<Snapshot>> {
        let (cells, _, _) = self.grid.bilinear_cells(x, z)?;
        self.backend.want_cells(&cells);
        self.backend.snapshot()
    }
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// The water a basin fill adds: for every cell connected to `start` through cells whose terrain
/// lies below `level` (four or eight neighbours), the whole quanta that raise its surface to
/// `level`. Cells already at or above `level` add nothing but still connect the basin.
///
/// Fails when `level` stands more than [`MAX_DEPTH`] above the basin's lowest ground: the
/// error names the limit and the highest level that fits.
pub fn basin_fill(state: &State, start: (u32, u32), level: f32, diagonal: bool) -> Result<Vec<CellWater>> {
    let grid = state.grid;
    let (w, h) = (grid.width as i64, grid.height as i64);
    let below = |i: usize| state.terrain[i] < level;
    let first = grid.index(start.0, start.1);
    if !below(first) {
        return Ok(Vec::new());
    }
    // Orthogonal steps first, so that the first four are the four-neighbour set.
    const STEPS: [(i64, i64); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)];
    let steps = if diagonal { &STEPS[..] } else { &STEPS[..4] };
    let mut seen = vec![false; grid.cell_count()];
    let mut stack = vec![(start.0 as i64, start.1 as i64)];
    seen[first] = true;
    let mut cells = Vec::new();
    let mut lowest = first;
    while let Some((x, y)) = stack.pop() {
        let i = grid.index(x as u32, y as u32);
        if state.terrain[i] < state.terrain[lowest] {
            lowest = i;
        }
        // f64: a level 1e6 m above a cell is 2^40 quanta, past f32's exact integers.
        let target = ((level as f64 - state.terrain[i] as f64) / DEPTH_QUANTUM as f64).floor().min(MAX_DEPTH_QUANTA as f64) as i64;
        let add = target - state.depth[i] as i64;
        if add > 0 {
            cells.push(CellWater { cell: i as u32, quanta: add as i32 });
        }
        for &(dx, dy) in steps {
            let (nx, ny) = (x + dx, y + dy);
            if nx < 0 || ny < 0 || nx >= w || ny >= h {
                continue;
            }
            let n = grid.index(nx as u32, ny as u32);
            if !seen[n] && below(n) {
                seen[n] = true;
                stack.push((nx, ny));
            }
        }
    }
    let floor = state.terrain[lowest];
    if level as f64 - floor as f64 > MAX_DEPTH as f64 {
        let (x, y) = (lowest as u32 % grid.width, lowest as u32 / grid.width);
        return Err(Error::invalid(
            "level",
            format!("{level} m"),
            format!("-{MAX_TERRAIN_ABS} ..= {} m for this basin: its lowest ground is {floor} m (cell ({x}, {y})), and a cell holds at most {MAX_DEPTH} m of water", floor as f64 + MAX_DEPTH as f64),
        ));
    }
    Ok(cells)
}

/// Surface height at a local point: bilinear weights over the four surrounding cells, dry cells
/// left out so a shore does not lift the water; the terrain where all four are dry.
pub fn sample_surface(s: &Snapshot, x: f32, z: f32) -> Option<f32> {
    let g = s.grid;
    let wet = g.sample_bilinear(x, z, |i| if s.height[i][3] > 0.0 { [s.height[i][0], 1.0] } else { [0.0, 0.0] }, |a, b, t| {
        [lerp(a[0], b[0], t), lerp(a[1], b[1], t)]
    })?;
    if wet[1] > 1.0e-6 {
        Some(wet[0] / wet[1])
    } else {
        g.sample_bilinear(x, z, |i| s.height[i][0], lerp)
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
                let area = grid.cell_area() as f64;
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
