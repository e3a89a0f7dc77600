//! The model against analytic solutions of the shallow-water equations: the cases, their exact
//! answers and the figures that compare them. `tests/validation.rs` asserts on these figures;
//! `cargo xtask validate` prints them and draws the profiles into `docs/validation/`.
//!
//! Every case runs on the CPU backend in depth-dependent mode, eight neighbours, no damping, in a
//! channel three cells wide with walls (the flow is one-dimensional; the centre row is measured).

use crate::params::{NeighbourMode, Params};
use crate::quanta::depth_to_quanta;
use crate::{Grid, Simulation, State};

/// Gravity of every case, m/s².
pub const GRAVITY: f64 = 9.81;

/// Depth (m) that counts as the edge of a flood when a front is located: a millimetre, the depth
/// [`crate::pipes::VELOCITY_DEPTH_FLOOR`] below which velocities fade.
pub const FRONT_DEPTH: f64 = 1.0e-3;

/// Ritter's dam break on a dry bed: depth (m) at `x` m from the dam, `t` s after it breaks,
/// upstream depth `h0` m. `h0` for `x ≤ −c₀t`, `(2c₀ − x/t)²/(9g)` up to the front at `2c₀t`,
/// dry beyond; `c₀ = √(g·h₀)`.
pub fn ritter_depth(h0: f64, x: f64, t: f64) -> f64 {
    let c0 = (GRAVITY * h0).sqrt();
    if x <= -c0 * t {
        h0
    } else if x >= 2.0 * c0 * t {
        0.0
    } else {
        (2.0 * c0 - x / t).powi(2) / (9.0 * GRAVITY)
    }
}

/// Where Ritter's depth falls to `depth` m: `x = (2c₀ − 3√(g·depth))·t`. The tip of the exact
/// solution is infinitely thin, so any measured front (a contour) is compared with this.
pub fn ritter_contour(h0: f64, depth: f64, t: f64) -> f64 {
    (2.0 * (GRAVITY * h0).sqrt() - 3.0 * (GRAVITY * depth).sqrt()) * t
}

/// Stoker's dam break on a wet bed (upstream `hl` m, downstream `hr` m): a rarefaction, a
/// plateau of depth `h2` moving at `u2`, and a bore moving at `shock_speed` into the still water.
#[derive(Debug, Clone, Copy)]
pub struct Stoker {
    /// Upstream depth, m.
    pub hl: f64,
    /// Downstream depth, m.
    pub hr: f64,
    /// Depth between the rarefaction and the bore, m.
    pub h2: f64,
    /// Velocity there, m/s.
    pub u2: f64,
    /// Speed of the bore, m/s.
    pub shock_speed: f64,
}

impl Stoker {
    /// Solves the Riemann problem: the plateau's `u2 = 2(c_l − c₂)` from the rarefaction must
    /// equal `(h₂ − h_r)·√(g/2·(1/h₂ + 1/h_r))` from the bore's jump conditions; bisection on `h2`.
    pub fn new(hl: f64, hr: f64) -> Stoker {
        let g = GRAVITY;
        let cl = (g * hl).sqrt();
        let mismatch = |h2: f64| 2.0 * (cl - (g * h2).sqrt()) - (h2 - hr) * (g / 2.0 * (1.0 / h2 + 1.0 / hr)).sqrt();
        let (mut lo, mut hi) = (hr, hl);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mismatch(lo) * mismatch(mid) <= 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let h2 = 0.5 * (lo + hi);
        let u2 = 2.0 * (cl - (g * h2).sqrt());
        Stoker { hl, hr, h2, u2, shock_speed: u2 * h2 / (h2 - hr) }
    }

    /// Depth (m) at `x` m from the dam, `t` s after it breaks.
    pub fn depth(&self, x: f64, t: f64) -> f64 {
        let cl = (GRAVITY * self.hl).sqrt();
        let c2 = (GRAVITY * self.h2).sqrt();
        if x <= -cl * t {
            self.hl
        } else if x <= (self.u2 - c2) * t {
            (2.0 * cl - x / t).powi(2) / (9.0 * GRAVITY)
        } else if x <= self.shock_speed * t {
            self.h2
        } else {
            self.hr
        }
    }
}

