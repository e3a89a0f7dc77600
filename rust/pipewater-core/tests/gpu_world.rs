//! A world stored in pages (`backend/gpu/world.rs`) steps exactly as the dense grid: the same
//! depth and pipes bit for bit as the dense wgpu backend on the same scene, through a flood that
//! crosses page corners diagonally, with the ledger exact at every check, and through a lake
//! awake everywhere with each page's tiles stepped as one workgroup; pages come in as the flood
//! arrives and leave when the water is gone; a world far past what the dense grid's buffers
//! hold steps with memory that follows its water; and the plan's fault count, which the host's
//! residency keeps at zero, does count water left beside a page that cannot step; and the device
//! memory a flood took falls back as it drains, the water stepping the same to the bit with the
//! slots moved at every frame, and a save on its way holding its water across the moves.
//! Every test prints what it compares. Figures come from whatever adapter runs the tests (in
//! CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::backend::gpu::world::{ShrinkRule, World, WorldReport, BYTES_PER_RESIDENT_CELL};
use pipewater_core::backend::gpu::{GpuBackend, GpuContext};
use pipewater_core::backend::{Backend, CellWater, FramePlan};
use pipewater_core::pipes::StepConstants;
use pipewater_core::quanta::depth_to_quanta;
use pipewater_core::{Grid, Params, State};

/// Ground falling along x + y with ripples, so that a flood runs diagonally across page corners.
fn sloped_terrain(w: u32, h: u32) -> Vec<f32> {
    (0..h).flat_map(|y| (0..w).map(move |x| 6.0 - 0.02 * (x + y) as f32 + 0.25 * (x as f32 * 0.11).sin() * (y as f32 * 0.13).cos())).collect()
}

/// A block of water `depth` m deep over the `side²` cells from (x0, y0).
fn block(x0: u32, y0: u32, side: u32, depth: f32) -> Vec<(u32, u32, i32)> {
    (y0..y0 + side).flat_map(|y| (x0..x0 + side).map(move |x| (x, y, depth_to_quanta(depth)))).collect()
}

fn constants(w: u32, h: u32) -> StepConstants {
    StepConstants::new(&Params::default(), w, h, 1.0, 0.02, [0; 4])
}

/// The `w × h` world against the dense grid stepped alike, at `when`: prints the figures, and
/// asserts depth and pipes identical to the bit, the world holding the `added` quanta, no fault.
/// The world's report, for what a test checks beyond that.
fn compare_with_dense(world: &mut World, dense: &mut GpuBackend, w: u32, h: u32, added: i64, when: &str) -> WorldReport {
    let state = dense.read_state().unwrap();
    let depth = world.read_depth(0, 0, w, h).unwrap();
    let flow = world.read_flow(0, 0, w, h).unwrap();
    let depth_differs = depth.iter().zip(&state.depth).filter(|(a, b)| a != b).count();
    let flow_differs = flow.iter().zip(&state.flow).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
    let held = world.total_quanta().unwrap();
    let report = world.report();
    let wet_cells = depth.iter().filter(|&&d| d > 0).count();
    println!(
        "{when}: {wet_cells} wet cells, {} of {} pages resident ({} with water fields, {} wet), {} tiles awake in {} workgroups; depth differs in {depth_differs} cells, pipes in {flow_differs}; held {held}, dense {}, added {added}; faults {}",
        report.resident,
        report.pages,
        report.watered,
        report.wet,
        report.awake,
        report.workgroups,
        state.total_quanta(),
        report.faults
    );
    assert_eq!(depth_differs, 0, "{when}: depth of the paged world differs from the dense grid's");
    assert_eq!(flow_differs, 0, "{when}: pipes of the paged world differ from the dense grid's");
    assert_eq!(held, added, "{when}: the world holds {held} quanta, {added} were added");
    assert_eq!(report.faults, 0, "{when}: a page with water beside it could not step");
    report
}

