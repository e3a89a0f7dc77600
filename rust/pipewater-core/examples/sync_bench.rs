//! Water sync benchmark (issue 49): what the server's sync costs a frame beside the simulation's
//! own step, and what a client is sent, for a river running through a large world.
//!
//! `cargo run --release -p pipewater-core --example sync_bench -- [--size 2048] [--warmup 600]
//! [--seconds 20] [--budget 256] [--backend cpu|gpu] [--check] [--step-only]
//! [--full-snapshots] [--paced] [--scene river|flood]`
//!
//! The scene is `scenarios::river_valley` (a spring at the head of a valley, 0.5 m³/s per m² of
//! relief·cell) run for `--warmup` frames of 1/60 s, so the river is flowing; then a
//! `ServerSession` (what the Godot node runs on the multiplayer authority) starts, one client
//! joins in process (a lossless link, its packets delivered at the next sync) with its focus on
//! the river's middle, and every frame the server runs `ServerSession::frame` after its step, at
//! the session's 30 Hz. At the end, a table: the step's time a frame and the session's (reading
//! the changed tiles' depths and flows, capturing them, encoding and compressing the client's
//! packets) a frame, split into the capture (read and compare) and the polls (encode and
//! compress) where the library says which is which; the join's time and bytes; the steady bytes
//! a second.
//!
//! `--scene flood` runs a dam break across the whole grid instead: every tile moves.
//!
//! `--paced` runs the frames at 60 Hz of wall time, as a server does, instead of back to back
//! (where a GPU's reads begun at one sync may not have arrived at the next, 0.3 ms later).
//!
//! `--step-only` runs the same frames without a server and prints what the step costs alone
//! (paced too with `--paced`).
//!
//! `--check` also reads the whole state at every sync into a second server that compares every
//! tile, and counts the captures after which the session's server holds other water than it
//! (each compared at the frame it describes: a GPU's capture arrives a sync later); not timed.

use pipewater_core::scenarios::{dam_break, river_valley};
use pipewater_core::sync::{terrain_hash, ServerSession, SyncClient, SYNC_HZ, SyncConfig, SyncServer, SERVER_PEER};
use pipewater_core::{BackendPreference, Grid, Params, Simulation};
use std::time::{Duration, Instant};

