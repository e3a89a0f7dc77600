//! The world in pages behind a dense grid's calls (`world_water.rs`): the same scene driven
//! through `WorldWater` and through a dense `Simulation` on the GPU gives the same water (depth
//! to the quantum, queries and texels within float rounding); edits, sources and drains across
//! page borders keep the ledger exact; queries and windows work anywhere in a world far past the
//! dense grid's limit; what the world does not do is refused by name. Every test prints what it
//! compares. Figures come from whatever adapter runs the tests (in CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::backend::gpu::world::BYTES_PER_RESIDENT_CELL;
use pipewater_core::world_water::WorldWater;
use pipewater_core::simulation::sample_surface;
use pipewater_core::{BackendPreference, Error, ErosionParams, Grid, Lattice, NeighbourMode, Params, Simulation, State};

/// Ground falling along x + y with ripples (m), for a `w × h` grid.
fn rough_slope(w: u32, h: u32) -> Vec<f32> {
    (0..h).flat_map(|y| (0..w).map(move |x| 4.0 - 0.015 * (x + y) as f32 + 0.3 * (x as f32 * 0.17).sin() * (y as f32 * 0.11).cos())).collect()
}

/// The same scene through a dense GPU simulation and through a world of the same size: water
/// poured across a page corner, ground dug and raised across page borders, water taken out, in
/// frames of fixed steps. Depth equal to the quantum in every cell at every check (the world's
/// step is the dense step's WGSL, and the world's brushes the dense grid's weights); surface,
/// depth, velocity queries and the window's texels within float rounding of the dense grid's.
#[test]
fn a_world_answers_as_the_dense_grid_on_the_same_scene() {
    if !gpu_or_skip("a_world_answers_as_the_dense_grid_on_the_same_scene") {
        return;
    }
    let (w, h, dx) = (240u32, 180u32, 0.5f32);
    let terrain = rough_slope(w, h);
    let params = Params::default();
    let grid = Grid::new(w, h, dx).unwrap();
    let mut dense = Simulation::new(State::with_terrain(grid, terrain.clone()).unwrap(), params.clone(), BackendPreference::Gpu).unwrap();
    let mut world = WorldWater::new(w, h, dx, 0.0, params).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    let side = world.world().page_side() as f32 * dx;
    let [ex, ez] = world.extent();
    // Local coordinates of the first page corner inside the world.
    let (corner_x, corner_z) = (side - ex / 2.0, side - ez / 2.0);
    let lattice = Lattice::square(grid);
    let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
    let mut worst_query = 0.0f32;
    let mut worst_texel = 0.0f32;
    for frame in 0..60u32 {
        match frame {
            0 => {
                let a = dense.add_water(corner_x, corner_z, 40.0, 6.0).unwrap();
                let b = world.add_water(corner_x, corner_z, 40.0, 6.0).unwrap();
                assert_eq!(a, b, "the volume placed");
            }
            10 => {
                dense.modify_terrain(corner_x + side, corner_z, -0.8, 5.0).unwrap();
                world.modify_terrain(corner_x + side, corner_z, -0.8, 5.0).unwrap();
            }
            20 => {
                dense.modify_terrain(corner_x, corner_z + side * 0.5, 0.6, 4.0).unwrap();
                world.modify_terrain(corner_x, corner_z + side * 0.5, 0.6, 4.0).unwrap();
            }
            30 => {
                dense.remove_water(corner_x + 3.0, corner_z + 3.0, 5.0, 4.0).unwrap();
                world.remove_water(corner_x + 3.0, corner_z + 3.0, 5.0, 4.0).unwrap();
            }
            _ => {}
        }
        dense.run_steps(0.02, 4).unwrap();
        world.run_steps(0.02, 4).unwrap();
        if frame % 10 == 9 {
            let state = dense.read_state().unwrap();
            let depth = world.world_mut().read_depth(0, 0, w, h).unwrap();
            let differs = depth.iter().zip(&state.depth).filter(|(a, b)| a != b).count();
            let wet = depth.iter().filter(|&&d| d > 0).count();
            let snapshot = dense.read_snapshot().unwrap();
            let window = world.read_window(0, 0, w, h).unwrap();
            let texel = window.height.iter().zip(&snapshot.height).chain(window.flow.iter().zip(&snapshot.flow)).flat_map(|(a, b)| a.iter().zip(b).map(|(p, q)| (p - q).abs())).fold(0.0f32, f32::max);
            worst_texel = worst_texel.max(texel);
            let mut query = 0.0f32;
            for k in 0..25 {
                let (x, z) = (corner_x - 8.0 + k as f32 * 0.71, corner_z - 5.0 + (k % 7) as f32 * 1.93);
                // The dense grid's own sampling of its fresh snapshot (its query calls may read a
                // snapshot of a frame before, as the GPU's readback lags).
                let a = [sample_surface(&snapshot, x, z).unwrap(), lattice.sample(x, z, |i| snapshot.height[i][1], lerp).unwrap()];
                let b = [world.surface_height(x, z).unwrap().unwrap(), world.depth(x, z).unwrap().unwrap()];
                let va = [lattice.sample(x, z, |i| snapshot.flow[i][0], lerp).unwrap(), lattice.sample(x, z, |i| snapshot.flow[i][1], lerp).unwrap()];
                let vb = world.flow_velocity(x, z).unwrap().unwrap();
                query = query.max((a[0] - b[0]).abs()).max((a[1] - b[1]).abs()).max((va[0] - vb[0]).abs()).max((va[1] - vb[1]).abs());
            }
            worst_query = worst_query.max(query);
            let report = world.report();
            println!(
                "frame {frame}: {wet} wet cells, depth differs in {differs}; texels differ by at most {texel:.2e}, queries by {query:.2e}; {} of {} pages resident",
                report.resident, report.pages
            );
            assert_eq!(differs, 0, "frame {frame}: the world's depth differs from the dense grid's");
        }
    }
    // Texels and queries are computed from the same fields by the CPU on the world's side and by
    // the texel pass on the dense GPU side: float rounding apart, the same numbers.
    assert!(worst_texel < 1.0e-4, "texels differ by {worst_texel}");
    assert!(worst_query < 1.0e-4, "queries differ by {worst_query}");
}

