// Sleeping tiles (backend/sleep.rs): before each step, one invocation per tile decides whether
// the step runs the tile, and lists the tiles it runs as the indirect dispatch of the step
// kernel, all on the device (no round trip to the host between steps).
//
// A tile steps when a tile of its 3×3 neighbourhood changed a bit in the last step, or was
// touched since (edits, bodies, terrain: `tile_wakes` bit 1, for the frame's first step;
// sources and drains: bit 0, every step), when it lies on a grid edge that exchanges water, and
// after new constants: a new step length wakes the neighbourhoods of tiles whose pipes carry
// flow, any other change wakes every tile. Otherwise the step would give the tile the bits it
// holds, and both depth and pipe copies already hold them (backend/gpu/mod.rs says why).
//
// Flags ping-pong with the fields: the step from copy k writes `tile_flags` k, and the plan
// before it reads the last step's from the other copy, so it can reset its own words freely.

@group(0) @binding(0) var<uniform> c: StepConstants;
@group(0) @binding(1) var<uniform> tiles: TileParams;
// The flags of the last step, and those of this one (this pass writes the tiles the step skips
// and marks those it runs; the step kernel writes the rest).
@group(0) @binding(2) var<storage, read> tile_flags_before: array<u32>;
@group(0) @binding(3) var<storage, read_write> tile_flags: array<u32>;
// Host marks per tile: bit 0 wakes it for every step of the frame, bit 1 for its first step.
@group(0) @binding(4) var<storage, read> tile_wakes: array<u32>;
// This step's list (AWAKE_LIST_HEADER words, then tiles), and the next step's, whose count this
// pass resets (the last step's dispatch, which read it, has finished).
@group(0) @binding(5) var<storage, read_write> awake_list: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> next_awake_list: array<atomic<u32>>;
// The frame's sleeping report, read back behind the snapshot: cells stepped over the frame (low
// and high words; a world of pages, which reads neither, leaves them 0), the awake list's
// entries of its last step (its awake tiles; a world counts them from their flags, since it may
// list a page's tiles as one), and in a world of pages the faults (tiles with water nearby that
// could not step, cells_paged.wgsl). The host clears it before a frame with steps.
@group(0) @binding(7) var<storage, read_write> sleep_stats: array<atomic<u32>, 4>;
// Tiles whose snapshot texels are stale (snapshot.wgsl, which clears them): those the step runs
// (a dense grid's; a world of pages takes no snapshot and marks none).
// A cell's texels read the cells around it, but that needs no more: a change within one cell of
// a tile's cells at a step follows from a change within the step's reach of them at the step
// before (or from an edit there), inside the tile's 3×3 neighbourhood, and that wakes the tile.
@group(0) @binding(8) var<storage, read_write> tile_stale: array<u32>;

const TILES_WORKGROUP: u32 = 64u;
const WAKE_EVERY_STEP: u32 = 1u;
const WAKE_FIRST_STEP: u32 = 2u;
// pipes.rs BOUNDARY_WALL.
const BOUNDARY_WALL: u32 = 0u;

// Cells of tile (x, y): the last strip and band hold what is left of the grid.
fn cells_in_tile(x: u32, y: u32) -> u32 {
    let columns = min(tiles.size.x, c.width - x * tiles.size.x);
    let rows = min(tiles.size.y, c.height - y * tiles.size.y);
    return columns * rows;
}

// sleep.rs TileGrid::on_exchanging_edge.
fn on_exchanging_edge(x: u32, y: u32) -> bool {
    let b = c.boundary;
    return (y == 0u && b.x != BOUNDARY_WALL) || (x + 1u == tiles.tiles.x && b.y != BOUNDARY_WALL) || (y + 1u == tiles.tiles.y && b.z != BOUNDARY_WALL)
        || (x == 0u && b.w != BOUNDARY_WALL);
}

// Whether tile (x, y) would step: a tile of its 3×3 neighbourhood changed or was marked, it lies
// on an exchanging edge, or the constants changed as the header says.
fn wants_step(x: u32, y: u32, change: u32, wakes: u32) -> bool {
    var awake = tiles.sleeping == 0u || change == TILES_CHANGE_MODE || on_exchanging_edge(x, y);
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let nx = i32(x) + dx;
            let ny = i32(y) + dy;
            if nx >= 0 && ny >= 0 && nx < i32(tiles.tiles.x) && ny < i32(tiles.tiles.y) {
                let n = u32(ny) * tiles.tiles.x + u32(nx);
                let flags = tile_flags_before[n];
                awake = awake || (flags & TILE_CHANGED) != 0u || (tile_wakes[n] & wakes) != 0u;
                awake = awake || (change == TILES_CHANGE_STEP_LENGTH && (flags & TILE_MOVING) != 0u);
            }
        }
    }
    return awake;
}