/// A depth profile along the channel and the exact one at the same positions.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Cell centres, m from the dam.
    pub x: Vec<f64>,
    /// Modelled depth, m.
    pub depth: Vec<f64>,
    /// Exact depth, m.
    pub exact: Vec<f64>,
    /// Time of the profile, s.
    pub t: f64,
    /// Cell size, m.
    pub dx: f64,
}

impl Profile {
    /// Farthest position downstream where the depth exceeds `depth` m.
    pub fn front(&self, depth: f64) -> f64 {
        self.x.iter().zip(&self.depth).filter(|(_, &d)| d > depth).map(|(&x, _)| x).fold(f64::MIN, f64::max)
    }

    /// Depth at the dam: the mean of the two cells beside it, m.
    pub fn at_dam(&self) -> f64 {
        let i = self.x.iter().position(|&x| x > 0.0).unwrap_or(1).max(1);
        0.5 * (self.depth[i - 1] + self.depth[i])
    }

    /// Deepest water in the channel, m.
    pub fn max_depth(&self) -> f64 {
        self.depth.iter().copied().fold(0.0, f64::max)
    }

    /// Total variation `Σ|h_{i+1} − h_i|` of the modelled and of the exact profile, m.
    pub fn total_variation(&self) -> (f64, f64) {
        let tv = |v: &[f64]| v.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>();
        (tv(&self.depth), tv(&self.exact))
    }

    /// Relative L1 error over `from ..= to` m: `Σ|h − h_exact| / Σ h_exact`.
    pub fn relative_l1(&self, from: f64, to: f64) -> f64 {
        let (mut error, mut norm) = (0.0, 0.0);
        for ((&x, &d), &e) in self.x.iter().zip(&self.depth).zip(&self.exact) {
            if x >= from && x <= to {
                error += (d - e).abs();
                norm += e.abs();
            }
        }
        error / norm
    }
}

/// A dam-break run: the profile at the end and the speeds that thin water reported on the way.
#[derive(Debug, Clone)]
pub struct DamBreak {
    /// The depth profile at the end.
    pub profile: Profile,
    /// Fastest speed (m/s) reported in any cell holding less than [`THIN_WATER`] m, over the
    /// whole run (sampled every frame of 1/60 s).
    pub thin_water_speed: f32,
    /// Water in the channel at the end minus what the ledger expects, quanta (0: mass exact).
    pub mass_error: i64,
}

/// Depth (m) under which [`DamBreak::thin_water_speed`] looks: a tenth of a millimetre.
pub const THIN_WATER: f32 = 1.0e-4;

/// Runs a dam break at `x = 0` in a channel from `−upstream_length` to `+downstream_length` m
/// with cells of `dx` m: `hl` m of still water upstream, `hr` m downstream, for `duration` s, with
/// or without momentum advection. Steps are fixed, `duration / n` with the smallest `n` that
/// keeps the Courant number `(|u| + c)·dt/dx` under 0.5 for the fastest water of the case.
#[allow(clippy::too_many_arguments)]
pub fn dam_break(dx: f32, upstream_length: f32, downstream_length: f32, hl: f32, hr: f32, duration: f32, advection: bool, exact: impl Fn(f64, f64) -> f64) -> DamBreak {
    let upstream_cells = (upstream_length / dx).round() as u32;
    let width = upstream_cells + (downstream_length / dx).round() as u32;
    let grid = Grid::new(width, 3, dx).expect("a valid channel");
    let mut state = State::new(grid);
    for y in 0..3 {
        for x in 0..width {
            state.depth[grid.index(x, y)] = depth_to_quanta(if x < upstream_cells { hl } else { hr });
        }
    }
    let params = Params { damping: 0.0, neighbours: NeighbourMode::Eight, momentum_advection: advection, max_substeps: 100_000, ..Params::default() };
    let mut sim = Simulation::cpu(state, params).expect("a valid dam break");
    let fastest = 3.0 * (GRAVITY as f32 * hl).sqrt();
    let frame = 1.0 / 60.0f32;
    let frames = (duration / frame).round() as u32;
    let substeps = (frame * fastest / (0.5 * dx)).ceil() as u32;
    let mut thin_water_speed = 0.0f32;
    for _ in 0..frames {
        sim.run_steps(frame / substeps as f32, substeps).expect("a dam-break frame");
        let snapshot = sim.snapshot().expect("a snapshot");
        for (height, flow) in snapshot.height.iter().zip(&snapshot.flow) {
            if height[1] > 0.0 && height[1] < THIN_WATER {
                thin_water_speed = thin_water_speed.max(flow[2]);
            }
        }
    }
    let state = sim.read_state().expect("the final state");
    let mass_error = state.total_quanta() - sim.ledger().expect("the ledger").expected_total();
    let t = (frames as f32 * frame) as f64;
    let x: Vec<f64> = (0..width).map(|i| (i as f64 + 0.5 - upstream_cells as f64) * dx as f64).collect();
    let depth: Vec<f64> = (0..width).map(|i| state.depth_m(grid.index(i, 1)) as f64).collect();
    let exact = x.iter().map(|&x| exact(x, t)).collect();
    DamBreak { profile: Profile { x, depth, exact, t, dx: dx as f64 }, thin_water_speed, mass_error }
}

