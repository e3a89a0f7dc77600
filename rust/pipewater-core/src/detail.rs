//! Detail waves: a linear wave layer finer than the flow grid, for the ripples, wakes, splashes
//! and rain the flow grid is too coarse to carry. It is for looks and for floating things only:
//! it moves no water, so the ledger never sees it.
//!
//! ## A window that follows the camera
//!
//! The layer covers a square **window** of `window × window` detail cells of `dx / subdivision`
//! metres, centred on a focus point the engine moves each frame (the camera, or a node it
//! follows), not the whole water. Its cost is fixed by the window, whatever the size of the world,
//! and its resolution is spent where someone looks: covering a 2048² flow grid of 1 m cells at
//! 0.25 m would take 8192² cells (256 MiB per field), of which a camera sees a corner. Waves that
//! leave the window are lost, which a viewer does not see: they fade in a sponge along the
//! window's border first.
//!
//! The window moves in whole detail cells and its fields are stored **toroidally**: world detail
//! cell `g` (integer coordinates counted from the grid's −X/−Z corner) lives at storage cell
//! `g mod window`, so moving the window copies nothing; the strips it enters start at rest. A material samples the output texture with repeat wrapping at
//! `local / (window · cell)`, which finds every cell where it is in the world.
//!
//! ## The model
//!
//! Two fields per detail cell: the height `h` (m) of the detail surface above the flow's surface,
//! and its vertical velocity `v = ∂h/∂t` (m/s). The waves obey the damped wave equation carried
//! by the flow, `(∂t + U·∇)² h = c²∇²(h + P) − 2γ (∂t + U·∇) h`, with
//!
//! * `c² = min(g·d, c_max²)`: shallow-water celerity of the flow's depth `d` under the cell,
//!   capped at `max_celerity` (short waves in deep water are much slower than √(g·d));
//! * `U` the flow's velocity, which carries the waves ([`advect_cell`]);
//! * `γ` the amplitude decay rate (`damping`, 1/s): left alone, a wave's amplitude falls as
//!   `e^(−γ·t)`, exactly, step for step ([`wave_cell`]);
//! * `P` the pressure head of hulls ([`hulls::hull_pressure`]): the part of their displacement
//!   finer than the flow grid, which makes bow waves, wakes and the rings of things falling in;
//! * dry cells (the flow cell under them holds 1 mm or less) have no waves: `h = v = 0`, and no
//!   wave crosses into them: a shore reflects.
//!
//! One frame ([`CpuDetail::advance`]): the cells the window entered start at rest, ripples asked
//! for by scripts and rain drops add to `h` ([`forcing_cell`]), then per substep [`wave_cell`]
//! over every cell
//! (symplectic Euler: `v` from the Laplacian, then `h` from `v`) and [`advect_cell`] over every
//! cell (semi-Lagrangian, a cubic with fourth-order slopes), each reading what the pass before
//! wrote. Substeps keep
//! `c_max·dt ≤ DETAIL_CFL·cell`.
//!
//! The CPU backend runs [`CpuDetail`], written to be read first; `shaders/detail.wgsl` implements
//! the same functions operation for operation for both GPU backends. The flow is read exactly as
//! the snapshot shows it ([`crate::State::cell_texels`]; on the GPU `cell_texels` of
//! `shaders/snapshot.wgsl`).

pub mod hulls;
pub mod tiles;

use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Largest detail cells per flow cell side.
pub const MAX_SUBDIVISION: u32 = 16;
/// Fewest and most detail cells per window side.
pub const WINDOW_RANGE: (u32, u32) = (32, 4096);
/// Courant number of a detail substep: `c_max·dt ≤ DETAIL_CFL·cell`. The symplectic step with
/// the isotropic nine-point Laplacian is stable up to √3/2; half of it keeps the phase error of
/// the shortest resolved waves small.
pub const DETAIL_CFL: f32 = 0.5;
/// Most detail substeps in one frame. A longer frame simulates only this many stable substeps
/// and drops the rest of its time (the waves are for looks: they slow down, never blow up).
pub const MAX_DETAIL_SUBSTEPS: u32 = 16;
/// Ripples applied in one frame; more wait for the next frames, in order.
pub const MAX_RIPPLES_PER_FRAME: usize = 64;
/// Largest `add_ripple` strength, m (magnitude).
pub const MAX_RIPPLE_STRENGTH: f32 = 10.0;
/// Radius of a rain drop's ripple, detail cells.
pub const RAIN_DROP_RADIUS: f32 = 2.5;
/// Smallest radius a ripple is drawn with, detail cells: a narrower bump is not resolved.
pub const MIN_RIPPLE_CELLS: f32 = 1.5;
/// Attenuation across the sponge: waves crossing it at `c_max` lose about `e^-6` of their
/// amplitude (the rate grows as the square of the depth into the sponge, so the reflection from
/// its inner edge is small).
pub const SPONGE_STRENGTH: f32 = 18.0;

/// The layer's settings. Validated by [`DetailParams::validate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetailParams {
    /// Detail cells per flow cell side, `1 ..= 16`: the detail cell is `cell_size / subdivision`
    /// m. Default 4.
    pub subdivision: u32,
    /// Detail cells per side of the window, `32 ..= 4096`. Default 256 (64 m at 1 m flow cells):
    /// a fixed cost, a fraction of a small grid's step on a GPU and about 3 ms a frame on two CPU
    /// cores (`docs/BENCHMARKS.md`).
    pub window: u32,
    /// Cap on the celerity, m/s, `0.05 ..= 50`. Waves travel at `min(√(g·d), max_celerity)`.
    /// Default 2 m/s, the speed of 2.5 m deep-water waves.
    pub max_celerity: f32,
    /// Amplitude decay rate, 1/s, `0 ..= 100`: a wave left alone keeps `e^(−damping·t)` of its
    /// height. Default 0.5 (ripples fade in a few seconds).
    pub damping: f32,
    /// Scale of the hulls' forcing, `0 ..= 10`: 1 is the pressure of their displaced volume.
    /// Default 1.
    pub hull_strength: f32,
    /// Rain, drops per m² per second, `0 ..= 1000`. Default 0.
    pub rain_rate: f32,
    /// Height of a rain drop's ripple, m, `0 ..= 1`. Default 0.01.
    pub rain_drop: f32,
}

impl Default for DetailParams {
    fn default() -> Self {
        DetailParams { subdivision: 4, window: 256, max_celerity: 2.0, damping: 0.5, hull_strength: 1.0, rain_rate: 0.0, rain_drop: 0.01 }
    }
}

