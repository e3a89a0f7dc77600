// Cooling (cooling.rs): after a frame, still fluid turns into ground, as lava sets. Two passes
// over every cell, so that stillness is judged on every pipe through a cell before any cell
// changes (as cooling.rs `solidify` judges them all first): `judge_cooling` writes the quanta
// each cell turns into `cooling.turned` and changes nothing else; `apply_cooling` then lowers the
// depth, raises the terrain and the step's bed, counts the quanta in the ledger and marks the
// tiles whose cells changed (to step at the next step, to be redrawn by the next snapshot).
// Mirrors cooling.rs function for function, in f32 as it computes.

@group(0) @binding(0) var<uniform> c: StepConstants;
@group(0) @binding(1) var<uniform> tiles: TileParams;
// The bed the step reads (terrain plus the displacement of bodies), which stillness is judged
// on, and which follows the raised terrain.
@group(0) @binding(2) var<storage, read_write> step_terrain: array<f32>;
@group(0) @binding(3) var<storage, read_write> terrain: array<f32>;
@group(0) @binding(4) var<storage, read> displacement: array<f32>;
// The copy of depth and pipes that holds the state.
@group(0) @binding(5) var<storage, read_write> depth: array<i32>;
@group(0) @binding(6) var<storage, read> flux: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, COUNTER_WORDS>;
// The flags of the frame's last step, which the next frame's first plan reads (tiles.wgsl
// `tile_flags_before`): a tile marked changed wakes with its neighbours.
@group(0) @binding(8) var<storage, read_write> tile_flags_before: array<atomic<u32>>;
// Tiles whose snapshot texels are stale (snapshot.wgsl).
@group(0) @binding(9) var<storage, read_write> tile_stale: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> cooling: Cooling;

struct Cooling {
    // Quanta each still cell turns this frame (cooling.rs quanta_per_cell), from the host.
    quanta: i32,
    // Per cell, the quanta it turns: written by judge_cooling, read by apply_cooling.
    turned: array<i32>,
}

// cooling.rs SOLIDIFY_SPEED, m/s.
const SOLIDIFY_SPEED: f32 = 0.01;
// cooling.rs MAX_QUANTA_PER_FRAME.
const MAX_QUANTA_PER_FRAME: i32 = 16777215;
const COOLING_WORKGROUP: u32 = 8u;

// cooling.rs pipe_is_still.
fn pipe_is_still(stored: f32, carried: f32, width: f32) -> bool {
    return carried <= 0.0 || abs(stored * flux_per_stored(c, carried)) <= SOLIDIFY_SPEED * width * carried;
}

// cooling.rs cell_is_still: the pipes the cell owns and those its neighbours own towards it, as
// the neighbour mode has them (pipe_active).
fn cell_is_still(here: vec2<i32>) -> bool {
    let w = i32(c.width);
    for (var p = 0u; p < 4u; p++) {
        let offset = pipe_offset(p);
        for (var side = 0; side < 2; side++) {
            // side 0: the pipe `here` owns towards here + offset; side 1: the one here − offset
            // owns towards here.
            var owner = here;
            var other = here + offset;
            if side == 1 {
                owner = here - offset;
                other = here;
            }
            if !cell_in_grid(c, owner) || !cell_in_grid(c, other) || !pipe_active(c, p, owner.y) {
                continue;
            }
            let a = u32(owner.y * w + owner.x);
            let b = u32(other.y * w + other.x);
            let carried = carried_depth(c, step_terrain[a], depth[a], step_terrain[b], depth[b]);
            if !pipe_is_still(flux[a][p], carried, pipe_width(c, p, owner)) {
                return false;
            }
        }
    }
    return true;
}

// cooling.rs raised_bed: the raised bed and the quanta that fit below MAX_TERRAIN_ABS.
struct Raised {
    bed: f32,
    fits: i32,
}

fn raised_bed(bed: f32, quanta: i32) -> Raised {
    let room = max(floor((MAX_TERRAIN_ABS - bed) * 1048576.0), 0.0);
    let fits = i32(min(f32(clamp(quanta, 0, MAX_QUANTA_PER_FRAME)), room));
    return Raised(bed + f32(fits) * DEPTH_QUANTUM, fits);
}

@compute @workgroup_size(COOLING_WORKGROUP, COOLING_WORKGROUP)
fn judge_cooling(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= c.width || gid.y >= c.height {
        return;
    }
    let cell = vec2<i32>(gid.xy);
    let i = gid.y * c.width + gid.x;
    let d = depth[i];
    var turned = 0;
    if d > 0 && cell_is_still(cell) {
        turned = raised_bed(terrain[i], min(cooling.quanta, d)).fits;
    }
    cooling.turned[i] = turned;
}

// Quanta the workgroup's cells turned, counted in the ledger once per workgroup.
var<workgroup> turned_here: atomic<u32>;

// The sleeping tile of a cell (sleep.rs TileGrid::tile_of).
fn tile_of(cell: vec2<u32>) -> u32 {
    return (cell.y / tiles.size.y) * tiles.tiles.x + cell.x / tiles.size.x;
}

@compute @workgroup_size(COOLING_WORKGROUP, COOLING_WORKGROUP)
fn apply_cooling(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        atomicStore(&turned_here, 0u);
    }
    workgroupBarrier();
    if gid.x < c.width && gid.y < c.height {
        let i = gid.y * c.width + gid.x;
        let n = cooling.turned[i];
        if n > 0 {
            // n quanta fit (judge_cooling), so this is the bed that judge computed.
            let raised = raised_bed(terrain[i], n).bed;
            terrain[i] = raised;
            step_terrain[i] = raised + displacement[i];
            depth[i] -= n;
            atomicAdd(&turned_here, u32(n));
            atomicOr(&tile_flags_before[tile_of(gid.xy)], TILE_CHANGED);
            // A cell's texels read the cells around it: the tiles of those are stale too.
            for (var dy = -1; dy <= 1; dy++) {
                for (var dx = -1; dx <= 1; dx++) {
                    let near = vec2<i32>(gid.xy) + vec2<i32>(dx, dy);
                    if cell_in_grid(c, near) {
                        atomicStore(&tile_stale[tile_of(vec2<u32>(near))], 1u);
                    }
                }
            }
        }
    }
    workgroupBarrier();
    if lid == 0u {
        // At most 64 cells of under 2²⁴ quanta: no wrap within the workgroup.
        count(COUNTER_SOLIDIFIED, atomicLoad(&turned_here));
    }
}
