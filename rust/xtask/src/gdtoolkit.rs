//! Finding gdtoolkit (`gdparse`, `gdlint`), or bringing it into a project-local virtual
//! environment, so that `cargo xtask test` needs nothing but Rust on a fresh machine.
//!
//! Order: the commands on `PATH`; then `target/gdtoolkit-venv/bin/` (made by an earlier run);
//! then, when `python3 -m venv` works, a new virtual environment there with
//! `pip install 'gdtoolkit==4.*'`. When none of that works the GDScript layer is skipped with one
//! `SKIP` line, unless `PIPEWATER_REQUIRE_GDTOOLKIT=1` (set by `.ci/run`) makes it a failure.

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The pip requirement that provides `gdlint` and `gdparse`.
pub const GDTOOLKIT: &str = "gdtoolkit==4.*";
/// The commands the GDScript layer runs.
pub const TOOLS: [&str; 2] = ["gdparse", "gdlint"];
/// Environment variable that turns a missing gdtoolkit into a failure (CI sets it to 1).
pub const REQUIRE_VAR: &str = "PIPEWATER_REQUIRE_GDTOOLKIT";
/// Seconds pip waits for a connection before it gives up (offline machines should not hang).
const PIP_TIMEOUT_S: &str = "15";

/// Where the tools are: the commands to run for `gdparse` and `gdlint`.
pub struct Gdtoolkit {
    /// `gdparse`, as a command name on `PATH` or a path.
    pub gdparse: PathBuf,
    /// `gdlint`, likewise.
    pub gdlint: PathBuf,
}

/// The project-local virtual environment.
fn venv_dir() -> PathBuf {
    root().join("target/gdtoolkit-venv")
}

/// Whether `tool --version` runs.
fn runs(tool: &Path) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The tools in `bin`, if both run.
fn from_dir(bin: &Path) -> Option<Gdtoolkit> {
    let found = Gdtoolkit { gdparse: bin.join(TOOLS[0]), gdlint: bin.join(TOOLS[1]) };
    (runs(&found.gdparse) && runs(&found.gdlint)).then_some(found)
}

/// gdtoolkit from `PATH`, from the project's virtual environment, or freshly installed there.
/// `Err` says why none could be had (the caller decides whether that skips or fails).
pub fn locate_or_install() -> Result<Gdtoolkit, String> {
    let on_path = Gdtoolkit { gdparse: TOOLS[0].into(), gdlint: TOOLS[1].into() };
    if runs(&on_path.gdparse) && runs(&on_path.gdlint) {
        return Ok(on_path);
    }
    let venv = venv_dir();
    if let Some(found) = from_dir(&venv.join("bin")) {
        return Ok(found);
    }
    install(&venv)?;
    from_dir(&venv.join("bin")).ok_or_else(|| format!("pip installed '{GDTOOLKIT}' into {} but gdparse/gdlint do not run", venv.display()))
}

/// `python3 -m venv <venv>` and `pip install 'gdtoolkit==4.*'` into it.
fn install(venv: &Path) -> Result<(), String> {
    let python = Command::new("python3").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !python.is_ok_and(|s| s.success()) {
        return Err("gdparse/gdlint are not on PATH and there is no python3 to install gdtoolkit with".into());
    }
    eprintln!("gdtoolkit: not on PATH; installing '{GDTOOLKIT}' into {}", venv.display());
    // A half-made environment from an interrupted run would fail the same way again.
    let _ = std::fs::remove_dir_all(venv);
    let made = Command::new("python3").args(["-m", "venv"]).arg(venv).stdout(Stdio::null()).status();
    if !made.is_ok_and(|s| s.success()) {
        return Err("python3 -m venv failed (on Debian the python3-venv package provides it)".into());
    }
    let pip = venv.join("bin/pip");
    let installed = Command::new(&pip)
        .args(["install", "--quiet", "--disable-pip-version-check", "--timeout", PIP_TIMEOUT_S, "--retries", "1", GDTOOLKIT])
        .status()
        .map_err(|e| format!("could not run {}: {e}", pip.display()))?;
    if !installed.success() {
        let _ = std::fs::remove_dir_all(venv);
        return Err(format!("pip install '{GDTOOLKIT}' failed ({installed}); offline, or PyPI unreachable?"));
    }
    Ok(())
}

/// Whether a missing gdtoolkit is a failure rather than a skip.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}
