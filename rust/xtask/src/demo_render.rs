//! Pictures of a snapshot for the headless demo: shaded terrain with water, and a flow map.
//! One pixel per cell, row 0 = the grid's local −Z edge (north up), column 0 = local −X.

use pipewater_core::Snapshot;
use std::path::Path;

/// Depth (m) at which water reaches its deep colour.
const DEEP_DEPTH: f32 = 4.0;
/// Water thinner than this (m) is not drawn.
const MIN_DEPTH: f32 = 0.005;
/// Speed (m/s) shown at full brightness in the flow map.
const FULL_SPEED: f32 = 3.0;

/// An 8-bit RGB picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// Row-major RGB bytes.
    pub rgb: Vec<u8>,
}

impl Picture {
    fn new(width: u32, height: u32) -> Self {
        Picture { width, height, rgb: vec![0; width as usize * height as usize * 3] }
    }

    fn set(&mut self, x: u32, y: u32, colour: [f32; 3]) {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        for c in 0..3 {
            self.rgb[i + c] = (colour[c].clamp(0.0, 1.0) * 255.0).round() as u8;
        }
    }

    /// Reads an 8-bit RGB or RGBA PNG.
    #[cfg(test)]
    pub fn read_png(path: &Path) -> Result<Picture, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
        let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().map_err(|e| e.to_string())?;
        let mut buffer = vec![0; reader.output_buffer_size().ok_or("PNG too large")?];
        let info = reader.next_frame(&mut buffer).map_err(|e| e.to_string())?;
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => return Err(format!("{}: expected RGB or RGBA, found {other:?}", path.display())),
        };
        let rgb = buffer[..info.buffer_size()].chunks(channels).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Ok(Picture { width: info.width, height: info.height, rgb })
    }

    /// Darkest and brightest luma (0..255).
    #[cfg(test)]
    pub fn luma_range(&self) -> (u8, u8) {
        self.rgb.chunks(3).map(|p| ((p[0] as u32 * 299 + p[1] as u32 * 587 + p[2] as u32 * 114) / 1000) as u8).fold((255, 0), |(lo, hi), l| (lo.min(l), hi.max(l)))
    }

    /// Number of different colours.
    #[cfg(test)]
    pub fn distinct_colours(&self) -> usize {
        let mut colours: Vec<[u8; 3]> = self.rgb.chunks(3).map(|p| [p[0], p[1], p[2]]).collect();
        colours.sort_unstable();
        colours.dedup();
        colours.len()
    }

    /// Number of pixels for which `test` holds.
    #[cfg(test)]
    pub fn count(&self, test: impl Fn([u8; 3]) -> bool) -> usize {
        self.rgb.chunks(3).filter(|p| test([p[0], p[1], p[2]])).count()
    }
}

/// Writes an RGB PNG.
pub fn write_png(path: &Path, picture: &Picture) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), picture.width, picture.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&picture.rgb).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn lerp3(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t]
}

/// Lambert shading (0..1) of the terrain at cell `(x, y)`, lit from the north-west 45° up.
/// `field` gives a height per cell index.
fn hillshade(s: &Snapshot, field: impl Fn(usize) -> f32, x: u32, y: u32) -> f32 {
    let g = s.grid;
    let at = |x: i64, y: i64| field(g.index(x.clamp(0, g.width as i64 - 1) as u32, y.clamp(0, g.height as i64 - 1) as u32));
    let (x, y) = (x as i64, y as i64);
    let dzdx = (at(x + 1, y) - at(x - 1, y)) / (2.0 * g.cell_size);
    let dzdy = (at(x, y + 1) - at(x, y - 1)) / (2.0 * g.cell_size);
    let normal = [-dzdx, 1.0, -dzdy];
    let len = (normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]).sqrt();
    // Light from local −X, −Z (north-west, picture top-left), 45° above the horizon.
    let light = [-0.5f32, std::f32::consts::FRAC_1_SQRT_2, -0.5];
    ((normal[0] * light[0] + normal[1] * light[1] + normal[2] * light[2]) / len).max(0.0)
}

