//! PipeWater's GDExtension: the `PipeWater` node (a water simulation over terrain) for Godot 4.3+.
//!
//! The node is thin. [`node`] is its facade (properties, constants, signals) with its queries,
//! edits and running in files of their own; its parts are components: [`outputs`] (the textures
//! for materials), [`surface`] (the helper mesh and material), [`build`] (the simulation from the
//! properties), [`errors`] (errors and `get_last_error()`) and [`detail_texture`] (the detail
//! waves' texture). [`saved_state`] is the `PipeWaterState` resource that `save_state()` returns
//! (and `initial_state` holds); [`water_body`] is `PipeWaterBody`, a hull that pushes water;
//! [`water_source`] is `PipeWaterSource`, a spring or drain placed in the scene; [`erosion_settings`]
//! is `PipeWaterErosion`, the settings of erosion (`PipeWater.erosion`). [`world_node`] is `PipeWaterWorld`, water for a world in pages
//! (far past one grid's size) with a window of textures around a focus node. [`fluid_settings`] is `PipeWaterFluid`, the fluid
//! (`PipeWater.fluid`: viscosity, cooling, density, colour). Argument checks
//! live in
//! [`validate`], coordinate mapping in [`mapping`], texture packing in [`texels`], the surface
//! mesh's vertices (a grid or a camera-centred clipmap) in [`mesh_layout`]; they, and the pure
//! parts of [`build`], are plain Rust with unit tests. The core simulation is
//! [`pipewater_core::Simulation`].

use godot::prelude::*;

pub mod detail_texture;
pub mod erosion_settings;
pub mod errors;
pub mod fluid_settings;
pub mod mapping;
pub mod mesh_layout;
pub mod node;
pub mod outputs;
pub mod rendering_device;
pub mod saved_state;
pub mod surface;
pub mod texels;
pub mod validate;
pub mod water_body;
pub mod world_far_water;
pub mod world_node;
pub use node::water_source;

/// The extension's entry point (`gdext_rust_init` in the `.gdextension` file).
struct PipeWaterExtension;

// SAFETY: the one implementation of the entry point for this library, as gdext requires.
#[gdextension]
unsafe impl ExtensionLibrary for PipeWaterExtension {}
