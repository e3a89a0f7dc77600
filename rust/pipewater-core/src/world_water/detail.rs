//! Detail waves on a world ([`crate::detail`]): the dense grid's wave layer over a window of the
//! world around its focus, fed with the world's water in that window.
//!
//! * **The window.** `window`² detail cells of `cell_size / subdivision` m centred on the focus
//!   ([`WorldWater::set_detail_focus`]) and kept within the **bounds** the caller gives
//!   ([`WorldWater::set_detail_bounds`]: the window of cells it draws at full resolution, so the
//!   waves lie on the mesh that shows them), else within the world; as a dense grid's window is
//!   kept within its grid. Its fields are stored toroidally as on a dense grid: world detail cell
//!   `g` (counted from the world's corner) at storage cell `g mod window`, so moving the window
//!   copies nothing, the waves stay where they are in the world wherever the old and new windows
//!   overlap, and the strips it enters start at rest.
//! * **Coordinates.** A world reaches 2³⁰ cells a side, times 16 detail cells: past an `i32`. The
//!   kernel counts detail cells from an **anchor** near the window: the window's first cell
//!   rounded down to a multiple of `lcm(window, subdivision)`. Moving the anchor moves no cell in
//!   storage (it is a multiple of the window) nor within its flow cell (a multiple of the
//!   subdivision), so a window may roam the whole world. Ripples are kept in the world's own
//!   (`f64`) coordinates until their frame.
//! * **The water it reads.** Each frame reads, before the frame's first step and after its
//!   sources and edits (the water a dense grid's layer reads), the region of the world under the
//!   window: its flow cells, one more each way that the kernel's interpolation reads, and one
//!   more for the velocities of those (a cell's velocity reads its neighbours' pipes). The
//!   region is a dense grid of the world's cells whatever pages it spans, and its texels are the
//!   dense grid's own ([`State::cell_texels`]): page borders do not exist for the waves.
//!   Beyond the world's edge the region is clipped: dry, as beyond a dense grid's.
//! * **Where it runs.** On the device by default: the world's frame gathers the region from the
//!   pages into dense buffers (`shaders/world_detail.wgsl`, after the frame's edits and before
//!   its first step) and runs the dense grid's GPU layer (`shaders/detail.wgsl`) over them
//!   (`backend/gpu/world/detail.rs`). Nothing waits: the texels and the heights queries ask for
//!   come back through the layer's readbacks a frame or two later, as on a dense GPU grid. The
//!   kernel's coordinates count from the anchor; when it moves, the heights that came back are
//!   moved with it ([`crate::detail::tiles::DetailTiles::shift`]).
//!   On the host, with [`WorldWater::set_detail_on_host`]: [`CpuDetail`], the reference the
//!   dense grid's `shaders/detail.wgsl` mirrors operation for operation, over the region read
//!   back each frame (a wait for the device; `(window / subdivision + 5)²` cells, 69² at the
//!   defaults). Tests compare the two.

use super::WorldWater;
use crate::bodies::{Body, BodyForce};
use crate::detail::hulls;
use crate::detail::{
    frame_constants, CpuDetail, DetailFrame, DetailLayout, DetailParams, DetailPressure, DetailTexels, DetailWindow, FramePlace, Ripple, MAX_RIPPLES_PER_FRAME, MAX_RIPPLE_STRENGTH,
    MIN_RIPPLE_CELLS,
};
use crate::error::{check_range, Error, Result};
use crate::grid::Grid;
use crate::pipes::{fixed_flux_per_stored, StepConstants};
use crate::state::State;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// A ripple waiting for its frame: centre in world detail cells (from the world's corner),
/// `1 / radius²` (1/cells²), height at the centre (m).
#[derive(Debug, Clone, Copy, PartialEq)]
struct WorldRipple {
    x: f64,
    y: f64,
    inverse_radius_squared: f32,
    strength: f32,
}

/// Where the detail window of a world lies: its first detail cell counted from the world's
/// corner, its layout, and the world's cells and cell size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorldDetailWindow {
    /// World detail cell of the window's first (−X, −Z) cell.
    pub origin: [i64; 2],
    /// Window side and subdivision.
    pub layout: DetailLayout,
    /// Cells of the world along x and y.
    pub world: [u32; 2],
    /// Side of a world cell, m.
    pub cell_size: f32,
}

impl WorldDetailWindow {
    /// Side of a detail cell, m.
    pub fn detail_cell_size(&self) -> f64 {
        self.cell_size as f64 / self.layout.subdivision as f64
    }

    /// Side of the window, m: the period of the detail texture's repeat.
    pub fn side(&self) -> f64 {
        self.layout.window as f64 * self.detail_cell_size()
    }

    /// The window's rectangle in metres from the world's −X −Z corner: (first corner, last).
    pub fn rect_from_corner(&self) -> ([f64; 2], [f64; 2]) {
        let d = self.detail_cell_size();
        let lo = [self.origin[0] as f64 * d, self.origin[1] as f64 * d];
        (lo, [lo[0] + self.side(), lo[1] + self.side()])
    }

