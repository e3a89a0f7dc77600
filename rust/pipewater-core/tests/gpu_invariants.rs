//! On the GPU, over random terrains, parameters, boundaries, sources and edits: depth never goes
//! below zero, nothing becomes NaN, and the mass identity holds exactly after every frame. The
//! distance to the CPU backend is printed, not asserted: these cases include metre-high columns
//! on 5 cm cells, where one quantum of rounding difference grows chaotically (gpu_agreement.rs
//! bounds the difference on the smooth core scenarios).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::*;
use pipewater_core::quanta::depth_to_quanta;
use pipewater_core::scenarios::SplitMix64;
use pipewater_core::{Boundary, CrossSection, Grid, NeighbourMode, Params, State};

/// Cases run (each up to 40 frames on both backends).
const CASES: u64 = 24;

fn random_case(seed: u64) -> (State, Params) {
    let mut rng = SplitMix64::new(seed);
    let w = 4 + (rng.next_u64() % 45) as u32;
    let h = 4 + (rng.next_u64() % 45) as u32;
    let dx = [0.05f32, 0.5, 1.0, 4.0][(rng.next_u64() % 4) as usize];
    let g = Grid::new(w, h, dx).unwrap();
    let relief = rng.range(0.0, 5.0) * dx;
    let mut state = State::new(g);
    for b in state.terrain.iter_mut() {
        *b = rng.range(0.0, relief);
    }
    state.fill_to_level(rng.range(0.0, relief * 1.2)).expect("the test level lies within a cell's depth limit");
    for _ in 0..3 {
        let i = (rng.next_u64() % g.cell_count() as u64) as usize;
        state.depth[i] = state.depth[i].saturating_add(depth_to_quanta(rng.range(0.0, 3.0)));
    }
    let boundary = |r: u64| match r % 3 {
        0 => Boundary::Wall,
        1 => Boundary::Open,
        _ => Boundary::Inflow { rate: (r % 7) as f32 * 0.1 },
    };
    let params = Params {
        gravity: rng.range(1.0, 30.0),
        damping: rng.range(0.0, 1.0),
        neighbours: if rng.next_u64().is_multiple_of(2) { NeighbourMode::Four } else { NeighbourMode::Eight },
        cross_section: if rng.next_u64().is_multiple_of(2) { CrossSection::Classic } else { CrossSection::DepthDependent },
        pipe_depth: rng.range(0.01, 3.0),
        boundaries: [boundary(rng.next_u64()), boundary(rng.next_u64()), boundary(rng.next_u64()), boundary(rng.next_u64())],
        cfl: rng.range(0.1, 0.9),
        ..Params::default()
    };
    (state, params)
}

#[test]
fn gpu_depth_stays_non_negative_and_mass_is_exact_under_random_use() {
    if !gpu_or_skip("gpu_depth_stays_non_negative_and_mass_is_exact_under_random_use") {
        return;
    }
    let mut worst = 0.0f32;
    for case in 0..CASES {
        let seed = 0x5EED_0000 + case * 7919;
        let (state, params) = random_case(seed);
        let g = state.grid;
        let (mut cpu, mut gpu) = pair(state, params);
        let mut rng = SplitMix64::new(seed ^ 0xABCD);
        let [ex, ez] = g.extent();
        let frames = 5 + (rng.next_u64() % 35) as u32;
        let source = (rng.range(-ex, ex) * 0.5, rng.range(-ez, ez) * 0.5, rng.range(0.0, 2.0), rng.range(0.0, ex));
        let drain = (rng.range(-ex, ex) * 0.5, rng.range(-ez, ez) * 0.5, -rng.range(0.0, 2.0), rng.range(0.0, ex));
        for sim in [&mut cpu, &mut gpu] {
            sim.add_source(source.0, source.1, source.2, source.3).unwrap();
            sim.add_source(drain.0, drain.1, drain.2, drain.3).unwrap();
        }
        for frame in 0..frames {
            let (x, z) = (rng.range(-ex, ex) * 0.6, rng.range(-ez, ez) * 0.6);
            let (a, r, dh) = (rng.range(0.0, 5.0), rng.range(0.0, ex * 0.5), rng.range(-2.0, 2.0));
            let kind = rng.next_u64() % 4;
            // The same stable step on both (advance would pick it from each one's snapshot).
            // Beyond stability, one quantum of difference grows without bound and only
            // positivity and mass would remain comparable.
            let dt = cpu.stable_step() * rng.range(0.2, 1.0);
            for sim in [&mut cpu, &mut gpu] {
                match kind {
                    0 => drop(sim.add_water(x, z, a, r).unwrap()),
                    1 => drop(sim.remove_water(x, z, a, r).unwrap()),
                    2 => sim.modify_terrain(x, z, dh, r).unwrap(),
                    _ => {}
                }
                sim.run_steps(dt, 4).unwrap();
            }
            let s = gpu.read_state().unwrap();
            assert_physical(&s, &format!("case {case} (seed {seed:#x}) frame {frame}"));
            let (actual, expected) = mass_identity(&mut gpu);
            assert_eq!(actual, expected, "case {case} frame {frame}: GPU mass identity off by {}", actual - expected);
        }
        let d = difference(&cpu.read_state().unwrap(), &gpu.read_state().unwrap());
        let rel = d.max_depth / d.depth_scale.max(1e-6);
        worst = worst.max(rel);
    }
    println!("{CASES} random cases: positivity and exact mass identity after every frame; worst GPU-CPU depth difference {worst:.2e} of the deepest water");
}
