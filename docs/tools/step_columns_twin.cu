// A CUDA twin of shaders/step_columns.wgsl (and the parts of common.wgsl it uses), function for
// function and operation for operation, for what the Vulkan kernel cannot get on NVIDIA: Nsight
// Compute's counters, and launches whose occupancy CUDA chooses. Its mode is fixed to eight
// neighbours, depth-dependent pipes and no edge exchange, with advection a template parameter,
// and it is the kernel of ac9499d (rings of four rows in both modes). It is a measuring
// instrument, not a second implementation: the product runs the WGSL only.
//
// Inputs come from `cargo run --release -p pipewater-core --example twin_input -- SIDE ADVECTION
// STEPS DIR` (the benchmark lake at every cell moving, and the CPU backend's answer after STEPS
// steps). On a machine with CUDA:
//
//     nvcc -O3 -arch=sm_90 -std=c++17 -prec-div=false -prec-sqrt=false -o twin step_columns_twin.cu -lcuda
//     twin check DIR STEPS ADVECTION          # against the CPU: exact mass, depth within 1 mm
//     twin time DIR SIDE ADVECTION SECONDS [BAND_ROWS]
//     ncu --clock-control none --set full -k regex:step_columns --launch-skip 10 --launch-count 1 \
//         -o report twin time DIR SIDE ADVECTION 0 64 12
//
// Experiments: TWIN_CARVEOUT=percent (the multiprocessor's shared-memory carve-out),
// TWIN_DYN_SMEM=bytes (unused workgroup memory a workgroup, to take occupancy away),
// TWIN_SHUFFLE=1 (the tiles in a random order of warps of 32), TWIN_CUBIN=file (kernels from a
// cubin, e.g. one patched by hand), -DMINB=n (at most the registers n workgroups allow),
// -DSTRONG_STORES (stores as the Vulkan kernel's STG.E.STRONG.SM).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>
#include <string>
#include <cmath>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda.h>

#ifndef COLS
#define COLS 64
#endif
#define COLUMNS ((unsigned)COLS)
#define ROW (COLUMNS + 2u)
#define HALO 4u
#define DEPTH_QUANTUM 9.5367431640625e-7f
#define MAX_DEPTH_QUANTA 2147483647
#define LIMIT_MARGIN 0.99999904632568359375f
#define VELOCITY_DEPTH_FLOOR 0.001f
#define CLASS_ORTHOGONAL 0u
#define CLASS_DIAGONAL 3u
#define SETTLE_SPEED 1.0e-3f
#define TILE_CHANGED 1u
#define TILE_MOVING 2u
#define AWAKE_LIST_HEADER 4u
#define WINDOW_INSIDE 0x1ffffffu

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct StepConstants {
    unsigned width, height, eight_neighbours, depth_dependent;
    float dt, gravity, cell_size, flux_decay, pipe_depth, flux_to_quanta, film;
    unsigned advection;
    unsigned boundary[4];
    int inflow_quanta[4];
    float boundary_level[4];
    float widths[4];
    float inverse_widths[4];
    float conductance[4];
};
static_assert(sizeof(StepConstants) == 144, "layout");

struct TileParams {
    unsigned tiles_x, tiles_y, size_x, size_y, sleeping, change, snapshot_slices, padding;
};

__constant__ StepConstants c;
__constant__ TileParams tiles;

// ---- vec4 helpers -------------------------------------------------------------------------
struct f4 { float x, y, z, w; };
struct i4 { int x, y, z, w; };
struct u4 { unsigned x, y, z, w; };
struct b4 { bool x, y, z, w; };
__device__ __forceinline__ f4 mk(float a, float b, float cc, float d) { return f4{a, b, cc, d}; }
__device__ __forceinline__ f4 splat(float a) { return f4{a, a, a, a}; }
#define F4OP(op) \
  __device__ __forceinline__ f4 operator op(f4 a, f4 b) { return f4{a.x op b.x, a.y op b.y, a.z op b.z, a.w op b.w}; } \
  __device__ __forceinline__ f4 operator op(f4 a, float b) { return f4{a.x op b, a.y op b, a.z op b, a.w op b}; } \
  __device__ __forceinline__ f4 operator op(float a, f4 b) { return f4{a op b.x, a op b.y, a op b.z, a op b.w}; }
F4OP(+) F4OP(-) F4OP(*) F4OP(/)
#define F4CMP(name, op) \
  __device__ __forceinline__ b4 name(f4 a, f4 b) { return b4{a.x op b.x, a.y op b.y, a.z op b.z, a.w op b.w}; }
F4CMP(le4, <=) F4CMP(lt4, <) F4CMP(eq4, ==)
__device__ __forceinline__ b4 operator|(b4 a, b4 b) { return b4{a.x || b.x, a.y || b.y, a.z || b.z, a.w || b.w}; }
__device__ __forceinline__ b4 operator&(b4 a, b4 b) { return b4{a.x && b.x, a.y && b.y, a.z && b.z, a.w && b.w}; }
// WGSL select(f, t, cond)
__device__ __forceinline__ f4 sel4(f4 f, f4 t, b4 k) { return f4{k.x ? t.x : f.x, k.y ? t.y : f.y, k.z ? t.z : f.z, k.w ? t.w : f.w}; }
__device__ __forceinline__ f4 abs4(f4 a) { return f4{fabsf(a.x), fabsf(a.y), fabsf(a.z), fabsf(a.w)}; }
__device__ __forceinline__ f4 max4(f4 a, f4 b) { return f4{fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z), fmaxf(a.w, b.w)}; }
__device__ __forceinline__ f4 clamp4(f4 a, float lo, float hi) { return f4{fminf(fmaxf(a.x, lo), hi), fminf(fmaxf(a.y, lo), hi), fminf(fmaxf(a.z, lo), hi), fminf(fmaxf(a.w, lo), hi)}; }
__device__ __forceinline__ float lane(f4 a, unsigned p) { return p == 0 ? a.x : p == 1 ? a.y : p == 2 ? a.z : a.w; }
__device__ __forceinline__ f4 per_class(const float* v, u4 k) { return f4{v[k.x], v[k.y], v[k.z], v[k.w]}; }
// naga's saturating f32 -> i32
__device__ __forceinline__ int f2i(float f) { return (int)fminf(fmaxf(f, -2147483648.0f), 2147483520.0f); }
__device__ __forceinline__ unsigned f2u(float f) { return (unsigned)fminf(fmaxf(f, 0.0f), 4294967040.0f); }

