//! Water sync benchmark (issue 49): what the server's sync costs a frame beside the simulation's
//! own step, and what a client is sent, for a river running through a large world.
//!
//! `cargo run --release -p pipewater-core --example sync_bench -- [--size 2048] [--warmup 600]
//! [--seconds 20] [--sync-hz 30] [--budget 256] [--backend cpu|gpu]`
//!
//! The scene is `scenarios::river_valley` (a spring at the head of a valley, 0.5 m³/s per m² of
//! relief·cell) run for `--warmup` frames of 1/60 s, so the river is flowing; then one client
//! joins in process (a lossless link) with its focus on the river's middle, and the server syncs
//! at `--sync-hz`. Per sync tick it prints nothing; at the end a table: the step's time a frame,
//! the sync's (reading the depths and flows, capturing the changed tiles, encoding and
//! compressing the client's packets) a frame, the join's time and bytes, and the steady bytes a
//! second.

use pipewater_core::scenarios::river_valley;
use pipewater_core::sync::{terrain_hash, CaptureReader, SyncClient, SyncConfig, SyncServer, SERVER_PEER};
use pipewater_core::{BackendPreference, Grid, Params, Simulation};
use std::time::{Duration, Instant};

const FRAME: f32 = 1.0 / 60.0;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size", 2048);
    let warmup: u32 = arg(&args, "--warmup", 600);
    let seconds: f64 = arg(&args, "--seconds", 20.0);
    let sync_hz: f64 = arg(&args, "--sync-hz", 30.0);
    let budget: f32 = arg(&args, "--budget", 256.0);
    let backend: String = arg(&args, "--backend", "cpu".to_string());
    let preference = if backend == "gpu" { BackendPreference::Gpu } else { BackendPreference::Cpu };

    let grid = Grid::new(side, side, 1.0).expect("grid");
    let (state, spring) = river_valley(grid, 7, 8.0);
    let hash = terrain_hash(&grid, &state.terrain);
    let mut sim = Simulation::new(state, Params::default(), preference).expect("simulation");
    sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    let started = Instant::now();
    for _ in 0..warmup {
        sim.advance(FRAME).expect("advance");
    }
    println!("{}: {side}², warm-up of {warmup} frames in {:.1} s", sim.backend_description(), started.elapsed().as_secs_f64());

    let config = SyncConfig { budget_kbps: budget, ..SyncConfig::default() };
    let start = sim.read_state().expect("state");
    let depth = start.depth.clone();
    let mut server = SyncServer::new(config.clone(), grid, hash, &start.depth, &start.flow, sim.frames()).expect("server");
    // A second server fed as `ServerSession` feeds it (`CaptureReader`): on the CPU only the
    // tiles the backend says changed since the last sync are read and compared, and must be
    // found changed as the full comparison finds them; on wgpu every tile, read without waiting
    // (the read begun at the last sync), so its captures are a sync older and not compared. It
    // serves no client.
    let mut changed_server = SyncServer::new(config, grid, hash, &start.depth, &start.flow, sim.frames()).expect("server");
    let sync_tiles = changed_server.tiles();
    let mut water = CaptureReader::new(&mut sim, depth.clone());
    let mut flow = start.flow.clone();
    let (mut changed_read_capture, mut changed_differs, mut compared) = (Duration::ZERO, 0usize, 0usize);
    let mut client = SyncClient::new(grid, hash);
    // The river's middle: a third of the way down the valley, on its centre line.
    let focus = grid.cell_centre(side / 3, side / 2);
    client.set_focus(&[focus]).expect("focus");

    let frames = (seconds / FRAME as f64) as u32;
    let sync_every = ((1.0 / sync_hz) / FRAME as f64).round().max(1.0) as u32;
    let (mut step, mut read, mut capture, mut encode) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut changed_tiles, mut syncs) = (0usize, 0u32);
    let mut join: Option<(f64, u64)> = None;
    let mut now = 0.0f64;
    let mut to_client: Vec<Vec<u8>> = Vec::new();
    let mut to_server: Vec<Vec<u8>> = Vec::new();
    for frame in 0..frames {
        let t = Instant::now();
        sim.advance(FRAME).expect("advance");
        step += t.elapsed();
        now += FRAME as f64;
        // The clients run the server's frames: each is logged with its step and steps.
        if sim.frames() > server.frame() {
            let report = sim.last_report();
            server.record_frame(report.step, report.substeps).expect("frame");
            changed_server.record_frame(report.step, report.substeps).expect("frame");
        }
        if frame % sync_every != 0 {
            continue;
        }
        syncs += 1;
        // The link: what each side sent at the last tick arrives now.
        for bytes in to_server.drain(..) {
            server.receive(2, &bytes, now).expect("client packet");
        }
        for bytes in to_client.drain(..) {
            client.receive(SERVER_PEER, &bytes).expect("server packet");
        }
        let t = Instant::now();
        let state = sim.read_state().expect("state");
        read += t.elapsed();
        let t = Instant::now();
        let full = server.capture(&state.depth, &state.flow, None).expect("capture");
        changed_tiles += full;
        capture += t.elapsed();
        let t = Instant::now();
        if let Some((depth, changed)) = water.read(&mut sim, &sync_tiles).expect("depth") {
            // The flows of the same tiles, as `ServerSession` reads them.
            sim.read_flow(changed.as_deref().map(|c| (&sync_tiles, c)), &mut flow).expect("flow");
            let by_changed = changed_server.capture(depth, &flow, changed.as_deref()).expect("capture");
            if changed.is_some() {
                changed_differs += (by_changed != full) as usize;
                compared += 1;
            }
        }
        changed_read_capture += t.elapsed();
        if server.clients().contains(&2) {
            let t = Instant::now();
            to_client.extend(server.poll(2, now).expect("poll").into_iter().map(|o| o.bytes));
            encode += t.elapsed();
        }
        to_server.extend(client.poll(now).into_iter().map(|o| o.bytes));
        if join.is_none() {
            if let Some(stats) = server.client_stats(2) {
                if let Some(s) = stats.join_seconds {
                    join = Some((now, stats.bytes_sent));
                    println!("join: {s:.2} s of simulated time, {} B ({} tiles)", stats.bytes_sent, server.tiles().count());
                }
            }
        }
    }
    let stats = server.client_stats(2).expect("client");
    let per_frame = |d: Duration| d.as_secs_f64() * 1000.0 / frames as f64;
    let steady = join.map(|(t, b)| (stats.bytes_sent - b) as f64 / (now - t).max(1e-9));
    println!();
    println!("| grid | backend | step ms/frame | read depths ms/frame | capture ms/frame | encode+compress ms/frame | sync without read / step | tiles changed per sync | steady B/s per client (kbit/s) | budget kbit/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {side}² | {} | {:.2} | {:.2} | {:.2} | {:.3} | {:.1} % | {:.1} | {} | {budget} |",
        sim.backend_description(),
        per_frame(step),
        per_frame(read),
        per_frame(capture),
        per_frame(encode),
        100.0 * (capture + encode).as_secs_f64() / step.as_secs_f64(),
        changed_tiles as f64 / syncs.max(1) as f64,
        steady.map_or("join not complete".to_string(), |r| format!("{r:.0} ({:.1})", r * 8.0 / 1000.0)),
    );
    println!(
        "the session's way (CaptureReader): {:.2} ms/frame, with encoding {:.1} % of the step; {:.1} of {} tiles read a sync; of {compared} ticks compared with the full comparison, {changed_differs} found another count of changed tiles",
        per_frame(changed_read_capture),
        100.0 * (changed_read_capture + encode).as_secs_f64() / step.as_secs_f64(),
        water.tiles_read() as f64 / syncs.max(1) as f64,
        sync_tiles.count()
    );
    println!("{} of {} tiles current at the end; client applied {} tile updates; {} sync ticks at {sync_hz} Hz over {seconds} s", stats.tiles_current, server.tiles().count(), client.stats().tiles_applied, syncs);
}
