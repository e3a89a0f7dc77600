//! How the GPU backends run the step kernel (`shaders/step_columns.wgsl`): the specialisation of
//! its pipeline for a mode of the model, its workgroup size, and its dispatch. Both GPU backends
//! (wgpu and Godot's RenderingDevice) take these from here, so they run the same kernel the same
//! way.

use crate::pipes::StepConstants;

/// Columns on each side of a workgroup's strip whose results only the neighbouring columns use:
/// `HALO` in `step_columns.wgsl`.
pub const COLUMN_HALO: u32 = 5;

/// Workgroup memory the kernel needs per column, bytes: four rows of terrain, depth and pipes
/// (96), of accelerated fluxes (64) and limit factors (32), two rows of old fluxes (32) and
/// discharges (16).
pub const WORKGROUP_BYTES_PER_COLUMN: u32 = 240;

/// Workgroup sizes (columns) the kernel is built with, the widest first: the widest whose
/// workgroup memory the device allows is chosen. Wider strips recompute fewer halo columns
/// (`2·COLUMN_HALO` of each strip): 92 % of the work is useful at 128, 84 % at 64, 69 % at 32.
pub const COLUMN_CHOICES: [u32; 3] = [128, 64, 32];

/// Rows of a workgroup's band, unless `PIPEWATER_GPU_BAND_ROWS` says otherwise: each band loads
/// three rows above and below its own, so longer bands waste less, and shorter ones give the
/// device more workgroups to keep busy.
pub const DEFAULT_BAND_ROWS: u32 = 32;

/// Bytes of device memory one cell-step moves: terrain 4, depth 4 and pipes 16 read, depth 4 and
/// pipes 16 written (neighbour and halo reads served by the caches).
pub const BYTES_PER_CELL_STEP: u32 = 44;

/// The modes of the model a step pipeline is specialised for (the overridable constants of
/// `common.wgsl`): a mode compiles only the code it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepMode {
    /// Eight neighbours rather than four.
    pub eight_neighbours: bool,
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
        StepMode { eight_neighbours: c.eight_neighbours != 0, depth_dependent: c.depth_dependent != 0, advection: c.advection != 0, edge_exchange: c.has_edge_exchange() }
    }

    /// The pipeline-overridable constants that fix this mode, by name, for a kernel of
    /// `columns` columns.
    pub fn overrides(&self, columns: u32) -> [(&'static str, f64); 5] {
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        [
            ("EIGHT_NEIGHBOURS", flag(self.eight_neighbours)),
            ("DEPTH_DEPENDENT", flag(self.depth_dependent)),
            ("ADVECTION", flag(self.advection)),
            ("EDGE_EXCHANGE", flag(self.edge_exchange)),
            ("COLUMNS", columns as f64),
        ]
    }
}

/// The shape of the kernel's workgroups on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnKernel {
    /// Invocations (columns) per workgroup.
    pub columns: u32,
    /// Rows of each workgroup's band (the last band of a grid may be shorter).
    pub band_rows: u32,
}

impl ColumnKernel {
    /// The widest of [`COLUMN_CHOICES`] that a device with these limits runs, with
    /// [`DEFAULT_BAND_ROWS`]; `None` when none fits. `PIPEWATER_GPU_COLUMNS` and
    /// `PIPEWATER_GPU_BAND_ROWS` override the choice (benchmarks), within the limits.
    pub fn for_limits(workgroup_bytes: u32, invocations: u32, size_x: u32) -> Option<Self> {
        let fits = |columns: u32| columns * WORKGROUP_BYTES_PER_COLUMN <= workgroup_bytes && columns <= invocations && columns <= size_x;
        let asked = env_u32("PIPEWATER_GPU_COLUMNS").filter(|&c| c > 2 * COLUMN_HALO && fits(c));
        let columns = asked.or_else(|| COLUMN_CHOICES.into_iter().find(|&c| fits(c)))?;
        let band_rows = env_u32("PIPEWATER_GPU_BAND_ROWS").filter(|&r| r > 0).unwrap_or(DEFAULT_BAND_ROWS);
        Some(ColumnKernel { columns, band_rows })
    }

    /// Workgroup memory one workgroup uses, bytes.
    pub fn workgroup_bytes(&self) -> u32 {
        self.columns * WORKGROUP_BYTES_PER_COLUMN
    }

    /// Workgroups along x and y for a `width × height` grid: strips of `columns − 2·HALO`
    /// columns, bands of about `band_rows` rows (the kernel shares the rows out evenly among the
    /// workgroups along y, so none is empty).
    pub fn dispatch(&self, width: u32, height: u32) -> [u32; 2] {
        let strips = width.div_ceil(self.columns - 2 * COLUMN_HALO);
        let bands = height.div_ceil(self.band_rows).clamp(1, height.max(1));
        [strips, bands]
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
        for (bytes, expected) in [(16384, 64), (32768, 128), (49152, 128), (8192, 32)] {
            let kernel = ColumnKernel::for_limits(bytes, 256, 256).map(|k| k.columns);
            println!("{bytes} B of workgroup memory: {kernel:?} columns");
            if std::env::var("PIPEWATER_GPU_COLUMNS").is_err() {
                assert_eq!(kernel, Some(expected));
            }
        }
        assert_eq!(ColumnKernel::for_limits(4096, 256, 256), None, "32 columns need 7680 bytes");
    }

    #[test]
    fn every_cell_of_the_grid_lies_in_one_strip_and_one_band() {
        let kernel = ColumnKernel { columns: 128, band_rows: 32 };
        for (w, h) in [(1, 1), (2, 2), (118, 32), (119, 33), (4096, 4096), (1000, 7)] {
            let [strips, bands] = kernel.dispatch(w, h);
            let rows = h.div_ceil(bands);
            println!("{w}x{h}: {strips} strips of 118 columns, {bands} bands of {rows} rows");
            assert!(strips * 118 >= w && (strips - 1) * 118 < w);
            assert!(bands * rows >= h && (bands - 1) * rows < h, "no empty band");
        }
    }
}
