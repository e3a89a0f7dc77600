//! Every Godot test layer against each Godot binary given, and one result line per version.
//!
//! The binaries are `GODOT` and the `:`-separated paths of `GODOT_EXTRA`. For each one, xtask
//! copies the demo project and the addon into `target/godot-versions/<version>/project` (a fresh
//! copy: Godot's `.godot` cache is not shared between versions, and nothing a version writes
//! reaches the repository), imports it, and runs in it:
//!
//! - `run_tests`: the node tests (`res://tests/run_tests.gd`), headless;
//! - `persistence`: saving and loading, synchronous and asynchronous
//!   (`res://tests/test_persistence.gd`), headless;
//! - `sleeping`: sleeping tiles on the CPU backend (`res://tests/test_sleeping.gd`), headless;
//! - `lattice`: the node on the triangular lattice, its queries, edits and mesh on the lattice's
//!   cells and what it refuses there (`res://tests/test_lattice.gd`), headless;
//! - `world`: `PipeWaterWorld`, a world in pages on the wgpu device (`res://tests/test_world.gd`),
//!   headless;
//! - `terrain_sources`: `terrain_source` over stand-ins of Terrain3D and HTerrain, a
//!   `HeightMapShape3D` and geometry baked by rays (`res://tests/test_terrain_sources.gd`), headless;
//! - `multiplayer`: water shared over ENet on 127.0.0.1 (`res://tests/test_multiplayer.gd`): the
//!   script serves and starts two clients as headless processes of the same binary, headless;
//! - `demo smoke`: the demo scene for 300 frames (`res://tests/test_demo_smoke.gd`), headless;
//! - `editor_surface`: the classes, inspector groups, hints and icons as the editor reads them
//!   (`res://tests/test_editor_surface.gd`), headless;
//! - `class_reference`: the class reference pages in a running editor
//!   (`res://tests/test_class_reference.gd` with `--editor`), headless;
//! - `authoring`: the editor tools in a running editor (`res://tests/test_authoring.gd` with
//!   `--editor`), headless: source nodes, paint strokes undone and redone, a bake saved with its
//!   scene and loaded again;
//! - `rendering_device`: the RenderingDevice backend (`res://tests/test_rendering_device.gd`) in
//!   a window with `--rendering-driver vulkan`, on `DISPLAY` or under `xvfb-run`;
//! - `shader forward_plus`, `shader mobile`, `shader gl_compatibility`: the addon's water
//!   surface shader (`res://tests/test_water_shader.gd`) compiled and drawn in each renderer, in
//!   a window as above (`--rendering-driver vulkan`, or `opengl3` for Compatibility). Besides the
//!   script's checks, any `SHADER ERROR`, and any `ERROR` or `WARNING` line that is not the
//!   engine talking about the machine ([`MACHINE_NOISE`]), fails the layer;
//! - `package`: the release zip the test command built ([`crate::package::test_package`]),
//!   unzipped into a fresh project of its own (`target/godot-versions/<version>/package`),
//!   imported, and `res://tests/test_package_smoke.gd` run in it headless. Godot adding a file to
//!   the unzipped addon (a `.uid` the zip lacks) fails it too.
//!
//! The import fails on a crash, a non-zero exit, a GDScript error, and on `ERROR` lines about
//! the addon or the project; engine errors about the machine (such as a build without
//! fontconfig) are counted and listed once. After the runs, files a version wrote into the copy
//! that the repository does not have (say a `.uid` file for a new script) or rewrote fail the run,
//! since the same run in `godot_project/` would leave the working tree dirty.

