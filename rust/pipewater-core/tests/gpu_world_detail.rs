//! Detail waves on a world in pages (`world_water/detail.rs`): a ripple rung where four pages
//! meet crosses the page borders as it does on a dense grid of the same water; the window
//! moving keeps the waves where the old and new windows overlap and starts calm where it is new;
//! hulls raise waves on a world as on a dense grid; bad input is refused by name. The layer runs
//! on the device by default (`backend/gpu/world/detail.rs`); the host's reference kernel
//! (`WorldWater::set_detail_on_host`) is what the device's is compared with: where four pages
//! meet, in a window walked past its anchor's period, its texels and the heights queries read
//! back; and neither moves a quantum of water. Every test prints what it compares. Figures come
//! from whatever adapter runs the tests (in CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::bodies::{Body, HullShape};
use pipewater_core::detail::DetailParams;
use pipewater_core::glam::Vec3;
use pipewater_core::world_water::{WorldDetailWindow, WorldWater};
use pipewater_core::{BackendPreference, Error, Grid, Params, Simulation, State};

/// Largest difference of a detail height or vertical velocity between two layers over the same
/// water, as a fraction of the largest: a world's on the device and a dense wgpu grid's run the
/// same `shaders/detail.wgsl` over the same water (depth equal to the quantum, pipes from the same
/// step WGSL); a world's on the host runs the CPU reference of that WGSL, so what is left is the
/// GPU's rounding (`gpu_detail.rs` allows the same between the dense grid's two backends).
const MAX_DETAIL_DIFFERENCE: f32 = 1.0e-3;

/// A basin falling from west to east with a bar of ground across it, for a `w × h` grid (m).
fn basin(w: u32, h: u32) -> Vec<f32> {
    (0..h).flat_map(|y| (0..w).map(move |x| 1.0 - 0.004 * x as f32 + 0.05 * (x as f32 * 0.21).sin() * (y as f32 * 0.13).cos() + if (60..64).contains(&x) && y < 40 { 0.9 } else { 0.0 })).collect()
}

/// The same water on a dense GPU grid and on a world of the same size: water poured over the
/// corner where four pages meet, still sloshing.
fn scene(w: u32, h: u32, dx: f32) -> (Simulation, WorldWater, [f32; 2]) {
    let terrain = basin(w, h);
    let grid = Grid::new(w, h, dx).unwrap();
    let mut dense = Simulation::new(State::with_terrain(grid, terrain.clone()).unwrap(), Params::default(), BackendPreference::Gpu).unwrap();
    let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &terrain).unwrap();
    let side = world.world().page_side() as f32 * dx;
    let [ex, ez] = world.extent();
    let corner = [side - ex / 2.0, side - ez / 2.0];
    for (x, z) in [(corner[0] - 6.0, corner[1] - 4.0), (corner[0] + 5.0, corner[1] + 6.0), (corner[0] - 2.0, corner[1] + 9.0)] {
        let a = dense.add_water(x, z, 150.0, 12.0).unwrap();
        let b = world.add_water(x, z, 150.0, 12.0).unwrap();
        assert_eq!(a, b, "the volume placed");
    }
    for _ in 0..30 {
        dense.run_steps(0.02, 4).unwrap();
        world.run_steps(0.02, 4).unwrap();
    }
    (dense, world, corner)
}

/// Which page (x, y) world detail cell `g` lies in.
fn page_of(window: &WorldDetailWindow, g: [i64; 2], page_side: u32) -> [i64; 2] {
    let s = window.layout.subdivision as i64;
    [g[0].div_euclid(s) / page_side as i64, g[1].div_euclid(s) / page_side as i64]
}

