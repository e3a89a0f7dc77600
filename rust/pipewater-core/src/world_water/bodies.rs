//! Floating bodies on a world: the dense grid's coupling ([`crate::bodies::couple`]) run on the
//! water around each group of hulls, read from the pages as a small dense region.
//!
//! Bodies whose reads come within a cell of each other are coupled together on one region (so
//! their heads add and their drags merge on shared cells, as on a dense grid); each region reaches
//! [`REGION_MARGIN`] cells past what the coupling reads, so that every cell it reads has its
//! velocity from its neighbours' pipes and every pipe a nudge touches has both its cells. The
//! bodies are moved into the region's own frame for the coupling (forces and torques about their
//! origin do not change with the move), and its heads and nudges moved back to world cells. Page
//! borders play no part: a region is a dense grid whatever pages it crosses.

use super::WorldWater;
use crate::bodies::{self, Body, BodyForce};
use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use crate::pipes::{carried_depth, fixed_flux_per_stored, nudged_pipe, pipe_width, PIPE_OFFSETS};
use crate::simulation::MAX_FRAME_DELTA;
use glam::Vec3;

/// Largest side (cells) of the region one group of bodies reads: a hull and its margin about a
/// quarter of it wide. Bodies whose region would be larger are refused by name.
pub const MAX_BODY_REGION_SIDE: u32 = 1024;
/// Cells a region reaches past what the coupling reads: one for the velocities of the cells read
/// (a cell's velocity reads the pipes its west and north neighbours own), one for float rounding
/// between the world's cell coordinates and the region's.
const REGION_MARGIN: i64 = 2;

/// A rectangle of world cells, first and last included: (x0, y0, x1, y1).
type CellRect = [i64; 4];

impl WorldWater {
    /// Couples `bodies` (in the world's local frame, as [`WorldWater::add_water`]'s points) with
    /// the water for the coming frame of `frame_dt` seconds (`0 ..= MAX_FRAME_DELTA`), water being
    /// `density` kg/m³ (`1 ..= 1e5`), as [`crate::Simulation::couple_bodies`] does on a dense
    /// grid: replaces the displacement of last frame's bodies with theirs, drags the water they
    /// fill towards their velocity, and returns the forces the water puts on each body (or why
    /// that body was left out: an invalid hull, or one whose region would pass
    /// [`MAX_BODY_REGION_SIDE`]). Call it once per frame before [`WorldWater::advance`], with every
    /// body (an empty list takes the last ones out).
    ///
    /// Unlike a dense GPU grid, which reads a snapshot a frame or two old, the world reads the
    /// water around the bodies as it is now, waiting for the device (a read of the pages under
    /// them). The drag is written into the water at once, before the next frame's edits and steps.
    /// With the detail layer on ([`WorldWater::set_detail`]) the hulls press on its waves and
    /// those with `rides_detail_waves` ride them, as on a dense grid. Refused, nothing changed,
    /// naming `frame_dt` or `density`.
    pub fn couple_bodies(&mut self, bodies: &[Body], frame_dt: f32, density: f32) -> Result<Vec<Result<BodyForce>>> {
        check_range("frame_dt", frame_dt, 0.0, MAX_FRAME_DELTA)?;
        check_range("density", density, 1.0, 1.0e5)?;
        let mut forces: Vec<Result<BodyForce>> = bodies.iter().map(|b| b.check().map(|_| BodyForce::default())).collect();
        // Groups of bodies whose reads (with their margins) meet, and the rectangle they read.
        let mut groups: Vec<(CellRect, Vec<usize>)> = Vec::new();
        for (k, body) in bodies.iter().enumerate() {
            if forces[k].is_err() {
                continue;
            }
            // Off the world: no water near it, no force, as on a dense grid.
            let Some(mut rect) = self.body_region(body) else { continue };
            // Refused alone, before it joins others that it would take down with it.
            if let Err(e) = region_fits(&rect) {
                forces[k] = Err(e);
                continue;
            }
            let mut members = vec![k];
            while let Some(g) = groups.iter().position(|(other, _)| overlaps(other, &rect)) {
                let (other, more) = groups.swap_remove(g);
                rect = [rect[0].min(other[0]), rect[1].min(other[1]), rect[2].max(other[2]), rect[3].max(other[3])];
                members.extend(more);
            }
            members.sort_unstable();
            groups.push((rect, members));
        }
        let mut heads: Vec<(u32, u32, f32)> = Vec::new();
        let mut flows: Vec<(u32, u32, [f32; 4])> = Vec::new();
        let constants = self.texel_constants();
        let fixed = fixed_flux_per_stored(&constants);
        for (rect, members) in groups {
            // Bodies that fit alone may still make a group too wide together.
            if let Err(e) = region_fits(&rect) {
                for &k in &members {
                    forces[k] = Err(e.clone());
                }
                continue;
            }
            let (w, h) = ((rect[2] - rect[0] + 1) as u32, (rect[3] - rect[1] + 1) as u32);
            let (x0, y0) = (rect[0] as u32, rect[1] as u32);
            let grid = Grid::new(w.max(2), h.max(2), self.cell_size)?;
            let state = self.region_state(x0, y0, grid)?;
            let snapshot = state.snapshot_reusing(0, Default::default(), None, fixed, false);
            // The region's frame: its centre is world local `shift`.
            let [ww, wh] = self.size();
            let shift = Vec3::new((x0 as f64 + grid.width as f64 * 0.5 - ww as f64 * 0.5) as f32 * self.cell_size, 0.0, (y0 as f64 + grid.height as f64 * 0.5 - wh as f64 * 0.5) as f32 * self.cell_size);
            let moved: Vec<Body> = members.iter().map(|&k| Body { position: bodies[k].position - shift, ..bodies[k].clone() }).collect();
            let coupling = bodies::couple(&snapshot, &moved, frame_dt, density, self.params.gravity);
            for (&k, force) in members.iter().zip(coupling.forces) {
                forces[k] = force;
            }
            // The bed each region cell steps on next, for the drag's carried depth.
            let mut bed = state.terrain.clone();
            for d in &coupling.displacement {
                bed[d.cell as usize] += d.head;
                heads.push((x0 + d.cell % grid.width, y0 + d.cell / grid.width, d.head));
            }
            for nudge in &coupling.nudges {
                let (lx, ly) = (nudge.cell % grid.width, nudge.cell / grid.width);
                let (x, y) = (x0 + lx, y0 + ly);
                let i = nudge.cell as usize;
                let mut pipes = state.flow[i];
                for (p, pipe) in pipes.iter_mut().enumerate() {
                    if !(constants.pipe_active(p, y) && constants.pipe_in_grid(x, y, p)) {
                        continue;
                    }
                    let (ox, oy) = PIPE_OFFSETS[p];
                    let (jx, jy) = (lx as i64 + ox as i64, ly as i64 + oy as i64);
                    // The region reaches past every cell a nudge names (REGION_MARGIN), so a
                    // neighbour on the world lies in it.
                    if jx < 0 || jy < 0 || jx >= grid.width as i64 || jy >= grid.height as i64 {
                        continue;
                    }
                    let j = grid.index(jx as u32, jy as u32);
                    let carried = carried_depth(&constants, bed[i], state.depth[i], bed[j], state.depth[j]);
                    *pipe = nudged_pipe(&constants, p, y, *pipe, [nudge.velocity_x, nudge.velocity_y], nudge.weight, pipe_width(&constants, p, x, y), carried);
                }
                if pipes != state.flow[i] {
                    flows.push((x, y, pipes));
                }
            }
        }
        self.world.set_displacement(&heads)?;
        self.world.set_flows(&flows)?;
        self.apply_detail_pressure(bodies, &forces);
        for (force, body) in forces.iter_mut().zip(bodies) {
            if let Ok(f) = force {
                if body.rides_detail_waves {
                    self.ride_detail(body, f, density);
                }
            }
        }
        Ok(forces)
    }

