//! GDScript checks (gdtoolkit) and the headless Godot tests.
//!
//! gdtoolkit is a Python package: `python3 -m pip install 'gdtoolkit==4.*'` provides the
//! `gdlint` and `gdparse` commands used here. [`crate::gdtoolkit`] finds them or installs them
//! into a project-local virtual environment; without them this layer prints one SKIP line.

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Printed by `godot_project/tests/run_tests.gd` when every test passed.
const PASS_LINE: &str = "PIPEWATER TESTS PASSED";
/// Output that means a test run went wrong even if Godot exited with 0: GDScript errors, Rust
/// panics reported by godot-rust, and resources Godot found still allocated at exit.
const FAILURE_MARKERS: [&str; 5] = ["SCRIPT ERROR", "[panic", "Parse Error", "leaked at exit", "RIDs of type"];

/// Lints and parses every GDScript file of the addon and the demo with gdtoolkit. Without
/// gdtoolkit (and no way to install it), prints one SKIP line and passes, unless
/// `PIPEWATER_REQUIRE_GDTOOLKIT=1`.
pub fn check_gdscript() -> Result<(), String> {
    let root = root();
    let mut files = Vec::new();
    collect_gdscript(&root.join("addons/pipe_water"), &mut files)?;
    collect_gdscript(&root.join("godot_project"), &mut files)?;
    files.sort();
    if files.is_empty() {
        println!("gdtoolkit: no GDScript files");
        return Ok(());
    }
    let relative: Vec<String> = files.iter().map(|f| f.strip_prefix(&root).unwrap_or(f).to_string_lossy().into_owned()).collect();
    let toolkit = match crate::gdtoolkit::locate_or_install() {
        Ok(toolkit) => toolkit,
        Err(why) if crate::gdtoolkit::required() => return Err(format!("{why} ({}=1 requires gdtoolkit)", crate::gdtoolkit::REQUIRE_VAR)),
        Err(why) => {
            println!("SKIP: GDScript checks with gdtoolkit ({why}; `python3 -m pip install '{}'` brings it)", crate::gdtoolkit::GDTOOLKIT);
            return Ok(());
        }
    };
    for tool in [&toolkit.gdparse, &toolkit.gdlint] {
        let mut command = Command::new(tool);
        command.args(&relative).current_dir(&root);
        eprintln!("$ {} <{} files>", tool.display(), relative.len());
        let status = command.status().map_err(|e| format!("could not run {} ({e})", tool.display()))?;
        if !status.success() {
            return Err(format!("{} found problems in the GDScript files (exit {status})", tool.display()));
        }
    }
    println!("gdtoolkit: {} GDScript files parse and lint cleanly", files.len());
    Ok(())
}

/// `.gd` files under `dir`, leaving out Godot's cache and the linked copy of the addon.
fn collect_gdscript(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            let linked_addon = name == "addons" && dir.ends_with("godot_project");
            if !name.starts_with('.') && !linked_addon {
                collect_gdscript(&path, files)?;
            }
        } else if name.ends_with(".gd") {
            files.push(path);
        }
    }
    Ok(())
}

/// Runs `godot_project/tests/` headless with the binary in `GODOT`; one SKIP line without it.
///
/// Builds and installs the debug library, imports the project once (so that Godot registers the
/// extension and the script classes), then runs `res://tests/run_tests.gd` with a fixed 60 Hz
/// clock so that simulated seconds do not cost real ones.
pub fn run_headless_tests() -> Result<(), String> {
    let godot = match std::env::var("GODOT") {
        Ok(g) if !g.trim().is_empty() => g,
        _ => {
            println!("SKIP: headless Godot tests (set GODOT to a Godot 4.3+ binary to run godot_project/tests/: the node tests and the demo smoke test)");
            return Ok(());
        }
    };
    crate::build::build_and_install(false)?;
    let godot = Path::new(&godot);
    let (exited_ok, text) = run_project_script(godot, "res://tests/run_tests.gd")?;
    verdict(exited_ok, &text)?;
    let (exited_ok, text) = run_project_script(godot, "res://tests/test_demo_smoke.gd")?;
    crate::demo::smoke_verdict(exited_ok, &text)?;
    run_windowed_tests(godot)
}

