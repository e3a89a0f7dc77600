//! A soak: a long random sequence of everything a game does to the water (every edit, query,
//! source, body, save and load, backend switch and device loss, with careless and hostile
//! arguments mixed in), with the invariants checked after every frame:
//! - the ledger is exact: the whole state's total equals initial + added − removed + in − out;
//! - no NaN or infinity in terrain or pipes; depth never negative, never past the limit;
//! - every call returns (a bad argument is an error, never a panic).
//!
//! The test runs a fixed seed for `PIPEWATER_SOAK_FRAMES` frames (10 000 by default) on wgpu
//! (lavapipe here and in CI) and on the CPU; a longer run is the same test with a larger count
//! and `PIPEWATER_SOAK_SEED`. Device losses destroy the process-wide wgpu device, so this is a
//! test binary of its own.

mod gpu_support;

use gpu_support::*;
use pipewater_core::bodies::{Body, HullShape};
use pipewater_core::glam::Vec3;
use pipewater_core::{BackendKind, BackendPreference, Grid, Params, Simulation, SourceId, MAX_DEPTH_QUANTA};

/// xorshift64*: a fixed seed gives the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Mostly a sensible figure, sometimes a hostile one.
    fn figure(&mut self, lo: f32, hi: f32) -> f32 {
        match self.below(40) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => -1.0e30,
            3 => 1.0e30,
            4 => -hi,
            _ => self.range(lo, hi),
        }
    }
}

/// What the soak did, for the closing line.
#[derive(Default, Debug)]
struct Tally {
    frames: u64,
    calls: u64,
    refused: u64,
    saves: u64,
    loads: u64,
    switches: u64,
    losses: u64,
    gpu_frames: u64,
}

fn check_invariants(sim: &mut Simulation, frame: u64, what: &str) {
    let state = sim.read_state().unwrap_or_else(|e| panic!("frame {frame} after {what}: read_state failed: {e}"));
    let ledger = sim.ledger().unwrap_or_else(|e| panic!("frame {frame} after {what}: ledger failed: {e}"));
    let (total, expected) = (state.total_quanta(), ledger.expected_total());
    assert_eq!(total, expected, "frame {frame} after {what}: the ledger is exact (total {total}, expected {expected})");
    if let Some(at) = state.depth.iter().position(|&d| !(0..=MAX_DEPTH_QUANTA).contains(&d)) {
        panic!("frame {frame} after {what}: cell {at} holds {} quanta", state.depth[at]);
    }
    if let Some(at) = state.terrain.iter().position(|t| !t.is_finite()) {
        panic!("frame {frame} after {what}: terrain of cell {at} is {}", state.terrain[at]);
    }
    if let Some(at) = state.flow.iter().position(|f| f.iter().any(|v| !v.is_finite())) {
        panic!("frame {frame} after {what}: pipes of cell {at} are {:?}", state.flow[at]);
    }
}

