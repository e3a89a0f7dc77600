//! Viscous fluids on the CPU backend: a viscous film down an incline against Nusselt's steady
//! thickness, water at the default viscosity bit-identical to the build before the parameter,
//! and lava that cools into ground with the ledger exact and the ground's gain equal, to the
//! quantum, to the fluid that left.

mod common;
mod lava_fields;

use common::*;
use lava_fields::{ground_gain_quanta, lava_field};
use pipewater_core::validation::{FILM_DURATION, MUD_FILM};
use pipewater_core::{BackendPreference, Boundary, Error, Grid, Params, Simulation, State, DEPTH_QUANTUM};

/// Largest relative difference between the film's mean depth and Nusselt's thickness. The
/// uniform film is the model's exact steady state (face depth = upstream depth, drive = slope);
/// what remains is each pipe's whole-quanta truncation (about 10³ quanta a step, so 0.1 % of the
/// flux, 0.03 % of the depth) and the tail of the approach to steady state.
const FILM_TOLERANCE: f64 = 0.01;
/// Largest relative change of the film's mean depth over the last tenth of the run.
const STEADY_TOLERANCE: f64 = 1.0e-3;

/// A mud-like film (ν = 1 m²/s, q = 0.02 m²/s, 5 % slope: viscous, Re = 0.02) fed onto a dry
/// incline reaches Nusselt's thickness `h = (3νq/(g·sin θ))^(1/3)` over the second quarter of the
/// channel within [`FILM_TOLERANCE`], holds it steady, and the ledger stays exact.
#[test]
fn a_viscous_film_on_an_incline_has_nusselts_thickness() {
    let (state, params) = MUD_FILM.setup();
    let mut sim = Simulation::cpu(state, params).unwrap();
    let f = MUD_FILM.run(&mut sim, FILM_DURATION);
    println!(
        "film ν {} m²/s, q {} m²/s, slope {}: mean depth {:.5} m (cells {:.5} ..= {:.5}), Nusselt {:.5} m, error {:.3} %, drift over the last 150 s {:.2e}, mass error {} quanta",
        MUD_FILM.viscosity,
        MUD_FILM.discharge,
        MUD_FILM.slope,
        f.mean,
        f.range.0,
        f.range.1,
        f.exact,
        100.0 * f.relative_error,
        f.drift,
        f.mass_error
    );
    assert!(f.relative_error < FILM_TOLERANCE, "the film is {:.3} % off Nusselt's", 100.0 * f.relative_error);
    assert!(f.drift < STEADY_TOLERANCE, "the film is still changing: {:.2e}", f.drift);
    assert_eq!(f.mass_error, 0);
}

/// The film's thickness follows the viscosity as Nusselt's law says, `h ∝ ν^(1/3)`: a fluid ten
/// times less viscous (ν = 0.1 m²/s: h ≈ 0.23 m, u ≈ 9 cm/s, Re = 0.2, Froude 0.06, the viscous
/// term still 300 times the inertia) makes a film 10^(1/3) = 2.154 times thinner (within
/// [`FILM_TOLERANCE`] each).
#[test]
fn a_film_ten_times_less_viscous_is_the_cube_root_of_ten_thinner() {
    let thinner = pipewater_core::validation::FilmCase { viscosity: 0.1 * MUD_FILM.viscosity, ..MUD_FILM };
    let mut figures = Vec::new();
    for case in [thinner, MUD_FILM] {
        let (state, params) = case.setup();
        let mut sim = Simulation::cpu(state, params).unwrap();
        let f = case.run(&mut sim, FILM_DURATION);
        println!("ν {} m²/s: mean depth {:.5} m, Nusselt {:.5} m, error {:.3} %", case.viscosity, f.mean, f.exact, 100.0 * f.relative_error);
        assert!(f.relative_error < FILM_TOLERANCE);
        figures.push(f.mean);
    }
    println!("ratio {:.4}, 10^(1/3) = {:.4}", figures[1] / figures[0], 10f64.cbrt());
    assert!((figures[1] / figures[0] / 10f64.cbrt() - 1.0).abs() < 2.0 * FILM_TOLERANCE);
}

