// The whole step of pipes.rs in ONE pass per step, streamed down the grid.
//
// A workgroup owns a strip of COLUMNS columns and a band of rows (a sleeping tile: the awake
// list of tiles.wgsl names it, and the workgroup notes whether the step changed it); each
// invocation owns one column and walks the band's rows top to bottom, one row per iteration. Each
// iteration loads one new row and carries every phase of the step one row further, each phase a
// row or two behind the one it reads from, so that what a phase needs from the rows below has
// been loaded:
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
// y-3 ..= y+3 and columns x-4 ..= x+4: a band is loaded with three rows above and below it, and
// the HALO columns on each side of a strip compute values only their neighbours use. A cell's
// fields cross DRAM once per step: terrain, depth and pipes in, depth and pipes out (44 bytes;
// halo columns and rows come again from the caches), as in a fused tile kernel, with less of the
// step recomputed for halos (with 64 columns and 64 rows, 1.20 cells computed per cell stepped,
// against 1.69 for a 32 × 8 tile with a two-cell halo).
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
// Sleeping tiles (tiles.wgsl): each workgroup steps the tile the awake list names at its index,
// and adds what it saw to that tile's flags for the next step's plan (which marked the tile
// TILE_AWAKE and nothing else).
@group(0) @binding(7) var<uniform> tiles: TileParams;
@group(0) @binding(8) var<storage, read> awake_list: array<u32>;
@group(0) @binding(9) var<storage, read_write> tile_flags: array<atomic<u32>>;

// Invocations per workgroup, one per column; the host chooses it from the device's workgroup
// memory (backend/step_kernel.rs COLUMN_CHOICES): 240 bytes per column of ROW.
override COLUMNS: u32 = 64u;
// Columns each invocation walks (1 or 2, set by the host with COLUMNS): two give each
// invocation two independent cells in every phase, whose latencies overlap.
override PER_INVOCATION: u32 = 1u;
// (Named, and declared before the workgroup arrays, whose sizes naga turns into unnamed
// overrides that it cannot evaluate on the way to a later one.)
override INVOCATIONS: u32 = COLUMNS / PER_INVOCATION;
// Workgroup-memory columns of a ring row: the strip's and one of padding on each side, so that
// a neighbour's column is the invocation's own plus or minus one, without clamping (2 % faster
// with advection on an H100, up to 1 % slower without: docs/BENCHMARKS.md).
override ROW: u32 = COLUMNS + 2u;
// Rows of the rings of accelerated fluxes and limit factors, and of the rings only advection
// reads (old fluxes, discharges). NVIDIA's Vulkan driver gives a multiprocessor 48 KiB of
// workgroup memory for this kernel, in steps of 1 KiB a workgroup (docs/BENCHMARKS.md): without
// advection, rings of three rows and no advection rings let four workgroups in instead of three,
// which is worth the modulo; with advection the memory saved does not reach a fourth. Three rows
// hold them: phase D writes row r - 2 over row r - 5, which F read before the last barrier, and E
// and F read rows r - 4 ..= r - 2.
override FLUX_ROWS: u32 = select(4u, 3u, ADVECTION == 0);
override OLD_ROWS: u32 = select(2u, 0u, ADVECTION == 0);

// Columns on each side of a strip whose results only their neighbours use. The transfer of
// column x reads the limit factors of x ± 1, which read the fluxes of x ± 2, which read the
// discharges of x ± 3 (a pipe's source is its owner or its far end), which read the old fluxes
// of the pipes that touch x ± 3: owned by x ± 4, and of those only the ones whose far end lies
// within x ± 3. So the outermost column's pipes that reach beyond it (into the padding) are
// computed from nonsense that nothing reads.
const HALO: u32 = 4u;