fn soak(seed: u64, frames: u64, gpu: bool) -> Tally {
    let mut rng = Rng(seed.max(1));
    let grid = Grid::new(40, 28, 0.5).unwrap();
    let [ex, ez] = grid.extent();
    let start = pipewater_core::scenarios::dam_break(grid, 14, 1.2, 0.2);
    let preference = if gpu { BackendPreference::Gpu } else { BackendPreference::Cpu };
    let mut sim = Simulation::new(start, Params::default(), preference).expect("a simulation");
    let mut sources: Vec<SourceId> = Vec::new();
    let mut saved: Option<Vec<u8>> = None;
    let mut tally = Tally::default();
    let point = |rng: &mut Rng| (rng.figure(-0.6 * ex, 0.6 * ex), rng.figure(-0.6 * ez, 0.6 * ez));
    for frame in 1..=frames {
        let calls = rng.below(4);
        let mut what = String::from("advance");
        for _ in 0..calls {
            tally.calls += 1;
            let (x, z) = point(&mut rng);
            let kind = rng.below(24);
            let ok = match kind {
                0 | 1 => sim.add_water(x, z, rng.figure(0.0, 3.0), rng.figure(0.0, 4.0)).is_ok(),
                2 => sim.remove_water(x, z, rng.figure(0.0, 3.0), rng.figure(0.0, 4.0)).is_ok(),
                3 => sim.modify_terrain(x, z, rng.figure(-0.5, 0.5), rng.figure(0.0, 4.0)).is_ok(),
                4 => sim.fill_basin(x, z, rng.figure(-0.5, 2.0)).is_ok(),
                5 => match sim.add_source(x, z, rng.figure(-1.0, 2.0), rng.figure(0.0, 3.0)) {
                    Ok(id) => {
                        sources.push(id);
                        true
                    }
                    Err(_) => false,
                },
                6 if !sources.is_empty() => {
                    let id = sources[rng.below(sources.len() as u64) as usize];
                    sim.set_source_rate(id, rng.figure(-1.0, 2.0)).is_ok()
                }
                7 if !sources.is_empty() => {
                    let id = sources.swap_remove(rng.below(sources.len() as u64) as usize);
                    sim.remove_source(id)
                }
                8 if !sources.is_empty() => {
                    let id = sources[rng.below(sources.len() as u64) as usize];
                    sim.move_source(id, x, z, rng.figure(0.0, 3.0)).is_ok()
                }
                9 => sim.push_water(x, z, [rng.figure(-3.0, 3.0), rng.figure(-3.0, 3.0)], rng.figure(0.0, 3.0)).is_ok(),
                10 => {
                    let mut body = Body::new(Vec3::new(x, rng.figure(-1.0, 2.0), z), HullShape::Sphere { radius: rng.figure(0.1, 1.5) });
                    body.linear_velocity = Vec3::new(rng.figure(-2.0, 2.0), 0.0, rng.figure(-2.0, 2.0));
                    sim.couple_bodies(&[body], 1.0 / 60.0, 1000.0).is_ok()
                }
                11 => sim.paint_water(x, z, rng.figure(0.0, 2.0), rng.figure(0.0, 3.0)).is_ok(),
                12 => sim.smooth_terrain(x, z, rng.figure(0.0, 1.0), rng.figure(0.0, 3.0)).is_ok(),
                13 => {
                    let _ = sim.surface_height(x, z);
                    let _ = sim.depth(x, z);
                    let v = sim.flow_velocity(x, z);
                    assert!(v.is_none_or(|v| v.iter().all(|c| c.is_finite())), "frame {frame}: flow velocity {v:?}");
                    let _ = sim.raycast([x, rng.figure(-10.0, 2.0e6), z], [rng.figure(-1.0, 1.0), -1.0, rng.figure(-1.0, 1.0)]);
                    true
                }
                14 => {
                    what = "save".into();
                    tally.saves += 1;
                    match sim.save_state() {
                        Ok(bytes) => {
                            saved = Some(bytes);
                            true
                        }
                        Err(_) => false,
                    }
                }
                15 => match &saved {
                    Some(bytes) => {
                        what = "load".into();
                        tally.loads += 1;
                        let mut bytes = bytes.clone();
                        // Now and then a damaged file: it must be refused, the water kept.
                        if rng.below(4) == 0 && !bytes.is_empty() {
                            let at = rng.below(bytes.len() as u64) as usize;
                            bytes[at] ^= 1 << rng.below(8);
                        }
                        let ok = sim.restore_state(&bytes).is_ok();
                        // Sources are the save's now.
                        sources = sim.source_ids();
                        ok
                    }
                    None => false,
                },
                16 if gpu => {
                    what = "switch".into();
                    tally.switches += 1;
                    let to = if sim.backend_kind() == BackendKind::Cpu { BackendPreference::Gpu } else { BackendPreference::Cpu };
                    sim.switch_to(to).is_ok()
                }
                17 if gpu && rng.below(3) == 0 => {
                    what = "device loss".into();
                    let lost = sim.simulate_device_loss();
                    tally.losses += lost as u64;
                    lost
                }
                18 => {
                    sim.want_full_snapshots(rng.below(2) == 0);
                    true
                }
                19 => sim.apply_edits().is_ok(),
                20 if rng.below(10) == 0 => {
                    what = "reset".into();
                    let ok = sim.reset().is_ok();
                    sources = sim.source_ids();
                    ok
                }
                21 => sim.run_steps(rng.figure(1.0e-4, 0.05), rng.below(4) as u32).is_ok(),
                _ => {
                    let _ = sim.total_water();
                    true
                }
            };
            tally.refused += !ok as u64;
        }
        let delta = if rng.below(50) == 0 { rng.figure(0.0, 0.5) } else { 1.0 / 60.0 };
        let _ = sim.advance(delta);
        if sim.backend_kind() == BackendKind::Gpu {
            tally.gpu_frames += 1;
        }
        // Losses are noticed by the next call that reaches the device (the check's read here).
        check_invariants(&mut sim, frame, &what);
        sim.take_device_losses();
        tally.frames += 1;
    }
    tally
}

fn frames() -> u64 {
    std::env::var("PIPEWATER_SOAK_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

fn seed() -> u64 {
    std::env::var("PIPEWATER_SOAK_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_0051)
}

#[test]
fn a_random_sequence_of_every_call_keeps_the_ledger_exact_and_the_water_finite_on_the_cpu() {
    let tally = soak(seed(), frames(), false);
    println!("CPU soak, seed {:#x}: {tally:?}", seed());
    assert_eq!(tally.frames, frames());
}

#[test]
fn a_random_sequence_of_every_call_with_backend_switches_and_device_losses_keeps_the_ledger_exact_on_wgpu() {
    if !gpu_or_skip("a_random_sequence_of_every_call_with_backend_switches_and_device_losses_keeps_the_ledger_exact_on_wgpu") {
        return;
    }
    let tally = soak(seed() ^ 0x9e37_79b9, frames(), true);
    println!("wgpu soak, seed {:#x}: {tally:?}", seed() ^ 0x9e37_79b9);
    assert_eq!(tally.frames, frames());
    assert!(tally.losses > 0 && tally.switches > 0 && tally.gpu_frames > 0, "the sequence reached the device, lost it and switched: {tally:?}");
}
