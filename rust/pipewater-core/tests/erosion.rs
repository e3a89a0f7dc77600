//! Erosion and deposition ([`pipewater_core::erosion`]): every grain and every drop counted, the
//! capacity law of Mei, Decaudin and Hu (2007) on a slope, thermal slippage to the talus angle,
//! and erosion off leaving the water exactly as it was.

mod common;

use common::{busy_valley, drive_busy_valley, fingerprint, grid, Stepping};
use pipewater_core::erosion::{capacity, compose};
use pipewater_core::{BackendPreference, Boundary, Edge, ErosionParams, Params, Simulation, State, DEPTH_QUANTUM};

/// Erosion on, with every part of it busy: strong dissolving and settling, a talus of 20°.
fn busy_erosion() -> ErosionParams {
    ErosionParams { enabled: true, capacity: 0.5, dissolve_rate: 2.0, deposit_rate: 1.0, min_tilt: 0.05, talus_angle: 20.0, thermal_rate: 5.0 }
}

/// Over 10 000 steps of a river valley with an inflow edge, open edges, a spring, a drain and
/// edits of water and terrain, with erosion dissolving, carrying, settling, sliding and losing
/// sediment across the open edges, both ledgers hold exactly after every step: the water's
/// (`total = initial + added − removed + in − out`, quanta) and the sediment's (`Σ ground change
/// + Σ sediment + sediment out = initial`, quanta). The terrain the water sees is the ground
/// the ledger counts: the uneroded ground (the start, plus the terrain edits) composed with the
/// ground change, bit for bit.
#[test]
fn erosion_counts_every_drop_and_every_grain_over_ten_thousand_steps() {
    let mut sim = busy_valley(BackendPreference::Cpu);
    sim.set_params(Params { erosion: busy_erosion(), ..*sim.params() }).expect("erosion on");
    let mut uneroded = sim.read_state().expect("state").terrain;
    let (mut worst_water, mut worst_sediment) = (0i64, 0i64);
    let (mut most_dissolved, mut most_suspended) = (0i64, 0i64);
    for step in 0..10_000u32 {
        // An edit of the ground every 997 steps: it acts on the uneroded ground.
        if step % 997 == 500 {
            let before = sim.read_state().expect("state").terrain;
            let fields = sim.read_erosion().expect("read").expect("on");
            sim.modify_terrain(-5.0, 2.0, -0.2, 3.0).expect("dig");
            let after = sim.read_state().expect("state").terrain;
            for i in 0..after.len() {
                if after[i] != before[i] {
                    // What the edit added to the uneroded ground: the new terrain less the change.
                    let delta = after[i] as f64 - compose(uneroded[i], fields.ground[i]) as f64;
                    uneroded[i] = (uneroded[i] as f64 + delta) as f32;
                }
            }
        }
        if step % 1000 == 250 {
            sim.add_water(3.0, -4.0, 2.0, 3.0).expect("add");
        }
        sim.run_steps(0.02, 1).expect("step");
        let state = sim.read_state().expect("state");
        let ledger = sim.ledger().expect("ledger");
        let fields = sim.read_erosion().expect("read").expect("erosion is on");
        let water_off = ledger.discrepancy(state.total_quanta());
        let sediment_off = fields.discrepancy();
        worst_water = worst_water.max(water_off.abs());
        worst_sediment = worst_sediment.max(sediment_off.abs());
        assert_eq!(water_off, 0, "step {step}: the water ledger is off by {water_off} quanta");
        assert_eq!(sediment_off, 0, "step {step}: the sediment ledger is off by {sediment_off} quanta ({:?})", fields.ledger);
        assert!(fields.sediment.iter().all(|&s| s >= 0), "step {step}: negative sediment");
        most_dissolved = most_dissolved.max(-fields.ground.iter().map(|&g| g.min(0) as i64).sum::<i64>());
        most_suspended = most_suspended.max(fields.sediment.iter().map(|&s| s as i64).sum());
        if step % 100 == 99 {
            let composed: Vec<f32> = (0..state.terrain.len()).map(|i| compose(uneroded[i], fields.ground[i])).collect();
            let off = (0..composed.len()).filter(|&i| (composed[i] - state.terrain[i]).abs() > 2.0e-6 * composed[i].abs().max(1.0)).count();
            assert_eq!(off, 0, "step {step}: {off} cells' terrain is not the uneroded ground with the ledger's change");
        }
    }
    let fields = sim.read_erosion().expect("read").expect("on");
    let qv = sim.quantum_volume();
    let moved: i64 = fields.ground.iter().map(|&g| (g as i64).abs()).sum();
    println!(
        "10 000 steps: water ledger off by at most {worst_water} quanta, sediment ledger by at most {worst_sediment}; ground moved {:.3} m³ (|change| summed), \
         most dissolved at once {:.3} m³, most suspended {:.3} m³, sediment out across the edges {:.3} m³",
        moved as f64 * qv,
        most_dissolved as f64 * qv,
        most_suspended as f64 * qv,
        fields.ledger.out as f64 * qv
    );
    // The run exercised what it counts: ground dissolved, sediment carried and lost at the edges.
    assert!(most_dissolved as f64 * qv > 0.1 && most_suspended > 0 && fields.ledger.out > 0, "erosion did too little to test the ledger");
}