impl DetailParams {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_SUBDIVISION).contains(&self.subdivision) {
            return Err(Error::invalid("detail_subdivision", self.subdivision, format!("1 ..= {MAX_SUBDIVISION}")));
        }
        if !(WINDOW_RANGE.0..=WINDOW_RANGE.1).contains(&self.window) {
            return Err(Error::invalid("detail_window", self.window, format!("{} ..= {} cells", WINDOW_RANGE.0, WINDOW_RANGE.1)));
        }
        check_range("detail_max_celerity", self.max_celerity, 0.05, 50.0)?;
        check_range("detail_damping", self.damping, 0.0, 100.0)?;
        check_range("detail_hull_strength", self.hull_strength, 0.0, 10.0)?;
        check_range("rain_rate", self.rain_rate, 0.0, 1000.0)?;
        check_range("rain_drop", self.rain_drop, 0.0, 1.0)?;
        Ok(())
    }

    /// Side of a detail cell over a grid of `grid.cell_size`, m.
    pub fn cell_size(&self, grid: &Grid) -> f32 {
        grid.cell_size / self.subdivision as f32
    }
}

/// What a backend allocates for the layer: the window's side and the subdivision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetailLayout {
    /// Detail cells per window side.
    pub window: u32,
    /// Detail cells per flow cell side.
    pub subdivision: u32,
}

impl DetailLayout {
    /// Detail cells in the window.
    pub fn cells(&self) -> usize {
        self.window as usize * self.window as usize
    }

    /// Flow cells per side of the region the layer reads the flow from: the window's span and a
    /// margin for bilinear sampling at its edges.
    pub fn flow_side(&self) -> u32 {
        self.window.div_ceil(self.subdivision) + 3
    }
}

/// Where the window lies: its first world detail cell and its layout, over `grid`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetailWindow {
    /// The grid under the layer.
    pub grid: Grid,
    /// Window side and subdivision.
    pub layout: DetailLayout,
    /// World detail cell of the window's first (−X, −Z) cell.
    pub origin: [i32; 2],
}

impl DetailWindow {
    /// The window of `layout` over `grid` centred as near `focus` (local X, Z; m) as the grid
    /// allows: inside the grid where the grid is larger than the window, centred on the grid
    /// where it is smaller.
    pub fn around(grid: Grid, layout: DetailLayout, focus: [f32; 2]) -> Self {
        let s = layout.subdivision as f32;
        let n = layout.window as i64;
        let extent = [grid.width as i64 * layout.subdivision as i64, grid.height as i64 * layout.subdivision as i64];
        let [gx, gy] = grid.local_to_grid(focus[0], focus[1]);
        let mut origin = [0i32; 2];
        for (axis, g) in [gx, gy].into_iter().enumerate() {
            let wanted = if g.is_finite() { (g as f64 * s as f64 - n as f64 / 2.0).round() as i64 } else { 0 };
            let span = extent[axis];
            origin[axis] = if span >= n { wanted.clamp(0, span - n) } else { (span - n).div_euclid(2) } as i32;
        }
        DetailWindow { grid, layout, origin }
    }

    /// Side of a detail cell, m.
    pub fn cell_size(&self) -> f32 {
        self.grid.cell_size / self.layout.subdivision as f32
    }

    /// Whether world detail cell `g` lies in the window.
    pub fn contains(&self, g: [i32; 2]) -> bool {
        contains(self.origin, self.layout.window, g)
    }

    /// Storage index of world detail cell `g` (meaningful when [`DetailWindow::contains`] it).
    pub fn storage_index(&self, g: [i32; 2]) -> usize {
        storage_index(self.layout.window, g)
    }

    /// The world detail cell at storage index `index`.
    pub fn world_cell(&self, index: usize) -> [i32; 2] {
        let n = self.layout.window as usize;
        world_of_storage(self.origin, self.layout.window, [(index % n) as i32, (index / n) as i32])
    }

    /// Continuous world detail coordinates of local point `(x, z)` (m): cell `g` spans
    /// `[g, g + 1)`.
    pub fn local_to_detail(&self, x: f32, z: f32) -> [f32; 2] {
        let s = self.layout.subdivision as f32;
        let [gx, gy] = self.grid.local_to_grid(x, z);
        [gx * s, gy * s]
    }

    /// Local X, Z (m) of the centre of world detail cell `g`.
    pub fn cell_centre(&self, g: [i32; 2]) -> [f32; 2] {
        let d = self.cell_size();
        let [ex, ez] = self.grid.extent();
        [(g[0] as f32 + 0.5) * d - 0.5 * ex, (g[1] as f32 + 0.5) * d - 0.5 * ez]
    }

    /// The window's local rectangle: (−X −Z corner, +X +Z corner), m.
    pub fn local_rect(&self) -> ([f32; 2], [f32; 2]) {
        let d = self.cell_size();
        let [ex, ez] = self.grid.extent();
        let lo = [self.origin[0] as f32 * d - 0.5 * ex, self.origin[1] as f32 * d - 0.5 * ez];
        let side = self.layout.window as f32 * d;
        (lo, [lo[0] + side, lo[1] + side])
    }

    /// The four cells and weights of a bilinear sample at local `(x, z)`: cell centres sit at
    /// `g + 0.5`.
    pub fn bilinear(&self, x: f32, z: f32) -> ([[i32; 2]; 4], [f32; 2]) {
        let [px, py] = self.local_to_detail(x, z);
        let (fx, fy) = (px - 0.5, py - 0.5);
        let (x0, y0) = (fx.floor(), fy.floor());
        let g = [x0 as i32, y0 as i32];
        ([g, [g[0] + 1, g[1]], [g[0], g[1] + 1], [g[0] + 1, g[1] + 1]], [fx - x0, fy - y0])
    }
}

/// A ripple to add: centre in world detail coordinates (cells), `1 / radius²` (1/cells²) and
/// height at the centre, m. Laid out for the GPU's ripple list.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Ripple {
    /// Centre along the grid's x, detail cells.
    pub x: f32,
    /// Centre along the grid's y, detail cells.
    pub y: f32,
    /// `1 / radius²`, 1/cells².
    pub inverse_radius_squared: f32,
    /// Height at the centre, m (negative: a depression).
    pub strength: f32,
}

/// The pressure head of hulls in one detail cell, m (signed: the fine part of a displacement,
/// [`hulls::hull_pressure`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DetailPressure {
    /// Storage index of the cell.
    pub cell: u32,
    /// Pressure head, m.
    pub head: f32,
}

