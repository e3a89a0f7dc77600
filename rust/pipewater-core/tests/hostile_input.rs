//! Input at the edges of its ranges and past them: requests far larger than a grid holds, saved
//! states whose numbers were crafted (the checksum is no obstacle to whoever edits a file), and
//! states of runs pushed to the model's own extremes. Each gets a clear error or a finite state
//! whose ledger balances exactly, never a panic (the test profile checks integer overflow).

mod common;

use common::{busy_valley, drive_busy_valley, grid, mass_identity, Stepping};
use pipewater_core::save::{dense_state, saved_fields};
use pipewater_core::simulation::MAX_EDIT_VOLUME;
use pipewater_core::{BackendPreference, CellRect, Error, Params, Simulation, State, MAX_DEPTH, MAX_DEPTH_QUANTA};
use proptest::prelude::*;
use std::sync::OnceLock;

/// Bytes of the header: magic (8), version (4), payload length (8), CRC-32 (4).
const HEADER: usize = 24;
/// Where fields of the payload's head lie in a saved file (header included), as `save.rs`
/// documents the layout (version 3: the fluid's 8 bytes after the advection flag, the cooling
/// ledger's 16 after the counters): frames `u64`, the initial total `i64`, the four counters
/// `u64`, the next source id `u32`.
const FRAMES_AT: usize = HEADER + 67;
const INITIAL_TOTAL_AT: usize = HEADER + 111;
const ADDED_AT: usize = HEADER + 119;
const BOUNDARY_IN_AT: usize = HEADER + 135;
const NEXT_SOURCE_ID_AT: usize = HEADER + 199;
/// Frames of the busy valley before it saves: enough for its sources, edges and edits to move
/// water through every counter.
const SAVE_AT: u32 = 120;
/// Frames of each run at the model's extremes, each saved and restored.
const EXTREME_FRAMES: u32 = 8;

/// A dry CPU simulation of `g`.
fn blank(g: pipewater_core::Grid) -> Simulation {
    Simulation::cpu(State::new(g), Params::default()).unwrap()
}

/// The busy valley's save at [`SAVE_AT`] in the dense layout ([`dense_state`], format version
/// 3), whose fields lie at fixed offsets: the tests that edit a field in place use it.
fn busy_save() -> &'static [u8] {
    static SAVE: OnceLock<Vec<u8>> = OnceLock::new();
    SAVE.get_or_init(|| dense_state(compressed_busy_save()).unwrap())
}

/// The busy valley's save at [`SAVE_AT`] as this build writes it (compressed tiles), made once.
fn compressed_busy_save() -> &'static [u8] {
    static SAVE: OnceLock<Vec<u8>> = OnceLock::new();
    SAVE.get_or_init(|| {
        let mut sim = busy_valley(BackendPreference::Cpu);
        drive_busy_valley(&mut sim, 0, SAVE_AT, Stepping::Advance);
        sim.save_state().unwrap()
    })
}