/// Ground tilt (sine) at cell `(x, y)` of `terrain`, central differences as the model takes it.
fn gradient_at(terrain: &[f32], width: usize, dx: f32, x: usize, y: usize) -> [f32; 2] {
    let at = |x: usize, y: usize| terrain[y * width + x] as f64;
    let gx = (at(x + 1, y) - at(x - 1, y)) / (2.0 * dx as f64);
    let gy = (at(x, y + 1) - at(x, y - 1)) / (2.0 * dx as f64);
    [gx as f32, gy as f32]
}

/// Water running steadily down a uniform slope of 5 % (strong damping keeps its speed near the
/// slope's terminal speed): once erosion starts, the ground near the top drops at the rate the
/// capacity law says, `Ks · (C − s)` with `C = Kc · sin α · |v|` from the speed the flow texels
/// show, the slope the terrain shows and the sediment the water carries, summed over the steps
/// and compared with the measured drop within [`LAW_TOLERANCE`]. Further down, the water has
/// taken up what it can carry: its sediment there is within [`SATURATION_TOLERANCE`] of `C`.
#[test]
fn a_steady_flow_down_a_uniform_slope_erodes_as_the_capacity_law_says() {
    /// Per step each cell rounds its exchange to a whole quantum (±0.5 of about 50), and the bed it
    /// lowers slows the water a little during the measurement.
    const LAW_TOLERANCE: f64 = 0.03;
    /// Water that started clear takes up sediment as `C · (1 − e^(−Ks·t))` (0.4 % short after
    /// the 11 s of erosion here) and approaches `C` over a length of `|v| / Ks` (0.4 m, under a
    /// cell) below the inflow; the rest is whole quanta and the capacity moving as the bed lowers.
    const SATURATION_TOLERANCE: f64 = 0.02;
    let (w, h, dx, slope) = (64usize, 8usize, 0.5f32, 0.05f32);
    let g = grid(w as u32, h as u32, dx);
    let terrain: Vec<f32> = (0..w * h).map(|i| slope * dx * (w - i % w) as f32).collect();
    let state = State::with_terrain(g, terrain).expect("terrain");
    let mut params = Params { damping: 0.9, ..Params::default() };
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 0.04 };
    params.boundaries[Edge::East as usize] = Boundary::Open;
    // On but inert while the flow settles: nothing dissolves, settles or slides.
    let inert = ErosionParams { enabled: true, capacity: 1.0, dissolve_rate: 0.0, deposit_rate: 0.0, min_tilt: 0.0, talus_angle: 45.0, thermal_rate: 0.0 };
    params.erosion = inert;
    let mut sim = Simulation::cpu(state, params).expect("simulation");
    let dt = 0.01;
    // 200 s: the front crosses the 32 m slope and the flow settles.
    sim.run_steps(dt, 20_000).expect("settle");
    let ks = 0.5;
    let eroding = ErosionParams { dissolve_rate: ks, deposit_rate: ks, ..inert };
    sim.set_params(Params { erosion: eroding, ..params }).expect("erosion on");
    // Cells near the top, away from the inflow edge and the walls.
    let probes: Vec<(usize, usize)> = (6..10).flat_map(|x| (3..5).map(move |y| (x, y))).collect();
    let mut predicted = vec![0.0f64; probes.len()];
    let start = sim.read_erosion().expect("read").expect("on");
    let steps = 100;
    let (mut speed_sum, mut tilt_sum) = (0.0f64, 0.0f64);
    for _ in 0..steps {
        // The law over this step, from what the simulation shows before it.
        let snapshot = sim.read_snapshot().expect("snapshot");
        let fields = sim.read_erosion().expect("read").expect("on");
        let terrain: Vec<f32> = snapshot.height.iter().map(|t| t[2]).collect();
        for (k, &(x, y)) in probes.iter().enumerate() {
            let i = y * w + x;
            let gradient = gradient_at(&terrain, w, dx, x, y);
            let speed = snapshot.flow[i][2];
            let c = capacity(&eroding, gradient, speed) as f64;
            let s = fields.sediment[i] as f64 * DEPTH_QUANTUM as f64;
            predicted[k] += ks as f64 * dt as f64 * (c - s);
            speed_sum += speed as f64;
            let sl = gradient[0].hypot(gradient[1]) as f64;
            tilt_sum += sl / (1.0 + sl * sl).sqrt();
        }
        // One step: the transport and the exchange of the step after it see this step's water.
        sim.run_steps(dt, 1).expect("step");
    }
    let end = sim.read_erosion().expect("read").expect("on");
    let samples = (steps * probes.len()) as f64;
    println!("near the top: mean speed {:.4} m/s, mean sin(tilt) {:.5}", speed_sum / samples, tilt_sum / samples);
    let mut worst = 0.0f64;
    for (k, &(x, y)) in probes.iter().enumerate() {
        let i = y * w + x;
        let dropped = -(end.ground[i] - start.ground[i]) as f64 * DEPTH_QUANTUM as f64;
        let error = (dropped - predicted[k]) / predicted[k];
        println!("cell ({x}, {y}): ground dropped {:.4e} m in {} s, Ks·(C − s) summed {:.4e} m, {:+.2} %", dropped, steps as f32 * dt, predicted[k], 100.0 * error);
        worst = worst.max(error.abs());
        assert!(predicted[k] > 1.0e-4, "the flow should erode here: predicted {}", predicted[k]);
    }
    assert!(worst < LAW_TOLERANCE, "the measured drop differs from the capacity law by {:.2} % (tolerance {:.0} %)", worst * 100.0, LAW_TOLERANCE * 100.0);

    // Saturation further down, after 10 s more.
    sim.run_steps(dt, 1000).expect("run on");
    let snapshot = sim.read_snapshot().expect("snapshot");
    let fields = sim.read_erosion().expect("read").expect("on");
    let terrain: Vec<f32> = snapshot.height.iter().map(|t| t[2]).collect();
    let mut worst_ratio = 0.0f64;
    for x in [24usize, 32, 40] {
        let (y, i) = (4usize, 4 * w + x);
        let c = capacity(&eroding, gradient_at(&terrain, w, dx, x, y), snapshot.flow[i][2]) as f64;
        let s = fields.sediment[i] as f64 * DEPTH_QUANTUM as f64;
        println!("cell ({x}, {y}): carries {s:.4e} m of sediment, capacity {c:.4e} m, ratio {:.3}", s / c);
        assert!(c > 1.0e-4, "the water should run fast enough here to carry sediment: capacity {c} m");
        worst_ratio = worst_ratio.max((s / c - 1.0).abs());
    }
    assert!(worst_ratio < SATURATION_TOLERANCE, "sediment off its capacity by {:.1} % (tolerance {:.0} %)", worst_ratio * 100.0, SATURATION_TOLERANCE * 100.0);
}