/// The busy valley (inflow and open edges, a spring, a drain, water and terrain edits) after 300
/// frames of `advance(1/60)` on the CPU, as the build before the viscosity parameter left it:
/// fingerprint of depth, pipes and terrain, and the ledger's added, removed, boundary in and out.
/// Recorded with this same function from the tree of commit 1a76e12 (before the parameter).
const BEFORE_VISCOSITY: (u64, [u64; 4]) = (0x41d8_70f5_65f0_26e1, [19_293_794, 2_599_921, 1_939_824, 18_788_139]);

fn pinned_busy_valley() -> (u64, [u64; 4]) {
    let mut sim = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut sim, 0, 300, Stepping::Advance);
    let state = sim.read_state().expect("state");
    let c = sim.ledger().expect("ledger").counters;
    (fingerprint(&state), [c.added, c.removed, c.boundary_in, c.boundary_out])
}

/// The default viscosity (water's, 10⁻⁶ m²/s) is the constant the thin-film drag used before it
/// became a parameter: a fixed scenario's depth, pipes, terrain and ledger are bit-identical to
/// what the build before it computed.
#[test]
fn water_at_the_default_viscosity_is_bit_identical_to_before_the_parameter() {
    let now = pinned_busy_valley();
    println!("busy valley, 300 frames: fingerprint {:016x}, ledger {:?}; before the parameter: {:016x}, {:?}", now.0, now.1, BEFORE_VISCOSITY.0, BEFORE_VISCOSITY.1);
    assert_eq!(now, BEFORE_VISCOSITY);
}

/// A viscosity or a solidify rate out of range, or NaN, is refused with an error that names it
/// and its range, and the running parameters stay as they were.
#[test]
fn a_viscosity_or_solidify_rate_out_of_range_is_refused_and_the_parameters_are_kept() {
    let mut sim = Simulation::cpu(State::new(Grid::new(8, 8, 1.0).unwrap()), Params::default()).unwrap();
    let before = *sim.params();
    for (name, params) in [
        ("viscosity", Params { viscosity: -1.0, ..before }),
        ("viscosity", Params { viscosity: f32::NAN, ..before }),
        ("viscosity", Params { viscosity: 2.0e4, ..before }),
        ("solidify_rate", Params { solidify_rate: -0.1, ..before }),
        ("solidify_rate", Params { solidify_rate: f32::INFINITY, ..before }),
    ] {
        let result = sim.set_params(params);
        println!("{name}: {result:?}");
        match result {
            Err(e @ Error::InvalidArgument { .. }) => assert!(e.to_string().contains(name), "{e}"),
            other => panic!("{name}: expected an invalid-argument error, got {other:?}"),
        }
        assert_eq!(*sim.params(), before);
    }
}

