//! Ground read from a terrain a game already has (a Terrain3D world, an HTerrain map, a height
//! map shape, a bake by rays): where the water's cells fall on the source's grid of vertices,
//! which vertices a run of cells needs, which cells a changed run of vertices touches, the
//! resampling from one to the other with holes, and the grid that fits a source. Engine-agnostic:
//! the engine side turns its transforms into a [`SourcePlacement`] and its maps into a
//! [`HeightWindow`].
//!
//! Coordinates: the source's vertex `(u, v)` is its column and row (integers at vertices); the
//! water's continuous cell coordinate `(cx, cy)` has cell `(x, y)` between `x ..= x + 1` and
//! `y ..= y + 1`, so its centre is `(x + 0.5, y + 0.5)`.

use crate::grid::{CellRect, Grid};
use crate::quanta::MAX_TERRAIN_ABS;

/// Most samples along each side of one cell when a cell covers several source vertices: a cell
/// takes the mean of `n × n` bilinear samples of the source, `n` being the number of vertices
/// its side spans (so one sample per vertex), at most this many.
pub const MAX_SAMPLES_PER_SIDE: u32 = 8;

/// What the water does where the source has no ground (a Terrain3D hole, a place outside every
/// region, an HTerrain or shape pixel that is not finite, a ray that hit nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HoleGround {
    /// Ground the water cannot enter: the cell's ground stands at [`WALL_HEIGHT`], and a dry
    /// face above higher ground carries nothing, so no water crosses into it and none is lost.
    #[default]
    Wall,
    /// The hole swallows what reaches it: its cells next to ground keep the lowest height of
    /// the ground around them and a drain takes the water that flows onto them (the ledger
    /// counts it as removed); cells deeper inside the hole are walls, which nothing can reach.
    Drain,
}

/// Height of a wall cell, local m: the highest ground the model accepts, far above any water
/// (a cell holds at most 2048 m).
pub const WALL_HEIGHT: f32 = MAX_TERRAIN_ABS;

/// The affine map from the water's cell coordinates to a source's vertex coordinates, and from
/// the source's height values to the water's local heights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourcePlacement {
    /// Vertex coordinate `(u, v)` of cell coordinate `(0, 0)` (the grid's −X −Z corner).
    pub origin: [f64; 2],
    /// Change of `(u, v)` per cell along the water's x.
    pub along_x: [f64; 2],
    /// Change of `(u, v)` per cell along the water's y (local Z).
    pub along_y: [f64; 2],
    /// Local height = `height_scale × value + height_offset`.
    pub height_scale: f64,
    /// See `height_scale`, local m.
    pub height_offset: f64,
}

/// A block of a source's heights: vertices `u0 .. u0 + width` by `v0 .. v0 + height`, row-major.
/// NaN marks a vertex without ground (a hole, a gap between regions).
#[derive(Clone, Debug, PartialEq)]
pub struct HeightWindow {
    /// First vertex column.
    pub u0: i64,
    /// First vertex row.
    pub v0: i64,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width × height` values, `index = (v − v0) × width + (u − u0)`.
    pub values: Vec<f32>,
}

/// An inclusive range of source vertices: columns `u0 ..= u1`, rows `v0 ..= v1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VertexRect {
    /// First column.
    pub u0: i64,
    /// First row.
    pub v0: i64,
    /// Last column.
    pub u1: i64,
    /// Last row.
    pub v1: i64,
}

impl VertexRect {
    /// The part of `self` inside `other`; `None` when they do not meet.
    pub fn intersect(&self, other: &VertexRect) -> Option<VertexRect> {
        let r = VertexRect { u0: self.u0.max(other.u0), v0: self.v0.max(other.v0), u1: self.u1.min(other.u1), v1: self.v1.min(other.v1) };
        (r.u0 <= r.u1 && r.v0 <= r.v1).then_some(r)
    }

    /// Vertices it holds.
    pub fn count(&self) -> usize {
        ((self.u1 - self.u0 + 1).max(0) * (self.v1 - self.v0 + 1).max(0)) as usize
    }
}

impl HeightWindow {
    /// A window of `rect` with no ground anywhere (all NaN), to fill from the source.
    pub fn empty(rect: VertexRect) -> HeightWindow {
        let (width, height) = ((rect.u1 - rect.u0 + 1).max(0) as usize, (rect.v1 - rect.v0 + 1).max(0) as usize);
        HeightWindow { u0: rect.u0, v0: rect.v0, width, height, values: vec![f32::NAN; width * height] }
    }

    /// The value at vertex `(u, v)`, NaN outside the window.
    pub fn at(&self, u: i64, v: i64) -> f32 {
        let (x, y) = (u - self.u0, v - self.v0);
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return f32::NAN;
        }
        self.values[y as usize * self.width + x as usize]
    }

    /// Copies `rows` (row-major, `rect`'s size) into the part of the window `rect` covers.
    pub fn paste(&mut self, rect: VertexRect, rows: &[f32]) {
        let w = (rect.u1 - rect.u0 + 1) as usize;
        let mine = VertexRect { u0: self.u0, v0: self.v0, u1: self.u0 + self.width as i64 - 1, v1: self.v0 + self.height as i64 - 1 };
        let Some(common) = rect.intersect(&mine) else { return };
        for v in common.v0..=common.v1 {
            let from = (v - rect.v0) as usize * w + (common.u0 - rect.u0) as usize;
            let to = (v - self.v0) as usize * self.width + (common.u0 - self.u0) as usize;
            let n = (common.u1 - common.u0 + 1) as usize;
            self.values[to..to + n].copy_from_slice(&rows[from..from + n]);
        }
    }
}

