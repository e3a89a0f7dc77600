//! Saves and loads on a worker thread while the simulation runs: a save begun at a frame holds
//! exactly that frame's state however many frames, edits and sources run while it works, and a
//! load decoded on a worker goes on exactly as `restore_state` does.

mod common;

use common::*;
use pipewater_core::{BackendPreference, Error, Grid, Params, Simulation, State};

/// Frame at which the save begins, and frames the simulation runs while it works.
const BEGIN_AT: u32 = 150;
const RUN_ON: u32 = 40;

/// A save begun at frame 150 while the busy valley runs on for 40 more frames (sources, edges,
/// edits of water and terrain) gives, byte for byte, the save `save_state` takes at frame 150;
/// the simulation that ran on is not disturbed (it matches a run that never saved).
#[test]
fn a_save_begun_at_a_frame_holds_that_frame_while_the_simulation_runs_on() {
    let mut sim = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut sim, 0, BEGIN_AT, Stepping::Advance);
    let at_begin = sim.save_state().unwrap();
    let mut job = sim.begin_save().unwrap();
    let mut frames_while_saving = 0;
    let mut polls = 0;
    let mut result = None;
    for frame in BEGIN_AT..BEGIN_AT + RUN_ON {
        drive_busy_valley(&mut sim, frame, frame + 1, Stepping::Advance);
        if result.is_none() {
            frames_while_saving += 1;
            polls += 1;
            result = job.poll();
        }
    }
    let bytes = match result {
        Some(bytes) => bytes.unwrap(),
        None => job.wait().unwrap(),
    };
    let mut never_saved = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut never_saved, 0, BEGIN_AT + RUN_ON, Stepping::Advance);
    let (ran_on, reference) = (sim.read_state().unwrap(), never_saved.read_state().unwrap());
    println!(
        "save of frame {BEGIN_AT}: {} bytes after {polls} polls over {frames_while_saving} frames; equal to save_state at that frame: {}; run on to frame {}: {} cells differ from a run that never saved",
        bytes.len(),
        bytes == at_begin,
        BEGIN_AT + RUN_ON,
        differing_cells(&ran_on, &reference)
    );
    assert_eq!(bytes, at_begin, "the save holds the frame it began on");
    assert_eq!(differing_cells(&ran_on, &reference), 0, "saving does not disturb the run");
    assert_eq!(sim.ledger().unwrap(), never_saved.ledger().unwrap());
}

