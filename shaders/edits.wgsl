// Edits batched on the host and applied on the device: water added or removed per cell (user
// edits, and the per-step forcing of sources and drains), and terrain raised or dug per cell.
// A list may name a cell more than once. The host lists each cell's entries side by side in the
// order they were made (backend/pending.rs `water_by_cell`, `terrain_by_cell`): the invocation
// that meets the first entry of a cell applies that cell's whole run, one entry after the other
// as the CPU applies the calls, and no other invocation writes the cell. So a cell ends where the
// CPU ends it and the ledger counts what the CPU counts, whichever order the device runs the
// invocations in (each entry clamps, so an order left to the device would change both).

struct WaterEdits {
    count: u32,
    _pad: u32,
    // (cell index, quanta as i32 bits): positive adds up to the maximum depth, negative
    // removes no more than the cell holds.
    items: array<vec2<u32>>,
}

@group(0) @binding(0) var<storage, read_write> terrain_bits: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> depth: array<atomic<i32>>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, COUNTER_WORDS>;
@group(0) @binding(3) var<storage, read> water: WaterEdits;
@group(0) @binding(4) var<storage, read> ground: TerrainEdits;

const EDIT_WORKGROUP: u32 = 64u;

// Entries strided over the invocations (lists may outnumber one dispatch); the head of each
// cell's run applies the run, clamping like CPU `apply_water` and counting what really changed.
@compute @workgroup_size(EDIT_WORKGROUP)
fn apply_water(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < water.count; e += groups.x * EDIT_WORKGROUP) {
        let cell = water.items[e].x;
        if (e > 0u && water.items[e - 1u].x == cell) || cell >= arrayLength(&depth) {
            continue;
        }
        var d = atomicLoad(&depth[cell]);
        for (var k = e; k < water.count && water.items[k].x == cell; k++) {
            let next = add_depth_clamped(d, bitcast<i32>(water.items[k].y));
            if next > d {
                count(COUNTER_ADDED, u32(next - d));
            } else {
                count(COUNTER_REMOVED, u32(d - next));
            }
            d = next;
        }
        atomicStore(&depth[cell], d);
    }
}

// Entries strided over the invocations; the head of each cell's run applies the run: terrain +=
// delta, clamped to +-MAX_TERRAIN_ABS after each entry as CPU `edit_terrain` does; depth is kept.
@compute @workgroup_size(EDIT_WORKGROUP)
fn apply_terrain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < ground.count; e += groups.x * EDIT_WORKGROUP) {
        let cell = ground.items[e].x;
        if (e > 0u && ground.items[e - 1u].x == cell) || cell >= arrayLength(&terrain_bits) {
            continue;
        }
        var b = bitcast<f32>(atomicLoad(&terrain_bits[cell]));
        for (var k = e; k < ground.count && ground.items[k].x == cell; k++) {
            b = clamp(b + bitcast<f32>(ground.items[k].y), -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
        }
        atomicStore(&terrain_bits[cell], bitcast<u32>(b));
    }
}
