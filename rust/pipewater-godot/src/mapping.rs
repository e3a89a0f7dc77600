//! Coordinate mapping between Godot's global space and the simulation's local grid.
//!
//! The simulation lives in the node's local XZ plane (local +Y up, grid centred on the origin;
//! see [`pipewater_core::Grid`]). Godot hands us global positions, so every query and edit goes
//! through the node's `global_transform`: global → local with its affine inverse, and results
//! back to global with the transform itself.
//!
//! Heights returned to GDScript are *global Y* of the surface point above the queried local
//! `(x, z)`. That is exact for nodes rotated about Y, translated and scaled; for a node tilted
//! away from global up it is the global Y of the local surface point, which is what a tilted
//! water body would mean.

use godot::builtin::{Transform3D, Vector3};

/// Global Y returned by height queries outside the grid: `-INF` in GDScript.
pub const OUTSIDE_HEIGHT: f32 = f32::NEG_INFINITY;

/// Global position → the node's local position, `None` when the transform cannot be inverted or
/// the position is not finite.
pub fn global_to_local_point(global_transform: &Transform3D, global: Vector3) -> Option<Vector3> {
    if !global.is_finite() || !global_transform.is_finite() {
        return None;
    }
    let det = global_transform.basis.determinant();
    if !det.is_finite() || det.abs() < 1.0e-12 {
        return None;
    }
    let local = global_transform.affine_inverse() * global;
    local.is_finite().then_some(local)
}

/// Refuses a ray for picking that is not a finite origin and a finite, non-zero direction.
pub fn check_ray(method: &str, from: Vector3, direction: Vector3) -> Result<(), String> {
    if from.is_finite() && direction.is_finite() && direction.length_squared() != 0.0 {
        return Ok(());
    }
    Err(format!("{method}: from = {from}, direction = {direction}: valid are finite vectors and a non-zero direction"))
}

/// A global ray (a point and a direction) in the node's local space, as plain arrays for the
/// core's `raycast`; `None` when the transform or the points cannot be mapped.
pub fn global_ray_to_local(global_transform: &Transform3D, from: Vector3, direction: Vector3) -> Option<([f32; 3], [f32; 3])> {
    let origin = global_to_local_point(global_transform, from)?;
    let d = global_to_local_point(global_transform, from + direction)? - origin;
    Some(([origin.x, origin.y, origin.z], [d.x, d.y, d.z]))
}

/// Global Y of the local point `(x, height, z)`.
pub fn local_height_to_global(global_transform: &Transform3D, local_xz: [f32; 2], height: f32) -> f32 {
    (*global_transform * Vector3::new(local_xz[0], height, local_xz[1])).y
}

/// A local horizontal velocity (local X, local Z) as a global vector: rotated (and scaled) by
/// the node's basis, without its translation.
pub fn local_velocity_to_global(global_transform: &Transform3D, velocity: [f32; 2]) -> Vector3 {
    global_transform.basis * Vector3::new(velocity[0], 0.0, velocity[1])
}

/// Texture UV (0..1 across the grid) of a local XZ point on a grid of `extent` metres; the same
/// mapping the water shader uses: `uv = local.xz / extent + 0.5`.
pub fn local_to_uv(local_xz: [f32; 2], extent: [f32; 2]) -> [f32; 2] {
    [local_xz[0] / extent[0] + 0.5, local_xz[1] / extent[1] + 0.5]
}

#[cfg(test)]
mod tests {
    use super::*;
    use godot::builtin::Basis;
    use pipewater_core::Grid;

    /// Positions round-trip through the transform to this many metres (f32 over ~100 m).
    const ROUND_TRIP_TOLERANCE: f32 = 1.0e-4;

    fn node_transform() -> Transform3D {
        // Rotated 90° about Y, lifted 5 m, moved 10 m along X.
        let basis = Basis::from_axis_angle(Vector3::UP, std::f32::consts::FRAC_PI_2);
        Transform3D::new(basis, Vector3::new(10.0, 5.0, 0.0))
    }

