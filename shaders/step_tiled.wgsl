// The whole step of pipes.rs in ONE pass: each workgroup computes a 32 × 8 tile of cells from a
// 36 × 12 region (the tile and two cells around it) held in workgroup memory.
//
// The transfer of a cell needs the limit factors of its eight neighbours, and each of those
// needs the accelerated pipes around it: a halo of two cells. The workgroup loads the halo once,
// accelerates every pipe inside the region, limits every cell of the region but its outer ring,
// and transfers its own tile. Neighbouring workgroups compute the shared halo pipes and limit
// factors from the same inputs with the same code, so both ends of every pipe still apply the
// same integer and mass stays exact.
//
// Per cell-step the fields cross DRAM once: terrain, depth and flux in, depth and flux out
// (44 bytes, against 88 for the two passes of step.wgsl). Depth and flux ping-pong between two
// buffers, since neighbouring tiles read the old values while this one writes the new.

@group(0) @binding(0) var<uniform> c: StepConstants;
// The bed the step sees: the terrain plus the displacement of bodies (bodies.wgsl).
@group(0) @binding(1) var<storage, read> step_terrain: array<f32>;
@group(0) @binding(2) var<storage, read> depth_in: array<i32>;
@group(0) @binding(3) var<storage, read> flux_in: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> depth_out: array<i32>;
@group(0) @binding(5) var<storage, read_write> flux_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>, 8>;

// The workgroup is 32 x 8 invocations; each transfers ROWS cells of one column of the tile.
// ROWS = 1 is fastest on an H100: 2 and 4 cut the halo work but ran at 0.75x and 0.46x, the
// larger workgroup memory lowering occupancy (docs/BENCHMARKS.md).
const GROUP_X: u32 = 32u;
const GROUP_Y: u32 = 8u;
const ROWS: u32 = 1u;
const TILE_X: u32 = GROUP_X;
const TILE_Y: u32 = GROUP_Y * ROWS;
const THREADS: u32 = GROUP_X * GROUP_Y;
const HALO: i32 = 2;
const REGION_X: u32 = TILE_X + 4u;
const REGION_Y: u32 = TILE_Y + 4u;
const REGION: u32 = REGION_X * REGION_Y;

// Terrain, depth after inflow, and the pipes of every region cell: first the stored flux, then
// (in place) the accelerated flux. Cells off the grid hold zeros.
var<workgroup> s_bed: array<f32, REGION>;
var<workgroup> s_depth: array<i32, REGION>;
var<workgroup> s_pipes: array<vec4<f32>, REGION>;
var<workgroup> s_limit: array<f32, REGION>;
// With advection, the discharge at the centre of every region cell (phase 0).
var<workgroup> s_discharge: array<vec2<f32>, REGION>;
// The grid position of region cell (0, 0) of this workgroup.
var<private> region_origin: vec2<i32>;

// The fields before the step, for upstream.wgsl.
fn old_bed(i: u32) -> f32 {
    return step_terrain[i];
}

fn old_depth(cell: vec2<i32>, i: u32) -> i32 {
    return with_inflow(c, cell, depth_in[i]);
}

fn old_flow(i: u32) -> vec4<f32> {
    return flux_in[i];
}

// Phase 0's discharge (every pipe phase 1 accelerates draws from a region cell).
fn upstream_discharge(cell: vec2<i32>) -> vec2<f32> {
    let l = cell - region_origin;
    if in_region(l) {
        return s_discharge[region_index(l)];
    }
    return old_centre_discharge(cell);
}

fn in_inner_region(l: vec2<i32>) -> bool {
    return l.x >= 1 && l.y >= 1 && l.x < i32(REGION_X) - 1 && l.y < i32(REGION_Y) - 1;
}

// OldFields::pipe_flux for the pipe p owned by region cell `l`, whose far end lies in the region.
fn region_pipe_flux(g: vec2<i32>, l: vec2<i32>, p: u32) -> f32 {
    if !pipe_active(c, p) || !cell_in_grid(c, g + pipe_offset(p)) {
        return 0.0;
    }
    let r = region_index(l);
    let o = region_index(l + pipe_offset(p));
    return s_pipes[r][p] * flux_per_stored(c, carried_depth(c, s_bed[r], s_depth[r], s_bed[o], s_depth[o]));
}

// OldFields::centre_discharge of an inner region cell, from the region's old pipes.
fn region_discharge(g: vec2<i32>, l: vec2<i32>) -> vec2<f32> {
    var outgoing: array<f32, 8>;
    for (var p = 0u; p < 4u; p++) {
        outgoing[p] = region_pipe_flux(g, l, p);
        var incoming = 0.0;
        if cell_in_grid(c, g - pipe_offset(p)) {
            incoming = region_pipe_flux(g - pipe_offset(p), l - pipe_offset(p), p);
        }
        outgoing[4u + p] = -incoming;
    }
    return discharge(c.cell_size, outgoing);
}

fn region_xy(r: u32) -> vec2<i32> {
    return vec2<i32>(i32(r % REGION_X), i32(r / REGION_X));
}

fn region_index(l: vec2<i32>) -> u32 {
    return u32(l.y) * REGION_X + u32(l.x);
}

fn in_region(l: vec2<i32>) -> bool {
    return l.x >= 0 && l.y >= 0 && l.x < i32(REGION_X) && l.y < i32(REGION_Y);
}

fn count(slot: u32, amount: u32) {
    if amount == 0u {
        return;
    }
    let old = atomicAdd(&counters[2u * slot], amount);
    if old > 0xffffffffu - amount {
        atomicAdd(&counters[2u * slot + 1u], 1u);
    }
}