impl SourcePlacement {
    /// The placement of a water grid `grid` (centred on its node, cells of `grid.cell_size`
    /// local m) over a source whose vertex `(u, h, v)` lands at the water node's local point
    /// `origin + u·col_u + h·col_h + v·col_v` (the source's vertex transform composed with the
    /// inverse of the water node's global transform). Refused when either is tilted (the source's
    /// rows or columns climb, or its heights lean sideways) or its vertex axes are degenerate:
    /// the water's ground must be a height over its own XZ plane.
    pub fn from_local_affine(grid: &Grid, origin: [f64; 3], col_u: [f64; 3], col_h: [f64; 3], col_v: [f64; 3]) -> Result<SourcePlacement, String> {
        let all = [origin, col_u, col_h, col_v];
        if all.iter().flatten().any(|c| !c.is_finite()) {
            return Err("the source's transform is not finite".into());
        }
        let spacing = (col_u[0].hypot(col_u[2])).max(col_v[0].hypot(col_v[2]));
        const TILT: f64 = 1.0e-4;
        if col_u[1].abs() > TILT * spacing || col_v[1].abs() > TILT * spacing || col_h[0].abs() > TILT * col_h[1].abs() || col_h[2].abs() > TILT * col_h[1].abs() {
            return Err("the source is tilted against the water node (valid: both upright, turned only about Y)".into());
        }
        let det = col_u[0] * col_v[2] - col_v[0] * col_u[2];
        if det.abs() < 1.0e-12 || col_h[1] == 0.0 {
            return Err("the source's vertex spacing or height scale is zero".into());
        }
        // (x, z) = o + u·a + v·b, solved for (u, v) at the local points of cell coordinates.
        let inverse = |x: f64, z: f64| {
            let (dx, dz) = (x - origin[0], z - origin[2]);
            [(dx * col_v[2] - col_v[0] * dz) / det, (col_u[0] * dz - dx * col_u[2]) / det]
        };
        let cell = grid.cell_size as f64;
        let corner = [-(grid.width as f64) * cell / 2.0, -(grid.height as f64) * cell / 2.0];
        let o = inverse(corner[0], corner[1]);
        let ex = inverse(corner[0] + cell, corner[1]);
        let ey = inverse(corner[0], corner[1] + cell);
        Ok(SourcePlacement {
            origin: o,
            along_x: [ex[0] - o[0], ex[1] - o[1]],
            along_y: [ey[0] - o[0], ey[1] - o[1]],
            height_scale: col_h[1],
            height_offset: origin[1],
        })
    }

    /// The vertex coordinate of continuous cell coordinate `(cx, cy)`.
    pub fn vertex_at(&self, cx: f64, cy: f64) -> [f64; 2] {
        [self.origin[0] + cx * self.along_x[0] + cy * self.along_y[0], self.origin[1] + cx * self.along_x[1] + cy * self.along_y[1]]
    }

    /// Samples along each side of a cell: one per source vertex its side spans, `1 ..=`
    /// [`MAX_SAMPLES_PER_SIDE`].
    pub fn samples_per_side(&self) -> u32 {
        let span = self.along_x[0].hypot(self.along_x[1]).max(self.along_y[0].hypot(self.along_y[1]));
        // A cell one vertex wide (within rounding) takes the one vertex under its centre.
        (span - 1.0e-6).ceil().clamp(1.0, MAX_SAMPLES_PER_SIDE as f64) as u32
    }

