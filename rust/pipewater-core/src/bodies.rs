//! Bodies in the water: what a rigid body does to the water and what the water does back.
//!
//! A body is described by simple hull parts (boxes, spheres, capsules) in its own frame and
//! its pose and velocities in the grid's local frame (x = local X, y = up, z = local Z). Once
//! per frame [`couple`] turns all bodies into three things:
//!
//! * **Displacement** ([`CellDisplacement`]): over every cell, the thickness of body between
//!   the bed and the water level around the body. The step sees that cell's bed raised by it
//!   (a pressure head), so water flows out from under the body and back when it leaves; no water
//!   is created or removed. A moving body pushes water ahead of it and leaves a trough behind,
//!   which is where its bow wave, wake and the rings of a falling body come from.
//! * **Nudges** ([`PipeNudge`]): the water under and beside the hull is dragged towards the
//!   hull's velocity at that point, at the body's `drag` rate scaled by how much of the water
//!   column the hull fills.
//! * **Forces** ([`BodyForce`]) on each body, consistent with the two: buoyancy
//!   `ρ·g·Σ head·area` upward at the centroid of the displaced volume (so the volume the water
//!   is pushed away by is exactly the volume the body is lifted by), and a horizontal drag equal
//!   and opposite to the momentum the nudges give the water, computed from the same depths and
//!   cell velocities; and heave damping at [`HEAVE_DAMPING_RATIO`] of critical, which stands for
//!   the short waves a bobbing body radiates and the hydrostatic grid does not resolve.
//!
//! The water level a body displaces up to is that of the water in a region around it with the
//! body's own volume added back (see [`displace`]), so a body is fooled neither by the trough
//! it makes under itself nor by the heap it raises beside itself. Cost grows with the
//! bodies' footprints (each cell sampled at 2×2 to 4×4 points), never with the grid.

use crate::cell_edits::{CellDisplacement, PipeNudge};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::quanta::MAX_TERRAIN_ABS;
use crate::state::Snapshot;
use glam::{Quat, Vec3};
use rayon::prelude::*;
use std::collections::HashMap;

/// Largest size of a hull part along any axis, m.
pub const MAX_PART_SIZE: f32 = 1.0e4;
/// Largest speed a body may report, m/s (linear, and angular in rad/s).
pub const MAX_BODY_SPEED: f32 = 1.0e4;
/// Largest drag rate, 1/s.
pub const MAX_DRAG: f32 = 1.0e3;
/// Share of critical damping of a body's vertical motion in the water (see [`couple`]).
pub const HEAVE_DAMPING_RATIO: f32 = 0.25;
/// Depth (m) under which a cell near a body counts as dry when finding the level around it.
pub const WET_DEPTH: f32 = 1.0e-3;

/// The shape of one hull part, in the part's own frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HullShape {
    /// A box with these half extents, m.
    Box {
        /// Half the size along each axis, m.
        half_extents: Vec3,
    },
    /// A sphere, m.
    Sphere {
        /// Radius, m.
        radius: f32,
    },
    /// A capsule along the part's Y axis, as Godot's `CapsuleShape3D`: `height` is the whole
    /// length, caps included (at least `2·radius`).
    Capsule {
        /// Radius, m.
        radius: f32,
        /// Whole length, m.
        height: f32,
    },
}

/// One part of a hull: a shape placed in the body's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HullPart {
    /// The shape.
    pub shape: HullShape,
    /// Where the shape's centre is in the body's frame, m.
    pub position: Vec3,
    /// The shape's rotation in the body's frame.
    pub rotation: Quat,
}

/// A body in the water, in the grid's local frame (x = local X, y = up, z = local Z).
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// Position of the body's origin, m.
    pub position: Vec3,
    /// Orientation.
    pub rotation: Quat,
    /// Velocity of the origin, m/s.
    pub linear_velocity: Vec3,
    /// Angular velocity, rad/s.
    pub angular_velocity: Vec3,
    /// The hull.
    pub parts: Vec<HullPart>,
    /// Rate (1/s) at which the hull drags the water it fills towards its own velocity, and is
    /// dragged back.
    pub drag: f32,
    /// Whether the detail waves ([`crate::detail`]) push the body too: their height over its
    /// waterplane adds to its buoyancy ([`crate::detail::hulls::riding_force`]). Default false.
    pub rides_detail_waves: bool,
}

