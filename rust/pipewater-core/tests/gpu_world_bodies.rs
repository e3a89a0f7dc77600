//! Floating bodies on a world in pages (`world_water/bodies.rs`): a hull straddling a page corner
//! pushes the water of a world as it pushes the water of a dense GPU grid (forces and water
//! compared every frame), the ledger stays exact, queries and windows keep showing the true
//! terrain while the step's bed carries the hull, the displacement goes when the body leaves, a
//! free body settles at its draft, and bad input is refused by name. Every test prints what it
//! compares. Figures come from whatever adapter runs the tests (in CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::bodies::{couple, Body, BodyForce, HullShape};
use pipewater_core::glam::{Quat, Vec3};
use pipewater_core::quanta::DEPTH_QUANTUM;
use pipewater_core::world_water::WorldWater;
use pipewater_core::{BackendPreference, Error, Grid, Params, Simulation, State};

const DENSITY: f32 = 1000.0;
/// Largest relative difference between the forces (and torques) the world and the dense grid
/// find for the same hull: the world couples in the frame of a small region around the hull, so
/// the hull's sample points are the dense grid's moved by whole cells, which rounds differently
/// in the last bits of f32 (positions of tens of metres: about 1e-6 m), and the water the two
/// read differs where such rounding moved a quantum.
const FORCE_TOLERANCE: f32 = 1.0e-5;
/// Largest depth difference (quanta) in any cell after the run: a head rounded apart by a bit
/// (see FORCE_TOLERANCE) may move a quantum now and then, which the flow carries on. Where the
/// heads round alike, as in this scene on lavapipe, the depth is equal to the quantum.
const DEPTH_TOLERANCE_QUANTA: i32 = 8;

/// Ground of a `w × h` grid (m): a gentle bowl with ripples, deepest in the middle.
fn bowl(w: u32, h: u32) -> Vec<f32> {
    (0..h)
        .flat_map(|y| {
            (0..w).map(move |x| {
                let (u, v) = (x as f32 / w as f32 - 0.5, y as f32 / h as f32 - 0.5);
                0.6 * (u * u + v * v) + 0.05 * (x as f32 * 0.3).sin() * (y as f32 * 0.23).cos()
            })
        })
        .collect()
}

/// A dense GPU simulation and a world of the same size, ground and lake (level `level` m, walls).
fn lake(w: u32, h: u32, dx: f32, level: f32) -> (Simulation, WorldWater, Vec<f32>) {
    let terrain = bowl(w, h);
    let grid = Grid::new(w, h, dx).unwrap();
    let mut state = State::with_terrain(grid, terrain.clone()).unwrap();
    state.fill_to_level(level).unwrap();
    let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    let cells: Vec<(u32, u32, i32)> = (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).map(|(x, y)| (x, y, state.depth[(y * w + x) as usize])).filter(|c| c.2 > 0).collect();
    world.world_mut().add_water(&cells).unwrap();
    let dense = Simulation::new(state, Params::default(), BackendPreference::Gpu).unwrap();
    (dense, world, terrain)
}

fn assert_world_ledger(world: &mut WorldWater, what: &str) -> i64 {
    let (ledger, held) = world.ledger().unwrap();
    assert_eq!(held, ledger.initial + ledger.counters.net(), "{what}: the world's ledger broke");
    held
}

/// Relative difference of two vectors, against the larger and at least `floor`.
fn relative(a: Vec3, b: Vec3, floor: f32) -> f32 {
    (a - b).length() / a.length().max(b.length()).max(floor)
}

