// How snapshot.wgsl's `cell_texels` reads a cell's fields in a world stored in pages
// (backend/gpu/world.rs, cells_paged.wgsl for the step): through each page's slots, with the
// area the pass covers. The alternative to texels_dense.wgsl, defining the same functions.
//
// A page without water fields reads as dry, still cells (its water slot is the zero slot); a
// page without terrain on the device has none to read, and its cells are dry with no pipe of
// theirs carrying anything, so what `texel_terrain` returns for them (0) moves nothing a sum of
// world_coarse.wgsl holds: the host takes their ground from its own copy of the terrain.

// backend/gpu/world.rs NO_PAGE: the terrain slot of a page holding nothing on the device.
const COARSE_NO_PAGE: u32 = 0xffffffffu;
// backend/gpu/world.rs CoarseParams, byte for byte.
struct CoarseParams {
    // First cell of the area (a multiple of `stride`).
    origin: vec2<u32>,
    // Blocks along x and y.
    blocks: vec2<u32>,
    stride: u32,
    page_side: u32,
    // Pages along x (the page of cell p is p / page_side).
    pages_x: u32,
    // Blocks in `coarse_listed` (world_coarse.wgsl).
    listed: u32,
}

// Each page's (terrain slot, water slot), as the step's `page_slots`.
@group(3) @binding(0) var<storage, read> coarse_page_slots: array<vec2<u32>>;
@group(3) @binding(1) var<uniform> coarse: CoarseParams;

// Cell's page's slots, and its index within the page.
fn coarse_slots(cell: vec2<i32>) -> vec3<u32> {
    let page = vec2<u32>(cell) / coarse.page_side;
    let within = vec2<u32>(cell) - page * coarse.page_side;
    let slots = coarse_page_slots[page.y * coarse.pages_x + page.x];
    return vec3<u32>(slots, within.y * coarse.page_side + within.x);
}

fn texel_terrain(cell: vec2<i32>) -> f32 {
    let s = coarse_slots(cell);
    if s.x == COARSE_NO_PAGE {
        return 0.0;
    }
    return terrain[s.x * coarse.page_side * coarse.page_side + s.z];
}

fn texel_quanta(cell: vec2<i32>) -> i32 {
    let s = coarse_slots(cell);
    return depth[s.y * coarse.page_side * coarse.page_side + s.z];
}

fn texel_flux(cell: vec2<i32>) -> vec4<f32> {
    let s = coarse_slots(cell);
    return flux[s.y * coarse.page_side * coarse.page_side + s.z];
}