    /// The window's rectangle in the world's local metres (centred on the world): (−X −Z
    /// corner, +X +Z corner).
    pub fn local_rect(&self) -> ([f32; 2], [f32; 2]) {
        let (lo, hi) = self.rect_from_corner();
        let half = [self.world[0] as f64 * self.cell_size as f64 * 0.5, self.world[1] as f64 * self.cell_size as f64 * 0.5];
        ([(lo[0] - half[0]) as f32, (lo[1] - half[1]) as f32], [(hi[0] - half[0]) as f32, (hi[1] - half[1]) as f32])
    }

    /// Whether world detail cell `g` lies in the window.
    pub fn contains(&self, g: [i64; 2]) -> bool {
        let n = self.layout.window as i64;
        (0..n).contains(&(g[0] - self.origin[0])) && (0..n).contains(&(g[1] - self.origin[1]))
    }

    /// Storage index of world detail cell `g`: `g mod window`, row-major.
    pub fn storage_index(&self, g: [i64; 2]) -> usize {
        let n = self.layout.window as i64;
        (g[1].rem_euclid(n) * n + g[0].rem_euclid(n)) as usize
    }

    /// The world detail cell at storage index `index`.
    pub fn world_cell(&self, index: usize) -> [i64; 2] {
        let n = self.layout.window as i64;
        let s = [(index as i64) % n, (index as i64) / n];
        [self.origin[0] + (s[0] - self.origin[0]).rem_euclid(n), self.origin[1] + (s[1] - self.origin[1]).rem_euclid(n)]
    }

    /// Continuous world detail coordinates of local point `(x, z)` (m).
    pub fn local_to_detail(&self, x: f32, z: f32) -> [f64; 2] {
        let s = self.layout.subdivision as f64;
        let dx = self.cell_size as f64;
        [(x as f64 / dx + self.world[0] as f64 * 0.5) * s, (z as f64 / dx + self.world[1] as f64 * 0.5) * s]
    }

    /// Local X, Z (m) of the centre of world detail cell `g`.
    pub fn cell_centre(&self, g: [i64; 2]) -> [f32; 2] {
        let d = self.detail_cell_size();
        let half = [self.world[0] as f64 * self.cell_size as f64 * 0.5, self.world[1] as f64 * self.cell_size as f64 * 0.5];
        [((g[0] as f64 + 0.5) * d - half[0]) as f32, ((g[1] as f64 + 0.5) * d - half[1]) as f32]
    }

    /// The anchor the kernel counts detail cells from in this window's frame: its first cell
    /// rounded down to a multiple of `lcm(window, subdivision)` (module docs).
    pub fn anchor(&self) -> [i64; 2] {
        let period = lcm(self.layout.window as i64, self.layout.subdivision as i64);
        [self.origin[0].div_euclid(period) * period, self.origin[1].div_euclid(period) * period]
    }

    /// The window as a dense grid's [`DetailWindow`] over a stand-in grid of two cells whose
    /// corner is the anchor, and the local position (m) of that grid's centre in the world: the
    /// dense grid's hull functions ([`hulls`]) run on it with points moved by minus that
    /// position, and name the same storage cells.
    pub fn stand_in(&self) -> (DetailWindow, [f32; 2]) {
        let anchor = self.anchor();
        let s = self.layout.subdivision as i64;
        let dx = self.cell_size as f64;
        let grid = Grid { width: 2, height: 2, cell_size: self.cell_size };
        let centre = [((anchor[0] / s) as f64 + 1.0 - self.world[0] as f64 * 0.5) * dx, ((anchor[1] / s) as f64 + 1.0 - self.world[1] as f64 * 0.5) * dx];
        let origin = [(self.origin[0] - anchor[0]) as i32, (self.origin[1] - anchor[1]) as i32];
        (DetailWindow { grid, layout: self.layout, origin }, [centre[0] as f32, centre[1] as f32])
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: i64, b: i64) -> i64 {
    a / gcd(a, b) * b
}

/// What a world keeps for its detail layer between frames: the settings, the focus and bounds,
/// the window's last place, ripples waiting, the hulls' pressure, the fields.
#[derive(Debug, Clone)]
pub struct WorldDetail {
    params: DetailParams,
    /// The fields on the host (the reference kernel); `None` while they are on the device.
    field: Option<CpuDetail>,
    /// The anchor of the last frame queued on the device, to move the heights that came back
    /// with it.
    device_anchor: Option<[i64; 2]>,
    world: [u32; 2],
    cell_size: f32,
    /// Continuous world cells the window centres on.
    focus: [f64; 2],
    /// Cells (x, y, w, h) the window stays within; `None`: the world.
    bounds: Option<[u32; 4]>,
    /// The window's first detail cell in the last frame.
    origin: Option<[i64; 2]>,
    ripples: VecDeque<WorldRipple>,
    /// Storage cells whose pressure is not zero.
    pressed: Vec<u32>,
    /// Pressure changes for the next frame.
    pressure: Vec<DetailPressure>,
    seed: u32,
    /// Frames run so far.
    frames: u64,
}

impl WorldDetail {
    /// A layer of `params` (validated) over a world of `world` cells of `cell_size` m, at rest,
    /// focused on the world's centre.
    pub fn new(params: DetailParams, world: [u32; 2], cell_size: f32) -> Result<Self> {
        params.validate()?;
        if world[0] < 2 || world[1] < 2 {
            return Err(Error::invalid("detail_waves", "on", format!("off on a {}x{} world: the layer needs a world of 2 cells a side or more", world[0], world[1])));
        }
        let field = Some(CpuDetail::new(DetailLayout { window: params.window, subdivision: params.subdivision }));
        Ok(WorldDetail {
            params,
            field,
            device_anchor: None,
            world,
            cell_size,
            focus: [world[0] as f64 * 0.5, world[1] as f64 * 0.5],
            bounds: None,
            origin: None,
            ripples: VecDeque::new(),
            pressed: Vec::new(),
            pressure: Vec::new(),
            seed: 0,
            frames: 0,
        })
    }

