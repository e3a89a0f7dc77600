// The tiles whose water changed, for a multiplayer server's capture (backend/gpu/tile_changes.rs,
// sync/session.rs): one workgroup per sync tile compares the copy of depth and pipes that holds
// the state with the copy the last capture took, bit for bit. A tile that differs is taken into
// the capture's copy and gets a record: its total quanta, its change since that copy (the sum of
// |Δ depth|) and its hash (`tile_hash` of sync/mod.rs, which the protocol's checksums carry), so
// the server numbers its new version without reading its water. Its cells are read back (into a
// slot of `report`) when the server asks for them, tiles in `wanted` (the ones it will send next)
// whether they differ or not, and with `read_every_change` every tile that differs; and when the
// tile did not differ at the last comparison (`differed`): a tile that starts to change (an
// edit on still water, a front arriving) goes out at the next poll, as when every changed tile
// was read, while a tile that changes at every comparison (a river) is read only when wanted.
// Everything the host reads is in `report`, laid out as it is staged (`TileChanges::from_staged`),
// so that one copy brings it to the staging buffer: a command fewer or four a sync, which on a
// fast GPU is most of the sync's cost. Comparing the bits, not trusting which tiles stepped, is what makes the set
// exact: a tile changed by an edit, a body, cooling or a neighbour's flow while its own tile
// slept differs all the same.

