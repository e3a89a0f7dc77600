//! What the editor's tools use (`addons/pipe_water/editor/`), and scripts may too: brushes,
//! picking by ray, and whole regions of cells read and written exactly, which a stroke's undo
//! and redo carry (see [`pipewater_core::authoring`]).

use super::PipeWater;
use crate::mapping::{check_ray, global_ray_to_local};
use crate::validate;
use godot::classes::Engine;
use godot::prelude::*;
use pipewater_core::authoring::{changed_rect, crop};
use pipewater_core::{CellRect, DEPTH_QUANTUM};

#[godot_api(secondary)]
impl PipeWater {
    /// Depth of one quantum, m (2⁻²⁰ m ≈ 0.95 µm): the unit of `get_water_region` and
    /// `set_water_region`. Water depth is stored as a whole number of quanta.
    #[func]
    fn get_depth_quantum(&self) -> f64 {
        DEPTH_QUANTUM as f64
    }

    /// The water depths of the cells in `region` (cells: `position` is the first cell, x along
    /// local X and y along local Z from the −X, −Z corner; `size` in cells; at least one cell,
    /// inside the grid), row-major (`index = (y − position.y) × size.x + (x − position.x)`), in
    /// quanta of `get_depth_quantum()` m: exact values, which `set_water_region` puts back bit
    /// for bit. `Rect2i(Vector2i.ZERO, grid_size)` is the whole grid. Reads the whole state,
    /// waiting for the GPU: for an undo history, not every frame. Empty when rejected.
    #[func]
    fn get_water_region(&mut self, region: Rect2i) -> PackedInt32Array {
        let Some(rect) = self.cell_region("get_water_region", region) else { return PackedInt32Array::new() };
        let result = self.sim.as_mut().map(|s| s.depth_region(rect));
        self.errors.core_result("get_water_region", result).map(|d| PackedInt32Array::from(d.as_slice())).unwrap_or_default()
    }

    /// Sets the water depth of every cell in `region` to `depths` (quanta, row-major as
    /// `get_water_region` returns them, each ≥ 0), exactly, keeping the flow. The ledger
    /// (`get_water_ledger()`) counts the difference as added or removed water, so it keeps
    /// balancing through an undo. Shown at once, also in the editor when the simulation does not
    /// run. Returns false, changing nothing, when the region or the values are rejected.
    #[func]
    fn set_water_region(&mut self, region: Rect2i, depths: PackedInt32Array) -> bool {
        let Some(rect) = self.cell_region("set_water_region", region) else { return false };
        if self.errors.accept(validate::region_values("set_water_region", "depths", depths.len(), rect)).is_none() {
            return false;
        }
        let result = self.sim.as_mut().map(|s| s.set_depth_region(rect, depths.as_slice()));
        let ok = self.errors.core_result("set_water_region", result).is_some();
        self.show_edit();
        ok
    }

    /// The terrain heights (local m, as edited) of the cells in `region` (as `get_water_region`),
    /// row-major: exact values, which `set_terrain_region` puts back bit for bit. Reads the whole
    /// state. Empty when rejected.
    #[func]
    fn get_terrain_region(&mut self, region: Rect2i) -> PackedFloat32Array {
        let Some(rect) = self.cell_region("get_terrain_region", region) else { return PackedFloat32Array::new() };
        let result = self.sim.as_mut().map(|s| s.terrain_region(rect));
        self.errors.core_result("get_terrain_region", result).map(|t| PackedFloat32Array::from(t.as_slice())).unwrap_or_default()
    }

    /// Sets the terrain heights of the cells in `region` to `heights` (local m, row-major, finite,
    /// within ±1e6), bit for bit, keeping the water depth (the surface moves with the ground), as
    /// digging does. `reset()` still goes back to the terrain of the properties. Returns false,
    /// changing nothing, when rejected.
    #[func]
    fn set_terrain_region(&mut self, region: Rect2i, heights: PackedFloat32Array) -> bool {
        let Some(rect) = self.cell_region("set_terrain_region", region) else { return false };
        if self.errors.accept(validate::region_values("set_terrain_region", "heights", heights.len(), rect)).is_none() {
            return false;
        }
        let result = self.sim.as_mut().map(|s| s.set_terrain_region(rect, heights.as_slice()));
        let ok = self.errors.core_result("set_terrain_region", result).is_some();
        self.show_edit();
        ok
    }

