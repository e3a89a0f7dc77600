//! What scripts ask the water: heights, depth, flow and totals at global positions, and the
//! mapping of those positions onto the grid that edits share.

use super::PipeWater;
use crate::mapping::{global_to_local_point, local_height_to_global, local_velocity_to_global, OUTSIDE_HEIGHT};
use crate::validate;
use godot::prelude::*;

#[godot_api(secondary)]
impl PipeWater {
    /// Water surface height (global Y, m) above or below `global_position` (its Y is ignored):
    /// bilinear over the wet cells around the point, the terrain where all are dry. `-INF`
    /// outside the grid. With `with_detail`, the detail waves' height there is added (0 outside
    /// their window and while `detail_waves` is off; on a GPU backend a region's first query
    /// answers without them and later ones show them a frame or two old).
    #[func]
    fn get_height(&mut self, global_position: Vector3, #[opt(default = false)] with_detail: bool) -> f64 {
        let Some((t, xz)) = self.local_point("get_height", global_position) else {
            return OUTSIDE_HEIGHT as f64;
        };
        let height = self.sim.as_mut().and_then(|s| if with_detail { s.surface_height_with_detail(xz[0], xz[1]) } else { s.surface_height(xz[0], xz[1]) });
        match height {
            Some(h) => local_height_to_global(&t, xz, h) as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Water depth (m, ≥ 0) at `global_position`, bilinear. `0.0` outside the grid.
    #[func]
    fn get_depth(&mut self, global_position: Vector3) -> f64 {
        let Some((_, xz)) = self.local_point("get_depth", global_position) else {
            return 0.0;
        };
        self.sim.as_mut().and_then(|s| s.depth(xz[0], xz[1])).map_or(0.0, |d| d.max(0.0) as f64)
    }

    /// Terrain height (global Y, m) at `global_position`, bilinear. `-INF` outside the grid.
    #[func]
    fn get_terrain_height(&mut self, global_position: Vector3) -> f64 {
        let Some((t, xz)) = self.local_point("get_terrain_height", global_position) else {
            return OUTSIDE_HEIGHT as f64;
        };
        match self.sim.as_mut().and_then(|s| s.terrain_height(xz[0], xz[1])) {
            Some(h) => local_height_to_global(&t, xz, h) as f64,
            None => OUTSIDE_HEIGHT as f64,
        }
    }

    /// Depth-averaged flow velocity at `global_position` as a global vector (m/s; horizontal in
    /// the node's frame, rotated with it). `Vector3.ZERO` outside the grid.
    #[func]
    fn get_flow_velocity(&mut self, global_position: Vector3) -> Vector3 {
        let Some((t, xz)) = self.local_point("get_flow_velocity", global_position) else {
            return Vector3::ZERO;
        };
        match self.sim.as_mut().and_then(|s| s.flow_velocity(xz[0], xz[1])) {
            Some(v) if v[0].is_finite() && v[1].is_finite() => local_velocity_to_global(&t, v),
            _ => Vector3::ZERO,
        }
    }

    /// Whether `global_position` (its Y ignored) lies over the grid.
    #[func]
    fn is_inside(&mut self, global_position: Vector3) -> bool {
        let Some((_, xz)) = self.local_point("is_inside", global_position) else {
            return false;
        };
        self.sim.as_ref().is_some_and(|s| s.lattice().contains(xz[0], xz[1]))
    }

    /// Total water on the grid, m³ (from the newest snapshot).
    #[func]
    fn get_total_water(&mut self) -> f64 {
        if !self.ensure_sim() {
            return 0.0;
        }
        self.sim.as_mut().map_or(0.0, |s| s.total_water())
    }

    /// The mass ledger, m³: `initial`, `added`, `removed`, `boundary_in`, `boundary_out`,
    /// `solidified` (fluid that cooled into ground), `expected` (= initial + added − removed +
    /// boundary_in − boundary_out − solidified) and `total`. Waits for the GPU when it runs; for
    /// debugging and tests, not every frame.
    #[func]
    fn get_water_ledger(&mut self) -> VarDictionary {
        let mut d = VarDictionary::new();
        if !self.ensure_sim() {
            return d;
        }
        let Some(sim) = self.sim.as_mut() else { return d };
        let qv = sim.quantum_volume();
        match sim.ledger() {
            Ok(ledger) => {
                let c = ledger.counters;
                d.set("initial", ledger.initial as f64 * qv);
                d.set("added", c.added as f64 * qv);
                d.set("removed", c.removed as f64 * qv);
                d.set("boundary_in", c.boundary_in as f64 * qv);
                d.set("boundary_out", c.boundary_out as f64 * qv);
                d.set("solidified", ledger.solidified as f64 * qv);
                d.set("expected", ledger.expected_total() as f64 * qv);
                let total = sim.read_state().map(|s| s.total_quanta() as f64 * qv).unwrap_or(f64::NAN);
                d.set("total", total);
            }
            Err(e) => self.errors.reject(format!("get_water_ledger: {e}")),
        }
        d
    }
}

impl PipeWater {
    pub(super) fn global_transform(&self) -> Transform3D {
        // Outside the tree there is no global transform; the node's own stands in for it.
        if self.base().is_inside_tree() {
            self.base().get_global_transform()
        } else {
            self.base().get_transform()
        }
    }

    /// The node's transform and the local `(x, z)` of a global point, with the simulation built.
    pub(super) fn local_point(&mut self, method: &str, global_position: Vector3) -> Option<(Transform3D, [f32; 2])> {
        self.local_position(method, global_position).map(|(t, local)| (t, [local.x, local.z]))
    }

    /// The node's transform and the local position of a global point, with the simulation built.
    pub(super) fn local_position(&mut self, method: &str, global_position: Vector3) -> Option<(Transform3D, Vector3)> {
        let p = global_position;
        self.errors.accept(validate::position(method, p.x, p.y, p.z))?;
        if !self.ensure_sim() {
            return None;
        }
        let t = self.global_transform();
        match global_to_local_point(&t, p) {
            Some(local) => Some((t, local)),
            None => {
                self.errors.reject(format!("{method}: the node's global transform cannot be inverted (zero scale?)"));
                None
            }
        }
    }
}