/// Runs the RenderingDevice tests, which need a renderer with a RenderingDevice and so a window:
/// on the display in `DISPLAY`, else under `xvfb-run` (Debian package `xvfb`), with the Vulkan
/// driver (Mesa's lavapipe is enough). One SKIP line when neither exists.
fn run_windowed_tests(godot: &Path) -> Result<(), String> {
    let script = "res://tests/test_rendering_device.gd";
    let has_display = std::env::var("DISPLAY").is_ok_and(|d| !d.is_empty());
    let has_xvfb = Command::new("xvfb-run").arg("--help").output().is_ok();
    if !has_display && !has_xvfb {
        println!("SKIP: RenderingDevice tests (they need a window: set DISPLAY or install xvfb for xvfb-run)");
        return Ok(());
    }
    let project = root().join("godot_project");
    let mut command = if has_display {
        Command::new(godot)
    } else {
        let mut c = Command::new("xvfb-run");
        c.args(["-a", "-s", "-screen 0 1280x720x24"]).arg(godot);
        c
    };
    command.args(["--rendering-driver", "vulkan", "--path"]).arg(&project).args(["--fixed-fps", "60", "-s", script]);
    eprintln!("$ {}{} --rendering-driver vulkan --path godot_project --fixed-fps 60 -s {script}", if has_display { "" } else { "xvfb-run -a " }, godot.display());
    let output = command.output().map_err(|e| format!("could not start the windowed Godot run: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{text}");
    verdict(output.status.success(), &text)
}

/// Imports `godot_project` with `godot`, then runs `script` in it headless on a fixed 60 Hz clock.
/// Returns whether Godot exited with 0, and everything it printed (also echoed).
pub fn run_project_script(godot: &Path, script: &str) -> Result<(bool, String), String> {
    let project = root().join("godot_project");
    let import = Command::new(godot)
        .args(["--headless", "--path"])
        .arg(&project)
        .arg("--import")
        .output()
        .map_err(|e| format!("could not start {}: {e}", godot.display()))?;
    if !import.status.success() {
        eprintln!("{}{}", String::from_utf8_lossy(&import.stdout), String::from_utf8_lossy(&import.stderr));
        return Err(format!("importing the project failed ({})", import.status));
    }
    eprintln!("$ {} --headless --path godot_project --fixed-fps 60 -s {script}", godot.display());
    let output = Command::new(godot)
        .args(["--headless", "--path"])
        .arg(&project)
        .args(["--fixed-fps", "60", "-s", script])
        .output()
        .map_err(|e| format!("could not start {}: {e}", godot.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{text}");
    Ok((output.status.success(), text))
}


/// Whether a headless run passed: exit 0, the pass line printed, no script error or panic.
fn verdict(exited_ok: bool, output: &str) -> Result<(), String> {
    if let Some(marker) = FAILURE_MARKERS.iter().find(|m| output.contains(*m)) {
        return Err(format!("headless Godot tests: the output contains `{marker}`"));
    }
    if !exited_ok {
        return Err("headless Godot tests failed (non-zero exit)".into());
    }
    if !output.contains(PASS_LINE) {
        return Err(format!("headless Godot tests did not print `{PASS_LINE}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headless_run_passes_only_with_exit_0_the_pass_line_and_no_script_error() {
        let good = format!("ok 1\nERROR: PipeWater: cell_size = -1 is out of range\n{PASS_LINE}\n");
        let cases = [
            (true, good.clone(), true),
            (false, good.clone(), false),
            (true, "ok 1\n".to_string(), false),
            (true, format!("SCRIPT ERROR: Invalid call\n{PASS_LINE}"), false),
            (true, format!("ERROR: [panic src/node.rs:10]\n{PASS_LINE}"), false),
            (true, format!("{PASS_LINE}\nERROR: 3 RID allocations of type 'N10RenderingDevice6BufferE' were leaked at exit."), false),
        ];
        for (exit_ok, output, expected) in cases {
            let got = verdict(exit_ok, &output);
            println!("exit ok {exit_ok}, output {output:?} -> {got:?}");
            assert_eq!(got.is_ok(), expected);
        }
    }
}