    /// The vertices the cells of `rect` read: every vertex that a bilinear sample inside them
    /// weighs.
    pub fn vertices_for(&self, rect: CellRect) -> VertexRect {
        let corners = [(rect.x, rect.y), (rect.x + rect.width, rect.y), (rect.x, rect.y + rect.height), (rect.x + rect.width, rect.y + rect.height)];
        let points = corners.map(|(x, y)| self.vertex_at(x as f64, y as f64));
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for p in points {
            for a in 0..2 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        VertexRect { u0: lo[0].floor() as i64, v0: lo[1].floor() as i64, u1: hi[0].ceil() as i64, v1: hi[1].ceil() as i64 }
    }

    /// The water's ground at source vertex `(u, v)`, bilinear between the centres of the four
    /// cells around it, from `ground` (the cells of `rect`, row-major); `None` when those cells
    /// are not all inside `rect` or one is a wall ([`WALL_HEIGHT`]). The inverse of sampling, for
    /// writing an edit of the water's ground back to its source.
    pub fn ground_at_vertex(&self, ground: &[f32], rect: CellRect, u: i64, v: i64) -> Option<f32> {
        let det = self.along_x[0] * self.along_y[1] - self.along_y[0] * self.along_x[1];
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let (du, dv) = (u as f64 - self.origin[0], v as f64 - self.origin[1]);
        // Cell coordinates of the vertex, less a half: the frame whose integers are cell centres.
        let cx = (du * self.along_y[1] - self.along_y[0] * dv) / det - 0.5;
        let cy = (self.along_x[0] * dv - du * self.along_x[1]) / det - 0.5;
        let (fx, fy) = (cx.floor(), cy.floor());
        let (tx, ty) = (cx - fx, cy - fy);
        let mut sum = 0.0f64;
        for (dx, wx) in [(0.0, 1.0 - tx), (1.0, tx)] {
            for (dy, wy) in [(0.0, 1.0 - ty), (1.0, ty)] {
                let w = wx * wy;
                if w <= 1.0e-9 {
                    continue;
                }
                let (x, y) = (fx + dx - rect.x as f64, fy + dy - rect.y as f64);
                if x < 0.0 || y < 0.0 || x >= rect.width as f64 || y >= rect.height as f64 {
                    return None;
                }
                let h = ground[y as usize * rect.width as usize + x as usize];
                if h >= WALL_HEIGHT {
                    return None;
                }
                sum += w * h as f64;
            }
        }
        Some(sum as f32)
    }

    /// The cells of `grid` whose ground changes when the vertices of `changed` change: those whose
    /// samples weigh any of them (the changed vertices grown by one for the bilinear reach), or
    /// `None` when none lies on the grid.
    pub fn cells_touched(&self, grid: &Grid, changed: VertexRect) -> Option<CellRect> {
        let det = self.along_x[0] * self.along_y[1] - self.along_y[0] * self.along_x[1];
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let to_cell = |u: f64, v: f64| {
            let (du, dv) = (u - self.origin[0], v - self.origin[1]);
            [(du * self.along_y[1] - self.along_y[0] * dv) / det, (self.along_x[0] * dv - du * self.along_x[1]) / det]
        };
        let (u0, v0, u1, v1) = ((changed.u0 - 1) as f64, (changed.v0 - 1) as f64, (changed.u1 + 1) as f64, (changed.v1 + 1) as f64);
        let points = [to_cell(u0, v0), to_cell(u1, v0), to_cell(u0, v1), to_cell(u1, v1)];
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for p in points {
            for a in 0..2 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        let x0 = lo[0].floor().max(0.0);
        let y0 = lo[1].floor().max(0.0);
        let x1 = hi[0].ceil().min(grid.width as f64);
        let y1 = hi[1].ceil().min(grid.height as f64);
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        Some(CellRect { x: x0 as u32, y: y0 as u32, width: (x1 - x0) as u32, height: (y1 - y0) as u32 })
    }
}

/// How near a vertex (in vertex spacings) a sample counts as on it. Placements come through
/// Godot's f32 transforms: a turned HTerrain put cell centres 1e-5 of a vertex off (seen with
/// the real addon), and an f32 position 4096 vertices out is good to about 1e-3 m.
const ON_VERTEX: f64 = 1.0e-3;

/// The bilinear sample of `window` at vertex coordinate `(u, v)`; NaN when a vertex it weighs
/// has no ground. A sample on a vertex (within [`ON_VERTEX`]) weighs that vertex alone, so a hole
/// next to it does not spread and its height is exact.
fn bilinear(window: &HeightWindow, u: f64, v: f64) -> f32 {
    let (fu, fv) = (u.floor(), v.floor());
    let (mut tu, mut tv) = (u - fu, v - fv);
    let (mut iu, mut iv) = (fu as i64, fv as i64);
    // Snapped before the weights are taken, so the weights still sum to one.
    if tu < ON_VERTEX {
        tu = 0.0;
    } else if tu > 1.0 - ON_VERTEX {
        iu += 1;
        tu = 0.0;
    }
    if tv < ON_VERTEX {
        tv = 0.0;
    } else if tv > 1.0 - ON_VERTEX {
        iv += 1;
        tv = 0.0;
    }
    let mut sum = 0.0f64;
    for (du, wu) in [(0, 1.0 - tu), (1, tu)] {
        for (dv, wv) in [(0, 1.0 - tv), (1, tv)] {
            let w = wu * wv;
            if w == 0.0 {
                continue;
            }
            let h = window.at(iu + du, iv + dv);
            if !h.is_finite() {
                return f32::NAN;
            }
            sum += w * h as f64;
        }
    }
    sum as f32
}

/// The ground of the cells of `rect`, read from `window` (which must hold
/// [`SourcePlacement::vertices_for`] of `rect`; vertices it lacks count as holes): local m,
/// row-major over `rect`. A cell is the mean of its samples ([`SourcePlacement::samples_per_side`]
/// per side); when fewer than half of them find ground it is a hole, and NaN here (see
/// [`resolve_holes`]). Heights past ±[`MAX_TERRAIN_ABS`] are clamped to it.
pub fn sample_cells(placement: &SourcePlacement, window: &HeightWindow, rect: CellRect) -> Vec<f32> {
    let n = placement.samples_per_side();
    let step = 1.0 / n as f64;
    let mut out = Vec::with_capacity(rect.cell_count());
    for y in rect.y..rect.y + rect.height {
        for x in rect.x..rect.x + rect.width {
            let (mut sum, mut found) = (0.0f64, 0u32);
            for j in 0..n {
                for i in 0..n {
                    let [u, v] = placement.vertex_at(x as f64 + (i as f64 + 0.5) * step, y as f64 + (j as f64 + 0.5) * step);
                    let h = bilinear(window, u, v);
                    if h.is_finite() {
                        sum += h as f64;
                        found += 1;
                    }
                }
            }
            if found * 2 < n * n || found == 0 {
                out.push(f32::NAN);
                continue;
            }
            let local = placement.height_scale * (sum / found as f64) + placement.height_offset;
            out.push(local.clamp(-MAX_TERRAIN_ABS as f64, MAX_TERRAIN_ABS as f64) as f32);
        }
    }
    out
}

/// A hole's cells after [`resolve_holes`]: where drains go (cells, row-major in the rect, that
/// border ground), empty for [`HoleGround::Wall`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HoleCells {
    /// Cells that were holes.
    pub holes: usize,
    /// Hole cells next to ground that take a drain (`HoleGround::Drain`), as `(x, y)` of the grid.
    pub drains: Vec<(u32, u32)>,
}

/// Gives the NaN cells of `heights` (the cells of `rect`, from [`sample_cells`]) their ground as
/// `holes` says: all [`WALL_HEIGHT`] for a wall; for a drain the hole cells with ground among
/// their eight neighbours (inside `rect`) take the lowest of it and are listed as drains, the
/// rest are walls.
pub fn resolve_holes(heights: &mut [f32], rect: CellRect, holes: HoleGround) -> HoleCells {
    let (w, h) = (rect.width as i64, rect.height as i64);
    let original: Vec<f32> = heights.to_vec();
    let mut cells = HoleCells::default();
    for y in 0..h {
        for x in 0..w {
            let i = (y * w + x) as usize;
            if original[i].is_finite() {
                continue;
            }
            cells.holes += 1;
            heights[i] = WALL_HEIGHT;
            if holes == HoleGround::Wall {
                continue;
            }
            let mut lowest = f32::INFINITY;
            for (dx, dy) in [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)] {
                let (nx, ny) = (x + dx, y + dy);
                if nx >= 0 && ny >= 0 && nx < w && ny < h {
                    let g = original[(ny * w + nx) as usize];
                    if g.is_finite() {
                        lowest = lowest.min(g);
                    }
                }
            }
            if lowest.is_finite() {
                heights[i] = lowest;
                cells.drains.push((rect.x + x as u32, rect.y + y as u32));
            }
        }
    }
    cells
}

