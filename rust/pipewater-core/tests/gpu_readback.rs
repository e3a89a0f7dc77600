//! The GPU backend's CPU mirror: `snapshot` never waits for the device, lags `advance` by at
//! most `GPU_SNAPSHOT_LATENCY` frames (by construction: also while another thread polls the
//! shared device and so runs our readbacks' callbacks late), holds texels, totals and ledger of
//! one instant that agree with the state read back at that instant, reads back only the tiles
//! queries touch when nobody needs every cell, and never answers with water from before a load.
//! All simulations share one device.
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::backend::gpu::{GpuBackend, GpuContext, GPU_SNAPSHOT_LATENCY};
use pipewater_core::backend::{Backend, CellWater, FramePlan};
use pipewater_core::pipes::StepConstants;
use pipewater_core::backend::gpu::SLEEP_REPORT_BYTES;
use pipewater_core::backend::readback::{TileRequests, HEADER_BYTES};
use pipewater_core::{scenarios, BackendPreference, Grid, Params, Simulation, State};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Relative tolerance of texel values against the CPU's `State::snapshot` of the same state
/// (relative to the value, or to 1e-3 for smaller ones): both evaluate the same formulas, but a
/// GPU's `length` and division may differ from Rust's correctly rounded `hypot` and `/` by a few
/// ulp, and a GPU compiler may fuse a multiply and an add (NVIDIA's does) where the CPU rounds
/// twice, which a velocity taken from the difference of opposite pipe flows magnifies. Lavapipe
/// stays below 1e-6; the H100 reached 1.7e-5.
const TEXEL_TOLERANCE: f32 = 1.0e-4;

/// Frames of the lag tests, each followed by a query.
const LAG_FRAMES: u64 = 60;

/// Runs [`LAG_FRAMES`] frames of a dam break, each followed by a snapshot, and checks that every
/// snapshot shows the frame just advanced or one of the [`GPU_SNAPSHOT_LATENCY`] before it.
fn check_lag_bound(test: &str) {
    let state = scenarios::dam_break(Grid::new(128, 128, 0.5).unwrap(), 40, 1.0, 0.1);
    let mut sim = Simulation::new(state, Params::default(), BackendPreference::Gpu).unwrap();
    let mut lags = [0u32; 8];
    let mut slowest_snapshot = 0.0f64;
    for frame in 1..=LAG_FRAMES {
        sim.advance(1.0 / 60.0).unwrap();
        let t = Instant::now();
        let s = sim.snapshot().expect("the GPU backend always has a snapshot");
        slowest_snapshot = slowest_snapshot.max(t.elapsed().as_secs_f64());
        let lag = frame - s.sequence;
        lags[(lag as usize).min(7)] += 1;
        assert!(lag <= GPU_SNAPSHOT_LATENCY as u64, "{test}: frame {frame}: snapshot shows frame {} ({lag} behind)", s.sequence);
    }
    println!("{test}: snapshot lag in frames (0..7+): {lags:?}; documented bound {GPU_SNAPSHOT_LATENCY}; slowest snapshot() call {:.2} ms", slowest_snapshot * 1e3);
}

#[test]
fn snapshot_never_waits_and_lags_advance_by_at_most_the_documented_frames() {
    if !gpu_or_skip("snapshot_never_waits_and_lags_advance_by_at_most_the_documented_frames") {
        return;
    }
    check_lag_bound("alone");
}

/// The bound's hard case: another thread keeps polling the shared device, so the `map_async`
/// callbacks of our readbacks often run there, late, behind its own slow callbacks (what made
/// the bound fail at random before `advance` waited for them).
#[test]
fn the_lag_bound_holds_while_another_thread_polls_the_shared_device() {
    if !gpu_or_skip("the_lag_bound_holds_while_another_thread_polls_the_shared_device") {
        return;
    }
    let neighbour = PollingNeighbour::start();
    check_lag_bound("beside a polling thread");
    let readbacks = neighbour.stop();
    println!("the other thread read back {readbacks} times meanwhile");
    assert!(readbacks > 0, "the other thread really polled the device");
}