use crate::build::target_dir;
use crate::gdextension::seed_extension_list;
use crate::package::TestPackage;
use crate::util::root;
use crate::verdict::{failed_checks, gpu_required, passed_checks, verdict_with, FAILURE_MARKERS, PASS_LINE, SMOKE_FAILURE_MARKERS, SMOKE_PASS_LINE};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Environment variable with more Godot binaries, separated by `:`.
pub const EXTRA_VAR: &str = "GODOT_EXTRA";
/// Longest a headless Godot run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(900);
/// Longest an editor session (import, class reference) may take.
const EDITOR_TIMEOUT: Duration = Duration::from_secs(300);
/// Output markers of an editor session ended by its script: the editor's own controls are still
/// alive then, so Godot reports their RIDs as leaked, which says nothing about the addon.
const EDITOR_FAILURE_MARKERS: [&str; 3] = ["SCRIPT ERROR", "[panic", "Parse Error"];
/// The renderers the water shader is tested in: layer name, `--rendering-method`,
/// `--rendering-driver`.
const SHADER_RENDERERS: [(&str, &str, &str); 3] = [
    ("shader forward_plus", "forward_plus", "vulkan"),
    ("shader mobile", "mobile", "vulkan"),
    ("shader gl_compatibility", "gl_compatibility", "opengl3"),
];
/// Parts of `ERROR`/`WARNING` lines in which the engine talks about the machine, not the shader:
/// a build without fontconfig, a GL driver that cannot change V-Sync, an X server (Xvfb) that
/// cannot keep the screen on (Godot 4.6), and the node saying that the machine's only GPU adapter
/// is a software rasteriser (lavapipe), so `BACKEND_AUTO` runs the water on the CPU.
const MACHINE_NOISE: [&str; 5] = ["fontconfig", "system font", "V-Sync", "Keeping screen on", "the only GPU adapter is a software rasteriser"];
/// Words that make an import `ERROR` line the addon's or the project's business.
const ADDON_WORDS: [&str; 6] = ["pipe_water", "pipewater", "PipeWater", "res://", "[panic", "GDExtension"];

/// The Godot binaries to test: `GODOT`, then each path in `GODOT_EXTRA`.
pub fn binaries() -> Result<Vec<PathBuf>, String> {
    parse_binaries(&std::env::var("GODOT").unwrap_or_default(), &std::env::var(EXTRA_VAR).unwrap_or_default())
}

/// [`binaries`] from the values of `GODOT` and `GODOT_EXTRA`.
fn parse_binaries(main: &str, extra: &str) -> Result<Vec<PathBuf>, String> {
    let extra: Vec<PathBuf> = extra.split(':').map(str::trim).filter(|p| !p.is_empty()).map(PathBuf::from).collect();
    if main.trim().is_empty() {
        if !extra.is_empty() {
            return Err(format!("{EXTRA_VAR} is set but GODOT is not: set GODOT to the first Godot binary"));
        }
        return Ok(Vec::new());
    }
    Ok(std::iter::once(PathBuf::from(main.trim())).chain(extra).collect())
}

/// How one layer went.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Passed, with the number of checks when the layer counts them.
    Passed(Option<usize>),
    /// Did not run, and why.
    Skipped(String),
    /// Failed, and why.
    Failed(String),
}

/// The layers of one Godot version.
#[derive(Debug, Clone)]
pub struct VersionReport {
    /// `Godot <version>` (or the binary's path when it could not say its version).
    pub label: String,
    /// Layer names and outcomes, in the order they ran.
    pub layers: Vec<(&'static str, Outcome)>,
}

impl VersionReport {
    /// Whether no layer failed.
    pub fn passed(&self) -> bool {
        !self.layers.iter().any(|(_, o)| matches!(o, Outcome::Failed(_)))
    }

    /// One line: `Godot 4.3.stable.custom_build: run_tests 147 passed, demo smoke 9 passed, …`.
    pub fn line(&self) -> String {
        let parts: Vec<String> = self
            .layers
            .iter()
            .map(|(name, outcome)| match outcome {
                Outcome::Passed(Some(n)) => format!("{name} {n} passed"),
                Outcome::Passed(None) => format!("{name} passed"),
                Outcome::Skipped(why) => format!("{name} SKIPPED ({why})"),
                Outcome::Failed(why) => format!("{name} FAILED ({why})"),
            })
            .collect();
        format!("{}: {}", self.label, parts.join(", "))
    }
}

/// Runs every Godot layer against each binary of [`binaries`] (the library must be installed,
/// and `package` is the zip built from it) and prints one line per version. An error when any
/// layer failed on any version.
pub fn run_all(godots: &[PathBuf], package: &TestPackage) -> Result<(), String> {
    let mut reports = Vec::new();
    let mut folders = Vec::new();
    for godot in godots {
        reports.push(test_version(godot, &mut folders, package));
    }
    println!("\nGodot tests, one line per version:");
    for report in &reports {
        println!("{}", report.line());
    }
    let failed: Vec<&str> = reports.iter().filter(|r| !r.passed()).map(|r| r.label.as_str()).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("Godot tests failed on {}", failed.join(", ")))
    }
}

