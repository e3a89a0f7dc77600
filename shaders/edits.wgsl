// Edits batched on the host and applied on the device: water added or removed per cell (user
// edits, and the per-step forcing of sources and drains), and terrain raised or dug per cell.
// A list may name a cell more than once, so every change is an atomic read-modify-write:
// the result is that of applying the entries one after the other, in some order.

struct WaterEdits {
    count: u32,
    _pad: u32,
    // (cell index, quanta as i32 bits): positive adds up to the maximum depth, negative
    // removes no more than the cell holds.
    items: array<vec2<u32>>,
}

@group(0) @binding(0) var<storage, read_write> terrain_bits: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> depth: array<atomic<i32>>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, 8>;
@group(0) @binding(3) var<storage, read> water: WaterEdits;
@group(0) @binding(4) var<storage, read> ground: TerrainEdits;

const EDIT_WORKGROUP: u32 = 64u;

// Entries strided over the invocations (lists may outnumber one dispatch): clamps like CPU `apply_water` and counts what really changed.
@compute @workgroup_size(EDIT_WORKGROUP)
fn apply_water(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < water.count; e += groups.x * EDIT_WORKGROUP) {
        apply_water_item(water.items[e]);
    }
}

fn apply_water_item(item: vec2<u32>) {
    let cell = item.x;
    let quanta = bitcast<i32>(item.y);
    if cell >= arrayLength(&depth) {
        return;
    }
    var old = atomicLoad(&depth[cell]);
    loop {
        let next = add_depth_clamped(old, quanta);
        let r = atomicCompareExchangeWeak(&depth[cell], old, next);
        if r.exchanged {
            if next > old {
                count(COUNTER_ADDED, u32(next - old));
            } else {
                count(COUNTER_REMOVED, u32(old - next));
            }
            break;
        }
        old = r.old_value;
    }
}

// Entries strided over the invocations: terrain += delta, clamped to +-MAX_TERRAIN_ABS; depth is kept.
@compute @workgroup_size(EDIT_WORKGROUP)
fn apply_terrain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < ground.count; e += groups.x * EDIT_WORKGROUP) {
        apply_terrain_item(ground.items[e]);
    }
}

fn apply_terrain_item(item: vec2<u32>) {
    let cell = item.x;
    let delta = bitcast<f32>(item.y);
    if cell >= arrayLength(&terrain_bits) {
        return;
    }
    var old = atomicLoad(&terrain_bits[cell]);
    loop {
        let next = bitcast<u32>(clamp(bitcast<f32>(old) + delta, -MAX_TERRAIN_ABS, MAX_TERRAIN_ABS));
        let r = atomicCompareExchangeWeak(&terrain_bits[cell], old, next);
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}
