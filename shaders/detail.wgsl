// Detail waves: the wave layer finer than the flow grid (rust/pipewater-core/src/detail/kernel.rs,
// which this file mirrors function for function, each computing with the same operations in the
// same order). Compiled with common.wgsl, texels_dense.wgsl and snapshot.wgsl in front: the layer reads each flow
// cell through snapshot.wgsl's `cell_texels`, exactly as the snapshot shows it.
//
// The fields live in a window of `window`² detail cells that follows the camera, stored
// toroidally: world detail cell g at storage cell g mod window. One frame, each pass a dispatch:
//   detail_press   the hulls' pressure changes (a list);
//   detail_scroll  cells the window just entered start at rest (when it moved);
//   detail_force   ripples and rain drops (when there are any);
//   detail_substep per substep: the wave step and the advection in one pass (in → out; the
//                  backends swap the fields after each);
//   detail_pack_texels (wgpu: the texels into a buffer, for a readback) or detail_store_image (Godot's
//   RenderingDevice: the texture materials sample), and detail_gather (the tiles queries read).
// A frame at the node's defaults is one dispatch: at a small window the layer's cost is the
// latency of its dispatches, each waiting for the one before.
//
// The flow region (kernel.rs `CpuDetail::read_flow`) is never stored: a pass reads a flow cell's
// depth straight from the flow's `depth` (the depth texel of `cell_texels`, whose wetness follows
// from it), and the substep computes the velocities its tile samples with `cell_texels` into
// workgroup memory. Group 0 holds snapshot.wgsl's first four bindings, read only: the flow's
// constants and the copy of its fields that the frame's first step reads, so that nothing orders
// the layer after that step and the two run side by side. The layer's own bindings are in group 3.
// Each backend compiles only the entry points it uses.

struct DetailConstants {
    window: u32,
    subdivision: u32,
    origin_x: i32,
    origin_y: i32,
    previous_x: i32,
    previous_y: i32,
    storage_x: i32,
    storage_y: i32,
    phase_x: i32,
    phase_y: i32,
    flow_x: i32,
    flow_y: i32,
    flow_side: u32,
    grid_width: u32,
    grid_height: u32,
    substeps: u32,
    dt: f32,
    dt_over_cell: f32,
    laplacian_scale: f32,
    slope_scale: f32,
    decay: f32,
    max_celerity_squared: f32,
    gravity: f32,
    inverse_subdivision: f32,
    sponge_cells: i32,
    sponge_rate: f32,
    rain_threshold: u32,
    rain_drop: f32,
    seed: u32,
    ripple_count: u32,
    _pad0: u32,
    _pad1: u32,
}

// detail/mod.rs Ripple: (x, y, 1/radius², strength) after a 16-byte header.
struct RippleList {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    items: array<vec4<f32>>,
}

// detail/mod.rs DetailPressure: (storage cell, head m as f32 bits) after an 8-byte header.
struct PressureList {
    count: u32,
    _pad: u32,
    items: array<vec2<u32>>,
}

// Tiles `detail_gather` reads: world tile coordinates after an 8-byte header.
struct DetailTileList {
    count: u32,
    _pad: u32,
    tiles: array<vec2<i32>>,
}

@group(3) @binding(0) var<uniform> dc: DetailConstants;
// (h m, v m/s) per storage cell: what a pass reads, and what it writes (or updates in place).
@group(3) @binding(2) var<storage, read> detail_in: array<vec2<f32>>;
@group(3) @binding(3) var<storage, read_write> detail_out: array<vec2<f32>>;
// Pressure head of hulls per storage cell, m.
@group(3) @binding(4) var<storage, read_write> detail_pressure: array<f32>;
@group(3) @binding(5) var<storage, read> detail_ripples: RippleList;
@group(3) @binding(6) var<storage, read> detail_pressed: PressureList;
@group(3) @binding(7) var<storage, read> detail_tiles: DetailTileList;
// Per listed tile, its cells' heights (f32), row-major.
@group(3) @binding(8) var<storage, read_write> detail_gathered: array<f32>;
// The texture's texels per storage cell, for a readback (the wgpu backend).
@group(3) @binding(9) var<storage, read_write> detail_texels: array<vec4<f32>>;
@group(3) @binding(10) var detail_image: texture_storage_2d<rgba16float, write>;