struct int2v { int x, y; };

// ---- common.wgsl -----------------------------------------------------------------------------
__device__ __forceinline__ int2v pipe_offset(unsigned p) {
    switch (p) {
        case 0: return int2v{1, 0};
        case 1: return int2v{0, 1};
        case 2: return int2v{1, 1};
        default: return int2v{-1, 1};
    }
}
__device__ __forceinline__ bool cell_in_grid(int2v p) { return p.x >= 0 && p.y >= 0 && p.x < (int)c.width && p.y < (int)c.height; }
__device__ __forceinline__ float face_depth(float sa, float ba, float sb, float bb) { return fmaxf(fmaxf(sa, sb) - fmaxf(ba, bb), 0.0f); }
__device__ __forceinline__ f4 surface_drive(float bed_a, int depth_a, f4 bed_b, i4 depth_b) {
    f4 diff = (splat(bed_a) - bed_b) + f4{(float)(depth_a - depth_b.x), (float)(depth_a - depth_b.y), (float)(depth_a - depth_b.z), (float)(depth_a - depth_b.w)} * DEPTH_QUANTUM;
    return diff - clamp4(diff, -DEPTH_QUANTUM, DEPTH_QUANTUM);
}
__device__ __forceinline__ f4 film_drag(f4 f, f4 depth) {
    f4 sq = depth * depth;
    return sel4(f * (sq / (sq + c.film)), splat(0.0f), le4(depth, splat(0.0f)));
}
template <bool ADV> __device__ __forceinline__ bool keeps_flux() { return !ADV; }
template <bool ADV> __device__ __forceinline__ float flux_per_stored(float carried) { return keeps_flux<ADV>() ? 1.0f : carried; }
__device__ __forceinline__ float carried_depth(float bed_a, int depth_a, float bed_b, int depth_b) {
    return face_depth(bed_a + (float)depth_a * DEPTH_QUANTUM, bed_a, bed_b + (float)depth_b * DEPTH_QUANTUM, bed_b);
}
struct Upstream { f4 parts_first, parts_second, velocity_first, velocity_second; };
struct UpstreamSplit { int2v first, second; float px, py; };
__device__ __forceinline__ UpstreamSplit upstream_split(float qx, float qy) {
    int sx = qx < 0.0f ? -1 : 1;
    int sy = qy < 0.0f ? -1 : 1;
    float ax = fabsf(qx), ay = fabsf(qy);
    UpstreamSplit s;
    bool along_x = ax >= ay;
    s.first = along_x ? int2v{sx, 0} : int2v{0, sy};
    s.second = int2v{sx, sy};
    s.px = along_x ? ax - ay : ay - ax;
    s.py = along_x ? ay : ax;
    return s;
}
__device__ __forceinline__ f4 advect(f4 flow, u4 kind, float depth_a, f4 depth_b, const Upstream& up) {
    f4 held = 0.5f * (splat(depth_a) + depth_b) * c.cell_size;
    f4 w0 = c.dt * up.parts_first;
    f4 w1 = c.dt * up.parts_second;
    f4 total = w0 + w1;
    f4 scale = 1.0f / max4(total, held);
    f4 velocity = flow * per_class(c.inverse_widths, kind);
    f4 advected = velocity + scale * (w0 * (up.velocity_first - velocity) + w1 * (up.velocity_second - velocity));
    b4 still = le4(total, splat(0.0f)) | le4(held, splat(0.0f));
    return sel4(advected * per_class(c.widths, kind), flow, still);
}
struct Accelerated { f4 stored, flux; };
__device__ __forceinline__ b4 settles(u4 kind, f4 drive, f4 flux, f4 depth) {
    return eq4(drive, splat(0.0f)) & lt4(abs4(flux * c.flux_to_quanta), splat(1.0f)) & lt4(abs4(flux), SETTLE_SPEED * per_class(c.widths, kind) * depth);
}
template <bool ADV>
__device__ __forceinline__ Accelerated accelerate(u4 kind, f4 kept, float bed_a, int depth_a, f4 bed_b, i4 depth_b, f4 depth, const Upstream& up) {
    b4 dry = le4(depth, splat(0.0f));
    f4 drive = per_class(c.conductance, kind) * surface_drive(bed_a, depth_a, bed_b, depth_b);
    Accelerated r;
    if (keeps_flux<ADV>()) {
        f4 flux = film_drag(kept * c.flux_decay + drive * depth, depth);
        b4 rest = dry | settles(kind, drive, flux, depth);
        r.stored = sel4(flux, splat(0.0f), rest);
        r.flux = r.stored;
        return r;
    }
    f4 flow = kept;
    if (ADV) {
        flow = advect(flow, kind, (float)depth_a * DEPTH_QUANTUM, f4{(float)depth_b.x, (float)depth_b.y, (float)depth_b.z, (float)depth_b.w} * DEPTH_QUANTUM, up);
    }
    flow = flow * c.flux_decay + drive;
    flow = film_drag(flow, depth);
    f4 flux = flow * depth;
    b4 rest = dry | settles(kind, drive, flux, depth);
    r.stored = sel4(flow, splat(0.0f), rest);
    r.flux = sel4(flux, splat(0.0f), rest);
    return r;
}
__device__ __forceinline__ float2 discharge(float cell_size, const float* o) {
    float qx = (o[0] - o[4]) + ((o[2] + o[7]) - (o[6] + o[3]));
    float qy = (o[1] - o[5]) + ((o[2] + o[3]) - (o[7] + o[6]));
    float scale = 0.5f / cell_size;
    return make_float2(qx * scale, qy * scale);
}
__device__ __forceinline__ int pipe_quanta(float ftq, float f, float k) { return f2i(f * ftq * k); }
__device__ __forceinline__ float limit_factor(int dq, float requested) {
    float available = (float)dq * LIMIT_MARGIN;
    return requested <= available ? 1.0f : fminf(available / requested, 1.0f);
}
__device__ __forceinline__ float room_factor(int dq, float incoming) {
    float room = (float)(MAX_DEPTH_QUANTA - dq) * LIMIT_MARGIN;
    return incoming <= room ? 1.0f : fminf(room / incoming, 1.0f);
}
__device__ __forceinline__ float transfer_limit(float f, float2 owner, float2 neighbour) {
    return f > 0.0f ? fminf(owner.x, neighbour.y) : fminf(neighbour.x, owner.y);
}
__device__ __forceinline__ unsigned whole_quanta(const float* q, float edge, float k, int bound) {
    unsigned total = (unsigned)f2i(edge * k);
    for (unsigned n = 0; n < 8; n++) {
        if (total <= (unsigned)bound) total += (unsigned)f2i(q[n] * k);
    }
    return total;
}
__device__ __forceinline__ float checked_factor(float k, const float* q, float edge, int bound) {
    if (k >= 1.0f) return k;
    float checked = k;
    int tries = 0;
    while (whole_quanta(q, edge, checked, bound) > (unsigned)bound) {
        if (tries == 4) return 0.0f;
        checked *= LIMIT_MARGIN;
        tries++;
    }
    return checked;
}
__device__ __forceinline__ float2 cell_limits(int d, const float* leaving) {
    float out[8], into[8];
    for (unsigned n = 0; n < 8; n++) {
        out[n] = fabsf(fmaxf(leaving[n], 0.0f) * c.flux_to_quanta);
        into[n] = fabsf(fmaxf(-leaving[n], 0.0f) * c.flux_to_quanta);
    }
    float requested = ((out[0] + out[4]) + (out[1] + out[5])) + ((out[2] + out[6]) + (out[3] + out[7]));
    float incoming = ((into[0] + into[4]) + (into[1] + into[5])) + ((into[2] + into[6]) + (into[3] + into[7]));
    float edge = 0.0f;
    float outflow = checked_factor(limit_factor(d, requested), out, edge, d);
    float room = checked_factor(room_factor(d, incoming), into, 0.0f, MAX_DEPTH_QUANTA - d);
    return make_float2(outflow, room);
}

