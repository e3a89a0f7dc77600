//! The `PipeWaterSource` nodes that pour into this water: the simulation's sources kept in step
//! with them (see [`super::water_source`]).

use super::PipeWater;
use super::water_source::{PipeWaterSource, SourceSpec, SOURCE_GROUP};
use godot::classes::Node3D;
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
        let base = self.base().clone().upcast::<Node3D>();
        let Some(sim) = self.sim.as_mut() else { return };
        sync_source_nodes(&base, &mut self.source_placements, sim);
    }
}

/// What keeping its sources in step with the source nodes asks of a water: a grid's simulation
/// or a world.
pub trait NodeSources {
    /// The ids of the sources it holds now.
    fn live_ids(&self) -> HashSet<u32>;
    /// Places a source for a node.
    fn add_for_node(&mut self, spec: SourceSpec) -> CoreResult<SourceId>;
    /// Moves source `id` to the node's place and radius, keeping its rate.
    fn move_only(&mut self, id: SourceId, spec: SourceSpec) -> CoreResult<()>;
    /// Moves source `id` and sets its rate; a move refused removes the source, so a refused node
    /// holds none.
    fn move_for_node(&mut self, id: SourceId, spec: SourceSpec) -> CoreResult<SourceId> {
        if let Err(e) = self.move_only(id, spec) {
            self.remove_for_node(id);
            return Err(e);
        }
        self.set_rate_for_node(id, spec.rate)
    }
    /// Sets the rate of source `id`.
    fn set_rate_for_node(&mut self, id: SourceId, rate: f32) -> CoreResult<SourceId>;
    /// Removes source `id`.
    fn remove_for_node(&mut self, id: SourceId);
}

impl NodeSources for Simulation {
    fn live_ids(&self) -> HashSet<u32> {
        self.source_ids().iter().map(|id| id.0).collect()
    }

    fn add_for_node(&mut self, spec: SourceSpec) -> CoreResult<SourceId> {
        self.add_source(spec.xz[0], spec.xz[1], spec.rate, spec.radius)
    }

    fn move_only(&mut self, id: SourceId, spec: SourceSpec) -> CoreResult<()> {
        self.move_source(id, spec.xz[0], spec.xz[1], spec.radius).map(|_| ())
    }

    fn set_rate_for_node(&mut self, id: SourceId, rate: f32) -> CoreResult<SourceId> {
        self.set_source_rate(id, rate).map(|_| id)
    }

    fn remove_for_node(&mut self, id: SourceId) {
        self.remove_source(id);
    }
}

/// Brings `water`'s sources in step with the source nodes that pour into the node `me` (the
/// water's node) now, as `placements` planned them, and tells each node where it stands.
pub fn sync_source_nodes(me: &Gd<Node3D>, placements: &mut SourcePlacements, water: &mut impl NodeSources) {
    let id = me.instance_id();
    let transform = me.get_global_transform();
    let tree = me.get_tree();
    let mut nodes: HashMap<i64, Gd<PipeWaterSource>> = HashMap::new();
    let mut wanted = Vec::new();
    for node in tree.get_nodes_in_group(SOURCE_GROUP).iter_shared() {
        let Ok(source) = node.try_cast::<PipeWaterSource>() else { continue };
        let (mine, spec) = {
            let s = source.bind();
            (s.water_node().is_some_and(|w| w.instance_id() == id), s.spec(&transform))
        };
        if let (true, Some(spec)) = (mine, spec) {
            let key = source.instance_id().to_i64();
            wanted.push((key, spec));
            nodes.insert(key, source);
        }
    }
    let changes = placements.plan(&wanted, &water.live_ids());
    for change in changes {
        let (node, outcome) = match change {
            SourceChange::Add { node, spec } => (node, Some((water.add_for_node(spec), spec))),
            SourceChange::Move { node, id, spec } => (node, Some((water.move_for_node(id, spec), spec))),
            SourceChange::Rate { node, id, spec } => (node, Some((water.set_rate_for_node(id, spec.rate), spec))),
            SourceChange::Remove { node, id } => {
                water.remove_for_node(id);
                placements.forget(node);
                (node, None)
            }
        };
        let Some((result, spec)) = outcome else { continue };
        let (id, problem) = match result {
            Ok(id) => (Some(id), String::new()),
            Err(e) => (None, format!("{e} (the node stands at local X {:.2}, Z {:.2} of the water, radius {} m)", spec.xz[0], spec.xz[1], spec.radius)),
        };
        placements.record(node, id, spec);
        if let Some(source) = nodes.get_mut(&node) {
            source.bind_mut().placed(id, &problem);
        }
    }
    placements.forget_absent(&nodes.keys().copied().collect());
}

