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
// A phase reads what its neighbouring columns computed in the phase before from workgroup
// memory, after a barrier. What an invocation needs of its own column, and what it needs of its
// neighbours' on a later row, it keeps in registers (Column): so most rings of workgroup memory
// are one row deep, hold only the pipes a neighbour reads, and rings that live in different
// phases share memory. Workgroup memory bounds how many workgroups a multiprocessor runs
// (NVIDIA's Vulkan driver gives this kernel 48 KiB of it, docs/BENCHMARKS.md), so it trades for
// registers: 92 bytes a column with advection, 36 without (240 and 168 when each phase kept its
// rows in rings), and eight workgroups of 64 columns fit an H100 multiprocessor with advection.
//
// The pipes a cell owns point right, down, down-right and down-left, so the step at row y needs
// rows y-3 ..= y+3 and columns x-4 ..= x+4: a band is loaded with three rows above and below it,
// and the HALO columns on each side of a strip compute values only their neighbours use. A cell's
// fields cross DRAM once per step: terrain, depth and pipes in, depth and pipes out (44 bytes;
// halo columns and rows come again from the caches), as in a fused tile kernel, with less of the
// step recomputed for halos (with 64 columns and 64 rows, 1.20 cells computed per cell stepped,
// against 1.69 for a 32 × 8 tile with a two-cell halo).
//
// Neighbouring strips and bands compute the shared halo pipes and limit factors from the same
// inputs with the same code, so both ends of every pipe apply the same integer and mass stays
// exact. Depth and pipes ping-pong between two buffers: neighbouring workgroups read the old
// values while this one writes the new. Modes the pipeline fixes (common.wgsl overrides) compile
// only their own code; without advection phases B and C, their barriers and their rings do not
// exist.

@group(0) @binding(0) var<uniform> c: StepConstants;
// The bed the step sees: the terrain plus the displacement of bodies (bodies.wgsl).
@group(0) @binding(1) var<storage, read> step_terrain: array<f32>;
@group(0) @binding(2) var<storage, read> depth_in: array<i32>;
@group(0) @binding(3) var<storage, read> flux_in: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> depth_out: array<i32>;
@group(0) @binding(5) var<storage, read_write> flux_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>, COUNTER_WORDS>;
// Sleeping tiles (tiles.wgsl): each workgroup steps the tile the awake list names at its index,
// and adds what it saw to that tile's flags for the next step's plan (which marked the tile
// TILE_AWAKE and nothing else).
@group(0) @binding(7) var<uniform> tiles: TileParams;
@group(0) @binding(8) var<storage, read> awake_list: array<u32>;
@group(0) @binding(9) var<storage, read_write> tile_flags: array<atomic<u32>>;

// Invocations per workgroup, one per column; the host chooses it from the device's workgroup
// memory (backend/step_kernel.rs COLUMN_CHOICES): 92 bytes per column of ROW.
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
// Rows of the ring of stored pipes, which only advection reads: phase D reads their velocities
// in the eight cells around its own, rows r-3 ..= r-1, while phase A writes row r.
override FLOW_ROWS: u32 = select(4u, 0u, ADVECTION == 0);
// Rows of the level ring: with advection phase B reads row r, and keeps what phase D will need;
// without, phase D reads row r - 1 while phase A writes row r.
override LEVEL_ROWS: u32 = select(2u, 1u, ADVECTION == 1);

// Columns on each side of a strip whose results only their neighbours use. The transfer of
// column x reads the limit factors of x ± 1, which read the fluxes of x ± 2, which read the
// discharges of x ± 3 (a pipe's source is its owner or its far end), which read the old fluxes
// of the pipes that touch x ± 3: owned by x ± 4, and of those only the ones whose far end lies
// within x ± 3. So the outermost column's pipes that reach beyond it (into the padding) are
// computed from nonsense that nothing reads.
const HALO: u32 = 4u;