    /// The settings.
    pub fn params(&self) -> &DetailParams {
        &self.params
    }

    fn layout(&self) -> DetailLayout {
        DetailLayout { window: self.params.window, subdivision: self.params.subdivision }
    }

    /// Replaces the settings (validated): a new window side or subdivision puts the waves at rest.
    pub fn set_params(&mut self, params: DetailParams) -> Result<()> {
        params.validate()?;
        if (params.window, params.subdivision) != (self.params.window, self.params.subdivision) {
            if self.field.is_some() {
                self.field = Some(CpuDetail::new(DetailLayout { window: params.window, subdivision: params.subdivision }));
            }
            self.device_anchor = None;
            self.origin = None;
            self.pressed.clear();
            self.pressure.clear();
            self.ripples.clear();
        }
        self.params = params;
        Ok(())
    }

    /// The window where the next frame puts it.
    pub fn window(&self) -> WorldDetailWindow {
        let layout = self.layout();
        let (s, n) = (layout.subdivision as i64, layout.window as i64);
        let [bx, by, bw, bh] = self.bounds.unwrap_or([0, 0, self.world[0], self.world[1]]);
        let mut origin = [0i64; 2];
        for (axis, (first, cells)) in [(bx, bw), (by, bh)].into_iter().enumerate() {
            let (first, span) = (first as i64 * s, cells as i64 * s);
            // As DetailWindow::around on a dense grid: inside the bounds where they are larger
            // than the window, centred on them where they are smaller.
            let wanted = (self.focus[axis] * s as f64 - n as f64 / 2.0).round();
            let wanted = if wanted.is_finite() { wanted.clamp(i64::MIN as f64 / 4.0, i64::MAX as f64 / 4.0) as i64 } else { first };
            origin[axis] = if span >= n { wanted.clamp(first, first + span - n) } else { first + (span - n).div_euclid(2) };
        }
        WorldDetailWindow { origin, layout, world: self.world, cell_size: self.cell_size }
    }

    /// The window the fields are in: the last frame's, else where the next frame puts it.
    pub fn current_window(&self) -> WorldDetailWindow {
        let mut w = self.window();
        if let Some(origin) = self.origin {
            w.origin = origin;
        }
        w
    }

    /// Centres the window on continuous world cell `cells` from the next frame on; a point that
    /// is not finite is ignored.
    pub fn set_focus_cells(&mut self, cells: [f64; 2]) {
        if cells.iter().all(|v| v.is_finite()) {
            self.focus = cells;
        }
    }

    /// Keeps the window within cells `(x, y, w, h)` of the world (`None`: the world). Refused,
    /// naming `detail_bounds`, when they are empty or pass the world's edge.
    pub fn set_bounds(&mut self, bounds: Option<[u32; 4]>) -> Result<()> {
        if let Some([x, y, w, h]) = bounds {
            if w == 0 || h == 0 || x as u64 + w as u64 > self.world[0] as u64 || y as u64 + h as u64 > self.world[1] as u64 {
                return Err(Error::invalid("detail_bounds", format!("{w}x{h} cells at ({x}, {y})"), format!("a rectangle of at least one cell within the {}x{} world", self.world[0], self.world[1])));
            }
        }
        self.bounds = bounds;
        Ok(())
    }