/// A ripple rung just west and north of the corner where four pages meet, in sloshing water,
/// with the detail window spanning the four pages: after 3 s its ring has crossed both page
/// borders, and the world's waves in every cell of the window are the dense grid's within
/// [`MAX_DETAIL_DIFFERENCE`] of the largest (heights and vertical velocities, each page apart).
#[test]
fn a_ripple_crosses_page_borders_as_on_a_dense_grid() {
    if !gpu_or_skip("a_ripple_crosses_page_borders_as_on_a_dense_grid") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (mut dense, mut world, corner) = scene(w, h, dx);
    let params = DetailParams { window: 256, subdivision: 4, ..DetailParams::default() };
    dense.set_detail(Some(params)).unwrap();
    world.set_detail(Some(params)).unwrap();
    dense.set_detail_focus(corner[0], corner[1]);
    world.set_detail_focus(corner[0], corner[1]);
    let ripple = [corner[0] - 3.0, corner[1] - 2.0];
    assert!(dense.add_ripple(ripple[0], ripple[1], 0.05, 1.0).unwrap());
    assert!(world.add_ripple(ripple[0], ripple[1], 0.05, 1.0).unwrap());
    let page_side = world.world().page_side();
    let mut worst = 0.0f32;
    for frame in 0..150u32 {
        dense.run_steps(0.005, 4).unwrap();
        world.run_steps(0.005, 4).unwrap();
        if frame % 50 != 49 {
            continue;
        }
        let (a, b) = (dense.read_detail().unwrap(), world.read_detail());
        let (dw, ww) = (dense.detail_window().unwrap(), world.detail_window().unwrap());
        assert_eq!([dw.origin[0] as i64, dw.origin[1] as i64], ww.origin, "the windows lie over the same cells");
        let largest = |k: usize| a.iter().fold(0.0f32, |m, f| m.max(f[k].abs()));
        let (scale, vscale) = (largest(0), largest(1));
        // Per page: the largest height there and the largest difference.
        let mut pages: std::collections::BTreeMap<[i64; 2], (f32, f32, usize)> = Default::default();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let page = page_of(&ww, ww.world_cell(i), page_side);
            let entry = pages.entry(page).or_insert((0.0, 0.0, 0));
            entry.0 = entry.0.max(x[0].abs());
            entry.1 = entry.1.max((x[0] - y[0]).abs() / scale).max((x[1] - y[1]).abs() / vscale);
            entry.2 += 1;
        }
        println!("t = {:.2} s: largest detail height {scale:.5} m, vertical velocity {vscale:.5} m/s", (frame + 1) as f32 * 0.02);
        for (page, (top, difference, cells)) in &pages {
            println!("  page {page:?}: {cells} detail cells, largest height {top:.5} m, largest difference {difference:.2e} of the largest");
            worst = worst.max(*difference);
        }
        assert_eq!(pages.len(), 4, "the window spans four pages");
        if frame == 149 {
            // The ripple began in page (0, 0): its ring reached every other page with a tenth of
            // the largest height or more.
            for (page, (top, _, _)) in &pages {
                assert!(*top > 0.1 * scale, "the waves reached page {page:?} ({top} m of {scale} m)");
            }
        }
    }
    println!("largest difference over the run: {worst:.2e} of the largest (tolerance {MAX_DETAIL_DIFFERENCE:.0e})");
    assert!(worst < MAX_DETAIL_DIFFERENCE);
}

/// Whether world detail cell `g` lies in `w` clear of its sponge.
fn inner(w: &WorldDetailWindow, g: [i64; 2]) -> bool {
    let n = w.layout.window as i64;
    let band = (n / 16).max(4);
    let (lx, ly) = (g[0] - w.origin[0], g[1] - w.origin[1]);
    lx >= band && ly >= band && lx < n - band && ly < n - band
}

