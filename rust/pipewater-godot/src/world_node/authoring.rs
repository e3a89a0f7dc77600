//! What the editor's tools use on a `PipeWaterWorld` (`addons/pipe_water/editor/`), and scripts
//! may too, with `PipeWater`'s names: exact regions of depth and ground, the water and smoothing
//! brushes, a fill to a clicked shore, picking by ray, and the record of what a stroke changed
//! that an undo history keeps (a world cannot be compared whole, as a grid's stroke is:
//! [`pipewater_core::world_water::WorldWater::begin_record`]).

use super::PipeWaterWorld;
use crate::mapping::{check_ray, global_ray_to_local};
use crate::validate;
use godot::prelude::*;
use pipewater_core::world_water::{RegionValues, FILL_REACH};
use pipewater_core::{CellRect, Grid, DEPTH_QUANTUM, MAX_TERRAIN_ABS};

#[godot_api(secondary)]
impl PipeWaterWorld {
    /// Cells a `fill_to_shore` reaches from its point each way.
    #[constant]
    const FILL_REACH_CELLS: i32 = FILL_REACH as i32;

    /// Depth of one quantum, m (2⁻²⁰ m ≈ 0.95 µm): the unit of `get_water_region` and
    /// `set_water_region`.
    #[func]
    fn get_depth_quantum(&self) -> f64 {
        DEPTH_QUANTUM as f64
    }

    /// The water depths of the cells in `region` (cells from the −X, −Z corner; at least one,
    /// inside the world, at most 4096² cells), row-major, in quanta of `get_depth_quantum()` m:
    /// exact values, which `set_water_region` puts back bit for bit. Waits for the device: for an
    /// undo history or a tool, not every frame. Empty when refused.
    #[func]
    fn get_water_region(&mut self, region: Rect2i) -> PackedInt32Array {
        let Some(rect) = self.cell_region("get_water_region", region) else { return PackedInt32Array::new() };
        let result = self.water.as_mut().map(|w| w.depth_region(rect));
        self.core("get_water_region", result).map(|d| PackedInt32Array::from(d.as_slice())).unwrap_or_default()
    }