@compute @workgroup_size(GROUP_X, GROUP_Y)
fn step_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let origin = vec2<i32>(wid.xy * vec2<u32>(TILE_X, TILE_Y)) - vec2<i32>(HALO);
    region_origin = origin;

    // Load the region (the grid's cells; zeros off it).
    for (var r = lid; r < REGION; r += THREADS) {
        let g = origin + region_xy(r);
        if cell_in_grid(c, g) {
            let i = u32(g.y) * c.width + u32(g.x);
            s_bed[r] = step_terrain[i];
            s_depth[r] = with_inflow(c, g, depth_in[i]);
            s_pipes[r] = flux_in[i];
        } else {
            s_bed[r] = 0.0;
            s_depth[r] = 0;
            s_pipes[r] = vec4<f32>(0.0);
        }
    }
    workgroupBarrier();

    // Phase 0 (advection): the discharge at the centre of every region cell, once: from the
    // region's old pipes, or for the outer ring (whose neighbours lie outside the region) from
    // the input buffers.
    if c.advection != 0u {
        for (var r = lid; r < REGION; r += THREADS) {
            let l = region_xy(r);
            let g = origin + l;
            var q = vec2<f32>(0.0);
            if cell_in_grid(c, g) {
                if in_inner_region(l) {
                    q = region_discharge(g, l);
                } else {
                    q = old_centre_discharge(g);
                }
            }
            s_discharge[r] = q;
        }
        workgroupBarrier();
    }

    // Phase 1: accelerate each pipe whose two ends lie in the region (and on the grid). Each
    // invocation reads only its own cell's old pipes from the region, so it can overwrite them;
    // advection reads the pipes upstream from the unchanged input buffers (upstream.wgsl).
    for (var r = lid; r < REGION; r += THREADS) {
        let l = region_xy(r);
        let g = origin + l;
        var acc = vec4<f32>(0.0);
        if cell_in_grid(c, g) {
            let old = s_pipes[r];
            for (var p = 0u; p < 4u; p++) {
                let lo = l + pipe_offset(p);
                if pipe_active(c, p) && in_region(lo) && cell_in_grid(c, g + pipe_offset(p)) {
                    let o = region_index(lo);
                    acc[p] = accelerate(c, p, g, old[p], s_bed[r], s_depth[r], s_bed[o], s_depth[o], old_upstream(g, p, old[p]));
                }
            }
        }
        s_pipes[r] = acc;
    }
    workgroupBarrier();

    // Phase 2: limit factor of every region cell but the outer ring (all its pipes are known).
    for (var r = lid; r < REGION; r += THREADS) {
        let l = region_xy(r);
        let g = origin + l;
        var k = 1.0;
        if l.x >= 1 && l.y >= 1 && l.x < i32(REGION_X) - 1 && l.y < i32(REGION_Y) - 1 && cell_in_grid(c, g) {
            var leaving: array<f32, 8>;
            let own = s_pipes[r];
            for (var p = 0u; p < 4u; p++) {
                leaving[p] = own[p];
                leaving[4u + p] = -s_pipes[region_index(l - pipe_offset(p))][p];
            }
            k = cell_limit(c, g, s_bed[r], s_depth[r], leaving);
        }
        s_limit[r] = k;
    }
    workgroupBarrier();

    // Phase 3: transfer for this invocation's cells of the tile.
    for (var row = 0u; row < ROWS; row++) {
        transfer_cell(origin, vec2<i32>(local.xy + vec2<u32>(0u, row * GROUP_Y)) + vec2<i32>(HALO));
    }
}

// Phase 3 for the cell at region position `l`.
fn transfer_cell(origin: vec2<i32>, l: vec2<i32>) {
    let g = origin + l;
    if !cell_in_grid(c, g) {
        return;
    }
    let i = u32(g.y) * c.width + u32(g.x);
    let r = region_index(l);
    let d = s_depth[r];
    count(COUNTER_BOUNDARY_IN, u32(d - depth_in[i]));
    let k_here = s_limit[r];
    let own = s_pipes[r];
    var kept = vec4<f32>(0.0);
    var net = 0;
    for (var p = 0u; p < 4u; p++) {
        if !pipe_active(c, p) {
            continue;
        }
        if cell_in_grid(c, g + pipe_offset(p)) {
            let f = own[p];
            let o = region_index(l + pipe_offset(p));
            let k_drainer = select(s_limit[o], k_here, f > 0.0);
            net -= pipe_quanta(c.flux_to_quanta, f, k_drainer);
            kept[p] = kept_flow(c, f, k_drainer, carried_depth(c, s_bed[r], s_depth[r], s_bed[o], s_depth[o]));
        }
        if cell_in_grid(c, g - pipe_offset(p)) {
            let o = region_index(l - pipe_offset(p));
            let f = s_pipes[o][p];
            let k_drainer = select(k_here, s_limit[o], f > 0.0);
            net += pipe_quanta(c.flux_to_quanta, f, k_drainer);
        }
    }
    let bed = s_bed[r];
    let edge_flux = edge_outflow(c, g, bed, d);
    if edge_flux > 0.0 {
        let gone = pipe_quanta(c.flux_to_quanta, edge_flux, k_here);
        net -= gone;
        count(COUNTER_BOUNDARY_OUT, u32(gone));
    }
    var new_depth = d + net;
    if has_level_edge(c) {
        // Water from a fixed level beyond the edge, up to the deepest a cell holds.
        let came = add_depth_clamped(new_depth, level_edge_inflow_quanta(c, g, bed, d));
        count(COUNTER_BOUNDARY_IN, u32(came - new_depth));
        new_depth = came;
    }
    depth_out[i] = new_depth;
    flux_out[i] = kept;
}
