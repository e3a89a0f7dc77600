//! Whether a grid fits a GPU device, checked by both GPU backends before they create anything:
//! a grid past a device's limits is refused with the largest grid the device runs, instead of
//! failing (or reading out of bounds) halfway through building it.

use super::readback::{CELL_TEXEL_BYTES, HEADER_BYTES};
use super::step_kernel::ColumnKernel;
use crate::error::{Error, Result};
use crate::grid::{Grid, MAX_GRID_SIDE};

/// Bytes per cell of the largest field a shader binds: the flux, four `f32` per cell.
pub const FLUX_BYTES_PER_CELL: u64 = 16;

/// What a device allows, as far as its backend can learn it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceLimits {
    /// The device, as messages name it.
    pub device: String,
    /// Largest range of a storage buffer one binding covers, bytes.
    pub max_storage_binding: u64,
    /// Largest buffer, bytes: the flux field, and on wgpu the staging buffer of a full read.
    pub max_buffer: u64,
    /// Whether the backend reads full snapshots through one buffer ([`HEADER_BYTES`] + 32 bytes a
    /// cell), which must then fit `max_buffer`.
    pub full_reads: bool,
    /// Largest side of a 2D texture, texels (the RenderingDevice backend writes its outputs to
    /// grid-sized textures); `u32::MAX` where the backend makes none.
    pub max_texture_side: u32,
    /// Most workgroups of one dispatch along x and along y.
    pub max_workgroups: [u32; 2],
    /// The backend's step kernel, whose dispatch ([`ColumnKernel::dispatch`]) sets the number of
    /// workgroups a grid's step needs.
    pub step_kernel: ColumnKernel,
}

impl DeviceLimits {
    /// Refuses a grid the device cannot hold with an [`Error::GpuUnavailable`] that says which
    /// limit it passes and names the largest square grid the device runs.
    pub fn check(&self, grid: Grid) -> Result<()> {
        let problems = self.problems(grid.width, grid.height);
        if problems.is_empty() {
            return Ok(());
        }
        let side = self.largest_square_side();
        Err(Error::GpuUnavailable(format!(
            "a {}x{} grid does not fit {}: {}; the largest square grid it runs is {side}x{side} cells",
            grid.width,
            grid.height,
            self.device,
            problems.join("; ")
        )))
    }

    /// What a `width × height` grid passes, one sentence each.
    fn problems(&self, width: u32, height: u32) -> Vec<String> {
        let n = width as u64 * height as u64;
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
        let mut problems = Vec::new();
        let binding = FLUX_BYTES_PER_CELL * n;
        if binding > self.max_storage_binding {
            problems.push(format!("its flux field takes {}, past the {} one storage binding covers", mib(binding), mib(self.max_storage_binding)));
        }
        if binding > self.max_buffer {
            problems.push(format!("its flux field takes {}, past the largest buffer ({})", mib(binding), mib(self.max_buffer)));
        }
        let read = HEADER_BYTES as u64 + CELL_TEXEL_BYTES as u64 * n;
        if self.full_reads && read > self.max_buffer {
            problems.push(format!("a full readback takes {}, past the largest buffer ({})", mib(read), mib(self.max_buffer)));
        }
        if width.max(height) > self.max_texture_side {
            problems.push(format!("its textures would be {width}x{height} texels, past the largest 2D texture ({0}x{0})", self.max_texture_side));
        }
        // The step dispatches its awake tiles (at most every strip of every band) in one row.
        let groups = self.step_kernel.dispatch(width, height);
        if groups[0] as u64 * groups[1] as u64 > self.max_workgroups[0] as u64 {
            problems.push(format!(
                "one step dispatches up to {}x{} workgroups in one row, past the most the device dispatches along x ({})",
                groups[0], groups[1], self.max_workgroups[0]
            ));
        }
        problems
    }

