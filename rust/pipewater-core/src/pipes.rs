//! The step, pipe by pipe: the definition every backend implements.
//!
//! Each cell owns four signed pipes, indexed by [`Pipe`]: E → (x+1, y), S → (x, y+1),
//! SE → (x+1, y+1) and SW → (x−1, y+1). Positive flow leaves the owner. Together the owned pipes
//! of all cells connect every cell with its eight neighbours, and each pipe is written by exactly
//! one cell.
//!
//! A pipe stores its **flow** (m²/s): the velocity of its water times its width. The flux it
//! carries in a step (m³/s) is that flow times its [`carried_depth`], the face depth of its two
//! cells (or the constant pipe depth in classic mode). Storing the velocity rather than the flux
//! keeps the speed of water whose depth changes from step to step, as at a flood's front.
//!
//! One step of length `dt`:
//! 1. **accelerate** ([`accelerate`]): in depth-dependent mode with momentum advection the pipe
//!    first takes up the momentum of the water flowing along its line ([`advect`]), then
//!    `flow ← flow·(1−damping)^dt + dt·g·w/L·(η_owner − η_nbr)`, in depth-dependent mode a thin
//!    film's viscous drag ([`film_drag`]) slows it, and its flux is `flow·d`;
//! 2. **limit** ([`cell_limits`]): each cell scales its outflow by
//!    `k = min(1, available / requested)`, so it can never go below zero, and its inflow by
//!    `k_in = min(1, room / incoming)`, so it never holds more than [`MAX_DEPTH_QUANTA`];
//! 3. **transfer** ([`pipe_quanta`]): every pipe moves `floor(|flux|·dt/(A·q)·k)` whole quanta,
//!    `k` the smaller of its drainer's outflow factor and its receiver's room factor
//!    ([`transfer_limit`]), from the cell it drains to the other, and both cells apply that same
//!    integer; the owner keeps `flow·k` ([`kept_flow`]).
//!
//! The GPU shaders in `shaders/` implement these functions operation for operation.

use crate::params::{Boundary, CrossSection, NeighbourMode, Params};
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH_QUANTA};
use bytemuck::{Pod, Zeroable};

/// The four pipes a cell owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    /// To (x+1, y).
    East = 0,
    /// To (x, y+1).
    South = 1,
    /// To (x+1, y+1).
    SouthEast = 2,
    /// To (x−1, y+1).
    SouthWest = 3,
}

/// Grid offset from owner to neighbour of each owned pipe, indexed by [`Pipe`].
pub const PIPE_OFFSETS: [(i32, i32); 4] = [(1, 0), (0, 1), (1, 1), (-1, 1)];

/// Whether pipe `p` (indexed by [`Pipe`]) is diagonal.
#[inline]
pub const fn is_diagonal(p: usize) -> bool {
    p >= 2
}

/// Shrinks the water a cell offers to its outflows by 2⁻²⁰ of itself. The outflow sum and the
/// limit factor are computed in `f32`; their combined rounding (under 10 ulp) stays below this
/// margin, so the whole quanta a cell gives away never exceed the quanta it holds.
pub const LIMIT_MARGIN: f32 = 1.0 - 1.0 / (1u32 << 20) as f32;

/// Codes of [`StepConstants::eight_neighbours`]: four orthogonal pipes.
pub const NEIGHBOURS_FOUR: u32 = 0;
/// See [`NEIGHBOURS_FOUR`]: all four owned pipes.
pub const NEIGHBOURS_EIGHT: u32 = 1;
/// See [`NEIGHBOURS_FOUR`]: the triangular lattice ([`NeighbourMode::Triangular`]): E, S and one
/// diagonal, SE on odd rows and SW on even rows ([`lattice_has_pipe`]).
pub const NEIGHBOURS_TRIANGULAR: u32 = 2;

/// Whether owned pipe `p` of a cell in row `y` exists on the triangular lattice: odd rows lie
/// half a cell further along +X, so a cell's neighbours in the row below are `(x, y+1)` and
/// `(x−1, y+1)` on an even row (S and SW) and `(x, y+1)` and `(x+1, y+1)` on an odd row (S and
/// SE). Seen from the row below, the same rule leaves NW on even rows and NE on odd rows.
#[inline]
pub const fn lattice_has_pipe(p: usize, y: u32) -> bool {
    !is_diagonal(p) || ((p == Pipe::SouthEast as usize) == (y % 2 == 1))
}

/// Boundary codes used in [`StepConstants::boundary`].
pub const BOUNDARY_WALL: u32 = 0;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_OPEN: u32 = 1;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_INFLOW: u32 = 2;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_LEVEL: u32 = 3;

/// Index of a pipe's class in [`StepConstants::widths`], [`StepConstants::inverse_widths`] and
/// [`StepConstants::conductance`]: an orthogonal pipe inside the grid, one along one edge of the
/// grid (widened, see [`pipe_width`]), one along two edges (a grid one cell wide), a diagonal.
pub const CLASS_ORTHOGONAL: usize = 0;
/// See [`CLASS_ORTHOGONAL`].
pub const CLASS_ORTHOGONAL_ONE_EDGE: usize = 1;
/// See [`CLASS_ORTHOGONAL`].
pub const CLASS_ORTHOGONAL_TWO_EDGES: usize = 2;
/// See [`CLASS_ORTHOGONAL`].
pub const CLASS_DIAGONAL: usize = 3;