/// A box hull 4 m × 2 m, 0.8 m tall, turned 0.3 rad and towed across the corner where four pages
/// meet, dragging the water: every frame the dense GPU grid is coupled with its fresh snapshot
/// (`bodies::couple` and `apply_coupling`, as `couple_bodies` does without the readback's lag)
/// and the world with `couple_bodies`. The forces and torques agree within FORCE_TOLERANCE every
/// frame, the world's ledger is exact every frame, and the depth of every cell after 40 frames
/// within DEPTH_TOLERANCE_QUANTA. While the hull is on the water the step's bed under it is the
/// terrain plus its head, but the world's terrain queries, window texels and terrain reads show
/// the true terrain; once the body is taken away no head is left and the bed is the terrain again.
#[test]
fn a_hull_across_a_page_corner_pushes_a_world_as_it_pushes_a_dense_grid() {
    if !gpu_or_skip("a_hull_across_a_page_corner_pushes_a_world_as_it_pushes_a_dense_grid") {
        return;
    }
    let (w, h, dx, level) = (168u32, 168u32, 0.5f32, 0.9f32);
    let (mut dense, mut world, terrain) = lake(w, h, dx, level);
    let side = world.world().page_side();
    let g = dense.params().gravity;
    let corner = Vec3::new((side as f32 - w as f32 * 0.5) * dx, level, (side as f32 - h as f32 * 0.5) * dx);
    let hull = HullShape::Box { half_extents: Vec3::new(2.0, 0.4, 1.0) };
    let velocity = Vec3::new(0.6, 0.0, 0.25);
    let frame = 1.0 / 30.0;
    let start = assert_world_ledger(&mut world, "start");
    let (mut worst_force, mut worst_torque) = (0.0f32, 0.0f32);
    // What the world's coupling holds the caller (it waits for the last frame's steps), for the docs.
    let mut coupling_time = std::time::Duration::ZERO;
    for k in 0..40u32 {
        // Towed from 1.5 m before the corner to 1.2 m past it.
        let position = corner - velocity * 1.5 + velocity * (k as f32 * frame * 2.0);
        let body = Body { rotation: Quat::from_rotation_y(0.3), linear_velocity: velocity, drag: 2.0, ..Body::new(position, hull) };
        let snapshot = dense.read_snapshot().unwrap();
        let coupling = couple(&snapshot, std::slice::from_ref(&body), frame, DENSITY, g);
        dense.apply_coupling(&coupling).unwrap();
        let a: BodyForce = *coupling.forces[0].as_ref().unwrap();
        let began = std::time::Instant::now();
        let b: BodyForce = world.couple_bodies(std::slice::from_ref(&body), frame, DENSITY).unwrap().remove(0).unwrap();
        coupling_time += began.elapsed();
        let weight = DENSITY * g * a.displaced_volume.max(1.0e-3);
        let (df, dt) = (relative(a.force, b.force, weight), relative(a.torque, b.torque, weight));
        worst_force = worst_force.max(df);
        worst_torque = worst_torque.max(dt);
        if k % 8 == 0 {
            println!(
                "frame {k}: dense force {:?} N torque {:?} N·m, {} cells, {:.4} m³, level {:?}; world force {:?} torque {:?}, {} cells, {:.4} m³, level {:?}; relative {df:.2e} / {dt:.2e}",
                a.force, a.torque, a.cells, a.displaced_volume, a.water_level, b.force, b.torque, b.cells, b.displaced_volume, b.water_level
            );
        }
        assert!(a.cells > 0 && a.displaced_volume > 1.0, "frame {k}: the hull floats ({} m³ displaced)", a.displaced_volume);
        assert_eq!(a.cells, b.cells, "frame {k}: cells displaced");
        assert!(df < FORCE_TOLERANCE && dt < FORCE_TOLERANCE, "frame {k}: forces differ by {df}, torques by {dt}");
        dense.run_steps(frame / 4.0, 4).unwrap();
        world.run_steps(frame / 4.0, 4).unwrap();
        let held = assert_world_ledger(&mut world, &format!("frame {k}"));
        assert_eq!(held, start, "frame {k}: a hull moves water, never makes or takes it");
    }
    // While the hull is there: the step's bed carries it, the terrain everyone reads does not.
    let heads = world.world().displacement();
    let (hx, hy, head) = heads.iter().copied().fold((0, 0, 0.0f32), |best, c| if c.2 > best.2 { c } else { best });
    let bed = world.world_mut().read_step_terrain(hx, hy, 1, 1).unwrap()[0].unwrap();
    let true_terrain = terrain[(hy * w + hx) as usize];
    let (x, z) = ((hx as f32 + 0.5 - w as f32 * 0.5) * dx, (hy as f32 + 0.5 - h as f32 * 0.5) * dx);
    let queried = world.terrain_height(x, z).unwrap().unwrap();
    let window = world.read_window(hx - 8, hy - 8, 16, 16).unwrap();
    let window_terrain: Vec<f32> = window.height.iter().map(|t| t[2]).collect();
    let expected: Vec<f32> = (hy - 8..hy + 8).flat_map(|y| (hx - 8..hx + 8).map(move |x| (x, y))).map(|(x, y)| terrain[(y * w + x) as usize]).collect();
    let read = world.world().terrain_region(hx, hy, 1, 1).unwrap()[0];
    println!("{} cells under the hull; deepest head {head:.4} m at ({hx}, {hy}): step bed {bed:.4} m, terrain {true_terrain:.4} m; query {queried:.4}, terrain read {read:.4}; window terrain equal in {} of {} texels", heads.len(), window_terrain.iter().zip(&expected).filter(|(a, b)| a == b).count(), expected.len());
    assert!(head > 0.1 && (bed - (true_terrain + head)).abs() < 1.0e-5, "the step's bed under the hull is terrain plus head");
    assert!((queried - true_terrain).abs() < 1.0e-5 && read == true_terrain, "queries show the true terrain");
    assert_eq!(window_terrain, expected, "window texels show the true terrain");

    let dense_depth = dense.read_state().unwrap().depth;
    let world_depth = world.world_mut().read_depth(0, 0, w, h).unwrap();
    let differs = dense_depth.iter().zip(&world_depth).filter(|(a, b)| a != b).count();
    let most = dense_depth.iter().zip(&world_depth).map(|(a, b)| (a - b).abs()).max().unwrap();
    let pushed = dense_depth.iter().map(|&a| a as i64).sum::<i64>();
    println!(
        "after 40 frames: forces within {worst_force:.2e}, torques within {worst_torque:.2e} (relative); depth differs in {differs} of {} cells, by at most {most} quanta ({:.2e} m); {} quanta held; the world's coupling took {:.2} ms a frame",
        dense_depth.len(),
        most as f32 * DEPTH_QUANTUM,
        pushed,
        coupling_time.as_secs_f64() * 1.0e3 / 40.0
    );
    assert!(most <= DEPTH_TOLERANCE_QUANTA, "depth differs by {most} quanta");

    // The body leaves: no head is left, and the bed is the terrain again everywhere resident.
    world.couple_bodies(&[], frame, DENSITY).unwrap();
    world.run_steps(frame / 4.0, 4).unwrap();
    let left = world.world().displacement().len();
    let beds = world.world_mut().read_step_terrain(0, 0, w, h).unwrap();
    let resident = beds.iter().filter(|b| b.is_some()).count();
    let raised = beds.iter().zip(&terrain).filter(|(b, t)| b.is_some_and(|b| b != **t)).count();
    println!("body gone: {left} cells with a head; {resident} resident cells, {raised} whose bed differs from the terrain");
    assert_eq!((left, raised), (0, 0), "the displacement went with the body");
    assert!(resident > 0);
    assert_eq!(assert_world_ledger(&mut world, "body gone"), start);
}

