//! A lost GPU device, forced with wgpu's `Device::destroy` (what `simulate_device_loss` does):
//! a running simulation notices it, goes on on the next backend with the water of its newest
//! snapshot and an exact ledger, and a new simulation gets a fresh device; the detail wave layer
//! goes along to the next backend, and a fresh device makes its own detail pipelines.
//!
//! Every test here destroys the process-wide device, so they run one at a time (and in a test
//! binary of their own, away from the tests that share that device).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::backend::cpu::CpuBackend;
use pipewater_core::backend::gpu::GpuContext;
use pipewater_core::backend::{Backend, BackendKind, CellDisplacement, CellTerrain, CellWater, EditOutcome, FramePlan, PipeNudge};
use pipewater_core::state::{Counters, Snapshot};
use pipewater_core::detail::DetailParams;
use pipewater_core::{scenarios, BackendPreference, Error, Grid, Params, Simulation, State};
use std::sync::{Arc, Mutex};

/// The tests of this binary, one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_lost_wgpu_device_moves_the_water_to_the_cpu_with_an_exact_ledger_and_a_new_simulation_gets_a_fresh_device() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip("a_lost_wgpu_device_moves_the_water_to_the_cpu_with_an_exact_ledger_and_a_new_simulation_gets_a_fresh_device") {
        return;
    }
    let grid = Grid::new(48, 32, 1.0).unwrap();
    let mut sim = Simulation::new(scenarios::dam_break(grid, 16, 1.0, 0.2), Params::default(), BackendPreference::Gpu).unwrap();
    sim.add_source(-10.0, 0.0, 0.5, 2.0).unwrap();
    sim.set_detail(Some(DetailParams::default())).unwrap();
    sim.add_ripple(5.0, 3.0, 0.1, 2.0).unwrap();
    for _ in 0..30 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    // The water as the device holds it, and a snapshot that shows the same frame.
    let before = sim.read_state().unwrap();
    let start = std::time::Instant::now();
    while sim.snapshot().unwrap().sequence < 30 {
        assert!(start.elapsed().as_secs() < 60, "the last frame's readback arrives");
    }
    let old_context = GpuContext::shared().unwrap();
    assert!(sim.simulate_device_loss(), "a wgpu simulation has a device to lose");
    // The next call that reaches the device notices the loss and goes on on the CPU.
    let recovered = sim.read_state().unwrap();
    let losses = sim.take_device_losses();
    let changed = before.depth.iter().zip(&recovered.depth).filter(|(a, b)| a != b).count();
    let terrain_same = before.terrain == recovered.terrain;
    println!("losses: {losses:?}; cells whose depth differs from the lost device's: {changed}; terrain kept: {terrain_same}");
    assert_eq!(losses.len(), 1, "the loss is reported once");
    let loss = &losses[0];
    assert_eq!((loss.from, loss.to), (BackendKind::Gpu, BackendKind::Cpu));
    assert!(matches!(loss.reason, Error::DeviceLost(_) | Error::Gpu(_)), "{:?}", loss.reason);
    assert_eq!((loss.recovered_frame, loss.frame), (30, 30));
    assert_eq!(changed, 0, "depths below 16 m come back exactly from the snapshot's texels");
    assert!(terrain_same, "the terrain comes back exactly");
    assert_eq!(loss.difference_m3, 0.0, "the recovered total is the lost device's");
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let (actual, expected) = mass_identity(&mut sim);
    println!("20 frames later on {:?}: total {actual}, expected {expected} quanta", sim.backend_kind());
    assert_eq!(sim.backend_kind(), BackendKind::Cpu);
    assert_eq!(actual, expected, "the mass identity holds across the loss");
    assert!(sim.take_device_losses().is_empty(), "a loss is reported once");
    assert!(sim.detail_params().is_some(), "the detail layer runs on on the CPU");

    let mut fresh = Simulation::new(scenarios::dam_break(grid, 16, 1.0, 0.2), Params::default(), BackendPreference::Gpu).expect("a new simulation gets a fresh device");
    // Pipelines made on the lost device must not be used on the fresh one (wgpu would panic).
    fresh.set_detail(Some(DetailParams::default())).expect("the detail layer on the fresh device");
    fresh.add_ripple(5.0, 3.0, 0.1, 2.0).unwrap();
    for _ in 0..10 {
        fresh.advance(1.0 / 60.0).unwrap();
    }
    let new_context = GpuContext::shared().unwrap();
    let (actual, expected) = mass_identity(&mut fresh);
    println!("fresh simulation on {:?}: ledger {actual} / {expected}", fresh.backend_kind());
    assert_eq!(fresh.backend_kind(), BackendKind::Gpu);
    assert!(!Arc::ptr_eq(&old_context, &new_context), "the lost device is replaced, not handed out again");
    assert_eq!(actual, expected);
}