/// What `godot --version` says, e.g. `4.3.stable.custom_build`.
fn version_of(godot: &Path) -> Result<String, String> {
    let output = Command::new(godot).arg("--version").output().map_err(|e| format!("could not start {}: {e}", godot.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().map(str::trim).filter(|l| !l.is_empty()).last().unwrap_or("");
    if !output.status.success() || !line.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("`{} --version` printed {:?} ({})", godot.display(), line, output.status));
    }
    Ok(line.to_string())
}

/// Every layer on one binary, in a folder named after its version that is not in `folders` yet
/// (two binaries of one version get two folders).
fn test_version(godot: &Path, folders: &mut Vec<String>, package: &TestPackage) -> VersionReport {
    let version = match version_of(godot) {
        Ok(v) => v,
        Err(why) => return VersionReport { label: format!("Godot at {}", godot.display()), layers: vec![("version", Outcome::Failed(why))] },
    };
    let label = format!("Godot {version}");
    let mut report = VersionReport { label: label.clone(), layers: Vec::new() };
    let slug: String = version.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
    let base = target_dir().join("godot-versions");
    let folder = (0..).map(|k| if k == 0 { slug.clone() } else { format!("{slug}-{k}") }).find(|f| !folders.contains(f)).expect("a free name");
    folders.push(folder.clone());
    let work = base.join(folder);
    let project = work.join("project");
    // Godot keeps its documentation cache per version in $XDG_CACHE_HOME/godot; a private one
    // makes the import build it, so that the class reference session after it reads it.
    let cache = base.join("cache");
    let copied = match fresh_copy(&project).and_then(|c| std::fs::create_dir_all(&cache).map(|_| c).map_err(|e| format!("creating {}: {e}", cache.display()))) {
        Ok(copied) => copied,
        Err(why) => {
            report.layers.push(("project copy", Outcome::Failed(why)));
            return report;
        }
    };
    println!("\n==== {label} ({}) in {}", godot.display(), project.display());

    report.layers.push(("import", import(godot, &project, &cache, &label)));
    let headless = |script: &str| {
        let mut c = Command::new(godot);
        c.args(["--headless", "--path"]).arg(&project).args(["--fixed-fps", "60", "-s", script]);
        c
    };
    let run = |name: &'static str, command: Command, markers: &[&str], pass_line: &str| -> Outcome {
        match run_logged(command, name, &label, RUN_TIMEOUT) {
            Ok(run) => layer_outcome(&run, markers, pass_line),
            Err(why) => Outcome::Failed(why),
        }
    };
    report.layers.push(("run_tests", run("run_tests", headless("res://tests/run_tests.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("persistence", run("persistence", headless("res://tests/test_persistence.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("sleeping", run("sleeping", headless("res://tests/test_sleeping.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("lattice", run("lattice", headless("res://tests/test_lattice.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("world", run("world", headless("res://tests/test_world.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("terrain_sources", run("terrain_sources", headless("res://tests/test_terrain_sources.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push(("multiplayer", run("multiplayer", headless("res://tests/test_multiplayer.gd"), &FAILURE_MARKERS, PASS_LINE)));
    report.layers.push((
        "demo smoke",
        run("demo smoke", headless("res://tests/test_demo_smoke.gd"), &SMOKE_FAILURE_MARKERS, SMOKE_PASS_LINE),
    ));
    report.layers.push(("editor_surface", run("editor_surface", headless("res://tests/test_editor_surface.gd"), &FAILURE_MARKERS, PASS_LINE)));
    let editor_session = |name: &'static str, script: &str| -> Outcome {
        let mut editor = Command::new(godot);
        editor.env("XDG_CACHE_HOME", &cache).args(["--headless", "--editor", "--path"]).arg(&project).args(["-s", script]);
        match run_logged(editor, name, &label, EDITOR_TIMEOUT) {
            Ok(run) => layer_outcome(&run, &EDITOR_FAILURE_MARKERS, PASS_LINE),
            Err(why) => Outcome::Failed(why),
        }
    };
    report.layers.push(("class_reference", editor_session("class_reference", "res://tests/test_class_reference.gd")));
    report.layers.push(("authoring", editor_session("authoring", "res://tests/test_authoring.gd")));
    report.layers.push(("rendering_device", rendering_device(godot, &project, &label)));
    for (name, method, driver) in SHADER_RENDERERS {
        report.layers.push((name, water_shader(godot, &project, &label, name, method, driver)));
    }
    report.layers.push(("package", package_smoke(godot, &work.join("package"), &cache, &label, package)));
    if let Err(why) = unchanged(&project, &copied) {
        report.layers.push(("files", Outcome::Failed(why)));
    }
    report
}

/// The output of a finished Godot run.
struct Run {
    exited_ok: bool,
    text: String,
}

/// Runs `command`, waiting at most `timeout`; echoes its output under a header. An error only
/// when it cannot start or runs past the limit (then it and its children are killed).
fn run_logged(mut command: Command, name: &str, label: &str, timeout: Duration) -> Result<Run, String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    eprintln!("\n---- {label}: {name}\n$ {command:?}");
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("could not start {command:?}: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            // The command leads its own process group: end it and whatever it started.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = format!("{}{}", String::from_utf8_lossy(&out.join().unwrap_or_default()), String::from_utf8_lossy(&err.join().unwrap_or_default()));
    println!("{text}");
    match status {
        Some(status) => Ok(Run { exited_ok: status.success(), text }),
        None => Err(format!("still running after {} s, stopped", timeout.as_secs())),
    }
}

/// A test script's outcome: [`verdict_with`] and the number of checks it printed.
fn layer_outcome(run: &Run, markers: &[&str], pass_line: &str) -> Outcome {
    if run.text.lines().any(|l| l.starts_with("SKIP:")) && run.text.contains(pass_line) {
        let why = run.text.lines().find(|l| l.starts_with("SKIP:")).unwrap_or("").trim_start_matches("SKIP:").trim();
        return Outcome::Skipped(why.to_string());
    }
    match verdict_with(run.exited_ok, &run.text, markers, pass_line) {
        Ok(()) => Outcome::Passed(passed_checks(&run.text)),
        Err(why) => match failed_checks(&run.text) {
            Some((failed, total)) => Outcome::Failed(format!("{failed} of {total} checks failed; {why}")),
            None => Outcome::Failed(why),
        },
    }
}

/// Imports the project; see the module's documentation for what fails it.
fn import(godot: &Path, project: &Path, cache: &Path, label: &str) -> Outcome {
    let mut command = Command::new(godot);
    command.env("XDG_CACHE_HOME", cache).args(["--headless", "--path"]).arg(project).arg("--import");
    let run = match run_logged(command, "import", label, EDITOR_TIMEOUT) {
        Ok(run) => run,
        Err(why) => return Outcome::Failed(why),
    };
    let scan = scan_import(&run.text);
    if !scan.others.is_empty() {
        println!("import: {} ERROR lines not about the addon (the engine about this machine), e.g. {:?}", scan.others.len(), scan.others[0]);
    }
    if run.text.contains("handle_crash") || run.text.contains("Program crashed") {
        return Outcome::Failed("Godot crashed".into());
    }
    if !run.exited_ok {
        return Outcome::Failed("non-zero exit".into());
    }
    if let Some(first) = scan.ours.first() {
        return Outcome::Failed(format!("{} error lines about the addon or the project, first: {first}", scan.ours.len()));
    }
    println!("import: no error lines about the addon or the project");
    Outcome::Passed(None)
}

/// `ERROR` lines of an import, split into those about the addon or project and the others.
#[derive(Debug, Default, PartialEq)]
pub struct ImportScan {
    /// Error lines (with their `at:` line) naming the addon, the project or a GDScript problem.
    pub ours: Vec<String>,
    /// The other error lines.
    pub others: Vec<String>,
}

/// Sorts the `ERROR:` and `SCRIPT ERROR:` lines of an import's output.
pub fn scan_import(output: &str) -> ImportScan {
    let lines: Vec<&str> = output.lines().collect();
    let mut scan = ImportScan::default();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !(trimmed.starts_with("ERROR:") || trimmed.starts_with("SCRIPT ERROR:")) {
            continue;
        }
        let at = lines.get(i + 1).map(|l| l.trim()).filter(|l| l.starts_with("at:")).unwrap_or("");
        let entry = if at.is_empty() { trimmed.to_string() } else { format!("{trimmed} ({at})") };
        let ours = trimmed.starts_with("SCRIPT ERROR:") || ADDON_WORDS.iter().any(|w| entry.contains(w));
        if ours {
            scan.ours.push(entry);
        } else {
            scan.others.push(entry);
        }
    }
    scan
}

/// The RenderingDevice tests in a window: on `DISPLAY`, else under `xvfb-run`. Skipped without
/// either, or when the renderer has no RenderingDevice; with `PIPEWATER_REQUIRE_GPU=1` those are
/// failures.
fn rendering_device(godot: &Path, project: &Path, label: &str) -> Outcome {
    let script = "res://tests/test_rendering_device.gd";
    let has_display = std::env::var("DISPLAY").is_ok_and(|d| !d.is_empty());
    let has_xvfb = Command::new("xvfb-run").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    let skipped = |why: String| {
        if gpu_required() {
            Outcome::Failed(format!("{why}, and PIPEWATER_REQUIRE_GPU=1"))
        } else {
            println!("SKIP: RenderingDevice tests on {label} ({why})");
            Outcome::Skipped(why)
        }
    };
    if !has_display && !has_xvfb {
        return skipped("no window: set DISPLAY or install xvfb for xvfb-run".into());
    }
    let mut command = if has_display {
        Command::new(godot)
    } else {
        let mut c = Command::new("xvfb-run");
        c.args(["-a", "-s", "-screen 0 1280x720x24"]).arg(godot);
        c
    };
    command.args(["--rendering-driver", "vulkan", "--path"]).arg(project).args(["--fixed-fps", "60", "-s", script]);
    match run_logged(command, "rendering_device", label, RUN_TIMEOUT) {
        Ok(run) => match layer_outcome(&run, &FAILURE_MARKERS, PASS_LINE) {
            Outcome::Skipped(why) => skipped(why),
            other => other,
        },
        Err(why) => Outcome::Failed(why),
    }
}

/// The window a rendering test draws in: Godot itself on `DISPLAY`, else under `xvfb-run`; an
/// error when there is neither.
fn windowed(godot: &Path) -> Result<Command, String> {
    if std::env::var("DISPLAY").is_ok_and(|d| !d.is_empty()) {
        return Ok(Command::new(godot));
    }
    if Command::new("xvfb-run").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Err("no window: set DISPLAY or install xvfb for xvfb-run".into());
    }
    let mut c = Command::new("xvfb-run");
    c.args(["-a", "-s", "-screen 0 1280x720x24"]).arg(godot);
    Ok(c)
}