    /// Queues a ripple of `strength` m at its centre and `radius` m around local `(x, z)`;
    /// whether it reaches the window as it stands. Refused, naming the argument, for a point
    /// that is not finite, a strength beyond ±[`MAX_RIPPLE_STRENGTH`] m or a radius outside
    /// `(0, 2 × the world's larger extent]` m.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        if !(x.is_finite() && z.is_finite()) {
            return Err(Error::invalid("position", format!("({x}, {z})"), "finite coordinates"));
        }
        check_range("strength", strength, -MAX_RIPPLE_STRENGTH, MAX_RIPPLE_STRENGTH)?;
        let largest = 2.0 * self.world[0].max(self.world[1]) as f64 * self.cell_size as f64;
        if !(radius.is_finite() && radius > 0.0 && radius as f64 <= largest) {
            return Err(Error::invalid("radius", radius, format!("> 0 ..= {largest} m")));
        }
        let window = self.current_window();
        let cells = (radius as f64 / window.detail_cell_size()).max(MIN_RIPPLE_CELLS as f64);
        let [cx, cy] = window.local_to_detail(x, z);
        let n = window.layout.window as f64;
        let (lo, hi) = ([window.origin[0] as f64, window.origin[1] as f64], [window.origin[0] as f64 + n, window.origin[1] as f64 + n]);
        let reaches = cx + cells > lo[0] && cx - cells < hi[0] && cy + cells > lo[1] && cy - cells < hi[1];
        if reaches {
            self.ripples.push_back(WorldRipple { x: cx, y: cy, inverse_radius_squared: (1.0 / (cells * cells)) as f32, strength });
        }
        Ok(reaches)
    }

    /// Replaces the hulls' pressure with `cells` (storage cell, head m; each at most once), as
    /// [`crate::detail::DetailDriver::set_pressure`].
    pub fn set_pressure(&mut self, cells: Vec<DetailPressure>) {
        let now: HashSet<u32> = cells.iter().map(|p| p.cell).collect();
        let mut changes = cells;
        changes.extend(self.pressed.iter().filter(|c| !now.contains(c)).map(|&cell| DetailPressure { cell, head: 0.0 }));
        self.pressed = changes.iter().filter(|p| p.head != 0.0).map(|p| p.cell).collect();
        let changed: HashSet<u32> = changes.iter().map(|p| p.cell).collect();
        self.pressure.retain(|p| !changed.contains(&p.cell));
        self.pressure.extend(changes);
    }

    /// The next frame, lasting `frame_time` s over flow of `gravity` m/s²: the frame in the
    /// kernel's coordinates and the world cells `(x, y, w, h)` of the region it reads (the
    /// kernel's flow grid). `None` when there is no time to simulate.
    pub fn frame(&mut self, frame_time: f32, gravity: f32, cell_size: f32) -> Option<(DetailFrame, [u32; 4])> {
        if !(frame_time > 0.0 && frame_time.is_finite()) {
            return None;
        }
        let window = self.window();
        let origin = window.origin;
        let previous = self.origin.unwrap_or(origin);
        self.origin = Some(origin);
        let anchor = window.anchor();
        let (s, n) = (window.layout.subdivision as i64, window.layout.window as i64);
        let relative = [(origin[0] - anchor[0]) as i32, (origin[1] - anchor[1]) as i32];
        // A window that moved farther than its side kept nothing: any place it no longer
        // overlaps serves as the last one (and stays within an i32 of the anchor).
        let moved_off = (0..2).any(|k| (previous[k] - origin[k]).abs() >= n);
        let previous = if moved_off { [relative[0] + n as i32, relative[1]] } else { [(previous[0] - anchor[0]) as i32, (previous[1] - anchor[1]) as i32] };
        // The flow region the kernel reads (one flow cell before the window's, `flow_side` a
        // side), with one more cell each way for the velocities, clipped to the world.
        let side = window.layout.flow_side() as i64;
        let flow = [origin[0].div_euclid(s) - 1, origin[1].div_euclid(s) - 1];
        let mut region = [0u32; 4];
        let mut first = [0i64; 2];
        for k in 0..2 {
            let lo = (flow[k] - 1).clamp(0, self.world[k] as i64 - 2);
            let hi = (flow[k] + side + 1).clamp(lo + 2, self.world[k] as i64);
            first[k] = lo;
            region[k] = lo as u32;
            region[k + 2] = (hi - lo) as u32;
        }
        self.seed = self.seed.wrapping_add(1);
        let take = self.ripples.len().min(MAX_RIPPLES_PER_FRAME);
        let ripples: Vec<Ripple> = self
            .ripples
            .drain(..take)
            .map(|r| Ripple { x: (r.x - anchor[0] as f64) as f32, y: (r.y - anchor[1] as f64) as f32, inverse_radius_squared: r.inverse_radius_squared, strength: r.strength })
            .collect();
        let place = FramePlace {
            origin: relative,
            previous,
            flow: [(flow[0] - first[0]) as i32, (flow[1] - first[1]) as i32],
            grid: [region[2], region[3]],
            cell_size,
        };
        let constants = frame_constants(&self.params, place, frame_time, gravity, self.seed, ripples.len() as u32);
        Some((DetailFrame { constants, ripples, pressure: std::mem::take(&mut self.pressure) }, region))
    }

    /// Runs `frame` over `region`, the world's water under it ([`WorldDetail::frame`]'s region)
    /// read with step constants `constants`.
    pub fn advance(&mut self, frame: &DetailFrame, region: &State, constants: &StepConstants) -> Result<()> {
        let fixed = fixed_flux_per_stored(constants);
        let Some(field) = &mut self.field else { return Err(Error::invalid("detail waves", "on the device", "on the host (set_detail_on_host)")) };
        field.advance(frame, |x, y| region.cell_texels(x, y, fixed, false))?;
        self.frames += 1;
        Ok(())
    }

    /// Whether the fields are on the host (the reference kernel) rather than the device.
    pub fn on_host(&self) -> bool {
        self.field.is_some()
    }

    /// Moves the fields to the host (`true`, the reference kernel) or the device, at rest; the
    /// settings, focus, ripples waiting and hulls stay.
    fn place(&mut self, on_host: bool) {
        self.field = on_host.then(|| CpuDetail::new(self.layout()));
        self.device_anchor = None;
        self.origin = None;
    }

    /// Frames run so far: the texels change only when it does.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// `(h, v)` per storage cell ([`WorldDetailWindow::storage_index`]) on the host; empty while
    /// the fields are on the device ([`WorldWater::read_detail`] reads those).
    pub fn fields(&self) -> &[[f32; 2]] {
        self.field.as_ref().map_or(&[], |f| f.fields())
    }

    /// Height (m) of world detail cell `g` as of the last frame; 0 outside the window.
    pub fn height(&self, g: [i64; 2]) -> f32 {
        let window = self.current_window();
        match &self.field {
            Some(field) if self.origin.is_some() && window.contains(g) => field.fields()[window.storage_index(g)][0],
            _ => 0.0,
        }
    }

    /// The four detail cells around local `(x, z)` (the first; the others +x, +y, +xy) and the
    /// weights of the second along x and the third along y: what a bilinear height reads.
    fn bilinear_cells(&self, x: f32, z: f32) -> ([i64; 2], f32, f32) {
        let window = self.current_window();
        let [px, py] = window.local_to_detail(x, z);
        let (fx, fy) = (px - 0.5, py - 0.5);
        let (x0, y0) = (fx.floor(), fy.floor());
        ([x0 as i64, y0 as i64], (fx - x0) as f32, (fy - y0) as f32)
    }

    /// Height (m) of the waves at local `(x, z)`, bilinear between detail cell centres, on the
    /// host (0 while the fields are on the device: [`WorldWater::detail_height`] reads those).
    pub fn height_at(&self, x: f32, z: f32) -> f32 {
        let (g, tx, ty) = self.bilinear_cells(x, z);
        let h = |dx: i64, dy: i64| self.height([g[0] + dx, g[1] + dy]);
        bilinear([h(0, 0), h(1, 0), h(0, 1), h(1, 1)], tx, ty)
    }

    /// The detail texture's texels of the last frame, in storage order, on the host; `None`
    /// before the first and while the fields are on the device.
    pub fn texels(&self) -> Option<DetailTexels> {
        self.field.as_ref().and_then(|f| f.texels())
    }
}