/// The paged world and the dense wgpu backend, stepped through the same frames of a flood that
/// starts in the world's first page and runs down the diagonal slope across page corners: depth
/// and pipes identical to the bit at every check (the same WGSL, a page's step reads only
/// resident pages), the ledger exact (water held = water added), no fault, and far fewer pages
/// resident than the world holds while the flood is young.
#[test]
fn a_world_in_pages_steps_as_the_dense_grid_bit_for_bit() {
    if !gpu_or_skip("a_world_in_pages_steps_as_the_dense_grid_bit_for_bit") {
        return;
    }
    let (w, h) = (300u32, 230u32);
    let terrain = sloped_terrain(w, h);
    let grid = Grid::new(w, h, 1.0).unwrap();
    let mut dense = GpuBackend::new(&State::with_terrain(grid, terrain.clone()).unwrap()).unwrap();
    let mut world = World::new(w, h, 0.0).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    // Its corner cell touches the corner of the first page, so the water crosses into three pages at once.
    let water = block(42, 43, 13, 1.2);
    dense.edit_water(&water.iter().map(|&(x, y, q)| CellWater { cell: y * w + x, quanta: q }).collect::<Vec<_>>()).unwrap();
    world.add_water(&water).unwrap();
    let added: i64 = water.iter().map(|&(_, _, q)| q as i64).sum();
    let c = constants(w, h);
    let side = world.page_side();
    println!("world {w}x{h} in pages of {side}x{side}: {} pages", world.report().pages);
    let mut resident_seen = Vec::new();
    for frame in 1..=80u32 {
        dense.advance(&FramePlan { constants: c, substeps: 4, forcing: &[] }).unwrap();
        world.advance(&c, 4).unwrap();
        if frame % 10 == 0 || frame == 1 {
            let report = compare_with_dense(&mut world, &mut dense, w, h, added, &format!("frame {frame}"));
            let counters = world.counters().unwrap();
            println!("frame {frame}: the ledger counted {} added", counters.added);
            assert_eq!(counters.added as i64, added, "frame {frame}: the ledger counted {} added", counters.added);
            resident_seen.push(report.resident);
        }
    }
    let report = world.report();
    println!("pages brought in {}, sent out {}, waits for flags {}", report.allocated, report.freed, report.waits);
    assert!(resident_seen[0] < report.pages, "the young flood keeps only the pages around it resident: {} of {}", resident_seen[0], report.pages);
    assert!(resident_seen.iter().max() > resident_seen.first(), "pages came in as the flood spread: {resident_seen:?}");
}

/// A still lake whose shore lies more than half a page from the borders of its pages gives water
/// fields to those pages alone, not to a ring of dry neighbours (the issue: a page where no
/// water is and none can arrive in the next step holds no water fields), from the edit that
/// made it on (not only once flags are read back); once its wall is cut
/// and the water runs out, the pages ahead of it come in as it nears them, and the world steps as
/// the dense grid does to the bit, ledger exact, no fault.
#[test]
fn a_lake_away_from_its_pages_borders_brings_no_ring_of_water_fields() {
    if !gpu_or_skip("a_lake_away_from_its_pages_borders_brings_no_ring_of_water_fields") {
        return;
    }
    let (w, h) = (560u32, 560u32);
    let grid = Grid::new(w, h, 1.0).unwrap();
    let mut world = World::new(w, h, 0.0).unwrap();
    let side = world.page_side();
    // A pit over the four pages around the world's middle, its shore 30 cells (more than half a
    // page) inside their outer borders.
    let (first, end) = (4 * side + 30, 6 * side - 30);
    let in_pit = |x: u32, y: u32| (first..end).contains(&x) && (first..end).contains(&y);
    let mut terrain: Vec<f32> = (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).map(|(x, y)| if in_pit(x, y) { 1.0 } else { 5.0 }).collect();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    let mut dense = GpuBackend::new(&State::with_terrain(grid, terrain.clone()).unwrap()).unwrap();
    let water: Vec<(u32, u32, i32)> = (first..end).flat_map(|y| (first..end).map(move |x| (x, y, depth_to_quanta(2.0)))).collect();
    dense.edit_water(&water.iter().map(|&(x, y, q)| CellWater { cell: y * w + x, quanta: q }).collect::<Vec<_>>()).unwrap();
    world.add_water(&water).unwrap();
    let added: i64 = water.iter().map(|&(_, _, q)| q as i64).sum();
    let c = constants(w, h);
    for _ in 0..10 {
        dense.advance(&FramePlan { constants: c, substeps: 4, forcing: &[] }).unwrap();
        world.advance(&c, 4).unwrap();
    }
    let still = compare_with_dense(&mut world, &mut dense, w, h, added, "lake at rest");
    assert_eq!(still.wet, 4, "the lake lies in four pages");
    assert_eq!(still.watered, 4, "only the lake's own pages hold water fields: its shore is more than half a page from every other page");
    assert_eq!(still.resident, 16, "the lake's pages and their twelve neighbours hold terrain");
    println!("pages brought in {}, sent out {}, water slots {}", still.allocated, still.freed, still.capacity);
    assert_eq!((still.allocated, still.freed), (16, 0), "the first frame, before any flags were read, brought in only what the lake's edit needs (its cells say which neighbours it is near)");
    // A channel cut from the pit's east shore to the world's east edge, below the pit's floor.
    for y in w / 2 - 6..w / 2 + 6 {
        for x in end..w {
            terrain[(y * w + x) as usize] = 0.5 - 0.02 * (x - end) as f32;
        }
    }
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    dense.set_terrain(&terrain).unwrap();
    let mut watered = Vec::new();
    // The water runs about a tenth of a cell a step: 800 steps take it across a page.
    for frame in 1..=200u32 {
        dense.advance(&FramePlan { constants: c, substeps: 4, forcing: &[] }).unwrap();
        world.advance(&c, 4).unwrap();
        if frame % 50 == 0 {
            watered.push(compare_with_dense(&mut world, &mut dense, w, h, added, &format!("breached, frame {frame}")).watered);
        }
    }
    // Beyond the lake's four pages and the two east of its shore (the channel crosses a border of
    // pages along y), those the running water came near.
    assert!(watered.iter().max() > Some(&6), "pages came in ahead of the water running east: {watered:?}");
}

