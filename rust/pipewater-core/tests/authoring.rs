//! What an editor's tools rely on: brushes that go through the ledger, regions of cells that a
//! stroke's undo writes back bit for bit on every backend, a fill that makes a point its shore,
//! sources that move, picking by ray, and the fields of a saved state for baked water.

mod common;
#[cfg(feature = "gpu")]
mod gpu_support;

use common::{grid, mass_identity};
use pipewater_core::authoring::{changed_rect, crop};
use pipewater_core::save::saved_fields;
use pipewater_core::{scenarios, BackendPreference, CellRect, Grid, Params, Simulation, State, DEPTH_QUANTUM};

/// A valley with a lake, on `preference`.
fn valley(preference: BackendPreference) -> Simulation {
    let (mut state, _) = scenarios::river_valley(grid(48, 32, 1.0), 11, 3.0);
    state.fill_to_level(0.8).expect("a level within the depth limit");
    Simulation::new(state, Params::default(), preference).expect("simulation")
}

/// The whole depth field, exactly.
fn depths(sim: &mut Simulation) -> Vec<i32> {
    let whole = sim.grid().whole();
    sim.depth_region(whole).expect("depth region")
}

/// A stroke of the add and remove brushes: three dabs of water, one of removal.
fn paint_stroke(sim: &mut Simulation) -> f64 {
    let mut net = 0.0;
    for (x, z) in [(-10.0, -3.0), (-8.5, -2.0), (-7.0, -1.0)] {
        net += sim.paint_water(x, z, 0.25, 3.0).unwrap();
    }
    net += sim.paint_water(6.0, 2.0, -0.3, 4.0).unwrap();
    sim.apply_edits().unwrap();
    net
}

/// The stroke's undo payload: the changed rectangle and its depths before and after.
fn region_of(sim: &mut Simulation, before: &[i32], after: &[i32]) -> (CellRect, Vec<i32>, Vec<i32>) {
    let g = sim.grid();
    let rect = changed_rect(&g, before, after, |a, b| a == b).expect("the stroke changed some cells");
    (rect, crop(&g, before, rect), crop(&g, after, rect))
}

fn stroke_undo_and_redo_are_exact(preference: BackendPreference, label: &str) {
    let mut sim = valley(preference);
    let before = depths(&mut sim);
    let net = paint_stroke(&mut sim);
    let after = depths(&mut sim);
    let (rect, was, now) = region_of(&mut sim, &before, &after);
    let qv = sim.quantum_volume();
    let painted = (after.iter().map(|&d| d as i64).sum::<i64>() - before.iter().map(|&d| d as i64).sum::<i64>()) as f64 * qv;
    println!("{label}: the stroke changed {} cells in {rect:?}, net {painted:.4} m³ (brushes said {net:.4} m³)", changed(&before, &after));

    let undo = sim.set_depth_region(rect, &was).unwrap();
    sim.apply_edits().unwrap();
    let undone = depths(&mut sim);
    let (actual, expected) = mass_identity(&mut sim);
    println!("{label}: undo added {} and removed {} quanta; {} cells differ from before; ledger {actual} vs {expected} quanta", undo.added, undo.removed, changed(&before, &undone));
    assert_eq!(undone, before, "{label}: the undo restores the depth field bit for bit");
    assert_eq!(actual, expected, "{label}: the ledger balances after the undo");

    let redo = sim.set_depth_region(rect, &now).unwrap();
    sim.apply_edits().unwrap();
    let redone = depths(&mut sim);
    let (actual, expected) = mass_identity(&mut sim);
    println!("{label}: redo added {} and removed {} quanta; {} cells differ from after; ledger {actual} vs {expected} quanta", redo.added, redo.removed, changed(&after, &redone));
    assert_eq!(redone, after, "{label}: the redo restores the stroke bit for bit");
    assert_eq!(actual, expected, "{label}: the ledger balances after the redo");
    assert_eq!((undo.added, undo.removed), (redo.removed, redo.added), "{label}: redo moves back exactly what undo moved");
}

