// The far water of a world in pages (backend/gpu/world.rs `World::begin_coarse`, world_water.rs
// `WorldWater::read_coarse_window`): one workgroup a block of `stride × stride` cells of a
// camera-centred area that the host lists (those near water), summing what the block's cells show (snapshot.wgsl's `cell_texels`, read
// from the pages) into the sums the host turns into one coarse texel. Compiled with common.wgsl,
// texels_paged.wgsl (the pages' layout and `cell_texels`' reads of them) and snapshot.wgsl in
// front.

// Invocations a block: backend/gpu/world.rs COARSE_WORKGROUP.
const COARSE_WORKGROUP: u32 = 64u;
// Sums a block: backend/gpu/world.rs COARSE_SUMS.
const COARSE_SUMS: u32 = 8u;

// The blocks to sum (row-major indices over `coarse.blocks`): those within a cell of a page with
// water fields, listed by the host; every other block of the area is dry and still (its pages
// hold zeros or nothing), so it is never dispatched.
@group(3) @binding(3) var<storage, read> coarse_listed: array<u32>;
// Per listed block, in the list's order: two vectors, (Σ surface over wet cells, Σ terrain over
// wet cells, wet cells, Σ depth) and (Σ depth·velocity x, Σ depth·velocity z, Σ depth·speed,
// Σ discharge), m and m/s as their texels.
@group(3) @binding(2) var<storage, read_write> coarse_sums: array<vec4<f32>>;

var<workgroup> coarse_partial: array<array<f32, COARSE_WORKGROUP>, COARSE_SUMS>;

// Most workgroups a dispatch has along x; the listed blocks run as rows of this many.
const COARSE_ROW: u32 = 65535u;

// Workgroup (x, y) sums listed block y·COARSE_ROW + x.
@compute @workgroup_size(COARSE_WORKGROUP)
fn coarse_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.y * COARSE_ROW + wid.x;
    if slot >= coarse.listed {
        return;
    }
    let block = coarse_listed[slot];
    let first = coarse.origin + vec2<u32>(block % coarse.blocks.x, block / coarse.blocks.x) * coarse.stride;
    let last = min(first + vec2<u32>(coarse.stride), vec2<u32>(c.width, c.height));
    var sums = array<f32, COARSE_SUMS>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let extent = last - first;
    for (var k = lid; k < extent.x * extent.y; k += COARSE_WORKGROUP) {
        let t = cell_texels(vec2<i32>(first + vec2<u32>(k % extent.x, k / extent.x)));
        if t.height.w > 0.5 {
            sums[0] += t.height.x;
            sums[1] += t.height.z;
            sums[2] += 1.0;
        }
        let d = t.height.y;
        sums[3] += d;
        sums[4] += d * t.flow.x;
        sums[5] += d * t.flow.y;
        sums[6] += d * t.flow.z;
        sums[7] += t.flow.w;
    }
    for (var s = 0u; s < COARSE_SUMS; s++) {
        coarse_partial[s][lid] = sums[s];
    }
    workgroupBarrier();
    for (var half = COARSE_WORKGROUP / 2u; half > 0u; half >>= 1u) {
        if lid < half {
            for (var s = 0u; s < COARSE_SUMS; s++) {
                coarse_partial[s][lid] += coarse_partial[s][lid + half];
            }
        }
        workgroupBarrier();
    }
    if lid == 0u {
        coarse_sums[2u * slot] = vec4<f32>(coarse_partial[0][0], coarse_partial[1][0], coarse_partial[2][0], coarse_partial[3][0]);
        coarse_sums[2u * slot + 1u] = vec4<f32>(coarse_partial[4][0], coarse_partial[5][0], coarse_partial[6][0], coarse_partial[7][0]);
    }
}
