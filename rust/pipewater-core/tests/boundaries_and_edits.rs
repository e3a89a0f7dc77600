//! Edges (wall, open, inflow), sources and drains, and edits between steps.

mod common;

use common::*;
use pipewater_core::scenarios;
use pipewater_core::{Boundary, Edge, Error, Params, Simulation, State};

/// Walls keep water in: a sloshing box loses and gains nothing.
#[test]
fn walls_keep_water_in() {
    let g = grid(48, 48, 1.0);
    let mut sim = Simulation::cpu(scenarios::dam_break(g, 10, 2.0, 0.2), Params::default()).unwrap();
    let before = sim.read_state().unwrap().total_quanta();
    let after = run_fixed(&mut sim, 0.02, 3000).total_quanta();
    let counters = sim.ledger().unwrap().counters;
    println!("walled box: {before} quanta before, {after} after 3000 steps; counters {counters:?}");
    assert_eq!(before, after);
    assert_eq!(counters.net(), 0);
}

/// An open edge drains a tilted domain: water runs down to the open east edge and leaves.
#[test]
fn open_edge_drains_a_tilted_domain() {
    let g = grid(64, 16, 1.0);
    let mut state = State::new(g);
    for y in 0..g.height {
        for x in 0..g.width {
            state.terrain[g.index(x, y)] = 0.05 * (g.width - x) as f32;
        }
    }
    state.fill_to_level(0.0).expect("the test level lies within a cell's depth limit");
    state.depth.fill(pipewater_core::quanta::depth_to_quanta(0.2));
    let mut params = Params::default();
    params.boundaries[Edge::East as usize] = Boundary::Open;
    let mut sim = Simulation::cpu(state, params).unwrap();
    let qv = sim.quantum_volume();
    let initial = sim.read_state().unwrap().total_quanta() as f64 * qv;
    for _ in 0..600 {
        sim.advance(1.0 / 30.0).unwrap();
    }
    let remaining = sim.read_state().unwrap().total_quanta() as f64 * qv;
    let out = sim.ledger().unwrap().counters.boundary_out as f64 * qv;
    println!("tilted domain: {initial:.3} m³ at the start, {remaining:.3} m³ after 20 s, {out:.3} m³ left through the open edge");
    assert!(remaining < 0.05 * initial, "an open downhill edge drains at least 95 % in 20 s");
    assert!((initial - remaining - out).abs() <= qv, "what left is what the ledger says left");
}

/// An inflow edge fills the domain at the given rate: after T seconds the domain holds rate·T.
#[test]
fn inflow_edge_fills_at_the_given_rate() {
    /// The per-frame remainder is carried, so at most one quantum per edge cell per step is still
    /// owed at any time: far below this relative error.
    const TOLERANCE: f64 = 1.0e-6;
    let g = grid(40, 30, 0.5);
    let mut params = Params::default();
    let rate = 2.5f32;
    params.boundaries[Edge::West as usize] = Boundary::Inflow { rate };
    let mut sim = Simulation::cpu(State::new(g), params).unwrap();
    for _ in 0..300 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let t = sim.elapsed();
    let held = sim.read_state().unwrap().total_quanta() as f64 * sim.quantum_volume();
    let expected = rate as f64 * t;
    let error = (held - expected) / expected;
    println!("inflow {rate} m³/s for {t:.4} s: domain holds {held:.6} m³, expected {expected:.6} m³, relative error {error:.2e}");
    assert!(error.abs() < TOLERANCE);
    let inland = sim.depth(-7.0, 0.0).unwrap();
    println!("3 m in from the inflow edge the water is {inland:.3} m deep");
    assert!(inland > 0.0, "the water has spread into the domain");
}

