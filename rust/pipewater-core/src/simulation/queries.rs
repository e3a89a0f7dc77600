//! What callers ask the water: snapshots, the ledger, totals, and heights, depths and flows at
//! local points.

use super::Simulation;
use crate::error::Result;
use crate::lattice::Lattice;
use crate::ledger::MassLedger;
use crate::state::{Snapshot, State};
use std::sync::Arc;

impl Simulation {
    /// The newest snapshot (never blocks on a device).
    pub fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        self.backend.snapshot()
    }

    /// A snapshot of every cell as of now, built from the whole current state (waiting for the
    /// device on a GPU backend): for an engine that needs full texels at once after a backend
    /// read back only the tiles queries touched ([`Simulation::want_full_snapshots`]). Not for
    /// every frame.
    pub fn read_snapshot(&mut self) -> Result<Snapshot> {
        let state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        let fixed = crate::pipes::fixed_flux_per_stored(&self.step_constants(&self.params));
        Ok(state.snapshot_reusing(self.frames, counters, None, fixed, self.lattice().triangular))
    }

    /// Reads the whole current state, waiting for the device if needed.
    pub fn read_state(&mut self) -> Result<State> {
        self.on_backend(|b| b.read_state())
    }

    /// Copies the current depth quanta of the cells in the tiles `which` marks (every cell when
    /// `None`) into `depth` (row-major, the grid's size), leaving other cells as they are; waits
    /// for the device if needed. Cheaper than [`Simulation::read_state`]: the CPU backend copies
    /// only those tiles, a GPU backend reads the depth alone.
    pub fn read_depth(&mut self, which: Option<(&crate::backend::sleep::TileGrid, &[bool])>, depth: &mut [i32]) -> Result<()> {
        let depth = std::cell::RefCell::new(depth);
        self.on_backend(|b| b.read_depth(which, &mut depth.borrow_mut()))
    }

    /// [`Simulation::read_depth`] for the pipes' flows ([`crate::State::flow`]).
    pub fn read_flow(&mut self, which: Option<(&crate::backend::sleep::TileGrid, &[bool])>, flow: &mut [[f32; 4]]) -> Result<()> {
        let flow = std::cell::RefCell::new(flow);
        self.on_backend(|b| b.read_flow(which, &mut flow.borrow_mut()))
    }

    /// The current water of the tiles `which` of `tiles`, each alone, into `out`
    /// ([`crate::backend::Backend::read_tiles`]); waits for the device if needed.
    pub fn read_tiles(&mut self, tiles: &crate::backend::sleep::TileGrid, which: &[u32], out: &mut crate::backend::TileChanges) -> Result<()> {
        let out = std::cell::RefCell::new(out);
        self.on_backend(|b| b.read_tiles(tiles, which, &mut out.borrow_mut()))
    }

    /// Starts reading every cell's depth without waiting for the device
    /// ([`crate::backend::Backend::begin_depth_read`]); `None` where the backend reads only
    /// waiting ([`Simulation::read_depth`]) or a read is still out.
    pub fn begin_depth_read(&mut self) -> Result<Option<crate::backend::DepthReader>> {
        self.on_backend(|b| b.begin_depth_read())
    }

    /// Takes the water as it is now as the copy [`Simulation::begin_tile_changes`] compares
    /// with ([`crate::backend::Backend::reset_tile_changes`]); false where the backend has no
    /// such comparison.
    pub fn reset_tile_changes(&mut self, tiles: &crate::backend::sleep::TileGrid) -> Result<bool> {
        self.on_backend(|b| b.reset_tile_changes(tiles))
    }

    /// Starts comparing the water with the copy the last comparison took, describing every tile
    /// that differs and reading back the tiles `request` asks for, without waiting for the device
    /// ([`crate::backend::Backend::begin_tile_changes`]); `None` where the backend cannot.
    pub fn begin_tile_changes(&mut self, tiles: &crate::backend::sleep::TileGrid, request: &crate::backend::TileRequest) -> Result<Option<crate::backend::TileChangesReader>> {
        self.on_backend(|b| b.begin_tile_changes(tiles, request))
    }

    /// The tiles whose depth may have changed since the last call ([`crate::backend::Backend::take_changed_tiles`]);
    /// `None` where the backend cannot tell (then any tile may have).
    pub fn take_changed_tiles(&mut self) -> Option<crate::backend::sleep::AwakeTiles> {
        self.backend.take_changed_tiles()
    }

    /// The ledger as of the current state (waits for the device if needed).
    pub fn ledger(&mut self) -> Result<MassLedger> {
        let counters = self.on_backend(|b| b.read_counters())?;
        Ok(MassLedger { initial: self.initial_total, counters, solidified: counters.solidified })
    }

    /// The ledger and total that belong to the newest snapshot (no waiting).
    pub fn snapshot_ledger(&mut self) -> Option<(MassLedger, i64)> {
        let s = self.backend.snapshot()?;
        Some((MassLedger { initial: self.initial_total, counters: s.counters, solidified: s.counters.solidified }, s.total_quanta))
    }

    /// Total water in the newest snapshot, m³.
    pub fn total_water(&mut self) -> f64 {
        self.backend.snapshot().map_or(0.0, |s| s.total_quanta as f64) * self.quantum_volume()
    }

    /// Water surface height (local Y, m) at local `(x, z)`: bilinear over the wet cells around
    /// the point, the terrain height where all four are dry. `None` off the grid.
    pub fn surface_height(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        sample_surface_on(&self.lattice(), &s, x, z)
    }

    /// Water depth (m) at local `(x, z)`, bilinear. `None` off the grid.
    pub fn depth(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        self.lattice().sample(x, z, |i| s.height[i][1], lerp)
    }

    /// Terrain height (local Y, m) at local `(x, z)`, bilinear. `None` off the grid.
    pub fn terrain_height(&mut self, x: f32, z: f32) -> Option<f32> {
        let s = self.queried_snapshot(x, z)?;
        self.lattice().sample(x, z, |i| s.height[i][2], lerp)
    }

    /// Depth-averaged flow velocity (local X, local Z; m/s) at local `(x, z)`, bilinear. `None`
    /// off the grid.
    pub fn flow_velocity(&mut self, x: f32, z: f32) -> Option<[f32; 2]> {
        let s = self.queried_snapshot(x, z)?;
        self.lattice().sample(x, z, |i| [s.flow[i][0], s.flow[i][1]], |a, b, t| [lerp(a[0], b[0], t), lerp(a[1], b[1], t)])
    }

    /// The snapshot a query at local `(x, z)` reads, once the backend knows which cells it
    /// needs. `None` off the grid or before any snapshot exists.
    pub(super) fn queried_snapshot(&mut self, x: f32, z: f32) -> Option<Arc<Snapshot>> {
        let cells = self.lattice().sample_cells(x, z)?.map(|(cell, _)| cell);
        self.backend.want_cells(&cells);
        self.backend.snapshot()
    }
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Surface height at a local point: bilinear weights over the four surrounding cells, dry cells
/// left out so a shore does not lift the water; the terrain where all four are dry.
pub fn sample_surface(s: &Snapshot, x: f32, z: f32) -> Option<f32> {
    sample_surface_on(&Lattice::square(s.grid), s, x, z)
}

/// [`sample_surface`] over the cells of `lattice` (the triangle around the point on the
/// triangular lattice).
pub fn sample_surface_on(lattice: &Lattice, s: &Snapshot, x: f32, z: f32) -> Option<f32> {
    let g = lattice;
    let wet = g.sample(x, z, |i| if s.height[i][3] > 0.0 { [s.height[i][0], 1.0] } else { [0.0, 0.0] }, |a, b, t| {
        [lerp(a[0], b[0], t), lerp(a[1], b[1], t)]
    })?;
    if wet[1] > 1.0e-6 {
        Some(wet[0] / wet[1])
    } else {
        g.sample(x, z, |i| s.height[i][0], lerp)
    }
}
