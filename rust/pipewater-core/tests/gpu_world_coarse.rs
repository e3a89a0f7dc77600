//! The far water of a world (`WorldWater::read_coarse_window`, `world_coarse.wgsl`): the coarse
//! texels the device sums equal the same aggregation done on the CPU over the full-resolution
//! read of the same area (`read_window`), over areas that cross page borders and the world's
//! edge; pages that are not resident read dry with their ground; bad arguments are refused by
//! name. Every test prints what it compares. Figures come from whatever adapter runs the tests
//! (in CI, Mesa's software Vulkan).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::gpu_or_skip;
use pipewater_core::world_water::{WorldWater, WorldWindow, EXACT_GROUND_PAGES, MAX_COARSE_STRIDE, MAX_COARSE_TEXELS};
use pipewater_core::{Error, Params};

/// Largest difference between a coarse texel's channel and the CPU's aggregation, relative to
/// the channel's size (at least 1): the device sums a block's values in f32 in a tree of 64 and
/// then pairs, the CPU in f64; a block of 256 cells at surfaces near 10 m loses a few f32 ulps of
/// its sum (about 1e-6 of it), far below this.
const RELATIVE_TOLERANCE: f32 = 2.0e-5;

/// Ground falling along x + y with ripples and a basin (m), for a `w × h` world.
fn rough_ground(w: u32, h: u32) -> Vec<f32> {
    (0..h)
        .flat_map(|y| {
            (0..w).map(move |x| {
                let basin = ((x as f32 - 70.0).hypot(y as f32 - 60.0) / 40.0).min(1.0);
                6.0 - 0.01 * (x + y) as f32 + 0.3 * (x as f32 * 0.17).sin() * (y as f32 * 0.11).cos() - 2.0 * (1.0 - basin)
            })
        })
        .collect()
}

/// The coarse aggregation done on the CPU from a full-resolution window of the same area (the
/// rule `begin_coarse_window` documents), over the blocks of `stride` cells from the window's
/// first cell, clipped to the window.
fn aggregate(full: &WorldWindow, stride: u32) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let [w, h] = full.size;
    let (bw, bh) = (w.div_ceil(stride), h.div_ceil(stride));
    let (mut height, mut flow) = (Vec::new(), Vec::new());
    for by in 0..bh {
        for bx in 0..bw {
            let (mut n, mut wet, mut surface_wet, mut ground_wet, mut ground, mut depth, mut vx, mut vz, mut speed, mut discharge) = (0.0f64, 0.0f64, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for y in by * stride..((by + 1) * stride).min(h) {
                for x in bx * stride..((bx + 1) * stride).min(w) {
                    let (t, f) = (full.height[(y * w + x) as usize].map(|v| v as f64), full.flow[(y * w + x) as usize].map(|v| v as f64));
                    n += 1.0;
                    if t[3] > 0.5 {
                        wet += 1.0;
                        surface_wet += t[0];
                        ground_wet += t[2];
                    }
                    ground += t[2];
                    depth += t[1];
                    vx += t[1] * f[0];
                    vz += t[1] * f[1];
                    speed += t[1] * f[2];
                    discharge += f[3];
                }
            }
            let weighted = |v: f64| if depth > 0.0 { v / depth } else { 0.0 };
            let texel = if wet > 0.0 { [surface_wet / wet, depth / n, ground_wet / wet, wet / n] } else { [ground / n + depth / n, depth / n, ground / n, 0.0] };
            height.push(texel.map(|v| v as f32));
            flow.push([weighted(vx), weighted(vz), weighted(speed), discharge / n].map(|v| v as f32));
        }
    }
    (height, flow)
}

/// The largest relative difference per channel (height's four, then flow's four) between a
/// coarse window and the CPU's aggregation, and the block where the largest is.
fn compare(coarse: &WorldWindow, expected: &(Vec<[f32; 4]>, Vec<[f32; 4]>)) -> ([f32; 8], usize) {
    assert_eq!(coarse.height.len(), expected.0.len(), "texel count");
    let mut worst = [0.0f32; 8];
    let (mut at, mut largest) = (0, 0.0f32);
    for k in 0..coarse.height.len() {
        for c in 0..8 {
            let (got, want) = if c < 4 { (coarse.height[k][c], expected.0[k][c]) } else { (coarse.flow[k][c - 4], expected.1[k][c - 4]) };
            let difference = (got - want).abs() / want.abs().max(1.0);
            assert!(got.is_finite(), "texel {k} channel {c} is {got}");
            worst[c] = worst[c].max(difference);
            if difference > largest {
                (at, largest) = (k, difference);
            }
        }
    }
    (worst, at)
}

