// Where a cell's fields lie in the step's buffers, for a world stored in pages (backend/gpu/
// world.rs): a page is PAGE_SIDE × PAGE_SIDE cells, a column of PAGE_TILES sleeping tiles (the
// step's workgroups: a strip's own columns by TILE_ROWS rows), and its fields occupy slots
// of the buffers, rows of the page one after the other, wherever the host put them: one slot of
// the terrain, one of the depth and pipes. `page_slots` names each page's two, (NO_PAGE, _) for a
// page that holds nothing on the device. A page beside the water's neighbours holds only its
// terrain: its water slot is ZERO_SLOT, all zeros, shared by every such page and never written
// (the step reads its cells there; they are dry and still). The plan (tiles.wgsl) steps a page
// only when it holds a water slot of its own and its eight neighbours hold their terrain:
// everything the step reads of a page's cells (within four columns and three rows of them) then
// lies on the device, so the step runs exactly as on a dense grid.

const PAGED: bool = true;
const NO_PAGE: u32 = 0xffffffffu;
const ZERO_SLOT: u32 = 0u;

@group(1) @binding(0) var<storage, read> page_slots: array<vec2<u32>>;
// The tiles the plan runs: those of the pages with water fields (no other tile can step), as a
// count and the tiles.
@group(1) @binding(1) var<storage, read> planned_tiles: array<u32>;

// Cells along a page's side (tiles.size.x), and rows of its tiles (tiles.size.y), as constants:
// the divisions by them are the step's every load.
override PAGE_SIDE: u32 = 56u;
override TILE_ROWS: u32 = 56u;
override PAGE_TILES: u32 = PAGE_SIDE / TILE_ROWS;

fn planned_tile(id: u32) -> u32 {
    if id < planned_tiles[0] {
        return planned_tiles[1u + id];
    }
    return NO_PAGE;
}

fn cell_slots(cell: vec2<i32>) -> vec2<u32> {
    let side = PAGE_SIDE;
    let page = vec2<u32>(cell) / side;
    let within = vec2<u32>(cell) - page * side;
    return page_slots[page.y * tiles.tiles.x + page.x] * (side * side) + within.y * side + within.x;
}

// Pages along y (along x there are as many as strips of tiles).
fn pages_high() -> u32 {
    return (tiles.tiles.y + PAGE_TILES - 1u) / PAGE_TILES;
}

fn page_resident(x: i32, y: i32) -> bool {
    if x < 0 || y < 0 || x >= i32(tiles.tiles.x) || y >= i32(pages_high()) {
        // Beyond the world's edge: the step reads nothing there.
        return true;
    }
    return page_slots[u32(y) * tiles.tiles.x + u32(x)].x != NO_PAGE;
}

// Whether page (x, y) may step: it has water fields, its eight neighbours their terrain.
fn page_steppable(x: u32, y: u32) -> bool {
    if page_slots[y * tiles.tiles.x + x].y == ZERO_SLOT {
        return false;
    }
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            if !page_resident(i32(x) + dx, i32(y) + dy) {
                return false;
            }
        }
    }
    return true;
}

fn tile_steppable(x: u32, y: u32) -> bool {
    return page_steppable(x, y / PAGE_TILES);
}

// Whether water of tile (x, y), whose last flags are `flags`, lies at its page's border with a
// neighbouring page that cannot step: the next step would move it there, and that page would
// not take it in.
fn water_beside_a_page_that_cannot_step(x: u32, y: u32, flags: u32) -> bool {
    if (flags & TILE_WET) == 0u {
        return false;
    }
    let page = vec2<i32>(i32(x), i32(y / PAGE_TILES));
    // For each neighbour (dx, dy): the wet_edges bit (before TILE_WET_NORTH) of the page's
    // border towards it.
    let towards = array<u32, 9>(128u, 1u, 16u, 8u, 0u, 2u, 64u, 4u, 32u);
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let n = page + vec2<i32>(dx, dy);
            let bit = towards[(dy + 1) * 3 + dx + 1] * TILE_WET_NORTH;
            if (flags & bit) != 0u && n.x >= 0 && n.y >= 0 && n.x < i32(tiles.tiles.x) && n.y < i32(pages_high()) && !page_steppable(u32(n.x), u32(n.y)) {
                return true;
            }
        }
    }
    return false;
}

// The flags of a wet cell: TILE_WET, and the neighbours of its page it lies beside, from
// TILE_WET_NORTH on: bits N, E, S, W for the page's edge rows and columns, then NE, SE, SW, NW
// for its corner cells. The next step may move its water into those pages.
fn wet_edges(cell: vec2<i32>) -> u32 {
    let last = PAGE_SIDE - 1u;
    let within = vec2<u32>(cell) % PAGE_SIDE;
    let n = within.y == 0u;
    let e = within.x == last;
    let s = within.y == last;
    let w = within.x == 0u;
    var bits = select(0u, 1u, n) | select(0u, 2u, e) | select(0u, 4u, s) | select(0u, 8u, w);
    bits |= select(0u, 16u, n && e) | select(0u, 32u, s && e) | select(0u, 64u, s && w) | select(0u, 128u, n && w);
    return TILE_WET | (bits * TILE_WET_NORTH);
}
