//! What scripts do to the water and the ground: adding and removing water, filling basins,
//! sources and drains, digging and raising terrain.

use super::PipeWater;
use crate::validate;
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::sync::Edit;
use pipewater_core::SourceId;

#[godot_api(secondary)]
impl PipeWater {
    /// Adds `volume` m³ (`0 ..= 1e9`) of water around `global_position`, spread with a smooth
    /// falloff over `radius` m (`0 ..= 2 × grid extent`; 0 = the cell under the point). Returns the
    /// volume that arrives (the request to within one depth quantum, ~1 µm × cell area); 0 when
    /// the point is off the grid or an argument is rejected. On the GPU the change shows in
    /// queries after the next readback.
    ///
    /// A cell holds at most 2048 m of water: a request that would put more on one cell by itself
    /// is refused with an error naming the limit and the largest volume that fits there; cells
    /// that are nearly full take what fits, and then the return value (and a warning) says how
    /// much arrived.
    #[func]
    fn add_water(&mut self, global_position: Vector3, volume: f64, radius: f64) -> f64 {
        let Some((xz, volume, radius)) = self.edit_args("add_water", global_position, volume, radius) else {
            return 0.0;
        };
        let edit = Edit::AddWater { x: xz[0], z: xz[1], volume, radius };
        if self.sync_client_edit("add_water", edit).is_some() {
            return 0.0;
        }
        let Some(sim) = self.sim.as_mut() else { return 0.0 };
        let (quantum, on_grid) = (sim.quantum_volume(), !sim.lattice().footprint(xz[0], xz[1], radius).is_empty());
        let result = sim.add_water(xz[0], xz[1], volume, radius);
        let Some(placed) = self.errors.core_result("add_water", Some(result)) else { return 0.0 };
        self.sync_server_edit(edit);
        self.show_edit();
        let asked = (volume as f64 / quantum).round() * quantum;
        if on_grid && placed < asked - 0.5 * quantum {
            godot_warn!(
                "PipeWater: add_water: {placed:.6} of the {asked:.6} m³ asked for fit; the cells around the point hold the most water a cell can ({} m)",
                pipewater_core::MAX_DEPTH
            );
        }
        placed
    }

    /// Removes up to `volume` m³ of water around `global_position` within `radius` m (ranges as
    /// `add_water`), never more than is there. Returns the volume removed.
    /// On the RenderingDevice backend (`BACKEND_RENDERING_DEVICE`) the water stays on the GPU and the
    /// host holds only the cells queries read lately, so the figure for removed water is bounded,
    /// not exact: it is limited to the depth the host last read of each cell (for cells no query
    /// touched since the last load or `reset`, the depth then), which may be more or less than
    /// what was there. `get_total_water` counts exactly what was removed, a few frames later.
    #[func]
    fn remove_water(&mut self, global_position: Vector3, volume: f64, radius: f64) -> f64 {
        let Some((xz, volume, radius)) = self.edit_args("remove_water", global_position, volume, radius) else {
            return 0.0;
        };
        let edit = Edit::RemoveWater { x: xz[0], z: xz[1], volume, radius };
        if self.sync_client_edit("remove_water", edit).is_some() {
            return 0.0;
        }
        let result = self.sim.as_mut().map(|s| s.remove_water(xz[0], xz[1], volume, radius));
        let removed = self.errors.core_result("remove_water", result);
        if removed.is_some() {
            self.sync_server_edit(edit);
        }
        let volume = removed.unwrap_or(0.0);
        self.show_edit();
        volume
    }

    /// Fills the basin under `global_position` with still water whose surface stands at the
    /// position's height, as if water were poured there until it reached it: every cell
    /// connected to that point through ground lower than the surface gets water up to it
    /// (diagonal steps included in eight-neighbour mode). Water is only added. Returns the volume
    /// added, m³; 0 when the ground there is at or above the surface, the point is off the grid,
    /// or an argument is rejected. The quick way to make a lake in a valley or a pond in a pit,
    /// where `initial_water_level` would flood every basin below that level.
    ///
    /// A surface more than 2048 m above the lowest ground of the basin (more water than a cell
    /// holds) is refused with an error naming the highest level that fits.
    ///
    /// It reads the whole current state, waiting for the GPU: meant for setting up a level or
    /// answering a player's action, not for every frame.
    #[func]
    fn fill_basin(&mut self, global_position: Vector3) -> f64 {
        if self.sync_is_client() {
            self.errors.reject("fill_basin: on a multiplayer client (multiplayer_sync on, not the multiplayer authority) the water is the server's: call it on the server".to_string());
            return 0.0;
        }
        let Some((_, local)) = self.local_position("fill_basin", global_position) else {
            return 0.0;
        };
        let xz = [local.x, local.z];
        let limit = pipewater_core::quanta::MAX_TERRAIN_ABS as f64;
        let level =
            self.errors.accept(validate::float_in("fill_basin: global_position (height in the node's space)", local.y as f64, -limit, limit, " m"));
        let Some(level) = level else {
            return 0.0;
        };
        let Some(sim) = self.sim.as_mut() else {
            return 0.0;
        };
        if !sim.lattice().contains(xz[0], xz[1]) {
            return 0.0;
        }
        let result = sim.fill_basin(xz[0], xz[1], level);
        let volume = self.errors.core_result("fill_basin", Some(result)).unwrap_or(0.0);
        self.show_edit();
        volume
    }

