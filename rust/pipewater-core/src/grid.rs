//! The grid: `width × height` square cells in the local XZ plane, centred on the origin.
//!
//! Cell `(x, y)` covers local X from `(x − width/2)·cell_size` to `(x + 1 − width/2)·cell_size`
//! and local Z likewise with `y`, so grid +x is local +X and grid +y ("south") is local +Z.

use crate::error::{check_range, Error, Result};

/// Largest supported side, in cells. 16384² cells already need ~3 GiB of state.
pub const MAX_GRID_SIDE: u32 = 16384;
/// Smallest supported side, in cells.
pub const MIN_GRID_SIDE: u32 = 2;
/// Valid cell sizes, in metres.
pub const CELL_SIZE_RANGE: (f32, f32) = (1.0e-3, 1.0e4);

/// A rectangle of whole cells: `width × height` cells from cell `(x, y)`, the unit in which
/// authoring tools read and write the fields ([`crate::Simulation::depth_region`]). Values over a
/// rectangle are row-major: index `(cy − y) × width + (cx − x)` for cell `(cx, cy)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CellRect {
    /// First cell along x (local X).
    pub x: u32,
    /// First cell along y (local Z).
    pub y: u32,
    /// Cells along x.
    pub width: u32,
    /// Cells along y.
    pub height: u32,
}

impl CellRect {
    /// Number of cells.
    pub fn cell_count(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// Whether it holds no cell.
    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// The smallest rectangle holding both (an empty one adds nothing).
    pub fn union(self, other: CellRect) -> CellRect {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        let (x, y) = (self.x.min(other.x), self.y.min(other.y));
        let right = (self.x + self.width).max(other.x + other.width);
        let bottom = (self.y + self.height).max(other.y + other.height);
        CellRect { x, y, width: right - x, height: bottom - y }
    }

    /// The smallest rectangle holding every cell `(x, y)` of `cells`; `None` when there is none.
    pub fn bounding(cells: impl IntoIterator<Item = (u32, u32)>) -> Option<CellRect> {
        cells.into_iter().fold(None, |rect: Option<CellRect>, (x, y)| {
            let one = CellRect { x, y, width: 1, height: 1 };
            Some(rect.map_or(one, |r| r.union(one)))
        })
    }

    /// Whether cell `(cx, cy)` lies inside.
    pub fn contains(&self, cx: u32, cy: u32) -> bool {
        cx >= self.x && cy >= self.y && cx - self.x < self.width && cy - self.y < self.height
    }
}

/// Size and resolution of a simulation grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    /// Cells along local X, `2 ..= 16384`.
    pub width: u32,
    /// Cells along local Z, `2 ..= 16384`.
    pub height: u32,
    /// Side of a square cell, in metres, `0.001 ..= 10000`.
    pub cell_size: f32,
}

impl Grid {
    /// Validates and builds a grid.
    pub fn new(width: u32, height: u32, cell_size: f32) -> Result<Self> {
        for (name, side) in [("width", width), ("height", height)] {
            if !(MIN_GRID_SIDE..=MAX_GRID_SIDE).contains(&side) {
                return Err(Error::invalid(name, side, format!("{MIN_GRID_SIDE} ..= {MAX_GRID_SIDE} cells")));
            }
        }
        check_range("cell_size", cell_size, CELL_SIZE_RANGE.0, CELL_SIZE_RANGE.1)?;
        Ok(Grid { width, height, cell_size })
    }

