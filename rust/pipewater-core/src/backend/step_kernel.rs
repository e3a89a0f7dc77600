//! How the GPU backends run the step kernel (`shaders/step_columns.wgsl`): the specialisation of
//! its pipeline for a mode of the model, its workgroup size, and its dispatch. Both GPU backends
//! (wgpu and Godot's RenderingDevice) take these from here, so they run the same kernel the same
//! way.

use crate::backend::sleep::TileGrid;
use crate::pipes::StepConstants;

/// Columns on each side of a workgroup's strip whose results only the neighbouring columns use:
/// `HALO` in `step_columns.wgsl`.
pub const COLUMN_HALO: u32 = 4;

/// Workgroup memory the kernel needs per column with advection, bytes: one row of terrain and
/// depth (8), four of stored pipes (64), one of three pipes' fluxes (12, old then accelerated) and
/// one of discharges, then limit factors (8). Without advection it needs 36 (two rows of terrain
/// and depth, no stored pipes); a device is sized for the larger.
pub const WORKGROUP_BYTES_PER_COLUMN: u32 = 92;

/// Columns of padding in each ring row beside a strip's own (`ROW` in `step_columns.wgsl`): one
/// on each side, so that a neighbour's column is an invocation's own plus or minus one.
pub const PADDING_COLUMNS: u32 = 2;

/// Workgroup memory a kernel of `columns` columns needs, bytes.
pub const fn workgroup_bytes_for(columns: u32) -> u32 {
    (columns + PADDING_COLUMNS) * WORKGROUP_BYTES_PER_COLUMN
}

/// Workgroup sizes (columns) the kernel is built with, the first the device allows chosen. Wider
/// strips recompute fewer halo columns (`2·COLUMN_HALO` of each strip: 94 % of the work is
/// useful at 128, 88 % at 64, 75 % at 32), but make coarser sleeping tiles. NVIDIA's Vulkan driver
/// gives the kernel 48 KiB of workgroup memory a multiprocessor, in steps of 1 KiB a workgroup
/// (docs/BENCHMARKS.md): 64 columns with advection (6 072 bytes, 126 registers) run eight
/// workgroups (sixteen warps) a multiprocessor on an H100, and 128 columns four (sixteen warps
/// too), 3–4 % faster with advection and 3–5 % without at 4096² with every cell moving; 64 stays
/// the default for its finer sleeping tiles (`PIPEWATER_GPU_COLUMNS=128` chooses the wider
/// strips), on which the sleeping benchmark lake ran 4 % faster.
pub const COLUMN_CHOICES: [u32; 2] = [64, 32];

/// Rows of a workgroup's band, fewest and most, unless `PIPEWATER_GPU_BAND_ROWS` fixes them: each
/// band loads three rows above and below its own, so longer bands waste less, while shorter ones
/// give the device more workgroups to keep busy and leave less idle in the last of them. The
/// dispatch picks the longest bands that still make [`TARGET_WORKGROUPS`] workgroups and
/// [`TARGET_BANDS`] bands, within these bounds.
pub const BAND_ROWS: [u32; 2] = [10, 64];

/// Workgroups a dispatch aims for: more than the largest GPUs hold at once (an H100 holds 8 of
/// these on each of its 132 multiprocessors with advection, 1 056, and 10 without), so that none
/// waits for work, with bands as long as that allows.
pub const TARGET_WORKGROUPS: u32 = 2400;

/// Bands a grid aims for, however wide it is. On an H100 (docs/BENCHMARKS.md), with every cell
/// moving, bands of 10, 21 and 41 rows at 1024², 2048² and 4096² ran the step with advection 8 %,
/// 4 % and 2 % faster than the 20, 32 and 64 rows of [`TARGET_WORKGROUPS`] alone, and the sleeping
/// benchmark lake 11 %, 6 % and 7 % faster; without advection from 0.4 % slower to 4 % faster,
/// with four neighbours up to 3.6 % slower.
pub const TARGET_BANDS: u32 = 100;