const DETAIL_WG: u32 = 16u;
const DETAIL_LIST_WG: u32 = 64u;
// detail/tiles.rs DETAIL_TILE.
const DETAIL_TILE: u32 = 8u;
// detail/mod.rs RAIN_DROP_RADIUS.
const RAIN_DROP_RADIUS: f32 = 2.5;

fn window_origin() -> vec2<i32> {
    return vec2<i32>(dc.origin_x, dc.origin_y);
}

// kernel.rs contains: whether world cell g lies in the window of side `window` at `origin`.
fn contains(origin: vec2<i32>, g: vec2<i32>) -> bool {
    let l = g - origin;
    let n = i32(dc.window);
    return l.x >= 0 && l.y >= 0 && l.x < n && l.y < n;
}

// kernel.rs ripple_shape.
fn ripple_shape(u: f32) -> f32 {
    if u >= 1.0 {
        return 0.0;
    }
    let a = 1.0 - u;
    return a * a * (1.0 - 4.0 * u);
}

// kernel.rs rain_drop_at.
fn rain_drop_at(g: vec2<i32>) -> bool {
    let h = lowbias32((u32(g.x) * 0x9e3779b1u) ^ lowbias32(u32(g.y) ^ dc.seed));
    return h < dc.rain_threshold;
}

// kernel.rs inside.
fn inside(l: vec2<i32>) -> bool {
    let n = i32(dc.window);
    return l.x >= 0 && l.y >= 0 && l.x < n && l.y < n;
}

// kernel.rs storage_of.
fn storage_of(l: vec2<i32>) -> u32 {
    let n = i32(dc.window);
    var x = dc.storage_x + l.x;
    var y = dc.storage_y + l.y;
    if x >= n {
        x -= n;
    }
    if y >= n {
        y -= n;
    }
    return u32(y * n + x);
}

// kernel.rs window_cell_of.
fn window_cell_of(s: vec2<i32>) -> vec2<i32> {
    let n = i32(dc.window);
    var x = s.x - dc.storage_x;
    var y = s.y - dc.storage_y;
    if x < 0 {
        x += n;
    }
    if y < 0 {
        y += n;
    }
    return vec2<i32>(x, y);
}

// kernel.rs FlowCell.
struct FlowCell {
    region: vec2<i32>,
    within: vec2<i32>,
}

// kernel.rs flow_cell.
fn flow_cell(l: vec2<i32>) -> FlowCell {
    let s = dc.subdivision;
    let x = u32(dc.phase_x + l.x) + s;
    let y = u32(dc.phase_y + l.y) + s;
    var f: FlowCell;
    f.region = vec2<i32>(i32(x / s), i32(y / s));
    f.within = vec2<i32>(i32(x % s), i32(y % s));
    return f;
}

// kernel.rs flow_cell_beside.
fn flow_cell_beside(f: FlowCell, offset: vec2<i32>) -> vec2<i32> {
    let s = i32(dc.subdivision);
    let w = f.within + offset;
    return f.region + select(vec2<i32>(0), vec2<i32>(-1), w < vec2<i32>(0)) + select(vec2<i32>(0), vec2<i32>(1), w >= vec2<i32>(s));
}

// The flow cell of region cell r, or (-1, -1) beyond the region or the grid (kernel.rs
// region_texel: zero there).
fn region_flow_cell(r: vec2<i32>) -> vec2<i32> {
    let side = i32(dc.flow_side);
    let f = vec2<i32>(dc.flow_x + r.x, dc.flow_y + r.y);
    if r.x < 0 || r.y < 0 || r.x >= side || r.y >= side || f.x < 0 || f.y < 0 || u32(f.x) >= dc.grid_width || u32(f.y) >= dc.grid_height {
        return vec2<i32>(-1);
    }
    return f;
}

