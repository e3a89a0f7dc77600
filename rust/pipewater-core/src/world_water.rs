//! Water for a whole world through the same calls as a dense grid: [`WorldWater`] puts the
//! model's parameters, world coordinates in metres, frames of any length, sources, brushes and
//! queries over the world in pages ([`crate::backend::gpu::world::World`]), and reads the water
//! around a point (a camera, a player) as texels of the layouts the dense grid's textures use.
//!
//! Coordinates are the dense grid's: local metres with the origin at the world's centre, cell
//! `(x, y)` spanning `[x, x+1) × [y, y+1)` cell sizes from the corner at `-extent / 2`. Every read
//! builds the [`State`] of a small region (one cell of margin around what is asked, so that each
//! cell's velocity sees its neighbours' pipes) and runs the dense grid's own texel and sampling
//! functions on it, so a world and a dense grid answer the same question the same way.
//!
//! Floating bodies couple with a world as with a dense grid ([`WorldWater::couple_bodies`], in
//! `world_water/bodies.rs`), and the dense grid's detail wave layer runs over a window around
//! the focus ([`WorldWater::set_detail`], in `world_water/detail.rs`). What the world does not do
//! yet, and refuses by name: the triangular lattice, erosion and cooling (no world pass).

use crate::backend::gpu::world::{CoarseParams, CoarseRead, World, WorldReport, WorldSaveJob, COARSE_SUMS};
use crate::error::{check_range, Error, Result};
use crate::frame::FrameReport;
use crate::grid::{CellRect, Grid};
use crate::ledger::MassLedger;
use crate::lattice::Lattice;
use crate::params::{Boundary, CrossSection, NeighbourMode, Params};
use crate::pipes::{fixed_flux_per_stored, StepConstants};
use crate::quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
use crate::simulation::{distribute_quanta, sample_surface_on};
use crate::simulation::{inflow_quanta_per_step, MAX_EDIT_VOLUME, MAX_FRAME_DELTA, MAX_TERRAIN_DELTA, MIN_STEP};
use crate::sources::SourceId;
use crate::world_save::{WorldSave, WorldSource};
use crate::state::{Snapshot, State};

mod authoring;
mod bodies;
mod detail;
pub use authoring::{RecordedChanges, RegionValues, FILL_REACH, MAX_BRUSH_REACH, MAX_REGION_CELLS, RECORD_BLOCK};
pub use bodies::MAX_BODY_REGION_SIDE;
pub use detail::{WorldDetail, WorldDetailWindow};

/// Largest window [`WorldWater::read_window`] reads in one call, cells a side: the dense grid's
/// largest side.
pub const MAX_WINDOW_SIDE: u32 = 4096;

/// Largest stride of [`WorldWater::read_coarse_window`], cells a texel side.
pub const MAX_COARSE_STRIDE: u32 = 256;
/// Largest coarse window [`WorldWater::read_coarse_window`] reads, texels a side.
pub const MAX_COARSE_TEXELS: u32 = 4096;
/// Pages a coarse window may span and still have every dry block's ground summed cell by cell
/// (a 7168² area of 56² pages): past it, blocks beside no water take their pages' means
/// ([`WorldWater::begin_coarse_window`]), so that a far level over a whole 16384² world costs the
/// host a millisecond, not 15–22 ms, a read.
pub const EXACT_GROUND_PAGES: u64 = 16_384;

/// Depth (m) the step length assumes before any water was seen: the step is chosen for waves in
/// water at least this deep.
const SMALLEST_DEPTH_BOUND: f32 = 1.0;

/// Largest [`WorldWater::set_far_step_every`]: far pages step on one frame in this many (at 60
/// frames a second, once in about 17 s), or never with 0.
pub const MAX_FAR_STEP_EVERY: u32 = 1024;
/// Largest focus radius, cells ([`WorldWater::set_focus`]).
pub const MAX_FOCUS_RADIUS_CELLS: f64 = 1.0e9;
/// Largest |coordinate| of a focus position, cells: a focus may lie off the world (a camera
/// beyond its edge), not anywhere.
pub const MAX_FOCUS_CELLS: f64 = 1.0e10;

/// Which far water steps when ([`WorldWater::set_focus`], [`WorldWater::set_far_step_every`]).
#[derive(Debug, Clone, PartialEq)]
struct FocusPolicy {
    /// Focus positions, continuous cell coordinates.
    cells: Vec<[f64; 2]>,
    /// Cells from the nearest focus past which a page is far.
    radius: f64,
    /// Far pages step on frames whose count is a multiple of this; 0: never; 1: every frame.
    every: u32,
    /// Frames stepped so far, counted for the rhythm.
    frame: u64,
    /// Whether the last frame held a page back.
    holding: bool,
}

/// Water and ground around a point of the world, in the dense grid's texel layouts: one texel a
/// cell ([`WorldWater::read_window`]) or a block of `stride × stride` cells
/// ([`WorldWater::read_coarse_window`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WorldWindow {
    /// First cell (x, y) of the window.
    pub origin: [u32; 2],
    /// Texels along x and y (cells, at a stride of 1).
    pub size: [u32; 2],
    /// Cells along a texel's side: 1 for [`WorldWater::read_window`].
    pub stride: u32,
    /// Height texels, row-major: (surface m, depth m, terrain m, 1 if wet else 0), as
    /// [`Snapshot::height`].
    pub height: Vec<[f32; 4]>,
    /// Flow texels, row-major: (velocity x m/s, velocity z m/s, speed m/s, discharge m²/s), as
    /// [`Snapshot::flow`].
    pub flow: Vec<[f32; 4]>,
    /// Deepest water in the window, m.
    pub max_depth: f32,
    /// Fastest water in the window, m/s.
    pub max_speed: f32,
}

/// A read of the far water on its way ([`WorldWater::begin_coarse_window`]).
pub struct CoarseWindowJob {
    read: CoarseRead,
}

impl CoarseWindowJob {
    /// First cell (x, y) and blocks (x, y) of the area read, and the stride.
    pub fn area(&self) -> ([u32; 2], [u32; 2], u32) {
        let p = self.read.params();
        (p.origin, p.blocks, p.stride)
    }
}

