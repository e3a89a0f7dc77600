//! The editor's tools on a world in pages (`world_water/authoring.rs`): the brushes, the fill to
//! a shore and picking by ray answer as on a dense grid of the same scene; a stroke's record
//! holds exactly what it changed across page borders, and writing its values back undoes and
//! redoes it to the quantum with the ledger exact; what a world cannot do is refused with the
//! world unchanged. Every test prints what it compares. Figures come from whatever adapter runs
//! the tests (in CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::world_water::{WorldWater, FILL_REACH, MAX_BRUSH_REACH, MAX_REGION_CELLS};
use pipewater_core::{BackendPreference, CellRect, Grid, Params, Simulation, State};

/// A bowl whose lowest ground (0 m) lies at (cx, cy), rising 0.05 m a cell, with ripples.
fn bowl(w: u32, h: u32, cx: f32, cy: f32) -> Vec<f32> {
    (0..h).flat_map(|y| (0..w).map(move |x| 0.05 * ((x as f32 - cx).powi(2) + (y as f32 - cy).powi(2)).sqrt() + 0.2 * (x as f32 * 0.3).sin() * (y as f32 * 0.2).cos())).collect()
}

/// One brush on a dense grid and on a world, each returning the volume it reports.
type OnDense = Box<dyn Fn(&mut Simulation) -> f64>;
type OnWorld = Box<dyn Fn(&mut WorldWater) -> f64>;

fn whole(w: u32, h: u32) -> CellRect {
    CellRect { x: 0, y: 0, width: w, height: h }
}

/// The held water against the water at the start plus what edits put in and took out.
fn ledger_gap(world: &mut WorldWater) -> i64 {
    let (ledger, held) = world.ledger().unwrap();
    held - (ledger.initial + ledger.counters.net())
}

/// The same brushes on a 120 × 100 world (four pages) and on a dense CPU grid of the same
/// ground, at points across page borders: the depths to the quantum and the ground bit for bit
/// after each, and the same volumes returned. Cells of 1 m and brush points of few binary digits
/// put the world's footprint, worked out in a region's frame, on the same weights as the grid's.
#[test]
fn the_brushes_and_the_fill_change_a_world_as_they_change_a_dense_grid() {
    if !gpu_or_skip("the_brushes_and_the_fill_change_a_world_as_they_change_a_dense_grid") {
        return;
    }
    let (w, h) = (120u32, 100u32);
    let terrain = bowl(w, h, 56.0, 56.0);
    let grid = Grid::new(w, h, 1.0).unwrap();
    let mut dense = Simulation::new(State::with_terrain(grid, terrain.clone()).unwrap(), Params::default(), BackendPreference::Cpu).unwrap();
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    // Local (x, z) of the corner of the first four pages: cell (56, 56).
    let corner = (56.0 - w as f32 / 2.0, 56.0 - h as f32 / 2.0);
    let mut steps: Vec<(&str, OnDense, OnWorld)> = Vec::new();
    let (x, z) = corner;
    steps.push(("add 0.75 m, radius 6 m, on the page corner", Box::new(move |s| s.paint_water(x + 0.25, z - 0.5, 0.75, 6.0).unwrap()), Box::new(move |p| p.paint_water(x + 0.25, z - 0.5, 0.75, 6.0).unwrap())));
    steps.push(("remove 0.5 m, radius 3 m, beside it", Box::new(move |s| s.paint_water(x + 3.0, z + 1.5, -0.5, 3.0).unwrap()), Box::new(move |p| p.paint_water(x + 3.0, z + 1.5, -0.5, 3.0).unwrap())));
    steps.push(("remove 4 m (more than is there)", Box::new(move |s| s.paint_water(x - 2.0, z, -4.0, 2.5).unwrap()), Box::new(move |p| p.paint_water(x - 2.0, z, -4.0, 2.5).unwrap())));
    steps.push((
        "smooth 0.75, radius 7 m, across the border",
        Box::new(move |s| s.smooth_terrain(x - 1.5, z + 4.0, 0.75, 7.0).map(|()| 0.0).unwrap()),
        Box::new(move |p| p.smooth_terrain(x - 1.5, z + 4.0, 0.75, 7.0).map(|()| 0.0).unwrap()),
    ));
    steps.push(("fill the bowl to 1.5 m from a bank", Box::new(move |s| s.fill_to_shore(x + 20.0, z, 1.5).unwrap()), Box::new(move |p| p.fill_to_shore(x + 20.0, z, 1.5).unwrap())));
    for (what, on_dense, on_world) in &steps {
        let (a, b) = (on_dense(&mut dense), on_world(&mut world));
        let depth_dense = dense.depth_region(whole(w, h)).unwrap();
        let depth_world = world.depth_region(whole(w, h)).unwrap();
        let ground_dense = dense.terrain_region(whole(w, h)).unwrap();
        let ground_world = world.terrain_rect(whole(w, h)).unwrap();
        let depth_differs = depth_dense.iter().zip(&depth_world).filter(|(p, q)| p != q).count();
        let ground_differs = ground_dense.iter().zip(&ground_world).filter(|(p, q)| p.to_bits() != q.to_bits()).count();
        let wet = depth_world.iter().filter(|&&d| d > 0).count();
        println!("{what}: volume {a:.6} m³ dense, {b:.6} m³ world; {wet} wet cells; depth differs in {depth_differs} cells, ground in {ground_differs}");
        assert_eq!(depth_differs, 0, "{what}: depths");
        assert_eq!(ground_differs, 0, "{what}: ground");
        assert!((a - b).abs() <= 1.0e-9 * a.abs().max(1.0), "{what}: volumes {a} and {b}");
    }
    assert!(steps.len() == 5 && world.depth_region(whole(w, h)).unwrap().iter().filter(|&&d| d > 0).count() > 500, "the fill wetted the bowl");
    println!("ledger gap after the brushes: {} quanta", ledger_gap(&mut world));
    assert_eq!(ledger_gap(&mut world), 0);
}

