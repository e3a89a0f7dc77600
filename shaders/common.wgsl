// Declarations shared by every PipeWater compute shader. Every pass family lists this file first
// among the fragments it is compiled from (rust/pipewater-core/src/backend/gpu/shaders.rs).
//
// Mirrors rust/pipewater-core/src/pipes.rs and quanta.rs: constants and helper functions keep
// the same names, and each computes with the same operations in the same order.

// The terrain edits' list (backend::CellTerrain after an 8-byte header): edits.wgsl applies it,
// bodies.wgsl refreshes the step's bed of the cells it names.
struct TerrainEdits {
    count: u32,
    _pad: u32,
    // (cell index, height change m as f32 bits).
    items: array<vec2<u32>>,
}

// `StepConstants` of pipes.rs, byte for byte (144 bytes, uniform layout; tests/shaders.rs
// the_step_constants_layout_agrees_with_the_wgsl compares them member by member).
struct StepConstants {
    width: u32,
    height: u32,
    eight_neighbours: u32,
    depth_dependent: u32,
    dt: f32,
    gravity: f32,
    cell_size: f32,
    flux_decay: f32,
    pipe_depth: f32,
    flux_to_quanta: f32,
    // dt * 3 * viscosity (Params::viscosity), m².
    film: f32,
    // 1 when the step advects momentum.
    advection: u32,
    // Boundary code per edge (North, East, South, West).
    boundary: vec4<u32>,
    // Quanta added to each cell of each inflow edge per step.
    inflow_quanta: vec4<i32>,
    // Surface held beyond each fixed-level edge, local m.
    boundary_level: vec4<f32>,
    // Per pipe class (pipes.rs CLASS_*): width (m), 1 / width, and dt * g * width / length.
    widths: vec4<f32>,
    inverse_widths: vec4<f32>,
    conductance: vec4<f32>,
}

// The modes of the model, fixed when a pipeline is created (pipeline-overridable constants) or
// read from `c` at run time. -1, the default, reads `c`; 0 or 1 fixes the mode, so that a kernel
// specialised for it compiles only the code that mode runs (the step kernel is; the edit, body
// and snapshot passes read `c`).
override EIGHT_NEIGHBOURS: i32 = -1;
// The triangular lattice (pipes.rs NEIGHBOURS_TRIANGULAR; EIGHT_NEIGHBOURS is 1 with it).
override TRIANGULAR: i32 = -1;
override DEPTH_DEPENDENT: i32 = -1;
override ADVECTION: i32 = -1;
// Whether any edge is open, an inflow or a fixed level (pipes.rs has_edge_exchange).
override EDGE_EXCHANGE: i32 = -1;

fn eight_neighbours(c: StepConstants) -> bool {
    if EIGHT_NEIGHBOURS >= 0 {
        return EIGHT_NEIGHBOURS == 1;
    }
    return c.eight_neighbours != 0u;
}

// pipes.rs StepConstants::triangular.
fn triangular(c: StepConstants) -> bool {
    if TRIANGULAR >= 0 {
        return TRIANGULAR == 1;
    }
    return c.eight_neighbours == 2u;
}

fn depth_dependent(c: StepConstants) -> bool {
    if DEPTH_DEPENDENT >= 0 {
        return DEPTH_DEPENDENT == 1;
    }
    return c.depth_dependent != 0u;
}

fn advects(c: StepConstants) -> bool {
    if ADVECTION >= 0 {
        return ADVECTION == 1;
    }
    return c.advection != 0u;
}

fn has_edge_exchange(c: StepConstants) -> bool {
    if EDGE_EXCHANGE >= 0 {
        return EDGE_EXCHANGE == 1;
    }
    return any(c.boundary != vec4<u32>(0u));
}

