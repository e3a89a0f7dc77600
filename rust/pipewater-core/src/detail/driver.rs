//! Driving the layer from the simulation: its settings, focus, ripples waiting and hulls' pressure
//! between frames, each frame handed to a backend as a [`DetailFrame`].

use super::*;
use crate::error::{check_range, Error, Result};

/// What the simulation keeps for the layer between frames: its settings, the focus, the window's
/// last position, ripples waiting, the hulls' pressure in force and the rain's seed. Backends
/// receive each frame as a [`DetailFrame`].
#[derive(Debug, Clone)]
pub struct DetailDriver {
    params: DetailParams,
    grid: Grid,
    /// Local X, Z (m) the window centres on.
    focus: [f32; 2],
    /// The window's origin in the last frame.
    origin: Option<[i32; 2]>,
    ripples: std::collections::VecDeque<Ripple>,
    /// Storage cells whose pressure is not zero.
    pressed: Vec<u32>,
    /// Pressure changes for the next frame.
    pressure: Vec<DetailPressure>,
    seed: u32,
}

impl DetailDriver {
    /// A driver for `params` (validated) over `grid`, focused on the grid's centre.
    pub fn new(params: DetailParams, grid: Grid) -> Result<Self> {
        params.validate()?;
        Ok(DetailDriver { params, grid, focus: [0.0; 2], origin: None, ripples: Default::default(), pressed: Vec::new(), pressure: Vec::new(), seed: 0 })
    }

    /// The settings.
    pub fn params(&self) -> &DetailParams {
        &self.params
    }

    /// The layout backends allocate.
    pub fn layout(&self) -> DetailLayout {
        DetailLayout { window: self.params.window, subdivision: self.params.subdivision }
    }

    /// Replaces the settings (validated). The layout may change: the caller reconfigures the
    /// backend when [`DetailDriver::layout`] did.
    pub fn set_params(&mut self, params: DetailParams) -> Result<()> {
        params.validate()?;
        if (params.window, params.subdivision) != (self.params.window, self.params.subdivision) {
            self.origin = None;
            self.pressed.clear();
            self.pressure.clear();
        }
        self.params = params;
        Ok(())
    }

    /// Sets the point the window centres on, local X and Z (m); non-finite points are ignored.
    pub fn set_focus(&mut self, x: f32, z: f32) {
        if x.is_finite() && z.is_finite() {
            self.focus = [x, z];
        }
    }

    /// The window as it is now (where the next frame puts it).
    pub fn window(&self) -> DetailWindow {
        DetailWindow::around(self.grid, self.layout(), self.focus)
    }

    /// The window the fields are in: the last frame's, else where the next frame puts it.
    pub fn current_window(&self) -> DetailWindow {
        let mut w = self.window();
        if let Some(origin) = self.origin {
            w.origin = origin;
        }
        w
    }

    /// Queues a ripple of `strength` m at its centre and `radius` m around local `(x, z)`.
    /// Returns whether it reaches the window as it stands.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        check_ripple(&self.grid, x, z, strength, radius)?;
        let window = self.current_window();
        let cells = (radius / window.cell_size()).max(MIN_RIPPLE_CELLS);
        let [cx, cy] = window.local_to_detail(x, z);
        let reaches = {
            let (lo, hi) = (window.origin, [window.origin[0] + window.layout.window as i32, window.origin[1] + window.layout.window as i32]);
            cx + cells > lo[0] as f32 && cx - cells < hi[0] as f32 && cy + cells > lo[1] as f32 && cy - cells < hi[1] as f32
        };
        if reaches {
            self.ripples.push_back(Ripple { x: cx, y: cy, inverse_radius_squared: 1.0 / (cells * cells), strength });
        }
        Ok(reaches)
    }

    /// Replaces the hulls' pressure with `cells` (storage cell, head m; each at most once): the
    /// next frame applies them and puts every other pressed cell back to 0.
    pub fn set_pressure(&mut self, cells: Vec<DetailPressure>) {
        let now: std::collections::HashSet<u32> = cells.iter().map(|p| p.cell).collect();
        let mut changes = cells;
        changes.extend(self.pressed.iter().filter(|c| !now.contains(c)).map(|&cell| DetailPressure { cell, head: 0.0 }));
        self.pressed = changes.iter().filter(|p| p.head != 0.0).map(|p| p.cell).collect();
        // A change not yet applied is replaced by the newer one.
        let changed: std::collections::HashSet<u32> = changes.iter().map(|p| p.cell).collect();
        self.pressure.retain(|p| !changed.contains(&p.cell));
        self.pressure.extend(changes);
    }

    /// Forgets the window's position and the pressure in force (the backend's fields were reset
    /// or rebuilt): the next frame starts afresh.
    pub fn restart(&mut self) {
        self.origin = None;
        self.pressed.clear();
        self.pressure.clear();
    }

    /// The next frame, lasting `frame_time` s, over flow of `gravity` m/s²; `None` when there is
    /// no time to simulate.
    pub fn frame(&mut self, frame_time: f32, gravity: f32) -> Option<DetailFrame> {
        if !(frame_time > 0.0 && frame_time.is_finite()) {
            return None;
        }
        let p = self.params;
        let window = self.window();
        let previous = self.origin.unwrap_or(window.origin);
        self.origin = Some(window.origin);
        self.seed = self.seed.wrapping_add(1);
        let take = self.ripples.len().min(MAX_RIPPLES_PER_FRAME);
        let ripples: Vec<Ripple> = self.ripples.drain(..take).collect();
        let s = p.subdivision as i32;
        let flow = [window.origin[0].div_euclid(s) - 1, window.origin[1].div_euclid(s) - 1];
        let place = FramePlace { origin: window.origin, previous, flow, grid: [self.grid.width, self.grid.height], cell_size: self.grid.cell_size };
        let constants = frame_constants(&p, place, frame_time, gravity, self.seed, ripples.len() as u32);
        Some(DetailFrame { constants, ripples, pressure: std::mem::take(&mut self.pressure) })
    }
}