/// A source adds exactly its rate over time and a drain removes what is there, never more.
#[test]
fn sources_add_their_rate_and_drains_never_take_more_than_is_there() {
    let g = grid(32, 32, 1.0);
    let mut sim = Simulation::cpu(State::new(g), Params::default()).unwrap();
    let qv = sim.quantum_volume();
    let source = sim.add_source(-8.0, 0.0, 1.5, 3.0).unwrap();
    for _ in 0..240 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let added = sim.ledger().unwrap().counters.added as f64 * qv;
    let t = sim.elapsed();
    /// What a source has not delivered yet is carried to the next frame; at most one quantum per
    /// footprint cell per step is owed at any time (a radius-3 m footprint has 29 cells, and these
    /// frames take at most two steps).
    const MAX_OWED_QUANTA: f64 = 29.0 * 2.0;
    let owed = (1.5 * t - added) / qv;
    println!("source 1.5 m³/s for {t:.3} s added {added:.6} m³ (expected {:.6}); {owed:.1} quanta still owed", 1.5 * t);
    assert!((0.0..=MAX_OWED_QUANTA).contains(&owed));

    assert!(sim.remove_source(source));
    assert!(!sim.remove_source(source), "a removed source cannot be removed twice");
    let held = sim.read_state().unwrap().total_quanta();
    sim.add_source(0.0, 0.0, -1000.0, 40.0).unwrap();
    for _ in 0..120 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let state = sim.read_state().unwrap();
    let removed = sim.ledger().unwrap().counters.removed;
    println!("a 1000 m³/s drain over a domain holding {:.3} m³ removed {:.3} m³ and left {:.3} m³", held as f64 * qv, removed as f64 * qv, state.total_quanta() as f64 * qv);
    assert_physical(&state, "after the drain");
    assert_eq!(removed as i64 + state.total_quanta(), held, "the drain removed exactly what was there to remove");
}

/// `add_water` delivers the requested volume (to one quantum volume), and `remove_water` returns
/// what it removed, never more than was there.
#[test]
fn add_water_delivers_the_volume_and_remove_water_returns_what_it_took() {
    let g = grid(32, 32, 0.5);
    let mut sim = Simulation::cpu(State::new(g), Params::default()).unwrap();
    let qv = sim.quantum_volume();
    for (volume, radius) in [(3.7f32, 2.0f32), (0.001, 0.1), (12.0, 0.0), (5.0, 6.0)] {
        let before = sim.total_water();
        let arrived = sim.add_water(1.0, -1.0, volume, radius).unwrap();
        let after = sim.total_water();
        println!("add {volume} m³ within {radius} m: {arrived:.9} m³ arrived, total {before:.6} → {after:.6}");
        assert!((arrived - volume as f64).abs() <= qv, "arrived {arrived}");
        assert!((after - before - arrived).abs() < 1e-9);
    }
    // Each footprint cell gives up to its weighted share of the request, never more than it holds.
    let held = sim.total_water();
    let taken = sim.remove_water(1.0, -1.0, 1000.0, 30.0).unwrap();
    let left = sim.total_water();
    println!("asked to remove 1000 m³ from {held:.6} m³: removed {taken:.6} m³, {left:.6} m³ left");
    assert!((held - left - taken).abs() < 1e-9, "the returned volume is what left the grid");
    assert!(taken <= held && taken > 0.0);
    assert_physical(&sim.read_state().unwrap(), "after removal");
    while sim.total_water() > 0.0 {
        sim.remove_water(1.0, -1.0, 1000.0, 30.0).unwrap();
    }
    assert_eq!(sim.remove_water(1.0, -1.0, 1.0, 1.0).unwrap(), 0.0, "nothing to remove from a dry grid");
}

/// Digging and raising terrain keeps the water depth, so the surface follows the ground and the
/// water then responds: a trench cut through a dam lets the lake out.
#[test]
fn terrain_edits_keep_depth_and_a_cut_dam_lets_the_lake_out() {
    let g = grid(60, 20, 1.0);
    let mut state = State::new(g);
    for y in 0..g.height {
        state.terrain[g.index(30, y)] = 3.0; // the dam
    }
    for y in 0..g.height {
        for x in 0..30 {
            state.depth[g.index(x, y)] = pipewater_core::quanta::depth_to_quanta(2.0);
        }
    }
    let mut sim = Simulation::cpu(state, Params::default()).unwrap();
    run_fixed(&mut sim, 0.02, 200);
    let dry_side_before = sim.depth(10.0, 0.0).unwrap();
    // (−14.5, 0.5) is the centre of cell (15, 10), where the edit's falloff is 1.
    let depth_before = sim.depth(-14.5, 0.5).unwrap();
    sim.modify_terrain(-14.5, 0.5, 0.5, 3.0).unwrap();
    let depth_after = sim.depth(-14.5, 0.5).unwrap();
    let terrain_after = sim.terrain_height(-14.5, 0.5).unwrap();
    println!("raising the lake bed by 0.5 m: depth {depth_before:.4} → {depth_after:.4} m, terrain now {terrain_after:.3} m; beyond the dam {dry_side_before:.4} m");
    assert_eq!(depth_before, depth_after, "a terrain edit keeps the depth");
    assert!((terrain_after - 0.5).abs() < 1e-6);
    assert_eq!(dry_side_before, 0.0, "the dam holds");
    sim.modify_terrain(0.5, 0.0, -3.5, 4.0).unwrap(); // dig through the dam
    run_fixed(&mut sim, 0.02, 600);
    let dry_side_after = sim.depth(10.0, 0.0).unwrap();
    println!("after digging through the dam: {dry_side_after:.3} m of water beyond it");
    assert!(dry_side_after > 0.2);
}

