//! The focus policy of a world in pages (`WorldWater::set_focus`, `set_far_step_every`): pages far
//! from every focus step on one frame in k (or never), with the pipes between them and the pages
//! that step closed on both sides on the frames they sit out. Off (k = 1) the world steps as it
//! always did, bit for bit; on, the ledger stays exact at every frame while water runs against
//! and across the moving border, depth never goes negative, far water moves less than near water
//! and moves again, at full pace, once a focus comes near; bad settings are refused by name.
//! Every test prints what it compares. Figures come from whatever adapter runs the tests (in CI,
//! Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::quanta::depth_to_quanta;
use pipewater_core::world_water::{WorldWater, MAX_FAR_STEP_EVERY};
use pipewater_core::{Error, Params};

/// Pages along the river (each `side` cells), and the step every frame runs.
const RIVER_PAGES: u32 = 12;
const STEP: f32 = 0.02;
const SUBSTEPS: u32 = 2;

/// A river one page wide and `RIVER_PAGES` long, its bed falling 1 cm a cell along x between
/// banks 2 m high, filled 0.5 m deep along its whole length: it runs towards the far (east) end.
fn river() -> WorldWater {
    let probe = WorldWater::new(64, 64, 1.0, 0.0, Params::default()).unwrap();
    let side = probe.world().page_side();
    let (w, h) = (side * RIVER_PAGES, side);
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    let banks = |y: u32| y < side / 4 || y >= side - side / 4;
    let ground: Vec<f32> = (0..h).flat_map(|y| (0..w).map(move |x| 5.0 - 0.01 * x as f32 + if banks(y) { 2.0 } else { 0.0 })).collect();
    world.set_terrain_region(0, 0, w, h, &ground).unwrap();
    let water: Vec<(u32, u32, i32)> = (0..h).filter(|&y| !banks(y)).flat_map(|y| (0..w).map(move |x| (x, y, depth_to_quanta(0.5)))).collect();
    world.world_mut().add_water(&water).unwrap();
    world
}

/// Water in the cells from column `x0` to the world's east end, quanta: what it gains is what
/// crossed the line x = x0 eastwards (the world's edges are walls and nothing else adds water).
fn east_of(world: &mut WorldWater, x0: u32) -> i64 {
    let [w, h] = world.size();
    world.world_mut().read_depth(x0, 0, w - x0, h).unwrap().iter().map(|&d| d as i64).sum()
}

/// The ledger's gap (held − expected, quanta) and the shallowest cell (quanta) now.
fn ledger_and_floor(world: &mut WorldWater) -> (i64, i32) {
    let (ledger, held) = world.ledger().unwrap();
    let [w, h] = world.size();
    let floor = world.world_mut().read_depth(0, 0, w, h).unwrap().into_iter().min().unwrap_or(0);
    (held - (ledger.initial + ledger.counters.net()), floor)
}

/// Policy off (far_step_every 1, with foci set), and on with a radius that leaves no page far:
/// depth and every pipe of the whole world identical to the bit, at every check, to a world on
/// which the policy was never set, over 60 frames of a running river.
#[test]
fn with_the_policy_off_a_world_steps_as_it_always_did_bit_for_bit() {
    if !gpu_or_skip("with_the_policy_off_a_world_steps_as_it_always_did_bit_for_bit") {
        return;
    }
    let mut plain = river();
    let mut off = river();
    off.set_focus(&[[0.0, 28.0], [500.0, 10.0]], 60.0).unwrap();
    off.set_far_step_every(1).unwrap();
    let mut nothing_far = river();
    nothing_far.set_focus(&[[0.0, 0.0]], 1.0e6).unwrap();
    nothing_far.set_far_step_every(4).unwrap();
    let [w, h] = plain.size();
    for frame in 1..=60u32 {
        for world in [&mut plain, &mut off, &mut nothing_far] {
            world.run_steps(STEP, SUBSTEPS).unwrap();
        }
        if frame % 20 == 0 {
            let reference = (plain.world_mut().read_depth(0, 0, w, h).unwrap(), plain.world_mut().read_flow(0, 0, w, h).unwrap());
            let moved = east_of(&mut plain, w / 2);
            for (name, world) in [("far_step_every 1", &mut off), ("no page far, far_step_every 4", &mut nothing_far)] {
                let depth = world.world_mut().read_depth(0, 0, w, h).unwrap();
                let flow = world.world_mut().read_flow(0, 0, w, h).unwrap();
                let depth_differs = depth.iter().zip(&reference.0).filter(|(a, b)| a != b).count();
                let flow_differs = flow.iter().zip(&reference.1).filter(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).count();
                println!("frame {frame}, {name}: depth differs in {depth_differs} of {} cells, pipes in {flow_differs}; held pages {} (east half holds {moved} quanta)", depth.len(), world.report().held);
                assert_eq!((depth_differs, flow_differs), (0, 0), "{name} differs from the world without a policy");
                assert_eq!(world.report().held, 0);
            }
        }
    }
}