/// Two worlds of the same sloshing water ring the same ripple; one keeps its window still, the
/// other walks it 40 detail cells east and 12 south, a frame at a time: around the ripple (where
/// four pages meet), in both windows and clear of both sponges, the waves agree
/// within 1 % of the largest height (they stay where they are in the world; in moving water the
/// advection's departure points round differently in two windows, see `world_water/detail.rs`'s
/// test of still water, where they agree to the bit). Then the walking window jumps farther than
/// its side and back: everything it holds starts at rest (0 in every cell), the old waves gone
/// with the place it left.
#[test]
fn the_window_moving_keeps_the_waves_where_windows_overlap() {
    if !gpu_or_skip("the_window_moving_keeps_the_waves_where_windows_overlap") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (_, mut still, corner) = scene(w, h, dx);
    let (_, mut moving, _) = scene(w, h, dx);
    let params = DetailParams { window: 256, subdivision: 4, ..DetailParams::default() };
    let ripple = [corner[0] - 2.5, corner[1] - 1.0];
    for world in [&mut still, &mut moving] {
        world.set_detail(Some(params)).unwrap();
        world.set_detail_focus(ripple[0], ripple[1]);
        world.run_steps(0.005, 4).unwrap();
        assert!(world.add_ripple(ripple[0], ripple[1], 0.05, 1.0).unwrap());
        for _ in 0..20 {
            world.run_steps(0.005, 4).unwrap();
        }
    }
    let start = moving.detail_window().unwrap().origin;
    for step in 1..=40 {
        // A detail cell is 0.125 m: 40 cells east, 12 south.
        moving.set_detail_focus(ripple[0] + step as f32 * 0.125, ripple[1] + (step * 12 / 40) as f32 * 0.125);
        still.run_steps(0.005, 4).unwrap();
        moving.run_steps(0.005, 4).unwrap();
    }
    let (a, b) = (still.detail_window().unwrap(), moving.detail_window().unwrap());
    let (fa, fb) = (still.read_detail(), moving.read_detail());
    let (mut compared, mut worst, mut largest) = (0, 0.0f32, 0.0f32);
    let mut pages = std::collections::BTreeSet::new();
    for (i, field) in fa.iter().enumerate() {
        let g = a.world_cell(i);
        let [x, z] = a.cell_centre(g);
        if (x - ripple[0]).hypot(z - ripple[1]) > 4.0 || !inner(&a, g) || !inner(&b, g) {
            continue;
        }
        let other = fb[b.storage_index(g)];
        worst = worst.max((field[0] - other[0]).abs()).max((field[1] - other[1]).abs());
        largest = largest.max(field[0].abs());
        compared += 1;
        pages.insert(page_of(&a, g, moving.world().page_side()));
    }
    println!(
        "window moved from {start:?} to {:?}; the still one at {:?}: {compared} cells around the ripple compared, in pages {pages:?} (largest height {largest:.5} m), largest difference {worst:e}",
        b.origin, a.origin
    );
    assert_eq!([b.origin[0] - start[0], b.origin[1] - start[1]], [40, 12]);
    assert_eq!(pages.len(), 4, "the cells compared lie in the four pages around the corner");
    assert!(compared > 500 && largest > 1.0e-3);
    println!("largest difference {:.2e} of the largest height (tolerance 1e-2)", worst / largest);
    assert!(worst < 1.0e-2 * largest, "the waves stay where they are in the world");
    // A jump farther than the window's side, and back: nothing it held is kept.
    moving.set_detail_focus(ripple[0] + 40.0, ripple[1]);
    moving.run_steps(0.005, 4).unwrap();
    let away = moving.read_detail().iter().fold(0.0f32, |m, f| m.max(f[0].abs()).max(f[1].abs()));
    moving.set_detail_focus(ripple[0], ripple[1]);
    moving.run_steps(0.005, 4).unwrap();
    let back = moving.read_detail().iter().fold(0.0f32, |m, f| m.max(f[0].abs()).max(f[1].abs()));
    let kept = still.read_detail().iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
    println!("after a 40 m jump the window holds waves up to {away:e}; back at the ripple {back:e} (the still window still holds {kept:.5} m)");
    assert_eq!((away, back), (0.0, 0.0), "a window that moved off starts calm");
    assert!(kept > 1.0e-3);
}

