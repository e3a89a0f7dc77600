//! The water surface's mesh, as plain vertex and index lists (no Godot types, so that its
//! properties are unit tests): a grid with a vertex on every cell centre for small grids, and a
//! camera-centred clipmap for large ones, whose vertex count does not grow with the grid.
//!
//! **Grid.** `(W + 2) × (H + 2)` vertices: one on each cell centre, where the shader samples the
//! textures exactly, plus a row and a column on each edge of the grid, so the water reaches the
//! edge with no seam. Positions are the node's local XZ (m), Y = 0.
//!
//! **Clipmap.** `levels` nested squares of `quads × quads` quads around one centre. Level 0 is a
//! full square with vertices `spacing` apart; level `k` has vertices `spacing · 2^k` apart and a
//! hole where level `k − 1` lies. A vertex's position is its offset (m) from the centre in X and
//! Z, and its level in Y. The shader (`water_surface.gdshader`) places the centre at the camera
//! (clamped to the grid) rounded to [`clipmap_snap`], a multiple of every level's spacing, so the
//! levels stay nested and every vertex keeps sampling the same cell centres as the camera moves:
//! the mesh does not swim. Towards the outer edge of a level its odd vertices slide onto their
//! even neighbours ([`morph_offset`], mirrored in the shader), so at the edge a level's vertices
//! coincide with the next level's: no cracks, no T-junctions. The shader clamps every vertex to
//! the grid, so the outermost level ends exactly on the grid's edge.
//!
//! **Triangular lattice** ([`lattice_mesh`]). The grid layout's vertices on the lattice's cell
//! centres and edges, triangulated along the lattice's own triangles. A clipmap on the lattice is
//! the same mesh as on the square grid; the shader spaces its rows `√3/2` as far apart along Z.
//!
//! Triangles wind clockwise seen from above (+Y), as Godot's `PlaneMesh`: Godot's front faces.

use pipewater_core::{Grid, Lattice, NeighbourMode};

/// Quads per side of a clipmap level's square (a multiple of 4: the hole is half of it).
pub const CLIPMAP_QUADS: u32 = 256;
/// Where across a level the morph towards the next level starts and where it is complete, as a
/// fraction of the level's half-width (Chebyshev distance from the centre).
pub const MORPH_START: f32 = 0.75;
pub const MORPH_END: f32 = 0.95;

/// Which mesh a grid gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Layout {
    /// A vertex per cell centre plus the edges.
    Grid { width: u32, height: u32 },
    /// A camera-centred clipmap.
    Clipmap { quads: u32, levels: u32 },
}

impl Layout {
    /// Vertices of the mesh this layout builds.
    pub fn vertex_count(&self) -> usize {
        match *self {
            Layout::Grid { width, height } => (width as usize + 2) * (height as usize + 2),
            Layout::Clipmap { quads, levels } => {
                let side = quads as usize + 1;
                let hole_inside = (quads as usize / 2).saturating_sub(1);
                side * side + (levels as usize - 1) * (side * side - hole_inside * hole_inside)
            }
        }
    }
}

/// Vertex positions and triangle indices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeshData {
    pub positions: Vec<[f32; 3]>,
    pub indices: Vec<u32>,
}

/// The layout for a `width × height` grid: the full grid while it has no more vertices than the
/// clipmap that covers it, else the clipmap.
pub fn choose_layout(width: u32, height: u32) -> Layout {
    let grid = Layout::Grid { width, height };
    let clipmap = Layout::Clipmap { quads: CLIPMAP_QUADS, levels: clipmap_levels(width, height, CLIPMAP_QUADS) };
    if grid.vertex_count() <= clipmap.vertex_count() {
        grid
    } else {
        clipmap
    }
}

/// Levels a clipmap of `quads` quads per level needs (finest spacing one cell) so that its
/// outermost level covers the whole grid from any centre the shader can give it: the camera's
/// point clamped to the grid, then moved by up to half a snap step.
pub fn clipmap_levels(width: u32, height: u32, quads: u32) -> u32 {
    let cells = width.max(height).max(1) as u64;
    let mut levels = 1u32;
    // Half-width of the outermost level minus half a snap step, in cells: (quads/2 − 1)·2^(L−1).
    while (quads as u64 / 2 - 1) << (levels - 1) < cells {
        levels += 1;
    }
    levels
}

