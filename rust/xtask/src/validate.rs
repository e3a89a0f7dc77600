//! `cargo xtask validate`: runs the cases of `pipewater_core::validation`, prints their figures
//! and draws the depth profiles against the exact solutions into `docs/validation/`.

use crate::demo_render::{write_png, Picture};
use crate::util::root;
use pipewater_core::validation::{ritter_case, stoker_case, DamBreak, Profile, Stoker};

const WIDTH: u32 = 960;
const HEIGHT: u32 = 360;
/// Channel shown, m from the dam, and depths shown, m: the whole channel.
const WHOLE: View = View { x: (-20.0, 30.0), y: (0.0, 1.1), grid: (5.0, 0.25) };
/// The tip of Ritter's flood.
const TIP: View = View { x: (12.0, 26.0), y: (0.0, 0.12), grid: (1.0, 0.02) };

#[derive(Clone, Copy)]
struct View {
    x: (f64, f64),
    y: (f64, f64),
    /// Spacing of the grey lines along x (m) and y (m).
    grid: (f64, f64),
}

const EXACT: [u8; 3] = [20, 20, 20];
const WITHOUT_ADVECTION: [u8; 3] = [214, 66, 50];
/// Coarse to fine: light to dark blue.
const WITH_ADVECTION: [[u8; 3]; 3] = [[150, 190, 240], [70, 130, 220], [20, 60, 160]];

pub fn run(_args: &[String]) -> Result<(), String> {
    let out = root().join("docs/validation");
    std::fs::create_dir_all(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;

    let runs: Vec<DamBreak> = [0.1f32, 0.05, 0.025]
        .into_iter()
        .map(|dx| {
            let on = ritter_case(dx, true);
            summary("Ritter", dx, "on", &on);
            on
        })
        .collect();
    let off = ritter_case(0.05, false);
    summary("Ritter", 0.05, "off", &off);
    for (view, name) in [(WHOLE, "ritter.png"), (TIP, "ritter_tip.png")] {
        let mut plot = Plot::new(view);
        for (k, on) in runs.iter().enumerate() {
            plot.profile(&on.profile.x, &on.profile.depth, WITH_ADVECTION[k]);
        }
        plot.profile(&off.profile.x, &off.profile.depth, WITHOUT_ADVECTION);
        plot.exact(&runs[2].profile);
        write_png(&out.join(name), &plot.picture)?;
    }

    let mut plot = Plot::new(WHOLE);
    let stoker = Stoker::new(1.0, 0.1);
    let on = stoker_case(0.05, true);
    let off = stoker_case(0.05, false);
    summary("Stoker", 0.05, "on", &on);
    summary("Stoker", 0.05, "off", &off);
    println!("Stoker: exact bore at {:.2} m, plateau {:.3} m", stoker.shock_speed * on.profile.t, stoker.h2);
    plot.profile(&off.profile.x, &off.profile.depth, WITHOUT_ADVECTION);
    plot.profile(&on.profile.x, &on.profile.depth, WITH_ADVECTION[2]);
    plot.exact(&on.profile);
    write_png(&out.join("stoker.png"), &plot.picture)?;
    println!("wrote {}/ritter.png, ritter_tip.png and stoker.png", out.display());
    Ok(())
}

fn summary(case: &str, dx: f32, advection: &str, r: &DamBreak) {
    let p = &r.profile;
    let (tv, tv_exact) = p.total_variation();
    println!(
        "{case} dx {dx} m, advection {advection}: 1 cm front {:.2} m, at the dam {:.3} m, deepest {:.4} m, TV {tv:.3} (exact {tv_exact:.3}), L1 {:.2} %",
        p.front(0.01),
        p.at_dam(),
        p.max_depth(),
        100.0 * p.relative_l1(WHOLE.x.0, WHOLE.x.1)
    );
}

/// Depth against position on a white ground, with grey lines at the view's spacing (darker at
/// the dam and at zero depth).
struct Plot {
    picture: Picture,
    view: View,
}

impl Plot {
    fn new(view: View) -> Plot {
        let picture = Picture { width: WIDTH, height: HEIGHT, rgb: vec![255; (WIDTH * HEIGHT * 3) as usize] };
        let mut plot = Plot { picture, view };
        let shade = |v: f64| if v.abs() < 1e-9 { [120, 120, 120] } else { [225, 225, 225] };
        let mut x = (view.x.0 / view.grid.0).ceil() * view.grid.0;
        while x <= view.x.1 {
            let px = plot.to_px(x, 0.0).0;
            for py in 0..HEIGHT as i32 {
                put(&mut plot.picture, px, py, shade(x));
            }
            x += view.grid.0;
        }
        let mut y = view.y.0;
        while y <= view.y.1 {
            let py = plot.to_px(0.0, y).1;
            for px in 0..WIDTH as i32 {
                put(&mut plot.picture, px, py, shade(y));
            }
            y += view.grid.1;
        }
        plot
    }

    fn to_px(&self, x: f64, y: f64) -> (i32, i32) {
        let (vx, vy) = (self.view.x, self.view.y);
        let fx = (x - vx.0) / (vx.1 - vx.0);
        let fy = ((y - vy.0) / (vy.1 - vy.0)).clamp(-0.05, 1.05);
        ((fx * (WIDTH - 1) as f64).round() as i32, ((1.0 - fy) * (HEIGHT - 1) as f64).round() as i32)
    }

    fn profile(&mut self, x: &[f64], depth: &[f64], colour: [u8; 3]) {
        self.polyline(x.iter().copied().zip(depth.iter().copied()), colour, 1);
    }

    /// The exact solution, sampled finely (its corners fall between cells).
    fn exact(&mut self, p: &Profile) {
        let samples = 4 * WIDTH as usize;
        let points: Vec<(f64, f64)> = (0..=samples)
            .map(|k| {
                let x = self.view.x.0 + (self.view.x.1 - self.view.x.0) * k as f64 / samples as f64;
                let i = ((x - p.x[0]) / p.dx).round().clamp(0.0, (p.x.len() - 1) as f64) as usize;
                (x, p.exact[i])
            })
            .collect();
        self.polyline(points.into_iter(), EXACT, 0);
    }

    fn polyline(&mut self, points: impl Iterator<Item = (f64, f64)>, colour: [u8; 3], thickness: i32) {
        let mut last: Option<(i32, i32)> = None;
        for (x, y) in points {
            let p = self.to_px(x, y);
            if let Some(a) = last {
                let steps = (p.0 - a.0).abs().max((p.1 - a.1).abs()).max(1);
                for s in 0..=steps {
                    let px = a.0 + (p.0 - a.0) * s / steps;
                    let py = a.1 + (p.1 - a.1) * s / steps;
                    for dy in -thickness..=thickness {
                        for dx in -thickness..=thickness {
                            put(&mut self.picture, px + dx, py + dy, colour);
                        }
                    }
                }
            }
            last = Some(p);
        }
    }
}

fn put(picture: &mut Picture, x: i32, y: i32, colour: [u8; 3]) {
    if x < 0 || y < 0 || x >= picture.width as i32 || y >= picture.height as i32 {
        return;
    }
    let i = (y as usize * picture.width as usize + x as usize) * 3;
    picture.rgb[i..i + 3].copy_from_slice(&colour);
}
