//! `cargo xtask demo`: builds the addon (release) and launches the demo project with Godot, or —
//! when no Godot binary is found — runs the same scenario headless through `pipewater-core` and
//! writes pictures and a summary to `target/demo/`.
//!
//! Godot is looked up in the `GODOT` variable, then as `godot4` and `godot` on `PATH`.
//! `--headless` forces the headless run; `--out DIR`, `--size N`, `--seed N`, `--seconds S`
//! and `--backend auto|gpu|cpu` tune it. `--smoke` builds the debug library and runs the demo
//! scene's headless smoke test (`godot_project/tests/test_demo_smoke.gd`) with `GODOT`.

use crate::demo_render::{flow_map, shaded_terrain, write_png};
use crate::util::root;
use crate::verdict::{SMOKE_FAILURE_MARKERS, SMOKE_PASS_LINE};
use pipewater_core::scenarios::{demo_landscape, DemoLandscape};
use pipewater_core::{BackendPreference, Boundary, Edge, Grid, Params, Simulation};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the headless run simulates and where it writes.
#[derive(Debug, Clone)]
pub struct HeadlessOptions {
    /// Cells per side (the Godot demo uses 256).
    pub side: u32,
    /// Cell size, m.
    pub cell_size: f32,
    /// Seed of the diamond-square hills.
    pub seed: u64,
    /// Roughness of the hills, 0..1.
    pub roughness: f32,
    /// Height span of the terrain, m.
    pub relief: f32,
    /// Simulated seconds before the dam is dug through.
    pub seconds_before_breach: f32,
    /// Simulated seconds after the breach.
    pub seconds_after_breach: f32,
    /// Backend preference.
    pub backend: BackendPreference,
    /// Output folder.
    pub out: PathBuf,
}

impl Default for HeadlessOptions {
    fn default() -> Self {
        HeadlessOptions {
            side: 256,
            cell_size: 1.0,
            seed: 7,
            roughness: 0.55,
            relief: 20.0,
            seconds_before_breach: 20.0,
            seconds_after_breach: 40.0,
            backend: BackendPreference::Auto,
            out: root().join("target/demo"),
        }
    }
}

/// Figures of a headless run, printed and written to `summary.txt`.
#[derive(Debug, Clone)]
pub struct HeadlessReport {
    /// Backend description.
    pub backend: String,
    /// Cells on the grid.
    pub cells: u64,
    /// Frames of 1/60 s simulated.
    pub frames: u32,
    /// Steps taken in all (substeps of every frame).
    pub steps: u64,
    /// Wall-clock seconds spent advancing.
    pub wall_seconds: f64,
    /// Total water at the start, m³.
    pub water_start: f64,
    /// Total water just before the breach, m³.
    pub water_before_breach: f64,
    /// Total water at the end, m³.
    pub water_end: f64,
    /// What the ledger expects at the end (initial + added − removed + in − out), m³.
    pub water_expected: f64,
    /// Water that left through the open east edge, m³.
    pub water_out: f64,
    /// Depth at a point between the dam and the lake before the breach and at the end, m.
    pub depth_below_dam: [f32; 2],
    /// The boat (a point carried by the surface flow): start and end local (x, z), m.
    pub boat: [[f32; 2]; 2],
    /// Pictures written.
    pub pictures: Vec<PathBuf>,
}

impl HeadlessReport {
    /// Cell-steps per wall-clock second.
    pub fn throughput(&self) -> f64 {
        self.cells as f64 * self.steps as f64 / self.wall_seconds.max(1e-9)
    }

