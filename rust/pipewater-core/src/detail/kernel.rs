//! The model, one function per WGSL function of `shaders/detail.wgsl` (which mirrors them
//! operation for operation), and [`CpuDetail`], the CPU backend that runs them over the window.

use super::{DetailConstants, DetailFrame, DetailLayout, Ripple, RAIN_DROP_RADIUS};
use crate::error::{Error, Result};
use rayon::prelude::*;

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
pub(super) fn lerp(a: f32, b: f32, t: f32) -> f32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::{MAX_SUBDIVISION, WINDOW_RANGE};
    use bytemuck::Zeroable;

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
}
