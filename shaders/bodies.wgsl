// Bodies in the water (src/bodies.rs): the displacement a body puts on the cells under it, and
// the drag it gives the water's pipes. The step kernels read `step_terrain`, the terrain plus the
// displacement; queries, textures and saves keep the terrain itself. Cost follows the lists,
// never the grid.

struct Displacements {
    count: u32,
    _pad: u32,
    // (cell index, head m as f32 bits); each cell at most once.
    items: array<vec2<u32>>,
}

struct Nudges {
    count: u32,
    // The items are 16-byte aligned: the header is padded to 16 bytes.
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    // (cell index, velocity x, velocity y, weight as f32 bits); each cell at most once.
    items: array<vec4<u32>>,
}

@group(0) @binding(0) var<uniform> c: StepConstants;
@group(0) @binding(1) var<storage, read> terrain: array<f32>;
@group(0) @binding(2) var<storage, read_write> step_terrain: array<f32>;
@group(0) @binding(3) var<storage, read_write> displacement: array<f32>;
@group(0) @binding(4) var<storage, read> depth: array<i32>;
@group(0) @binding(5) var<storage, read_write> flux: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> displaced: Displacements;
@group(0) @binding(7) var<storage, read> ground: TerrainEdits;
@group(0) @binding(8) var<storage, read> nudges: Nudges;

const BODY_WORKGROUP: u32 = 64u;
const FRAC_1_SQRT_2: f32 = 0.707106781186547524400844362104849039;

// Cells whose terrain was edited this frame: the step's bed follows the new terrain. A cell's
// entries lie side by side (edits.wgsl); the first of them writes it.
@compute @workgroup_size(BODY_WORKGROUP)
fn refresh_step_terrain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < ground.count; e += groups.x * BODY_WORKGROUP) {
        let cell = ground.items[e].x;
        if (e == 0u || ground.items[e - 1u].x != cell) && cell < arrayLength(&step_terrain) {
            step_terrain[cell] = terrain[cell] + displacement[cell];
        }
    }
}

// backend/cpu.rs set_displacement: each listed cell takes its head.
@compute @workgroup_size(BODY_WORKGROUP)
fn displace(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < displaced.count; e += groups.x * BODY_WORKGROUP) {
        let cell = displaced.items[e].x;
        let head = bitcast<f32>(displaced.items[e].y);
        if cell < arrayLength(&step_terrain) {
            displacement[cell] = head;
            step_terrain[cell] = terrain[cell] + head;
        }
    }
}

// pipes.rs pipe_direction: PIPE_DIRECTIONS, or the triangular lattice's E, 60° and 120° (S is
// the 60° one on even rows, the 120° one on odd rows).
fn pipe_direction(p: u32, y: i32) -> vec2<f32> {
    if triangular(c) {
        let down = 0.8660254;
        switch p {
            case 0u: { return vec2<f32>(1.0, 0.0); }
            case 1u: { return vec2<f32>(select(0.5, -0.5, (y & 1) == 1), down); }
            case 2u: { return vec2<f32>(0.5, down); }
            default: { return vec2<f32>(-0.5, down); }
        }
    }
    switch p {
        case 0u: { return vec2<f32>(1.0, 0.0); }
        case 1u: { return vec2<f32>(0.0, 1.0); }
        case 2u: { return vec2<f32>(FRAC_1_SQRT_2, FRAC_1_SQRT_2); }
        default: { return vec2<f32>(-FRAC_1_SQRT_2, FRAC_1_SQRT_2); }
    }
}

// pipes.rs nudged_pipe.
fn nudged_pipe(p: u32, y: i32, stored: f32, velocity: vec2<f32>, weight: f32, width: f32, carried: f32) -> f32 {
    if carried <= 0.0 || weight <= 0.0 {
        return stored;
    }
    let d = pipe_direction(p, y);
    let along = velocity.x * d.x + velocity.y * d.y;
    var wanted = along * width;
    if keeps_flux(c) {
        wanted *= carried;
    }
    return stored + min(weight, 1.0) * (wanted - stored);
}

// backend/cpu.rs apply_nudges: the pipes each listed cell owns.
@compute @workgroup_size(BODY_WORKGROUP)
fn nudge_pipes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    for (var e = gid.x; e < nudges.count; e += groups.x * BODY_WORKGROUP) {
        let item = nudges.items[e];
        let i = item.x;
        if i >= arrayLength(&depth) {
            continue;
        }
        let cell = vec2<i32>(i32(i % c.width), i32(i / c.width));
        let velocity = vec2<f32>(bitcast<f32>(item.y), bitcast<f32>(item.z));
        let weight = bitcast<f32>(item.w);
        var pipes = flux[i];
        for (var p = 0u; p < 4u; p++) {
            let other = cell + pipe_offset(p);
            if !pipe_active(c, p, cell.y) || !cell_in_grid(c, other) {
                continue;
            }
            let j = u32(other.y) * c.width + u32(other.x);
            let carried = carried_depth(c, step_terrain[i], depth[i], step_terrain[j], depth[j]);
            pipes[p] = nudged_pipe(p, cell.y, pipes[p], velocity, weight, pipe_width(c, p, cell), carried);
        }
        flux[i] = pipes;
    }
}