/// Recomputes the payload's CRC-32, so that the decoder judges the edit itself.
fn reseal(bytes: &mut [u8]) {
    if bytes.len() >= HEADER {
        let crc = crc32fast::hash(&bytes[HEADER..]);
        bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Drives a simulation that accepted hostile input for a few frames and checks what must hold
/// of any state: every step, query and save succeeds or fails with an error; depths, pipes,
/// texels and velocities are finite; the ledger balances to the quantum. Returns the
/// discrepancy (0) for printing.
fn assert_sound(case: &str, sim: &mut Simulation) -> i64 {
    for _ in 0..3 {
        if let Err(e) = sim.advance(1.0 / 30.0) {
            panic!("{case}: a frame after accepting the input failed: {e}");
        }
    }
    let state = sim.read_state().unwrap();
    assert!(state.flow.iter().flatten().all(|v| v.is_finite()), "{case}: a pipe holds a non-finite value");
    assert!(state.depth.iter().all(|&d| (0..=MAX_DEPTH_QUANTA).contains(&d)), "{case}: a depth is out of range");
    let snapshot = sim.read_snapshot().unwrap();
    assert!(snapshot.height.iter().chain(&snapshot.flow).flatten().all(|v| v.is_finite()), "{case}: a texel is not finite");
    let [ex, ez] = sim.grid().extent();
    for (x, z) in [(0.0, 0.0), (-0.3 * ex, 0.2 * ez), (0.4 * ex, -0.4 * ez)] {
        if let Some(v) = sim.flow_velocity(x, z) {
            assert!(v.iter().all(|c| c.is_finite()), "{case}: flow velocity {v:?} at ({x}, {z})");
        }
    }
    let (total, expected) = mass_identity(sim);
    assert_eq!(total, expected, "{case}: the ledger does not balance");
    sim.save_state().unwrap_or_else(|e| panic!("{case}: its own state does not save: {e}"));
    total - expected
}

/// Adding or removing the largest volume an edit accepts on cells of 1 mm and 1 cm (10²¹ and
/// 10¹⁹ quanta: past what an `i64` holds) is refused with the volume that fits (adding) or
/// removes what is there (removing); the volume named as fitting is then accepted. The
/// ledger balances after each. Brushes, regions, fills and sources at their limits on the same
/// grids keep it balanced too.
#[test]
fn requests_far_beyond_what_the_cells_hold_are_refused_or_clipped_exactly() {
    for cell in [1.0e-3f32, 1.0e-2] {
        let g = grid(64, 64, cell);
        let mut sim = blank(g);
        let [ex, _] = g.extent();
        for radius in [0.0, 0.5 * cell, 2.0 * cell, 0.1 * ex, 0.45 * ex, 2.0 * ex] {
            let refused = sim.add_water(0.0, 0.0, MAX_EDIT_VOLUME, radius);
            let message = match &refused {
                Err(Error::InvalidArgument { name: "volume", valid, .. }) => valid.clone(),
                Ok(v) if radius == 0.0 && *v == 0.0 => String::from("nothing: no cell within radius 0"),
                other => panic!("cells of {cell} m, radius {radius}: expected the volume to be refused, got {other:?}"),
            };
            println!("cells of {cell} m, radius {radius} m: add {MAX_EDIT_VOLUME} m³ -> {message}");
            if let Some(fits) = message.strip_prefix("0 ..= ").and_then(|m| m.split(' ').next()).and_then(|v| v.parse::<f32>().ok()) {
                let added = sim.add_water(0.0, 0.0, fits, radius).unwrap_or_else(|e| panic!("the volume named as fitting, {fits} m³, is refused: {e}"));
                println!("    the fitting {fits} m³ adds {added} m³");
                assert!(added > 0.0 && (added - fits as f64).abs() <= 1.0e-3 * fits as f64 + g.cell_area() as f64 * 1.0e-5, "it adds what was asked");
            }
            let removed = sim.remove_water(0.0, 0.0, MAX_EDIT_VOLUME, radius).expect("removing more than is there removes what is there");
            println!("    remove {MAX_EDIT_VOLUME} m³ -> {removed} m³ removed");
            assert!(removed >= 0.0);
            let (total, expected) = mass_identity(&mut sim);
            assert_eq!(total, expected, "cells of {cell} m, radius {radius}: the ledger");
        }
        // The brushes, a whole-grid region and a fill at their limits.
        sim.paint_water(0.0, 0.0, MAX_DEPTH, 2.0 * ex).unwrap();
        sim.paint_water(0.0, 0.0, MAX_DEPTH, 2.0 * ex).unwrap();
        let change = sim.set_depth_region(g.whole(), &vec![MAX_DEPTH_QUANTA; g.cell_count()]).unwrap();
        println!("cells of {cell} m: region of 2^31 - 1 quanta everywhere: {change:?}");
        let back = sim.set_depth_region(CellRect { x: 0, y: 0, width: 64, height: 64 }, &vec![0; g.cell_count()]).unwrap();
        assert_eq!(back.removed, MAX_DEPTH_QUANTA as u64 * g.cell_count() as u64);
        sim.fill_basin(0.0, 0.0, MAX_DEPTH).unwrap();
        let id = sim.add_source(0.0, 0.0, 1.0e-4 * g.cell_area() * g.cell_count() as f32, 2.0 * ex).unwrap();
        sim.add_source(0.0, 0.0, -1.0e-4 * g.cell_area() * g.cell_count() as f32, 2.0 * ex).unwrap();
        println!("cells of {cell} m: source {id:?} and a drain at their rates; discrepancy after frames {}", assert_sound("limits", &mut sim));
    }
}

/// A save whose ledger counters were pushed past 2⁶³ and 2⁶⁴ (their net unchanged modulo 2⁶⁴, as
/// a long run of a large source and drain leaves them) restores, runs on with counters that wrap,
/// and balances to the quantum; one whose counters do not balance modulo 2⁶⁴ is refused.
#[test]
fn a_save_whose_counters_wrap_restores_and_balances() {
    let save = busy_save();
    let (added, boundary_in) = (u64_at(save, ADDED_AT), u64_at(save, BOUNDARY_IN_AT));
    let near_the_end = u64::MAX - 1000;
    let cases = [
        // Net unchanged: 2⁶³ more added, 2⁶³ more entered (2⁶⁴ ≡ 0).
        ("both past 2^63", added.wrapping_add(1 << 63), boundary_in.wrapping_add(1 << 63)),
        // `added` 1000 short of wrapping, the difference entered at the edge instead.
        ("added about to wrap", near_the_end, boundary_in.wrapping_add(added.wrapping_sub(near_the_end))),
    ];
    for (case, added, boundary_in) in cases {
        let mut bytes = save.to_vec();
        put_u64(&mut bytes, ADDED_AT, added);
        put_u64(&mut bytes, BOUNDARY_IN_AT, boundary_in);
        reseal(&mut bytes);
        let mut sim = busy_valley(BackendPreference::Cpu);
        sim.restore_state(&bytes).unwrap_or_else(|e| panic!("{case}: refused: {e}"));
        drive_busy_valley(&mut sim, SAVE_AT, SAVE_AT + 30, Stepping::Advance);
        let ledger = sim.ledger().unwrap();
        let discrepancy = assert_sound(case, &mut sim);
        println!("{case}: added {added} -> {}, boundary in {boundary_in} -> {}; discrepancy {discrepancy}", ledger.counters.added, ledger.counters.boundary_in);
    }
    let mut unbalanced = save.to_vec();
    put_u64(&mut unbalanced, ADDED_AT, added.wrapping_add(1 << 63));
    reseal(&mut unbalanced);
    let refused = busy_valley(BackendPreference::Cpu).restore_state(&unbalanced);
    println!("added 2^63 more, nothing else: {refused:?}");
    assert!(matches!(refused, Err(Error::InvalidSave(why)) if why.contains("ledger does not balance")));
}

/// A save whose next source id is the last a `u32` holds restores; adding a source then fails
/// with an error that names the source id, instead of overflowing the id.
#[test]
fn a_save_at_the_last_source_id_refuses_a_new_source_with_an_error() {
    let mut bytes = busy_save().to_vec();
    let next = u32::from_le_bytes(bytes[NEXT_SOURCE_ID_AT..NEXT_SOURCE_ID_AT + 4].try_into().unwrap());
    assert_eq!(next, 3, "the busy valley's two sources took ids 1 and 2: the offset is right");
    bytes[NEXT_SOURCE_ID_AT..NEXT_SOURCE_ID_AT + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bytes);
    let mut sim = busy_valley(BackendPreference::Cpu);
    sim.restore_state(&bytes).expect("a next id past every source's is valid");
    let added = sim.add_source(0.0, 0.0, 0.1, 2.0);
    println!("add_source with the next id at u32::MAX: {added:?}");
    assert!(matches!(added, Err(Error::InvalidArgument { name: "source id", .. })), "{added:?}");
    assert_eq!(sim.source_ids().len(), 2, "no source was added");
}

/// The largest finite pipe value a save can hold (3.4·10³⁸) is refused with an error about the
/// pipes, where it used to load and turn into NaN in the first step; a frame count at the end
/// of a `u64` is refused instead of overflowing on the next frame.
#[test]
fn a_save_with_a_pipe_near_the_largest_float_or_the_last_frame_number_is_refused() {
    let save = busy_save();
    let cells = 72 * 48;
    let pipes_at = save.len() - 16 * cells;
    let mut fast = save.to_vec();
    let cell = 20 * 72 + 30;
    fast[pipes_at + 16 * cell..pipes_at + 16 * cell + 4].copy_from_slice(&(0.9 * f32::MAX).to_le_bytes());
    reseal(&mut fast);
    let mut sim = busy_valley(BackendPreference::Cpu);
    let result = sim.restore_state(&fast);
    println!("a pipe of 0.9 f32::MAX: {result:?}");
    assert!(matches!(&result, Err(Error::InvalidSave(why)) if why.contains("pipes")), "{result:?}");
    let mut late = save.to_vec();
    assert_eq!(u64_at(&late, FRAMES_AT), SAVE_AT as u64, "the offset of the frame count is right");
    put_u64(&mut late, FRAMES_AT, u64::MAX);
    reseal(&mut late);
    let result = sim.restore_state(&late);
    println!("frame count u64::MAX: {result:?}");
    assert!(matches!(&result, Err(Error::InvalidSave(why)) if why.contains("frame count")), "{result:?}");
    assert!(u64_at(save, INITIAL_TOTAL_AT) as i64 > 0, "the initial total sits where the layout says");
}

/// States the model writes at its own extremes load again: water 2048 m deep on a cliff 2·10⁶ m
/// high, gravity 100 m/s², no damping, the largest Courant number and step, frames of 10 s (the
/// longest) of up to 20 000 steps, on cells of 1 mm and of 10 km. Prints the fastest pipe (m/s)
/// each run reached.
#[test]
fn saves_of_runs_at_the_models_extremes_load_again() {
    for cell in [1.0e-3f32, 1.0e4] {
        let g = grid(24, 8, cell);
        let terrain: Vec<f32> = (0..g.cell_count()).map(|i| if i % 24 < 12 { 1.0e6 } else { -1.0e6 }).collect();
        let mut state = State::with_terrain(g, terrain).unwrap();
        for (i, d) in state.depth.iter_mut().enumerate() {
            *d = if i % 24 < 12 { MAX_DEPTH_QUANTA } else { 0 };
        }
        let params = Params { gravity: 100.0, damping: 0.0, cfl: 1.0, max_step: 1.0, max_substeps: 20_000, ..Params::default() };
        let mut sim = Simulation::cpu(state, params).unwrap();
        let mut fastest = 0.0f32;
        for frame in 0..EXTREME_FRAMES {
            sim.advance(10.0).unwrap();
            let state = sim.read_state().unwrap();
            fastest = fastest.max(state.flow.iter().flatten().fold(0.0f32, |m, v| m.max(v.abs())) / cell);
            let bytes = sim.save_state().unwrap();
            let mut again = Simulation::cpu(State::new(g), params).unwrap();
            again.restore_state(&bytes).unwrap_or_else(|e| panic!("cells of {cell} m, frame {frame}: the model's own save is refused: {e}"));
        }
        println!("cells of {cell} m: fastest pipe {fastest:.3e} m/s over {EXTREME_FRAMES} frames of 10 s (the bound is {:.0e} m/s)", pipewater_core::state::MAX_PIPE_SPEED);
        assert_sound("extreme run", &mut sim);
    }
}

/// What a save is mutated by.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one byte, resealed or not.
    Flip { at: usize, mask: u8, reseal: bool },
    /// Keep only the first bytes.
    Truncate { keep: usize },
    /// Write an extreme `f32` over the four bytes at a (4-aligned) payload position, resealed.
    Float { at: usize, value: f32 },
    /// Write an extreme 64-bit word over the eight bytes at a payload position, resealed.
    Word { at: usize, value: u64 },
    /// Bytes of no save at all, after a valid header's magic.
    Random { bytes: Vec<u8> },
}

fn extreme_float() -> impl Strategy<Value = f32> {
    prop::sample::select(vec![f32::MAX, -f32::MAX, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1.0e30, -1.0e30, 1.0e9, f32::MIN_POSITIVE, -0.0, 3.0e5])
}

fn extreme_word() -> impl Strategy<Value = u64> {
    prop::sample::select(vec![u64::MAX, 1 << 63, (1 << 63) - 1, 1 << 53, 0, 1, u32::MAX as u64, f64::MAX.to_bits(), f64::NAN.to_bits(), (-1.0e300f64).to_bits()])
}

/// Mutations of a save `len` bytes long; half of the positions fall in the first 256 bytes (the
/// parameters, clock, ledger and sources), half anywhere (mostly the fields).
fn mutation(len: usize) -> impl Strategy<Value = Mutation> {
    let position = prop_oneof![0..256usize, 0..len];
    prop_oneof![
        (position.clone(), 1..=255u8, any::<bool>()).prop_map(|(at, mask, reseal)| Mutation::Flip { at, mask, reseal }),
        (0..len).prop_map(|keep| Mutation::Truncate { keep }),
        (position.clone(), extreme_float()).prop_map(move |(at, value)| Mutation::Float { at: (HEADER + (at / 4) * 4).min(len - 4), value }),
        (position, extreme_word()).prop_map(move |(at, value)| Mutation::Word { at: (HEADER + at).min(len - 8), value }),
        prop::collection::vec(any::<u8>(), 0..400).prop_map(|bytes| Mutation::Random { bytes }),
    ]
}

fn mutated(save: &[u8], m: &Mutation) -> Vec<u8> {
    let mut bytes = save.to_vec();
    match *m {
        Mutation::Flip { at, mask, reseal: again } => {
            bytes[at] ^= mask;
            if again {
                reseal(&mut bytes);
            }
        }
        Mutation::Truncate { keep } => bytes.truncate(keep),
        Mutation::Float { at, value } => {
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            reseal(&mut bytes);
        }
        Mutation::Word { at, value } => {
            put_u64(&mut bytes, at, value);
            reseal(&mut bytes);
        }
        Mutation::Random { bytes: ref random } => {
            bytes.truncate(8);
            bytes.extend_from_slice(random);
        }
    }
    bytes
}

proptest! {
    // Each case restores, and where accepted runs three frames of a 72 × 48 grid: a few ms.
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// A mutated save (flipped bytes, truncation, extreme floats and words with the checksum
    /// recomputed, random bytes) restores into a simulation, or starts one as a baked
    /// `PipeWaterState` does (its fields through `saved_fields`), only as a finite state whose
    /// ledger balances exactly; otherwise it is refused with an error. Never a panic.
    #[test]
    fn a_mutated_save_is_refused_or_gives_a_finite_balanced_state(m in mutation(busy_save().len())) {
        let bytes = mutated(busy_save(), &m);
        let mut sim = busy_valley(BackendPreference::Cpu);
        match sim.restore_state(&bytes) {
            Ok(()) => {
                assert_sound(&format!("restored {m:?}"), &mut sim);
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidSave(_)), "{m:?}: {e:?}"),
        }
        if let Ok(fields) = saved_fields(&bytes) {
            if let Ok(mut baked) = Simulation::cpu(fields.state, fields.params) {
                assert_sound(&format!("baked {m:?}"), &mut baked);
            }
        }
    }

    /// The same for a save as this build writes it, whose fields are LZ4 blocks of tiles: a
    /// flipped, cut or overwritten byte in a block's length, its wet-tile bits or its compressed
    /// bytes (resealed, so the decoder itself must catch it) is refused or gives a finite,
    /// balanced state; decompression never writes past the size the grid fixes.
    #[test]
    fn a_mutated_compressed_save_is_refused_or_gives_a_finite_balanced_state(m in mutation(compressed_busy_save().len())) {
        let bytes = mutated(compressed_busy_save(), &m);
        let mut sim = busy_valley(BackendPreference::Cpu);
        match sim.restore_state(&bytes) {
            Ok(()) => {
                assert_sound(&format!("restored {m:?}"), &mut sim);
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidSave(_)), "{m:?}: {e:?}"),
        }
        if let Ok(fields) = saved_fields(&bytes) {
            if let Ok(mut baked) = Simulation::cpu(fields.state, fields.params) {
                assert_sound(&format!("baked {m:?}"), &mut baked);
            }
        }
    }
}

