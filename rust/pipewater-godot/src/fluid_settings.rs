//! `PipeWaterFluid`: what a `PipeWater` node simulates (`PipeWater.fluid`) as a Godot `Resource`:
//! its viscosity and cooling for the model, its density for floating bodies and its colour for
//! the water material, with presets for water, mud and lava. The model is the core's
//! ([`pipewater_core::pipes::film_drag`], [`pipewater_core::cooling`]); the ranges are the
//! core's ([`pipewater_core::params::PARAM_RANGES`]).

use crate::validate;
use godot::classes::{IResource, Resource};
use godot::global::godot_error;
use godot::prelude::*;
use pipewater_core::params::{ParamRange, SOLIDIFY_RATE_RANGE, VISCOSITY_RANGE, WATER_VISCOSITY};

/// The values of one preset: viscosity (m²/s), density (kg/m³), colour (with how much it covers
/// the water look, its alpha), emission (how much the colour glows) and solidify rate (m/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FluidPreset {
    pub viscosity: f64,
    pub density: f64,
    pub colour: [f32; 4],
    pub emission: f64,
    pub solidify_rate: f64,
}

/// Water: 10⁻⁶ m²/s, 1000 kg/m³, the material's own look (colour alpha 0), no cooling.
pub const WATER: FluidPreset = FluidPreset { viscosity: WATER_VISCOSITY as f64, density: 1000.0, colour: [0.0, 0.0, 0.0, 0.0], emission: 0.0, solidify_rate: 0.0 };
/// Mud: 1 m²/s (a thick slurry: metre-deep mud on a 5 % slope creeps at about 16 cm/s),
/// 1600 kg/m³, opaque brown, no cooling.
pub const MUD: FluidPreset = FluidPreset { viscosity: 1.0, density: 1600.0, colour: [0.33, 0.23, 0.14, 1.0], emission: 0.0, solidify_rate: 0.0 };
/// Lava: 100 m²/s (the low end of basaltic flows; a metre of it on a 20 % slope moves about
/// 7 mm/s, three metres 6 cm/s), 2600 kg/m³, glowing orange, setting at 1 mm/s where it is still
/// (a metre in 17 minutes).
pub const LAVA: FluidPreset = FluidPreset { viscosity: 100.0, density: 2600.0, colour: [1.0, 0.32, 0.05, 1.0], emission: 2.0, solidify_rate: 1.0e-3 };

/// Valid density, kg/m³ (what `Simulation::couple_bodies` accepts).
pub const DENSITY_RANGE: (f64, f64) = (1.0, 1.0e5);

/// The fluid of a `PipeWater` node (its `fluid` property): water by default, or mud or lava
/// (`apply_preset(PRESET_LAVA)`), or your own. `viscosity` slows every pipe as a laminar film's
/// drag (`Q · H²/(H² + 3·dt·ν)`, the virtual-pipes article's term; a film down an incline takes
/// Nusselt's thickness), `solidify_rate` turns still fluid into ground (lava that sets, on
/// every backend), `density` is what `PipeWaterBody` hulls
/// float in, and `colour`/`emission` reach the water material as its `fluid_colour` and
/// `fluid_emission` uniforms. Two nodes never see each other: see docs/MODEL.md, "Viscous
/// fluids".
#[derive(GodotClass)]
#[class(tool, base = Resource)]
pub struct PipeWaterFluid {
    /// Kinematic viscosity, m²/s, `0 ..= 10000`: 10⁻⁶ water, about 1 mud, 10² ..= 10⁴ lava.
    #[export(range = (VISCOSITY_RANGE.min as f64, 1000.0, 0.000001, or_greater, exp, suffix = "m²/s"))]
    #[var(set)]
    viscosity: f64,
    /// Depth of still fluid (slower than 1 cm/s) that turns into ground per second, m/s,
    /// `0 ..= 1`; 0 is off. Every backend cools.
    #[export(range = (SOLIDIFY_RATE_RANGE.min as f64, 0.01, 0.00001, or_greater, suffix = "m/s"))]
    #[var(set)]
    solidify_rate: f64,
    /// Density, kg/m³, `1 ..= 100000`: what `PipeWaterBody` hulls float in.
    #[export(range = (DENSITY_RANGE.0, 5000.0, 1.0, or_greater, suffix = "kg/m³"))]
    #[var(set)]
    density: f64,
    /// Colour of the fluid for the water material (`fluid_colour`); its alpha is how much it
    /// covers the material's water look (0: water as the material draws it).
    #[export]
    #[var(set)]
    colour: Color,
    /// How much the colour glows (`fluid_emission`), `0 ..= 16`: lava's light.
    #[export(range = (0.0, 16.0, 0.01))]
    #[var(set)]
    emission: f64,
    base: Base<Resource>,
}

#[godot_api]
impl IResource for PipeWaterFluid {
    fn init(base: Base<Resource>) -> Self {
        let mut fluid = PipeWaterFluid { viscosity: 0.0, solidify_rate: 0.0, density: 0.0, colour: Color::from_rgba(0.0, 0.0, 0.0, 0.0), emission: 0.0, base };
        fluid.take(&WATER);
        fluid
    }
}