/// A world in pages behind the calls a game makes of a dense grid (module docs).
pub struct WorldWater {
    world: World,
    params: Params,
    cell_size: f32,
    sources: Vec<WorldSource>,
    next_source: u32,
    /// The sources and the inflow edges' remainders as they were when a save on its way recorded
    /// its copy of the water.
    sources_at_copy: Option<(Vec<WorldSource>, [f64; 4])>,
    inflow_carry: [f64; 4],
    carried_time: f32,
    /// Deepest water the step length assumes, m: grows with what edits, sources, edges and reads
    /// show, never shrinks (a longer step than the water allows ripples; a shorter one only costs).
    depth_bound: f32,
    /// Fastest water the step length assumes when momentum is advected, m/s.
    speed_bound: f32,
    /// Water in the world when it was made or loaded, quanta.
    initial_total: i64,
    elapsed: f64,
    last_report: FrameReport,
    focus: FocusPolicy,
    /// The detail wave layer over the window around the focus, while it is on
    /// (`world_water/detail.rs`).
    detail: Option<WorldDetail>,
    /// Whether the detail layer runs on the host's reference kernel rather than the device.
    detail_on_host: bool,
    /// What the edits change while an editor's stroke is open (`world_water/authoring.rs`).
    record: Option<authoring::ChangeRecord>,
}

impl WorldWater {
    /// A dry world of `width × height` cells of `cell_size` m, its ground at `ground` m, stepping
    /// with `params`. Refused, naming the setting, for what the world does not do yet.
    pub fn new(width: u32, height: u32, cell_size: f32, ground: f32, params: Params) -> Result<WorldWater> {
        check_range("cell_size", cell_size, crate::grid::CELL_SIZE_RANGE.0, crate::grid::CELL_SIZE_RANGE.1)?;
        Self::check_params(&params)?;
        let world = World::new(width, height, ground)?;
        Ok(Self::around(world, cell_size, params, 0))
    }

    fn around(world: World, cell_size: f32, params: Params, initial_total: i64) -> WorldWater {
        let mut water = WorldWater {
            world,
            params,
            cell_size,
            sources: Vec::new(),
            next_source: 1,
            inflow_carry: [0.0; 4],
            carried_time: 0.0,
            depth_bound: SMALLEST_DEPTH_BOUND,
            speed_bound: 0.0,
            initial_total,
            elapsed: 0.0,
            last_report: FrameReport::default(),
            focus: FocusPolicy { cells: Vec::new(), radius: 0.0, every: 1, frame: 0, holding: false },
            sources_at_copy: None,
            detail: None,
            detail_on_host: false,
            record: None,
        };
        water.raise_depth_bound_for_edges();
        water
    }

    fn check_params(params: &Params) -> Result<()> {
        params.validate()?;
        if params.neighbours == NeighbourMode::Triangular {
            return Err(Error::invalid("neighbours", "Triangular", "Four or Eight: a world in pages steps the square grid only"));
        }
        if params.erosion.enabled {
            return Err(Error::invalid("erosion", "on", "off: a world in pages has no erosion pass"));
        }
        if params.solidify_rate > 0.0 {
            return Err(Error::invalid("solidify_rate", params.solidify_rate, "0: a world in pages has no cooling pass"));
        }
        Ok(())
    }

    /// The paged world underneath, for its report, saves and figures.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The paged world underneath, mutably (saves, residency tests).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Cells along x and y.
    pub fn size(&self) -> [u32; 2] {
        self.world.size()
    }

    /// Side of a cell, m.
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// Size of the world along local X and Z, m.
    pub fn extent(&self) -> [f32; 2] {
        let [w, h] = self.size();
        [w as f32 * self.cell_size, h as f32 * self.cell_size]
    }

    /// The parameters the world steps with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Changes the parameters (refused, keeping the old ones, as [`WorldWater::new`] refuses).
    pub fn set_params(&mut self, params: Params) -> Result<()> {
        Self::check_params(&params)?;
        self.params = params;
        self.raise_depth_bound_for_edges();
        Ok(())
    }

    /// Water one quantum of depth on one cell holds, m³.
    pub fn quantum_volume(&self) -> f64 {
        DEPTH_QUANTUM as f64 * self.cell_size as f64 * self.cell_size as f64
    }

    /// What the pages hold and did.
    pub fn report(&self) -> WorldReport {
        self.world.report()
    }

    /// Simulated time so far, s.
    pub fn elapsed(&self) -> f64 {
        self.elapsed
    }

    /// What the last frame did.
    pub fn last_report(&self) -> FrameReport {
        self.last_report
    }

    /// Continuous cell coordinates of a local point (cell `(x, y)` spans `[x, x+1) × [y, y+1)`).
    fn to_cells(&self, x: f32, z: f32) -> [f64; 2] {
        let [w, h] = self.size();
        [x as f64 / self.cell_size as f64 + w as f64 * 0.5, z as f64 / self.cell_size as f64 + h as f64 * 0.5]
    }

    /// A region of cells around the continuous cell point `at`, reaching `reach` cells each way
    /// (clipped to the world), and the dense grid of its size: `None` off the world.
    fn region_around(&self, at: [f64; 2], reach: f64) -> Option<(u32, u32, Grid)> {
        let [w, h] = self.size();
        let (x0, y0) = ((at[0] - reach).floor().max(0.0), (at[1] - reach).floor().max(0.0));
        let (x1, y1) = ((at[0] + reach).ceil().min(w as f64), (at[1] + reach).ceil().min(h as f64));
        if x1 <= x0 || y1 <= y0 || x0 >= w as f64 || y0 >= h as f64 {
            return None;
        }
        // A dense grid has at least two cells a side.
        let (x0, y0) = (x0.min((w as f64 - 2.0).max(0.0)) as u32, y0.min((h as f64 - 2.0).max(0.0)) as u32);
        let (rw, rh) = ((x1 as u32 - x0).max(2).min(w - x0), (y1 as u32 - y0).max(2).min(h - y0));
        Grid::new(rw, rh, self.cell_size).ok().map(|g| (x0, y0, g))
    }

    /// Local coordinates within a region's grid of a world point.
    fn region_local(&self, x: f32, z: f32, x0: u32, y0: u32, grid: &Grid) -> (f32, f32) {
        let [cx, cy] = self.to_cells(x, z);
        (((cx - x0 as f64) - grid.width as f64 * 0.5) as f32 * self.cell_size, ((cy - y0 as f64) - grid.height as f64 * 0.5) as f32 * self.cell_size)
    }