/// Runs `frames` frames, checking the ledger and the depth floor at every one, and returns the
/// quanta that crossed the near gauge (x = one page) and the far gauge (x = eight pages)
/// eastwards over them.
fn run_checked(world: &mut WorldWater, frames: u32, worst: &mut (i64, i32)) -> (i64, i64) {
    let side = world.world().page_side();
    let (near, far) = (side, 8 * side);
    let before = (east_of(world, near), east_of(world, far));
    for _ in 0..frames {
        world.run_steps(STEP, SUBSTEPS).unwrap();
        let (gap, floor) = ledger_and_floor(world);
        worst.0 = worst.0.max(gap.abs());
        worst.1 = worst.1.min(floor);
        assert_eq!(world.report().faults, 0);
    }
    (east_of(world, near) - before.0, east_of(world, far) - before.1)
}

/// The far river's depth and pipes in the pages from `first_page` to the east end.
fn fields_from(world: &mut WorldWater, first_page: u32) -> (Vec<i32>, Vec<[f32; 4]>) {
    let [w, h] = world.size();
    let x0 = first_page * world.world().page_side();
    (world.world_mut().read_depth(x0, 0, w - x0, h).unwrap(), world.world_mut().read_flow(x0, 0, w - x0, h).unwrap())
}

/// Values (depths and pipe bits) in which two sets of fields differ.
fn differing(a: &(Vec<i32>, Vec<[f32; 4]>), b: &(Vec<i32>, Vec<[f32; 4]>)) -> usize {
    a.0.iter().zip(&b.0).filter(|(p, q)| p != q).count() + a.1.iter().zip(&b.1).filter(|(p, q)| p.map(f32::to_bits) != q.map(f32::to_bits)).count()
}