/// Columns each invocation walks, unless `PIPEWATER_GPU_PER_INVOCATION` says otherwise.
pub const DEFAULT_PER_INVOCATION: u32 = 1;

/// Bytes of device memory one cell-step moves: terrain 4, depth 4 and pipes 16 read, depth 4 and
/// pipes 16 written (neighbour and halo reads served by the caches).
pub const BYTES_PER_CELL_STEP: u32 = 44;

/// The modes of the model a step pipeline is specialised for (the overridable constants of
/// `common.wgsl`): a mode compiles only the code it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepMode {
    /// Eight neighbours rather than four (also on the triangular lattice, whose diagonals the
    /// row's parity masks).
    pub eight_neighbours: bool,
    /// The triangular lattice ([`crate::NeighbourMode::Triangular`]).
    pub triangular: bool,
    /// Depth-dependent cross-section rather than the classic one.
    pub depth_dependent: bool,
    /// Momentum advection.
    pub advection: bool,
    /// Some edge is open, an inflow or a fixed level.
    pub edge_exchange: bool,
}

impl StepMode {
    /// The mode of steps with constants `c`.
    pub fn of(c: &StepConstants) -> Self {
        StepMode { eight_neighbours: c.eight_neighbours != 0, triangular: c.triangular(), depth_dependent: c.depth_dependent != 0, advection: c.advection != 0, edge_exchange: c.has_edge_exchange() }
    }

    /// The pipeline-overridable constants that fix this mode, by name, for a kernel of shape
    /// `kernel`.
    pub fn overrides(&self, kernel: &ColumnKernel) -> [(&'static str, f64); 7] {
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        [
            ("EIGHT_NEIGHBOURS", flag(self.eight_neighbours)),
            ("TRIANGULAR", flag(self.triangular)),
            ("DEPTH_DEPENDENT", flag(self.depth_dependent)),
            ("ADVECTION", flag(self.advection)),
            ("EDGE_EXCHANGE", flag(self.edge_exchange)),
            ("COLUMNS", kernel.columns as f64),
            ("PER_INVOCATION", kernel.per_invocation as f64),
        ]
    }
}

/// The shape of the kernel's workgroups on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnKernel {
    /// Columns per workgroup.
    pub columns: u32,
    /// Columns each invocation walks, 1 or 2: `columns / per_invocation` invocations per
    /// workgroup.
    pub per_invocation: u32,
    /// Rows of each workgroup's band when fixed (`PIPEWATER_GPU_BAND_ROWS`); `None` chooses them
    /// per grid ([`BAND_ROWS`]). The last band of a grid may be shorter.
    pub band_rows: Option<u32>,
}

impl ColumnKernel {
    /// The widest of [`COLUMN_CHOICES`] that a device with these limits runs, with
    /// bands chosen per grid; `None` when none fits. `PIPEWATER_GPU_COLUMNS` and
    /// `PIPEWATER_GPU_BAND_ROWS` override the choice (benchmarks), within the limits.
    pub fn for_limits(workgroup_bytes: u32, invocations: u32, size_x: u32) -> Option<Self> {
        let per_invocation = env_u32("PIPEWATER_GPU_PER_INVOCATION").filter(|&p| p == 1 || p == 2).unwrap_or(DEFAULT_PER_INVOCATION);
        let fits = |columns: u32| {
            workgroup_bytes_for(columns) <= workgroup_bytes && columns % per_invocation == 0 && columns / per_invocation <= invocations.min(size_x)
        };
        let asked = env_u32("PIPEWATER_GPU_COLUMNS").filter(|&c| c > 2 * COLUMN_HALO && fits(c));
        let columns = asked.or_else(|| COLUMN_CHOICES.into_iter().find(|&c| fits(c)))?;
        let band_rows = env_u32("PIPEWATER_GPU_BAND_ROWS").filter(|&r| r > 0);
        Some(ColumnKernel { columns, per_invocation, band_rows })
    }

