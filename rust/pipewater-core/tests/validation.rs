//! Fronts, bores and shores against the shallow-water equations' exact answers (the cases of
//! `pipewater_core::validation`), with momentum advection on (the default) and off, figures
//! printed side by side. `cargo xtask validate` draws the same profiles into docs/validation/.

use pipewater_core::validation::{ritter_case, ritter_contour, stoker_case, DamBreak, Stoker, FRONT_DEPTH, GRAVITY, THIN_WATER};

/// Depth (m) of the contour that locates a flood front: 1 cm, a hundredth of what was released.
/// The exact front `2c₀t` is where the depth reaches zero, which no model (and no threshold)
/// reaches in finite time; each measured contour is compared with the exact position of the
/// same contour ([`ritter_contour`]).
const FRONT_CONTOUR: f64 = 0.01;
/// The 1 cm front must be within this fraction of the exact 1 cm contour (measured: 91.8 %,
/// 94.7 % and 97.2 % of it at dx = 0.1, 0.05 and 0.025 m).
const FRONT_TOLERANCE: f64 = 0.10;
/// Depth at the dam within this fraction of Ritter's 4/9·h₀ (measured: within 0.5 %).
const DAM_DEPTH_TOLERANCE: f64 = 0.05;
/// Total variation of the profile at most this multiple of the exact one: no cell-scale
/// oscillations (measured: 1.00×).
const TOTAL_VARIATION_RATIO: f64 = 2.0;
/// Stoker's bore within this fraction of its exact position (measured: 0.9 % ahead at dx = 0.05 m).
const SHOCK_TOLERANCE: f64 = 0.05;
/// Relative L1 error of Stoker's profile (measured: 0.6 %).
const STOKER_L1_TOLERANCE: f64 = 0.05;
/// Speed (m/s) that water thinner than [`THIN_WATER`] may report: √(g·h₀), the wave speed of the
/// released water. Velocities in thinner water fade (`pipes::inverse_depth`; measured under
/// 1 m/s); before they did, a cell holding 3 µm reported 24 m/s.
fn thin_water_speed_limit() -> f32 {
    GRAVITY.sqrt() as f32
}

fn report(case: &str, dx: f32, on: &DamBreak, off: &DamBreak, contour_exact: Option<f64>) {
    let row = |name: &str, r: &DamBreak| {
        let p = &r.profile;
        let (tv, tv_exact) = p.total_variation();
        format!(
            "{name:>14}: 1 cm front {:6.2} m{}, at the dam {:.3} m, deepest {:.4} m, TV {:7.3} (exact {:.3}), L1 {:5.2} %, thin-water speed {:.2} m/s, mass error {} quanta",
            p.front(FRONT_CONTOUR),
            contour_exact.map_or(String::new(), |e| format!(" ({:5.1} % of {e:.2})", 100.0 * p.front(FRONT_CONTOUR) / e)),
            p.at_dam(),
            p.max_depth(),
            tv,
            tv_exact,
            100.0 * p.relative_l1(-20.0, 30.0),
            r.thin_water_speed,
            r.mass_error
        )
    };
    println!("{case}, dx = {dx} m, t = {} s:\n{}\n{}", on.profile.t, row("advection on", on), row("advection off", off));
}