/// With every page awake the step runs each page's tiles as one workgroup (the floor of
/// workgroups set to 0, as a large world awake everywhere would choose it): depth and pipes stay
/// identical to the dense grid's to the bit and the ledger exact, on a world whose last column
/// and row of pages are partial (its last row of pages has a single, short tile, which runs
/// alone), and the report shows fewer workgroups than tiles awake.
#[test]
fn pages_stepped_whole_step_as_the_dense_grid_bit_for_bit() {
    if !gpu_or_skip("pages_stepped_whole_step_as_the_dense_grid_bit_for_bit") {
        return;
    }
    let (w, h) = (230u32, 170u32);
    let terrain = sloped_terrain(w, h);
    // A lake over the whole slope, deepest where the ground is lowest: every pipe carries flow.
    let water: Vec<(u32, u32, i32)> = (0..h).flat_map(|y| (0..w).map(move |x| (x, y, depth_to_quanta(0.5 + 0.02 * (x + y) as f32 * 0.5)))).collect();
    let grid = Grid::new(w, h, 1.0).unwrap();
    let mut dense = GpuBackend::new(&State::with_terrain(grid, terrain.clone()).unwrap()).unwrap();
    dense.edit_water(&water.iter().map(|&(x, y, q)| CellWater { cell: y * w + x, quanta: q }).collect::<Vec<_>>()).unwrap();
    let mut world = World::new(w, h, 0.0).unwrap();
    world.set_merge_floor(0);
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    world.add_water(&water).unwrap();
    let added: i64 = water.iter().map(|&(_, _, q)| q as i64).sum();
    let c = constants(w, h);
    let mut merged_seen = false;
    for frame in 1..=30u32 {
        dense.advance(&FramePlan { constants: c, substeps: 4, forcing: &[] }).unwrap();
        world.advance(&c, 4).unwrap();
        if frame % 6 == 0 {
            let report = compare_with_dense(&mut world, &mut dense, w, h, added, &format!("frame {frame}, pages stepped whole"));
            merged_seen |= report.workgroups < report.awake;
        }
    }
    assert!(merged_seen, "the step never ran a page's tiles as one workgroup: the test compared nothing new");
}