/// Bilinear between four corners (−−, +−, −+, ++) at weights `tx`, `ty`.
fn bilinear(h: [f32; 4], tx: f32, ty: f32) -> f32 {
    let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
    lerp(lerp(h[0], h[1], tx), lerp(h[2], h[3], tx), ty)
}

impl WorldWater {
    /// Turns the detail wave layer on with `params` (validated) or off (`None`), as
    /// [`crate::Simulation::set_detail`]: turned on, or with a new window side or subdivision,
    /// its waves start at rest. Refused, the layer as it was, naming the setting.
    /// The layer runs on the device unless [`WorldWater::set_detail_on_host`] asked otherwise.
    pub fn set_detail(&mut self, params: Option<DetailParams>) -> Result<()> {
        let Some(p) = params else {
            self.detail = None;
            return self.world.set_detail_layer(None);
        };
        let mut detail = match &self.detail {
            Some(d) => d.clone(),
            None => {
                let mut d = WorldDetail::new(p, self.size(), self.cell_size)?;
                d.place(self.detail_on_host);
                d
            }
        };
        detail.set_params(p)?;
        let layout = detail.layout();
        if !detail.on_host() && self.world.detail_layout() != Some(layout) {
            // A new layout on the device starts at rest, as a new one on the host does.
            self.world.set_detail_layer(Some(layout))?;
            detail.place(false);
        }
        self.detail = Some(detail);
        Ok(())
    }

    /// Runs the detail layer on the host's reference kernel (`true`: the region under the window
    /// read back every frame, a wait for the device) or on the device (`false`, the default: no
    /// wait). The waves start at rest on the new side; settings, focus and bounds stay.
    pub fn set_detail_on_host(&mut self, on_host: bool) -> Result<()> {
        let Some(detail) = &mut self.detail else {
            self.detail_on_host = on_host;
            return Ok(());
        };
        if detail.on_host() != on_host {
            self.world.set_detail_layer((!on_host).then(|| detail.layout()))?;
            detail.place(on_host);
        }
        self.detail_on_host = on_host;
        Ok(())
    }

    /// Whether the detail layer runs on the host's reference kernel ([`WorldWater::set_detail_on_host`]).
    pub fn detail_on_host(&self) -> bool {
        self.detail_on_host
    }

    /// The detail layer's settings; `None` while it is off.
    pub fn detail_params(&self) -> Option<&DetailParams> {
        self.detail.as_ref().map(|d| d.params())
    }

    /// The detail layer, while it is on.
    pub fn detail(&self) -> Option<&WorldDetail> {
        self.detail.as_ref()
    }

    /// Centres the detail window on local point `(x, z)` (m) from the next frame on (a camera,
    /// a boat); points that are not finite are ignored.
    pub fn set_detail_focus(&mut self, x: f32, z: f32) {
        let cells = self.to_cells(x, z);
        if let Some(d) = &mut self.detail {
            d.set_focus_cells(cells);
        }
    }

    /// Keeps the detail window within cells `(x, y, w, h)` (the window a caller draws at full
    /// resolution), or within the world with `None` ([`WorldDetail::set_bounds`]).
    pub fn set_detail_bounds(&mut self, bounds: Option<[u32; 4]>) -> Result<()> {
        match &mut self.detail {
            Some(d) => d.set_bounds(bounds),
            None => Ok(()),
        }
    }

    /// Where the detail window's fields are now; `None` while the layer is off.
    pub fn detail_window(&self) -> Option<WorldDetailWindow> {
        self.detail.as_ref().map(|d| d.current_window())
    }

