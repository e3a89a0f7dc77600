//! Where the cells lie in the world: the square grid of [`Grid`], or the triangular lattice of
//! [`NeighbourMode::Triangular`], whose cells are stored in the same `width × height` array.
//!
//! On the triangular lattice row `y` lies `(y + ½)·s − height·s/2` along local Z, with row spacing
//! `s = cell_size·√3/2`, and cell `(x, y)` at `(x + ½ + ½·(y mod 2))·cell_size − (width + ½)·cell_size/2`
//! along local X: odd rows are shifted half a cell along +X, so every cell is `cell_size` from its
//! six neighbours and owns the hexagon of points nearer to it than to any other centre
//! (`cell_size²·√3/2`). The lattice is centred on the node's origin like the square grid; it
//! spans `(width + ½)·cell_size` along X and `height·s` along Z.
//!
//! Queries read the lattice linearly over the triangle of three cell centres around a point (the
//! triangular lattice's own bilinear); edits weigh cells by the distance of their centres. On the
//! square grid every method is [`Grid`]'s own, unchanged.

use crate::grid::Grid;
use crate::params::{NeighbourMode, TRIANGULAR_AREA_RATIO, TRIANGULAR_ROW_SPACING};
use crate::quanta::DEPTH_QUANTUM;

/// The cells a cell in row `y` exchanges water with, as `(dx, dy)` steps in the array: the four
/// orthogonal ones, the four diagonals with eight neighbours, and on the triangular lattice the
/// two diagonals of the neighbours in the rows beside it, which lean towards −X on even rows and
/// +X on odd ones (`pipes::lattice_has_pipe`). Orthogonal steps come first. For walks over the
/// cells (basin fills, the way downhill) that must take the steps water takes.
pub fn neighbour_steps(neighbours: NeighbourMode, y: u32) -> &'static [(i64, i64)] {
    const SQUARE: [(i64, i64); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)];
    const EVEN_ROW: [(i64, i64); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (-1, 1), (-1, -1)];
    const ODD_ROW: [(i64, i64); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1)];
    match neighbours {
        NeighbourMode::Four => &SQUARE[..4],
        NeighbourMode::Eight => &SQUARE,
        NeighbourMode::Triangular if y % 2 == 0 => &EVEN_ROW,
        NeighbourMode::Triangular => &ODD_ROW,
    }
}

/// A grid's cells placed in the world for a neighbour mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lattice {
    /// The cells, their count and spacing.
    pub grid: Grid,
    /// Whether the cells lie on the triangular lattice (else on the square grid).
    pub triangular: bool,
}

impl Lattice {
    /// The lattice of `grid` for `neighbours`.
    pub fn new(grid: Grid, neighbours: NeighbourMode) -> Self {
        Lattice { grid, triangular: neighbours == NeighbourMode::Triangular }
    }

    /// The square grid's placement of `grid`.
    pub fn square(grid: Grid) -> Self {
        Lattice { grid, triangular: false }
    }

    /// Area of one cell, m²: `cell_size²`, or `cell_size²·√3/2` on the triangular lattice.
    pub fn cell_area(&self) -> f64 {
        let square = self.grid.cell_size as f64 * self.grid.cell_size as f64;
        if self.triangular {
            square * TRIANGULAR_AREA_RATIO
        } else {
            square
        }
    }

    /// Volume of one depth quantum in one cell, m³.
    pub fn quantum_volume(&self) -> f64 {
        DEPTH_QUANTUM as f64 * self.cell_area()
    }

    /// Distance between rows along local Z, m.
    pub fn row_spacing(&self) -> f32 {
        if self.triangular {
            self.grid.cell_size * TRIANGULAR_ROW_SPACING
        } else {
            self.grid.cell_size
        }
    }

    /// Size of the whole lattice in local X and Z, m.
    pub fn extent(&self) -> [f32; 2] {
        if !self.triangular {
            return self.grid.extent();
        }
        [(self.grid.width as f32 + 0.5) * self.grid.cell_size, self.grid.height as f32 * self.row_spacing()]
    }

    /// Local XZ position of the centre of cell `(x, y)`, m.
    pub fn cell_centre(&self, x: u32, y: u32) -> [f32; 2] {
        if !self.triangular {
            return self.grid.cell_centre(x, y);
        }
        let [ex, ez] = self.extent();
        let shift = 0.5 * (y % 2) as f32;
        [(x as f32 + 0.5 + shift) * self.grid.cell_size - ex * 0.5, (y as f32 + 0.5) * self.row_spacing() - ez * 0.5]
    }