/// A river with its one focus at the west end (radius 3 pages: pages 0..=3 near, 4..=11 far),
/// far_step_every 4, against the same river with the policy off. Far water lives at a quarter
/// of the time: after 40 frames the far gauge has passed what it passes in the first 10 frames
/// without the policy (within 2 %), and the river beyond the reach of the border (pages 7..=11)
/// is the one without the policy at frame 10, bit for bit; the near gauge passes what it passes
/// without the policy (within 20 %); the ledger is exact and no depth negative at every frame.
/// Once the focus moves to the far gauge, it passes water at the full pace again: in 40 frames at
/// least what the policy-off river passes in its frames 10..40 (the far river, 10 frames along,
/// then lives frames 10..50 of its life).
#[test]
fn far_water_moves_at_a_quarter_pace_and_at_full_pace_once_the_focus_comes() {
    if !gpu_or_skip("far_water_moves_at_a_quarter_pace_and_at_full_pace_once_the_focus_comes") {
        return;
    }
    let mut reference = river();
    let mut focused = river();
    let side = focused.world().page_side() as f64;
    focused.set_focus(&[[0.0, side / 2.0]], 3.0 * side).unwrap();
    focused.set_far_step_every(4).unwrap();
    let mut worst = (0i64, i32::MAX);
    let mut worst_reference = (0i64, i32::MAX);
    let (ref_near_10, ref_far_10) = run_checked(&mut reference, 10, &mut worst_reference);
    let reference_at_10 = fields_from(&mut reference, 7);
    let (ref_near_rest, ref_far_rest) = run_checked(&mut reference, 30, &mut worst_reference);
    let (ref_near, ref_far) = (ref_near_10 + ref_near_rest, ref_far_10 + ref_far_rest);
    let (near, far) = run_checked(&mut focused, 40, &mut worst);
    let differs = differing(&fields_from(&mut focused, 7), &reference_at_10);
    let held = focused.world().held_pages().iter().filter(|&&h| h).count();
    println!(
        "40 frames, focus at the west end, far_step_every 4 ({held} of {RIVER_PAGES} pages far): near gauge passed {near} quanta (policy off: {ref_near}, ratio {:.3}); far gauge {far} (policy off: {ref_far} in 40 frames, {ref_far_10} in the first 10; ratio to the 10 {:.4}); pages 7..=11 differ from the policy-off river at frame 10 in {differs} values",
        near as f64 / ref_near as f64,
        far as f64 / ref_far_10 as f64
    );
    assert_eq!(held, 8, "pages 4..=11 are far");
    assert!(ref_far_10 > 0 && ref_far > 2 * ref_far_10, "the river runs past the far gauge, faster and faster, with the policy off");
    assert!((far as f64 / ref_far_10 as f64 - 1.0).abs() < 0.02, "the far gauge passed what it passes in a quarter of the frames");
    assert_eq!(differs, 0, "the far river beyond the border's reach is the policy-off river a quarter as far along");
    assert!((near as f64 / ref_near as f64 - 1.0).abs() < 0.2, "the near gauge passes about what it passes with the policy off");
    // The focus moves to the far gauge: pages 4..=11 are near now and step every frame, the
    // west end sits out three frames in four.
    focused.set_focus(&[[8.0 * side, side / 2.0]], 3.0 * side).unwrap();
    let (_, far_after) = run_checked(&mut focused, 40, &mut worst);
    println!(
        "40 frames more, focus at the far gauge: it passed {far_after} quanta ({:.2}x its 40 frames before; the policy-off river passed {ref_far_rest} in its frames 10..40, the stretch of its life the far river now lives in 30 frames); worst ledger gap {} quanta, shallowest cell {} quanta (policy off: {} and {})",
        far_after as f64 / far as f64,
        worst.0,
        worst.1,
        worst_reference.0,
        worst_reference.1
    );
    let held_after = focused.world().held_pages().iter().filter(|&&h| h).count();
    assert_eq!(held_after, if focused.report().held > 0 { 4 } else { 0 }, "pages 0..=3 are far now");
    assert!(far_after >= ref_far_rest, "the far water flows at full pace once the focus is there: in 40 frames at least what the policy-off river passes in 30");
    assert_eq!(worst.0, 0, "the ledger broke");
    assert!(worst.1 >= 0, "a depth went negative");
}

/// Paused (far_step_every 0): the far pages' depth and pipes do not change by a bit while the
/// focus is away, the ledger is exact at every frame; once the focus comes, the far river runs
/// again (its gauge passes water, its fields change).
#[test]
fn paused_far_water_keeps_every_bit_and_runs_again_when_the_focus_comes() {
    if !gpu_or_skip("paused_far_water_keeps_every_bit_and_runs_again_when_the_focus_comes") {
        return;
    }
    let mut world = river();
    let side = world.world().page_side();
    world.set_focus(&[[0.0, side as f64 / 2.0]], 3.0 * side as f64).unwrap();
    world.set_far_step_every(0).unwrap();
    let mut worst = (0i64, i32::MAX);
    // Paused pages sit out every frame from the first: the far river stays as it was filled.
    let before = fields_from(&mut world, 4);
    let (near, far) = run_checked(&mut world, 40, &mut worst);
    let after = fields_from(&mut world, 4);
    let changed = differing(&before, &after);
    println!("40 frames paused: near gauge passed {near} quanta, far gauge {far}; far fields changed in {changed} values; held pages {}", world.report().held);
    assert!(near > 0, "the near river runs");
    assert_eq!((far, changed), (0, 0), "paused far water does not move");
    // The focus comes to the far gauge: pages 4..=11 near, the west end paused now.
    world.set_focus(&[[8.0 * side as f64, side as f64 / 2.0]], 3.0 * side as f64).unwrap();
    let (_, far_after) = run_checked(&mut world, 40, &mut worst);
    let changed_after = differing(&after, &fields_from(&mut world, 4));
    println!("40 frames with the focus at the far gauge: far gauge passed {far_after} quanta, far depth changed in {changed_after} cells; worst ledger gap {} quanta, shallowest cell {} quanta", worst.0, worst.1);
    assert!(far_after > 0 && changed_after > 0, "the far river runs again");
    assert_eq!(worst.0, 0, "the ledger broke");
    assert!(worst.1 >= 0, "a depth went negative");
}