/// Ritter's case: 1 m of water released onto a dry bed, 4 s, channel from −20 m to +30 m.
pub fn ritter_case(dx: f32, advection: bool) -> DamBreak {
    dam_break(dx, 20.0, 30.0, 1.0, 0.0, 4.0, advection, |x, t| ritter_depth(1.0, x, t))
}

/// Stoker's case: 1 m of water released onto 0.1 m of still water, 4 s, from −20 m to +30 m.
pub fn stoker_case(dx: f32, advection: bool) -> DamBreak {
    let stoker = Stoker::new(1.0, 0.1);
    dam_break(dx, 20.0, 30.0, 1.0, 0.1, 4.0, advection, move |x, t| stoker.depth(x, t))
}

/// Nusselt's steady film of a Newtonian fluid of kinematic viscosity `viscosity` (m²/s) running
/// down an incline whose slope has sine `sin_slope`, carrying `discharge` m²/s per metre of
/// width under gravity `gravity` m/s²: its thickness, `h = (3νq/(g·sin θ))^(1/3)` m.
pub fn nusselt_depth(viscosity: f64, discharge: f64, gravity: f64, sin_slope: f64) -> f64 {
    (3.0 * viscosity * discharge / (gravity * sin_slope)).cbrt()
}

/// A viscous film on an incline: a channel `rows` cells wide (walls at its sides) and `length`
/// cells long of `cell_size` m whose bed falls by `slope` (rise over run) towards +x, fed at its
/// upper (west) edge with `discharge` m²/s per metre of width and draining over its lower (east)
/// edge, in depth-dependent mode with no damping, so that only the viscosity slows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilmCase {
    /// Kinematic viscosity, m²/s.
    pub viscosity: f32,
    /// Discharge per metre of width, m²/s.
    pub discharge: f32,
    /// Fall of the bed per metre (the tangent of the incline).
    pub slope: f32,
    /// Cell size, m.
    pub cell_size: f32,
    /// Cells along the slope.
    pub length: u32,
    /// Cells across it.
    pub rows: u32,
    /// Fixed step, s.
    pub step: f32,
}

/// The film `tests/viscosity.rs` and `tests/gpu_viscosity.rs` compare with Nusselt: mud-like
/// (ν = 1 m²/s) at q = 0.02 m²/s down a 5 % slope, h ≈ 0.50 m, u ≈ 4 cm/s. Its Reynolds number
/// q/ν is 0.02 and its Froude number u/√(g·h) about 0.018: the viscous term `3νu/h²` outweighs
/// the inertia `u·∂u/∂x` (about `u²·S/h`) by more than 10⁵, so the steady film is the viscous
/// balance the formula describes. On this slope sin θ and tan θ differ by 0.12 %, h by 0.04 %.
/// Fed onto a dry bed, the film's front needs about 12 minutes to cross the channel, and the
/// film is steady to 10⁻⁵ after 20: [`FILM_DURATION`] is 25.
pub const MUD_FILM: FilmCase = FilmCase { viscosity: 1.0, discharge: 0.02, slope: 0.05, cell_size: 1.0, length: 32, rows: 4, step: 0.1 };