/// The water shader's tests in one renderer (`method` with `driver`), in a window. Skipped
/// without one (a failure with `PIPEWATER_REQUIRE_GPU=1`); failed by the script's checks, by a
/// shader error, or by an `ERROR` or `WARNING` line ([`shader_problems`]).
fn water_shader(godot: &Path, project: &Path, label: &str, name: &str, method: &str, driver: &str) -> Outcome {
    let mut command = match windowed(godot) {
        Ok(command) => command,
        Err(why) if gpu_required() => return Outcome::Failed(format!("{why}, and PIPEWATER_REQUIRE_GPU=1")),
        Err(why) => {
            println!("SKIP: water shader tests in {method} on {label} ({why})");
            return Outcome::Skipped(why);
        }
    };
    command.args(["--rendering-method", method, "--rendering-driver", driver, "--path"]).arg(project);
    command.args(["--fixed-fps", "60", "-s", "res://tests/test_water_shader.gd", "--", &format!("--renderer={method}")]);
    let run = match run_logged(command, name, label, RUN_TIMEOUT) {
        Ok(run) => run,
        Err(why) => return Outcome::Failed(why),
    };
    let problems = shader_problems(&run.text);
    match layer_outcome(&run, &FAILURE_MARKERS, PASS_LINE) {
        Outcome::Passed(_) if !problems.is_empty() => Outcome::Failed(format!("{} error or warning lines, first: {}", problems.len(), problems[0])),
        Outcome::Skipped(why) if gpu_required() => Outcome::Failed(format!("{why}, and PIPEWATER_REQUIRE_GPU=1")),
        other => other,
    }
}

