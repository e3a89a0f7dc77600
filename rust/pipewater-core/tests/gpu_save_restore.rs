//! Saving and restoring on the GPU backend: the restored fields and ledger are exact, later frames
//! agree with a run that never stopped within the agreement tolerance of `tests/gpu_agreement.rs`
//! (kept in `gpu_support`), and a saved state is the same bytes whichever backend holds it.
#![cfg(feature = "gpu")]

mod common;
mod gpu_support;

use common::{busy_valley, differing_cells, drive_busy_valley, fingerprint, Stepping};
use gpu_support::{difference, gpu_or_skip, mass_identity, MAX_DEPTH_DIFFERENCE, MEAN_DEPTH_DIFFERENCE, TOTAL_DIFFERENCE};
use pipewater_core::{BackendPreference, Params, Simulation, State};

/// Frame at which the interrupted run saves, and the frame both runs are compared at.
const SAVE_AT: u32 = 300;
const COMPARE_AT: u32 = 600;

#[test]
fn a_gpu_run_restored_at_frame_300_matches_one_that_never_stopped_with_an_exact_ledger() {
    if !gpu_or_skip("a_gpu_run_restored_at_frame_300_matches_one_that_never_stopped_with_an_exact_ledger") {
        return;
    }
    let mut through = busy_valley(BackendPreference::Gpu);
    drive_busy_valley(&mut through, 0, SAVE_AT, Stepping::Fixed);
    let saved = through.save_state().unwrap();
    let (at_save, ledger_at_save) = (through.read_state().unwrap(), through.ledger().unwrap());
    drive_busy_valley(&mut through, SAVE_AT, COMPARE_AT, Stepping::Fixed);

    let mut restored = Simulation::new(State::new(through.grid()), Params::default(), BackendPreference::Gpu).unwrap();
    restored.restore_state(&saved).unwrap();
    let (just_restored, ledger_restored) = (restored.read_state().unwrap(), restored.ledger().unwrap());
    println!(
        "frame {SAVE_AT}: saved {:016x} with ledger {:?}; restored {:016x} with ledger {:?}; {} cells differ",
        fingerprint(&at_save),
        ledger_at_save,
        fingerprint(&just_restored),
        ledger_restored,
        differing_cells(&at_save, &just_restored)
    );
    assert_eq!(differing_cells(&at_save, &just_restored), 0, "the restored fields are the saved ones");
    assert_eq!(ledger_restored, ledger_at_save, "the restored ledger is the saved one");

    drive_busy_valley(&mut restored, SAVE_AT, COMPARE_AT, Stepping::Fixed);
    let (a, b) = (through.read_state().unwrap(), restored.read_state().unwrap());
    let (la, lb) = (through.ledger().unwrap(), restored.ledger().unwrap());
    let (actual, expected) = mass_identity(&mut restored);
    let d = difference(&a, &b);
    let scale = d.depth_scale.max(1e-6);
    let total_diff = (d.totals.0 - d.totals.1).unsigned_abs() as f64 / d.totals.0.max(1) as f64;
    println!(
        "frame {COMPARE_AT}: depth max |Δ| {:.3e} m ({:.2e} of {scale:.3} m, allowed {MAX_DEPTH_DIFFERENCE:e}), mean |Δ| {:.3e} m; \
         totals {} vs {} quanta ({total_diff:.2e}, allowed {TOTAL_DIFFERENCE:e}); ledgers {:?} vs {:?}; restored mass identity {actual} vs {expected}",
        d.max_depth,
        d.max_depth / scale,
        d.mean_depth,
        d.totals.0,
        d.totals.1,
        la.counters,
        lb.counters
    );
    assert_eq!(actual, expected, "the restored run's mass identity is exact");
    assert_eq!(la.initial, lb.initial, "the initial total comes from the save");
    assert!(d.max_depth / scale <= MAX_DEPTH_DIFFERENCE, "max depth difference {} m", d.max_depth);
    assert!(d.mean_depth / scale as f64 <= MEAN_DEPTH_DIFFERENCE, "mean depth difference {} m", d.mean_depth);
    assert!(total_diff <= TOTAL_DIFFERENCE, "totals differ by {total_diff}");
    assert_eq!(d.max_terrain, 0.0, "terrain edits are exact");
}

#[test]
fn a_state_saved_on_the_gpu_restores_on_the_cpu_to_the_same_bytes() {
    if !gpu_or_skip("a_state_saved_on_the_gpu_restores_on_the_cpu_to_the_same_bytes") {
        return;
    }
    let mut gpu = busy_valley(BackendPreference::Gpu);
    drive_busy_valley(&mut gpu, 0, 120, Stepping::Fixed);
    let from_gpu = gpu.save_state().unwrap();
    let mut cpu = Simulation::cpu(State::new(gpu.grid()), Params::default()).unwrap();
    cpu.restore_state(&from_gpu).unwrap();
    let from_cpu = cpu.save_state().unwrap();
    let mut back = Simulation::new(State::new(gpu.grid()), Params::default(), BackendPreference::Gpu).unwrap();
    back.restore_state(&from_cpu).unwrap();
    let from_gpu_again = back.save_state().unwrap();
    println!(
        "{} bytes saved on the GPU; saved again on the CPU: identical = {}; and once more on the GPU: identical = {}; CPU ledger {:?}",
        from_gpu.len(),
        from_cpu == from_gpu,
        from_gpu_again == from_gpu,
        cpu.ledger().unwrap().counters
    );
    assert!(from_cpu == from_gpu, "the CPU holds the GPU's saved state bit for bit");
    assert!(from_gpu_again == from_gpu, "the GPU holds the CPU's saved state bit for bit");
}

