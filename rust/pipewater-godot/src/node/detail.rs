//! Detail waves on the node: the Detail Waves properties into the simulation, the window
//! following the camera, `add_ripple`, and `detail_texture` with the shader parameters that place
//! it (see the class description).

use super::PipeWater;
use crate::mapping::global_to_local_point;
use godot::classes::Node3D;
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::DetailParams;

#[godot_api(secondary)]
impl PipeWater {
    /// Adds a ripple to the detail waves at the next frame: the surface at `global_position`
    /// raised by `strength` m (`-10 ..= 10`; negative presses it down, as something falling in
    /// does), falling through a ring trough to calm water at `radius` m (`> 0 ..= 2 × grid
    /// extent`; radii under 1.5 detail cells are drawn at 1.5 cells). The ripple holds no net
    /// volume and moves no water. Returns whether it reaches the detail window; false (with an
    /// error naming the argument and its range) when an argument is rejected, and false while
    /// `detail_waves` is off.
    #[func]
    fn add_ripple(&mut self, global_position: Vector3, strength: f64, radius: f64) -> bool {
        let Some((_, xz)) = self.local_point("add_ripple", global_position) else {
            return false;
        };
        let result = self.sim.as_mut().map(|s| s.add_ripple(xz[0], xz[1], strength as f32, radius as f32));
        self.errors.core_result("add_ripple", result).unwrap_or(false)
    }
}

impl PipeWater {
    /// A Detail Waves property setter's work: when `checked` accepted the value, `store` sets the
    /// property and the simulation takes the layer's settings before its next frame; a rejected
    /// value is logged and the property keeps its value.
    pub(super) fn set_detail_param<T>(&mut self, checked: Result<T, String>, store: impl FnOnce(&mut Self)) {
        if self.errors.accept(checked).is_some() {
            store(self);
            self.detail_changed = true;
        }
    }

    /// The layer's settings from the properties; `None` with `detail_waves` off.
    fn detail_params(&self) -> Option<DetailParams> {
        self.detail_waves.then(|| DetailParams {
            subdivision: self.detail_subdivision.clamp(1, i64::from(u32::MAX)) as u32,
            window: self.detail_window.clamp(1, i64::from(u32::MAX)) as u32,
            max_celerity: self.detail_max_celerity as f32,
            damping: self.detail_damping as f32,
            hull_strength: self.detail_hull_strength as f32,
            rain_rate: self.rain_rate as f32,
            rain_drop: self.rain_drop_height as f32,
        })
    }

    /// Gives the simulation the Detail Waves properties (after a build, or when one changed).
    pub(super) fn apply_detail(&mut self) {
        self.detail_changed = false;
        // The layer may free the RD texture the material shows.
        self.detail_output.release();
        let mut params = self.detail_params();
        if params.is_some() && self.sim.as_ref().is_some_and(|s| s.lattice().triangular) {
            // The core refuses the layer on the lattice (its square tiles would lie across the
            // hexagonal cells). A warning rather than an error: detail_waves is on by default,
            // and the water itself runs the same without it.
            godot_warn!("PipeWater: detail_waves is off with neighbour_mode = NEIGHBOURS_TRIANGULAR (the detail layer is written for the square grid, see docs/MODEL.md); set detail_waves = false to say so");
            params = None;
        }
        let result = self.sim.as_mut().map(|s| s.set_detail(params));
        self.errors.core_result("detail waves", result);
    }

    /// Centres the detail window on `detail_follow`, else on the water the viewport's camera
    /// looks at ([`camera_focus`]).
    pub(super) fn follow_detail_focus(&mut self) {
        if !self.detail_waves || !self.base().is_inside_tree() {
            return;
        }
        let focus = if self.detail_follow.is_empty() {
            let camera = self.base().get_viewport().and_then(|v| v.get_camera_3d());
            camera.map(|c| camera_focus(c.get_global_position(), -c.get_global_basis().col_c(), self.base().get_global_position().y))
        } else {
            self.base().get_node_or_null(&self.detail_follow).and_then(|n| n.try_cast::<Node3D>().ok()).map(|n| n.get_global_position())
        };
        let Some(focus) = focus else { return };
        let Some(local) = global_to_local_point(&self.global_transform(), focus) else { return };
        if let Some(sim) = self.sim.as_mut() {
            sim.set_detail_focus(local.x, local.z);
        }
    }

    /// Brings `detail_texture` up to date and tells the material where the window lies.
    pub(super) fn update_detail_output(&mut self) {
        self.detail_output.update(self.sim.as_mut(), self.update_textures);
        let window = self.sim.as_ref().and_then(|s| s.detail_window());
        let (on, period, offset, rect) = match window {
            Some(w) => {
                let (lo, hi) = w.local_rect();
                let [ex, ez] = w.grid.extent();
                (1.0f32, w.layout.window as f32 * w.cell_size(), Vector2::new(0.5 * ex, 0.5 * ez), Vector4::new(lo[0], lo[1], hi[0], hi[1]))
            }
            None => (0.0, 1.0, Vector2::ZERO, Vector4::ZERO),
        };
        self.surface.set_shader_parameters(&[
            ("detail_texture", self.detail_output.texture().to_variant()),
            ("detail_on", on.to_variant()),
            ("detail_period", period.to_variant()),
            ("detail_offset", offset.to_variant()),
            ("detail_rect", rect.to_variant()),
        ]);
    }
}

/// Where a camera at `position` looking along `forward` (global) wants the detail window: its
/// position moved along its horizontal view direction by its height above `water_y`, about where
/// the middle of the picture meets the water for a camera looking down at 45°, and just ahead of
/// a camera at the water's level. An orbit camera high above a lake then has its waves around
/// what it looks at, not under itself.
pub fn camera_focus(position: Vector3, forward: Vector3, water_y: f32) -> Vector3 {
    let horizontal = Vector3::new(forward.x, 0.0, forward.z);
    let height = (position.y - water_y).max(0.0);
    if horizontal.length_squared() < 1.0e-8 {
        return position;
    }
    position + horizontal.normalized() * height
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_camera_looking_down_centres_the_window_ahead_of_itself() {
        let high = camera_focus(Vector3::new(0.0, 50.0, 0.0), Vector3::new(0.0, -1.0, -1.0), 0.0);
        let level = camera_focus(Vector3::new(3.0, 1.0, 0.0), Vector3::new(1.0, 0.0, 0.0), 1.0);
        let straight_down = camera_focus(Vector3::new(3.0, 20.0, 4.0), Vector3::new(0.0, -1.0, 0.0), 0.0);
        println!("50 m up looking down at 45° along −Z: {high:?}; at the water's level: {level:?}; straight down: {straight_down:?}");
        assert!((high - Vector3::new(0.0, 50.0, -50.0)).length() < 1.0e-4);
        assert_eq!(level, Vector3::new(3.0, 1.0, 0.0));
        assert_eq!(straight_down, Vector3::new(3.0, 20.0, 4.0));
    }
}