/// One change that brings the simulation's sources in step with the nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceChange {
    /// Add a source for `node`.
    Add { node: i64, spec: SourceSpec },
    /// Move source `id` of `node` (and set its rate).
    Move { node: i64, id: SourceId, spec: SourceSpec },
    /// Change the rate of source `id` of `node`.
    Rate { node: i64, id: SourceId, spec: SourceSpec },
    /// Remove source `id`, whose node is gone.
    Remove { node: i64, id: SourceId },
}

/// Where a node's source stands: its id (`None`: refused) and what it was placed for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Placement {
    id: Option<SourceId>,
    spec: SourceSpec,
}

/// The sources a water placed for its source nodes, by node (instance id).
#[derive(Debug, Default)]
pub struct SourcePlacements {
    placed: HashMap<i64, Placement>,
}

impl SourcePlacements {
    /// The changes that bring the simulation (whose source ids are `live`) in step with the nodes
    /// that ask for `wanted`: a new node is added; a moved or resized one moved; one whose rate
    /// changed gets it; a node whose source is gone from the simulation (removed by a script,
    /// or never there) is added again; a refused node is tried again only once it asks for
    /// something else; the sources of nodes no longer asking are removed. Nodes in order of
    /// `wanted`, removals last in order of node.
    pub fn plan(&self, wanted: &[(i64, SourceSpec)], live: &HashSet<u32>) -> Vec<SourceChange> {
        let mut changes = Vec::new();
        for &(node, spec) in wanted {
            let change = match self.placed.get(&node) {
                None => Some(SourceChange::Add { node, spec }),
                Some(Placement { id: None, spec: refused }) => (*refused != spec).then_some(SourceChange::Add { node, spec }),
                Some(Placement { id: Some(id), .. }) if !live.contains(&id.0) => Some(SourceChange::Add { node, spec }),
                Some(&Placement { id: Some(id), spec: was }) => {
                    if was.xz != spec.xz || was.radius != spec.radius {
                        Some(SourceChange::Move { node, id, spec })
                    } else if was.rate != spec.rate {
                        Some(SourceChange::Rate { node, id, spec })
                    } else {
                        None
                    }
                }
            };
            changes.extend(change);
        }
        let asking: HashSet<i64> = wanted.iter().map(|w| w.0).collect();
        let mut gone: Vec<(i64, Placement)> = self.placed.iter().filter(|(node, _)| !asking.contains(node)).map(|(&n, &p)| (n, p)).collect();
        gone.sort_by_key(|g| g.0);
        changes.extend(gone.into_iter().filter_map(|(node, p)| p.id.map(|id| SourceChange::Remove { node, id })));
        changes
    }

    /// Records where `node` stands after a change: placed as `id` for `spec`, or refused
    /// (`None`).
    pub fn record(&mut self, node: i64, id: Option<SourceId>, spec: SourceSpec) {
        self.placed.insert(node, Placement { id, spec });
    }

    /// Forgets `node` (its source was removed).
    pub fn forget(&mut self, node: i64) {
        self.placed.remove(&node);
    }

    /// Forgets every node whose node is not in `asking` and that holds no source (a refused
    /// node that went away).
    pub fn forget_absent(&mut self, asking: &HashSet<i64>) {
        self.placed.retain(|node, p| asking.contains(node) || p.id.is_some());
    }

    /// Forgets everything: the simulation is new and has none of the sources.
    pub fn clear(&mut self) {
        self.placed.clear();
    }

