//! `PipeWaterWorld.terrain_source`: the world's ground read from a Terrain3D, an HTerrain or a
//! `CollisionShape3D` holding a `HeightMapShape3D`, through the very code `PipeWater` reads them
//! with ([`crate::node::terrain_source::Kind`]: resolution, reading, the edit signals) and the
//! same plain-Rust resampling ([`pipewater_core::terrain_source`]).
//!
//! A world is too large to read in one frame (a 16384² world is 268 M cells), so the ground comes
//! in slices of [`READ_SLICE_CELLS`]² cells, nearest the focus first, as many a physics frame as
//! fit in `terrain_read_budget_ms` (at least one). The water does not wait for the whole world:
//! before each frame the slices within the frame's reach of the water (and of what edits and
//! sources are about to pour) are read first, whatever the budget, so no water steps over ground
//! not yet read, and the rest comes in behind. Edits the source reports afterwards are read the
//! same way, slice by slice within the budget, and written into the world's terrain, which the
//! host holds for every page: they reach resident and non-resident pages alike.

use super::PipeWaterWorld;
use crate::node::terrain_source::{disconnect_edits, Edited, Kind, TerrainHoles};
use godot::prelude::*;
use pipewater_core::terrain_source::{changed_vertices, context_around, ground_of_cells, slices_nearest_first, slices_of, VertexRect};
use pipewater_core::{CellRect, Grid, SourceId};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Cells a side of one slice of a read: 16 384 cells, about 1–2 ms from a Terrain3D here, so that
/// a frame keeps its budget to within about one slice's time.
pub const READ_SLICE_CELLS: u32 = 128;
/// Most `terrain_read_budget_ms`, ms.
pub const MAX_READ_BUDGET_MS: f64 = 1000.0;

/// The world's link to its `terrain_source`.
#[derive(Default)]
pub struct WorldTerrainLink {
    /// The path the link was resolved (or refused) for; a different `terrain_source` resolves
    /// again.
    path: Option<NodePath>,
    kind: Option<Kind>,
    edited: Rc<RefCell<Vec<Edited>>>,
    connection: Option<(Gd<Object>, StringName, Callable)>,
    /// A shape's map data as last read (a shape says only that it changed).
    shape_copy: Vec<f32>,
    shape_width: usize,
    /// Whether `terrain_source` was set and not yet resolved (the world waits for it).
    unresolved: bool,
    /// Whether the world's ground came from a save (which holds what the game dug, and the
    /// drains of its holes): the source is then followed, not read whole again.
    ground_from_save: bool,
    /// A Terrain3D's regions as listed for the reads under way: listed again when the source
    /// reports an edit (Terrain3D reports regions added and removed by `maps_edited`).
    regions: Option<crate::node::terrain_source::Regions>,
    /// Whether the whole world must be read (a new world, a new source, new `terrain_holes`).
    wants_whole: bool,
    /// Slices of the whole read in the order they are due (some may have been read already,
    /// for the water's reach), the slices not read yet (by their first cell over
    /// [`READ_SLICE_CELLS`]), and how many the read had.
    whole_left: VecDeque<CellRect>,
    unread: HashSet<(u32, u32)>,
    whole_slices: usize,
    /// Physics frames the last whole read took, and whether one is under way.
    whole_frames: u64,
    /// Slices of reported edits still to read.
    edits_left: VecDeque<CellRect>,
    holes_read: Option<TerrainHoles>,
    /// Drains for hole cells (`TERRAIN_HOLES_DRAIN`), by cell.
    drains: HashMap<(u32, u32), SourceId>,
    /// Slices read so far, their cells, the last one.
    reads: u64,
    cells_read: u64,
    last_rect: Rect2i,
    /// Source values that were not finite outside its holes since the last report.
    not_finite: u64,
    /// Longest frame's reading and longest slice, µs.
    frame_usec_max: u64,
    slice_usec_max: u64,
}

impl WorldTerrainLink {
    /// A new world holds none of the ground read and none of the drains: it is read whole.
    pub fn world_made(&mut self) {
        self.drains.clear();
        self.ground_from_save = false;
        self.wants_whole = true;
        self.whole_left.clear();
        self.unread.clear();
        self.edits_left.clear();
    }