/// A hull driven across the corner where four pages meet raises detail waves on a world (its
/// bow wave and wake), as on a dense grid; with `hull_strength` 0 the waves stay at rest.
#[test]
fn a_hull_raises_detail_waves_across_page_borders() {
    if !gpu_or_skip("a_hull_raises_detail_waves_across_page_borders") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let mut results = Vec::new();
    for strength in [1.0f32, 0.0] {
        let (_, mut world, corner) = scene(w, h, dx);
        world.set_detail(Some(DetailParams { window: 256, hull_strength: strength, ..DetailParams::default() })).unwrap();
        world.set_detail_focus(corner[0], corner[1]);
        let level = world.surface_height(corner[0], corner[1]).unwrap().unwrap();
        for frame in 0..60 {
            let t = frame as f32 / 60.0;
            let mut boat = Body::new(Vec3::new(corner[0] - 5.0 + 3.0 * t, level, corner[1] + 0.5), HullShape::Box { half_extents: Vec3::new(0.8, 0.2, 0.4) });
            boat.linear_velocity = Vec3::new(3.0, 0.0, 0.0);
            world.couple_bodies(std::slice::from_ref(&boat), 1.0 / 60.0, 1000.0).unwrap();
            world.advance(1.0 / 60.0).unwrap();
        }
        let largest = world.read_detail().iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
        println!("hull_strength {strength}: largest detail height after 1 s of a boat at 3 m/s: {largest:.5} m");
        results.push(largest);
    }
    assert!(results[0] > 1.0e-3, "the boat raised waves");
    assert_eq!(results[1], 0.0, "without hull pressure the waves stay at rest");
}

/// A hull's pressure on the detail waves lands on the same detail cells of a world as of a dense
/// grid: a boat driven at 3 m/s across the corner where four pages meet, its pressure put on
/// both layers from one coupling (the dense grid's, on its fresh snapshot), makes the same bow
/// wave and wake on both within [`MAX_DETAIL_DIFFERENCE`] of the largest height, in every page.
#[test]
fn a_hulls_wake_on_a_world_is_a_dense_grids() {
    if !gpu_or_skip("a_hulls_wake_on_a_world_is_a_dense_grids") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (mut dense, mut world, corner) = scene(w, h, dx);
    let params = DetailParams { window: 256, ..DetailParams::default() };
    dense.set_detail(Some(params)).unwrap();
    world.set_detail(Some(params)).unwrap();
    dense.set_detail_focus(corner[0], corner[1]);
    world.set_detail_focus(corner[0], corner[1]);
    let level = world.surface_height(corner[0] - 4.0, corner[1] + 0.7).unwrap().unwrap();
    for frame in 0..90 {
        let t = frame as f32 * 0.02;
        let mut boat = Body::new(Vec3::new(corner[0] - 4.0 + 3.0 * t, level, corner[1] + 0.7), HullShape::Box { half_extents: Vec3::new(0.8, 0.2, 0.4) });
        boat.linear_velocity = Vec3::new(3.0, 0.0, 0.0);
        let coupling = pipewater_core::bodies::couple(&dense.read_snapshot().unwrap(), std::slice::from_ref(&boat), 0.02, 1000.0, 9.81);
        dense.apply_detail_pressure(std::slice::from_ref(&boat), &coupling.forces);
        world.apply_detail_pressure(std::slice::from_ref(&boat), &coupling.forces);
        dense.run_steps(0.005, 4).unwrap();
        world.run_steps(0.005, 4).unwrap();
    }
    let (a, b) = (dense.read_detail().unwrap(), world.read_detail());
    let window = world.detail_window().unwrap();
    let scale = a.iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
    let vscale = a.iter().fold(0.0f32, |m, f| m.max(f[1].abs()));
    let mut pages: std::collections::BTreeMap<[i64; 2], (f32, f32)> = Default::default();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let entry = pages.entry(page_of(&window, window.world_cell(i), world.world().page_side())).or_insert((0.0, 0.0));
        entry.0 = entry.0.max(x[0].abs());
        entry.1 = entry.1.max((x[0] - y[0]).abs() / scale).max((x[1] - y[1]).abs() / vscale);
    }
    println!("after 1.8 s of a boat at 3 m/s over the page corner: largest detail height {scale:.4} m on the dense grid");
    for (page, (top, difference)) in &pages {
        println!("  page {page:?}: largest height {top:.4} m, largest difference {difference:.2e} of the largest");
    }
    assert!(scale > 1.0e-3 && pages.len() == 4 && pages.values().all(|p| p.0 > 0.05 * scale), "the wake spans the four pages");
    assert!(pages.values().all(|p| p.1 < MAX_DETAIL_DIFFERENCE));
}

