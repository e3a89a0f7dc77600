//! `PipeWaterState`: a saved water simulation as a Godot `Resource`, so that games keep it with
//! `ResourceSaver.save` (`.res` or `.tres`) and `ResourceLoader.load`, or inside their own saves.
//!
//! It only holds bytes; their format is the core's ([`pipewater_core::save`]), and
//! `PipeWater.load_state` validates them.

use godot::classes::Resource;
use godot::prelude::*;
use pipewater_core::quanta::quantum_volume;
use pipewater_core::save::saved_fields;

/// The water of a `PipeWater` node at one moment, from `PipeWater.save_state()`: depths, flow,
/// terrain (with digging), sources and drains, the water ledger and the simulated clock, exactly.
/// Give it to `PipeWater.load_state()` on a node with the same `grid_size` and `cell_size`.
///
/// Save it like any resource: `ResourceSaver.save(state, "user://water.res")` (binary) or
/// `.tres` (text, several times larger). Its bytes are already compressed, and dry land costs
/// only its terrain: a level with 5 % of its cells under water takes about 2 bytes a cell, an
/// all-wet one up to about 12 (states saved by PipeWater before format 4 took 24 and still load). As `PipeWater.initial_state` it is water baked into a scene.
/// `grid_size` and `simulated_time` describe the state for display; `load_state` reads only
/// `data`.
///
/// It holds a `PipeWaterWorld`'s water as well: `data` set to the bytes of the world's
/// `save_state()` (or of its `state_saved` signal) makes a state for `PipeWaterWorld.initial_state`
/// (`get_total_water` reads only a `PipeWater`'s, and gives 0 for a world's).
#[derive(GodotClass)]
#[class(tool, base = Resource, init)]
pub struct PipeWaterState {
    /// The saved simulation in PipeWater's versioned, checksummed format. A state saved by a
    /// newer PipeWater, or altered, is refused by `load_state`.
    #[export]
    #[var]
    data: PackedByteArray,
    /// Cells along local X and Z of the node that saved it (informational).
    #[export(storage)]
    #[var]
    grid_size: Vector2i,
    /// Simulated seconds since the saving node's simulation started or was last reset
    /// (informational).
    #[export(storage)]
    #[var]
    simulated_time: f64,
    base: Base<Resource>,
}

#[godot_api]
impl PipeWaterState {
    /// Water the state holds, m³ (decoding `data`); 0 when it cannot be read.
    #[func]
    fn get_total_water(&self) -> f64 {
        match saved_fields(self.data.as_slice()) {
            Ok(fields) => fields.state.total_quanta() as f64 * quantum_volume(fields.state.grid.cell_size),
            Err(_) => 0.0,
        }
    }
}

impl PipeWaterState {
    /// A new state holding `bytes` saved from a simulation of `grid_size` cells at
    /// `simulated_time` s.
    pub fn from_saved(bytes: &[u8], grid_size: Vector2i, simulated_time: f64) -> Gd<Self> {
        let mut state = Self::new_gd();
        {
            let mut s = state.bind_mut();
            s.data = PackedByteArray::from(bytes);
            s.grid_size = grid_size;
            s.simulated_time = simulated_time;
        }
        state
    }

    /// The saved bytes.
    pub fn bytes(&self) -> &PackedByteArray {
        &self.data
    }
}
