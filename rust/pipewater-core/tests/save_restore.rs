//! Saving and restoring the complete water state: a restored CPU run is bit-identical to one that
//! never stopped, and a bad saved state is refused with a clear error, keeping the water there.

mod common;

use common::*;
use pipewater_core::save::{dense_state, DENSE_FORMAT_VERSION};
use pipewater_core::{BackendPreference, Error, Grid, Params, Simulation, State, SAVE_FORMAT_VERSION};

/// Frame at which the interrupted run saves, and the frame both runs are compared at.
const SAVE_AT: u32 = 300;
const COMPARE_AT: u32 = 600;
/// Bytes of the header: magic (8), version (4), payload length (8), CRC-32 (4).
const HEADER: usize = 24;

/// A fresh CPU simulation that shares nothing with the busy valley but its grid: dry, flat,
/// default parameters, no sources.
fn blank(grid: Grid) -> Simulation {
    Simulation::cpu(State::new(grid), Params::default()).unwrap()
}

/// The busy valley's bytes at [`SAVE_AT`] and the simulation that made them.
fn saved_busy_valley() -> (Simulation, Vec<u8>) {
    let mut sim = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut sim, 0, SAVE_AT, Stepping::Advance);
    let bytes = sim.save_state().unwrap();
    (sim, bytes)
}

#[test]
fn a_cpu_run_restored_at_frame_300_is_bit_identical_at_frame_600_to_one_that_never_stopped() {
    let (mut through, saved) = saved_busy_valley();
    drive_busy_valley(&mut through, SAVE_AT, COMPARE_AT, Stepping::Advance);

    let mut restored = blank(through.grid());
    restored.restore_state(&saved).unwrap();
    let resaved = restored.save_state().unwrap();
    drive_busy_valley(&mut restored, SAVE_AT, COMPARE_AT, Stepping::Advance);

    let (a, b) = (through.read_state().unwrap(), restored.read_state().unwrap());
    let (la, lb) = (through.ledger().unwrap(), restored.ledger().unwrap());
    let differing = differing_cells(&a, &b);
    println!(
        "saved at frame {SAVE_AT}: {} bytes, saved again after restoring: identical = {}",
        saved.len(),
        resaved == saved
    );
    println!(
        "frame {COMPARE_AT}: never stopped {:016x}, {} quanta, ledger {:?}, {:.6} s; restored {:016x}, {} quanta, ledger {:?}, {:.6} s; {differing} cells differ",
        fingerprint(&a),
        a.total_quanta(),
        la.counters,
        through.elapsed(),
        fingerprint(&b),
        b.total_quanta(),
        lb.counters,
        restored.elapsed()
    );
    assert_eq!(resaved, saved, "restoring then saving gives back the same bytes");
    assert!(la.counters.boundary_in > 0 && la.counters.boundary_out > 0 && la.counters.removed > 0, "the scenario exercises the ledger");
    assert_eq!(differing, 0, "{differing} cells differ in depth, flux or terrain bits");
    assert_eq!(la, lb, "ledgers differ");
    assert_eq!(through.elapsed().to_bits(), restored.elapsed().to_bits(), "clocks differ");
    assert_eq!(through.last_report(), restored.last_report());
    assert_eq!(through.source_ids(), restored.source_ids(), "sources keep their ids");
    // Everything the format holds, remainders included, is the same at the end.
    assert_eq!(through.save_state().unwrap(), restored.save_state().unwrap(), "the complete states differ");
}

/// Restores `bytes` into `sim`, which must refuse them with an [`Error::InvalidSave`] whose
/// message contains `says`, and keep its state: its own save is the same before and after.
fn assert_refused(case: &str, sim: &mut Simulation, bytes: &[u8], says: &str) {
    let before = sim.save_state().unwrap();
    let result = sim.restore_state(bytes);
    println!("{case}: {}", result.as_ref().map_or_else(|e| e.to_string(), |_| "accepted".into()));
    match result {
        Err(Error::InvalidSave(why)) => assert!(why.contains(says), "{case}: the error should say `{says}`: {why}"),
        other => panic!("{case}: expected Error::InvalidSave, got {other:?}"),
    }
    assert!(sim.save_state().unwrap() == before, "{case}: the refused restore changed the simulation");
}

