//! Cooling: still fluid that turns into ground, as lava sets ([`crate::Params::solidify_rate`]).
//!
//! After each frame's steps, every cell whose fluid is still ([`cell_is_still`]) gives up to
//! [`quanta_per_cell`] quanta of its depth to its bed. The quanta leave the water and are counted
//! in the ledger as solidified ([`crate::Counters::solidified`]); the bed rises by the same
//! number of quanta, `bed + n·2⁻²⁰ m` rounded once to `f32` ([`raised_bed`]), which is exact for
//! beds that are whole quanta within ±16 m and otherwise off by at most half an `f32` step of the
//! bed, as any terrain edit is. The surface, bed plus depth, does not move: a still pool that sets
//! stays a still pool, only shallower, on a higher floor.
//!
//! Every backend cools, with the same bits: the GPU backends run `shaders/cooling.wgsl`, which
//! judges every cell's stillness before any cell changes and then applies these same functions
//! in `f32` (WGSL has no `f64`, and `f32` addition is correctly rounded on both sides).

use crate::pipes::{carried_depth, flux_per_stored, pipe_width, StepConstants, PIPE_OFFSETS};
use crate::quanta::{DEPTH_QUANTUM, MAX_TERRAIN_ABS};
use crate::state::State;

/// Speed (m/s) under which fluid counts as still and cools: a centimetre a second. A pipe whose
/// fluid moves faster than this, in either direction, keeps both its cells liquid.
pub const SOLIDIFY_SPEED: f32 = 0.01;

/// Whether one pipe carries its fluid slower than [`SOLIDIFY_SPEED`]: `stored` is what it keeps
/// ([`State::flow`]), `carried` its [`carried_depth`] (m) and `width` its width (m). A dry face
/// carries nothing and is still.
#[inline]
pub fn pipe_is_still(c: &StepConstants, stored: f32, carried: f32, width: f32) -> bool {
    carried <= 0.0 || (stored * flux_per_stored(c, carried)).abs() <= SOLIDIFY_SPEED * width * carried
}

/// Whether every pipe through cell `(x, y)` (its owned pipes and those its neighbours own towards
/// it, as the neighbour mode has them: [`StepConstants::pipe_active`]) is still
/// ([`pipe_is_still`]), over the beds `beds` (m) and the state's depths and pipes.
pub fn cell_is_still(c: &StepConstants, state: &State, beds: &[f32], x: u32, y: u32) -> bool {
    let w = c.width as usize;
    let here = y as usize * w + x as usize;
    for (p, &(ox, oy)) in PIPE_OFFSETS.iter().enumerate() {
        // The pipe this cell owns towards (x+ox, y+oy), then the one (x−ox, y−oy) owns towards it.
        for (owner, sign) in [((x as i64, y as i64), 1i64), ((x as i64 - ox as i64, y as i64 - oy as i64), -1)] {
            let other = (x as i64 + sign * ox as i64, y as i64 + sign * oy as i64);
            let inside = |(a, b): (i64, i64)| a >= 0 && b >= 0 && a < c.width as i64 && b < c.height as i64;
            if !inside(owner) || !inside(other) || !c.pipe_active(p, owner.1 as u32) {
                continue;
            }
            let (owner_index, other_index) = (owner.1 as usize * w + owner.0 as usize, other.1 as usize * w + other.0 as usize);
            let neighbour = if owner_index == here { other_index } else { owner_index };
            let (a, b) = if owner_index == here { (here, neighbour) } else { (neighbour, here) };
            let carried = carried_depth(c, beds[a], state.depth[a], beds[b], state.depth[b]);
            let width = pipe_width(c, p, owner.0 as u32, owner.1 as u32);
            if !pipe_is_still(c, state.flow[owner_index][p], carried, width) {
                return false;
            }
        }
    }
    true
}

/// Most quanta a cell turns into ground in one frame: 16 m, below 2²⁴ so that the count is a
/// whole `f32` and [`raised_bed`] rounds once (a frame of [`crate::simulation::MAX_FRAME_DELTA`] at the
/// largest rate turns 10 m).
pub const MAX_QUANTA_PER_FRAME: i32 = (1 << 24) - 1;

