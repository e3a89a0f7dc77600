//! Hulls and the detail waves: the pressure a hull puts on the layer, and (for hulls that ride
//! the waves) the force the waves put back.
//!
//! The flow grid already feels every hull ([`crate::bodies`]): it sees the bed raised by the
//! hull's draft and carries the waves that raises as far as its cells resolve them. The detail
//! layer takes only what the flow grid cannot resolve: the hull's pressure head `P` (its draft
//! below the water level, per detail cell) minus `P` blurred over a flow cell (a Gaussian of
//! σ = one flow cell), so that the two layers do not both carry the same long waves. That fine
//! part drives `∇²(h + P)` in the wave step ([`super::wave_cell`]): a moving hull pushes a bow
//! wave ahead and leaves a wake, a V behind it once it outruns the celerity, and a hull dropping
//! in sends out a ring that grows with how fast it entered.

use super::{storage_index, DetailPressure, DetailWindow};
use crate::bodies::{column, Body};
use glam::Vec3;
use std::collections::HashMap;

/// Gaussian reach of the blur, in standard deviations.
const BLUR_REACH: f32 = 3.0;

/// The fine part of the pressure head of `bodies` (m, scaled by `strength`) over the detail cells
/// of `window`, each cell once, sorted by storage index. `levels[i]` is the water level around
/// body `i` (local Y, m) from its coupling; bodies without one (out of the water, invalid) put no
/// pressure.
pub fn hull_pressure(window: &DetailWindow, bodies: &[Body], levels: &[Option<f32>], strength: f32) -> Vec<DetailPressure> {
    let sigma = window.layout.subdivision as f32;
    let reach = (BLUR_REACH * sigma).ceil() as i32;
    let weights: Vec<f32> = {
        let raw: Vec<f32> = (-reach..=reach).map(|k| (-(k * k) as f32 / (2.0 * sigma * sigma)).exp()).collect();
        let total: f32 = raw.iter().sum();
        raw.iter().map(|w| w / total).collect()
    };
    let n = window.layout.window as i32;
    let mut fine: HashMap<[i32; 2], f32> = HashMap::new();
    for (body, level) in bodies.iter().zip(levels) {
        let Some(level) = *level else { continue };
        if strength == 0.0 || body.check().is_err() {
            continue;
        }
        let parts = body.placed_parts();
        let (centre, radius) = body.horizontal_bounds();
        let lo = window.local_to_detail(centre[0] - radius, centre[1] - radius);
        let hi = window.local_to_detail(centre[0] + radius, centre[1] + radius);
        // The footprint, widened by the blur's reach twice (the blurred pressure reaches that far
        // beyond it), and only as far beyond the window as the blur reads.
        let x0 = (lo[0].floor() as i32 - 2 * reach).max(window.origin[0] - reach);
        let y0 = (lo[1].floor() as i32 - 2 * reach).max(window.origin[1] - reach);
        let x1 = (hi[0].ceil() as i32 + 2 * reach).min(window.origin[0] + n + reach);
        let y1 = (hi[1].ceil() as i32 + 2 * reach).min(window.origin[1] + n + reach);
        if x1 <= x0 || y1 <= y0 {
            continue;
        }
        let (w, h) = ((x1 - x0) as usize, (y1 - y0) as usize);
        let mut head = vec![0.0f32; w * h];
        for ry in 0..h {
            for rx in 0..w {
                let [cx, cz] = window.cell_centre([x0 + rx as i32, y0 + ry as i32]);
                if let Some((bottom, top)) = column(&parts, cx, cz) {
                    head[ry * w + rx] = (top.min(level) - bottom).max(0.0) * strength;
                }
            }
        }
        let blurred = blur(&head, w, h, &weights, reach);
        for ry in 0..h {
            for rx in 0..w {
                let value = head[ry * w + rx] - blurred[ry * w + rx];
                let g = [x0 + rx as i32, y0 + ry as i32];
                if value != 0.0 && window.contains(g) {
                    *fine.entry(g).or_insert(0.0) += value;
                }
            }
        }
    }
    let mut cells: Vec<DetailPressure> = fine
        .into_iter()
        .filter(|(_, v)| v.abs() > 1.0e-7)
        .map(|(g, head)| DetailPressure { cell: storage_index(window.layout.window, g) as u32, head })
        .collect();
    cells.sort_unstable_by_key(|p| p.cell);
    cells
}

