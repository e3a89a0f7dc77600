//! `cargo xtask …`: the project's tasks.
//!
//! - `cargo xtask test`  — every test layer that exists (Rust, shaders, GDScript, and the Godot
//!   tests on each Godot binary in `GODOT` and `GODOT_EXTRA`).
//! - `cargo xtask bench` — cell-steps per second of each backend; see docs/BENCHMARKS.md.
//! - `cargo xtask build` — builds the GDExtension and installs it into addons/pipe_water/bin/.
//! - `cargo xtask demo`  — builds and launches the demo, or renders it headless without Godot.
//! - `cargo xtask validate` — the model against the shallow-water equations' exact answers.
//! - `cargo xtask package` — the release zip of the addon, `target/package/pipe_water-<version>.zip`.

mod bench;
mod build;
mod demo;
mod demo_render;
mod gdextension;
mod gdtoolkit;
mod godot;
mod godot_runs;
mod package;
mod pip_tools;
mod test;
mod util;
mod validate;
mod verdict;
mod workflow_check;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => ("help", &[][..]),
    };
    if let Err(why) = util::ensure_runtime_dir() {
        eprintln!("xtask: {why}");
        return ExitCode::FAILURE;
    }
    let result = match task {
        "test" => test::run(rest),
        "bench" => bench::run(rest),
        "build" => build::run(rest),
        "demo" => demo::run(rest),
        "validate" => validate::run(rest),
        "package" => package::run(rest),
        _ => {
            eprintln!("usage: cargo xtask <test|bench|build|demo|validate|package> [options]\n\n{}", HELP);
            return if task == "help" || task == "--help" { ExitCode::SUCCESS } else { ExitCode::FAILURE };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("xtask {task}: {why}");
            ExitCode::FAILURE
        }
    }
}

const HELP: &str = "\
  test    run every test layer (the workflow check with check-jsonschema and zizmor, and actionlint when it is
          on PATH; cargo test, shader validation, gdtoolkit, the release zip built from the debug library, and
          the Godot tests when GODOT is set); missing Python tools are installed into target/<tool>-venv
          (gdtoolkit-venv, workflow-check-venv) or skipped with one SKIP line (PIPEWATER_REQUIRE_GDTOOLKIT=1
          and PIPEWATER_REQUIRE_WORKFLOW_CHECK=1 make that a failure, as PIPEWATER_REQUIRE_GPU=1 does for
          the GPU)
          GODOT=<godot>               the Godot 4.3+ binary the Godot tests run on
          GODOT_EXTRA=<godot>:<godot> more binaries, ':'-separated: every Godot layer (import, node tests,
                                      demo smoke, editor checks, RenderingDevice tests, water shader,
                                      the release zip in a fresh project) runs on each, in a
                                      fresh copy of the project under target/godot-versions/, and one result
                                      line per version is printed; a failure on any version fails the run
          --godot                     only the Godot tests
          --workflows                 only the workflow check
  bench   measure cell-steps per second: --backend cpu|gpu|all, --sizes 256,1024, --steps N, --no-advection
  build   build the GDExtension (--release for release) and install it into addons/pipe_water/bin/ under the name
          pipe_water.gdextension gives it; --strip leaves symbols out; --target <triple> builds for another
          platform (two apple-darwin triples make one universal macOS framework)
  package build this machine's stripped debug and release libraries and write target/package/pipe_water-<version>.zip
          (addons/pipe_water/ with LICENSE, checked after writing); --prebuilt zips the libraries already in
          addons/pipe_water/bin/ and requires every platform's (the release workflow's last step)
  demo    build the addon and launch the demo with $GODOT, or render it headless into target/demo/
  validate  run the dam breaks of docs/VALIDATION.md and draw their profiles into docs/validation/";