/// A thread that reads its own buffer back over and over on the shared device, polling it with
/// `PollType::Poll` and taking [`OTHER_CALLBACK_MS`] in each of its callbacks, as another
/// simulation (or a game's own wgpu work) may.
struct PollingNeighbour {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl PollingNeighbour {
    fn start() -> Self {
        let ctx = GpuContext::shared().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            use wgpu::BufferUsages as U;
            let buffer = |usage| ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("other"), size: 256, usage, mapped_at_creation: false });
            let (source, staging) = (buffer(U::COPY_SRC), buffer(U::MAP_READ | U::COPY_DST));
            let mut readbacks = 0u64;
            while !flag.load(Ordering::Relaxed) {
                let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("other") });
                encoder.copy_buffer_to_buffer(&source, 0, &staging, 0, 256);
                ctx.queue.submit([encoder.finish()]);
                let done = Arc::new(AtomicBool::new(false));
                let mapped = done.clone();
                staging.map_async(wgpu::MapMode::Read, .., move |_| {
                    std::thread::sleep(std::time::Duration::from_millis(OTHER_CALLBACK_MS));
                    mapped.store(true, Ordering::Release);
                });
                while !done.load(Ordering::Acquire) {
                    let _ = ctx.device.poll(wgpu::PollType::Poll);
                }
                staging.unmap();
                readbacks += 1;
            }
            readbacks
        });
        PollingNeighbour { stop, thread }
    }

    /// Stops the thread; returns how many readbacks it made.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

#[test]
fn snapshot_texels_totals_and_ledger_match_the_state_of_the_same_instant() {
    if !gpu_or_skip("snapshot_texels_totals_and_ledger_match_the_state_of_the_same_instant") {
        return;
    }
    let grid = Grid::new(70, 45, 0.5).unwrap();
    let (state, _) = scenarios::river_valley(grid, 5, 3.0);
    let mut state = state;
    state.fill_to_level(1.2).expect("the test level lies within a cell's depth limit");
    let mut gpu = GpuBackend::new(&state).unwrap();
    let params = Params { boundaries: [pipewater_core::Boundary::Open; 4], ..Params::default() };
    let constants = StepConstants::new(&params, grid.width, grid.height, grid.cell_size, 0.02, [0; 4]);
    let forcing = [CellWater { cell: 100, quanta: 5000 }];
    for _ in 0..5 {
        // Asking for a snapshot is what makes the next frame read one back.
        let _ = gpu.snapshot();
        gpu.advance(&FramePlan { constants, substeps: 20, forcing: &forcing }).unwrap();
    }
    gpu.sync().unwrap();
    let snapshot = gpu.snapshot().unwrap();
    assert_eq!(snapshot.sequence, 5, "after sync the newest readback is the last frame's");
    let now = gpu.read_state().unwrap();
    let counters = gpu.read_counters().unwrap();
    let reference = now.snapshot(5, counters);
    let mut worst = 0.0f32;
    for (a, b) in snapshot.height.iter().zip(&reference.height).chain(snapshot.flow.iter().zip(&reference.flow)) {
        for k in 0..4 {
            worst = worst.max((a[k] - b[k]).abs() / b[k].abs().max(1e-3));
        }
    }
    println!(
        "texels: worst relative difference {worst:.2e}; total {} vs {} quanta; max depth {} vs {} m; max speed {} vs {} m/s; counters {:?}",
        snapshot.total_quanta, reference.total_quanta, snapshot.max_depth, reference.max_depth, snapshot.max_speed, reference.max_speed, snapshot.counters
    );
    assert!(worst <= TEXEL_TOLERANCE, "texels differ by {worst} (relative)");
    assert_eq!(snapshot.total_quanta, reference.total_quanta);
    assert_eq!(snapshot.counters, counters);
    assert!(counters.boundary_out > 0 && counters.added > 0, "the scenario exercises the ledger");
    assert_eq!(snapshot.max_depth, reference.max_depth);
    assert!((snapshot.max_speed - reference.max_speed).abs() <= TEXEL_TOLERANCE * reference.max_speed.max(1e-3));
}