    /// A loaded world holds the ground and drains of its save: the source's edits are followed
    /// from now on, but it is not read whole (that would undo what the game dug, and place the
    /// saved drains a second time); `bake_terrain()` or setting `terrain_source` reads it. The
    /// save's drains of holes (`hole_drains`) are this link's again: an edit of the source
    /// replaces them where it reaches.
    pub fn world_loaded(&mut self, hole_drains: Vec<(SourceId, (u32, u32))>) {
        self.drains = hole_drains.into_iter().map(|(id, cell)| (cell, id)).collect();
        self.ground_from_save = true;
        self.wants_whole = false;
        self.whole_left.clear();
        self.unread.clear();
        self.edits_left.clear();
    }

    /// Forgets the source: the next frame resolves `terrain_source` again (`source_set`: and the
    /// world waits for it until then).
    pub fn forget(&mut self, source_set: bool) {
        self.unresolved = source_set;
        self.ground_from_save &= !source_set;
        self.regions = None;
        disconnect_edits(&mut self.connection);
        self.path = None;
        self.kind = None;
        self.whole_left.clear();
        self.unread.clear();
        self.edits_left.clear();
        self.edited.borrow_mut().clear();
        self.wants_whole = true;
    }

    /// Stops reading a source that failed, keeping the ground read so far (the world steps on it).
    fn refuse(&mut self) {
        self.unresolved = false;
        self.regions = None;
        disconnect_edits(&mut self.connection);
        self.kind = None;
        self.whole_left.clear();
        self.unread.clear();
        self.edits_left.clear();
        self.edited.borrow_mut().clear();
    }

    /// Whether part of the world's ground is still to come: a whole read under way or about to
    /// start.
    pub fn waiting(&self) -> bool {
        self.unresolved || (self.kind.is_some() && (self.wants_whole || !self.unread.is_empty()))
    }

    /// Whether the world may step: its source is resolved and a whole read, if one is due, has
    /// begun (what is within the water's reach is then read before each frame).
    pub fn may_step(&self) -> bool {
        !self.unresolved && !(self.kind.is_some() && self.wants_whole)
    }

}

#[godot_api(secondary)]
impl PipeWaterWorld {
    /// Reads the ground of the whole world from `terrain_source` now, on the calling thread
    /// (a loading screen's or a tool's call: a 4096² world takes about as long as 16.7 M cells of
    /// the source take to copy), water kept; afterwards the world steps. After moving the node or
    /// the source, or changing the source in ways it does not signal. False when there is no
    /// source or it cannot be read (`get_last_error()`).
    #[func]
    fn bake_terrain(&mut self) -> bool {
        if !self.ensure_world() {
            return false;
        }
        if self.terrain_source.is_empty() {
            self.errors.reject("bake_terrain: terrain_source is empty: set it to a Terrain3D, an HTerrain or a CollisionShape3D holding a HeightMapShape3D".into());
            return false;
        }
        // Resolved again: a source refused before may be usable now.
        self.terrain_link.forget(true);
        self.read_terrain_source(None);
        self.terrain_link.kind.is_some() && !self.terrain_link.waiting()
    }

    /// Whether the world has its whole ground: false while `terrain_source` is still being read
    /// (the water steps meanwhile, on ground read before each frame around it); true once it is
    /// in, and with no source or one refused (`get_last_error()` says why; the world then steps
    /// on the ground it has).
    #[func]
    fn is_terrain_source_read(&self) -> bool {
        !self.terrain_link.waiting()
    }

    /// How the reading of `terrain_source` goes, a Dictionary: `read` (the whole world is in),
    /// `slices_left` and `whole_slices` of the whole read (slices of 128² cells), `frames` (physics
    /// frames the last whole read took), `edit_slices_left`, `reads` (slices read so far, whole
    /// and edits), `cells_read`, `last_rect` (`Rect2i` of cells read last), `frame_usec_max` and
    /// `slice_usec_max` (the longest frame's reading and the longest slice since the whole read
    /// began, µs), `drains` (hole
    /// cells draining, `TERRAIN_HOLES_DRAIN`). For tests and tools.
    #[func]
    fn get_terrain_source_stats(&self) -> VarDictionary {
        let link = &self.terrain_link;
        let mut d = VarDictionary::new();
        d.set("read", !link.waiting() && link.kind.is_some());
        d.set("slices_left", link.unread.len() as i64);
        d.set("whole_slices", link.whole_slices as i64);
        d.set("frames", link.whole_frames as i64);
        d.set("edit_slices_left", link.edits_left.len() as i64);
        d.set("reads", link.reads as i64);
        d.set("cells_read", link.cells_read as i64);
        d.set("last_rect", link.last_rect);
        d.set("frame_usec_max", link.frame_usec_max as i64);
        d.set("slice_usec_max", link.slice_usec_max as i64);
        d.set("drains", link.drains.len() as i64);
        d
    }
}

