// What momentum advection reads upstream of a pipe (pipes.rs Upstream), from the fields as they
// were before the step: backend/cpu.rs OldFields, operation for operation. Prepended to both
// step kernels, which provide the readers `old_bed(i)`, `old_depth(cell, i)` (with this step's
// inflow) and `old_flow(i)`, and `upstream_discharge(cell)`: the discharge at a cell's centre,
// `old_centre_discharge` or the same value kept from an earlier computation.

// OldFields::pipe_flux: flux (m³/s) of owned pipe p of `cell` before the step, 0 where it does
// not exist.
fn old_pipe_flux(cell: vec2<i32>, p: u32) -> f32 {
    let other = cell + pipe_offset(p);
    if !pipe_active(c, p) || !cell_in_grid(c, other) {
        return 0.0;
    }
    let i = u32(cell.y) * c.width + u32(cell.x);
    let j = u32(other.y) * c.width + u32(other.x);
    let carried = carried_depth(c, old_bed(i), old_depth(cell, i), old_bed(j), old_depth(other, j));
    return old_flow(i)[p] * flux_per_stored(c, carried);
}

// OldFields::centre_discharge: discharge per metre (m²/s) at the centre of `cell`.
fn old_centre_discharge(cell: vec2<i32>) -> vec2<f32> {
    var outgoing: array<f32, 8>;
    for (var p = 0u; p < 4u; p++) {
        outgoing[p] = old_pipe_flux(cell, p);
        let owner = cell - pipe_offset(p);
        var incoming = 0.0;
        if cell_in_grid(c, owner) {
            incoming = old_pipe_flux(owner, p);
        }
        outgoing[4u + p] = -incoming;
    }
    return discharge(c.cell_size, outgoing);
}

// backend/cpu.rs displaced_velocity: velocity (m/s) along pipe p of the pipe of the same
// direction owned by `owner - offset`, or `own` where that pipe would reach beyond the grid.
fn displaced_velocity(owner: vec2<i32>, p: u32, offset: vec2<i32>, own: f32) -> f32 {
    let s = owner - offset;
    if cell_in_grid(c, s) && cell_in_grid(c, s + pipe_offset(p)) {
        return old_flow(u32(s.y) * c.width + u32(s.x))[p] / pipe_width(c, p, s);
    }
    return own;
}

// OldFields::upstream: what advection needs upstream of owned pipe p of `owner`, whose flow has
// the sign of `flow`; nothing where the step does not advect.
fn old_upstream(owner: vec2<i32>, p: u32, flow: f32) -> Upstream {
    var up: Upstream;
    up.discharge = vec2<f32>(0.0);
    up.velocity = vec2<f32>(0.0);
    if c.advection == 0u || flow == 0.0 {
        return up;
    }
    let cell = select(owner + pipe_offset(p), owner, flow > 0.0);
    let q = upstream_discharge(cell);
    let split = upstream_split(c, q);
    up.discharge = q;
    let own = flow / pipe_width(c, p, owner);
    up.velocity = vec2<f32>(displaced_velocity(owner, p, split.first, own), displaced_velocity(owner, p, split.second, own));
    return up;
}
