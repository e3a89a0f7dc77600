//! The detail wave layer ([`pipewater_core::detail`]) against what it promises: rings grow at the
//! stated celerity, damping at the stated rate, shores keep dry land dry, currents carry ripples,
//! the window moves without moving the waves, and the water itself never notices the layer.

mod common;

use common::{grid, physical_params};
use pipewater_core::detail::{DetailParams, DetailWindow};
use pipewater_core::{scenarios, Simulation, State};

/// Frame length of the tests, s (a 60 Hz game).
const FRAME: f32 = 1.0 / 60.0;

/// Still water `depth` m deep over flat ground, with the detail layer of `params`.
fn pool(cells: u32, cell_size: f32, depth: f32, params: DetailParams) -> Simulation {
    let state = scenarios::flat_pool(grid(cells, cells, cell_size), depth);
    let mut sim = Simulation::cpu(state, physical_params()).expect("simulation");
    sim.set_detail(Some(params)).expect("detail on");
    sim
}

fn run(sim: &mut Simulation, seconds: f32) {
    let frames = (seconds / FRAME).round() as u32;
    for _ in 0..frames {
        sim.advance(FRAME).expect("advance");
    }
}

/// Every window cell as (local x, local z, h, v).
fn cells(sim: &mut Simulation) -> Vec<(f32, f32, f32, f32)> {
    let window = sim.detail_window().expect("layer on");
    let fields = sim.read_detail().expect("fields");
    fields
        .iter()
        .enumerate()
        .map(|(i, &[h, v])| {
            let [x, z] = window.cell_centre(window.world_cell(i));
            (x, z, h, v)
        })
        .collect()
}

/// The radius (m) of the ring's crest around `(cx, cz)`: the heights averaged over rings of
/// half a cell, the largest mean beyond `beyond` m, refined by a parabola through its bins.
fn crest_radius(sim: &mut Simulation, cx: f32, cz: f32, beyond: f32) -> f32 {
    let window = sim.detail_window().unwrap();
    let bin = 0.5 * window.cell_size();
    let mut sums: Vec<(f64, u32)> = Vec::new();
    for (x, z, h, _) in cells(sim) {
        let k = (((x - cx).hypot(z - cz)) / bin) as usize;
        if sums.len() <= k {
            sums.resize(k + 1, (0.0, 0));
        }
        sums[k].0 += h as f64;
        sums[k].1 += 1;
    }
    let mean: Vec<f64> = sums.iter().map(|&(s, n)| if n > 0 { s / n as f64 } else { 0.0 }).collect();
    let first = (beyond / bin) as usize;
    let k = (first..mean.len() - 1).max_by(|&a, &b| mean[a].total_cmp(&mean[b])).unwrap();
    let (a, b, c) = (mean[k - 1], mean[k], mean[k + 1]);
    let offset = 0.5 * (a - c) / (a - 2.0 * b + c);
    (k as f64 + 0.5 + offset) as f32 * bin
}

/// Tolerance of the ring's speed against √(g·d): the grid's dispersion slows waves of 32 cells
/// or more by under 1 %, and the crest of a 2D ring approaches the celerity from below as it
/// grows.
const CELERITY_TOLERANCE: f32 = 0.03;