/// What the water does to one body this frame, in the grid's local frame.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BodyForce {
    /// Force, N.
    pub force: Vec3,
    /// Torque about the body's origin, N·m.
    pub torque: Vec3,
    /// Volume the body displaces, m³.
    pub displaced_volume: f32,
    /// Water level around the body (local Y, m), or `None` where no water is near.
    pub water_level: Option<f32>,
    /// Cells the body displaces.
    pub cells: u32,
}

/// A frame's coupling: the edits for the water and the forces for the bodies.
#[derive(Debug, Clone, Default)]
pub struct Coupling {
    /// Displacement of all bodies, each cell once.
    pub displacement: Vec<CellDisplacement>,
    /// Nudges of all bodies, each cell once.
    pub nudges: Vec<PipeNudge>,
    /// One result per body, in order: its forces, or why it was left out.
    pub forces: Vec<Result<BodyForce>>,
}

impl HullShape {
    fn check(&self) -> Result<()> {
        let sizes: &[(&'static str, f32)] = match self {
            HullShape::Box { half_extents } => &[("box half extent x", half_extents.x), ("box half extent y", half_extents.y), ("box half extent z", half_extents.z)],
            HullShape::Sphere { radius } => &[("sphere radius", *radius)],
            HullShape::Capsule { radius, height } => &[("capsule radius", *radius), ("capsule height", *height)],
        };
        for &(name, size) in sizes {
            if !(size.is_finite() && size > 0.0 && size <= MAX_PART_SIZE) {
                return Err(Error::invalid(name, size, format!("> 0 and <= {MAX_PART_SIZE} m")));
            }
        }
        Ok(())
    }

    /// Radius of a sphere around the shape's centre that holds it.
    fn bounding_radius(&self) -> f32 {
        match *self {
            HullShape::Box { half_extents } => half_extents.length(),
            HullShape::Sphere { radius } => radius,
            HullShape::Capsule { radius, height } => (0.5 * height).max(radius),
        }
    }

    /// Smallest size of the shape, m.
    fn smallest_size(&self) -> f32 {
        match *self {
            HullShape::Box { half_extents } => 2.0 * half_extents.min_element(),
            HullShape::Sphere { radius } | HullShape::Capsule { radius, .. } => 2.0 * radius,
        }
    }

    /// The interval of `t` over which the line `origin + t·direction` (shape frame, `direction`
    /// a unit vector) lies inside the shape.
    fn line_interval(&self, origin: Vec3, direction: Vec3) -> Option<(f32, f32)> {
        match *self {
            HullShape::Box { half_extents } => {
                let (mut low, mut high) = (f32::NEG_INFINITY, f32::INFINITY);
                for a in 0..3 {
                    let (o, d, h) = (origin[a], direction[a], half_extents[a]);
                    if d.abs() < 1.0e-9 {
                        if o.abs() > h {
                            return None;
                        }
                        continue;
                    }
                    let (t0, t1) = ((-h - o) / d, (h - o) / d);
                    low = low.max(t0.min(t1));
                    high = high.min(t0.max(t1));
                }
                (low <= high).then_some((low, high))
            }
            HullShape::Sphere { radius } => sphere_interval(origin, direction, radius),
            HullShape::Capsule { radius, height } => {
                let half = (0.5 * height - radius).max(0.0);
                let ends = [Vec3::new(0.0, -half, 0.0), Vec3::new(0.0, half, 0.0)];
                let mut found: Option<(f32, f32)> = None;
                let mut merge = |i: Option<(f32, f32)>| {
                    if let Some((a, b)) = i {
                        found = Some(found.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                    }
                };
                for end in ends {
                    merge(sphere_interval(origin - end, direction, radius));
                }
                merge(cylinder_interval(origin, direction, radius, half));
                found
            }
        }
    }
}

/// `t` interval of the line `origin + t·direction` (unit direction) inside a sphere at the origin.
fn sphere_interval(origin: Vec3, direction: Vec3, radius: f32) -> Option<(f32, f32)> {
    let b = origin.dot(direction);
    let disc = b * b - (origin.length_squared() - radius * radius);
    (disc >= 0.0).then(|| (-b - disc.sqrt(), -b + disc.sqrt()))
}

/// `t` interval of the line inside the cylinder of `radius` around the Y axis, `|y| <= half`.
fn cylinder_interval(origin: Vec3, direction: Vec3, radius: f32, half: f32) -> Option<(f32, f32)> {
    let a = direction.x * direction.x + direction.z * direction.z;
    let b = 2.0 * (origin.x * direction.x + origin.z * direction.z);
    let c = origin.x * origin.x + origin.z * origin.z - radius * radius;
    let (mut low, mut high) = if a < 1.0e-12 {
        if c > 0.0 {
            return None;
        }
        (f32::NEG_INFINITY, f32::INFINITY)
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            return None;
        }
        ((-b - disc.sqrt()) / (2.0 * a), (-b + disc.sqrt()) / (2.0 * a))
    };
    if direction.y.abs() < 1.0e-9 {
        if origin.y.abs() > half {
            return None;
        }
    } else {
        let (t0, t1) = ((-half - origin.y) / direction.y, (half - origin.y) / direction.y);
        low = low.max(t0.min(t1));
        high = high.min(t0.max(t1));
    }
    (low <= high).then_some((low, high))
}

fn finite(v: Vec3) -> bool {
    v.is_finite()
}

impl Body {
    /// A body with one part at its origin, no velocity and a drag of 1/s.
    pub fn new(position: Vec3, shape: HullShape) -> Self {
        Body {
            position,
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            parts: vec![HullPart { shape, position: Vec3::ZERO, rotation: Quat::IDENTITY }],
            drag: 1.0,
            rides_detail_waves: false,
        }
    }