/// Everything one frame of the layer needs besides its fields, laid out for a WGSL uniform
/// buffer (`DetailConstants` in `shaders/detail.wgsl`, the same members in the same order).
///
/// The passes work in window coordinates `l` (0 ..= window − 1 along each axis, world cell
/// `origin + l`), so that nothing in their inner loops divides: the storage cell of `l` is
/// `storage + l` less one window where that passes it, and its flow cell `(phase + l) /
/// subdivision` cells past the region's second.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DetailConstants {
    /// Detail cells per window side, N.
    pub window: u32,
    /// Detail cells per flow cell side.
    pub subdivision: u32,
    /// World detail cell of the window's first cell, this frame.
    pub origin_x: i32,
    /// See [`DetailConstants::origin_x`].
    pub origin_y: i32,
    /// The window's first cell in the previous frame (the scroll pass clears what it enters).
    pub previous_x: i32,
    /// See [`DetailConstants::previous_x`].
    pub previous_y: i32,
    /// Storage cell of the window's first cell: `origin mod window`.
    pub storage_x: i32,
    /// See [`DetailConstants::storage_x`].
    pub storage_y: i32,
    /// Where the window's first cell lies in its flow cell: `origin mod subdivision`.
    pub phase_x: i32,
    /// See [`DetailConstants::phase_x`].
    pub phase_y: i32,
    /// First flow cell of the region the layer reads the flow from (one before the window's).
    pub flow_x: i32,
    /// See [`DetailConstants::flow_x`].
    pub flow_y: i32,
    /// Flow cells per side of that region ([`DetailLayout::flow_side`]).
    pub flow_side: u32,
    /// Flow grid width, cells (cells beyond the grid are dry).
    pub grid_width: u32,
    /// Flow grid height, cells.
    pub grid_height: u32,
    /// Substeps this frame.
    pub substeps: u32,
    /// Length of a substep, s.
    pub dt: f32,
    /// `dt / cell`, 1/(m/s): a velocity times it is a displacement in cells.
    pub dt_over_cell: f32,
    /// `1 / (6·cell²)`, 1/m²: the nine-point Laplacian's factor.
    pub laplacian_scale: f32,
    /// `1 / (2·cell)`, 1/m: the central difference's factor.
    pub slope_scale: f32,
    /// `e^(−2γ·dt)`: what damping leaves of `v` each substep.
    pub decay: f32,
    /// `c_max²`, m²/s².
    pub max_celerity_squared: f32,
    /// Gravity, m/s².
    pub gravity: f32,
    /// `1 / subdivision`.
    pub inverse_subdivision: f32,
    /// Depth of the sponge along the window's border, cells.
    pub sponge_cells: i32,
    /// Sponge rate at the window's edge times `dt` (dimensionless).
    pub sponge_rate: f32,
    /// A cell gets a rain drop this frame when its hash falls below this (probability · 2³²).
    pub rain_threshold: u32,
    /// Height of a rain drop's ripple, m.
    pub rain_drop: f32,
    /// Seed of this frame's rain.
    pub seed: u32,
    /// Ripples in this frame's list.
    pub ripple_count: u32,
    /// Padding to the uniform layout's 16-byte multiple.
    pub _pad: [u32; 2],
}

/// One frame of the layer: its constants, the ripples to add and the changes of the hulls'
/// pressure (cells named take their head; earlier ones are in the list back at 0).
#[derive(Debug, Clone, PartialEq)]
pub struct DetailFrame {
    /// The frame's constants.
    pub constants: DetailConstants,
    /// Ripples, at most [`MAX_RIPPLES_PER_FRAME`].
    pub ripples: Vec<Ripple>,
    /// Pressure changes, each storage cell at most once.
    pub pressure: Vec<DetailPressure>,
}

impl DetailFrame {
    /// The window this frame runs in.
    pub fn window(&self, grid: Grid) -> DetailWindow {
        let c = &self.constants;
        DetailWindow { grid, layout: DetailLayout { window: c.window, subdivision: c.subdivision }, origin: [c.origin_x, c.origin_y] }
    }

    /// Whether the window moved since the last frame.
    pub fn scrolls(&self) -> bool {
        let c = &self.constants;
        (c.origin_x, c.origin_y) != (c.previous_x, c.previous_y)
    }

    /// Whether the force pass has anything to add (ripples or rain).
    pub fn forces(&self) -> bool {
        self.constants.ripple_count > 0 || (self.constants.rain_threshold > 0 && self.constants.rain_drop != 0.0)
    }
}

/// Texels of the detail texture, in storage order (texel `(x, y)` = storage cell `(x, y)`):
/// R = height (m), G = slope along local +X, B = slope along local +Z (m/m), A = vertical
/// velocity (m/s).
pub type DetailTexels = Vec<[f32; 4]>;

// ---- The model: one function per WGSL function of shaders/detail.wgsl. ----------------------

/// Whether world detail cell `g` lies in the window of side `n` starting at `origin`.
#[inline]
pub fn contains(origin: [i32; 2], n: u32, g: [i32; 2]) -> bool {
    let n = n as i64;
    let (lx, ly) = (g[0] as i64 - origin[0] as i64, g[1] as i64 - origin[1] as i64);
    lx >= 0 && ly >= 0 && lx < n && ly < n
}

/// Storage index of world detail cell `g` in a window of side `n`: `g mod n`, row-major.
#[inline]
pub fn storage_index(n: u32, g: [i32; 2]) -> usize {
    let n = n as i32;
    (g[1].rem_euclid(n) * n + g[0].rem_euclid(n)) as usize
}

/// The world detail cell stored at storage cell `s` of the window of side `n` at `origin`.
#[inline]
pub fn world_of_storage(origin: [i32; 2], n: u32, s: [i32; 2]) -> [i32; 2] {
    let n = n as i32;
    [origin[0] + (s[0] - origin[0]).rem_euclid(n), origin[1] + (s[1] - origin[1]).rem_euclid(n)]
}

/// A ripple's shape at `u = r²/R²`: `(1 − u)²(1 − 4u)` inside the radius, 0 outside. 1 at the
/// centre, a trough of −1/4 at `r = R/√2`, and no net volume, so a ripple leaves no lasting
/// change of level behind.
#[inline]
pub fn ripple_shape(u: f32) -> f32 {
    if u >= 1.0 {
        return 0.0;
    }
    let a = 1.0 - u;
    a * a * (1.0 - 4.0 * u)
}

/// 32-bit integer hash (lowbias32), the same on every backend.
#[inline]
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Whether a rain drop falls on world detail cell `g` this frame.
#[inline]
pub fn rain_drop_at(c: &DetailConstants, g: [i32; 2]) -> bool {
    let h = hash((g[0] as u32).wrapping_mul(0x9e37_79b1) ^ hash(g[1] as u32 ^ c.seed));
    h < c.rain_threshold
}

