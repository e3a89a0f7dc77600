//! Floating bodies and pushes: hulls coupled with the water once per frame, their pressure on
//! the detail waves, and scripted pushes.

use super::{MAX_FRAME_DELTA, Simulation};
use crate::bodies::{self, Body, BodyForce, Coupling};
use crate::detail;
use crate::error::{check_range, Error, Result};

impl Simulation {
    /// Couples `bodies` (in this grid's local frame) with the water for the coming frame of
    /// `frame_dt` seconds, water being `density` kg/m³ ([`crate::bodies`]): replaces the
    /// displacement of last frame's bodies with theirs, queues their drag on the water, and
    /// returns the forces the water puts on each body (or why that body was left out). Call it
    /// once per frame before [`Simulation::advance`], with every body (an empty list takes the
    /// last ones out). Reads the newest snapshot, so on a GPU the bodies see water one or two
    /// frames old. Bodies are refused on the triangular lattice: their footprints are laid on the
    /// square grid's cell centres, which would misplace them by up to half a cell.
    pub fn couple_bodies(&mut self, bodies: &[Body], frame_dt: f32, density: f32) -> Result<Vec<Result<BodyForce>>> {
        check_range("frame_dt", frame_dt, 0.0, MAX_FRAME_DELTA)?;
        check_range("density", density, 1.0, 1.0e5)?;
        if bodies.is_empty() {
            self.on_backend(|b| b.set_displacement(&[]))?;
            self.apply_detail_pressure(&[], &[]);
            return Ok(Vec::new());
        }
        if self.lattice().triangular {
            return Err(Error::invalid("neighbours", "triangular", "four or eight while floating bodies are coupled (bodies are written for the square grid)"));
        }
        let cells = bodies::cells_to_read(&self.grid, bodies);
        if !cells.is_empty() {
            self.backend.want_cells(&cells);
        }
        let Some(snapshot) = self.backend.snapshot() else {
            self.on_backend(|b| b.set_displacement(&[]))?;
            self.apply_detail_pressure(&[], &[]);
            return Ok(bodies.iter().map(|b| b.check().map(|_| BodyForce::default())).collect());
        };
        let coupling = bodies::couple(&snapshot, bodies, frame_dt, density, self.params.gravity);
        self.apply_coupling(&coupling)?;
        let mut forces = coupling.forces;
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

    /// Puts the pressure of `bodies` on the detail waves ([`detail::hulls::hull_pressure`]) for the
    /// next frame, at the water levels their coupling found (`forces`, one per body, as
    /// [`bodies::couple`] returns them); an empty list takes it away. [`Simulation::couple_bodies`]
    /// does this itself; engines that couple with [`bodies::couple`] and
    /// [`Simulation::apply_coupling`] call it after. Nothing while the layer is off.
    pub fn apply_detail_pressure(&mut self, bodies: &[Body], forces: &[Result<BodyForce>]) {
        let Some(driver) = &mut self.detail else { return };
        let levels: Vec<Option<f32>> = forces.iter().map(|f| f.as_ref().ok().and_then(|f| f.water_level)).collect();
        let pressure = detail::hulls::hull_pressure(&driver.window(), bodies, &levels, driver.params().hull_strength);
        driver.set_pressure(pressure);
    }

    /// Adds to `force` what the detail waves over `body`'s waterplane push on it
    /// ([`detail::hulls::riding_force`]).
    pub(super) fn ride_detail(&mut self, body: &Body, force: &mut BodyForce, density: f32) {
        let (Some(driver), Some(level)) = (&self.detail, force.water_level) else { return };
        let window = driver.current_window();
        let cells = detail::hulls::waterplane(&window, body, level);
        if cells.is_empty() {
            return;
        }
        let heights = self.backend.detail_heights(&cells);
        let (lift, torque) = detail::hulls::riding_force(&window, body, level, &cells, &heights, density, self.params.gravity);
        force.force += lift;
        force.torque += torque;
    }

    /// Applies a coupling computed by [`bodies::couple`]: its displacement replaces the last
    /// one, its nudges join the frame's.
    pub fn apply_coupling(&mut self, coupling: &Coupling) -> Result<()> {
        self.on_backend(|b| b.set_displacement(&coupling.displacement))?;
        for n in &coupling.nudges {
            bodies::merge_nudge(&mut self.pending_nudges, n.cell, n.weight, [n.velocity_x, n.velocity_y]);
        }
        Ok(())
    }

    /// Drags the water within `radius` m of local `(x, z)` towards `velocity` (m/s along local X
    /// and Z) in the next frame: fully at the centre, fading smoothly to nothing at `radius`. A
    /// paddle calls it every frame; an explosion calls it once per direction. Only momentum
    /// moves, never water. A point off the grid reaches the cells its radius overlaps.
    pub fn push_water(&mut self, x: f32, z: f32, velocity: [f32; 2], radius: f32) -> Result<()> {
        Self::check_point(x, z)?;
        let [ex, ez] = self.grid.extent();
        check_range("radius", radius, 0.0, ex.max(ez) * 2.0)?;
        for (axis, v) in ["velocity x", "velocity z"].into_iter().zip(velocity) {
            check_range(axis, v, -bodies::MAX_BODY_SPEED, bodies::MAX_BODY_SPEED)?;
        }
        if radius == 0.0 {
            return Ok(());
        }
        for (cell, weight) in self.lattice().footprint(x, z, radius) {
            bodies::merge_nudge(&mut self.pending_nudges, cell, weight, velocity);
        }
        Ok(())
    }
}
