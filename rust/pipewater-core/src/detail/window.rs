//! The window the layer covers: where it lies over the grid, which storage cell holds a world
//! detail cell, and bilinear reads of what it holds.

use super::kernel::{contains, lerp, storage_index, world_of_storage};
use super::DetailLayout;
use crate::grid::Grid;

/// Where the window lies: its first world detail cell and its layout, over `grid`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetailWindow {
    /// The grid under the layer.
    pub grid: Grid,
    /// Window side and subdivision.
    pub layout: DetailLayout,
    /// World detail cell of the window's first (−X, −Z) cell.
    pub origin: [i32; 2],
}

impl DetailWindow {
    /// The window of `layout` over `grid` centred as near `focus` (local X, Z; m) as the grid
    /// allows: inside the grid where the grid is larger than the window, centred on the grid
    /// where it is smaller.
    pub fn around(grid: Grid, layout: DetailLayout, focus: [f32; 2]) -> Self {
        let s = layout.subdivision as f32;
        let n = layout.window as i64;
        let extent = [grid.width as i64 * layout.subdivision as i64, grid.height as i64 * layout.subdivision as i64];
        let [gx, gy] = grid.local_to_grid(focus[0], focus[1]);
        let mut origin = [0i32; 2];
        for (axis, g) in [gx, gy].into_iter().enumerate() {
            let wanted = if g.is_finite() { (g as f64 * s as f64 - n as f64 / 2.0).round() as i64 } else { 0 };
            let span = extent[axis];
            origin[axis] = if span >= n { wanted.clamp(0, span - n) } else { (span - n).div_euclid(2) } as i32;
        }
        DetailWindow { grid, layout, origin }
    }

    /// Side of a detail cell, m.
    pub fn cell_size(&self) -> f32 {
        self.grid.cell_size / self.layout.subdivision as f32
    }

    /// Whether world detail cell `g` lies in the window.
    pub fn contains(&self, g: [i32; 2]) -> bool {
        contains(self.origin, self.layout.window, g)
    }

    /// Storage index of world detail cell `g` (meaningful when [`DetailWindow::contains`] it).
    pub fn storage_index(&self, g: [i32; 2]) -> usize {
        storage_index(self.layout.window, g)
    }

    /// The world detail cell at storage index `index`.
    pub fn world_cell(&self, index: usize) -> [i32; 2] {
        let n = self.layout.window as usize;
        world_of_storage(self.origin, self.layout.window, [(index % n) as i32, (index / n) as i32])
    }

    /// Continuous world detail coordinates of local point `(x, z)` (m): cell `g` spans
    /// `[g, g + 1)`.
    pub fn local_to_detail(&self, x: f32, z: f32) -> [f32; 2] {
        let s = self.layout.subdivision as f32;
        let [gx, gy] = self.grid.local_to_grid(x, z);
        [gx * s, gy * s]
    }

    /// Local X, Z (m) of the centre of world detail cell `g`.
    pub fn cell_centre(&self, g: [i32; 2]) -> [f32; 2] {
        let d = self.cell_size();
        let [ex, ez] = self.grid.extent();
        [(g[0] as f32 + 0.5) * d - 0.5 * ex, (g[1] as f32 + 0.5) * d - 0.5 * ez]
    }

    /// The window's local rectangle: (−X −Z corner, +X +Z corner), m.
    pub fn local_rect(&self) -> ([f32; 2], [f32; 2]) {
        let d = self.cell_size();
        let [ex, ez] = self.grid.extent();
        let lo = [self.origin[0] as f32 * d - 0.5 * ex, self.origin[1] as f32 * d - 0.5 * ez];
        let side = self.layout.window as f32 * d;
        (lo, [lo[0] + side, lo[1] + side])
    }

    /// The four cells and weights of a bilinear sample at local `(x, z)`: cell centres sit at
    /// `g + 0.5`.
    pub fn bilinear(&self, x: f32, z: f32) -> ([[i32; 2]; 4], [f32; 2]) {
        let [px, py] = self.local_to_detail(x, z);
        let (fx, fy) = (px - 0.5, py - 0.5);
        let (x0, y0) = (fx.floor(), fy.floor());
        let g = [x0 as i32, y0 as i32];
        ([g, [g[0] + 1, g[1]], [g[0], g[1] + 1], [g[0] + 1, g[1] + 1]], [fx - x0, fy - y0])
    }
}

/// Bilinear height (m) at local `(x, z)` from the heights `heights` gives for the four cells of
/// [`DetailWindow::bilinear`] (in its order).
pub fn bilinear_height(window: &DetailWindow, x: f32, z: f32, heights: impl FnOnce(&[[i32; 2]; 4]) -> [f32; 4]) -> f32 {
    let (cells, [tx, ty]) = window.bilinear(x, z);
    let h = heights(&cells);
    lerp(lerp(h[0], h[1], tx), lerp(h[2], h[3], tx), ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_stays_on_the_grid_and_centres_on_small_grids() {
        let grid = Grid::new(100, 40, 1.0).unwrap();
        let layout = DetailLayout { window: 256, subdivision: 4 };
        let far = DetailWindow::around(grid, layout, [1.0e4, -1.0e4]);
        let centre = DetailWindow::around(grid, layout, [0.0, 0.0]);
        println!("far corner: {:?}; centre: {:?}", far.origin, centre.origin);
        // 400 detail cells along x: the window stays inside; 160 along y: centred, 48 over each side.
        assert_eq!(far.origin, [400 - 256, -48]);
        assert_eq!(centre.origin, [72, -48]);
    }
}
