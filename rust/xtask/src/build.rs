//! `cargo xtask build`: builds the GDExtension and installs it into the addon.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("not written yet".into())
}