/// Everything one step needs besides the fields, laid out for a WGSL uniform buffer
/// (`shaders/common.wgsl` declares the same struct; `tests/shaders.rs`
/// `the_step_constants_layout_agrees_with_the_wgsl` compares the layouts member by member).
///
/// What depends only on the parameters and the step length is computed here once, on the host,
/// rather than per pipe and step: the pipes' widths, their inverses and their conductances
/// `dt·g·w/L`, per [pipe class](CLASS_ORTHOGONAL). Every backend reads the same values, so a GPU
/// whose division is not correctly rounded still agrees with the CPU on them.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct StepConstants {
    /// Grid width, cells.
    pub width: u32,
    /// Grid height, cells.
    pub height: u32,
    /// [`NEIGHBOURS_FOUR`], [`NEIGHBOURS_EIGHT`] or [`NEIGHBOURS_TRIANGULAR`] (the eight pipes
    /// with one diagonal per row masked by the row's parity: non-zero means diagonals exist).
    pub eight_neighbours: u32,
    /// 1 for the depth-dependent cross-section, 0 for the classic constant one.
    pub depth_dependent: u32,
    /// Step length, s.
    pub dt: f32,
    /// Gravity, m/s².
    pub gravity: f32,
    /// Cell size, m.
    pub cell_size: f32,
    /// `(1 − damping)^dt`.
    pub flux_decay: f32,
    /// Classic cross-section depth, m.
    pub pipe_depth: f32,
    /// `dt / (cell_area · DEPTH_QUANTUM)`: converts a flux in m³/s into quanta per step.
    pub flux_to_quanta: f32,
    /// `dt · 3ν` (m²), ν the [`Params::viscosity`]: the viscous drag per step ([`film_drag`]).
    pub film: f32,
    /// 1 when the step advects momentum ([`advect`]: depth-dependent mode with
    /// [`Params::momentum_advection`]), else 0.
    pub advection: u32,
    /// Boundary code of each edge (North, East, South, West).
    pub boundary: [u32; 4],
    /// Quanta added to each cell of each inflow edge per step.
    pub inflow_quanta: [i32; 4],
    /// Surface held beyond each fixed-level edge, local m (0 for other edges).
    pub boundary_level: [f32; 4],
    /// Width of a pipe of each [class](CLASS_ORTHOGONAL), m (diagonals 0 with four neighbours).
    pub widths: [f32; 4],
    /// `1 / width` of each class, 1/m (0 where the width is 0).
    pub inverse_widths: [f32; 4],
    /// `dt · g · width / length` of each class, m²/s per metre of surface difference: what one
    /// step adds to a pipe's flow per metre of [`surface_drive`].
    pub conductance: [f32; 4],
}

impl StepConstants {
    /// Constants for a step of `dt` seconds on a `width × height` grid of `cell_size` metres.
    /// `inflow_quanta` comes from the caller's inflow bookkeeping (see `Simulation`).
    pub fn new(params: &Params, width: u32, height: u32, cell_size: f32, dt: f32, inflow_quanta: [i32; 4]) -> Self {
        let [width_orth, width_diag] = params.pipe_widths(cell_size);
        let boundary = params.boundaries.map(|b| match b {
            Boundary::Wall => BOUNDARY_WALL,
            Boundary::Open => BOUNDARY_OPEN,
            Boundary::Inflow { .. } => BOUNDARY_INFLOW,
            Boundary::Level { .. } => BOUNDARY_LEVEL,
        });
        let boundary_level = params.boundaries.map(|b| if let Boundary::Level { level } = b { level } else { 0.0 });
        let eight = params.neighbours == NeighbourMode::Eight;
        let triangular = params.neighbours == NeighbourMode::Triangular;
        // With eight neighbours an orthogonal pipe along an edge of the grid is widened by dx/6
        // per edge it runs along (see `pipe_width`).
        let edge_share = if eight { cell_size / 6.0 } else { 0.0 };
        let one_edge = width_orth + edge_share;
        let widths = [width_orth, one_edge, one_edge + edge_share, width_diag];
        // Every pipe of the triangular lattice joins cells `cell_size` apart.
        let diagonal_length = if triangular { cell_size } else { cell_size * std::f32::consts::SQRT_2 };
        let lengths = [cell_size, cell_size, cell_size, diagonal_length];
        let inverse_widths = widths.map(|w| if w > 0.0 { 1.0 / w } else { 0.0 });
        let mut conductance = [0.0f32; 4];
        for k in 0..4 {
            conductance[k] = dt * params.gravity * widths[k] / lengths[k];
        }
        StepConstants {
            width,
            height,
            eight_neighbours: match params.neighbours {
                NeighbourMode::Four => NEIGHBOURS_FOUR,
                NeighbourMode::Eight => NEIGHBOURS_EIGHT,
                NeighbourMode::Triangular => NEIGHBOURS_TRIANGULAR,
            },
            depth_dependent: (params.cross_section == CrossSection::DepthDependent) as u32,
            dt,
            gravity: params.gravity,
            cell_size,
            flux_decay: params.flux_decay(dt),
            pipe_depth: params.pipe_depth,
            flux_to_quanta: (dt as f64 / (params.neighbours.cell_area(cell_size) * DEPTH_QUANTUM as f64)) as f32,
            film: dt * (3.0 * params.viscosity),
            advection: params.advects() as u32,
            boundary,
            inflow_quanta,
            boundary_level,
            widths,
            inverse_widths,
            conductance,
        }
    }

    /// Whether owned pipe `p` of a cell in row `y` exists in this mode: diagonals only with eight
    /// neighbours, and on the triangular lattice one of them by the row's parity
    /// ([`lattice_has_pipe`]).
    #[inline]
    pub fn pipe_active(&self, p: usize, y: u32) -> bool {
        !is_diagonal(p) || self.eight_neighbours == NEIGHBOURS_EIGHT || (self.eight_neighbours == NEIGHBOURS_TRIANGULAR && lattice_has_pipe(p, y))
    }

    /// Whether the cells lie on the triangular lattice ([`NeighbourMode::Triangular`]).
    #[inline]
    pub fn triangular(&self) -> bool {
        self.eight_neighbours == NEIGHBOURS_TRIANGULAR
    }

