//! `cargo xtask test`: every test layer, failing when any fails: `cargo test`, the GDScript
//! checks, the release workflow's static check, the release zip (built from the stripped debug
//! library, checked and unzipped into a fresh project), and the Godot layers.
//!
//! `--godot` runs only the Godot layers (for the binaries in `GODOT` and `GODOT_EXTRA`).

use crate::util::{cargo, run as run_command};

pub fn run_all() -> Result<(), String> {
    run_command(cargo().args(["test", "--workspace", "--all-targets"]))?;
    crate::godot::check_gdscript()?;
    crate::actionlint::check_workflows()?;
    let package = crate::package::test_package()?;
    crate::godot::run_headless_tests(Some(&package))?;
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    match args {
        [] => run_all(),
        [only] if only == "--godot" => crate::godot::run_headless_tests(None),
        _ => Err(format!("unknown options {args:?}: usage `cargo xtask test [--godot]`")),
    }
}
