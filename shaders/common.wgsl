// Declarations shared by every PipeWater compute shader. The host prepends this file to each
// pass family (step.wgsl, edits.wgsl, snapshot.wgsl) before compiling it.
//
// Mirrors rust/pipewater-core/src/pipes.rs and quanta.rs: constants and helper functions keep
// the same names, and each computes with the same operations in the same order.

// `StepConstants` of pipes.rs, byte for byte (80 bytes, uniform layout).
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
    width_orth: f32,
    width_diag: f32,
    // Boundary code per edge (North, East, South, West).
    boundary: vec4<u32>,
    // Quanta added to each cell of each inflow edge per step.
    inflow_quanta: vec4<i32>,
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
// pipes.rs VELOCITY_DEPTH_FLOOR, m.
const VELOCITY_DEPTH_FLOOR: f32 = 0.005;
// state.rs WET_DEPTH, m.
const WET_DEPTH: f32 = 1.0e-3;
// state.rs MAX_TERRAIN_ABS, m.
const MAX_TERRAIN_ABS: f32 = 1.0e6;

// Ledger slots in the counters buffer: each is a (low, high) pair of u32 words.
const COUNTER_ADDED: u32 = 0u;
const COUNTER_REMOVED: u32 = 1u;
const COUNTER_BOUNDARY_IN: u32 = 2u;
const COUNTER_BOUNDARY_OUT: u32 = 3u;

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
