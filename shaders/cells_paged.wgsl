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
// count, the tiles the step may run as one workgroup (merge_tiles), and the tiles.
@group(1) @binding(1) var<storage, read> planned_tiles: array<u32>;
// Pages the host holds back this frame (world_water.rs's focus: far from every focus, on a
// frame the far pages sit out), one bit a page. A held page does not step, and every pipe
// between a cell that steps and a cell of a held page is closed for the step on both sides, as
// at a wall: the stepping side moves nothing across it and the held side does not step, so no
// quantum is lost. With no page held this is the step of every other frame, bit for bit.
@group(1) @binding(3) var<storage, read> page_held: array<u32>;

// Whether the step is compiled to close the pipes into held pages (the host's pipeline for a
// world with a focus policy on): without it the step reads no held bit and is the step it was.
override FOCUS_HOLDS: bool = false;

// Flags bit of a held tile that wanted to step (a neighbour changed, an edit or a mark, new
// constants): it steps once released, and wakes its neighbours as a change would. Above the bits
// TILE_KEPT keeps, so a dense grid's flags never hold it.
const TILE_OWED: u32 = 0x1000u;

// Cells along a page's side (tiles.size.x), and rows of its tiles (tiles.size.y), as constants:
// the divisions by them are the step's every load.
override PAGE_SIDE: u32 = 56u;
override TILE_ROWS: u32 = 56u;
override PAGE_TILES: u32 = PAGE_SIDE / TILE_ROWS;

// Words of planned_tiles in front of the tiles.
const PLANNED_HEADER: u32 = 2u;

fn planned_tile(id: u32) -> u32 {
    if id < planned_tiles[0] {
        return planned_tiles[PLANNED_HEADER + id];
    }
    return NO_PAGE;
}

// Tiles of a page, one above the other, that the step runs as one workgroup when all of them
// step (world.rs chooses it from how many tiles are awake, a divisor of PAGE_TILES; 1: each
// tile its own). A workgroup walking more rows recomputes fewer halo rows, one walking fewer
// gives a few awake pages more workgroups side by side.
fn merge_tiles() -> u32 {
    return max(planned_tiles[1], 1u);
}

// An awake list's entry: a tile, and in its top bits how many tiles from it down its page the
// workgroup runs, less one (world.rs keeps tile numbers below 1 << MERGED_SHIFT).
const MERGED_SHIFT: u32 = 28u;

fn list_entry(tile: u32, tiles_run: u32) -> u32 {
    return tile | ((tiles_run - 1u) << MERGED_SHIFT);
}

fn listed_tile(entry: u32) -> u32 {
    return entry & ((1u << MERGED_SHIFT) - 1u);
}

fn listed_tiles(entry: u32) -> u32 {
    return (entry >> MERGED_SHIFT) + 1u;
}

// Where the step finds the cells of a tile: the 3 × 3 pages around the tile's page (rows of
// pages, then columns, from the one above and to the left), each as its (terrain, water) slots
// times the cells of a page, less the index of its first cell in a grid PAGE_SIDE cells wide
// (wrapping), so that a cell's index is an entry plus y · PAGE_SIDE + x. A workgroup's rows (the
// tiles' and three on each side) and columns (the strip's and HALO on each side) lie in these
// pages, so each load reads an entry of workgroup memory instead of dividing by the page's side
// and waiting for page_slots before it can start. 72 bytes: with the step's rings 6 144, the
// 6 KiB a workgroup may take for eight to share a multiprocessor (docs/BENCHMARKS.md).
var<workgroup> s_page_bases: array<vec2<u32>, 9>;
// The first cell of the workgroup's page, set by begin_tile.
var<private> page_origin: vec2<i32>;

fn begin_tile(t: u32, strip: u32, band: u32) {
    let page = vec2<i32>(i32(strip), i32(band / PAGE_TILES));
    page_origin = page * i32(PAGE_SIDE);
    if t < 9u {
        let p = page + vec2<i32>(i32(t % 3u), i32(t / 3u)) - vec2<i32>(1);
        var base = vec2<u32>(0u);
        // Pages beyond the world's edge hold no cell the step reads (cell_in_grid).
        if p.x >= 0 && p.y >= 0 && p.x < i32(tiles.tiles.x) && p.y < i32(pages_high()) {
            let first = vec2<u32>(p) * PAGE_SIDE;
            base = page_slots[u32(p.y) * tiles.tiles.x + u32(p.x)] * (PAGE_SIDE * PAGE_SIDE) - vec2<u32>(first.y * PAGE_SIDE + first.x);
        }
        s_page_bases[t] = base;
    }
    workgroupBarrier();
}

