//! gdtoolkit (`gdparse`, `gdlint`) for the GDScript layer, found or installed by
//! [`crate::pip_tools`]: on `PATH`, else in `target/gdtoolkit-venv/` with
//! `pip install 'gdtoolkit==4.*'`. Without it the layer prints one `SKIP` line, unless
//! `PIPEWATER_REQUIRE_GDTOOLKIT=1` (set by `.ci/run`) makes it a failure.

use crate::pip_tools::PipTool;
use std::path::PathBuf;

/// The pip requirement that provides `gdlint` and `gdparse`.
pub const GDTOOLKIT: &str = "gdtoolkit==4.*";
/// gdtoolkit as [`crate::pip_tools`] installs it.
pub const TOOL: PipTool = PipTool { name: "gdtoolkit", requirements: &[GDTOOLKIT], commands: &["gdparse", "gdlint"], require_var: REQUIRE_VAR, wheels_only: false };
/// Environment variable that turns a missing gdtoolkit into a failure (CI sets it to 1).
pub const REQUIRE_VAR: &str = "PIPEWATER_REQUIRE_GDTOOLKIT";

/// Where the tools are: the commands to run for `gdparse` and `gdlint`.
pub struct Gdtoolkit {
    /// `gdparse`, as a command name on `PATH` or a path.
    pub gdparse: PathBuf,
    /// `gdlint`, likewise.
    pub gdlint: PathBuf,
}

/// gdtoolkit for the GDScript layer: `None` after a SKIP line, `Err` when it is required and
/// missing.
pub fn for_layer() -> Result<Option<Gdtoolkit>, String> {
    Ok(TOOL.for_layer("GDScript checks with gdtoolkit")?.map(|found| Gdtoolkit { gdparse: found.commands[0].clone(), gdlint: found.commands[1].clone() }))
}
