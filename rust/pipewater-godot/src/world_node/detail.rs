//! Detail waves on `PipeWaterWorld`: the Detail Waves properties into the world
//! ([`pipewater_core::world_water::WorldWater::set_detail`]), the detail window following
//! `detail_follow` (else the water the camera looks at, else `focus_node`) within the window the
//! node draws, `add_ripple`, and `detail_texture` with the shader parameters that place it on the
//! window's mesh (`PipeWater`'s, in `node/detail.rs`, for a grid; here for a mesh that moves
//! with the window).

use super::{window_start, PipeWaterWorld, MIN_WINDOW_CELLS};
use crate::mapping::global_to_local_point;
use crate::node::detail::camera_focus;
use crate::texels::{pack_half_texels, BYTES_PER_HALF_TEXEL};
use godot::classes::image::Format;
use godot::classes::{Image, ImageTexture, Node3D, ShaderMaterial};
use godot::prelude::*;
use pipewater_core::world_water::MAX_WINDOW_SIDE;
use pipewater_core::DetailParams;

/// What `detail_texture` shows and the layer's last refusal.
#[derive(Default)]
pub struct WorldDetailOutput {
    image: Option<Gd<Image>>,
    bytes: PackedByteArray,
    /// The layer's frame and window side the texture shows (`Some(None)`: the calm texel;
    /// `None`: to be shown afresh).
    shown: Option<Option<(u64, u32)>>,
    /// Settings last refused, so that the refusal is reported once.
    refused: Option<Option<DetailParams>>,
    /// The texels the texture holds: on the device the newest that came back, which a drawn
    /// frame before the next readback arrives finds again and does not copy again.
    texels: Option<std::sync::Arc<pipewater_core::detail::DetailTexels>>,
}

#[godot_api(secondary)]
impl PipeWaterWorld {
    /// Adds a ripple to the detail waves at the next physics frame, as `PipeWater.add_ripple`:
    /// the surface at `global_position` raised by `strength` m (`-10 ..= 10`), falling through a
    /// ring trough to calm water at `radius` m (`> 0 ..= 2 × the world's larger extent`). It
    /// holds no net volume and moves no water. Returns whether it reaches the detail window;
    /// false (with an error naming the argument and its range) when an argument is rejected, and
    /// false while `detail_waves` is off.
    #[func]
    fn add_ripple(&mut self, global_position: Vector3, strength: f64, radius: f64) -> bool {
        let Some(local) = self.local("add_ripple", global_position) else { return false };
        // The current settings first: a ripple asked for in the frame the layer was turned on
        // reaches it.
        self.sync_detail();
        let result = self.water.as_mut().map(|w| w.add_ripple(local.x, local.z, strength as f32, radius as f32));
        self.core("add_ripple", result).unwrap_or(false)
    }

    /// The detail waves' texels as an `Image` (what `detail_texture` shows), for scripts that
    /// read them on the CPU; null before the first frame.
    #[func]
    fn get_detail_image(&self) -> Option<Gd<Image>> {
        self.detail_output.image.clone()
    }

    /// The detail window's rectangle in the node's local XZ (position: its −X −Z corner, size:
    /// its side, m); empty while `detail_waves` is off or before the first frame.
    #[func]
    fn get_detail_rect(&self) -> Rect2 {
        let Some(window) = self.water.as_ref().and_then(|w| w.detail_window()) else { return Rect2::default() };
        let (lo, hi) = window.local_rect();
        Rect2::new(Vector2::new(lo[0], lo[1]), Vector2::new(hi[0] - lo[0], hi[1] - lo[1]))
    }
}

impl PipeWaterWorld {
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

    /// Before a frame: hands the world the Detail Waves properties when they changed (a refusal
    /// reported once, the layer kept as it was), and places the detail window: centred on
    /// `detail_follow`, else on the water the camera looks at, else on `focus_node`, and kept
    /// within the window the node draws.
    pub(super) fn sync_detail(&mut self) {
        let params = self.detail_params();
        let Some(water) = self.water.as_mut() else { return };
        if water.detail_params() != params.as_ref() && self.detail_output.refused != Some(params) {
            match water.set_detail(params) {
                Ok(()) => {
                    self.detail_output.refused = None;
                    // A new layer counts its frames from 0 again.
                    self.detail_output.shown = None;
                }
                Err(e) => {
                    self.errors.reject(format!("detail waves: {}", crate::errors::core_message(&e)));
                    self.detail_output.refused = Some(params);
                }
            }
        }
        if water.detail_params().is_none() {
            return;
        }
        let [w, h] = water.size();
        let side = (self.window_cells.clamp(MIN_WINDOW_CELLS, MAX_WINDOW_SIDE as i32)) as u32;
        let size = [side.min(w), side.min(h)];
        let origin = window_start(self.focus_cells(), size, [w, h]);
        let focus = self.detail_focus();
        let Some(water) = self.water.as_mut() else { return };
        let bounds = water.set_detail_bounds(Some([origin[0], origin[1], size[0], size[1]]));
        self.core("detail waves", Some(bounds));
        if let Some(local) = focus {
            if let Some(water) = self.water.as_mut() {
                water.set_detail_focus(local.x, local.z);
            }
        }
    }

