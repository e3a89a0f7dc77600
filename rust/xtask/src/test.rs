//! `cargo xtask test`: every test layer, failing when any fails.
//!
//! `--godot` runs only the Godot layers (for the binaries in `GODOT` and `GODOT_EXTRA`).

use crate::util::{cargo, run as run_command};

pub fn run_all() -> Result<(), String> {
    run_command(cargo().args(["test", "--workspace", "--all-targets"]))?;
    crate::godot::check_gdscript()?;
    crate::godot::run_headless_tests()?;
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    match args {
        [] => run_all(),
        [only] if only == "--godot" => crate::godot::run_headless_tests(),
        _ => Err(format!("unknown options {args:?}: usage `cargo xtask test [--godot]`")),
    }
}