/// A stroke of 40 dabs (water added and removed, ground raised, lowered and smoothed) wandering
/// over six pages of a 300 × 200 world with a lake that flowed for a while: the record's
/// rectangles are the smallest holding every changed cell (against a whole-world comparison);
/// writing `before` back gives the depths and ground from before the stroke to the quantum and
/// the bit, `after` those after it; the ledger stays exact through both; the world does not step
/// while the record is open, and steps again once it is finished.
#[test]
fn a_strokes_record_undoes_and_redoes_it_exactly_across_pages() {
    if !gpu_or_skip("a_strokes_record_undoes_and_redoes_it_exactly_across_pages") {
        return;
    }
    let (w, h) = (300u32, 200u32);
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &bowl(w, h, 150.0, 100.0)).unwrap();
    world.add_water(0.0, 0.0, 4000.0, 30.0).unwrap();
    for _ in 0..30 {
        world.advance(1.0 / 30.0).unwrap();
    }
    let (depth_then, ground_then) = (world.depth_region(whole(w, h)).unwrap(), world.terrain_rect(whole(w, h)).unwrap());
    world.begin_record();
    for k in 0..40 {
        let t = k as f32 / 39.0;
        let (x, z) = (-100.0 + 190.0 * t, -60.0 + 110.0 * t * t);
        match k % 5 {
            0 => drop(world.paint_water(x, z, 0.4, 5.0).unwrap()),
            1 => drop(world.paint_water(x, z, -0.3, 4.0).unwrap()),
            2 => world.modify_terrain(x, z, 0.2, 6.0).unwrap(),
            3 => world.modify_terrain(x, z, -0.35, 3.0).unwrap(),
            _ => world.smooth_terrain(x, z, 0.5, 5.0).unwrap(),
        }
    }
    let refused = world.advance(1.0 / 30.0).unwrap_err().to_string();
    println!("stepping with the record open: {refused}");
    assert!(refused.contains("finish_record"), "refused naming what to do: {refused}");
    let (depth_now, ground_now) = (world.depth_region(whole(w, h)).unwrap(), world.terrain_rect(whole(w, h)).unwrap());
    let changes = world.finish_record().unwrap();
    let smallest = |differs: &dyn Fn(usize) -> bool| {
        (0..(w * h) as usize).filter(|&i| differs(i)).fold(None, |r: Option<CellRect>, i| {
            let one = CellRect { x: i as u32 % w, y: i as u32 / w, width: 1, height: 1 };
            Some(r.map_or(one, |r| r.union(one)))
        })
    };
    let water_rect = smallest(&|i| depth_then[i] != depth_now[i]).unwrap();
    let ground_rect = smallest(&|i| ground_then[i].to_bits() != ground_now[i].to_bits()).unwrap();
    let (water, terrain) = (changes.water.unwrap(), changes.terrain.unwrap());
    println!("water changed over {water_rect:?}, recorded {:?}; ground over {ground_rect:?}, recorded {:?}", water.rect, terrain.rect);
    assert_eq!(water.rect, water_rect);
    assert_eq!(terrain.rect, ground_rect);
    assert!(water.rect.width > 2 * world.world().page_side() && water.rect.height > world.world().page_side(), "the stroke crossed pages");
    for (label, depths, heights, depth_want, ground_want) in [("undo", &water.before, &terrain.before, &depth_then, &ground_then), ("redo", &water.after, &terrain.after, &depth_now, &ground_now)] {
        world.set_depth_region(water.rect, depths).unwrap();
        world.set_terrain_rect(terrain.rect, heights).unwrap();
        let depth = world.depth_region(whole(w, h)).unwrap();
        let ground = world.terrain_rect(whole(w, h)).unwrap();
        let depth_differs = depth.iter().zip(depth_want.iter()).filter(|(a, b)| a != b).count();
        let ground_differs = ground.iter().zip(ground_want.iter()).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        let gap = ledger_gap(&mut world);
        println!("{label}: depth differs in {depth_differs} cells, ground in {ground_differs}; ledger gap {gap} quanta");
        assert_eq!((depth_differs, ground_differs, gap), (0, 0, 0), "{label}");
    }
    world.advance(1.0 / 30.0).unwrap();
    assert_eq!(ledger_gap(&mut world), 0);
}