/// A hull with `rides_detail_waves` on a world feels the waves under its waterplane: the force
/// it gets over a plain hull's, coupled on the same water, is the weight of the water the waves
/// raise over its footprint, `ρ·g·Σ h·cell²` with `h` the layer's height at each detail cell
/// centre under it (read back through `detail_height`), to float rounding.
#[test]
fn a_hull_riding_the_detail_waves_on_a_world_feels_them() {
    if !gpu_or_skip("a_hull_riding_the_detail_waves_on_a_world_feels_them") {
        return;
    }
    let (_, mut world, corner) = scene(168, 112, 0.5);
    world.set_detail(Some(DetailParams { hull_strength: 0.0, ..DetailParams::default() })).unwrap();
    world.set_detail_focus(corner[0], corner[1]);
    world.run_steps(0.005, 4).unwrap();
    assert!(world.add_ripple(corner[0] - 1.0, corner[1], 0.08, 1.5).unwrap());
    for _ in 0..10 {
        world.run_steps(0.005, 4).unwrap();
    }
    let level = world.surface_height(corner[0], corner[1]).unwrap().unwrap();
    let half = Vec3::new(0.6, 0.3, 0.5);
    let plain = Body::new(Vec3::new(corner[0], level, corner[1]), HullShape::Box { half_extents: half });
    let riding = Body { rides_detail_waves: true, ..plain.clone() };
    // On the device the heights under the hull come back with the frames after a query first
    // asks for their tiles, as on a dense GPU grid: a coupling asks, a frame runs with the device
    // idle before and after (so its readback has a free slot and has arrived), and then the
    // riding hull and `detail_height` read the same frame's heights.
    world.couple_bodies(std::slice::from_ref(&riding), 0.02, 1000.0).unwrap();
    world.world().wait_idle().unwrap();
    world.run_steps(0.005, 4).unwrap();
    world.world().wait_idle().unwrap();
    let a = world.couple_bodies(std::slice::from_ref(&plain), 0.02, 1000.0).unwrap().remove(0).unwrap();
    let b = world.couple_bodies(std::slice::from_ref(&riding), 0.02, 1000.0).unwrap().remove(0).unwrap();
    let d = 0.5 / 4.0;
    let mut sum = 0.0f64;
    let mut cells = 0;
    let [ex, ez] = world.extent();
    for gy in 0..(ez / d) as i64 {
        for gx in 0..(ex / d) as i64 {
            let (x, z) = ((gx as f32 + 0.5) * d - ex / 2.0, (gy as f32 + 0.5) * d - ez / 2.0);
            if (x - corner[0]).abs() < half.x && (z - corner[1]).abs() < half.z {
                sum += world.detail_height(x, z) as f64;
                cells += 1;
            }
        }
    }
    let expected = 1000.0 * 9.81 * sum * (d * d) as f64;
    let lift = (b.force.y - a.force.y) as f64;
    println!("waves under the hull's {cells} waterplane cells: Σh = {sum:.5} m; lift over the plain hull {lift:.3} N, ρ·g·Σh·cell² = {expected:.3} N");
    assert!(cells >= 64 && sum.abs() > 1.0e-3);
    assert!((lift - expected).abs() < 1.0e-3 * expected.abs().max(1.0), "the riding hull feels the waves under it");
}

