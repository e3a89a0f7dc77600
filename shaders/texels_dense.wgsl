// How snapshot.wgsl's `cell_texels` reads a cell's fields on a dense grid: row-major buffers of
// the grid's size (the snapshot's bindings). A world's pages read them through world_coarse.wgsl
// instead.

fn texel_terrain(cell: vec2<i32>) -> f32 {
    return terrain[u32(cell.y) * c.width + u32(cell.x)];
}

fn texel_quanta(cell: vec2<i32>) -> i32 {
    return depth[u32(cell.y) * c.width + u32(cell.x)];
}

fn texel_flux(cell: vec2<i32>) -> vec4<f32> {
    return flux[u32(cell.y) * c.width + u32(cell.x)];
}