    /// The cells (x, y) within `radius` m of a local point with the dense grid's weights
    /// ([`Grid::footprint`]), and whether the point is on the world at all.
    fn footprint(&self, x: f32, z: f32, radius: f32) -> Vec<(u32, u32, f32)> {
        let reach = radius as f64 / self.cell_size as f64 + 2.0;
        let Some((x0, y0, grid)) = self.region_around(self.to_cells(x, z), reach) else { return Vec::new() };
        let (lx, lz) = self.region_local(x, z, x0, y0, &grid);
        grid.footprint(lx, lz, radius).into_iter().map(|(cell, weight)| (x0 + cell % grid.width, y0 + cell / grid.width, weight)).collect()
    }

    /// Shares of `volume` m³ over the footprint, exact to the quantum: refused naming `volume`
    /// when a cell would hold more than [`MAX_DEPTH`].
    fn shares(&self, x: f32, z: f32, volume: f32, radius: f32) -> Result<Vec<(u32, u32, i64)>> {
        Self::check_point(x, z)?;
        check_range("volume", volume, 0.0, MAX_EDIT_VOLUME)?;
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        if footprint.is_empty() {
            return Ok(Vec::new());
        }
        let quanta = (volume as f64 / self.quantum_volume()).round().min(i64::MAX as f64) as i64;
        let indexed: Vec<(u32, f32)> = footprint.iter().enumerate().map(|(k, &(_, _, weight))| (k as u32, weight)).collect();
        let shares = distribute_quanta(&indexed, quanta);
        if let Some(&(k, most)) = shares.iter().max_by_key(|s| s.1).filter(|s| s.1 > MAX_DEPTH_QUANTA as i64) {
            let (cx, cy, _) = footprint[k as usize];
            let total_weight: f64 = indexed.iter().map(|s| s.1 as f64).sum();
            let heaviest = indexed.iter().map(|s| s.1 as f64).fold(0.0, f64::max);
            let fits = MAX_DEPTH_QUANTA as f64 * self.quantum_volume() * total_weight / heaviest;
            return Err(Error::invalid(
                "volume",
                format!("{volume} m³"),
                format!(
                    "0 ..= {fits:.6} m³ within radius {radius} m here: it would put {:.1} m of water on cell ({cx}, {cy}), past the {MAX_DEPTH} m a cell holds (spread it over a larger radius)",
                    most as f64 * DEPTH_QUANTUM as f64
                ),
            ));
        }
        Ok(shares.into_iter().filter(|s| s.1 != 0).map(|(k, q)| (footprint[k as usize].0, footprint[k as usize].1, q)).collect())
    }

    /// Adds `volume` m³ of water within `radius` m of local `(x, z)` before the next step, split
    /// exactly into quanta; returns the volume placed (nothing off the world). Refused, nothing
    /// added, past what a cell holds.
    pub fn add_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<f64> {
        let shares = self.shares(x, z, volume, radius)?;
        let cells: Vec<(u32, u32, i32)> = shares.iter().map(|&(cx, cy, q)| (cx, cy, q as i32)).collect();
        if let Some(rect) = CellRect::bounding(cells.iter().map(|c| (c.0, c.1))) {
            self.note_change(rect)?;
        }
        self.world.add_water(&cells)?;
        let peak = shares.iter().map(|s| s.2).max().unwrap_or(0);
        self.depth_bound = self.depth_bound.max(peak as f32 * DEPTH_QUANTUM);
        Ok(shares.iter().map(|s| s.2 as f64).sum::<f64>() * self.quantum_volume())
    }

    /// Takes up to `volume` m³ of water from within `radius` m of local `(x, z)` before the next
    /// step, never more than a cell holds (the ledger counts what left).
    pub fn remove_water(&mut self, x: f32, z: f32, volume: f32, radius: f32) -> Result<()> {
        let volume = volume.min(MAX_EDIT_VOLUME);
        check_range("volume", volume, 0.0, MAX_EDIT_VOLUME)?;
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        if footprint.is_empty() {
            return Ok(());
        }
        let quanta = (volume as f64 / self.quantum_volume()).round().min(i64::MAX as f64) as i64;
        let indexed: Vec<(u32, f32)> = footprint.iter().enumerate().map(|(k, &(_, _, weight))| (k as u32, weight)).collect();
        let cells: Vec<(u32, u32, i32)> =
            distribute_quanta(&indexed, quanta).into_iter().filter(|s| s.1 != 0).map(|(k, q)| (footprint[k as usize].0, footprint[k as usize].1, -(q.min(MAX_DEPTH_QUANTA as i64) as i32))).collect();
        if let Some(rect) = CellRect::bounding(cells.iter().map(|c| (c.0, c.1))) {
            self.note_change(rect)?;
        }
        self.world.add_water(&cells)
    }

    /// Raises (or with a negative `delta` lowers) the ground within `radius` m of local `(x, z)`
    /// by `delta` m at the centre, the dense grid's smooth weight towards the rim, keeping the
    /// water: on resident and non-resident pages alike.
    pub fn modify_terrain(&mut self, x: f32, z: f32, delta: f32, radius: f32) -> Result<()> {
        check_range("delta", delta, -MAX_TERRAIN_DELTA, MAX_TERRAIN_DELTA)?;
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        let Some(CellRect { x: x0, y: y0, width: w, height: h }) = CellRect::bounding(footprint.iter().map(|c| (c.0, c.1))) else { return Ok(()) };
        let mut heights = self.world.terrain_region(x0, y0, w, h)?;
        for &(cx, cy, weight) in &footprint {
            let at = ((cy - y0) * w + (cx - x0)) as usize;
            heights[at] = (heights[at] + delta * weight).clamp(-MAX_TERRAIN_ABS, MAX_TERRAIN_ABS);
        }
        self.note_change(CellRect { x: x0, y: y0, width: w, height: h })?;
        self.world.set_terrain_region(x0, y0, w, h, &heights)
    }

    /// Sets the ground of the `w × h` cells from cell (x, y), row-major, keeping the water.
    pub fn set_terrain_region(&mut self, x: u32, y: u32, w: u32, h: u32, heights: &[f32]) -> Result<()> {
        let rect = CellRect { x, y, width: w, height: h };
        if self.is_recording() {
            // What the record cannot hold is refused, not left out of it.
            self.check_rect(rect)?;
            self.note_change(rect)?;
        }
        self.world.set_terrain_region(x, y, w, h, heights)
    }