/// Water poured on a page corner, a source and a drain on two page borders, a brush across a
/// third, over 400 frames of varying length: the water held equals the water at the start plus
/// what edits, sources and drains put in and took out, to the quantum, at every check, while
/// pages come and go.
#[test]
fn the_ledger_stays_exact_with_sources_drains_and_brushes_across_pages() {
    if !gpu_or_skip("the_ledger_stays_exact_with_sources_drains_and_brushes_across_pages") {
        return;
    }
    let (w, h, dx) = (400u32, 300u32, 1.0f32);
    let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &rough_slope(w, h)).unwrap();
    let side = world.world().page_side() as f32 * dx;
    let [ex, ez] = world.extent();
    let (px, pz) = (2.0 * side - ex / 2.0, 2.0 * side - ez / 2.0);
    world.add_water(px, pz, 300.0, 8.0).unwrap();
    world.add_source(px - side, pz, 2.5, 3.0).unwrap();
    let drain = world.add_source(px, pz + 8.0, -1.5, 4.0).unwrap();
    let mut worst = 0i64;
    let mut pages_seen = (usize::MAX, 0usize);
    for frame in 0..400u32 {
        if frame % 50 == 25 {
            world.modify_terrain(px, pz + side * 0.3, if frame % 100 == 25 { -0.5 } else { 0.4 }, 6.0).unwrap();
        }
        if frame == 300 {
            assert!(world.remove_source(drain));
        }
        world.advance(0.012 + 0.006 * (frame % 5) as f32).unwrap();
        if frame % 40 == 39 {
            let (ledger, held) = world.ledger().unwrap();
            let expected = ledger.initial + ledger.counters.net();
            worst = worst.max((held - expected).abs());
            let report = world.report();
            pages_seen = (pages_seen.0.min(report.watered), pages_seen.1.max(report.watered));
            println!(
                "frame {frame}: held {held} quanta, expected {expected} (added {}, removed {}); {} pages with water fields, {} brought in, {} sent out, faults {}",
                ledger.counters.added, ledger.counters.removed, report.watered, report.allocated, report.freed, report.faults
            );
            assert_eq!(report.faults, 0);
        }
    }
    println!("worst |held − expected| over 10 checks: {worst} quanta; pages with water fields {}..={}", pages_seen.0, pages_seen.1);
    assert_eq!(worst, 0, "the ledger broke");
}