    /// After a saved state replaced the simulation's sources (`live` ids): keeps the placements
    /// whose id the state has (the same run saved it, so it is the node's source, with its
    /// remainder), forgets the others, which the next sync places again.
    pub fn keep_live(&mut self, live: &HashSet<u32>) {
        self.placed.retain(|_, p| p.id.is_some_and(|id| live.contains(&id.0)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(x: f32, rate: f32) -> SourceSpec {
        SourceSpec { xz: [x, 0.0], rate, radius: 2.0 }
    }

    #[test]
    fn new_nodes_are_added_moved_ones_moved_and_changed_rates_set() {
        let mut placements = SourcePlacements::default();
        let live: HashSet<u32> = [1, 2].into();
        assert_eq!(placements.plan(&[(10, spec(0.0, 1.0))], &live), vec![SourceChange::Add { node: 10, spec: spec(0.0, 1.0) }]);
        placements.record(10, Some(SourceId(1)), spec(0.0, 1.0));
        placements.record(11, Some(SourceId(2)), spec(5.0, -1.0));
        let wanted = [(10, spec(3.0, 1.0)), (11, spec(5.0, 0.0))];
        let changes = placements.plan(&wanted, &live);
        println!("node 10 moved, node 11 disabled: {changes:?}");
        assert_eq!(changes, vec![SourceChange::Move { node: 10, id: SourceId(1), spec: spec(3.0, 1.0) }, SourceChange::Rate { node: 11, id: SourceId(2), spec: spec(5.0, 0.0) }]);
        assert!(placements.plan(&[(10, spec(0.0, 1.0)), (11, spec(5.0, -1.0))], &live).is_empty(), "nothing changed, nothing to do");
    }

    #[test]
    fn freed_nodes_lose_their_source_and_sources_removed_by_scripts_come_back() {
        let mut placements = SourcePlacements::default();
        placements.record(10, Some(SourceId(1)), spec(0.0, 1.0));
        placements.record(11, Some(SourceId(2)), spec(5.0, 1.0));
        let changes = placements.plan(&[(10, spec(0.0, 1.0))], &[1].into());
        println!("node 11 freed: {changes:?}");
        assert_eq!(changes, vec![SourceChange::Remove { node: 11, id: SourceId(2) }]);
        let changes = placements.plan(&[(10, spec(0.0, 1.0)), (11, spec(5.0, 1.0))], &[2].into());
        println!("source 1 removed by a script: {changes:?}");
        assert_eq!(changes, vec![SourceChange::Add { node: 10, spec: spec(0.0, 1.0) }]);
    }

    #[test]
    fn a_refused_node_is_tried_again_only_when_it_asks_for_something_else() {
        let mut placements = SourcePlacements::default();
        placements.record(10, None, spec(900.0, 1.0));
        assert!(placements.plan(&[(10, spec(900.0, 1.0))], &HashSet::new()).is_empty());
        assert_eq!(placements.plan(&[(10, spec(1.0, 1.0))], &HashSet::new()), vec![SourceChange::Add { node: 10, spec: spec(1.0, 1.0) }]);
        assert!(placements.plan(&[], &HashSet::new()).is_empty(), "a refused node that goes has nothing to remove");
        placements.forget_absent(&HashSet::new());
        assert!(placements.placed.is_empty());
    }

    #[test]
    fn a_loaded_state_keeps_the_placements_whose_sources_it_holds() {
        let mut placements = SourcePlacements::default();
        placements.record(10, Some(SourceId(1)), spec(0.0, 1.0));
        placements.record(11, Some(SourceId(7)), spec(5.0, 1.0));
        placements.keep_live(&[1, 2].into());
        let changes = placements.plan(&[(10, spec(0.0, 1.0)), (11, spec(5.0, 1.0))], &[1, 2].into());
        println!("after loading a state with sources 1 and 2: {changes:?}");
        assert_eq!(changes, vec![SourceChange::Add { node: 11, spec: spec(5.0, 1.0) }]);
    }
}