    /// Workgroup memory one workgroup uses, bytes.
    pub fn workgroup_bytes(&self) -> u32 {
        workgroup_bytes_for(self.columns)
    }

    /// Workgroups along x and y for a `width × height` grid: strips of `columns − 2·HALO`
    /// columns, bands of about [`Self::rows_for`] rows (the kernel shares the rows out evenly
    /// among the workgroups along y, so none is empty).
    pub fn dispatch(&self, width: u32, height: u32) -> [u32; 2] {
        let strips = width.div_ceil(self.columns - 2 * COLUMN_HALO);
        let bands = height.div_ceil(self.rows_for(strips, height)).clamp(1, height.max(1));
        [strips, bands]
    }

    /// The kernel's workgroup domains on a `width × height` grid as sleeping tiles
    /// ([`crate::backend::sleep`]): a strip's own `columns − 2·HALO` columns by a band's rows,
    /// the rows [`Self::dispatch`] shares out evenly (`ceil(height / bands)`). The kernel reads
    /// the tile grid's counts and sizes, so its bands are exactly these.
    pub fn tiles(&self, width: u32, height: u32) -> TileGrid {
        let [_, bands] = self.dispatch(width, height);
        TileGrid::new(width, height, [self.columns - 2 * COLUMN_HALO, height.max(1).div_ceil(bands)])
    }

    /// Whether sleeping is exact on these tiles: the step of a cell reads four columns and three
    /// rows around it, so a tile's 3×3 neighbourhood must hold them (bands of fewer than three
    /// rows exist only when `PIPEWATER_GPU_BAND_ROWS` asks for them).
    pub fn tiles_hold_the_step(tiles: &TileGrid) -> bool {
        (tiles.size[0] >= COLUMN_HALO || tiles.tiles[0] == 1) && (tiles.size[1] >= 3 || tiles.tiles[1] == 1)
    }

    /// Rows of each band for a grid `height` rows tall cut into `strips` strips.
    pub fn rows_for(&self, strips: u32, height: u32) -> u32 {
        self.band_rows.unwrap_or_else(|| {
            let bands = TARGET_WORKGROUPS.div_ceil(strips.max(1)).max(TARGET_BANDS);
            height.div_ceil(bands).clamp(BAND_ROWS[0], BAND_ROWS[1])
        })
    }
}

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widest_kernel_the_device_allows_is_chosen() {
        // Vulkan's guaranteed minimum (16 KiB), lavapipe (32 KiB), NVIDIA (48 KiB).
        for (bytes, expected) in [(16384, 64), (32768, 64), (49152, 64), (6071, 32)] {
            let kernel = ColumnKernel::for_limits(bytes, 256, 256).map(|k| k.columns);
            println!("{bytes} B of workgroup memory: {kernel:?} columns");
            if std::env::var("PIPEWATER_GPU_COLUMNS").is_err() {
                assert_eq!(kernel, Some(expected));
            }
        }
        assert_eq!(ColumnKernel::for_limits(3127, 256, 256), None, "32 columns need 3128 bytes");
    }

    #[test]
    fn every_cell_of_the_grid_lies_in_one_strip_and_one_band() {
        let kernel = ColumnKernel { columns: 64, per_invocation: 1, band_rows: None };
        for (w, h) in [(1, 1), (2, 2), (56, 32), (57, 33), (2048, 2048), (4096, 4096), (1000, 7)] {
            let [strips, bands] = kernel.dispatch(w, h);
            let rows = h.div_ceil(bands);
            println!("{w}x{h}: {strips} strips of 56 columns, {bands} bands of {rows} rows");
            assert!(strips * 56 >= w && (strips - 1) * 56 < w);
            assert!(bands * rows >= h && (bands - 1) * rows < h, "no empty band");
            let tiles = kernel.tiles(w, h);
            assert_eq!(tiles.tiles, [strips, bands], "{w}x{h}: the sleeping tiles are the workgroups");
            assert_eq!(tiles.size, [56, rows]);
            assert!(ColumnKernel::tiles_hold_the_step(&tiles));
        }
    }
}