/// Pages come in where water is put and leave once it is taken away again: after the water of a
/// flood is removed (each cell's depth, read back, taken out by edits), the next frames' flags
/// say dry and every page leaves; the ledger counts what was added and removed exactly.
#[test]
fn pages_leave_when_the_water_is_gone() {
    if !gpu_or_skip("pages_leave_when_the_water_is_gone") {
        return;
    }
    let (w, h) = (400u32, 300u32);
    let mut world = World::new(w, h, 0.0).unwrap();
    world.set_terrain_region(0, 0, w, h, &sloped_terrain(w, h)).unwrap();
    // Wide enough that more pages get water fields than the lists' first room holds.
    world.add_water(&block(150, 110, 70, 1.0)).unwrap();
    let c = constants(w, h);
    world.advance(&c, 40).unwrap();
    let before = world.report();
    let depth = world.read_depth(0, 0, w, h).unwrap();
    let held: i64 = depth.iter().map(|&d| d as i64).sum();
    let removal: Vec<(u32, u32, i32)> = depth.iter().enumerate().filter(|(_, &d)| d > 0).map(|(i, &d)| (i as u32 % w, i as u32 / w, -d)).collect();
    world.add_water(&removal).unwrap();
    for _ in 0..6 {
        world.advance(&c, 4).unwrap();
    }
    let after = world.report();
    let counters = world.counters().unwrap();
    let left = world.total_quanta().unwrap();
    println!(
        "with water: {} of {} pages resident ({} with water fields, {} wet), {held} quanta held; after taking it out: {} resident, {} wet, {left} quanta left; brought in {}, sent out {}; counters added {} removed {}",
        before.resident, before.pages, before.watered, before.wet, after.resident, after.wet, after.allocated, after.freed, counters.added, counters.removed
    );
    assert!(before.resident > 0 && before.resident < before.pages, "the flood keeps some pages resident, not all");
    assert_eq!(left, 0, "no water is left");
    assert_eq!(counters.added - counters.removed, 0, "the ledger: added {} removed {}", counters.added, counters.removed);
    assert_eq!(after.resident, 0, "every page left once no water was near it");
    assert_eq!(after.allocated, after.freed, "every page brought in was sent out");
}