// Which column of the 3 × 3 pages grid column x lies in (0, 1, 2). An invocation's column never
// changes: the step chooses it once (column_at), not at each load.
fn page_column(x: i32) -> u32 {
    let side = i32(PAGE_SIDE);
    return select(select(1u, 2u, x >= page_origin.x + side), 0u, x < page_origin.x);
}

// Where the fields of `cell`, in the column of pages `column` (page_column), lie: (terrain,
// water) slots.
fn cell_slots(cell: vec2<i32>, column: u32) -> vec2<u32> {
    // The step loads rows within three of its page's: (cell.y - page_origin.y + PAGE_SIDE) lies in
    // PAGE_SIDE - 3 ..= 2 PAGE_SIDE + 2, so dividing it by PAGE_SIDE gives the row of pages.
    let row = u32(cell.y - page_origin.y + i32(PAGE_SIDE)) / PAGE_SIDE;
    return s_page_bases[row * 3u + column] + (u32(cell.y) * PAGE_SIDE + u32(cell.x));
}

// The water slot of a cell of the workgroup's own page (every cell the step writes): the centre
// of the 3 × 3, without choosing among them (ten instructions a row fewer than cell_slots).
fn own_water_slot(cell: vec2<i32>) -> u32 {
    return s_page_bases[4].y + (u32(cell.y) * PAGE_SIDE + u32(cell.x));
}

// Pages along y (along x there are as many as strips of tiles).
fn pages_high() -> u32 {
    return (tiles.tiles.y + PAGE_TILES - 1u) / PAGE_TILES;
}

// The pages within two of page `page`, for the plan's tests of it and of its neighbours, read
// in one go: `resident` has bit (dy + 2)·5 + dx + 2 for page (dx, dy) away when its terrain is on
// the device or it lies beyond the world's edge (the step reads nothing there), `watered` bit
// (dy + 1)·3 + dx + 1 for one of the 3×3 with water fields of its own. Each load reads a page
// clamped onto the world, so all 25 are in bounds and none waits on the answer of another: a
// plan invocation's tests cost one trip to memory instead of a chain of up to a hundred.
struct PagesAround {
    page: vec2<i32>,
    resident: u32,
    watered: u32,
}

// The plan invocation's pages around, once read (one invocation plans one tile).
var<private> around: PagesAround;
var<private> around_read: bool;

fn pages_around(x: u32, py: u32) -> PagesAround {
    let page = vec2<i32>(i32(x), i32(py));
    if around_read && all(around.page == page) {
        return around;
    }
    let last = vec2<i32>(i32(tiles.tiles.x), i32(pages_high())) - vec2<i32>(1);
    // Written out, not looped over, so that the 25 loads can go out together: with the loop a
    // 4096² world's plan took 2 µs longer on an H200 (16 µs, docs/BENCHMARKS.md).
    var bits = page_bits(page, last, -2, -2) | page_bits(page, last, -1, -2) | page_bits(page, last, 0, -2) | page_bits(page, last, 1, -2) | page_bits(page, last, 2, -2);
    bits |= page_bits(page, last, -2, -1) | page_bits(page, last, -1, -1) | page_bits(page, last, 0, -1) | page_bits(page, last, 1, -1) | page_bits(page, last, 2, -1);
    bits |= page_bits(page, last, -2, 0) | page_bits(page, last, -1, 0) | page_bits(page, last, 0, 0) | page_bits(page, last, 1, 0) | page_bits(page, last, 2, 0);
    bits |= page_bits(page, last, -2, 1) | page_bits(page, last, -1, 1) | page_bits(page, last, 0, 1) | page_bits(page, last, 1, 1) | page_bits(page, last, 2, 1);
    bits |= page_bits(page, last, -2, 2) | page_bits(page, last, -1, 2) | page_bits(page, last, 0, 2) | page_bits(page, last, 1, 2) | page_bits(page, last, 2, 2);
    around = PagesAround(page, bits.x, bits.y);
    around_read = true;
    return around;
}

// Page (dx, dy) away from `page`'s bits in PagesAround's `resident` (x) and `watered` (y).
fn page_bits(page: vec2<i32>, last: vec2<i32>, dx: i32, dy: i32) -> vec2<u32> {
    let n = page + vec2<i32>(dx, dy);
    let inside = all(n >= vec2<i32>(0)) && all(n <= last);
    let at = clamp(n, vec2<i32>(0), last);
    let slots = page_slots[u32(at.y) * tiles.tiles.x + u32(at.x)];
    let resident = select(0u, 1u << u32((dy + 2) * 5 + dx + 2), !inside || slots.x != NO_PAGE);
    let near = abs(dx) <= 1 && abs(dy) <= 1;
    let watered = select(0u, 1u << u32((dy + 1) * 3 + dx + 1), near && inside && slots.y != ZERO_SLOT);
    return vec2<u32>(resident, watered);
}

