// The detail waves of a world in pages (backend/gpu/world/detail.rs, world_water/detail.rs): the
// flow region under the detail window gathered from the pages into row-major buffers of the
// region's size, in the world's frame after its edits and before its first step. The dense grid's
// detail.wgsl then runs unchanged over those buffers as its flow grid (group 0), so a world's
// waves and a dense grid's come from one kernel. Compiled with common.wgsl, texels_paged.wgsl
// (the pages' layout: each cell read through its page's slots, as the far water reads them) and
// snapshot.wgsl (the fields' bindings) in front.
//
// `coarse` (texels_paged.wgsl's area) names the region: `origin` its first cell, `blocks` its
// cells along x and y (a block is one cell). A page without water fields gives dry, still cells;
// a page without terrain on the device gives terrain 0, which the detail kernel never weighs: it
// reads terrain only for the face of a pipe, and every pipe touching such a cell carries nothing
// (texels_paged.wgsl says why).

@group(3) @binding(2) var<storage, read_write> region_terrain: array<f32>;
@group(3) @binding(3) var<storage, read_write> region_quanta: array<i32>;
@group(3) @binding(4) var<storage, read_write> region_flux: array<vec4<f32>>;

// Side of the gather's square workgroup: backend/gpu/world/detail.rs REGION_WORKGROUP.
const REGION_WG: u32 = 8u;

@compute @workgroup_size(REGION_WG, REGION_WG)
fn gather_detail_region(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= coarse.blocks.x || gid.y >= coarse.blocks.y {
        return;
    }
    let cell = vec2<i32>(coarse.origin + gid.xy);
    let i = gid.y * coarse.blocks.x + gid.x;
    region_terrain[i] = texel_terrain(cell);
    region_quanta[i] = texel_quanta(cell);
    region_flux[i] = texel_flux(cell);
}