/// A world far past what the dense grid's buffers hold (the dense backend refuses it, naming its
/// limit) is made, watered in one basin, stepped and read, with the ledger exact and its device
/// memory a few pages' worth; saved (a few kilobytes) and loaded, it holds the same water and
/// pipes to the bit and steps on alike; a world whose page lists pass one binding is refused
/// with the figure.
#[test]
fn a_world_past_the_dense_limit_steps_with_memory_that_follows_its_water() {
    if !gpu_or_skip("a_world_past_the_dense_limit_steps_with_memory_that_follows_its_water") {
        return;
    }
    let ctx = GpuContext::shared().unwrap();
    let side = 40_000u32;
    let refused = ctx.device_limits().check(Grid { width: side, height: side, cell_size: 1.0 }).expect_err("the dense grid is refused");
    println!("dense {side}x{side}: {refused}");
    let mut world = World::new(side, side, 0.0).unwrap();
    // A basin 60 m across with 2 m walls, far from the world's edges.
    let (x0, y0, n) = (20_010u32, 19_990u32, 64u32);
    let basin: Vec<f32> = (0..n).flat_map(|y| (0..n).map(move |x| if x == 0 || y == 0 || x == n - 1 || y == n - 1 { 2.0 } else { -1.0 })).collect();
    world.set_terrain_region(x0, y0, n, n, &basin).unwrap();
    let water = block(x0 + 20, y0 + 20, 10, 1.5);
    let added: i64 = water.iter().map(|&(_, _, q)| q as i64).sum();
    world.add_water(&water).unwrap();
    let c = constants(side, side);
    for _ in 0..10 {
        world.advance(&c, 8).unwrap();
    }
    let held = world.total_quanta().unwrap();
    let report = world.report();
    let depth = world.read_depth(x0, y0, n, n).unwrap();
    let wet = depth.iter().filter(|&&d| d > 0).count();
    let outside: i64 = world.read_depth(x0 - 60, y0 - 60, n + 120, n + 120).unwrap().iter().map(|&d| d as i64).sum::<i64>() - depth.iter().map(|&d| d as i64).sum::<i64>();
    let dense_bytes = side as u64 * side as u64 * BYTES_PER_RESIDENT_CELL;
    println!(
        "world {side}x{side}: {} pages, {} resident ({} with water fields, {} wet), {wet} wet cells in the basin, held {held} of {added} added, outside the basin {outside}; device {:.1} MiB (dense fields would be {:.1} GiB), host terrain {} KiB, faults {}",
        report.pages,
        report.resident,
        report.watered,
        report.wet,
        world.device_bytes() as f64 / (1u64 << 20) as f64,
        dense_bytes as f64 / (1u64 << 30) as f64,
        world.host_terrain_bytes() >> 10,
        report.faults
    );
    assert_eq!(held, added, "the ledger: held {held}, added {added}");
    assert_eq!(outside, 0, "the basin's walls hold the water");
    assert!(wet > 100, "the water spread over the basin floor: {wet} wet cells");
    assert_eq!(report.faults, 0);
    assert!(report.resident <= 36, "only the pages around the basin are resident: {}", report.resident);
    assert!(world.device_bytes() < dense_bytes / 1000, "device memory follows the water");

    // A save begun while the world steps on: a worker makes the device buffer, the first poll
    // after it is made records the copy, another worker encodes it. The save holds the water of
    // the step its copy was recorded at, read here right after that poll.
    let (rx, ry, rn) = (x0 - 60, y0 - 60, n + 120);
    let begun_step = world.report().steps;
    let mut job = world.begin_save().unwrap();
    let mut polls = 0;
    let mut at_copy = None;
    let bytes = loop {
        polls += 1;
        world.advance(&c, 8).unwrap();
        let done = world.poll_save(&mut job);
        if at_copy.is_none() && job.recorded_step().is_some() {
            at_copy = Some((job.recorded_step().unwrap(), world.read_depth(rx, ry, rn, rn).unwrap(), world.read_flow(rx, ry, rn, rn).unwrap()));
        }
        if let Some(done) = done {
            break done.unwrap();
        }
        assert!(polls < 1000, "the save never finished");
    };
    let (copy_step, copied_depth, copied_flow) = at_copy.expect("the copy was recorded before the save finished");
    let saved_step = pipewater_core::world_save::WorldSave::decode(&bytes).unwrap().steps;
    let mut then = World::load(&bytes).unwrap();
    let differs = then.read_depth(rx, ry, rn, rn).unwrap().iter().zip(&copied_depth).filter(|(a, b)| a != b).count()
        + then.read_flow(rx, ry, rn, rn).unwrap().iter().zip(&copied_flow).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
    let moved = world.read_depth(rx, ry, rn, rn).unwrap().iter().zip(&copied_depth).filter(|(a, b)| a != b).count();
    println!("a save begun at step {begun_step}, its copy recorded at step {copy_step}, finished over {polls} frames of stepping: {differs} cells differ from the water at the copy ({moved} cells moved since); the save says step {}", saved_step);
    assert_eq!(differs, 0, "the save holds the water of the step its copy was recorded at");
    assert_eq!(saved_step, copy_step, "the save names that step");
    assert!(moved > 0, "the world stepped on while the save was on its way");

    // Saved and loaded: the same water and pipes to the bit, the same ledger, and both go on
    // stepping alike.
    let bytes = world.save().unwrap();
    let mut loaded = World::load(&bytes).unwrap();
    for round in 0..2 {
        let (d0, d1) = (world.read_depth(rx, ry, rn, rn).unwrap(), loaded.read_depth(rx, ry, rn, rn).unwrap());
        let (f0, f1) = (world.read_flow(rx, ry, rn, rn).unwrap(), loaded.read_flow(rx, ry, rn, rn).unwrap());
        let differs = d0.iter().zip(&d1).filter(|(a, b)| a != b).count() + f0.iter().zip(&f1).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
        let (c0, c1) = (world.counters().unwrap(), loaded.counters().unwrap());
        println!("{}: save of {} bytes for a {side}x{side} world; cells differing {differs}; ledger {:?} against {:?}; loaded holds {} quanta", if round == 0 { "loaded" } else { "after 5 frames more each" }, bytes.len(), c0, c1, loaded.total_quanta().unwrap());
        assert_eq!(differs, 0, "the loaded world differs from the saved one");
        assert_eq!(c0, c1, "the ledger came back");
        for _ in 0..5 {
            world.advance(&c, 8).unwrap();
            loaded.advance(&c, 8).unwrap();
        }
    }
    assert_eq!(loaded.report().faults, 0);

    let huge = (1u32 << 30) - 1;
    let refused = World::new(huge, huge, 0.0).map(|_| ()).expect_err("a world whose page lists pass a binding is refused");
    println!("world {huge}x{huge}: {refused}");
    assert!(refused.to_string().contains("pages"), "the refusal names the pages: {refused}");
}

/// The plan's fault count is a real check: with the host's residency held still (a test-only
/// switch), a flood that runs down the slope reaches the edge of the resident pages, the pages
/// beyond cannot step, and the plan counts faults; the same flood with residency following the
/// water counts none.
#[test]
fn the_fault_count_catches_water_beside_a_page_that_cannot_step() {
    if !gpu_or_skip("the_fault_count_catches_water_beside_a_page_that_cannot_step") {
        return;
    }
    let (w, h) = (400u32, 400u32);
    let c = constants(w, h);
    let mut faults = Vec::new();
    for held in [false, true] {
        let mut world = World::new(w, h, 0.0).unwrap();
        world.set_terrain_region(0, 0, w, h, &sloped_terrain(w, h)).unwrap();
        world.hold_residency(held);
        world.add_water(&block(30, 30, 20, 2.0)).unwrap();
        for _ in 0..60 {
            world.advance(&c, 8).unwrap();
        }
        let report = world.report();
        println!("residency {}: {} pages resident, faults {}", if held { "held still" } else { "following the water" }, report.resident, report.faults);
        faults.push(report.faults);
    }
    assert_eq!(faults[0], 0, "residency that follows the water leaves no fault");
    assert!(faults[1] > 0, "water beside pages that cannot step is counted");
}

