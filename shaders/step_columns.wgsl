// The whole step of pipes.rs in ONE pass per step, streamed down the grid.
//
// A workgroup owns a strip of COLUMNS columns and a band of rows; each invocation owns one
// column and walks the band's rows top to bottom, one row per iteration. Each iteration loads one
// new row and carries every phase of the step one row further, each phase a row or two behind
// the one it reads from, so that what a phase needs from the rows below has been loaded:
//
//   A  row r:   load terrain, depth (with this step's inflow) and the stored pipes
//   B  row r-1: each owned pipe's carried depth and flux before the step   (advection only)
//   C  row r-1: the discharge at each cell's centre                         (advection only)
//   D  row r-2: accelerate each owned pipe (pipes.rs accelerate_carried)
//   E  row r-2: the cell's limit factors (pipes.rs cell_limits)
//   F  row r-3: transfer: move whole quanta, write depth and kept pipes
//
// A phase reads the row its neighbouring columns computed in the phase before, from workgroup
// memory, after a barrier; each phase keeps the few rows its readers still need in a ring. The
// pipes a cell owns point right, down, down-right and down-left, so the step at row y needs rows
// y-3 ..= y+3 and columns x-5 ..= x+5: a band is loaded with three rows above and below it, and
// the HALO columns on each side of a strip compute values only their neighbours use. Every cell
// of the grid is loaded by COLUMNS / (COLUMNS - 2·HALO) strips and (rows + 6) / rows bands, and
// its fields cross DRAM once per step: terrain, depth and pipes in, depth and pipes out (44
// bytes), as in a fused tile kernel, with far less of the step recomputed for halos.
//
// Neighbouring strips and bands compute the shared halo pipes and limit factors from the same
// inputs with the same code, so both ends of every pipe apply the same integer and mass stays
// exact. Depth and pipes ping-pong between two buffers: neighbouring workgroups read the old
// values while this one writes the new. Modes the pipeline fixes (common.wgsl overrides) compile
// only their own code; without advection phases B and C and their barriers do not exist.

@group(0) @binding(0) var<uniform> c: StepConstants;
// The bed the step sees: the terrain plus the displacement of bodies (bodies.wgsl).
@group(0) @binding(1) var<storage, read> step_terrain: array<f32>;
@group(0) @binding(2) var<storage, read> depth_in: array<i32>;
@group(0) @binding(3) var<storage, read> flux_in: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> depth_out: array<i32>;
@group(0) @binding(5) var<storage, read_write> flux_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>, 8>;

// Invocations per workgroup, one per column; the host chooses it from the device's workgroup
// memory (backend::gpu COLUMN_CHOICES): 240 bytes per column.
override COLUMNS: u32 = 128u;
// Columns on each side of a strip whose results only their neighbours use.
const HALO: u32 = 5u;

// Rings of rows in workgroup memory, indexed [slot * COLUMNS + column]: four rows of the loaded
// fields, accelerated fluxes and limit factors, two of the old fluxes and discharges.
var<workgroup> s_bed: array<f32, COLUMNS * 4u>;
var<workgroup> s_depth: array<i32, COLUMNS * 4u>;
var<workgroup> s_flow: array<vec4<f32>, COLUMNS * 4u>;
var<workgroup> s_old_flux: array<vec4<f32>, COLUMNS * 2u>;
var<workgroup> s_discharge: array<vec2<f32>, COLUMNS * 2u>;
var<workgroup> s_flux: array<vec4<f32>, COLUMNS * 4u>;
// (outflow, room) limit factors.
var<workgroup> s_limits: array<vec2<f32>, COLUMNS * 4u>;

// Slot of row `y` (>= -8) in a ring of four rows, and in a ring of two.
fn ring(y: i32) -> u32 {
    return u32(y + 8) & 3u;
}

fn pair(y: i32) -> u32 {
    return u32(y + 8) & 1u;
}

fn at(slot: u32, column: u32) -> u32 {
    return slot * COLUMNS + column;
}

// One cell's fields as phase A stores them: zeros off the grid.
struct Loaded {
    bed: f32,
    depth: i32,
    flow: vec4<f32>,
}