/// The lines of a rendering run that fail the water shader's layer: `SHADER ERROR`, and the
/// `ERROR` and `WARNING` lines that are not [`MACHINE_NOISE`].
pub fn shader_problems(output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("SHADER ERROR") || l.starts_with("ERROR:") || l.starts_with("WARNING:") || l.starts_with("SHADER WARNING"))
        .filter(|l| l.contains("SHADER ERROR") || !MACHINE_NOISE.iter().any(|n| l.contains(n)))
        .map(str::to_string)
        .collect()
}

/// The test scripts the package's fresh project gets, from `godot_project/tests/`.
const PACKAGE_SMOKE_FILES: [&str; 4] = ["test_base.gd", "test_base.gd.uid", "test_package_smoke.gd", "test_package_smoke.gd.uid"];

/// The `package` layer: `package`'s zip unzipped into a fresh project at `project` with the smoke
/// script, imported, the script run headless, and the project's files compared with what was
/// unzipped.
fn package_smoke(godot: &Path, project: &Path, cache: &Path, label: &str, package: &TestPackage) -> Outcome {
    let setup = || -> Result<BTreeMap<PathBuf, Vec<u8>>, String> {
        crate::package::extract(&package.zip, project)?;
        std::fs::write(project.join("project.godot"), crate::package::FRESH_PROJECT).map_err(|e| format!("writing project.godot: {e}"))?;
        let tests = project.join("tests");
        std::fs::create_dir_all(&tests).map_err(|e| format!("creating {}: {e}", tests.display()))?;
        for file in PACKAGE_SMOKE_FILES {
            let from = root().join("godot_project/tests").join(file);
            std::fs::copy(&from, tests.join(file)).map_err(|e| format!("copying {}: {e}", from.display()))?;
        }
        seed_extension_list(project)?;
        snapshot(project)
    };
    let unzipped = match setup() {
        Ok(files) => files,
        Err(why) => return Outcome::Failed(why),
    };
    if let Outcome::Failed(why) = import(godot, project, cache, label) {
        return Outcome::Failed(format!("import: {why}"));
    }
    let mut command = Command::new(godot);
    command.args(["--headless", "--path"]).arg(project).args(["--fixed-fps", "60", "-s", "res://tests/test_package_smoke.gd"]);
    let outcome = match run_logged(command, "package", label, RUN_TIMEOUT) {
        Ok(run) => layer_outcome(&run, &FAILURE_MARKERS, PASS_LINE),
        Err(why) => Outcome::Failed(why),
    };
    match unchanged(project, &unzipped) {
        Err(why) if !matches!(outcome, Outcome::Failed(_)) => Outcome::Failed(format!("the zip is incomplete: {why}")),
        _ => outcome,
    }
}