/// In tile mode (nothing reads the textures on the CPU, so the snapshot is current only for the
/// tiles queries touch) a lost device gives back the whole water of the backend's last recovery
/// point: water a source moved and terrain dug far from any query come back as the device held
/// them at that frame, bit for bit, with that frame's ledger; the frames after it are reported
/// as lost.
#[test]
fn in_tile_mode_a_lost_wgpu_device_gives_back_the_whole_state_of_its_last_recovery_point() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip("in_tile_mode_a_lost_wgpu_device_gives_back_the_whole_state_of_its_last_recovery_point") {
        return;
    }
    let grid = Grid::new(64, 48, 1.0).unwrap();
    let interval = pipewater_core::backend::recovery::recovery_interval_frames(grid.cell_count());
    let mut sim = Simulation::new(scenarios::dam_break(grid, 20, 1.0, 0.3), Params::default(), BackendPreference::Gpu).unwrap();
    sim.want_full_snapshots(false);
    // The query stays in the north-west corner; the source, the digging and the flood are elsewhere.
    let (query_x, query_z) = (-30.0, -22.0);
    sim.add_source(25.0, 18.0, 2.0, 3.0).unwrap();
    let initial = sim.read_state().unwrap();
    let mut expected = None;
    for frame in 1..=interval + 10 {
        sim.surface_height(query_x, query_z);
        if frame == 30 {
            sim.modify_terrain(20.0, -15.0, -0.5, 3.0).unwrap();
        }
        sim.advance(1.0 / 60.0).unwrap();
        if frame == interval {
            // What the device holds at the frame of the recovery read (reading it changes nothing).
            expected = Some((sim.read_state().unwrap(), sim.ledger().unwrap()));
        }
    }
    let (expected, expected_ledger) = expected.expect("the loop passes the recovery frame");
    let far_cells_changed = expected.depth.iter().zip(&initial.depth).filter(|(a, b)| a != b).count();
    let dug_cells = expected.terrain.iter().zip(&initial.terrain).filter(|(a, b)| a != b).count();
    println!("recovery interval {interval} frames; by then {far_cells_changed} cells' depth and {dug_cells} cells' terrain differ from the load");
    assert!(far_cells_changed > 100 && dug_cells > 10, "the scenario moves water and digs far from the query");

    assert!(sim.simulate_device_loss());
    let recovered = sim.read_state().unwrap();
    let losses = sim.take_device_losses();
    println!("losses: {losses:?}");
    for loss in &losses {
        println!("{loss}");
    }
    let depth_diff = recovered.depth.iter().zip(&expected.depth).filter(|(a, b)| a != b).count();
    let terrain_diff = recovered.terrain.iter().zip(&expected.terrain).filter(|(a, b)| a != b).count();
    let flow_diff = recovered.flow.iter().zip(&expected.flow).filter(|(a, b)| a != b).count();
    println!("cells that differ from the device's state at frame {interval}: depth {depth_diff}, terrain {terrain_diff}, flow {flow_diff}");
    assert_eq!(losses.len(), 1);
    let loss = &losses[0];
    assert_eq!((loss.from, loss.to), (BackendKind::Gpu, BackendKind::Cpu));
    assert_eq!((loss.recovered_frame, loss.frame), (interval, interval + 10), "the recovery point is the read at the interval");
    assert!(loss.exact, "the point is the device's own state");
    assert_eq!(loss.difference_m3, 0.0);
    assert_eq!((depth_diff, terrain_diff, flow_diff), (0, 0, 0), "every cell comes back as the device held it at the recovery frame");
    let recovered_ledger = sim.ledger().unwrap();
    assert_eq!(recovered_ledger.counters, expected_ledger.counters, "the ledger goes on from the point's counters");
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let (actual, expected_total) = mass_identity(&mut sim);
    println!("20 frames later on {:?}: total {actual}, expected {expected_total} quanta", sim.backend_kind());
    assert_eq!(actual, expected_total, "the mass identity holds across the loss");
}