/// The step (m) the clipmap's centre snaps to: two of the coarsest level's spacings, so that
/// every level's vertices (and the odd/even pattern the morph relies on) stay on the same cells.
pub fn clipmap_snap(spacing: f32, levels: u32) -> f32 {
    2.0 * spacing * (1u64 << (levels - 1)) as f32
}

/// A grid mesh for `width × height` cells of `cell_size` m centred on the origin: a vertex on
/// every cell centre and on the grid's edges.
pub fn grid_mesh(width: u32, height: u32, cell_size: f32) -> MeshData {
    let xs = edge_and_centres(width, cell_size);
    let zs = edge_and_centres(height, cell_size);
    let mut mesh = MeshData::default();
    for &z in &zs {
        for &x in &xs {
            mesh.positions.push([x, 0.0, z]);
        }
    }
    let columns = xs.len() as u32;
    for row in 1..zs.len() as u32 {
        for column in 1..columns {
            push_quad(&mut mesh.indices, (row - 1) * columns + column - 1, (row - 1) * columns + column, row * columns + column - 1, row * columns + column);
        }
    }
    mesh
}

/// A mesh for the triangular lattice of `width × height` cells of `cell_size` m
/// ([`Lattice`], `NeighbourMode::Triangular`): a vertex on every cell centre (odd rows half a cell
/// further along +X, rows `cell_size·√3/2` apart along Z) and on the lattice's edges, each row's
/// edge vertices level with it and the north and south edges' vertices above and below the first
/// and last rows' centres. Between two rows of centres every triangle is one of the lattice's
/// equilateral triangles (each quad split along its short diagonal, which leans the other way
/// from one pair of rows to the next), so the surface the shader draws is the lattice's own
/// linear interpolation.
pub fn lattice_mesh(width: u32, height: u32, cell_size: f32) -> MeshData {
    let lattice = Lattice::new(Grid { width, height, cell_size }, NeighbourMode::Triangular);
    let [ex, ez] = lattice.extent();
    let mut mesh = MeshData::default();
    // Vertex rows: the north edge, one per row of cells, the south edge; each row's X positions
    // are those of the row of cells it lies on or next to.
    let rows = height + 2;
    let columns = width + 2;
    let cell_row = |row: u32| row.saturating_sub(1).min(height - 1);
    for row in 0..rows {
        let z = match row {
            0 => -0.5 * ez,
            r if r == rows - 1 => 0.5 * ez,
            r => lattice.cell_centre(0, r - 1)[1],
        };
        mesh.positions.push([-0.5 * ex, 0.0, z]);
        for x in 0..width {
            mesh.positions.push([lattice.cell_centre(x, cell_row(row))[0], 0.0, z]);
        }
        mesh.positions.push([0.5 * ex, 0.0, z]);
    }
    for row in 1..rows {
        // Whether the row below lies half a cell further along +X than the row above (an even
        // row of cells above an odd one): then the short diagonal runs north-east to south-west.
        let shifted_east = cell_row(row) % 2 == 1 && cell_row(row - 1) % 2 == 0;
        for column in 1..columns {
            let (nw, ne) = ((row - 1) * columns + column - 1, (row - 1) * columns + column);
            let (sw, se) = (row * columns + column - 1, row * columns + column);
            if shifted_east || cell_row(row) == cell_row(row - 1) {
                push_quad(&mut mesh.indices, nw, ne, sw, se);
            } else {
                mesh.indices.extend_from_slice(&[nw, ne, se, nw, se, sw]);
            }
        }
    }
    mesh
}

/// The grid's west edge, its cell centres and its east edge along one axis (m).
fn edge_and_centres(cells: u32, cell_size: f32) -> Vec<f32> {
    let half = 0.5 * cells as f32 * cell_size;
    let mut out = vec![-half];
    out.extend((0..cells).map(|i| (i as f32 + 0.5) * cell_size - half));
    out.push(half);
    out
}