/// A world of 300 × 250 cells (pages of the device's side; the last column and row of pages cut
/// by the world's edge) with a flooded basin, a spill running downhill and a pour across a page
/// corner, stepped until the water moves: for strides 1, 8 and 16 and areas that cross page
/// borders and run past the world's edge, every coarse texel equals the CPU's aggregation of
/// the full-resolution read of the same area within f32 rounding; at stride 1 the coarse read is
/// the full read itself; the coarse depths hold the water the ledger counts.
#[test]
fn coarse_texels_equal_the_cpu_aggregation_of_the_full_read() {
    if !gpu_or_skip("coarse_texels_equal_the_cpu_aggregation_of_the_full_read") {
        return;
    }
    let (w, h, dx) = (300u32, 250u32, 1.0f32);
    let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).unwrap();
    world.set_terrain_region(0, 0, w, h, &rough_ground(w, h)).unwrap();
    let side = world.world().page_side();
    let [ex, ez] = world.extent();
    world.add_water(70.0 - ex / 2.0, 60.0 - ez / 2.0, 4000.0, 30.0).unwrap();
    world.add_water(side as f32 * 2.0 - ex / 2.0, side as f32 - ez / 2.0, 300.0, 6.0).unwrap();
    for _ in 0..40 {
        world.advance(1.0 / 30.0).unwrap();
    }
    println!("page side {side}; report {:?}", world.report());
    let (_, held) = world.ledger().unwrap();
    let quantum_volume = world.quantum_volume();
    let cases: [(u32, u32, u32, u32, u32); 5] = [(1, 40, 30, 100, 90), (8, 0, 0, 304, 256), (8, 48, 40, 128, 96), (16, 32, 16, 288, 240), (16, 208, 160, 160, 160)];
    for (stride, x, y, cw, ch) in cases {
        let coarse = world.read_coarse_window(x, y, cw, ch, stride).unwrap();
        let full = world.read_window(x, y, cw.min(w - x), ch.min(h - y)).unwrap();
        let expected = aggregate(&full, stride);
        let (worst, at) = compare(&coarse, &expected);
        let wet = coarse.height.iter().filter(|t| t[3] > 0.0).count();
        let volume: f64 = coarse.height.iter().enumerate().map(|(k, t)| {
            let (bx, by) = (x + (k as u32 % coarse.size[0]) * stride, y + (k as u32 / coarse.size[0]) * stride);
            t[1] as f64 * ((bx + stride).min(w) - bx) as f64 * ((by + stride).min(h) - by) as f64 * (dx * dx) as f64
        }).sum();
        let full_volume: f64 = full.height.iter().map(|t| t[1] as f64 * (dx * dx) as f64).sum();
        println!(
            "stride {stride}, {cw}x{ch} cells at ({x}, {y}): {}x{} texels, {wet} with water, holding {volume:.3} m³ (full read {full_volume:.3} m³); worst relative difference per channel {worst:?} (block {at})",
            coarse.size[0], coarse.size[1]
        );
        assert_eq!(coarse.size, [(cw.min(w - x)).div_ceil(stride), (ch.min(h - y)).div_ceil(stride)], "blocks clipped to the world");
        assert_eq!((coarse.origin, coarse.stride), ([x, y], stride));
        assert!(worst.iter().all(|&d| d <= RELATIVE_TOLERANCE), "a coarse texel differs from the CPU's aggregation by {worst:?} (block {at}: {:?} {:?} against {:?} {:?})", coarse.height[at], coarse.flow[at], expected.0[at], expected.1[at]);
        assert!((volume - full_volume).abs() <= 1.0e-4 * full_volume.max(1.0), "the coarse depths hold {volume} m³, the full read {full_volume} m³");
        if stride == 1 {
            assert_eq!((coarse.height.len(), wet > 0), (full.height.len(), true));
        }
        if (x, y, cw, ch) == (0, 0, 304, 256) {
            let ledger_volume = held as f64 * quantum_volume;
            println!("  the whole world: {volume:.3} m³ in the coarse texels, {ledger_volume:.3} m³ held by the ledger");
            assert!((volume - ledger_volume).abs() <= 1.0e-4 * ledger_volume, "the whole world's coarse water {volume} against the ledger's {ledger_volume}");
        }
    }
}