// Rings of rows in workgroup memory, indexed [slot * ROW + column]: four rows of the loaded
// fields, FLUX_ROWS of the accelerated fluxes and limit factors, OLD_ROWS of the old fluxes and
// discharges.
// (bed m as i32 bits, depth quanta): the two are always read together, one load instead of two
// (1.5 % faster with advection on an H100).
var<workgroup> s_level: array<vec2<i32>, ROW * 4u>;
var<workgroup> s_discharge: array<vec2<f32>, max(ROW * OLD_ROWS, 1u)>;
// (outflow, room) limit factors.
var<workgroup> s_limits: array<vec2<f32>, ROW * FLUX_ROWS>;
// The four pipes of a cell (stored flows, old and accelerated fluxes) lie in four planes, one
// a pipe, each a ring indexed as above: [p * ROW * rows + slot * ROW + column]. The phases read
// single pipes of neighbouring cells far more often than all four of a cell, and a warp's read
// of one lane of a `vec4` array strides 16 bytes, which the banks serve in four passes; from a
// plane it is one.
var<workgroup> s_flow: array<f32, ROW * 16u>;
var<workgroup> s_old_flux: array<f32, max(ROW * 4u * OLD_ROWS, 1u)>;
var<workgroup> s_flux: array<f32, ROW * 4u * FLUX_ROWS>;

// Pipe p of the cell at ring index i (at(slot, column)), and all four, of each plane ring.
fn flow_of(i: u32, p: u32) -> f32 {
    return s_flow[p * ROW * 4u + i];
}

fn flows(i: u32) -> vec4<f32> {
    let n = ROW * 4u;
    return vec4<f32>(s_flow[i], s_flow[n + i], s_flow[2u * n + i], s_flow[3u * n + i]);
}

fn set_flows(i: u32, v: vec4<f32>) {
    let n = ROW * 4u;
    s_flow[i] = v.x;
    s_flow[n + i] = v.y;
    s_flow[2u * n + i] = v.z;
    s_flow[3u * n + i] = v.w;
}

fn flux_of(i: u32, p: u32) -> f32 {
    return s_flux[p * ROW * FLUX_ROWS + i];
}

fn fluxes(i: u32) -> vec4<f32> {
    let n = ROW * FLUX_ROWS;
    return vec4<f32>(s_flux[i], s_flux[n + i], s_flux[2u * n + i], s_flux[3u * n + i]);
}

fn set_fluxes(i: u32, v: vec4<f32>) {
    let n = ROW * FLUX_ROWS;
    s_flux[i] = v.x;
    s_flux[n + i] = v.y;
    s_flux[2u * n + i] = v.z;
    s_flux[3u * n + i] = v.w;
}

fn old_flux_of(i: u32, p: u32) -> f32 {
    return s_old_flux[p * ROW * OLD_ROWS + i];
}

fn old_fluxes_at(i: u32) -> vec4<f32> {
    let n = ROW * OLD_ROWS;
    return vec4<f32>(s_old_flux[i], s_old_flux[n + i], s_old_flux[2u * n + i], s_old_flux[3u * n + i]);
}

fn set_old_fluxes(i: u32, v: vec4<f32>) {
    let n = ROW * OLD_ROWS;
    s_old_flux[i] = v.x;
    s_old_flux[n + i] = v.y;
    s_old_flux[2u * n + i] = v.z;
    s_old_flux[3u * n + i] = v.w;
}

// Slot of row `y` (>= -8) in a ring of four rows, and in a ring of two.
fn ring(y: i32) -> u32 {
    return u32(y + 8) & 3u;
}

// Slot of row `y` (>= -8) in the rings of accelerated fluxes and limit factors.
fn flux_ring(y: i32) -> u32 {
    if FLUX_ROWS == 3u {
        return u32(y + 9) % 3u;
    }
    return ring(y);
}

fn pair(y: i32) -> u32 {
    return u32(y + 8) & 1u;
}