/// `reset` restores the initial state and zeroes the ledger.
#[test]
fn reset_restores_the_initial_state() {
    let g = grid(24, 24, 1.0);
    let start = scenarios::water_column(g, 5.0, 1.0);
    let mut sim = Simulation::cpu(start.clone(), Params::default()).unwrap();
    sim.add_water(3.0, 3.0, 10.0, 2.0).unwrap();
    run_fixed(&mut sim, 0.02, 100);
    sim.reset().unwrap();
    let state = sim.read_state().unwrap();
    assert_eq!(state, start);
    assert_eq!(sim.ledger().unwrap().counters.net(), 0);
    assert_eq!(sim.elapsed(), 0.0);
}

/// Bad arguments give errors that name the argument and its range, and change nothing.
#[test]
fn bad_arguments_are_rejected_with_named_ranges() {
    let g = grid(16, 16, 1.0);
    let mut sim = Simulation::cpu(scenarios::flat_pool(g, 1.0), Params::default()).unwrap();
    let before = sim.read_state().unwrap();
    let cases: Vec<(&str, Result<(), Error>)> = vec![
        ("volume", sim.add_water(0.0, 0.0, f32::NAN, 1.0).map(drop)),
        ("volume", sim.add_water(0.0, 0.0, -1.0, 1.0).map(drop)),
        ("radius", sim.add_water(0.0, 0.0, 1.0, 1.0e9).map(drop)),
        ("position", sim.remove_water(f32::INFINITY, 0.0, 1.0, 1.0).map(drop)),
        ("delta_height", sim.modify_terrain(0.0, 0.0, f32::NAN, 1.0)),
        ("rate", sim.add_source(0.0, 0.0, f32::INFINITY, 1.0).map(drop)),
        ("delta", sim.advance(-1.0).map(drop)),
        ("delta", sim.advance(f32::NAN).map(drop)),
        ("terrain", sim.set_terrain(&[0.0; 3])),
        ("terrain", sim.set_terrain(&vec![f32::NAN; 256])),
        ("gravity", sim.set_params(Params { gravity: -1.0, ..Params::default() })),
        ("width", pipewater_core::Grid::new(0, 16, 1.0).map(drop)),
        ("cell_size", pipewater_core::Grid::new(16, 16, 0.0).map(drop)),
    ];
    for (name, result) in cases {
        let message = result.expect_err(name).to_string();
        println!("{name}: {message}");
        assert!(message.contains(name), "'{message}' names {name}");
    }
    assert_eq!(sim.read_state().unwrap(), before, "rejected calls change nothing");
    assert_eq!(sim.depth(100.0, 0.0), None, "queries off the grid answer None");
}

/// The river valley scenario works as a landscape: its spring's water runs down the valley and
/// collects in the basin at the east end, and the diamond-square terrain is the same for the
/// same seed and different for another.
#[test]
fn river_valley_carries_its_spring_into_the_basin() {
    let g = grid(96, 64, 1.0);
    let (state, spring) = scenarios::river_valley(g, 9, 8.0);
    assert_eq!(scenarios::diamond_square(96, 64, 9, 0.5), scenarios::diamond_square(96, 64, 9, 0.5));
    assert_ne!(scenarios::diamond_square(96, 64, 9, 0.5), scenarios::diamond_square(96, 64, 10, 0.5));
    let mut sim = Simulation::cpu(state, Params::default()).unwrap();
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).unwrap();
    for _ in 0..60 * 60 {
        sim.advance(1.0 / 30.0).unwrap();
    }
    let state = sim.read_state().unwrap();
    let qv = sim.quantum_volume();
    let east: i64 = (0..g.height).flat_map(|y| (g.width * 2 / 3..g.width).map(move |x| (x, y))).map(|(x, y)| state.depth[g.index(x, y)] as i64).sum();
    let total = state.total_quanta();
    println!(
        "spring {:.2} m³/s for {:.0} s: {:.1} m³ in the domain, {:.1} m³ of it in the eastern third",
        spring.rate,
        sim.elapsed(),
        total as f64 * qv,
        east as f64 * qv
    );
    assert!(east as f64 > 0.3 * total as f64, "most of the spring's water has gone downstream");
}

