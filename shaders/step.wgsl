// The step of pipes.rs in two passes per step:
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
@group(0) @binding(1) var<storage, read> terrain: array<f32>;
@group(0) @binding(2) var<storage, read_write> depth: array<i32>;
@group(0) @binding(3) var<storage, read_write> flux: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> accelerated: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> limit: array<f32>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>, 8>;

override WG_X: u32 = 32u;
override WG_Y: u32 = 8u;

fn in_grid(p: vec2<i32>) -> bool {
    return p.x >= 0 && p.y >= 0 && p.x < i32(c.width) && p.y < i32(c.height);
}

fn index_of(p: vec2<i32>) -> u32 {
    return u32(p.y) * c.width + u32(p.x);
}

fn pipe_active(p: u32) -> bool {
    return p < 2u || c.eight_neighbours != 0u;
}

// pipes.rs inflow_for_cell.
fn inflow_for_cell(p: vec2<i32>) -> i32 {
    var q = 0;
    if p.y == 0 && c.boundary.x == BOUNDARY_INFLOW { q += c.inflow_quanta.x; }
    if p.x == i32(c.width) - 1 && c.boundary.y == BOUNDARY_INFLOW { q += c.inflow_quanta.y; }
    if p.y == i32(c.height) - 1 && c.boundary.z == BOUNDARY_INFLOW { q += c.inflow_quanta.z; }
    if p.x == 0 && c.boundary.w == BOUNDARY_INFLOW { q += c.inflow_quanta.w; }
    return q;
}

// pipes.rs open_edge_count.
fn open_edge_count(p: vec2<i32>) -> u32 {
    var n = 0u;
    if p.y == 0 && c.boundary.x == BOUNDARY_OPEN { n += 1u; }
    if p.x == i32(c.width) - 1 && c.boundary.y == BOUNDARY_OPEN { n += 1u; }
    if p.y == i32(c.height) - 1 && c.boundary.z == BOUNDARY_OPEN { n += 1u; }
    if p.x == 0 && c.boundary.w == BOUNDARY_OPEN { n += 1u; }
    return n;
}

// Depth of cell p (quanta) once this step's inflow has entered.
fn depth_with_inflow(p: vec2<i32>, i: u32) -> i32 {
    let d = depth[i];
    if any(c.boundary == vec4<u32>(BOUNDARY_INFLOW)) {
        let q = inflow_for_cell(p);
        if q > 0 {
            return add_depth_clamped(d, q);
        }
    }
    return d;
}

// pipes.rs face_depth.
fn face_depth(surface_a: f32, bed_a: f32, surface_b: f32, bed_b: f32) -> f32 {
    return max(max(surface_a, surface_b) - max(bed_a, bed_b), 0.0);
}

// pipes.rs surface_drive: eta_a - eta_b from beds (m) and depths (quanta), differences within
// one quantum driving nothing.
fn surface_drive(bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    let difference = (bed_a - bed_b) + f32(depth_a - depth_b) * DEPTH_QUANTUM;
    return difference - clamp(difference, -DEPTH_QUANTUM, DEPTH_QUANTUM);
}

// pipes.rs accelerate.
fn accelerate(p: u32, f: f32, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    let diagonal = p >= 2u;
    let width = select(c.width_orth, c.width_diag, diagonal);
    let length = select(c.cell_size, c.cell_size * SQRT_2, diagonal);
    var d = c.pipe_depth;
    if c.depth_dependent != 0u {
        d = face_depth(bed_a + f32(depth_a) * DEPTH_QUANTUM, bed_a, bed_b + f32(depth_b) * DEPTH_QUANTUM, bed_b);
    }
    let conductance = c.gravity * width * d / length;
    return f * c.flux_decay + c.dt * conductance * surface_drive(bed_a, depth_a, bed_b, depth_b);
}

// Accelerated flux of pipe p owned by cell `owner` (index `io`), or 0 where the pipe does not
// exist. Called by the owner and by the neighbour at its other end with the same arguments.
fn accelerated_pipe(owner: vec2<i32>, io: u32, p: u32) -> f32 {
    let other = owner + pipe_offset(p);
    if !pipe_active(p) || !in_grid(other) {
        return 0.0;
    }
    let j = index_of(other);
    return accelerate(p, flux[io][p], terrain[io], depth_with_inflow(owner, io), terrain[j], depth_with_inflow(other, j));
}