fn load(cell: vec2<i32>) -> Loaded {
    var l: Loaded;
    l.bed = 0.0;
    l.depth = 0;
    l.flow = vec4<f32>(0.0);
    if cell_in_grid(c, cell) {
        let i = u32(cell.y) * c.width + u32(cell.x);
        l.bed = step_terrain[i];
        l.depth = with_inflow(c, cell, depth_in[i]);
        l.flow = flux_in[i];
    }
    return l;
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

// The columns of an invocation's neighbours, clamped to the strip (the halo columns that read
// past it compute values nobody uses).
struct Lanes {
    here: u32,
    left: u32,
    right: u32,
}

// Workgroup-memory column of the cell `dx` columns from this invocation's.
fn lane(lanes: Lanes, dx: i32) -> u32 {
    if dx < 0 {
        return lanes.left;
    }
    if dx > 0 {
        return lanes.right;
    }
    return lanes.here;
}

// Whether owned pipe p of `cell` exists: its cell and far end on the grid (diagonals only with
// eight neighbours).
fn pipe_exists(cell: vec2<i32>, p: u32) -> bool {
    return pipe_active(c, p) && cell_in_grid(c, cell) && cell_in_grid(c, cell + pipe_offset(p));
}

// The cell an invocation works on in a phase, and its own fields there.
struct Here {
    cell: vec2<i32>,
    bed: f32,
    depth: i32,
    flow: vec4<f32>,
}

fn here_at(cell: vec2<i32>, lanes: Lanes) -> Here {
    var h: Here;
    h.cell = cell;
    let slot = at(ring(cell.y), lanes.here);
    h.bed = s_bed[slot];
    h.depth = s_depth[slot];
    h.flow = s_flow[slot];
    return h;
}

// Each phase handles a cell's pipes one call per pipe, with `p` a constant at the call, so that
// the driver's compiler sees every vector component and workgroup slot it indexes by `p` as a
// constant (a component chosen at run time can push a vector out of registers).

// Phase B: the flux before the step of owned pipe p of `h` (backend/cpu.rs phase 0).
fn old_flux(h: Here, lanes: Lanes, p: u32) -> f32 {
    if !pipe_exists(h.cell, p) {
        return 0.0;
    }
    let o = pipe_offset(p);
    let end = at(ring(h.cell.y + o.y), lane(lanes, o.x));
    let carried = carried_depth(c, h.bed, h.depth, s_bed[end], s_depth[end]);
    return h.flow[p] * flux_per_stored(c, carried);
}

fn old_fluxes(h: Here, lanes: Lanes) -> vec4<f32> {
    return vec4<f32>(old_flux(h, lanes, 0u), old_flux(h, lanes, 1u), old_flux(h, lanes, 2u), old_flux(h, lanes, 3u));
}

// Phase C: the discharge at the centre of `cell` from the old fluxes of its eight pipes.
fn centre_discharge(cell: vec2<i32>, lanes: Lanes) -> vec2<f32> {
    if !cell_in_grid(c, cell) {
        return vec2<f32>(0.0);
    }
    let row = pair(cell.y);
    let above = pair(cell.y - 1);
    let own = s_old_flux[at(row, lanes.here)];
    var outgoing: array<f32, 8>;
    outgoing[0] = own.x;
    outgoing[1] = own.y;
    outgoing[2] = own.z;
    outgoing[3] = own.w;
    outgoing[4] = -s_old_flux[at(row, lanes.left)].x;
    outgoing[5] = -s_old_flux[at(above, lanes.here)].y;
    outgoing[6] = -s_old_flux[at(above, lanes.left)].z;
    outgoing[7] = -s_old_flux[at(above, lanes.right)].w;
    return discharge(c.cell_size, outgoing);
}

// backend/cpu.rs displaced_velocity: velocity (m/s) along pipe p of the pipe of the same
// direction owned by `owner - offset`, or `own` where that pipe would reach beyond the grid.
fn displaced_velocity(owner: vec2<i32>, p: u32, offset: vec2<i32>, lanes: Lanes, own: f32) -> f32 {
    let s = owner - offset;
    if cell_in_grid(c, s) && cell_in_grid(c, s + pipe_offset(p)) {
        return s_flow[at(ring(s.y), lane(lanes, -offset.x))][p] * c.inverse_widths[pipe_class(c, p, s)];
    }
    return own;
}

// Phase D: accelerate owned pipe p of `h` (backend/cpu.rs phase 1): its flux (for the
// neighbours) and what it keeps before the limit (for the cell's own transfer).
fn accelerate_pipe(h: Here, lanes: Lanes, p: u32) -> Accelerated {
    var none: Accelerated;
    none.stored = 0.0;
    none.flux = 0.0;
    if !pipe_exists(h.cell, p) {
        return none;
    }
    let o = pipe_offset(p);
    let end = at(ring(h.cell.y + o.y), lane(lanes, o.x));
    let bed_b = s_bed[end];
    let depth_b = s_depth[end];
    let carried = carried_depth(c, h.bed, h.depth, bed_b, depth_b);
    let kind = pipe_class(c, p, h.cell);
    let kept = h.flow[p];
    var up: Upstream;
    up.discharge = vec2<f32>(0.0);
    up.velocity = vec2<f32>(0.0);
    if advects(c) && kept != 0.0 {
        // The discharge at the centre of the cell the pipe draws from.
        var source = at(pair(h.cell.y), lanes.here);
        if kept < 0.0 {
            source = at(pair(h.cell.y + o.y), lane(lanes, o.x));
        }
        let q = s_discharge[source];
        let split = upstream_split(c, q);
        up.discharge = q;
        let own = kept * c.inverse_widths[kind];
        up.velocity = vec2<f32>(displaced_velocity(h.cell, p, split.first, lanes, own), displaced_velocity(h.cell, p, split.second, lanes, own));
    }
    return accelerate(c, kind, kept, h.bed, h.depth, bed_b, depth_b, carried, up);
}

// Phase E: the limit factors of `cell` (backend/cpu.rs phase 2); (1, 1) off the grid.
fn limits_of(cell: vec2<i32>, lanes: Lanes) -> vec2<f32> {
    if !cell_in_grid(c, cell) {
        return vec2<f32>(1.0);
    }
    let row = ring(cell.y);
    let above = ring(cell.y - 1);
    let own = s_flux[at(row, lanes.here)];
    var leaving: array<f32, 8>;
    leaving[0] = own.x;
    leaving[1] = own.y;
    leaving[2] = own.z;
    leaving[3] = own.w;
    leaving[4] = -s_flux[at(row, lanes.left)].x;
    leaving[5] = -s_flux[at(above, lanes.here)].y;
    leaving[6] = -s_flux[at(above, lanes.left)].z;
    leaving[7] = -s_flux[at(above, lanes.right)].w;
    let here = at(row, lanes.here);
    return cell_limits(c, cell, s_bed[here], s_depth[here], leaving);
}

// What phase D leaves of a cell's pipes: their fluxes (for the neighbours) and what each will keep
// before the limit (for the cell's own transfer, one iteration later).
struct AcceleratedPipes {
    flux: vec4<f32>,
    stored: vec4<f32>,
}

// What phase F does with one pipe of a cell: the quanta it brings in (negative: takes out), and
// what the cell keeps of it when the cell owns it.
struct Moved {
    quanta: i32,
    kept: f32,
}

// Phase F for pipe p of `cell` (limit factors `limits`): the owned pipe p, whose flux is `f` and
// which keeps `stored` before the limit, and the same pipe owned by the cell at cell - offset(p).
fn move_pipe(cell: vec2<i32>, lanes: Lanes, limits: vec2<f32>, f: f32, stored: f32, p: u32) -> Moved {
    var moved: Moved;
    moved.quanta = 0;
    moved.kept = 0.0;
    let o = pipe_offset(p);
    if f != 0.0 {
        let k = transfer_limit(f, limits, s_limits[at(ring(cell.y + o.y), lane(lanes, o.x))]);
        moved.quanta -= pipe_quanta(c.flux_to_quanta, f, k);
        moved.kept = stored * k;
    }
    let owner = at(ring(cell.y - o.y), lane(lanes, -o.x));
    let g = s_flux[owner][p];
    if g != 0.0 {
        let k = transfer_limit(g, s_limits[owner], limits);
        moved.quanta += pipe_quanta(c.flux_to_quanta, g, k);
    }
    return moved;
}

// Phase F: the transfer of `cell` (backend/cpu.rs phase 3), whose owned pipes keep `stored`
// before the limit.
fn transfer(cell: vec2<i32>, lanes: Lanes, stored: vec4<f32>) {
    let i = u32(cell.y) * c.width + u32(cell.x);
    let here = at(ring(cell.y), lanes.here);
    let d = s_depth[here];
    let bed = s_bed[here];
    let limits = s_limits[here];
    let own = s_flux[here];
    let e = move_pipe(cell, lanes, limits, own.x, stored.x, 0u);
    let s = move_pipe(cell, lanes, limits, own.y, stored.y, 1u);
    let se = move_pipe(cell, lanes, limits, own.z, stored.z, 2u);
    let sw = move_pipe(cell, lanes, limits, own.w, stored.w, 3u);
    // Every partial sum lies in 0 ..= MAX_DEPTH_QUANTA: the limit factors keep what leaves within
    // d and what enters within the room.
    var new_depth = d + e.quanta + s.quanta + se.quanta + sw.quanta;
    if has_edge_exchange(c) {
        count(COUNTER_BOUNDARY_IN, u32(d - depth_in[i]));
        let edge_flux = edge_outflow(c, cell, bed, d);
        if edge_flux > 0.0 {
            let gone = pipe_quanta(c.flux_to_quanta, edge_flux, limits.x);
            new_depth -= gone;
            count(COUNTER_BOUNDARY_OUT, u32(gone));
        }
        if has_level_edge(c) {
            // Water from a fixed level beyond the edge, up to the deepest a cell holds.
            let came = add_depth_clamped(new_depth, level_edge_inflow_quanta(c, cell, bed, d));
            count(COUNTER_BOUNDARY_IN, u32(came - new_depth));
            new_depth = came;
        }
    }
    depth_out[i] = new_depth;
    flux_out[i] = vec4<f32>(e.kept, s.kept, se.kept, sw.kept);
}

@compute @workgroup_size(COLUMNS)
fn step_columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let x = i32(wid.x * (COLUMNS - 2u * HALO) + t) - i32(HALO);
    // The band: the rows of the grid shared out evenly among the workgroups along y.
    let rows = (c.height + groups.y - 1u) / groups.y;
    let y0 = i32(wid.y * rows);
    let y_end = min(y0 + i32(rows), i32(c.height));
    var lanes: Lanes;
    lanes.here = t;
    lanes.left = max(t, 1u) - 1u;
    lanes.right = min(t + 1u, COLUMNS - 1u);
    let writes = t >= HALO && t < COLUMNS - HALO && x < i32(c.width);

    var next = load(vec2<i32>(x, y0 - 3));
    // What the cell of row r - 3 keeps before the limit, from phase D one iteration ago.
    var stored = vec4<f32>(0.0);
    for (var r = y0 - 3; r <= y_end + 2; r++) {
        // A: store the row loaded one iteration ago and start loading the next, so that its
        // latency hides behind this iteration's phases.
        let slot = at(ring(r), t);
        s_bed[slot] = next.bed;
        s_depth[slot] = next.depth;
        s_flow[slot] = next.flow;
        if r < y_end + 2 {
            next = load(vec2<i32>(x, r + 1));
        }
        workgroupBarrier();
        if advects(c) {
            // B: needed from row y0 - 3.
            if r >= y0 - 2 {
                s_old_flux[at(pair(r - 1), t)] = old_fluxes(here_at(vec2<i32>(x, r - 1), lanes), lanes);
            }
            workgroupBarrier();
            // C: needed from row y0 - 2.
            if r >= y0 - 1 {
                s_discharge[at(pair(r - 1), t)] = centre_discharge(vec2<i32>(x, r - 1), lanes);
            }
            workgroupBarrier();
        }
        // D: needed from row y0 - 2.
        var accelerated: AcceleratedPipes;
        accelerated.flux = vec4<f32>(0.0);
        accelerated.stored = vec4<f32>(0.0);
        if r >= y0 {
            let h = here_at(vec2<i32>(x, r - 2), lanes);
            let e = accelerate_pipe(h, lanes, 0u);
            let s = accelerate_pipe(h, lanes, 1u);
            let se = accelerate_pipe(h, lanes, 2u);
            let sw = accelerate_pipe(h, lanes, 3u);
            accelerated.flux = vec4<f32>(e.flux, s.flux, se.flux, sw.flux);
            accelerated.stored = vec4<f32>(e.stored, s.stored, se.stored, sw.stored);
            s_flux[at(ring(r - 2), t)] = accelerated.flux;
        }
        workgroupBarrier();
        // E: needed from row y0 - 1.
        if r >= y0 + 1 {
            s_limits[at(ring(r - 2), t)] = limits_of(vec2<i32>(x, r - 2), lanes);
        }
        workgroupBarrier();
        // F: the band's own rows.
        if r >= y0 + 3 && writes {
            transfer(vec2<i32>(x, r - 3), lanes, stored);
        }
        stored = accelerated.stored;
    }
}