/// Recomputes the CRC-32 of an edited payload, so that only the edit itself is wrong.
fn reseal(bytes: &mut [u8]) {
    let crc = crc32(&bytes[HEADER..]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
}

/// CRC-32 (IEEE, reflected 0xEDB88320), written out here so that the test does not share the
/// implementation it checks.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn the_header_holds_magic_version_length_and_the_payloads_crc32() {
    let (_, bytes) = saved_busy_valley();
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let length = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    let stored = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    let computed = crc32(&bytes[HEADER..]);
    println!("magic {:?}, version {version}, payload {length} bytes of {}, CRC-32 stored {stored:08x} computed {computed:08x}", String::from_utf8_lossy(&bytes[..8]), bytes.len());
    assert_eq!(&bytes[..8], b"PIPEWATR");
    assert_eq!(version, SAVE_FORMAT_VERSION);
    assert_eq!(length as usize, bytes.len() - HEADER);
    assert_eq!(stored, computed);
}

#[test]
fn a_state_saved_for_another_grid_is_refused_and_the_water_is_kept() {
    let (_, bytes) = saved_busy_valley();
    let mut other_size = Simulation::cpu(State::new(Grid::new(64, 64, 1.0).unwrap()), Params::default()).unwrap();
    other_size.add_water(0.0, 0.0, 5.0, 4.0).unwrap();
    assert_refused("another grid size", &mut other_size, &bytes, "72x48");
    let mut other_cells = Simulation::cpu(State::new(Grid::new(72, 48, 0.5).unwrap()), Params::default()).unwrap();
    other_cells.add_water(0.0, 0.0, 5.0, 4.0).unwrap();
    assert_refused("another cell size", &mut other_cells, &bytes, "grid");
}

#[test]
fn a_truncated_state_is_refused_and_the_water_is_kept() {
    let (mut sim, bytes) = saved_busy_valley();
    assert_refused("cut in the payload", &mut sim, &bytes[..bytes.len() - 1], "truncated");
    assert_refused("cut in half", &mut sim, &bytes[..bytes.len() / 2], "truncated");
    assert_refused("cut in the header", &mut sim, &bytes[..12], "truncated");
    assert_refused("empty", &mut sim, &[], "not a PipeWater state");
}

#[test]
fn a_corrupt_state_is_refused_and_the_water_is_kept() {
    let (mut sim, bytes) = saved_busy_valley();
    for at in [HEADER, HEADER + 40, bytes.len() / 2, bytes.len() - 1] {
        let mut corrupt = bytes.clone();
        corrupt[at] ^= 0x10;
        assert_refused(&format!("one bit flipped at byte {at}"), &mut sim, &corrupt, "corrupt");
    }
    let mut foreign = bytes.clone();
    foreign[..8].copy_from_slice(b"GDSCRIPT");
    assert_refused("other magic bytes", &mut sim, &foreign, "not a PipeWater state");
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 7]);
    assert_refused("bytes after the payload", &mut sim, &longer, "7 bytes follow");
}