    /// Sets the water depth of every cell in `region` to `depths` (quanta, row-major as
    /// `get_water_region` returns them, each ≥ 0), exactly, keeping the flow; the ledger counts
    /// the difference as water added or removed. False, changing nothing, when refused.
    #[func]
    fn set_water_region(&mut self, region: Rect2i, depths: PackedInt32Array) -> bool {
        let Some(rect) = self.cell_region("set_water_region", region) else { return false };
        if self.errors.accept(validate::region_values("set_water_region", "depths", depths.len(), rect)).is_none() {
            return false;
        }
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.set_depth_region(rect, depths.as_slice()));
        self.core("set_water_region", result).is_some()
    }

    /// The ground heights (local m, as edited) of the cells in `region`, row-major: exact values,
    /// which `set_terrain_region` puts back bit for bit. From the host: no wait. Empty when
    /// refused.
    #[func]
    fn get_terrain_region(&mut self, region: Rect2i) -> PackedFloat32Array {
        let Some(rect) = self.cell_region("get_terrain_region", region) else { return PackedFloat32Array::new() };
        let result = self.water.as_ref().map(|w| w.terrain_rect(rect));
        self.core("get_terrain_region", result).map(|t| PackedFloat32Array::from(t.as_slice())).unwrap_or_default()
    }

    /// Sets the ground of the cells in `region` to `heights` (local m, row-major, finite, within
    /// ±1e6), bit for bit, keeping the water depth, on pages with water and without. False,
    /// changing nothing, when refused.
    #[func]
    fn set_terrain_region(&mut self, region: Rect2i, heights: PackedFloat32Array) -> bool {
        let Some(rect) = self.cell_region("set_terrain_region", region) else { return false };
        if self.errors.accept(validate::region_values("set_terrain_region", "heights", heights.len(), rect)).is_none() {
            return false;
        }
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.set_terrain_rect(rect, heights.as_slice()));
        self.core("set_terrain_region", result).is_some()
    }

    /// The water brush, as `PipeWater.paint_water`: adds (`depth` > 0) or removes (`depth` < 0)
    /// up to `|depth|` m of water (`-2048 ..= 2048`) at `global_position`, the most at the centre,
    /// falling smoothly to nothing at `radius` m (0: the cell under the point; at most 2000
    /// cells, as every brush and source of a world), in whole quanta,
    /// never more than a cell holds nor less than nothing. Returns the net volume, m³, exactly
    /// (negative when water was removed). Waits for the device.
    #[func]
    fn paint_water(&mut self, global_position: Vector3, depth: f64, radius: f64) -> f64 {
        let Some(depth) = self.errors.accept(validate::brush_depth("paint_water", depth)) else { return 0.0 };
        let Some((local, radius)) = self.brush_at("paint_water", global_position, radius) else { return 0.0 };
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.paint_water(local.x, local.z, depth, radius));
        self.core("paint_water", result).unwrap_or(0.0)
    }

    /// The smoothing brush, as `PipeWater.smooth_terrain`: the ground within `radius` m of
    /// `global_position` moves towards each cell's 3 × 3 mean by `strength` (`0 ..= 1`) of the way
    /// at the centre, less towards `radius`; water depth kept. False when refused.
    #[func]
    fn smooth_terrain(&mut self, global_position: Vector3, strength: f64, radius: f64) -> bool {
        let Some(strength) = self.errors.accept(validate::smooth_strength(strength)) else { return false };
        let Some((local, radius)) = self.brush_at("smooth_terrain", global_position, radius) else { return false };
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.smooth_terrain(local.x, local.z, strength, radius));
        self.core("smooth_terrain", result).is_some()
    }

    /// Fills the basin below `global_position` until its surface stands at the position's height,
    /// as `PipeWater.fill_to_shore` (a point on a bank clicked in the editor). The basin may
    /// reach 512 cells each way from the point (`FILL_REACH_CELLS`): one running farther, not
    /// held by the world's edge, is refused, nothing added (pour it with `add_water` or a
    /// source). Returns the volume added, m³ (0 when no ground below that height lies downhill,
    /// off the world, or refused). Waits for the device.
    #[func]
    fn fill_to_shore(&mut self, global_position: Vector3) -> f64 {
        let Some(local) = self.local("fill_to_shore", global_position) else { return 0.0 };
        let limit = MAX_TERRAIN_ABS as f64;
        let height = validate::float_in("fill_to_shore: global_position (height in the node's space)", local.y as f64, -limit, limit, " m");
        let Some(level) = self.errors.accept(height) else { return 0.0 };
        let Some(water) = self.water.as_ref() else { return 0.0 };
        let [ex, ez] = water.extent();
        if local.x.abs() >= ex / 2.0 || local.z.abs() >= ez / 2.0 {
            return 0.0;
        }
        self.window_stale = true;
        let result = self.water.as_mut().map(|w| w.fill_to_shore(local.x, local.z, level));
        self.core("fill_to_shore", result).unwrap_or(0.0)
    }

    /// Where the ray from `from` along `direction` (global) first meets the water surface, or the
    /// ground where it is dry, as a global point; `null` when it misses the world. Reads the water
    /// only where the ray comes near it (the device is waited for there): for picking the point
    /// under the mouse.
    #[func]
    fn intersect_ray(&mut self, from: Vector3, direction: Vector3) -> Variant {
        if self.errors.accept(check_ray("intersect_ray", from, direction)).is_none() || !self.ensure_world() {
            return Variant::nil();
        }
        let t = self.base().get_global_transform();
        let Some((origin, d)) = global_ray_to_local(&t, from, direction) else { return Variant::nil() };
        let result = self.water.as_mut().map(|w| w.raycast(origin, d));
        match self.core("intersect_ray", result).flatten() {
            Some(p) => (t * Vector3::new(p[0], p[1], p[2])).to_variant(),
            None => Variant::nil(),
        }
    }

    /// Starts recording what edits change (an editor's stroke, a game's undoable action): from
    /// now until `finish_change_record()`, every edit (`paint_water`, `add_water`,
    /// `remove_water`, `modify_terrain`, `smooth_terrain`, `fill_to_shore`, `set_water_region`,
    /// `set_terrain_region`) first keeps the blocks of cells it changes as they were. The world
    /// does not step while a record is open (`step()` is refused): what the record gives back is
    /// the edits' alone. A record still open is dropped.
    #[func]
    fn begin_change_record(&mut self) {
        if self.ensure_world() {
            if let Some(water) = self.water.as_mut() {
                water.begin_record();
            }
        }
    }

    /// Whether a change record is open (`begin_change_record`).
    #[func]
    fn is_recording_changes(&self) -> bool {
        self.water.as_ref().is_some_and(|w| w.is_recording())
    }

    /// Ends the change record: a Dictionary with `water` and `terrain`, each a Dictionary with
    /// `region` (the smallest `Rect2i` of cells holding every cell whose depth, or height, the
    /// edits changed; size zero when none), `before` and `after` (its values then and now, exact:
    /// depths in quanta as a `PackedInt32Array`, heights bit for bit as a `PackedFloat32Array`).
    /// `set_water_region(region, before)` and `set_terrain_region(region, before)` undo the
    /// edits, `after` redoes them. Empty when no record was open. Waits for the device.
    #[func]
    fn finish_change_record(&mut self) -> VarDictionary {
        let Some(water) = self.water.as_mut() else { return VarDictionary::new() };
        if !water.is_recording() {
            return VarDictionary::new();
        }
        let result = water.finish_record();
        let Some(changes) = self.core("finish_change_record", Some(result)) else { return VarDictionary::new() };
        let mut d = VarDictionary::new();
        d.set("water", &region_dictionary(changes.water, |v| PackedInt32Array::from(v).to_variant()));
        d.set("terrain", &region_dictionary(changes.terrain, |v| PackedFloat32Array::from(v).to_variant()));
        d
    }
}