fn changed(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

#[test]
fn a_paint_stroke_and_its_undo_restore_the_depth_field_bit_for_bit_on_the_cpu() {
    stroke_undo_and_redo_are_exact(BackendPreference::Cpu, "CPU");
}

#[cfg(feature = "gpu")]
#[test]
fn a_paint_stroke_and_its_undo_restore_the_depth_field_bit_for_bit_on_the_gpu() {
    if gpu_support::gpu_or_skip("a_paint_stroke_and_its_undo_restore_the_depth_field_bit_for_bit_on_the_gpu") {
        stroke_undo_and_redo_are_exact(BackendPreference::Gpu, "GPU");
    }
}

fn terrain_undo_is_exact(preference: BackendPreference, label: &str) {
    let mut sim = valley(preference);
    let whole = sim.grid().whole();
    let terrain_before = sim.terrain_region(whole).unwrap();
    let water_before = depths(&mut sim);
    sim.modify_terrain(3.0, 1.0, 0.7, 5.0).unwrap();
    sim.smooth_terrain(-4.0, 0.0, 0.8, 6.0).unwrap();
    sim.apply_edits().unwrap();
    let terrain_after = sim.terrain_region(whole).unwrap();
    let g = sim.grid();
    let rect = changed_rect(&g, &terrain_before, &terrain_after, |a, b| a.to_bits() == b.to_bits()).expect("the ground changed");
    sim.set_terrain_region(rect, &crop(&g, &terrain_before, rect)).unwrap();
    sim.apply_edits().unwrap();
    let terrain_undone = sim.terrain_region(whole).unwrap();
    let bits_differ = terrain_before.iter().zip(&terrain_undone).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    let water_now = depths(&mut sim);
    println!("{label}: raise and smooth changed {rect:?}; after the undo {bits_differ} heights differ in their bits, {} depths changed", changed(&water_before, &water_now));
    assert_eq!(bits_differ, 0, "{label}: the undo restores the terrain bit for bit");
    assert_eq!(water_now, water_before, "{label}: terrain edits and their undo keep every depth");
}

#[test]
fn a_terrain_stroke_and_its_undo_restore_the_heights_bit_for_bit_on_the_cpu() {
    terrain_undo_is_exact(BackendPreference::Cpu, "CPU");
}

#[cfg(feature = "gpu")]
#[test]
fn a_terrain_stroke_and_its_undo_restore_the_heights_bit_for_bit_on_the_gpu() {
    if gpu_support::gpu_or_skip("a_terrain_stroke_and_its_undo_restore_the_heights_bit_for_bit_on_the_gpu") {
        terrain_undo_is_exact(BackendPreference::Gpu, "GPU");
    }
}

/// A terrain source re-sculpted under the water: `move_terrain_region` moves a rectangle of
/// ground from what it was to new heights as queued edits. The ground lands on the new heights
/// (to one f32 addition's rounding), every other cell keeps its bits, a cell dug since keeps
/// the dig on top, every depth is kept and the ledger stays exact.
fn moved_terrain_lands_on_the_new_heights(preference: BackendPreference, label: &str) {
    let mut sim = valley(preference);
    let g = sim.grid();
    let whole = g.whole();
    let before = sim.terrain_region(whole).unwrap();
    let water_before = depths(&mut sim);
    let rect = CellRect { x: 5, y: 4, width: 9, height: 7 };
    let previous = crop(&g, &before, rect);
    let heights: Vec<f32> = previous.iter().enumerate().map(|(k, h)| h + 0.37 * ((k % 5) as f32 - 2.0)).collect();
    // A dig made in the rectangle after `previous` was read: it stays on top of the move.
    sim.modify_terrain(-14.0, -8.0, -0.5, 2.0).unwrap();
    sim.apply_edits().unwrap();
    let dug = sim.terrain_region(whole).unwrap();
    let dug_cells = before.iter().zip(&dug).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    assert!(dug_cells > 0, "the dig changed the ground");
    sim.move_terrain_region(rect, &previous, &heights).unwrap();
    sim.apply_edits().unwrap();
    let after = sim.terrain_region(whole).unwrap();
    let mut worst = 0.0f32;
    let mut outside_changed = 0;
    for y in 0..g.height {
        for x in 0..g.width {
            let i = g.index(x, y);
            let inside = x >= rect.x && y >= rect.y && x < rect.x + rect.width && y < rect.y + rect.height;
            if inside {
                let k = ((y - rect.y) * rect.width + (x - rect.x)) as usize;
                worst = worst.max((after[i] - (heights[k] + (dug[i] - before[i]))).abs());
            } else if after[i].to_bits() != dug[i].to_bits() {
                outside_changed += 1;
            }
        }
    }
    let water_now = depths(&mut sim);
    let (total, expected) = mass_identity(&mut sim);
    println!("{label}: {} cells moved, {dug_cells} dug first, largest miss {worst:e} m, {outside_changed} cells outside changed, {} depths changed, ledger {total} of {expected} quanta", rect.cell_count(), changed(&water_before, &water_now));
    assert_eq!(total, expected, "{label}: the ledger stays exact");
    assert!(worst <= 1e-6, "{label}: the ground lands on the new heights");
    assert_eq!(outside_changed, 0, "{label}: nothing outside the rectangle moves");
    assert_eq!(water_now, water_before, "{label}: every depth is kept");
}

#[test]
fn a_moved_terrain_region_lands_on_its_new_heights_on_the_cpu() {
    moved_terrain_lands_on_the_new_heights(BackendPreference::Cpu, "CPU");
}

#[cfg(feature = "gpu")]
#[test]
fn a_moved_terrain_region_lands_on_its_new_heights_on_the_gpu() {
    if gpu_support::gpu_or_skip("a_moved_terrain_region_lands_on_its_new_heights_on_the_gpu") {
        moved_terrain_lands_on_the_new_heights(BackendPreference::Gpu, "GPU");
    }
}

#[test]
fn regions_outside_the_grid_or_of_the_wrong_length_are_refused_and_nothing_changes() {
    let mut sim = valley(BackendPreference::Cpu);
    let before = depths(&mut sim);
    let cases: [(CellRect, usize); 4] = [
        (CellRect { x: 40, y: 0, width: 9, height: 1 }, 9),
        (CellRect { x: 0, y: 0, width: 0, height: 3 }, 0),
        (CellRect { x: 0, y: 31, width: 2, height: 2 }, 4),
        (CellRect { x: 0, y: 0, width: 2, height: 2 }, 3),
    ];
    for (rect, len) in cases {
        let error = sim.set_depth_region(rect, &vec![5; len]).unwrap_err();
        println!("{rect:?} with {len} values: {error}");
    }
    let negative = sim.set_depth_region(CellRect { x: 0, y: 0, width: 1, height: 1 }, &[-1]).unwrap_err().to_string();
    let nan = sim.set_terrain_region(CellRect { x: 0, y: 0, width: 1, height: 1 }, &[f32::NAN]).unwrap_err().to_string();
    println!("{negative}\n{nan}");
    assert!(negative.contains("depths") && negative.contains("0 ..="));
    assert!(nan.contains("heights") && nan.contains("finite"));
    assert_eq!(depths(&mut sim), before, "refused writes change nothing");
}

#[test]
fn filling_to_a_point_on_a_bank_raises_the_basin_below_it_to_that_height() {
    // A bowl: the ground rises with the distance from the centre, 0.1 m per metre.
    let g = grid(40, 40, 1.0);
    let mut terrain = vec![0.0; g.cell_count()];
    for y in 0..40 {
        for x in 0..40 {
            let [cx, cz] = g.cell_centre(x, y);
            terrain[g.index(x, y)] = 0.1 * (cx * cx + cz * cz).sqrt();
        }
    }
    let state = State::with_terrain(g, terrain.clone()).unwrap();
    let mut sim = Simulation::new(state, Params::default(), BackendPreference::Cpu).unwrap();
    // A point 12 m from the centre: its ground stands at 1.2 m, which is the new shore.
    let level = 1.2;
    let added = sim.fill_to_shore(12.0, 0.5, level).unwrap();
    let after = sim.read_state().unwrap();
    let expected: f64 = terrain
        .iter()
        .map(|&b| if b < level { ((level as f64 - b as f64) / DEPTH_QUANTUM as f64).floor() } else { 0.0 })
        .sum::<f64>()
        * sim.quantum_volume();
    let (actual, identity) = mass_identity(&mut sim);
    let deepest = after.depth.iter().max().copied().unwrap_or(0) as f32 * DEPTH_QUANTUM;
    println!("fill to the shore at 1.2 m: added {added:.4} m³, every cell below the shore to it would be {expected:.4} m³; deepest {deepest:.4} m; ledger {actual} vs {identity}");
    assert!((added - expected).abs() <= sim.quantum_volume() * 2.0, "the bowl fills to the shore's height");
    assert!((deepest - level).abs() < 0.1 + 1.0e-3, "the centre holds about the shore's height of water");
    assert_eq!(actual, identity);
    assert_eq!(sim.fill_to_shore(12.0, 0.5, level).unwrap(), 0.0, "a second fill to the same shore adds nothing");
    assert_eq!(sim.fill_to_shore(0.0, 0.0, -1.0).unwrap(), 0.0, "no ground lies below -1 m");
}

#[test]
fn a_moved_source_keeps_its_id_and_rate_and_pours_at_its_new_place() {
    let g = grid(32, 32, 1.0);
    let mut sim = Simulation::new(State::new(g), Params::default(), BackendPreference::Cpu).unwrap();
    let rate = 2.0f32;
    let id = sim.add_source(-10.0, 0.0, rate, 2.0).unwrap();
    for _ in 0..60 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let at_a = sim.depth(-10.0, 0.0).unwrap();
    assert!(sim.move_source(id, 10.0, 0.0, 2.0).unwrap());
    for _ in 0..60 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let (near_a, at_b) = (sim.depth(-10.0, 0.0).unwrap(), sim.depth(10.0, 0.0).unwrap());
    let added = sim.ledger().unwrap().counters.added as f64 * sim.quantum_volume();
    println!("after 1 s at A: {at_a:.4} m there; after 1 s more at B: {near_a:.4} m at A, {at_b:.4} m at B; added {added:.5} m³ of {:.5} m³", rate as f64 * 2.0);
    assert_eq!(sim.source_ids(), vec![id], "the id is kept");
    assert!(at_b > 0.05, "the moved source pours at its new place");
    assert!(near_a < at_a, "the old place no longer gets water (it spreads away)");
    // The source carries less than a quantum per cell of its footprint from frame to frame.
    assert!((added - rate as f64 * 2.0).abs() < 1.0e-4, "its rate is kept across the move");
    assert!(!sim.move_source(pipewater_core::SourceId(99), 0.0, 0.0, 1.0).unwrap(), "an unknown id moves nothing");
    assert!(sim.move_source(id, 500.0, 0.0, 1.0).is_err(), "a place off the grid is refused");
}

#[test]
fn a_ray_picks_the_water_surface_over_a_lake_and_the_ground_beside_it() {
    let mut sim = valley(BackendPreference::Cpu);
    let g: Grid = sim.grid();
    let mut checked = 0;
    for (x, z) in [(-15.0, 0.5), (0.0, -10.0), (12.0, 8.0)] {
        let surface = sim.surface_height(x, z).unwrap();
        let origin = [x - 20.0, surface + 30.0, z + 5.0];
        let direction = [20.0, -30.0, -5.0];
        let hit = sim.raycast(origin, direction).expect("the ray meets the surface");
        let miss = ((hit[0] - x).powi(2) + (hit[2] - z).powi(2)).sqrt();
        println!("surface {surface:.4} m at ({x}, {z}): the ray hits ({:.4}, {:.4}, {:.4}), {miss:.4} m away", hit[0], hit[1], hit[2]);
        assert!(miss < 0.5 * g.cell_size, "the hit lies where the ray meets the surface");
        checked += 1;
    }
    assert_eq!(checked, 3);
    assert_eq!(sim.raycast([0.0, 50.0, 0.0], [0.0, 1.0, 0.0]), None, "a ray upwards misses");
}

/// Longest a far ray may take, s: it samples at most 65 536 points, milliseconds of work; the
/// margin is for a loaded test machine. A march that stops advancing never ends.
const FAR_RAY_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// A ray from 2·10⁶ m straight down (or nearly) onto a pond ends, and meets the surface where
/// the pond is: at that distance a half-cell step is less than half an `f32` step, which once
/// stopped the march from moving. The ray runs in a thread of its own, so that a march that never
/// ends fails the test rather than hanging it.
#[test]
fn a_ray_from_two_thousand_kilometres_up_ends_on_the_pond_below() {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // A pond 0.5 m deep in a pit of flat ground: the box a ray crosses is 3 m tall, so a
        // march of 64 samples steps 5 cm, less than half of the 0.125 m between f32 values at 2e6.
        let g = grid(32, 32, 1.0);
        let terrain = (0..g.cell_count()).map(|i| if (8..24).contains(&(i % 32)) && (8..24).contains(&(i / 32)) { -1.0 } else { 0.0 }).collect();
        let mut state = State::with_terrain(g, terrain).expect("terrain");
        state.fill_to_level(-0.5).expect("a level within the depth limit");
        let mut sim = Simulation::new(state, Params::default(), BackendPreference::Cpu).expect("simulation");
        let (x, z) = (-3.0, 0.5);
        let surface = sim.surface_height(x, z).unwrap();
        let hits: Vec<_> = [[0.0, -1.0, 0.0], [1.0e-6, -1.0, 0.0]].into_iter().map(|direction| sim.raycast([x, 2.0e6, z], direction)).collect();
        let _ = sender.send((surface, hits));
    });
    let started = std::time::Instant::now();
    let (surface, hits) = receiver.recv_timeout(FAR_RAY_TIME_LIMIT).unwrap_or_else(|_| panic!("the far ray did not end within {FAR_RAY_TIME_LIMIT:?}"));
    println!("pond surface {surface:.4} m at (-3, 0.5); rays from 2e6 m: {hits:?} after {:?}", started.elapsed());
    // The tilted ray drifts 10⁻⁶ of the 2·10⁶ m it falls: 2 m along x.
    for (hit, drift) in hits.into_iter().zip([0.0, 1.0e-6 * (2.0e6 - surface)]) {
        let hit = hit.expect("the far ray meets the pond");
        assert!((hit[1] - surface).abs() < 0.01 && (hit[0] - (-3.0 + drift)).abs() < 0.5 && (hit[2] - 0.5).abs() < 0.5, "the hit {hit:?} lies on the pond at ({}, 0.5), {surface} m", -3.0 + drift);
    }
}

#[test]
fn the_fields_of_a_saved_state_are_the_simulations_own() {
    let mut sim = valley(BackendPreference::Cpu);
    paint_stroke(&mut sim);
    sim.advance(0.5).unwrap();
    let bytes = sim.save_state().unwrap();
    let fields = saved_fields(&bytes).unwrap();
    let state = sim.read_state().unwrap();
    println!("{} bytes: {} cells, {} quanta of water, params {:?}", bytes.len(), fields.state.grid.cell_count(), fields.state.total_quanta(), fields.params);
    assert_eq!(fields.state, state);
    assert_eq!(fields.params, *sim.params());
    assert!(saved_fields(&bytes[..bytes.len() - 1]).is_err(), "a truncated state is refused");
}