/// A fill whose basin runs farther than `FILL_REACH` cells (a trough along a 1400-cell world) is
/// refused naming the reach, nothing added; a bowl's basin fills. Rays from a camera above pick
/// the same points as on a dense grid of the same scene (the lake's surface where it is wet,
/// the ground where dry) within a millimetre, a ray beside the world misses, and bad rays and
/// regions are refused by name.
#[test]
fn fills_past_their_reach_are_refused_and_rays_pick_as_on_a_dense_grid() {
    if !gpu_or_skip("fills_past_their_reach_are_refused_and_rays_pick_as_on_a_dense_grid") {
        return;
    }
    let (w, h) = (1400u32, 60u32);
    let trough: Vec<f32> = (0..h).flat_map(|y| (0..w).map(move |_| 0.1 * (y as f32 - 30.0).abs())).collect();
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &trough).unwrap();
    let refused = world.fill_to_shore(0.0, -20.0, 1.0).unwrap_err().to_string();
    let held = world.ledger().unwrap().1;
    println!("a fill along a {w}-cell trough (reach {FILL_REACH}): {refused}; water held {held} quanta");
    assert!(refused.contains(&FILL_REACH.to_string()) && held == 0, "refused with nothing added");

    let (w, h) = (240u32, 180u32);
    let terrain = bowl(w, h, 120.0, 90.0);
    let grid = Grid::new(w, h, 1.0).unwrap();
    let mut dense = Simulation::new(State::with_terrain(grid, terrain.clone()).unwrap(), Params::default(), BackendPreference::Cpu).unwrap();
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    let a = dense.fill_to_shore(30.0, 0.0, 1.2).unwrap();
    let b = world.fill_to_shore(30.0, 0.0, 1.2).unwrap();
    println!("a bowl filled to 1.2 m: {a:.3} m³ dense, {b:.3} m³ world");
    assert!(a > 100.0 && (a - b).abs() < 1.0e-9 * a);
    dense.run_steps(0.01, 1).unwrap();
    let mut worst = 0.0f32;
    let mut wet_hits = 0;
    // From a camera up a bank towards points across the lake (24 m across) and the dry bowl.
    let camera = [-70.0f32, 60.0, -90.0];
    for k in 0..12 {
        let target = [-44.0 + 8.0 * k as f32, 0.0, -33.0 + 6.0 * k as f32];
        let (origin, direction) = (camera, [target[0] - camera[0], target[1] - camera[1], target[2] - camera[2]]);
        let p = dense.raycast(origin, direction).unwrap();
        let q = world.raycast(origin, direction).unwrap().unwrap();
        let gap = (0..3).map(|i| (p[i] - q[i]).abs()).fold(0.0f32, f32::max);
        let depth = world.depth(q[0], q[2]).unwrap().unwrap();
        wet_hits += usize::from(depth > 0.0);
        println!("ray {k}: dense hit {p:?}, world hit {q:?} ({gap:.2e} m apart; depth there {depth:.3} m)");
        worst = worst.max(gap);
    }
    assert!(worst < 1.0e-3, "rays pick {worst} m apart");
    assert!((3..=9).contains(&wet_hits), "rays hit the lake and the dry bowl: {wet_hits} of 12 on water");
    assert_eq!(world.raycast([500.0, 50.0, 0.0], [1.0, -0.1, 0.0]).unwrap(), None, "a ray beside the world misses");
    // Past the dense limit: a 20000² world, a pond poured 7 km from a camera 300 m up.
    let mut far = WorldWater::new(20000, 20000, 1.0, 0.0, Params::default()).unwrap();
    far.add_water(7000.0, 7000.0, 2000.0, 20.0).unwrap();
    let hit = far.raycast([0.0, 300.0, 0.0], [7000.0, -300.0, 7000.0]).unwrap().unwrap();
    let surface = far.surface_height(hit[0], hit[2]).unwrap().unwrap();
    println!("a ray 9.9 km across a 20000² world: hit {hit:?}, the surface there {surface} m, depth {} m", far.depth(hit[0], hit[2]).unwrap().unwrap());
    assert!((hit[1] - surface).abs() < 1.0e-3 && far.depth(hit[0], hit[2]).unwrap().unwrap() > 0.1, "the ray meets the pond's surface");
    let bad_ray = world.raycast([0.0, 10.0, 0.0], [0.0, 0.0, 0.0]).unwrap_err().to_string();
    let bad_rect = world.depth_region(CellRect { x: 200, y: 0, width: 50, height: 10 }).unwrap_err().to_string();
    let bad_depths = world.set_depth_region(CellRect { x: 0, y: 0, width: 2, height: 1 }, &[1, -3]).unwrap_err().to_string();
    println!("refused: {bad_ray}; {bad_rect}; {bad_depths}");
    assert!(bad_ray.contains("direction") && bad_rect.contains("240x180") && bad_depths.contains("-3"));
    assert_eq!(ledger_gap(&mut world), 0);
}