/// A grid that fits a source: one cell per `multiple` vertices along each side, centred on the
/// source's vertices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FittedGrid {
    /// Cells along the source's u and v.
    pub cells: [u32; 2],
    /// Vertex coordinate `(u, v)` of the grid's centre.
    pub centre: [f64; 2],
    /// Cell side in vertex spacings (`multiple`).
    pub vertices_per_cell: u32,
}

/// The grid for source vertices `vertices` (inclusive) with one cell per `multiple` vertices
/// (`1 ..= 64`): `ceil(count / multiple)` cells along each side, whose centres fall on vertex
/// `u0 + multiple·x + (multiple − 1)/2` (on the vertices themselves for 1). Refused, with the
/// smallest multiple that fits, when a side would pass `max_side` cells, and when the source has
/// fewer than 2 cells a side.
pub fn fit_grid(vertices: VertexRect, multiple: u32, max_side: u32) -> Result<FittedGrid, String> {
    if !(1..=64).contains(&multiple) {
        return Err(format!("cells_per_vertex multiple = {multiple}: valid are 1 ..= 64 vertices per cell"));
    }
    let counts = [(vertices.u1 - vertices.u0 + 1).max(0) as u64, (vertices.v1 - vertices.v0 + 1).max(0) as u64];
    let m = multiple as u64;
    let cells = counts.map(|c| c.div_ceil(m));
    let longest = counts[0].max(counts[1]);
    if cells.iter().any(|&c| c > max_side as u64) {
        let fits = longest.div_ceil(max_side as u64);
        return Err(format!("the source has {}×{} vertices: {multiple} vertices per cell gives {}×{} cells, past the {max_side} a side the grid holds (valid: {fits} or more vertices per cell)", counts[0], counts[1], cells[0], cells[1]));
    }
    if cells.iter().any(|&c| c < 2) {
        return Err(format!("the source has {}×{} vertices: {multiple} vertices per cell gives fewer than 2 cells a side", counts[0], counts[1]));
    }
    let centre = [vertices.u0 as f64 + (m * cells[0] - 1) as f64 / 2.0, vertices.v0 as f64 + (m * cells[1] - 1) as f64 / 2.0];
    Ok(FittedGrid { cells: [cells[0] as u32, cells[1] as u32], centre, vertices_per_cell: multiple })
}

/// The smallest rectangle of vertices where `before` and `after` (both `width × height`,
/// row-major) differ bit for bit, as a [`VertexRect`] from `(0, 0)`; `None` when they agree.
/// For sources that tell only that they changed (a shape's new data, a new bake).
pub fn changed_vertices(before: &[f32], after: &[f32], width: usize) -> Option<VertexRect> {
    if before.len() != after.len() || width == 0 {
        let rows = after.len().div_ceil(width.max(1));
        return Some(VertexRect { u0: 0, v0: 0, u1: width as i64 - 1, v1: rows as i64 - 1 });
    }
    let mut rect: Option<VertexRect> = None;
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        if a.to_bits() == b.to_bits() {
            continue;
        }
        let (u, v) = ((i % width) as i64, (i / width) as i64);
        rect = Some(match rect {
            None => VertexRect { u0: u, v0: v, u1: u, v1: v },
            Some(r) => VertexRect { u0: r.u0.min(u), v0: r.v0.min(v), u1: r.u1.max(u), v1: r.v1.max(v) },
        });
    }
    rect
}

/// The cells of `rect` with the ring of one cell around it that lies on a `width × height` grid:
/// what a read of `rect` samples, so that a hole at its edge sees the ground beyond it.
pub fn context_around(rect: CellRect, width: u32, height: u32) -> CellRect {
    let (x0, y0) = (rect.x.saturating_sub(1), rect.y.saturating_sub(1));
    CellRect { x: x0, y: y0, width: (rect.x + rect.width + 1).min(width) - x0, height: (rect.y + rect.height + 1).min(height) - y0 }
}