// The tiles the awake list's entry for running tile (x, y) runs: 1, its own; merge_tiles() when
// it is the first of that many that all run (a world's page, cells_paged.wgsl), and 0 when
// another tile's entry runs it. Every tile of such a group asks the same of the same words, so
// they agree. The group lies in one page, which may step (tile (x, y) runs): so a tile of it
// runs when it wants to step or owes a step.
fn tiles_listed(x: u32, y: u32, change: u32, wakes: u32) -> u32 {
    let merge = merge_tiles();
    if merge <= 1u {
        return 1u;
    }
    let first = y - y % merge;
    if first + merge > tiles.tiles.y {
        return 1u;
    }
    for (var k = 0u; k < merge; k++) {
        let other = first + k;
        if other != y && !(wants_step(x, other, change, wakes) || owes_step(tile_flags_before[other * tiles.tiles.x + x])) {
            return 1u;
        }
    }
    return select(0u, merge, y == first);
}

fn plan(id: u32, first_step: bool) {
    if id == 0u {
        atomicStore(&next_awake_list[0], 0u);
    }
    // Every tile of a dense grid; a world's pages with water fields (cells_paged.wgsl).
    let t = planned_tile(id);
    let count = tiles.tiles.x * tiles.tiles.y;
    if t >= count {
        return;
    }
    let x = t % tiles.tiles.x;
    let y = t / tiles.tiles.x;
    var change = TILES_CHANGE_NONE;
    var wakes = WAKE_EVERY_STEP;
    if first_step {
        change = tiles.change;
        wakes |= WAKE_FIRST_STEP;
    }
    let wanted = wants_step(x, y, change, wakes);
    // The tiles its list entry runs, asked before whether it runs: the loads of its siblings'
    // neighbours go out with its own instead of after them (a dense grid's is 1, no loads).
    let listed = tiles_listed(x, y, change, wakes);
    // A page of a world whose neighbourhood does not hold its terrain yet: stepping it would read
    // pages that hold none. Or one the world's focus holds back this frame, which owes the step
    // until it is released (cells_paged.wgsl).
    // Asked whether or not the tile wants to step, so that the loads of its pages' slots go out
    // with those of its flags instead of after them.
    let steppable = tile_steppable(x, y);
    let awake = (wanted || owes_step(tile_flags_before[t])) && steppable;
    // The host keeps the pages around water resident far enough ahead that no water lies
    // beside a page that cannot step (world.rs); a fault if it does, counted in the report's
    // last word.
    if water_beside_a_page_that_cannot_step(x, y, tile_flags_before[t]) {
        atomicAdd(&sleep_stats[3], 1u);
    }
    if awake {
        if listed > 0u {
            let slot = atomicAdd(&awake_list[0], 1u);
            atomicStore(&awake_list[AWAKE_LIST_HEADER + slot], list_entry(t, listed));
        }
        // The step adds the bits it sees.
        tile_flags[t] = TILE_AWAKE;
        // A world of pages takes no snapshot and reads no count of the cells stepped: it skips
        // them, a stale mark and two atomics on one word for every tile it steps.
        if !PAGED {
            tile_stale[t] = 1u;
            let cells = cells_in_tile(x, y);
            let old = atomicAdd(&sleep_stats[0], cells);
            if old > 0xffffffffu - cells {
                atomicAdd(&sleep_stats[1], 1u);
            }
        }
    } else {
        // A skipped tile's pipes and water are as they were: it keeps its moving and wet bits.
        tile_flags[t] = skipped_flags(x, y, tile_flags_before[t], wanted);
    }
}

// The plan of a frame's first step: host marks of both kinds and the change of constants count.
@compute @workgroup_size(TILES_WORKGROUP)
fn plan_frame_start(@builtin(global_invocation_id) id: vec3<u32>) {
    plan(id.x, true);
}

// The plan of the frame's later steps, which share its constants and its sources and drains.
@compute @workgroup_size(TILES_WORKGROUP)
fn plan_next_step(@builtin(global_invocation_id) id: vec3<u32>) {
    plan(id.x, false);
}

// A world of pages (cells_paged.wgsl): the flags of the tiles the plan runs, in its list's order,
// from the plan's bindings of the step after the frame's last (whose flags before are that
// step's), for the host's residency. Other tiles hold no water.
@group(1) @binding(2) var<storage, read_write> planned_flags: array<u32>;

@compute @workgroup_size(TILES_WORKGROUP)
fn gather_planned_flags(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = planned_tile(id.x);
    if t < tiles.tiles.x * tiles.tiles.y {
        planned_flags[id.x] = tile_flags_before[t];
    }
}

// After a frame's last step, with the bindings of that step's plan: its awake tiles into the
// report.
@compute @workgroup_size(1)
fn report_awake_tiles() {
    atomicStore(&sleep_stats[2], atomicLoad(&awake_list[0]));
}
