//! `cargo xtask test`: every test layer, failing when any fails: the workflows' static check,
//! `cargo test` (and the core's tests again without its default `gpu` feature), the GDScript
//! checks, the release zip (built from the stripped debug library, checked and unzipped into a
//! fresh project), and the Godot layers.
//!
//! The workflow check comes first: it installs its tools, which xtask's own unit tests (run by
//! `cargo test`) then find, so that with `PIPEWATER_REQUIRE_WORKFLOW_CHECK=1` on a fresh machine
//! those tests run instead of failing for want of tools.
//!
//! `--godot` runs only the Godot layers (for the binaries in `GODOT` and `GODOT_EXTRA`),
//! `--workflows` only the workflow check.

use crate::util::{cargo, run as run_command};

pub fn run_all() -> Result<(), String> {
    crate::workflow_check::check_workflows()?;
    run_command(cargo().args(["test", "--workspace", "--all-targets"]))?;
    // The core without the GPU, as a dedicated server or a web build takes it: it must build and
    // pass on its own, not only with the features the workspace's other members switch on.
    run_command(cargo().args(["test", "-p", "pipewater-core", "--no-default-features", "--all-targets"]))?;
    crate::godot::check_gdscript()?;
    let package = crate::package::test_package()?;
    crate::godot::run_headless_tests(Some(&package))?;
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    match args {
        [] => run_all(),
        [only] if only == "--godot" => crate::godot::run_headless_tests(None),
        [only] if only == "--workflows" => crate::workflow_check::check_workflows(),
        _ => Err(format!("unknown options {args:?}: usage `cargo xtask test [--godot | --workflows]`")),
    }
}