/// A flood across a near/far border that moves: on flat ground, 2 m of water on a block of pages
/// against the border, a spring and a drain straddling it, a focus that walks east a few cells
/// a frame (so pages change sides while the water runs across), water poured into far pages on
/// frames they sit out, with far_step_every 2 and then 3. The water held equals the water at the
/// start plus what edits, the spring and the drain moved, to the quantum, at every frame; no
/// depth negative; the flood reaches far pages; the plan never faults.
#[test]
fn a_flood_across_a_moving_near_far_border_keeps_every_quantum() {
    if !gpu_or_skip("a_flood_across_a_moving_near_far_border_keeps_every_quantum") {
        return;
    }
    let probe = WorldWater::new(64, 64, 1.0, 0.0, Params::default()).unwrap();
    let side = probe.world().page_side();
    let (w, h) = (6 * side, 4 * side);
    let mut world = WorldWater::new(w, h, 1.0, 0.0, Params::default()).unwrap();
    let ground: Vec<f32> = (0..h).flat_map(|y| (0..w).map(move |x| 0.2 * ((x as f32 * 0.3).sin() + (y as f32 * 0.23).cos()))).collect();
    world.set_terrain_region(0, 0, w, h, &ground).unwrap();
    let [ex, ez] = world.extent();
    let local = |x: u32, y: u32| (x as f32 - ex / 2.0, y as f32 - ez / 2.0);
    // A flood filling the pages (1..=2, 1..=2) whose south-east corner is the border to come.
    let flood: Vec<(u32, u32, i32)> = (side..3 * side).flat_map(|y| (side..3 * side).map(move |x| (x, y, depth_to_quanta(2.0)))).collect();
    world.world_mut().add_water(&flood).unwrap();
    let (sx, sz) = local(3 * side, 2 * side);
    world.add_source(sx, sz, 3.0, 6.0).unwrap();
    let (dx, dz) = local(3 * side, 3 * side);
    world.add_source(dx, dz, -1.0, 5.0).unwrap();
    let mut worst = (0i64, i32::MAX);
    let mut held_frames = 0;
    let mut far_wet_seen = 0usize;
    for frame in 0..120u32 {
        world.set_far_step_every(if frame < 60 { 2 } else { 3 }).unwrap();
        // The focus walks east along the middle row; radius 1.5 pages: the border crosses the flood.
        let focus_x = side as f64 * (1.0 + frame as f64 * 0.04);
        world.set_focus(&[[focus_x, 2.0 * side as f64]], 1.5 * side as f64).unwrap();
        if frame % 7 == 3 {
            // Into a page far from the focus now (the world's south-east corner).
            let (px, pz) = local(w - side / 2, h - side / 2);
            world.add_water(px, pz, 25.0, 4.0).unwrap();
        }
        if frame % 11 == 5 {
            let (px, pz) = local(w - side / 2, h - side / 2);
            world.remove_water(px, pz, 10.0, 4.0).unwrap();
        }
        world.run_steps(STEP, SUBSTEPS).unwrap();
        held_frames += usize::from(world.report().held > 0);
        let (gap, floor) = ledger_and_floor(&mut world);
        worst.0 = worst.0.max(gap.abs());
        worst.1 = worst.1.min(floor);
        assert_eq!(world.report().faults, 0);
        if frame % 20 == 19 {
            let depth = world.world_mut().read_depth(0, 0, w, h).unwrap();
            let held = world.world().held_pages().to_vec();
            let tx = world.world().pages()[0];
            far_wet_seen = far_wet_seen.max((0..h).flat_map(|y| (0..w).map(move |x| (x, y))).filter(|&(x, y)| held[((y / side) * tx + x / side) as usize] && depth[(y * w + x) as usize] > 0).count());
            let (ledger, held_quanta) = world.ledger().unwrap();
            println!(
                "frame {frame}: held {held_quanta} quanta, expected {} (added {}, removed {}); {} pages held; ledger gap {gap}, shallowest {floor}",
                ledger.initial + ledger.counters.net(),
                ledger.counters.added,
                ledger.counters.removed,
                world.report().held
            );
        }
    }
    println!("120 frames, {held_frames} with pages held: worst ledger gap {} quanta, shallowest cell {} quanta; wet cells in held pages up to {far_wet_seen}", worst.0, worst.1);
    assert!(held_frames >= 60, "the policy held pages back on most frames");
    assert!(far_wet_seen > 0, "the flood reached pages held back");
    assert_eq!(worst.0, 0, "the ledger broke");
    assert!(worst.1 >= 0, "a depth went negative");
}

