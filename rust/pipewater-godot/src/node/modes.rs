//! The enums of the node's mode properties. Their values are also the node's `BACKEND_*`,
//! `NEIGHBOURS_*`, `CROSS_SECTION_*` and `BOUNDARY_*` constants (a test checks they agree).

use godot::prelude::*;

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