    #[test]
    fn identity_transform_maps_global_xz_to_local_xz() {
        let local = global_to_local_point(&Transform3D::IDENTITY, Vector3::new(1.5, 99.0, -2.0)).unwrap();
        println!("global (1.5, 99, -2) -> local {local:?}");
        assert_eq!([local.x, local.z], [1.5, -2.0]);
    }

    #[test]
    fn rotated_and_translated_node_maps_back_to_the_same_global_point() {
        let t = node_transform();
        for global in [Vector3::new(10.0, 0.0, 0.0), Vector3::new(13.0, 2.0, -4.0), Vector3::new(-7.5, 1.0, 20.0)] {
            let local = global_to_local_point(&t, global).unwrap();
            let (x, z) = (local.x, local.z);
            let back = t * Vector3::new(x, global.y - 5.0, z);
            println!("global {global:?} -> local ({x}, {z}) -> global {back:?}");
            assert!((back - global).length() < ROUND_TRIP_TOLERANCE);
        }
    }

    #[test]
    fn the_node_origin_maps_to_the_grid_centre() {
        let t = node_transform();
        let grid = Grid::new(64, 32, 0.5).unwrap();
        let local = global_to_local_point(&t, t.origin).unwrap();
        let (x, z) = (local.x, local.z);
        let cell = grid.local_to_grid(x, z);
        println!("origin -> local ({x}, {z}) -> grid {cell:?}");
        assert!((cell[0] - 32.0).abs() < ROUND_TRIP_TOLERANCE && (cell[1] - 16.0).abs() < ROUND_TRIP_TOLERANCE);
    }

    #[test]
    fn local_heights_become_global_y_with_the_node_offset_and_scale() {
        let t = Transform3D::new(Basis::from_scale(Vector3::new(2.0, 3.0, 2.0)), Vector3::new(0.0, -1.0, 0.0));
        let y = local_height_to_global(&t, [4.0, 4.0], 2.0);
        println!("local height 2 with scale 3 and offset -1 -> global y {y}");
        assert_eq!(y, 5.0);
    }

    #[test]
    fn local_velocity_rotates_with_the_node() {
        let t = node_transform();
        let v = local_velocity_to_global(&t, [1.0, 0.0]);
        println!("local +X 1 m/s under a 90° Y rotation -> global {v:?}");
        // Rotating +X by +90° about Y gives −Z.
        assert!((v - Vector3::new(0.0, 0.0, -1.0)).length() < ROUND_TRIP_TOLERANCE);
    }

    #[test]
    fn non_finite_positions_and_degenerate_transforms_map_to_none() {
        let t = node_transform();
        let nan = global_to_local_point(&t, Vector3::new(f32::NAN, 0.0, 0.0));
        let inf = global_to_local_point(&t, Vector3::new(0.0, 0.0, f32::INFINITY));
        let flat = Transform3D::new(Basis::from_scale(Vector3::new(1.0, 0.0, 1.0)), Vector3::ZERO);
        let degenerate = global_to_local_point(&flat, Vector3::ZERO);
        println!("NaN -> {nan:?}, INF -> {inf:?}, zero-scale basis -> {degenerate:?}");
        assert!(nan.is_none() && inf.is_none() && degenerate.is_none());
    }

    #[test]
    fn uv_spans_the_grid_from_its_north_west_corner() {
        let grid = Grid::new(100, 50, 2.0).unwrap();
        let extent = grid.extent();
        let nw = local_to_uv([-extent[0] / 2.0, -extent[1] / 2.0], extent);
        let centre = local_to_uv([0.0, 0.0], extent);
        let cell = grid.cell_centre(10, 20);
        let uv = local_to_uv(cell, extent);
        let texel = [uv[0] * grid.width as f32 - 0.5, uv[1] * grid.height as f32 - 0.5];
        println!("NW corner uv {nw:?}, centre uv {centre:?}, cell (10, 20) centre -> texel {texel:?}");
        assert_eq!(nw, [0.0, 0.0]);
        assert_eq!(centre, [0.5, 0.5]);
        assert!((texel[0] - 10.0).abs() < ROUND_TRIP_TOLERANCE && (texel[1] - 20.0).abs() < ROUND_TRIP_TOLERANCE);
    }
}
