//! The node's fluid ([`crate::fluid_settings::PipeWaterFluid`] in its `fluid` property): its
//! viscosity and cooling followed into the simulation's parameters at each frame, its density
//! for the bodies, its colour for the water material, the presets, and the ledger of what set.

use super::PipeWater;
use crate::fluid_settings::{preset_values, PipeWaterFluid, WATER};
use godot::prelude::*;

impl PipeWater {
    /// Viscosity (m²/s) and solidify rate (m/s) for the core's parameters: the `fluid`'s, or
    /// water's without one.
    pub(super) fn fluid_model(&self) -> (f32, f32) {
        self.fluid.as_ref().map_or((WATER.viscosity as f32, WATER.solidify_rate as f32), |f| f.bind().model())
    }

    /// Density (kg/m³) the bodies float in: the `fluid`'s, or water's.
    pub(super) fn fluid_density(&self) -> f32 {
        self.fluid.as_ref().map_or(WATER.density as f32, |f| f.bind().density())
    }

    /// Once a frame: a `fluid` whose viscosity or cooling differs from the running parameters
    /// marks them for the next frame (the resource may be edited, swapped or shared at any time,
    /// so it is compared rather than followed); its colour goes to the water material. Every
    /// backend cools.
    pub(super) fn sync_fluid(&mut self) {
        let (viscosity, solidify_rate) = self.fluid_model();
        let Some(sim) = self.sim.as_ref() else { return };
        let running = sim.params();
        if running.viscosity != viscosity || running.solidify_rate != solidify_rate {
            self.pending.params();
        }
        let (colour, emission) = self.fluid.as_ref().map_or((Color::from_rgba(0.0, 0.0, 0.0, 0.0), 0.0), |f| f.bind().look());
        self.surface.set_shader_parameters(&[("fluid_colour", colour.to_variant()), ("fluid_emission", (emission as f32).to_variant())]);
    }
}

#[godot_api(secondary)]
impl PipeWater {
    /// Makes the fluid a preset: `PipeWaterFluid.PRESET_WATER` (10⁻⁶ m²/s, 1000 kg/m³),
    /// `PRESET_MUD` (1 m²/s, 1600 kg/m³, brown) or `PRESET_LAVA` (100 m²/s, 2600 kg/m³, glowing,
    /// setting at 1 mm/s where still; the setting needs the CPU backend). Sets `fluid` to a new
    /// `PipeWaterFluid` (a shared one is not changed). Another number: an error, nothing changed.
    #[func]
    fn apply_fluid_preset(&mut self, preset: i64) {
        if preset_values(preset).is_none() {
            self.errors.reject(format!("apply_fluid_preset: preset = {preset} is not one of PipeWaterFluid.PRESET_WATER (0), PRESET_MUD (1), PRESET_LAVA (2)"));
            return;
        }
        let mut fluid = PipeWaterFluid::new_gd();
        fluid.bind_mut().apply_preset(preset);
        self.fluid = Some(fluid);
        self.pending.params();
    }

    /// Density of the fluid, kg/m³ (`fluid.density`, 1000 without a `fluid`): what
    /// `PipeWaterBody` hulls float in. A GDScript buoyancy probe can take it as its
    /// `fluid_density`.
    #[func]
    fn get_fluid_density(&self) -> f64 {
        self.fluid_density() as f64
    }

    /// Volume of fluid that has set into ground since the start or the last reset, m³ (the
    /// ledger's `solidified`: the ground rose by exactly this much). Waits for the device on a
    /// GPU backend, which counts it there.
    #[func]
    fn get_solidified_volume(&mut self) -> f64 {
        if !self.ensure_sim() {
            return 0.0;
        }
        let Some(sim) = self.sim.as_mut() else { return 0.0 };
        let qv = sim.quantum_volume();
        match sim.ledger() {
            Ok(ledger) => ledger.solidified as f64 * qv,
            Err(e) => {
                self.errors.reject(format!("get_solidified_volume: {e}"));
                0.0
            }
        }
    }
}
