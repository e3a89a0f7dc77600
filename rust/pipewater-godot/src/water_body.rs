//! `PipeWaterBody`: a hull that pushes water. Add it under a `RigidBody3D` (or any moving
//! `Node3D`) and the water feels the body: it is displaced, dragged along and sent out in wakes
//! and rings; a rigid body gets buoyancy and drag back ([`pipewater_core::bodies`]).
//!
//! The `PipeWater` and `PipeWaterWorld` nodes gather every body of the group `pipe_water_bodies`
//! that pushes them once per physics frame ([`gather_bodies`]), couple them in one batch and
//! apply the forces ([`hand_out_forces`]). The conversions between Godot's transforms and the
//! core's body are plain functions here, tested without Godot.

use crate::validate;
use godot::classes::{INode3D, Node3D, RigidBody3D};
use godot::prelude::*;
use pipewater_core::bodies::{Body, BodyForce, HullPart, HullShape, MAX_DRAG, MAX_PART_SIZE};
use pipewater_core::glam::{Quat, Vec3};

/// Group every `PipeWaterBody` joins, where `PipeWater` finds them.
pub const BODY_GROUP: &str = "pipe_water_bodies";
/// Group every `PipeWaterWorld` joins: a body whose `water` is empty pushes the first of them
/// when no `PipeWater` is in the tree.
pub const WORLD_GROUP: &str = "pipe_water_worlds";

/// The water a `PipeWaterBody` with an empty `water` pushes: the first node of the group
/// `pipe_water` (a `PipeWater`), or when there is none the first `PipeWaterWorld`.
pub fn default_water(tree: &Gd<godot::classes::SceneTree>) -> Option<InstanceId> {
    tree.get_first_node_in_group("pipe_water").or_else(|| tree.get_first_node_in_group(WORLD_GROUP)).map(|n| n.instance_id())
}

/// The hulls that push the water node `water` (at global `transform`) this physics frame of
/// `delta` s, and their bodies in the water's frame, in the same order; hulls left out (disabled,
/// invalid) have their figures cleared.
pub fn gather_bodies(water: &Gd<Node3D>, transform: &Transform3D, delta: f64) -> (Vec<Gd<PipeWaterBody>>, Vec<Body>) {
    let (mut members, mut bodies) = (Vec::new(), Vec::new());
    if !water.is_inside_tree() {
        return (members, bodies);
    }
    let tree = water.get_tree();
    let (me, first_water) = (water.instance_id(), default_water(&tree));
    for node in tree.get_nodes_in_group(BODY_GROUP).iter_shared() {
        let Ok(mut hull) = node.try_cast::<PipeWaterBody>() else { continue };
        if !hull.bind().pushes(me, first_water) {
            continue;
        }
        let described = hull.bind_mut().describe(transform, delta);
        match described {
            Some(body) => {
                members.push(hull);
                bodies.push(body);
            }
            None => hull.bind_mut().clear_figures(),
        }
    }
    (members, bodies)
}

/// Gives each hull of [`gather_bodies`] its answer from the water at `transform`: its forces, or
/// cleared figures when it was left out.
pub fn hand_out_forces(members: Vec<Gd<PipeWaterBody>>, transform: &Transform3D, forces: Vec<pipewater_core::Result<BodyForce>>) {
    for (mut hull, force) in members.into_iter().zip(forces) {
        match force {
            Ok(f) => hull.bind_mut().take(transform, &f),
            Err(_) => hull.bind_mut().clear_figures(),
        }
    }
}

/// The shape of a `PipeWaterBody`'s hull.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum HullKind {
    /// A box of `size` (m), centred on the node, along its axes.
    #[default]
    Box = 0,
    /// A sphere of `radius` (m) around the node.
    Sphere = 1,
    /// A capsule of `radius` and whole `height` (m) along the node's Y axis, as `CapsuleShape3D`.
    Capsule = 2,
}