// Rings of rows in workgroup memory, indexed [slot * ROW + column]. A one-row ring holds the
// row its phase just computed, for the neighbours' next phase; a phase reads the row above it
// from the registers it kept one iteration ago.
// (bed m as i32 bits, depth quanta) of row r, and without advection of row r - 1: the two are
// always read together, one load instead of two (1.5 % faster with advection on an H100).
var<workgroup> s_level: array<vec2<i32>, ROW * LEVEL_ROWS>;
// The four pipes of a cell (stored flows) lie in four planes, one a pipe, each a ring indexed as
// above: [p * ROW * 4 + slot * ROW + column]. A phase reads single pipes of neighbouring
// cells, and a warp's read of one lane of a `vec4` array strides 16 bytes, which the banks serve
// in four passes; from a plane it is one.
var<workgroup> s_flow: array<f32, max(ROW * 4u * FLOW_ROWS, 1u)>;
// Of the old fluxes (phases B to C) and then the accelerated ones (D to E), only the pipes a
// neighbour reads: east, south-east and south-west, planes 0, 1, 2 of one row ([plane * ROW +
// column]). A cell reads the east pipe of its left neighbour on its own row, and the south,
// south-east and south-west pipes of the row above, which it kept in registers (the south one
// is its own). The two never live at once (a barrier lies between C's reads and D's writes, and
// between E's and the next B's), so they share the ring.
var<workgroup> s_pipes: array<f32, ROW * 3u>;
// The discharges at the cells' centres (phases C to D), then their (outflow, room) limit factors
// (E to F), sharing one ring as the fluxes do.
var<workgroup> s_centre: array<vec2<f32>, ROW>;

// Plane of owned pipe p (east, south-east, south-west) in the one-row rings of fluxes.
const PLANE_E: u32 = 0u;
const PLANE_SE: u32 = 1u;
const PLANE_SW: u32 = 2u;

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

// Of a cell's four pipes, those its neighbours read, into the one-row ring of fluxes.
fn share_pipes(column: u32, v: vec4<f32>) {
    s_pipes[PLANE_E * ROW + column] = v.x;
    s_pipes[PLANE_SE * ROW + column] = v.z;
    s_pipes[PLANE_SW * ROW + column] = v.w;
}

fn shared_pipe(plane: u32, column: u32) -> f32 {
    return s_pipes[plane * ROW + column];
}

// The pipes (old in phase C, accelerated in E) that enter a cell: the east pipe of the cell to
// its left, from the ring, then `from_above` (what passes_below kept one row earlier).
fn incoming_pipes(lanes: Lanes, from_above: vec3<f32>) -> vec4<f32> {
    return vec4<f32>(shared_pipe(PLANE_E, lanes.left), from_above);
}

// What of this row's pipes enters the cell below, kept for the next row: the south pipe of the
// column's own cell (of `own`), the south-east one of the cell to the left and the south-west
// one of the cell to the right.
fn passes_below(lanes: Lanes, own: vec4<f32>) -> vec3<f32> {
    return vec3<f32>(own.y, shared_pipe(PLANE_SE, lanes.left), shared_pipe(PLANE_SW, lanes.right));
}

// A cell's eight pipes as flows leaving it towards pipes.rs NEIGHBOUR_OFFSETS (E, S, SE, SW, W,
// N, NW, NE): its own four, then the four entering it (incoming_pipes), reversed.
fn eight_pipes(own: vec4<f32>, incoming: vec4<f32>) -> array<f32, 8> {
    return array<f32, 8>(own.x, own.y, own.z, own.w, -incoming.x, -incoming.y, -incoming.z, -incoming.w);
}

// Slot of row `y` (>= -8) in a ring of four rows, and in a ring of two.
fn ring(y: i32) -> u32 {
    return u32(y + 8) & 3u;
}

fn pair(y: i32) -> u32 {
    return u32(y + 8) & 1u;
}