/// A dry cone of ground 8 m high and 5 m across its foot (slope 1.6, 58°) over flat ground, with
/// a talus of 30°: slippage brings every pair of neighbours to within one slide's rounding of the
/// talus slope, `tan 30° · distance + 16 quanta` (a slide moves `floor(excess / 16)` quanta:
/// [`SLIDE_ROUNDING`]), while the ground's volume stays exact (its change sums to zero quanta
/// after every step) and the pile does spread to the talus slope (its steepest pair ends within
/// 5 % of it).
#[test]
fn talus_slippage_brings_a_steep_pile_to_the_talus_angle_keeping_its_volume() {
    const SLIDE_ROUNDING: f64 = 16.0 * DEPTH_QUANTUM as f64;
    let (n, dx) = (40usize, 1.0f32);
    let g = grid(n as u32, n as u32, dx);
    let centre = (n as f32 - 1.0) / 2.0;
    let terrain: Vec<f32> = (0..n * n)
        .map(|i| {
            let r = ((i % n) as f32 - centre).hypot((i / n) as f32 - centre);
            (8.0 - 1.6 * r).max(0.0)
        })
        .collect();
    let state = State::with_terrain(g, terrain.clone()).expect("terrain");
    let talus = 30.0f32;
    let erosion = ErosionParams { enabled: true, talus_angle: talus, thermal_rate: 100.0, ..ErosionParams::default() };
    let mut sim = Simulation::cpu(state, Params { erosion, ..Params::default() }).expect("simulation");
    let tan = (talus as f64).to_radians().tan();
    let steepest = |heights: &[f64]| -> (f64, f64) {
        // (largest drop over talus, in m; steepest slope between neighbours)
        let (mut excess, mut slope) = (f64::MIN, 0.0f64);
        for y in 0..n {
            for x in 0..n {
                for (ox, oy) in [(1i64, 0i64), (0, 1), (1, 1), (-1, 1)] {
                    let (nx, ny) = (x as i64 + ox, y as i64 + oy);
                    if nx < 0 || ny < 0 || nx >= n as i64 || ny >= n as i64 {
                        continue;
                    }
                    let distance = if ox != 0 && oy != 0 { dx as f64 * 2f64.sqrt() } else { dx as f64 };
                    let drop = (heights[y * n + x] - heights[ny as usize * n + nx as usize]).abs();
                    excess = excess.max(drop - tan * distance);
                    slope = slope.max(drop / distance);
                }
            }
        }
        (excess, slope)
    };
    let heights_of = |ground: &[i32]| -> Vec<f64> { (0..n * n).map(|i| terrain[i] as f64 + ground[i] as f64 * DEPTH_QUANTUM as f64).collect() };
    let (start_excess, start_slope) = steepest(&heights_of(&vec![0; n * n]));
    let (mut steps, mut excess, mut slope) = (0u32, start_excess, start_slope);
    while excess > SLIDE_ROUNDING && steps < 40_000 {
        sim.run_steps(0.02, 50).expect("steps");
        steps += 50;
        let fields = sim.read_erosion().expect("read").expect("on");
        let volume: i64 = fields.ground.iter().map(|&g| g as i64).sum();
        assert_eq!(volume, 0, "after {steps} steps the ground's change sums to {volume} quanta");
        assert_eq!(fields.discrepancy(), 0);
        (excess, slope) = steepest(&heights_of(&fields.ground));
    }
    let state = sim.read_state().expect("state");
    let fields = sim.read_erosion().expect("read").expect("on");
    let shown_off = (0..n * n).map(|i| (state.terrain[i] as f64 - heights_of(&fields.ground)[i]).abs()).fold(0.0, f64::max);
    println!(
        "talus {talus}° (slope {tan:.4}): steepest slope {start_slope:.4} at the start, {slope:.4} after {steps} steps; largest excess over the talus {:.3e} m (allowed {:.3e} m); \
         ground volume change 0 quanta; terrain shown within {shown_off:.2e} m of the ledger's",
        excess, SLIDE_ROUNDING
    );
    assert!(excess <= SLIDE_ROUNDING, "still {excess:.3e} m steeper than the talus after {steps} steps");
    assert!(slope > 0.95 * tan, "the pile should end at the talus slope, not flatter: {slope:.4} vs {tan:.4}");
    assert!(shown_off < 1.0e-5, "the terrain shown differs from the ground counted by {shown_off} m");
}

