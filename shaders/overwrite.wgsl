// Cells set to the water another simulation holds: a multiplayer client taking the server's
// tiles (simulation/overwrite.rs, backend/gpu_host.rs `GpuHost::overwrites`). Each entry's depth
// and four pipe flows go into the copy that holds the state, and the depth changed is counted
// as water added or removed, as the CPU's `write_overwrites` books it. The flows travel and are
// stored as their bits, never as floats: a float move may flush a subnormal flow or rewrite a
// -0.0, and the next step must start from the server's bits. The host lists each cell once (the
// last entry of a cell wins, as on the CPU), so no two invocations write one cell and the count
// is the CPU's whatever order the device runs them in.

struct CellOverwrite {
    cell: u32,
    depth: i32,
    _pad0: u32,
    _pad1: u32,
    // Flows of the E, S, SE and SW pipes, as f32 bits.
    flow_bits: vec4<u32>,
}

struct Overwrites {
    count: u32,
    // The host's list header (backend/pending.rs `list_bytes`) is as long as an entry.
    _pad: array<u32, 7>,
    items: array<CellOverwrite>,
}

@group(0) @binding(0) var<storage, read_write> depth: array<i32>;
// The pipes' flows of the same copy, read as their bits.
@group(0) @binding(1) var<storage, read_write> flux: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, COUNTER_WORDS>;
@group(0) @binding(3) var<storage, read> overwrites: Overwrites;

const OVERWRITE_WORKGROUP: u32 = 64u;

// Entries strided over the invocations (a keyframe lists every cell of the grid).
@compute @workgroup_size(OVERWRITE_WORKGROUP)
fn overwrite_cells(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < overwrites.count; e += groups.x * OVERWRITE_WORKGROUP) {
        let o = overwrites.items[e];
        if o.cell >= arrayLength(&depth) {
            continue;
        }
        let before = depth[o.cell];
        if o.depth > before {
            count(COUNTER_ADDED, u32(o.depth - before));
        } else {
            count(COUNTER_REMOVED, u32(before - o.depth));
        }
        depth[o.cell] = o.depth;
        flux[o.cell] = o.flow_bits;
    }
}