    /// Number of cells.
    #[inline]
    pub fn cell_count(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// Linear index of cell `(x, y)`, row-major.
    #[inline]
    pub fn index(&self, x: u32, y: u32) -> usize {
        y as usize * self.width as usize + x as usize
    }

    /// Every cell of the grid as one rectangle.
    pub fn whole(&self) -> CellRect {
        CellRect { x: 0, y: 0, width: self.width, height: self.height }
    }

    /// Checks that `rect` holds at least one cell and lies inside the grid.
    pub fn check_rect(&self, rect: CellRect) -> Result<()> {
        let fits = |start: u32, size: u32, side: u32| size > 0 && start < side && size <= side - start;
        if fits(rect.x, rect.width, self.width) && fits(rect.y, rect.height, self.height) {
            Ok(())
        } else {
            Err(Error::invalid(
                "region",
                format!("{} × {} cells from ({}, {})", rect.width, rect.height, rect.x, rect.y),
                format!("at least one cell inside the {} × {} grid (x 0 ..= {}, y 0 ..= {})", self.width, self.height, self.width - 1, self.height - 1),
            ))
        }
    }

    /// Area of one cell, in m².
    #[inline]
    pub fn cell_area(&self) -> f32 {
        self.cell_size * self.cell_size
    }

    /// Size of the whole grid in local X and Z, in metres.
    pub fn extent(&self) -> [f32; 2] {
        [self.width as f32 * self.cell_size, self.height as f32 * self.cell_size]
    }

    /// Local XZ position of the centre of cell `(x, y)`, in metres.
    pub fn cell_centre(&self, x: u32, y: u32) -> [f32; 2] {
        [
            (x as f32 + 0.5 - self.width as f32 * 0.5) * self.cell_size,
            (y as f32 + 0.5 - self.height as f32 * 0.5) * self.cell_size,
        ]
    }

    /// Continuous cell coordinates of a local XZ point: cell `(x, y)` spans `[x, x+1) × [y, y+1)`.
    pub fn local_to_grid(&self, local_x: f32, local_z: f32) -> [f32; 2] {
        [
            local_x / self.cell_size + self.width as f32 * 0.5,
            local_z / self.cell_size + self.height as f32 * 0.5,
        ]
    }

    /// Whether a local XZ point lies on the grid (edges included).
    pub fn contains(&self, local_x: f32, local_z: f32) -> bool {
        let [gx, gy] = self.local_to_grid(local_x, local_z);
        gx >= 0.0 && gy >= 0.0 && gx <= self.width as f32 && gy <= self.height as f32
    }

    /// The cell containing a local XZ point, or `None` outside the grid.
    pub fn cell_at(&self, local_x: f32, local_z: f32) -> Option<(u32, u32)> {
        if !self.contains(local_x, local_z) {
            return None;
        }
        let [gx, gy] = self.local_to_grid(local_x, local_z);
        Some(((gx as u32).min(self.width - 1), (gy as u32).min(self.height - 1)))
    }

    /// The four cells a bilinear sample at a local XZ point reads, and the weights along x and
    /// y: `(cells [x0y0, x1y0, x0y1, x1y1], tx, ty)`. `None` outside the grid.
    pub fn bilinear_cells(&self, local_x: f32, local_z: f32) -> Option<([usize; 4], f32, f32)> {
        if !self.contains(local_x, local_z) {
            return None;
        }
        let [gx, gy] = self.local_to_grid(local_x, local_z);
        let fx = (gx - 0.5).clamp(0.0, (self.width - 1) as f32);
        let fy = (gy - 0.5).clamp(0.0, (self.height - 1) as f32);
        let (x0, y0) = (fx.floor() as u32, fy.floor() as u32);
        let (x1, y1) = ((x0 + 1).min(self.width - 1), (y0 + 1).min(self.height - 1));
        let cells = [self.index(x0, y0), self.index(x1, y0), self.index(x0, y1), self.index(x1, y1)];
        Some((cells, fx - x0 as f32, fy - y0 as f32))
    }

    /// Bilinear sample of a per-cell field at a local XZ point (cell values sit at cell
    /// centres; the border half-cell is clamped). `None` outside the grid.
    pub fn sample_bilinear<T: Copy>(
        &self,
        local_x: f32,
        local_z: f32,
        value: impl Fn(usize) -> T,
        lerp: impl Fn(T, T, f32) -> T,
    ) -> Option<T> {
        let ([c00, c10, c01, c11], tx, ty) = self.bilinear_cells(local_x, local_z)?;
        let top = lerp(value(c00), value(c10), tx);
        let bottom = lerp(value(c01), value(c11), tx);
        Some(lerp(top, bottom, ty))
    }

    /// The smallest rectangle holding every cell of [`Grid::footprint`]; `None` when the
    /// footprint misses the grid.
    pub fn footprint_rect(&self, local_x: f32, local_z: f32, radius: f32) -> Option<CellRect> {
        CellRect::bounding(self.footprint(local_x, local_z, radius).into_iter().map(|(cell, _)| (cell % self.width, cell / self.width)))
    }

    /// Cells whose centres lie within `radius` metres of a local XZ point, with a smooth weight
    /// `(1 − (r/R)²)²` that peaks at 1. When no centre is that close but the point is on the grid
    /// (a radius under half a cell), the cell containing the point gets weight 1. A point off the
    /// grid still reaches the cells its radius overlaps.
    pub fn footprint(&self, local_x: f32, local_z: f32, radius: f32) -> Vec<(u32, f32)> {
        let mut cells = Vec::new();
        if radius > 0.0 && radius.is_finite() {
            let [gx, gy] = self.local_to_grid(local_x, local_z);
            let reach = radius / self.cell_size;
            let x_lo = (gx - reach - 1.0).floor().max(0.0) as u32;
            let y_lo = (gy - reach - 1.0).floor().max(0.0) as u32;
            let x_hi = (gx + reach + 1.0).ceil().min(self.width as f32 - 1.0);
            let y_hi = (gy + reach + 1.0).ceil().min(self.height as f32 - 1.0);
            if x_hi >= 0.0 && y_hi >= 0.0 {
                for y in y_lo..=y_hi as u32 {
                    for x in x_lo..=x_hi as u32 {
                        let [px, pz] = self.cell_centre(x, y);
                        let r2 = ((px - local_x).powi(2) + (pz - local_z).powi(2)) / (radius * radius);
                        if r2 < 1.0 {
                            cells.push((self.index(x, y) as u32, (1.0 - r2) * (1.0 - r2)));
                        }
                    }
                }
            }
        }
        if cells.is_empty() {
            if let Some((cx, cy)) = self.cell_at(local_x, local_z) {
                cells.push((self.index(cx, cy) as u32, 1.0));
            }
        }
        cells
    }
}