    /// What changed in the water since `before` (the whole grid's depths, as
    /// `get_water_region(Rect2i(Vector2i.ZERO, grid_size))` returned them): a Dictionary with
    /// `region` (the smallest `Rect2i` of cells holding every cell whose depth differs; size zero
    /// when none does), and `before` and `after`, its depths then and now (quanta). The payload
    /// of an undoable stroke: `set_water_region(region, before)` undoes it,
    /// `set_water_region(region, after)` redoes it. Reads the whole state. Empty when `before`
    /// does not hold one value per cell.
    #[func]
    fn get_water_changes(&mut self, before: PackedInt32Array) -> VarDictionary {
        let Some(now) = self.whole_field("get_water_changes", before.len(), |s, rect| s.depth_region(rect)) else { return VarDictionary::new() };
        changes_dictionary(self.grid_of_sim(), before.as_slice(), &now, |a, b| a == b, |v| PackedInt32Array::from(v).to_variant())
    }

    /// What changed in the terrain since `before` (the whole grid's heights, as
    /// `get_terrain_region` returned them), like `get_water_changes`: `region`, `before`, `after`
    /// (heights compared bit for bit). `set_terrain_region(region, before)` undoes it.
    #[func]
    fn get_terrain_changes(&mut self, before: PackedFloat32Array) -> VarDictionary {
        let Some(now) = self.whole_field("get_terrain_changes", before.len(), |s, rect| s.terrain_region(rect)) else { return VarDictionary::new() };
        changes_dictionary(self.grid_of_sim(), before.as_slice(), &now, |a, b| a.to_bits() == b.to_bits(), |v| PackedFloat32Array::from(v).to_variant())
    }

    /// The water brush: adds (`depth` > 0) or removes (`depth` < 0) up to `|depth|` m of water
    /// (`-2048 ..= 2048`) at `global_position`, the most at the centre, falling smoothly to
    /// nothing at `radius` m (`0 ..= 2 × grid extent`; 0: the one cell under the point), in whole
    /// quanta; never removes more than is there. Returns the net volume, m³ (negative when water
    /// was removed). Shown at once, also in the editor when the simulation does not run.
    /// On the RenderingDevice backend (`BACKEND_RENDERING_DEVICE`) the water stays on the GPU and the
    /// host holds only the cells queries read lately, so the figure for removed water is bounded,
    /// not exact: it is limited to the depth the host last read of each cell (for cells no query
    /// touched since the last load or `reset`, the depth then), which may be more or less than
    /// what was there. `get_total_water` counts exactly what was removed, a few frames later.
    #[func]
    fn paint_water(&mut self, global_position: Vector3, depth: f64, radius: f64) -> f64 {
        let Some(depth) = self.errors.accept(validate::brush_depth("paint_water", depth)) else { return 0.0 };
        let Some((xz, _, radius)) = self.edit_args("paint_water", global_position, 0.0, radius) else { return 0.0 };
        let result = self.sim.as_mut().map(|s| s.paint_water(xz[0], xz[1], depth, radius));
        let volume = self.errors.core_result("paint_water", result).unwrap_or(0.0);
        self.show_edit();
        volume
    }

    /// The smoothing brush: moves the terrain within `radius` m of `global_position` towards the
    /// mean height of each cell's 3 × 3 neighbourhood by `strength` (`0 ..= 1`) of the way at
    /// the centre, less towards `radius`. Water depth is kept. Reads the whole state (waiting for
    /// the GPU): for an editor's brush, not every frame of a game. With `terrain_write_back` the
    /// edit reaches `terrain_source` too. False when rejected.
    #[func]
    fn smooth_terrain(&mut self, global_position: Vector3, strength: f64, radius: f64) -> bool {
        let Some(strength) = self.errors.accept(validate::smooth_strength(strength)) else { return false };
        let Some((xz, _, radius)) = self.edit_args("smooth_terrain", global_position, 0.0, radius) else { return false };
        let result = self.sim.as_mut().map(|s| s.smooth_terrain(xz[0], xz[1], strength, radius));
        let ok = self.errors.core_result("smooth_terrain", result).is_some();
        if ok {
            self.write_back_terrain(xz[0], xz[1], radius);
        }
        self.show_edit();
        ok
    }