/// Bad input to a world's detail layer is refused by name and changes nothing: settings out of
/// range (the layer keeps its own), a ripple's point, strength and radius (also while the layer
/// is off, where a good ripple reaches nothing), bounds off the world.
#[test]
fn bad_detail_input_on_a_world_is_refused_by_name() {
    if !gpu_or_skip("bad_detail_input_on_a_world_is_refused_by_name") {
        return;
    }
    let mut world = WorldWater::new(300, 200, 1.0, 0.0, Params::default()).unwrap();
    let named = |r: Result<(), Error>| match r {
        Err(Error::InvalidArgument { name, valid, .. }) => format!("{name} ({valid})"),
        other => panic!("not refused by name: {other:?}"),
    };
    let off = [
        named(world.add_ripple(f32::NAN, 0.0, 0.1, 1.0).map(|_| ())),
        named(world.add_ripple(0.0, 0.0, -12.0, 1.0).map(|_| ())),
        named(world.add_ripple(0.0, 0.0, 0.1, -1.0).map(|_| ())),
    ];
    let good_while_off = world.add_ripple(0.0, 0.0, 0.1, 1.0).unwrap();
    world.set_detail(Some(DetailParams::default())).unwrap();
    let on = [
        named(world.set_detail(Some(DetailParams { window: 5000, ..DetailParams::default() }))),
        named(world.set_detail(Some(DetailParams { max_celerity: f32::NAN, ..DetailParams::default() }))),
        named(world.set_detail(Some(DetailParams { damping: -1.0, ..DetailParams::default() }))),
        named(world.set_detail(Some(DetailParams { rain_rate: 2000.0, ..DetailParams::default() }))),
        named(world.set_detail_bounds(Some([250, 0, 100, 10]))),
        named(world.add_ripple(0.0, f32::INFINITY, 0.1, 1.0).map(|_| ())),
        named(world.add_ripple(0.0, 0.0, 0.1, 1.0e6).map(|_| ())),
    ];
    println!("layer off: {off:?}; a good ripple reaches {good_while_off}\nlayer on: {on:?}");
    for (message, name) in off.iter().zip(["position", "strength", "radius"]) {
        assert!(message.starts_with(name), "{message}");
    }
    for (message, name) in on.iter().zip(["detail_window", "detail_max_celerity", "detail_damping", "rain_rate", "detail_bounds", "position", "radius"]) {
        assert!(message.starts_with(name), "{message}");
    }
    assert!(!good_while_off);
    assert_eq!(world.detail_params(), Some(&DetailParams::default()), "the layer keeps its settings");
    world.run_steps(0.01, 2).unwrap();
}

/// Two worlds of the same sloshing water, a ripple rung just west and north of the corner where
/// four pages meet, one world's layer on the device and the other's on the host's reference
/// kernel: after 1, 2 and 3 s the device's heights and vertical velocities in every detail cell
/// of each of the four pages are the reference's within [`MAX_DETAIL_DIFFERENCE`] of the largest,
/// and so are the texels `detail_texture` shows (height, slopes, vertical velocity), read back
/// without a wait after a frame run with the device idle.
#[test]
fn the_device_layer_is_the_host_reference_where_four_pages_meet() {
    if !gpu_or_skip("the_device_layer_is_the_host_reference_where_four_pages_meet") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (_, mut device, corner) = scene(w, h, dx);
    let (_, mut host, _) = scene(w, h, dx);
    host.set_detail_on_host(true).unwrap();
    let params = DetailParams { window: 256, subdivision: 4, rain_rate: 2.0, ..DetailParams::default() };
    let ripple = [corner[0] - 3.0, corner[1] - 2.0];
    for world in [&mut device, &mut host] {
        world.set_detail(Some(params)).unwrap();
        world.set_detail_focus(corner[0], corner[1]);
        assert!(world.add_ripple(ripple[0], ripple[1], 0.05, 1.0).unwrap());
    }
    assert!(!device.detail_on_host() && host.detail_on_host());
    let page_side = device.world().page_side();
    let mut worst = 0.0f32;
    for frame in 0..150u32 {
        if frame == 149 {
            // The texels of the last frame: asked for, and the frame run with the device idle
            // (its readback has a free slot).
            device.world().wait_idle().unwrap();
            let _ = device.detail_texels();
        }
        device.run_steps(0.005, 4).unwrap();
        host.run_steps(0.005, 4).unwrap();
        if frame % 50 != 49 {
            continue;
        }
        let (a, b) = (host.read_detail(), device.read_detail());
        let (hw, dw) = (host.detail_window().unwrap(), device.detail_window().unwrap());
        assert_eq!(hw, dw, "the windows lie over the same cells");
        let largest = |k: usize| a.iter().fold(0.0f32, |m, f| m.max(f[k].abs()));
        let (scale, vscale) = (largest(0), largest(1));
        let mut pages: std::collections::BTreeMap<[i64; 2], (f32, f32, usize)> = Default::default();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let entry = pages.entry(page_of(&dw, dw.world_cell(i), page_side)).or_insert((0.0, 0.0, 0));
            entry.0 = entry.0.max(x[0].abs());
            entry.1 = entry.1.max((x[0] - y[0]).abs() / scale).max((x[1] - y[1]).abs() / vscale);
            entry.2 += 1;
        }
        let identical = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        println!("t = {:.2} s: largest height {scale:.5} m, vertical velocity {vscale:.5} m/s; {identical} of {} cells identical to the bit", (frame + 1) as f32 * 0.02, a.len());
        for (page, (top, difference, cells)) in &pages {
            println!("  page {page:?}: {cells} detail cells, largest height {top:.5} m, largest difference {difference:.2e} of the largest");
            worst = worst.max(*difference);
        }
        assert_eq!(pages.len(), 4, "the window spans four pages");
        assert!(scale > 1.0e-3, "the ripple is there");
    }
    println!("largest difference over the run: {worst:.2e} of the largest (tolerance {MAX_DETAIL_DIFFERENCE:.0e})");
    assert!(worst < MAX_DETAIL_DIFFERENCE);
    device.world().wait_idle().unwrap();
    let texels = device.detail_texels().expect("the last frame's texels came back");
    let reference = host.detail_texels().expect("the host's texels");
    assert_eq!(texels.len(), reference.len());
    let mut texel_worst = [0.0f32; 4];
    let mut texel_scale = [0.0f32; 4];
    for (t, r) in texels.iter().zip(reference.iter()) {
        for k in 0..4 {
            texel_worst[k] = texel_worst[k].max((t[k] - r[k]).abs());
            texel_scale[k] = texel_scale[k].max(r[k].abs());
        }
    }
    println!("texels (height, slope x, slope z, vertical velocity): largest {texel_scale:?}, largest differences {texel_worst:?}");
    for k in 0..4 {
        assert!(texel_scale[k] > 0.0 && texel_worst[k] < MAX_DETAIL_DIFFERENCE * texel_scale[k], "texel component {k}");
    }
}