// Depth of one quantum, m (2^-20).
const DEPTH_QUANTUM: f32 = 9.5367431640625e-7;
// Deepest water a cell can hold, quanta.
const MAX_DEPTH_QUANTA: i32 = 2147483647;
// pipes.rs LIMIT_MARGIN: 1 - 2^-20.
const LIMIT_MARGIN: f32 = 0.99999904632568359375;
const SQRT_2: f32 = 1.41421356237309504880;
const BOUNDARY_OPEN: u32 = 1u;
const BOUNDARY_INFLOW: u32 = 2u;
const BOUNDARY_LEVEL: u32 = 3u;
// pipes.rs VELOCITY_DEPTH_FLOOR, m.
const VELOCITY_DEPTH_FLOOR: f32 = 0.001;
// state.rs WET_DEPTH, m.
const WET_DEPTH: f32 = 1.0e-3;
// quanta.rs MAX_TERRAIN_ABS, m.
const MAX_TERRAIN_ABS: f32 = 1.0e6;

// Ledger slots in the counters buffer: each is a (low, high) pair of u32 words.
const COUNTER_ADDED: u32 = 0u;
const COUNTER_REMOVED: u32 = 1u;
const COUNTER_BOUNDARY_IN: u32 = 2u;
const COUNTER_BOUNDARY_OUT: u32 = 3u;
const COUNTER_SOLIDIFIED: u32 = 4u;
// Words of the counters buffer (recovery.rs COUNTER_BYTES / 4): the five slots' pairs.
const COUNTER_WORDS: u32 = 10u;

// Grid offset from owner to neighbour of owned pipe p: E, S, SE, SW.
fn pipe_offset(p: u32) -> vec2<i32> {
    switch p {
        case 0u: { return vec2<i32>(1, 0); }
        case 1u: { return vec2<i32>(0, 1); }
        case 2u: { return vec2<i32>(1, 1); }
        default: { return vec2<i32>(-1, 1); }
    }
}

// `a + b` clamped to 0 ..= MAX_DEPTH_QUANTA, for a >= 0, without overflowing i32.
fn add_depth_clamped(a: i32, b: i32) -> i32 {
    if b >= 0 {
        return select(a + b, MAX_DEPTH_QUANTA, b > MAX_DEPTH_QUANTA - a);
    }
    return max(a + b, 0);
}

// ---- The model of pipes.rs, one function per Rust function, constants passed as `c`. ----

fn cell_in_grid(c: StepConstants, p: vec2<i32>) -> bool {
    return p.x >= 0 && p.y >= 0 && p.x < i32(c.width) && p.y < i32(c.height);
}

// pipes.rs StepConstants::pipe_active for owned pipe p of a cell in row y: on the triangular
// lattice SE only on odd rows and SW only on even ones (pipes.rs lattice_has_pipe).
fn pipe_active(c: StepConstants, p: u32, y: i32) -> bool {
    if p < 2u {
        return true;
    }
    if !eight_neighbours(c) {
        return false;
    }
    return !triangular(c) || ((p == 2u) == ((y & 1) == 1));
}

// pipes.rs inflow_for_cell.
fn inflow_for_cell(c: StepConstants, p: vec2<i32>) -> i32 {
    var q = 0;
    if p.y == 0 && c.boundary.x == BOUNDARY_INFLOW { q += c.inflow_quanta.x; }
    if p.x == i32(c.width) - 1 && c.boundary.y == BOUNDARY_INFLOW { q += c.inflow_quanta.y; }
    if p.y == i32(c.height) - 1 && c.boundary.z == BOUNDARY_INFLOW { q += c.inflow_quanta.z; }
    if p.x == 0 && c.boundary.w == BOUNDARY_INFLOW { q += c.inflow_quanta.w; }
    return q;
}

// Depth (quanta) of cell p once this step's inflow has entered, from its stored depth `d`.
fn with_inflow(c: StepConstants, p: vec2<i32>, d: i32) -> i32 {
    if has_edge_exchange(c) && any(c.boundary == vec4<u32>(BOUNDARY_INFLOW)) {
        let q = inflow_for_cell(c, p);
        if q > 0 {
            return add_depth_clamped(d, q);
        }
    }
    return d;
}