/// The ground of the cells of `rect` read from `window` (which holds
/// [`SourcePlacement::vertices_for`] of `context`, a rect holding `rect`, usually
/// [`context_around`] it): [`sample_cells`] over `context`, holes resolved with their neighbours
/// there ([`resolve_holes`]), cropped to `rect` (row-major), with the drain cells that lie in
/// `rect` and the number of hole cells in `rect`.
pub fn ground_of_cells(placement: &SourcePlacement, window: &HeightWindow, context: CellRect, rect: CellRect, holes: HoleGround) -> (Vec<f32>, Vec<(u32, u32)>, usize) {
    let mut heights = sample_cells(placement, window, context);
    let in_rect = |x: u32, y: u32| x >= rect.x && y >= rect.y && x < rect.x + rect.width && y < rect.y + rect.height;
    let hole_cells = (0..heights.len()).filter(|&i| !heights[i].is_finite() && in_rect(context.x + (i as u32 % context.width), context.y + (i as u32 / context.width))).count();
    let resolved = resolve_holes(&mut heights, context, holes);
    let mut cropped = Vec::with_capacity(rect.cell_count());
    for y in rect.y..rect.y + rect.height {
        let start = ((y - context.y) * context.width + (rect.x - context.x)) as usize;
        cropped.extend_from_slice(&heights[start..start + rect.width as usize]);
    }
    (cropped, resolved.drains.into_iter().filter(|&(x, y)| in_rect(x, y)).collect(), hole_cells)
}