/// A hull that pushes water: the water under it is displaced (and given back when it leaves),
/// dragged along at `drag` and sent out in bow waves, wakes and rings.
///
/// Put it under a `RigidBody3D`, placed and rotated like the hull it stands for (several bodies
/// on one rigid body make a compound hull; keep them from overlapping). Each physics frame the
/// `PipeWater` (or `PipeWaterWorld`) node gathers every `PipeWaterBody`, couples them with the water in one batch and,
/// when `apply_forces` is on, applies to the rigid body the water's buoyancy (the weight of the
/// water the hull pushes away: a body of mass m floats with m / 1000 kg/m³ displaced) and drag
/// (towards the water's velocity, equal and opposite to what the hull gives the water). Under a
/// node that is not a rigid body (an `AnimatableBody3D`, a paddle moved by a script) it pushes
/// the water with the velocity it moves at and takes no forces.
///
/// The rigid body needs a `CollisionShape3D` (or an `inertia` set by hand): Godot gives a body
/// without shapes no moment of inertia, so the water's torque would spin it without limit. Such
/// a body gets the buoyancy and drag at its centre of mass only, with a warning.
///
/// With `BuoyancyProbe`s already floating a body, turn `apply_forces` off: the hull then only
/// makes waves. Probes and hulls should not share a footprint: a probe reads the surface, and a
/// hull pushes the surface under it down.
#[derive(GodotClass)]
#[class(init, base = Node3D)]
pub struct PipeWaterBody {
    /// The water to push: a `PipeWater` or a `PipeWaterWorld`. Empty: the first node of the group
    /// `pipe_water` (a `PipeWater`), or when there is none the first `PipeWaterWorld`.
    #[export]
    water: Option<Gd<Node3D>>,
    /// The hull's shape.
    #[export]
    #[var(set)]
    shape: HullKind,
    /// Size of a box hull, m, each side `> 0 ..= 10000`.
    #[export]
    #[var(set)]
    #[init(val = Vector3::new(1.0, 1.0, 1.0))]
    size: Vector3,
    /// Radius of a sphere or capsule hull, m (`> 0 ..= 10000`).
    #[export(range = (0.01, 100.0, 0.01, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = 0.5)]
    radius: f64,
    /// Whole length of a capsule hull, caps included, m (`> 0 ..= 10000`; at least `2 × radius`).
    #[export(range = (0.02, 100.0, 0.01, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = 2.0)]
    height: f64,
    /// Rate at which the hull drags the water it fills towards its own velocity, and is dragged
    /// back, 1/s (`0 ..= 1000`).
    #[export(range = (0.0, 20.0, 0.01, or_greater, suffix = "1/s"))]
    #[var(set)]
    #[init(val = 1.0)]
    drag: f64,
    /// Apply the water's buoyancy and drag to the `RigidBody3D` above this node.
    #[export]
    #[init(val = true)]
    apply_forces: bool,
    /// When false the hull neither pushes water nor takes forces.
    #[export]
    #[init(val = true)]
    enabled: bool,
    /// When true (and `apply_forces` is on), the water's detail waves push the hull too: their
    /// height over its waterplane adds to its buoyancy, so it pitches and heaves in other boats'
    /// wakes. Off by default: the hull's own detail waves, which it raises around itself, then
    /// act back on it as well, and it settles a little deeper.
    #[export]
    ride_detail_waves: bool,
    /// Volume of water the hull displaced in the last physics frame, m³. Read-only.
    #[var(get, no_set)]
    displaced_volume: f64,
    /// Global Y of the water level around the hull in the last physics frame; NaN when no water
    /// was near. Read-only.
    #[var(get, no_set)]
    #[init(val = f64::NAN)]
    water_level: f64,
    /// Global position in the last physics frame, for the velocity of a body that is not a
    /// rigid body.
    last_position: Option<Vector3>,
    /// The last fault warned about, so that a bad hull warns once, not every frame.
    last_error: String,
    base: Base<Node3D>,
}