// kernel.rs region_texel, its depth: cell_texels' depth texel. Without a branch, so that a
// caller's loads are issued together: beyond the region it reads cell 0 and answers zero.
fn region_depth(r: vec2<i32>) -> f32 {
    let f = region_flow_cell(r);
    let on_grid = f.x >= 0;
    let i = select(0u, u32(f.y) * c.width + u32(f.x), on_grid);
    return select(0.0, f32(depth[i]) * DEPTH_QUANTUM, on_grid);
}

// kernel.rs region_texel, its velocity: cell_texels' flow texel (the same sums), with every
// load issued before the arithmetic, at an index on the grid.
fn region_velocity(r: vec2<i32>) -> vec2<f32> {
    let f = region_flow_cell(r);
    if f.x < 0 {
        return vec2<f32>(0.0);
    }
    let i = u32(f.y) * c.width + u32(f.x);
    let d = f32(depth[i]) * DEPTH_QUANTUM;
    let b = terrain[i];
    let own = flux[i];
    var on_grid: array<bool, 8>;
    var their_depth: array<f32, 8>;
    var their_bed: array<f32, 8>;
    var pipe: array<f32, 8>;
    for (var n = 0u; n < 8u; n++) {
        let o = f + neighbour_offset(n);
        let inside_grid = o.x >= 0 && o.y >= 0 && o.x < i32(c.width) && o.y < i32(c.height);
        let j = select(i, u32(o.y) * c.width + u32(o.x), inside_grid);
        on_grid[n] = inside_grid;
        their_depth[n] = f32(depth[j]) * DEPTH_QUANTUM;
        their_bed[n] = terrain[j];
        if n < 4u {
            pipe[n] = own[n];
        } else {
            pipe[n] = -flux[j][n - 4u];
        }
    }
    var v = vec2<f32>(0.0);
    for (var n = 0u; n < 8u; n++) {
        var fl = 0.0;
        var face = 0.0;
        if on_grid[n] {
            fl = pipe[n];
            face = face_depth(b + d, b, their_bed[n] + their_depth[n], their_bed[n]);
            fl *= flux_per_stored(c, select(face, c.pipe_depth, c.depth_dependent == 0u));
        }
        let off = vec2<f32>(neighbour_offset(n));
        let per_depth = fl * inverse_depth(face);
        v.x += per_depth * off.x;
        v.y += per_depth * off.y;
    }
    return v * (0.5 / c.cell_size);
}

// kernel.rs wet_region: cell_texels' wetness, from the same depth.
fn wet_region(r: vec2<i32>) -> bool {
    return region_depth(r) > WET_DEPTH;
}

// Where kernel.rs flow_sample samples window cell l: region cell r and the weights of r + 1.
struct FlowPoint {
    r: vec2<i32>,
    t: vec2<f32>,
}

fn flow_point(l: vec2<i32>) -> FlowPoint {
    // Both are positive: truncation is the floor.
    let fx = (f32(dc.phase_x + l.x) + 0.5) * dc.inverse_subdivision + 0.5;
    let fy = (f32(dc.phase_y + l.y) + 0.5) * dc.inverse_subdivision + 0.5;
    var p: FlowPoint;
    p.r = vec2<i32>(i32(fx), i32(fy));
    p.t = vec2<f32>(fx - f32(p.r.x), fy - f32(p.r.y));
    return p;
}

fn detail_lerp(a: f32, b: f32, t: f32) -> f32 {
    return a + (b - a) * t;
}

// kernel.rs celerity_squared.
fn celerity_squared(depth: f32) -> f32 {
    return min(dc.gravity * max(depth, 0.0), dc.max_celerity_squared);
}

// kernel.rs sponge_factor.
fn sponge_factor(l: vec2<i32>) -> f32 {
    let n = i32(dc.window);
    let edge = min(min(min(l.x, l.y), n - 1 - l.x), n - 1 - l.y);
    if edge >= dc.sponge_cells {
        return 1.0;
    }
    let depth = f32(dc.sponge_cells - edge) / f32(dc.sponge_cells);
    return 1.0 / (1.0 + dc.sponge_rate * depth * depth);
}

