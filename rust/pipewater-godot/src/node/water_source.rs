//! `PipeWaterSource`: a spring or a drain as a node of the scene. Place it over a `PipeWater` or
//! a `PipeWaterWorld` and the water gets a source (or drain) there; move it, disable it or free it and the source
//! moves, pauses or goes.
//!
//! The node only describes what it asks for. Its water keeps the simulation's sources in step
//! with the nodes once per physics frame (and before `step()`, `save_state()` and
//! `get_source_ids()`): `node/sources.rs` decides what to add, move, change or remove (its
//! `SourcePlacements`, plain Rust tested without Godot) and carries it out. So a source id never outlives
//! the simulation it belongs to: a rebuild forgets the placements and every node is placed
//! again.
//!
//! The editor draws the node with a gizmo (`addons/pipe_water/editor/source_gizmo.gd`): a circle
//! of its radius, blue for a spring, orange for a drain, grey when disabled.

use crate::errors::ErrorLog;
use super::{PipeWater, WATER_GROUP};
use crate::water_body::WORLD_GROUP;
use crate::world_node::PipeWaterWorld;
use crate::validate;
use godot::classes::{INode3D, Node, Node3D};
use godot::prelude::*;
use pipewater_core::sources::MAX_SOURCE_RATE;
use pipewater_core::SourceId;

/// Group every `PipeWaterSource` joins, where its water finds it.
pub const SOURCE_GROUP: &str = "pipe_water_sources";

/// A spring (`rate` > 0) or drain (`rate` < 0) of water, placed in the scene.
///
/// Put it under a `PipeWater` or a `PipeWaterWorld` (or anywhere, with `water` set, or in a
/// scene with one of them): the water gets a source of `rate` m³/s spread over the cells within `radius` m
/// of the node (more at the centre, fading smoothly to nothing at `radius`). A drain removes up
/// to `|rate|` m³/s and never more water than is there. Moving the node moves the source,
/// `enabled = false` pauses it, freeing the node removes it; the water takes each change at its
/// next physics frame (and before `step()`), in the editor too, where it pours while
/// `simulate_in_editor` runs.
///
/// The water's own ids (`PipeWater.add_source` from scripts) stay as they are; a node's source
/// has one too (`source_id`), kept while the node stays placed. A rebuild of the water (a new
/// grid, cell size, initial water or `initial_state`) places every node again.
///
/// Bad values (NaN, a negative radius) are refused with an error naming the property and its
/// valid range, and the previous value is kept. The editor warns (the scene dock's warning sign)
/// when the node finds no water, when its rate is 0 and when its water refused it (a radius
/// that does not reach the grid).
#[derive(GodotClass)]
#[class(init, tool, base = Node3D)]
pub struct PipeWaterSource {
    /// The water to pour into: a `PipeWater` or a `PipeWaterWorld` (another node is refused,
    /// keeping the previous one). Empty: the nearest of them above this node, else the first
    /// `PipeWater` of the scene, else its first `PipeWaterWorld`.
    #[export]
    #[var(set)]
    water: Option<Gd<Node3D>>,
    /// Water the source adds, m³/s, `-1000000 ..= 1000000`: positive pours (a spring), negative
    /// drains, never more than is there.
    #[export(range = (-100.0, 100.0, 0.01, or_greater, or_less, suffix = "m³/s"))]
    #[var(set)]
    #[init(val = 1.0)]
    rate: f64,
    /// Radius of the cells the rate is spread over, m, `0 ..= 10000` (0: the one cell under the
    /// node); the water also keeps it within twice its grid's larger side.
    #[export(range = (0.0, 50.0, 0.01, or_greater, suffix = "m"))]
    #[var(set)]
    #[init(val = 2.0)]
    radius: f64,
    /// When false the source pauses (its rate counts as 0) and keeps its place and id.
    #[export]
    #[var(set)]
    #[init(val = true)]
    enabled: bool,
    /// The id of this node's source in its water (`PipeWater.get_source_ids()`), or -1 while it
    /// is not placed (no water found yet, refused, or before the water's first physics frame).
    /// Read-only.
    #[var(get, no_set)]
    #[init(val = -1)]
    source_id: i64,
    /// Why the water refused this node at its last placement; empty when it did not.
    placement_problem: String,
    #[init(val = ErrorLog::for_class("PipeWaterSource"))]
    errors: ErrorLog,
    base: Base<Node3D>,
}

#[godot_api]
impl INode3D for PipeWaterSource {
    fn enter_tree(&mut self) {
        self.base_mut().add_to_group(SOURCE_GROUP);
        self.base_mut().update_configuration_warnings();
    }

    fn exit_tree(&mut self) {
        // Its water removes the source at its next physics frame; until then it is not placed.
        self.source_id = -1;
    }

    fn get_configuration_warnings(&self) -> PackedStringArray {
        let water_found = self.base().is_inside_tree() && self.water_node().is_some();
        let warnings = configuration_warnings(water_found, self.rate, &self.placement_problem);
        warnings.iter().map(GString::from).collect()
    }
}

#[godot_api]
impl PipeWaterSource {
    /// Returns `source_id`.
    #[func]
    fn get_source_id(&self) -> i64 {
        self.source_id
    }

