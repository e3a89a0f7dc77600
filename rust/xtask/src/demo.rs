//! `cargo xtask demo`: launches the demo, or renders it headless when no Godot is found.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("not written yet".into())
}