    /// Checks that every figure is finite and in range: a bad body is left out with this error,
    /// the others still couple.
    pub fn check(&self) -> Result<()> {
        if !finite(self.position) || self.position.abs().max_element() > 1.0e7 {
            return Err(Error::invalid("body position", format!("{}", self.position), "finite, within 1e7 m"));
        }
        if !self.rotation.is_finite() || (self.rotation.length() - 1.0).abs() > 1.0e-3 {
            return Err(Error::invalid("body rotation", format!("{}", self.rotation), "a unit quaternion"));
        }
        if !finite(self.linear_velocity) || self.linear_velocity.length() > MAX_BODY_SPEED {
            return Err(Error::invalid("body linear velocity", format!("{}", self.linear_velocity), format!("finite, at most {MAX_BODY_SPEED} m/s")));
        }
        if !finite(self.angular_velocity) || self.angular_velocity.length() > MAX_BODY_SPEED {
            return Err(Error::invalid("body angular velocity", format!("{}", self.angular_velocity), format!("finite, at most {MAX_BODY_SPEED} rad/s")));
        }
        if !(self.drag.is_finite() && (0.0..=MAX_DRAG).contains(&self.drag)) {
            return Err(Error::invalid("body drag", self.drag, format!("0 ..= {MAX_DRAG} 1/s")));
        }
        if self.parts.is_empty() {
            return Err(Error::invalid("body parts", 0, "at least one hull part"));
        }
        for part in &self.parts {
            part.shape.check()?;
            if !finite(part.position) || part.position.length() > MAX_PART_SIZE {
                return Err(Error::invalid("hull part position", format!("{}", part.position), format!("finite, within {MAX_PART_SIZE} m of the body")));
            }
            if !part.rotation.is_finite() || (part.rotation.length() - 1.0).abs() > 1.0e-3 {
                return Err(Error::invalid("hull part rotation", format!("{}", part.rotation), "a unit quaternion"));
            }
        }
        Ok(())
    }

    /// The parts in the grid's frame: (inverse rotation, centre).
    pub(crate) fn placed_parts(&self) -> Vec<(HullShape, Quat, Vec3)> {
        self.parts
            .iter()
            .map(|p| {
                let rotation = (self.rotation * p.rotation).normalize();
                (p.shape, rotation.inverse(), self.position + self.rotation * p.position)
            })
            .collect()
    }