/// A restore decoded on a worker and applied by `poll_restore` leaves the simulation as
/// `restore_state` of the same bytes does (state, ledger, clock, next frames); until it is
/// applied the simulation runs on its own water. A save written to a file by the worker and read
/// back by one gives the same bytes; a bad file and bad bytes are errors of the job, the water
/// kept.
#[test]
fn a_restore_decoded_on_a_worker_goes_on_as_restore_state_does() {
    let mut source = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut source, 0, BEGIN_AT, Stepping::Advance);
    let dir = std::env::temp_dir().join(format!("pipewater-save-jobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("valley.pwstate");
    let bytes = source.begin_save_to(&path).unwrap().wait().unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk, bytes, "the file holds the save");

    let mut direct = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    direct.restore_state(&bytes).unwrap();
    let mut polled = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    polled.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
    let mut job = polled.begin_restore_from(&path).unwrap();
    let mut frames_before = 0;
    let outcome = loop {
        if let Some(outcome) = polled.poll_restore(&mut job) {
            break outcome;
        }
        polled.advance(1.0 / 60.0).unwrap();
        frames_before += 1;
        assert!(frames_before < 10_000, "the restore never finished");
    };
    outcome.unwrap();
    assert!(polled.poll_restore(&mut job).is_none(), "the outcome is given once");
    drive_busy_valley(&mut direct, BEGIN_AT, BEGIN_AT + 20, Stepping::Advance);
    drive_busy_valley(&mut polled, BEGIN_AT, BEGIN_AT + 20, Stepping::Advance);
    let (a, b) = (direct.read_state().unwrap(), polled.read_state().unwrap());
    println!("restored after {frames_before} frames of its own water; 20 frames later {} cells differ from restore_state", differing_cells(&a, &b));
    assert_eq!(differing_cells(&a, &b), 0);
    assert_eq!(direct.ledger().unwrap(), polled.ledger().unwrap());
    assert_eq!(direct.elapsed().to_bits(), polled.elapsed().to_bits());

    let mut kept = Simulation::cpu(State::new(Grid::new(72, 48, 1.0).unwrap()), Params::default()).unwrap();
    kept.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
    let before = kept.save_state().unwrap();
    let mut missing = kept.begin_restore_from(dir.join("no such save")).unwrap();
    let mut cut = kept.begin_restore(bytes[..bytes.len() / 2].to_vec()).unwrap();
    let wait = |sim: &mut Simulation, job: &mut pipewater_core::simulation::RestoreJob| loop {
        if let Some(outcome) = sim.poll_restore(job) {
            break outcome;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let (missing, cut) = (wait(&mut kept, &mut missing), wait(&mut kept, &mut cut));
    println!("a missing file: {missing:?}\nhalf a save: {cut:?}");
    assert!(matches!(missing, Err(Error::InvalidArgument { name: "path", .. })));
    assert!(matches!(cut, Err(Error::InvalidSave(why)) if why.contains("truncated")));
    assert_eq!(kept.save_state().unwrap(), before, "a failed restore keeps the water");
    let unwritable = kept.begin_save_to(dir.join("no such folder").join("x.pwstate")).unwrap().wait();
    println!("saving into a missing folder: {unwritable:?}");
    assert!(matches!(unwritable, Err(Error::InvalidArgument { name: "path", .. })));
    std::fs::remove_dir_all(&dir).ok();
}

/// Polls `job` until its load lands, advancing `sim` a frame between polls and trying an edit
/// while the load is applied; returns, per poll that applied fields, the bytes it applied, the
/// frames that stepped while the load was applied and whether the edit was refused.
fn poll_in_parts(sim: &mut Simulation, job: &mut pipewater_core::simulation::RestoreJob) -> (Vec<u64>, u32, bool) {
    let (mut parts, mut stepped_while_applying, mut edit_refused) = (Vec::new(), 0, true);
    for _ in 0..100_000 {
        let outcome = sim.poll_restore(job);
        if job.last_poll_bytes() > 0 {
            parts.push(job.last_poll_bytes());
        }
        if let Some(outcome) = outcome {
            outcome.unwrap();
            return (parts, stepped_while_applying, edit_refused);
        }
        if sim.is_applying_restore() {
            edit_refused &= sim.add_water(0.0, 0.0, 1.0, 2.0).is_err();
            stepped_while_applying += sim.advance(1.0 / 60.0).unwrap().substeps;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    panic!("the load never landed");
}

/// A load applied in parts writes at most its budget of field bytes per poll (5 rows of the
/// 72×48 valley, 8 640 bytes, so 10 polls), steps nothing and refuses edits while it is applied,
/// and lands the state `restore_state` gives, bit for bit, with its ledger: the same fields, and
/// 20 frames later the same fields and an exact mass identity. Also with a budget below one row
/// (one row a poll), and for a job dropped half applied (`advance` finishes it).
#[test]
fn a_load_applied_in_parts_is_bounded_per_poll_and_lands_as_restore_state_does() {
    let mut source = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut source, 0, BEGIN_AT, Stepping::Advance);
    let bytes = source.save_state().unwrap();
    let mut direct = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    direct.restore_state(&bytes).unwrap();
    let (direct_state, direct_ledger) = (direct.read_state().unwrap(), direct.ledger().unwrap());
    let row_bytes = source.grid().width as u64 * pipewater_core::simulation::RESTORE_BYTES_PER_CELL;

    for (budget, expected_parts) in [(5 * row_bytes, 10), (row_bytes / 2, 48)] {
        let mut polled = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
        polled.add_water(0.0, 0.0, 3.0, 4.0).unwrap();
        let mut job = polled.begin_restore(bytes.clone()).unwrap();
        job.set_bytes_per_poll(budget).unwrap();
        let (parts, stepped, edit_refused) = poll_in_parts(&mut polled, &mut job);
        let largest = parts.iter().max().copied().unwrap_or(0);
        let landed = polled.read_state().unwrap();
        println!(
            "budget {budget} B a poll: {} polls applied fields, largest {largest} B (a row is {row_bytes} B), {} B in all; {stepped} steps and edits refused: {edit_refused} while applied; {} cells differ from restore_state",
            parts.len(),
            parts.iter().sum::<u64>(),
            differing_cells(&landed, &direct_state)
        );
        assert_eq!(parts.len(), expected_parts, "whole rows within the budget, at least one a poll");
        assert!(largest <= budget.max(row_bytes), "no poll applies more than its budget (or one row)");
        assert_eq!(parts.iter().sum::<u64>(), 48 * row_bytes, "every row once");
        assert_eq!(stepped, 0, "the water waits while the load is applied");
        assert!(edit_refused, "edits are refused while the load is applied");
        assert_eq!(differing_cells(&landed, &direct_state), 0, "the landed fields are restore_state's");
        assert_eq!(landed.flow.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>(), direct_state.flow.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>());
        assert_eq!(polled.ledger().unwrap(), direct_ledger, "the landed ledger is the saved one");
        assert_eq!(polled.elapsed().to_bits(), direct.elapsed().to_bits(), "the clock is the saved one");

        let mut reference = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
        reference.restore_state(&bytes).unwrap();
        drive_busy_valley(&mut reference, BEGIN_AT, BEGIN_AT + 20, Stepping::Advance);
        drive_busy_valley(&mut polled, BEGIN_AT, BEGIN_AT + 20, Stepping::Advance);
        let (a, b) = (reference.read_state().unwrap(), polled.read_state().unwrap());
        let (actual, expected) = mass_identity(&mut polled);
        println!("  20 frames on: {} cells differ; mass identity {actual} vs {expected} quanta", differing_cells(&a, &b));
        assert_eq!(differing_cells(&a, &b), 0);
        assert_eq!(reference.ledger().unwrap(), polled.ledger().unwrap());
        assert_eq!(actual, expected, "the ledger is exact after a load in parts");
    }

    let mut dropped = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    let mut job = dropped.begin_restore(bytes.clone()).unwrap();
    job.set_bytes_per_poll(row_bytes).unwrap();
    while dropped.poll_restore(&mut job).is_none() && job.rows_applied().0 < 3 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let applied_before_drop = job.rows_applied().0;
    drop(job);
    let mut frames = 0;
    while dropped.is_applying_restore() {
        assert_eq!(dropped.advance(1.0 / 60.0).unwrap().substeps, 0);
        frames += 1;
        assert!(frames < 1000, "a dropped job's load never landed");
    }
    let landed = dropped.read_state().unwrap();
    println!("a job dropped after {applied_before_drop} rows: advance landed the load in {frames} frames; {} cells differ from restore_state", differing_cells(&landed, &direct_state));
    assert_eq!(differing_cells(&landed, &direct_state), 0);
    assert_eq!(dropped.ledger().unwrap(), direct_ledger);
}

/// A job whose load began in one simulation and is polled on another (a game that rebuilt its
/// simulation halfway) ends with an error, once, instead of waiting for ever; the other
/// simulation is untouched.
#[test]
fn a_load_whose_simulation_was_replaced_halfway_ends_with_an_error() {
    let mut source = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut source, 0, 20, Stepping::Advance);
    let bytes = source.save_state().unwrap();
    let mut first = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    let mut job = first.begin_restore(bytes).unwrap();
    job.set_bytes_per_poll(1).unwrap();
    while job.rows_applied().0 == 0 {
        assert!(first.poll_restore(&mut job).is_none(), "one row a poll: not landed after the first");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(first);
    let mut second = Simulation::cpu(State::new(source.grid()), Params::default()).unwrap();
    let before = second.save_state().unwrap();
    let outcome = second.poll_restore(&mut job);
    println!("polled on another simulation after {:?} rows: {outcome:?}", job.rows_applied());
    assert!(matches!(outcome, Some(Err(Error::InvalidSave(why))) if why.contains("replaced")));
    assert!(second.poll_restore(&mut job).is_none(), "the outcome is given once");
    assert!(!second.is_applying_restore());
    assert_eq!(second.save_state().unwrap(), before, "the other simulation is untouched");
}