    /// Whether cell `(x, y)` has a neighbour through owned pipe `p`.
    #[inline]
    pub fn pipe_in_grid(&self, x: u32, y: u32, p: usize) -> bool {
        let (dx, dy) = PIPE_OFFSETS[p];
        let nx = x as i64 + dx as i64;
        let ny = y as i64 + dy as i64;
        nx >= 0 && ny >= 0 && nx < self.width as i64 && ny < self.height as i64
    }

    /// Whether any edge is something other than a wall (open, inflow or a fixed level): only then
    /// does a cell's water depend on which edges it lies on.
    #[inline]
    pub fn has_edge_exchange(&self) -> bool {
        self.boundary.iter().any(|&b| b != BOUNDARY_WALL)
    }
}

/// The larger of two numbers that are never NaN (the model's are not), as one comparison, as a
/// GPU's `max` computes it: `f32::max` spends instructions on NaN rules the step never needs.
#[inline(always)]
pub fn larger(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The smaller of two numbers that are never NaN; see [`larger`].
#[inline(always)]
pub fn smaller(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// Depth of water over the face between two cells: the higher surface above the higher bed.
/// Water below a ridge cannot cross it, and still water over uneven ground gives no flux.
#[inline]
pub fn face_depth(surface_a: f32, bed_a: f32, surface_b: f32, bed_b: f32) -> f32 {
    larger(larger(surface_a, surface_b) - larger(bed_a, bed_b), 0.0)
}

/// Surface difference `η_a − η_b` (m) that drives a pipe, from beds (m) and depths (quanta).
///
/// The depth difference is taken in integers and the bed difference on its own, so the result is
/// as precise at 1000 m as at 1 m. Differences within one quantum — the resolution of the depth
/// itself — drive nothing, so a lake filled to a level stays exactly still.
#[inline]
pub fn surface_drive(bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    let difference = (bed_a - bed_b) + (depth_a - depth_b) as f32 * DEPTH_QUANTUM;
    difference - smaller(larger(difference, -DEPTH_QUANTUM), DEPTH_QUANTUM)
}

/// The [class](CLASS_ORTHOGONAL) of owned pipe `p` of cell `(x, y)`.
///
/// With eight neighbours, flow along an edge of the grid would see too little conductance: the
/// total across any line, `w_orth + √2·w_diag = dx` per row, counts half of the diagonals on each
/// side of a row, and an edge row has none beyond the edge. Its orthogonal pipes along the edge
/// are widened by the missing share, `dx/6` per edge, which restores the total exactly.
#[inline]
pub fn pipe_class(c: &StepConstants, p: usize, x: u32, y: u32) -> usize {
    if is_diagonal(p) {
        return CLASS_DIAGONAL;
    }
    if c.eight_neighbours == 0 {
        return CLASS_ORTHOGONAL;
    }
    let (low, high) = if p == Pipe::East as usize { (y == 0, y + 1 == c.height) } else { (x == 0, x + 1 == c.width) };
    low as usize + high as usize
}

/// Width of owned pipe `p` of cell `(x, y)`, m ([`pipe_class`]).
#[inline]
pub fn pipe_width(c: &StepConstants, p: usize, x: u32, y: u32) -> f32 {
    c.widths[pipe_class(c, p, x, y)]
}

/// Unit vector along owned pipe `p`, grid x and y.
pub const PIPE_DIRECTIONS: [[f32; 2]; 4] = [[1.0, 0.0], [0.0, 1.0], [FRAC_1_SQRT_2, FRAC_1_SQRT_2], [-FRAC_1_SQRT_2, FRAC_1_SQRT_2]];
const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// Unit vector, local X and Z, along owned pipe `p` of a cell in row `y`: [`PIPE_DIRECTIONS`] on
/// the square grid; on the triangular lattice E is +X and the pipes to the row below point 60°
/// and 120° from it (S is the 60° one on even rows, the 120° one on odd rows, which lie half a
/// cell further along +X).
#[inline]
pub fn pipe_direction(c: &StepConstants, p: usize, y: u32) -> [f32; 2] {
    if !c.triangular() {
        return PIPE_DIRECTIONS[p];
    }
    const DOWN: f32 = crate::params::TRIANGULAR_ROW_SPACING;
    match p {
        0 => [1.0, 0.0],
        1 if y % 2 == 0 => [0.5, DOWN],
        1 => [-0.5, DOWN],
        2 => [0.5, DOWN],
        _ => [-0.5, DOWN],
    }
}

/// Length of owned pipe `p`, m: `dx`, or `dx·√2` for a diagonal.
#[inline]
pub fn pipe_length(c: &StepConstants, p: usize) -> f32 {
    if is_diagonal(p) {
        c.cell_size * std::f32::consts::SQRT_2
    } else {
        c.cell_size
    }
}

/// Phase 1 (depth-dependent mode): the viscous drag of a laminar film, `∂u/∂t = −3ν·u/h²`, taken
/// implicitly: `flow · h²/(h² + dt·3ν)` for face depth `h` m (`dt·3ν` is [`StepConstants::film`],
/// ν the [`Params::viscosity`]), and no flow at all through a dry face (`h = 0`: the fluid stops
/// where there is none, rather than dividing by zero). This is the virtual-pipes article's
/// viscosity term `Q·H²/(H² + 3·dt·ν)`; its `H`, the depth of the cell the flow leaves, is here
/// the face depth, the fluid above the higher bed that actually crosses the face, which is that
/// cell's depth wherever the beds are level or the flow runs downhill. Its steady state on a
/// uniform incline is Nusselt's film, `h = (3νq/(g·S))^(1/3)`.
///
/// For water (ν = 10⁻⁶, the default) it is the thin-film drag the model always had: the time
/// scale `h²/(3ν)` is 0.3 s at 1 mm, 3 ms at 0.1 mm and 30 s at 1 cm, so velocities in water
/// thinner than about a millimetre fade to zero instead of carrying a large flux through a film,
/// while deeper water is left as it is. For lava (ν = 10³) it is 3 ms at 10 cm: the flow is the
/// viscous balance of gravity and drag, whatever the inertia.
#[inline]
pub fn film_drag(c: &StepConstants, flow: f32, depth: f32) -> f32 {
    if depth <= 0.0 {
        return 0.0;
    }
    let squared = depth * depth;
    flow * (squared / (squared + c.film))
}

/// What momentum advection ([`advect`]) needs to know about the water upstream of a pipe.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Upstream {
    /// The parts (m²/s, [`upstream_split`]) of the discharge per metre at the centre of the cell
    /// the pipe draws from (the owner for positive flow, the neighbour for negative; [`discharge`]
    /// of its pipes) along the two grid offsets around its direction.
    pub parts: [f32; 2],
    /// Velocity (m/s, along the pipe: flow times [`StepConstants::inverse_widths`]) of the two
    /// pipes of the same direction displaced from this one by `−offset` for those two offsets;
    /// where such a pipe would reach beyond the grid's edge, this pipe's own velocity (a
    /// free-slip edge).
    pub velocity: [f32; 2],
}

/// Splits a discharge `q` (m²/s) into non-negative parts along the two grid offsets that bound
/// its direction: an axis and a diagonal with eight neighbours, the two axes with four. Returns
/// the offsets (cells) and the parts (m²/s), with `q = Σ part·offset`.
#[inline]
pub fn upstream_split(c: &StepConstants, q: [f32; 2]) -> ([(i32, i32); 2], [f32; 2]) {
    let sx = if q[0] < 0.0 { -1 } else { 1 };
    let sy = if q[1] < 0.0 { -1 } else { 1 };
    let (ax, ay) = (q[0].abs(), q[1].abs());
    if c.eight_neighbours == 0 {
        ([(sx, 0), (0, sy)], [ax, ay])
    } else if ax >= ay {
        ([(sx, 0), (sx, sy)], [ax - ay, ay])
    } else {
        ([(0, sy), (sx, sy)], [ay - ax, ax])
    }
}

/// Phase 1, momentum advection: the flow `flow` (m²/s) of a pipe of class `class`
/// ([`pipe_class`]) between cells `depth_a` and `depth_b` m deep takes up the momentum that the
/// water upstream of it carries in ([`Upstream`]).
///
/// This is Stelling and Duinmeijer's (2003) momentum-conserving upwind form of
/// `∂u/∂t + (u·∇)u = 0`, written for the velocity `u_p` along each pipe: with `q` the discharge
/// at the centre of the upstream cell, split into parts `q_k ≥ 0` along grid offsets `o_k`
/// ([`upstream_split`]), and `h̄` the mean depth of the pipe's two cells,
/// `h̄·∂u_p/∂t = Σ_k (q_k/dx)·(u_p(x − o_k·dx) − u_p)`. Taken explicitly with
/// `β_k = dt·q_k/(h̄·dx)` (scaled so that `Σβ_k ≤ 1`), the new velocity is a weighted mean of the
/// old one and its upstream values: advection makes no new extremes. Where the flow converges
/// (a bore), the momentum it carries sets the bore's speed, which the conservative form gets
/// right; a dry cell that water pours into takes the speed of the water behind it, which carries
/// a flood's thin tip. Splitting the discharge over the offsets around its direction lets every
/// pipe, axial or diagonal, see the flow's true upstream, so a flow along an axis advects its
/// diagonal pipes at the same rate as its axial ones.
#[inline]
pub fn advect(c: &StepConstants, flow: f32, class: usize, depth_a: f32, depth_b: f32, upstream: Upstream) -> f32 {
    let weights = advection_weights(c, upstream.parts);
    advect_weighted(c, flow, class, depth_a, depth_b, weights, weights[0] + weights[1], upstream.velocity)
}

/// The weights `dt·q_k` (m³/m) of [`advect`] for the parts `q_k` ([`Upstream::parts`]). They
/// depend only on the upstream cell, so a backend may compute them once per cell.
#[inline]
pub fn advection_weights(c: &StepConstants, parts: [f32; 2]) -> [f32; 2] {
    parts.map(|q| c.dt * q)
}

/// [`advect`] from the [`advection_weights`] `weights` of the parts, their sum `total`
/// (`weights[0] + weights[1]`) and the upstream velocities ([`Upstream::velocity`]). Where
/// `total` is not positive the flow is returned as it is, whatever the velocities.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn advect_weighted(c: &StepConstants, flow: f32, class: usize, depth_a: f32, depth_b: f32, weights: [f32; 2], total: f32, upstream_velocity: [f32; 2]) -> f32 {
    let held = held_water(depth_a, depth_b, 0.5 * c.cell_size);
    if total <= 0.0 || held <= 0.0 {
        return flow;
    }
    advect_held(c, flow, class, held, weights, total, upstream_velocity)
}