/// On wgpu a save begun at a frame (its copy recorded on the device, then mapped and decoded on a
/// worker thread) holds that frame while the simulation runs on for 30 more: its bytes are those
/// of `save_state` at that frame.
#[test]
fn a_gpu_save_begun_at_a_frame_holds_that_frame_while_the_simulation_runs_on() {
    if !gpu_or_skip("a_gpu_save_begun_at_a_frame_holds_that_frame_while_the_simulation_runs_on") {
        return;
    }
    let mut sim = busy_valley(BackendPreference::Gpu);
    drive_busy_valley(&mut sim, 0, 100, Stepping::Fixed);
    let at_begin = sim.save_state().unwrap();
    let begun = std::time::Instant::now();
    let mut job = sim.begin_save().unwrap();
    let held = begun.elapsed();
    let (mut result, mut frames) = (None, 0);
    for frame in 100..130 {
        drive_busy_valley(&mut sim, frame, frame + 1, Stepping::Fixed);
        if result.is_none() {
            frames += 1;
            result = job.poll();
        }
    }
    let bytes = match result {
        Some(bytes) => bytes.unwrap(),
        None => job.wait().unwrap(),
    };
    println!("begin_save held the caller {:.3} ms; the save of frame 100 arrived within {frames} frames, {} bytes, equal to save_state then: {}", held.as_secs_f64() * 1e3, bytes.len(), bytes == at_begin);
    assert_eq!(bytes, at_begin, "the save holds the frame it began on");
}

/// On the GPU a load applied in parts (5 rows of the 72×48 valley a poll, 10 polls) writes at most
/// its budget per poll, steps nothing while it is applied, and lands the fields and ledger
/// `restore_state` gives on the same device, bit for bit; 30 fixed frames later both runs are
/// still identical and the mass identity is exact.
#[test]
fn a_gpu_load_applied_in_parts_is_bounded_per_poll_and_lands_as_restore_state_does() {
    if !gpu_or_skip("a_gpu_load_applied_in_parts_is_bounded_per_poll_and_lands_as_restore_state_does") {
        return;
    }
    let mut source = busy_valley(BackendPreference::Gpu);
    drive_busy_valley(&mut source, 0, SAVE_AT, Stepping::Fixed);
    let saved = source.save_state().unwrap();
    let mut direct = Simulation::new(State::new(source.grid()), Params::default(), BackendPreference::Gpu).unwrap();
    direct.restore_state(&saved).unwrap();
    let row_bytes = source.grid().width as u64 * pipewater_core::simulation::RESTORE_BYTES_PER_CELL;
    let budget = 5 * row_bytes;
    let mut polled = Simulation::new(State::new(source.grid()), Params::default(), BackendPreference::Gpu).unwrap();
    polled.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
    polled.run_steps(0.02, 4).unwrap();
    let mut job = polled.begin_restore(saved.clone()).unwrap();
    job.set_bytes_per_poll(budget).unwrap();
    let (mut parts, mut stepped) = (Vec::new(), 0);
    let outcome = loop {
        let outcome = polled.poll_restore(&mut job);
        if job.last_poll_bytes() > 0 {
            parts.push(job.last_poll_bytes());
        }
        if let Some(outcome) = outcome {
            break outcome;
        }
        if polled.is_applying_restore() {
            stepped += polled.advance(1.0 / 60.0).unwrap().substeps;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    outcome.unwrap();
    let (a, b) = (direct.read_state().unwrap(), polled.read_state().unwrap());
    let (la, lb) = (direct.ledger().unwrap(), polled.ledger().unwrap());
    println!(
        "{} polls applied fields, largest {} B (budget {budget} B), {} B in all, {stepped} steps while applied; landed {:016x} vs restore_state {:016x}, {} cells differ; ledgers {:?} vs {:?}",
        parts.len(),
        parts.iter().max().unwrap_or(&0),
        parts.iter().sum::<u64>(),
        fingerprint(&b),
        fingerprint(&a),
        differing_cells(&a, &b),
        lb.counters,
        la.counters
    );
    assert_eq!(parts.len(), 10);
    assert!(parts.iter().all(|&p| p <= budget));
    assert_eq!(stepped, 0, "the water waits while the load is applied");
    assert_eq!(fingerprint(&a), fingerprint(&b), "the landed fields are restore_state's, bit for bit");
    assert_eq!(la, lb, "the landed ledger is the saved one");
    drive_busy_valley(&mut direct, SAVE_AT, SAVE_AT + 30, Stepping::Fixed);
    drive_busy_valley(&mut polled, SAVE_AT, SAVE_AT + 30, Stepping::Fixed);
    let (a, b) = (direct.read_state().unwrap(), polled.read_state().unwrap());
    let (actual, expected) = mass_identity(&mut polled);
    println!("30 frames on: {:016x} vs {:016x}, {} cells differ; mass identity {actual} vs {expected}", fingerprint(&a), fingerprint(&b), differing_cells(&a, &b));
    assert_eq!(fingerprint(&a), fingerprint(&b), "both loads go on identically on one device");
    assert_eq!(actual, expected, "the ledger is exact after a load in parts");
}