#[godot_api]
impl INode3D for PipeWaterBody {
    fn enter_tree(&mut self) {
        self.base_mut().add_to_group(BODY_GROUP);
        self.last_position = None;
    }
}

#[godot_api]
impl PipeWaterBody {
    /// `shape`: a box.
    #[constant]
    const SHAPE_BOX: i64 = 0;
    /// `shape`: a sphere.
    #[constant]
    const SHAPE_SPHERE: i64 = 1;
    /// `shape`: a capsule.
    #[constant]
    const SHAPE_CAPSULE: i64 = 2;

    #[func]
    fn get_displaced_volume(&self) -> f64 {
        self.displaced_volume
    }

    #[func]
    fn get_water_level(&self) -> f64 {
        self.water_level
    }

    #[func]
    fn set_shape(&mut self, value: HullKind) {
        self.shape = value;
    }

    /// Sets `size`; rejected unless every side is in `> 0 ..= 10000` m.
    #[func]
    fn set_size(&mut self, value: Vector3) {
        let checked = [value.x, value.y, value.z].iter().try_for_each(|&v| positive_size("size", v as f64).map(|_| ()));
        match checked {
            Ok(()) => self.size = value,
            Err(e) => godot_error!("PipeWaterBody: {e}"),
        }
    }

    /// Sets `radius`; rejected outside `> 0 ..= 10000` m.
    #[func]
    fn set_radius(&mut self, value: f64) {
        match positive_size("radius", value) {
            Ok(_) => self.radius = value,
            Err(e) => godot_error!("PipeWaterBody: {e}"),
        }
    }

    /// Sets `height`; rejected outside `> 0 ..= 10000` m.
    #[func]
    fn set_height(&mut self, value: f64) {
        match positive_size("height", value) {
            Ok(_) => self.height = value,
            Err(e) => godot_error!("PipeWaterBody: {e}"),
        }
    }

    /// Sets `drag`; rejected outside `0 ..= 1000` 1/s.
    #[func]
    fn set_drag(&mut self, value: f64) {
        match validate::float_in("drag", value, 0.0, MAX_DRAG as f64, " 1/s") {
            Ok(_) => self.drag = value,
            Err(e) => godot_error!("PipeWaterBody: {e}"),
        }
    }
}

/// `value` checked as a hull size, m.
fn positive_size(name: &str, value: f64) -> Result<f32, String> {
    if value.is_finite() && value > 0.0 && value <= MAX_PART_SIZE as f64 {
        Ok(value as f32)
    } else {
        Err(format!("{name} = {value} is out of range: valid range is > 0 ..= {MAX_PART_SIZE} m"))
    }
}

/// Whether a rigid body with `shape_owners` collision shapes and the `inertia` property (zero:
/// computed from the shapes) has a moment of inertia that a torque can act on.
pub fn has_inertia(shape_owners: usize, inertia: Vector3) -> bool {
    shape_owners > 0 || (inertia.x > 0.0 && inertia.y > 0.0 && inertia.z > 0.0)
}

/// The core hull for a body's shape properties.
pub fn hull_shape(kind: HullKind, size: Vector3, radius: f64, height: f64) -> HullShape {
    match kind {
        HullKind::Box => HullShape::Box { half_extents: Vec3::new(size.x, size.y, size.z) * 0.5 },
        HullKind::Sphere => HullShape::Sphere { radius: radius as f32 },
        HullKind::Capsule => HullShape::Capsule { radius: radius as f32, height: (height as f32).max(2.0 * radius as f32) },
    }
}