/// A window walked on the device past a multiple of its anchor's period (the kernel's
/// coordinates move) matches the host's reference walked the same way, within
/// [`MAX_DETAIL_DIFFERENCE`] of the largest, over the whole window; and `detail_height` at the
/// ripple, asked before the walk and read back after it, follows its cell across the anchor's
/// move: the device's answer is the reference's within the same tolerance.
#[test]
fn a_walked_window_on_the_device_is_the_host_reference() {
    if !gpu_or_skip("a_walked_window_on_the_device_is_the_host_reference") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (_, mut device, corner) = scene(w, h, dx);
    let (_, mut host, _) = scene(w, h, dx);
    host.set_detail_on_host(true).unwrap();
    let params = DetailParams { window: 256, subdivision: 4, ..DetailParams::default() };
    // The window's first detail cell is 4 × the focus cell − 128: walked from 232 to 272, across
    // the anchor's period lcm(256, 4) = 256.
    let focus = |step: u32| [(90.0 + step as f32 * 0.25 - 84.0) * dx, corner[1]];
    // In both windows, clear of their sponges, on the water poured around the corner.
    let ripple = [corner[0] + 6.5, corner[1] + 1.0];
    let depth = device.depth(ripple[0], ripple[1]).unwrap().unwrap();
    println!("water {depth:.3} m deep under the ripple");
    assert!(depth > 0.05);
    for world in [&mut device, &mut host] {
        world.set_detail(Some(params)).unwrap();
        world.set_detail_focus(focus(0)[0], focus(0)[1]);
        world.run_steps(0.005, 4).unwrap();
        assert!(world.add_ripple(ripple[0], ripple[1], 0.05, 1.0).unwrap());
    }
    let before = device.detail_window().unwrap();
    // Asked for before the walk: the ripple's tiles are read back from the next frame on.
    let first = device.detail_height(ripple[0], ripple[1]);
    for step in 1..=40 {
        for world in [&mut device, &mut host] {
            world.set_detail_focus(focus(step)[0], focus(step)[1]);
            world.run_steps(0.005, 4).unwrap();
        }
    }
    // One more frame with the device idle before and after: its readback has a free slot and
    // has arrived.
    device.world().wait_idle().unwrap();
    device.run_steps(0.005, 4).unwrap();
    host.run_steps(0.005, 4).unwrap();
    device.world().wait_idle().unwrap();
    let after = device.detail_window().unwrap();
    println!("window walked from {:?} (anchor {:?}) to {:?} (anchor {:?})", before.origin, before.anchor(), after.origin, after.anchor());
    assert_ne!(before.anchor(), after.anchor(), "the walk moves the anchor");
    assert_eq!(host.detail_window().unwrap(), after);
    let (a, b) = (host.read_detail(), device.read_detail());
    let scale = a.iter().fold(0.0f32, |m, f| m.max(f[0].abs()));
    let vscale = a.iter().fold(0.0f32, |m, f| m.max(f[1].abs()));
    let worst = a.iter().zip(&b).fold(0.0f32, |m, (x, y)| m.max((x[0] - y[0]).abs() / scale).max((x[1] - y[1]).abs() / vscale));
    println!("whole window: largest height {scale:.5} m, largest difference {worst:.2e} of the largest (tolerance {MAX_DETAIL_DIFFERENCE:.0e})");
    assert!(scale > 1.0e-3 && worst < MAX_DETAIL_DIFFERENCE);
    let (on_device, reference) = (device.detail_height(ripple[0], ripple[1]), host.detail_height(ripple[0], ripple[1]));
    println!("detail_height at the ripple: first asked {first} (nothing back yet), after the walk {on_device:.6} m on the device, {reference:.6} m on the host");
    assert_eq!(first, 0.0, "the first query of a tile answers 0");
    assert!(reference.abs() > 1.0e-4, "the waves are there");
    assert!((on_device - reference).abs() < MAX_DETAIL_DIFFERENCE * scale, "the heights read back follow their cells across the anchor's move");
}

