//! Command-line tools from PyPI (gdtoolkit; check-jsonschema and zizmor for the workflow check),
//! found on `PATH` or brought into a project-local virtual environment, so that `cargo xtask test`
//! needs nothing but Rust and Python on a fresh machine.
//!
//! Order: the commands on `PATH`; then `target/<name>-venv/bin/` (made by an earlier run); then,
//! when `python3 -m venv` works, a new virtual environment there with `pip install` of the tool's
//! pinned requirements. When none of that works the caller's layer is skipped with one `SKIP`
//! line, unless the tool's `PIPEWATER_REQUIRE_…=1` variable (set by `.ci/run`) makes it a
//! failure.

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Seconds pip waits for a connection before it gives up (offline machines should not hang).
const PIP_TIMEOUT_S: &str = "15";

/// One tool: what to install and which commands it provides.
pub struct PipTool {
    /// Name in messages and in the virtual environment's folder (`target/<name>-venv`).
    pub name: &'static str,
    /// The pip requirements that provide the commands.
    pub requirements: &'static [&'static str],
    /// The commands the layer runs; all must answer `--version`.
    pub commands: &'static [&'static str],
    /// Environment variable that turns a missing tool into a failure (CI sets it to 1).
    pub require_var: &'static str,
    /// Install wheels only (`pip install --only-binary=:all:`): no source package is built, so
    /// nothing but PyPI is reached and no compiler is needed.
    pub wheels_only: bool,
}

/// Where a tool's commands were found.
#[derive(Debug, Clone)]
pub struct Located {
    /// The commands, in the order of [`PipTool::commands`]: names on `PATH`, or paths.
    pub commands: Vec<PathBuf>,
}

impl PipTool {
    /// The project-local virtual environment.
    fn venv_dir(&self) -> PathBuf {
        root().join("target").join(format!("{}-venv", self.name))
    }

    /// The commands from `PATH`, from the project's virtual environment, or freshly installed
    /// there. `Err` says why none could be had (the caller decides whether that skips or fails).
    pub fn locate_or_install(&self) -> Result<Located, String> {
        if let Some(found) = self.locate() {
            return Ok(found);
        }
        let venv = self.venv_dir();
        self.install(&venv)?;
        self.from_dir(&venv.join("bin"))
            .ok_or_else(|| format!("pip installed {:?} into {} but {:?} do not run", self.requirements, venv.display(), self.commands))
    }

    /// The commands from `PATH` or from the virtual environment an earlier run made; `None` when
    /// neither has them. Installs nothing.
    pub fn locate(&self) -> Option<Located> {
        if self.commands.iter().all(|c| runs(Path::new(c))) {
            return Some(Located { commands: self.commands.iter().map(PathBuf::from).collect() });
        }
        self.from_dir(&self.venv_dir().join("bin"))
    }

    /// The commands in `bin`, if all of them run.
    fn from_dir(&self, bin: &Path) -> Option<Located> {
        let commands: Vec<PathBuf> = self.commands.iter().map(|c| bin.join(c)).collect();
        commands.iter().all(|c| runs(c)).then_some(Located { commands })
    }

    /// `python3 -m venv <venv>` and `pip install <requirements>` into it.
    fn install(&self, venv: &Path) -> Result<(), String> {
        let python = Command::new("python3").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !python.is_ok_and(|s| s.success()) {
            return Err(format!("{:?} are not on PATH and there is no python3 to install {} with", self.commands, self.name));
        }
        eprintln!("{}: not on PATH; installing {:?} into {}", self.name, self.requirements, venv.display());
        // A half-made environment from an interrupted run would fail the same way again.
        let _ = std::fs::remove_dir_all(venv);
        let made = Command::new("python3").args(["-m", "venv"]).arg(venv).stdout(Stdio::null()).status();
        if !made.is_ok_and(|s| s.success()) {
            return Err("python3 -m venv failed (on Debian the python3-venv package provides it)".into());
        }
        let pip = venv.join("bin/pip");
        let installed = Command::new(&pip)
            .args(["install", "--quiet", "--disable-pip-version-check", "--timeout", PIP_TIMEOUT_S, "--retries", "1"])
            .args(self.wheels_only.then_some("--only-binary=:all:"))
            .args(self.requirements)
            .status()
            .map_err(|e| format!("could not run {}: {e}", pip.display()))?;
        if !installed.success() {
            let _ = std::fs::remove_dir_all(venv);
            return Err(format!("pip install {:?} failed ({installed}); offline, or PyPI unreachable?", self.requirements));
        }
        Ok(())
    }

    /// Whether a missing tool is a failure rather than a skip.
    pub fn required(&self) -> bool {
        std::env::var(self.require_var).is_ok_and(|v| v == "1")
    }

    /// The tool for a test layer: `Ok(Some(_))` to run with, `Ok(None)` after printing one SKIP
    /// line for `layer`, or `Err` when the tool is missing and [`PipTool::required`].
    pub fn for_layer(&self, layer: &str) -> Result<Option<Located>, String> {
        match self.locate_or_install() {
            Ok(found) => Ok(Some(found)),
            Err(why) if self.required() => Err(format!("{why} ({}=1 requires {})", self.require_var, self.name)),
            Err(why) => {
                let requirements: Vec<String> = self.requirements.iter().map(|r| format!("'{r}'")).collect();
                let wheels = if self.wheels_only { "--only-binary=:all: " } else { "" };
                println!("SKIP: {layer} ({why}; `python3 -m pip install {wheels}{}` brings it)", requirements.join(" "));
                Ok(None)
            }
        }
    }
}

/// Whether `tool --version` runs.
pub fn runs(tool: &Path) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}
