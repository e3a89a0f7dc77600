// The snapshot that queries and textures read, computed where the fields live: height and flow
// texels per cell (state.rs `State::snapshot`, with pipes.rs `discharge` and `velocity`), and the
// reductions that go with them — total water (64-bit, exact) and the largest depth and speed for
// the CFL estimate of the next step.

@group(0) @binding(0) var<uniform> c: StepConstants;
@group(0) @binding(1) var<storage, read> terrain: array<f32>;
@group(0) @binding(2) var<storage, read> depth: array<i32>;
@group(0) @binding(3) var<storage, read> flux: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> height_texels: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> flow_texels: array<vec4<f32>>;
// [total low, total high, max speed bits, max depth bits]; cleared before the pass.
@group(0) @binding(6) var<storage, read_write> stats: array<atomic<u32>, 4>;

const SNAPSHOT_WG: u32 = 16u;
const SNAPSHOT_CELLS: u32 = 256u;

var<workgroup> sum_lo: array<u32, SNAPSHOT_CELLS>;
var<workgroup> sum_hi: array<u32, SNAPSHOT_CELLS>;
var<workgroup> top_speed: array<f32, SNAPSHOT_CELLS>;
var<workgroup> top_depth: array<f32, SNAPSHOT_CELLS>;

// pipes.rs NEIGHBOUR_OFFSETS: E, S, SE, SW, then W, N, NW, NE.
fn neighbour_offset(n: u32) -> vec2<i32> {
    if n < 4u {
        return pipe_offset(n);
    }
    return -pipe_offset(n - 4u);
}

@compute @workgroup_size(SNAPSHOT_WG, SNAPSHOT_WG)
fn texels(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var quanta = 0u;
    var speed = 0.0;
    var d = 0.0;
    if gid.x < c.width && gid.y < c.height {
        let cell = vec2<i32>(gid.xy);
        let i = gid.y * c.width + gid.x;
        let stored = depth[i];
        quanta = u32(max(stored, 0));
        d = f32(stored) * DEPTH_QUANTUM;
        let b = terrain[i];
        // pipes.rs discharge and centre_velocity over State::outgoing_fluxes and
        // State::face_depths.
        let own = flux[i];
        var q = vec2<f32>(0.0);
        var v = vec2<f32>(0.0);
        for (var n = 0u; n < 8u; n++) {
            var f = 0.0;
            var face = 0.0;
            let o = cell + neighbour_offset(n);
            if o.x >= 0 && o.y >= 0 && o.x < i32(c.width) && o.y < i32(c.height) {
                let j = u32(o.y) * c.width + u32(o.x);
                if n < 4u {
                    f = own[n];
                } else {
                    f = -flux[j][n - 4u];
                }
                face = face_depth(b + d, b, terrain[j] + f32(depth[j]) * DEPTH_QUANTUM, terrain[j]);
            }
            let off = vec2<f32>(neighbour_offset(n));
            q.x += f * off.x;
            q.y += f * off.y;
            let per_depth = f * inverse_depth(face);
            v.x += per_depth * off.x;
            v.y += per_depth * off.y;
        }
        q *= 0.5 / c.cell_size;
        v *= 0.5 / c.cell_size;
        speed = length(v);
        height_texels[i] = vec4<f32>(b + d, d, b, select(0.0, 1.0, d > WET_DEPTH));
        flow_texels[i] = vec4<f32>(v, speed, length(q));
    }
    sum_lo[lid] = quanta;
    sum_hi[lid] = 0u;
    top_speed[lid] = speed;
    top_depth[lid] = d;
    workgroupBarrier();
    for (var stride = SNAPSHOT_CELLS / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            let lo = sum_lo[lid] + sum_lo[lid + stride];
            let carry = select(0u, 1u, lo < sum_lo[lid]);
            sum_hi[lid] = sum_hi[lid] + sum_hi[lid + stride] + carry;
            sum_lo[lid] = lo;
            top_speed[lid] = max(top_speed[lid], top_speed[lid + stride]);
            top_depth[lid] = max(top_depth[lid], top_depth[lid + stride]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let old = atomicAdd(&stats[0], sum_lo[0]);
        let carry = select(0u, 1u, old > 0xffffffffu - sum_lo[0]);
        atomicAdd(&stats[1], sum_hi[0] + carry);
        // Non-negative floats order like their bits.
        atomicMax(&stats[2], bitcast<u32>(top_speed[0]));
        atomicMax(&stats[3], bitcast<u32>(top_depth[0]));
    }
}