/// Two 1 m-deep bowls on a 3 m plateau, split by the plateau's 6-cell-wide ridge between
/// x = 27 and x = 33, and one pit touching the west bowl only at a corner.
fn two_bowls() -> State {
    let g = grid(60, 20, 1.0);
    let mut state = State::new(g);
    for y in 0..g.height {
        for x in 0..g.width {
            let in_bowl = (2..27).contains(&x) || (33..58).contains(&x);
            state.terrain[g.index(x, y)] = if in_bowl && (2..18).contains(&y) { 0.0 } else { 3.0 };
        }
    }
    // A pit diagonal to the west bowl's corner cell (2, 2).
    state.terrain[g.index(1, 1)] = 0.0;
    state
}

/// `fill_basin` pours still water into the basin under a point: the connected cells below the
/// level reach it (to within a quantum), the bowl behind the ridge stays dry, the water stays
/// at rest, the ledger books the volume as added, and a second fill adds nothing.
#[test]
fn fill_basin_fills_the_connected_basin_to_the_level_and_no_further() {
    let state = two_bowls();
    let g = state.grid;
    let mut sim = Simulation::cpu(state, Params::default()).unwrap();
    let qv = sim.quantum_volume();
    // (−15.5, 0.5) is the centre of cell (14, 10), in the west bowl.
    let added = sim.fill_basin(-15.5, 0.5, 2.0).unwrap();
    let expected_volume = (25.0 * 16.0 + 1.0) * 2.0; // the bowl and the diagonal pit, 2 m deep
    let after = sim.read_state().unwrap();
    let west_depth = after.depth_m(g.index(14, 10));
    let pit_depth = after.depth_m(g.index(1, 1));
    let east_depth = after.depth_m(g.index(45, 10));
    let ledger_added = sim.ledger().unwrap().counters.added as f64 * qv;
    println!(
        "fill to 2 m: added {added:.4} m³ (bowl + pit {expected_volume:.1} m³), ledger {ledger_added:.4} m³; depth west {west_depth:.6} m, pit {pit_depth:.6} m, east {east_depth} m"
    );
    assert!((added - expected_volume).abs() < 1e-3);
    assert!((ledger_added - added).abs() <= qv, "the ledger books the fill as added water");
    assert!((west_depth - 2.0).abs() <= 2.0 * pipewater_core::quanta::DEPTH_QUANTUM);
    assert!((pit_depth - 2.0).abs() <= 2.0 * pipewater_core::quanta::DEPTH_QUANTUM, "eight neighbours: the diagonal pit is part of the basin");
    assert_eq!(east_depth, 0.0, "the ridge keeps the east bowl dry");

    let settled = run_fixed(&mut sim, 0.02, 500);
    let (mut lowest, mut highest) = (f32::INFINITY, f32::NEG_INFINITY);
    for y in 2..18 {
        for x in 2..27 {
            let i = g.index(x, y);
            let surface = settled.terrain[i] + settled.depth_m(i);
            lowest = lowest.min(surface);
            highest = highest.max(surface);
        }
    }
    println!("after 10 s the west surface spans {lowest:.6} ..= {highest:.6} m");
    assert!(highest - lowest < 1e-4, "the filled basin is at rest");
    assert_eq!(settled.depth_m(g.index(45, 10)), 0.0);

    let again = sim.fill_basin(-15.5, 0.5, 2.0).unwrap();
    let on_ridge = sim.fill_basin(0.5, 0.5, 2.0).unwrap();
    println!("second fill adds {again} m³; a fill started on the 3 m ridge adds {on_ridge} m³");
    assert!(again <= 25.0 * 16.0 * qv * 2.0, "a full basin takes at most a couple of quanta a cell");
    assert_eq!(on_ridge, 0.0);
}