    /// A source (positive `rate`, m³/s) or drain (negative) within `radius` m of local `(x, z)`.
    /// A frame's water enters before its first step (a dense grid spreads it over the steps).
    pub fn add_source(&mut self, x: f32, z: f32, rate: f32, radius: f32) -> Result<SourceId> {
        self.place_source(x, z, rate, radius, false)
    }

    /// A source placed for a source node of the scene, as [`WorldWater::add_source`], marked so
    /// (and in the save): [`WorldWater::remove_node_sources`] takes those out of a world made
    /// from a save, whose nodes place their sources again.
    pub fn add_node_source(&mut self, x: f32, z: f32, rate: f32, radius: f32) -> Result<SourceId> {
        let id = self.place_source(x, z, rate, radius, false)?;
        if let Some(source) = self.sources.iter_mut().find(|s| s.id == id.0) {
            source.for_node = true;
        }
        Ok(id)
    }

    /// Removes the sources placed for source nodes ([`WorldWater::add_node_source`]); returns
    /// how many.
    pub fn remove_node_sources(&mut self) -> usize {
        let before = self.sources.len();
        self.sources.retain(|s| !s.for_node);
        before - self.sources.len()
    }

    /// The ids of the sources and drains, in the order they were placed.
    pub fn source_ids(&self) -> Vec<SourceId> {
        self.sources.iter().map(|s| SourceId(s.id)).collect()
    }

    /// Moves source `id` to the cells within `radius` m of local `(x, z)`, keeping its id, rate
    /// and what it owes its next frame. Refused, the source kept where it was, off the world or
    /// for an unknown id.
    pub fn move_source(&mut self, id: SourceId, x: f32, z: f32, radius: f32) -> Result<()> {
        let cells = self.source_cells(x, z, radius)?;
        let source = self.sources.iter_mut().find(|s| s.id == id.0).ok_or_else(|| Error::invalid("source id", id.0, "the id of a source of this world"))?;
        source.cells = cells;
        Ok(())
    }

    /// Sets the rate (m³/s; negative drains) of source `id`.
    pub fn set_source_rate(&mut self, id: SourceId, rate: f32) -> Result<()> {
        check_range("rate", rate, -MAX_EDIT_VOLUME, MAX_EDIT_VOLUME)?;
        let source = self.sources.iter_mut().find(|s| s.id == id.0).ok_or_else(|| Error::invalid("source id", id.0, "the id of a source of this world"))?;
        source.rate = rate;
        Ok(())
    }

    /// A drain of `rate` m³/s (negative) at local `(x, z)` for a hole of the world's terrain
    /// source, marked so (and in the save): [`WorldWater::hole_drains`] finds it again after a
    /// load.
    pub fn add_hole_drain(&mut self, x: f32, z: f32, rate: f32) -> Result<SourceId> {
        self.place_source(x, z, rate, 0.0, true)
    }

    /// Sources and drains, those placed for holes among them.
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// The drains placed for holes ([`WorldWater::add_hole_drain`]), with the cell each drains.
    pub fn hole_drains(&self) -> Vec<(SourceId, (u32, u32))> {
        self.sources.iter().filter(|s| s.hole_drain).filter_map(|s| s.cells.first().map(|&(x, y, _)| (SourceId(s.id), (x, y)))).collect()
    }

    fn place_source(&mut self, x: f32, z: f32, rate: f32, radius: f32, hole_drain: bool) -> Result<SourceId> {
        check_range("rate", rate, -MAX_EDIT_VOLUME, MAX_EDIT_VOLUME)?;
        let cells = self.source_cells(x, z, radius)?;
        let id = SourceId(self.next_source);
        self.next_source += 1;
        self.sources.push(WorldSource { id: id.0, rate, cells, carry: 0.0, hole_drain, for_node: false });
        Ok(id)
    }

    /// A source's cells within `radius` m of local `(x, z)` and their shares of its rate.
    fn source_cells(&self, x: f32, z: f32, radius: f32) -> Result<Vec<(u32, u32, f64)>> {
        self.check_radius(radius)?;
        let footprint = self.footprint(x, z, radius);
        if footprint.is_empty() {
            return Err(Error::invalid("position", format!("({x}, {z})"), format!("within the world's {:?} m around its centre", self.extent())));
        }
        let total: f64 = footprint.iter().map(|c| c.2 as f64).sum();
        Ok(footprint.iter().map(|&(cx, cy, weight)| (cx, cy, weight as f64 / total)).collect())
    }

    /// Removes a source; `false` when no source has that id.
    pub fn remove_source(&mut self, id: SourceId) -> bool {
        let before = self.sources.len();
        self.sources.retain(|s| s.id != id.0);
        self.sources.len() != before
    }

    fn raise_depth_bound_for_edges(&mut self) {
        for boundary in self.params.boundaries {
            if let Boundary::Level { level } = boundary {
                // The lowest ground along an edge is not known without reading it: bound by
                // the level over the world's ground as far as MAX_DEPTH.
                let [w, h] = self.size();
                let ground = self.world.terrain_region(0, 0, 1.min(w), 1.min(h)).map_or(0.0, |t| t[0]);
                self.depth_bound = self.depth_bound.max((level - ground).clamp(0.0, MAX_DEPTH));
            }
        }
    }

    /// The longest stable step the world can take, s: the dense grid's `cfl · dx / (|u| + c)`
    /// with the deepest and fastest water the world has seen (module docs of the bound).
    pub fn stable_step(&self) -> f32 {
        let depth = match self.params.cross_section {
            CrossSection::DepthDependent => self.depth_bound,
            CrossSection::Classic => self.params.pipe_depth,
        };
        let speed = if self.params.advects() { self.speed_bound } else { 0.0 };
        let wave = (self.params.gravity * depth).sqrt() + speed;
        let stable = if wave > 0.0 { self.params.cfl * self.cell_size / wave } else { f32::INFINITY };
        stable.clamp(MIN_STEP, self.params.max_step)
    }

    /// Advances by `delta` s in as many equal steps as stability needs (at most `max_substeps`;
    /// past that, time is dropped), as [`crate::Simulation::advance`].
    pub fn advance(&mut self, delta: f32) -> Result<FrameReport> {
        check_range("delta", delta, 0.0, MAX_FRAME_DELTA)?;
        self.refuse_while_recording()?;
        let delta = delta + self.carried_time;
        if delta < MIN_STEP {
            self.carried_time = delta;
            self.last_report = FrameReport::default();
            return Ok(self.last_report);
        }
        self.carried_time = 0.0;
        let stable = self.stable_step();
        let (substeps, capped) = self.substeps_for(delta);
        let step = if capped { stable } else { (delta / substeps as f32).max(MIN_STEP) };
        let simulated = step * substeps as f32;
        let dropped = if capped { (delta - simulated).max(0.0) } else { 0.0 };
        self.run_steps(step, substeps)?;
        self.last_report = FrameReport { substeps, step, simulated, dropped };
        Ok(self.last_report)
    }

