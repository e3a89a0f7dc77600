//! Water depth is stored as an integer number of quanta.
//!
//! Every pipe moves a whole number of quanta, and both cells of the pipe apply that same whole
//! number with opposite signs. Integer addition is exact, so water is never created or
//! destroyed by rounding: the mass identity holds exactly on every backend, and GPU ledgers can
//! be summed with integer atomics. The quantum is a power of two so that conversions between
//! quanta and metres are exact in `f32` for depths below 16 m and exact in `f64` always.

/// Depth of one quantum, in metres (2⁻²⁰ m ≈ 0.95 µm).
pub const DEPTH_QUANTUM: f32 = 1.0 / (1u32 << 20) as f32;

/// Deepest water a cell can hold, in quanta (`i32::MAX` quanta ≈ 2048 m).
pub const MAX_DEPTH_QUANTA: i32 = i32::MAX;

/// Deepest water a cell can hold, in metres.
pub const MAX_DEPTH: f32 = MAX_DEPTH_QUANTA as f32 * DEPTH_QUANTUM;

/// Largest terrain height magnitude, m. Keeps surface differences far from `f32` overflow.
/// Here rather than in [`crate::state`] because parameters (a fixed-level edge) are checked
/// against it too, and `state` depends on `params`.
pub const MAX_TERRAIN_ABS: f32 = 1.0e6;

/// Converts quanta to metres of depth.
#[inline]
pub fn quanta_to_depth(quanta: i32) -> f32 {
    quanta as f32 * DEPTH_QUANTUM
}

/// Converts a depth in metres to the nearest number of quanta, saturating at the valid range.
#[inline]
pub fn depth_to_quanta(depth: f32) -> i32 {
    let q = (depth as f64 / DEPTH_QUANTUM as f64).round();
    q.clamp(0.0, MAX_DEPTH_QUANTA as f64) as i32
}

/// Volume of one quantum in a cell of side `cell_size` metres, in m³.
#[inline]
pub fn quantum_volume(cell_size: f32) -> f64 {
    DEPTH_QUANTUM as f64 * cell_size as f64 * cell_size as f64
}
