//! PipeWater's GDExtension: the `PipeWater` node (a water simulation over terrain) for Godot 4.3+.
//!
//! The node is thin. Argument checks live in [`validate`], coordinate mapping in [`mapping`],
//! texture packing in [`texels`]; they are plain Rust with unit tests. [`node`] converts Godot
//! types and delegates to [`pipewater_core::Simulation`].

use godot::prelude::*;

pub mod mapping;
pub mod node;
pub mod rendering_device;
pub mod texels;
pub mod validate;

/// The extension's entry point (`gdext_rust_init` in the `.gdextension` file).
struct PipeWaterExtension;

// SAFETY: the one implementation of the entry point for this library, as gdext requires.
#[gdextension]
unsafe impl ExtensionLibrary for PipeWaterExtension {}