/// Every single byte of a compressed save's fields flipped in turn, resealed: each is refused or
/// loads a finite state whose ledger balances. Prints how many were refused and by what.
#[test]
fn every_byte_of_the_compressed_fields_flipped_is_refused_or_harmless() {
    let save = compressed_busy_save();
    let fields_at = save.len().saturating_sub(6000);
    let (mut refused, mut accepted) = (0, 0);
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for at in fields_at..save.len() {
        let mut bytes = save.to_vec();
        bytes[at] ^= 0x5a;
        reseal(&mut bytes);
        let mut sim = blank(pipewater_core::Grid::new(72, 48, 1.0).unwrap());
        match sim.restore_state(&bytes) {
            Ok(()) => {
                accepted += 1;
                let (total, expected) = mass_identity(&mut sim);
                assert_eq!(total, expected, "byte {at}: the ledger");
                assert!(sim.read_state().unwrap().flow.iter().flatten().all(|v| v.is_finite()), "byte {at}: a pipe is not finite");
            }
            Err(Error::InvalidSave(why)) => {
                refused += 1;
                let reason = why.split(':').next().unwrap_or("").chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
                *reasons.entry(reason).or_default() += 1;
            }
            Err(other) => panic!("byte {at}: {other:?}"),
        }
    }
    println!("{} bytes flipped at the end of a {}-byte save: {refused} refused, {accepted} loaded; refusals by reason: {reasons:?}", save.len() - fields_at, save.len());
    assert!(refused > 0, "flipping bytes of the fields is noticed");
}