impl PipeWaterWorld {
    /// A `Rect2i` of cells checked against the world.
    fn cell_region(&mut self, method: &str, region: Rect2i) -> Option<CellRect> {
        if !self.ensure_world() {
            return None;
        }
        let [w, h] = self.water.as_ref()?.size();
        let (p, s) = (region.position, region.size);
        // Only the sides are read: a world's may pass a dense grid's limit.
        let cells = Grid { width: w, height: h, cell_size: 1.0 };
        self.errors.accept(validate::cell_region(method, [p.x as i64, p.y as i64], [s.x as i64, s.y as i64], cells))
    }

    /// A brush's position in the node's space and its radius, checked.
    fn brush_at(&mut self, method: &str, global_position: Vector3, radius: f64) -> Option<(Vector3, f32)> {
        let local = self.local(method, global_position)?;
        if !(radius.is_finite() && (0.0..=1.0e6).contains(&radius)) {
            self.errors.reject(format!("{method}: radius = {radius} m is out of range: valid range is 0 ..= 1000000 m"));
            return None;
        }
        Some((local, radius as f32))
    }
}

/// `{region, before, after}` of one field's recorded change (size zero and empty arrays when it
/// did not change).
fn region_dictionary<T>(values: Option<RegionValues<T>>, packed: impl Fn(&[T]) -> Variant) -> VarDictionary {
    let mut d = VarDictionary::new();
    let (rect, before, after) = match &values {
        Some(v) => (v.rect, v.before.as_slice(), v.after.as_slice()),
        None => (CellRect::default(), &[][..], &[][..]),
    };
    d.set("region", Rect2i::new(Vector2i::new(rect.x as i32, rect.y as i32), Vector2i::new(rect.width as i32, rect.height as i32)));
    d.set("before", &packed(before));
    d.set("after", &packed(after));
    d
}