    /// Centre and radius of a horizontal circle that holds the body.
    pub(crate) fn horizontal_bounds(&self) -> ([f32; 2], f32) {
        let placed: Vec<(Vec3, f32)> = self.placed_parts().iter().zip(&self.parts).map(|((_, _, c), p)| (*c, p.shape.bounding_radius())).collect();
        let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
        for (c, r) in &placed {
            lo = [lo[0].min(c.x - r), lo[1].min(c.z - r)];
            hi = [hi[0].max(c.x + r), hi[1].max(c.z + r)];
        }
        let centre = [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1])];
        let radius = placed.iter().map(|(c, r)| ((c.x - centre[0]).powi(2) + (c.z - centre[1]).powi(2)).sqrt() + r).fold(0.0, f32::max);
        (centre, radius)
    }

    /// Velocity of the body's material point at `point`, m/s.
    pub(crate) fn point_velocity(&self, point: Vec3) -> Vec3 {
        self.linear_velocity + self.angular_velocity.cross(point - self.position)
    }
}

/// The cell rectangle `(x0, y0, x1, y1)` (inclusive) that holds a circle, clamped to the grid;
/// `None` when the circle misses the grid.
fn cell_rect(grid: &Grid, centre: [f32; 2], radius: f32) -> Option<(u32, u32, u32, u32)> {
    let [gx0, gy0] = grid.local_to_grid(centre[0] - radius, centre[1] - radius);
    let [gx1, gy1] = grid.local_to_grid(centre[0] + radius, centre[1] + radius);
    if gx1 < 0.0 || gy1 < 0.0 || gx0 >= grid.width as f32 || gy0 >= grid.height as f32 {
        return None;
    }
    let clamp = |v: f32, n: u32| (v.floor().max(0.0) as u32).min(n - 1);
    Some((clamp(gx0, grid.width), clamp(gy0, grid.height), clamp(gx1, grid.width), clamp(gy1, grid.height)))
}

/// The cells a coupling of `bodies` reads from the snapshot (footprints with a margin), for backends whose snapshot holds only what is asked for.
pub fn cells_to_read(grid: &Grid, bodies: &[Body]) -> Vec<usize> {
    let mut cells = Vec::new();
    for body in bodies.iter().filter(|b| b.check().is_ok()) {
        let (centre, radius) = body.horizontal_bounds();
        if let Some((x0, y0, x1, y1)) = cell_rect(grid, centre, 2.0 * radius + 3.0 * grid.cell_size) {
            for y in y0..=y1 {
                for x in x0..=x1 {
                    cells.push(grid.index(x, y));
                }
            }
        }
    }
    cells.sort_unstable();
    cells.dedup();
    cells
}

/// Where one body meets the water this frame.
struct Footprint {
    /// Rectangle of cells `(x0, y0)`, its width and height, with a one-cell margin.
    origin: (u32, u32),
    size: (u32, u32),
    /// Head (m) per rectangle cell.
    head: Vec<f32>,
}

/// Couples `bodies` with the water of `snapshot` for a frame of `frame_dt` seconds: water of
/// `density` kg/m³ under `gravity` m/s². Invalid bodies get their error and touch nothing.
pub fn couple(snapshot: &Snapshot, bodies: &[Body], frame_dt: f32, density: f32, gravity: f32) -> Coupling {
    // Bodies are coupled in parallel, then merged in their order, so the result does not depend
    // on the thread count.
    let per_body: Vec<BodyCoupling> = bodies.par_iter().map(|body| couple_one(snapshot, body, frame_dt, density, gravity)).collect();
    let mut heads: HashMap<u32, f32> = HashMap::new();
    let mut nudges: HashMap<u32, (f32, [f32; 2])> = HashMap::new();
    let mut forces = Vec::with_capacity(bodies.len());
    for (force, body_heads, body_nudges) in per_body {
        for (cell, head) in body_heads {
            *heads.entry(cell).or_insert(0.0) += head;
        }
        for (cell, weight, velocity) in body_nudges {
            merge_nudge(&mut nudges, cell, weight, velocity);
        }
        forces.push(force);
    }
    let mut displacement: Vec<CellDisplacement> = heads.into_iter().map(|(cell, head)| CellDisplacement { cell, head: head.min(MAX_TERRAIN_ABS) }).collect();
    displacement.sort_unstable_by_key(|d| d.cell);
    let mut nudges: Vec<PipeNudge> = nudges.into_iter().map(|(cell, (weight, v))| PipeNudge { cell, velocity_x: v[0], velocity_y: v[1], weight }).collect();
    nudges.sort_unstable_by_key(|n| n.cell);
    Coupling { displacement, nudges, forces }
}