// ---- step_columns.wgsl -----------------------------------------------------------------------
__shared__ int2 s_level[ROW * 4];
__shared__ float2 s_discharge[ROW * 2];
__shared__ float2 s_limits[ROW * 4];
__shared__ float s_flow[ROW * 16];
__shared__ float s_old_flux[ROW * 8];
__shared__ float s_flux[ROW * 16];

__device__ __forceinline__ float flow_of(unsigned i, unsigned p) { return s_flow[p * ROW * 4 + i]; }
__device__ __forceinline__ f4 flows(unsigned i) { unsigned n = ROW * 4; return f4{s_flow[i], s_flow[n + i], s_flow[2 * n + i], s_flow[3 * n + i]}; }
__device__ __forceinline__ void set_flows(unsigned i, f4 v) { unsigned n = ROW * 4; s_flow[i] = v.x; s_flow[n + i] = v.y; s_flow[2 * n + i] = v.z; s_flow[3 * n + i] = v.w; }
__device__ __forceinline__ float flux_of(unsigned i, unsigned p) { return s_flux[p * ROW * 4 + i]; }
__device__ __forceinline__ f4 fluxes(unsigned i) { unsigned n = ROW * 4; return f4{s_flux[i], s_flux[n + i], s_flux[2 * n + i], s_flux[3 * n + i]}; }
__device__ __forceinline__ void set_fluxes(unsigned i, f4 v) { unsigned n = ROW * 4; s_flux[i] = v.x; s_flux[n + i] = v.y; s_flux[2 * n + i] = v.z; s_flux[3 * n + i] = v.w; }
__device__ __forceinline__ float old_flux_of(unsigned i, unsigned p) { return s_old_flux[p * ROW * 2 + i]; }
__device__ __forceinline__ f4 old_fluxes_at(unsigned i) { unsigned n = ROW * 2; return f4{s_old_flux[i], s_old_flux[n + i], s_old_flux[2 * n + i], s_old_flux[3 * n + i]}; }
__device__ __forceinline__ void set_old_fluxes(unsigned i, f4 v) { unsigned n = ROW * 2; s_old_flux[i] = v.x; s_old_flux[n + i] = v.y; s_old_flux[2 * n + i] = v.z; s_old_flux[3 * n + i] = v.w; }
__device__ __forceinline__ unsigned ring(int y) { return (unsigned)(y + 8) & 3u; }
__device__ __forceinline__ unsigned pair_(int y) { return (unsigned)(y + 8) & 1u; }
__device__ __forceinline__ unsigned at(unsigned slot, unsigned column) { return slot * ROW + column; }

struct Loaded { float bed; int depth; f4 flow; };
struct Bufs {
    const float* __restrict__ step_terrain;
    const int* __restrict__ depth_in;
    const float4* __restrict__ flux_in;
    int* __restrict__ depth_out;
    float4* __restrict__ flux_out;
    const unsigned* __restrict__ awake_list;
    unsigned* __restrict__ tile_flags;
};

