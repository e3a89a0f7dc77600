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
//!
//! Its parts, by file: `detail/window.rs` the window and its toroidal storage, `detail/kernel.rs`
//! the model that `shaders/detail.wgsl` mirrors and [`CpuDetail`] that runs it on the CPU,
//! `detail/driver.rs` what the simulation keeps between frames ([`DetailDriver`]),
//! `detail/hulls.rs` what hulls do to the waves and `detail/tiles.rs` what queries read back.

mod driver;
pub mod host;
pub mod hulls;
pub(crate) mod kernel;
pub mod tiles;
mod window;

pub use driver::{check_ripple, frame_constants, DetailDriver, FramePlace};
pub use kernel::*;
pub use window::{bilinear_height, DetailWindow};

use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use bytemuck::{Pod, Zeroable};

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