/// What [`flood_then_drain`] saw.
struct FloodRun {
    /// The most bytes the world held on the device, and its report then.
    peak_bytes: u64,
    peak: WorldReport,
    /// Bytes and report once the water is gone.
    after_bytes: u64,
    after: WorldReport,
    /// The least water slots the buffers had room for while the pool in the low corner was left.
    pool_capacity: usize,
    /// Depth and pipes of the whole world after every frame.
    frames: Vec<(Vec<i32>, Vec<[f32; 4]>)>,
}

/// A flood poured over most of the sloped `w × h` world (1 m over the cells from (28, 28) to 56
/// short of the far corner) runs downhill for 16 frames of 7 steps (odd, so that frames start
/// from either copy of depth and pipes), the fourth page column held back (the focus policy)
/// over frames 4 to 8; then the water is taken out (each wet cell's depth, read back, removed by
/// edits) outside a pool in the low corner, which steps on for 10 frames, settling; then the pool
/// is taken out and the world steps 6 frames dry. After every frame the ledger is exact (water
/// held = added − removed; the edges are walls) and the plan faults nowhere; prints the figures
/// each phase ends with.
fn flood_then_drain(world: &mut World, w: u32, h: u32) -> FloodRun {
    world.set_terrain_region(0, 0, w, h, &sloped_terrain(w, h)).unwrap();
    let c = constants(w, h);
    let pour: Vec<(u32, u32, i32)> = (28..h - 56).flat_map(|y| (28..w - 56).map(move |x| (x, y, depth_to_quanta(1.0)))).collect();
    world.add_water(&pour).unwrap();
    let mut run = FloodRun { peak_bytes: 0, peak: WorldReport::default(), after_bytes: 0, after: WorldReport::default(), pool_capacity: usize::MAX, frames: Vec::new() };
    // Removes the water of the cells `take` names, as read back now.
    let drain = |world: &mut World, take: &dyn Fn(u32, u32) -> bool| {
        let depth = world.read_depth(0, 0, w, h).unwrap();
        let removal: Vec<(u32, u32, i32)> = depth.iter().enumerate().filter(|(_, &d)| d > 0).map(|(i, &d)| (i as u32 % w, i as u32 / w, -d)).filter(|&(x, y, _)| take(x, y)).collect();
        world.add_water(&removal).unwrap();
    };
    let (pool_x, pool_y) = (w - 120, h - 120);
    for (phase, frames) in [("flood", 16u32), ("pool left", 10), ("drained", 6)] {
        match phase {
            "pool left" => drain(world, &|x, y| x < pool_x || y < pool_y),
            "drained" => drain(world, &|_, _| true),
            _ => {}
        }
        for frame in 1..=frames {
            if phase == "flood" && (frame == 4 || frame == 9) {
                let held: Vec<bool> = (0..world.report().pages).map(|page| frame == 4 && page as u32 % world.pages()[0] == 3).collect();
                world.set_held_pages(&held).unwrap();
            }
            world.advance(&c, 7).unwrap();
            let held = world.total_quanta().unwrap();
            let counters = world.counters().unwrap();
            let report = world.report();
            assert_eq!(held, counters.net(), "{phase}, frame {frame}: the world holds {held} quanta, the ledger says {} ({counters:?})", counters.net());
            assert_eq!(report.faults, 0, "{phase}, frame {frame}: a page with water beside it could not step");
            let bytes = world.device_bytes();
            if bytes > run.peak_bytes {
                (run.peak_bytes, run.peak) = (bytes, report);
            }
            if phase == "pool left" {
                run.pool_capacity = run.pool_capacity.min(report.capacity);
            }
            run.frames.push((world.read_depth(0, 0, w, h).unwrap(), world.read_flow(0, 0, w, h).unwrap()));
            if frame == frames {
                println!(
                    "{phase}, frame {frame}: {held} quanta held (ledger {}), {} pages resident, {} with water fields, {} wet; room for {} water slots; device {} bytes; shrunk {} times",
                    counters.net(),
                    report.resident,
                    report.watered,
                    report.wet,
                    report.capacity,
                    bytes,
                    report.shrinks
                );
            }
        }
    }
    (run.after_bytes, run.after) = (world.device_bytes(), world.report());
    run
}