/// Lava (ν = 100 m²/s) poured from a source onto an incline runs into a basin and cools at
/// 1 mm/s where it is still: after every frame the ledger is exact (initial + added − solidified
/// = total), and the ground has risen by exactly the quanta the ledger counts as solidified; some
/// lava set and some is still liquid. Saved and restored mid-run, it goes on bit-identically.
#[test]
fn cooling_lava_turns_into_ground_quantum_for_quantum_with_the_ledger_exact() {
    let state = lava_field();
    let before = state.clone();
    let params = Params { viscosity: 100.0, solidify_rate: 1.0e-3, boundaries: [Boundary::Wall; 4], ..Params::default() };
    let mut sim = Simulation::cpu(state, params).unwrap();
    sim.add_source(6.0, 0.0, 0.02, 1.0).unwrap();
    let mut saved = None;
    for frame in 0..600 {
        sim.advance(1.0 / 30.0).unwrap();
        let now = sim.read_state().unwrap();
        let ledger = sim.ledger().unwrap();
        assert_eq!(ledger.discrepancy(now.total_quanta()), 0, "frame {frame}: the ledger is exact");
        assert_eq!(ground_gain_quanta(&before, &now), ledger.solidified as i64, "frame {frame}: the ground gained what the fluid lost");
        if frame == 300 {
            saved = Some(sim.save_state().unwrap());
        }
    }
    let end = sim.read_state().unwrap();
    let ledger = sim.ledger().unwrap();
    let set_cells = before.terrain.iter().zip(&end.terrain).filter(|(b, a)| a > b).count();
    let liquid_cells = end.depth.iter().filter(|&&d| d > 0).count();
    println!(
        "20 s of lava: added {} quanta, solidified {} ({:.4} m³), ground gained {} quanta, total {} quanta, ledger discrepancy {}; {set_cells} cells set, {liquid_cells} still liquid; cools: {}",
        ledger.counters.added,
        ledger.solidified,
        ledger.solidified as f64 * DEPTH_QUANTUM as f64 * 0.25,
        ground_gain_quanta(&before, &end),
        end.total_quanta(),
        ledger.discrepancy(end.total_quanta()),
        sim.cools()
    );
    assert!(sim.cools());
    assert!(ledger.solidified > 0 && set_cells > 0, "some lava set");
    assert!(end.total_quanta() > 0, "some lava is still liquid");

    let mut restored = Simulation::cpu(before.clone(), Params::default()).unwrap();
    restored.restore_state(saved.as_ref().unwrap()).unwrap();
    let mut through = Simulation::cpu(before, Params::default()).unwrap();
    through.restore_state(saved.as_ref().unwrap()).unwrap();
    for _ in 0..100 {
        restored.advance(1.0 / 30.0).unwrap();
        through.advance(1.0 / 30.0).unwrap();
    }
    let (a, b) = (restored.read_state().unwrap(), through.read_state().unwrap());
    println!("restored twice at frame 300, 100 frames on: {} cells differ, ledgers equal {}", differing_cells(&a, &b), restored.ledger().unwrap() == through.ledger().unwrap());
    assert_eq!(differing_cells(&a, &b), 0);
    assert_eq!(restored.ledger().unwrap(), through.ledger().unwrap());
    assert_eq!(restored.params().solidify_rate, 1.0e-3, "the save carries the fluid");
}

/// A still pool cools at exactly the rate: 2 cm of lava at rest on flat ground, 0.5 mm/s, for
/// 10 s (600 frames of 1/60 s) loses `floor(rate·t / quantum)` quanta in every cell (the
/// remainder under a quantum is carried, not lost), and its surface does not move.
#[test]
fn a_still_pool_sets_at_the_solidify_rate() {
    let g = Grid::new(12, 12, 1.0).unwrap();
    let mut state = State::new(g);
    state.fill_to_level(0.02).unwrap();
    let start = state.depth[0];
    let rate = 5.0e-4;
    let mut sim = Simulation::cpu(state, Params { viscosity: 1.0e3, solidify_rate: rate, ..Params::default() }).unwrap();
    for _ in 0..600 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let end = sim.read_state().unwrap();
    let elapsed = sim.elapsed();
    let expected = (rate as f64 * elapsed / DEPTH_QUANTUM as f64).floor() as i32;
    let lost: Vec<i32> = end.depth.iter().map(|&d| start - d).collect();
    let surface_moved = (0..g.cell_count()).map(|i| ((end.terrain[i] as f64 + end.depth_m(i) as f64) - 0.02).abs()).fold(0.0, f64::max);
    println!("{elapsed} s at {rate} m/s: every cell lost {:?} quanta (expected {expected}, {:.6} m), ledger solidified {}, surface moved at most {surface_moved:e} m", lost.iter().min()..=lost.iter().max(), expected as f64 * DEPTH_QUANTUM as f64, sim.ledger().unwrap().solidified);
    assert!(lost.iter().all(|&l| l == expected));
    assert_eq!(sim.ledger().unwrap().solidified, expected as u64 * g.cell_count() as u64);
    assert!(surface_moved < 2.0 * DEPTH_QUANTUM as f64);
}