/// Separable blur of a `w × h` field with `weights` (`2·reach + 1` taps); zero beyond its edges.
fn blur(field: &[f32], w: usize, h: usize, weights: &[f32], reach: i32) -> Vec<f32> {
    let mut rows = vec![0.0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut sum = 0.0;
            for (k, weight) in weights.iter().enumerate() {
                let sx = x as i32 + k as i32 - reach;
                if sx >= 0 && (sx as usize) < w {
                    sum += weight * field[y * w + sx as usize];
                }
            }
            rows[y * w + x] = sum;
        }
    }
    let mut out = vec![0.0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut sum = 0.0;
            for (k, weight) in weights.iter().enumerate() {
                let sy = y as i32 + k as i32 - reach;
                if sy >= 0 && (sy as usize) < h {
                    sum += weight * rows[sy as usize * w + x];
                }
            }
            out[y * w + x] = sum;
        }
    }
    out
}

/// The detail cells of `window` where `body`'s hull pierces the water level `level` (its
/// waterplane): what the detail waves push on.
pub fn waterplane(window: &DetailWindow, body: &Body, level: f32) -> Vec<[i32; 2]> {
    if body.check().is_err() {
        return Vec::new();
    }
    let parts = body.placed_parts();
    let (centre, radius) = body.horizontal_bounds();
    let lo = window.local_to_detail(centre[0] - radius, centre[1] - radius);
    let hi = window.local_to_detail(centre[0] + radius, centre[1] + radius);
    let n = window.layout.window as i32;
    let (x0, y0) = ((lo[0].floor() as i32).max(window.origin[0]), (lo[1].floor() as i32).max(window.origin[1]));
    let (x1, y1) = ((hi[0].ceil() as i32).min(window.origin[0] + n), (hi[1].ceil() as i32).min(window.origin[1] + n));
    let mut cells = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let [cx, cz] = window.cell_centre([x, y]);
            if let Some((bottom, top)) = column(&parts, cx, cz) {
                if bottom < level && level < top {
                    cells.push([x, y]);
                }
            }
        }
    }
    cells
}

/// The force (N, up) and torque (N·m, about the body's origin) the detail waves of `heights` (m,
/// one per cell of `cells`, a [`waterplane`]) put on a body riding them at water level `level`:
/// the weight of the water they raise over its waterplane, `ρ·g·h·cell²` per cell, at the cell.
#[allow(clippy::too_many_arguments)]
pub fn riding_force(window: &DetailWindow, body: &Body, level: f32, cells: &[[i32; 2]], heights: &[f32], density: f32, gravity: f32) -> (Vec3, Vec3) {
    let area = window.cell_size() * window.cell_size();
    let (mut force, mut torque) = (Vec3::ZERO, Vec3::ZERO);
    for (g, h) in cells.iter().zip(heights) {
        let [cx, cz] = window.cell_centre(*g);
        let lift = Vec3::new(0.0, density * gravity * h * area, 0.0);
        force += lift;
        torque += (Vec3::new(cx, level, cz) - body.position).cross(lift);
    }
    (force, torque)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bodies::HullShape;
    use crate::detail::DetailLayout;
    use crate::grid::Grid;

    #[test]
    fn a_hull_far_larger_than_a_flow_cell_puts_pressure_only_along_its_edges() {
        let grid = Grid::new(64, 64, 1.0).unwrap();
        let window = DetailWindow::around(grid, DetailLayout { window: 256, subdivision: 4 }, [0.0, 0.0]);
        let body = Body::new(Vec3::new(0.0, 0.0, 0.0), HullShape::Box { half_extents: Vec3::new(10.0, 1.0, 10.0) });
        let cells = hull_pressure(&window, &[body], &[Some(0.5)], 1.0);
        let at = |x: f32, z: f32| {
            let g = window.local_to_detail(x, z);
            let i = storage_index(256, [g[0] as i32, g[1] as i32]) as u32;
            cells.iter().find(|p| p.cell == i).map_or(0.0, |p| p.head)
        };
        let (middle, edge_inside, edge_outside) = (at(0.1, 0.1), at(9.6, 0.1), at(10.4, 0.1));
        println!("draft 1.5 m: fine pressure at the middle {middle:.4}, just inside the edge {edge_inside:.4}, just outside {edge_outside:.4}");
        // The middle of a 20 m hull is seen by the flow grid: nothing fine is left there.
        assert!(middle.abs() < 1.0e-3);
        assert!(edge_inside > 0.1 && edge_outside < -0.1, "a step in pressure at the edge, positive inside and negative outside");
    }
}