    /// Sets `water`: a `PipeWater`, a `PipeWaterWorld` or nothing; another node is refused,
    /// keeping the previous one.
    #[func]
    fn set_water(&mut self, value: Option<Gd<Node3D>>) {
        if let Some(node) = value.as_ref().filter(|n| !is_water(n)) {
            self.errors.reject(format!("water = {} (a {}): valid are a PipeWater, a PipeWaterWorld or nothing; the previous water is kept", node.get_name(), node.get_class()));
            return;
        }
        self.water = value;
        self.base_mut().update_configuration_warnings();
    }

    /// Sets `rate` (m³/s, `-1000000 ..= 1000000`); refused, keeping the old rate, outside it.
    #[func]
    fn set_rate(&mut self, value: f64) {
        let m = MAX_SOURCE_RATE as f64;
        if self.errors.accept(validate::float_in("rate", value, -m, m, " m³/s")).is_some() {
            self.rate = value;
            self.changed();
        }
    }

    /// Sets `radius` (m, `0 ..= 10000`); refused, keeping the old radius, outside it.
    #[func]
    fn set_radius(&mut self, value: f64) {
        if self.errors.accept(validate::source_radius(value)).is_some() {
            self.radius = value;
            self.changed();
        }
    }

    /// Sets `enabled`.
    #[func]
    fn set_enabled(&mut self, value: bool) {
        self.enabled = value;
        self.changed();
    }

    /// Message of the most recent refused value; empty when none.
    #[func]
    fn get_last_error(&self) -> GString {
        GString::from(self.errors.last())
    }

    /// Clears `get_last_error()`.
    #[func]
    fn clear_last_error(&mut self) {
        self.errors.clear();
    }
}

impl PipeWaterSource {
    /// The gizmo and the warnings follow a change of what the node asks for.
    fn changed(&mut self) {
        self.base_mut().update_gizmos();
        self.base_mut().update_configuration_warnings();
    }

    /// The water this node pours into: `water` when it is valid, else the nearest `PipeWater`
    /// or `PipeWaterWorld` above it, else the first node of the group `pipe_water` (every
    /// `PipeWater` joins it), else the first `PipeWaterWorld`.
    pub fn water_node(&self) -> Option<Gd<Node3D>> {
        if let Some(w) = self.water.as_ref().filter(|w| w.is_instance_valid()) {
            return Some(w.clone());
        }
        let mut node: Option<Gd<Node>> = self.base().get_parent();
        while let Some(n) = node {
            if let Some(water) = n.clone().try_cast::<Node3D>().ok().filter(is_water) {
                return Some(water);
            }
            node = n.get_parent();
        }
        if !self.base().is_inside_tree() {
            return None;
        }
        let tree = self.base().get_tree();
        [WATER_GROUP, WORLD_GROUP].into_iter().find_map(|group| tree.get_first_node_in_group(group).and_then(|n| n.try_cast::<Node3D>().ok()).filter(is_water))
    }

    /// What this node asks of the water whose global transform is `water`: its place in the
    /// water's local XZ plane, its rate (0 while disabled) and radius.
    pub fn spec(&self, water: &Transform3D) -> Option<SourceSpec> {
        let local = crate::mapping::global_to_local_point(water, self.base().get_global_position())?;
        Some(SourceSpec { xz: [local.x, local.z], rate: if self.enabled { self.rate as f32 } else { 0.0 }, radius: self.radius as f32 })
    }

    /// Takes the outcome of its placement: the id it got, or why it was refused (warned about
    /// once, when the reason changes).
    pub fn placed(&mut self, id: Option<SourceId>, problem: &str) {
        self.source_id = id.map_or(-1, |id| id.0 as i64);
        if problem != self.placement_problem {
            if !problem.is_empty() {
                let name = self.base().get_name();
                godot_warn!("PipeWaterSource {name}: {problem}");
            }
            self.placement_problem = problem.to_string();
            self.base_mut().update_configuration_warnings();
        }
    }
}

/// Whether `node` is a water a source pours into.
fn is_water(node: &Gd<Node3D>) -> bool {
    node.clone().try_cast::<PipeWater>().is_ok() || node.clone().try_cast::<PipeWaterWorld>().is_ok()
}

/// The editor's warnings for a source node.
pub fn configuration_warnings(water_found: bool, rate: f64, placement_problem: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    if !water_found {
        warnings.push("No water to pour into: put this node under a PipeWater or a PipeWaterWorld, set `water`, or add one to the scene.".to_string());
    }
    if rate == 0.0 {
        warnings.push("rate is 0 m³/s: the source does nothing (positive pours, negative drains).".to_string());
    }
    if !placement_problem.is_empty() {
        warnings.push(format!("The water refused this source: {placement_problem}"));
    }
    warnings
}

/// What a source node asks of its water, in the water's local frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceSpec {
    /// Local X and Z, m.
    pub xz: [f32; 2],
    /// m³/s; negative drains, 0 while disabled.
    pub rate: f32,
    /// m.
    pub radius: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_warns_about_a_source_without_water_one_of_rate_zero_and_a_refused_one() {
        assert!(configuration_warnings(true, 2.0, "").is_empty());
        let all = configuration_warnings(false, 0.0, "position off the grid");
        println!("{all:#?}");
        assert_eq!(all.len(), 3);
        assert!(all[0].contains("No water") && all[1].contains("rate is 0") && all[2].contains("off the grid"));
    }
}