/// Rounds of [`after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device`]:
/// each is three frames, each asking for a snapshot, then `sync`.
const SYNC_ROUNDS: u64 = 300;

/// How long the other thread's readback callback works, ms: callbacks of one poll run one after
/// another on the thread that polled, so ours may wait behind it.
const OTHER_CALLBACK_MS: u64 = 1;

/// The contract of `GpuBackend::sync`: afterwards `snapshot` shows the last frame. Readback
/// callbacks of `map_async` run on whichever thread polls or submits to the shared device
/// first once the copy is done, after that thread's earlier callbacks. So `sync` must wait for
/// the callbacks themselves, not only for the device: here another thread keeps reading its own
/// buffer back with a callback that takes a while, as another simulation (or a game's own
/// wgpu work) on the same device may.
#[test]
fn after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device() {
    if !gpu_or_skip("after_sync_the_snapshot_shows_the_last_frame_while_another_thread_polls_the_device") {
        return;
    }
    let other = PollingNeighbour::start();
    let grid = Grid::new(24, 16, 1.0).unwrap();
    let mut gpu = GpuBackend::new(&scenarios::dam_break(grid, 8, 1.0, 0.1)).unwrap();
    let constants = StepConstants::new(&Params::default(), grid.width, grid.height, grid.cell_size, 0.02, [0; 4]);
    let (mut frames, mut behind, mut worst) = (0u64, 0u64, 0u64);
    for _ in 0..SYNC_ROUNDS {
        for _ in 0..3 {
            let _ = gpu.snapshot();
            gpu.advance(&FramePlan { constants, substeps: 2, forcing: &[] }).unwrap();
            frames += 1;
        }
        gpu.sync().unwrap();
        let shown = gpu.snapshot().unwrap().sequence;
        if shown != frames {
            behind += 1;
            worst = worst.max(frames - shown);
        }
    }
    let readbacks = other.stop();
    println!("{SYNC_ROUNDS} syncs while another thread read back {readbacks} times: the snapshot was behind the last frame after {behind} of them (by up to {worst} frames)");
    assert_eq!(behind, 0, "after sync the newest snapshot is the last frame's");
}

#[test]
fn all_gpu_simulations_share_one_device() {
    if !gpu_or_skip("all_gpu_simulations_share_one_device") {
        return;
    }
    let a = GpuBackend::new(&scenarios::flat_pool(Grid::new(8, 8, 1.0).unwrap(), 0.1)).unwrap();
    let b = GpuBackend::new(&scenarios::flat_pool(Grid::new(16, 4, 1.0).unwrap(), 0.2)).unwrap();
    println!("backends: {} / {}", a.description(), b.description());
    assert!(Arc::ptr_eq(a.context(), b.context()), "two backends created two devices");
}

#[test]
fn edits_are_queued_and_reach_the_ledger_exactly() {
    if !gpu_or_skip("edits_are_queued_and_reach_the_ledger_exactly") {
        return;
    }
    let grid = Grid::new(32, 32, 1.0).unwrap();
    let mut sim = Simulation::new(scenarios::flat_pool(grid, 0.001), Params::default(), BackendPreference::Gpu).unwrap();
    let quantum = sim.quantum_volume();
    let added = sim.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
    // Removing far more than is there: the device clamps and counts what was really there.
    sim.remove_water(10.0, 10.0, 1000.0, 3.0).unwrap();
    let ledger = sim.ledger().unwrap();
    let state = sim.read_state().unwrap();
    println!("added {added} m³ ({} quanta), ledger {:?}, total {} quanta", added / quantum, ledger.counters, state.total_quanta());
    assert_eq!(ledger.counters.added as f64, (added / quantum).round());
    assert!(ledger.counters.removed > 0);
    assert_eq!(state.total_quanta(), ledger.expected_total());
}

