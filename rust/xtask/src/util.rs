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

/// Gives the processes this task starts a private `XDG_RUNTIME_DIR` (`target/xdg-runtime`, mode
/// 0700) when none is set: Mesa's Vulkan drivers print `XDG_RUNTIME_DIR is invalid or not set`
/// for every process otherwise. A value already set is left alone. Returns the directory set, if
/// one was.
pub fn ensure_runtime_dir() -> Result<Option<PathBuf>, String> {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
        return Ok(None);
    }
    let dir = root().join("target/xdg-runtime");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| format!("chmod 700 {}: {e}", dir.display()))?;
    }
    // xtask has started no threads yet, so changing its own environment races with nothing.
    std::env::set_var("XDG_RUNTIME_DIR", &dir);
    Ok(Some(dir))
}