/// Erosion off (the default) leaves a fixed scenario bit for bit as the code before erosion
/// existed ran it: the busy valley (inflow, open edges, sources, drains, edits) after 300 frames
/// has the fingerprint and water total recorded at commit 1a76e12, before erosion was added.
/// Erosion on with every rate zero is a pass that moves nothing: the water is the same again.
#[test]
fn erosion_off_or_inert_leaves_the_water_bit_for_bit_as_before() {
    /// Recorded by running this scenario at commit 1a76e12 (the parent of erosion's first commit).
    const BEFORE_EROSION: (u64, i64) = (GOLDEN_FINGERPRINT, GOLDEN_TOTAL);
    let mut off = busy_valley(BackendPreference::Cpu);
    assert!(!off.params().erosion.enabled, "erosion is off by default");
    drive_busy_valley(&mut off, 0, 300, Stepping::Fixed);
    let off_state = off.read_state().expect("state");
    let mut inert = busy_valley(BackendPreference::Cpu);
    let erosion = ErosionParams { enabled: true, dissolve_rate: 0.0, deposit_rate: 0.0, thermal_rate: 0.0, ..ErosionParams::default() };
    inert.set_params(Params { erosion, ..*inert.params() }).expect("erosion on");
    drive_busy_valley(&mut inert, 0, 300, Stepping::Fixed);
    let inert_state = inert.read_state().expect("state");
    let now = (fingerprint(&off_state), off_state.total_quanta());
    println!("off: fingerprint {:#018x}, total {} quanta; before erosion: {:#018x}, {}; inert erosion: {:#018x}", now.0, now.1, BEFORE_EROSION.0, BEFORE_EROSION.1, fingerprint(&inert_state));
    assert_eq!(now, BEFORE_EROSION, "erosion off changed the water");
    assert_eq!(common::differing_cells(&off_state, &inert_state), 0, "an erosion pass that moves nothing changed the water");
}

