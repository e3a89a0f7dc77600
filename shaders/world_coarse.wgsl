// The far water of a world in pages (backend/gpu/world.rs `World::begin_coarse`, world_water.rs
// `WorldWater::read_coarse_window`): one workgroup a block of `stride × stride` cells of a
// camera-centred area, summing what the block's cells show (snapshot.wgsl's `cell_texels`, read
// from the pages) into the sums the host turns into one coarse texel. Compiled with common.wgsl,
// texels_paged.wgsl (the pages' layout and `cell_texels`' reads of them) and snapshot.wgsl in
// front.

// Invocations a block: backend/gpu/world.rs COARSE_WORKGROUP.
const COARSE_WORKGROUP: u32 = 64u;
// Sums a block: backend/gpu/world.rs COARSE_SUMS.
const COARSE_SUMS: u32 = 8u;

// Per block, row-major over `coarse.blocks`: two vectors, (Σ surface over wet cells, Σ terrain
// over wet cells, wet cells, Σ depth) and (Σ depth·velocity x, Σ depth·velocity z, Σ depth·speed,
// Σ discharge), m and m/s as their texels.
@group(3) @binding(2) var<storage, read_write> coarse_sums: array<vec4<f32>>;

var<workgroup> coarse_partial: array<array<f32, COARSE_WORKGROUP>, COARSE_SUMS>;
var<workgroup> coarse_block_watered: u32;

// Whether a page within one cell of the block's cells `first .. last` (exclusive) holds water
// fields: a cell's texels read its neighbours' pipes, so a block beside such a page may show flow.
fn block_watered(first: vec2<u32>, last: vec2<u32>) -> bool {
    let lo = (max(first, vec2<u32>(1u)) - vec2<u32>(1u)) / coarse.page_side;
    let hi = min(last, vec2<u32>(c.width - 1u, c.height - 1u)) / coarse.page_side;
    for (var py = lo.y; py <= hi.y; py++) {
        for (var px = lo.x; px <= hi.x; px++) {
            if coarse_page_slots[py * coarse.pages_x + px].y != COARSE_ZERO_SLOT {
                return true;
            }
        }
    }
    return false;
}

// Workgroup (x, y) sums block (x, y); a block with no water fields around it writes zeros.
@compute @workgroup_size(COARSE_WORKGROUP)
fn coarse_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let first = coarse.origin + wid.xy * coarse.stride;
    let last = min(first + vec2<u32>(coarse.stride), vec2<u32>(c.width, c.height));
    if lid == 0u {
        coarse_block_watered = select(0u, 1u, block_watered(first, last));
    }
    let watered = workgroupUniformLoad(&coarse_block_watered) != 0u;
    var sums = array<f32, COARSE_SUMS>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    if watered {
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
        let at = 2u * (wid.y * coarse.blocks.x + wid.x);
        coarse_sums[at] = vec4<f32>(coarse_partial[0][0], coarse_partial[1][0], coarse_partial[2][0], coarse_partial[3][0]);
        coarse_sums[at + 1u] = vec4<f32>(coarse_partial[4][0], coarse_partial[5][0], coarse_partial[6][0], coarse_partial[7][0]);
    }
}
