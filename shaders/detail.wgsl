// Detail waves: the wave layer finer than the flow grid (rust/pipewater-core/src/detail.rs,
// which this file mirrors function for function, each computing with the same operations in the
// same order). Compiled with common.wgsl and snapshot.wgsl in front: the layer reads each flow
// cell through snapshot.wgsl's `cell_texels`, exactly as the snapshot shows it.
//
// The fields live in a window of `window`² detail cells that follows the camera, stored
// toroidally: world detail cell g at storage cell g mod window. One frame, each pass a dispatch:
//   detail_flow_region  the flow region under the window: depth, velocity, wetness per flow cell;
//   detail_press   the hulls' pressure changes (a list);
//   detail_scroll  cells the window just entered start at rest (when it moved);
//   detail_force   ripples and rain drops (when there are any);
//   per substep: detail_wave (in → out), then detail_advect (out → in);
//   detail_pack_texels (wgpu: the texels into a buffer, for a readback) or detail_store_image (Godot's
//   RenderingDevice: the texture materials sample), and detail_gather (the tiles queries read).
// Group 0 is snapshot.wgsl's (the flow's constants and fields); the layer's own bindings are in
// group 3. Each backend compiles only the entry points it uses.

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

// detail.rs Ripple: (x, y, 1/radius², strength) after a 16-byte header.
struct RippleList {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    items: array<vec4<f32>>,
}

// detail.rs DetailPressure: (storage cell, head m as f32 bits) after an 8-byte header.
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
// Per flow cell of the region: (depth m, velocity x, velocity z m/s, wet 0/1).
@group(3) @binding(1) var<storage, read_write> detail_flow: array<vec4<f32>>;
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
const DETAIL_FLOW_WG: u32 = 8u;
const DETAIL_LIST_WG: u32 = 64u;
// detail/tiles.rs DETAIL_TILE.
const DETAIL_TILE: u32 = 8u;
// detail.rs RAIN_DROP_RADIUS.
const RAIN_DROP_RADIUS: f32 = 2.5;

fn window_origin() -> vec2<i32> {
    return vec2<i32>(dc.origin_x, dc.origin_y);
}

// detail.rs contains: whether world cell g lies in the window of side `window` at `origin`.
fn contains(origin: vec2<i32>, g: vec2<i32>) -> bool {
    let l = g - origin;
    let n = i32(dc.window);
    return l.x >= 0 && l.y >= 0 && l.x < n && l.y < n;
}

// detail.rs ripple_shape.
fn ripple_shape(u: f32) -> f32 {
    if u >= 1.0 {
        return 0.0;
    }
    let a = 1.0 - u;
    return a * a * (1.0 - 4.0 * u);
}