/// A backend that stands in for Godot's RenderingDevice: the CPU reference, reporting itself as
/// the engine's GPU, whose device can be lost.
struct EngineStandIn {
    cpu: CpuBackend,
    lost: bool,
}

impl EngineStandIn {
    fn check(&self) -> pipewater_core::Result<()> {
        if self.lost {
            Err(Error::DeviceLost("the stand-in's device was lost".into()))
        } else {
            Ok(())
        }
    }
}

impl Backend for EngineStandIn {
    fn kind(&self) -> BackendKind {
        BackendKind::EngineGpu
    }
    fn description(&self) -> String {
        "engine stand-in".into()
    }
    fn load(&mut self, state: &State) -> pipewater_core::Result<()> {
        self.check()?;
        self.cpu.load(state)
    }
    fn restore(&mut self, state: &State, counters: Counters, frames: u64) -> pipewater_core::Result<()> {
        self.check()?;
        self.cpu.restore(state, counters, frames)
    }
    fn edit_water(&mut self, cells: &[CellWater]) -> pipewater_core::Result<EditOutcome> {
        self.cpu.edit_water(cells)
    }
    fn edit_terrain(&mut self, cells: &[CellTerrain]) -> pipewater_core::Result<()> {
        self.cpu.edit_terrain(cells)
    }
    fn set_displacement(&mut self, cells: &[CellDisplacement]) -> pipewater_core::Result<()> {
        self.cpu.set_displacement(cells)
    }
    fn nudge_pipes(&mut self, nudges: &[PipeNudge]) -> pipewater_core::Result<()> {
        self.cpu.nudge_pipes(nudges)
    }
    fn set_terrain(&mut self, terrain: &[f32]) -> pipewater_core::Result<()> {
        self.check()?;
        self.cpu.set_terrain(terrain)
    }
    fn advance(&mut self, plan: &FramePlan) -> pipewater_core::Result<()> {
        self.check()?;
        self.cpu.advance(plan)
    }
    fn snapshot(&mut self) -> Option<Arc<Snapshot>> {
        self.cpu.snapshot()
    }
    fn read_state(&mut self) -> pipewater_core::Result<State> {
        self.check()?;
        self.cpu.read_state()
    }
    fn read_counters(&mut self) -> pipewater_core::Result<Counters> {
        self.check()?;
        self.cpu.read_counters()
    }
    fn simulate_device_loss(&mut self) -> bool {
        self.lost = true;
        true
    }
}

#[test]
fn a_lost_engine_device_moves_the_water_to_wgpu_and_a_lost_wgpu_device_then_to_the_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = gpu_or_skip("a_lost_engine_device_moves_the_water_to_wgpu_and_a_lost_wgpu_device_then_to_the_cpu");
    let grid = Grid::new(32, 32, 1.0).unwrap();
    let state = scenarios::dam_break(grid, 10, 0.8, 0.1);
    let mut sim = Simulation::with_backend(state, Params::default(), |s| Ok(Box::new(EngineStandIn { cpu: CpuBackend::new(s), lost: false }))).unwrap();
    for _ in 0..20 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    let total = sim.read_state().unwrap().total_quanta();
    sim.simulate_device_loss();
    sim.advance(1.0 / 60.0).unwrap();
    let first = sim.take_device_losses();
    let on = sim.backend_kind();
    sim.simulate_device_loss();
    sim.advance(1.0 / 60.0).unwrap();
    let second = sim.take_device_losses();
    let (actual, expected) = mass_identity(&mut sim);
    println!("first: {first:?}\nsecond: {second:?}\nledger {actual} / {expected} (total before the losses {total})");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].from, BackendKind::EngineGpu);
    let next = if gpu { BackendKind::Gpu } else { BackendKind::Cpu };
    assert_eq!((first[0].to, on), (next, next), "the engine's GPU gives way to wgpu where it runs");
    assert_eq!(first[0].difference_m3, 0.0, "the stand-in's snapshot covers every cell: nothing differs");
    if gpu {
        assert_eq!((second.len(), second[0].from, second[0].to), (1, BackendKind::Gpu, BackendKind::Cpu));
    } else {
        assert!(second.is_empty(), "the CPU has no device to lose");
    }
    assert_eq!(sim.backend_kind(), BackendKind::Cpu);
    assert_eq!(actual, expected, "the mass identity holds across both losses");
}