/// The water `h̄·dx` (m³/m) that the cells of a pipe, `depth_a` and `depth_b` m deep, hold
/// between them per metre of its width, for [`advect`]: `(depth_a + depth_b)·half_cell` with
/// `half_cell` half the cell size, as a backend may compute it once. The same number as
/// `0.5·(depth_a + depth_b)·dx`: halving is exact.
#[inline(always)]
pub fn held_water(depth_a: f32, depth_b: f32, half_cell: f32) -> f32 {
    (depth_a + depth_b) * half_cell
}

/// [`advect_weighted`] where `total` and the water held, `held` ([`held_water`]), are both
/// positive; over a wet face (a positive [`carried_depth`]) one of its cells holds water, so
/// `held` is.
#[inline(always)]
pub fn advect_held(c: &StepConstants, flow: f32, class: usize, held: f32, weights: [f32; 2], total: f32, upstream_velocity: [f32; 2]) -> f32 {
    let scale = 1.0 / larger(total, held);
    let velocity = flow * c.inverse_widths[class];
    let advected = velocity + scale * (weights[0] * (upstream_velocity[0] - velocity) + weights[1] * (upstream_velocity[1] - velocity));
    advected * c.widths[class]
}

/// Depth (m) of the cross-section that carries a pipe's flow: the face depth ([`face_depth`]) in
/// depth-dependent mode, the constant `pipe_depth` in classic mode. A pipe's flux is its flow
/// times this depth.
#[inline]
pub fn carried_depth(c: &StepConstants, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    if c.depth_dependent == 0 {
        return c.pipe_depth;
    }
    face_depth(bed_a + depth_a as f32 * DEPTH_QUANTUM, bed_a, bed_b + depth_b as f32 * DEPTH_QUANTUM, bed_b)
}