// Whether the page (dx, dy) away from `a`'s (each within one) may step: it has water fields, its
// eight neighbours their terrain.
fn steppable_around(a: PagesAround, dx: i32, dy: i32) -> bool {
    // The 3×3 around it in the 5×5 bits of `resident`.
    let block = 0x1ce7u << u32((dy + 1) * 5 + dx + 1);
    return ((a.watered >> u32((dy + 1) * 3 + dx + 1)) & 1u) != 0u && (a.resident & block) == block;
}

fn page_held_at(x: i32, y: i32) -> bool {
    if x < 0 || y < 0 || x >= i32(tiles.tiles.x) || y >= i32(pages_high()) {
        return false;
    }
    let page = u32(y) * tiles.tiles.x + u32(x);
    return ((page_held[page / 32u] >> (page % 32u)) & 1u) != 0u;
}

fn tile_held(x: u32, y: u32) -> bool {
    return page_held_at(i32(x), i32(y / PAGE_TILES));
}

// Whether the plan may step tile (x, y): its page has water fields and its neighbours their
// terrain (steppable_around), and it is not held back.
fn tile_steppable(x: u32, y: u32) -> bool {
    // Both asked at once (`&`, not `&&`): the held bit's load goes out with the pages' slots.
    return steppable_around(pages_around(x, y / PAGE_TILES), 0, 0) & !tile_held(x, y);
}

// Whether a tile whose last flags are `flags` was skipped while held, owing the step it wanted:
// it steps once it may (released).
fn owes_step(flags: u32) -> bool {
    return (flags & TILE_OWED) != 0u;
}

// Flags a tile the plan skips keeps: what TILE_KEPT keeps, and TILE_OWED while it is owed a step
// (`wanted`: the plan would have run it but for its page being held).
fn skipped_flags(x: u32, y: u32, before: u32, wanted: bool) -> u32 {
    let owed = (before & TILE_OWED) != 0u || (wanted && tile_held(x, y));
    return (before & TILE_KEPT) | select(0u, TILE_OWED, owed);
}

// The held pages among the 3×3 around the page a workgroup steps (bit (dy + 1)·3 + dx + 1): set
// by hold_tile once per workgroup, after begin_tile.
var<private> held_around: u32;

fn hold_tile(strip: u32, band: u32) {
    let page = vec2<i32>(i32(strip), i32(band / PAGE_TILES));
    var bits = 0u;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            if page_held_at(page.x + dx, page.y + dy) {
                bits |= 1u << u32((dy + 1) * 3 + dx + 1);
            }
        }
    }
    held_around = bits;
}

// The first `n` (0 ..= 5) rows of a 5×5 window's bits (step_columns.wgsl window).
fn window_rows(n: i32) -> u32 {
    return (1u << u32(5 * n)) - 1u;
}

// The cells of the 5×5 window around cell (x, y) that lie in held pages (step_columns.wgsl
// window's bits). The window reaches at most six cells beyond the stepped page (its halo and two
// more), so every cell of it lies in the 3×3 pages around it.
fn held_window(x: i32, y: i32) -> u32 {
    if held_around == 0u {
        return 0u;
    }
    let side = i32(PAGE_SIDE);
    // Window columns (and rows) k < first lie in the page before, k >= last in the page after.
    let first = vec2<i32>(clamp(page_origin.x - x + 2, 0, 5), clamp(page_origin.y - y + 2, 0, 5));
    let last = vec2<i32>(clamp(page_origin.x + side - x + 2, 0, 5), clamp(page_origin.y + side - y + 2, 0, 5));
    let before = (1u << u32(first.x)) - 1u;
    let through = (1u << u32(last.x)) - 1u;
    let columns = array<u32, 3>(before, through & ~before, 0x1fu & ~through);
    let rows = array<u32, 3>(window_rows(first.y), window_rows(last.y) & ~window_rows(first.y), window_rows(5) & ~window_rows(last.y));
    var held = 0u;
    for (var j = 0u; j < 3u; j++) {
        var cells = 0u;
        for (var i = 0u; i < 3u; i++) {
            if ((held_around >> (j * 3u + i)) & 1u) != 0u {
                cells |= columns[i];
            }
        }
        held |= (cells * 0x108421u) & rows[j];
    }
    return held;
}

