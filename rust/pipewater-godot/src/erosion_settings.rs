//! `PipeWaterErosion`: the erosion settings of a `PipeWater` node as a Godot `Resource`
//! (`PipeWater.erosion`), so that the inspector shows them as one group, scenes can share them,
//! and the node's own file stays a table of contents. The model is the core's
//! [`pipewater_core::erosion`]; the ranges are the core's ([`pipewater_core::params::PARAM_RANGES`]).

use crate::validate;
use godot::classes::{IResource, Resource};
use godot::prelude::*;
use pipewater_core::params::{
    ParamRange, EROSION_CAPACITY_RANGE, EROSION_DEPOSIT_RATE_RANGE, EROSION_DISSOLVE_RATE_RANGE, EROSION_MIN_TILT_RANGE, EROSION_TALUS_ANGLE_RANGE, EROSION_THERMAL_RATE_RANGE,
};
use pipewater_core::ErosionParams;

/// Erosion and deposition for a `PipeWater` node (its `erosion` property): the water dissolves
/// the ground where it runs fast down a slope, carries it as sediment and lets it settle where it
/// slows (Mei, Decaudin and Hu 2007); ground steeper than `talus_angle` slides. Every grain is
/// counted (`PipeWater.get_erosion_totals()`). Terrain changes reach the textures, queries and
/// bodies like digging. Runs on the CPU backend: with `BACKEND_AUTO` the node runs on the CPU
/// while erosion is on (with a warning); `BACKEND_GPU` and `BACKEND_RENDERING_DEVICE` refuse it
/// with an error. See docs/MODEL.md, "Erosion".
#[derive(GodotClass)]
#[class(tool, base = Resource)]
pub struct PipeWaterErosion {
    /// Whether erosion runs. A node without an `erosion` resource has none.
    #[export]
    #[var(set)]
    enabled: bool,
    /// `Kc`, s, `0 ..= 10`: water moving at `|v|` m/s down ground of tilt `α` can carry
    /// `Kc · max(sin α, min_tilt) · |v|` m of sediment.
    #[export(range = (EROSION_CAPACITY_RANGE.min as f64, 1.0, 0.001, or_greater, suffix = "s"))]
    #[var(set)]
    capacity: f64,
    /// `Ks`, per second, `0 ..= 1000`: where water carries less than it can, the ground dissolves
    /// at `Ks · (capacity − sediment)` m/s.
    #[export(range = (EROSION_DISSOLVE_RATE_RANGE.min as f64, 10.0, 0.01, or_greater, suffix = "/s"))]
    #[var(set)]
    dissolve_rate: f64,
    /// `Kd`, per second, `0 ..= 1000`: where water carries more than it can, sediment settles at
    /// `Kd · (sediment − capacity)` m/s.
    #[export(range = (EROSION_DEPOSIT_RATE_RANGE.min as f64, 10.0, 0.01, or_greater, suffix = "/s"))]
    #[var(set)]
    deposit_rate: f64,
    /// Smallest tilt (a sine, `0 ..= 1`) the capacity uses, so that water over flat ground still
    /// digs a little.
    #[export(range = (EROSION_MIN_TILT_RANGE.min as f64, EROSION_MIN_TILT_RANGE.max as f64, 0.001))]
    #[var(set)]
    min_tilt: f64,
    /// Steepest stable slope between neighbouring cells, degrees, `1 ..= 89`.
    #[export(range = (EROSION_TALUS_ANGLE_RANGE.min as f64, EROSION_TALUS_ANGLE_RANGE.max as f64, 0.1, suffix = "°"))]
    #[var(set)]
    talus_angle: f64,
    /// How fast steeper ground slides, per second, `0 ..= 1000`; 0 turns the sliding off (cliffs
    /// stay).
    #[export(range = (EROSION_THERMAL_RATE_RANGE.min as f64, 10.0, 0.01, or_greater, suffix = "/s"))]
    #[var(set)]
    thermal_rate: f64,
    base: Base<Resource>,
}

#[godot_api]
impl IResource for PipeWaterErosion {
    fn init(base: Base<Resource>) -> Self {
        let d = ErosionParams::default();
        PipeWaterErosion {
            enabled: true,
            capacity: d.capacity as f64,
            dissolve_rate: d.dissolve_rate as f64,
            deposit_rate: d.deposit_rate as f64,
            min_tilt: d.min_tilt as f64,
            talus_angle: d.talus_angle as f64,
            thermal_rate: d.thermal_rate as f64,
            base,
        }
    }
}

#[godot_api]
impl PipeWaterErosion {
    /// Sets `enabled`.
    #[func]
    fn set_enabled(&mut self, value: bool) {
        self.enabled = value;
        self.base_mut().emit_changed();
    }

    /// Sets `capacity` (s, `0 ..= 10`); out of range: an error, the value kept.
    #[func]
    fn set_capacity(&mut self, value: f64) {
        self.store("capacity", &EROSION_CAPACITY_RANGE, value, |s| &mut s.capacity);
    }

    /// Sets `dissolve_rate` (per second, `0 ..= 1000`); out of range: an error, the value kept.
    #[func]
    fn set_dissolve_rate(&mut self, value: f64) {
        self.store("dissolve_rate", &EROSION_DISSOLVE_RATE_RANGE, value, |s| &mut s.dissolve_rate);
    }

    /// Sets `deposit_rate` (per second, `0 ..= 1000`); out of range: an error, the value kept.
    #[func]
    fn set_deposit_rate(&mut self, value: f64) {
        self.store("deposit_rate", &EROSION_DEPOSIT_RATE_RANGE, value, |s| &mut s.deposit_rate);
    }

    /// Sets `min_tilt` (a sine, `0 ..= 1`); out of range: an error, the value kept.
    #[func]
    fn set_min_tilt(&mut self, value: f64) {
        self.store("min_tilt", &EROSION_MIN_TILT_RANGE, value, |s| &mut s.min_tilt);
    }

    /// Sets `talus_angle` (degrees, `1 ..= 89`); out of range: an error, the value kept.
    #[func]
    fn set_talus_angle(&mut self, value: f64) {
        self.store("talus_angle", &EROSION_TALUS_ANGLE_RANGE, value, |s| &mut s.talus_angle);
    }

    /// Sets `thermal_rate` (per second, `0 ..= 1000`); out of range: an error, the value kept.
    #[func]
    fn set_thermal_rate(&mut self, value: f64) {
        self.store("thermal_rate", &EROSION_THERMAL_RATE_RANGE, value, |s| &mut s.thermal_rate);
    }
}

impl PipeWaterErosion {
    /// Checks `value` against the core's `range`; stores it and tells the node (`changed`), or
    /// reports an error naming the property and the range and keeps the old value.
    fn store(&mut self, property: &str, range: &ParamRange, value: f64, field: fn(&mut Self) -> &mut f64) {
        match validate::param(&format!("PipeWaterErosion.{property}"), range, value) {
            Ok(_) => {
                *field(self) = value;
                self.base_mut().emit_changed();
            }
            Err(why) => godot_error!("{why}"),
        }
    }

    /// The core's parameters for these settings.
    pub fn params(&self) -> ErosionParams {
        ErosionParams {
            enabled: self.enabled,
            capacity: self.capacity as f32,
            dissolve_rate: self.dissolve_rate as f32,
            deposit_rate: self.deposit_rate as f32,
            min_tilt: self.min_tilt as f32,
            talus_angle: self.talus_angle as f32,
            thermal_rate: self.thermal_rate as f32,
        }
    }
}