// pipes.rs inverse_depth: 1/h above VELOCITY_DEPTH_FLOOR, fading to zero below it.
fn inverse_depth(depth: f32) -> f32 {
    let h = max(depth, 0.0);
    let floor = VELOCITY_DEPTH_FLOOR * VELOCITY_DEPTH_FLOOR;
    return 2.0 * h / (h * h + max(h * h, floor));
}

// pipes.rs open_edge_count.
fn open_edge_count(c: StepConstants, p: vec2<i32>) -> u32 {
    var n = 0u;
    if p.y == 0 && c.boundary.x == BOUNDARY_OPEN { n += 1u; }
    if p.x == i32(c.width) - 1 && c.boundary.y == BOUNDARY_OPEN { n += 1u; }
    if p.y == i32(c.height) - 1 && c.boundary.z == BOUNDARY_OPEN { n += 1u; }
    if p.x == 0 && c.boundary.w == BOUNDARY_OPEN { n += 1u; }
    return n;
}

// pipes.rs face_depth.
fn face_depth(surface_a: f32, bed_a: f32, surface_b: f32, bed_b: f32) -> f32 {
    return max(max(surface_a, surface_b) - max(bed_a, bed_b), 0.0);
}

// pipes.rs surface_drive for the four pipes of a cell (one vector lane a pipe): eta_a - eta_b from
// beds (m) and depths (quanta), differences within one quantum driving nothing.
fn surface_drive(bed_a: f32, depth_a: i32, bed_b: vec4<f32>, depth_b: vec4<i32>) -> vec4<f32> {
    let difference = (vec4<f32>(bed_a) - bed_b) + vec4<f32>(vec4<i32>(depth_a) - depth_b) * DEPTH_QUANTUM;
    return difference - clamp(difference, vec4<f32>(-DEPTH_QUANTUM), vec4<f32>(DEPTH_QUANTUM));
}

// pipes.rs CLASS_*.
const CLASS_ORTHOGONAL: u32 = 0u;
const CLASS_DIAGONAL: u32 = 3u;

// pipes.rs pipe_class: orthogonal pipes along an edge of the grid are widened by dx/6 per edge in
// eight-neighbour mode, for the diagonals missing beyond the edge.
fn pipe_class(c: StepConstants, p: u32, owner: vec2<i32>) -> u32 {
    if p >= 2u {
        return CLASS_DIAGONAL;
    }
    if !eight_neighbours(c) {
        return CLASS_ORTHOGONAL;
    }
    var low = owner.x == 0;
    var high = u32(owner.x) + 1u == c.width;
    if p == 0u {
        low = owner.y == 0;
        high = u32(owner.y) + 1u == c.height;
    }
    return u32(low) + u32(high);
}

// pipes.rs pipe_width.
fn pipe_width(c: StepConstants, p: u32, owner: vec2<i32>) -> f32 {
    return c.widths[pipe_class(c, p, owner)];
}

// The model's functions below work on the four pipes a cell owns at once, one vector lane a
// pipe (E, S, SE, SW), and choose with `select` rather than branch: the four pipes' long chains
// of dependent operations then run side by side instead of one after another. Each lane computes
// what its pipes.rs twin returns for that pipe, operation for operation; a lane that `select`
// discards may hold an infinity or a NaN, never returned.

// The value of a per-class constant (StepConstants widths, inverse_widths, conductance) for the
// classes of four pipes.
fn per_class(values: vec4<f32>, kind: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(values[kind.x], values[kind.y], values[kind.z], values[kind.w]);
}

// pipes.rs film_drag.
fn film_drag(c: StepConstants, f: vec4<f32>, depth: vec4<f32>) -> vec4<f32> {
    let squared = depth * depth;
    return select(f * (squared / (squared + c.film)), vec4<f32>(0.0), depth <= vec4<f32>(0.0));
}

