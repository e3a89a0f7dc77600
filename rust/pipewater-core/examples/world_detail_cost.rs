//! What the detail waves cost a world's frame (`WorldWater::set_detail`), on the device and on
//! the host's reference kernel, next to a frame without them, and what they cost a dense wgpu
//! grid of the same water (`Simulation`, the layer `PipeWater` runs): five subjects timed in spans
//! taken in rotation in one process (spans side by side share the GPU's clocks and the machine's
//! load, which drift over seconds).
//!
//! `cargo run -p pipewater-core --example world_detail_cost -- [--rounds 5] [--frames 60]
//! [--window 256] [--texels 1]`
//!
//! The world is `tests/gpu_world_detail.rs`'s: 168 × 112 cells of 0.5 m, water poured where four
//! pages meet, still sloshing. A frame is what `PipeWaterWorld` asks of a physics frame and the
//! drawn frame after it with the layer on: four steps of 1/240 s, the detail texels it copies
//! into `detail_texture` (with `--texels 0`, none), and the waves' height at the focus (what `get_height(p, true)` adds; the
//! surface's own read waits for the device with or without the layer, and is left out). A span is
//! `--frames` frames and a wait for the device at its end (so that work the device still owes is
//! counted). Per kind: the median span's wall time a frame, and the CPU time a frame of the
//! thread that drives the world (Linux; what a game's main thread pays: on a software adapter the
//! device's work runs on the driver's own threads, and counts in the wall time only).

#[cfg(feature = "gpu")]
fn main() {
    use pipewater_core::detail::DetailParams;
    use pipewater_core::world_water::WorldWater;
    use pipewater_core::{BackendPreference, Grid, Params, Simulation, State};
    use std::time::Instant;

    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u32| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (rounds, frames, window, with_texels) = (arg("--rounds", 5), arg("--frames", 60), arg("--window", 256), arg("--texels", 1) != 0);
    let (w, h, dx) = (168u32, 112u32, 0.5f32);
    let terrain: Vec<f32> =
        (0..h).flat_map(|y| (0..w).map(move |x| 1.0 - 0.004 * x as f32 + 0.05 * (x as f32 * 0.21).sin() * (y as f32 * 0.13).cos() + if (60..64).contains(&x) && y < 40 { 0.9 } else { 0.0 })).collect();
    let kinds = ["world, layer off", "world, layer on the host", "world, layer on the device", "dense grid, layer off", "dense grid, layer on"];
    let mut worlds: Vec<WorldWater> = Vec::new();
    let mut corner = [0.0f32; 2];
    for kind in &kinds[..3] {
        let mut world = WorldWater::new(w, h, dx, 0.0, Params::default()).expect("a world");
        world.set_terrain_region(0, 0, w, h, &terrain).expect("terrain");
        let side = world.world().page_side() as f32 * dx;
        let [ex, ez] = world.extent();
        corner = [side - ex / 2.0, side - ez / 2.0];
        for (x, z) in [(corner[0] - 6.0, corner[1] - 4.0), (corner[0] + 5.0, corner[1] + 6.0), (corner[0] - 2.0, corner[1] + 9.0)] {
            world.add_water(x, z, 150.0, 12.0).expect("water");
        }
        for _ in 0..30 {
            world.run_steps(0.02, 4).expect("a frame");
        }
        if *kind != kinds[0] {
            world.set_detail_on_host(*kind == kinds[1]).expect("placed");
            world.set_detail(Some(DetailParams { window, ..DetailParams::default() })).expect("the layer");
            world.set_detail_focus(corner[0], corner[1]);
        }
        world.world().wait_idle().expect("idle");
        worlds.push(world);
    }
    let mut dense: Vec<Simulation> = Vec::new();
    for on in [false, true] {
        let state = State::with_terrain(Grid::new(w, h, dx).expect("a grid"), terrain.clone()).expect("a state");
        let mut sim = Simulation::new(state, Params::default(), BackendPreference::Gpu).expect("a dense GPU grid");
        for (x, z) in [(corner[0] - 6.0, corner[1] - 4.0), (corner[0] + 5.0, corner[1] + 6.0), (corner[0] - 2.0, corner[1] + 9.0)] {
            sim.add_water(x, z, 150.0, 12.0).expect("water");
        }
        for _ in 0..30 {
            sim.run_steps(0.02, 4).expect("a frame");
        }
        if on {
            sim.set_detail(Some(DetailParams { window, ..DetailParams::default() })).expect("the layer");
            sim.set_detail_focus(corner[0], corner[1]);
        }
        dense.push(sim);
    }
    let mut spans: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    let mut thread: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    let thread_cpu_ns = || -> Option<u64> { std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok() };
    for round in 0..=rounds {
        for k in 0..kinds.len() {
            let start = Instant::now();
            let cpu = thread_cpu_ns();
            for frame in 0..frames {
                if k < 3 {
                    let world = &mut worlds[k];
                    if frame % 20 == 0 {
                        world.add_ripple(corner[0] - 3.0, corner[1] - 2.0, 0.03, 1.0).expect("a ripple");
                    }
                    world.run_steps(1.0 / 240.0, 4).expect("a frame");
                    let texels = if with_texels { world.detail_texels() } else { None };
                    let waves = world.detail_height(corner[0], corner[1]);
                    std::hint::black_box((texels, waves));
                } else {
                    let sim = &mut dense[k - 3];
                    if frame % 20 == 0 {
                        sim.add_ripple(corner[0] - 3.0, corner[1] - 2.0, 0.03, 1.0).expect("a ripple");
                    }
                    sim.run_steps(1.0 / 240.0, 4).expect("a frame");
                    let texels = if with_texels { sim.detail_texels() } else { None };
                    let waves = sim.detail_height(corner[0], corner[1]);
                    std::hint::black_box((texels, waves));
                }
            }
            // One device and queue for the process: waiting for the world's work waits for all.
            worlds[0].world().wait_idle().expect("idle");
            // The first round warms the pipelines and the caches up; it is not counted.
            if round > 0 {
                spans[k].push(start.elapsed().as_secs_f64() * 1000.0 / frames as f64);
                if let (Some(a), Some(b)) = (cpu, thread_cpu_ns()) {
                    thread[k].push((b - a) as f64 / 1.0e6 / frames as f64);
                }
            }
        }
    }
    println!("| layer | wall ms a frame (median of {rounds} spans of {frames} frames; all, sorted) | CPU ms a frame of the calling thread (median; all) |");
    println!("|---|---|---|");
    let sorted = |mut s: Vec<f64>| -> (f64, String) {
        s.sort_by(|a, b| a.total_cmp(b));
        let all: Vec<String> = s.iter().map(|v| format!("{v:.1}")).collect();
        (s.get(s.len() / 2).copied().unwrap_or(f64::NAN), all.join(", "))
    };
    for ((kind, s), t) in kinds.iter().zip(spans).zip(thread) {
        let ((wall, walls), (cpu, cpus)) = (sorted(s), sorted(t));
        println!("| {kind} | {wall:.1} ({walls}) | {cpu:.1} ({cpus}) |");
    }
}

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("world_detail_cost needs the gpu feature");
}