struct TileChangeParams {
    // Grid cells along x and y.
    width: u32,
    height: u32,
    // Cells along each side of a sync tile, and tiles along x.
    tile_size: u32,
    tiles_x: u32,
    // Most tiles read (slots).
    limit: u32,
    // 1: every tile that differs is read too (within the slots), not only the wanted ones.
    read_every_change: u32,
    // Tiles of the grid (the records' room).
    tile_count: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> changes: TileChangeParams;
// The copy of depth and pipes that holds the state.
@group(0) @binding(1) var<storage, read> depth: array<i32>;
@group(0) @binding(2) var<storage, read> flow: array<vec4<f32>>;
// The water as the last capture took it.
@group(0) @binding(3) var<storage, read_write> captured_depth: array<i32>;
@group(0) @binding(4) var<storage, read_write> captured_flow: array<vec4<f32>>;
// What the host reads, in words: 0, the tiles that differ (records); 1, the tiles to read (also
// those past the limit, which were not read); 2 + s, the tile of slot s (`limit` of them); then
// per tile that differs TILE_RECORD_WORDS words (the tile, total quanta as the low 16 bits' sum
// and the high bits' sum, signed, the hash, the change as low and high sums), room for every
// tile; then per slot tile_size² depths (row-major over the tile; an edge tile uses the first of
// them); then per slot tile_size² flows, four words a cell.
@group(0) @binding(5) var<storage, read_write> report: array<atomic<u32>>;
// One bit per tile: the server wants its cells read.
@group(0) @binding(6) var<storage, read> wanted: array<u32>;
// Per tile, 1 when it differed at the last comparison.
@group(0) @binding(7) var<storage, read_write> differed: array<u32>;

const TILE_CHANGES_WORKGROUP: u32 = 64u;
const TILE_RECORD_WORDS: u32 = 6u;
const NO_SLOT: u32 = 0xffffffffu;

var<workgroup> tile_differs: atomic<u32>;
var<workgroup> tile_slot: u32;
var<workgroup> tile_changed: u32;
var<workgroup> total_low: atomic<u32>;
var<workgroup> total_high: atomic<i32>;
var<workgroup> change_low: atomic<u32>;
var<workgroup> change_high: atomic<u32>;
var<workgroup> hash_sum: atomic<u32>;

// Value `v` at place `k` of a tile's values (planes of depths, then the four flows' bits): the
// tile's hash is the wrapping sum of these, so the cells can be summed in any order, and a
// changed value always changes it (a bijection of v for each k).
fn hash_term(k: u32, v: u32) -> u32 {
    return lowbias32(v ^ lowbias32(k ^ 0x9e3779b9u));
}

// Workgroup (x, y) for sync tile (x, y).
@compute @workgroup_size(TILE_CHANGES_WORKGROUP)
fn compare_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let x0 = wid.x * changes.tile_size;
    let y0 = wid.y * changes.tile_size;
    let w = min(changes.tile_size, changes.width - x0);
    let h = min(changes.tile_size, changes.height - y0);
    let cells = w * h;
    let tile = wid.y * changes.tiles_x + wid.x;
    if lid == 0u {
        atomicStore(&tile_differs, 0u);
        atomicStore(&total_low, 0u);
        atomicStore(&total_high, 0);
        atomicStore(&change_low, 0u);
        atomicStore(&change_high, 0u);
        atomicStore(&hash_sum, 0u);
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
        let differs = atomicLoad(&tile_differs) != 0u;
        let is_wanted = (wanted[tile / 32u] >> (tile % 32u) & 1u) != 0u;
        let starts = differs && differed[tile] == 0u;
        differed[tile] = u32(differs);
        var slot = NO_SLOT;
        if is_wanted || (differs && (changes.read_every_change != 0u || starts)) {
            let n = atomicAdd(&report[1], 1u);
            if n < changes.limit {
                slot = n;
                atomicStore(&report[2u + n], tile);
            }
        }
        tile_slot = slot;
        tile_changed = u32(differs);
    }
    let slot = workgroupUniformLoad(&tile_slot);
    let differs = workgroupUniformLoad(&tile_changed) != 0u;
    if !differs && slot == NO_SLOT {
        return;
    }
    let stride = changes.tile_size * changes.tile_size;
    let depth_at = 2u + changes.limit + TILE_RECORD_WORDS * changes.tile_count + slot * stride;
    let flow_at = 2u + changes.limit + TILE_RECORD_WORDS * changes.tile_count + changes.limit * stride + 4u * slot * stride;
    var low = 0u;
    var high = 0;
    var moved_low = 0u;
    var moved_high = 0u;
    var hash = 0u;
    for (var i = lid; i < cells; i += TILE_CHANGES_WORKGROUP) {
        let cell = (y0 + i / w) * changes.width + x0 + i % w;
        let d = depth[cell];
        let f = flow[cell];
        if differs {
            low += u32(d) & 0xffffu;
            high += d >> 16u;
            let moved = u32(abs(d - captured_depth[cell]));
            moved_low += moved & 0xffffu;
            moved_high += moved >> 16u;
            let bits = bitcast<vec4<u32>>(f);
            hash += hash_term(i, u32(d)) + hash_term(cells + i, bits.x) + hash_term(2u * cells + i, bits.y) + hash_term(3u * cells + i, bits.z) + hash_term(4u * cells + i, bits.w);
            captured_depth[cell] = d;
            captured_flow[cell] = f;
        }
        if slot != NO_SLOT {
            atomicStore(&report[depth_at + i], u32(d));
            let bits = bitcast<vec4<u32>>(f);
            atomicStore(&report[flow_at + 4u * i], bits.x);
            atomicStore(&report[flow_at + 4u * i + 1u], bits.y);
            atomicStore(&report[flow_at + 4u * i + 2u], bits.z);
            atomicStore(&report[flow_at + 4u * i + 3u], bits.w);
        }
    }
    if !differs {
        return;
    }
    atomicAdd(&total_low, low);
    atomicAdd(&total_high, high);
    atomicAdd(&change_low, moved_low);
    atomicAdd(&change_high, moved_high);
    atomicAdd(&hash_sum, hash);
    workgroupBarrier();
    if lid == 0u {
        let r = 2u + changes.limit + atomicAdd(&report[0], 1u) * TILE_RECORD_WORDS;
        atomicStore(&report[r], tile);
        atomicStore(&report[r + 1u], atomicLoad(&total_low));
        atomicStore(&report[r + 2u], bitcast<u32>(atomicLoad(&total_high)));
        atomicStore(&report[r + 3u], atomicLoad(&hash_sum));
        atomicStore(&report[r + 4u], atomicLoad(&change_low));
        atomicStore(&report[r + 5u], atomicLoad(&change_high));
    }
}