    /// Adds to `force` what the detail waves over `body`'s waterplane push on it, as on a dense
    /// grid ([`crate::detail::hulls::riding_force`]); nothing while the layer is off.
    fn ride_detail(&mut self, body: &Body, force: &mut BodyForce, density: f32) {
        let (Some(detail), Some(level)) = (self.detail(), force.water_level) else { return };
        let current = detail.current_window();
        let (window, centre) = current.stand_in();
        let moved = Body { position: body.position - Vec3::new(centre[0], 0.0, centre[1]), ..body.clone() };
        let cells = crate::detail::hulls::waterplane(&window, &moved, level);
        if cells.is_empty() {
            return;
        }
        let anchor = current.anchor();
        let world_cells: Vec<[i64; 2]> = cells.iter().map(|g| [anchor[0] + g[0] as i64, anchor[1] + g[1] as i64]).collect();
        let heights = self.detail_cell_heights(&world_cells);
        let (lift, torque) = crate::detail::hulls::riding_force(&window, &moved, level, &cells, &heights, density, self.params.gravity);
        force.force += lift;
        force.torque += torque;
    }

    /// The world cells the coupling of `body` reads, with [`REGION_MARGIN`], clipped to the world:
    /// `None` when none is on it. The reach is [`bodies::cells_to_read`]'s (twice the body's
    /// horizontal radius and three cells around its centre).
    fn body_region(&self, body: &Body) -> Option<CellRect> {
        let (centre, radius) = body.horizontal_bounds();
        let reach = (2.0 * radius as f64 + 3.0 * self.cell_size as f64) / self.cell_size as f64;
        let [cx, cy] = self.to_cells(centre[0], centre[1]);
        let [w, h] = self.size();
        let (x0, y0, x1, y1) = ((cx - reach).floor() as i64, (cy - reach).floor() as i64, (cx + reach).floor() as i64, (cy + reach).floor() as i64);
        if x1 < 0 || y1 < 0 || x0 >= w as i64 || y0 >= h as i64 {
            return None;
        }
        let m = REGION_MARGIN;
        Some([(x0 - m).max(0), (y0 - m).max(0), (x1 + m).min(w as i64 - 1), (y1 + m).min(h as i64 - 1)])
    }
}

/// Refuses a region wider or taller than [`MAX_BODY_REGION_SIDE`], naming `body size`.
fn region_fits(rect: &CellRect) -> Result<()> {
    let (w, h) = (rect[2] - rect[0] + 1, rect[3] - rect[1] + 1);
    if w > MAX_BODY_REGION_SIDE as i64 || h > MAX_BODY_REGION_SIDE as i64 {
        return Err(Error::invalid("body size", format!("a region of {w}x{h} cells around the hull(s)"), format!("at most {MAX_BODY_REGION_SIDE} cells a side on a world (the hull with twice its size around it, and the bodies whose regions meet it)")));
    }
    Ok(())
}

/// Whether two cell rectangles share a cell or lie side by side (a nudge on one reads a cell of
/// the other).
fn overlaps(a: &CellRect, b: &CellRect) -> bool {
    a[0] <= b[2] + 1 && b[0] <= a[2] + 1 && a[1] <= b[3] + 1 && b[1] <= a[3] + 1
}