// Depths of the 3 × 3 region cells around region cell r, row-major from r − (1, 1): each is
// region_depth's (zero beyond the region or the grid), the bounds tested once a row and column.
// region_flow_cell's test and storage_of's and flow_cell_beside's arithmetic are written out
// again here and in wave_cell on purpose: one per-axis helper serving both was measured slower on
// the H100 (2048² window 0.217 → 0.224 ms a frame, default window +0.2 points; BENCHMARKS).
fn region_block(r: vec2<i32>) -> array<f32, 9> {
    let side = i32(dc.flow_side);
    var columns: array<u32, 3>;
    var rows: array<u32, 3>;
    var column_on: array<bool, 3>;
    var row_on: array<bool, 3>;
    for (var k = 0; k < 3; k++) {
        let x = r.x - 1 + k;
        let y = r.y - 1 + k;
        let fx = dc.flow_x + x;
        let fy = dc.flow_y + y;
        column_on[k] = x >= 0 && x < side && fx >= 0 && u32(fx) < dc.grid_width;
        row_on[k] = y >= 0 && y < side && fy >= 0 && u32(fy) < dc.grid_height;
        columns[k] = select(0u, u32(fx), column_on[k]);
        rows[k] = select(0u, u32(fy) * c.width, row_on[k]);
    }
    var block: array<f32, 9>;
    for (var k = 0; k < 9; k++) {
        let on_grid = row_on[k / 3] && column_on[k % 3];
        let i = select(0u, rows[k / 3] + columns[k % 3], on_grid);
        block[k] = select(0.0, f32(depth[i]) * DEPTH_QUANTUM, on_grid);
    }
    return block;
}

// Storage index along one axis of window coordinate x, 0 <= x < window (storage_of's wrap).
fn storage_axis(start: i32, x: i32) -> i32 {
    let n = i32(dc.window);
    let s = start + x;
    return select(s, s - n, s >= n);
}

// kernel.rs wave_cell, with kernel.rs neighbour_surface inlined. Every load of the cell is
// issued before the first test, at an index inside the window or on the grid: its field and its
// neighbours' (clamped into the window), and the depths of the 3 × 3 region cells around its
// own, which hold its neighbours' wetness and the four depths its own is interpolated from
// (flow_point's cell is the region cell's or the one before, on each axis: kernel.rs's test
// a_cells_depth_is_interpolated_from_the_block_around_its_flow_cell). The sums then follow
// kernel.rs's order.
fn wave_cell(l: vec2<i32>) -> vec2<f32> {
    let f = flow_cell(l);
    let p = flow_point(l);
    let n = i32(dc.window);
    let s = i32(dc.subdivision);
    var columns: array<i32, 3>;
    var rows: array<i32, 3>;
    for (var k = 0; k < 3; k++) {
        columns[k] = storage_axis(dc.storage_x, clamp(l.x - 1 + k, 0, n - 1));
        rows[k] = storage_axis(dc.storage_y, clamp(l.y - 1 + k, 0, n - 1)) * n;
    }
    let block = region_block(f.region);
    let i = u32(rows[1] + columns[1]);
    let hv = detail_in[i];
    let own = hv.x + detail_pressure[i];
    var offsets = array<vec2<i32>, 8>(vec2<i32>(1, 0), vec2<i32>(0, 1), vec2<i32>(-1, 0), vec2<i32>(0, -1), vec2<i32>(1, 1), vec2<i32>(-1, 1), vec2<i32>(-1, -1), vec2<i32>(1, -1));
    var wet_mask = 0u;
    for (var k = 0; k < 9; k++) {
        wet_mask |= select(0u, 1u << u32(k), block[k] > WET_DEPTH);
    }
    var surfaces: array<f32, 8>;
    for (var k = 0; k < 8; k++) {
        let o = offsets[k];
        let j = u32(rows[o.y + 1] + columns[o.x + 1]);
        let surface = detail_in[j].x + detail_pressure[j];
        // flow_cell_beside, as a cell of the block.
        let w = f.within + o;
        let beside = vec2<i32>(1) + select(vec2<i32>(0), vec2<i32>(-1), w < vec2<i32>(0)) + select(vec2<i32>(0), vec2<i32>(1), w >= vec2<i32>(s));
        let wet = ((wet_mask >> u32(beside.y * 3 + beside.x)) & 1u) != 0u;
        surfaces[k] = select(select(own, surface, wet), 0.0, !inside(l + o));
    }
    if (wet_mask & 16u) == 0u {
        return vec2<f32>(0.0);
    }
    // flow_depth: the 2 × 2 region cells from p.r, one of the block's four corners.
    let right = p.r.x == f.region.x;
    let up = p.r.y == f.region.y;
    let low0 = select(block[0], block[3], up);
    let low1 = select(block[1], block[4], up);
    let low2 = select(block[2], block[5], up);
    let high0 = select(block[3], block[6], up);
    let high1 = select(block[4], block[7], up);
    let high2 = select(block[5], block[8], up);
    let a = select(low0, low1, right);
    let b = select(low1, low2, right);
    let d = select(high0, high1, right);
    let e = select(high1, high2, right);
    let depth = detail_lerp(detail_lerp(a, b, p.t.x), detail_lerp(d, e, p.t.x), p.t.y);
    var orthogonal = 0.0;
    orthogonal += surfaces[0] - own;
    orthogonal += surfaces[1] - own;
    orthogonal += surfaces[2] - own;
    orthogonal += surfaces[3] - own;
    var diagonal = 0.0;
    diagonal += surfaces[4] - own;
    diagonal += surfaces[5] - own;
    diagonal += surfaces[6] - own;
    diagonal += surfaces[7] - own;
    let laplacian = (4.0 * orthogonal + diagonal) * dc.laplacian_scale;
    let sponge = sponge_factor(l);
    let v = (hv.y + dc.dt * celerity_squared(depth) * laplacian) * dc.decay * sponge;
    let h = (hv.x + dc.dt * v) * sponge;
    return vec2<f32>(h, v);
}