/// Top-down picture: hillshaded terrain coloured by elevation, water blended over it by depth
/// (light blue when shallow, dark blue when deep), and `marks` (continuous cell coordinates,
/// e.g. a boat's path) as white dots.
pub fn shaded_terrain(s: &Snapshot, marks: &[[f32; 2]]) -> Picture {
    let g = s.grid;
    let (lo, hi) = s.height.iter().fold((f32::MAX, f32::MIN), |(lo, hi), t| (lo.min(t[2]), hi.max(t[2])));
    let span = (hi - lo).max(1e-6);
    let mut picture = Picture::new(g.width, g.height);
    let (low_ground, mid_ground, high_ground) = ([0.33, 0.52, 0.25], [0.55, 0.50, 0.33], [0.78, 0.76, 0.72]);
    for y in 0..g.height {
        for x in 0..g.width {
            let t = s.height[g.index(x, y)];
            let elevation = (t[2] - lo) / span;
            let ground =
                if elevation < 0.5 { lerp3(low_ground, mid_ground, elevation * 2.0) } else { lerp3(mid_ground, high_ground, elevation * 2.0 - 1.0) };
            let light = 0.35 + 0.75 * hillshade(s, |i| s.height[i][2], x, y);
            let mut colour = ground.map(|c| c * light);
            let depth = t[1];
            if depth > MIN_DEPTH {
                let deep = (depth / DEEP_DEPTH).clamp(0.0, 1.0).sqrt();
                let water = lerp3([0.35, 0.68, 0.88], [0.03, 0.14, 0.38], deep);
                let surface_light = 0.85 + 0.3 * hillshade(s, |i| s.height[i][0], x, y);
                let alpha = 0.55 + 0.4 * ((depth - MIN_DEPTH) / 0.3).clamp(0.0, 1.0);
                colour = lerp3(colour, water.map(|c| c * surface_light), alpha);
            }
            picture.set(x, y, colour);
        }
    }
    for &[mx, my] in marks {
        let (cx, cy) = (mx.floor() as i64, my.floor() as i64);
        for (dx, dy) in [(0, 0), (1, 0), (0, 1), (-1, 0), (0, -1)] {
            let (px, py) = (cx + dx, cy + dy);
            if px >= 0 && py >= 0 && px < g.width as i64 && py < g.height as i64 {
                picture.set(px as u32, py as u32, [1.0, 0.95, 0.8]);
            }
        }
    }
    picture
}

/// RGB of a hue (radians, any) at full saturation and the given value.
fn hue_colour(hue: f32, value: f32) -> [f32; 3] {
    let h = hue.rem_euclid(std::f32::consts::TAU) / std::f32::consts::TAU * 6.0;
    let f = h - h.floor();
    let (q, t) = (1.0 - f, f);
    let rgb = match h.floor() as i32 {
        0 => [1.0, t, 0.0],
        1 => [q, 1.0, 0.0],
        2 => [0.0, 1.0, t],
        3 => [0.0, q, 1.0],
        4 => [t, 0.0, 1.0],
        _ => [1.0, 0.0, q],
    };
    rgb.map(|c| c * value)
}

/// Flow map: hue = direction of the flow (red along +X, and round the colour wheel
/// counter-clockwise as seen from above), brightness = speed (full at 3 m/s, square-root scale so
/// slow currents show). Dry ground is a dim grey hillshade.
pub fn flow_map(s: &Snapshot) -> Picture {
    let g = s.grid;
    let mut picture = Picture::new(g.width, g.height);
    for y in 0..g.height {
        for x in 0..g.width {
            let i = g.index(x, y);
            let [vx, vz, speed, _] = s.flow[i];
            let shade = 0.08 + 0.17 * hillshade(s, |i| s.height[i][2], x, y);
            let colour = if s.height[i][1] > MIN_DEPTH && speed.is_finite() {
                // Seen from above with north (−Z) up, +X is east: angle measured from +X towards −Z.
                let value = (speed / FULL_SPEED).clamp(0.0, 1.0).sqrt();
                let water = hue_colour((-vz).atan2(vx), value);
                [shade + water[0] * (1.0 - shade), shade + water[1] * (1.0 - shade), shade + water[2] * (1.0 - shade)]
            } else {
                [shade; 3]
            };
            picture.set(x, y, colour);
        }
    }
    picture
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewater_core::{Counters, Grid, State};

    #[test]
    fn flow_map_hue_follows_direction_and_brightness_follows_speed() {
        let grid = Grid::new(4, 2, 1.0).expect("a 4×2 grid is valid");
        let mut state = State::new(grid);
        state.depth.fill(pipewater_core::quanta::depth_to_quanta(1.0));
        let mut snapshot = state.snapshot(0, Counters::default());
        // East fast, north fast, east slow, still.
        snapshot.flow[..4].copy_from_slice(&[[3.0, 0.0, 3.0, 0.0], [0.0, -3.0, 3.0, 0.0], [0.3, 0.0, 0.3, 0.0], [0.0, 0.0, 0.0, 0.0]]);
        let p = flow_map(&snapshot);
        let px = |x: usize| [p.rgb[x * 3], p.rgb[x * 3 + 1], p.rgb[x * 3 + 2]];
        println!("east fast {:?}, north fast {:?}, east slow {:?}, still {:?}", px(0), px(1), px(2), px(3));
        assert!(px(0)[0] > 200 && px(0)[1] < 80 && px(0)[2] < 80, "flow along +X is red");
        assert!(px(1)[1] > 200 && px(1)[1] > px(1)[0] && px(1)[2] < 80, "flow along −Z (north) is a quarter turn on: yellow-green");
        assert!(px(2)[0] < px(0)[0] && px(2)[0] > px(3)[0], "slower is darker, still is darkest");
    }
}
