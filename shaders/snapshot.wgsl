// The snapshot that queries and textures read, computed where the fields live: height and flow
// texels per cell (state.rs `State::snapshot`, with pipes.rs `discharge` and `velocity`), and the
// reductions that go with them — total water (64-bit, exact) and the largest depth and speed for
// the CFL estimate of the next step.
//
// The snapshot follows the sleeping tiles (backend/sleep.rs): a cell's texels read only the cell
// and its eight neighbours, and such a change wakes the cell's tile (tiles.wgsl says why), so
// texels change only in tiles a step ran. The plan marks those tiles stale, and the snapshot
// recomputes only stale tiles: their texels, and per tile its share of the reductions, which one
// small pass then sums over the tiles. Texels and shares of the other tiles are those of an
// earlier snapshot, which the same computation would give again. The host marks every tile stale
// when something changes cells without a step (a new state or terrain, edits in a frame without
// steps, constants that change what texels show).
//
// Entry points, sharing `cell_texels`:
// * `tile_texels` writes the stale tiles' texels to storage buffers that the wgpu backend copies
//   to the host;
// * `tile_images` writes them to storage textures that Godot's materials sample directly
//   (the RenderingDevice backend: nothing crosses to the host for rendering);
// * `sum_tiles` sums the tiles' shares into the grid's reductions, after either of them;
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
@group(2) @binding(2) var<storage, read_write> counters: array<atomic<u32>, COUNTER_WORDS>;

// The sleeping tiles (`tile_texels` and `tile_images` run a workgroup per slice of rows of each),
// whether each is stale (cleared by `sum_tiles`), and each slice's share of the reductions as
// [total low, total high, max speed bits, max depth bits], tile by tile.
@group(2) @binding(3) var<uniform> tiles: TileParams;
@group(2) @binding(4) var<storage, read_write> tile_stale: array<u32>;
@group(2) @binding(5) var<storage, read_write> tile_totals: array<vec4<u32>>;

const SNAPSHOT_CELLS: u32 = 256u;
// Cells along each side of a gathered tile (`GATHER_TILE` in the RenderingDevice backend).
const GATHER_TILE: u32 = 8u;
// readback.rs HEADER_WORDS: the counters, then `stats`.
const GATHER_HEADER_WORDS: u32 = COUNTER_WORDS + 4u;

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

// The texels of a cell inside the grid. The fields are read through `texel_terrain`,
// `texel_quanta` and `texel_flux`, which the fragment in front of this file defines for the
// fields' layout: texels_dense.wgsl for a dense grid, world_coarse.wgsl for a world's pages.
fn cell_texels(cell: vec2<i32>) -> CellTexels {
    let stored = texel_quanta(cell);
    let d = f32(stored) * DEPTH_QUANTUM;
    let b = texel_terrain(cell);
    // pipes.rs discharge and centre_velocity over State::outgoing_fluxes and
    // State::face_depths.
    let own = texel_flux(cell);
    var q = vec2<f32>(0.0);
    var v = vec2<f32>(0.0);
    for (var n = 0u; n < 8u; n++) {
        var f = 0.0;
        var face = 0.0;
        let o = cell + neighbour_offset(n);
        if o.x >= 0 && o.y >= 0 && o.x < i32(c.width) && o.y < i32(c.height) {
            if n < 4u {
                f = own[n];
            } else {
                f = -texel_flux(o)[n - 4u];
            }
            let their_bed = texel_terrain(o);
            face = face_depth(b + d, b, their_bed + f32(texel_quanta(o)) * DEPTH_QUANTUM, their_bed);
            // What the pipe keeps, as the flux it carries (state.rs snapshot_reusing).
            f *= flux_per_stored(c, select(face, c.pipe_depth, c.depth_dependent == 0u));
        }
        var off = vec2<f32>(neighbour_offset(n));
        if triangular(c) {
            // pipes.rs lattice_neighbour_direction: odd rows lie half a cell further along +X.
            off = vec2<f32>(off.x + 0.5 * f32((o.y & 1) - (cell.y & 1)), off.y * 0.8660254);
        }
        q.x += f * off.x;
        q.y += f * off.y;
        let per_depth = f * inverse_depth(face);
        v.x += per_depth * off.x;
        v.y += per_depth * off.y;
    }
    // pipes.rs discharge, or lattice_discharge_and_velocity's 1/(√3·dx) on the triangular lattice.
    let scale = select(0.5 / c.cell_size, 0.57735026 / c.cell_size, triangular(c));
    q *= scale;
    v *= scale;
    let speed = length(v);
    var t: CellTexels;
    t.height = vec4<f32>(b + d, d, b, select(0.0, 1.0, d > WET_DEPTH));
    t.flow = vec4<f32>(v, speed, length(q));
    t.quanta = u32(max(stored, 0));
    t.depth = d;
    return t;
}

// A share of the reductions: total quanta (64-bit, low and high words), largest speed and depth.
struct Totals {
    low: u32,
    high: u32,
    speed: f32,
    depth: f32,
}

fn add_totals(a: Totals, b: Totals) -> Totals {
    var r: Totals;
    r.low = a.low + b.low;
    r.high = a.high + b.high + select(0u, 1u, r.low < a.low);
    r.speed = max(a.speed, b.speed);
    r.depth = max(a.depth, b.depth);
    return r;
}

fn cell_totals(t: CellTexels) -> Totals {
    return Totals(t.quanta, 0u, t.flow.z, t.depth);
}