const FRAME: f32 = 1.0 / 60.0;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// With `paced`, waits until `frame` is due at 60 Hz of wall time from `run_start`: a server runs
/// its frames so, not back to back, and the device finishes a sync's reads long before the next,
/// as in a game.
fn pace(paced: bool, run_start: Instant, frame: u32) {
    if paced {
        let due = run_start + Duration::from_secs_f64(frame as f64 * FRAME as f64);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: u32 = arg(&args, "--size", 2048);
    let warmup: u32 = arg(&args, "--warmup", 600);
    let seconds: f64 = arg(&args, "--seconds", 20.0);
    let budget: f32 = arg(&args, "--budget", 256.0);
    let backend: String = arg(&args, "--backend", "cpu".to_string());
    let check = args.iter().any(|a| a == "--check");
    let preference = if backend == "gpu" { BackendPreference::Gpu } else { BackendPreference::Cpu };

    let grid = Grid::new(side, side, 1.0).expect("grid");
    // `--scene flood`: a dam break across the whole grid (2 m behind the dam, 0.5 m before it),
    // every tile moving: the sync's worst case, where the step is not nearly free.
    let flood = arg(&args, "--scene", "river".to_string()) == "flood";
    let (state, spring) = if flood { (dam_break(grid, side / 2, 2.0, 0.5), None) } else { let (s, spring) = river_valley(grid, 7, 8.0); (s, Some(spring)) };
    let hash = terrain_hash(&grid, &state.terrain);
    let mut sim = Simulation::new(state, Params::default(), preference).expect("simulation");
    // A server draws nothing: the node then has a GPU backend read back only what queries touch
    // (WaterOutputs), not every cell's texels each frame (128 MB at 2048²), which would be most
    // of the step's time here. `--full-snapshots` reads them as a game drawing on the CPU does.
    sim.want_full_snapshots(args.iter().any(|a| a == "--full-snapshots"));
    if let Some(spring) = spring {
        sim.add_source(spring.x, spring.z, spring.rate, spring.radius).expect("spring");
    }
    let started = Instant::now();
    for _ in 0..warmup {
        sim.advance(FRAME).expect("advance");
    }
    println!("{}: {side}², warm-up of {warmup} frames in {:.1} s", sim.backend_description(), started.elapsed().as_secs_f64());
    // How much water the step moves: the step's time follows the awake tiles, which grow while
    // the river spreads.
    let awake = |sim: &Simulation| sim.sleep_report().map_or("no sleeping tiles".to_string(), |r| format!("{} steps a frame, {} tiles awake, {:.2} M cell-steps a frame", r.steps, r.awake_tiles, r.cells_stepped as f64 / 1.0e6));
    println!("after the warm-up: {}", awake(&sim));
    let paced = args.iter().any(|a| a == "--paced");
    if args.iter().any(|a| a == "--step-only") {
        // The same frames without a server: what the step costs alone (paced like a server's
        // with `--paced`: its difference from a server's step plus sync is what serving costs).
        let frames = (seconds / FRAME as f64) as u32;
        let mut spent = Duration::ZERO;
        let run_start = Instant::now();
        for frame in 0..frames {
            pace(paced, run_start, frame);
            let t = Instant::now();
            sim.advance(FRAME).expect("advance");
            spent += t.elapsed();
        }
        println!("step alone{}: {:.3} ms a frame over {frames} frames; at the end: {}", if paced { ", paced" } else { "" }, spent.as_secs_f64() * 1000.0 / frames.max(1) as f64, awake(&sim));
        return;
    }

    let config = SyncConfig { budget_kbps: budget, ..SyncConfig::default() };
    let mut session = ServerSession::start(config.clone(), &mut sim).expect("server");
    let mut full = check.then(|| {
        let start = sim.read_state().expect("state");
        SyncServer::new(config, grid, hash, &start.depth, &start.flow, sim.frames()).expect("server")
    });
    let mut client = SyncClient::new(grid, hash);
    // The river's middle: a third of the way down the valley, on its centre line.
    let focus = grid.cell_centre(side / 3, side / 2);
    client.set_focus(&[focus]).expect("focus");

    let frames = (seconds / FRAME as f64) as u32;
    // Before and after the join completed: the keyframe's 4 096 tiles are encoded once, at the
    // join; the steady state is what the server pays every frame while a river runs.
    let (mut step, mut sync) = ([Duration::ZERO; 2], [Duration::ZERO; 2]);
    let mut steady_frames = 0u32;
    let mut steady_costs = None;
    let mut syncs = 0u32;
    let (mut differing, mut checked) = (0u32, 0u32);
    let mut whole: Vec<(u64, Vec<i32>, Vec<[f32; 4]>)> = Vec::new();
    let mut join: Option<(f64, u64)> = None;
    let mut now = 0.0f64;
    let mut to_client: Vec<Vec<u8>> = Vec::new();
    let mut to_server: Vec<Vec<u8>> = Vec::new();
    // The client polls at the session's rate (every second frame at 60 Hz).
    let client_every = (1.0 / SYNC_HZ / FRAME as f64).round().max(1.0) as u32;
    let run_start = Instant::now();
    for frame in 0..frames {
        pace(paced, run_start, frame);
        let t = Instant::now();
        sim.advance(FRAME).expect("advance");
        let phase = join.is_some() as usize;
        steady_frames += phase as u32;
        step[phase] += t.elapsed();
        now += FRAME as f64;
        // The link: what each side sent at the last sync arrives now.
        for bytes in to_server.drain(..) {
            session.receive(2, &bytes, now).expect("client packet");
        }
        for bytes in to_client.drain(..) {
            client.receive(SERVER_PEER, &bytes).expect("server packet");
        }
        let captures = session.captures();
        if join.is_some() && steady_costs.is_none() {
            steady_costs = Some(session.costs());
        }
        let t = Instant::now();
        let out = session.frame(&mut sim, now).expect("sync");
        sync[phase] += t.elapsed();
        if let Some(full) = &mut full {
            if sim.frames() > full.frame() {
                let report = sim.last_report();
                full.record_frame(report.step, report.substeps).expect("frame");
            }
            if session.captures() > captures {
                // The whole water at this frame, for the capture that describes it (now on the
                // CPU, at the next sync on a GPU whose reads arrive a sync later).
                let state = sim.read_state().expect("state");
                whole.push((sim.frames(), state.depth, state.flow));
                let at = session.captured_frame();
                if let Some(k) = whole.iter().position(|w| w.0 == at) {
                    let (_, depth, flow) = whole.remove(k);
                    full.capture(&depth, &flow, None).expect("capture");
                    checked += 1;
                    differing += (0..full.tiles().count()).any(|t| session.server().tile_summary(t).map(|s| (s.1, s.2)) != full.tile_summary(t).map(|s| (s.1, s.2))) as u32;
                }
                whole.retain(|w| w.0 > at);
            }
        }
        syncs += (session.captures() > captures) as u32;
        to_client.extend(out.into_iter().map(|(_, o)| o.bytes));
        if frame % client_every == 0 {
            to_server.extend(client.poll(now).into_iter().map(|o| o.bytes));
        }
        if join.is_none() {
            if let Some(stats) = session.server().client_stats(2) {
                if let Some(s) = stats.join_seconds {
                    join = Some((now, stats.bytes_sent));
                    println!("join: {s:.2} s of simulated time, {} B ({} tiles)", stats.bytes_sent, session.server().tiles().count());
                }
            }
        }
    }
    println!("at the end: {}", awake(&sim));
    let stats = session.server().client_stats(2).expect("client");
    let per_frame = |d: Duration| d.as_secs_f64() * 1000.0 / steady_frames.max(1) as f64;
    let before = |d: Duration| d.as_secs_f64() * 1000.0 / (frames - steady_frames).max(1) as f64;
    let steady = join.map(|(t, b)| (stats.bytes_sent - b) as f64 / (now - t).max(1e-9));
    let (costs, at_join) = (session.costs(), steady_costs.unwrap_or_default());
    println!();
    println!("steady state, the {steady_frames} frames after the join (before it, {} frames: step {:.2} ms, sync {:.2} ms a frame):", frames - steady_frames, before(step[0]), before(sync[0]));
    println!("| grid | backend | step ms/frame | sync ms/frame | sync / step | capture (read, compare) ms/frame, of which begun | polls (encode, compress) ms/frame | tiles changed, read back per sync | steady B/s per client (kbit/s) | budget kbit/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {side}² | {} | {:.3} | {:.3} | {:.1} % | {:.3}, {:.3} | {:.3} | {:.1}, {:.1} of {} | {} | {budget} |",
        sim.backend_description(),
        per_frame(step[1]),
        per_frame(sync[1]),
        100.0 * sync[1].as_secs_f64() / step[1].as_secs_f64(),
        per_frame(costs.capture - at_join.capture),
        per_frame(costs.begin - at_join.begin),
        per_frame(costs.poll - at_join.poll),
        session.tiles_changed() as f64 / session.captures().max(1) as f64,
        session.tiles_read() as f64 / session.captures().max(1) as f64,
        session.server().tiles().count(),
        steady.map_or("join not complete".to_string(), |r| format!("{r:.0} ({:.1})", r * 8.0 / 1000.0)),
    );
    if check {
        println!("of {checked} captures checked against a server comparing every tile of the whole state at the same frame, {differing} held other water; tiles read back whose device record disagreed: {}", session.server().record_mismatches());
    }
    let (held, most) = session.server().versions_held();
    println!("{} of {} tiles current at the end; client applied {} tile updates; {} syncs over {seconds} s; the server holds {held} tile versions (most of one tile {most})", stats.tiles_current, session.server().tiles().count(), client.stats().tiles_applied, syncs);
}