/// What a pipe keeps between steps ([`crate::State::flow`]) times this is the flux it carries
/// (m³/s), for a pipe whose [`carried_depth`] is `carried` m: `carried` where pipes keep their
/// flow (with advection, and in classic mode), 1 where they keep their flux (depth-dependent
/// mode without advection: the pressure-only pipe model, kept as it always was for comparison).
#[inline]
pub fn flux_per_stored(c: &StepConstants, carried: f32) -> f32 {
    if keeps_flux(c) {
        1.0
    } else {
        carried
    }
}

/// [`flux_per_stored`] where it does not depend on the face depth: the pipe depth in classic
/// mode, 1 where pipes keep their flux; `None` where it is the face depth.
#[inline]
pub fn fixed_flux_per_stored(c: &StepConstants) -> Option<f32> {
    if keeps_flux(c) {
        Some(1.0)
    } else if c.depth_dependent == 0 {
        Some(c.pipe_depth)
    } else {
        None
    }
}

/// Whether pipes keep their flux (m³/s) rather than their flow: depth-dependent mode without
/// momentum advection. See [`flux_per_stored`].
#[inline]
pub fn keeps_flux(c: &StepConstants) -> bool {
    c.depth_dependent != 0 && c.advection == 0
}

/// What phase 1 makes of one pipe: the value it will keep ([`crate::State::flow`]'s meaning)
/// before the limit, and the flux it carries this step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Accelerated {
    /// The pipe's new stored value before the limit: its flow (m²/s), or its flux (m³/s) where
    /// pipes keep their flux ([`keeps_flux`]). The pipe keeps `stored · k` ([`kept_flow`]).
    pub stored: f32,
    /// Flux this step, m³/s, positive from the owner to its neighbour: `stored` times the
    /// [`carried_depth`] (or `stored` itself where pipes keep their flux).
    pub flux: f32,
}

/// Phase 1: what owned pipe `p` of cell `a = (x, y)` carries this step ([`Accelerated`]), from
/// what it kept from the last ([`crate::State::flow`]), the beds (m) and depths (quanta) of both
/// cells, and the water upstream of it ([`advect`]; used only when the step advects). With `d`
/// the [`carried_depth`], `w` the width and `L` the length of the pipe,
/// `flow ← flow·(1−damping)^dt + dt·g·w/L·(η_a − η_b)` and the flux is `flow·d`; without
/// advection the flux itself gains `dt·g·w·d/L·(η_a − η_b)`. A dry face carries nothing.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn accelerate(c: &StepConstants, p: usize, x: u32, y: u32, kept: f32, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32, upstream: Upstream) -> Accelerated {
    let carried = carried_depth(c, bed_a, depth_a, bed_b, depth_b);
    accelerate_carried(c, pipe_class(c, p, x, y), kept, bed_a, depth_a, bed_b, depth_b, carried, upstream)
}

/// [`accelerate`] for a pipe of class `class` ([`pipe_class`]) whose [`carried_depth`]
/// `carried` is already known.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn accelerate_carried(c: &StepConstants, class: usize, kept: f32, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32, carried: f32, upstream: Upstream) -> Accelerated {
    accelerate_advecting(c, class, kept, bed_a, depth_a, bed_b, depth_b, carried, |flow, depth_a, depth_b| advect(c, flow, class, depth_a, depth_b, upstream))
}

/// [`accelerate_carried`] with the advection step given as `advect(flow, depth_a, depth_b)`
/// (depths in m), which must compute [`advect`] of the pipe. It is called only where the step
/// advects and the face is wet, so a backend fetches what lies upstream only for those pipes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn accelerate_advecting(
    c: &StepConstants,
    class: usize,
    kept: f32,
    bed_a: f32,
    depth_a: i32,
    bed_b: f32,
    depth_b: i32,
    carried: f32,
    advect: impl FnOnce(f32, f32, f32) -> f32,
) -> Accelerated {
    let depth = carried;
    if depth <= 0.0 {
        return Accelerated::default();
    }
    let drive = c.conductance[class] * surface_drive(bed_a, depth_a, bed_b, depth_b);
    if keeps_flux(c) {
        let flux = film_drag(c, kept * c.flux_decay + drive * depth, depth);
        if settles(c, class, drive, flux, depth) {
            return Accelerated::default();
        }
        return Accelerated { stored: flux, flux };
    }
    let mut flow = kept;
    if c.advection != 0 {
        flow = advect(flow, depth_a as f32 * DEPTH_QUANTUM, depth_b as f32 * DEPTH_QUANTUM);
    }
    flow = flow * c.flux_decay + drive;
    if c.depth_dependent != 0 {
        flow = film_drag(c, flow, depth);
    }
    let flux = flow * depth;
    if settles(c, class, drive, flux, depth) {
        return Accelerated::default();
    }
    Accelerated { stored: flow, flux }
}

/// Speed (m/s) under which water that nothing drives comes to rest ([`settles`]).
pub const SETTLE_SPEED: f32 = 1.0e-3;