/// Makes `project` a fresh copy of `godot_project/` with the addon inside it (no `.godot`), and
/// returns the copied files (relative path → contents, or size for the libraries).
fn fresh_copy(project: &Path) -> Result<BTreeMap<PathBuf, Vec<u8>>, String> {
    if project.exists() {
        std::fs::remove_dir_all(project).map_err(|e| format!("removing {}: {e}", project.display()))?;
    }
    let root = root();
    let mut copied = BTreeMap::new();
    copy_tree(&root.join("godot_project"), project, Path::new(""), &mut copied, &|rel: &Path| {
        let first = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
        first == ".godot" || first == "addons"
    })?;
    copy_tree(&root.join("addons/pipe_water"), &project.join("addons/pipe_water"), Path::new("addons/pipe_water"), &mut copied, &|rel: &Path| {
        rel.extension().is_some_and(|e| e == "import")
    })?;
    seed_extension_list(project)?;
    Ok(copied)
}

/// Copies `from` into `to` (recording each file under `prefix` in `copied`), leaving out the
/// paths (relative to `from`) that `skip` names. Libraries are hard-linked where possible.
fn copy_tree(from: &Path, to: &Path, prefix: &Path, copied: &mut BTreeMap<PathBuf, Vec<u8>>, skip: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    fn walk(base: &Path, dir: &Path, to: &Path, prefix: &Path, copied: &mut BTreeMap<PathBuf, Vec<u8>>, skip: &dyn Fn(&Path) -> bool) -> Result<(), String> {
        for entry in std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(base).expect("inside base").to_path_buf();
            if skip(&rel) {
                continue;
            }
            let target = to.join(&rel);
            // Follow links: the copy must hold the files themselves.
            if path.is_dir() {
                std::fs::create_dir_all(&target).map_err(|e| format!("creating {}: {e}", target.display()))?;
                walk(base, &path, to, prefix, copied, skip)?;
            } else if path.is_file() {
                let library = is_library(&path);
                if !(library && std::fs::hard_link(&path, &target).is_ok()) {
                    std::fs::copy(&path, &target).map_err(|e| format!("copying {} to {}: {e}", path.display(), target.display()))?;
                }
                let record = if library { size_record(&path) } else { std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))? };
                copied.insert(prefix.join(&rel), record);
            }
        }
        Ok(())
    }
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    walk(from, from, to, prefix, copied, skip)
}