__device__ __forceinline__ Loaded load(const Bufs& b, int2v cell) {
    Loaded l;
    l.bed = 0.0f;
    l.depth = 0;
    l.flow = splat(0.0f);
    if (cell_in_grid(cell)) {
        unsigned i = (unsigned)cell.y * c.width + (unsigned)cell.x;
        l.bed = b.step_terrain[i];
        l.depth = b.depth_in[i];
        float4 f = b.flux_in[i];
        l.flow = f4{f.x, f.y, f.z, f.w};
    }
    return l;
}

struct Lanes { unsigned here, left, right; };
__device__ __forceinline__ unsigned lane_of(Lanes l, int dx) { return (unsigned)((int)l.here + dx); }

__device__ __forceinline__ unsigned window(unsigned columns, int y) {
    unsigned above = 5u * (unsigned)min(max(2 - y, 0), 5);
    unsigned below = 5u * (unsigned)min(max(y + 3 - (int)c.height, 0), 5);
    unsigned rows = ((WINDOW_INSIDE >> above) << above) & (WINDOW_INSIDE >> below);
    return (columns * 0x108421u) & rows;
}
__device__ __forceinline__ unsigned columns_on_grid(int x) {
    unsigned bits = 0;
    for (int k = 0; k < 5; k++) {
        int column = x + k - 2;
        if (column >= 0 && column < (int)c.width) bits |= 1u << (unsigned)k;
    }
    return bits;
}
__device__ __forceinline__ bool inside(unsigned w, int2v d) {
    if (w == WINDOW_INSIDE) return true;
    return ((w >> (unsigned)((d.y + 2) * 5 + d.x + 2)) & 1u) != 0u;
}
__device__ __forceinline__ bool pipe_exists_at(unsigned w, int2v d, unsigned p) {
    int2v o = pipe_offset(p);
    return inside(w, d) && inside(w, int2v{d.x + o.x, d.y + o.y});
}
__device__ __forceinline__ unsigned pipe_class_at(unsigned w, int2v d, unsigned p) {
    if (p >= 2u) return CLASS_DIAGONAL;
    int2v across = p == 0u ? int2v{0, 1} : int2v{1, 0};
    return (unsigned)(!inside(w, int2v{d.x - across.x, d.y - across.y})) + (unsigned)(!inside(w, int2v{d.x + across.x, d.y + across.y}));
}