/// One body's share of a coupling: its forces, its heads per cell and its nudges per cell.
type BodyCoupling = (Result<BodyForce>, Vec<(u32, f32)>, Vec<(u32, f32, [f32; 2])>);

/// [`couple`] for one body.
fn couple_one(snapshot: &Snapshot, body: &Body, frame_dt: f32, density: f32, gravity: f32) -> BodyCoupling {
    let grid = snapshot.grid;
    let area = grid.cell_area();
    let mut heads = Vec::new();
    let mut nudges = Vec::new();
    if let Err(e) = body.check() {
        return (Err(e), heads, nudges);
    }
    let mut result = BodyForce::default();
    if let Some((level, footprint)) = displace(snapshot, body) {
        result.water_level = Some(level);
        let (ox, oy) = footprint.origin;
        let (fw, fh) = footprint.size;
        // Buoyancy: the displaced volume, at the centroid of the heads.
        let (mut volume, mut moment) = (0.0f64, [0.0f64; 2]);
        for ly in 0..fh {
            for lx in 0..fw {
                let head = footprint.head[(ly * fw + lx) as usize];
                if head > 0.0 {
                    let (x, y) = (ox + lx, oy + ly);
                    let [cx, cz] = grid.cell_centre(x, y);
                    let v = head as f64 * area as f64;
                    volume += v;
                    moment = [moment[0] + v * cx as f64, moment[1] + v * cz as f64];
                    heads.push((grid.index(x, y) as u32, head));
                    result.cells += 1;
                }
            }
        }
        if volume > 0.0 {
            let centroid = Vec3::new((moment[0] / volume) as f32, level, (moment[1] / volume) as f32);
            let lift = Vec3::new(0.0, (density as f64 * gravity as f64 * volume) as f32, 0.0);
            result.displaced_volume = volume as f32;
            result.force += lift;
            result.torque += (centroid - body.position).cross(lift);
        }
        // Heave damping: the grid's water is hydrostatic, so the short waves that carry a
        // bobbing body's energy away are not resolved. Damp vertical motion at
        // HEAVE_DAMPING_RATIO of critical for the hydrostatic spring `ρ·g·waterplane` and the
        // displaced mass, spread over the footprint like the buoyancy.
        let (ox, oy) = footprint.origin;
        let waterplane = result.cells as f32 * area;
        let critical = 2.0 * density * (gravity * waterplane * volume as f32).sqrt();
        for ly in 0..fh {
            for lx in 0..fw {
                let head = footprint.head[(ly * fw + lx) as usize];
                if head > 0.0 {
                    let [cx, cz] = grid.cell_centre(ox + lx, oy + ly);
                    let point = Vec3::new(cx, level, cz);
                    let share = (head as f64 * area as f64 / volume) as f32;
                    let heave = Vec3::new(0.0, -HEAVE_DAMPING_RATIO * critical * share * body.point_velocity(point).y, 0.0);
                    result.force += heave;
                    result.torque += (point - body.position).cross(heave);
                }
            }
        }
        // Drag: each cell of the footprint and its margin drags its water towards the hull's
        // velocity there, as far as the hull fills the column; the body takes the opposite.
        let rate = body.drag * frame_dt;
        if rate > 0.0 && volume > 0.0 {
            for ly in 0..fh {
                for lx in 0..fw {
                    let fill = column_fill(&footprint, snapshot, lx, ly);
                    if fill <= 0.0 {
                        continue;
                    }
                    let (x, y) = (ox + lx, oy + ly);
                    let i = grid.index(x, y);
                    let depth = snapshot.height[i][1];
                    if depth <= 0.0 {
                        continue;
                    }
                    let weight = 1.0 - (-rate * fill).exp();
                    let [cx, cz] = grid.cell_centre(x, y);
                    let point = Vec3::new(cx, level, cz);
                    let hull = body.point_velocity(point);
                    let water = [snapshot.flow[i][0], snapshot.flow[i][1]];
                    let gained = Vec3::new(hull.x - water[0], 0.0, hull.z - water[1]) * (density * area * depth * weight);
                    let push = -gained / frame_dt;
                    result.force += push;
                    result.torque += (point - body.position).cross(push);
                    nudges.push((i as u32, weight, [hull.x, hull.z]));
                }
            }
        }
    }
    (Ok(result), heads, nudges)
}