/// A 30000² world (900 M cells, refused as a dense grid) with a lake in one far corner and a
/// source in the opposite one: queries answer at both corners and at the centre, the window
/// around the lake holds its water and ground in the dense texel layout, and the device holds
/// a few pages' fields, not the world's.
#[test]
fn queries_and_windows_work_anywhere_in_a_world_past_the_dense_limit() {
    if !gpu_or_skip("queries_and_windows_work_anywhere_in_a_world_past_the_dense_limit") {
        return;
    }
    let side = 30_000u32;
    assert!(Grid::new(side, side, 1.0).is_err(), "a dense grid of this size is refused");
    let mut world = WorldWater::new(side, side, 1.0, 10.0, Params::default()).unwrap();
    let half = side as f32 / 2.0;
    // A basin 6 m deep near the north-west corner: 900 m³ poured within 14 m of its centre
    // stands at most 4.5 m high before it spreads, so none spills.
    let basin: Vec<f32> = (0..40 * 40).map(|i| if (5..35).contains(&(i % 40)) && (5..35).contains(&(i / 40)) { 4.0 } else { 10.0 }).collect();
    world.set_terrain_region(100, 100, 40, 40, &basin).unwrap();
    let (lake_x, lake_z) = (120.0 - half, 120.0 - half);
    world.add_water(lake_x, lake_z, 30.0 * 30.0 * 1.0, 14.0).unwrap();
    world.add_source(half - 50.0, half - 50.0, 4.0, 2.0).unwrap();
    for _ in 0..900 {
        world.advance(1.0 / 30.0).unwrap();
    }
    let lake = world.surface_height(lake_x, lake_z).unwrap().unwrap();
    let lake_depth = world.depth(lake_x, lake_z).unwrap().unwrap();
    let source_depth = world.depth(half - 50.0, half - 50.0).unwrap().unwrap();
    let centre = world.surface_height(0.0, 0.0).unwrap().unwrap();
    let off = world.depth(half + 1.0, 0.0).unwrap();
    let window = world.read_window(90, 90, 60, 60).unwrap();
    let window_water: f64 = window.height.iter().map(|t| t[1] as f64).sum();
    let (ledger, held) = world.ledger().unwrap();
    let device_mib = world.world().device_bytes() as f64 / (1 << 20) as f64;
    let dense_mib = side as f64 * side as f64 * BYTES_PER_RESIDENT_CELL as f64 / (1 << 20) as f64;
    println!(
        "{side}²: lake surface {lake:.4} m, depth {lake_depth:.4} m; depth at the source {source_depth:.4} m; surface at the centre {centre} m; off the world {off:?}; \
         window 60² holds {window_water:.2} m³ of water, deepest {:.4} m; held {held} quanta, expected {}; device {device_mib:.1} MiB (dense fields {dense_mib:.0} MiB)",
        window.max_depth,
        ledger.initial + ledger.counters.net()
    );
    // 900 m³ over the 900 m² floor of the basin stands 1 m deep, at 5 m, once it settles.
    assert!((lake - 5.0).abs() < 0.05 && (lake_depth - 1.0).abs() < 0.05, "the lake's surface {lake} m, depth {lake_depth} m");
    assert!(source_depth > 0.0, "the far source's water is where it was poured");
    assert_eq!(centre, 10.0, "the dry centre answers with its ground");
    assert_eq!(off, None, "off the world there is no answer");
    assert!((window_water - 900.0).abs() < 0.01, "the window holds the lake's 900 m³: {window_water}");
    assert_eq!(held, ledger.initial + ledger.counters.net());
    assert!(device_mib < 200.0, "the device holds {device_mib} MiB");
}