/// Quanta that each still cell turns into ground over a frame of `frame_time` seconds at `rate`
/// m/s, with `carry` quanta owed from earlier frames; returns them and what is owed next. The
/// fraction of a quantum a frame cannot turn is carried, so the rate holds however short frames
/// are; past [`MAX_QUANTA_PER_FRAME`] nothing is owed later.
pub fn quanta_per_cell(rate: f32, frame_time: f64, carry: f64) -> (i32, f64) {
    if rate <= 0.0 {
        return (0, 0.0);
    }
    let owed = rate as f64 * frame_time / DEPTH_QUANTUM as f64 + carry;
    let whole = owed.floor().max(0.0);
    if whole > MAX_QUANTA_PER_FRAME as f64 {
        return (MAX_QUANTA_PER_FRAME, 0.0);
    }
    (whole as i32, (owed - whole).max(0.0))
}

/// The bed `bed` (m) raised by `quanta` quanta (at most [`MAX_QUANTA_PER_FRAME`]), rounded once
/// to `f32`, and the quanta that fit below [`MAX_TERRAIN_ABS`] (all of them unless the bed is
/// within reach of that limit).
///
/// In `f32` only, as `cooling.wgsl` computes it, so both give the same bits: the count is a whole
/// `f32` below 2²⁴ and scaling by 2⁻²⁰ is exact, so the one rounding is the addition's, which is
/// correctly rounded on both sides. The room is exact where it matters: for beds above half the
/// limit `MAX_TERRAIN_ABS − bed` is exact (Sterbenz), and below that it is over 2³⁸ quanta.
#[inline]
pub fn raised_bed(bed: f32, quanta: i32) -> (f32, i32) {
    let room = ((MAX_TERRAIN_ABS - bed) * (1u32 << 20) as f32).floor().max(0.0);
    let fits = (quanta.clamp(0, MAX_QUANTA_PER_FRAME) as f32).min(room) as i32;
    (bed + fits as f32 * DEPTH_QUANTUM, fits)
}

/// Turns up to `per_cell` quanta of every still cell's depth into ground: `state`'s depth falls
/// and its terrain rises by the same quanta ([`raised_bed`]); stillness is judged on `beds` (the
/// bed the step sees) before any cell changes. Returns the quanta turned and the cells changed.
pub fn solidify(c: &StepConstants, state: &mut State, beds: &[f32], per_cell: i32) -> (u64, Vec<u32>) {
    if per_cell <= 0 {
        return (0, Vec::new());
    }
    let still: Vec<u32> = (0..c.height)
        .flat_map(|y| (0..c.width).map(move |x| (x, y)))
        .filter(|&(x, y)| state.depth[(y * c.width + x) as usize] > 0 && cell_is_still(c, state, beds, x, y))
        .map(|(x, y)| y * c.width + x)
        .collect();
    let mut turned = 0u64;
    let mut changed = Vec::with_capacity(still.len());
    for cell in still {
        let i = cell as usize;
        let (bed, fits) = raised_bed(state.terrain[i], per_cell.min(state.depth[i]));
        if fits > 0 {
            state.terrain[i] = bed;
            state.depth[i] -= fits;
            turned += fits as u64;
            changed.push(cell);
        }
    }
    (turned, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's quanta carry their fraction: a rate of exactly 1.5 quanta per frame turns 1, 2,
    /// 1, 2 … quanta, 15 over ten frames.
    #[test]
    fn quanta_per_cell_carries_the_fraction_of_a_quantum() {
        let rate = 1.5 * DEPTH_QUANTUM;
        let (mut carry, mut sum, mut seen) = (0.0, 0, Vec::new());
        for _ in 0..10 {
            let (q, next) = quanta_per_cell(rate, 1.0, carry);
            carry = next;
            sum += q;
            seen.push(q);
        }
        println!("quanta per frame {seen:?}, sum {sum}, carry {carry}");
        assert_eq!(seen[..4], [1, 2, 1, 2]);
        assert_eq!(sum, 15);
        assert_eq!(quanta_per_cell(0.0, 1.0, 0.7), (0, 0.0), "off owes nothing");
    }

    /// A bed at the terrain limit takes no quanta; a bed of whole quanta below 16 m rises exactly.
    #[test]
    fn raised_bed_is_exact_for_whole_quanta_and_stops_at_the_terrain_limit() {
        let bed = 12_345_678.0 * DEPTH_QUANTUM;
        let (raised, fits) = raised_bed(bed, 1_000);
        println!("{bed} m + 1000 quanta = {raised} m ({fits} fit); at the limit: {:?}", raised_bed(MAX_TERRAIN_ABS, 5));
        assert_eq!(fits, 1_000);
        assert_eq!(((raised - bed) as f64 / DEPTH_QUANTUM as f64), 1_000.0);
        assert_eq!(raised_bed(MAX_TERRAIN_ABS, 5).1, 0);
    }
}
