// The tiles whose water changed, for a multiplayer server's capture (backend/gpu/tile_changes.rs,
// sync/session.rs): one workgroup per sync tile compares the copy of depth and pipes that holds
// the state with the copy the last capture took, bit for bit, and a tile that differs takes a
// slot: its cells go to the slot's place in `read_depth` / `read_flow` (what the host reads
// back) and into the capture's copy. Past `limit` slots a tile that differs keeps its old copy,
// so the next capture finds it again. Comparing the bits, not trusting which tiles stepped, is
// what makes the set exact: a tile changed by an edit, a body, cooling or a neighbour's flow
// while its own tile slept differs all the same.

struct TileChangeParams {
    // Grid cells along x and y.
    width: u32,
    height: u32,
    // Cells along each side of a sync tile, and tiles along x.
    tile_size: u32,
    tiles_x: u32,
    // Most tiles read (slots).
    limit: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> changes: TileChangeParams;
// The copy of depth and pipes that holds the state.
@group(0) @binding(1) var<storage, read> depth: array<i32>;
@group(0) @binding(2) var<storage, read> flow: array<vec4<f32>>;
// The water as the last capture took it.
@group(0) @binding(3) var<storage, read_write> captured_depth: array<i32>;
@group(0) @binding(4) var<storage, read_write> captured_flow: array<vec4<f32>>;
// Word 0: the tiles that differ (also those past the limit); word 1 + s: the tile of slot s.
@group(0) @binding(5) var<storage, read_write> found: array<atomic<u32>>;
// Per slot, tile_size² cells (row-major over the tile; an edge tile uses the first of them).
@group(0) @binding(6) var<storage, read_write> read_depth: array<i32>;
@group(0) @binding(7) var<storage, read_write> read_flow: array<vec4<f32>>;

const TILE_CHANGES_WORKGROUP: u32 = 64u;
const NO_SLOT: u32 = 0xffffffffu;

var<workgroup> tile_differs: atomic<u32>;
var<workgroup> tile_slot: u32;

// Workgroup (x, y) for sync tile (x, y).
@compute @workgroup_size(TILE_CHANGES_WORKGROUP)
fn compare_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let x0 = wid.x * changes.tile_size;
    let y0 = wid.y * changes.tile_size;
    let w = min(changes.tile_size, changes.width - x0);
    let h = min(changes.tile_size, changes.height - y0);
    let cells = w * h;
    if lid == 0u {
        atomicStore(&tile_differs, 0u);
    }
    workgroupBarrier();
    var seen = false;
    for (var i = lid; i < cells; i += TILE_CHANGES_WORKGROUP) {
        let cell = (y0 + i / w) * changes.width + x0 + i % w;
        // The flows' bits: -0.0 and 0.0 are different water to the next step's bits.
        seen = seen || depth[cell] != captured_depth[cell] || any(bitcast<vec4<u32>>(flow[cell]) != bitcast<vec4<u32>>(captured_flow[cell]));
    }
    if seen {
        atomicOr(&tile_differs, 1u);
    }
    workgroupBarrier();
    if lid == 0u {
        var slot = NO_SLOT;
        if atomicLoad(&tile_differs) != 0u {
            let n = atomicAdd(&found[0], 1u);
            if n < changes.limit {
                slot = n;
                atomicStore(&found[1u + n], wid.y * changes.tiles_x + wid.x);
            }
        }
        tile_slot = slot;
    }
    let slot = workgroupUniformLoad(&tile_slot);
    if slot == NO_SLOT {
        return;
    }
    let at = slot * changes.tile_size * changes.tile_size;
    for (var i = lid; i < cells; i += TILE_CHANGES_WORKGROUP) {
        let cell = (y0 + i / w) * changes.width + x0 + i % w;
        let d = depth[cell];
        let f = flow[cell];
        read_depth[at + i] = d;
        read_flow[at + i] = f;
        captured_depth[cell] = d;
        captured_flow[cell] = f;
    }
}
