//! GDScript checks (gdtoolkit), and what the Godot test runs share: finding the binaries,
//! reading a run's verdict and its counts. [`crate::godot_runs`] runs the layers on each version.
//!
//! gdtoolkit is a Python package: `python3 -m pip install 'gdtoolkit==4.*'` provides the
//! `gdlint` and `gdparse` commands used here. [`crate::gdtoolkit`] finds them or installs them
//! into a project-local virtual environment; without them this layer prints one SKIP line.

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Printed by the scripts in `godot_project/tests/` (all but the demo smoke test) when every
/// check passed.
pub const PASS_LINE: &str = "PIPEWATER TESTS PASSED";
/// Output that means a test run went wrong even if Godot exited with 0: GDScript errors, Rust
/// panics reported by godot-rust, and resources Godot found still allocated at exit.
pub const FAILURE_MARKERS: [&str; 5] = ["SCRIPT ERROR", "[panic", "Parse Error", "leaked at exit", "RIDs of type"];

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
    let Some(toolkit) = crate::gdtoolkit::for_layer()? else {
        return Ok(());
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

/// Runs the Godot layers (see [`crate::godot_runs`]) on the binary in `GODOT` and those in
/// `GODOT_EXTRA`; one SKIP line without `GODOT`. `package` is the test command's zip, whose
/// building installed the stripped debug library the layers load; `None` builds it here.
pub fn run_headless_tests(package: Option<&crate::package::TestPackage>) -> Result<(), String> {
    let godots = crate::godot_runs::binaries()?;
    if godots.is_empty() {
        println!(
            "SKIP: Godot tests (set GODOT to a Godot 4.3+ binary, and GODOT_EXTRA to more separated by ':', to run godot_project/tests/: the node tests, the demo smoke test, the editor checks, the RenderingDevice tests, the water shader in each renderer and the release zip in a fresh project)"
        );
        return Ok(());
    }
    let built;
    let package = match package {
        Some(package) => package,
        None => {
            built = crate::package::test_package()?;
            &built
        }
    };
    crate::godot_runs::run_all(&godots, package)
}

/// Whether `PIPEWATER_REQUIRE_GPU=1`: a GPU test that cannot run is then a failure.
pub fn gpu_required() -> bool {
    std::env::var("PIPEWATER_REQUIRE_GPU").is_ok_and(|v| v == "1")
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


/// Whether a run passed: exit 0, `pass_line` printed, none of `markers` printed.
pub fn verdict_with(exited_ok: bool, output: &str, markers: &[&str], pass_line: &str) -> Result<(), String> {
    if let Some(marker) = markers.iter().find(|m| output.contains(*m)) {
        return Err(format!("the output contains `{marker}`"));
    }
    if !exited_ok {
        return Err("non-zero exit".into());
    }
    if !output.contains(pass_line) {
        return Err(format!("it did not print `{pass_line}`"));
    }
    Ok(())
}

/// `N` of the line `N checks passed` the test scripts end with.
pub fn passed_checks(output: &str) -> Option<usize> {
    output.lines().rev().find_map(|l| l.trim().strip_suffix(" checks passed")?.parse().ok())
}

/// `(failed, total)` of the line `F of N checks failed`.
pub fn failed_checks(output: &str) -> Option<(usize, usize)> {
    output.lines().rev().find_map(|l| {
        let (failed, total) = l.trim().strip_suffix(" checks failed")?.split_once(" of ")?;
        Some((failed.parse().ok()?, total.parse().ok()?))
    })
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
            let got = verdict_with(exit_ok, &output, &FAILURE_MARKERS, PASS_LINE);
            println!("exit ok {exit_ok}, output {output:?} -> {got:?}");
            assert_eq!(got.is_ok(), expected);
        }
    }

    #[test]
    fn the_counts_come_from_the_last_summary_line() {
        let passed = "ok   - a\n   5 checks passed in the log\n147 checks passed\nPIPEWATER TESTS PASSED\n";
        let failed = "FAIL - a\n3 of 147 checks failed\nPIPEWATER TESTS FAILED\n";
        println!("{:?} {:?}", passed_checks(passed), failed_checks(failed));
        assert_eq!(passed_checks(passed), Some(147));
        assert_eq!(passed_checks(failed), None);
        assert_eq!(failed_checks(failed), Some((3, 147)));
        assert_eq!(failed_checks(passed), None);
    }
}