    /// Adds a ripple to the detail waves at the next frame, as [`crate::Simulation::add_ripple`]:
    /// whether it reaches the window (false while the layer is off). Refused, naming the
    /// argument, for a point that is not finite, a strength beyond ±10 m, a radius outside
    /// `(0, 2 × the world's larger extent]`.
    pub fn add_ripple(&mut self, x: f32, z: f32, strength: f32, radius: f32) -> Result<bool> {
        match &mut self.detail {
            Some(d) => d.add_ripple(x, z, strength, radius),
            None => {
                // The arguments are checked all the same: a script learns of a bad call at once.
                let mut probe = WorldDetail::new(DetailParams::default(), self.size().map(|v| v.max(2)), self.cell_size)?;
                probe.add_ripple(x, z, strength, radius).map(|_| false)
            }
        }
    }

    /// Height (m) of the detail waves at local `(x, z)`, bilinear: 0 while the layer is off or
    /// outside its window.
    /// On the device the heights are those of the newest frame whose tiles came back (a frame
    /// or two old, as on a dense GPU grid; 0 where none has yet): a query asks for its tiles,
    /// read back with every frame from then on.
    pub fn detail_height(&mut self, x: f32, z: f32) -> f32 {
        if !(x.is_finite() && z.is_finite()) {
            return 0.0;
        }
        let Some(detail) = &self.detail else { return 0.0 };
        let (g, tx, ty) = detail.bilinear_cells(x, z);
        let h = self.detail_cell_heights(&[g, [g[0] + 1, g[1]], [g[0], g[1] + 1], [g[0] + 1, g[1] + 1]]);
        bilinear([h[0], h[1], h[2], h[3]], tx, ty)
    }

    /// Heights (m) of world detail cells `cells` (from the world's corner): the last frame's on
    /// the host; on the device those of the newest tiles that came back. 0 outside the window.
    pub(super) fn detail_cell_heights(&mut self, cells: &[[i64; 2]]) -> Vec<f32> {
        let Some(detail) = &self.detail else { return vec![0.0; cells.len()] };
        if detail.on_host() {
            return cells.iter().map(|&g| detail.height(g)).collect();
        }
        let window = detail.current_window();
        let anchor = window.anchor();
        let inside: Vec<usize> = (0..cells.len()).filter(|&k| detail.origin.is_some() && window.contains(cells[k])).collect();
        // Within the window, a cell lies within the anchor's period plus the window of it.
        let asked: Vec<[i32; 2]> = inside.iter().map(|&k| [(cells[k][0] - anchor[0]) as i32, (cells[k][1] - anchor[1]) as i32]).collect();
        let heights = self.world.detail_heights(&asked);
        let mut out = vec![0.0; cells.len()];
        for (&k, h) in inside.iter().zip(heights) {
            out[k] = h;
        }
        out
    }

    /// The detail fields, `(h, v)` per storage cell (empty while the layer is off). On the device
    /// this waits for it (tests, tools); empty if the read fails.
    pub fn read_detail(&mut self) -> Vec<[f32; 2]> {
        match &self.detail {
            Some(d) if d.on_host() => d.fields().to_vec(),
            Some(d) if d.origin.is_some() => self.world.read_detail_fields().unwrap_or_default(),
            Some(d) => vec![[0.0; 2]; d.layout().cells()],
            None => Vec::new(),
        }
    }

    /// Waits until the detail layer's reads on their way have come back (the device idle): the
    /// next [`WorldWater::detail_texels`] and [`WorldWater::detail_height`] then hold the last
    /// frame's texels and heights, as far as they were asked for before it (tests, and a script
    /// that stepped the world by hand). Nothing to wait for on the host or with the layer off.
    pub fn wait_detail_reads(&mut self) -> Result<()> {
        match &self.detail {
            Some(d) if !d.on_host() => self.world.wait_idle(),
            _ => Ok(()),
        }
    }

    /// The detail texture's texels ([`DetailTexels`], storage order): the last frame's on the
    /// host; on the device the newest that came back (a frame or two old; asked for with every
    /// frame from the first call on). `None` before any.
    pub fn detail_texels(&mut self) -> Option<Arc<DetailTexels>> {
        let detail = self.detail.as_ref()?;
        if detail.on_host() {
            return detail.texels().map(Arc::new);
        }
        self.world.detail_texels()
    }

    /// Puts the pressure of `bodies` on the detail waves for the next frame at the water levels
    /// their coupling found (`forces`), as [`crate::Simulation::apply_detail_pressure`].
    pub fn apply_detail_pressure(&mut self, bodies: &[Body], forces: &[Result<BodyForce>]) {
        let Some(detail) = &mut self.detail else { return };
        let levels: Vec<Option<f32>> = forces.iter().map(|f| f.as_ref().ok().and_then(|f| f.water_level)).collect();
        let (window, centre) = detail.window().stand_in();
        let moved: Vec<Body> = bodies.iter().map(|b| Body { position: b.position - glam::Vec3::new(centre[0], 0.0, centre[1]), ..b.clone() }).collect();
        let pressure = hulls::hull_pressure(&window, &moved, &levels, detail.params().hull_strength);
        detail.set_pressure(pressure);
    }