/// Every cell's texels are read only when asked for: with `want_full_snapshots(false)` a frame
/// reads the header and the tiles queries touched, and those cells agree with the state.
#[test]
fn queries_read_only_the_tiles_they_touch_unless_every_cell_is_wanted() {
    if !gpu_or_skip("queries_read_only_the_tiles_they_touch_unless_every_cell_is_wanted") {
        return;
    }
    let grid = Grid::new(96, 64, 1.0).unwrap();
    let mut sim = Simulation::new(scenarios::dam_break(grid, 30, 1.0, 0.2), Params::default(), BackendPreference::Gpu).unwrap();
    sim.advance(1.0 / 60.0).unwrap();
    let full_bytes = sim.last_readback_bytes();
    sim.want_full_snapshots(false);
    // (-16.4, 0.6) lies in cell (31, 32); its bilinear neighbours, cells 31 and 32 of rows 32
    // and 33, lie in tile columns 3 and 4 (cells 24..32, 32..40) of tile row 4: two tiles.
    let (x, z) = (-16.4, 0.6);
    let mut depth = 0.0;
    let mut tile_bytes = 0;
    for _ in 0..4 {
        depth = sim.depth(x, z).unwrap();
        sim.advance(1.0 / 60.0).unwrap();
        tile_bytes = sim.last_readback_bytes();
    }
    let asked = Instant::now();
    let snapshot = loop {
        let s = sim.snapshot().unwrap();
        if s.sequence == 5 {
            break s;
        }
        assert!(asked.elapsed().as_secs() < 60, "the last frame's readback arrives");
        std::thread::yield_now();
    };
    let state = sim.read_state().unwrap();
    let exact = state.snapshot(5, Default::default());
    let cell = grid.index(31, 32);
    let far = grid.index(90, 5);
    println!(
        "full read: {full_bytes} B ({} cells × 32 + {HEADER_BYTES} + {SLEEP_REPORT_BYTES}); tile read: {tile_bytes} B; queried depth {depth:.4} m; cell (31, 32) {} m in the snapshot, {} m in the state; far cell (90, 5) {} m in the snapshot (as loaded), {} m now",
        grid.cell_count(),
        snapshot.height[cell][1],
        exact.height[cell][1],
        snapshot.height[far][1],
        exact.height[far][1]
    );
    // Both carry the sleeping report behind them.
    assert_eq!(full_bytes, (HEADER_BYTES + 32 * grid.cell_count() + SLEEP_REPORT_BYTES) as u64);
    assert_eq!(tile_bytes, (TileRequests::readback_bytes(2) + SLEEP_REPORT_BYTES) as u64, "a query reads its two tiles, not the grid");
    assert_eq!(snapshot.height[cell], exact.height[cell], "the tiles read hold the cells' texels of that frame");
    assert_eq!(snapshot.total_quanta, exact.total_quanta, "the header holds the frame's totals");
}

/// A read that is in flight when a state is loaded belongs to the old water: it is discarded
/// when it arrives, and queries answer with the loaded water until a read of it arrives. Here
/// the old water is 2 m deep, the loaded state dry, and every query after each load must say so.
#[test]
fn a_read_in_flight_when_a_state_is_loaded_never_answers_a_query() {
    if !gpu_or_skip("a_read_in_flight_when_a_state_is_loaded_never_answers_a_query") {
        return;
    }
    let grid = Grid::new(64, 64, 1.0).unwrap();
    let deep = scenarios::flat_pool(grid, 2.0);
    let dry = State::new(grid);
    for full in [true, false] {
        let mut sim = Simulation::new(deep.clone(), Params::default(), BackendPreference::Gpu).unwrap();
        sim.want_full_snapshots(full);
        let (mut queries, mut wrong) = (0, 0);
        for round in 0..20 {
            sim.load(deep.clone()).unwrap();
            for _ in 0..3 {
                let _ = sim.depth(0.5, 0.5);
                sim.advance(1.0 / 60.0).unwrap();
            }
            // Reads of the deep water are in flight now.
            sim.load(dry.clone()).unwrap();
            for frame in 0..4 {
                let depth = sim.depth(0.5, 0.5).unwrap();
                let total = sim.total_water();
                queries += 1;
                if depth != 0.0 || total != 0.0 {
                    wrong += 1;
                    println!("round {round}, frame {frame} after the load: depth {depth} m, total {total} m³");
                }
                sim.advance(1.0 / 60.0).unwrap();
            }
        }
        println!("full reads {full}: {queries} queries after loads, {wrong} answered with water from before the load");
        assert_eq!(wrong, 0);
    }
}

