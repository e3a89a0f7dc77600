//! The enums of the node's mode properties, and the node's `BACKEND_*`, `NEIGHBOURS_*`,
//! `CROSS_SECTION_*` and `BOUNDARY_*` constants that share their values (a test checks they agree).

use super::PipeWater;
use godot::prelude::*;

#[godot_api(secondary)]
impl PipeWater {
    /// `backend`: the GPU when an adapter exists, else the CPU.
    #[constant]
    const BACKEND_AUTO: i64 = 0;
    /// `backend`: the GPU only (the CPU runs, with an error, when no adapter exists).
    #[constant]
    const BACKEND_GPU: i64 = 1;
    /// `backend`: the CPU only.
    #[constant]
    const BACKEND_CPU: i64 = 2;
    /// `backend`: Godot's own RenderingDevice (Forward+ and Mobile renderers); the textures stay
    /// on the GPU.
    #[constant]
    const BACKEND_RENDERING_DEVICE: i64 = 3;
    /// `neighbour_mode`: four orthogonal pipes.
    #[constant]
    const NEIGHBOURS_FOUR: i64 = 0;
    /// `neighbour_mode`: eight pipes (orthogonal and diagonal).
    #[constant]
    const NEIGHBOURS_EIGHT: i64 = 1;
    /// `neighbour_mode`: six pipes on a triangular lattice (hexagonal cells, odd rows offset half
    /// a cell along local +X, rows `cell_size·√3/2` apart).
    #[constant]
    const NEIGHBOURS_TRIANGULAR: i64 = 2;
    /// `cross_section`: constant pipe cross-section (`pipe_depth`).
    #[constant]
    const CROSS_SECTION_CLASSIC: i64 = 0;
    /// `cross_section`: depth-dependent cross-section (shallow-water waves).
    #[constant]
    const CROSS_SECTION_DEPTH_DEPENDENT: i64 = 1;
    /// `boundary_*`: a wall.
    #[constant]
    const BOUNDARY_WALL: i64 = 0;
    /// `boundary_*`: free outfall.
    #[constant]
    const BOUNDARY_OPEN: i64 = 1;
    /// `boundary_*`: inflow at the edge's `inflow_rate_*`.
    #[constant]
    const BOUNDARY_INFLOW: i64 = 2;
    /// `boundary_*`: a water body beyond the edge held at the edge's `boundary_level_*`.
    #[constant]
    const BOUNDARY_LEVEL: i64 = 3;
}

/// Which simulation backend a `PipeWater` node runs.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterBackend {
    /// Godot's own RenderingDevice when the renderer has one (Forward+, Mobile), else the GPU
    /// through wgpu when an adapter exists (Compatibility renderer, headless), else the CPU
    /// (with a warning).
    #[default]
    Auto = 0,
    /// The GPU through wgpu, on a device of its own: the fields are read back every frame for
    /// the textures. Without an adapter: an error, and the CPU runs instead.
    Gpu = 1,
    /// The multithreaded CPU reference.
    Cpu = 2,
    /// The GPU through Godot's own RenderingDevice: the textures are written on the GPU and
    /// never leave it; queries read back only the tiles they touch. Needs a renderer with a
    /// RenderingDevice and Godot's default (single-threaded) rendering thread model; otherwise
    /// an error, and `BACKEND_AUTO`'s choice runs instead.
    RenderingDevice = 3,
}

/// How many neighbours each cell exchanges water with.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterNeighbours {
    /// Four orthogonal pipes: cheaper, fronts spread as diamonds.
    Four = 0,
    /// All eight neighbours: fronts spread as circles.
    #[default]
    Eight = 1,
    /// Six neighbours on a triangular lattice: hexagonal cells of `cell_size²·√3/2`, odd rows
    /// shifted half a cell along local +X, rows `cell_size·√3/2` apart along local Z, so the
    /// water covers `(grid_width + ½)·cell_size × grid_height·cell_size·√3/2`. Fronts spread as
    /// circles; for hex maps. Pressure-driven (no momentum advection yet); no erosion.
    Triangular = 2,
}

/// How a pipe's cross-section is chosen.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterCrossSection {
    /// Constant `pipe_depth`: the classic game-tuned look; waves travel at √(g·pipe_depth).
    Classic = 0,
    /// The water depth at the pipe: shallow-water physics, waves travel at √(g·depth).
    #[default]
    DepthDependent = 1,
}

/// What happens at one edge of the grid.
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum WaterBoundary {
    /// Closed: no water crosses.
    #[default]
    Wall = 0,
    /// Free outfall: water leaves as if the ground dropped away beyond the edge.
    Open = 1,
    /// Water enters at the edge's `inflow_rate_*` (m³/s), spread over its cells.
    Inflow = 2,
    /// A water body beyond the edge whose surface stands at the edge's `boundary_level_*` (local
    /// m): water flows in or out until the edge cells' surface is at that level, and waves
    /// leave instead of reflecting (a sea, or a lake beyond the map).
    Level = 3,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn godot_enum_values_match_the_documented_constants() {
        let values = [
            (WaterBackend::Auto as i64, PipeWater::BACKEND_AUTO),
            (WaterBackend::Gpu as i64, PipeWater::BACKEND_GPU),
            (WaterBackend::Cpu as i64, PipeWater::BACKEND_CPU),
            (WaterNeighbours::Four as i64, PipeWater::NEIGHBOURS_FOUR),
            (WaterNeighbours::Eight as i64, PipeWater::NEIGHBOURS_EIGHT),
            (WaterNeighbours::Triangular as i64, PipeWater::NEIGHBOURS_TRIANGULAR),
            (WaterCrossSection::Classic as i64, PipeWater::CROSS_SECTION_CLASSIC),
            (WaterCrossSection::DepthDependent as i64, PipeWater::CROSS_SECTION_DEPTH_DEPENDENT),
            (WaterBoundary::Wall as i64, PipeWater::BOUNDARY_WALL),
            (WaterBoundary::Open as i64, PipeWater::BOUNDARY_OPEN),
            (WaterBoundary::Inflow as i64, PipeWater::BOUNDARY_INFLOW),
            (WaterBoundary::Level as i64, PipeWater::BOUNDARY_LEVEL),
        ];
        println!("(enum value, constant): {values:?}");
        assert!(values.iter().all(|(a, b)| a == b));
    }
}
