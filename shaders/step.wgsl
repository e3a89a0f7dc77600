// The step of pipes.rs in two passes per step (the reference GPU path; step_tiled.wgsl fuses
// them into one):
//
// * `accelerate_limit`: phase 1 (accelerate) of the four pipes a cell owns, written to
//   `accelerated`, and phase 2 (the limit factor k) of the cell. k needs the accelerated flux of
//   the four pipes the neighbours own towards this cell too; instead of waiting for another pass,
//   the cell recomputes them from the same inputs with the same function, which gives the very
//   bits the owner writes.
// * `transfer`: phase 3. Every pipe moves `pipe_quanta(flux, k_drainer)` whole quanta; both
//   cells compute that same integer from the same `accelerated` and `limit` values, so what one
//   loses the other gains. The cell then stores its limited flux `f · k_drainer` for the next
//   step and counts what left through open edges.
//
// Inflow edges are applied on the fly: every read of an edge cell's depth adds the edge's
// quanta (clamped), and `transfer` writes the sum back and counts it, which is the CPU's
// "inflow, then surface" order without an extra pass. Sources and drains run before this, in
// edits.wgsl.

@group(0) @binding(0) var<uniform> c: StepConstants;
// The bed the step sees: the terrain plus the displacement of bodies (bodies.wgsl).
@group(0) @binding(1) var<storage, read> step_terrain: array<f32>;
@group(0) @binding(2) var<storage, read_write> depth: array<i32>;
@group(0) @binding(3) var<storage, read_write> flux: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> accelerated: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> limit: array<f32>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>, 8>;

override WG_X: u32 = 32u;
override WG_Y: u32 = 8u;

fn index_of(p: vec2<i32>) -> u32 {
    return u32(p.y) * c.width + u32(p.x);
}

fn depth_with_inflow(p: vec2<i32>, i: u32) -> i32 {
    return with_inflow(c, p, depth[i]);
}

// The fields before the step, for upstream.wgsl (transfer, which writes them, runs after).
fn old_bed(i: u32) -> f32 {
    return step_terrain[i];
}

fn old_depth(cell: vec2<i32>, i: u32) -> i32 {
    return depth_with_inflow(cell, i);
}

fn old_flow(i: u32) -> vec4<f32> {
    return flux[i];
}

fn upstream_discharge(cell: vec2<i32>) -> vec2<f32> {
    return old_centre_discharge(cell);
}

// Where accelerate_limit leaves the depth that carried each owned pipe, for transfer's kept
// flow (transfer cannot recompute it: neighbours overwrite their depth meanwhile).
fn carried_slot(i: u32) -> u32 {
    return c.width * c.height + i;
}

// Accelerated flux of pipe p owned by cell `owner` (index `io`), or 0 where the pipe does not
// exist. Called by the owner and by the neighbour at its other end with the same arguments.
fn accelerated_pipe(owner: vec2<i32>, io: u32, p: u32) -> f32 {
    let other = owner + pipe_offset(p);
    if !pipe_active(c, p) || !cell_in_grid(c, other) {
        return 0.0;
    }
    let j = index_of(other);
    let kept = flux[io][p];
    return accelerate(c, p, owner, kept, step_terrain[io], depth_with_inflow(owner, io), step_terrain[j], depth_with_inflow(other, j), old_upstream(owner, p, kept));
}

@compute @workgroup_size(WG_X, WG_Y)
fn accelerate_limit(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= c.width || gid.y >= c.height {
        return;
    }
    let cell = vec2<i32>(gid.xy);
    let i = index_of(cell);

    // Phase 1 for the owned pipes, and the neighbours' pipes into this cell seen from here.
    var leaving: array<f32, 8>;
    var own = vec4<f32>(0.0);
    var carried = vec4<f32>(0.0);
    for (var p = 0u; p < 4u; p++) {
        own[p] = accelerated_pipe(cell, i, p);
        let other = cell + pipe_offset(p);
        if pipe_active(c, p) && cell_in_grid(c, other) {
            let j = index_of(other);
            carried[p] = carried_depth(c, step_terrain[i], depth_with_inflow(cell, i), step_terrain[j], depth_with_inflow(other, j));
        }
        leaving[p] = own[p];
        let owner = cell - pipe_offset(p);
        var incoming = 0.0;
        if cell_in_grid(c, owner) {
            incoming = accelerated_pipe(owner, index_of(owner), p);
        }
        leaving[4u + p] = -incoming;
    }
    accelerated[i] = own;
    accelerated[carried_slot(i)] = carried;
    limit[i] = cell_limit(c, cell, step_terrain[i], depth_with_inflow(cell, i), leaving);
}

// Adds `amount` to the 64-bit ledger counter `slot` (low word with carry into the high word).
fn count(slot: u32, amount: u32) {
    if amount == 0u {
        return;
    }
    let old = atomicAdd(&counters[2u * slot], amount);
    if old > 0xffffffffu - amount {
        atomicAdd(&counters[2u * slot + 1u], 1u);
    }
}

@compute @workgroup_size(WG_X, WG_Y)
fn transfer(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= c.width || gid.y >= c.height {
        return;
    }
    let cell = vec2<i32>(gid.xy);
    let i = index_of(cell);
    let stored = depth[i];
    let d = with_inflow(c, cell, stored);
    count(COUNTER_BOUNDARY_IN, u32(d - stored));

    let k_here = limit[i];
    let own = accelerated[i];
    var kept = vec4<f32>(0.0);
    var net = 0;
    for (var p = 0u; p < 4u; p++) {
        if !pipe_active(c, p) {
            continue;
        }
        // The pipe this cell owns.
        let other = cell + pipe_offset(p);
        if cell_in_grid(c, other) {
            let f = own[p];
            let k_drainer = select(limit[index_of(other)], k_here, f > 0.0);
            net -= pipe_quanta(c.flux_to_quanta, f, k_drainer);
            kept[p] = kept_flow(c, f, k_drainer, accelerated[carried_slot(i)][p]);
        }
        // The pipe the neighbour at -offset owns towards this cell.
        let owner = cell - pipe_offset(p);
        if cell_in_grid(c, owner) {
            let j = index_of(owner);
            let f = accelerated[j][p];
            let k_drainer = select(k_here, limit[j], f > 0.0);
            net += pipe_quanta(c.flux_to_quanta, f, k_drainer);
        }
    }
    let bed = step_terrain[i];
    let edge_flux = edge_outflow(c, cell, bed, d);
    if edge_flux > 0.0 {
        let gone = pipe_quanta(c.flux_to_quanta, edge_flux, k_here);
        net -= gone;
        count(COUNTER_BOUNDARY_OUT, u32(gone));
    }
    var new_depth = d + net;
    if has_level_edge(c) {
        // Water from a fixed level beyond the edge, up to the deepest a cell holds.
        let came = add_depth_clamped(new_depth, level_edge_inflow_quanta(c, cell, bed, d));
        count(COUNTER_BOUNDARY_IN, u32(came - new_depth));
        new_depth = came;
    }
    depth[i] = new_depth;
    flux[i] = kept;
}