fn is_library(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "so" || e == "dll" || e == "dylib")
}

fn size_record(path: &Path) -> Vec<u8> {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0).to_le_bytes().to_vec()
}

/// The project's files (relative path → contents, or size for libraries), apart from Godot's
/// cache (`.godot/`) and import records (`*.import`).
fn snapshot(project: &Path) -> Result<BTreeMap<PathBuf, Vec<u8>>, String> {
    fn walk(base: &Path, dir: &Path, now: &mut BTreeMap<PathBuf, Vec<u8>>) -> Result<(), String> {
        for entry in std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(base).expect("inside base").to_path_buf();
            if rel.starts_with(".godot") || rel.extension().is_some_and(|e| e == "import") {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, now)?;
            } else {
                let record = if is_library(&path) { size_record(&path) } else { std::fs::read(&path).map_err(|e| e.to_string())? };
                now.insert(rel, record);
            }
        }
        Ok(())
    }
    let mut now = BTreeMap::new();
    walk(project, project, &mut now)?;
    Ok(now)
}

/// Checks that Godot added no file to the copy and changed none, apart from its cache
/// (`.godot/`) and import records (`*.import`), which the repository ignores.
fn unchanged(project: &Path, copied: &BTreeMap<PathBuf, Vec<u8>>) -> Result<(), String> {
    let now = snapshot(project)?;
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for (rel, contents) in &now {
        match copied.get(rel) {
            None => added.push(rel.display().to_string()),
            Some(before) if before != contents => changed.push(rel.display().to_string()),
            _ => {}
        }
    }
    let removed: Vec<String> = copied.keys().filter(|k| !now.contains_key(*k)).map(|k| k.display().to_string()).collect();
    if added.is_empty() && changed.is_empty() && removed.is_empty() {
        println!("files: Godot added, changed and removed none of the project's files");
        return Ok(());
    }
    Err(format!(
        "Godot would dirty the working tree: added {added:?} (commit them, e.g. the .uid of a new script), changed {changed:?}, removed {removed:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_errors_about_the_addon_or_project_are_told_apart_from_the_engines() {
        let output = "\
ERROR: Godot was compiled without fontconfig, system font support is disabled.
   at: get_system_font_path (platform/linuxbsd/os_linuxbsd.cpp:888)
ERROR: GDScript bug: Native class \"PipeWater\" not found.
   at: _gdtype_from_datatype (./modules/gdscript/gdscript_compiler.cpp:123)
SCRIPT ERROR: Parse Error: Static function \"f()\" not found in base \"GDScriptNativeClass\".
          at: GDScript::reload (res://tests/x.gd:253)
ERROR: Can't open dynamic library: res://addons/pipe_water/bin/libpipewater_godot.linux.debug.x86_64.so.
   at: open_dynamic_library (drivers/unix/os_unix.cpp:1)
ok 1
";
        let scan = scan_import(output);
        println!("{scan:#?}");
        assert_eq!(scan.ours.len(), 3);
        assert_eq!(scan.others.len(), 1);
        assert!(scan.others[0].contains("fontconfig"));
        assert!(scan_import("ok\nWARNING: x\n").ours.is_empty());
    }

    #[test]
    fn the_result_line_names_each_layer_with_its_count() {
        let report = VersionReport {
            label: "Godot 4.3.stable.custom_build".into(),
            layers: vec![
                ("import", Outcome::Passed(None)),
                ("run_tests", Outcome::Passed(Some(147))),
                ("rendering_device", Outcome::Skipped("no window".into())),
            ],
        };
        println!("{}", report.line());
        assert_eq!(report.line(), "Godot 4.3.stable.custom_build: import passed, run_tests 147 passed, rendering_device SKIPPED (no window)");
        assert!(report.passed());
        let failed = VersionReport { label: "Godot 4.6".into(), layers: vec![("run_tests", Outcome::Failed("2 of 147 checks failed".into()))] };
        println!("{}", failed.line());
        assert!(!failed.passed());
    }

    #[test]
    fn a_layer_counts_its_checks_and_fails_on_a_failed_one() {
        let pass = Run { exited_ok: true, text: format!("ok   - a\n147 checks passed\n{}\n", PASS_LINE) };
        assert_eq!(layer_outcome(&pass, &FAILURE_MARKERS, PASS_LINE), Outcome::Passed(Some(147)));
        let fail = Run { exited_ok: false, text: "FAIL - a\n2 of 147 checks failed\nPIPEWATER TESTS FAILED\n".into() };
        let got = layer_outcome(&fail, &FAILURE_MARKERS, PASS_LINE);
        println!("{got:?}");
        assert!(matches!(got, Outcome::Failed(ref why) if why.starts_with("2 of 147 checks failed")));
        let skip = Run { exited_ok: true, text: format!("SKIP: RenderingDevice tests (none)\n{}\n", PASS_LINE) };
        assert!(matches!(layer_outcome(&skip, &FAILURE_MARKERS, PASS_LINE), Outcome::Skipped(_)));
    }

    #[test]
    fn the_water_shader_layer_fails_on_shader_errors_and_warnings_but_not_on_the_machine() {
        let clean = "ERROR: Godot was compiled without fontconfig, system font support is disabled.\nok   - a\nWARNING: Keeping screen on not supported by this display server.\nWARNING: PipeWater: no GPU backend, running on the CPU (no usable GPU adapter: the only GPU adapter is a software rasteriser, llvmpipe (LLVM 15.0.6, 256 bits) (Cpu, Vulkan, llvmpipe Mesa 22.3.6 (LLVM 15.0.6)), slower than the CPU backend; choose the GPU backend by name to run on it anyway)\n";
        assert!(shader_problems(clean).is_empty());
        let broken = "SHADER ERROR: Unknown identifier in expression: 'foo'.\n   at: (null) (:120)\nERROR: Shader compilation failed.\nWARNING: shader uniform unused\n";
        let problems = shader_problems(broken);
        println!("{problems:#?}");
        assert_eq!(problems.len(), 3);
        assert_eq!(SHADER_RENDERERS.map(|r| r.0), ["shader forward_plus", "shader mobile", "shader gl_compatibility"]);
    }

    #[test]
    fn godot_extra_adds_binaries_after_godot() {
        let cases = [
            ("", "", Ok(vec![])),
            ("/g43", "", Ok(vec!["/g43"])),
            ("/g43", "/g46", Ok(vec!["/g43", "/g46"])),
            (" /g43 ", "/g44::/g46: ", Ok(vec!["/g43", "/g44", "/g46"])),
            ("", "/g46", Err(())),
        ];
        for (main, extra, expected) in cases {
            let got = parse_binaries(main, extra);
            println!("GODOT={main:?} {EXTRA_VAR}={extra:?} -> {got:?}");
            match expected {
                Ok(paths) => assert_eq!(got, Ok(paths.into_iter().map(PathBuf::from).collect())),
                Err(()) => assert!(got.is_err()),
            }
        }
    }
}