impl PipeWaterWorld {
    /// The world's grid of cells.
    fn world_grid(&self) -> Option<Grid> {
        let water = self.water.as_ref()?;
        let [width, height] = water.size();
        Some(Grid { width, height, cell_size: water.cell_size() })
    }

    /// Resolves `terrain_source` when it changed, connects to its edits, and reads what is due:
    /// slices of the whole read (nearest the focus first), then slices of the edits reported,
    /// until `budget` is spent (at least one slice a call; all of them without a budget).
    pub(super) fn read_terrain_source(&mut self, budget: Option<Duration>) {
        let started = Instant::now();
        if self.terrain_source.is_empty() || self.water.is_none() {
            return;
        }
        if self.terrain_link.path.as_ref() != Some(&self.terrain_source) && !self.resolve_world_terrain_source() {
            return;
        }
        if !self.terrain_link.kind.as_ref().is_some_and(Kind::alive) {
            if self.terrain_link.kind.is_some() {
                self.errors.reject(format!("terrain_source: {} was freed; the world keeps the ground read from it and steps on it (set terrain_source again to read another)", self.terrain_source));
                self.terrain_link.refuse();
            }
            return;
        }
        let Some(grid) = self.world_grid() else { return };
        if std::mem::take(&mut self.terrain_link.ground_from_save) {
            self.terrain_link.wants_whole = false;
            self.terrain_link.holes_read = Some(self.terrain_holes);
        }
        if self.terrain_link.holes_read != Some(self.terrain_holes) {
            self.terrain_link.wants_whole = true;
        }
        if self.terrain_link.wants_whole && !self.begin_whole_read(&grid) {
            return;
        }
        self.queue_reported_edits(&grid);
        let was_whole = !self.terrain_link.unread.is_empty();
        if was_whole {
            self.terrain_link.whole_frames += 1;
        }
        loop {
            let link = &mut self.terrain_link;
            let rect = match link.whole_left.pop_front() {
                // Read already, within the water's reach.
                Some(rect) if !link.unread.remove(&slice_key(rect)) => continue,
                Some(rect) => rect,
                None => match link.edits_left.pop_front() {
                    Some(rect) => rect,
                    None => break,
                },
            };
            if !self.read_slice(&grid, rect) {
                return;
            }
            if budget.is_some_and(|b| started.elapsed() >= b) {
                break;
            }
        }
        let spent = started.elapsed().as_micros() as u64;
        self.terrain_link.frame_usec_max = self.terrain_link.frame_usec_max.max(spent);
        if self.terrain_link.not_finite > 0 && self.terrain_link.unread.is_empty() {
            self.errors.reject(format!(
                "terrain_source: {} heights of {} are not finite (NaN or INF) outside its holes; their cells are read as holes (terrain_holes: walls, or drains at their rim)",
                self.terrain_link.not_finite, self.terrain_source
            ));
            self.terrain_link.not_finite = 0;
        }
        self.whole_read_done(was_whole);
    }

    /// Reads now, whatever the budget, the slices of the whole read that a frame of `delta` s
    /// may reach (`WorldWater::pages_within_reach`): the ground under the water, beside it and
    /// under what is about to be poured, before the frame steps.
    pub(super) fn read_ground_within_reach(&mut self, delta: f32) {
        if self.terrain_link.unread.is_empty() {
            return;
        }
        let (Some(grid), Some(water)) = (self.world_grid(), self.water.as_ref()) else { return };
        let side = READ_SLICE_CELLS;
        let mut due = Vec::new();
        for page in water.pages_within_reach(delta) {
            for sy in page.y / side..=(page.y + page.height - 1) / side {
                for sx in page.x / side..=(page.x + page.width - 1) / side {
                    if self.terrain_link.unread.remove(&(sx, sy)) {
                        let (x, y) = (sx * side, sy * side);
                        due.push(CellRect { x, y, width: side.min(grid.width - x), height: side.min(grid.height - y) });
                    }
                }
            }
        }
        for rect in due {
            if !self.read_slice(&grid, rect) {
                return;
            }
        }
        self.whole_read_done(true);
    }

