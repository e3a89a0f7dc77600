//! The `PipeWaterSource` nodes that pour into a world: its sources kept in step with them by the
//! same plan as a grid's (`node/sources.rs`). A world's save holds the sources it placed for
//! nodes, marked so: a world made from a baked `initial_state` drops them, and the nodes place
//! theirs again.

use super::PipeWaterWorld;
use crate::node::sources::{sync_source_nodes, NodeSources};
use crate::node::water_source::SourceSpec;
use godot::classes::Node3D;
use godot::prelude::*;
use pipewater_core::world_water::WorldWater;
use pipewater_core::{Result as CoreResult, SourceId};
use std::collections::HashSet;

impl NodeSources for WorldWater {
    fn live_ids(&self) -> HashSet<u32> {
        self.source_ids().iter().map(|id| id.0).collect()
    }

    fn add_for_node(&mut self, spec: SourceSpec) -> CoreResult<SourceId> {
        self.add_node_source(spec.xz[0], spec.xz[1], spec.rate, spec.radius)
    }

    fn move_only(&mut self, id: SourceId, spec: SourceSpec) -> CoreResult<()> {
        self.move_source(id, spec.xz[0], spec.xz[1], spec.radius)
    }

    fn set_rate_for_node(&mut self, id: SourceId, rate: f32) -> CoreResult<SourceId> {
        self.set_source_rate(id, rate).map(|()| id)
    }

    fn remove_for_node(&mut self, id: SourceId) {
        self.remove_source(id);
    }
}

impl PipeWaterWorld {
    /// Adds, moves, changes and removes the world's sources so that they match the source nodes
    /// that pour into it now, and tells each node where it stands.
    pub(super) fn sync_sources(&mut self) {
        if !self.base().is_inside_tree() {
            return;
        }
        let base = self.base().clone().upcast::<Node3D>();
        let Some(water) = self.water.as_mut() else { return };
        sync_source_nodes(&base, &mut self.source_placements, water);
    }
}