#[test]
fn a_ripple_ring_grows_at_the_celerity_of_the_water_under_it() {
    // 0.1 m of water: √(g·d) = 0.990 m/s, under the 2 m/s cap. Cells of 1/8 m; a 2 m ripple.
    let params = DetailParams { subdivision: 8, window: 256, damping: 0.0, ..DetailParams::default() };
    let mut sim = pool(32, 1.0, 0.1, params);
    assert!(sim.add_ripple(0.0, 0.0, 0.02, 2.0).unwrap(), "the ripple reaches the window");
    let depth = sim.depth(0.0, 0.0).unwrap();
    let celerity = (physical_params().gravity * depth).sqrt();
    let (t1, t2) = (4.0, 10.0);
    run(&mut sim, t1);
    let r1 = crest_radius(&mut sim, 0.0, 0.0, 2.0);
    run(&mut sim, t2 - t1);
    let r2 = crest_radius(&mut sim, 0.0, 0.0, 2.0);
    let speed = (r2 - r1) / (t2 - t1);
    let error = (speed - celerity) / celerity;
    println!("depth {depth:.5} m, √(g·d) = {celerity:.4} m/s; crest at {r1:.3} m after {t1} s, {r2:.3} m after {t2} s: {speed:.4} m/s ({:+.2} %)", 100.0 * error);
    assert!(error.abs() < CELERITY_TOLERANCE, "ring speed {speed} m/s against √(g·d) = {celerity} m/s");

    // Deep water: the cap holds. 2 m of water (4.43 m/s) under a 1 m/s cap.
    let capped = DetailParams { max_celerity: 1.0, ..params };
    let mut deep = pool(32, 1.0, 2.0, capped);
    deep.add_ripple(0.0, 0.0, 0.02, 2.0).unwrap();
    run(&mut deep, t1);
    let r1 = crest_radius(&mut deep, 0.0, 0.0, 2.0);
    run(&mut deep, t2 - t1);
    let r2 = crest_radius(&mut deep, 0.0, 0.0, 2.0);
    let speed = (r2 - r1) / (t2 - t1);
    println!("2 m deep under a 1 m/s cap: crest {r1:.3} m → {r2:.3} m: {speed:.4} m/s ({:+.2} %)", 100.0 * (speed - 1.0));
    assert!((speed - 1.0).abs() < CELERITY_TOLERANCE);
}

/// Tolerance of the measured decay rate. Each wave's amplitude decays by exactly `e^(−γ·dt)` per
/// substep; the energy below decays as `e^(−2γt)` exactly in continuous time, and the step's own
/// invariant differs from it by terms of order `ω·dt` that swing with each wave's phase.
const DAMPING_TOLERANCE: f32 = 0.02;

/// The damped waves' energy per unit density and gravity, summed over cells (m⁴/s²):
/// `v² − c²·h·∇²h + 2γ·h·v`, with the step's own nine-point Laplacian, over a pool of constant
/// celerity `c`. For `ḧ + 2γḣ = c²∇²h` it decays as `e^(−2γt)` exactly (without the last term it
/// would swing by up to `γ/ω` of itself as the waves' phase turns).
fn wave_energy(sim: &mut Simulation, celerity: f32, gamma: f32) -> f64 {
    let window = sim.detail_window().unwrap();
    let fields = sim.read_detail().unwrap();
    let d = window.cell_size();
    let h = |g: [i32; 2]| if window.contains(g) { fields[window.storage_index(g)][0] as f64 } else { 0.0 };
    let mut energy = 0.0;
    for (i, &[hi, vi]) in fields.iter().enumerate() {
        let g = window.world_cell(i);
        let orthogonal: f64 = [[1, 0], [0, 1], [-1, 0], [0, -1]].iter().map(|o| h([g[0] + o[0], g[1] + o[1]]) - hi as f64).sum();
        let diagonal: f64 = [[1, 1], [-1, 1], [-1, -1], [1, -1]].iter().map(|o| h([g[0] + o[0], g[1] + o[1]]) - hi as f64).sum();
        let laplacian = (4.0 * orthogonal + diagonal) / (6.0 * (d * d) as f64);
        let (hi, vi) = (hi as f64, vi as f64);
        energy += vi * vi - (celerity as f64).powi(2) * hi * laplacian + 2.0 * gamma as f64 * hi * vi;
    }
    energy
}