/// `read_depth` on the GPU reads the depth alone and agrees with `read_state`: the whole grid
/// equals the state's depth after a few frames of a dam break with an edit queued last (queued
/// edits are applied first, as `read_state` applies them), and a read of some tiles writes
/// exactly their cells and leaves the rest as they were. Prints the cells compared.
#[test]
fn reading_the_depth_alone_gives_the_states_depth_and_only_the_tiles_asked_for() {
    if !gpu_or_skip("reading_the_depth_alone_gives_the_states_depth_and_only_the_tiles_asked_for") {
        return;
    }
    use pipewater_core::backend::sleep::TileGrid;
    let grid = Grid::new(90, 70, 0.5).unwrap();
    let mut sim = Simulation::new(scenarios::dam_break(grid, 30, 1.0, 0.1), Params::default(), BackendPreference::Gpu).unwrap();
    for _ in 0..5 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    sim.add_water(0.0, 0.0, 2.0, 1.5).unwrap();
    let mut depth = vec![-1; grid.cell_count()];
    sim.read_depth(None, &mut depth).unwrap();
    let state = sim.read_state().unwrap();
    let differing = depth.iter().zip(&state.depth).filter(|(a, b)| a != b).count();
    let tiles = TileGrid::new(grid.width, grid.height, [32, 32]);
    let which: Vec<bool> = (0..tiles.count()).map(|t| t % 2 == 1).collect();
    let mut some = vec![-1; grid.cell_count()];
    sim.read_depth(Some((&tiles, &which)), &mut some).unwrap();
    let (mut written_right, mut untouched, mut wrong) = (0, 0, 0);
    for y in 0..grid.height {
        for x in 0..grid.width {
            let i = grid.index(x, y);
            match (which[tiles.tile_of(x, y)], some[i]) {
                (true, d) if d == state.depth[i] => written_right += 1,
                (false, -1) => untouched += 1,
                _ => wrong += 1,
            }
        }
    }
    println!("whole read: {} cells, {differing} differ from read_state; tiles 1, 3, 5 of {}: {written_right} cells read, {untouched} left alone, {wrong} wrong", depth.len(), tiles.count());
    assert_eq!(differing, 0);
    assert_eq!(wrong, 0);
    assert!(written_right > 0 && untouched > 0);
}