/// A free 2 m × 2 m box of 1000 kg, 1 m tall, dropped on a world's lake with its centre on a page
/// corner, settles where it displaces its own mass of water (1 m³ within 2 %: a draft of 0.25 m)
/// and comes to rest, the ledger exact all along.
#[test]
fn a_free_box_on_a_page_corner_of_a_world_floats_at_its_draft() {
    if !gpu_or_skip("a_free_box_on_a_page_corner_of_a_world_floats_at_its_draft") {
        return;
    }
    let (w, h, dx, level) = (112u32, 112u32, 0.25f32, 0.8f32);
    let (_, mut world, _) = lake(w, h, dx, level);
    let side = world.world().page_side();
    let g = world.params().gravity;
    let (mass, half) = (1000.0f32, Vec3::new(1.0, 0.5, 1.0));
    let mut body = Body { drag: 2.0, ..Body::new(Vec3::new((side as f32 - w as f32 * 0.5) * dx, level + 0.5, (side as f32 - h as f32 * 0.5) * dx), HullShape::Box { half_extents: half }) };
    let start = assert_world_ledger(&mut world, "start");
    let frame = 1.0 / 60.0;
    let mut force = BodyForce::default();
    for k in 0..600 {
        force = world.couple_bodies(std::slice::from_ref(&body), frame, DENSITY).unwrap().remove(0).unwrap();
        body.linear_velocity.y += (force.force.y / mass - g) * frame;
        body.position.y += body.linear_velocity.y * frame;
        world.advance(frame).unwrap();
        if k % 120 == 0 {
            println!("t {:.1} s: centre {:.4} m, {:.4} m³ displaced, velocity {:.4} m/s", k as f32 * frame, body.position.y, force.displaced_volume, body.linear_velocity.y);
        }
    }
    let draft = force.water_level.unwrap() - (body.position.y - half.y);
    println!("settled: {:.4} m³ displaced (expected {:.4}), draft {draft:.4} m (expected 0.25), velocity {:.2e} m/s", force.displaced_volume, mass / DENSITY, body.linear_velocity.y);
    assert!((force.displaced_volume - mass / DENSITY).abs() <= 0.02 * mass / DENSITY, "displaced {} m³", force.displaced_volume);
    assert!((draft - 0.25).abs() <= 0.01, "draft {draft} m");
    assert!(body.linear_velocity.y.abs() < 0.01, "the box has not come to rest");
    assert_eq!(assert_world_ledger(&mut world, "settled"), start);
}