impl SourcePlacement {
    /// Whether every sample the cells of a `cells[0] × cells[1]` grid take lies within the source's
    /// vertices `bounds` (to [`ON_VERTEX`]): `Err` with the figures when the grid reaches past the
    /// source. For a world, whose ground outside its source would otherwise be walls it never
    /// asked for.
    pub fn check_covered_by(&self, cells: [u32; 2], bounds: VertexRect) -> Result<(), String> {
        let n = self.samples_per_side() as f64;
        let (first, last) = (0.5 / n, [cells[0] as f64 - 0.5 / n, cells[1] as f64 - 0.5 / n]);
        let corners = [self.vertex_at(first, first), self.vertex_at(last[0], first), self.vertex_at(first, last[1]), self.vertex_at(last[0], last[1])];
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for p in corners {
            for a in 0..2 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        let inside = lo[0] >= bounds.u0 as f64 - ON_VERTEX && lo[1] >= bounds.v0 as f64 - ON_VERTEX && hi[0] <= bounds.u1 as f64 + ON_VERTEX && hi[1] <= bounds.v1 as f64 + ON_VERTEX;
        if inside {
            return Ok(());
        }
        Err(format!(
            "the {}×{} cells sample source vertices u {:.2} ..= {:.2}, v {:.2} ..= {:.2}, past the source's u {} ..= {}, v {} ..= {} (valid: a world within its source: a smaller world_size or cell_size, or the node moved over the source)",
            cells[0], cells[1], lo[0], hi[0], lo[1], hi[1], bounds.u0, bounds.u1, bounds.v0, bounds.v1
        ))
    }
}

/// `rect` cut into slices of at most `side × side` cells, row by row.
pub fn slices_of(rect: CellRect, side: u32) -> Vec<CellRect> {
    let side = side.max(1);
    let mut out = Vec::new();
    let mut y = rect.y;
    while y < rect.y + rect.height {
        let h = side.min(rect.y + rect.height - y);
        let mut x = rect.x;
        while x < rect.x + rect.width {
            let w = side.min(rect.x + rect.width - x);
            out.push(CellRect { x, y, width: w, height: h });
            x += w;
        }
        y += h;
    }
    out
}

/// The slices of a whole `cells[0] × cells[1]` grid ([`slices_of`]) nearest `focus` (continuous
/// cell coordinates) first: the order a world reads its ground in, so that the ground around the
/// water a player sees comes in first.
pub fn slices_nearest_first(cells: [u32; 2], side: u32, focus: [f64; 2]) -> Vec<CellRect> {
    let mut slices = slices_of(CellRect { x: 0, y: 0, width: cells[0], height: cells[1] }, side);
    let distance = |r: &CellRect| {
        let (cx, cy) = (r.x as f64 + r.width as f64 / 2.0, r.y as f64 + r.height as f64 / 2.0);
        let (dx, dy) = (cx - focus[0], cy - focus[1]);
        let d = dx * dx + dy * dy;
        if d.is_finite() { d } else { 0.0 }
    };
    slices.sort_by(|a, b| distance(a).total_cmp(&distance(b)));
    slices
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Heights within this of the expected value count as equal: the samples are sums of a few
    /// f32 values in f64, so they agree to an f32 rounding.
    const SAME_HEIGHT: f32 = 1.0e-4;

    fn grid(w: u32, h: u32, cell: f32) -> Grid {
        Grid::new(w, h, cell).unwrap()
    }

    /// A source whose vertex `(u, v)` lies at local `(u·spacing + ox, v·spacing + oz)`.
    fn placed(g: &Grid, spacing: f64, ox: f64, oz: f64) -> SourcePlacement {
        SourcePlacement::from_local_affine(g, [ox, 0.0, oz], [spacing, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, spacing]).unwrap()
    }

    /// With one cell per vertex and the grid fitted on the source, cell `(x, y)` takes exactly
    /// vertex `(u0 + x, v0 + y)`: a bump on one vertex lands under one cell and nowhere else.
    #[test]
    fn a_bump_on_one_vertex_lands_under_the_cell_over_it() {
        let g = grid(8, 6, 2.0);
        // Vertices every 2 m; vertex (0, 0) at the centre of cell (0, 0): local (-7, -5).
        let p = placed(&g, 2.0, -7.0, -5.0);
        let rect = VertexRect { u0: -2, v0: -2, u1: 10, v1: 10 };
        let mut window = HeightWindow::empty(rect);
        window.values.fill(1.0);
        let bump = (5i64, 3i64);
        window.values[((bump.1 - rect.v0) as usize) * window.width + (bump.0 - rect.u0) as usize] = 9.0;
        let heights = sample_cells(&p, &window, g.whole());
        let raised: Vec<usize> = (0..heights.len()).filter(|&i| heights[i] > 1.0 + SAME_HEIGHT).collect();
        println!("samples per side {}, raised cells {raised:?}, value {}", p.samples_per_side(), heights[3 * 8 + 5]);
        assert_eq!(p.samples_per_side(), 1);
        assert_eq!(raised, vec![3 * 8 + 5]);
        assert!((heights[3 * 8 + 5] - 9.0).abs() < SAME_HEIGHT);
    }

    /// A source placed through f32 transforms (a turned HTerrain, checked by hand with the real
    /// addon) puts cell centres a few 1e-5 of a vertex off the vertices: a cell over a vertex
    /// still takes that vertex's ground exactly, and a hole on the next vertex does not make it
    /// a hole too.
    #[test]
    fn a_cell_a_hair_off_its_vertex_takes_that_vertex_and_not_the_hole_beside_it() {
        let g = grid(8, 6, 2.0);
        let off = 3.0e-5 * 2.0;
        let p = placed(&g, 2.0, -7.0 - off, -5.0 + off);
        let rect = VertexRect { u0: -2, v0: -2, u1: 10, v1: 10 };
        let mut window = HeightWindow::empty(rect);
        window.values.fill(1.0);
        let at = |u: i64, v: i64| ((v - rect.v0) as usize) * window.width + (u - rect.u0) as usize;
        window.values[at(4, 3)] = 9.0;
        window.values[at(5, 3)] = f32::NAN;
        let heights = sample_cells(&p, &window, g.whole());
        let (bump, beside, hole) = (heights[3 * 8 + 4], heights[3 * 8 + 3], heights[3 * 8 + 5]);
        println!("cell over the bump {bump}, cell beside the hole {}, cell before the bump {beside}, hole cell {hole}", heights[3 * 8 + 6]);
        assert_eq!(bump, 9.0, "the cell over vertex (4, 3) takes its ground exactly");
        assert_eq!(beside, 1.0);
        assert_eq!(heights[3 * 8 + 6], 1.0, "the cell after the hole keeps its ground");
        assert!(hole.is_nan(), "the hole's own cell is a hole");
    }

    /// A cell twice the vertex spacing takes the mean of the four samples over its footprint, so
    /// a sloping plane keeps its height at the cell centre.
    #[test]
    fn a_coarse_cell_takes_the_mean_over_its_footprint() {
        let g = grid(4, 4, 2.0);
        let p = placed(&g, 1.0, -4.0, -4.0);
        let rect = p.vertices_for(g.whole());
        let mut window = HeightWindow::empty(rect);
        for v in 0..window.height {
            for u in 0..window.width {
                window.values[v * window.width + u] = 0.5 * (rect.u0 + u as i64) as f32;
            }
        }
        let heights = sample_cells(&p, &window, g.whole());
        // Cell x's centre is at vertex u = 2x + 1, height 0.5 u.
        let expected: Vec<f32> = (0..4).map(|x| 0.5 * (2 * x + 1) as f32).collect();
        println!("samples per side {}, row 0 {:?}, expected {expected:?}", p.samples_per_side(), &heights[0..4]);
        assert_eq!(p.samples_per_side(), 2);
        for x in 0..4 {
            assert!((heights[x] - expected[x]).abs() < SAME_HEIGHT);
        }
    }

    /// A source turned a quarter turn and scaled: its heights arrive rotated, scaled and offset
    /// as the transform says.
    #[test]
    fn a_turned_scaled_source_maps_through_its_transform() {
        let g = grid(4, 4, 1.0);
        // Source u runs along local +Z, v along local −X; heights doubled and raised by 3 m.
        let p = SourcePlacement::from_local_affine(&g, [1.5, 3.0, -1.5], [0.0, 0.0, 1.0], [0.0, 2.0, 0.0], [-1.0, 0.0, 0.0]).unwrap();
        let rect = p.vertices_for(g.whole());
        let mut window = HeightWindow::empty(rect);
        window.values.fill(0.0);
        // Vertex (u, v) = (1, 2): local x = 1.5 − 2 = −0.5, z = −1.5 + 1 = −0.5: cell (1, 1).
        window.values[((2 - rect.v0) as usize) * window.width + (1 - rect.u0) as usize] = 1.0;
        let heights = sample_cells(&p, &window, g.whole());
        println!("cell (1,1) {}, others max {}", heights[5], heights.iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, h)| *h).fold(f32::MIN, f32::max));
        assert!((heights[5] - 5.0).abs() < SAME_HEIGHT);
        assert!(heights.iter().enumerate().all(|(i, h)| i == 5 || (h - 3.0).abs() < SAME_HEIGHT));
    }

    /// Writing back inverts sampling: with one cell per vertex, the ground at a vertex is the
    /// cell over it, and a vertex whose cells reach outside the edited rect is left alone.
    #[test]
    fn the_ground_at_a_vertex_is_the_cell_over_it_when_fitted() {
        let g = grid(8, 6, 2.0);
        let p = placed(&g, 2.0, -7.0, -5.0);
        let rect = CellRect { x: 2, y: 1, width: 3, height: 3 };
        let ground: Vec<f32> = (0..9).map(|i| i as f32).collect();
        let inside = p.ground_at_vertex(&ground, rect, 3, 2);
        println!("vertex (3,2): {inside:?}; vertex (5,2), whose cells reach past the rect: {:?}", p.ground_at_vertex(&ground, rect, 5, 2));
        assert_eq!(inside, Some(4.0), "vertex (3, 2) is the centre of cell (3, 2), the rect's middle");
        assert_eq!(p.ground_at_vertex(&ground, rect, 5, 2), None);
        let mut walled = ground.clone();
        walled[4] = WALL_HEIGHT;
        assert_eq!(p.ground_at_vertex(&walled, rect, 3, 2), None);
    }

    /// A tilted source is refused with an error naming the reason.
    #[test]
    fn a_tilted_source_is_refused() {
        let g = grid(4, 4, 1.0);
        let err = SourcePlacement::from_local_affine(&g, [0.0; 3], [1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]).unwrap_err();
        println!("{err}");
        assert!(err.contains("tilted"));
    }

    /// Holes become walls by default; as drains, the cells beside ground take its lowest height
    /// and are listed, and the inner ones stay walls.
    #[test]
    fn holes_become_walls_or_drains_at_their_rim() {
        let rect = CellRect { x: 10, y: 20, width: 4, height: 3 };
        let n = f32::NAN;
        let cells = [1.0, 2.0, n, n, 1.0, n, n, n, 3.0, n, n, n];
        let mut walls = cells;
        let w = resolve_holes(&mut walls, rect, HoleGround::Wall);
        println!("wall: {walls:?} {w:?}");
        assert_eq!(w.holes, 8);
        assert!(w.drains.is_empty());
        assert!(walls.iter().zip(&cells).all(|(a, b)| if b.is_nan() { *a == WALL_HEIGHT } else { a == b }));
        let mut drains = cells;
        let d = resolve_holes(&mut drains, rect, HoleGround::Drain);
        println!("drain: {drains:?} {d:?}");
        // (2,0) borders only the 2.0 at (1,0); (1,1) borders 1, 2, 1 and 3: it takes the lowest.
        assert_eq!(drains[2], 2.0);
        assert_eq!(drains[5], 1.0);
        assert_eq!(drains[7], WALL_HEIGHT, "cell (3,1) has no ground among its neighbours");
        assert_eq!(d.drains, vec![(12, 20), (11, 21), (12, 21), (11, 22)]);
    }

    /// A vertex range that changed reaches exactly the cells whose samples weigh it, and a change
    /// off the grid reaches none.
    #[test]
    fn a_changed_vertex_rect_touches_the_cells_over_it() {
        let g = grid(16, 16, 1.0);
        let p = placed(&g, 1.0, -7.5, -7.5);
        let touched = p.cells_touched(&g, VertexRect { u0: 4, v0: 5, u1: 6, v1: 5 }).unwrap();
        println!("touched {touched:?}");
        assert_eq!(touched, CellRect { x: 3, y: 4, width: 5, height: 3 });
        // Every cell outside keeps its ground when those vertices change.
        let rect = p.vertices_for(g.whole());
        let mut a = HeightWindow::empty(rect);
        a.values.fill(0.0);
        let mut b = a.clone();
        for v in 5..=5i64 {
            for u in 4..=6i64 {
                b.values[((v - rect.v0) as usize) * b.width + (u - rect.u0) as usize] = 7.0;
            }
        }
        let (ha, hb) = (sample_cells(&p, &a, g.whole()), sample_cells(&p, &b, g.whole()));
        for y in 0..16u32 {
            for x in 0..16u32 {
                let inside = x >= touched.x && x < touched.x + touched.width && y >= touched.y && y < touched.y + touched.height;
                let i = (y * 16 + x) as usize;
                assert!(inside || ha[i] == hb[i], "cell ({x},{y}) changed outside the touched rect");
            }
        }
        assert_eq!(p.cells_touched(&g, VertexRect { u0: 100, v0: 100, u1: 120, v1: 130 }), None);
    }

    /// A fitted grid holds one cell per vertex (or per `multiple`), is centred on the vertices,
    /// and a source past the grid's limit is refused naming the multiple that fits.
    #[test]
    fn fitting_gives_one_cell_per_vertex_or_names_the_multiple_that_fits() {
        let v = VertexRect { u0: -512, v0: 0, u1: 511, v1: 255 };
        let one = fit_grid(v, 1, 4096).unwrap();
        println!("{one:?}");
        assert_eq!(one.cells, [1024, 256]);
        assert_eq!(one.centre, [-0.5, 127.5]);
        let four = fit_grid(v, 4, 4096).unwrap();
        println!("{four:?}");
        assert_eq!(four.cells, [256, 64]);
        // 256 cells of 4 vertices cover the 1024 exactly: the same centre.
        assert_eq!(four.centre, [-0.5, 127.5]);
        let big = VertexRect { u0: 0, v0: 0, u1: 8191, v1: 8191 };
        let err = fit_grid(big, 1, 4096).unwrap_err();
        println!("{err}");
        assert!(err.contains("2 or more vertices per cell"));
        assert!(fit_grid(v, 0, 4096).is_err());
    }

    /// The rectangle of differences between two copies of a map covers every change and no more.
    #[test]
    fn changed_vertices_bound_the_differences() {
        let before = vec![0.0f32; 6 * 4];
        let mut after = before.clone();
        after[6 + 2] = 1.0;
        after[2 * 6 + 4] = -1.0;
        let r = changed_vertices(&before, &after, 6);
        println!("{r:?}");
        assert_eq!(r, Some(VertexRect { u0: 2, v0: 1, u1: 4, v1: 2 }));
        assert_eq!(changed_vertices(&before, &before, 6), None);
    }

    /// A world fitted one cell a vertex over its source is covered by it to the last cell; one
    /// cell more, or the node moved half a cell, reaches past it and is refused with the figures.
    #[test]
    fn a_world_past_its_source_is_refused_with_the_vertices_it_would_need() {
        let bounds = VertexRect { u0: 0, v0: 0, u1: 127, v1: 127 };
        // 128² cells of 1 m, vertex (0, 0) at the centre of cell (0, 0).
        let fitted = placed(&grid(128, 128, 1.0), 1.0, -63.5, -63.5);
        assert_eq!(fitted.check_covered_by([128, 128], bounds), Ok(()));
        let larger = placed(&grid(129, 128, 1.0), 1.0, -64.0, -63.5);
        let err = larger.check_covered_by([129, 128], bounds).unwrap_err();
        println!("{err}");
        assert!(err.contains("u 0.00 ..= 128.00") && err.contains("past the source's u 0 ..= 127"));
        let moved = placed(&grid(128, 128, 1.0), 1.0, -64.0, -63.5);
        assert!(moved.check_covered_by([128, 128], bounds).is_err());
        // Four vertices a cell: 32 cells span the 128 vertices' samples (the outer samples sit an
        // eighth of a cell in from the edges).
        let coarse = SourcePlacement::from_local_affine(&grid(32, 32, 4.0), [-63.5, 0.0, -63.5], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]).unwrap();
        println!("coarse samples per side {}", coarse.samples_per_side());
        assert_eq!(coarse.check_covered_by([32, 32], bounds), Ok(()));
    }

    /// The ground of a rect read with its context equals the same cells of a whole read, holes
    /// and drains included: a world read in slices holds the ground of one read of the whole.
    #[test]
    fn a_rect_read_with_its_context_is_the_whole_read_cropped() {
        let g = grid(24, 20, 1.0);
        let p = placed(&g, 1.0, -11.5, -9.5);
        let mut window = HeightWindow::empty(VertexRect { u0: -1, v0: -1, u1: 25, v1: 21 });
        for (i, value) in window.values.iter_mut().enumerate() {
            *value = (i % 7) as f32 * 0.25 + (i / 31) as f32 * 0.1;
        }
        // A hole of 3 × 2 vertices straddling the rect's left edge.
        for (u, v) in [(8, 5), (9, 5), (10, 5), (8, 6), (9, 6), (10, 6)] {
            let at = ((v + 1) * window.width as i64 + u + 1) as usize;
            window.values[at] = f32::NAN;
        }
        let whole = g.whole();
        for holes in [HoleGround::Wall, HoleGround::Drain] {
            let (all, all_drains, all_holes) = ground_of_cells(&p, &window, whole, whole, holes);
            let mut rebuilt = vec![f32::NAN; g.cell_count()];
            let (mut drains, mut hole_cells) = (Vec::new(), 0);
            for rect in slices_of(whole, 7) {
                let (part, d, h) = ground_of_cells(&p, &window, context_around(rect, g.width, g.height), rect, holes);
                for (k, value) in part.into_iter().enumerate() {
                    rebuilt[((rect.y + k as u32 / rect.width) * g.width + rect.x + k as u32 % rect.width) as usize] = value;
                }
                drains.extend(d);
                hole_cells += h;
            }
            drains.sort();
            let mut expected = all_drains.clone();
            expected.sort();
            println!("{holes:?}: {all_holes} hole cells, drains {expected:?}");
            assert_eq!(all_holes, 6);
            assert_eq!(hole_cells, all_holes);
            assert_eq!(drains, expected);
            assert!(all.iter().zip(&rebuilt).all(|(a, b)| a.to_bits() == b.to_bits()), "slices differ from the whole read");
        }
    }

    /// Slices cover the grid once; the first holds the focus, and they grow away from it.
    #[test]
    fn slices_cover_the_grid_once_nearest_the_focus_first() {
        let slices = slices_nearest_first([1000, 600], 256, [900.0, 100.0]);
        let mut seen = vec![0u8; 1000 * 600];
        for r in &slices {
            for y in r.y..r.y + r.height {
                for x in r.x..r.x + r.width {
                    seen[(y * 1000 + x) as usize] += 1;
                }
            }
        }
        println!("{} slices, first {:?}, last {:?}", slices.len(), slices[0], slices[slices.len() - 1]);
        assert!(seen.iter().all(|&n| n == 1));
        assert_eq!(slices.len(), 4 * 3);
        assert_eq!(slices[0], CellRect { x: 768, y: 0, width: 232, height: 256 });
        assert_eq!(slices[slices.len() - 1], CellRect { x: 0, y: 512, width: 256, height: 88 });
        assert_eq!(context_around(CellRect { x: 0, y: 5, width: 10, height: 10 }, 12, 15), CellRect { x: 0, y: 4, width: 11, height: 11 });
    }
}