/// Blocking reads from several threads at once, on the one shared device, each beside the
/// others' frames and a save's worker: none panics and each reads its own water whole. wgpu-core
/// 30's blocking poll asserted that a queue it found empty had reached the submission it waited
/// for, which another thread's poll could make false (a panic inside wgpu); the backends now wait
/// by polling without blocking. Prints the reads made and the threads that panicked.
#[test]
fn blocking_reads_on_several_threads_share_the_device_without_a_panic() {
    if !gpu_or_skip("blocking_reads_on_several_threads_share_the_device_without_a_panic") {
        return;
    }
    const THREADS: usize = 4;
    const ROUNDS: usize = 120;
    // A neighbour that submits and polls without pause, as fast as it can: what empties the
    // queue between a blocking poll's two reads.
    let ctx = GpuContext::shared().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let neighbour = std::thread::spawn(move || {
        let mut polls = 0u64;
        while !flag.load(Ordering::Relaxed) {
            ctx.queue.submit([]);
            let _ = ctx.device.poll(wgpu::PollType::Poll);
            polls += 1;
        }
        polls
    });
    let workers: Vec<_> = (0..THREADS)
        .map(|k| {
            std::thread::spawn(move || {
                let grid = Grid::new(48 + 8 * k as u32, 40, 0.5).unwrap();
                let mut sim = Simulation::new(scenarios::dam_break(grid, 12, 1.0, 0.1), Params::default(), BackendPreference::Gpu).unwrap();
                let total = sim.read_state().unwrap().total_quanta();
                let (mut reads, mut save) = (0, None);
                for round in 0..ROUNDS {
                    sim.advance(1.0 / 120.0).unwrap();
                    let state = sim.read_state().unwrap();
                    assert_eq!(state.total_quanta(), total, "thread {k} round {round}: a closed basin keeps its water");
                    // A save's worker waits for its read while this thread steps and reads on.
                    match round % 20 {
                        0 => save = Some(sim.begin_save().unwrap()),
                        10 => assert!(!save.take().expect("begun").wait().unwrap().is_empty()),
                        _ => {}
                    }
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
    stop.store(true, Ordering::Relaxed);
    let polls = neighbour.join().unwrap();
    let panicked = results.iter().filter(|r| r.is_err()).count();
    let reads: usize = results.iter().filter_map(|r| r.as_ref().ok()).sum();
    println!("{THREADS} threads: {reads} blocking reads of {} beside a neighbour's {polls} polls; threads that panicked: {panicked}", THREADS * ROUNDS);
    assert_eq!(panicked, 0);
    assert_eq!(reads, THREADS * ROUNDS);
}

/// A multiplayer server on wgpu captures its water (the depths and flows of the tiles its device
/// finds changed, read back without waiting and taken a sync or two later): after 2 s of a dam
/// break stepped on the GPU and then 1 s of syncs without steps, the client holds the server's
/// water quantum for quantum. Prints the captures, the tiles read and the cells that differ.
#[test]
fn a_server_on_the_gpu_syncs_its_water_to_a_client() {
    if !gpu_or_skip("a_server_on_the_gpu_syncs_its_water_to_a_client") {
        return;
    }
    use pipewater_core::sync::{ClientSession, ServerSession, SyncConfig, SERVER_PEER};
    let grid = Grid::new(64, 64, 1.0).unwrap();
    let start = scenarios::dam_break(grid, 20, 1.0, 0.3);
    let mut server_sim = Simulation::new(start.clone(), Params::default(), BackendPreference::Gpu).unwrap();
    let mut server = ServerSession::start(SyncConfig::default(), &mut server_sim).unwrap();
    let mut client = ClientSession::start(&mut Simulation::cpu(start, Params::default()).unwrap()).unwrap();
    let (mut to_server, mut to_client): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    let frame = 1.0 / 60.0;
    let mut now = 0.0;
    for k in 0..180 {
        for bytes in to_server.drain(..) {
            server.receive(2, &bytes, now).unwrap();
        }
        for bytes in to_client.drain(..) {
            client.receive(SERVER_PEER, &bytes).unwrap();
        }
        if k < 120 {
            server_sim.advance(frame).unwrap();
        }
        to_client.extend(server.frame(&mut server_sim, now).unwrap().into_iter().map(|(_, o)| o.bytes));
        to_server.extend(client.frame(now).into_iter().map(|o| o.bytes));
        now += frame as f64;
    }
    let truth = server_sim.read_state().unwrap().depth;
    let copy = client.client().depths();
    let differing = copy.iter().zip(&truth).filter(|(a, b)| a != b).count();
    println!("{} captures on {}, {} tiles read; the client's copy after 1 s at rest: {differing} of {} cells differ (complete: {})", server.captures(), server_sim.backend_description(), server.tiles_read(), truth.len(), client.client().is_complete());
    // 90 syncs; a read the device has not finished is taken a sync later (lavapipe, with no
    // frames to wait for while the water rests, finishes in its own time), so at least every
    // other sync captures.
    assert!(server.captures() >= 45, "{} captures", server.captures());
    assert!(client.client().is_complete());
    assert_eq!(differing, 0);
}