    /// The summary as text.
    pub fn text(&self) -> String {
        format!(
            "PipeWater headless demo\n\
             backend: {}\n\
             grid: {} cells, {} frames of 1/60 s, {} steps\n\
             throughput: {:.1} M cell-steps/s ({:.2} s wall for {:.1} s simulated, {:.2} ms per frame)\n\
             total water: start {:.1} m³, before the breach {:.1} m³, end {:.1} m³ (ledger expects {:.1} m³; {:.1} m³ left through the east edge)\n\
             depth below the dam: {:.3} m before the breach, {:.3} m at the end\n\
             boat drifted from ({:.1}, {:.1}) to ({:.1}, {:.1}) m\n",
            self.backend,
            self.cells,
            self.frames,
            self.steps,
            self.throughput() / 1e6,
            self.wall_seconds,
            self.frames as f64 / 60.0,
            self.wall_seconds * 1e3 / self.frames.max(1) as f64,
            self.water_start,
            self.water_before_breach,
            self.water_end,
            self.water_expected,
            self.water_out,
            self.depth_below_dam[0],
            self.depth_below_dam[1],
            self.boat[0][0],
            self.boat[0][1],
            self.boat[1][0],
            self.boat[1][1],
        )
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut options = HeadlessOptions::default();
    let mut force_headless = false;
    let mut smoke = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--headless" => force_headless = true,
            "--smoke" => smoke = true,
            "--out" => options.out = PathBuf::from(value()?),
            "--size" => options.side = value()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--seed" => options.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--seconds" => {
                let total: f32 = value()?.parse().map_err(|e| format!("--seconds: {e}"))?;
                options.seconds_before_breach = total / 3.0;
                options.seconds_after_breach = total * 2.0 / 3.0;
            }
            "--backend" => {
                options.backend = match value()?.as_str() {
                    "auto" => BackendPreference::Auto,
                    "gpu" => BackendPreference::Gpu,
                    "cpu" => BackendPreference::Cpu,
                    other => return Err(format!("--backend {other}: expected auto, gpu or cpu")),
                }
            }
            other => return Err(format!("unknown option {other}: usage `cargo xtask demo [--headless] [--out DIR] [--size N] [--seed N] [--seconds S] [--backend auto|gpu|cpu]`")),
        }
    }
    if smoke {
        let godot = find_godot().ok_or("--smoke needs a Godot 4.3+ binary: set GODOT")?;
        crate::build::build_and_install(false)?;
        return run_smoke_test(&godot);
    }
    if !force_headless {
        if let Some(godot) = find_godot() {
            return launch(&godot);
        }
        println!("No Godot binary found (set GODOT, or put godot4 or godot on PATH): rendering the demo headless instead.");
    }
    let report = run_headless(&options)?;
    print!("{}", report.text());
    for picture in &report.pictures {
        println!("wrote {}", picture.display());
    }
    Ok(())
}

