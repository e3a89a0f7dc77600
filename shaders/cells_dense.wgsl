// Where a cell's fields lie in the step's buffers, for a grid stored densely (row-major, one
// grid of today's sizes): the step and the plan of the sleeping tiles are compiled with this
// fragment, or with cells_paged.wgsl for a world stored in pages (backend/gpu/world.rs).

const PAGED: bool = false;

fn cell_slot(cell: vec2<i32>) -> u32 {
    return u32(cell.y) * c.width + u32(cell.x);
}

// Every tile of a dense grid holds its fields, so every tile may step.
fn tile_steppable(x: u32, y: u32) -> bool {
    return true;
}

fn wet_edges(cell: vec2<i32>) -> u32 {
    return 0u;
}