// The workgroup's sum of every invocation's `own`, in every invocation. Called by every
// invocation of a workgroup.
fn reduce_workgroup(lid: u32, own: Totals) -> Totals {
    sum_lo[lid] = own.low;
    sum_hi[lid] = own.high;
    top_speed[lid] = own.speed;
    top_depth[lid] = own.depth;
    workgroupBarrier();
    for (var stride = SNAPSHOT_CELLS / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            let r = add_totals(Totals(sum_lo[lid], sum_hi[lid], top_speed[lid], top_depth[lid]),
                Totals(sum_lo[lid + stride], sum_hi[lid + stride], top_speed[lid + stride], top_depth[lid + stride]));
            sum_lo[lid] = r.low;
            sum_hi[lid] = r.high;
            top_speed[lid] = r.speed;
            top_depth[lid] = r.depth;
        }
        workgroupBarrier();
    }
    return Totals(sum_lo[0], sum_hi[0], top_speed[0], top_depth[0]);
}

var<workgroup> this_tile_stale: u32;

// Whether the workgroup's tile `t` is stale, the same in every invocation.
fn tile_is_stale(t: u32, lid: u32) -> bool {
    if lid == 0u {
        this_tile_stale = tile_stale[t];
    }
    return workgroupUniformLoad(&this_tile_stale) != 0u;
}

// The cells of workgroup (x, y, s): slice s of tile (x, y), the tile's rows cut into
// `tiles.snapshot_slices` slices (the last strip and band hold what is left of the grid, and a
// tile's last slices may be short or empty).
struct Slice {
    origin: vec2<u32>,
    extent: vec2<u32>,
}

fn slice_of(wid: vec3<u32>) -> Slice {
    let tile = wid.xy * tiles.size;
    let tile_extent = min(tiles.size, vec2<u32>(c.width, c.height) - tile);
    let rows = (tiles.size.y + tiles.snapshot_slices - 1u) / tiles.snapshot_slices;
    let first = min(wid.z * rows, tile_extent.y);
    return Slice(tile + vec2<u32>(0u, first), vec2<u32>(tile_extent.x, min(rows, tile_extent.y - first)));
}

// The k-th cell of slice `s`, row-major.
fn slice_cell(s: Slice, k: u32) -> vec2<u32> {
    return s.origin + vec2<u32>(k % s.extent.x, k / s.extent.x);
}

// Keeps slice `slice` of tile `t`'s share (`sum_tiles` marks the tile fresh).
fn finish_slice(t: u32, slice: u32, lid: u32, own: Totals) {
    let share = reduce_workgroup(lid, own);
    if lid == 0u {
        tile_totals[t * tiles.snapshot_slices + slice] = vec4<u32>(share.low, share.high, bitcast<u32>(share.speed), bitcast<u32>(share.depth));
    }
}

// One workgroup per slice of a tile, workgroup (x, y, s) for slice s of tile (x, y); only stale
// tiles do anything.
@compute @workgroup_size(SNAPSHOT_CELLS)
fn tile_texels(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wid.y * tiles.tiles.x + wid.x;
    if !tile_is_stale(t, lid) {
        return;
    }
    let s = slice_of(wid);
    var own = Totals(0u, 0u, 0.0, 0.0);
    for (var k = lid; k < s.extent.x * s.extent.y; k += SNAPSHOT_CELLS) {
        let cell = slice_cell(s, k);
        let texels = cell_texels(vec2<i32>(cell));
        let i = cell.y * c.width + cell.x;
        height_texels[i] = texels.height;
        flow_texels[i] = texels.flow;
        own = add_totals(own, cell_totals(texels));
    }
    finish_slice(t, wid.z, lid, own);
}

// `tile_texels` into the storage textures.
@compute @workgroup_size(SNAPSHOT_CELLS)
fn tile_images(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wid.y * tiles.tiles.x + wid.x;
    if !tile_is_stale(t, lid) {
        return;
    }
    let s = slice_of(wid);
    var own = Totals(0u, 0u, 0.0, 0.0);
    for (var k = lid; k < s.extent.x * s.extent.y; k += SNAPSHOT_CELLS) {
        let cell = vec2<i32>(slice_cell(s, k));
        let texels = cell_texels(cell);
        textureStore(height_image, cell, texels.height);
        textureStore(flow_image, cell, texels.flow);
        own = add_totals(own, cell_totals(texels));
    }
    finish_slice(t, wid.z, lid, own);
}

// One workgroup, after `tile_texels` or `tile_images`: every slice's share into `stats`
// (cleared before the frame), and every tile marked fresh.
@compute @workgroup_size(SNAPSHOT_CELLS)
fn sum_tiles(@builtin(local_invocation_index) lid: u32) {
    var own = Totals(0u, 0u, 0.0, 0.0);
    for (var t = lid; t < tiles.tiles.x * tiles.tiles.y; t += SNAPSHOT_CELLS) {
        tile_stale[t] = 0u;
        for (var slice = 0u; slice < tiles.snapshot_slices; slice++) {
            let share = tile_totals[t * tiles.snapshot_slices + slice];
            own = add_totals(own, Totals(share.x, share.y, bitcast<f32>(share.z), bitcast<f32>(share.w)));
        }
    }
    let total = reduce_workgroup(lid, own);
    if lid == 0u {
        atomicStore(&stats[0], total.low);
        atomicStore(&stats[1], total.high);
        // Non-negative floats order like their bits.
        atomicStore(&stats[2], bitcast<u32>(total.speed));
        atomicStore(&stats[3], bitcast<u32>(total.depth));
    }
}

// One workgroup per listed tile, one invocation per cell; run after the pass that wrote
// `stats`. Cells of a tile that overhang the grid read as zero.
@compute @workgroup_size(GATHER_TILE, GATHER_TILE)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.x;
    if slot == 0u && lid < GATHER_HEADER_WORDS {
        if lid < COUNTER_WORDS {
            gathered[lid] = atomicLoad(&counters[lid]);
        } else {
            gathered[lid] = atomicLoad(&stats[lid - COUNTER_WORDS]);
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