/// The detail waves never move water: two worlds of the same sloshing water, one with the layer
/// on the device (rain, ripples every frame, the window walking), the other without, hold the
/// same depth and pipes in every cell to the bit after 60 frames, and the same ledger (water
/// held, added, removed, through the edges), quantum for quantum.
#[test]
fn the_device_layer_leaves_the_water_and_the_ledger_untouched() {
    if !gpu_or_skip("the_device_layer_leaves_the_water_and_the_ledger_untouched") {
        return;
    }
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let (_, mut waved, corner) = scene(w, h, dx);
    let (_, mut plain, _) = scene(w, h, dx);
    waved.set_detail(Some(DetailParams { rain_rate: 50.0, ..DetailParams::default() })).unwrap();
    let mut largest = 0.0f32;
    for frame in 0..60 {
        waved.set_detail_focus(corner[0] + frame as f32 * 0.1, corner[1]);
        waved.add_ripple(corner[0] + (frame % 7) as f32, corner[1] - (frame % 5) as f32, 0.05, 1.0).unwrap();
        waved.run_steps(0.005, 4).unwrap();
        plain.run_steps(0.005, 4).unwrap();
        if frame % 20 == 19 {
            largest = largest.max(waved.read_detail().iter().fold(0.0f32, |m, f| m.max(f[0].abs())));
        }
    }
    let (a, b) = (waved.world_mut().read_water(0, 0, w, h).unwrap(), plain.world_mut().read_water(0, 0, w, h).unwrap());
    let depth_differs = a.0.iter().zip(&b.0).filter(|(x, y)| x != y).count();
    let pipes_differ = a.1.iter().zip(&b.1).filter(|(x, y)| x != y).count();
    let (la, ha) = waved.ledger().unwrap();
    let (lb, hb) = plain.ledger().unwrap();
    println!(
        "largest detail height {largest:.4} m; cells whose depth differs {depth_differs}, whose pipes differ {pipes_differ} of {}; held {ha} vs {hb} quanta; ledger {la:?} vs {lb:?}",
        a.0.len()
    );
    assert!(largest > 1.0e-3, "the waves ran");
    assert_eq!((depth_differs, pipes_differ), (0, 0));
    assert_eq!((ha, la), (hb, lb));
    assert!(ha > 0);
}