/// [`fingerprint`] of the busy valley after 300 fixed frames at commit 1a76e12.
const GOLDEN_FINGERPRINT: u64 = 0x9c4f_0295_b3cc_79e0;
/// Its water, quanta.
const GOLDEN_TOTAL: i64 = 107_540_523;

/// Lava that cools over ground that slides (erosion on, a pile steeper than its talus under a
/// still, viscous pool): the rock cooling adds to a cell stays when erosion later changes that
/// cell's ground. After every frame the terrain's gain over the start, in quanta, equals what the
/// fluid turned into rock (the water's ledger's `solidified`) plus the erosion's own change of
/// the ground (`Σ ground`, zero for a pure slide); and the terrain the water sees is the ground
/// both ledgers count. Before cooling went through the erosion's uneroded ground, the next
/// erosion step composed a slid cell's terrain from that ground alone and the rock was lost.
#[test]
fn rock_set_by_cooling_stays_under_ground_that_erosion_moves() {
    let (n, dx) = (16usize, 1.0f32);
    let g = grid(n as u32, n as u32, dx);
    let centre = (n as f32 - 1.0) / 2.0;
    // A pile of whole quanta, steeper than 30° near its top, under 3 m of lava.
    let terrain: Vec<f32> = (0..n * n)
        .map(|i| {
            let r = ((i % n) as f32 - centre).hypot((i / n) as f32 - centre);
            ((2.0 - 0.9 * r).max(0.0) / DEPTH_QUANTUM).round() * DEPTH_QUANTUM
        })
        .collect();
    let mut state = State::with_terrain(g, terrain.clone()).expect("terrain");
    state.fill_to_level(3.0).expect("level");
    let erosion = ErosionParams { enabled: true, capacity: 0.0, dissolve_rate: 0.0, deposit_rate: 0.0, talus_angle: 30.0, thermal_rate: 0.5, ..ErosionParams::default() };
    let params = Params { viscosity: 100.0, solidify_rate: 1.0e-2, boundaries: [Boundary::Wall; 4], erosion, ..Params::default() };
    let mut sim = Simulation::cpu(state, params).expect("simulation");
    let mut slid_cells = 0;
    for frame in 0..90 {
        sim.advance(1.0 / 30.0).expect("frame");
        let now = sim.read_state().expect("state");
        let ledger = sim.ledger().expect("ledger");
        let fields = sim.read_erosion().expect("read").expect("erosion is on");
        let ground: i64 = fields.ground.iter().map(|&q| q as i64).sum();
        let gain: i64 = terrain.iter().zip(&now.terrain).map(|(&b, &a)| ((a as f64 - b as f64) / DEPTH_QUANTUM as f64).round() as i64).sum();
        slid_cells = fields.ground.iter().filter(|&&q| q != 0).count();
        assert_eq!(ledger.discrepancy(now.total_quanta()), 0, "frame {frame}: the water's ledger");
        assert_eq!(fields.discrepancy(), 0, "frame {frame}: the sediment's ledger");
        assert_eq!(gain, ledger.solidified as i64 + ground, "frame {frame}: terrain gained {gain} quanta; solidified {} + eroded ground {ground}", ledger.solidified);
    }
    let ledger = sim.ledger().expect("ledger");
    println!("90 frames: solidified {} quanta, {slid_cells} cells whose ground slid, terrain gain equal to solidified + slide after every frame", ledger.solidified);
    assert!(ledger.solidified > 0 && slid_cells > 0, "the lava set and the ground slid");
}