// pipes.rs keeps_flux: pipes keep their flux (depth-dependent mode without advection).
fn keeps_flux(c: StepConstants) -> bool {
    return depth_dependent(c) && !advects(c);
}

// pipes.rs flux_per_stored.
fn flux_per_stored(c: StepConstants, carried: f32) -> f32 {
    return select(carried, 1.0, keeps_flux(c));
}

// pipes.rs carried_depth.
fn carried_depth(c: StepConstants, bed_a: f32, depth_a: i32, bed_b: f32, depth_b: i32) -> f32 {
    if !depth_dependent(c) {
        return c.pipe_depth;
    }
    return face_depth(bed_a + f32(depth_a) * DEPTH_QUANTUM, bed_a, bed_b + f32(depth_b) * DEPTH_QUANTUM, bed_b);
}

// pipes.rs Upstream for the four pipes of a cell: the parts of the discharge at the centre of
// each pipe's upstream cell along its two offsets, and the velocities of the two displaced pipes.
struct Upstream {
    parts_first: vec4<f32>,
    parts_second: vec4<f32>,
    velocity_first: vec4<f32>,
    velocity_second: vec4<f32>,
}

// pipes.rs upstream_split: the two grid offsets around the direction of `q`, and q's parts.
struct UpstreamSplit {
    first: vec2<i32>,
    second: vec2<i32>,
    parts: vec2<f32>,
}

fn upstream_split(c: StepConstants, q: vec2<f32>) -> UpstreamSplit {
    let sx = select(1, -1, q.x < 0.0);
    let sy = select(1, -1, q.y < 0.0);
    let ax = abs(q.x);
    let ay = abs(q.y);
    var split: UpstreamSplit;
    if !eight_neighbours(c) {
        split.first = vec2<i32>(sx, 0);
        split.second = vec2<i32>(0, sy);
        split.parts = vec2<f32>(ax, ay);
        return split;
    }
    let along_x = ax >= ay;
    split.first = select(vec2<i32>(0, sy), vec2<i32>(sx, 0), along_x);
    split.second = vec2<i32>(sx, sy);
    split.parts = select(vec2<f32>(ay - ax, ax), vec2<f32>(ax - ay, ay), along_x);
    return split;
}

// pipes.rs advect, for pipes of classes `kind` between a cell `depth_a` m deep and cells
// `depth_b` m deep.
fn advect(c: StepConstants, flow: vec4<f32>, kind: vec4<u32>, depth_a: f32, depth_b: vec4<f32>, up: Upstream) -> vec4<f32> {
    let held = 0.5 * (vec4<f32>(depth_a) + depth_b) * c.cell_size;
    let w0 = c.dt * up.parts_first;
    let w1 = c.dt * up.parts_second;
    let total = w0 + w1;
    let scale = 1.0 / max(total, held);
    let velocity = flow * per_class(c.inverse_widths, kind);
    let advected = velocity + scale * (w0 * (up.velocity_first - velocity) + w1 * (up.velocity_second - velocity));
    let still = total <= vec4<f32>(0.0) | held <= vec4<f32>(0.0);
    return select(advected * per_class(c.widths, kind), flow, still);
}

// pipes.rs Accelerated, for four pipes.
struct Accelerated {
    stored: vec4<f32>,
    flux: vec4<f32>,
}