/// What the world does not do is refused by name, and a volume too deep for a cell is refused
/// (the dense grid's figure) with nothing added.
#[test]
fn what_the_world_does_not_do_is_refused_by_name() {
    if !gpu_or_skip("what_the_world_does_not_do_is_refused_by_name") {
        return;
    }
    let refused = |params: Params| match WorldWater::new(300, 300, 1.0, 0.0, params) {
        Err(Error::InvalidArgument { name, valid, .. }) => format!("{name}: {valid}"),
        Err(other) => panic!("refused, but not naming the setting: {other}"),
        Ok(_) => panic!("accepted"),
    };
    let lattice = refused(Params { neighbours: NeighbourMode::Triangular, ..Params::default() });
    let erosion = refused(Params { erosion: ErosionParams { enabled: true, ..ErosionParams::default() }, ..Params::default() });
    let cooling = refused(Params { solidify_rate: 0.01, ..Params::default() });
    println!("{lattice}\n{erosion}\n{cooling}");
    assert!(lattice.starts_with("neighbours") && erosion.starts_with("erosion") && cooling.starts_with("solidify_rate"));
    let mut world = WorldWater::new(300, 300, 0.05, 0.0, Params::default()).unwrap();
    let too_deep = world.add_water(0.0, 0.0, 20.0, 0.01);
    println!("20 m³ on one 5 cm cell: {too_deep:?}");
    assert!(matches!(too_deep, Err(Error::InvalidArgument { name: "volume", .. })));
    let (ledger, held) = world.ledger().unwrap();
    assert_eq!((held, ledger.counters.added), (0, 0), "nothing was added");
    assert!(world.read_window(0, 0, 0, 10).is_err() && world.read_window(300, 0, 10, 10).is_err());
}


/// The pages a frame may reach, worked out before it (`pages_within_reach`, what a world whose
/// ground arrives over time reads first), hold every page the frame brings onto the device (and
/// so every cell it wets: water lies only in pages on the device), and are not the whole world:
/// a dam break down a slope in frames of many steps, with a spring poured where no water was.
#[test]
fn the_pages_within_reach_hold_everything_a_frame_wets() {
    if !gpu_or_skip("the_pages_within_reach_hold_everything_a_frame_wets") {
        return;
    }
    let (w, h, dx) = (2000u32, 1400u32, 1.0f32);
    let mut params = Params::default();
    params.max_substeps = 400;
    let mut world = WorldWater::new(w, h, dx, 0.0, params).unwrap();
    world.set_terrain_region(0, 0, 900, 700, &rough_slope(900, 700)).unwrap();
    let [ex, ez] = world.extent();
    world.add_water(300.0 - ex / 2.0, 350.0 - ez / 2.0, 4000.0, 12.0).unwrap();
    let side = world.world().page_side();
    let [tx, ty] = world.world().pages();
    let (mut worst_outside, mut most_steps, mut largest_reach) = (0usize, 0u32, 0usize);
    for frame in 0..8 {
        if frame == 3 {
            world.add_source(700.0 - ex / 2.0, 150.0 - ez / 2.0, 5.0, 3.0).unwrap();
        }
        // Long frames: many steps each, the water crossing pages within one.
        let delta = 2.5;
        let reach = world.pages_within_reach(delta);
        let inside = |x: u32, y: u32| reach.iter().any(|r| x >= r.x && y >= r.y && x < r.x + r.width && y < r.y + r.height);
        let report = world.advance(delta).unwrap();
        most_steps = most_steps.max(report.substeps);
        largest_reach = largest_reach.max(reach.len());
        let in_play = world.world().pages_in_play();
        let outside = in_play.iter().filter(|&&p| !inside(p as u32 % tx * side, p as u32 / tx * side)).count();
        println!("frame {frame}: {} steps, {} of {} pages within reach before it, {} on the device after, {outside} of them outside the reach", report.substeps, reach.len(), tx * ty, in_play.len());
        worst_outside = worst_outside.max(outside);
    }
    let depth = world.world_mut().read_depth(0, 0, w, h).unwrap();
    let [tx_, _] = [tx as usize, ty as usize];
    let in_play = world.world().pages_in_play();
    let wet_off_device = depth.iter().enumerate().filter(|(i, &d)| d > 0 && in_play.binary_search(&((i / w as usize) / side as usize * tx_ + (i % w as usize) / side as usize)).is_err()).count();
    let (ledger, held) = world.ledger().unwrap();
    println!("most steps in a frame {most_steps}, largest reach {largest_reach} pages; {} wet cells at the end, {wet_off_device} outside the pages on the device; ledger: held {held}, expected {}", depth.iter().filter(|&&d| d > 0).count(), ledger.initial + ledger.counters.net());
    assert!(most_steps > side, "frames of more steps than a page has cells along its side: {most_steps}");
    assert_eq!(worst_outside, 0, "no page a frame brought onto the device lay outside the pages within its reach");
    assert_eq!(wet_off_device, 0, "water lies only in pages on the device");
    assert!(largest_reach < (tx * ty) as usize / 2, "the reach is the water's neighbourhood, not the world: {largest_reach} of {} pages", tx * ty);
    assert_eq!(held, ledger.initial + ledger.counters.net(), "the ledger is exact");
}