/// Where a frame of the layer runs, in the coordinates its kernel works in: the window's first
/// detail cell now and in the last frame, the first cell of the flow region it reads (one flow
/// cell before the window's) and the size of the flow grid that region lies on (cells beyond it
/// are dry). A dense grid counts them from its corner; a world from an anchor near the window
/// (`world_water/detail.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FramePlace {
    /// Detail cell of the window's first cell.
    pub origin: [i32; 2],
    /// The same in the last frame.
    pub previous: [i32; 2],
    /// Flow cell of the region's first cell.
    pub flow: [i32; 2],
    /// Flow cells of the grid the region lies on.
    pub grid: [u32; 2],
    /// Side of a flow cell, m.
    pub cell_size: f32,
}

/// The constants of a frame of `frame_time` s at `place` ([`FramePlace`]) over flow of `gravity`
/// m/s²: substeps within [`DETAIL_CFL`], the sponge, the rain's odds. One function for every
/// caller, so that a dense grid's frames and a world's differ in nothing but their place.
pub fn frame_constants(p: &DetailParams, place: FramePlace, frame_time: f32, gravity: f32, seed: u32, ripple_count: u32) -> DetailConstants {
    let cell = place.cell_size / p.subdivision as f32;
    let stable = DETAIL_CFL * cell / p.max_celerity;
    let substeps = ((frame_time / stable).ceil() as u32).clamp(1, MAX_DETAIL_SUBSTEPS);
    let dt = (frame_time / substeps as f32).min(stable);
    let sponge_cells = (p.window / 16).max(4) as i32;
    let sponge_rate = SPONGE_STRENGTH * p.max_celerity / (sponge_cells as f32 * cell) * dt;
    let drops = (p.rain_rate as f64 * cell as f64 * cell as f64 * frame_time as f64).clamp(0.0, 1.0);
    let rain_threshold = (drops * 4_294_967_296.0).min(u32::MAX as f64) as u32;
    let layout = DetailLayout { window: p.window, subdivision: p.subdivision };
    let s = p.subdivision as i32;
    let n = p.window as i32;
    DetailConstants {
        window: p.window,
        subdivision: p.subdivision,
        origin_x: place.origin[0],
        origin_y: place.origin[1],
        previous_x: place.previous[0],
        previous_y: place.previous[1],
        storage_x: place.origin[0].rem_euclid(n),
        storage_y: place.origin[1].rem_euclid(n),
        phase_x: place.origin[0].rem_euclid(s),
        phase_y: place.origin[1].rem_euclid(s),
        flow_x: place.flow[0],
        flow_y: place.flow[1],
        flow_side: layout.flow_side(),
        grid_width: place.grid[0],
        grid_height: place.grid[1],
        substeps,
        dt,
        dt_over_cell: dt / cell,
        laplacian_scale: 1.0 / (6.0 * cell * cell),
        slope_scale: 1.0 / (2.0 * cell),
        decay: (-2.0 * p.damping as f64 * dt as f64).exp() as f32,
        max_celerity_squared: p.max_celerity * p.max_celerity,
        gravity,
        inverse_subdivision: 1.0 / s as f32,
        sponge_cells,
        sponge_rate,
        rain_threshold: if p.rain_drop != 0.0 { rain_threshold } else { 0 },
        rain_drop: p.rain_drop,
        seed,
        ripple_count,
        _pad: [0; 2],
    }
}

/// Checks `add_ripple`'s arguments: a finite point, `strength` within ±[`MAX_RIPPLE_STRENGTH`] m,
/// `radius` in `(0, 2 × grid extent]` m.
pub fn check_ripple(grid: &Grid, x: f32, z: f32, strength: f32, radius: f32) -> Result<()> {
    if !(x.is_finite() && z.is_finite()) {
        return Err(Error::invalid("position", format!("({x}, {z})"), "finite coordinates"));
    }
    check_range("strength", strength, -MAX_RIPPLE_STRENGTH, MAX_RIPPLE_STRENGTH)?;
    let [ex, ez] = grid.extent();
    let largest = 2.0 * ex.max(ez);
    if !(radius.is_finite() && radius > 0.0 && radius <= largest) {
        return Err(Error::invalid("radius", radius, format!("> 0 ..= {largest} m")));
    }
    Ok(())
}