/// In a world of 2000² cells with a pool near one corner, the far corner's pages hold nothing on
/// the device: a coarse read there is dry (depth, wet and flow 0) with its ground from the host's
/// terrain (equal to the full read's mean), and a read over the whole of both corners sees the
/// pool's water where it is and none elsewhere, equal to the CPU's aggregation. A terrain edit
/// in the dry corner shows in the next coarse read (the host's block sums follow the edit). A read
/// that does not wait (`begin_coarse_window`, `poll_coarse_window`) hands over the same texels.
#[test]
fn pages_not_resident_read_dry_with_their_ground() {
    if !gpu_or_skip("pages_not_resident_read_dry_with_their_ground") {
        return;
    }
    let side = 2000u32;
    let mut world = WorldWater::new(side, side, 1.0, 3.0, Params::default()).unwrap();
    // Ground set in both corners: a bowl by the pool and a ramp in the far corner.
    let bowl: Vec<f32> = (0..64 * 64).map(|i| 3.0 - 2.0 * (1.0 - ((i % 64) as f32 - 32.0).hypot((i / 64) as f32 - 32.0) / 32.0).max(0.0)).collect();
    world.set_terrain_region(64, 64, 64, 64, &bowl).unwrap();
    let ramp: Vec<f32> = (0..200 * 200).map(|i| 3.0 + 0.01 * (i % 200) as f32 + 0.02 * (i / 200) as f32).collect();
    world.set_terrain_region(1700, 1700, 200, 200, &ramp).unwrap();
    let half = side as f32 / 2.0;
    world.add_water(96.0 - half, 96.0 - half, 800.0, 12.0).unwrap();
    for _ in 0..20 {
        world.advance(1.0 / 30.0).unwrap();
    }
    let report = world.report();
    println!("{} pages, {} with terrain on the device, {} with water fields", report.pages, report.resident, report.watered);
    assert!(report.resident < report.pages / 10, "most pages are not resident");
    let far = world.read_coarse_window(1696, 1696, 208, 208, 16).unwrap();
    let far_full = world.read_window(1696, 1696, 208, 208).unwrap();
    let (worst, at) = compare(&far, &aggregate(&far_full, 16));
    let dry = far.height.iter().zip(&far.flow).all(|(t, f)| t[1] == 0.0 && t[3] == 0.0 && f.iter().all(|&v| v == 0.0));
    let grounds: Vec<f32> = far.height.iter().map(|t| t[2]).collect();
    println!("far corner, 13x13 texels: dry {dry}; ground {:.3} ..= {:.3} m; worst relative difference from the full read's aggregation {worst:?} (block {at})", grounds.iter().cloned().fold(f32::MAX, f32::min), grounds.iter().cloned().fold(f32::MIN, f32::max));
    assert!(dry, "the far corner reads dry");
    assert!(worst.iter().all(|&d| d <= RELATIVE_TOLERANCE), "the far corner's ground differs by {worst:?}");
    let near = world.read_coarse_window(0, 0, 256, 256, 16).unwrap();
    let near_full = world.read_window(0, 0, 256, 256).unwrap();
    let (worst, at) = compare(&near, &aggregate(&near_full, 16));
    let wet_texels = near.height.iter().filter(|t| t[3] > 0.0).count();
    println!("pool corner, 16x16 texels: {wet_texels} wet; worst relative difference {worst:?} (block {at})");
    assert!(wet_texels > 0 && worst.iter().all(|&d| d <= RELATIVE_TOLERANCE));
    // The whole world at stride 16, read without waiting: the poll hands over what the waiting
    // read gives, and the host's part (the terrain's block sums) costs less once warm.
    let started = std::time::Instant::now();
    let job = world.begin_coarse_window(0, 0, side, side, 16).unwrap();
    let begun = started.elapsed();
    let mut polls = 0;
    let polled = loop {
        polls += 1;
        if let Some(result) = world.poll_coarse_window(&job) {
            break result.unwrap();
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    };
    let arrived = started.elapsed();
    let again = std::time::Instant::now();
    let waited = world.read_coarse_window(0, 0, side, side, 16).unwrap();
    let warm = again.elapsed();
    println!(
        "whole world at stride 16 ({}x{} texels): begun in {:.2} ms, arrived after {polls} polls, {:.1} ms (the first read of most pages' ground); read again waiting {:.1} ms",
        polled.size[0], polled.size[1], begun.as_secs_f64() * 1e3, arrived.as_secs_f64() * 1e3, warm.as_secs_f64() * 1e3
    );
    assert_eq!(polled, waited, "a read without waiting hands over what a waiting read gives");
    // Dig the far corner: its ground shows lower at the next read.
    world.modify_terrain(1800.0 - half, 1800.0 - half, -1.5, 20.0).unwrap();
    let dug = world.read_coarse_window(1696, 1696, 208, 208, 16).unwrap();
    let dug_full = world.read_window(1696, 1696, 208, 208).unwrap();
    let (worst, _) = compare(&dug, &aggregate(&dug_full, 16));
    let lowered = far.height.iter().zip(&dug.height).filter(|(a, b)| b[2] < a[2]).count();
    println!("after digging 1.5 m within 20 m: {lowered} texels' ground lower; worst relative difference {worst:?}");
    assert!(lowered > 0 && worst.iter().all(|&d| d <= RELATIVE_TOLERANCE), "the dug ground shows in the coarse read");
}

/// A coarse read over a whole 16384² world at stride 64 (85 849 pages, past
/// EXACT_GROUND_PAGES): the blocks by the pool equal the CPU's aggregation of the full read, the
/// ground cell by cell; the dry blocks over a ramp far from any water take the mean of their
/// pages' means, each weighted by the cells it shares with the block, as the CPU works it out from
/// the host's terrain; the same read over a small area gives those blocks their exact ground.
#[test]
fn over_a_large_area_the_ground_beside_no_water_is_its_pages_means() {
    if !gpu_or_skip("over_a_large_area_the_ground_beside_no_water_is_its_pages_means") {
        return;
    }
    let (side, stride) = (16384u32, 64u32);
    let mut world = WorldWater::new(side, side, 1.0, 3.0, Params::default()).unwrap();
    let bowl: Vec<f32> = (0..64 * 64).map(|i| 3.0 - 2.0 * (1.0 - ((i % 64) as f32 - 32.0).hypot((i / 64) as f32 - 32.0) / 32.0).max(0.0)).collect();
    world.set_terrain_region(64, 64, 64, 64, &bowl).unwrap();
    let ramp: Vec<f32> = (0..300 * 300).map(|i| 3.0 + 0.01 * (i % 300) as f32 + 0.02 * (i / 300) as f32 + 0.5 * ((i % 300) as f32 * 0.1).sin()).collect();
    world.set_terrain_region(9000, 9000, 300, 300, &ramp).unwrap();
    let half = side as f32 / 2.0;
    world.add_water(96.0 - half, 96.0 - half, 800.0, 12.0).unwrap();
    for _ in 0..10 {
        world.advance(1.0 / 30.0).unwrap();
    }
    let page = world.world().page_side();
    let pages = (side as u64).div_ceil(page as u64).pow(2);
    let started = std::time::Instant::now();
    let coarse = world.read_coarse_window(0, 0, side, side, stride).unwrap();
    let first = started.elapsed();
    let again = std::time::Instant::now();
    let warm = world.read_coarse_window(0, 0, side, side, stride).unwrap();
    println!("{pages} pages (exact ground up to {EXACT_GROUND_PAGES}); {}x{} texels read in {:.1} ms, again in {:.1} ms", coarse.size[0], coarse.size[1], first.as_secs_f64() * 1e3, again.elapsed().as_secs_f64() * 1e3);
    assert!(pages > EXACT_GROUND_PAGES);
    assert_eq!(coarse, warm, "the same texels read again");
    // By the pool: the CPU's aggregation of the full read, ground included.
    let full = world.read_window(0, 0, 4 * stride, 4 * stride).unwrap();
    let expected = aggregate(&full, stride);
    let pool: Vec<usize> = (0..16).map(|k| (k / 4) * 256 + k % 4).collect();
    let near = WorldWindow { origin: [0, 0], size: [4, 4], stride, height: pool.iter().map(|&k| coarse.height[k]).collect(), flow: pool.iter().map(|&k| coarse.flow[k]).collect(), max_depth: 0.0, max_speed: 0.0 };
    let (worst, at) = compare(&near, &expected);
    let wet = near.height.iter().filter(|t| t[3] > 0.0).count();
    println!("by the pool, 4x4 texels, {wet} wet: worst relative difference {worst:?} (block {at})");
    assert!(wet > 0 && worst.iter().all(|&d| d <= RELATIVE_TOLERANCE));
    // Over the ramp: each page's mean over its cells, then the blocks' overlap-weighted means.
    let page_mean = |world: &WorldWater, px: u32, py: u32| -> f64 {
        let t = world.world().terrain_region(px * page, py * page, page, page).unwrap();
        t.iter().map(|&v| v as f64).sum::<f64>() / t.len() as f64
    };
    let mut worst_ramp = 0.0f32;
    let mut exact_apart = 0.0f32;
    for by in 9000 / stride..=9299 / stride {
        for bx in 9000 / stride..=9299 / stride {
            let (x0, y0) = (bx * stride, by * stride);
            let (mut sum, mut cells) = (0.0f64, 0.0f64);
            for py in y0 / page..=(y0 + stride - 1) / page {
                for px in x0 / page..=(x0 + stride - 1) / page {
                    let shared = ((x0 + stride).min((px + 1) * page) - x0.max(px * page)) as f64 * ((y0 + stride).min((py + 1) * page) - y0.max(py * page)) as f64;
                    sum += page_mean(&world, px, py) * shared;
                    cells += shared;
                }
            }
            let texel = coarse.height[(by * 256 + bx) as usize];
            assert_eq!((texel[1], texel[3]), (0.0, 0.0), "the ramp is dry");
            worst_ramp = worst_ramp.max((texel[2] - (sum / cells) as f32).abs());
            let block = world.world().terrain_region(x0, y0, stride, stride).unwrap();
            let exact = (block.iter().map(|&v| v as f64).sum::<f64>() / block.len() as f64) as f32;
            exact_apart = exact_apart.max((texel[2] - exact).abs());
            let small = world.read_coarse_window(x0, y0, stride, stride, stride).unwrap();
            assert!((small.height[0][2] - exact).abs() <= 1.0e-4, "a small area's read gives block ({bx}, {by}) its exact ground: {} against {exact}", small.height[0][2]);
        }
    }
    println!("over the ramp: ground within {worst_ramp:.2e} m of the pages' means; up to {exact_apart:.3} m from the exact block means (which a small area's read gives)");
    assert!(worst_ramp <= 1.0e-4, "the dry blocks' ground is their pages' means");
}

/// Bad arguments are refused by name, with nothing read: a stride of 0 or past the largest, a
/// corner that is not a multiple of the stride or lies off the world, a side of 0, not a multiple
/// of the stride, or past the largest count of texels.
#[test]
fn bad_coarse_reads_are_refused_by_name() {
    if !gpu_or_skip("bad_coarse_reads_are_refused_by_name") {
        return;
    }
    let mut world = WorldWater::new(500, 400, 1.0, 0.0, Params::default()).unwrap();
    let cases: [((u32, u32, u32, u32, u32), &str); 9] = [
        ((0, 0, 64, 64, 0), "stride"),
        ((0, 0, 64 * 65, 64 * 65, MAX_COARSE_STRIDE + 1), "stride"),
        ((4, 0, 64, 64, 8), "x"),
        ((0, 12, 64, 64, 8), "y"),
        ((512, 0, 64, 64, 8), "x"),
        ((0, 400, 64, 64, 8), "y"),
        ((0, 0, 0, 64, 8), "w"),
        ((0, 0, 64, 60, 8), "h"),
        ((0, 0, (MAX_COARSE_TEXELS + 1) * 2, 64, 2), "w"),
    ];
    for ((x, y, w, h, stride), name) in cases {
        match world.read_coarse_window(x, y, w, h, stride) {
            Err(Error::InvalidArgument { name: got, valid, .. }) => {
                println!("({x}, {y}) {w}x{h} at stride {stride}: refused, {got}: {valid}");
                assert_eq!(got, name);
            }
            other => panic!("({x}, {y}) {w}x{h} at stride {stride}: not refused by name: {:?}", other.map(|w| w.size)),
        }
    }
    let fine = world.read_coarse_window(480, 384, 64, 64, 16).unwrap();
    println!("a read past the world's corner: {:?} texels", fine.size);
    assert_eq!(fine.size, [2, 1]);
}
