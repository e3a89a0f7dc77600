//! PipeWater's engine-agnostic water simulation: the eight-neighbour, bidirectional pipe model
//! over a height field, with a CPU reference backend and a wgpu compute backend.
//!
//! Start with [`Simulation`]: build a [`State`] (or take one from [`scenarios`]), choose
//! [`Params`], then call [`Simulation::advance`] each frame and query or edit between frames.
//! The step itself is defined in [`pipes`].
//!
//! The CPU backend is deterministic: the same inputs give bit-identical fields and ledger
//! whatever the number of rayon threads (`tests/determinism.rs`). [`Simulation::save_state`]
//! and [`Simulation::restore_state`] save and restore the complete water state ([`save`]);
//! [`authoring`] holds what an editor's tools need: brushes, exact regions of cells for undo,
//! and picking by ray.

#![warn(missing_docs)]

pub mod authoring;
pub mod backend;
pub mod bodies;
pub mod cell_edits;
pub mod cooling;
pub mod detail;
pub mod dispatch;
pub mod erosion;
pub mod error;
pub mod frame;
pub mod grid;
pub mod lattice;
pub mod ledger;
pub mod params;
pub mod pipes;
pub mod quanta;
pub mod save;
pub mod save_tiles;
pub mod scenarios;
pub mod simulation;
pub mod sources;
pub mod state;
pub mod sync;
pub mod terrain_source;
pub mod validation;
pub mod world_save;
#[cfg(feature = "gpu")]
pub mod world_water;

pub use backend::{Backend, BackendKind};
pub use bodies::{Body, BodyForce, HullPart, HullShape};
pub use detail::DetailParams;
pub use glam;
pub use error::{Error, Result};
pub use frame::FrameReport;
pub use grid::{CellRect, Grid};
pub use lattice::Lattice;
pub use ledger::MassLedger;
pub use params::{Boundary, CrossSection, Edge, ErosionParams, NeighbourMode, Params};
pub use quanta::{DEPTH_QUANTUM, MAX_DEPTH, MAX_DEPTH_QUANTA, MAX_TERRAIN_ABS};
pub use save::{SAVE_FORMAT_VERSION, SAVE_MAGIC};
pub use simulation::{BackendPreference, DeviceLoss, Simulation};
pub use sources::SourceId;
pub use state::{Counters, Snapshot, State};