    /// Whether a local XZ point lies on the lattice's rectangle (edges included).
    pub fn contains(&self, local_x: f32, local_z: f32) -> bool {
        if !self.triangular {
            return self.grid.contains(local_x, local_z);
        }
        let [ex, ez] = self.extent();
        local_x.abs() <= ex * 0.5 && local_z.abs() <= ez * 0.5
    }

    /// Continuous row coordinate of a local Z (row `y`'s centre at `y`), and the continuous
    /// column of a local X in row `row` (cell `x`'s centre at `x`); triangular lattice only.
    fn row_and_column(&self, local_x: f32, local_z: f32, row: u32) -> (f32, f32) {
        let [ex, ez] = self.extent();
        let r = (local_z + ez * 0.5) / self.row_spacing() - 0.5;
        let column = (local_x + ex * 0.5) / self.grid.cell_size - 0.5 - 0.5 * (row % 2) as f32;
        (r, column)
    }

    /// The cell whose centre is nearest a local XZ point (the hexagon holding it), or `None` off
    /// the lattice.
    pub fn cell_at(&self, local_x: f32, local_z: f32) -> Option<(u32, u32)> {
        if !self.triangular {
            return self.grid.cell_at(local_x, local_z);
        }
        if !self.contains(local_x, local_z) {
            return None;
        }
        let (w, h) = (self.grid.width, self.grid.height);
        let (r, _) = self.row_and_column(local_x, local_z, 0);
        let first = (r.floor().max(0.0) as u32).min(h - 1);
        let mut best: Option<((u32, u32), f32)> = None;
        for y in first..=(first + 1).min(h - 1) {
            let (_, column) = self.row_and_column(local_x, local_z, y);
            let x = (column.round().max(0.0) as u32).min(w - 1);
            let [cx, cz] = self.cell_centre(x, y);
            let d2 = (cx - local_x).powi(2) + (cz - local_z).powi(2);
            if best.is_none_or(|(_, b)| d2 < b) {
                best = Some(((x, y), d2));
            }
        }
        best.map(|(cell, _)| cell)
    }

    /// The cells a linear sample at a local XZ point reads and their weights (summing to 1):
    /// the four of [`Grid::bilinear_cells`] on the square grid; on the triangular lattice the three
    /// centres of the triangle around the point (the fourth entry weighs 0), clamped to the
    /// lattice at its edges. `None` off the lattice.
    pub fn sample_cells(&self, local_x: f32, local_z: f32) -> Option<[(usize, f32); 4]> {
        if !self.triangular {
            let ([c00, c10, c01, c11], tx, ty) = self.grid.bilinear_cells(local_x, local_z)?;
            return Some([(c00, (1.0 - tx) * (1.0 - ty)), (c10, tx * (1.0 - ty)), (c01, (1.0 - tx) * ty), (c11, tx * ty)]);
        }
        if !self.contains(local_x, local_z) {
            return None;
        }
        let (w, h) = (self.grid.width as i64, self.grid.height as i64);
        let (r, _) = self.row_and_column(local_x, local_z, 0);
        let y0 = (r.floor() as i64).clamp(0, h - 2);
        let t = (r - y0 as f32).clamp(0.0, 1.0);
        // Skewed coordinates: along row y0, and from a cell of row y0 to its neighbour half a
        // cell further along X in row y0 + 1. In them each unit square is a rhombus of two of
        // the lattice's equilateral triangles, split along its short diagonal, from (1, 0) to
        // (0, 1) (the long one would interpolate across two cells a √3 apart).
        let (_, column) = self.row_and_column(local_x, local_z, y0 as u32);
        let p = column - 0.5 * t;
        let i = p.floor() as i64;
        let f = p - i as f32;
        // Row y0 + 1's cell half a cell further along X than row y0's cell i.
        let j = i + (y0 % 2);
        let index = |x: i64, y: i64| (y * w + x.clamp(0, w - 1)) as usize;
        let (a, b, c, d) = (index(i, y0), index(i + 1, y0), index(j, y0 + 1), index(j + 1, y0 + 1));
        Some(if f + t <= 1.0 { [(a, 1.0 - f - t), (b, f), (c, t), (d, 0.0)] } else { [(b, 1.0 - t), (d, f + t - 1.0), (c, 1.0 - f), (a, 0.0)] })
    }

    /// Linear sample of a per-cell field at a local XZ point, as [`Grid::sample_bilinear`] on
    /// the square grid and over [`Lattice::sample_cells`]' triangle on the triangular lattice,
    /// combining values only through `lerp`. `None` off the lattice.
    pub fn sample<T: Copy>(&self, local_x: f32, local_z: f32, value: impl Fn(usize) -> T, lerp: impl Fn(T, T, f32) -> T) -> Option<T> {
        if !self.triangular {
            return self.grid.sample_bilinear(local_x, local_z, value, lerp);
        }
        let [(a, wa), (b, wb), (c, wc), _] = self.sample_cells(local_x, local_z)?;
        let along = if wa + wb > 0.0 { wb / (wa + wb) } else { 0.0 };
        Some(lerp(lerp(value(a), value(b), along), value(c), wc))
    }