/// Phase 1: whether a pipe of class `class` whose surface difference drives nothing (`drive`
/// is 0: within the dead band of [`surface_drive`]) and which carries `flux` m³/s over a face
/// `depth` m deep comes to rest this step: its flux would move less than one whole quantum
/// ([`pipe_quanta`] truncates) and its water moves slower than [`SETTLE_SPEED`]. Such a pipe
/// moves no water whether it keeps its flow or not, but damping alone would shrink its flow
/// geometrically for ever (about 50 s per e-fold at the default damping, and then stall at the
/// smallest subnormal): without this rule water at rest would never stop changing, and no part of
/// the grid could sleep. Driven pipes never settle, so slow flows down a slope are unchanged.
#[inline]
pub fn settles(c: &StepConstants, class: usize, drive: f32, flux: f32, depth: f32) -> bool {
    drive == 0.0 && (flux * c.flux_to_quanta).abs() < 1.0 && flux.abs() < SETTLE_SPEED * c.widths[class] * depth
}

/// Phase 3: what a pipe keeps for the next step ([`crate::State::flow`]) from its
/// [`Accelerated::stored`] value, limited by `k` ([`transfer_limit`]). Keeping the flow (the
/// velocity) rather than the flux lets a pipe whose cells fill or drain keep its speed.
#[inline]
pub fn kept_flow(stored: f32, k: f32) -> f32 {
    stored * k
}

/// The stored value ([`crate::State::flow`]) of a pipe that carries `flux` m³/s over a
/// cross-section `carried` m deep ([`carried_depth`]): the inverse of [`flux_per_stored`], for
/// setting and converting pipes; 0 over a dry face.
#[inline]
pub fn stored_for_flux(c: &StepConstants, flux: f32, carried: f32) -> f32 {
    let scale = flux_per_stored(c, carried);
    if scale > 0.0 {
        flux / scale
    } else {
        0.0
    }
}

/// What owned pipe `p` of a cell in row `y` (width `width` m, carrying over `carried` m, [`carried_depth`]) keeps
/// after a body or a scripted push drags its water towards `velocity` (m/s along the grid's x
/// and y): the stored value moves `weight` (0..1) of the way to what the pipe would keep if its
/// water moved at `velocity`'s component along the pipe. Dry pipes are left alone, so no body
/// puts speed into water that is not there. Depth is untouched: a nudge moves momentum, never
/// water.
#[inline]
pub fn nudged_pipe(c: &StepConstants, p: usize, y: u32, stored: f32, velocity: [f32; 2], weight: f32, width: f32, carried: f32) -> f32 {
    if carried <= 0.0 || weight <= 0.0 {
        return stored;
    }
    let [dx, dy] = pipe_direction(c, p, y);
    let along = velocity[0] * dx + velocity[1] * dy;
    let mut target = along * width;
    if keeps_flux(c) {
        target *= carried;
    }
    stored + weight.min(1.0) * (target - stored)
}

/// Outflow of a cell through one open edge at critical flow, m³/s: `cell_size · d · √(g·d)`.
#[inline]
pub fn open_edge_outflow(c: &StepConstants, depth: f32) -> f32 {
    c.cell_size * depth * (c.gravity * depth).sqrt()
}

/// Phase 2: quanta a cell's outflows request this step, from `leaving[i]`, the flux leaving the
/// cell towards `NEIGHBOUR_OFFSETS[i]` (m³/s; zero for pipes that do not exist).
///
/// Only positive (outgoing) fluxes count. The sum pairs opposite directions and then axes with
/// diagonals, `((E+W) + (S+N)) + ((SE+NW) + (SW+NE))`: every symmetry of the square maps this
/// tree onto itself up to commutation, so a rotated or mirrored problem rounds identically and
/// gives the exactly rotated or mirrored answer.
#[inline]
pub fn requested_quanta(flux_to_quanta: f32, leaving: &[f32; 8]) -> f32 {
    let q = |i: usize| (larger(leaving[i], 0.0) * flux_to_quanta).abs();
    // NEIGHBOUR_OFFSETS order: E, S, SE, SW, W, N, NW, NE.
    ((q(0) + q(4)) + (q(1) + q(5))) + ((q(2) + q(6)) + (q(3) + q(7)))
}

/// Phase 2: the factor `k ∈ [0, 1]` that scales every outflow of a cell holding `depth_quanta`
/// whose outflows request `requested` quanta this step. A cell that holds what it is asked for
/// gives it all (`k = 1`, no division); otherwise it gives what it holds, less
/// [`LIMIT_MARGIN`].
#[inline]
pub fn limit_factor(depth_quanta: i32, requested: f32) -> f32 {
    let available = depth_quanta as f32 * LIMIT_MARGIN;
    if requested <= available {
        1.0
    } else {
        smaller(available / requested, 1.0)
    }
}

/// Phase 2: the factor `k_in ∈ [0, 1]` that scales every inflow of a cell holding
/// `depth_quanta` into which `incoming` quanta are requested this step, so that it never holds
/// more than [`MAX_DEPTH_QUANTA`]: the water that does not fit stays where it came from. Only a
/// cell within `incoming` quanta of that limit (about 2048 m of water) sees `k_in < 1`.
#[inline]
pub fn room_factor(depth_quanta: i32, incoming: f32) -> f32 {
    let room = (MAX_DEPTH_QUANTA - depth_quanta) as f32 * LIMIT_MARGIN;
    if incoming <= room {
        1.0
    } else {
        smaller(room / incoming, 1.0)
    }
}

/// Phase 3: the factor that limits a pipe carrying `flux` (positive from its owner to the
/// neighbour) from the limit factors ([`limit_factor`], [`room_factor`]) of both its cells: the
/// outflow factor of the cell it drains and the room factor of the cell it fills. Both cells of
/// the pipe call this with the same arguments.
#[inline]
pub fn transfer_limit(flux: f32, owner: CellLimits, neighbour: CellLimits) -> f32 {
    if flux > 0.0 {
        smaller(owner.outflow, neighbour.room)
    } else {
        smaller(neighbour.outflow, owner.room)
    }
}