#[inline(always)]
fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Whether window cell `l` lies in the window.
#[inline(always)]
pub fn inside(c: &DetailConstants, l: [i32; 2]) -> bool {
    let n = c.window as i32;
    l[0] >= 0 && l[1] >= 0 && l[0] < n && l[1] < n
}

/// Storage index of window cell `l` (which lies in the window).
#[inline(always)]
pub fn storage_of(c: &DetailConstants, l: [i32; 2]) -> usize {
    let n = c.window as i32;
    let (mut x, mut y) = (c.storage_x + l[0], c.storage_y + l[1]);
    if x >= n {
        x -= n;
    }
    if y >= n {
        y -= n;
    }
    (y * n + x) as usize
}

/// The window cell at storage cell `s`.
#[inline(always)]
pub fn window_cell_of(c: &DetailConstants, s: [i32; 2]) -> [i32; 2] {
    let n = c.window as i32;
    let (mut x, mut y) = (s[0] - c.storage_x, s[1] - c.storage_y);
    if x < 0 {
        x += n;
    }
    if y < 0 {
        y += n;
    }
    [x, y]
}

/// The flow cell holding a window cell: its place in the flow region and the detail cell's place
/// within it (0 ..= subdivision − 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowCell {
    /// Flow region cell.
    pub region: [i32; 2],
    /// Detail cell within it.
    pub within: [i32; 2],
}

/// The flow cell holding window cell `l` (in the window, or up to a flow cell beyond it).
#[inline(always)]
pub fn flow_cell(c: &DetailConstants, l: [i32; 2]) -> FlowCell {
    let s = c.subdivision as i32;
    let (x, y) = (c.phase_x + l[0] + s, c.phase_y + l[1] + s);
    FlowCell { region: [x / s, y / s], within: [x % s, y % s] }
}

/// The flow cell of the window cell `offset` (each component −1 ..= 1) from the one `f` holds.
#[inline(always)]
pub fn flow_cell_beside(c: &DetailConstants, f: FlowCell, offset: [i32; 2]) -> [i32; 2] {
    let s = c.subdivision as i32;
    let mut region = f.region;
    for k in 0..2 {
        let w = f.within[k] + offset[k];
        if w < 0 {
            region[k] -= 1;
        } else if w >= s {
            region[k] += 1;
        }
    }
    region
}

/// The flow region's texel of region cell `r`: (depth, velocity x, velocity z, wet 0/1); zero
/// beyond the region.
#[inline(always)]
fn region_texel(c: &DetailConstants, flow: &[[f32; 4]], r: [i32; 2]) -> [f32; 4] {
    let side = c.flow_side as i32;
    if r[0] < 0 || r[1] < 0 || r[0] >= side || r[1] >= side {
        return [0.0; 4];
    }
    flow[(r[1] * side + r[0]) as usize]
}

/// Whether the flow region's cell `r` is wet (its depth above 1 mm).
#[inline(always)]
pub fn wet_region(c: &DetailConstants, flow: &[[f32; 4]], r: [i32; 2]) -> bool {
    region_texel(c, flow, r)[3] > 0.0
}

/// Where [`flow_sample`] samples window cell `l`: the region cell of its first sample and the
/// weights of the next ones along each axis.
#[inline(always)]
pub fn flow_point(c: &DetailConstants, l: [i32; 2]) -> ([i32; 2], [f32; 2]) {
    // Region coordinates of the cell's centre: region cell r spans [r, r + 1), its centre r + 0.5.
    // Both are positive: truncation is the floor.
    let fx = ((c.phase_x + l[0]) as f32 + 0.5) * c.inverse_subdivision + 0.5;
    let fy = ((c.phase_y + l[1]) as f32 + 0.5) * c.inverse_subdivision + 0.5;
    let r = [fx as i32, fy as i32];
    (r, [fx - r[0] as f32, fy - r[1] as f32])
}

/// The flow's depth (m) and velocity (local X, Z; m/s) under window cell `l`, bilinear at its
/// centre between the flow cells' centres.
#[inline(always)]
pub fn flow_sample(c: &DetailConstants, flow: &[[f32; 4]], l: [i32; 2]) -> (f32, [f32; 2]) {
    let (r, [tx, ty]) = flow_point(c, l);
    let a = region_texel(c, flow, r);
    let b = region_texel(c, flow, [r[0] + 1, r[1]]);
    let d = region_texel(c, flow, [r[0], r[1] + 1]);
    let e = region_texel(c, flow, [r[0] + 1, r[1] + 1]);
    let mut mixed = [0.0f32; 3];
    for k in 0..3 {
        mixed[k] = lerp(lerp(a[k], b[k], tx), lerp(d[k], e[k], tx), ty);
    }
    (mixed[0], [mixed[1], mixed[2]])
}

/// Squared celerity of the waves over depth `depth`, m²/s².
#[inline(always)]
pub fn celerity_squared(c: &DetailConstants, depth: f32) -> f32 {
    (c.gravity * depth.max(0.0)).min(c.max_celerity_squared)
}

/// What the sponge leaves of the fields of window cell `l` each substep: 1 inside, falling as the
/// square of the depth into the border band of `sponge_cells`.
#[inline(always)]
pub fn sponge_factor(c: &DetailConstants, l: [i32; 2]) -> f32 {
    let n = c.window as i32;
    let edge = l[0].min(l[1]).min(n - 1 - l[0]).min(n - 1 - l[1]);
    if edge >= c.sponge_cells {
        return 1.0;
    }
    let depth = (c.sponge_cells - edge) as f32 / c.sponge_cells as f32;
    1.0 / (1.0 + c.sponge_rate * depth * depth)
}

/// Orthogonal neighbour offsets in the order the Laplacian sums them: E, S, W, N.
pub const ORTHOGONAL: [[i32; 2]; 4] = [[1, 0], [0, 1], [-1, 0], [0, -1]];
/// Diagonal neighbour offsets in summing order: SE, SW, NW, NE.
pub const DIAGONAL: [[i32; 2]; 4] = [[1, 1], [-1, 1], [-1, -1], [1, -1]];

/// The surface (height plus pressure) the wave step sees at the neighbour `offset` from window
/// cell `l` (whose flow cell is `f` and own surface `own`). Outside the window the surface is at
/// rest (0); a dry neighbour mirrors the cell (no wave crosses into it: a shore reflects).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn neighbour_surface(c: &DetailConstants, flow: &[[f32; 4]], state: &[[f32; 2]], pressure: &[f32], l: [i32; 2], f: FlowCell, offset: [i32; 2], own: f32) -> f32 {
    let q = [l[0] + offset[0], l[1] + offset[1]];
    if !inside(c, q) {
        return 0.0;
    }
    if !wet_region(c, flow, flow_cell_beside(c, f, offset)) {
        return own;
    }
    let i = storage_of(c, q);
    state[i][0] + pressure[i]
}