/// In four-neighbour mode water cannot pass a corner, so neither does the fill.
#[test]
fn four_neighbour_fill_stops_at_corners() {
    let state = two_bowls();
    let g = state.grid;
    let params = Params { neighbours: pipewater_core::NeighbourMode::Four, ..Params::default() };
    let mut sim = Simulation::cpu(state, params).unwrap();
    let added = sim.fill_basin(-15.5, 0.5, 1.0).unwrap();
    let pit = sim.read_state().unwrap().depth_m(g.index(1, 1));
    println!("four neighbours, fill to 1 m: added {added:.4} m³ (bowl alone 400 m³), pit depth {pit} m");
    assert!((added - 400.0).abs() < 1e-3);
    assert_eq!(pit, 0.0);
}

/// Bad fill arguments are rejected with the argument named, and change nothing.
#[test]
fn fill_basin_rejects_bad_arguments() {
    let mut sim = Simulation::cpu(two_bowls(), Params::default()).unwrap();
    let off_grid = sim.fill_basin(100.0, 0.0, 2.0).unwrap_err().to_string();
    let nan_level = sim.fill_basin(-15.5, 0.5, f32::NAN).unwrap_err().to_string();
    let huge_level = sim.fill_basin(-15.5, 0.5, 2.0e6).unwrap_err().to_string();
    let total = sim.read_state().unwrap().total_quanta();
    println!("off grid: {off_grid}\nNaN level: {nan_level}\nhuge level: {huge_level}\ntotal after: {total}");
    assert!(off_grid.contains("position"));
    assert!(nan_level.contains("level") && huge_level.contains("level"));
    assert_eq!(total, 0);
}

/// The demo's reservoir, filled as a basin from upstream of the dam, stays behind the dam (its
/// crest holds it for the seeds and sizes the demo uses) and is deep at the dam.
#[test]
fn demo_reservoir_fills_only_the_basin_behind_the_dam() {
    for (size, seed) in [(128, 7), (256, 7), (256, 1), (256, 42), (512, 7)] {
        let g = grid(size, size, 1.0);
        let demo = scenarios::demo_landscape(g, seed, 0.55, 20.0);
        let s = &demo.state;
        let mut past_dam = 0usize;
        let mut reservoir_cells = 0usize;
        for y in 0..g.height {
            for x in 0..g.width {
                let u = (x as f32 + 0.5) / g.width as f32;
                let i = g.index(x, y);
                let surface = s.terrain[i] + s.depth_m(i);
                if s.depth[i] > 0 && surface > demo.lake_level + 1e-3 {
                    if u < scenarios::DEMO_DAM_U {
                        reservoir_cells += 1;
                    } else {
                        past_dam += 1;
                    }
                }
            }
        }
        let dam = g.cell_at(demo.dam[0] - 0.06 * size as f32, demo.dam[1]).unwrap();
        let depth_at_dam = s.depth_m(g.index(dam.0, dam.1));
        println!("{size}² seed {seed}: {reservoir_cells} reservoir cells, {past_dam} above the lake level past the dam, {depth_at_dam:.2} m deep just above the dam");
        assert_eq!(past_dam, 0, "the reservoir does not spill over the dam");
        assert!(reservoir_cells > size as usize * size as usize / 50, "the reservoir covers at least 2 % of the grid");
        assert!(depth_at_dam > 1.0);
    }
}

