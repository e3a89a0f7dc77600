//! `cargo xtask test`: every test layer, failing when any fails.

use crate::util::{cargo, run as run_command};

pub fn run_all() -> Result<(), String> {
    run_command(cargo().args(["test", "--workspace", "--all-targets"]))?;
    crate::godot::check_gdscript()?;
    crate::godot::run_headless_tests()?;
    Ok(())
}

pub fn run(_args: &[String]) -> Result<(), String> {
    run_all()
}