    /// Steps a frame of `delta` s (time carried over included) runs, and whether
    /// `max_substeps` cut it short.
    fn substeps_for(&self, delta: f32) -> (u32, bool) {
        let wanted = (delta / self.stable_step()).ceil().max(1.0);
        let capped = wanted > self.params.max_substeps as f32;
        (wanted.min(self.params.max_substeps as f32) as u32, capped)
    }

    /// The pages the next frame of `delta` s may read or wet, as rectangles of cells: the pages
    /// it starts from ([`World::pages_in_play`]) and those of the sources' cells, and every page
    /// within two pages of them and one more for every page side of the frame's steps (water
    /// moves at most a cell a step; a page with water needs its neighbours' ground). A world
    /// whose ground arrives over time (`PipeWaterWorld.terrain_source`) reads these first, so
    /// that no water steps over ground not yet read.
    pub fn pages_within_reach(&self, delta: f32) -> Vec<CellRect> {
        let side = self.world.page_side();
        let [tx, ty] = self.world.pages();
        let delta = if delta.is_finite() { delta.clamp(0.0, MAX_FRAME_DELTA) } else { 0.0 } + self.carried_time;
        let steps = if delta < MIN_STEP { 0 } else { self.substeps_for(delta).0 };
        let rings = 2 + steps.div_ceil(side) as i64;
        let mut start = self.world.pages_in_play();
        start.extend(self.sources.iter().flat_map(|s| s.cells.iter().map(|&(x, y, _)| (y / side * tx + x / side) as usize)));
        let edges = self.texel_constants();
        start.extend(self.world.exchanging_edge_pages(&edges));
        start.sort_unstable();
        start.dedup();
        // One flag a page rather than a set: thousands of wet pages each mark dozens around them
        // every frame while a source is read.
        let (tx_, ty_) = (tx as usize, ty as usize);
        let mut reach = vec![false; tx_ * ty_];
        for page in start {
            let (px, py) = ((page % tx_) as i64, (page / tx_) as i64);
            for y in (py - rings).max(0)..=(py + rings).min(ty as i64 - 1) {
                let row = y as usize * tx_;
                reach[row + (px - rings).max(0) as usize..=row + (px + rings).min(tx as i64 - 1) as usize].fill(true);
            }
        }
        let [w, h] = self.size();
        reach
            .iter()
            .enumerate()
            .filter(|(_, &near)| near)
            .map(|(page, _)| {
                let (x, y) = (page as u32 % tx * side, page as u32 / tx * side);
                CellRect { x, y, width: side.min(w - x), height: side.min(h - y) }
            })
            .collect()
    }

    /// Sets where the players are, for the focus policy ([`WorldWater::set_far_step_every`]):
    /// `cells` are focus positions in continuous cell coordinates (cell `(x, y)` spans
    /// `[x, x+1) × [y, y+1)`; a focus may lie off the world, within ±[`MAX_FOCUS_CELLS`]), and a
    /// page is far when every cell of it lies farther than `radius` cells (0 ..=
    /// [`MAX_FOCUS_RADIUS_CELLS`]) from every focus. No focus: no page is far (there is nothing to
    /// be far from). Refused, the policy kept, naming `focus` or `focus_radius`.
    pub fn set_focus(&mut self, cells: &[[f64; 2]], radius: f64) -> Result<()> {
        if let Some(bad) = cells.iter().find(|c| !c.iter().all(|v| v.is_finite() && v.abs() <= MAX_FOCUS_CELLS)) {
            return Err(Error::invalid("focus", format!("({}, {})", bad[0], bad[1]), format!("finite cell coordinates within ±{MAX_FOCUS_CELLS}")));
        }
        if !radius.is_finite() || !(0.0..=MAX_FOCUS_RADIUS_CELLS).contains(&radius) {
            return Err(Error::invalid("focus_radius", radius, format!("0 ..= {MAX_FOCUS_RADIUS_CELLS} cells")));
        }
        self.focus.cells = cells.to_vec();
        self.focus.radius = radius;
        Ok(())
    }

    /// How often pages far from every focus step ([`WorldWater::set_focus`]): on one frame in
    /// `every` (0 ..= [`MAX_FAR_STEP_EVERY`]; 0 pauses them; 1, the default, steps all water
    /// every frame, as without a policy, bit for bit). On the other frames far pages sit out
    /// whole: they do not step, the pipes between them and the pages that step are closed on
    /// both sides for the frame (a wall, so the ledger stays exact), and their sources, drains and
    /// inflow edges pause with them (their time stands still). Far water so lives at `1/every` of
    /// the time: a far river still flows, more slowly, a far lake still fills, and a player who
    /// comes back finds it `1/every` as far along as it would be (paused: as it was left). Edits
    /// there still happen at once. Refused, naming `far_step_every`, past the range.
    pub fn set_far_step_every(&mut self, every: u32) -> Result<()> {
        if every > MAX_FAR_STEP_EVERY {
            return Err(Error::invalid("far_step_every", every, format!("0 ..= {MAX_FAR_STEP_EVERY} (1: every frame; 0: far water paused)")));
        }
        self.focus.every = every;
        Ok(())
    }

    /// The focus policy's rhythm: far pages step on one frame in this many (0: never).
    pub fn far_step_every(&self) -> u32 {
        self.focus.every
    }