/// What a careless script asks of a large world is refused by name before anything is
/// allocated for it: a brush or a source reaching past `MAX_BRUSH_REACH` cells (a footprint of a
/// radius of 10 km on a 16384² world would be 268 M cells), a region read past
/// `MAX_REGION_CELLS` (1 GiB of depths), and a change record whose edits spread past what it
/// holds, the edits made kept and the world stepping on.
#[test]
fn a_large_worlds_brushes_regions_and_records_are_bounded() {
    if !gpu_or_skip("a_large_worlds_brushes_regions_and_records_are_bounded") {
        return;
    }
    let side = 16384u32;
    let mut world = WorldWater::new(side, side, 1.0, 0.0, Params::default()).unwrap();
    let reach = MAX_BRUSH_REACH as f32;
    let refusals = [
        world.add_water(0.0, 0.0, 10.0, 10_000.0).unwrap_err().to_string(),
        world.remove_water(0.0, 0.0, 10.0, 10_000.0).unwrap_err().to_string(),
        world.modify_terrain(0.0, 0.0, 1.0, 10_000.0).unwrap_err().to_string(),
        world.paint_water(0.0, 0.0, 1.0, reach + 1.0).unwrap_err().to_string(),
        world.smooth_terrain(0.0, 0.0, 0.5, f32::INFINITY).unwrap_err().to_string(),
        world.add_source(0.0, 0.0, 1.0, 1.0e6).unwrap_err().to_string(),
        world.depth_region(CellRect { x: 0, y: 0, width: 4097, height: 4096 }).unwrap_err().to_string(),
        world.terrain_rect(whole(side, side)).unwrap_err().to_string(),
    ];
    for refusal in &refusals {
        println!("refused: {refusal}");
    }
    assert!(refusals[..6].iter().all(|r| r.contains(&format!("{MAX_BRUSH_REACH} cells"))));
    assert!(refusals[6..].iter().all(|r| r.contains(&MAX_REGION_CELLS.to_string())));
    assert_eq!(world.ledger().unwrap().1, 0, "nothing was added");
    // Two brushes 11 km apart make a payload past what a record keeps.
    world.begin_record();
    let poured = world.paint_water(-4000.0, -4000.0, 0.5, 300.0).unwrap();
    world.paint_water(4000.0, 4000.0, 0.5, 8.0).unwrap();
    let refused = world.finish_record().unwrap_err().to_string();
    let (ledger, held) = world.ledger().unwrap();
    println!("a brush poured {poured:.0} m³; a record spread from it to 11 km away: {refused}; held {held} quanta, added {}", ledger.counters.added);
    assert!(refused.contains("change record") && held > 0 && held == ledger.counters.net() && !world.is_recording());
    world.advance(0.05).unwrap();
    assert_eq!(ledger_gap(&mut world), 0);
}
