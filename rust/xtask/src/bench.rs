//! `cargo xtask bench`: cell-steps per second of each backend.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("not written yet".into())
}