struct Here { int2v cell; unsigned window; float bed; int depth; f4 flow; };
__device__ __forceinline__ Here here_at(int2v cell, unsigned columns, Lanes lanes) {
    Here h;
    h.cell = cell;
    h.window = window(columns, cell.y);
    unsigned slot = at(ring(cell.y), lanes.here);
    int2 level = s_level[slot];
    h.bed = __int_as_float(level.x);
    h.depth = level.y;
    h.flow = flows(slot);
    return h;
}
__device__ __forceinline__ float carried_of(const Here& h, Lanes lanes, unsigned p) {
    int2v o = pipe_offset(p);
    unsigned end = at(ring(h.cell.y + o.y), lane_of(lanes, o.x));
    int2 l = s_level[end];
    float v = carried_depth(h.bed, h.depth, __int_as_float(l.x), l.y);
    return pipe_exists_at(h.window, int2v{0, 0}, p) ? v : 0.0f;
}
__device__ __forceinline__ f4 carried_depths(const Here& h, Lanes lanes) {
    return f4{carried_of(h, lanes, 0), carried_of(h, lanes, 1), carried_of(h, lanes, 2), carried_of(h, lanes, 3)};
}
template <bool ADV> __device__ __forceinline__ float old_flux(const Here& h, float carried, unsigned p) {
    float v = lane(h.flow, p) * flux_per_stored<ADV>(carried);
    return pipe_exists_at(h.window, int2v{0, 0}, p) ? v : 0.0f;
}
template <bool ADV> __device__ __forceinline__ f4 old_fluxes(const Here& h, f4 carried) {
    return f4{old_flux<ADV>(h, carried.x, 0), old_flux<ADV>(h, carried.y, 1), old_flux<ADV>(h, carried.z, 2), old_flux<ADV>(h, carried.w, 3)};
}
__device__ __forceinline__ float2 centre_discharge(const Here& h, Lanes lanes) {
    unsigned row = pair_(h.cell.y);
    unsigned above = pair_(h.cell.y - 1);
    f4 own = old_fluxes_at(at(row, lanes.here));
    float outgoing[8];
    outgoing[0] = own.x;
    outgoing[1] = own.y;
    outgoing[2] = own.z;
    outgoing[3] = own.w;
    outgoing[4] = -old_flux_of(at(row, lanes.left), 0);
    outgoing[5] = -old_flux_of(at(above, lanes.here), 1);
    outgoing[6] = -old_flux_of(at(above, lanes.left), 2);
    outgoing[7] = -old_flux_of(at(above, lanes.right), 3);
    float2 q = discharge(c.cell_size, outgoing);
    return inside(h.window, int2v{0, 0}) ? q : make_float2(0.0f, 0.0f);
}
__device__ __forceinline__ float displaced_velocity(const Here& h, unsigned p, int2v offset, Lanes lanes, float own) {
    int2v d{-offset.x, -offset.y};
    float there = flow_of(at(ring(h.cell.y + d.y), lane_of(lanes, d.x)), p) * c.inverse_widths[pipe_class_at(h.window, d, p)];
    int2v o = pipe_offset(p);
    return (inside(h.window, d) && inside(h.window, int2v{d.x + o.x, d.y + o.y})) ? there : own;
}
__device__ __forceinline__ unsigned far_end(const Here& h, Lanes lanes, unsigned p) {
    int2v o = pipe_offset(p);
    return at(ring(h.cell.y + o.y), lane_of(lanes, o.x));
}
__device__ __forceinline__ f4 upstream_of(const Here& h, Lanes lanes, float kept, unsigned kind, unsigned p) {
    int2v o = pipe_offset(p);
    unsigned source = kept < 0.0f ? at(pair_(h.cell.y + o.y), lane_of(lanes, o.x)) : at(pair_(h.cell.y), lanes.here);
    float2 q = kept == 0.0f ? make_float2(0.0f, 0.0f) : s_discharge[source];
    UpstreamSplit s = upstream_split(q.x, q.y);
    float own = kept * c.inverse_widths[kind];
    return f4{s.px, s.py, displaced_velocity(h, p, s.first, lanes, own), displaced_velocity(h, p, s.second, lanes, own)};
}
struct AcceleratedPipes { f4 flux, stored; };
template <bool ADV>
__device__ __forceinline__ AcceleratedPipes accelerate_pipes(const Here& h, Lanes lanes, f4 carried_b) {
    f4 carried = carried_b;
    if (!ADV) carried = carried_depths(h, lanes);
    unsigned e0 = far_end(h, lanes, 0), e1 = far_end(h, lanes, 1), e2 = far_end(h, lanes, 2), e3 = far_end(h, lanes, 3);
    int2 le = s_level[e0], ls = s_level[e1], lse = s_level[e2], lsw = s_level[e3];
    f4 bed_b{__int_as_float(le.x), __int_as_float(ls.x), __int_as_float(lse.x), __int_as_float(lsw.x)};
    i4 depth_b{le.y, ls.y, lse.y, lsw.y};
    u4 kind{pipe_class_at(h.window, int2v{0, 0}, 0), pipe_class_at(h.window, int2v{0, 0}, 1), CLASS_DIAGONAL, CLASS_DIAGONAL};
    Upstream up;
    up.parts_first = splat(0.0f);
    up.parts_second = splat(0.0f);
    up.velocity_first = splat(0.0f);
    up.velocity_second = splat(0.0f);
    if (ADV) {
        f4 e = upstream_of(h, lanes, h.flow.x, kind.x, 0);
        f4 s = upstream_of(h, lanes, h.flow.y, kind.y, 1);
        f4 se = upstream_of(h, lanes, h.flow.z, kind.z, 2);
        f4 sw = upstream_of(h, lanes, h.flow.w, kind.w, 3);
        up.parts_first = f4{e.x, s.x, se.x, sw.x};
        up.parts_second = f4{e.y, s.y, se.y, sw.y};
        up.velocity_first = f4{e.z, s.z, se.z, sw.z};
        up.velocity_second = f4{e.w, s.w, se.w, sw.w};
    }
    Accelerated a = accelerate<ADV>(kind, h.flow, h.bed, h.depth, bed_b, depth_b, carried, up);
    AcceleratedPipes r;
    r.flux = a.flux;
    r.stored = a.stored;
    return r;
}
__device__ __forceinline__ float2 limits_of(int2v cell, Lanes lanes) {
    if (!cell_in_grid(cell)) return make_float2(1.0f, 1.0f);
    unsigned row = ring(cell.y);
    unsigned above = ring(cell.y - 1);
    f4 own = fluxes(at(row, lanes.here));
    float leaving[8];
    leaving[0] = own.x;
    leaving[1] = own.y;
    leaving[2] = own.z;
    leaving[3] = own.w;
    leaving[4] = -flux_of(at(row, lanes.left), 0);
    leaving[5] = -flux_of(at(above, lanes.here), 1);
    leaving[6] = -flux_of(at(above, lanes.left), 2);
    leaving[7] = -flux_of(at(above, lanes.right), 3);
    int2 level = s_level[at(row, lanes.here)];
    return cell_limits(level.y, leaving);
}
struct Moved { int quanta; float kept; };
__device__ __forceinline__ Moved move_pipe(int2v cell, Lanes lanes, float2 limits, float f, float stored, unsigned p) {
    Moved m;
    int2v o = pipe_offset(p);
    float k = transfer_limit(f, limits, s_limits[at(ring(cell.y + o.y), lane_of(lanes, o.x))]);
    unsigned owner = at(ring(cell.y - o.y), lane_of(lanes, -o.x));
    float g = flux_of(owner, p);
    float k_in = transfer_limit(g, s_limits[owner], limits);
    m.quanta = pipe_quanta(c.flux_to_quanta, g, k_in) - pipe_quanta(c.flux_to_quanta, f, k);
    m.kept = f != 0.0f ? stored * k : 0.0f;
    return m;
}
__device__ __forceinline__ unsigned transfer(const Bufs& b, int2v cell, Lanes lanes, f4 stored) {
    unsigned i = (unsigned)cell.y * c.width + (unsigned)cell.x;
    unsigned here = at(ring(cell.y), lanes.here);
    int2 level = s_level[here];
    int d = level.y;
    float2 limits = s_limits[here];
    f4 own = fluxes(here);
    Moved e = move_pipe(cell, lanes, limits, own.x, stored.x, 0);
    Moved s = move_pipe(cell, lanes, limits, own.y, stored.y, 1);
    Moved se = move_pipe(cell, lanes, limits, own.z, stored.z, 2);
    Moved sw = move_pipe(cell, lanes, limits, own.w, stored.w, 3);
    int new_depth = d + e.quanta + s.quanta + se.quanta + sw.quanta;
    f4 kept{e.kept, s.kept, se.kept, sw.kept};
#ifdef STRONG_STORES
    asm volatile("st.relaxed.cta.global.s32 [%0], %1;" :: "l"(b.depth_out + i), "r"(new_depth) : "memory");
    asm volatile("st.relaxed.cta.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(b.flux_out + i), "f"(kept.x), "f"(kept.y), "f"(kept.z), "f"(kept.w) : "memory");
#else
    b.depth_out[i] = new_depth;
    b.flux_out[i] = make_float4(kept.x, kept.y, kept.z, kept.w);
#endif
    f4 fl = flows(here);
    bool changed = new_depth != d || __float_as_uint(kept.x) != __float_as_uint(fl.x) || __float_as_uint(kept.y) != __float_as_uint(fl.y) ||
                   __float_as_uint(kept.z) != __float_as_uint(fl.z) || __float_as_uint(kept.w) != __float_as_uint(fl.w);
    bool moving = kept.x != 0.0f || kept.y != 0.0f || kept.z != 0.0f || kept.w != 0.0f;
    return (changed ? TILE_CHANGED : 0u) | (moving ? TILE_MOVING : 0u);
}

struct Column {
    int x;
    Lanes lanes;
    unsigned columns;
    bool writes;
    Loaded next;
    f4 stored;
    f4 carried, carried_next;
    Here b;
    unsigned flags;
};

__device__ __forceinline__ Column column_at(const Bufs& bf, unsigned strip, unsigned lane_index, int y0) {
    Column col;
    col.x = (int)(strip * (COLUMNS - 2u * HALO) + lane_index) - (int)HALO;
    col.lanes.here = lane_index + 1u;
    col.lanes.left = lane_index;
    col.lanes.right = lane_index + 2u;
    col.columns = columns_on_grid(col.x);
    col.writes = lane_index >= HALO && lane_index < COLUMNS - HALO && col.x < (int)c.width;
    col.next = load(bf, int2v{col.x, y0 - 3});
    col.stored = splat(0.0f);
    col.carried = splat(0.0f);
    col.carried_next = splat(0.0f);
    col.flags = 0;
    return col;
}
__device__ __forceinline__ void phase_a(const Bufs& bf, Column& col, int r, int y_end) {
    unsigned slot = at(ring(r), col.lanes.here);
    s_level[slot] = make_int2(__float_as_int(col.next.bed), col.next.depth);
    set_flows(slot, col.next.flow);
    if (r < y_end + 2) col.next = load(bf, int2v{col.x, r + 1});
}
template <bool ADV> __device__ __forceinline__ void phase_b(Column& col, int r, int y0) {
    col.b = here_at(int2v{col.x, r - 1}, col.columns, col.lanes);
    col.carried_next = splat(0.0f);
    if (r >= y0 - 2) {
        col.carried_next = carried_depths(col.b, col.lanes);
        set_old_fluxes(at(pair_(r - 1), col.lanes.here), old_fluxes<ADV>(col.b, col.carried_next));
    }
}
__device__ __forceinline__ void phase_c(Column& col, int r, int y0) {
    if (r >= y0 - 1) s_discharge[at(pair_(r - 1), col.lanes.here)] = centre_discharge(col.b, col.lanes);
}
template <bool ADV> __device__ __forceinline__ f4 phase_d(Column& col, int r, int y0) {
    if (r < y0) return splat(0.0f);
    Lanes lanes = col.lanes;
    Here h = here_at(int2v{col.x, r - 2}, col.columns, lanes);
    AcceleratedPipes pipes;
    if (h.window == WINDOW_INSIDE) {
        Here inner = h;
        inner.window = WINDOW_INSIDE;
        pipes = accelerate_pipes<ADV>(inner, lanes, col.carried);
    } else {
        pipes = accelerate_pipes<ADV>(h, lanes, col.carried);
    }
    set_fluxes(at(ring(r - 2), lanes.here), pipes.flux);
    return pipes.stored;
}
__device__ __forceinline__ void phase_e(Column& col, int r, int y0) {
    if (r >= y0 + 1) s_limits[at(ring(r - 2), col.lanes.here)] = limits_of(int2v{col.x, r - 2}, col.lanes);
}
template <bool ADV> __device__ __forceinline__ void phase_f(const Bufs& bf, Column& col, int r, int y0, f4 stored_next) {
    if (r >= y0 + 3 && col.writes) col.flags |= transfer(bf, int2v{col.x, r - 3}, col.lanes, col.stored);
    col.stored = stored_next;
    if (ADV) col.carried = col.carried_next;
}

template <bool ADV>
#ifdef MINB
__global__ void __launch_bounds__(COLS, MINB) step_columns(Bufs bf) {
#else
__global__ void __launch_bounds__(COLS) step_columns(Bufs bf) {
#endif
    unsigned wid = blockIdx.x;
    unsigned t = threadIdx.x;
    unsigned tile = bf.awake_list[AWAKE_LIST_HEADER + wid];
    unsigned strip = tile % tiles.tiles_x;
    unsigned band = tile / tiles.tiles_x;
    int y0 = (int)(band * tiles.size_y);
    int y_end = min(y0 + (int)tiles.size_y, (int)c.height);
    if (t == 0u || t == COLUMNS - 1u) {
        unsigned pad = t == 0u ? 0u : ROW - 1u;
        for (unsigned slot = 0; slot < 4; slot++) {
            unsigned i = at(slot, pad);
            s_level[i] = make_int2(0, 0);
            set_flows(i, splat(0.0f));
            set_fluxes(i, splat(0.0f));
            s_limits[i] = make_float2(1.0f, 1.0f);
        }
        for (unsigned slot = 0; slot < 2; slot++) {
            unsigned i = at(slot, pad);
            set_old_fluxes(i, splat(0.0f));
            s_discharge[i] = make_float2(0.0f, 0.0f);
        }
    }
    Column one = column_at(bf, strip, t, y0);
    for (int r = y0 - 3; r <= y_end + 2; r++) {
        phase_a(bf, one, r, y_end);
        __syncthreads();
        if (ADV) {
            phase_b<ADV>(one, r, y0);
            __syncthreads();
            phase_c(one, r, y0);
            __syncthreads();
        }
        f4 stored_one = phase_d<ADV>(one, r, y0);
        __syncthreads();
        phase_e(one, r, y0);
        __syncthreads();
        phase_f<ADV>(bf, one, r, y0, stored_one);
    }
    if (one.flags != 0u) atomicOr(&bf.tile_flags[tile], one.flags);
}

template __global__ void step_columns<true>(Bufs);
template __global__ void step_columns<false>(Bufs);

// ---- host ------------------------------------------------------------------------------------
static std::vector<char> read_file(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    std::vector<char> v(n);
    if (fread(v.data(), 1, n, f) != (size_t)n) exit(1);
    fclose(f);
    return v;
}

struct Sim {
    unsigned side, band_rows;
    StepConstants k;
    TileParams tp;
    float* terrain;
    int* depth[2];
    float4* flux[2];
    unsigned* awake;
    unsigned* flags;
    unsigned tiles_n;
    int cur = 0;
};

static CUmodule g_module = nullptr;
static size_t g_dyn = 0;
static CUfunction g_fn[2];
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)r_); exit(1); } } while (0)
static void load_module(const char* path) {
    CK(cudaFree(0));
    CU(cuModuleLoad(&g_module, path));
    CU(cuModuleGetFunction(&g_fn[0], g_module, "_Z12step_columnsILb0EEv4Bufs"));
    CU(cuModuleGetFunction(&g_fn[1], g_module, "_Z12step_columnsILb1EEv4Bufs"));
}
static void setup(Sim& s, const StepConstants& k, const std::vector<float>& terrain, const std::vector<int>& depth, const std::vector<float>& flow, unsigned band_rows) {
    s.k = k;
    s.side = k.width;
    size_t n = (size_t)k.width * k.height;
    unsigned own = COLUMNS - 2 * HALO;
    s.tp.tiles_x = (k.width + own - 1) / own;
    s.tp.tiles_y = (k.height + band_rows - 1) / band_rows;
    s.tp.size_x = own;
    s.tp.size_y = band_rows;
    s.tp.sleeping = 0;
    s.tiles_n = s.tp.tiles_x * s.tp.tiles_y;
    CK(cudaMalloc(&s.terrain, n * 4));
    for (int i = 0; i < 2; i++) {
        CK(cudaMalloc(&s.depth[i], n * 4));
        CK(cudaMalloc(&s.flux[i], n * 16));
    }
    CK(cudaMemcpy(s.terrain, terrain.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s.depth[0], depth.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s.flux[0], flow.data(), n * 16, cudaMemcpyHostToDevice));
    std::vector<unsigned> list(AWAKE_LIST_HEADER + s.tiles_n);
    list[0] = s.tiles_n; list[1] = 1; list[2] = 1; list[3] = 0;
    for (unsigned t = 0; t < s.tiles_n; t++) list[AWAKE_LIST_HEADER + t] = t;
    if (getenv("TWIN_SHUFFLE")) {
        // warps of 32 tiles in a random order, as the plan pass's atomics may list them
        unsigned chunks = (s.tiles_n + 31) / 32;
        std::vector<unsigned> order(chunks);
        for (unsigned i = 0; i < chunks; i++) order[i] = i;
        srand(7);
        for (unsigned i = chunks - 1; i > 0; i--) { unsigned j = rand() % (i + 1); std::swap(order[i], order[j]); }
        unsigned o = 0;
        for (unsigned ci = 0; ci < chunks; ci++) for (unsigned t = order[ci] * 32; t < std::min(s.tiles_n, order[ci] * 32 + 32); t++) list[AWAKE_LIST_HEADER + o++] = t;
    }
    CK(cudaMalloc(&s.awake, list.size() * 4));
    CK(cudaMemcpy(s.awake, list.data(), list.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&s.flags, s.tiles_n * 4));
    CK(cudaMemset(s.flags, 0, s.tiles_n * 4));
    if (g_module) {
        CUdeviceptr p; size_t sz;
        CU(cuModuleGetGlobal(&p, &sz, g_module, "c"));
        CU(cuMemcpyHtoD(p, &k, sizeof k));
        CU(cuModuleGetGlobal(&p, &sz, g_module, "tiles"));
        CU(cuMemcpyHtoD(p, &s.tp, sizeof s.tp));
    } else {
        CK(cudaMemcpyToSymbol(c, &k, sizeof k));
        CK(cudaMemcpyToSymbol(tiles, &s.tp, sizeof s.tp));
    }
    s.cur = 0;
}