    /// The largest `s` such that an `s × s` grid fits (at most the grid's own limit,
    /// [`MAX_GRID_SIDE`]).
    pub fn largest_square_side(&self) -> u32 {
        let cells_for = |bytes: u64, per_cell: u64| bytes / per_cell;
        let mut cells = cells_for(self.max_storage_binding, FLUX_BYTES_PER_CELL).min(cells_for(self.max_buffer, FLUX_BYTES_PER_CELL));
        if self.full_reads {
            cells = cells.min(cells_for(self.max_buffer.saturating_sub(HEADER_BYTES as u64), CELL_TEXEL_BYTES as u64));
        }
        let side = (cells.isqrt()).min(self.max_texture_side as u64).min(MAX_GRID_SIDE as u64) as u32;
        // The workgroups a square grid's step dispatches grow with its side, though not strictly
        // (its bands lengthen with the grid): the largest side within the limit, searched down.
        let workgroups_of = |side: u32| {
            let [strips, bands] = self.step_kernel.dispatch(side, side);
            strips as u64 * bands as u64
        };
        let mut fits = side;
        while fits > 0 && workgroups_of(fits) > self.max_workgroups[0] as u64 {
            fits -= 1;
        }
        fits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device that binds 128 MiB (the least Vulkan guarantees) with 256 MiB buffers.
    fn small_device() -> DeviceLimits {
        DeviceLimits {
            device: "a small GPU".into(),
            max_storage_binding: 128 << 20,
            max_buffer: 256 << 20,
            full_reads: true,
            max_texture_side: 16384,
            max_workgroups: [65535, 65535],
            // Strips of 32 columns, bands of 8 rows.
            step_kernel: ColumnKernel { columns: 40, per_invocation: 1, band_rows: Some(8) },
        }
    }

    #[test]
    fn a_grid_past_the_binding_limit_is_refused_naming_the_largest_square_grid() {
        let limits = small_device();
        let refused = limits.check(Grid::new(4096, 4096, 1.0).unwrap());
        let side = limits.largest_square_side();
        println!("{refused:?}; largest side {side}");
        // 16 B/cell in 128 MiB: 8 388 608 cells, 2896² = 8 386 816.
        assert_eq!(side, 2896);
        let Err(Error::GpuUnavailable(why)) = refused else { panic!("a 4096² flux field (256 MiB) cannot be bound in 128 MiB") };
        assert!(why.contains("2896x2896") && why.contains("256.0 MiB") && why.contains("128.0 MiB"), "{why}");
        assert_eq!(limits.check(Grid::new(side, side, 1.0).unwrap()), Ok(()), "the largest grid named fits");
        assert!(limits.check(Grid::new(side + 1, side + 1, 1.0).unwrap()).is_err(), "one cell more per side does not");
    }

    #[test]
    fn texture_and_dispatch_limits_count_as_well() {
        let limits = DeviceLimits { max_texture_side: 2048, max_workgroups: [100, 65535], full_reads: false, ..small_device() };
        let side = limits.largest_square_side();
        let wide = limits.check(Grid::new(3201, 16, 1.0).unwrap());
        println!("largest side {side}; 3201x16: {wide:?}");
        // 160² is 5 strips of 32 by 20 bands of 8: the 100 workgroups one row dispatches.
        assert_eq!(side, 160);
        assert_eq!(limits.check(Grid::new(side, side, 1.0).unwrap()), Ok(()));
        assert!(limits.check(Grid::new(side + 1, side + 1, 1.0).unwrap()).is_err());
        let Err(Error::GpuUnavailable(why)) = wide else { panic!("3201 cells need 101 workgroups of 32 and a 3201-texel texture") };
        assert!(why.contains("101x2 workgroups") && why.contains("largest 2D texture"), "{why}");
    }

    #[test]
    fn the_dispatch_limit_counts_the_bands_the_step_really_dispatches() {
        // Memory and textures for any grid; 65 535 workgroups in one row, as most devices allow.
        let kernel = ColumnKernel { columns: 64, per_invocation: 1, band_rows: None };
        let limits = DeviceLimits { max_storage_binding: u64::MAX, max_buffer: u64::MAX, step_kernel: kernel, ..small_device() };
        let side = limits.largest_square_side();
        let [strips, bands] = kernel.dispatch(side, side);
        let [more_strips, more_bands] = kernel.dispatch(side + 1, side + 1);
        println!("largest side {side}: {strips}x{bands} workgroups; {}: {more_strips}x{more_bands}", side + 1);
        // Large grids get bands of 64 rows (short bands are only for grids too small to fill a
        // GPU), so about 65 535 · 56 · 64 cells fit: counting the shortest bands (10 rows) for
        // every grid would refuse anything past 6 058².
        assert!(side > 15000, "{side}");
        assert!(strips * bands <= 65535 && more_strips * more_bands > 65535);
        assert_eq!(limits.check(Grid::new(side, side, 1.0).unwrap()), Ok(()));
        assert!(limits.check(Grid::new(side + 1, side + 1, 1.0).unwrap()).is_err());
    }
}
