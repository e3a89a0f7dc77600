//! The detail wave layer ([`crate::detail`]) on a running simulation: its settings, focus,
//! ripples and what queries read of it.

use super::Simulation;
use crate::detail::{self, DetailDriver, DetailParams, DetailTexels, DetailWindow};
use crate::error::{Error, Result};
use std::sync::Arc;

impl Simulation {
    /// Turns the detail wave layer ([`crate::detail`]) on with `params` (validated) or off
    /// (`None`). Changing the window or the subdivision puts the waves at rest; the other settings
    /// apply from the next frame. On error (bad settings, a backend that cannot allocate the
    /// window) the layer stays as it was. Refused on the triangular lattice, where the layer's
    /// square tiles would lie across the hexagonal cells.
    pub fn set_detail(&mut self, params: Option<DetailParams>) -> Result<()> {
        let Some(params) = params else {
            self.backend.configure_detail(None)?;
            self.detail = None;
            return Ok(());
        };
        if self.lattice().triangular {
            return Err(Error::invalid("neighbours", "triangular", "four or eight while detail waves are on (the detail layer is written for the square grid)"));
        }
        params.validate()?;
        match &mut self.detail {
            Some(driver) => {
                let layout = driver.layout();
                let mut updated = driver.clone();
                updated.set_params(params)?;
                if updated.layout() != layout {
                    self.backend.configure_detail(Some(updated.layout()))?;
                }
                *driver = updated;
            }
            None => {
                let driver = DetailDriver::new(params, self.grid)?;
                self.backend.configure_detail(Some(driver.layout()))?;
                self.detail = Some(driver);
            }
        }
        Ok(())
    }

    /// The detail layer's settings; `None` while it is off.
    pub fn detail_params(&self) -> Option<&DetailParams> {
        self.detail.as_ref().map(|d| d.params())
    }

    /// Centres the detail window on local point `(x, z)` (m) from the next frame on (the camera,
    /// or a node it follows). Non-finite points are ignored.
    pub fn set_detail_focus(&mut self, x: f32, z: f32) {
        if let Some(d) = &mut self.detail {
            d.set_focus(x, z);
        }
    }

    /// Where the detail window's fields are now; `None` while the layer is off.
    pub fn detail_window(&self) -> Option<DetailWindow> {
        self.detail.as_ref().map(|d| d.current_window())
    }

    /// Adds a ripple to the detail waves at the next frame: the surface raised by `strength` m
    /// (negative: pressed down) at local `(x, z)`, falling to a ring trough and to nothing at
    /// `radius` m, with no net volume ([`detail::ripple_shape`]). Refused, with the argument and
    /// its range named, for a non-finite point, `strength` beyond ±10 m or `radius` outside
    /// `> 0 ..= 2 × the grid's extent`. Returns whether the ripple reaches the window (false while
    /// the layer is off). Radii under 1.5 detail cells are drawn at 1.5 cells.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        detail::check_ripple(&self.grid, x, z, strength, radius)?;
        match &mut self.detail {
            Some(d) => d.add_ripple(x, z, strength, radius),
            None => Ok(false),
        }
    }

    /// Height (m) of the detail waves at local `(x, z)`, bilinear: 0 while the layer is off, and
    /// outside its window; `None` off the grid. On a GPU backend the first query of a region
    /// answers 0 and later ones show the waves a frame or two old (`crate::detail::tiles`).
    pub fn detail_height(&mut self, x: f32, z: f32) -> Option<f32> {
        if !self.grid.contains(x, z) {
            return None;
        }
        let Some(d) = &self.detail else { return Some(0.0) };
        let window = d.current_window();
        let backend = &mut self.backend;
        Some(detail::bilinear_height(&window, x, z, |cells| {
            let h = backend.detail_heights(cells);
            [h[0], h[1], h[2], h[3]]
        }))
    }

    /// [`Simulation::surface_height`] with the detail waves' height added (over wet water).
    pub fn surface_height_with_detail(&mut self, x: f32, z: f32) -> Option<f32> {
        let surface = self.surface_height(x, z)?;
        Some(surface + self.detail_height(x, z).unwrap_or(0.0))
    }

    /// The detail texture's texels of the newest frame ([`DetailTexels`]), for engines that copy
    /// them into a texture; `None` while the layer is off, before its first frame, and on
    /// backends that keep the texture on the device.
    pub fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        self.detail.as_ref()?;
        self.backend.detail_texels()
    }

    /// The engine's handle of the texture the detail layer writes on the device (Godot's
    /// RenderingDevice backend: the texture's RID), `None` where the texels come through
    /// [`Simulation::detail_texels`] instead, or while the layer is off.
    pub fn detail_device_texture(&self) -> Option<u64> {
        self.detail.as_ref()?;
        self.backend.detail_device_texture()
    }

    /// The detail layer's fields, `(h, v)` per storage cell ([`DetailWindow::world_cell`] says
    /// where each is), waiting for the device: tests and benchmarks.
    pub fn read_detail(&mut self) -> Result<Vec<[f32; 2]>> {
        self.backend.read_detail()
    }
}