#[godot_api]
impl PipeWaterFluid {
    /// Water ([`WATER`]).
    #[constant]
    const PRESET_WATER: i64 = 0;
    /// Mud ([`MUD`]).
    #[constant]
    const PRESET_MUD: i64 = 1;
    /// Lava ([`LAVA`]).
    #[constant]
    const PRESET_LAVA: i64 = 2;

    /// Sets every value from a preset (`PRESET_WATER`, `PRESET_MUD`, `PRESET_LAVA`); another
    /// number is an error and changes nothing.
    #[func]
    pub fn apply_preset(&mut self, preset: i64) {
        match preset_values(preset) {
            Some(values) => {
                self.take(&values);
                self.base_mut().emit_changed();
            }
            None => godot_error!("PipeWaterFluid.apply_preset: preset = {preset} is not one of PRESET_WATER (0), PRESET_MUD (1), PRESET_LAVA (2)"),
        }
    }

    /// Sets `viscosity` (m²/s, `0 ..= 10000`); out of range: an error, the value kept.
    #[func]
    fn set_viscosity(&mut self, value: f64) {
        self.store("viscosity", &VISCOSITY_RANGE, value, |s| &mut s.viscosity);
    }

    /// Sets `solidify_rate` (m/s, `0 ..= 1`); out of range: an error, the value kept.
    #[func]
    fn set_solidify_rate(&mut self, value: f64) {
        self.store("solidify_rate", &SOLIDIFY_RATE_RANGE, value, |s| &mut s.solidify_rate);
    }

    /// Sets `density` (kg/m³, `1 ..= 100000`); out of range: an error, the value kept.
    #[func]
    fn set_density(&mut self, value: f64) {
        match validate::float_in("density", value, DENSITY_RANGE.0, DENSITY_RANGE.1, " kg/m³") {
            Ok(_) => {
                self.density = value;
                self.base_mut().emit_changed();
            }
            Err(e) => godot_error!("PipeWaterFluid: {e}"),
        }
    }

    /// Sets `colour`.
    #[func]
    fn set_colour(&mut self, value: Color) {
        self.colour = value;
        self.base_mut().emit_changed();
    }

    /// Sets `emission` (`0 ..= 16`); out of range: an error, the value kept.
    #[func]
    fn set_emission(&mut self, value: f64) {
        match validate::float_in("emission", value, 0.0, 16.0, "") {
            Ok(_) => {
                self.emission = value;
                self.base_mut().emit_changed();
            }
            Err(e) => godot_error!("PipeWaterFluid: {e}"),
        }
    }
}

impl PipeWaterFluid {
    /// Viscosity and solidify rate as the core's parameters take them.
    pub fn model(&self) -> (f32, f32) {
        (self.viscosity as f32, self.solidify_rate as f32)
    }

    /// Density, kg/m³.
    pub fn density(&self) -> f32 {
        self.density as f32
    }

    /// Colour and emission for the material.
    pub fn look(&self) -> (Color, f64) {
        (self.colour, self.emission)
    }

    fn take(&mut self, p: &FluidPreset) {
        self.viscosity = p.viscosity;
        self.solidify_rate = p.solidify_rate;
        self.density = p.density;
        self.colour = Color::from_rgba(p.colour[0], p.colour[1], p.colour[2], p.colour[3]);
        self.emission = p.emission;
    }

    fn store(&mut self, name: &str, range: &ParamRange, value: f64, field: fn(&mut Self) -> &mut f64) {
        match validate::param(name, range, value) {
            Ok(_) => {
                *field(self) = value;
                self.base_mut().emit_changed();
            }
            Err(e) => godot_error!("PipeWaterFluid: {e}"),
        }
    }
}

/// The values of preset number `preset` (`PRESET_*`), if it is one.
pub fn preset_values(preset: i64) -> Option<FluidPreset> {
    match preset {
        0 => Some(WATER),
        1 => Some(MUD),
        2 => Some(LAVA),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every preset's model values pass the core's checks (so a preset never makes the node's
    /// parameters invalid), and an unknown preset number is none.
    #[test]
    fn every_preset_is_within_the_cores_ranges() {
        for (n, p) in [(0, WATER), (1, MUD), (2, LAVA)] {
            let params = pipewater_core::Params { viscosity: p.viscosity as f32, solidify_rate: p.solidify_rate as f32, ..Default::default() };
            println!("preset {n}: {p:?}: {:?}", params.validate());
            assert!(params.validate().is_ok());
            assert!((DENSITY_RANGE.0..=DENSITY_RANGE.1).contains(&p.density));
            assert_eq!(preset_values(n), Some(p));
        }
        assert_eq!(preset_values(3), None);
        assert_eq!(WATER.viscosity as f32, WATER_VISCOSITY, "water is the model's default");
    }
}