#[test]
fn damping_takes_the_stated_share_of_the_waves_each_second() {
    let base = DetailParams { subdivision: 8, window: 256, damping: 0.0, ..DetailParams::default() };
    let gamma = 0.5;
    let mut free = pool(32, 1.0, 0.1, base);
    let mut damped = pool(32, 1.0, 0.1, DetailParams { damping: gamma, ..base });
    for sim in [&mut free, &mut damped] {
        sim.add_ripple(0.0, 0.0, 0.02, 2.0).unwrap();
    }
    let celerity = (physical_params().gravity * free.depth(0.0, 0.0).unwrap()).sqrt();
    let mut worst = 0.0f32;
    for t in [1.0f32, 2.0, 3.0, 4.0] {
        run(&mut free, 1.0);
        run(&mut damped, 1.0);
        // Energy goes as the square of the amplitude.
        let ratio = (wave_energy(&mut damped, celerity, gamma) / wave_energy(&mut free, celerity, 0.0)).sqrt();
        let rate = -(ratio.ln() as f32) / t;
        let error = (rate - gamma) / gamma;
        worst = worst.max(error.abs());
        println!("t = {t} s: amplitude damped / free = {ratio:.5} (e^(−γt) = {:.5}): decay rate {rate:.4} 1/s ({:+.2} % of {gamma})", (-gamma * t).exp(), 100.0 * error);
    }
    assert!(worst < DAMPING_TOLERANCE, "decay rate off by {:.2} %", 100.0 * worst);
}

#[test]
fn a_wave_reaching_a_shore_leaves_no_height_on_dry_cells() {
    // A beach rising 0.1 m per metre along local +X; the water's edge at x = +6 m.
    let g = grid(32, 16, 1.0);
    let terrain: Vec<f32> = (0..g.cell_count()).map(|i| 0.1 * (g.cell_centre(i as u32 % g.width, 0)[0] - 6.0)).collect();
    let mut state = State::with_terrain(g, terrain).unwrap();
    state.fill_to_level(0.0).expect("a level within the depth limit");
    let mut sim = Simulation::cpu(state, physical_params()).unwrap();
    sim.set_detail(Some(DetailParams { subdivision: 4, window: 128, damping: 0.0, ..DetailParams::default() })).unwrap();
    sim.add_ripple(-2.0, 0.0, 0.05, 2.0).unwrap();
    let shore = 6.0;
    let (mut dry_cells, mut worst_dry, mut reached) = (0usize, 0.0f32, 0.0f32);
    for _ in 0..10 {
        run(&mut sim, 1.0);
        let snapshot = sim.snapshot().unwrap();
        for (x, z, h, v) in cells(&mut sim) {
            let flow_cell = g.cell_at(x, z).map(|(cx, cy)| g.index(cx, cy));
            let dry = flow_cell.is_none_or(|i| snapshot.height[i][1] <= 1.0e-3);
            if dry {
                dry_cells += 1;
                worst_dry = worst_dry.max(h.abs()).max(v.abs());
            } else if (x - shore).abs() < 1.5 {
                reached = reached.max(h.abs());
            }
        }
    }
    println!("{dry_cells} dry detail cells checked over 10 s: largest |h| or |v| there {worst_dry:e}; the waves reached the shore with up to {reached:.4} m");
    assert!(reached > 1.0e-3, "the ripple reached the shore");
    assert_eq!(worst_dry, 0.0, "no height or motion on dry cells");
}

/// Tolerance of the ripple's drift against the current (the 5 %). The advection step
/// carries a wave of θ radians per cell at `sin θ (4 − cos θ) / 3θ` of the current
/// ([`pipewater_core::detail::hermite_weights`]): within 0.5 % for the 12-cell ripple here, 4 %
/// slow for a 6-cell one, whose narrow crest is mostly waves of 4 to 8 cells.
const DRIFT_TOLERANCE: f32 = 0.05;