    /// Runs the detail layer's frame of `step × substeps` s over the water as it is before the
    /// frame's first step (module docs). Nothing while the layer is off.
    pub(super) fn advance_detail(&mut self, step: f32, substeps: u32) -> Result<()> {
        let gravity = self.params.gravity;
        let cell_size = self.cell_size;
        let Some(detail) = &mut self.detail else { return Ok(()) };
        let Some((frame, [x, y, w, h])) = detail.frame(step * substeps as f32, gravity, cell_size) else { return Ok(()) };
        if !detail.on_host() {
            let anchor = detail.current_window().anchor();
            if let Some(before) = detail.device_anchor.replace(anchor) {
                if before != anchor {
                    // A move too far for an i32 keeps nothing: an odd shift forgets every tile.
                    let by = |k: usize| i32::try_from(anchor[k] - before[k]).unwrap_or(1);
                    self.world.shift_detail_reads([by(0), by(1)]);
                }
            }
            detail.frames += 1;
            let constants = StepConstants::new(&self.params, w, h, self.cell_size, step, [0; 4]);
            return self.world.queue_detail(frame, [x, y], [w, h], &constants);
        }
        let [ww, wh] = self.size();
        let constants = StepConstants::new(&self.params, ww, wh, self.cell_size, step, [0; 4]);
        let region = self.region_state(x, y, Grid::new(w, h, self.cell_size)?)?;
        if let Some(detail) = &mut self.detail {
            detail.advance(&frame, &region, &constants)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The anchor moves in multiples of the window and the subdivision, so a world cell keeps its
    /// storage cell and its place in its flow cell however far the window roams; a window at the
    /// far corner of the largest world still counts its cells within an i32 of the anchor.
    #[test]
    fn the_anchor_keeps_storage_and_phase_anywhere_in_the_largest_world() {
        let world = [(1u32 << 30) - 1, (1u32 << 30) - 1];
        let params = DetailParams { window: 200, subdivision: 16, ..DetailParams::default() };
        let mut detail = WorldDetail::new(params, world, 1.0).unwrap();
        let mut checked = 0;
        for focus in [[1.0e3, 2.0e3], [5.0e8, 7.0e8], [world[0] as f64 - 3.0, world[1] as f64 - 3.0]] {
            detail.set_focus_cells(focus);
            let window = detail.window();
            let anchor = window.anchor();
            let period = lcm(200, 16);
            let (frame, region) = detail.frame(1.0 / 60.0, 9.81, 1.0).unwrap();
            let c = frame.constants;
            for (a, o) in anchor.iter().zip(window.origin) {
                assert_eq!(a.rem_euclid(period), 0);
                assert!((0..period).contains(&(o - a)));
            }
            assert_eq!((c.storage_x as i64, c.storage_y as i64), (window.origin[0].rem_euclid(200), window.origin[1].rem_euclid(200)));
            assert_eq!((c.phase_x as i64, c.phase_y as i64), (window.origin[0].rem_euclid(16), window.origin[1].rem_euclid(16)));
            assert!(region[0] as u64 + region[2] as u64 <= world[0] as u64 && region[1] as u64 + region[3] as u64 <= world[1] as u64);
            println!("focus {focus:?}: window origin {:?}, anchor {anchor:?}, storage ({}, {}), phase ({}, {}), region {region:?}", window.origin, c.storage_x, c.storage_y, c.phase_x, c.phase_y);
            checked += 1;
        }
        assert_eq!(checked, 3);
    }

    /// Where the walking-window test rings its ripple (local m): 40 detail cells east of the
    /// world's centre, so that the window walking east crosses a multiple of its anchor's period.
    const RIPPLE: [f32; 2] = [5.0, 0.0];

    /// Runs a layer over the water of `whole` (a world's cells, as a dense state) for `frames`
    /// frames, its focus at `focus(frame)` (local m), a ripple rung at [`RIPPLE`] in the first.
    fn ring(whole: &State, frames: u32, focus: impl Fn(u32) -> [f32; 2]) -> WorldDetail {
        let g = whole.grid;
        let mut detail = WorldDetail::new(DetailParams::default(), [g.width, g.height], g.cell_size).unwrap();
        let constants = StepConstants::new(&crate::Params::default(), g.width, g.height, g.cell_size, 0.02, [0; 4]);
        for frame in 0..frames {
            let [x, z] = focus(frame);
            detail.set_focus_cells([x as f64 / g.cell_size as f64 + g.width as f64 * 0.5, z as f64 / g.cell_size as f64 + g.height as f64 * 0.5]);
            if frame == 0 {
                assert!(detail.add_ripple(RIPPLE[0], RIPPLE[1], 0.05, 1.0).unwrap());
            }
            let (f, [x0, y0, w, h]) = detail.frame(0.02, 9.81, g.cell_size).unwrap();
            let cut = |i: usize| (i % w as usize + x0 as usize) + (i / w as usize + y0 as usize) * g.width as usize;
            let cells = (w * h) as usize;
            let region = State {
                grid: Grid::new(w, h, g.cell_size).unwrap(),
                terrain: (0..cells).map(|i| whole.terrain[cut(i)]).collect(),
                depth: (0..cells).map(|i| whole.depth[cut(i)]).collect(),
                flow: (0..cells).map(|i| whole.flow[cut(i)]).collect(),
            };
            detail.advance(&f, &region, &constants).unwrap();
        }
        detail
    }

    /// The largest difference between two layers' fields over the cells around the ripple that
    /// lie in both windows clear of their sponges, and how many there are.
    fn overlap_difference(a: &WorldDetail, b: &WorldDetail) -> (f32, usize) {
        let (wa, wb) = (a.current_window(), b.current_window());
        let band = 16;
        let clear = |w: &WorldDetailWindow, g: [i64; 2]| (0..2).all(|k| (band..256 - band).contains(&(g[k] - w.origin[k])));
        let (mut worst, mut compared) = (0.0f32, 0);
        for (i, field) in a.fields().iter().enumerate() {
            let g = wa.world_cell(i);
            let [x, z] = wa.cell_centre(g);
            if (x - RIPPLE[0]).hypot(z - RIPPLE[1]) > 4.0 || !clear(&wa, g) || !clear(&wb, g) {
                continue;
            }
            let other = b.fields()[wb.storage_index(g)];
            worst = worst.max((field[0] - other[0]).abs()).max((field[1] - other[1]).abs());
            compared += 1;
        }
        (worst, compared)
    }

    /// In still water a window walking 40 detail cells, past a multiple of its anchor's period
    /// (the anchor moves), keeps the waves where they are in the world to the bit (as a dense
    /// grid's). In a current it keeps them within the rounding of
    /// the advection's departure points, which are found in window coordinates (`x − U·dt` for
    /// a cell's place in the window, 0 ..= window): one ulp of ~200 cells, 1.5·10⁻⁵ cell, a
    /// substep, on slopes of ~0.01 m a cell, adds up to ~10⁻⁵ m in 60 substeps. Tolerance 1 % of
    /// the largest height (a wave put in the wrong storage cell would differ by its own size).
    #[test]
    fn a_walking_window_keeps_waves_to_the_bit_in_still_water_and_to_rounding_in_a_current() {
        let grid = Grid::new(160, 120, 0.5).unwrap();
        let mut still = State::with_terrain(grid, vec![0.0; 160 * 120]).unwrap();
        still.fill_to_level(1.0).unwrap();
        let mut current = still.clone();
        // 0.3 m/s east: the E pipe's flow is the velocity times the pipe's width.
        current.flow.iter_mut().for_each(|f| f[0] = 0.3 * 0.5);
        let mut figures = Vec::new();
        for water in [&still, &current] {
            let fixed = ring(water, 60, |_| RIPPLE);
            let walked = ring(water, 60, |frame| [RIPPLE[0] + frame.min(40) as f32 * 0.125, RIPPLE[1] + (frame.min(40) * 12 / 40) as f32 * 0.125]);
            let (before, after) = (fixed.current_window(), walked.current_window());
            assert_ne!(before.anchor()[0], after.anchor()[0], "the walk moves the anchor");
            let largest = fixed.fields().iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
            let (worst, compared) = overlap_difference(&fixed, &walked);
            println!(
                "windows at {:?} (anchor {:?}) and {:?} (anchor {:?}): {compared} cells compared, largest height {largest:.5} m, largest difference {worst:e}",
                before.origin,
                before.anchor(),
                after.origin,
                after.anchor()
            );
            assert!(compared > 1000 && largest > 1.0e-3);
            figures.push((worst, largest));
        }
        assert_eq!(figures[0].0, 0.0, "still water: to the bit");
        assert!(figures[1].0 < 1.0e-2 * figures[1].1, "a current: within 1 % of the largest");
    }

    /// Bad input is refused by name: a ripple's point, strength and radius, bounds off the
    /// world, settings out of range.
    #[test]
    fn bad_detail_input_is_refused_by_name() {
        let mut detail = WorldDetail::new(DetailParams::default(), [500, 300], 1.0).unwrap();
        let name = |r: Result<bool>| match r {
            Err(Error::InvalidArgument { name, .. }) => name,
            other => panic!("not refused by name: {other:?}"),
        };
        let names = [
            name(detail.add_ripple(f32::NAN, 0.0, 0.1, 1.0)),
            name(detail.add_ripple(0.0, f32::INFINITY, 0.1, 1.0)),
            name(detail.add_ripple(0.0, 0.0, 11.0, 1.0)),
            name(detail.add_ripple(0.0, 0.0, f32::NAN, 1.0)),
            name(detail.add_ripple(0.0, 0.0, 0.1, 0.0)),
            name(detail.add_ripple(0.0, 0.0, 0.1, 1001.0)),
            name(detail.set_bounds(Some([400, 0, 101, 10])).map(|_| true)),
            name(detail.set_bounds(Some([0, 0, 0, 10])).map(|_| true)),
            name(detail.set_params(DetailParams { window: 8, ..DetailParams::default() }).map(|_| true)),
            name(detail.set_params(DetailParams { subdivision: 17, ..DetailParams::default() }).map(|_| true)),
            name(WorldDetail::new(DetailParams::default(), [1, 300], 1.0).map(|_| true)),
        ];
        println!("refused: {names:?}");
        assert_eq!(names, ["position", "position", "strength", "strength", "radius", "radius", "detail_bounds", "detail_bounds", "detail_window", "detail_subdivision", "detail_waves"]);
        assert_eq!(detail.params(), &DetailParams::default(), "the settings stay");
        assert!(detail.add_ripple(0.0, 0.0, 0.1, 1.0).unwrap(), "a good ripple is taken");
    }
}