/// The two limit factors of a cell, from phase 2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellLimits {
    /// Scales every outflow ([`limit_factor`]).
    pub outflow: f32,
    /// Scales every inflow ([`room_factor`]).
    pub room: f32,
}

impl Default for CellLimits {
    fn default() -> Self {
        CellLimits { outflow: 1.0, room: 1.0 }
    }
}

/// Phase 2 for a cell holding `depth_quanta` (after inflow) whose pipes carry `leaving[i]`
/// towards [`NEIGHBOUR_OFFSETS`]`[i]` (m³/s) and which loses `edge_flux` m³/s through the grid's
/// edges ([`edge_outflow`]).
#[inline]
pub fn cell_limits(flux_to_quanta: f32, depth_quanta: i32, leaving: &[f32; 8], edge_flux: f32) -> CellLimits {
    let mut requested = requested_quanta(flux_to_quanta, leaving);
    if edge_flux > 0.0 {
        requested += (edge_flux * flux_to_quanta).abs();
    }
    let entering = leaving.map(|f| -f);
    CellLimits { outflow: limit_factor(depth_quanta, requested), room: room_factor(depth_quanta, requested_quanta(flux_to_quanta, &entering)) }
}

/// Phase 3: whole quanta moved through a pipe of flux `flux` this step, signed like the flux,
/// given the limit factor of the cell it drains. Both cells of the pipe call this with the same
/// arguments, so they apply exactly the same amount.
#[inline]
pub fn pipe_quanta(flux_to_quanta: f32, flux: f32, k_drainer: f32) -> i32 {
    let amount = ((flux * flux_to_quanta).abs() * k_drainer) as i32;
    if flux < 0.0 {
        -amount
    } else {
        amount
    }
}

/// Number of open edges cell `(x, y)` lies on (corner cells can lie on two).
#[inline]
pub fn open_edge_count(c: &StepConstants, x: u32, y: u32) -> u32 {
    let on_edge = [y == 0, x + 1 == c.width, y + 1 == c.height, x == 0];
    (0..4).filter(|&e| on_edge[e] && c.boundary[e] == BOUNDARY_OPEN).count() as u32
}

/// Flux (m³/s) between cell `(x, y)` (bed `bed` m, `depth` quanta) and the water held beyond
/// the fixed-level edges it lies on ([`crate::Boundary::Level`]): positive out of the cell,
/// negative into it. Per edge `cell_size · √(g·h) · (η − level)`, with `h` the deeper of the two
/// surfaces over the cell's bed; surfaces within one quantum of the level exchange nothing.
#[inline]
pub fn level_edge_flux(c: &StepConstants, x: u32, y: u32, bed: f32, depth: i32) -> f32 {
    let on_edge = [y == 0, x + 1 == c.width, y + 1 == c.height, x == 0];
    let mut flux = 0.0;
    for e in 0..4 {
        if on_edge[e] && c.boundary[e] == BOUNDARY_LEVEL {
            let level = c.boundary_level[e];
            let difference = (bed - level) + depth as f32 * DEPTH_QUANTUM;
            let drive = difference - difference.clamp(-DEPTH_QUANTUM, DEPTH_QUANTUM);
            let h = (bed + depth as f32 * DEPTH_QUANTUM).max(level) - bed;
            if h > 0.0 {
                flux += c.cell_size * (c.gravity * h).sqrt() * drive;
            }
        }
    }
    flux
}

/// Flux (m³/s) leaving cell `(x, y)` through the edges of the grid: critical outflow over open
/// edges and outflow into fixed levels. It is limited with the cell's pipes.
#[inline]
pub fn edge_outflow(c: &StepConstants, x: u32, y: u32, bed: f32, depth: i32) -> f32 {
    let mut out = 0.0;
    let open = open_edge_count(c, x, y);
    if open > 0 {
        out = open_edge_outflow(c, depth as f32 * DEPTH_QUANTUM) * open as f32;
    }
    out + level_edge_flux(c, x, y, bed, depth).max(0.0)
}

/// Quanta entering cell `(x, y)` this step from fixed-level edges (water held beyond the edge
/// is unlimited, so no limit factor applies).
#[inline]
pub fn level_edge_inflow_quanta(c: &StepConstants, x: u32, y: u32, bed: f32, depth: i32) -> i32 {
    let flux = level_edge_flux(c, x, y, bed, depth);
    if flux < 0.0 {
        pipe_quanta(c.flux_to_quanta, -flux, 1.0)
    } else {
        0
    }
}

/// Number of inflow-edge cells of edge `e` (0 North … 3 West) — the cells that receive
/// `inflow_quanta[e]` each step.
#[inline]
pub fn edge_cell_count(width: u32, height: u32, e: usize) -> u32 {
    if e % 2 == 0 {
        width
    } else {
        height
    }
}

/// Quanta per step that cell `(x, y)` receives from inflow edges.
#[inline]
pub fn inflow_for_cell(c: &StepConstants, x: u32, y: u32) -> i32 {
    let on_edge = [y == 0, x + 1 == c.width, y + 1 == c.height, x == 0];
    (0..4)
        .filter(|&e| on_edge[e] && c.boundary[e] == BOUNDARY_INFLOW)
        .map(|e| c.inflow_quanta[e])
        .sum()
}

