//! GDScript checks (gdtoolkit), and what the Godot test runs share: finding the binaries,
//! running a project script. [`crate::godot_runs`] runs the layers on each version; [`crate::verdict`]
//! reads their outcome.
//!
//! gdtoolkit is a Python package: `python3 -m pip install 'gdtoolkit==4.*'` provides the
//! `gdlint` and `gdparse` commands used here. [`crate::gdtoolkit`] finds them or installs them
//! into a project-local virtual environment; without them this layer prints one SKIP line.

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

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
