//! The step, pipe by pipe: the definition every backend implements.
//!
//! Each cell owns four signed pipes, indexed by [`Pipe`]: E → (x+1, y), S → (x, y+1),
//! SE → (x+1, y+1) and SW → (x−1, y+1). Positive flux leaves the owner. Together the owned pipes
//! of all cells connect every cell with its eight neighbours, and each pipe is written by exactly
//! one cell.
//!
//! One step of length `dt`:
//! 1. **accelerate** ([`accelerate`]): `flux ← flux·(1−damping)^dt + dt·g·A/L·(η_owner − η_nbr)`,
//!    and in depth-dependent mode a thin film's viscous drag ([`film_drag`]) slows it;
//! 2. **limit** ([`limit_factor`]): each cell scales its outflow by
//!    `k = min(1, available / requested)`, so it can never go below zero;
//! 3. **transfer** ([`pipe_quanta`]): every pipe moves `floor(|flux|·dt/(A·q)·k_drainer)` whole
//!    quanta from the cell it drains to the other, and both cells apply that same integer.
//!
//! The GPU shaders in `shaders/` implement these functions operation for operation.

use crate::params::{Boundary, CrossSection, NeighbourMode, Params};
use crate::quanta::DEPTH_QUANTUM;
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

/// Boundary codes used in [`StepConstants::boundary`].
pub const BOUNDARY_WALL: u32 = 0;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_OPEN: u32 = 1;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_INFLOW: u32 = 2;
/// See [`BOUNDARY_WALL`].
pub const BOUNDARY_LEVEL: u32 = 3;

/// Everything one step needs besides the fields, laid out for a WGSL uniform buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct StepConstants {
    /// Grid width, cells.
    pub width: u32,
    /// Grid height, cells.
    pub height: u32,
    /// 1 for eight neighbours, 0 for four.
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
    /// Width of an orthogonal pipe, m.
    pub width_orth: f32,
    /// Width of a diagonal pipe, m (0 in four-neighbour mode).
    pub width_diag: f32,
    /// Boundary code of each edge (North, East, South, West).
    pub boundary: [u32; 4],
    /// Quanta added to each cell of each inflow edge per step.
    pub inflow_quanta: [i32; 4],
    /// Surface held beyond each fixed-level edge, local m (0 for other edges).
    pub boundary_level: [f32; 4],
    /// Padding to the uniform layout's 16-byte multiple.
    pub _pad: [u32; 4],
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
        StepConstants {
            width,
            height,
            eight_neighbours: (params.neighbours == NeighbourMode::Eight) as u32,
            depth_dependent: (params.cross_section == CrossSection::DepthDependent) as u32,
            dt,
            gravity: params.gravity,
            cell_size,
            flux_decay: params.flux_decay(dt),
            pipe_depth: params.pipe_depth,
            flux_to_quanta: (dt as f64 / (cell_size as f64 * cell_size as f64 * DEPTH_QUANTUM as f64)) as f32,
            width_orth,
            width_diag,
            boundary,
            inflow_quanta,
            boundary_level,
            _pad: [0; 4],
        }
    }

    /// Whether pipe `p` exists in this mode (diagonals only with eight neighbours).
    #[inline]
    pub fn pipe_active(&self, p: usize) -> bool {
        !is_diagonal(p) || self.eight_neighbours != 0
    }

    /// Whether cell `(x, y)` has a neighbour through owned pipe `p`.
    #[inline]
    pub fn pipe_in_grid(&self, x: u32, y: u32, p: usize) -> bool {
        let (dx, dy) = PIPE_OFFSETS[p];
        let nx = x as i64 + dx as i64;
        let ny = y as i64 + dy as i64;
        nx >= 0 && ny >= 0 && nx < self.width as i64 && ny < self.height as i64
    }
}

/// Depth of water over the face between two cells: the higher surface above the higher bed.
/// Water below a ridge cannot cross it, and still water over uneven ground gives no flux.
#[inline]
pub fn face_depth(surface_a: f32, bed_a: f32, surface_b: f32, bed_b: f32) -> f32 {
    (surface_a.max(surface_b) - bed_a.max(bed_b)).max(0.0)
}

/// Surface difference `η_a − η_b` (m) that drives a pipe, from beds (m) and depths (quanta).
///
/// The depth difference is taken in integers and the bed difference on its own, so the result is
/// as precise at 1000 m as at 1 m. Differences within one quantum — the resolution of the depth
/// itself — drive nothing, so a lake filled to a level stays exactly still.
#[inline]
pub fn surface_drive(bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    let difference = (bed_a - bed_b) + (depth_a - depth_b) as f32 * DEPTH_QUANTUM;
    difference - difference.clamp(-DEPTH_QUANTUM, DEPTH_QUANTUM)
}