    /// Pages (row-major over [`World::pages`]) farther than the focus radius from every focus.
    pub fn far_pages(&self) -> Vec<bool> {
        let [tx, ty] = self.world.pages();
        let (side, [w, h]) = (self.world.page_side() as f64, self.size());
        if self.focus.cells.is_empty() {
            return vec![false; tx as usize * ty as usize];
        }
        let mut far = vec![true; tx as usize * ty as usize];
        let r = self.focus.radius;
        for &[fx, fy] in &self.focus.cells {
            // The pages whose squares reach within r of the focus (a page p spans [p, p + 1)
            // sides, its far edge included for the distance), then each page's distance to the
            // focus from its nearest point.
            let range = |f: f64, pages: u32| (((f - r) / side - 1.0).ceil().max(0.0), ((f + r) / side).floor().min(pages as f64 - 1.0));
            let ((x0, x1), (y0, y1)) = (range(fx, tx), range(fy, ty));
            if x1 < x0 || y1 < y0 {
                continue;
            }
            for py in y0 as u32..=y1 as u32 {
                for px in x0 as u32..=x1 as u32 {
                    let gap = |f: f64, p: u32, cells: u32| (p as f64 * side - f).max(f - ((p + 1) as f64 * side).min(cells as f64)).max(0.0);
                    if gap(fx, px, w).hypot(gap(fy, py, h)) <= r {
                        far[(py * tx + px) as usize] = false;
                    }
                }
            }
        }
        far
    }

    /// The pages this frame holds back: the far ones, on a frame far pages sit out; `None` when
    /// none is held and none was (the policy off costs no walk over the pages).
    fn pages_held_this_frame(&mut self) -> Option<Vec<bool>> {
        let (every, frame) = (self.focus.every, self.focus.frame);
        self.focus.frame += 1;
        let sits_out = every != 1 && (every == 0 || frame % every as u64 != 0);
        let held = if sits_out {
            Some(self.far_pages())
        } else if self.focus.holding {
            Some(vec![false; self.world.held_pages().len()])
        } else {
            None
        };
        self.focus.holding = held.as_ref().is_some_and(|h| h.contains(&true));
        held
    }

    /// Runs exactly `substeps` steps of `step` s: sources' water first, then the steps. With a
    /// focus policy, far pages may sit the frame out ([`WorldWater::set_far_step_every`]).
    pub fn run_steps(&mut self, step: f32, substeps: u32) -> Result<()> {
        check_range("step", step, MIN_STEP, crate::simulation::MAX_STEP_LENGTH)?;
        self.refuse_while_recording()?;
        if substeps == 0 {
            return Ok(());
        }
        let held = self.pages_held_this_frame();
        if let Some(held) = &held {
            self.world.set_held_pages(held)?;
        }
        let (side, tx) = (self.world.page_side(), self.world.pages()[0]);
        let held_cell = |x: u32, y: u32| held.as_ref().is_some_and(|h| h[((y / side) * tx + x / side) as usize]);
        let frame_time = step as f64 * substeps as f64;
        let qv = self.quantum_volume();
        let [w, h] = self.size();
        let inflow = inflow_quanta_per_step(&self.params, w, h, frame_time, substeps, qv, &mut self.inflow_carry);
        let mut cells = Vec::new();
        for source in &mut self.sources {
            // A held page's time stands still: its share of a source is neither placed nor owed.
            let held_share: f64 = source.cells.iter().filter(|c| held_cell(c.0, c.1)).map(|c| c.2).sum();
            let owed = source.rate as f64 * frame_time / qv + source.carry;
            let (mut placed, mut capped) = (0.0, false);
            for &(cx, cy, share) in &source.cells {
                if held_cell(cx, cy) {
                    continue;
                }
                let wanted = (owed * share).trunc();
                let quanta = wanted.clamp(-(MAX_DEPTH_QUANTA as f64), MAX_DEPTH_QUANTA as f64);
                capped |= quanta != wanted;
                if quanta != 0.0 {
                    cells.push((cx, cy, quanta as i32));
                    placed += quanta;
                }
            }
            // What a cell cannot take in one frame is not owed later, as on a dense grid.
            source.carry = if capped { 0.0 } else { owed * (1.0 - held_share) - placed };
            let peak = cells.iter().map(|c| c.2).max().unwrap_or(0);
            self.depth_bound = self.depth_bound.max(peak as f32 * DEPTH_QUANTUM);
        }
        if !cells.is_empty() {
            self.world.add_water(&cells)?;
        }
        // The detail waves read the water the frame's first step reads, as on a dense grid.
        self.advance_detail(step, substeps)?;
        let constants = StepConstants::new(&self.params, w, h, self.cell_size, step, inflow);
        self.world.advance(&constants, substeps)?;
        self.elapsed += frame_time;
        Ok(())
    }

    /// The constants of a step of `step` s (no inflow), for texel conversions.
    fn texel_constants(&self) -> StepConstants {
        let [w, h] = self.size();
        StepConstants::new(&self.params, w, h, self.cell_size, self.last_report.step.max(MIN_STEP), [0; 4])
    }

    /// The state of the `w × h` cells from (x0, y0): terrain from the host, depth and pipes from
    /// the device (waits for it).
    fn region_state(&mut self, x0: u32, y0: u32, grid: Grid) -> Result<State> {
        let terrain = self.world.terrain_region(x0, y0, grid.width, grid.height)?;
        let (depth, flow) = self.world.read_water(x0, y0, grid.width, grid.height)?;
        Ok(State { grid, terrain, depth, flow })
    }

    /// Water and ground of the `w × h` cells from cell (x, y) (clipped to the world), in the
    /// dense grid's texel layouts. Waits for the device; `w`, `h` at most [`MAX_WINDOW_SIDE`].
    pub fn read_window(&mut self, x: u32, y: u32, w: u32, h: u32) -> Result<WorldWindow> {
        let [ww, wh] = self.size();
        if w == 0 || h == 0 || w > MAX_WINDOW_SIDE || h > MAX_WINDOW_SIDE || x >= ww || y >= wh {
            return Err(Error::invalid("window", format!("{w}x{h} at ({x}, {y})"), format!("1 ..= {MAX_WINDOW_SIDE} cells a side, starting within the {ww}x{wh} world")));
        }
        let (w, h) = (w.min(ww - x), h.min(wh - y));
        // One cell of margin each way where the world has it: a cell's velocity reads the pipes
        // its west and north neighbours own.
        let (mx0, my0) = (x.saturating_sub(1), y.saturating_sub(1));
        let (mx1, my1) = ((x + w + 1).min(ww), (y + h + 1).min(wh));
        let grid = Grid::new((mx1 - mx0).max(2), (my1 - my0).max(2), self.cell_size)?;
        let (mx0, my0) = (mx0.min(ww.saturating_sub(grid.width)), my0.min(wh.saturating_sub(grid.height)));
        let state = self.region_state(mx0, my0, grid)?;
        let fixed = fixed_flux_per_stored(&self.texel_constants());
        let mut window = WorldWindow { origin: [x, y], size: [w, h], stride: 1, height: Vec::with_capacity((w * h) as usize), flow: Vec::with_capacity((w * h) as usize), max_depth: 0.0, max_speed: 0.0 };
        for row in y..y + h {
            for col in x..x + w {
                let (height, flow) = state.cell_texels(col - mx0, row - my0, fixed, false);
                window.max_depth = window.max_depth.max(height[1]);
                window.max_speed = window.max_speed.max(flow[2]);
                window.height.push(height);
                window.flow.push(flow);
            }
        }
        self.depth_bound = self.depth_bound.max(window.max_depth);
        self.speed_bound = self.speed_bound.max(window.max_speed);
        Ok(window)
    }