/// Memory follows the water down as well as up (issue #48): after a flood over most of the world
/// is drained, the world's device memory falls back to about what the same world held dry (the
/// page lists the flood grew stay a few kilobytes larger), and a pool left behind keeps far less
/// room than the flood's peak; the ledger exact at every frame throughout.
#[test]
fn device_memory_falls_back_when_a_flood_drains() {
    if !gpu_or_skip("device_memory_falls_back_when_a_flood_drains") {
        return;
    }
    let (w, h) = (448u32, 392u32);
    let dry = World::new(w, h, 0.0).unwrap().device_bytes();
    let mut world = World::new(w, h, 0.0).unwrap();
    let page_bytes = (world.page_side() as u64).pow(2) * BYTES_PER_RESIDENT_CELL;
    let run = flood_then_drain(&mut world, w, h);
    println!(
        "world {w}x{h}: dry {dry} bytes; peak {} bytes ({} pages with water fields, room for {}); the pool left kept room for {} water slots; drained {} bytes (room for {}, {} above dry), {} shrinks",
        run.peak_bytes,
        run.peak.watered,
        run.peak.capacity,
        run.pool_capacity,
        run.after_bytes,
        run.after.capacity,
        run.after_bytes as i64 - dry as i64,
        run.after.shrinks
    );
    assert!(run.peak.watered >= 40, "the flood spread over many pages: {}", run.peak.watered);
    assert!(run.pool_capacity < run.peak.capacity / 2, "the pool left keeps room for {} water slots, the flood's peak had {}", run.pool_capacity, run.peak.capacity);
    assert!(run.after_bytes < dry + page_bytes, "drained, the world holds {} bytes, dry it held {dry}: more than a page of water fields ({page_bytes} bytes) above", run.after_bytes);
    assert_eq!(run.after.watered, 0, "no page keeps water fields once the water is gone");
}

/// Moving the live slots does not move the water: the flood of [`flood_then_drain`] on a world
/// whose fields never shrink and on one whose slots are compacted into new buffers at every
/// frame (and every edit flushed) holds the same depth and pipes to the bit after every frame,
/// through the flood, the pool left stepping on, and the drain.
#[test]
fn a_world_shrunk_every_frame_steps_as_one_never_shrunk_bit_for_bit() {
    if !gpu_or_skip("a_world_shrunk_every_frame_steps_as_one_never_shrunk_bit_for_bit") {
        return;
    }
    let (w, h) = (448u32, 392u32);
    let runs: Vec<FloodRun> = [ShrinkRule::Never, ShrinkRule::EveryFrame]
        .map(|rule| {
            let mut world = World::new(w, h, 0.0).unwrap();
            world.set_shrink_rule(rule);
            flood_then_drain(&mut world, w, h)
        })
        .into_iter()
        .collect();
    let (never, every) = (&runs[0], &runs[1]);
    assert_eq!(never.frames.len(), every.frames.len());
    let mut differing = Vec::new();
    for (frame, ((d0, f0), (d1, f1))) in never.frames.iter().zip(&every.frames).enumerate() {
        let depth = d0.iter().zip(d1).filter(|(a, b)| a != b).count();
        let flow = f0.iter().zip(f1).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
        if depth + flow > 0 {
            differing.push((frame + 1, depth, flow));
        }
    }
    let wet_frames = never.frames.iter().filter(|(d, _)| d.iter().any(|&q| q > 0)).count();
    println!(
        "{} frames compared ({wet_frames} with water); never shrunk: {} shrinks, room for {} water slots at the end, {} bytes; shrunk every frame: {} shrinks, room for {}, {} bytes; frames differing (frame, depth cells, pipe cells): {differing:?}",
        never.frames.len(),
        never.after.shrinks,
        never.after.capacity,
        never.after_bytes,
        every.after.shrinks,
        every.after.capacity,
        every.after_bytes
    );
    assert_eq!(never.after.shrinks, 0, "the world told never to shrink shrank");
    // At every frame but the flood's first, whose pages came in by growing the buffers instead.
    assert!(every.after.shrinks + 1 >= every.frames.len() as u64, "the slots moved at every frame: {} shrinks over {} frames", every.after.shrinks, every.frames.len());
    assert!(wet_frames >= 26, "the frames compared hold water: {wet_frames}");
    assert!(differing.is_empty(), "the water differs where the slots moved: {differing:?}");
}