    /// Once the last slice of a whole read is in (`was_whole`: one was under way): the window
    /// shows the new ground, and `terrain_source_read` is emitted.
    fn whole_read_done(&mut self, was_whole: bool) {
        if was_whole && self.terrain_link.unread.is_empty() && self.terrain_link.kind.is_some() {
            self.terrain_link.whole_left.clear();
            self.window_stale = true;
            self.base_mut().emit_signal("terrain_source_read", &[]);
        }
    }

    /// Resolves `terrain_source` (reported, and not tried again until it is set again, when it
    /// cannot be used) and connects to its edits.
    fn resolve_world_terrain_source(&mut self) -> bool {
        if !self.base().is_inside_tree() {
            // Tried again once the node is in the tree.
            return false;
        }
        self.terrain_link.forget(false);
        self.terrain_link.path = Some(self.terrain_source.clone());
        let Some(node) = self.base().get_node_or_null(&self.terrain_source) else {
            self.errors.reject(format!("terrain_source: no node at {} (valid: a path to a Terrain3D, an HTerrain or a CollisionShape3D holding a HeightMapShape3D); the world keeps its ground", self.terrain_source));
            return false;
        };
        let Some(kind) = self.errors.accept(Kind::resolve(node)) else { return false };
        if matches!(kind, Kind::Baked { .. }) {
            self.errors.reject(format!("terrain_source: {} is static geometry, which a world does not bake by rays (one a cell would be 16 M rays at 4096²); valid: a Terrain3D, an HTerrain or a CollisionShape3D holding a HeightMapShape3D; the world keeps its ground", self.terrain_source));
            return false;
        }
        let owner = self.to_gd().upcast::<Object>();
        self.terrain_link.connection = kind.connect_edits(&owner, self.terrain_link.edited.clone(), "PipeWaterWorld");
        self.terrain_link.kind = Some(kind);
        true
    }

