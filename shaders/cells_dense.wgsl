// Where a cell's fields lie in the step's buffers, for a grid stored densely (row-major, one
// grid of today's sizes): the step and the plan of the sleeping tiles are compiled with this
// fragment, or with cells_paged.wgsl for a world stored in pages (backend/gpu/world.rs).

const PAGED: bool = false;

// A dense grid has no pages (cells_paged.wgsl page_column).
fn page_column(x: i32) -> u32 {
    return 0u;
}

// A cell's index in the terrain, and in the depth and pipes: the same here.
fn cell_slots(cell: vec2<i32>, column: u32) -> vec2<u32> {
    let i = u32(cell.y) * c.width + u32(cell.x);
    return vec2<u32>(i, i);
}

// The water slot of a cell the step writes: cell_slots's.
fn own_water_slot(cell: vec2<i32>) -> u32 {
    return u32(cell.y) * c.width + u32(cell.x);
}

// The plan runs every tile of a dense grid, one invocation each.
fn planned_tile(id: u32) -> u32 {
    return id;
}

// The step runs each tile of a dense grid as a workgroup of its own: an awake list's entry is
// the tile (cells_paged.wgsl may run several of a page's tiles as one).
fn merge_tiles() -> u32 {
    return 1u;
}

fn list_entry(tile: u32, tiles_run: u32) -> u32 {
    return tile;
}

fn listed_tile(entry: u32) -> u32 {
    return entry;
}

fn listed_tiles(entry: u32) -> u32 {
    return 1u;
}

// A dense grid finds its cells without a table: nothing to prepare.
fn begin_tile(t: u32, strip: u32, band: u32) {
}

// Every tile of a dense grid holds its fields, so every tile may step.
fn tile_steppable(x: u32, y: u32) -> bool {
    return true;
}

// A dense grid holds no page back (cells_paged.wgsl's focus): these fold away.
const FOCUS_HOLDS: bool = false;

fn owes_step(flags: u32) -> bool {
    return false;
}

fn skipped_flags(x: u32, y: u32, before: u32, wanted: bool) -> u32 {
    return before & TILE_KEPT;
}

fn hold_tile(strip: u32, band: u32) {
}

fn held_window(x: i32, y: i32) -> u32 {
    return 0u;
}

// A dense grid keeps no wet flags (cells_paged.wgsl's tell a world where its water lies).
fn wet_mark(y: i32, depth: i32) -> u32 {
    return 0u;
}

fn tile_flags_seen(flags: u32, x: i32, tile: u32) -> u32 {
    return flags;
}

fn water_beside_a_page_that_cannot_step(x: u32, y: u32, flags: u32) -> bool {
    return false;
}
