//! `cargo xtask build [--release]`: builds the GDExtension and installs it into the addon.
//!
//! The library goes to `addons/pipe_water/bin/` under the name `pipe_water.gdextension` gives
//! it for this platform and profile, and `godot_project/addons/pipe_water` is made a link to
//! `addons/pipe_water` (a copy where links are not available) so that the demo and the headless
//! tests load the freshly built addon.

use crate::util::{cargo, root, run as run_command};
use std::path::{Path, PathBuf};

pub fn run(args: &[String]) -> Result<(), String> {
    let mut release = false;
    for arg in args {
        match arg.as_str() {
            "--release" => release = true,
            other => return Err(format!("unknown option {other}: usage `cargo xtask build [--release]`")),
        }
    }
    build_and_install(release).map(|installed| println!("installed {}", installed.display()))
}

/// Builds `pipewater-godot` (debug or release), installs it and links the addon into the demo
/// project. Returns the installed library's path.
pub fn build_and_install(release: bool) -> Result<PathBuf, String> {
    let mut command = cargo();
    command.args(["build", "--package", "pipewater-godot"]);
    if release {
        command.arg("--release");
    }
    run_command(&mut command)?;
    let profile = if release { "release" } else { "debug" };
    let built = target_dir().join(profile).join(library_file_name()?.0);
    if !built.is_file() {
        return Err(format!("cargo reported success but {} does not exist", built.display()));
    }
    let addon = root().join("addons/pipe_water");
    let installed = addon.join("bin").join(installed_name(profile)?);
    std::fs::create_dir_all(addon.join("bin")).map_err(|e| format!("creating {}: {e}", addon.join("bin").display()))?;
    // Copy to a temporary name and rename, so that a running editor never sees half a library.
    let partial = installed.with_extension("partial");
    std::fs::copy(&built, &partial).map_err(|e| format!("copying {} to {}: {e}", built.display(), partial.display()))?;
    std::fs::rename(&partial, &installed).map_err(|e| format!("renaming {} to {}: {e}", partial.display(), installed.display()))?;
    link_addon_into_demo(&addon)?;
    Ok(installed)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        }
        _ => root().join("target"),
    }
}

/// The library cargo builds on this platform, and the platform's name in `.gdextension` files.
fn library_file_name() -> Result<(&'static str, &'static str), String> {
    match std::env::consts::OS {
        "linux" => Ok(("libpipewater_godot.so", "linux")),
        "windows" => Ok(("pipewater_godot.dll", "windows")),
        "macos" => Ok(("libpipewater_godot.dylib", "macos")),
        other => Err(format!("no .gdextension entry for {other}: add one to addons/pipe_water/pipe_water.gdextension")),
    }
}

/// The file name `pipe_water.gdextension` expects for this platform and `profile`.
fn installed_name(profile: &str) -> Result<String, String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "arm64",
        other => return Err(format!("no .gdextension entry for architecture {other}")),
    };
    Ok(match library_file_name()?.1 {
        "linux" => format!("libpipewater_godot.linux.{profile}.{arch}.so"),
        "windows" => format!("pipewater_godot.windows.{profile}.{arch}.dll"),
        _ => format!("libpipewater_godot.macos.{profile}.dylib"),
    })
}

/// Makes `godot_project/addons/pipe_water` point at the addon (a symlink, or a copy elsewhere),
/// and lists the extension in `godot_project/.godot/extension_list.cfg` so that the first
/// headless import of a fresh checkout loads it at start (see
/// [`crate::godot_runs::seed_extension_list`]).
fn link_addon_into_demo(addon: &Path) -> Result<(), String> {
    let project = root().join("godot_project");
    if !project.is_dir() {
        return Ok(());
    }
    crate::godot_runs::seed_extension_list(&project)?;
    let addons = project.join("addons");
    std::fs::create_dir_all(&addons).map_err(|e| format!("creating {}: {e}", addons.display()))?;
    let link = addons.join("pipe_water");
    if let Ok(meta) = std::fs::symlink_metadata(&link) {
        if meta.file_type().is_symlink() {
            if std::fs::canonicalize(&link).ok().as_deref() == std::fs::canonicalize(addon).ok().as_deref() {
                return Ok(());
            }
            std::fs::remove_file(&link).map_err(|e| format!("removing {}: {e}", link.display()))?;
        } else if meta.is_dir() {
            std::fs::remove_dir_all(&link).map_err(|e| format!("removing the old copy {}: {e}", link.display()))?;
        } else {
            std::fs::remove_file(&link).map_err(|e| format!("removing {}: {e}", link.display()))?;
        }
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("../../addons/pipe_water", &link).map_err(|e| format!("linking {}: {e}", link.display()))
    }
    #[cfg(not(unix))]
    {
        copy_dir(addon, &link)
    }
}

#[cfg(not(unix))]
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}