/// A save begun before the fields shrink holds the water of the step its copy was recorded at:
/// begun over a flood, the world then drained to a pool and its slots compacted into new buffers
/// at every frame before the copy is recorded (the copy reads the slots of that moment) and
/// after it (the copy is on the queue ahead of the move, the old buffers dropped while it is
/// read back); loaded, it holds that water and ledger to the bit.
#[test]
fn a_save_begun_before_a_shrink_loads_to_the_water_of_its_copy() {
    if !gpu_or_skip("a_save_begun_before_a_shrink_loads_to_the_water_of_its_copy") {
        return;
    }
    let (w, h) = (448u32, 392u32);
    let mut world = World::new(w, h, 0.0).unwrap();
    world.set_shrink_rule(ShrinkRule::EveryFrame);
    world.set_terrain_region(0, 0, w, h, &sloped_terrain(w, h)).unwrap();
    let c = constants(w, h);
    world.add_water(&block(28, 28, 300, 1.0)).unwrap();
    for _ in 0..8 {
        world.advance(&c, 8).unwrap();
    }
    let begun = world.report();
    let mut job = world.begin_save().unwrap();
    // Most of the flood taken out: pages leave and the buffers shrink, before the first poll.
    let depth = world.read_depth(0, 0, w, h).unwrap();
    let removal: Vec<(u32, u32, i32)> = depth.iter().enumerate().filter(|(i, &d)| d > 0 && (*i as u32 / w) < 250).map(|(i, &d)| (i as u32 % w, i as u32 / w, -d)).collect();
    world.add_water(&removal).unwrap();
    for _ in 0..4 {
        world.advance(&c, 8).unwrap();
    }
    let before_copy = world.report();
    let mut at_copy = None;
    let mut polls = 0;
    let bytes = loop {
        polls += 1;
        let done = world.poll_save(&mut job);
        if at_copy.is_none() && job.recorded_step().is_some() {
            let (depth, flow) = (world.read_depth(0, 0, w, h).unwrap(), world.read_flow(0, 0, w, h).unwrap());
            at_copy = Some((job.recorded_step().unwrap(), depth, flow, world.counters().unwrap(), world.report()));
        }
        if let Some(done) = done {
            break done.unwrap();
        }
        // The world steps on, its slots moving each frame, while the copy is read back.
        if at_copy.is_some() {
            world.advance(&c, 8).unwrap();
        }
        assert!(polls < 1000, "the save never finished");
    };
    let (copy_step, depth, flow, counters, at_copy) = at_copy.expect("the copy was recorded before the save finished");
    let handed = world.report();
    let mut loaded = World::load(&bytes).unwrap();
    let depth_differs = loaded.read_depth(0, 0, w, h).unwrap().iter().zip(&depth).filter(|(a, b)| a != b).count();
    let flow_differs = loaded.read_flow(0, 0, w, h).unwrap().iter().zip(&flow).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
    let loaded_counters = loaded.counters().unwrap();
    let held = loaded.total_quanta().unwrap();
    println!(
        "save begun at step {} ({} pages with water fields, room for {}, {} shrinks); copy recorded at step {copy_step} ({} with water fields, room for {}, {} shrinks); handed over at step {} after {polls} polls ({} shrinks); loaded: {depth_differs} depth and {flow_differs} pipe cells differ from the water at the copy, {held} quanta held, ledger {} (at the copy {})",
        begun.steps,
        begun.watered,
        begun.capacity,
        begun.shrinks,
        at_copy.watered,
        at_copy.capacity,
        at_copy.shrinks,
        handed.steps,
        handed.shrinks,
        loaded_counters.net(),
        counters.net()
    );
    assert!(before_copy.shrinks > begun.shrinks && before_copy.capacity < begun.capacity, "the buffers shrank between the save's start and its copy");
    assert!(handed.shrinks > at_copy.shrinks, "the slots moved while the copy was on its way");
    assert_eq!(depth_differs + flow_differs, 0, "the save holds the water of its copy");
    assert_eq!(loaded_counters, counters, "the save holds the ledger of its copy");
    assert_eq!(held, counters.net(), "the loaded world holds what its ledger says");
}