/// What an inflow edge owes its next frame is in a world's save: a world whose west edge lets in
/// under a quantum a cell each step (so that the edge pours only once its remainder adds up),
/// saved between two such pours and loaded, steps on as the world it was saved from: the same
/// water let in (boundary counter) and the same depth in every cell 60 frames on.
#[test]
fn an_inflow_edges_remainder_comes_back_with_a_world_save() {
    if !gpu_or_skip("an_inflow_edges_remainder_comes_back_with_a_world_save") {
        return;
    }
    let (w, h, dx) = (200u32, 150u32, 1.0f32);
    let mut params = Params::default();
    // 0.01 m³/s over 150 cells of the west edge: about 1.1 quanta a cell in a frame of 1/60 s.
    params.boundaries[3] = pipewater_core::Boundary::Inflow { rate: 0.01 };
    let mut world = WorldWater::new(w, h, dx, 0.0, params.clone()).unwrap();
    world.set_terrain_region(0, 0, w, h, &rough_slope(w, h)).unwrap();
    for _ in 0..41 {
        world.advance(1.0 / 60.0).unwrap();
    }
    let bytes = world.save().unwrap();
    let saved = pipewater_core::world_save::WorldSave::decode(&bytes).unwrap();
    println!("saved after 41 frames: the edges owe {:?} quanta; let in so far {}", saved.inflow_carry, saved.counters.boundary_in);
    let mut loaded = WorldWater::load(&bytes, dx, params).unwrap();
    for _ in 0..60 {
        world.advance(1.0 / 60.0).unwrap();
        loaded.advance(1.0 / 60.0).unwrap();
    }
    let ((l0, h0), (l1, h1)) = (world.ledger().unwrap(), loaded.ledger().unwrap());
    let (d0, d1) = (world.world_mut().read_depth(0, 0, w, h).unwrap(), loaded.world_mut().read_depth(0, 0, w, h).unwrap());
    let differs = d0.iter().zip(&d1).filter(|(a, b)| a != b).count();
    println!(
        "60 frames on: let in {} by the world saved from, {} by the loaded one; held {h0} and {h1} quanta; {differs} of {} cells differ",
        l0.counters.boundary_in,
        l1.counters.boundary_in,
        d0.len()
    );
    assert!(saved.counters.boundary_in > 0, "the edge poured before the save");
    assert_eq!(l1.counters.boundary_in, l0.counters.boundary_in, "the loaded world's edge lets in what the saved world's does");
    assert_eq!(h1, l1.initial + l1.counters.net(), "the loaded world's ledger is exact");
    assert_eq!(differs, 0, "the loaded world steps as the world it was saved from");
}

