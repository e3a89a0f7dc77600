// The snapshot that queries and textures read, computed where the fields live: height and flow
// texels per cell (state.rs `State::snapshot`, with pipes.rs `discharge` and `velocity`), and the
// reductions that go with them — total water (64-bit, exact) and the largest depth and speed for
// the CFL estimate of the next step.
//
// Three entry points share `cell_texels` and `reduce_stats`:
// * `texels` writes the texels to storage buffers that the wgpu backend copies to the host;
// * `images` writes them to storage textures that Godot's materials sample directly
//   (the RenderingDevice backend: nothing crosses to the host for rendering);
// * `gather` computes the texels of a few listed tiles only, with the ledger and the stats in
//   front, into one small buffer: what queries read back when the grid itself stays on the GPU.
// Each backend compiles only the entry points it uses, so the bindings of the others do not
// exist for it.

@group(0) @binding(0) var<uniform> c: StepConstants;
@group(0) @binding(1) var<storage, read> terrain: array<f32>;
@group(0) @binding(2) var<storage, read> depth: array<i32>;
@group(0) @binding(3) var<storage, read> flux: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> height_texels: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> flow_texels: array<vec4<f32>>;
// [total low, total high, max speed bits, max depth bits]; cleared before the pass.
@group(0) @binding(6) var<storage, read_write> stats: array<atomic<u32>, 4>;

@group(1) @binding(0) var height_image: texture_storage_2d<rgba32float, write>;
@group(1) @binding(1) var flow_image: texture_storage_2d<rgba32float, write>;

// Tiles whose texels `gather` reads back: [count, 0, tile index…], a tile being
// GATHER_TILE × GATHER_TILE cells, numbered row-major over the grid rounded up to whole tiles.
struct TileList {
    count: u32,
    _pad: u32,
    tiles: array<u32>,
}
@group(2) @binding(0) var<storage, read> gather_tiles: TileList;
// GATHER_HEADER_WORDS words (ledger counters as in edits.wgsl, then `stats`), then per listed
// tile and cell in row-major order its height texel and its flow texel as f32 bits.
@group(2) @binding(1) var<storage, read_write> gathered: array<u32>;
@group(2) @binding(2) var<storage, read_write> counters: array<atomic<u32>, 8>;

const SNAPSHOT_WG: u32 = 16u;
const SNAPSHOT_CELLS: u32 = 256u;
// Cells along each side of a gathered tile (`GATHER_TILE` in the RenderingDevice backend).
const GATHER_TILE: u32 = 8u;
const GATHER_HEADER_WORDS: u32 = 12u;

var<workgroup> sum_lo: array<u32, SNAPSHOT_CELLS>;
var<workgroup> sum_hi: array<u32, SNAPSHOT_CELLS>;
var<workgroup> top_speed: array<f32, SNAPSHOT_CELLS>;
var<workgroup> top_depth: array<f32, SNAPSHOT_CELLS>;

// pipes.rs NEIGHBOUR_OFFSETS: E, S, SE, SW, then W, N, NW, NE.
fn neighbour_offset(n: u32) -> vec2<i32> {
    if n < 4u {
        return pipe_offset(n);
    }
    return -pipe_offset(n - 4u);
}

// What a cell shows: the texels of state.rs `State::snapshot`, and its share of the reductions.
struct CellTexels {
    height: vec4<f32>,
    flow: vec4<f32>,
    quanta: u32,
    depth: f32,
}

// The texels of a cell inside the grid.
fn cell_texels(cell: vec2<i32>) -> CellTexels {
    let i = u32(cell.y) * c.width + u32(cell.x);
    let stored = depth[i];
    let d = f32(stored) * DEPTH_QUANTUM;
    let b = terrain[i];
    // pipes.rs discharge and centre_velocity over State::outgoing_fluxes and
    // State::face_depths.
    let own = flux[i];
    var q = vec2<f32>(0.0);
    var v = vec2<f32>(0.0);
    for (var n = 0u; n < 8u; n++) {
        var f = 0.0;
        var face = 0.0;
        let o = cell + neighbour_offset(n);
        if o.x >= 0 && o.y >= 0 && o.x < i32(c.width) && o.y < i32(c.height) {
            let j = u32(o.y) * c.width + u32(o.x);
            if n < 4u {
                f = own[n];
            } else {
                f = -flux[j][n - 4u];
            }
            face = face_depth(b + d, b, terrain[j] + f32(depth[j]) * DEPTH_QUANTUM, terrain[j]);
            // What the pipe keeps, as the flux it carries (state.rs snapshot_reusing).
            f *= flux_per_stored(c, select(face, c.pipe_depth, c.depth_dependent == 0u));
        }
        let off = vec2<f32>(neighbour_offset(n));
        q.x += f * off.x;
        q.y += f * off.y;
        let per_depth = f * inverse_depth(face);
        v.x += per_depth * off.x;
        v.y += per_depth * off.y;
    }
    q *= 0.5 / c.cell_size;
    v *= 0.5 / c.cell_size;
    let speed = length(v);
    var t: CellTexels;
    t.height = vec4<f32>(b + d, d, b, select(0.0, 1.0, d > WET_DEPTH));
    t.flow = vec4<f32>(v, speed, length(q));
    t.quanta = u32(max(stored, 0));
    t.depth = d;
    return t;
}

