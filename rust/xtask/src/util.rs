//! Small helpers shared by the tasks: locating the workspace and running commands.

use std::path::PathBuf;
use std::process::Command;

/// The workspace root (the parent of `rust/xtask`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}

/// Runs a command in the workspace root, echoing it; an error when it fails.
pub fn run(command: &mut Command) -> Result<(), String> {
    command.current_dir(root());
    eprintln!("$ {command:?}");
    let status = command.status().map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}

/// `cargo` as invoked by the user (respects the CARGO variable).
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}