    /// Cells whose centres lie within `radius` metres of a local XZ point, weighted as
    /// [`Grid::footprint`] (`(1 − (r/R)²)²`; the cell holding the point alone when no centre is
    /// that close).
    pub fn footprint(&self, local_x: f32, local_z: f32, radius: f32) -> Vec<(u32, f32)> {
        if !self.triangular {
            return self.grid.footprint(local_x, local_z, radius);
        }
        let mut cells = Vec::new();
        if radius > 0.0 && radius.is_finite() {
            let (w, h) = (self.grid.width, self.grid.height);
            let (r, _) = self.row_and_column(local_x, local_z, 0);
            let rows = radius / self.row_spacing() + 1.0;
            let (_, column) = self.row_and_column(local_x, local_z, 0);
            let columns = radius / self.grid.cell_size + 2.0;
            let y_lo = (r - rows).floor().max(0.0) as u32;
            let y_hi = (r + rows).ceil().min(h as f32 - 1.0);
            let x_lo = (column - columns).floor().max(0.0) as u32;
            let x_hi = (column + columns).ceil().min(w as f32 - 1.0);
            if y_hi >= 0.0 && x_hi >= 0.0 {
                for y in y_lo..=y_hi as u32 {
                    for x in x_lo..=x_hi as u32 {
                        let [px, pz] = self.cell_centre(x, y);
                        let r2 = ((px - local_x).powi(2) + (pz - local_z).powi(2)) / (radius * radius);
                        if r2 < 1.0 {
                            cells.push((self.grid.index(x, y) as u32, (1.0 - r2) * (1.0 - r2)));
                        }
                    }
                }
            }
        }
        if cells.is_empty() {
            if let Some((cx, cy)) = self.cell_at(local_x, local_z) {
                cells.push((self.grid.index(cx, cy) as u32, 1.0));
            }
        }
        cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lattice() -> Lattice {
        Lattice::new(Grid::new(9, 8, 2.0).unwrap(), NeighbourMode::Triangular)
    }

    /// Every cell's six neighbours (E, W and the two of each row beside it, by the row's parity,
    /// pipes.rs `lattice_has_pipe`) lie exactly one cell size from its centre, and the hexagon
    /// lookup returns each cell for its own centre and for points a third of a cell from it.
    #[test]
    fn neighbours_are_one_cell_apart_and_each_centre_maps_to_its_cell() {
        let l = lattice();
        let mut worst = 0.0f32;
        for y in 1..7u32 {
            for x in 1..8u32 {
                let [cx, cz] = l.cell_centre(x, y);
                let diagonal = if y % 2 == 0 { -1 } else { 1 };
                for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1), (diagonal, 1), (diagonal, -1)] {
                    let [nx, nz] = l.cell_centre((x as i32 + dx) as u32, (y as i32 + dy) as u32);
                    worst = worst.max(((nx - cx).hypot(nz - cz) - 2.0).abs());
                }
                for angle in 0..6 {
                    let a = angle as f32 * 1.047 + 0.3;
                    assert_eq!(l.cell_at(cx + 0.66 * a.cos(), cz + 0.66 * a.sin()), Some((x, y)), "near the centre of {x},{y}");
                }
            }
        }
        println!("largest error of a neighbour distance: {worst:e} m (cell size 2 m)");
        assert!(worst < 1.0e-5);
    }

    /// The triangle sample reproduces a linear field exactly (to rounding) anywhere inside the
    /// lattice's outermost centres: the property that makes it the lattice's bilinear.
    #[test]
    fn the_triangle_sample_is_exact_for_linear_fields() {
        let l = lattice();
        let field = |p: [f32; 2]| 3.0 + 0.5 * p[0] - 0.25 * p[1];
        let value = |i: usize| field(l.cell_centre(i as u32 % 9, i as u32 / 9));
        let mut worst = 0.0f32;
        for k in 0..400 {
            let (x, z) = (-6.0 + 12.0 * ((k * 37) % 400) as f32 / 400.0, -4.5 + 9.0 * (k as f32 / 400.0));
            let sampled = l.sample(x, z, value, |a, b, t| a + (b - a) * t).unwrap();
            worst = worst.max((sampled - field([x, z])).abs());
        }
        println!("largest error sampling a linear field at 400 points: {worst:e}");
        assert!(worst < 1.0e-4);
    }
}