// Adds one invocation's cell (or nothing, outside the grid) to the workgroup's reductions and
// the workgroup's result to `stats`. Called by every invocation of a workgroup.
fn reduce_stats(lid: u32, quanta: u32, speed: f32, d: f32) {
    sum_lo[lid] = quanta;
    sum_hi[lid] = 0u;
    top_speed[lid] = speed;
    top_depth[lid] = d;
    workgroupBarrier();
    for (var stride = SNAPSHOT_CELLS / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            let lo = sum_lo[lid] + sum_lo[lid + stride];
            let carry = select(0u, 1u, lo < sum_lo[lid]);
            sum_hi[lid] = sum_hi[lid] + sum_hi[lid + stride] + carry;
            sum_lo[lid] = lo;
            top_speed[lid] = max(top_speed[lid], top_speed[lid + stride]);
            top_depth[lid] = max(top_depth[lid], top_depth[lid + stride]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let old = atomicAdd(&stats[0], sum_lo[0]);
        let carry = select(0u, 1u, old > 0xffffffffu - sum_lo[0]);
        atomicAdd(&stats[1], sum_hi[0] + carry);
        // Non-negative floats order like their bits.
        atomicMax(&stats[2], bitcast<u32>(top_speed[0]));
        atomicMax(&stats[3], bitcast<u32>(top_depth[0]));
    }
}

@compute @workgroup_size(SNAPSHOT_WG, SNAPSHOT_WG)
fn texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var t: CellTexels;
    if gid.x < c.width && gid.y < c.height {
        t = cell_texels(vec2<i32>(gid.xy));
        let i = gid.y * c.width + gid.x;
        height_texels[i] = t.height;
        flow_texels[i] = t.flow;
    }
    reduce_stats(lid, t.quanta, t.flow.z, t.depth);
}

@compute @workgroup_size(SNAPSHOT_WG, SNAPSHOT_WG)
fn images(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var t: CellTexels;
    if gid.x < c.width && gid.y < c.height {
        t = cell_texels(vec2<i32>(gid.xy));
        textureStore(height_image, vec2<i32>(gid.xy), t.height);
        textureStore(flow_image, vec2<i32>(gid.xy), t.flow);
    }
    reduce_stats(lid, t.quanta, t.flow.z, t.depth);
}

// One workgroup per listed tile, one invocation per cell; run after the pass that wrote
// `stats`. Cells of a tile that overhang the grid read as zero.
@compute @workgroup_size(GATHER_TILE, GATHER_TILE)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.x;
    if slot == 0u && lid < GATHER_HEADER_WORDS {
        if lid < 8u {
            gathered[lid] = atomicLoad(&counters[lid]);
        } else {
            gathered[lid] = atomicLoad(&stats[lid - 8u]);
        }
    }
    if slot >= gather_tiles.count {
        return;
    }
    let tiles_x = (c.width + GATHER_TILE - 1u) / GATHER_TILE;
    let tile = gather_tiles.tiles[slot];
    let cell = vec2<i32>(vec2<u32>(tile % tiles_x, tile / tiles_x) * GATHER_TILE + local.xy);
    var t: CellTexels;
    if cell.x < i32(c.width) && cell.y < i32(c.height) {
        t = cell_texels(cell);
    }
    let at = GATHER_HEADER_WORDS + (slot * GATHER_TILE * GATHER_TILE + lid) * 8u;
    for (var k = 0u; k < 4u; k++) {
        gathered[at + k] = bitcast<u32>(t.height[k]);
        gathered[at + 4u + k] = bitcast<u32>(t.flow[k]);
    }
}