/// Bad input is refused by name and leaves the water safe: a frame length or density out of
/// range refuses the whole call (nothing displaced); a bad hull gets its own error while the
/// good one beside it is coupled; a hull whose region would pass MAX_BODY_REGION_SIDE cells (a
/// 600 m box on a 600 m wide world of 0.5 m cells) is refused naming `body size`; the ledger stays
/// exact and no pipe is NaN.
#[test]
fn bad_bodies_on_a_world_are_refused_by_name() {
    if !gpu_or_skip("bad_bodies_on_a_world_are_refused_by_name") {
        return;
    }
    let (w, h, dx, level) = (1200u32, 112u32, 0.5f32, 0.8f32);
    let (_, mut world, _) = lake(w, h, dx, level);
    let start = assert_world_ledger(&mut world, "start");
    let good = Body::new(Vec3::new(0.0, level, 0.0), HullShape::Sphere { radius: 1.0 });
    let name = |e: Error| match e {
        Error::InvalidArgument { name, .. } => name.to_string(),
        other => format!("not by name: {other}"),
    };
    let frame_dt = name(world.couple_bodies(std::slice::from_ref(&good), f32::NAN, DENSITY).unwrap_err());
    let density = name(world.couple_bodies(std::slice::from_ref(&good), 1.0 / 60.0, 0.0).unwrap_err());
    println!("NaN frame: {frame_dt}; density 0: {density}; cells with a head after both: {}", world.world().displacement().len());
    assert_eq!((frame_dt.as_str(), density.as_str()), ("frame_dt", "density"));
    assert!(world.world().displacement().is_empty(), "a refused call displaces nothing");
    let bad = Body::new(Vec3::new(5.0, level, 5.0), HullShape::Sphere { radius: -1.0 });
    let huge = Body::new(Vec3::new(-5.0, level, -5.0), HullShape::Box { half_extents: Vec3::new(300.0, 0.5, 1.0) });
    let forces = world.couple_bodies(&[good.clone(), bad, huge], 1.0 / 60.0, DENSITY).unwrap();
    let names: Vec<String> = forces.iter().map(|f| f.as_ref().map_or_else(|e| name(e.clone()), |f| format!("ok, {:.3} m³", f.displaced_volume))).collect();
    println!("good, bad radius, 600 m long: {names:?}");
    assert!(forces[0].as_ref().is_ok_and(|f| f.displaced_volume > 0.5), "the good hull is coupled");
    assert_eq!((names[1].as_str(), names[2].as_str()), ("sphere radius", "body size"));
    world.advance(1.0 / 60.0).unwrap();
    let flows = world.world_mut().read_flow(0, 0, w, h).unwrap();
    assert!(flows.iter().flatten().all(|f| f.is_finite()), "a pipe is not finite");
    assert_eq!(assert_world_ledger(&mut world, "after the refusals"), start);
}