/// One wave substep of window cell `l` ([`DetailConstants`] `c`): the new `(h, v)` from the
/// fields before the substep.
///
/// `v ← (v + dt·c²·L(h + P))·e^(−2γ·dt)`, then `h ← h + dt·v` (symplectic Euler), both scaled by
/// the sponge; `L` the isotropic nine-point Laplacian `(4·Σ orthogonal + Σ diagonal − 20·own) /
/// (6·cell²)`. For a wave of any length the step's two eigenvalues have the product
/// `e^(−2γ·dt)`, so its amplitude decays by exactly `e^(−γ·dt)` per substep.
#[inline]
pub fn wave_cell(c: &DetailConstants, flow: &[[f32; 4]], state: &[[f32; 2]], pressure: &[f32], l: [i32; 2]) -> [f32; 2] {
    let f = flow_cell(c, l);
    if !wet_region(c, flow, f.region) {
        return [0.0; 2];
    }
    let (depth, _) = flow_sample(c, flow, l);
    let i = storage_of(c, l);
    let [h, v] = state[i];
    let own = h + pressure[i];
    let mut orthogonal = 0.0f32;
    for o in ORTHOGONAL {
        orthogonal += neighbour_surface(c, flow, state, pressure, l, f, o, own) - own;
    }
    let mut diagonal = 0.0f32;
    for o in DIAGONAL {
        diagonal += neighbour_surface(c, flow, state, pressure, l, f, o, own) - own;
    }
    let laplacian = (4.0 * orthogonal + diagonal) * c.laplacian_scale;
    let sponge = sponge_factor(c, l);
    let v = (v + c.dt * celerity_squared(c, depth) * laplacian) * c.decay * sponge;
    let h = (h + c.dt * v) * sponge;
    [h, v]
}

/// Weights of the six samples around a point `t` (0..1) past the third (at offsets −2 ..= 3) for
/// a cubic Hermite curve whose tangents are fourth-order central differences.
///
/// Semi-Lagrangian advection moves a field by a small part of a cell each step, so what decides
/// the speed at which it carries a wave is the interpolant's slope at the samples: a bilinear or
/// Catmull-Rom step (second-order slopes) carries a wave of `k` at `sin(k·cell)/(k·cell)` of the
/// current (−10 % for waves of 8 cells), these tangents at `sin(θ)(4 − cos θ)/(3θ)` (−1.3 %).
#[inline(always)]
pub fn hermite_weights(t: f32) -> [f32; 6] {
    let (t2, t3) = (t * t, t * t * t);
    let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
    let h10 = t3 - 2.0 * t2 + t;
    let h01 = 3.0 * t2 - 2.0 * t3;
    let h11 = t3 - t2;
    let twelfth = 1.0 / 12.0;
    [
        h10 * twelfth,
        (h11 - 8.0 * h10) * twelfth,
        h00 - 8.0 * h11 * twelfth,
        h01 + 8.0 * h10 * twelfth,
        (8.0 * h11 - h10) * twelfth,
        -h11 * twelfth,
    ]
}

/// Farthest the flow carries the waves in one substep, cells: beyond it the layer slows them
/// down rather than reading from beyond its samples.
pub const MAX_ADVECTION_CELLS: f32 = 8.0;