#[test]
fn the_flow_carries_a_ripple_centre_at_the_current_speed() {
    let g = grid(64, 64, 1.0);
    let state = scenarios::flat_pool(g, 1.0);
    let mut sim = Simulation::cpu(state, physical_params()).unwrap();
    sim.set_initial_current([-40.0, -40.0], [40.0, 40.0], [0.6, 0.3]).unwrap();
    sim.set_detail(Some(DetailParams { window: 256, max_celerity: 0.5, damping: 0.2, ..DetailParams::default() })).unwrap();
    let start = [-6.0f32, -3.0];
    // 3 m: 12 detail cells of 0.25 m.
    sim.add_ripple(start[0], start[1], 0.05, 3.0).unwrap();
    let centroid = |sim: &mut Simulation| {
        let (mut w, mut x, mut z) = (0.0f64, 0.0f64, 0.0f64);
        for (cx, cz, h, v) in cells(sim) {
            let e = (h as f64).powi(2) + (v as f64).powi(2);
            w += e;
            x += e * cx as f64;
            z += e * cz as f64;
        }
        [(x / w) as f32, (z / w) as f32]
    };
    // The first frame applies the ripple; its centre is where it was put.
    sim.advance(FRAME).unwrap();
    let first = centroid(&mut sim);
    let mut carried = [0.0f32; 2];
    let seconds = 5.0;
    for _ in 0..(seconds / FRAME).round() as u32 {
        let here = centroid(&mut sim);
        let u = sim.flow_velocity(here[0], here[1]).unwrap();
        sim.advance(FRAME).unwrap();
        carried = [carried[0] + u[0] * FRAME, carried[1] + u[1] * FRAME];
    }
    let last = centroid(&mut sim);
    let moved = [last[0] - first[0], last[1] - first[1]];
    let error = ((moved[0] - carried[0]).hypot(moved[1] - carried[1])) / carried[0].hypot(carried[1]);
    println!("centre {first:?} → {last:?}: moved {moved:?} m in {seconds} s; the current under it carried {carried:?} m ({:.2} % apart)", 100.0 * error);
    assert!(error < DRIFT_TOLERANCE);
}

#[test]
fn moving_the_window_leaves_the_waves_where_they_are() {
    let params = DetailParams { window: 128, ..DetailParams::default() };
    let mut still = pool(64, 1.0, 1.0, params);
    let mut moving = pool(64, 1.0, 1.0, params);
    for sim in [&mut still, &mut moving] {
        sim.add_ripple(1.0, 2.0, 0.05, 1.5).unwrap();
    }
    run(&mut still, 1.0);
    run(&mut moving, 1.0);
    // The moving window wanders 37 cells east and 11 north, a frame at a time, and back near.
    for step in 0..30 {
        moving.set_detail_focus(step as f32 * 0.31, -(step as f32) * 0.09);
        still.advance(FRAME).unwrap();
        moving.advance(FRAME).unwrap();
    }
    let a = still.detail_window().unwrap();
    let b = moving.detail_window().unwrap();
    let (fa, fb) = (still.read_detail().unwrap(), moving.read_detail().unwrap());
    let mut compared = 0;
    let mut worst = 0.0f32;
    for (i, field) in fa.iter().enumerate() {
        let g = a.world_cell(i);
        let [x, z] = a.cell_centre(g);
        // Cells near the ripple, in both windows and clear of both sponges.
        if (x - 1.0).hypot(z - 2.0) > 4.0 || !inner(&b, g) || !inner(&a, g) {
            continue;
        }
        let other = fb[b.storage_index(g)];
        worst = worst.max((field[0] - other[0]).abs()).max((field[1] - other[1]).abs());
        compared += 1;
    }
    println!("window origins {:?} and {:?}: {compared} cells around the ripple compared, largest difference {worst:e}", a.origin, b.origin);
    assert!(a.origin != b.origin && compared > 500);
    assert_eq!(worst, 0.0, "the waves stay where they are in the world, to the bit");
}

/// Whether world cell `g` lies in `w` clear of its sponge.
fn inner(w: &DetailWindow, g: [i32; 2]) -> bool {
    let n = w.layout.window as i32;
    let band = (n / 16).max(4);
    let (lx, ly) = (g[0] - w.origin[0], g[1] - w.origin[1]);
    lx >= band && ly >= band && lx < n - band && ly < n - band
}