fn vec3(v: Vector3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

fn vector3(v: Vec3) -> Vector3 {
    Vector3::new(v.x, v.y, v.z)
}

/// The core body for a hull at `hull` (global transform) moving with `linear_velocity` and
/// `angular_velocity` (global, at the hull's origin), in the frame of the water at `water`
/// (its global transform). The water's scale is taken out of the rotation.
pub fn body_in_water(water: &Transform3D, hull: &Transform3D, shape: HullShape, linear_velocity: Vector3, angular_velocity: Vector3, drag: f32) -> Body {
    let to_local = water.affine_inverse();
    let position = to_local * hull.origin;
    let basis = water.basis.orthonormalized().transposed() * hull.basis.orthonormalized();
    let q = basis.get_quaternion();
    let local_vector = |v: Vector3| water.basis.orthonormalized().transposed() * v;
    Body {
        position: vec3(position),
        rotation: Quat::from_xyzw(q.x, q.y, q.z, q.w).normalize(),
        linear_velocity: vec3(local_vector(linear_velocity)),
        angular_velocity: vec3(local_vector(angular_velocity)),
        parts: vec![HullPart { shape, position: Vec3::ZERO, rotation: Quat::IDENTITY }],
        drag,
        rides_detail_waves: false,
    }
}

/// A force and torque (about the hull's origin) from the water's frame to the global one.
pub fn force_to_global(water: &Transform3D, force: &BodyForce) -> (Vector3, Vector3) {
    let rotation = water.basis.orthonormalized();
    (rotation * vector3(force.force), rotation * vector3(force.torque))
}

impl PipeWaterBody {
    /// Whether this body pushes the water `water` (by instance id).
    pub fn pushes(&self, water: InstanceId, first_water: Option<InstanceId>) -> bool {
        if !self.enabled {
            return false;
        }
        match &self.water {
            Some(w) if w.is_instance_valid() => w.instance_id() == water,
            _ => first_water == Some(water),
        }
    }

    /// The core body in the frame of the water at `water`, or the reason it is left out (pushed
    /// once as a warning). `delta`: the physics frame, for the velocity of a body that is not a
    /// rigid body.
    pub fn describe(&mut self, water: &Transform3D, delta: f64) -> Option<Body> {
        let hull = self.base().get_global_transform();
        let shape = hull_shape(self.shape, self.size, self.radius, self.height);
        let (linear, angular) = match self.rigid_body() {
            Some(rb) => {
                let angular = rb.get_angular_velocity();
                (rb.get_linear_velocity() + angular.cross(hull.origin - rb.get_global_position()), angular)
            }
            None => {
                let moved = self.last_position.map_or(Vector3::ZERO, |p| hull.origin - p);
                (if delta > 0.0 { moved / delta as f32 } else { Vector3::ZERO }, Vector3::ZERO)
            }
        };
        self.last_position = Some(hull.origin);
        let mut body = body_in_water(water, &hull, shape, linear, angular, self.drag as f32);
        body.rides_detail_waves = self.ride_detail_waves;
        match body.check() {
            Ok(()) => Some(body),
            Err(e) => {
                // Once per kind of fault, not every frame with new figures.
                let fault = match &e {
                    pipewater_core::Error::InvalidArgument { name, .. } => name.to_string(),
                    other => other.to_string(),
                };
                self.warn_once(fault, |name| format!("PipeWaterBody {name}: {e}; the hull is left out"));
                None
            }
        }
    }

    /// Takes the water's answer: keeps the figures and, with `apply_forces`, pushes the rigid
    /// body.
    pub fn take(&mut self, water: &Transform3D, force: &BodyForce) {
        self.displaced_volume = force.displaced_volume as f64;
        self.water_level = force.water_level.map_or(f64::NAN, |l| (*water * Vector3::new(0.0, l, 0.0)).y as f64);
        if !self.apply_forces || force.displaced_volume <= 0.0 && force.force == Vec3::ZERO {
            return;
        }
        let Some(mut rb) = self.rigid_body() else { return };
        let (f, t) = force_to_global(water, force);
        if !has_inertia(rb.get_shape_owners().len(), rb.get_inertia()) {
            // Godot gives a rigid body without collision shapes no inertia, and then any torque,
            // even one of rounding size, spins it without limit: it gets the force at its centre
            // of mass only.
            let body_name = rb.get_name();
            self.warn_once("inertia".to_string(), |name| {
                format!("PipeWaterBody {name}: the RigidBody3D {body_name} has no CollisionShape3D and no inertia set, so the water's torque is left out (it only lifts and drags it); give it a collision shape or set its inertia")
            });
            rb.apply_central_force(f);
            return;
        }
        let offset = self.base().get_global_position() - rb.get_global_position();
        rb.apply_force_ex(f).position(offset).done();
        rb.apply_torque(t);
    }

    /// Warns with `message(this node's name)` unless the last warning was about the same
    /// `fault`, so that a lasting fault warns once, not every physics frame.
    fn warn_once(&mut self, fault: String, message: impl FnOnce(&StringName) -> String) {
        if fault != self.last_error {
            godot_warn!("{}", message(&self.base().get_name()));
            self.last_error = fault;
        }
    }

    /// The nearest `RigidBody3D` above this node.
    fn rigid_body(&self) -> Option<Gd<RigidBody3D>> {
        let mut node = self.base().get_parent();
        while let Some(n) = node {
            match n.try_cast::<RigidBody3D>() {
                Ok(rb) => return Some(rb),
                Err(n) => node = n.get_parent(),
            }
        }
        None
    }

    /// Forgets the last frame's figures (no water took the body this frame).
    pub fn clear_figures(&mut self) {
        self.displaced_volume = 0.0;
        self.water_level = f64::NAN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hull_in_a_moved_and_turned_water_frame_lands_where_it_is() {
        // Water turned 90° about Y and moved; a hull 3 m along global +X from the water's origin.
        let water = Transform3D::new(Basis::from_axis_angle(Vector3::UP, std::f32::consts::FRAC_PI_2), Vector3::new(10.0, 1.0, 0.0));
        let hull = Transform3D::new(Basis::IDENTITY, Vector3::new(13.0, 2.0, 0.0));
        let body = body_in_water(&water, &hull, HullShape::Sphere { radius: 1.0 }, Vector3::new(2.0, 0.0, 0.0), Vector3::ZERO, 1.0);
        println!("local position {:?}, velocity {:?}, rotation {:?}", body.position, body.linear_velocity, body.rotation);
        // Global +X is the water's local +Z after a 90° turn about Y.
        assert!((body.position - Vec3::new(0.0, 1.0, 3.0)).length() < 1e-5);
        assert!((body.linear_velocity - Vec3::new(0.0, 0.0, 2.0)).length() < 1e-5);
        let f = BodyForce { force: Vec3::new(0.0, 0.0, 5.0), ..BodyForce::default() };
        let (global, _) = force_to_global(&water, &f);
        println!("local force (0, 0, 5) is global {global:?}");
        assert!((global - Vector3::new(5.0, 0.0, 0.0)).length() < 1e-5);
    }

    #[test]
    fn only_bodies_with_shapes_or_an_inertia_take_torque() {
        assert!(has_inertia(1, Vector3::ZERO));
        assert!(has_inertia(0, Vector3::new(1.0, 2.0, 3.0)));
        assert!(!has_inertia(0, Vector3::ZERO));
        assert!(!has_inertia(0, Vector3::new(1.0, 0.0, 1.0)));
    }

    #[test]
    fn shapes_follow_the_properties() {
        assert_eq!(hull_shape(HullKind::Box, Vector3::new(2.0, 1.0, 4.0), 0.5, 2.0), HullShape::Box { half_extents: Vec3::new(1.0, 0.5, 2.0) });
        // A capsule never shorter than its two caps.
        assert_eq!(hull_shape(HullKind::Capsule, Vector3::ONE, 1.0, 0.5), HullShape::Capsule { radius: 1.0, height: 2.0 });
        for bad in [0.0, -1.0, f64::NAN, 1.0e9] {
            let e = positive_size("radius", bad).unwrap_err();
            println!("{e}");
            assert!(e.contains("radius") && e.contains("valid range"));
        }
    }
}
