//! Benchmark of the world stored in pages (`backend/gpu/world.rs`) against the dense wgpu
//! backend, interleaved in one run. Prints Markdown rows for docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example world_bench -- [--tax 4096] [--river 16384]
//! [--memory 16384] [--rounds 3] [--steps 400]`
//!
//! * `--tax N`: an `N × N` lake sloshing everywhere (every page awake and moving), stepped by the
//!   dense backend and by the world: cell-steps per second of each, what paging costs a full grid.
//!   With `--timing` (and `PIPEWATER_GPU_TIMESTAMPS=1` in the environment), one more round of
//!   each with timestamps between the dispatches: the device's time in the plans, the steps and
//!   the rest, and its idle time between frames (the host's share).
//! * `--river N`: one river of about 200 k wet cells running down a 512 × 512 valley, stepped as a
//!   512² dense grid and inside an `N × N` world: time per step of each.
//! * `--memory N`: an `N × N` world with 5 % of its cells wet in lakes at rest (a few large ones,
//!   many small ones): pages resident and device bytes, per cell of the world and per resident
//!   cell.

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("world_bench needs the `gpu` feature");
}

#[cfg(feature = "gpu")]
fn main() {
    bench::main();
}

#[cfg(feature = "gpu")]
mod bench {
    use pipewater_core::backend::gpu::world::{World, BYTES_PER_PAGE, BYTES_PER_RESIDENT_CELL, BYTES_PER_TERRAIN_CELL};
    use pipewater_core::backend::gpu::{GpuBackend, GpuContext, Stamp};
    use pipewater_core::backend::{Backend, CellWater, FramePlan};
    use pipewater_core::pipes::StepConstants;
    use pipewater_core::quanta::depth_to_quanta;
    use pipewater_core::{Grid, Params, State};
    use std::time::Instant;

    fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
    }

    const STEPS_PER_FRAME: u32 = 8;
    const DT: f32 = 0.02;

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        let rounds: u32 = arg(&args, "--rounds").unwrap_or(3);
        let steps: u32 = arg(&args, "--steps").unwrap_or(400);
        let ctx = GpuContext::shared().expect("a GPU adapter");
        println!("adapter: {}", ctx.adapter_description());
        if let Some(n) = arg::<u32>(&args, "--tax") {
            tax(n, rounds, steps, args.iter().any(|a| a == "--timing"));
        }
        if let Some(n) = arg::<u32>(&args, "--river") {
            river(n, rounds, steps);
        }
        if let Some(n) = arg::<u32>(&args, "--memory") {
            memory(n);
        }
    }

    fn constants(w: u32, h: u32) -> StepConstants {
        StepConstants::new(&Params::default(), w, h, 1.0, DT, [0; 4])
    }

    /// Seconds for `steps` steps (in frames of STEPS_PER_FRAME), waiting for the device at the end.
    fn time_dense(dense: &mut GpuBackend, c: &StepConstants, steps: u32) -> f64 {
        let start = Instant::now();
        for _ in 0..steps / STEPS_PER_FRAME {
            dense.advance(&FramePlan { constants: *c, substeps: STEPS_PER_FRAME, forcing: &[] }).unwrap();
        }
        dense.wait_idle().unwrap();
        start.elapsed().as_secs_f64()
    }

    fn time_world(world: &mut World, c: &StepConstants, steps: u32) -> f64 {
        let start = Instant::now();
        for _ in 0..steps / STEPS_PER_FRAME {
            world.advance(c, STEPS_PER_FRAME).unwrap();
        }
        world.wait_idle().unwrap();
        start.elapsed().as_secs_f64()
    }

    /// Depth of the sloshing lake at (x, y): a metre with a 40 cm swell, so every pipe carries flow.
    fn swell(n: u32, x: u32, y: u32) -> i32 {
        let k = std::f32::consts::TAU / n as f32;
        depth_to_quanta(1.0 + 0.4 * (2.0 * k * x as f32).sin() * (3.0 * k * y as f32).cos())
    }

    fn tax(n: u32, rounds: u32, steps: u32, timing: bool) {
        let grid = Grid::new(n, n, 1.0).unwrap();
        let mut state = State::new(grid);
        for y in 0..n {
            for x in 0..n {
                state.depth[(y * n + x) as usize] = swell(n, x, y);
            }
        }
        let mut dense = GpuBackend::new(&state).unwrap();
        let mut world = World::new(n, n, 0.0).unwrap();
        let water: Vec<(u32, u32, i32)> = (0..n).flat_map(|y| (0..n).map(move |x| (x, y, swell(n, x, y)))).collect();
        world.add_water(&water).unwrap();
        drop(water);
        let c = constants(n, n);
        // Warm up: pipelines made, pages brought in.
        time_dense(&mut dense, &c, 64);
        time_world(&mut world, &c, 64);
        let cell_steps = n as f64 * n as f64 * steps as f64;
        println!("\n| {n}² every page awake | dense G cell-steps/s | world G cell-steps/s | world / dense | tiles awake / workgroups / pages with water fields |");
        println!("|---|---|---|---|---|");
        for round in 1..=rounds {
            let d = time_dense(&mut dense, &c, steps);
            let w = time_world(&mut world, &c, steps);
            let report = world.report();
            println!("| round {round} | {:.2} | {:.2} | {:.3} | {} / {} / {} |", cell_steps / d / 1e9, cell_steps / w / 1e9, d / w, report.awake, report.workgroups, report.watered);
        }
        let report = world.report();
        println!("faults {}, waits {}", report.faults, report.waits);
        if timing {
            if !(dense.time_dispatches(4096) && world.time_dispatches(4096)) {
                println!("timing: the device has no timestamps inside passes (PIPEWATER_GPU_TIMESTAMPS=1 asks for them)");
                return;
            }
            let dh = host_round(steps, |wait| if wait { dense.wait_idle().unwrap() } else { dense.advance(&FramePlan { constants: c, substeps: STEPS_PER_FRAME, forcing: &[] }).unwrap() });
            let dense_times = dense.dispatch_times().unwrap();
            let wh = host_round(steps, |wait| if wait { world.wait_idle().unwrap() } else { world.advance(&c, STEPS_PER_FRAME).unwrap() });
            let world_times = world.dispatch_times().unwrap();
            let (d, w) = (dh.wall, wh.wall);
            println!("\n| {n}², a round with timestamps, µs | dense | world |");
            println!("|---|---|---|");
            let (a, b) = (Split::of(&dense_times, d), Split::of(&world_times, w));
            let row = |what: &str, f: &dyn Fn(&Split) -> String| println!("| {what} | {} | {} |", f(&a), f(&b));
            row("frames / steps timed", &|s| format!("{} / {}", s.frames, s.steps.len()));
            row("plan, median a step (share of the span)", &|s| format!("{:.1} ({:.2} %)", median(&s.plans), 100.0 * sum(&s.plans) / s.span));
            row("step, median (share)", &|s| format!("{:.1} ({:.2} %)", median(&s.steps), 100.0 * sum(&s.steps) / s.span));
            row("the rest of a frame on the device, median (share)", &|s| format!("{:.1} ({:.2} %)", median(&s.other), 100.0 * sum(&s.other) / s.span));
            row("device idle between frames, median (share)", &|s| format!("{:.1} ({:.2} %)", median(&s.idle), 100.0 * sum(&s.idle) / s.span));
            row("device span / wall, ms", &|s| format!("{:.1} / {:.1}", s.span / 1e3, s.wall * 1e3));
            let host = |what: &str, f: &dyn Fn(&Host) -> f64| println!("| {what} | {:.2} | {:.2} |", f(&dh), f(&wh));
            host("host: the round's first frame (advance), ms", &|h| h.first * 1e3);
            host("host: the wait for the device after the last frame, ms", &|h| h.last_wait * 1e3);
            host("host: the calling thread's CPU time a frame, ms", &|h| h.cpu * 1e3 / (steps / STEPS_PER_FRAME) as f64);
            row("G cell-steps/s: wall / steps and plans / steps alone", &|s| {
                let per_step = |us: f64| n as f64 * n as f64 / (us * 1e3);
                format!("{:.2} / {:.2} / {:.2}", cell_steps / s.wall / 1e9, per_step((sum(&s.steps) + sum(&s.plans)) / s.steps.len() as f64), per_step(median(&s.steps)))
            });
        }
    }

    /// The host's side of a round: its wall time, the first frame's (the device idle until it is
    /// submitted), the wait for the device after the last, and the calling thread's CPU time.
    struct Host {
        wall: f64,
        first: f64,
        last_wait: f64,
        cpu: f64,
    }

    /// A round of `steps` steps through `frame(false)` a frame, then `frame(true)` to wait.
    fn host_round(steps: u32, mut frame: impl FnMut(bool)) -> Host {
        let (start, cpu) = (Instant::now(), thread_cpu_time());
        let mut first = 0.0;
        for k in 0..steps / STEPS_PER_FRAME {
            frame(false);
            if k == 0 {
                first = start.elapsed().as_secs_f64();
            }
        }
        let waiting = Instant::now();
        frame(true);
        Host { wall: start.elapsed().as_secs_f64(), first, last_wait: waiting.elapsed().as_secs_f64(), cpu: thread_cpu_time() - cpu }
    }

    /// CPU seconds the calling thread has used (the host's own work, not its waits).
    fn thread_cpu_time() -> f64 {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given and nothing else.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    }

    fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    }

    fn sum(v: &[f64]) -> f64 {
        v.iter().sum()
    }

    /// A timed round's device time, µs: each plan, each step, the rest of each frame, the idle
    /// time between frames.
    struct Split {
        frames: usize,
        plans: Vec<f64>,
        steps: Vec<f64>,
        other: Vec<f64>,
        idle: Vec<f64>,
        span: f64,
        wall: f64,
    }

    impl Split {
        fn of(stamps: &[(Stamp, u64)], wall: f64) -> Split {
            let mut s = Split { frames: 0, plans: vec![], steps: vec![], other: vec![], idle: vec![], span: 0.0, wall };
            let mut frame_other = 0.0;
            for (i, &(what, t)) in stamps.iter().enumerate() {
                let Some(&(_, before)) = i.checked_sub(1).map(|j| &stamps[j]) else { continue };
                let us = t.saturating_sub(before) as f64 / 1e3;
                match what {
                    Stamp::FrameStart => {
                        s.idle.push(us);
                        s.other.push(frame_other);
                        frame_other = 0.0;
                    }
                    Stamp::Plan => s.plans.push(us),
                    Stamp::Step => s.steps.push(us),
                    Stamp::Other => frame_other += us,
                }
            }
            s.other.push(frame_other);
            s.frames = stamps.iter().filter(|(w, _)| *w == Stamp::FrameStart).count();
            s.span = stamps.last().map_or(0, |l| l.1 - stamps[0].1) as f64 / 1e3;
            s
        }
    }

    /// Terrain of the valley at (x, y) of its 512 × 512: falling 5 m along y, banks rising 3 m at
    /// its sides, a wall around it.
    fn valley(x: u32, y: u32) -> f32 {
        let edge = x == 0 || y == 0 || x == 511 || y == 511;
        let bank = ((x as f32 - 256.0).abs() - 200.0).max(0.0) * 0.1;
        if edge {
            20.0
        } else {
            10.0 - 0.01 * y as f32 + bank
        }
    }

    /// The river's water: 0.5 m over the upper 400 rows of the channel.
    fn river_water(x0: u32, y0: u32) -> Vec<(u32, u32, i32)> {
        (1..401).flat_map(|y| (56..456).map(move |x| (x0 + x, y0 + y, depth_to_quanta(0.5)))).collect()
    }

    fn river(n: u32, rounds: u32, steps: u32) {
        let grid = Grid::new(512, 512, 1.0).unwrap();
        let terrain: Vec<f32> = (0..512).flat_map(|y| (0..512).map(move |x| valley(x, y))).collect();
        let mut dense = GpuBackend::new(&State::with_terrain(grid, terrain.clone()).unwrap()).unwrap();
        let water = river_water(0, 0);
        dense.edit_water(&water.iter().map(|&(x, y, q)| CellWater { cell: y * 512 + x, quanta: q }).collect::<Vec<_>>()).unwrap();
        let (x0, y0) = (n / 2 - 256, n / 2 - 256);
        let mut world = World::new(n, n, 20.0).unwrap();
        world.set_terrain_region(x0, y0, 512, 512, &terrain).unwrap();
        world.add_water(&river_water(x0, y0)).unwrap();
        let (cd, cw) = (constants(512, 512), constants(n, n));
        time_dense(&mut dense, &cd, 64);
        time_world(&mut world, &cw, 64);
        let wet = water.len();
        println!("\n| river of {wet} wet cells | 512² dense µs/step | {n}² world µs/step | world / dense | tiles awake / workgroups / pages with water fields / world |");
        println!("|---|---|---|---|---|");
        for round in 1..=rounds {
            let d = time_dense(&mut dense, &cd, steps);
            let w = time_world(&mut world, &cw, steps);
            let report = world.report();
            println!("| round {round} | {:.1} | {:.1} | {:.2} | {} / {} / {} / {} |", d / steps as f64 * 1e6, w / steps as f64 * 1e6, w / d, report.awake, report.workgroups, report.watered, report.pages);
        }
        let report = world.report();
        println!("device {:.1} MiB, faults {}, waits {}", world.device_bytes() as f64 / (1u64 << 20) as f64, report.faults, report.waits);
    }

    /// Lakes at rest covering 5 % of an `n × n` world, `count` square basins of equal size; with
    /// `save`, the save's size against the dense fields' and its time, and the load's.
    fn memory_with(n: u32, count: u32, save: bool) {
        let per_lake = (n as f64 * n as f64 * 0.05 / count as f64).sqrt() as u32;
        let across = (count as f64).sqrt().ceil() as u32;
        let spacing = n / across;
        let mut world = World::new(n, n, 5.0).unwrap();
        let mut wet = 0u64;
        let mut placed = 0;
        'lakes: for j in 0..across {
            for i in 0..across {
                if placed == count {
                    break 'lakes;
                }
                let (x0, y0) = (i * spacing + spacing / 2 - per_lake / 2, j * spacing + spacing / 2 - per_lake / 2);
                world.set_terrain_region(x0, y0, per_lake, per_lake, &vec![0.0; (per_lake * per_lake) as usize]).unwrap();
                let water: Vec<(u32, u32, i32)> = (y0..y0 + per_lake).flat_map(|y| (x0..x0 + per_lake).map(move |x| (x, y, depth_to_quanta(2.0)))).collect();
                wet += water.len() as u64;
                world.add_water(&water).unwrap();
                placed += 1;
            }
        }
        let c = constants(n, n);
        for _ in 0..8 {
            world.advance(&c, STEPS_PER_FRAME).unwrap();
        }
        world.wait_idle().unwrap();
        let report = world.report();
        let bytes = world.device_bytes();
        let cells = n as f64 * n as f64;
        let page_cells = (world.page_side() * world.page_side()) as f64;
        println!(
            "| {count} lakes of {per_lake}² | {:.2} % | {} / {} / {} | {:.0} MiB | {:.2} | {:.1} | {:.1} |",
            100.0 * wet as f64 / cells,
            report.watered,
            report.resident,
            report.pages,
            bytes as f64 / (1u64 << 20) as f64,
            bytes as f64 / cells,
            bytes as f64 / wet as f64,
            report.watered as f64 * page_cells / wet as f64
        );
        if save {
            // The caller's part of a save begun while the world steps on: the begin, then each
            // frame's poll, next to a frame of eight steps.
            let start = Instant::now();
            let mut job = world.begin_save().unwrap();
            let begin = start.elapsed().as_secs_f64();
            let (mut longest_poll, mut frames) = (0f64, 0);
            let saving = Instant::now();
            let bytes = loop {
                world.advance(&c, STEPS_PER_FRAME).unwrap();
                frames += 1;
                let poll = Instant::now();
                let done = world.poll_save(&mut job);
                longest_poll = longest_poll.max(poll.elapsed().as_secs_f64());
                if let Some(done) = done {
                    break done.unwrap();
                }
            };
            println!(
                "save begun while stepping: begin {:.2} ms, longest poll {:.2} ms on the calling thread; ready after {frames} frames ({:.2} s)",
                begin * 1e3,
                longest_poll * 1e3,
                saving.elapsed().as_secs_f64()
            );
            let start = Instant::now();
            let bytes_again = world.save().unwrap();
            let saved = start.elapsed().as_secs_f64();
            assert_eq!(bytes_again.len() > 0, bytes.len() > 0);
            let start = Instant::now();
            let loaded = World::load(&bytes).unwrap();
            loaded.wait_idle().unwrap();
            let load = start.elapsed().as_secs_f64();
            let dense = cells * 24.0;
            println!(
                "save of the {count} lakes: {:.1} MiB, 1/{:.0} of the dense fields' {:.0} MiB (terrain, depth, pipes: 24 bytes a cell); a save waited for {:.2} s, a load {:.2} s, on the calling thread",
                bytes.len() as f64 / (1u64 << 20) as f64,
                dense / bytes.len() as f64,
                dense / (1u64 << 20) as f64,
                saved,
                load
            );
        }
    }

    fn memory(n: u32) {
        println!("\nDevice bytes a cell: {BYTES_PER_RESIDENT_CELL} with water fields, {BYTES_PER_TERRAIN_CELL} with terrain alone, {:.4} otherwise ({BYTES_PER_PAGE} a page).", BYTES_PER_PAGE as f64 / 3136.0);
        println!("\n| {n}² world, 5 % wet in | wet | pages with water fields / terrain / world | device | bytes / world cell | bytes / wet cell | cells with water fields / wet cell |");
        println!("|---|---|---|---|---|---|---|");
        for count in [4, 16, 64, 256] {
            memory_with(n, count, count == 16);
        }
    }
}