// pipes.rs open_edge_outflow.
fn open_edge_outflow(d: f32) -> f32 {
    return c.cell_size * d * sqrt(c.gravity * d);
}

// pipes.rs pipe_quanta.
fn pipe_quanta(f: f32, k_drainer: f32) -> i32 {
    let amount = i32(abs(f * c.flux_to_quanta) * k_drainer);
    return select(amount, -amount, f < 0.0);
}

// pipes.rs limit_factor.
fn limit_factor(depth_quanta: i32, requested: f32) -> f32 {
    if requested > 0.0 {
        return min(f32(depth_quanta) * LIMIT_MARGIN / requested, 1.0);
    }
    return 1.0;
}

// Whole quanta a cell holding `d` gives away with limit factor k: the sum `transfer` will
// subtract. Stops counting once past `d`.
fn quanta_given(leaving: array<f32, 8>, open_flux: f32, k: f32, d: i32) -> u32 {
    var total = u32(pipe_quanta(open_flux, k));
    for (var n = 0u; n < 8u; n++) {
        if leaving[n] > 0.0 && total <= u32(d) {
            total += u32(pipe_quanta(leaving[n], k));
        }
    }
    return total;
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
    for (var p = 0u; p < 4u; p++) {
        own[p] = accelerated_pipe(cell, i, p);
        leaving[p] = own[p];
        let owner = cell - pipe_offset(p);
        var incoming = 0.0;
        if in_grid(owner) {
            incoming = accelerated_pipe(owner, index_of(owner), p);
        }
        leaving[4u + p] = -incoming;
    }
    accelerated[i] = own;

    // Phase 2: pipes.rs requested_quanta, summed in the same tree.
    var q: array<f32, 8>;
    for (var n = 0u; n < 8u; n++) {
        q[n] = abs(max(leaving[n], 0.0) * c.flux_to_quanta);
    }
    var requested = ((q[0] + q[4]) + (q[1] + q[5])) + ((q[2] + q[6]) + (q[3] + q[7]));
    let d = depth_with_inflow(cell, i);
    let open = open_edge_count(cell);
    var open_flux = 0.0;
    if open > 0u {
        open_flux = open_edge_outflow(f32(d) * DEPTH_QUANTUM) * f32(open);
        requested += abs(open_edge_outflow(f32(d) * DEPTH_QUANTUM) * f32(open) * c.flux_to_quanta);
    }
    var k = limit_factor(d, requested);
    // LIMIT_MARGIN covers the CPU's correctly rounded division; a GPU may divide less exactly.
    // Check the integers `transfer` will move and shrink k until they fit: positivity never
    // rests on the driver's rounding. (The check passes at once unless the division was off.)
    for (var tries = 0; tries < 4 && quanta_given(leaving, open_flux, k, d) > u32(d); tries++) {
        k *= LIMIT_MARGIN;
    }
    if quanta_given(leaving, open_flux, k, d) > u32(d) {
        k = 0.0;
    }
    limit[i] = k;
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
    let d = depth_with_inflow(cell, i);
    count(COUNTER_BOUNDARY_IN, u32(d - stored));

    let k_here = limit[i];
    let own = accelerated[i];
    var kept = vec4<f32>(0.0);
    var net = 0;
    for (var p = 0u; p < 4u; p++) {
        if !pipe_active(p) {
            continue;
        }
        // The pipe this cell owns.
        let other = cell + pipe_offset(p);
        if in_grid(other) {
            let f = own[p];
            let k_other = limit[index_of(other)];
            let k_drainer = select(k_other, k_here, f > 0.0);
            net -= pipe_quanta(f, k_drainer);
            kept[p] = f * k_drainer;
        } else {
            kept[p] = own[p];
        }
        // The pipe the neighbour at -offset owns towards this cell.
        let owner = cell - pipe_offset(p);
        if in_grid(owner) {
            let j = index_of(owner);
            let f = accelerated[j][p];
            let k_drainer = select(k_here, limit[j], f > 0.0);
            net += pipe_quanta(f, k_drainer);
        }
    }
    let open = open_edge_count(cell);
    if open > 0u {
        let gone = pipe_quanta(open_edge_outflow(f32(d) * DEPTH_QUANTUM) * f32(open), k_here);
        net -= gone;
        count(COUNTER_BOUNDARY_OUT, u32(gone));
    }
    depth[i] = d + net;
    flux[i] = kept;
}