    /// Starts a whole read: refused (reported, the source dropped, the world keeps its ground and
    /// steps) when the world reaches past the source.
    fn begin_whole_read(&mut self, grid: &Grid) -> bool {
        let link = &mut self.terrain_link;
        link.wants_whole = false;
        link.regions = None;
        link.holes_read = Some(self.terrain_holes);
        link.edits_left.clear();
        link.edited.borrow_mut().clear();
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return false };
        let covered = kind.placement(&water, grid).and_then(|p| kind.bounds(grid).and_then(|b| p.check_covered_by([grid.width, grid.height], b).map_err(|e| format!("terrain_source: {e}"))));
        if let Kind::Shape { shape, .. } = kind {
            self.terrain_link.shape_copy = shape.get_map_data().to_vec();
            self.terrain_link.shape_width = shape.get_map_width().max(1) as usize;
        }
        if let Err(e) = covered {
            self.errors.reject(format!("{e}; the world keeps its ground and steps on it"));
            self.terrain_link.refuse();
            return false;
        }
        let slices = slices_nearest_first([grid.width, grid.height], READ_SLICE_CELLS, self.focus_cells());
        self.terrain_link.whole_slices = slices.len();
        self.terrain_link.unread = slices.iter().map(|&rect| slice_key(rect)).collect();
        self.terrain_link.whole_left = slices.into();
        self.terrain_link.whole_frames = 0;
        // The longest frame and slice of this read, not of one before it.
        self.terrain_link.frame_usec_max = 0;
        self.terrain_link.slice_usec_max = 0;
        true
    }

    /// Turns the edits the source reported into slices of cells to read.
    fn queue_reported_edits(&mut self, grid: &Grid) {
        let edits: Vec<Edited> = self.terrain_link.edited.borrow_mut().drain(..).collect();
        if edits.is_empty() {
            return;
        }
        self.terrain_link.regions = None;
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return };
        let Ok(placement) = kind.placement(&water, grid) else { return };
        let shape = match kind {
            Kind::Shape { shape, .. } => Some(shape.clone()),
            _ => None,
        };
        for edit in edits {
            let changed = match edit {
                Edited::Vertices(rect) => Some(rect),
                Edited::Whole => match &shape {
                    Some(shape) => {
                        let now = shape.get_map_data().to_vec();
                        let width = shape.get_map_width().max(1) as usize;
                        let link = &mut self.terrain_link;
                        let rect = if width == link.shape_width { changed_vertices(&link.shape_copy, &now, width) } else { Some(VertexRect { u0: 0, v0: 0, u1: width as i64 - 1, v1: (now.len() / width) as i64 - 1 }) };
                        link.shape_copy = now;
                        link.shape_width = width;
                        rect
                    }
                    _ => None,
                },
            };
            if let Some(cells) = changed.and_then(|r| placement.cells_touched(grid, r)) {
                self.terrain_link.edits_left.extend(slices_of(cells, READ_SLICE_CELLS));
            }
        }
    }

    /// Reads the cells of `rect` from the source and sets them as the world's ground, water kept
    /// (on the host for every page, on the device for resident ones), with the drains of its
    /// holes. False, reported and the source dropped, when the source cannot be read.
    fn read_slice(&mut self, grid: &Grid, rect: CellRect) -> bool {
        let started = Instant::now();
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return false };
        if self.terrain_link.regions.is_none() {
            match kind.terrain3d_regions() {
                Some(Ok(listed)) => self.terrain_link.regions = Some(listed),
                Some(Err(e)) => {
                    self.errors.reject(format!("{e}; the world keeps the ground read so far and steps on it"));
                    self.terrain_link.refuse();
                    return false;
                }
                None => {}
            }
        }
        let Some(kind) = &self.terrain_link.kind else { return false };
        let context = context_around(rect, grid.width, grid.height);
        let listed = self.terrain_link.regions.as_deref();
        let read = kind.placement(&water, grid).and_then(|placement| kind.read(placement.vertices_for(context), listed).map(|(window, bad)| (placement, window, bad)));
        let (placement, window, not_finite) = match read {
            Ok(read) => read,
            Err(e) => {
                self.errors.reject(format!("{e}; the world keeps the ground read so far and steps on it"));
                self.terrain_link.refuse();
                return false;
            }
        };
        let (heights, drains, _) = ground_of_cells(&placement, &window, context, rect, self.terrain_holes.into());
        let result = self.water.as_mut().map(|w| w.set_terrain_region(rect.x, rect.y, rect.width, rect.height, &heights));
        if self.core("terrain_source", result).is_none() {
            self.terrain_link.refuse();
            return false;
        }
        self.replace_drains(grid, rect, drains);
        let link = &mut self.terrain_link;
        // Counted in the context once per slice: bad values near a border count in both.
        link.not_finite += not_finite as u64;
        link.reads += 1;
        link.cells_read += rect.cell_count() as u64;
        link.last_rect = Rect2i::new(Vector2i::new(rect.x as i32, rect.y as i32), Vector2i::new(rect.width as i32, rect.height as i32));
        link.slice_usec_max = link.slice_usec_max.max(started.elapsed().as_micros() as u64);
        self.window_stale = true;
        true
    }

    /// Removes the drains of the cells of `rect` and places one on each of `new`: a one-cell drain
    /// that takes up to the most a cell holds each second, as `PipeWater` places them.
    fn replace_drains(&mut self, grid: &Grid, rect: CellRect, new: Vec<(u32, u32)>) {
        let Some(water) = self.water.as_mut() else { return };
        let inside = |&(x, y): &(u32, u32)| x >= rect.x && y >= rect.y && x < rect.x + rect.width && y < rect.y + rect.height;
        let old: Vec<(u32, u32)> = self.terrain_link.drains.keys().copied().filter(inside).collect();
        for cell in old {
            if let Some(id) = self.terrain_link.drains.remove(&cell) {
                water.remove_source(id);
            }
        }
        let dx = grid.cell_size;
        let rate = (pipewater_core::MAX_DEPTH * dx * dx * 0.5).min(pipewater_core::sources::MAX_SOURCE_RATE);
        for (x, y) in new {
            let (lx, lz) = ((x as f64 + 0.5) * dx as f64 - grid.width as f64 * dx as f64 / 2.0, (y as f64 + 0.5) * dx as f64 - grid.height as f64 * dx as f64 / 2.0);
            match water.add_hole_drain(lx as f32, lz as f32, -rate) {
                Ok(id) => {
                    self.terrain_link.drains.insert((x, y), id);
                }
                Err(e) => {
                    self.errors.reject(format!("terrain_source: a drain for the hole at cell ({x}, {y}) was refused: {}", crate::errors::core_message(&e)));
                    return;
                }
            }
        }
    }
}

/// A slice of the whole read by its first cell over [`READ_SLICE_CELLS`] (slices start on
/// multiples of it).
fn slice_key(rect: CellRect) -> (u32, u32) {
    (rect.x / READ_SLICE_CELLS, rect.y / READ_SLICE_CELLS)
}