// pipes.rs accelerate_carried for the four pipes of a cell (bed `bed_a` m, `depth_a` quanta) of
// classes `kind`, which kept `kept` and lead to cells of beds `bed_b` and depths `depth_b`,
// carrying over `depth` m (carried_depth; 0 for a pipe that does not exist).
fn accelerate(c: StepConstants, kind: vec4<u32>, kept: vec4<f32>, bed_a: f32, depth_a: i32, bed_b: vec4<f32>, depth_b: vec4<i32>, depth: vec4<f32>, up: Upstream) -> Accelerated {
    let dry = depth <= vec4<f32>(0.0);
    let drive = per_class(c.conductance, kind) * surface_drive(bed_a, depth_a, bed_b, depth_b);
    var result: Accelerated;
    if keeps_flux(c) {
        let flux = film_drag(c, kept * c.flux_decay + drive * depth, depth);
        let rest = dry | settles(c, kind, drive, flux, depth);
        result.stored = select(flux, vec4<f32>(0.0), rest);
        result.flux = result.stored;
        return result;
    }
    var flow = kept;
    if advects(c) {
        flow = advect(c, flow, kind, f32(depth_a) * DEPTH_QUANTUM, vec4<f32>(depth_b) * DEPTH_QUANTUM, up);
    }
    flow = flow * c.flux_decay + drive;
    if depth_dependent(c) {
        flow = film_drag(c, flow, depth);
    }
    let flux = flow * depth;
    let rest = dry | settles(c, kind, drive, flux, depth);
    result.stored = select(flow, vec4<f32>(0.0), rest);
    result.flux = select(flux, vec4<f32>(0.0), rest);
    return result;
}

// pipes.rs SETTLE_SPEED.
const SETTLE_SPEED: f32 = 1.0e-3;

// pipes.rs settles: undriven pipes that move no whole quantum and carry water slower than
// SETTLE_SPEED come to rest, so that water at rest stops changing.
fn settles(c: StepConstants, kind: vec4<u32>, drive: vec4<f32>, flux: vec4<f32>, depth: vec4<f32>) -> vec4<bool> {
    return (drive == vec4<f32>(0.0)) & (abs(flux * c.flux_to_quanta) < vec4<f32>(1.0)) & (abs(flux) < SETTLE_SPEED * per_class(c.widths, kind) * depth);
}

// pipes.rs discharge: discharge per metre at a cell from the fluxes leaving it towards
// NEIGHBOUR_OFFSETS (E, S, SE, SW, W, N, NW, NE), in the same symmetric tree.
fn discharge(cell_size: f32, o: array<f32, 8>) -> vec2<f32> {
    let qx = (o[0] - o[4]) + ((o[2] + o[7]) - (o[6] + o[3]));
    let qy = (o[1] - o[5]) + ((o[2] + o[3]) - (o[7] + o[6]));
    let scale = 0.5 / cell_size;
    return vec2<f32>(qx * scale, qy * scale);
}

// pipes.rs open_edge_outflow.
fn open_edge_outflow(c: StepConstants, d: f32) -> f32 {
    return c.cell_size * d * sqrt(c.gravity * d);
}

// pipes.rs level_edge_flux: positive out of the cell, negative into it.
fn level_edge_flux(c: StepConstants, p: vec2<i32>, bed: f32, depth: i32) -> f32 {
    let on_edge = vec4<bool>(p.y == 0, p.x == i32(c.width) - 1, p.y == i32(c.height) - 1, p.x == 0);
    var flux = 0.0;
    for (var e = 0u; e < 4u; e++) {
        if on_edge[e] && c.boundary[e] == BOUNDARY_LEVEL {
            let level = c.boundary_level[e];
            let difference = (bed - level) + f32(depth) * DEPTH_QUANTUM;
            let drive = difference - clamp(difference, -DEPTH_QUANTUM, DEPTH_QUANTUM);
            let h = max(bed + f32(depth) * DEPTH_QUANTUM, level) - bed;
            if h > 0.0 {
                flux += c.cell_size * sqrt(c.gravity * h) * drive;
            }
        }
    }
    return flux;
}

// pipes.rs edge_outflow: open edges and outflow into fixed levels, m³/s.
fn edge_outflow(c: StepConstants, p: vec2<i32>, bed: f32, depth: i32) -> f32 {
    if !has_edge_exchange(c) {
        return 0.0;
    }
    var out = 0.0;
    let open = open_edge_count(c, p);
    if open > 0u {
        out = open_edge_outflow(c, f32(depth) * DEPTH_QUANTUM) * f32(open);
    }
    return out + max(level_edge_flux(c, p, bed, depth), 0.0);
}