/// How much of a rectangle cell's water column the hull fills, 0..1: `head / (head + depth)`
/// under the hull, and half the fullest neighbour's in the margin around it, so the water beside
/// a hull is carried along too.
fn column_fill(footprint: &Footprint, snapshot: &Snapshot, lx: u32, ly: u32) -> f32 {
    let (fw, fh) = footprint.size;
    let (ox, oy) = footprint.origin;
    let fill_at = |lx: u32, ly: u32| {
        let head = footprint.head[(ly * fw + lx) as usize];
        if head <= 0.0 {
            return 0.0;
        }
        let depth = snapshot.height[snapshot.grid.index(ox + lx, oy + ly)][1].max(0.0);
        head / (head + depth)
    };
    let own = fill_at(lx, ly);
    if own > 0.0 {
        return own;
    }
    let mut best = 0.0f32;
    for ny in ly.saturating_sub(1)..=(ly + 1).min(fh - 1) {
        for nx in lx.saturating_sub(1)..=(lx + 1).min(fw - 1) {
            best = best.max(fill_at(nx, ny));
        }
    }
    0.5 * best
}

/// Two drags on one cell in a frame, as if applied one after the other: `(w1, v1)` then
/// `(w2, v2)` is `w = 1 − (1−w1)(1−w2)` towards `(w1(1−w2)·v1 + w2·v2) / w`.
pub fn merge_nudge(nudges: &mut HashMap<u32, (f32, [f32; 2])>, cell: u32, weight: f32, velocity: [f32; 2]) {
    let weight = weight.clamp(0.0, 1.0);
    if weight <= 0.0 {
        return;
    }
    match nudges.get_mut(&cell) {
        None => {
            nudges.insert(cell, (weight, velocity));
        }
        Some((w1, v1)) => {
            let w = 1.0 - (1.0 - *w1) * (1.0 - weight);
            let a = *w1 * (1.0 - weight) / w;
            let b = weight / w;
            *v1 = [a * v1[0] + b * velocity[0], a * v1[1] + b * velocity[1]];
            *w1 = w;
        }
    }
}