    /// Adds a source of `rate` m³/s (`-1e6 ..= 1e6`; negative drains) spread over `radius` m
    /// around `global_position`. Returns its id (≥ 1), or -1 when rejected (off the grid, bad
    /// argument, or a rate that would move more than the 2048 m of water a cell holds through its
    /// heaviest cell in one step of up to 1 s, the longest `max_step`: the error names the
    /// largest rate for that radius). A source stops adding to a full cell. Sources survive
    /// `reset()` but not a rebuild.
    #[func]
    fn add_source(&mut self, global_position: Vector3, rate: f64, radius: f64) -> i64 {
        let Some(rate) = self.errors.accept(validate::source_rate("add_source", rate)) else {
            return -1;
        };
        let Some((xz, _, radius)) = self.edit_args("add_source", global_position, 0.0, radius) else {
            return -1;
        };
        if self.sync_client_edit("add_source", Edit::AddSource { id: 0, x: xz[0], z: xz[1], rate, radius }).is_some() {
            return -1;
        }
        let result = self.sim.as_mut().map(|s| s.add_source(xz[0], xz[1], rate, radius));
        let id = self.errors.core_result("add_source", result);
        if let Some(id) = id {
            self.sync_server_edit(Edit::AddSource { id: id.0, x: xz[0], z: xz[1], rate, radius });
        }
        id.map_or(-1, |id| id.0 as i64)
    }

    /// Adds a drain removing up to `rate` m³/s (`0 ..= 1e6`) around `global_position` within
    /// `radius` m; never removes more than is there. Returns its id, or -1 when rejected. Same as
    /// `add_source` with `-rate`.
    #[func]
    fn add_drain(&mut self, global_position: Vector3, rate: f64, radius: f64) -> i64 {
        if self.errors.accept(validate::float_in("add_drain: rate", rate, 0.0, 1.0e6, " m³/s")).is_none() {
            return -1;
        }
        self.add_source(global_position, -rate, radius)
    }

    /// Changes the rate of source or drain `id` (m³/s, `-1e6 ..= 1e6`). False when no such id.
    #[func]
    fn set_source_rate(&mut self, id: i64, rate: f64) -> bool {
        let Some(rate) = self.errors.accept(validate::source_rate("set_source_rate", rate)) else {
            return false;
        };
        let Some(id) = source_id(id) else { return false };
        if self.sync_client_edit("set_source_rate", Edit::SetSourceRate { id: id.0, rate }).is_some() {
            return false;
        }
        let result = self.sim.as_mut().map(|s| s.set_source_rate(id, rate));
        let changed = self.errors.core_result("set_source_rate", result).unwrap_or(false);
        if changed {
            self.sync_server_edit(Edit::SetSourceRate { id: id.0, rate });
        }
        changed
    }

    /// Removes source or drain `id`. False when no such id.
    #[func]
    fn remove_source(&mut self, id: i64) -> bool {
        let Some(id) = source_id(id) else { return false };
        if self.sync_client_edit("remove_source", Edit::RemoveSource { id: id.0 }).is_some() {
            return false;
        }
        let removed = self.sim.as_mut().is_some_and(|s| s.remove_source(id));
        if removed {
            self.sync_server_edit(Edit::RemoveSource { id: id.0 });
        }
        removed
    }

    /// Ids of the sources and drains in place, those of `PipeWaterSource` nodes included (placed,
    /// moved or removed first).
    #[func]
    fn get_source_ids(&mut self) -> PackedInt64Array {
        if self.ensure_sim() {
            self.sync_sources();
        }
        let ids: Vec<i64> = self.sim.as_ref().map(|s| s.source_ids().iter().map(|id| id.0 as i64).collect()).unwrap_or_default();
        PackedInt64Array::from(ids.as_slice())
    }

    /// Raises (positive) or digs (negative) the terrain by up to `delta_height` m
    /// (`-10000 ..= 10000`) around `global_position`, falling smoothly to zero at `radius` m.
    /// Water depth is kept, so the water responds at the next step. With `terrain_write_back`
    /// the edit reaches `terrain_source` too. False when rejected.
    #[func]
    fn modify_terrain(&mut self, global_position: Vector3, delta_height: f64, radius: f64) -> bool {
        let Some(delta) = self.errors.accept(validate::delta_height(delta_height)) else {
            return false;
        };
        let Some((xz, _, radius)) = self.edit_args("modify_terrain", global_position, 0.0, radius) else {
            return false;
        };
        let edit = Edit::ModifyTerrain { x: xz[0], z: xz[1], delta_height: delta, radius };
        if self.sync_client_edit("modify_terrain", edit).is_some() {
            return false;
        }
        let result = self.sim.as_mut().map(|s| s.modify_terrain(xz[0], xz[1], delta, radius));
        let ok = self.errors.core_result("modify_terrain", result).is_some();
        if ok {
            self.sync_server_edit(edit);
            self.write_back_terrain(xz[0], xz[1], radius);
        }
        // Shown at once, so that a game's terrain material follows the digging this frame.
        self.show_edit();
        self.update_outputs();
        ok
    }
}

impl PipeWater {
    /// Validated arguments of an edit: local point, volume, radius.
    pub(super) fn edit_args(&mut self, method: &str, global_position: Vector3, volume: f64, radius: f64) -> Option<([f32; 2], f32, f32)> {
        let volume = self.errors.accept(validate::volume(method, volume))?;
        let (_, xz) = self.local_point(method, global_position)?;
        let extent = self.sim.as_ref()?.lattice().extent();
        let radius = self.errors.accept(validate::radius(method, radius, extent))?;
        Some((xz, volume, radius))
    }
}

/// Source ids are the core's `u32`s; anything else names no source.
fn source_id(id: i64) -> Option<SourceId> {
    u32::try_from(id).ok().map(SourceId)
}