/// Width of owned pipe `p` of cell `(x, y)`, m.
///
/// With eight neighbours, flow along an edge of the grid would see too little conductance: the
/// total across any line, `w_orth + √2·w_diag = dx` per row, counts half of the diagonals on each
/// side of a row, and an edge row has none beyond the edge. Its orthogonal pipes along the edge
/// are widened by the missing share, `dx/6` per edge, which restores the total exactly.
#[inline]
pub fn pipe_width(c: &StepConstants, p: usize, x: u32, y: u32) -> f32 {
    if is_diagonal(p) {
        return c.width_diag;
    }
    let mut width = c.width_orth;
    if c.eight_neighbours != 0 {
        let (low, high) = if p == Pipe::East as usize { (y == 0, y + 1 == c.height) } else { (x == 0, x + 1 == c.width) };
        if low {
            width += c.cell_size / 6.0;
        }
        if high {
            width += c.cell_size / 6.0;
        }
    }
    width
}

/// Unit vector along owned pipe `p`, grid x and y.
pub const PIPE_DIRECTIONS: [[f32; 2]; 4] = [[1.0, 0.0], [0.0, 1.0], [FRAC_1_SQRT_2, FRAC_1_SQRT_2], [-FRAC_1_SQRT_2, FRAC_1_SQRT_2]];
const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// Length of owned pipe `p`, m: `dx`, or `dx·√2` for a diagonal.
#[inline]
pub fn pipe_length(c: &StepConstants, p: usize) -> f32 {
    if is_diagonal(p) {
        c.cell_size * std::f32::consts::SQRT_2
    } else {
        c.cell_size
    }
}

/// Kinematic viscosity of water, m²/s: sets the drag of [`film_drag`].
pub const FILM_VISCOSITY: f32 = 1.0e-6;

/// Phase 1, thin water (depth-dependent mode): the viscous drag of a laminar film,
/// `∂u/∂t = −3ν·u/h²`, taken implicitly: `flux / (1 + dt·3ν/h²)` for face depth `h` m, and no
/// flux at all through a dry face. Its time scale `h²/(3ν)` is 0.3 s at 1 mm, 3 ms at 0.1 mm
/// and 30 s at 1 cm: velocities in water thinner than about a millimetre fade to zero instead
/// of carrying a large flux through a film, while deeper water is left as it is.
#[inline]
pub fn film_drag(c: &StepConstants, flux: f32, depth: f32) -> f32 {
    if depth <= 0.0 {
        return 0.0;
    }
    flux / (1.0 + c.dt * (3.0 * FILM_VISCOSITY) / (depth * depth))
}

/// Phase 1: the new flux of owned pipe `p` of cell `a = (x, y)` (m³/s, positive from `a` to its
/// neighbour `b`), from the old flux, the beds (m) and the depths (quanta) of both cells.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn accelerate(c: &StepConstants, p: usize, x: u32, y: u32, flux: f32, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    let width = pipe_width(c, p, x, y);
    let length = pipe_length(c, p);
    if c.depth_dependent == 0 {
        let conductance = c.gravity * width * c.pipe_depth / length;
        return flux * c.flux_decay + c.dt * conductance * surface_drive(bed_a, depth_a, bed_b, depth_b);
    }
    let depth = face_depth(bed_a + depth_a as f32 * DEPTH_QUANTUM, bed_a, bed_b + depth_b as f32 * DEPTH_QUANTUM, bed_b);
    let conductance = c.gravity * width * depth / length;
    let f = flux * c.flux_decay + c.dt * conductance * surface_drive(bed_a, depth_a, bed_b, depth_b);
    film_drag(c, f, depth)
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
    let q = |i: usize| (leaving[i].max(0.0) * flux_to_quanta).abs();
    // NEIGHBOUR_OFFSETS order: E, S, SE, SW, W, N, NW, NE.
    ((q(0) + q(4)) + (q(1) + q(5))) + ((q(2) + q(6)) + (q(3) + q(7)))
}

/// Phase 2: the factor `k ∈ [0, 1]` that scales every outflow of a cell holding `depth_quanta`
/// whose outflows request `requested` quanta this step.
#[inline]
pub fn limit_factor(depth_quanta: i32, requested: f32) -> f32 {
    if requested > 0.0 {
        (depth_quanta as f32 * LIMIT_MARGIN / requested).min(1.0)
    } else {
        1.0
    }
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
#[inline]
pub fn discharge(cell_size: f32, outgoing: &[f32; 8]) -> [f32; 2] {
    let mut q = [0.0f32; 2];
    for (i, &(ox, oy)) in NEIGHBOUR_OFFSETS.iter().enumerate() {
        q[0] += outgoing[i] * ox as f32;
        q[1] += outgoing[i] * oy as f32;
    }
    let scale = 0.5 / cell_size;
    [q[0] * scale, q[1] * scale]
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