/// The level around `body` and the heads it puts on the cells under it; `None` when it misses
/// the grid, no water is around it, or it is above the water.
///
/// The level is that of the water in a region around the body (its footprint widened by its own
/// size) with the body's submerged volume added: `L·A = Σ(bed + depth)·a + V(L)` over the wet
/// and covered cells, solved by fixed-point iteration (`V` grows more slowly than `L·A`). It
/// moves with the body at once, as the water it pushes aside would, and with the waves only as
/// they leave the region: a level read just beside the hull would follow the heap the hull
/// raises a moment later, and that lag feeds energy into a bobbing body.
fn displace(snapshot: &Snapshot, body: &Body) -> Option<(f32, Footprint)> {
    let grid = snapshot.grid;
    let (centre, radius) = body.horizontal_bounds();
    let reach = (radius / grid.cell_size).ceil() + 2.0;
    let (x0, y0, x1, y1) = cell_rect(&grid, centre, radius + reach * grid.cell_size)?;
    let parts = body.placed_parts();
    let smallest = body.parts.iter().map(|p| p.shape.smallest_size()).fold(f32::INFINITY, f32::min);
    // Sample points per cell side: 2, or up to 4 for parts smaller than two cells.
    let samples = (2.0 * grid.cell_size / smallest).ceil().clamp(2.0, 4.0) as u32;
    let per_cell = (samples * samples) as usize;
    let (fw, fh) = (x1 - x0 + 1, y1 - y0 + 1);
    // The hull's column at every sample point of the cells it covers.
    let mut columns: Vec<(u32, f32, f32, Vec<(f32, f32)>)> = Vec::new();
    let (mut wet_sum, mut wet_cells) = (0.0f64, 0u32);
    for ly in 0..fh {
        for lx in 0..fw {
            let (x, y) = (x0 + lx, y0 + ly);
            let [cx, cz] = grid.cell_centre(x, y);
            let mut hits = Vec::new();
            for sy in 0..samples {
                for sx in 0..samples {
                    let px = cx + ((sx as f32 + 0.5) / samples as f32 - 0.5) * grid.cell_size;
                    let pz = cz + ((sy as f32 + 0.5) / samples as f32 - 0.5) * grid.cell_size;
                    hits.extend(column(&parts, px, pz));
                }
            }
            let texel = snapshot.height[grid.index(x, y)];
            if texel[1] > WET_DEPTH {
                wet_sum += (texel[2] + texel[1]) as f64;
                wet_cells += 1;
            }
            if !hits.is_empty() {
                columns.push((ly * fw + lx, texel[1], texel[2], hits));
            }
        }
    }
    if columns.is_empty() || wet_cells == 0 {
        return None;
    }
    // Cells under the hull that the hull has emptied still belong to the water when their bed
    // lies below it; ground above the water does not.
    let wet_level = wet_sum / wet_cells as f64;
    let (mut water_sum, mut water_cells) = (wet_sum, wet_cells);
    for (_, depth, bed, _) in &columns {
        if *depth <= WET_DEPTH && (*bed as f64) < wet_level {
            water_sum += *bed as f64;
            water_cells += 1;
        }
    }
    let submerged = |level: f32| -> Vec<f32> {
        columns.iter().map(|(_, _, bed, hits)| hits.iter().map(|&(bottom, top)| (top.min(level) - bottom.max(*bed)).max(0.0)).sum::<f32>() / per_cell as f32).collect()
    };
    let mean = water_sum / water_cells as f64;
    let mut level = mean as f32;
    for _ in 0..8 {
        let volume: f64 = submerged(level).iter().map(|&h| h as f64).sum();
        level = (mean + volume / water_cells as f64) as f32;
    }
    let heads = submerged(level);
    if !heads.iter().any(|&h| h > 0.0) {
        return None;
    }
    let mut head = vec![0.0f32; (fw * fh) as usize];
    for ((k, _, _, _), h) in columns.iter().zip(heads) {
        head[*k as usize] = h;
    }
    Some((level, Footprint { origin: (x0, y0), size: (fw, fh), head }))
}