/// How long the tests run a [`FilmCase`] from a dry bed, s.
pub const FILM_DURATION: f32 = 1500.0;

/// What a [`FilmCase`] run left: the film's depth over the second quarter of the channel against
/// Nusselt's, and how steady it was. The second quarter is past the inlet and well above the
/// free overfall at the lower edge, whose critical outflow draws the film down over its last
/// third (as a real film thins before a drop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilmFigures {
    /// Nusselt's thickness for the case, m ([`nusselt_depth`] with the slope's sine).
    pub exact: f64,
    /// Mean depth over the second quarter of the channel (every row), m.
    pub mean: f64,
    /// Shallowest and deepest cell of that quarter, m.
    pub range: (f64, f64),
    /// `|mean − exact| / exact`.
    pub relative_error: f64,
    /// Relative change of the mean over the last tenth of the run: how steady the film is.
    pub drift: f64,
    /// Water in the channel minus what the ledger expects, quanta (0: mass exact).
    pub mass_error: i64,
}

impl FilmCase {
    /// Nusselt's thickness for this case, m, with the sine of the incline (the model's slope is
    /// its tangent).
    pub fn exact(&self) -> f64 {
        let slope = self.slope as f64;
        nusselt_depth(self.viscosity as f64, self.discharge as f64, GRAVITY, slope / (1.0 + slope * slope).sqrt())
    }

    /// The dry incline and the parameters of the case.
    pub fn setup(&self) -> (State, Params) {
        let grid = Grid::new(self.length, self.rows, self.cell_size).expect("a valid channel");
        let mut state = State::new(grid);
        for y in 0..self.rows {
            for x in 0..self.length {
                state.terrain[grid.index(x, y)] = self.slope * self.cell_size * (self.length - 1 - x) as f32;
            }
        }
        let mut params = Params { damping: 0.0, neighbours: NeighbourMode::Eight, viscosity: self.viscosity, max_substeps: 100_000, ..Params::default() };
        params.boundaries[crate::Edge::West as usize] = crate::Boundary::Inflow { rate: self.discharge * self.rows as f32 * self.cell_size };
        params.boundaries[crate::Edge::East as usize] = crate::Boundary::Open;
        (state, params)
    }

    /// Runs `sim` (built from [`FilmCase::setup`]) for `duration` s in frames of 50 fixed steps
    /// and measures the film.
    pub fn run(&self, sim: &mut Simulation, duration: f32) -> FilmFigures {
        let frames = (duration / (50.0 * self.step)).round() as u32;
        let mut before = 0.0;
        for frame in 0..frames {
            sim.run_steps(self.step, 50).expect("a film frame");
            if frame + 1 == frames - frames / 10 {
                before = self.middle(&sim.read_state().expect("the state")).0;
            }
        }
        let state = sim.read_state().expect("the final state");
        let (mean, range) = self.middle(&state);
        let exact = self.exact();
        let mass_error = state.total_quanta() - sim.ledger().expect("the ledger").expected_total();
        FilmFigures { exact, mean, range, relative_error: (mean - exact).abs() / exact, drift: (mean - before).abs() / mean, mass_error }
    }

    /// Mean, shallowest and deepest depth (m) of the cells of the second quarter of the channel.
    fn middle(&self, state: &State) -> (f64, (f64, f64)) {
        let (mut sum, mut count, mut low, mut high) = (0.0, 0, f64::INFINITY, 0.0f64);
        for y in 0..self.rows {
            for x in self.length / 4..self.length / 2 {
                let d = state.depth_m(state.grid.index(x, y)) as f64;
                sum += d;
                count += 1;
                low = low.min(d);
                high = high.max(d);
            }
        }
        (sum / count as f64, (low, high))
    }
}
