//! The `PipeWaterSource` nodes that pour into this water: the simulation's sources kept in step
//! with them (see [`crate::water_source`]).

use super::PipeWater;
use crate::water_source::{PipeWaterSource, SourceChange, SOURCE_GROUP};
use godot::prelude::*;
use pipewater_core::{Result as CoreResult, Simulation, SourceId};
use std::collections::{HashMap, HashSet};

impl PipeWater {
    /// Adds, moves, changes and removes the simulation's sources so that they match the source
    /// nodes that pour into this water now, and tells each node where it stands.
    pub(super) fn sync_sources(&mut self) {
        if !self.base().is_inside_tree() {
            return;
        }
        let me = self.base().instance_id();
        let transform = self.global_transform();
        let tree = self.base().get_tree();
        let mut nodes: HashMap<i64, Gd<PipeWaterSource>> = HashMap::new();
        let mut wanted = Vec::new();
        for node in tree.get_nodes_in_group(SOURCE_GROUP).iter_shared() {
            let Ok(source) = node.try_cast::<PipeWaterSource>() else { continue };
            let (mine, spec) = {
                let s = source.bind();
                (s.water_node().is_some_and(|w| w.instance_id() == me), s.spec(&transform))
            };
            if let (true, Some(spec)) = (mine, spec) {
                let key = source.instance_id().to_i64();
                wanted.push((key, spec));
                nodes.insert(key, source);
            }
        }
        let Some(sim) = self.sim.as_mut() else { return };
        let live: HashSet<u32> = sim.source_ids().iter().map(|id| id.0).collect();
        let changes = self.source_placements.plan(&wanted, &live);
        for change in changes {
            let (node, outcome) = match change {
                SourceChange::Add { node, spec } => (node, Some((sim.add_source(spec.xz[0], spec.xz[1], spec.rate, spec.radius), spec))),
                SourceChange::Move { node, id, spec } => (node, Some((moved(sim, id, spec.xz, spec.rate, spec.radius), spec))),
                SourceChange::Rate { node, id, spec } => (node, Some((sim.set_source_rate(id, spec.rate).map(|_| id), spec))),
                SourceChange::Remove { node, id } => {
                    sim.remove_source(id);
                    self.source_placements.forget(node);
                    (node, None)
                }
            };
            let Some((result, spec)) = outcome else { continue };
            let (id, problem) = match result {
                Ok(id) => (Some(id), String::new()),
                Err(e) => (None, format!("{e} (the node stands at local X {:.2}, Z {:.2} of the water, radius {} m)", spec.xz[0], spec.xz[1], spec.radius)),
            };
            self.source_placements.record(node, id, spec);
            if let Some(source) = nodes.get_mut(&node) {
                source.bind_mut().placed(id, &problem);
            }
        }
        self.source_placements.forget_absent(&nodes.keys().copied().collect());
    }
}

/// Moves source `id` and sets its rate; a move the simulation refuses removes the source, so a
/// refused node holds none.
fn moved(sim: &mut Simulation, id: SourceId, xz: [f32; 2], rate: f32, radius: f32) -> CoreResult<SourceId> {
    match sim.move_source(id, xz[0], xz[1], radius) {
        Ok(_) => sim.set_source_rate(id, rate).map(|_| id),
        Err(e) => {
            sim.remove_source(id);
            Err(e)
        }
    }
}