/// A clipmap of `levels` levels of `quads × quads` quads, finest vertices `spacing` m apart.
/// Positions are `[offset x (m), level, offset z (m)]`.
pub fn clipmap_mesh(quads: u32, levels: u32, spacing: f32) -> MeshData {
    assert!(quads >= 4 && quads % 4 == 0, "a clipmap level has a multiple of 4 quads per side");
    let mut mesh = MeshData::default();
    let side = quads + 1;
    let half = quads as i64 / 2;
    let hole = quads as i64 / 4;
    for level in 0..levels {
        let step = spacing * (1u64 << level) as f32;
        // Vertex index of each lattice point of this level's square, or none inside the hole.
        let mut index = vec![u32::MAX; (side * side) as usize];
        let inside_hole = |i: i64, j: i64| level > 0 && i.abs() < hole && j.abs() < hole;
        for j in -half..=half {
            for i in -half..=half {
                if inside_hole(i, j) {
                    continue;
                }
                index[((j + half) * side as i64 + i + half) as usize] = mesh.positions.len() as u32;
                mesh.positions.push([i as f32 * step, level as f32, j as f32 * step]);
            }
        }
        for j in -half..half {
            for i in -half..half {
                // A quad lies in the hole when all of it is within the hole's square.
                if level > 0 && i >= -hole && i < hole && j >= -hole && j < hole {
                    continue;
                }
                let at = |i: i64, j: i64| index[((j + half) * side as i64 + i + half) as usize];
                push_quad(&mut mesh.indices, at(i, j), at(i + 1, j), at(i, j + 1), at(i + 1, j + 1));
            }
        }
    }
    mesh
}

/// Two triangles of a quad whose corners are north-west, north-east, south-west, south-east
/// (north = −Z), wound as Godot's `PlaneMesh`.
fn push_quad(indices: &mut Vec<u32>, nw: u32, ne: u32, sw: u32, se: u32) {
    indices.extend_from_slice(&[nw, ne, sw, ne, se, sw]);
}