/// Discharge per metre of width at a cell (m²/s), from the eight pipe fluxes that touch it.
///
/// `outgoing[i]` is the flux leaving the cell towards `NEIGHBOUR_OFFSETS[i]`. A pipe of offset
/// `(ox, oy)` carries its flux along a vector of length `|o|·dx`; averaging both pipes per
/// direction gives `q = Σ F·o / (2·dx)`, exact for uniform flow in either neighbour mode.
///
/// Each component is summed as `(ahead − behind) + ((diagonals ahead) − (diagonals behind))`,
/// a tree that every symmetry of the square maps onto the other component's or its own (up to
/// commutation and negation, which round exactly): advection steers by this discharge, and a
/// rotated or mirrored problem must round identically.
#[inline]
pub fn discharge(cell_size: f32, outgoing: &[f32; 8]) -> [f32; 2] {
    // NEIGHBOUR_OFFSETS order: E, S, SE, SW, W, N, NW, NE.
    let [e, s, se, sw, w, n, nw, ne] = *outgoing;
    let qx = (e - w) + ((se + ne) - (nw + sw));
    let qy = (s - n) + ((se + sw) - (ne + nw));
    let scale = 0.5 / cell_size;
    [qx * scale, qy * scale]
}

/// Unit vector, local X and Z, from a cell in row `y` of the triangular lattice towards its
/// neighbour at grid offset [`NEIGHBOUR_OFFSETS`]`[n]` (the two offsets per row pair that
/// [`lattice_has_pipe`] masks get a direction too; their pipes carry nothing).
#[inline]
pub fn lattice_neighbour_direction(n: usize, y: u32) -> [f32; 2] {
    let (ox, oy) = NEIGHBOUR_OFFSETS[n];
    // Odd rows lie half a cell further along +X.
    let shift = 0.5 * ((y as i64 + oy as i64).rem_euclid(2) - (y % 2) as i64) as f32;
    [ox as f32 + shift, oy as f32 * crate::params::TRIANGULAR_ROW_SPACING]
}

/// [`discharge`] and [`centre_velocity`] of a cell in row `y` of the triangular lattice, local
/// X and Z: `q = Σ F·e/(√3·dx)` over the six pipes' unit vectors `e`
/// ([`lattice_neighbour_direction`]), which is `d·u` for uniform flow (`Σ e·eᵀ = 3·I` and every
/// pipe is `dx/√3` wide), and the velocity likewise from each pipe's flux over its face depth.
/// Summed neighbour by neighbour in [`NEIGHBOUR_OFFSETS`] order, as `snapshot.wgsl` sums them.
#[inline]
pub fn lattice_discharge_and_velocity(cell_size: f32, y: u32, outgoing: &[f32; 8], face_depths: &[f32; 8]) -> ([f32; 2], [f32; 2]) {
    let (mut q, mut v) = ([0.0f32; 2], [0.0f32; 2]);
    for n in 0..8 {
        let e = lattice_neighbour_direction(n, y);
        let per_depth = outgoing[n] * inverse_depth(face_depths[n]);
        q[0] += outgoing[n] * e[0];
        q[1] += outgoing[n] * e[1];
        v[0] += per_depth * e[0];
        v[1] += per_depth * e[1];
    }
    let scale = crate::params::TRIANGULAR_FACE_RATIO / cell_size;
    ([q[0] * scale, q[1] * scale], [v[0] * scale, v[1] * scale])
}

/// The eight neighbour offsets in the order used by [`discharge`]: first the four owned pipes
/// (E, S, SE, SW), then the four owned by neighbours, seen from this cell (W, N, NW, NE).
pub const NEIGHBOUR_OFFSETS: [(i32, i32); 8] = [(1, 0), (0, 1), (1, 1), (-1, 1), (-1, 0), (0, -1), (-1, -1), (1, -1)];

/// Depth, m, below which velocities fade: [`velocity`] divides a discharge by
/// `(h² + max(h², ε²)) / (2h)` instead of `h`, which equals `h` above this depth and makes the
/// velocity of thinner water go to zero with the depth, never to infinity (Kurganov and
/// Petrova's desingularisation, 2007).
pub const VELOCITY_DEPTH_FLOOR: f32 = 0.001;

/// `1/h` for a depth `h` (m) above [`VELOCITY_DEPTH_FLOOR`]; below it `2h/(h² + ε²)`, which
/// goes to zero with the depth instead of to infinity.
#[inline]
pub fn inverse_depth(depth: f32) -> f32 {
    let h = depth.max(0.0);
    let floor = VELOCITY_DEPTH_FLOOR * VELOCITY_DEPTH_FLOOR;
    2.0 * h / (h * h + (h * h).max(floor))
}

/// Depth-averaged velocity (m/s) from a discharge (m²/s) and a depth (m): `q/h` above
/// [`VELOCITY_DEPTH_FLOOR`], fading to zero in thinner water.
#[inline]
pub fn velocity(q: [f32; 2], depth: f32) -> [f32; 2] {
    let scale = inverse_depth(depth);
    [q[0] * scale, q[1] * scale]
}

/// The depth-averaged velocity (m/s) of a cell from the pipes that touch it, as the snapshot
/// reports it: `outgoing` as for [`discharge`], `face_depths[i]` the face depth (m) of the pipe
/// towards `NEIGHBOUR_OFFSETS[i]`. Each pipe's flux over its own face depth is its velocity
/// times its width, and [`discharge`] of those is the mean velocity, exact for uniform flow.
/// Dividing the cell's discharge by the cell's own depth instead would give a cell holding a
/// film at a flood's edge the flux of the deep water beside it over the film's depth: tens of
/// m/s from micrometres of water. Faces thinner than [`VELOCITY_DEPTH_FLOOR`] fade out.
#[inline]
pub fn centre_velocity(cell_size: f32, outgoing: &[f32; 8], face_depths: &[f32; 8]) -> [f32; 2] {
    let mut per_depth = [0.0f32; 8];
    for i in 0..8 {
        per_depth[i] = outgoing[i] * inverse_depth(face_depths[i]);
    }
    discharge(cell_size, &per_depth)
}