/// A fixed-level edge holds a sea at the map's edge: with water pouring in through the opposite
/// edge the surface at the sea edge stays at the sea level and the extra water leaves through it;
/// when the tide then rises, water flows in until the basin stands at the new level. Every
/// quantum that crosses the sea edge is in the ledger.
#[test]
fn fixed_level_edge_holds_a_sea_through_a_tide_of_inflow() {
    /// The edge cells' surface stands above the sea by the head that drives the poured water
    /// out, `Q/(W·√(g·h))` = 2 m³/s / (20 m · 3.13 m/s) = 0.032 m; allowed: up to 1.5 times it
    /// (the outflow is still catching up with the inflow after 60 s), and never below the sea.
    const EDGE_HEAD_M: f32 = 0.032;
    const EDGE_SURFACE_TOLERANCE_M: f32 = 1.5 * EDGE_HEAD_M;
    /// After the tide has risen, the whole basin stands at the new level within this. The edge
    /// lets the sea in at `W·√(g·h)·Δη`, so the basin approaches the tide with the time scale
    /// `A/(W·√(g·h))` ≈ 1200 m² / (20 m · 3.4 m/s) ≈ 18 s; 120 s leave 0.3 m · e^(−6.7) ≈ 0.4 mm
    /// and the seiches of a frictionless basin.
    const TIDE_TOLERANCE_M: f32 = 0.01;
    let g = grid(60, 20, 1.0);
    let mut state = State::new(g);
    for y in 0..g.height {
        for x in 0..g.width {
            // A beach rising from the sea (east) to the land (west).
            state.terrain[g.index(x, y)] = -1.0 + 0.02 * (g.width - 1 - x) as f32;
        }
    }
    state.fill_to_level(0.0).expect("the test level lies within a cell's depth limit");
    let sea = |level| {
        let mut p = Params::default();
        p.boundaries[Edge::East as usize] = Boundary::Level { level };
        p.boundaries[Edge::West as usize] = Boundary::Inflow { rate: 2.0 };
        p
    };
    let mut sim = Simulation::cpu(state, sea(0.0)).unwrap();
    for _ in 0..1800 {
        sim.advance(1.0 / 30.0).unwrap();
    }
    let s = sim.read_state().unwrap();
    let edge_surface = (0..g.height).map(|y| s.terrain[g.index(g.width - 1, y)] + s.depth_m(g.index(g.width - 1, y))).fold(f32::MIN, f32::max);
    let c = sim.ledger().unwrap().counters;
    let qv = sim.quantum_volume();
    let (actual, expected) = mass_identity(&mut sim);
    println!(
        "sea at 0 m, 2 m³/s pouring in from the west for 60 s: highest edge surface {edge_surface:+.4} m (Flather head {EDGE_HEAD_M} m); in {:.2} m³ (inflow edge and sea), out {:.2} m³ to the sea; mass {actual} = {expected}",
        c.boundary_in as f64 * qv,
        c.boundary_out as f64 * qv
    );
    assert!(edge_surface > 0.0 && edge_surface < EDGE_SURFACE_TOLERANCE_M, "the sea edge stands at {edge_surface} m");
    assert!(c.boundary_out as f64 * qv > 60.0, "the poured water leaves through the sea edge");
    assert_eq!(actual, expected);

    // The tide rises by 0.3 m with the inflow stopped: the sea floods the beach.
    let mut tide = sea(0.3);
    tide.boundaries[Edge::West as usize] = Boundary::Wall;
    sim.set_params(tide).unwrap();
    let before = sim.read_state().unwrap().total_quanta();
    for _ in 0..3600 {
        sim.advance(1.0 / 30.0).unwrap();
    }
    let s = sim.read_state().unwrap();
    let worst = (0..g.cell_count()).filter(|&i| s.depth[i] > 0).map(|i| (s.terrain[i] + s.depth_m(i) - 0.3).abs()).fold(0.0, f32::max);
    let gained = (s.total_quanta() - before) as f64 * qv;
    let (actual, expected) = mass_identity(&mut sim);
    println!("tide to +0.3 m, 120 s later: {gained:.2} m³ came in from the sea; worst wet surface {worst:.4} m from +0.3 m; mass {actual} = {expected}");
    assert!(worst < TIDE_TOLERANCE_M, "the basin stands {worst} m off the tide");
    assert!(gained > 0.0);
    assert_eq!(actual, expected);
}

/// Waves leave through a fixed-level edge rather than reflecting: a bump released next to it
/// leaves far less behind than it does next to a wall.
#[test]
fn waves_leave_through_a_fixed_level_edge() {
    /// A Flather edge absorbs a normally incident long wave; what stays is the part of the bump
    /// running the other way and small reflections of the discrete scheme.
    const REFLECTION_MAX: f64 = 0.1;
    let g = grid(200, 3, 0.5);
    let run = |boundary| {
        let mut state = scenarios::flat_pool(g, 1.0);
        for y in 0..g.height {
            for x in 0..g.width {
                let r = (x as f32 - 150.0) * 0.5;
                state.depth[g.index(x, y)] = pipewater_core::quanta::depth_to_quanta(1.0 + 0.05 * (-(r * r) / 8.0).exp());
            }
        }
        let mut params = physical_params();
        params.boundaries[Edge::East as usize] = boundary;
        params.boundaries[Edge::West as usize] = Boundary::Level { level: 1.0 };
        let s = run_fixed(&mut Simulation::cpu(state, params).unwrap(), 0.02, 2000);
        // Energy left: sum of squared surface displacement.
        (0..g.cell_count()).map(|i| ((s.depth_m(i) - 1.0) as f64).powi(2)).sum::<f64>()
    };
    let (wall, level) = (run(Boundary::Wall), run(Boundary::Level { level: 1.0 }));
    println!("40 s after a bump is released: Σ(η−1)² = {wall:.3e} with walls, {level:.3e} with fixed levels on both sides: {:.1} % left", 100.0 * level / wall);
    assert!(level < REFLECTION_MAX * wall);
}