    /// Begins reading the water of the `w × h` cells from cell (x, y) a texel a block of `stride ×
    /// stride` cells: the far water, for a view over a larger area than [`WorldWater::read_window`]
    /// holds. The blocks are summed on the device (pages that are not resident are dry) and the
    /// small result read back without waiting: [`WorldWater::poll_coarse_window`] hands it over a
    /// frame or so later. `stride` is 1 ..= [`MAX_COARSE_STRIDE`]; `x`, `y`, `w` and `h` are
    /// multiples of it (so the blocks lie on one grid of the world however the area moves), the
    /// area starts on the world and holds at most [`MAX_COARSE_TEXELS`] blocks a side; blocks past
    /// the world's edge are clipped to it. Refused, naming the argument, otherwise.
    ///
    /// A texel of a block of `n` cells on the world, `n_wet` of them wet: surface the mean over the
    /// wet cells; depth the mean over all `n` (so the texels hold the block's water: depth ×
    /// `n` × cell area); terrain the mean under the wet cells (the ground the water lies on: the
    /// surface minus the terrain is the wet cells' mean depth), or over all cells where none is
    /// wet, the surface then the mean of terrain plus depth; wet the fraction `n_wet / n`. Velocity
    /// x and z and the speed are depth-weighted means over the cells (0 where no water is), the
    /// discharge the mean over all `n`. Over an area of more than [`EXACT_GROUND_PAGES`] pages, a
    /// dry block with no water in the eight blocks around it takes as its terrain the mean of its
    /// pages' mean terrain, each weighted by the cells it shares with the block (no texel there
    /// is drawn; the figure only keeps the ground's shape).
    pub fn begin_coarse_window(&mut self, x: u32, y: u32, w: u32, h: u32, stride: u32) -> Result<CoarseWindowJob> {
        let [ww, wh] = self.size();
        if !(1..=MAX_COARSE_STRIDE).contains(&stride) {
            return Err(Error::invalid("stride", stride, format!("1 ..= {MAX_COARSE_STRIDE} cells a texel")));
        }
        for (name, v, size) in [("x", x, ww), ("y", y, wh)] {
            if !v.is_multiple_of(stride) || v >= size {
                return Err(Error::invalid(name, v, format!("a multiple of the stride {stride} within the world's 0 ..< {size} cells")));
            }
        }
        for (name, v) in [("w", w), ("h", h)] {
            if v == 0 || !v.is_multiple_of(stride) || v / stride > MAX_COARSE_TEXELS {
                return Err(Error::invalid(name, v, format!("a multiple of the stride {stride}, {stride} ..= {} cells ({MAX_COARSE_TEXELS} texels)", MAX_COARSE_TEXELS * stride)));
            }
        }
        // Blocks wholly past the world's edge are not read.
        let blocks = [((ww - x).min(w)).div_ceil(stride), ((wh - y).min(h)).div_ceil(stride)];
        let constants = self.texel_constants();
        let read = self.world.begin_coarse(&constants, [x, y], blocks, stride)?;
        Ok(CoarseWindowJob { read })
    }

    /// The texels of a [`WorldWater::begin_coarse_window`] once the device has them (`None`
    /// until then; a look, never a wait). The ground of dry blocks comes from the host's terrain.
    pub fn poll_coarse_window(&mut self, job: &CoarseWindowJob) -> Option<Result<WorldWindow>> {
        let sums = self.world.poll_coarse(&job.read)?;
        Some(sums.and_then(|sums| self.coarse_texels(job.read.params(), &sums)))
    }

    /// [`WorldWater::begin_coarse_window`] and its texels, waiting for the device (tests, and a
    /// caller that reads the far water seldom enough not to mind).
    pub fn read_coarse_window(&mut self, x: u32, y: u32, w: u32, h: u32, stride: u32) -> Result<WorldWindow> {
        let job = self.begin_coarse_window(x, y, w, h, stride)?;
        let sums = self.world.wait_coarse(&job.read)?;
        self.coarse_texels(job.read.params(), &sums)
    }

    /// Texels from the device's block sums ([`WorldWater::begin_coarse_window`] says what each is).
    fn coarse_texels(&mut self, p: CoarseParams, sums: &[[f32; COARSE_SUMS]]) -> Result<WorldWindow> {
        // Over a large area the ground is summed cell by cell only where the water meets it:
        // under a block with water and under its neighbours (a shore's dry texels).
        let [bw, bh] = [p.blocks[0] as usize, p.blocks[1] as usize];
        let side = self.world.page_side() as u64;
        let pages = (bw as u64 * p.stride as u64).div_ceil(side) * (bh as u64 * p.stride as u64).div_ceil(side);
        let needed: Option<Vec<bool>> = (pages > EXACT_GROUND_PAGES).then(|| {
            let wet: Vec<bool> = sums.iter().map(|s| s[2] > 0.0 || s[3] > 0.0).collect();
            (0..bw * bh)
                .map(|k| {
                    let (x, y) = (k % bw, k / bw);
                    (y.saturating_sub(1)..(y + 2).min(bh)).any(|ny| (x.saturating_sub(1)..(x + 2).min(bw)).any(|nx| wet[ny * bw + nx]))
                })
                .collect()
        });
        let terrain = self.world.terrain_block_means(p.origin, p.blocks, p.stride, needed.as_deref())?;
        let [ww, wh] = self.size();
        let count = p.blocks[0] as usize * p.blocks[1] as usize;
        let mut window = WorldWindow { origin: p.origin, size: p.blocks, stride: p.stride, height: Vec::with_capacity(count), flow: Vec::with_capacity(count), max_depth: 0.0, max_speed: 0.0 };
        for (k, (s, &ground)) in sums.iter().zip(&terrain).enumerate() {
            let (bx, by) = (k as u32 % p.blocks[0], k as u32 / p.blocks[0]);
            let cells = |first: u32, size: u32| ((first + p.stride).min(size) - first) as f64;
            let n = cells(p.origin[0] + bx * p.stride, ww) * cells(p.origin[1] + by * p.stride, wh);
            let s = s.map(|v| v as f64);
            let (wet, depth) = (s[2], s[3] / n);
            let height = if wet > 0.0 { [s[0] / wet, depth, s[1] / wet, wet / n] } else { [ground as f64 + depth, depth, ground as f64, 0.0] };
            let weighted = |v: f64| if s[3] > 0.0 { v / s[3] } else { 0.0 };
            let flow = [weighted(s[4]), weighted(s[5]), weighted(s[6]), s[7] / n];
            let (height, flow) = (height.map(|v| v as f32), flow.map(|v| v as f32));
            window.max_depth = window.max_depth.max(height[1]);
            window.max_speed = window.max_speed.max(flow[2]);
            window.height.push(height);
            window.flow.push(flow);
        }
        Ok(window)
    }