/// Sources and drains are in a world's save: a world with a spring and a drain on page borders,
/// saved and loaded, steps on as the world it was saved from (depth equal in every cell after 60
/// frames more each: the sources came back with their cells, shares and carries), the ledger
/// exact; a save begun while the world steps holds them too; the saved ids still name the
/// sources, and a new source gets an id of its own.
#[test]
fn sources_and_drains_come_back_with_a_world_save() {
    if !gpu_or_skip("sources_and_drains_come_back_with_a_world_save") {
        return;
    }
    let (w, h, dx) = (300u32, 200u32, 1.0f32);
    let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &rough_slope(w, h)).unwrap();
    let side = world.world().page_side() as f32 * dx;
    let [ex, ez] = world.extent();
    let (px, pz) = (side - ex / 2.0, side - ez / 2.0);
    let spring = world.add_source(px, pz, 3.0, 4.0).unwrap();
    // The drain overlaps the spring's downhill edge: it takes water from the first frames.
    let drain = world.add_source(px + 3.0, pz + 3.0, -1.0, 3.0).unwrap();
    for _ in 0..40 {
        world.advance(1.0 / 60.0).unwrap();
    }
    let bytes = world.save().unwrap();
    let sources = pipewater_core::world_save::WorldSave::decode(&bytes).unwrap().sources;
    println!("a save of {} bytes; sources saved (id, rate, cells): {:?}", bytes.len(), sources.iter().map(|s| (s.id, s.rate, s.cells.len())).collect::<Vec<_>>());
    assert_eq!(sources.len(), 2, "both sources are in the save");
    let mut loaded = WorldWater::load(&bytes, dx, Params::default()).unwrap();
    for _ in 0..60 {
        world.advance(1.0 / 60.0).unwrap();
        loaded.advance(1.0 / 60.0).unwrap();
    }
    let (ledger, held) = loaded.ledger().unwrap();
    let expected = ledger.initial + ledger.counters.net();
    println!("loaded world after 60 frames: {held} quanta held, {expected} expected (added {}, removed {})", ledger.counters.added, ledger.counters.removed);
    assert_eq!(held, expected, "the ledger is exact after the load");
    assert!(ledger.counters.added > 0 && ledger.counters.removed > 0, "the loaded spring pours and the loaded drain takes");
    let (d0, d1) = (world.world_mut().read_depth(0, 0, w, h).unwrap(), loaded.world_mut().read_depth(0, 0, w, h).unwrap());
    let differs = d0.iter().zip(&d1).filter(|(a, b)| a != b).count();
    let (q0, q1) = (d0.iter().map(|&d| d as i64).sum::<i64>(), d1.iter().map(|&d| d as i64).sum::<i64>());
    println!("the world saved from and the loaded one, 60 frames on: {differs} of {} cells differ; {q0} and {q1} quanta", d0.len());
    assert_eq!(differs, 0, "the loaded world's sources pour as the saved world's");

    let mut job = world.begin_save().unwrap();
    let begun = loop {
        world.advance(1.0 / 60.0).unwrap();
        if let Some(done) = world.poll_save(&mut job) {
            break done.unwrap();
        }
    };
    let saved = pipewater_core::world_save::WorldSave::decode(&begun).unwrap();
    println!("a save begun while stepping, of step {}: {} sources", saved.steps, saved.sources.len());
    assert_eq!(saved.sources.len(), 2, "the save begun while stepping holds the sources too");
    assert!(loaded.remove_source(drain), "the drain's id names it after the load");
    assert!(loaded.remove_source(spring), "and the spring's");
    let fresh = loaded.add_source(px, pz, 1.0, 2.0).unwrap();
    println!("ids: spring {spring:?}, drain {drain:?}, a source added after the load {fresh:?}");
    assert!(fresh != spring && fresh != drain);
}