/// An initial current set before the start is carried downstream: in a level channel with the
/// current set in its upstream half, the water there starts moving at that speed, and after a
/// while the water downstream moves the same way. It survives a reset.
#[test]
fn initial_current_is_carried_downstream_by_a_channel() {
    /// The snapshot's velocity of uniform flow is exact; this covers rounding.
    const START_TOLERANCE: f32 = 1.0e-4;
    let g = grid(120, 10, 1.0);
    let state = scenarios::flat_pool(g, 1.0);
    let mut params = physical_params();
    params.boundaries[Edge::East as usize] = Boundary::Level { level: 1.0 };
    params.boundaries[Edge::West as usize] = Boundary::Level { level: 1.0 };
    let mut sim = Simulation::cpu(state, params).unwrap();
    // The western half (local X < 0) flows east at 0.5 m/s.
    sim.set_initial_current([-60.0, -5.0], [0.0, 5.0], [0.5, 0.0]).unwrap();
    let speed_at = |sim: &mut Simulation, x: f32| sim.flow_velocity(x, 0.0).unwrap();
    let start = speed_at(&mut sim, -30.0);
    let still = speed_at(&mut sim, 30.0);
    for _ in 0..300 {
        sim.advance(1.0 / 30.0).unwrap();
    }
    let later = speed_at(&mut sim, 30.0);
    let total = sim.read_state().unwrap();
    sim.reset().unwrap();
    let after_reset = speed_at(&mut sim, -30.0);
    println!(
        "initial current: {:.4} m/s at x = −30 m, {:.4} m/s at x = +30 m; after 10 s {:.4} m/s at +30 m; after reset {:.4} m/s at −30 m; total water {:.1} m³",
        start[0], still[0], later[0], after_reset[0], total.total_quanta() as f64 * sim.quantum_volume()
    );
    assert!((start[0] - 0.5).abs() < START_TOLERANCE && start[1].abs() < START_TOLERANCE);
    assert!(still[0].abs() < START_TOLERANCE);
    assert!(later[0] > 0.05, "the current reached the downstream half");
    assert_eq!(after_reset, start, "reset restores the initial current");
    assert!(matches!(sim.set_initial_velocity(&[[0.0, 0.0]; 3]), Err(Error::WrongLength { name: "velocity", .. })));
    assert!(matches!(sim.set_initial_current([0.0, 0.0], [1.0, 1.0], [f32::NAN, 0.0]), Err(Error::InvalidArgument { name: "velocity", .. })));
}

/// `advance` reports only real losses: a frame that fits its substeps drops nothing (not even
/// float rounding), and a frame shorter than the minimum step is carried into the next one
/// instead of failing with an error about an argument the caller never passed.
#[test]
fn short_frames_are_carried_and_rounding_is_not_reported_as_dropped_time() {
    let g = grid(16, 16, 1.0);
    let mut sim = Simulation::cpu(scenarios::water_column(g, 3.0, 1.0), Params::default()).unwrap();
    let mut worst_dropped = 0.0f32;
    for delta in [1.0 / 60.0, 1.0 / 30.0, 0.0123, 0.1] {
        let report = sim.advance(delta).unwrap();
        worst_dropped = worst_dropped.max(report.dropped);
    }
    let tiny = pipewater_core::simulation::MIN_STEP * 0.5;
    let first = sim.advance(tiny).unwrap();
    let elapsed = sim.elapsed();
    let second = sim.advance(tiny).unwrap();
    println!(
        "largest dropped time over uncapped frames {worst_dropped:e} s; a {tiny:e} s frame: {} substeps, {:e} s simulated; the next: {} substeps of {:e} s, clock {:e} → {:e} s",
        first.substeps, first.simulated, second.substeps, second.step, elapsed, sim.elapsed()
    );
    assert_eq!(worst_dropped, 0.0);
    assert_eq!(first.substeps, 0);
    assert!(second.substeps == 1 && second.simulated >= pipewater_core::simulation::MIN_STEP * 0.999);
}