/// Bad settings are refused naming the argument and its range, and the policy in force stays:
/// a NaN or far-off focus, a NaN, negative or huge radius, a rhythm past MAX_FAR_STEP_EVERY, and
/// a held-page list of the wrong length.
#[test]
fn bad_focus_settings_are_refused_by_name() {
    if !gpu_or_skip("bad_focus_settings_are_refused_by_name") {
        return;
    }
    let mut world = WorldWater::new(200, 200, 1.0, 0.0, Params::default()).unwrap();
    world.set_focus(&[[10.0, 10.0]], 50.0).unwrap();
    world.set_far_step_every(3).unwrap();
    let far_before = world.far_pages();
    let name = |r: pipewater_core::Result<()>| match r {
        Err(Error::InvalidArgument { name, valid, .. }) => format!("{name}: {valid}"),
        other => panic!("not refused by name: {other:?}"),
    };
    let refusals = [
        name(world.set_focus(&[[f64::NAN, 3.0]], 10.0)),
        name(world.set_focus(&[[3.0, 1.0e12]], 10.0)),
        name(world.set_focus(&[[3.0, 3.0]], f64::NAN)),
        name(world.set_focus(&[[3.0, 3.0]], -1.0)),
        name(world.set_focus(&[[3.0, 3.0]], 1.0e12)),
        name(world.set_far_step_every(MAX_FAR_STEP_EVERY + 1)),
        name(world.world_mut().set_held_pages(&[true; 3])),
    ];
    for r in &refusals {
        println!("refused: {r}");
    }
    let expected = ["focus", "focus", "focus_radius", "focus_radius", "focus_radius", "far_step_every", "held pages"];
    for (r, e) in refusals.iter().zip(expected) {
        assert!(r.starts_with(&format!("{e}:")), "{r} names {e}");
    }
    assert_eq!(world.far_step_every(), 3, "the rhythm in force stays");
    assert_eq!(world.far_pages(), far_before, "the focus in force stays");
    // A focus off the world's edge is a camera beyond it: accepted, the edge pages near it.
    world.set_focus(&[[-20.0, 100.0]], 30.0).unwrap();
    let far = world.far_pages();
    let tx = world.world().pages()[0] as usize;
    println!("focus 20 cells west of the world, radius 30: west pages far {:?}", (0..far.len() / tx).map(|py| far[py * tx]).collect::<Vec<_>>());
    assert!(far.iter().any(|&f| !f) && far.iter().any(|&f| f));
}