/// Where a clipmap vertex of `level` at `offset` (m from the centre) is drawn: within
/// [`MORPH_START`] of its level's half-width it stays; from there to [`MORPH_END`] its odd
/// coordinates slide onto the even neighbour below them, complete at the level's edge. The
/// coarsest level does not morph. The shader's `morph_offset` computes the same.
pub fn morph_offset(offset: [f32; 2], level: u32, spacing: f32, quads: u32, levels: u32) -> [f32; 2] {
    if level + 1 >= levels {
        return offset;
    }
    let step = spacing * (1u64 << level) as f32;
    let g = [offset[0] / step, offset[1] / step];
    let reach = g[0].abs().max(g[1].abs()) / (0.5 * quads as f32);
    let morph = ((reach - MORPH_START) / (MORPH_END - MORPH_START)).clamp(0.0, 1.0);
    let slide = |v: f32| (v - (v * 0.5 - (v * 0.5).floor()) * 2.0 * morph) * step;
    [slide(g[0]), slide(g[1])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashSet};

    /// Lattice point of a position in units of `unit` (exact for the positions built here).
    fn key(x: f32, z: f32, unit: f32) -> (i64, i64) {
        ((x / unit).round() as i64, (z / unit).round() as i64)
    }

    fn assert_clockwise_from_above(mesh: &MeshData) {
        let mut degenerate = 0;
        for t in mesh.indices.chunks(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.positions[i as usize]);
            let cross_y = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]);
            if cross_y == 0.0 {
                degenerate += 1;
            }
            assert!(cross_y < 0.0, "triangle {a:?} {b:?} {c:?} winds the other way (normal·Y = {cross_y})");
        }
        assert_eq!(degenerate, 0);
    }

    #[test]
    fn a_grid_mesh_has_a_vertex_on_every_cell_centre_and_reaches_the_edges() {
        let (w, h, dx) = (5u32, 3u32, 2.0f32);
        let mesh = grid_mesh(w, h, dx);
        println!("{w}×{h} cells of {dx} m: {} vertices, {} triangles", mesh.positions.len(), mesh.indices.len() / 3);
        assert_eq!(mesh.positions.len(), Layout::Grid { width: w, height: h }.vertex_count());
        assert_eq!(mesh.indices.len(), 6 * (w as usize + 1) * (h as usize + 1));
        assert!(mesh.indices.iter().all(|&i| (i as usize) < mesh.positions.len()));
        let keys: HashSet<(i64, i64)> = mesh.positions.iter().map(|p| key(p[0], p[2], 0.5 * dx)).collect();
        for y in 0..h {
            for x in 0..w {
                let centre = ((x as f32 + 0.5) * dx - 0.5 * w as f32 * dx, (y as f32 + 0.5) * dx - 0.5 * h as f32 * dx);
                assert!(keys.contains(&key(centre.0, centre.1, 0.5 * dx)), "cell ({x}, {y}) has no vertex at its centre");
            }
        }
        let xs: Vec<f32> = mesh.positions.iter().map(|p| p[0]).collect();
        let zs: Vec<f32> = mesh.positions.iter().map(|p| p[2]).collect();
        let bounds = |v: &[f32]| (v.iter().cloned().fold(f32::MAX, f32::min), v.iter().cloned().fold(f32::MIN, f32::max));
        assert_eq!(bounds(&xs), (-5.0, 5.0));
        assert_eq!(bounds(&zs), (-3.0, 3.0));
        assert_clockwise_from_above(&mesh);
        // The triangles cover the grid's area exactly once.
        let area: f32 = mesh.indices.chunks(3).map(|t| {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.positions[i as usize]);
            0.5 * ((b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2])).abs()
        }).sum();
        assert_eq!(area, 10.0 * 6.0);
    }

    /// On the triangular lattice the mesh has a vertex on every cell centre where the core's
    /// `Lattice` puts it (odd rows half a cell along +X, rows `dx·√3/2` apart), its triangles
    /// between rows of centres are the lattice's equilateral ones (every side `dx`: the short
    /// diagonal of each quad), and they cover the lattice's rectangle once.
    #[test]
    fn a_lattice_mesh_puts_its_vertices_on_the_lattice_and_its_triangles_along_it() {
        let (w, h, dx) = (6u32, 5u32, 2.0f32);
        let lattice = Lattice::new(Grid { width: w, height: h, cell_size: dx }, NeighbourMode::Triangular);
        let mesh = lattice_mesh(w, h, dx);
        println!("{w}×{h} lattice cells of {dx} m: {} vertices, {} triangles", mesh.positions.len(), mesh.indices.len() / 3);
        assert_eq!(mesh.positions.len(), Layout::Grid { width: w, height: h }.vertex_count());
        assert!(mesh.indices.iter().all(|&i| (i as usize) < mesh.positions.len()));
        let mut farthest = 0.0f32;
        let mut centres = HashSet::new();
        for y in 0..h {
            for x in 0..w {
                let [cx, cz] = lattice.cell_centre(x, y);
                let (i, d) = mesh.positions.iter().enumerate().map(|(i, p)| (i, (p[0] - cx).hypot(p[2] - cz))).fold((0, f32::MAX), |a, b| if b.1 < a.1 { b } else { a });
                farthest = farthest.max(d);
                centres.insert(i as u32);
            }
        }
        let [cx, cz] = lattice.cell_centre(1, 1);
        println!("cell (1, 1) at ({cx}, {cz}) m (the square grid's centre: (-3, -2)); farthest vertex from its cell centre {farthest:e} m");
        assert!(farthest < 1.0e-5);
        // Odd row 1: (1 + ½ + ½)·dx − (W + ½)·dx/2 along X; one row spacing north of the middle row.
        assert!((cx - (-2.5)).abs() < 1e-5 && (cz - (-dx * 3f32.sqrt() / 2.0)).abs() < 1e-5);
        let mut sides = (f32::MAX, 0.0f32);
        for t in mesh.indices.chunks(3).filter(|t| t.iter().all(|i| centres.contains(i))) {
            for k in 0..3 {
                let (a, b) = (mesh.positions[t[k] as usize], mesh.positions[t[(k + 1) % 3] as usize]);
                let side = (a[0] - b[0]).hypot(a[2] - b[2]);
                sides = (sides.0.min(side), sides.1.max(side));
            }
        }
        println!("sides of the triangles between centres: {} ..= {} m", sides.0, sides.1);
        assert!((sides.0 - dx).abs() < 1e-5 && (sides.1 - dx).abs() < 1e-5);
        let [ex, ez] = lattice.extent();
        let xs: Vec<f32> = mesh.positions.iter().map(|p| p[0]).collect();
        let zs: Vec<f32> = mesh.positions.iter().map(|p| p[2]).collect();
        let bounds = |v: &[f32]| (v.iter().cloned().fold(f32::MAX, f32::min), v.iter().cloned().fold(f32::MIN, f32::max));
        assert_eq!(bounds(&xs), (-0.5 * ex, 0.5 * ex));
        assert_eq!(bounds(&zs), (-0.5 * ez, 0.5 * ez));
        assert_clockwise_from_above(&mesh);
        let area: f32 = mesh.indices.chunks(3).map(|t| {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.positions[i as usize]);
            0.5 * ((b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2])).abs()
        }).sum();
        println!("area covered {area} m², the lattice's rectangle {} m²", ex * ez);
        assert!((area - ex * ez).abs() < 1e-3);
    }

    #[test]
    fn small_grids_keep_a_full_grid_and_large_ones_a_clipmap_of_bounded_size() {
        let mut previous_levels = 0;
        for n in [64u32, 256, 300, 512, 1024, 2048, 4096, 8192, 16384] {
            let layout = choose_layout(n, n);
            let full = Layout::Grid { width: n, height: n }.vertex_count();
            println!("{n}²: {layout:?}, {} vertices (a full grid would have {full})", layout.vertex_count());
            assert!(layout.vertex_count() <= full);
            assert!(layout.vertex_count() <= 500_000, "{n}² draws {} vertices", layout.vertex_count());
            if let Layout::Clipmap { levels, .. } = layout {
                assert!(levels >= previous_levels);
                previous_levels = levels;
            }
        }
        assert_eq!(choose_layout(256, 256), Layout::Grid { width: 256, height: 256 });
        assert_eq!(choose_layout(4096, 4096), Layout::Clipmap { quads: CLIPMAP_QUADS, levels: 7 });
        assert_eq!(Layout::Clipmap { quads: CLIPMAP_QUADS, levels: 7 }.vertex_count(), 365_569);
        // A long thin strip is cheaper as a grid.
        assert_eq!(choose_layout(4096, 16), Layout::Grid { width: 4096, height: 16 });
    }

    #[test]
    fn the_outermost_level_covers_the_grid_from_any_centre_the_shader_can_pick() {
        for n in [300u32, 1024, 4096, 10000] {
            let levels = clipmap_levels(n, n, CLIPMAP_QUADS);
            let spacing = 0.5;
            let extent = n as f32 * spacing;
            let half_width = 0.5 * CLIPMAP_QUADS as f32 * spacing * (1u64 << (levels - 1)) as f32;
            let snap = clipmap_snap(spacing, levels);
            // Worst case: the camera at one edge, the centre moved half a snap step further out;
            // the far edge must still be inside.
            let reach_needed = extent + 0.5 * snap;
            println!("{n}²: {levels} levels, outer half-width {half_width} m, needed {reach_needed} m, snap {snap} m");
            assert!(half_width >= reach_needed);
            // The snap is a whole number of every level's doubled spacing.
            for level in 0..levels {
                let doubled = 2.0 * spacing * (1u64 << level) as f32;
                assert_eq!((snap / doubled).fract(), 0.0);
            }
        }
    }

    #[test]
    fn the_clipmap_levels_tile_their_square_once_with_no_gap_or_overlap() {
        let (quads, levels, spacing) = (16u32, 4u32, 1.0f32);
        let mesh = clipmap_mesh(quads, levels, spacing);
        assert_eq!(mesh.positions.len(), Layout::Clipmap { quads, levels }.vertex_count());
        assert!(mesh.indices.iter().all(|&i| (i as usize) < mesh.positions.len()));
        assert_clockwise_from_above(&mesh);
        // Paint every unit square (the finest spacing) each quad covers.
        let half = (quads / 2 * (1 << (levels - 1))) as i64;
        let side = (2 * half) as usize;
        let mut painted = vec![0u8; side * side];
        for t in mesh.indices.chunks(6) {
            let [a, _, _, _, d, _] = [t[0], t[1], t[2], t[3], t[4], t[5]].map(|i| mesh.positions[i as usize]);
            let (x0, z0) = key(a[0], a[2], spacing);
            let (x1, z1) = key(d[0], d[2], spacing);
            for z in z0..z1 {
                for x in x0..x1 {
                    painted[((z + half) as usize) * side + (x + half) as usize] += 1;
                }
            }
        }
        let gaps = painted.iter().filter(|&&c| c == 0).count();
        let overlaps = painted.iter().filter(|&&c| c > 1).count();
        println!("{side}² unit squares: {gaps} uncovered, {overlaps} covered twice or more");
        assert_eq!((gaps, overlaps), (0, 0));
    }

    #[test]
    fn morphed_level_edges_meet_the_next_level_vertex_for_vertex() {
        let (quads, levels, spacing) = (16u32, 4u32, 0.75f32);
        let mesh = clipmap_mesh(quads, levels, spacing);
        let unit = spacing;
        for level in 0..levels - 1 {
            let step = spacing * (1 << level) as f32;
            let edge = 0.5 * quads as f32 * step;
            let outer: Vec<[f32; 3]> = mesh.positions.iter().filter(|p| p[1] == level as f32 && (p[0].abs() == edge || p[2].abs() == edge)).cloned().collect();
            let morphed: BTreeSet<(i64, i64)> = outer.iter().map(|p| {
                let m = morph_offset([p[0], p[2]], level, spacing, quads, levels);
                key(m[0], m[1], unit)
            }).collect();
            let next_inner: BTreeSet<(i64, i64)> = mesh.positions.iter()
                .filter(|p| p[1] == (level + 1) as f32 && p[0].abs().max(p[2].abs()) == edge)
                .map(|p| key(p[0], p[2], unit))
                .collect();
            println!("level {level}: {} edge vertices morph onto {} points; level {} has {} on that square", outer.len(), morphed.len(), level + 1, next_inner.len());
            assert_eq!(morphed, next_inner);
            // Inside the morph band's start nothing moves.
            for p in mesh.positions.iter().filter(|p| p[1] == level as f32 && p[0].abs().max(p[2].abs()) <= MORPH_START * edge) {
                assert_eq!(morph_offset([p[0], p[2]], level, spacing, quads, levels), [p[0], p[2]]);
            }
        }
        // The coarsest level stays where it is.
        let last = mesh.positions.iter().find(|p| p[1] == (levels - 1) as f32 && p[0] != 0.0).unwrap();
        assert_eq!(morph_offset([last[0], last[2]], levels - 1, spacing, quads, levels), [last[0], last[2]]);
    }

    #[test]
    fn morphing_moves_a_vertex_continuously_and_never_past_its_even_neighbour() {
        let (quads, levels, spacing) = (16u32, 3u32, 1.0f32);
        let mesh = clipmap_mesh(quads, levels, spacing);
        let mut largest = 0.0f32;
        for p in &mesh.positions {
            let level = p[1] as u32;
            let step = spacing * (1 << level) as f32;
            let m = morph_offset([p[0], p[2]], level, spacing, quads, levels);
            let moved = (m[0] - p[0]).abs().max((m[1] - p[2]).abs());
            largest = largest.max(moved / step);
            assert!(moved <= step + 1e-5, "{p:?} moved {moved} m");
        }
        println!("largest move: {largest} of a spacing");
        assert!((largest - 1.0).abs() < 1e-6);
    }
}
