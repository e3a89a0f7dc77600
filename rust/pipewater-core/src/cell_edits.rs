//! What an edit does to one cell, as the host lists it for every backend: water, terrain, a
//! body's pressure head, a drag on the pipes. A leaf: the backends, the bodies and the authoring
//! tools all name these, and nothing here names them back.

use bytemuck::{Pod, Zeroable};

/// A change of water in one cell, in quanta. Positive adds (up to the cell's maximum depth),
/// negative removes (never more than the cell holds). The ledger counts what really happened.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct CellWater {
    /// Linear cell index.
    pub cell: u32,
    /// Quanta to add (positive) or remove (negative).
    pub quanta: i32,
}

/// A change of terrain height in one cell, metres. Water depth is kept, so the surface moves with
/// the ground.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct CellTerrain {
    /// Linear cell index.
    pub cell: u32,
    /// Height change, m.
    pub delta: f32,
}

/// The pressure head a floating or sunk body puts on the water of one cell: the thickness (m) of
/// body below the water surface there. The step sees the cell's bed raised by it, so water flows
/// out from under a body and back when it leaves; the water itself is never touched, so the
/// ledger stays exact. Queries and textures keep showing the real bed and surface.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct CellDisplacement {
    /// Linear cell index.
    pub cell: u32,
    /// Pressure head, m (0 ..= [`crate::quanta::MAX_TERRAIN_ABS`]).
    pub head: f32,
}

/// A drag on the pipes a cell owns towards a velocity: what a moving body or a scripted push
/// does to the water's momentum ([`crate::pipes::nudged_pipe`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct PipeNudge {
    /// Linear cell index.
    pub cell: u32,
    /// Velocity the water is dragged towards, m/s along the grid's x (local X).
    pub velocity_x: f32,
    /// Velocity the water is dragged towards, m/s along the grid's y (local Z).
    pub velocity_y: f32,
    /// Share of the way there, 0..1.
    pub weight: f32,
}