// Whether water of tile (x, y), whose last flags are `flags`, lies at its page's border with a
// neighbouring page that cannot step: the next step would move it there, and that page would
// not take it in.
fn water_beside_a_page_that_cannot_step(x: u32, y: u32, flags: u32) -> bool {
    if (flags & TILE_WET) == 0u {
        return false;
    }
    let a = pages_around(x, y / PAGE_TILES);
    let last = vec2<i32>(i32(tiles.tiles.x), i32(pages_high())) - vec2<i32>(1);
    // For each neighbour (dx, dy): the tile_flags_seen bit (before TILE_WET_NORTH) of the page's
    // border towards it.
    let towards = array<u32, 9>(128u, 1u, 16u, 8u, 0u, 2u, 64u, 4u, 32u);
    var beside = false;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let n = a.page + vec2<i32>(dx, dy);
            let bit = towards[(dy + 1) * 3 + dx + 1] * TILE_WET_NORTH;
            let inside = all(n >= vec2<i32>(0)) && all(n <= last);
            beside = beside || ((flags & bit) != 0u && inside && !steppable_around(a, dx, dy));
        }
    }
    return beside;
}

// Bits of a column's flags while the step walks it, never stored: a wet cell on the page's first
// row, on its last (tile_flags_seen turns them into the edges').
const WET_TOP_ROW: u32 = 0x40000000u;
const WET_BOTTOM_ROW: u32 = 0x80000000u;

// Cells from a page's border within which water may reach the neighbour beyond it within the
// host's margin (World::margin_steps): half a page.
fn near_band() -> u32 {
    return PAGE_SIDE / 2u;
}

// The flags a cell of the workgroup's page on row y with `depth` quanta after the step adds to
// its column's: TILE_WET when wet, and whether it lies on the page's first or last row.
fn wet_mark(y: i32, depth: i32) -> u32 {
    let top = select(0u, WET_TOP_ROW, y == page_origin.y);
    let bottom = select(0u, WET_BOTTOM_ROW, y == page_origin.y + i32(PAGE_SIDE) - 1);
    return select(0u, TILE_WET | top | bottom, depth > 0);
}

// A column's flags as its tile stores them, for the page's column x: TILE_WET, and the
// neighbours of its page it holds water beside, from TILE_WET_NORTH on: bits N, E, S, W for the
// page's edge rows and columns, then NE, SE, SW, NW for its corner cells. The next step may move
// that water into those pages. Water on the first row lies beside the page to the north, in the
// last column beside the one to the east, and so on; a column of the page's first or last holds
// all its wet cells beside the page to the west or east. From TILE_NEAR_NORTH on, the same for
// water within half a page of those borders (a corner: of both): the host gives a neighbour water
// fields only when its bit is set, and runs fewer steps past the flags it saw than the water
// needs to cross half a page (World::margin_steps). Along y they come from where `tile` lies in
// its page, not from each cell: a tile's rows all lie within half a page of the first row, or of
// the last, when its rows divide half a page (14 and 28 do); one that straddles the middle says
// both, which gives a neighbour water fields it may not need and never one too few.
fn tile_flags_seen(flags: u32, x: i32, tile: u32) -> u32 {
    let last = i32(PAGE_SIDE) - 1;
    let within = x - page_origin.x;
    let wet = (flags & TILE_WET) != 0u;
    let n = (flags & WET_TOP_ROW) != 0u;
    let s = (flags & WET_BOTTOM_ROW) != 0u;
    let e = wet && within == last;
    let w = wet && within == 0;
    var bits = select(0u, 1u, n) | select(0u, 2u, e) | select(0u, 4u, s) | select(0u, 8u, w);
    bits |= select(0u, 16u, n && e) | select(0u, 32u, s && e) | select(0u, 64u, s && w) | select(0u, 128u, n && w);
    let first_row = (tile / tiles.tiles.x) % PAGE_TILES * TILE_ROWS;
    let near_n = wet && first_row < near_band();
    let near_s = wet && first_row + TILE_ROWS > PAGE_SIDE - near_band();
    let near_e = wet && u32(within) >= PAGE_SIDE - near_band();
    let near_w = wet && u32(within) < near_band();
    var near = select(0u, 1u, near_n) | select(0u, 2u, near_e) | select(0u, 4u, near_s) | select(0u, 8u, near_w);
    near |= select(0u, 16u, near_n && near_e) | select(0u, 32u, near_s && near_e) | select(0u, 64u, near_s && near_w) | select(0u, 128u, near_n && near_w);
    return (flags & ~(WET_TOP_ROW | WET_BOTTOM_ROW)) | (bits * TILE_WET_NORTH) | (near * TILE_NEAR_NORTH);
}