/// Ritter's dry-bed dam break (1 m released, 4 s) at three resolutions: with advection the 1 cm
/// front is within 10 % of the exact contour and converges as dx halves, the depth at the dam is
/// 4/9·h₀ within 5 %, no cell gets deeper than what was released, the profile does not
/// oscillate, thin water stays slow and mass is exact. Without advection the same figures are
/// printed for comparison (front at about 40 %, depth at the dam 25 % high, oscillations).
#[test]
fn ritter_dam_break_with_and_without_advection() {
    let h0 = 1.0;
    let mut front_errors = Vec::new();
    for dx in [0.1f32, 0.05, 0.025] {
        let (on, off) = (ritter_case(dx, true), ritter_case(dx, false));
        let t = on.profile.t;
        let contour = ritter_contour(h0, FRONT_CONTOUR, t);
        report("Ritter", dx, &on, &off, Some(contour));
        println!(
            "                1 mm front {:.2} m vs exact 1 mm contour {:.2} m; 2·√(g·h₀)·t = {:.2} m",
            on.profile.front(FRONT_DEPTH),
            ritter_contour(h0, FRONT_DEPTH, t),
            2.0 * (GRAVITY * h0).sqrt() * t
        );
        let p = &on.profile;
        let front = p.front(FRONT_CONTOUR);
        assert!((front - contour).abs() <= FRONT_TOLERANCE * contour, "dx {dx}: 1 cm front at {front:.2} m, exact {contour:.2} m");
        let dam = 4.0 / 9.0 * h0;
        assert!((p.at_dam() - dam).abs() <= DAM_DEPTH_TOLERANCE * dam, "dx {dx}: depth at the dam {:.4} m", p.at_dam());
        assert!(p.max_depth() <= h0 + 2.0 * pipewater_core::DEPTH_QUANTUM as f64, "dx {dx}: a new maximum of {:.6} m", p.max_depth());
        let (tv, tv_exact) = p.total_variation();
        assert!(tv <= TOTAL_VARIATION_RATIO * tv_exact, "dx {dx}: total variation {tv:.3} vs exact {tv_exact:.3}");
        assert!(on.thin_water_speed <= thin_water_speed_limit(), "dx {dx}: water under {THIN_WATER} m reported {:.2} m/s", on.thin_water_speed);
        assert_eq!(on.mass_error, 0, "dx {dx}: mass");
        assert_eq!(off.mass_error, 0, "dx {dx}: mass without advection");
        front_errors.push((front - contour).abs());
    }
    println!("1 cm front error as dx halves: {:.3} m, {:.3} m, {:.3} m", front_errors[0], front_errors[1], front_errors[2]);
    assert!(front_errors[1] < front_errors[0] && front_errors[2] < front_errors[1], "the front must converge as dx halves: {front_errors:?}");
}

/// Stoker's wet dam break (1 m onto 0.1 m, 4 s, dx = 0.05 m): with advection the bore stands
/// within 5 % of its exact position and the profile's L1 error is under 5 %; the figures
/// without advection are printed beside them.
#[test]
fn stoker_dam_break_with_and_without_advection() {
    let dx = 0.05;
    let stoker = Stoker::new(1.0, 0.1);
    let (on, off) = (stoker_case(dx, true), stoker_case(dx, false));
    report("Stoker", dx, &on, &off, None);
    let t = on.profile.t;
    let exact = stoker.shock_speed * t;
    let half_jump = 0.5 * (stoker.h2 + stoker.hr);
    for (name, r) in [("on", &on), ("off", &off)] {
        println!(
            "advection {name:>3}: bore at {:.2} m vs exact {exact:.2} m ({:+.1} %), plateau depth exact {:.3} m",
            r.profile.front(half_jump),
            100.0 * (r.profile.front(half_jump) - exact) / exact,
            stoker.h2
        );
    }
    let p = &on.profile;
    let bore = p.front(half_jump);
    assert!((bore - exact).abs() <= SHOCK_TOLERANCE * exact, "bore at {bore:.2} m, exact {exact:.2} m");
    let l1 = p.relative_l1(-20.0, 30.0);
    assert!(l1 <= STOKER_L1_TOLERANCE, "L1 error {:.2} %", 100.0 * l1);
    assert!(p.max_depth() <= 1.0 + 2.0 * pipewater_core::DEPTH_QUANTUM as f64, "a new maximum of {:.6} m", p.max_depth());
    let (tv, tv_exact) = p.total_variation();
    assert!(tv <= TOTAL_VARIATION_RATIO * tv_exact, "total variation {tv:.3} vs exact {tv_exact:.3}");
    assert_eq!(on.mass_error, 0);
    assert_eq!(off.mass_error, 0);
}