// kernel.rs hermite_weights.
fn hermite_weights(t: f32) -> array<f32, 6> {
    let t2 = t * t;
    let t3 = t * t * t;
    let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
    let h10 = t3 - 2.0 * t2 + t;
    let h01 = 3.0 * t2 - 2.0 * t3;
    let h11 = t3 - t2;
    let twelfth = 1.0 / 12.0;
    return array<f32, 6>(
        h10 * twelfth,
        (h11 - 8.0 * h10) * twelfth,
        h00 - 8.0 * h11 * twelfth,
        h01 + 8.0 * h10 * twelfth,
        (8.0 * h11 - h10) * twelfth,
        -h11 * twelfth,
    );
}

// kernel.rs MAX_ADVECTION_CELLS.
const MAX_ADVECTION_CELLS: f32 = 8.0;
// How far from its cell a substep's advection reads, cells: as far as the flow carries
// (MAX_ADVECTION_CELLS), then the cubic's two samples behind its point and three ahead.
const ADVECT_BEHIND: i32 = 10;
const ADVECT_AHEAD: i32 = 11;
// Side of the box of wave cells a workgroup's advection may read: its tile and that reach.
const WAVE_BOX: i32 = 37;
// Side of the box of region cells whose velocities a tile samples: at subdivision 1, one a cell
// and one more.
const VELOCITY_BOX: i32 = 17;
// Beyond every reach, where the workgroup's reductions start.
const NO_REACH: i32 = 1048576;

// The wave step's output over the box the workgroup's advection reads (`WAVE_BOX`², row-major
// from its tile's corner less ADVECT_BEHIND), the velocities its cells sample (`VELOCITY_BOX`²,
// from its first cell's region cell), and the box's corners.
var<workgroup> waved: array<vec2<f32>, 1369>;
var<workgroup> tile_velocity: array<vec2<f32>, 289>;
var<workgroup> reach_low: array<atomic<i32>, 2>;
var<workgroup> reach_high: array<atomic<i32>, 2>;

// kernel.rs advect_cell, what it reads: the first of the 6 × 6 samples, and the weights along
// each axis, for window cell l moving at `velocity`.
struct AdvectStencil {
    first: vec2<i32>,
    wx: array<f32, 6>,
    wy: array<f32, 6>,
}