/// The Godot binary: `GODOT`, else `godot4` or `godot` on `PATH`.
fn find_godot() -> Option<PathBuf> {
    if let Some(godot) = std::env::var_os("GODOT").filter(|g| !g.is_empty()) {
        return Some(PathBuf::from(godot));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["godot4", "godot"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// Builds the release library into the addon, imports the project once and opens the demo.
fn launch(godot: &Path) -> Result<(), String> {
    crate::build::build_and_install(true)?;
    let project = root().join("godot_project");
    eprintln!("$ {} --headless --path godot_project --import", godot.display());
    let import = Command::new(godot)
        .args(["--headless", "--path"])
        .arg(&project)
        .arg("--import")
        .status()
        .map_err(|e| format!("could not start {}: {e}", godot.display()))?;
    if !import.success() {
        return Err(format!("importing godot_project failed ({import})"));
    }
    eprintln!("$ {} --path godot_project", godot.display());
    let status =
        Command::new(godot).arg("--path").arg(&project).status().map_err(|e| format!("could not start {}: {e}", godot.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("Godot exited with {status}"))
    }
}

/// Runs the demo scene's smoke test headless (the library must already be installed in
/// `addons/pipe_water/bin/`).
fn run_smoke_test(godot: &Path) -> Result<(), String> {
    let (exited_ok, text) = crate::godot::run_project_script(godot, "res://tests/test_demo_smoke.gd")?;
    smoke_verdict(exited_ok, &text)
}

/// Whether a smoke run passed: exit 0, the pass line printed, no error of any kind printed.
pub fn smoke_verdict(exited_ok: bool, output: &str) -> Result<(), String> {
    if let Some(marker) = SMOKE_FAILURE_MARKERS.iter().find(|m| output.contains(*m)) {
        return Err(format!("demo smoke test: the output contains `{marker}`"));
    }
    if !exited_ok {
        return Err("demo smoke test failed (non-zero exit)".into());
    }
    if !output.contains(SMOKE_PASS_LINE) {
        return Err(format!("demo smoke test did not print `{SMOKE_PASS_LINE}`"));
    }
    Ok(())
}

/// Runs the demo scenario headless: the reservoir fills from the spring, the dam is dug through,
/// the flood runs down into the lake; a boat (a point moved by the surface flow) rides it.
/// Writes `terrain_water.png`, `flow.png` and `summary.txt` into `options.out`.
pub fn run_headless(options: &HeadlessOptions) -> Result<HeadlessReport, String> {
    let grid = Grid::new(options.side, options.side, options.cell_size).map_err(|e| e.to_string())?;
    let DemoLandscape { state, source, dam, dam_crest, .. } = demo_landscape(grid, options.seed, options.roughness, options.relief);
    let mut params = Params::default();
    params.boundaries[Edge::East as usize] = Boundary::Open;
    // Auto prefers the CPU over a software adapter (the core decides), and says why.
    let mut sim = Simulation::new(state, params, options.backend).map_err(|e| e.to_string())?;
    if let Some(why) = sim.gpu_fallback_reason() {
        println!("no GPU backend ({why}); running on the CPU");
    }
    sim.add_source(source.x, source.z, source.rate, source.radius).map_err(|e| e.to_string())?;
    let dt = 1.0 / 60.0;
    let extent = grid.extent();
    // Between the dam and the lake, on the centre line.
    let below = [dam[0] + 0.12 * extent[0], pipewater_core::scenarios::demo_centre_line(0.64) * extent[1] - 0.5 * extent[1]];
    // The boat starts on the reservoir, a little upstream of the dam.
    let mut boat = [dam[0] - 0.08 * extent[0], dam[1]];
    let boat_start = boat;
    let mut boat_path = vec![boat];
    let water_start = ledger_total(&mut sim)?;
    let mut steps = 0u64;
    let mut frames = 0u32;
    let mut wall = 0.0f64;
    let mut water_before_breach = water_start;
    let mut depth_before = 0.0;
    let frames_before = (options.seconds_before_breach / dt).round() as u32;
    let frames_total = frames_before + (options.seconds_after_breach / dt).round() as u32;
    for frame in 0..frames_total {
        if frame == frames_before {
            water_before_breach = ledger_total(&mut sim)?;
            depth_before = sim.depth(below[0], below[1]).unwrap_or(0.0);
            // Dig a notch through the crest: three overlapping digs along the river, about
            // a quarter of the crest's height deep at the centre of each.
            for k in -1..=1 {
                let x = dam[0] + k as f32 * 0.015 * extent[0];
                sim.modify_terrain(x, dam[1], -0.43 * dam_crest, 0.025 * extent[0]).map_err(|e| e.to_string())?;
            }
        }
        let started = Instant::now();
        let report = sim.advance(dt).map_err(|e| e.to_string())?;
        wall += started.elapsed().as_secs_f64();
        steps += report.substeps as u64;
        frames += 1;
        if let Some(v) = sim.flow_velocity(boat[0], boat[1]) {
            if sim.depth(boat[0], boat[1]).unwrap_or(0.0) > 0.05 {
                boat = [boat[0] + v[0] * dt, boat[1] + v[1] * dt];
            }
        }
        if frame % 30 == 0 {
            boat_path.push(boat);
        }
    }
    let started = Instant::now();
    let ledger = sim.ledger().map_err(|e| e.to_string())?;
    wall += started.elapsed().as_secs_f64();
    let end = sim.read_state().map_err(|e| e.to_string())?;
    let qv = sim.quantum_volume();
    let snapshot = end.snapshot(0, ledger.counters);
    let depth_after = grid.sample_bilinear(below[0], below[1], |i| snapshot.height[i][1], |a, b, t| a + (b - a) * t).unwrap_or(0.0);
    std::fs::create_dir_all(&options.out).map_err(|e| format!("creating {}: {e}", options.out.display()))?;
    let to_pixel = |p: [f32; 2]| grid.local_to_grid(p[0], p[1]);
    let path_pixels: Vec<[f32; 2]> = boat_path.iter().map(|&p| to_pixel(p)).collect();
    let shaded = shaded_terrain(&snapshot, &path_pixels);
    let flow = flow_map(&snapshot);
    let water_png = options.out.join("terrain_water.png");
    let flow_png = options.out.join("flow.png");
    write_png(&water_png, &shaded)?;
    write_png(&flow_png, &flow)?;
    let report = HeadlessReport {
        backend: sim.backend_description(),
        cells: grid.cell_count() as u64,
        frames,
        steps,
        wall_seconds: wall,
        water_start,
        water_before_breach,
        water_end: end.total_quanta() as f64 * qv,
        water_expected: (ledger.initial + ledger.counters.net()) as f64 * qv,
        water_out: ledger.counters.boundary_out as f64 * qv,
        depth_below_dam: [depth_before, depth_after],
        boat: [boat_start, boat],
        pictures: vec![water_png, flow_png],
    };
    let summary = options.out.join("summary.txt");
    std::fs::write(&summary, report.text()).map_err(|e| format!("writing {}: {e}", summary.display()))?;
    Ok(report)
}

/// Total water from the full state, m³ (waits for the device).
fn ledger_total(sim: &mut Simulation) -> Result<f64, String> {
    let qv = sim.quantum_volume();
    Ok(sim.read_state().map_err(|e| e.to_string())?.total_quanta() as f64 * qv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo_render::Picture;

    #[test]
    fn a_smoke_run_passes_only_with_exit_0_the_pass_line_and_no_error_printed() {
        let good = format!("ok   - water moved\n{SMOKE_PASS_LINE}\n");
        let cases = [
            (true, good.clone(), true),
            (false, good.clone(), false),
            (true, "ok   - water moved\n".to_string(), false),
            (true, format!("ERROR: PipeWater: radius out of range\n{SMOKE_PASS_LINE}"), false),
            (true, format!("SCRIPT ERROR: Invalid call\n{SMOKE_PASS_LINE}"), false),
        ];
        for (exit_ok, output, expected) in cases {
            let got = smoke_verdict(exit_ok, &output);
            println!("exit ok {exit_ok}, output {output:?} -> {got:?}");
            assert_eq!(got.is_ok(), expected);
        }
    }

    /// Depth (m) that counts as flooded below the dam: ten times the surface a dry cell keeps.
    const FLOODED: f32 = 0.01;

    /// A headless run shorter than the real one: 96² cells, 14 s.
    fn small(out: PathBuf) -> HeadlessOptions {
        HeadlessOptions {
            side: 96,
            seconds_before_breach: 2.0,
            seconds_after_breach: 12.0,
            backend: BackendPreference::Cpu,
            out,
            ..HeadlessOptions::default()
        }
    }

    #[test]
    fn the_headless_demo_writes_two_non_blank_pictures_of_the_grid_size_and_a_summary() {
        let out = std::env::temp_dir().join(format!("pipewater-demo-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let report = run_headless(&small(out.clone())).expect("headless demo runs");
        print!("{}", report.text());
        assert_eq!(report.pictures.len(), 2);
        for path in &report.pictures {
            let picture = Picture::read_png(path).expect("the PNG decodes");
            let (lo, hi) = picture.luma_range();
            let distinct = picture.distinct_colours();
            println!("{}: {}×{}, luma {lo}..{hi}, {distinct} distinct colours", path.display(), picture.width, picture.height);
            assert_eq!((picture.width, picture.height), (96, 96), "one pixel per cell");
            assert!(hi - lo > 40, "the picture is not blank: luma spans {lo}..{hi}");
            assert!(distinct > 100, "the picture has detail: {distinct} colours");
        }
        let water = Picture::read_png(&report.pictures[0]).expect("decodes");
        let blue = water.count(|[r, g, b]| b as i32 > r as i32 + 30 && b as i32 > g as i32);
        println!("blue (water) pixels: {blue} of {}", 96 * 96);
        assert!(blue > 96 * 96 / 50, "the reservoir and the lake show as water");
        assert!(out.join("summary.txt").is_file());
        let _ = std::fs::remove_dir_all(&out);
    }

    /// The ledger's expected total and the water on the grid agree exactly (integer quanta), and
    /// the breach sends water downstream.
    #[test]
    fn the_headless_demo_keeps_the_mass_identity_and_the_breach_floods_below_the_dam() {
        let out = std::env::temp_dir().join(format!("pipewater-demo-mass-{}", std::process::id()));
        let report = run_headless(&small(out.clone())).expect("headless demo runs");
        println!(
            "water end {:.4} m³, ledger expects {:.4} m³; depth below the dam {:.4} -> {:.4} m",
            report.water_end, report.water_expected, report.depth_below_dam[0], report.depth_below_dam[1]
        );
        assert_eq!(report.water_end, report.water_expected);
        assert!(report.depth_below_dam[1] > report.depth_below_dam[0] + FLOODED, "the flood reaches below the dam");
        let _ = std::fs::remove_dir_all(&out);
    }
}