    /// Where the detail window centres (the node's local space): `detail_follow`, else the
    /// water the viewport's camera looks at, else `focus_node`, else the node's centre.
    fn detail_focus(&self) -> Option<Vector3> {
        if !self.base().is_inside_tree() {
            return None;
        }
        let node = |path: &NodePath| if path.is_empty() { None } else { self.base().get_node_or_null(path).and_then(|n| n.try_cast::<Node3D>().ok()) };
        let focus = match node(&self.detail_follow) {
            Some(n) => Some(n.get_global_position()),
            None => {
                let camera = self.base().get_viewport().and_then(|v| v.get_camera_3d());
                match camera {
                    Some(c) => Some(camera_focus(c.get_global_position(), -c.get_global_basis().col_c(), self.base().get_global_position().y)),
                    None => node(&self.focus_node).map(|n| n.get_global_position()),
                }
            }
        };
        global_to_local_point(&self.base().get_global_transform(), focus.unwrap_or_else(|| self.base().get_global_position()))
    }

    /// Copies the newest detail texels into `detail_texture` (one calm texel with the layer
    /// off), and tells the window's material where the detail window lies.
    pub(super) fn show_detail(&mut self) {
        self.show_detail_texels();
        let (Some(water), Some((origin, size))) = (self.water.as_ref(), self.window) else { return };
        let dx = water.cell_size() as f64;
        // The mesh is centred on the drawn window: its local XZ plus the window's centre, in
        // metres from the world's corner, is where a point lies in the world.
        let centre = [(origin[0] as f64 + size[0] as f64 / 2.0) * dx, (origin[1] as f64 + size[1] as f64 / 2.0) * dx];
        let (on, period, offset, rect) = match water.detail_window() {
            Some(window) => {
                let (lo, hi) = window.rect_from_corner();
                let period = window.side();
                // Reduced by the period, so that a far corner of a large world keeps its
                // precision in the shader's f32.
                let offset = Vector2::new(centre[0].rem_euclid(period) as f32, centre[1].rem_euclid(period) as f32);
                let rect = Vector4::new((lo[0] - centre[0]) as f32, (lo[1] - centre[1]) as f32, (hi[0] - centre[0]) as f32, (hi[1] - centre[1]) as f32);
                (1.0f32, period as f32, offset, rect)
            }
            None => (0.0, 1.0, Vector2::ZERO, Vector4::ZERO),
        };
        // The far water's mesh copies the node's material (world_far_water.rs): its own local
        // space is not the window's, and the fine window is cut out of it, so it draws no
        // detail waves.
        for level in &self.far {
            if let Some(mut far) = level.mesh().filter(|m| m.is_instance_valid()).and_then(|m| m.get_material_override()).and_then(|m| m.try_cast::<ShaderMaterial>().ok()) {
                far.set_shader_parameter("detail_on", &0.0f32.to_variant());
            }
        }
        let Some(instance) = self.mesh_instance.as_ref().filter(|m| m.is_instance_valid()) else { return };
        let Some(mut shader) = instance.get_material_override().and_then(|m| m.try_cast::<ShaderMaterial>().ok()) else { return };
        shader.set_shader_parameter("detail_texture", &self.detail_texture.to_variant());
        shader.set_shader_parameter("detail_on", &on.to_variant());
        shader.set_shader_parameter("detail_period", &period.to_variant());
        shader.set_shader_parameter("detail_offset", &offset.to_variant());
        shader.set_shader_parameter("detail_rect", &rect.to_variant());
    }

    /// [`PipeWaterWorld::show_detail`] after waiting for the detail layer's reads on their way
    /// (`refresh_window`, which waits for the device by contract): the texture and
    /// `get_height(p, true)` then show the last frame, as far as they were asked for before it
    /// (the texels by the last `show_detail`, the heights by the last queries).
    pub(super) fn show_detail_now(&mut self) {
        let waited = self.water.as_mut().map(|w| w.wait_detail_reads());
        self.core("refresh_window", waited);
        self.detail_output.shown = None;
        self.show_detail();
    }

    /// `detail_texture` from the world's newest detail texels (half floats, as `PipeWater`'s).
    fn show_detail_texels(&mut self) {
        let showing = self.water.as_ref().and_then(|w| w.detail()).map(|d| (d.frames(), d.params().window));
        // The texels change only with a frame of the layer: a drawn frame without a physics
        // frame before it copies nothing.
        if self.detail_texture.is_some() && Some(showing) == self.detail_output.shown {
            return;
        }
        self.detail_output.shown = Some(showing);
        // On the device the texels are the newest that came back (a frame or two old, nothing
        // waited for); asking for them here asks for them with the next frame.
        let texels = self.water.as_mut().and_then(|w| w.detail_texels());
        let same = match (&texels, &self.detail_output.texels) {
            (Some(new), Some(old)) => std::sync::Arc::ptr_eq(new, old),
            _ => false,
        };
        if same && self.detail_texture.is_some() {
            return;
        }
        self.detail_output.texels = texels.clone();
        let (side, texels) = match (&texels, self.water.as_ref().and_then(|w| w.detail_params())) {
            (Some(t), Some(p)) if t.len() == p.window as usize * p.window as usize => (p.window as i32, t.as_slice()),
            _ => (1, &[[0.0f32; 4]][..]),
        };
        let out = &mut self.detail_output;
        let len = texels.len() * BYTES_PER_HALF_TEXEL;
        if out.bytes.len() != len {
            out.bytes.resize(len);
        }
        pack_half_texels(texels, out.bytes.as_mut_slice());
        let same = out.image.as_ref().is_some_and(|i| i.get_width() == side);
        match out.image.as_mut() {
            Some(image) => image.set_data(side, side, false, Format::RGBAH, &out.bytes),
            None => out.image = Image::create_from_data(side, side, false, Format::RGBAH, &out.bytes),
        }
        let Some(image) = out.image.clone() else { return };
        match self.detail_texture.as_mut() {
            Some(texture) if same => texture.update(&image),
            Some(texture) => texture.set_image(&image),
            None => self.detail_texture = ImageTexture::create_from_image(&image),
        }
    }
}