#[test]
fn the_water_and_its_ledger_never_see_the_detail_layer() {
    use pipewater_core::{Body, HullShape};
    use pipewater_core::glam::Vec3;
    let with = common::busy_valley(pipewater_core::BackendPreference::Cpu);
    let without = common::busy_valley(pipewater_core::BackendPreference::Cpu);
    let (mut with, mut without) = (with, without);
    with.set_detail(Some(DetailParams { rain_rate: 20.0, ..DetailParams::default() })).unwrap();
    let mut ripples = 0;
    for frame in 0..240 {
        let t = frame as f32 * FRAME;
        let mut boat = Body::new(Vec3::new(-10.0 + 3.0 * t, 0.3, 2.0), HullShape::Box { half_extents: Vec3::new(1.5, 0.4, 0.8) });
        boat.linear_velocity = Vec3::new(3.0, 0.0, 0.0);
        for sim in [&mut with, &mut without] {
            sim.couple_bodies(std::slice::from_ref(&boat), FRAME, 1000.0).unwrap();
        }
        if frame % 10 == 0 {
            ripples += with.add_ripple(-5.0 + 0.1 * frame as f32, 3.0, 0.2, 2.0).unwrap() as u32;
        }
        common::drive_busy_valley(&mut with, frame, frame + 1, common::Stepping::Advance);
        common::drive_busy_valley(&mut without, frame, frame + 1, common::Stepping::Advance);
    }
    let (a, b) = (with.read_state().unwrap(), without.read_state().unwrap());
    let (la, lb) = (with.ledger().unwrap(), without.ledger().unwrap());
    let waves = with.read_detail().unwrap().iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
    println!("240 frames, a boat, rain and {ripples} ripples on the layer (largest detail height {waves:.4} m): ledgers {la:?} / {lb:?}; totals {} / {} quanta", a.total_quanta(), b.total_quanta());
    assert!(waves > 1.0e-3, "the layer had waves");
    assert_eq!(la, lb, "the ledger is the same to the quantum");
    assert!(a.depth == b.depth && a.terrain == b.terrain, "depth and terrain identical");
    assert!(a.flow.iter().flatten().zip(b.flow.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits()), "pipe flows identical to the bit");
}

#[test]
fn bad_ripples_are_refused_with_the_argument_and_its_range() {
    let mut sim = pool(32, 1.0, 1.0, DetailParams::default());
    let cases: [(&str, f32, f32, f32, f32); 7] = [
        ("position", f32::NAN, 0.0, 0.1, 1.0),
        ("position", 0.0, f32::INFINITY, 0.1, 1.0),
        ("strength", 0.0, 0.0, f32::NAN, 1.0),
        ("strength", 0.0, 0.0, 10.5, 1.0),
        ("radius", 0.0, 0.0, 0.1, 0.0),
        ("radius", 0.0, 0.0, 0.1, -2.0),
        ("radius", 0.0, 0.0, 0.1, 1.0e6),
    ];
    for (name, x, z, strength, radius) in cases {
        let error = sim.add_ripple(x, z, strength, radius).expect_err(name).to_string();
        println!("add_ripple({x}, {z}, {strength}, {radius}): {error}");
        assert!(error.contains(name) && error.contains("valid range"), "`{error}` names {name} and its range");
    }
    let fine = sim.add_ripple(3.0, -2.0, -0.5, 0.01).unwrap();
    let far = sim.add_ripple(1000.0, 0.0, 0.1, 1.0).unwrap();
    println!("a good ripple reaches the window: {fine}; one 1 km away: {far}");
    assert!(fine && !far);
    sim.set_detail(None).unwrap();
    assert!(!sim.add_ripple(3.0, -2.0, 0.1, 1.0).unwrap(), "with the layer off a good ripple does nothing");
    assert!(sim.add_ripple(3.0, -2.0, 0.1, -1.0).is_err(), "and a bad one is still refused");
}

#[test]
fn queries_with_detail_add_the_waves_to_the_surface() {
    let mut sim = pool(32, 1.0, 1.0, DetailParams { damping: 0.0, ..DetailParams::default() });
    sim.add_ripple(0.0, 0.0, 0.1, 3.0).unwrap();
    sim.advance(FRAME).unwrap();
    let (flat, waved, detail) = (sim.surface_height(0.0, 0.0).unwrap(), sim.surface_height_with_detail(0.0, 0.0).unwrap(), sim.detail_height(0.0, 0.0).unwrap());
    println!("surface {flat} m, detail {detail} m, with detail {waved} m");
    assert!(detail > 0.09 && (waved - (flat + detail)).abs() < 1.0e-6);
    assert_eq!(sim.detail_height(1.0e4, 0.0), None, "off the grid");
}