/// A hull set down on a world's lake that has gone to sleep wakes the tiles under it: a still
/// lake across four pages reports nothing awake over three frames after ten, and four frames more
/// leave its depth unchanged; a box put on the page corner (at rest, no drag) has tiles awake
/// within the next four frames (the flags the device reports lag a frame or two), and the water
/// under it is pushed out on all four pages, which a sleeping tile would never do.
#[test]
fn a_hull_set_on_a_sleeping_lake_wakes_the_pages_under_it() {
    if !gpu_or_skip("a_hull_set_on_a_sleeping_lake_wakes_the_pages_under_it") {
        return;
    }
    let (w, h, dx, level) = (168u32, 168u32, 0.5f32, 0.9f32);
    let (_, mut world, _) = lake(w, h, dx, level);
    let frame = 1.0 / 30.0;
    let mut awake_late = Vec::new();
    for k in 0..10 {
        world.run_steps(frame / 4.0, 4).unwrap();
        if k >= 7 {
            awake_late.push(world.report().awake);
        }
    }
    let side = world.world().page_side();
    let (cx, cy) = (side, side);
    let settled = world.world_mut().read_depth(cx - 1, cy - 1, 2, 2).unwrap();
    for _ in 0..4 {
        world.run_steps(frame / 4.0, 4).unwrap();
    }
    let before = world.world_mut().read_depth(cx - 1, cy - 1, 2, 2).unwrap();
    println!("the still lake: awake {awake_late:?} in frames 8 to 10; depth at the corner's four cells {settled:?}, four frames later {before:?}");
    assert!(awake_late.iter().all(|&a| a == 0) && settled == before, "the still lake sleeps and stays as it is");
    let corner = Vec3::new((side as f32 - w as f32 * 0.5) * dx, level, (side as f32 - h as f32 * 0.5) * dx);
    let body = Body::new(corner, HullShape::Box { half_extents: Vec3::new(1.5, 0.4, 1.5) });
    let mut most_awake = 0;
    for _ in 0..4 {
        world.couple_bodies(std::slice::from_ref(&body), frame, DENSITY).unwrap().remove(0).unwrap();
        world.run_steps(frame / 4.0, 4).unwrap();
        most_awake = most_awake.max(world.report().awake);
    }
    let after = world.world_mut().read_depth(cx - 1, cy - 1, 2, 2).unwrap();
    println!("with the box on the corner: awake at most {most_awake}; depth at the corner's four cells {after:?}");
    assert!(most_awake > 0, "the hull woke the tiles under it");
    assert!(after.iter().zip(&before).all(|(a, b)| a < b), "the water under the hull was pushed out on all four pages");
    assert_world_ledger(&mut world, "woken");
}