#[test]
fn a_state_with_a_good_checksum_but_impossible_values_is_refused() {
    let (mut sim, compressed) = saved_busy_valley();
    // The dense layout puts every field at a fixed offset to edit.
    let bytes = dense_state(&compressed).unwrap();
    let cells = sim.grid().cell_count();
    // Depth is the second of the three per-cell fields at the end: terrain, depth, flux.
    let depth_at = bytes.len() - 20 * cells;
    let mut negative = bytes.clone();
    negative[depth_at..depth_at + 4].copy_from_slice(&(-5i32).to_le_bytes());
    reseal(&mut negative);
    assert_refused("a negative depth", &mut sim, &negative, "negative depth");
    let mut unbalanced = bytes.clone();
    let d = i32::from_le_bytes(unbalanced[depth_at..depth_at + 4].try_into().unwrap());
    unbalanced[depth_at..depth_at + 4].copy_from_slice(&(d + 1).to_le_bytes());
    reseal(&mut unbalanced);
    assert_refused("one quantum the ledger does not know", &mut sim, &unbalanced, "ledger does not balance");
    let flux_at = bytes.len() - 16 * cells;
    let mut nan = bytes.clone();
    nan[flux_at..flux_at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    reseal(&mut nan);
    assert_refused("a NaN pipe flow", &mut sim, &nan, "its pipes");
}

#[test]
fn a_state_from_a_future_format_version_is_refused_and_the_water_is_kept() {
    let (mut sim, bytes) = saved_busy_valley();
    let mut future = bytes.clone();
    future[8..12].copy_from_slice(&(SAVE_FORMAT_VERSION + 1).to_le_bytes());
    assert_refused("the next format version", &mut sim, &future, "newer");
}

/// A state in format version 1 (saved before momentum advection existed, when pipes kept their
/// flux) still loads: with advection off, so the pipes keep their flux and the water goes on as
/// it ran; the fields and ledger come back as saved.
#[test]
fn a_version_1_state_loads_with_advection_off() {
    /// Payload offset of the advection flag: grid 12, gravity 4, damping 4, neighbours 1,
    /// cross-section 1, pipe depth 4, four boundaries 4 × 5, cfl 4, max step 4, max substeps 4.
    const ADVECTION_FLAG_AT: usize = 58;
    let (mut sim, _) = saved_busy_valley();
    sim.set_params(Params { momentum_advection: false, ..*sim.params() }).unwrap();
    let current = dense_state(&sim.save_state().unwrap()).unwrap();
    let v2 = as_version_2(&current);
    assert_eq!(v2[HEADER + ADVECTION_FLAG_AT], 0, "the flag sits where the format says");
    let mut v1 = v2.clone();
    v1.remove(HEADER + ADVECTION_FLAG_AT);
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let length = (v1.len() - HEADER) as u64;
    v1[12..20].copy_from_slice(&length.to_le_bytes());
    reseal(&mut v1);
    let mut restored = blank(sim.grid());
    restored.restore_state(&v1).unwrap();
    let (a, b) = (sim.read_state().unwrap(), restored.read_state().unwrap());
    let (la, lb) = (sim.ledger().unwrap(), restored.ledger().unwrap());
    println!(
        "version 1 state of {} bytes loaded: advection {}, depth equal {}, pipes equal {}, ledger equal {}",
        v1.len(),
        restored.params().momentum_advection,
        a.depth == b.depth,
        a.flow == b.flow,
        la == lb
    );
    assert!(!restored.params().momentum_advection);
    assert_eq!(a.depth, b.depth);
    assert_eq!(a.flow, b.flow);
    assert_eq!(la, lb);
    assert_eq!(dense_state(&restored.save_state().unwrap()).unwrap(), current, "saving it again writes the same state");
}

/// Payload offsets of what version 3 added: viscosity and solidify rate (8 bytes) after the
/// advection flag (byte 58), and the solidified count and cooling remainder (16 bytes) after the
/// ledger's four counters (clock 44 bytes, initial total 8, counters 32).
const FLUID_AT: usize = 59;
const COOLING_LEDGER_AT: usize = FLUID_AT + 8 + 44 + 8 + 32;

/// A version 3 state as version 2 wrote it: without the fluid and the cooling ledger.
fn as_version_2(v3: &[u8]) -> Vec<u8> {
    assert_eq!(u32::from_le_bytes(v3[8..12].try_into().unwrap()), DENSE_FORMAT_VERSION, "a version 3 state");
    let mut v2 = v3.to_vec();
    v2.drain(HEADER + COOLING_LEDGER_AT..HEADER + COOLING_LEDGER_AT + 16);
    v2.drain(HEADER + FLUID_AT..HEADER + FLUID_AT + 8);
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let length = (v2.len() - HEADER) as u64;
    v2[12..20].copy_from_slice(&length.to_le_bytes());
    reseal(&mut v2);
    v2
}

/// A state in format version 2 (saved before the fluid had a viscosity or cooled) loads as water
/// that does not cool: viscosity 10⁻⁶ m²/s, solidify rate 0, nothing solidified; its fields,
/// pipes and ledger come back as saved, and saving it again writes the version 3 state.
#[test]
fn a_version_2_state_loads_as_water_that_does_not_cool() {
    let (mut sim, _) = saved_busy_valley();
    let current = dense_state(&sim.save_state().unwrap()).unwrap();
    let f32_at = |at: usize| f32::from_le_bytes(current[HEADER + at..HEADER + at + 4].try_into().unwrap());
    assert_eq!((f32_at(FLUID_AT), f32_at(FLUID_AT + 4)), (sim.params().viscosity, sim.params().solidify_rate), "the fluid sits where the format says");
    let v2 = as_version_2(&current);
    let mut restored = blank(sim.grid());
    restored.set_params(Params { viscosity: 1.0e3, solidify_rate: 0.5, ..*restored.params() }).unwrap();
    restored.restore_state(&v2).unwrap();
    let (a, b) = (sim.read_state().unwrap(), restored.read_state().unwrap());
    let (la, lb) = (sim.ledger().unwrap(), restored.ledger().unwrap());
    println!(
        "version 2 state of {} bytes (version 3: {}) loaded: viscosity {} m²/s, solidify rate {} m/s, solidified {}; depth equal {}, pipes equal {}, ledger equal {}",
        v2.len(),
        current.len(),
        restored.params().viscosity,
        restored.params().solidify_rate,
        lb.solidified,
        a.depth == b.depth,
        a.flow == b.flow,
        la == lb
    );
    assert_eq!((restored.params().viscosity, restored.params().solidify_rate), (pipewater_core::params::WATER_VISCOSITY, 0.0));
    assert_eq!(a.depth, b.depth);
    assert_eq!(a.flow, b.flow);
    assert_eq!(la, lb);
    assert_eq!(dense_state(&restored.save_state().unwrap()).unwrap(), current, "saving it again writes the version 3 state");
}

/// A version 2 save written by the build before compressed saves (commit 1a76e12, see
/// `tests/fixtures/README.md`): the busy valley at frame 120.
const VERSION_2_FIXTURE: &[u8] = include_bytes!("fixtures/busy_valley_v2_frame120.pwstate");

/// A save written by an earlier build, not one this build imitates, loads: its fields are the ones
/// that build recorded (their fingerprint and total, written down when it was made), its ledger
/// and clock too, and they are bit for bit what this build's own run of the same frames gives.
/// Saved again, it is a version 4 save that loads to the same state.
#[test]
fn a_version_2_save_from_the_build_before_compression_loads_exactly() {
    let mut loaded = blank(Grid::new(72, 48, 1.0).unwrap());
    loaded.restore_state(VERSION_2_FIXTURE).unwrap();
    let (state, ledger) = (loaded.read_state().unwrap(), loaded.ledger().unwrap());
    let mut rerun = busy_valley(BackendPreference::Cpu);
    drive_busy_valley(&mut rerun, 0, 120, Stepping::Advance);
    let (again, again_ledger) = (rerun.read_state().unwrap(), rerun.ledger().unwrap());
    println!(
        "fixture: {} bytes, version {}; loaded fields {:016x}, {} quanta, ledger {:?}, {} s; this build's run to frame 120: {:016x}, ledger {:?}, {} cells differ",
        VERSION_2_FIXTURE.len(),
        u32::from_le_bytes(VERSION_2_FIXTURE[8..12].try_into().unwrap()),
        fingerprint(&state),
        state.total_quanta(),
        ledger.counters,
        loaded.elapsed(),
        fingerprint(&again),
        again_ledger.counters,
        differing_cells(&state, &again)
    );
    assert_eq!(fingerprint(&state), 0x7e91_8ba0_a5ff_c879, "the fields the earlier build saved");
    assert_eq!(state.total_quanta(), 114_243_662);
    assert_eq!((ledger.initial, ledger.counters.added, ledger.counters.removed, ledger.counters.boundary_in, ledger.counters.boundary_out), (113_993_175, 10_066_325, 1_415_645, 775_920, 9_176_113));
    assert_eq!(loaded.elapsed().to_bits(), 2.0000001043081284f64.to_bits());
    assert_eq!(differing_cells(&state, &again), 0, "the old save holds what this build computes for the same frames");
    assert_eq!(ledger, again_ledger);
    let resaved = loaded.save_state().unwrap();
    let mut reloaded = blank(loaded.grid());
    reloaded.restore_state(&resaved).unwrap();
    println!("saved again: {} bytes in version {SAVE_FORMAT_VERSION}", resaved.len());
    assert_eq!(differing_cells(&reloaded.read_state().unwrap(), &state), 0);
    assert_eq!(reloaded.ledger().unwrap(), ledger);
}

/// Every field of a save comes back to the bit, and the ledger exactly, whatever share of the grid
/// is wet: all dry (terrain only), a lake in one corner, a river across tiles, half wet, all wet
/// (every tile stores its water), with sources, remainders and a clock. Prints the bytes against
/// the dense 24 a cell.
#[test]
fn saves_of_dry_partly_wet_and_all_wet_grids_come_back_bit_for_bit() {
    let g = Grid::new(150, 97, 0.75).unwrap();
    let terrain: Vec<f32> = (0..g.cell_count()).map(|i| ((i % 150) as f32 * 0.05).sin() * 2.0 + (i / 150) as f32 * 0.013).collect();
    type Water = fn(&mut Simulation);
    let cases: [(&str, Water); 5] = [
        ("all dry", |_| {}),
        ("a lake in a corner", |sim| {
            sim.add_water(-40.0, -25.0, 30.0, 6.0).unwrap();
        }),
        ("a river across tiles", |sim| {
            for k in 0..12 {
                sim.add_water(-50.0 + 9.0 * k as f32, -30.0 + 5.0 * k as f32, 4.0, 2.0).unwrap();
            }
        }),
        ("half wet", |sim| {
            sim.fill_basin(0.0, 0.0, 1.2).unwrap();
        }),
        ("all wet", |sim| {
            sim.fill_basin(0.0, 0.0, 8.0).unwrap();
        }),
    ];
    for (case, water) in cases {
        let mut sim = Simulation::cpu(State::with_terrain(g, terrain.clone()).unwrap(), Params::default()).unwrap();
        water(&mut sim);
        // A drain over dry ground takes nothing, but its id and remainder are saved all the same.
        sim.add_source(10.0, 5.0, if case == "all dry" { -0.4 } else { 0.4 }, 3.0).unwrap();
        for _ in 0..20 {
            sim.advance(1.0 / 30.0).unwrap();
        }
        let bytes = sim.save_state().unwrap();
        let mut restored = blank(g);
        restored.restore_state(&bytes).unwrap();
        let (a, b) = (sim.read_state().unwrap(), restored.read_state().unwrap());
        let (la, lb) = (sim.ledger().unwrap(), restored.ledger().unwrap());
        let wet = a.depth.iter().filter(|&&d| d > 0).count() as f64 / g.cell_count() as f64;
        println!(
            "{case}: {:.0} % of cells wet; {} bytes, {:.2} a cell ({:.1} % of dense); {} cells differ; ledgers {:?} / {:?}",
            100.0 * wet,
            bytes.len(),
            bytes.len() as f64 / g.cell_count() as f64,
            100.0 * bytes.len() as f64 / (24 * g.cell_count()) as f64,
            differing_cells(&a, &b),
            la,
            lb
        );
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), SAVE_FORMAT_VERSION);
        assert_eq!(differing_cells(&a, &b), 0, "{case}: a field differs");
        assert_eq!((la, restored.elapsed().to_bits(), restored.source_ids()), (lb, sim.elapsed().to_bits(), sim.source_ids()), "{case}: ledger, clock or sources differ");
        assert_eq!(restored.save_state().unwrap(), bytes, "{case}: everything the format holds comes back");
        match case {
            "all dry" => assert_eq!(wet, 0.0, "{case} has no water"),
            "all wet" => assert_eq!(wet, 1.0, "{case} has water in every cell"),
            _ => assert!(wet > 0.0 && wet < 1.0),
        }
    }
}