// pipes.rs level_edge_inflow_quanta.
fn level_edge_inflow_quanta(c: StepConstants, p: vec2<i32>, bed: f32, depth: i32) -> i32 {
    let flux = level_edge_flux(c, p, bed, depth);
    if flux < 0.0 {
        return pipe_quanta(c.flux_to_quanta, -flux, 1.0);
    }
    return 0;
}

// Whether any edge is a fixed level (so edge cells may receive water through it).
fn has_level_edge(c: StepConstants) -> bool {
    return has_edge_exchange(c) && any(c.boundary == vec4<u32>(BOUNDARY_LEVEL));
}

// pipes.rs pipe_quanta, with the sign carried through the product rather than taken off and put
// back: rounded multiplication by k >= 0 and truncation towards zero are both odd, so the
// quanta are the same, and the limit factors keep the product within i32.
fn pipe_quanta(flux_to_quanta: f32, f: f32, k_drainer: f32) -> i32 {
    return i32(f * flux_to_quanta * k_drainer);
}

// pipes.rs requested_quanta, summed in the same tree.
fn requested_quanta(flux_to_quanta: f32, leaving: array<f32, 8>) -> f32 {
    var q: array<f32, 8>;
    for (var n = 0u; n < 8u; n++) {
        q[n] = abs(max(leaving[n], 0.0) * flux_to_quanta);
    }
    return ((q[0] + q[4]) + (q[1] + q[5])) + ((q[2] + q[6]) + (q[3] + q[7]));
}

// pipes.rs limit_factor.
fn limit_factor(depth_quanta: i32, requested: f32) -> f32 {
    let available = f32(depth_quanta) * LIMIT_MARGIN;
    return select(min(available / requested, 1.0), 1.0, requested <= available);
}

// pipes.rs room_factor.
fn room_factor(depth_quanta: i32, incoming: f32) -> f32 {
    let room = f32(MAX_DEPTH_QUANTA - depth_quanta) * LIMIT_MARGIN;
    return select(min(room / incoming, 1.0), 1.0, incoming <= room);
}

// pipes.rs transfer_limit: `limits` are (outflow, room) factors of the pipe's owner and its
// neighbour.
fn transfer_limit(f: f32, owner: vec2<f32>, neighbour: vec2<f32>) -> f32 {
    return select(min(neighbour.x, owner.y), min(owner.x, neighbour.y), f > 0.0);
}

// Whole quanta the pipes in `q` (as requested_quanta counts them: q[n] = |max(flow, 0)| ·
// flux_to_quanta) move with factor k, plus `edge` quanta: what a cell holding or making room for
// `bound` quanta must not exceed. Stops counting once past it.
fn whole_quanta(q: array<f32, 8>, edge: f32, k: f32, bound: i32) -> u32 {
    var total = u32(i32(edge * k));
    for (var n = 0u; n < 8u; n++) {
        if total <= u32(bound) {
            total += u32(i32(q[n] * k));
        }
    }
    return total;
}

// A limit factor `k` of pipes.rs (limit_factor or room_factor) for `bound` quanta, made safe for
// a GPU whose division is not correctly rounded: LIMIT_MARGIN covers the CPU's rounding; here
// the whole quanta the transfer will move are counted and k shrunk until they fit, so positivity
// and the depth limit never rest on the driver's division. (The check passes at once unless the
// division was off; with k = 1 no division ran and it is not needed.)
fn checked_factor(k: f32, q: array<f32, 8>, edge: f32, bound: i32) -> f32 {
    if k >= 1.0 {
        return k;
    }
    var checked = k;
    var tries = 0;
    while whole_quanta(q, edge, checked, bound) > u32(bound) {
        if tries == 4 {
            return 0.0;
        }
        checked *= LIMIT_MARGIN;
        tries++;
    }
    return checked;
}