fn at(slot: u32, column: u32) -> u32 {
    return slot * ROW + column;
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

// The workgroup-memory columns of an invocation's cell and its neighbours (the halo columns at
// a strip's sides read the padding beside it, for results nobody uses). `left` and `right` are
// `here` ∓ 1, kept as fields: deriving them where they are read moved the driver's schedule and
// made the step 1.5 % slower with advection on an H100.
struct Lanes {
    here: u32,
    left: u32,
    right: u32,
}

// Workgroup-memory column of the cell `dx` columns from this invocation's.
fn lane(lanes: Lanes, dx: i32) -> u32 {
    return u32(i32(lanes.here) + dx);
}

// Which cells of the 5×5 window around a cell lie on the grid: bit (dy + 2)·5 + (dx + 2) for
// the cell (dx, dy) away. Built once per cell and phase from the invocation's columns and the
// row, so that the many "is this neighbour on the grid" questions of a phase cost a shift each.
// The rows on the grid are a run of the five: the columns' bits are copied into every row's five
// by one multiplication, and those of the rows above and below the grid are dropped.
fn window(columns: u32, y: i32) -> u32 {
    let above = 5u * u32(clamp(2 - y, 0, 5));
    let below = 5u * u32(clamp(y + 3 - i32(c.height), 0, 5));
    let rows = ((WINDOW_INSIDE >> above) << above) & (WINDOW_INSIDE >> below);
    return (columns * 0x108421u) & rows;
}

// Bits 0..4: whether columns x - 2 ..= x + 2 lie on the grid.
fn columns_on_grid(x: i32) -> u32 {
    var bits = 0u;
    for (var k = 0; k < 5; k++) {
        let column = x + k - 2;
        if column >= 0 && column < i32(c.width) {
            bits |= 1u << u32(k);
        }
    }
    return bits;
}

// The window of a cell whose 5×5 neighbourhood lies on the grid.
const WINDOW_INSIDE: u32 = 0x1ffffffu;

// A full window answers before the shift: phase D's interior path passes WINDOW_INSIDE as a
// constant, and only then does the driver's compiler drop every edge test of the upstream reads,
// whose offsets it cannot bound (15 % faster with advection on an H100, docs/BENCHMARKS.md).
fn inside(window: u32, d: vec2<i32>) -> bool {
    if window == WINDOW_INSIDE {
        return true;
    }
    return ((window >> u32((d.y + 2) * 5 + d.x + 2)) & 1u) != 0u;
}

// Whether owned pipe p of the cell `d` away from the window's centre exists: that cell and the
// pipe's far end on the grid (diagonals only with eight neighbours).
fn pipe_exists_at(window: u32, d: vec2<i32>, p: u32) -> bool {
    return pipe_active(c, p) && inside(window, d) && inside(window, d + pipe_offset(p));
}

// common.wgsl pipe_class for owned pipe p of the cell `d` away from the window's centre (which
// lies on the grid): an orthogonal pipe along an edge is one whose neighbours across it are off.
fn pipe_class_at(window: u32, d: vec2<i32>, p: u32) -> u32 {
    if p >= 2u {
        return CLASS_DIAGONAL;
    }
    if !eight_neighbours(c) {
        return CLASS_ORTHOGONAL;
    }
    var across = vec2<i32>(1, 0);
    if p == 0u {
        across = vec2<i32>(0, 1);
    }
    return u32(!inside(window, d - across)) + u32(!inside(window, d + across));
}

// The cell an invocation works on in a phase, its own fields there and its window.
struct Here {
    cell: vec2<i32>,
    window: u32,
    bed: f32,
    depth: i32,
    flow: vec4<f32>,
}

fn here_at(cell: vec2<i32>, columns: u32, lanes: Lanes) -> Here {
    var h: Here;
    h.cell = cell;
    h.window = window(columns, cell.y);
    let slot = at(ring(cell.y), lanes.here);
    let level = s_level[slot];
    h.bed = bitcast<f32>(level.x);
    h.depth = level.y;
    h.flow = flows(slot);
    return h;
}

// Each phase handles a cell's pipes one call per pipe, with `p` a constant at the call, so that
// the driver's compiler sees every vector component and workgroup slot it indexes by `p` as a
// constant (a component chosen at run time can push a vector out of registers).

// The depth carrying owned pipe p of `h` (pipes.rs carried_depth), 0 where it does not exist.
fn carried_of(h: Here, lanes: Lanes, p: u32) -> f32 {
    let o = pipe_offset(p);
    let end = at(ring(h.cell.y + o.y), lane(lanes, o.x));
    return select(0.0, carried_depth(c, h.bed, h.depth, bitcast<f32>(s_level[end].x), s_level[end].y), pipe_exists_at(h.window, vec2<i32>(0), p));
}

fn carried_depths(h: Here, lanes: Lanes) -> vec4<f32> {
    return vec4<f32>(carried_of(h, lanes, 0u), carried_of(h, lanes, 1u), carried_of(h, lanes, 2u), carried_of(h, lanes, 3u));
}

// Phase B: the flux before the step of owned pipe p of `h`, which carries over `carried`
// (backend/cpu.rs phase 0; 0 where the pipe does not exist).
fn old_flux(h: Here, carried: f32, p: u32) -> f32 {
    return select(0.0, h.flow[p] * flux_per_stored(c, carried), pipe_exists_at(h.window, vec2<i32>(0), p));
}

fn old_fluxes(h: Here, carried: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(old_flux(h, carried.x, 0u), old_flux(h, carried.y, 1u), old_flux(h, carried.z, 2u), old_flux(h, carried.w, 3u));
}

// Phase C: the discharge at the centre of `h`'s cell from the old fluxes of its eight pipes.
fn centre_discharge(h: Here, lanes: Lanes) -> vec2<f32> {
    let row = pair(h.cell.y);
    let above = pair(h.cell.y - 1);
    let own = old_fluxes_at(at(row, lanes.here));
    var outgoing: array<f32, 8>;
    outgoing[0] = own.x;
    outgoing[1] = own.y;
    outgoing[2] = own.z;
    outgoing[3] = own.w;
    outgoing[4] = -old_flux_of(at(row, lanes.left), 0u);
    outgoing[5] = -old_flux_of(at(above, lanes.here), 1u);
    outgoing[6] = -old_flux_of(at(above, lanes.left), 2u);
    outgoing[7] = -old_flux_of(at(above, lanes.right), 3u);
    return select(vec2<f32>(0.0), discharge(c.cell_size, outgoing), inside(h.window, vec2<i32>(0)));
}

// backend/cpu.rs displaced_velocity: velocity (m/s) along pipe p of the pipe of the same
// direction owned by the cell `offset` behind `h`'s, or `own` where that pipe would reach beyond
// the grid.
fn displaced_velocity(h: Here, p: u32, offset: vec2<i32>, lanes: Lanes, own: f32) -> f32 {
    let d = -offset;
    // The read is of a slot of the ring whatever `d`; off the grid its value is not used.
    let there = flow_of(at(ring(h.cell.y + d.y), lane(lanes, d.x)), p) * c.inverse_widths[pipe_class_at(h.window, d, p)];
    return select(own, there, inside(h.window, d) && inside(h.window, d + pipe_offset(p)));
}

// The slot of the far end of owned pipe p of `h`.
fn far_end(h: Here, lanes: Lanes, p: u32) -> u32 {
    let o = pipe_offset(p);
    return at(ring(h.cell.y + o.y), lane(lanes, o.x));
}

// What advection needs upstream of owned pipe p of `h`, which kept `kept` (backend/cpu.rs
// OldFields::upstream): (the discharge's part along the first offset, along the second, the
// velocity displaced by the first offset, by the second); none for a pipe at rest, which
// advection leaves as it is.
fn upstream_of(h: Here, lanes: Lanes, kept: f32, kind: u32, p: u32) -> vec4<f32> {
    let o = pipe_offset(p);
    // The discharge at the centre of the cell the pipe draws from.
    let source = select(at(pair(h.cell.y), lanes.here), at(pair(h.cell.y + o.y), lane(lanes, o.x)), kept < 0.0);
    let q = select(s_discharge[source], vec2<f32>(0.0), kept == 0.0);
    let split = upstream_split(c, q);
    let own = kept * c.inverse_widths[kind];
    return vec4<f32>(split.parts, displaced_velocity(h, p, split.first, lanes, own), displaced_velocity(h, p, split.second, lanes, own));
}

// Phase D: accelerate the four pipes of `h`, which carry over `carried` (backend/cpu.rs phase 1):
// their fluxes (for the neighbours) and what they keep before the limit (for the cell's own
// transfer). A pipe that does not exist has carried depth 0 (carried_of), so its lane is zero.
fn accelerate_pipes(h: Here, lanes: Lanes, carried_b: vec4<f32>) -> AcceleratedPipes {
    var carried = carried_b;
    if !advects(c) {
        carried = carried_depths(h, lanes);
    }
    let ends = vec4<u32>(far_end(h, lanes, 0u), far_end(h, lanes, 1u), far_end(h, lanes, 2u), far_end(h, lanes, 3u));
    let level_e = s_level[ends.x];
    let level_s = s_level[ends.y];
    let level_se = s_level[ends.z];
    let level_sw = s_level[ends.w];
    let bed_b = bitcast<vec4<f32>>(vec4<i32>(level_e.x, level_s.x, level_se.x, level_sw.x));
    let depth_b = vec4<i32>(level_e.y, level_s.y, level_se.y, level_sw.y);
    let centre = vec2<i32>(0);
    let kind = vec4<u32>(pipe_class_at(h.window, centre, 0u), pipe_class_at(h.window, centre, 1u), CLASS_DIAGONAL, CLASS_DIAGONAL);
    var up: Upstream;
    up.parts_first = vec4<f32>(0.0);
    up.parts_second = vec4<f32>(0.0);
    up.velocity_first = vec4<f32>(0.0);
    up.velocity_second = vec4<f32>(0.0);
    if advects(c) {
        let e = upstream_of(h, lanes, h.flow.x, kind.x, 0u);
        let s = upstream_of(h, lanes, h.flow.y, kind.y, 1u);
        let se = upstream_of(h, lanes, h.flow.z, kind.z, 2u);
        let sw = upstream_of(h, lanes, h.flow.w, kind.w, 3u);
        up.parts_first = vec4<f32>(e.x, s.x, se.x, sw.x);
        up.parts_second = vec4<f32>(e.y, s.y, se.y, sw.y);
        up.velocity_first = vec4<f32>(e.z, s.z, se.z, sw.z);
        up.velocity_second = vec4<f32>(e.w, s.w, se.w, sw.w);
    }
    let a = accelerate(c, kind, h.flow, h.bed, h.depth, bed_b, depth_b, carried, up);
    var pipes: AcceleratedPipes;
    pipes.flux = a.flux;
    pipes.stored = a.stored;
    return pipes;
}

// Phase E: the limit factors of `cell` (backend/cpu.rs phase 2); (1, 1) off the grid.
fn limits_of(cell: vec2<i32>, lanes: Lanes) -> vec2<f32> {
    if !cell_in_grid(c, cell) {
        return vec2<f32>(1.0);
    }
    let row = flux_ring(cell.y);
    let above = flux_ring(cell.y - 1);
    let own = fluxes(at(row, lanes.here));
    var leaving: array<f32, 8>;
    leaving[0] = own.x;
    leaving[1] = own.y;
    leaving[2] = own.z;
    leaving[3] = own.w;
    leaving[4] = -flux_of(at(row, lanes.left), 0u);
    leaving[5] = -flux_of(at(above, lanes.here), 1u);
    leaving[6] = -flux_of(at(above, lanes.left), 2u);
    leaving[7] = -flux_of(at(above, lanes.right), 3u);
    let level = s_level[at(ring(cell.y), lanes.here)];
    return cell_limits(c, cell, bitcast<f32>(level.x), level.y, leaving);
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
    // A pipe with no flux moves no quanta (pipe_quanta of 0 is 0) and keeps nothing.
    let k = transfer_limit(f, limits, s_limits[at(flux_ring(cell.y + o.y), lane(lanes, o.x))]);
    let owner = at(flux_ring(cell.y - o.y), lane(lanes, -o.x));
    let g = flux_of(owner, p);
    let k_in = transfer_limit(g, s_limits[owner], limits);
    moved.quanta = pipe_quanta(c.flux_to_quanta, g, k_in) - pipe_quanta(c.flux_to_quanta, f, k);
    moved.kept = select(0.0, stored * k, f != 0.0);
    return moved;
}

// Phase F: the transfer of `cell` (backend/cpu.rs phase 3), whose owned pipes keep `stored`
// before the limit. Returns the cell's TILE_CHANGED and TILE_MOVING bits: whether a bit of its
// depth or pipes changed or it moved a ledger counter, and whether a pipe it keeps carries flow.
fn transfer(cell: vec2<i32>, lanes: Lanes, stored: vec4<f32>) -> u32 {
    let i = u32(cell.y) * c.width + u32(cell.x);
    let here = at(ring(cell.y), lanes.here);
    let level = s_level[here];
    let d = level.y;
    let bed = bitcast<f32>(level.x);
    let in_rings = at(flux_ring(cell.y), lanes.here);
    let limits = s_limits[in_rings];
    let own = fluxes(in_rings);
    let e = move_pipe(cell, lanes, limits, own.x, stored.x, 0u);
    let s = move_pipe(cell, lanes, limits, own.y, stored.y, 1u);
    let se = move_pipe(cell, lanes, limits, own.z, stored.z, 2u);
    let sw = move_pipe(cell, lanes, limits, own.w, stored.w, 3u);
    // Every partial sum lies in 0 ..= MAX_DEPTH_QUANTA: the limit factors keep what leaves within
    // d and what enters within the room.
    var new_depth = d + e.quanta + s.quanta + se.quanta + sw.quanta;
    // `d` holds this step's inflow already: an edge that exchanges water compares with the depth
    // the step read, and counts as a change when a counter moves.
    var exchanged = false;
    if has_edge_exchange(c) {
        let inflow = d - depth_in[i];
        count(COUNTER_BOUNDARY_IN, u32(inflow));
        exchanged = inflow != 0;
        let edge_flux = edge_outflow(c, cell, bed, d);
        if edge_flux > 0.0 {
            let gone = pipe_quanta(c.flux_to_quanta, edge_flux, limits.x);
            new_depth -= gone;
            count(COUNTER_BOUNDARY_OUT, u32(gone));
            exchanged = exchanged || gone != 0;
        }
        if has_level_edge(c) {
            // Water from a fixed level beyond the edge, up to the deepest a cell holds.
            let came = add_depth_clamped(new_depth, level_edge_inflow_quanta(c, cell, bed, d));
            count(COUNTER_BOUNDARY_IN, u32(came - new_depth));
            exchanged = exchanged || came != new_depth;
            new_depth = came;
        }
    }
    let kept = vec4<f32>(e.kept, s.kept, se.kept, sw.kept);
    depth_out[i] = new_depth;
    flux_out[i] = kept;
    // Bits, not values: -0.0 and 0.0 differ, as they do for the CPU backend's comparison.
    let changed = exchanged || new_depth != d || any(bitcast<vec4<u32>>(kept) != bitcast<vec4<u32>>(flows(here)));
    return select(0u, TILE_CHANGED, changed) | select(0u, TILE_MOVING, any(kept != vec4<f32>(0.0)));
}

// One column's state as its invocation walks down the band.
struct Column {
    // Grid column, and the workgroup-memory columns of it and its neighbours.
    x: i32,
    lanes: Lanes,
    // columns_on_grid(x).
    columns: u32,
    // Whether this column is the strip's own (not halo) and on the grid.
    writes: bool,
    // The row loaded one iteration ago, for phase A to store.
    next: Loaded,
    // What the cell of row r - 3 keeps before the limit, from phase D one iteration ago.
    stored: vec4<f32>,
    // With advection, the carried depths of row r - 2 (from phase B one iteration ago) and of
    // row r - 1 (from phase B of this iteration).
    carried: vec4<f32>,
    carried_next: vec4<f32>,
    // Phase B's cell, for phase C.
    b: Here,
    // TILE_CHANGED and TILE_MOVING of the cells this column wrote.
    flags: u32,
}

fn column_at(strip: u32, lane_index: u32, y0: i32) -> Column {
    var col: Column;
    col.x = i32(strip * (COLUMNS - 2u * HALO) + lane_index) - i32(HALO);
    col.lanes.here = lane_index + 1u;
    col.lanes.left = lane_index;
    col.lanes.right = lane_index + 2u;
    col.columns = columns_on_grid(col.x);
    col.writes = lane_index >= HALO && lane_index < COLUMNS - HALO && col.x < i32(c.width);
    col.next = load(vec2<i32>(col.x, y0 - 3));
    col.stored = vec4<f32>(0.0);
    col.carried = vec4<f32>(0.0);
    col.carried_next = vec4<f32>(0.0);
    col.flags = 0u;
    return col;
}

// A: store the row loaded one iteration ago and start loading the next, so that its latency
// hides behind this iteration's phases.
fn phase_a(col: ptr<function, Column>, r: i32, y_end: i32) {
    let slot = at(ring(r), (*col).lanes.here);
    s_level[slot] = vec2<i32>(bitcast<i32>((*col).next.bed), (*col).next.depth);
    set_flows(slot, (*col).next.flow);
    if r < y_end + 2 {
        (*col).next = load(vec2<i32>((*col).x, r + 1));
    }
}

// B, needed from row y0 - 3.
fn phase_b(col: ptr<function, Column>, r: i32, y0: i32) {
    (*col).b = here_at(vec2<i32>((*col).x, r - 1), (*col).columns, (*col).lanes);
    (*col).carried_next = vec4<f32>(0.0);
    if r >= y0 - 2 {
        (*col).carried_next = carried_depths((*col).b, (*col).lanes);
        set_old_fluxes(at(pair(r - 1), (*col).lanes.here), old_fluxes((*col).b, (*col).carried_next));
    }
}

// C, needed from row y0 - 2.
fn phase_c(col: ptr<function, Column>, r: i32, y0: i32) {
    if r >= y0 - 1 {
        s_discharge[at(pair(r - 1), (*col).lanes.here)] = centre_discharge((*col).b, (*col).lanes);
    }
}

// D, needed from row y0 - 2: returns what the cell of row r - 2 keeps before the limit.
fn phase_d(col: ptr<function, Column>, r: i32, y0: i32) -> vec4<f32> {
    if r < y0 {
        return vec4<f32>(0.0);
    }
    let lanes = (*col).lanes;
    let h = here_at(vec2<i32>((*col).x, r - 2), (*col).columns, lanes);
    var pipes: AcceleratedPipes;
    // Most cells lie two or more cells from every edge of the grid, where every neighbour the
    // step reads is on the grid and every pipe has its inner width: the same code with the
    // window known to be full compiles without any of the edge tests.
    if h.window == WINDOW_INSIDE {
        var inner = h;
        inner.window = WINDOW_INSIDE;
        pipes = accelerate_pipes(inner, lanes, (*col).carried);
    } else {
        pipes = accelerate_pipes(h, lanes, (*col).carried);
    }
    set_fluxes(at(flux_ring(r - 2), lanes.here), pipes.flux);
    return pipes.stored;
}

// E, needed from row y0 - 1.
fn phase_e(col: ptr<function, Column>, r: i32, y0: i32) {
    if r >= y0 + 1 {
        s_limits[at(flux_ring(r - 2), (*col).lanes.here)] = limits_of(vec2<i32>((*col).x, r - 2), (*col).lanes);
    }
}

// F: the band's own rows; then the pipes of row r - 2 wait for next iteration's transfer.
fn phase_f(col: ptr<function, Column>, r: i32, y0: i32, stored_next: vec4<f32>) {
    if r >= y0 + 3 && (*col).writes {
        (*col).flags |= transfer(vec2<i32>((*col).x, r - 3), (*col).lanes, (*col).stored);
    }
    (*col).stored = stored_next;
    if advects(c) {
        (*col).carried = (*col).carried_next;
    }
}

@compute @workgroup_size(INVOCATIONS)
fn step_columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    // The tile: the strip and band the awake list names for this workgroup (every tile, in
    // order, with sleeping off). Bands share the grid's rows out evenly (step_kernel.rs).
    let tile = awake_list[AWAKE_LIST_HEADER + wid.x];
    let strip = tile % tiles.tiles.x;
    let band = tile / tiles.tiles.x;
    let y0 = i32(band * tiles.size.y);
    let y_end = min(y0 + i32(tiles.size.y), i32(c.height));
    // With two columns per invocation, invocation t walks columns 2t and 2t + 1.
    let pairs = PER_INVOCATION == 2u;
    // The padding columns hold a dry cell at rest (limit factors of 1): the halo columns beside
    // them read them, for results nobody uses.
    if t == 0u || t == INVOCATIONS - 1u {
        let pad = select(ROW - 1u, 0u, t == 0u);
        for (var slot = 0u; slot < 4u; slot++) {
            let i = at(slot, pad);
            s_level[i] = vec2<i32>(0);
            set_flows(i, vec4<f32>(0.0));
        }
        for (var slot = 0u; slot < FLUX_ROWS; slot++) {
            let i = at(slot, pad);
            set_fluxes(i, vec4<f32>(0.0));
            s_limits[i] = vec2<f32>(1.0);
        }
        for (var slot = 0u; slot < OLD_ROWS; slot++) {
            let i = at(slot, pad);
            set_old_fluxes(i, vec4<f32>(0.0));
            s_discharge[i] = vec2<f32>(0.0);
        }
    }
    var one = column_at(strip, t * PER_INVOCATION, y0);
    var two: Column;
    if pairs {
        two = column_at(strip, t * PER_INVOCATION + 1u, y0);
    }
    for (var r = y0 - 3; r <= y_end + 2; r++) {
        phase_a(&one, r, y_end);
        if pairs {
            phase_a(&two, r, y_end);
        }
        workgroupBarrier();
        if advects(c) {
            phase_b(&one, r, y0);
            if pairs {
                phase_b(&two, r, y0);
            }
            workgroupBarrier();
            phase_c(&one, r, y0);
            if pairs {
                phase_c(&two, r, y0);
            }
            workgroupBarrier();
        }
        let stored_one = phase_d(&one, r, y0);
        var stored_two = vec4<f32>(0.0);
        if pairs {
            stored_two = phase_d(&two, r, y0);
        }
        workgroupBarrier();
        phase_e(&one, r, y0);
        if pairs {
            phase_e(&two, r, y0);
        }
        workgroupBarrier();
        phase_f(&one, r, y0, stored_one);
        if pairs {
            phase_f(&two, r, y0, stored_two);
        }
    }
    // The tile's flags: one atomic per invocation that saw something, once per band. Gathering
    // them in workgroup memory first (a workgroup atomic each, a barrier, one store) made the
    // step 8 % slower on an H100 at 4096², with the same registers; the workgroup word alone
    // costs 0.5 %, so it is the gathering (docs/BENCHMARKS.md).
    var flags = one.flags;
    if pairs {
        flags |= two.flags;
    }
    if flags != 0u {
        atomicOr(&tile_flags[tile], flags);
    }
}