/// The vertical extent `(bottom, top)` of the hull on the vertical line through `(x, z)`: the
/// lowest bottom and highest top of the parts the line meets (a hull is taken as one solid column
/// there).
pub(crate) fn column(parts: &[(HullShape, Quat, Vec3)], x: f32, z: f32) -> Option<(f32, f32)> {
    let mut found: Option<(f32, f32)> = None;
    for (shape, inverse, centre) in parts {
        let origin = *inverse * (Vec3::new(x, 0.0, z) - *centre);
        let direction = *inverse * Vec3::Y;
        if let Some((a, b)) = shape.line_interval(origin, direction) {
            // The line is `(x, t, z)` in the grid frame, so t is the height.
            found = Some(found.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vertical(shape: HullShape, rotation: Quat, x: f32, z: f32) -> Option<(f32, f32)> {
        column(&[(shape, rotation.inverse(), Vec3::ZERO)], x, z)
    }

    #[test]
    fn vertical_extents_match_the_shapes() {
        let sphere = vertical(HullShape::Sphere { radius: 2.0 }, Quat::IDENTITY, 1.2, 0.0).unwrap();
        let expected = (4.0f32 - 1.44).sqrt();
        println!("sphere r 2 at 1.2 m: {sphere:?}, expected ±{expected}");
        assert!((sphere.1 - expected).abs() < 1e-5 && (sphere.0 + expected).abs() < 1e-5);
        assert!(vertical(HullShape::Sphere { radius: 2.0 }, Quat::IDENTITY, 2.1, 0.0).is_none());

        let b = HullShape::Box { half_extents: Vec3::new(1.0, 0.5, 2.0) };
        let tilted = vertical(b, Quat::from_rotation_z(std::f32::consts::FRAC_PI_4), 0.0, 0.0).unwrap();
        // Tilted 45° about z: the vertical through the centre crosses the 1 × 0.5 half-extent
        // rectangle over ±min(1, 0.5)·√2.
        println!("box tilted 45°: {tilted:?}, expected ±{}", 0.5 * 2f32.sqrt());
        assert!((tilted.1 - 0.5 * 2f32.sqrt()).abs() < 1e-5);
        assert!(vertical(b, Quat::IDENTITY, 0.0, 2.1).is_none());

        // A capsule lying along x (rotated 90° about z): radius 0.5, length 3.
        let c = HullShape::Capsule { radius: 0.5, height: 3.0 };
        let lying = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        let middle = vertical(c, lying, 0.0, 0.0).unwrap();
        let cap = vertical(c, lying, 1.3, 0.0).unwrap();
        let cap_expected = (0.25f32 - 0.09).sqrt();
        println!("lying capsule: middle {middle:?}, cap at 1.3 m {cap:?} (expected ±{cap_expected})");
        assert!((middle.1 - 0.5).abs() < 1e-5 && (middle.0 + 0.5).abs() < 1e-5);
        assert!((cap.1 - cap_expected).abs() < 1e-4);
        assert!(vertical(c, lying, 1.6, 0.0).is_none());
        // Standing: the whole length.
        let standing = vertical(c, Quat::IDENTITY, 0.0, 0.0).unwrap();
        println!("standing capsule: {standing:?}");
        assert!((standing.1 - 1.5).abs() < 1e-5 && (standing.0 + 1.5).abs() < 1e-5);
    }

    #[test]
    fn merged_nudges_equal_applying_them_in_turn() {
        let mut nudges = HashMap::new();
        merge_nudge(&mut nudges, 7, 0.3, [2.0, -1.0]);
        merge_nudge(&mut nudges, 7, 0.5, [-1.0, 4.0]);
        let (w, v) = nudges[&7];
        let s0 = 0.7f32;
        let in_turn = {
            let s1 = s0 + 0.3 * (2.0 - s0);
            s1 + 0.5 * (-1.0 - s1)
        };
        let merged = s0 + w * (v[0] - s0);
        println!("in turn {in_turn}, merged {merged} (w {w}, v {v:?})");
        assert!((in_turn - merged).abs() < 1e-6);
    }

    #[test]
    fn bad_bodies_are_refused_with_the_figure_named() {
        let good = Body::new(Vec3::ZERO, HullShape::Sphere { radius: 1.0 });
        assert!(good.check().is_ok());
        let cases: Vec<(&str, Body)> = vec![
            ("sphere radius", Body::new(Vec3::ZERO, HullShape::Sphere { radius: 0.0 })),
            ("sphere radius", Body::new(Vec3::ZERO, HullShape::Sphere { radius: -1.0 })),
            ("box half extent y", Body::new(Vec3::ZERO, HullShape::Box { half_extents: Vec3::new(1.0, f32::NAN, 1.0) })),
            ("body linear velocity", Body { linear_velocity: Vec3::new(f32::NAN, 0.0, 0.0), ..good.clone() }),
            ("body position", Body { position: Vec3::new(f32::INFINITY, 0.0, 0.0), ..good.clone() }),
            ("body drag", Body { drag: -1.0, ..good.clone() }),
            ("body parts", Body { parts: vec![], ..good.clone() }),
            ("body rotation", Body { rotation: Quat::from_xyzw(0.0, 0.0, 0.0, 0.0), ..good.clone() }),
        ];
        for (name, body) in cases {
            let error = body.check().expect_err(name).to_string();
            println!("{name}: {error}");
            assert!(error.contains(name), "`{error}` names `{name}`");
        }
    }
}