/// One advection substep of window cell `l`: `(h, v)` taken from where the flow brings the water
/// from, `x − U·dt` (semi-Lagrangian, [`hermite_weights`] over the 6 × 6 cells around that point;
/// at rest outside the window). Still water is copied as it is (the weights of a point on a
/// sample are that sample's alone). Dry cells stay at rest.
#[inline]
pub fn advect_cell(c: &DetailConstants, flow: &[[f32; 4]], state: &[[f32; 2]], l: [i32; 2]) -> [f32; 2] {
    if !wet_region(c, flow, flow_cell(c, l).region) {
        return [0.0; 2];
    }
    let (_, velocity) = flow_sample(c, flow, l);
    if velocity == [0.0, 0.0] {
        return state[storage_of(c, l)];
    }
    let dx = (velocity[0] * c.dt_over_cell).clamp(-MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let dy = (velocity[1] * c.dt_over_cell).clamp(-MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let (px, py) = (l[0] as f32 - dx, l[1] as f32 - dy);
    let (x0, y0) = (px.floor(), py.floor());
    let (wx, wy) = (hermite_weights(px - x0), hermite_weights(py - y0));
    let q = [x0 as i32 - 2, y0 as i32 - 2];
    let n = c.window as i32;
    let mut out = [0.0f32; 2];
    for (j, wj) in wy.iter().enumerate() {
        let y = q[1] + j as i32;
        if y < 0 || y >= n {
            continue;
        }
        let mut row_start = c.storage_y + y;
        if row_start >= n {
            row_start -= n;
        }
        row_start *= n;
        let mut row = [0.0f32; 2];
        for (i, wi) in wx.iter().enumerate() {
            let x = q[0] + i as i32;
            if x < 0 || x >= n {
                continue;
            }
            let mut column = c.storage_x + x;
            if column >= n {
                column -= n;
            }
            let s = state[(row_start + column) as usize];
            row[0] += wi * s[0];
            row[1] += wi * s[1];
        }
        out[0] += wj * row[0];
        out[1] += wj * row[1];
    }
    out
}

/// What ripples and rain add to the height of window cell `l` this frame, m.
#[inline]
pub fn forcing_cell(c: &DetailConstants, ripples: &[Ripple], l: [i32; 2]) -> f32 {
    let g = [c.origin_x + l[0], c.origin_y + l[1]];
    let (cx, cy) = (g[0] as f32 + 0.5, g[1] as f32 + 0.5);
    let mut added = 0.0f32;
    for r in ripples.iter().take(c.ripple_count as usize) {
        let (dx, dy) = (cx - r.x, cy - r.y);
        added += r.strength * ripple_shape((dx * dx + dy * dy) * r.inverse_radius_squared);
    }
    if c.rain_threshold > 0 {
        let reach = RAIN_DROP_RADIUS as i32;
        let inverse = 1.0 / (RAIN_DROP_RADIUS * RAIN_DROP_RADIUS);
        for dy in -reach..=reach {
            for dx in -reach..=reach {
                let u = (dx * dx + dy * dy) as f32 * inverse;
                if u < 1.0 && rain_drop_at(c, [g[0] + dx, g[1] + dy]) {
                    added += c.rain_drop * ripple_shape(u);
                }
            }
        }
    }
    added
}

/// The height the output sees at the neighbour `offset` from window cell `l`: the wave step's
/// rules without the pressure.
#[inline(always)]
fn texel_neighbour(c: &DetailConstants, flow: &[[f32; 4]], state: &[[f32; 2]], l: [i32; 2], f: FlowCell, offset: [i32; 2], own: f32) -> f32 {
    let q = [l[0] + offset[0], l[1] + offset[1]];
    if !inside(c, q) {
        return 0.0;
    }
    if !wet_region(c, flow, flow_cell_beside(c, f, offset)) {
        return own;
    }
    state[storage_of(c, q)][0]
}

/// The output texel of window cell `l` ([`DetailTexels`]): height, slopes by central
/// differences, vertical velocity; zero on dry cells.
#[inline]
pub fn texel_cell(c: &DetailConstants, flow: &[[f32; 4]], state: &[[f32; 2]], l: [i32; 2]) -> [f32; 4] {
    let f = flow_cell(c, l);
    if !wet_region(c, flow, f.region) {
        return [0.0; 4];
    }
    let [h, v] = state[storage_of(c, l)];
    let at = |o: [i32; 2]| texel_neighbour(c, flow, state, l, f, o, h);
    let sx = (at([1, 0]) - at([-1, 0])) * c.slope_scale;
    let sz = (at([0, 1]) - at([0, -1])) * c.slope_scale;
    [h, sx, sz, v]
}

// ---- The CPU reference field. ------------------------------------------------------------------

/// The layer on the CPU: the fields in storage order, the hulls' pressure and the flow region.
#[derive(Debug, Clone)]
pub struct CpuDetail {
    layout: DetailLayout,
    /// `(h, v)` per storage cell.
    state: Vec<[f32; 2]>,
    /// The other copy, written by each pass.
    scratch: Vec<[f32; 2]>,
    /// Pressure head of hulls per storage cell, m.
    pressure: Vec<f32>,
    /// The flow region's texels: (depth, velocity x, velocity z, wet 0/1).
    flow: Vec<[f32; 4]>,
    /// Constants of the last frame (the window the fields are in).
    last: Option<DetailConstants>,
}

impl CpuDetail {
    /// A layer at rest.
    pub fn new(layout: DetailLayout) -> Self {
        let n = layout.cells();
        let side = layout.flow_side() as usize;
        CpuDetail {
            layout,
            state: vec![[0.0; 2]; n],
            scratch: vec![[0.0; 2]; n],
            pressure: vec![0.0; n],
            flow: vec![[0.0; 4]; side * side],
            last: None,
        }
    }

    /// The layout it was made for.
    pub fn layout(&self) -> DetailLayout {
        self.layout
    }

    /// Puts every wave at rest (a new state was loaded); the hulls' pressure stays.
    pub fn clear(&mut self) {
        self.state.iter_mut().for_each(|s| *s = [0.0; 2]);
    }

    /// `(h, v)` per storage cell.
    pub fn fields(&self) -> &[[f32; 2]] {
        &self.state
    }

    /// Runs one frame over the flow whose texels `texel(x, y)` gives for flow cells on the grid
    /// ([`crate::State::cell_texels`]: height texel, flow texel).
    pub fn advance(&mut self, frame: &DetailFrame, texel: impl Fn(u32, u32) -> ([f32; 4], [f32; 4]) + Sync) -> Result<()> {
        let c = frame.constants;
        if (DetailLayout { window: c.window, subdivision: c.subdivision }) != self.layout {
            return Err(Error::invalid("detail frame layout", format!("{}/{}", c.window, c.subdivision), format!("{}/{}", self.layout.window, self.layout.subdivision)));
        }
        self.read_flow(&c, texel);
        for p in &frame.pressure {
            if let Some(slot) = self.pressure.get_mut(p.cell as usize) {
                *slot = p.head;
            }
        }
        if frame.scrolls() {
            self.each_cell(&c, |c, l, _, cell| {
                if !contains([c.previous_x, c.previous_y], c.window, [c.origin_x + l[0], c.origin_y + l[1]]) {
                    *cell = [0.0; 2];
                }
            });
        }
        if frame.forces() {
            let ripples = &frame.ripples;
            self.each_cell(&c, |c, l, flow, cell| {
                if wet_region(c, flow, flow_cell(c, l).region) {
                    cell[0] += forcing_cell(c, ripples, l);
                }
            });
        }
        for _ in 0..c.substeps {
            self.pass(&c, Pass::Wave);
            self.pass(&c, Pass::Advect);
        }
        self.last = Some(c);
        Ok(())
    }

    /// The flow region of this frame: each flow cell's depth, velocity and wetness.
    fn read_flow(&mut self, c: &DetailConstants, texel: impl Fn(u32, u32) -> ([f32; 4], [f32; 4]) + Sync) {
        let side = c.flow_side as usize;
        self.flow.par_chunks_mut(side).enumerate().for_each(|(ry, row)| {
            for (rx, out) in row.iter_mut().enumerate() {
                let (fx, fy) = (c.flow_x + rx as i32, c.flow_y + ry as i32);
                *out = if fx >= 0 && fy >= 0 && (fx as u32) < c.grid_width && (fy as u32) < c.grid_height {
                    let (height, flow) = texel(fx as u32, fy as u32);
                    [height[1], flow[0], flow[1], height[3]]
                } else {
                    [0.0; 4]
                };
            }
        });
    }

    /// Updates every storage cell in place: `update(c, window cell, flow region, fields)`.
    fn each_cell(&mut self, c: &DetailConstants, update: impl Fn(&DetailConstants, [i32; 2], &[[f32; 4]], &mut [f32; 2]) + Sync) {
        let flow = &self.flow;
        self.state.par_chunks_mut(c.window as usize).enumerate().for_each(|(sy, row)| {
            for (sx, cell) in row.iter_mut().enumerate() {
                update(c, window_cell_of(c, [sx as i32, sy as i32]), flow, cell);
            }
        });
    }

    /// One pass over every cell, from `state` into `scratch`; then the two swap.
    fn pass(&mut self, c: &DetailConstants, pass: Pass) {
        let (state, flow, pressure) = (&self.state, &self.flow, &self.pressure);
        self.scratch.par_chunks_mut(c.window as usize).enumerate().for_each(|(sy, row)| {
            for (sx, out) in row.iter_mut().enumerate() {
                let l = window_cell_of(c, [sx as i32, sy as i32]);
                *out = match pass {
                    Pass::Wave => wave_cell(c, flow, state, pressure, l),
                    Pass::Advect => advect_cell(c, flow, state, l),
                };
            }
        });
        std::mem::swap(&mut self.state, &mut self.scratch);
    }

    /// Height (m) of world detail cell `g` as of the last frame; 0 outside the window.
    pub fn height(&self, g: [i32; 2]) -> f32 {
        match &self.last {
            Some(c) if contains([c.origin_x, c.origin_y], c.window, g) => self.state[storage_of(c, [g[0] - c.origin_x, g[1] - c.origin_y])][0],
            _ => 0.0,
        }
    }

    /// The output texels of the last frame, in storage order; `None` before the first frame.
    pub fn texels(&self) -> Option<Vec<[f32; 4]>> {
        let c = self.last?;
        let mut out = vec![[0.0f32; 4]; self.layout.cells()];
        out.par_chunks_mut(c.window as usize).enumerate().for_each(|(sy, row)| {
            for (sx, texel) in row.iter_mut().enumerate() {
                *texel = texel_cell(&c, &self.flow, &self.state, window_cell_of(&c, [sx as i32, sy as i32]));
            }
        });
        Some(out)
    }
}

#[derive(Clone, Copy)]
enum Pass {
    Wave,
    Advect,
}

// ---- Driving the layer from the simulation. ---------------------------------------------------

/// What the simulation keeps for the layer between frames: its settings, the focus, the window's
/// last position, ripples waiting, the hulls' pressure in force and the rain's seed. Backends
/// receive each frame as a [`DetailFrame`].
#[derive(Debug, Clone)]
pub struct DetailDriver {
    params: DetailParams,
    grid: Grid,
    /// Local X, Z (m) the window centres on.
    focus: [f32; 2],
    /// The window's origin in the last frame.
    origin: Option<[i32; 2]>,
    ripples: std::collections::VecDeque<Ripple>,
    /// Storage cells whose pressure is not zero.
    pressed: Vec<u32>,
    /// Pressure changes for the next frame.
    pressure: Vec<DetailPressure>,
    seed: u32,
}

impl DetailDriver {
    /// A driver for `params` (validated) over `grid`, focused on the grid's centre.
    pub fn new(params: DetailParams, grid: Grid) -> Result<Self> {
        params.validate()?;
        Ok(DetailDriver { params, grid, focus: [0.0; 2], origin: None, ripples: Default::default(), pressed: Vec::new(), pressure: Vec::new(), seed: 0 })
    }

    /// The settings.
    pub fn params(&self) -> &DetailParams {
        &self.params
    }

    /// The layout backends allocate.
    pub fn layout(&self) -> DetailLayout {
        DetailLayout { window: self.params.window, subdivision: self.params.subdivision }
    }

    /// Replaces the settings (validated). The layout may change: the caller reconfigures the
    /// backend when [`DetailDriver::layout`] did.
    pub fn set_params(&mut self, params: DetailParams) -> Result<()> {
        params.validate()?;
        if (params.window, params.subdivision) != (self.params.window, self.params.subdivision) {
            self.origin = None;
            self.pressed.clear();
            self.pressure.clear();
        }
        self.params = params;
        Ok(())
    }

    /// Sets the point the window centres on, local X and Z (m); non-finite points are ignored.
    pub fn set_focus(&mut self, x: f32, z: f32) {
        if x.is_finite() && z.is_finite() {
            self.focus = [x, z];
        }
    }

    /// The window as it is now (where the next frame puts it).
    pub fn window(&self) -> DetailWindow {
        DetailWindow::around(self.grid, self.layout(), self.focus)
    }

    /// The window the fields are in: the last frame's, else where the next frame puts it.
    pub fn current_window(&self) -> DetailWindow {
        let mut w = self.window();
        if let Some(origin) = self.origin {
            w.origin = origin;
        }
        w
    }

    /// Queues a ripple of `strength` m at its centre and `radius` m around local `(x, z)`.
    /// Returns whether it reaches the window as it stands.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        check_ripple(&self.grid, x, z, strength, radius)?;
        let window = self.current_window();
        let cells = (radius / window.cell_size()).max(MIN_RIPPLE_CELLS);
        let [cx, cy] = window.local_to_detail(x, z);
        let reaches = {
            let (lo, hi) = (window.origin, [window.origin[0] + window.layout.window as i32, window.origin[1] + window.layout.window as i32]);
            cx + cells > lo[0] as f32 && cx - cells < hi[0] as f32 && cy + cells > lo[1] as f32 && cy - cells < hi[1] as f32
        };
        if reaches {
            self.ripples.push_back(Ripple { x: cx, y: cy, inverse_radius_squared: 1.0 / (cells * cells), strength });
        }
        Ok(reaches)
    }

    /// Replaces the hulls' pressure with `cells` (storage cell, head m; each at most once): the
    /// next frame applies them and puts every other pressed cell back to 0.
    pub fn set_pressure(&mut self, cells: Vec<DetailPressure>) {
        let now: std::collections::HashSet<u32> = cells.iter().map(|p| p.cell).collect();
        let mut changes = cells;
        changes.extend(self.pressed.iter().filter(|c| !now.contains(c)).map(|&cell| DetailPressure { cell, head: 0.0 }));
        self.pressed = changes.iter().filter(|p| p.head != 0.0).map(|p| p.cell).collect();
        // A change not yet applied is replaced by the newer one.
        let changed: std::collections::HashSet<u32> = changes.iter().map(|p| p.cell).collect();
        self.pressure.retain(|p| !changed.contains(&p.cell));
        self.pressure.extend(changes);
    }

    /// Forgets the window's position and the pressure in force (the backend's fields were reset
    /// or rebuilt): the next frame starts afresh.
    pub fn restart(&mut self) {
        self.origin = None;
        self.pressed.clear();
        self.pressure.clear();
    }

    /// The next frame, lasting `frame_time` s, over flow of `gravity` m/s²; `None` when there is
    /// no time to simulate.
    pub fn frame(&mut self, frame_time: f32, gravity: f32) -> Option<DetailFrame> {
        if !(frame_time > 0.0 && frame_time.is_finite()) {
            return None;
        }
        let p = self.params;
        let window = self.window();
        let cell = window.cell_size();
        let previous = self.origin.unwrap_or(window.origin);
        self.origin = Some(window.origin);
        let stable = DETAIL_CFL * cell / p.max_celerity;
        let substeps = ((frame_time / stable).ceil() as u32).clamp(1, MAX_DETAIL_SUBSTEPS);
        let dt = (frame_time / substeps as f32).min(stable);
        let sponge_cells = (p.window / 16).max(4) as i32;
        let sponge_rate = SPONGE_STRENGTH * p.max_celerity / (sponge_cells as f32 * cell) * dt;
        let drops = (p.rain_rate as f64 * cell as f64 * cell as f64 * frame_time as f64).clamp(0.0, 1.0);
        let rain_threshold = (drops * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        self.seed = self.seed.wrapping_add(1);
        let take = self.ripples.len().min(MAX_RIPPLES_PER_FRAME);
        let ripples: Vec<Ripple> = self.ripples.drain(..take).collect();
        let layout = self.layout();
        let s = p.subdivision as i32;
        let n = p.window as i32;
        let constants = DetailConstants {
            window: p.window,
            subdivision: p.subdivision,
            origin_x: window.origin[0],
            origin_y: window.origin[1],
            previous_x: previous[0],
            previous_y: previous[1],
            storage_x: window.origin[0].rem_euclid(n),
            storage_y: window.origin[1].rem_euclid(n),
            phase_x: window.origin[0].rem_euclid(s),
            phase_y: window.origin[1].rem_euclid(s),
            flow_x: window.origin[0].div_euclid(s) - 1,
            flow_y: window.origin[1].div_euclid(s) - 1,
            flow_side: layout.flow_side(),
            grid_width: self.grid.width,
            grid_height: self.grid.height,
            substeps,
            dt,
            dt_over_cell: dt / cell,
            laplacian_scale: 1.0 / (6.0 * cell * cell),
            slope_scale: 1.0 / (2.0 * cell),
            decay: (-2.0 * p.damping as f64 * dt as f64).exp() as f32,
            max_celerity_squared: p.max_celerity * p.max_celerity,
            gravity,
            inverse_subdivision: 1.0 / s as f32,
            sponge_cells,
            sponge_rate,
            rain_threshold: if p.rain_drop != 0.0 { rain_threshold } else { 0 },
            rain_drop: p.rain_drop,
            seed: self.seed,
            ripple_count: ripples.len() as u32,
            _pad: [0; 2],
        };
        Some(DetailFrame { constants, ripples, pressure: std::mem::take(&mut self.pressure) })
    }
}

/// Checks `add_ripple`'s arguments: a finite point, `strength` within ±[`MAX_RIPPLE_STRENGTH`] m,
/// `radius` in `(0, 2 × grid extent]` m.
pub fn check_ripple(grid: &Grid, x: f32, z: f32, strength: f32, radius: f32) -> Result<()> {
    if !(x.is_finite() && z.is_finite()) {
        return Err(Error::invalid("position", format!("({x}, {z})"), "finite coordinates"));
    }
    check_range("strength", strength, -MAX_RIPPLE_STRENGTH, MAX_RIPPLE_STRENGTH)?;
    let [ex, ez] = grid.extent();
    let largest = 2.0 * ex.max(ez);
    if !(radius.is_finite() && radius > 0.0 && radius <= largest) {
        return Err(Error::invalid("radius", radius, format!("> 0 ..= {largest} m")));
    }
    Ok(())
}

/// Bilinear height (m) at local `(x, z)` from the heights `heights` gives for the four cells of
/// [`DetailWindow::bilinear`] (in its order).
pub fn bilinear_height(window: &DetailWindow, x: f32, z: f32, heights: impl FnOnce(&[[i32; 2]; 4]) -> [f32; 4]) -> f32 {
    let (cells, [tx, ty]) = window.bilinear(x, z);
    let h = heights(&cells);
    lerp(lerp(h[0], h[1], tx), lerp(h[2], h[3], tx), ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_and_world_cells_invert_each_other_across_negative_origins() {
        let n = 8u32;
        for origin in [[0, 0], [-3, 5], [13, -20]] {
            for sy in 0..n as i32 {
                for sx in 0..n as i32 {
                    let g = world_of_storage(origin, n, [sx, sy]);
                    assert!(contains(origin, n, g), "{g:?} in window at {origin:?}");
                    assert_eq!(storage_index(n, g), (sy * n as i32 + sx) as usize);
                }
            }
        }
        println!("every storage cell of 8² windows at three origins maps to a world cell inside and back");
    }

    #[test]
    fn a_ripple_shape_holds_no_net_volume() {
        // ∫ f(r²/R²) 2πr dr = πR² ∫₀¹ (1−u)²(1−4u) du = 0.
        let steps = 100_000;
        let integral: f64 = (0..steps).map(|k| ripple_shape((k as f32 + 0.5) / steps as f32) as f64).sum::<f64>() / steps as f64;
        println!("∫₀¹ shape du = {integral:.2e}; shape(0) = {}, shape(0.5) = {}", ripple_shape(0.0), ripple_shape(0.5));
        assert!(integral.abs() < 1e-6);
        assert_eq!(ripple_shape(0.0), 1.0);
        assert_eq!(ripple_shape(1.0), 0.0);
    }

    #[test]
    fn a_cells_depth_is_interpolated_from_the_block_around_its_flow_cell() {
        // detail.wgsl's wave step reads the 3 × 3 flow cells around a cell's own and takes the
        // 2 × 2 that flow_sample interpolates from out of them: that needs flow_sample's first
        // cell to be the own one or the one before, on each axis, for every subdivision, phase
        // and window cell (the float quotient rounds, the integer one does not).
        let (mut own, mut before) = (0u64, 0u64);
        for s in 1..=MAX_SUBDIVISION as i32 {
            for phase in 0..s {
                let c = DetailConstants { subdivision: s as u32, inverse_subdivision: 1.0 / s as f32, phase_x: phase, ..Zeroable::zeroed() };
                for x in 0..WINDOW_RANGE.1 as i32 {
                    let region = flow_cell(&c, [x, 0]).region[0];
                    let first = flow_point(&c, [x, 0]).0[0];
                    assert!(first == region || first == region - 1, "subdivision {s}, phase {phase}, cell {x}: flow cell {region}, first sample {first}");
                    if first == region {
                        own += 1;
                    } else {
                        before += 1;
                    }
                }
            }
        }
        println!("first samples: {own} in the own flow cell, {before} in the one before, none elsewhere");
        assert!(own > 0 && before > 0);
    }

    #[test]
    fn the_window_stays_on_the_grid_and_centres_on_small_grids() {
        let grid = Grid::new(100, 40, 1.0).unwrap();
        let layout = DetailLayout { window: 256, subdivision: 4 };
        let far = DetailWindow::around(grid, layout, [1.0e4, -1.0e4]);
        let centre = DetailWindow::around(grid, layout, [0.0, 0.0]);
        println!("far corner: {:?}; centre: {:?}", far.origin, centre.origin);
        // 400 detail cells along x: the window stays inside; 160 along y: centred, 48 over each side.
        assert_eq!(far.origin, [400 - 256, -48]);
        assert_eq!(centre.origin, [72, -48]);
    }
}