// detail.rs hash (lowbias32).
fn detail_hash(seed: u32) -> u32 {
    var x = seed;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// detail.rs rain_drop_at.
fn rain_drop_at(g: vec2<i32>) -> bool {
    let h = detail_hash((u32(g.x) * 0x9e3779b1u) ^ detail_hash(u32(g.y) ^ dc.seed));
    return h < dc.rain_threshold;
}

// detail.rs inside.
fn inside(l: vec2<i32>) -> bool {
    let n = i32(dc.window);
    return l.x >= 0 && l.y >= 0 && l.x < n && l.y < n;
}

// detail.rs storage_of.
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

// detail.rs window_cell_of.
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

// detail.rs FlowCell.
struct FlowCell {
    region: vec2<i32>,
    within: vec2<i32>,
}

// detail.rs flow_cell.
fn flow_cell(l: vec2<i32>) -> FlowCell {
    let s = dc.subdivision;
    let x = u32(dc.phase_x + l.x) + s;
    let y = u32(dc.phase_y + l.y) + s;
    var f: FlowCell;
    f.region = vec2<i32>(i32(x / s), i32(y / s));
    f.within = vec2<i32>(i32(x % s), i32(y % s));
    return f;
}

// detail.rs flow_cell_beside.
fn flow_cell_beside(f: FlowCell, offset: vec2<i32>) -> vec2<i32> {
    let s = i32(dc.subdivision);
    let w = f.within + offset;
    return f.region + select(vec2<i32>(0), vec2<i32>(-1), w < vec2<i32>(0)) + select(vec2<i32>(0), vec2<i32>(1), w >= vec2<i32>(s));
}

// detail.rs region_texel.
fn region_texel(r: vec2<i32>) -> vec4<f32> {
    let side = i32(dc.flow_side);
    if r.x < 0 || r.y < 0 || r.x >= side || r.y >= side {
        return vec4<f32>(0.0);
    }
    return detail_flow[u32(r.y * side + r.x)];
}

// detail.rs wet_region.
fn wet_region(r: vec2<i32>) -> bool {
    return region_texel(r).w > 0.0;
}

fn detail_lerp(a: vec4<f32>, b: vec4<f32>, t: f32) -> vec4<f32> {
    return a + (b - a) * t;
}

// detail.rs flow_sample: (depth, velocity x, velocity z).
fn flow_sample(l: vec2<i32>) -> vec3<f32> {
    // Both are positive: truncation is the floor.
    let fx = (f32(dc.phase_x + l.x) + 0.5) * dc.inverse_subdivision + 0.5;
    let fy = (f32(dc.phase_y + l.y) + 0.5) * dc.inverse_subdivision + 0.5;
    let r = vec2<i32>(i32(fx), i32(fy));
    let tx = fx - f32(r.x);
    let ty = fy - f32(r.y);
    let a = region_texel(r);
    let b = region_texel(r + vec2<i32>(1, 0));
    let d = region_texel(r + vec2<i32>(0, 1));
    let e = region_texel(r + vec2<i32>(1, 1));
    return detail_lerp(detail_lerp(a, b, tx), detail_lerp(d, e, tx), ty).xyz;
}

// detail.rs celerity_squared.
fn celerity_squared(depth: f32) -> f32 {
    return min(dc.gravity * max(depth, 0.0), dc.max_celerity_squared);
}

// detail.rs sponge_factor.
fn sponge_factor(l: vec2<i32>) -> f32 {
    let n = i32(dc.window);
    let edge = min(min(min(l.x, l.y), n - 1 - l.x), n - 1 - l.y);
    if edge >= dc.sponge_cells {
        return 1.0;
    }
    let depth = f32(dc.sponge_cells - edge) / f32(dc.sponge_cells);
    return 1.0 / (1.0 + dc.sponge_rate * depth * depth);
}

// detail.rs neighbour_surface.
fn neighbour_surface(l: vec2<i32>, f: FlowCell, offset: vec2<i32>, own: f32) -> f32 {
    let q = l + offset;
    if !inside(q) {
        return 0.0;
    }
    if !wet_region(flow_cell_beside(f, offset)) {
        return own;
    }
    let i = storage_of(q);
    return detail_in[i].x + detail_pressure[i];
}

// detail.rs wave_cell.
fn wave_cell(l: vec2<i32>) -> vec2<f32> {
    let f = flow_cell(l);
    if !wet_region(f.region) {
        return vec2<f32>(0.0);
    }
    let depth = flow_sample(l).x;
    let i = storage_of(l);
    let hv = detail_in[i];
    let own = hv.x + detail_pressure[i];
    // ORTHOGONAL: E, S, W, N; DIAGONAL: SE, SW, NW, NE.
    var orthogonal = 0.0;
    orthogonal += neighbour_surface(l, f, vec2<i32>(1, 0), own) - own;
    orthogonal += neighbour_surface(l, f, vec2<i32>(0, 1), own) - own;
    orthogonal += neighbour_surface(l, f, vec2<i32>(-1, 0), own) - own;
    orthogonal += neighbour_surface(l, f, vec2<i32>(0, -1), own) - own;
    var diagonal = 0.0;
    diagonal += neighbour_surface(l, f, vec2<i32>(1, 1), own) - own;
    diagonal += neighbour_surface(l, f, vec2<i32>(-1, 1), own) - own;
    diagonal += neighbour_surface(l, f, vec2<i32>(-1, -1), own) - own;
    diagonal += neighbour_surface(l, f, vec2<i32>(1, -1), own) - own;
    let laplacian = (4.0 * orthogonal + diagonal) * dc.laplacian_scale;
    let sponge = sponge_factor(l);
    let v = (hv.y + dc.dt * celerity_squared(depth) * laplacian) * dc.decay * sponge;
    let h = (hv.x + dc.dt * v) * sponge;
    return vec2<f32>(h, v);
}

// detail.rs hermite_weights.
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

// detail.rs MAX_ADVECTION_CELLS.
const MAX_ADVECTION_CELLS: f32 = 8.0;

// detail.rs advect_cell.
fn advect_cell(l: vec2<i32>) -> vec2<f32> {
    if !wet_region(flow_cell(l).region) {
        return vec2<f32>(0.0);
    }
    let velocity = flow_sample(l).yz;
    if all(velocity == vec2<f32>(0.0)) {
        return detail_in[storage_of(l)];
    }
    let dx = clamp(velocity.x * dc.dt_over_cell, -MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let dy = clamp(velocity.y * dc.dt_over_cell, -MAX_ADVECTION_CELLS, MAX_ADVECTION_CELLS);
    let px = f32(l.x) - dx;
    let py = f32(l.y) - dy;
    let x0 = floor(px);
    let y0 = floor(py);
    var wx = hermite_weights(px - x0);
    var wy = hermite_weights(py - y0);
    let q = vec2<i32>(i32(x0) - 2, i32(y0) - 2);
    let n = i32(dc.window);
    var out = vec2<f32>(0.0);
    for (var j = 0; j < 6; j++) {
        let y = q.y + j;
        if y < 0 || y >= n {
            continue;
        }
        var row_start = dc.storage_y + y;
        if row_start >= n {
            row_start -= n;
        }
        row_start *= n;
        var row = vec2<f32>(0.0);
        for (var i = 0; i < 6; i++) {
            let x = q.x + i;
            if x < 0 || x >= n {
                continue;
            }
            var column = dc.storage_x + x;
            if column >= n {
                column -= n;
            }
            let s = detail_in[u32(row_start + column)];
            row.x += wx[i] * s.x;
            row.y += wx[i] * s.y;
        }
        out.x += wy[j] * row.x;
        out.y += wy[j] * row.y;
    }
    return out;
}

// detail.rs forcing_cell.
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

// detail.rs texel_neighbour.
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

// detail.rs texel_cell.
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

@compute @workgroup_size(DETAIL_FLOW_WG, DETAIL_FLOW_WG)
fn detail_flow_region(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.flow_side || gid.y >= dc.flow_side {
        return;
    }
    let f = vec2<i32>(dc.flow_x + i32(gid.x), dc.flow_y + i32(gid.y));
    var out = vec4<f32>(0.0);
    if f.x >= 0 && f.y >= 0 && u32(f.x) < dc.grid_width && u32(f.y) < dc.grid_height {
        let t = cell_texels(f);
        out = vec4<f32>(t.height.y, t.flow.x, t.flow.y, t.height.w);
    }
    detail_flow[gid.y * dc.flow_side + gid.x] = out;
}

// detail.rs CpuDetail::advance: each listed storage cell takes its pressure head.
@compute @workgroup_size(DETAIL_LIST_WG)
fn detail_press(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < detail_pressed.count; e += groups.x * DETAIL_LIST_WG) {
        let item = detail_pressed.items[e];
        if item.x < arrayLength(&detail_pressure) {
            detail_pressure[item.x] = bitcast<f32>(item.y);
        }
    }
}

// detail.rs CpuDetail::scroll, in place on detail_out.
@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_scroll(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    if !contains(vec2<i32>(dc.previous_x, dc.previous_y), window_origin() + invocation_cell(gid)) {
        detail_out[gid.y * dc.window + gid.x] = vec2<f32>(0.0);
    }
}

// detail.rs CpuDetail::force, in place on detail_out.
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

@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_wave(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    detail_out[gid.y * dc.window + gid.x] = wave_cell(invocation_cell(gid));
}

@compute @workgroup_size(DETAIL_WG, DETAIL_WG)
fn detail_advect(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= dc.window || gid.y >= dc.window {
        return;
    }
    detail_out[gid.y * dc.window + gid.x] = advect_cell(invocation_cell(gid));
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