fn advect_stencil(l: vec2<i32>, velocity: vec2<f32>) -> AdvectStencil {
    let dx = clamp(velocity.x * dc.dt_over_cell, -MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let dy = clamp(velocity.y * dc.dt_over_cell, -MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let px = f32(l.x) - dx;
    let py = f32(l.y) - dy;
    let x0 = floor(px);
    let y0 = floor(py);
    var s: AdvectStencil;
    s.wx = hermite_weights(px - x0);
    s.wy = hermite_weights(py - y0);
    // The clamp changes nothing the clamps above let through; it keeps a velocity that is not a
    // number reading inside the box.
    s.first = clamp(vec2<i32>(i32(x0) - 2, i32(y0) - 2), l - vec2<i32>(ADVECT_BEHIND), l + vec2<i32>(ADVECT_AHEAD - 5));
    return s;
}

// Index in `waved` of window cell q, for the workgroup whose tile starts at `base`.
fn box_index(base: vec2<i32>, q: vec2<i32>) -> i32 {
    let o = q - base + vec2<i32>(ADVECT_BEHIND);
    return o.y * WAVE_BOX + o.x;
}

// The velocity of region cell r, from the part of the workgroup's box it filled (`span` cells
// from `first`: every region cell its tile samples, by the span's bounds; the clamp only keeps
// the index in the box).
fn sampled_velocity(first: vec2<i32>, span: vec2<i32>, r: vec2<i32>) -> vec2<f32> {
    let o = clamp(r - first, vec2<i32>(0), span - vec2<i32>(1));
    return tile_velocity[o.y * VELOCITY_BOX + o.x];
}

fn detail_lerp2(a: vec2<f32>, b: vec2<f32>, t: f32) -> vec2<f32> {
    return a + (b - a) * t;
}

// kernel.rs advect_cell of a wet, moving window cell l, reading the wave step's output from
// `waved`: the same sums in the same order. Samples beyond the window are zeros in the box,
// where kernel.rs skips them: adding a zero product changes no sum's value.
fn advect_from_box(base: vec2<i32>, l: vec2<i32>, s: AdvectStencil) -> vec2<f32> {
    var wx = s.wx;
    var wy = s.wy;
    let corner = box_index(base, s.first);
    var out = vec2<f32>(0.0);
    for (var j = 0; j < 6; j++) {
        var row = vec2<f32>(0.0);
        for (var i = 0; i < 6; i++) {
            let sample = waved[corner + j * WAVE_BOX + i];
            row.x += wx[i] * sample.x;
            row.y += wx[i] * sample.y;
        }
        out.x += wy[j] * row.x;
        out.y += wy[j] * row.y;
    }
    return out;
}

// kernel.rs forcing_cell.
fn forcing_cell(l: vec2<i32>) -> f32 {
    let g = window_origin() + l;
    let cx = f32(g.x) + 0.5;
    let cy = f32(g.y) + 0.5;
    var added = 0.0;
    let count = min(dc.ripple_count, arrayLength(&detail_ripples.items));
    for (var k = 0u; k < count; k++) {
        let r = detail_ripples.items[k];
        let dx = cx - r.x;
        let dy = cy - r.y;
        added += r.w * ripple_shape((dx * dx + dy * dy) * r.z);
    }
    if dc.rain_threshold > 0u {
        let reach = i32(RAIN_DROP_RADIUS);
        let inverse = 1.0 / (RAIN_DROP_RADIUS * RAIN_DROP_RADIUS);
        for (var dy = -reach; dy <= reach; dy++) {
            for (var dx = -reach; dx <= reach; dx++) {
                let u = f32(dx * dx + dy * dy) * inverse;
                if u < 1.0 && rain_drop_at(g + vec2<i32>(dx, dy)) {
                    added += dc.rain_drop * ripple_shape(u);
                }
            }
        }
    }
    return added;
}

// kernel.rs texel_neighbour.
fn texel_neighbour(l: vec2<i32>, f: FlowCell, offset: vec2<i32>, own: f32) -> f32 {
    let q = l + offset;
    if !inside(q) {
        return 0.0;
    }
    if !wet_region(flow_cell_beside(f, offset)) {
        return own;
    }
    return detail_in[storage_of(q)].x;
}

// kernel.rs texel_cell.
fn texel_cell(l: vec2<i32>) -> vec4<f32> {
    let f = flow_cell(l);
    if !wet_region(f.region) {
        return vec4<f32>(0.0);
    }
    let hv = detail_in[storage_of(l)];
    let sx = (texel_neighbour(l, f, vec2<i32>(1, 0), hv.x) - texel_neighbour(l, f, vec2<i32>(-1, 0), hv.x)) * dc.slope_scale;
    let sz = (texel_neighbour(l, f, vec2<i32>(0, 1), hv.x) - texel_neighbour(l, f, vec2<i32>(0, -1), hv.x)) * dc.slope_scale;
    return vec4<f32>(hv.x, sx, sz, hv.y);
}

// The window cell of the invocation's storage cell.
fn invocation_cell(gid: vec3<u32>) -> vec2<i32> {
    return window_cell_of(vec2<i32>(gid.xy));
}

// kernel.rs CpuDetail::advance: each listed storage cell takes its pressure head.
@compute @workgroup_size(DETAIL_LIST_WG)
fn detail_press(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < detail_pressed.count; e += groups.x * DETAIL_LIST_WG) {
        let item = detail_pressed.items[e];
        if item.x < arrayLength(&detail_pressure) {
            detail_pressure[item.x] = bitcast<f32>(item.y);
        }
    }
}

// kernel.rs CpuDetail::scroll, in place on detail_out.
@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_scroll(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    if !contains(vec2<i32>(dc.previous_x, dc.previous_y), window_origin() + invocation_cell(gid)) {
        detail_out[gid.y * dc.window + gid.x] = vec2<f32>(0.0);
    }
}

// kernel.rs CpuDetail::force, in place on detail_out.
@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_force(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    let l = invocation_cell(gid);
    if wet_region(flow_cell(l).region) {
        let i = gid.y * dc.window + gid.x;
        detail_out[i].x = detail_out[i].x + forcing_cell(l);
    }
}

// Cell k of the box of `extent` cells from `low` less the workgroup's tile at `base` (which the
// box contains), row by row: the rows above the tile, the cells beside it, the rows below.
fn ring_cell(low: vec2<i32>, extent: vec2<i32>, base: vec2<i32>, k: i32) -> vec2<i32> {
    let tile = i32(DETAIL_WG);
    let corner = base - low;
    let above = corner.y * extent.x;
    let beside_row = extent.x - tile;
    let beside = beside_row * tile;
    if k < above {
        return low + vec2<i32>(k % extent.x, k / extent.x);
    }
    let m = k - above;
    if m < beside {
        let column = m % beside_row;
        let x = select(column + tile, column, column < corner.x);
        return low + vec2<i32>(x, corner.y + m / beside_row);
    }
    let b = m - beside;
    return low + vec2<i32>(b % extent.x, corner.y + tile + b / extent.x);
}

// kernel.rs CpuDetail::advance, one substep: `wave_cell` over every cell, then `advect_cell`
// over every cell reading what it wrote, in one pass. A workgroup covers a tile of window cells
// (not of storage cells, so that its neighbourhood is one box); it computes the wave step of its
// tile into workgroup memory while it finds the box of cells its advection reads, then the wave
// step of the rest of that box, and advects from it. Cells around the tile are computed by each
// workgroup that reads them: at rest nothing but the tile, for a slow current the tile and about
// five cells around.
@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_substep(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let threads = i32(DETAIL_WG * DETAIL_WG);
    let base = vec2<i32>(wid.xy) * i32(DETAIL_WG);
    let l = base + vec2<i32>(local.xy);
    let first = flow_point(base).r;
    // The tile is always part of the box, so its own wave step waits for no reach: it is computed
    // before the first barrier, beside the velocities, and only the ring of the box around the
    // tile waits for the reach. The cell's own wetness is loaded there too.
    let in_window = inside(l);
    let own_wet = wet_region(flow_cell(l).region);
    let span = min(flow_point(base + vec2<i32>(i32(DETAIL_WG) - 1)).r + vec2<i32>(2) - first, vec2<i32>(VELOCITY_BOX));
    for (var k = i32(lid); k < span.x * span.y; k += threads) {
        let o = vec2<i32>(k % span.x, k / span.x);
        tile_velocity[o.y * VELOCITY_BOX + o.x] = region_velocity(first + o);
    }
    var own_wave = vec2<f32>(0.0);
    if in_window {
        own_wave = wave_cell(l);
    }
    waved[box_index(base, l)] = own_wave;
    if lid == 0u {
        atomicStore(&reach_low[0], NO_REACH);
        atomicStore(&reach_low[1], NO_REACH);
        atomicStore(&reach_high[0], -NO_REACH);
        atomicStore(&reach_high[1], -NO_REACH);
    }
    workgroupBarrier();

    // kernel.rs advect_cell: dry cells and cells beyond the window read nothing; still water
    // reads its own cell.
    var wet = false;
    var velocity = vec2<f32>(0.0);
    var stencil: AdvectStencil;
    if in_window && own_wet {
        wet = true;
        let p = flow_point(l);
        let a = sampled_velocity(first, span, p.r);
        let b = sampled_velocity(first, span, p.r + vec2<i32>(1, 0));
        let d = sampled_velocity(first, span, p.r + vec2<i32>(0, 1));
        let e = sampled_velocity(first, span, p.r + vec2<i32>(1, 1));
        velocity = detail_lerp2(detail_lerp2(a, b, p.t.x), detail_lerp2(d, e, p.t.x), p.t.y);
        if any(velocity != vec2<f32>(0.0)) {
            stencil = advect_stencil(l, velocity);
            atomicMin(&reach_low[0], stencil.first.x);
            atomicMin(&reach_low[1], stencil.first.y);
            atomicMax(&reach_high[0], stencil.first.x + 5);
            atomicMax(&reach_high[1], stencil.first.y + 5);
        }
    }
    workgroupBarrier();

    // The wave step over the ring of the box around the tile; its cells beyond the window hold
    // zeros (advect_from_box reads them without tests).
    let tile_high = base + vec2<i32>(i32(DETAIL_WG) - 1);
    let low = clamp(vec2<i32>(atomicLoad(&reach_low[0]), atomicLoad(&reach_low[1])), base - vec2<i32>(ADVECT_BEHIND), base);
    let high = clamp(vec2<i32>(atomicLoad(&reach_high[0]), atomicLoad(&reach_high[1])), tile_high, tile_high + vec2<i32>(ADVECT_AHEAD));
    let extent = high - low + vec2<i32>(1);
    for (var k = i32(lid); k < extent.x * extent.y - threads; k += threads) {
        let q = ring_cell(low, extent, base, k);
        var h = vec2<f32>(0.0);
        if inside(q) {
            h = wave_cell(q);
        }
        waved[box_index(base, q)] = h;
    }
    workgroupBarrier();

    if !in_window {
        return;
    }
    var out = vec2<f32>(0.0);
    if wet {
        if all(velocity == vec2<f32>(0.0)) {
            out = own_wave;
        } else {
            out = advect_from_box(base, l, stencil);
        }
    }
    detail_out[storage_of(l)] = out;
}

@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_pack_texels(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    detail_texels[gid.y * dc.window + gid.x] = texel_cell(invocation_cell(gid));
}

@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_store_image(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    textureStore(detail_image, vec2<i32>(gid.xy), texel_cell(invocation_cell(gid)));
}

// One workgroup per listed tile, one invocation per cell: heights of the cells in the window,
// 0 elsewhere.
@compute @workgroup_size(DETAIL_TILE, DETAIL_TILE)
fn detail_gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.x;
    if slot >= detail_tiles.count {
        return;
    }
    let l = detail_tiles.tiles[slot] * i32(DETAIL_TILE) + vec2<i32>(local.xy) - window_origin();
    var h = 0.0;
    if inside(l) {
        h = detail_in[storage_of(l)].x;
    }
    detail_gathered[slot * DETAIL_TILE * DETAIL_TILE + lid] = h;
}