    /// The snapshot of a few cells around a local point, and the point's local coordinates within
    /// it: `None` off the world.
    fn snapshot_around(&mut self, x: f32, z: f32) -> Result<Option<(Snapshot, f32, f32)>> {
        if !x.is_finite() || !z.is_finite() {
            return Ok(None);
        }
        let Some((x0, y0, grid)) = self.region_around(self.to_cells(x, z), 2.0) else { return Ok(None) };
        let (lx, lz) = self.region_local(x, z, x0, y0, &grid);
        if grid.cell_at(lx, lz).is_none() {
            return Ok(None);
        }
        let state = self.region_state(x0, y0, grid)?;
        let fixed = fixed_flux_per_stored(&self.texel_constants());
        let snapshot = state.snapshot_reusing(0, Default::default(), None, fixed, false);
        Ok(Some((snapshot, lx, lz)))
    }

    /// Water surface height (local Y, m) at local `(x, z)`, as [`crate::Simulation::surface_height`]:
    /// `None` off the world. Waits for the device.
    pub fn surface_height(&mut self, x: f32, z: f32) -> Result<Option<f32>> {
        Ok(self.snapshot_around(x, z)?.and_then(|(s, lx, lz)| sample_surface_on(&Lattice::square(s.grid), &s, lx, lz)))
    }

    /// Water depth (m) at local `(x, z)`, bilinear; `None` off the world.
    pub fn depth(&mut self, x: f32, z: f32) -> Result<Option<f32>> {
        Ok(self.snapshot_around(x, z)?.and_then(|(s, lx, lz)| Lattice::square(s.grid).sample(lx, lz, |i| s.height[i][1], lerp)))
    }

    /// Terrain height (local Y, m) at local `(x, z)`, bilinear; `None` off the world.
    pub fn terrain_height(&mut self, x: f32, z: f32) -> Result<Option<f32>> {
        Ok(self.snapshot_around(x, z)?.and_then(|(s, lx, lz)| Lattice::square(s.grid).sample(lx, lz, |i| s.height[i][2], lerp)))
    }

    /// Depth-averaged flow velocity (local X, local Z; m/s) at local `(x, z)`; `None` off the world.
    pub fn flow_velocity(&mut self, x: f32, z: f32) -> Result<Option<[f32; 2]>> {
        Ok(self
            .snapshot_around(x, z)?
            .and_then(|(s, lx, lz)| Lattice::square(s.grid).sample(lx, lz, |i| [s.flow[i][0], s.flow[i][1]], |a, b, t| [lerp(a[0], b[0], t), lerp(a[1], b[1], t)])))
    }

    /// The ledger: water at the start, added and removed by edits and sources, in and out through
    /// the edges; and the water held now, quanta. Waits for the device.
    pub fn ledger(&mut self) -> Result<(MassLedger, i64)> {
        let counters = self.world.counters()?;
        let held = self.world.total_quanta()?;
        Ok((MassLedger { initial: self.initial_total, counters, solidified: counters.solidified }, held))
    }

    /// The world's save ([`crate::world_save`]); the parameters and cell size are the caller's.
    pub fn save(&mut self) -> Result<Vec<u8>> {
        let mut bytes = self.world.save()?;
        WorldSave::replace_sources(&mut bytes, &self.sources, self.inflow_carry)?;
        Ok(bytes)
    }

    /// Begins a save that [`WorldWater::poll_save`] finishes while the world steps on (a
    /// worker makes room on the device, a later poll records the copy, a worker reads and
    /// encodes it). The sources saved are those of the poll that records the copy.
    pub fn begin_save(&mut self) -> Result<WorldSaveJob> {
        self.sources_at_copy = None;
        self.world.begin_save()
    }

    /// The save's bytes once its worker is done; `None` while it works.
    pub fn poll_save(&mut self, job: &mut WorldSaveJob) -> Option<Result<Vec<u8>>> {
        let recorded = job.recorded_step().is_some();
        let done = self.world.poll_save(job);
        if !recorded && job.recorded_step().is_some() {
            self.sources_at_copy = Some((self.sources.clone(), self.inflow_carry));
        }
        let mut bytes = match done? {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(e)),
        };
        let (sources, inflow_carry) = self.sources_at_copy.take().unwrap_or_else(|| (self.sources.clone(), self.inflow_carry));
        Some(WorldSave::replace_sources(&mut bytes, &sources, inflow_carry).map(|()| bytes))
    }

    /// A world loaded from [`WorldWater::save`]'s bytes, stepping with `params` on cells of
    /// `cell_size` m, with its sources and drains (a save written before they were saved has
    /// none).
    pub fn load(bytes: &[u8], cell_size: f32, params: Params) -> Result<WorldWater> {
        check_range("cell_size", cell_size, crate::grid::CELL_SIZE_RANGE.0, crate::grid::CELL_SIZE_RANGE.1)?;
        Self::check_params(&params)?;
        let save = WorldSave::decode(bytes)?;
        let mut world = World::from_save(&save)?;
        let held = world.total_quanta()?;
        let counters = world.counters()?;
        // The save carries its counters: the water it began with is what balances them.
        let mut water = Self::around(world, cell_size, params, held - counters.net());
        water.next_source = save.sources.iter().map(|s| s.id).max().map_or(1, |id| id.saturating_add(1));
        water.sources = save.sources;
        water.inflow_carry = save.inflow_carry;
        Ok(water)
    }
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}