// Slot of row `y` in the level ring.
fn level_slot(y: i32) -> u32 {
    if LEVEL_ROWS == 1u {
        return 0u;
    }
    return pair(y);
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

fn load(cell: vec2<i32>, pages_column: u32) -> Loaded {
    var l: Loaded;
    l.bed = 0.0;
    l.depth = 0;
    l.flow = vec4<f32>(0.0);
    if cell_in_grid(c, cell) {
        let i = cell_slots(cell, pages_column);
        l.bed = step_terrain[i.x];
        l.depth = with_inflow(c, cell, depth_in[i.y]);
        l.flow = flux_in[i.y];
    }
    return l;
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
// by one multiplication, and those of the rows above and below the grid are dropped. A row is the
// same for the whole workgroup, so the rows that need no dropping (all but two at each end of
// the grid) take a branch no lane leaves and skip the shifts.
fn window(columns: u32, y: i32) -> u32 {
    if y >= 2 && y + 3 <= i32(c.height) {
        return columns * 0x108421u;
    }
    let above = 5u * u32(clamp(2 - y, 0, 5));
    let below = 5u * u32(clamp(y + 3 - i32(c.height), 0, 5));
    let rows = ((WINDOW_INSIDE >> above) << above) & (WINDOW_INSIDE >> below);
    return (columns * 0x108421u) & rows;
}

// The window of the cell in column x, row y: with a world's focus policy, less the cells of
// pages held back this frame (cells_paged.wgsl held_window), so that the pipes into them are
// closed as at the grid's edge. A dense grid holds nothing back and compiles none of it.
fn window_of(x: i32, columns: u32, y: i32) -> u32 {
    if FOCUS_HOLDS {
        return window(columns, y) & ~held_window(x, y);
    }
    return window(columns, y);
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

// A full window answers before the shift: the interior paths of phases B and D pass
// WINDOW_INSIDE as a constant, and only then does the driver's compiler drop every edge test (in
// D those of the upstream reads, whose offsets it cannot bound: 15 % faster with advection on an
// H100, docs/BENCHMARKS.md).
fn in_window(window: u32, d: vec2<i32>) -> bool {
    if window == WINDOW_INSIDE {
        return true;
    }
    return ((window >> u32((d.y + 2) * 5 + d.x + 2)) & 1u) != 0u;
}

// Whether owned pipe p of the cell `d` away from the window's centre, in row `row`, exists: that
// cell and the pipe's far end on the grid (diagonals only with eight neighbours, and on the
// triangular lattice by the row's parity).
fn pipe_exists_at(window: u32, d: vec2<i32>, row: i32, p: u32) -> bool {
    return pipe_active(c, p, row) && in_window(window, d) && in_window(window, d + pipe_offset(p));
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
    return u32(!in_window(window, d - across)) + u32(!in_window(window, d + across));
}

// The cell an invocation works on in a phase, its own fields there and its window.
struct Here {
    cell: vec2<i32>,
    window: u32,
    bed: f32,
    depth: i32,
    flow: vec4<f32>,
}

fn here_at(cell: vec2<i32>, cell_window: u32, own: Loaded, lanes: Lanes) -> Here {
    var h: Here;
    h.cell = cell;
    h.window = cell_window;
    h.bed = own.bed;
    h.depth = own.depth;
    h.flow = own_flows(cell.y, own, lanes);
    return h;
}

// The stored pipes of the column's cell on row `y`, whose fields are `own`: with advection from
// the ring of stored pipes (r - 3 ..= r), so that they take no registers.
fn own_flows(y: i32, own: Loaded, lanes: Lanes) -> vec4<f32> {
    if advects(c) {
        return flows(at(ring(y), lanes.here));
    }
    return own.flow;
}

// The bed and depth at the far ends of a cell's four owned pipes: the east one on the cell's
// row, the others on the row below.
struct FarEnds {
    bed: vec4<f32>,
    depth: vec4<i32>,
}

// The far ends of the pipes of a cell on row `y`, whose row y + 1 the level ring holds; `east`
// is the (bed, depth) of the cell to its right.
fn far_ends(y: i32, lanes: Lanes, east: vec2<i32>) -> FarEnds {
    let below = level_slot(y + 1);
    let s = s_level[at(below, lanes.here)];
    let se = s_level[at(below, lanes.right)];
    let sw = s_level[at(below, lanes.left)];
    var ends: FarEnds;
    ends.bed = bitcast<vec4<f32>>(vec4<i32>(east.x, s.x, se.x, sw.x));
    ends.depth = vec4<i32>(east.y, s.y, se.y, sw.y);
    return ends;
}

// Each phase handles a cell's pipes one call per pipe, with `p` a constant at the call, so that
// the driver's compiler sees every vector component and workgroup slot it indexes by `p` as a
// constant (a component chosen at run time can push a vector out of registers).

// The depth carrying owned pipe p of `h` (pipes.rs carried_depth), 0 where it does not exist.
fn carried_of(h: Here, ends: FarEnds, p: u32) -> f32 {
    return select(0.0, carried_depth(c, h.bed, h.depth, ends.bed[p], ends.depth[p]), pipe_exists_at(h.window, vec2<i32>(0), h.cell.y, p));
}

fn carried_depths(h: Here, ends: FarEnds) -> vec4<f32> {
    return vec4<f32>(carried_of(h, ends, 0u), carried_of(h, ends, 1u), carried_of(h, ends, 2u), carried_of(h, ends, 3u));
}

// Phase B: the flux before the step of owned pipe p of `h`, which carries over `carried`
// (backend/cpu.rs phase 0; 0 where the pipe does not exist).
fn old_flux(h: Here, carried: f32, p: u32) -> f32 {
    return select(0.0, h.flow[p] * flux_per_stored(c, carried), pipe_exists_at(h.window, vec2<i32>(0), h.cell.y, p));
}

fn old_fluxes(h: Here, carried: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(old_flux(h, carried.x, 0u), old_flux(h, carried.y, 1u), old_flux(h, carried.z, 2u), old_flux(h, carried.w, 3u));
}

// Phase C: the discharge at the centre of `h`'s cell from the old fluxes of its own four pipes
// and of the four that enter it (incoming_pipes).
fn centre_discharge(h: Here, own: vec4<f32>, incoming: vec4<f32>) -> vec2<f32> {
    return select(vec2<f32>(0.0), discharge(c.cell_size, eight_pipes(own, incoming)), in_window(h.window, vec2<i32>(0)));
}

// backend/cpu.rs displaced_velocity: velocity (m/s) along pipe p of the pipe of the same
// direction owned by the cell `offset` behind `h`'s, or `own` where that pipe would reach beyond
// the grid.
fn displaced_velocity(h: Here, p: u32, offset: vec2<i32>, lanes: Lanes, own: f32) -> f32 {
    let d = -offset;
    // The read is of a slot of the ring whatever `d`; off the grid its value is not used.
    let there = flow_of(at(ring(h.cell.y + d.y), lane(lanes, d.x)), p) * c.inverse_widths[pipe_class_at(h.window, d, p)];
    return select(own, there, in_window(h.window, d) && in_window(h.window, d + pipe_offset(p)));
}

// The discharges at the centres of the cells a cell's pipes may draw from (phase C): its own and
// those at the far ends of its east, south, south-east and south-west pipes.
struct Sources {
    own: vec2<f32>,
    e: vec2<f32>,
    s: vec2<f32>,
    se: vec2<f32>,
    sw: vec2<f32>,
}

// What advection needs upstream of owned pipe p of `h`, which kept `kept` (backend/cpu.rs
// OldFields::upstream) and draws from the cell with discharge `far` when it flows backwards:
// (the discharge's part along the first offset, along the second, the velocity displaced by the
// first offset, by the second); none for a pipe at rest, which advection leaves as it is.
fn upstream_of(h: Here, lanes: Lanes, kept: f32, kind: u32, own_q: vec2<f32>, far_q: vec2<f32>, p: u32) -> vec4<f32> {
    let q = select(select(own_q, far_q, kept < 0.0), vec2<f32>(0.0), kept == 0.0);
    let split = upstream_split(c, q);
    let own = kept * c.inverse_widths[kind];
    return vec4<f32>(split.parts, displaced_velocity(h, p, split.first, lanes, own), displaced_velocity(h, p, split.second, lanes, own));
}

// Phase D: accelerate the four pipes of `h`, whose far ends are `ends` and which carry over
// `carried_b` (backend/cpu.rs phase 1): their fluxes (for the neighbours) and what they keep
// before the limit (for the cell's own transfer). A pipe that does not exist has carried depth 0
// (carried_of), so its lane is zero.
fn accelerate_pipes(h: Here, lanes: Lanes, ends: FarEnds, carried_b: vec4<f32>, sources: Sources) -> AcceleratedPipes {
    var carried = carried_b;
    if !advects(c) {
        carried = carried_depths(h, ends);
    }
    let centre = vec2<i32>(0);
    let kind = vec4<u32>(pipe_class_at(h.window, centre, 0u), pipe_class_at(h.window, centre, 1u), CLASS_DIAGONAL, CLASS_DIAGONAL);
    var up: Upstream;
    up.parts_first = vec4<f32>(0.0);
    up.parts_second = vec4<f32>(0.0);
    up.velocity_first = vec4<f32>(0.0);
    up.velocity_second = vec4<f32>(0.0);
    if advects(c) {
        let e = upstream_of(h, lanes, h.flow.x, kind.x, sources.own, sources.e, 0u);
        let s = upstream_of(h, lanes, h.flow.y, kind.y, sources.own, sources.s, 1u);
        let se = upstream_of(h, lanes, h.flow.z, kind.z, sources.own, sources.se, 2u);
        let sw = upstream_of(h, lanes, h.flow.w, kind.w, sources.own, sources.sw, 3u);
        up.parts_first = vec4<f32>(e.x, s.x, se.x, sw.x);
        up.parts_second = vec4<f32>(e.y, s.y, se.y, sw.y);
        up.velocity_first = vec4<f32>(e.z, s.z, se.z, sw.z);
        up.velocity_second = vec4<f32>(e.w, s.w, se.w, sw.w);
    }
    let a = accelerate(c, kind, h.flow, h.bed, h.depth, ends.bed, ends.depth, carried, up);
    var pipes: AcceleratedPipes;
    pipes.flux = a.flux;
    pipes.stored = a.stored;
    return pipes;
}

// Phase E: the limit factors of `cell` (backend/cpu.rs phase 2), whose own pipes carry `own`
// and whose four incoming pipes carry `incoming` (incoming_pipes); (1, 1) off the grid.
fn limits_of(cell: vec2<i32>, level: Loaded, own: vec4<f32>, incoming: vec4<f32>) -> vec2<f32> {
    if !cell_in_grid(c, cell) {
        return vec2<f32>(1.0);
    }
    return cell_limits(c, cell, level.bed, level.depth, eight_pipes(own, incoming));
}

// What phase D leaves of a cell's pipes: their fluxes (for the neighbours) and what each will keep
// before the limit (for the cell's own transfer, one iteration later).
struct AcceleratedPipes {
    flux: vec4<f32>,
    stored: vec4<f32>,
}

// The limit factors of a cell and of its neighbours to the left and right.
struct LimitsRow {
    left: vec2<f32>,
    here: vec2<f32>,
    right: vec2<f32>,
}

// What phase F does with one pipe of a cell: the quanta it brings in (negative: takes out), and
// what the cell keeps of it when the cell owns it.
struct Moved {
    quanta: i32,
    kept: f32,
}

// Phase F for pipe p of a cell with limit factors `limits`: the owned pipe p, whose flux is `f`,
// which keeps `stored` before the limit and ends at a cell with limit factors `far`, and the same
// pipe owned by the cell behind it (limit factors `owner`), whose flux is `g`.
fn move_pipe(limits: vec2<f32>, f: f32, stored: f32, far: vec2<f32>, g: f32, owner: vec2<f32>) -> Moved {
    var moved: Moved;
    // A pipe with no flux moves no quanta (pipe_quanta of 0 is 0) and keeps nothing.
    let k = transfer_limit(f, limits, far);
    let k_in = transfer_limit(g, owner, limits);
    moved.quanta = pipe_quanta(c.flux_to_quanta, g, k_in) - pipe_quanta(c.flux_to_quanta, f, k);
    moved.kept = select(0.0, stored * k, f != 0.0);
    return moved;
}

// Phase F: the transfer of `cell` (backend/cpu.rs phase 3), whose own fields are `own`, whose
// pipes carry `fluxes` and keep `stored` before the limit, and whose incoming pipes carry
// `incoming`; the limit factors of its row and of the rows above and below. Returns the cell's
// TILE_CHANGED and TILE_MOVING bits: whether a bit of its depth or pipes changed or it moved a
// ledger counter, and whether a pipe it keeps carries flow.
fn transfer(cell: vec2<i32>, lanes: Lanes, own: Loaded, fluxes: vec4<f32>, stored: vec4<f32>, incoming: vec4<f32>, above: LimitsRow, row: LimitsRow, below: LimitsRow) -> u32 {
    let i = own_water_slot(cell);
    let d = own.depth;
    let limits = row.here;
    let e = move_pipe(limits, fluxes.x, stored.x, row.right, incoming.x, row.left);
    let s = move_pipe(limits, fluxes.y, stored.y, below.here, incoming.y, above.here);
    let se = move_pipe(limits, fluxes.z, stored.z, below.right, incoming.z, above.left);
    let sw = move_pipe(limits, fluxes.w, stored.w, below.left, incoming.w, above.right);
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
        let edge_flux = edge_outflow(c, cell, own.bed, d);
        if edge_flux > 0.0 {
            let gone = pipe_quanta(c.flux_to_quanta, edge_flux, limits.x);
            new_depth -= gone;
            count(COUNTER_BOUNDARY_OUT, u32(gone));
            exchanged = exchanged || gone != 0;
        }
        if has_level_edge(c) {
            // Water from a fixed level beyond the edge, up to the deepest a cell holds.
            let came = add_depth_clamped(new_depth, level_edge_inflow_quanta(c, cell, own.bed, d));
            count(COUNTER_BOUNDARY_IN, u32(came - new_depth));
            exchanged = exchanged || came != new_depth;
            new_depth = came;
        }
    }
    let kept = vec4<f32>(e.kept, s.kept, se.kept, sw.kept);
    depth_out[i] = new_depth;
    flux_out[i] = kept;
    // Bits, not values: -0.0 and 0.0 differ, as they do for the CPU backend's comparison.
    let changed = exchanged || new_depth != d || any(bitcast<vec4<u32>>(kept) != bitcast<vec4<u32>>(own_flows(cell.y, own, lanes)));
    let flags = select(0u, TILE_CHANGED, changed) | select(0u, TILE_MOVING, any(kept != vec4<f32>(0.0)));
    // A world in pages learns from these which pages hold water, and where (cells_paged.wgsl).
    return flags | wet_mark(cell.y, new_depth);
}

// One column's state as its invocation walks down the band: its own cells, and what it read of
// its neighbours' on a row that a later phase needs when that row has left the rings. "Row r" is
// the row phase A loads in the current iteration.
struct Column {
    // Grid column, and the workgroup-memory columns of it and its neighbours.
    x: i32,
    lanes: Lanes,
    // columns_on_grid(x).
    columns: u32,
    // The column of pages x lies in, in a world's (cells_paged.wgsl page_column).
    page_column: u32,
    // Whether this column is the strip's own (not halo) and on the grid.
    writes: bool,
    // The row loaded one iteration ago, for phase A to store.
    next: Loaded,
    // The column's cells of rows r, r - 1 (phases B, C), r - 2 (D, E) and r - 3 (F). With
    // advection their stored pipes are read from the ring instead (own_flows).
    own0: Loaded,
    own1: Loaded,
    own2: Loaded,
    own3: Loaded,
    // The far ends of the pipes of row r - 2 for phase D: with advection from phase B one
    // iteration ago, and `ends_next` from phase B of this iteration for row r - 1.
    ends: FarEnds,
    ends_next: FarEnds,
    // The (bed, depth) of the cell right of the column's, read from the level ring one iteration
    // ago: with advection by phase B, of row r - 1; without, by phase D, of row r - 2.
    east: vec2<i32>,
    // With advection, the carried depths of row r - 2 (from phase B one iteration ago) and of
    // row r - 1 (from phase B of this iteration).
    carried: vec4<f32>,
    carried_next: vec4<f32>,
    // Phase B's cell and its old fluxes, for phase C.
    b: Here,
    // With advection, the window of row r - 2's cell, which phase B built one iteration ago, for
    // phase D.
    window2: u32,
    old: vec4<f32>,
    // The old fluxes of the pipes that enter row r - 1's cell from above (centre_discharge).
    old_from_above: vec3<f32>,
    // The discharge at the centre of row r - 2's cell and of row r - 1's (phase C one iteration
    // ago and now), and of the cell right of row r - 2's (phase D read it one iteration ago).
    q: vec2<f32>,
    q_next: vec2<f32>,
    q_east: vec2<f32>,
    // The accelerated fluxes of the cells of rows r - 2 (phase D now) and r - 3.
    flux2: vec4<f32>,
    flux3: vec4<f32>,
    // The accelerated fluxes of the pipes that enter row r - 2's cell from above, as for
    // old_from_above.
    flux_from_above: vec3<f32>,
    // The accelerated fluxes of the four pipes that enter the cells of rows r - 2 (phase E now)
    // and r - 3: the east pipe of the cell to the left, the south one of the cell above, the
    // south-east one above-left, the south-west one above-right.
    incoming2: vec4<f32>,
    incoming3: vec4<f32>,
    // The limit factors of row r - 2's cell (phase E now), and those of rows r - 3 and r - 4 with
    // their left and right neighbours'.
    limits2: vec2<f32>,
    limits3: LimitsRow,
    limits4: LimitsRow,
    // What the cell of row r - 3 keeps before the limit, from phase D one iteration ago.
    stored: vec4<f32>,
    // TILE_CHANGED and TILE_MOVING of the cells this column wrote.
    flags: u32,
}

fn column_at(strip: u32, lane_index: u32, y0: i32) -> Column {
    // Zero everything, then set what is not zero.
    var col: Column;
    col.x = i32(strip * (COLUMNS - 2u * HALO) + lane_index) - i32(HALO);
    col.lanes.here = lane_index + 1u;
    col.lanes.left = lane_index;
    col.lanes.right = lane_index + 2u;
    col.columns = columns_on_grid(col.x);
    col.writes = lane_index >= HALO && lane_index < COLUMNS - HALO && col.x < i32(c.width);
    col.page_column = page_column(col.x);
    col.next = load(vec2<i32>(col.x, y0 - 3), col.page_column);
    return col;
}

// A: store the row loaded one iteration ago and start loading the next, so that its latency
// hides behind this iteration's phases.
fn phase_a(col: ptr<function, Column>, r: i32, y_end: i32) {
    (*col).own3 = (*col).own2;
    (*col).own2 = (*col).own1;
    (*col).own1 = (*col).own0;
    (*col).own0 = (*col).next;
    let here = (*col).lanes.here;
    s_level[at(level_slot(r), here)] = vec2<i32>(bitcast<i32>((*col).own0.bed), (*col).own0.depth);
    if advects(c) {
        set_flows(at(ring(r), here), (*col).own0.flow);
    }
    if r < y_end + 2 {
        (*col).next = load(vec2<i32>((*col).x, r + 1), (*col).page_column);
    }
}

// B, needed from row y0 - 3.
fn phase_b(col: ptr<function, Column>, r: i32, y0: i32) {
    let lanes = (*col).lanes;
    (*col).window2 = (*col).b.window;
    (*col).b = here_at(vec2<i32>((*col).x, r - 1), window_of((*col).x, (*col).columns, r - 1), (*col).own1, lanes);
    (*col).ends_next = far_ends(r - 1, lanes, (*col).east);
    (*col).east = s_level[at(level_slot(r), lanes.right)];
    (*col).carried_next = vec4<f32>(0.0);
    (*col).old = vec4<f32>(0.0);
    if r >= y0 - 2 {
        // As in phase D: with the window known to be full, every pipe exists and the tests
        // compile away.
        if (*col).b.window == WINDOW_INSIDE {
            var inner = (*col).b;
            inner.window = WINDOW_INSIDE;
            (*col).carried_next = carried_depths(inner, (*col).ends_next);
            (*col).old = old_fluxes(inner, (*col).carried_next);
        } else {
            (*col).carried_next = carried_depths((*col).b, (*col).ends_next);
            (*col).old = old_fluxes((*col).b, (*col).carried_next);
        }
        share_pipes(lanes.here, (*col).old);
    }
}

// C, needed from row y0 - 2; keeps what enters the row below from this one.
fn phase_c(col: ptr<function, Column>, r: i32, y0: i32) {
    let lanes = (*col).lanes;
    if r >= y0 - 1 {
        (*col).q_next = centre_discharge((*col).b, (*col).old, incoming_pipes(lanes, (*col).old_from_above));
        s_centre[lanes.here] = (*col).q_next;
    }
    (*col).old_from_above = passes_below(lanes, (*col).old);
}

// D, needed from row y0 - 2: returns what the cell of row r - 2 keeps before the limit. From
// row y0 - 3 it keeps what the next row needs of this one's neighbours.
fn phase_d(col: ptr<function, Column>, r: i32, y0: i32) -> vec4<f32> {
    let lanes = (*col).lanes;
    var ends = (*col).ends;
    var sources: Sources;
    if advects(c) {
        sources.own = (*col).q;
        sources.e = (*col).q_east;
        sources.s = s_centre[lanes.here];
        sources.se = s_centre[lanes.right];
        sources.sw = s_centre[lanes.left];
        (*col).q_east = sources.se;
    } else {
        ends = far_ends(r - 2, lanes, (*col).east);
        (*col).east = s_level[at(level_slot(r - 1), lanes.right)];
    }
    if r < y0 {
        return vec4<f32>(0.0);
    }
    // With advection phase B built this cell's window one iteration ago: keeping it costs a
    // register and saves building it again (2 % faster on an H100, docs/BENCHMARKS.md).
    var cell_window = (*col).window2;
    if !advects(c) {
        cell_window = window_of((*col).x, (*col).columns, r - 2);
    }
    let h = here_at(vec2<i32>((*col).x, r - 2), cell_window, (*col).own2, lanes);
    var pipes: AcceleratedPipes;
    // Most cells lie two or more cells from every edge of the grid, where every neighbour the
    // step reads is on the grid and every pipe has its inner width: the same code with the
    // window known to be full compiles without any of the edge tests.
    if h.window == WINDOW_INSIDE {
        var inner = h;
        inner.window = WINDOW_INSIDE;
        pipes = accelerate_pipes(inner, lanes, ends, (*col).carried, sources);
    } else {
        pipes = accelerate_pipes(h, lanes, ends, (*col).carried, sources);
    }
    share_pipes(lanes.here, pipes.flux);
    (*col).flux2 = pipes.flux;
    return pipes.stored;
}

// E, needed from row y0 - 1; from row y0 - 2 it keeps what enters the row below from this one.
fn phase_e(col: ptr<function, Column>, r: i32, y0: i32) {
    if r < y0 {
        return;
    }
    let lanes = (*col).lanes;
    (*col).incoming2 = incoming_pipes(lanes, (*col).flux_from_above);
    if r >= y0 + 1 {
        (*col).limits2 = limits_of(vec2<i32>((*col).x, r - 2), (*col).own2, (*col).flux2, (*col).incoming2);
        s_centre[lanes.here] = (*col).limits2;
    }
    (*col).flux_from_above = passes_below(lanes, (*col).flux2);
}

// F: the band's own rows; then every row's values move one row up.
fn phase_f(col: ptr<function, Column>, r: i32, y0: i32, stored_next: vec4<f32>) {
    let lanes = (*col).lanes;
    var below: LimitsRow;
    below.left = s_centre[lanes.left];
    below.here = (*col).limits2;
    below.right = s_centre[lanes.right];
    if r >= y0 + 3 && (*col).writes {
        (*col).flags |= transfer(vec2<i32>((*col).x, r - 3), lanes, (*col).own3, (*col).flux3, (*col).stored, (*col).incoming3, (*col).limits4, (*col).limits3, below);
    }
    (*col).limits4 = (*col).limits3;
    (*col).limits3 = below;
    (*col).stored = stored_next;
    (*col).flux3 = (*col).flux2;
    (*col).incoming3 = (*col).incoming2;
    if advects(c) {
        (*col).carried = (*col).carried_next;
        (*col).ends = (*col).ends_next;
        (*col).q = (*col).q_next;
    }
}

// The flags the workgroup's columns saw, into tile `tile`'s: one atomic per invocation that saw
// something. Gathering them in workgroup memory first (a workgroup atomic each, a barrier, one
// store) made the step 8 % slower on an H100 at 4096², with the same registers; the workgroup
// word alone costs 0.5 %, so it is the gathering (docs/BENCHMARKS.md).
fn add_tile_flags(tile: u32, one: ptr<function, Column>, two: ptr<function, Column>) {
    var flags = tile_flags_seen((*one).flags, (*one).x, tile);
    (*one).flags = 0u;
    if PER_INVOCATION == 2u {
        flags |= tile_flags_seen((*two).flags, (*two).x, tile);
        (*two).flags = 0u;
    }
    if flags != 0u {
        atomicOr(&tile_flags[tile], flags);
    }
}

@compute @workgroup_size(INVOCATIONS)
fn step_columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    // The tile: the strip and band the awake list names for this workgroup (every tile, in
    // order, with sleeping off), and in a world of pages the tiles below it in its page that the
    // workgroup runs too. Bands share the grid's rows out evenly (step_kernel.rs).
    let entry = awake_list[AWAKE_LIST_HEADER + wid.x];
    let tile = listed_tile(entry);
    let tiles_run = listed_tiles(entry);
    let strip = tile % tiles.tiles.x;
    let band = tile / tiles.tiles.x;
    let y0 = i32(band * tiles.size.y);
    let y_end = min(y0 + i32(tiles_run * tiles.size.y), i32(c.height));
    begin_tile(t, strip, band);
    if FOCUS_HOLDS {
        hold_tile(strip, band);
    }
    // With two columns per invocation, invocation t walks columns 2t and 2t + 1.
    let pairs = PER_INVOCATION == 2u;
    // The padding columns hold a dry cell at rest (limit factors of 1): the halo columns beside
    // them read them, for results nobody uses.
    if t == 0u || t == INVOCATIONS - 1u {
        let pad = select(ROW - 1u, 0u, t == 0u);
        for (var slot = 0u; slot < LEVEL_ROWS; slot++) {
            s_level[at(slot, pad)] = vec2<i32>(0);
        }
        for (var slot = 0u; slot < FLOW_ROWS; slot++) {
            set_flows(at(slot, pad), vec4<f32>(0.0));
        }
        share_pipes(pad, vec4<f32>(0.0));
        s_centre[pad] = vec2<f32>(1.0);
    }
    // Running several tiles of a page, the walk adds each finished tile's flags at the row that
    // writes its last row (r - 3), but for the last tile's, after the walk: the row where it next
    // does, and the tile. A compare a row: testing each row for a tile's end (a remainder, and a
    // division for the tile) cost the world's step some 17 instructions a row (docs/BENCHMARKS.md).
    var flags_row = NO_FLAGS_ROW;
    var flags_tile = tile;
    if PAGED && tiles_run > 1u {
        flags_row = next_flags_row(y0 - 1, y_end);
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
        if PAGED && r == flags_row {
            add_tile_flags(flags_tile, &one, &two);
            flags_tile += tiles.tiles.x;
            flags_row = next_flags_row(r - 3, y_end);
        }
    }
    // The flags of the tile (the last tile run), once per band.
    add_tile_flags(flags_tile, &one, &two);
}

// A flags_row that no row of the walk reaches.
const NO_FLAGS_ROW: i32 = -0x7fffffff;

// The walk's row that writes the last row of the tile after the one whose last row is `last`
// (its r - 3), or NO_FLAGS_ROW when that tile is the last of the walk (ending at y_end), whose
// flags are added after it.
fn next_flags_row(last: i32, y_end: i32) -> i32 {
    let next = last + i32(tiles.size.y);
    return select(NO_FLAGS_ROW, next + 3, next < y_end - 1);
}