    /// Fills the basin below `global_position` until its surface stands at the position's height:
    /// the point marks the shoreline, say a point on a bank clicked in the editor. The fill starts
    /// at the point's cell when its ground lies lower, else at the first lower cell down the
    /// steepest slope from it, and spreads as `fill_basin` does. Water is only added. Returns
    /// the volume added, m³ (0 when no ground below that height lies downhill, off the grid, or
    /// rejected). Reads the whole state (waiting for the GPU).
    #[func]
    fn fill_to_shore(&mut self, global_position: Vector3) -> f64 {
        let Some((_, local)) = self.local_position("fill_to_shore", global_position) else { return 0.0 };
        let limit = pipewater_core::quanta::MAX_TERRAIN_ABS as f64;
        let height = validate::float_in("fill_to_shore: global_position (height in the node's space)", local.y as f64, -limit, limit, " m");
        let Some(level) = self.errors.accept(height) else { return 0.0 };
        let Some(sim) = self.sim.as_mut() else { return 0.0 };
        if !sim.lattice().contains(local.x, local.z) {
            return 0.0;
        }
        let result = sim.fill_to_shore(local.x, local.z, level);
        let volume = self.errors.core_result("fill_to_shore", Some(result)).unwrap_or(0.0);
        self.show_edit();
        volume
    }

    /// Where the ray from `from` along `direction` (global) first meets the water surface, or the
    /// ground where it is dry, as a global point; `null` when it misses the grid. Reads the
    /// newest snapshot (never waits for the GPU): for picking the point under the mouse.
    #[func]
    fn intersect_ray(&mut self, from: Vector3, direction: Vector3) -> Variant {
        if self.errors.accept(check_ray("intersect_ray", from, direction)).is_none() || !self.ensure_sim() {
            return Variant::nil();
        }
        let t = self.global_transform();
        let Some((origin, d)) = global_ray_to_local(&t, from, direction) else { return Variant::nil() };
        let hit = self.sim.as_mut().and_then(|s| s.raycast(origin, d));
        hit.map_or(Variant::nil(), |p| (t * Vector3::new(p[0], p[1], p[2])).to_variant())
    }
}

impl PipeWater {
    /// A `Rect2i` of cells checked against the running grid.
    fn cell_region(&mut self, method: &str, region: Rect2i) -> Option<CellRect> {
        if !self.ensure_sim() {
            return None;
        }
        let grid = self.grid_of_sim()?;
        let (p, s) = (region.position, region.size);
        self.errors.accept(validate::cell_region(method, [p.x as i64, p.y as i64], [s.x as i64, s.y as i64], grid))
    }

    fn grid_of_sim(&self) -> Option<pipewater_core::Grid> {
        self.sim.as_ref().map(|s| s.grid())
    }

    /// The whole grid's values of a field, for comparing with `len` values from before.
    fn whole_field<T>(&mut self, method: &str, len: usize, read: impl FnOnce(&mut pipewater_core::Simulation, CellRect) -> pipewater_core::Result<Vec<T>>) -> Option<Vec<T>> {
        if !self.ensure_sim() {
            return None;
        }
        let whole = self.grid_of_sim()?.whole();
        self.errors.accept(validate::region_values(method, "before", len, whole))?;
        let result = self.sim.as_mut().map(|s| read(s, whole));
        self.errors.core_result(method, result)
    }

    /// Shows an edit at once when no physics frame will step the simulation (the editor without
    /// `simulate_in_editor`, a paused node, a node outside the tree): a GPU backend applies its
    /// queued edits and redraws, and the textures follow.
    pub(super) fn show_edit(&mut self) {
        let in_editor = Engine::singleton().is_editor_hint();
        let steps = self.base().is_inside_tree() && !self.paused && (!in_editor || self.simulate_in_editor);
        if steps {
            return;
        }
        let result = self.sim.as_mut().map(|s| s.apply_edits());
        self.errors.core_result("showing the edit", result);
        self.update_outputs();
    }
}

/// `{region, before, after}` for the cells that differ between two whole-grid fields.
fn changes_dictionary<T: Copy>(grid: Option<pipewater_core::Grid>, before: &[T], now: &[T], same: impl Fn(&T, &T) -> bool, packed: impl Fn(&[T]) -> Variant) -> VarDictionary {
    let mut d = VarDictionary::new();
    let Some(grid) = grid else { return d };
    let rect = changed_rect(&grid, before, now, same);
    let r = rect.unwrap_or_default();
    d.set("region", Rect2i::new(Vector2i::new(r.x as i32, r.y as i32), Vector2i::new(r.width as i32, r.height as i32)));
    let (was, is) = rect.map_or((Vec::new(), Vec::new()), |r| (crop(&grid, before, r), crop(&grid, now, r)));
    d.set("before", &packed(&was));
    d.set("after", &packed(&is));
    d
}