// pipes.rs cell_limits for a cell holding `d` quanta (after inflow) at grid position `cell` over
// bed `bed`, whose pipes carry `leaving[n]` towards NEIGHBOUR_OFFSETS[n]: (outflow, room).
fn cell_limits(c: StepConstants, cell: vec2<i32>, bed: f32, d: i32, leaving: array<f32, 8>) -> vec2<f32> {
    var out: array<f32, 8>;
    var into: array<f32, 8>;
    for (var n = 0u; n < 8u; n++) {
        out[n] = abs(max(leaving[n], 0.0) * c.flux_to_quanta);
        into[n] = abs(max(-leaving[n], 0.0) * c.flux_to_quanta);
    }
    var requested = ((out[0] + out[4]) + (out[1] + out[5])) + ((out[2] + out[6]) + (out[3] + out[7]));
    let incoming = ((into[0] + into[4]) + (into[1] + into[5])) + ((into[2] + into[6]) + (into[3] + into[7]));
    let edge_flux = edge_outflow(c, cell, bed, d);
    var edge = 0.0;
    if edge_flux > 0.0 {
        edge = abs(edge_flux * c.flux_to_quanta);
        requested += edge;
    }
    let outflow = checked_factor(limit_factor(d, requested), out, edge, d);
    let room = checked_factor(room_factor(d, incoming), into, 0.0, MAX_DEPTH_QUANTA - d);
    return vec2<f32>(outflow, room);
}

// Sleeping tiles (backend/sleep.rs): the step kernel's workgroup domains, a strip of columns by
// a band of rows, are the tiles; the step runs only the awake ones, listed by tiles.wgsl. Rust:
// backend/sleep.rs TileParams (the same 32 bytes; tests/shaders.rs compares them).
struct TileParams {
    // Tiles along x (strips) and y (bands).
    tiles: vec2<u32>,
    // Cells of a tile along x (a strip's own columns) and y (a band's rows); the last strip and
    // band may be smaller.
    size: vec2<u32>,
    // 1 when tiles may sleep, 0 when every tile steps.
    sleeping: u32,
    // How the constants changed before the frame's first step: TILES_CHANGE_*.
    change: u32,
    // Slices of rows a tile's snapshot is cut into, one workgroup each (snapshot.wgsl).
    snapshot_slices: u32,
    padding: u32,
}

// sleep.rs ConstantsChange.
const TILES_CHANGE_NONE: u32 = 0u;
const TILES_CHANGE_STEP_LENGTH: u32 = 1u;
const TILES_CHANGE_MODE: u32 = 2u;

// Bits of a tile's flags word, per step: whether a bit of its depth or pipes changed (or it
// moved a ledger counter), whether a pipe of it carries flow, whether the step stepped it, and
// in a world of pages whether a cell of it holds water, and which of its eight neighbours a wet
// cell of it touches (cells_paged.wgsl tile_flags_seen: the north, east, south and west rows and
// columns, then the four corner cells), then the same eight for a wet cell within half a page of
// that border (of both borders, for a corner): the neighbours its water may reach within the
// host's margin (backend/gpu/world.rs).
const TILE_CHANGED: u32 = 1u;
const TILE_MOVING: u32 = 2u;
const TILE_AWAKE: u32 = 4u;
const TILE_WET: u32 = 8u;
const TILE_WET_NORTH: u32 = 16u;
const TILE_NEAR_NORTH: u32 = 0x2000u;
// What a tile the step skips keeps of its flags: its pipes and water are as they were (every bit
// but TILE_CHANGED, TILE_AWAKE and cells_paged.wgsl's TILE_OWED).
const TILE_KEPT: u32 = 0x1feffau;

// Words in front of the awake tiles in an awake list: the indirect dispatch's (x, y, z) and one
// spare, so that the list is the dispatch's argument buffer too.
const AWAKE_LIST_HEADER: u32 = 4u;

// A bijection of 32 bits that mixes every bit into every other (Chris Wellons's lowbias32; the
// detail layer's rain and the sync's tile hash; detail/kernel.rs `hash` on the host).
fn lowbias32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}