static void steps(Sim& s, bool adv, int count) {
    for (int i = 0; i < count; i++) {
        Bufs b{s.terrain, s.depth[s.cur], s.flux[s.cur], s.depth[1 - s.cur], s.flux[1 - s.cur], s.awake, s.flags};
        if (g_module) {
            void* args[] = {&b};
            CU(cuLaunchKernel(g_fn[adv ? 1 : 0], s.tiles_n, 1, 1, COLS, 1, 1, 0, 0, args, nullptr));
        } else if (adv) step_columns<true><<<s.tiles_n, COLS, g_dyn>>>(b);
        else step_columns<false><<<s.tiles_n, COLS, g_dyn>>>(b);
        s.cur = 1 - s.cur;
    }
    CK(cudaGetLastError());
}

static void release(Sim& s) {
    cudaFree(s.terrain);
    for (int i = 0; i < 2; i++) { cudaFree(s.depth[i]); cudaFree(s.flux[i]); }
    cudaFree(s.awake);
    cudaFree(s.flags);
}

int main(int argc, char** argv) {
    // twin check DIR STEPS ADV | twin time DIR SIDE ADV SECONDS BAND_ROWS [PROFILE_STEPS]
    if (argc < 5) { fprintf(stderr, "usage\n"); return 2; }
    if (getenv("TWIN_CUBIN")) load_module(getenv("TWIN_CUBIN"));
    if (getenv("TWIN_DYN_SMEM")) g_dyn = atoi(getenv("TWIN_DYN_SMEM"));
    if (getenv("TWIN_CARVEOUT")) {
        int pct = atoi(getenv("TWIN_CARVEOUT"));
        CK(cudaFuncSetAttribute(step_columns<true>, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
        CK(cudaFuncSetAttribute(step_columns<false>, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
    }
    std::string mode = argv[1];
    std::string dir = argv[2];
    auto cons = read_file((dir + "/constants.bin").c_str());
    StepConstants k;
    memcpy(&k, cons.data(), sizeof k);
    auto tb = read_file((dir + "/terrain.bin").c_str());
    auto db = read_file((dir + "/depth.bin").c_str());
    auto fb = read_file((dir + "/flow.bin").c_str());
    unsigned base = k.width;
    std::vector<float> terrain(tb.size() / 4);
    std::vector<int> depth(db.size() / 4);
    std::vector<float> flow(fb.size() / 4);
    memcpy(terrain.data(), tb.data(), tb.size());
    memcpy(depth.data(), db.data(), db.size());
    memcpy(flow.data(), fb.data(), fb.size());
    if (mode == "check") {
        int nsteps = atoi(argv[3]);
        bool adv = atoi(argv[4]) != 0;
        k.advection = adv;
        Sim s;
        setup(s, k, terrain, depth, flow, 64);
        if (g_module) printf("(module %s) ", getenv("TWIN_CUBIN"));
        steps(s, adv, nsteps);
        CK(cudaDeviceSynchronize());
        size_t n = (size_t)base * base;
        std::vector<int> d(n);
        std::vector<float> f(n * 4);
        CK(cudaMemcpy(d.data(), s.depth[s.cur], n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(f.data(), s.flux[s.cur], n * 16, cudaMemcpyDeviceToHost));
        auto dr = read_file((dir + "/depth_ref.bin").c_str());
        auto fr = read_file((dir + "/flow_ref.bin").c_str());
        const int* dref = (const int*)dr.data();
        const float* fref = (const float*)fr.data();
        long long t0 = 0, t1 = 0, tr = 0, negative = 0, differ = 0;
        long long maxd = 0;
        double maxf = 0;
        for (size_t i = 0; i < n; i++) {
            t0 += depth[i]; t1 += d[i]; tr += dref[i];
            if (d[i] < 0) negative++;
            long long dd = llabs((long long)d[i] - dref[i]);
            if (dd) differ++;
            if (dd > maxd) maxd = dd;
        }
        for (size_t i = 0; i < n * 4; i++) maxf = fmax(maxf, fabs((double)f[i] - fref[i]));
        printf("check %ux%u %d steps adv %d: total before %lld twin %lld cpu %lld; negative %lld; cells differing %lld, max |d depth| %lld quanta (%.3g m), max |d flow| %.3g\n",
               base, base, nsteps, (int)adv, t0, t1, tr, negative, differ, maxd, maxd * 9.5367431640625e-7, maxf);
        bool ok = t0 == t1 && negative == 0 && maxd * 9.5367431640625e-7 < 1e-3;
        printf("check %s\n", ok ? "PASS" : "FAIL");
        release(s);
        return ok ? 0 : 1;
    }
    // time: tile the base lake to SIDE x SIDE (mirrored so that the beds join)
    unsigned side = atoi(argv[3]);
    bool adv = atoi(argv[4]) != 0;
    double seconds = atof(argv[5]);
    unsigned band_rows = argc > 6 ? atoi(argv[6]) : 64;
    int profile_steps = argc > 7 ? atoi(argv[7]) : 0;
    size_t n = (size_t)side * side;
    std::vector<float> T(n), F(n * 4);
    std::vector<int> D(n);
    for (unsigned y = 0; y < side; y++) {
        unsigned by = (y / base) % 2 ? base - 1 - y % base : y % base;
        for (unsigned x = 0; x < side; x++) {
            unsigned bx = (x / base) % 2 ? base - 1 - x % base : x % base;
            size_t i = (size_t)y * side + x, j = (size_t)by * base + bx;
            T[i] = terrain[j];
            D[i] = depth[j];
            for (int p = 0; p < 4; p++) F[i * 4 + p] = flow[j * 4 + p];
        }
    }
    k.width = side;
    k.height = side;
    k.advection = adv;
    Sim s;
    setup(s, k, T, D, F, band_rows);
    if (profile_steps > 0) {
        steps(s, adv, profile_steps);
        CK(cudaDeviceSynchronize());
        printf("profiled %d steps\n", profile_steps);
        return 0;
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    steps(s, adv, 200);
    CK(cudaDeviceSynchronize());
    int per = 200;
    long long total = 0;
    CK(cudaEventRecord(a));
    float ms = 0;
    for (;;) {
        steps(s, adv, per);
        total += per;
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        if (ms > seconds * 1e3) break;
    }
    int regs = 0;
    cudaFuncAttributes attr;
    if (g_module) { printf("twin(module %s) %u^2 adv %d: %.3f G cell-steps/s (%.4f ms/step)\n", getenv("TWIN_CUBIN"), side, (int)adv, (double)total * n / (ms * 1e-3) / 1e9, ms / total); return 0; }
    if (adv) CK(cudaFuncGetAttributes(&attr, step_columns<true>));
    else CK(cudaFuncGetAttributes(&attr, step_columns<false>));
    int blocks = 0;
    if (adv) CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step_columns<true>, COLS, g_dyn));
    else CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step_columns<false>, COLS, g_dyn));
    regs = attr.numRegs;
    printf("twin dyn %zu carve %s %u^2 adv %d cols %u bands %u:", g_dyn, getenv("TWIN_CARVEOUT") ? getenv("TWIN_CARVEOUT") : "-", side, (int)adv, COLUMNS, band_rows);
    printf(" %.3f G cell-steps/s (%.4f ms/step), %d regs, %zu B smem, %d blocks/SM\n",
           (double)total * n / (ms * 1e-3) / 1e9, ms / total, regs, attr.sharedSizeBytes, blocks);
    release(s);
    return 0;
}
