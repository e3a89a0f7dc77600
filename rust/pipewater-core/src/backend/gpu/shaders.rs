//! The WGSL sources of the GPU backend: one file per pass family in `shaders/`, each compiled
//! with `common.wgsl` (the constants struct and the helpers every pass shares) in front of it.

/// Declarations shared by every pass family.
pub const COMMON: &str = include_str!("../../../../../shaders/common.wgsl");
/// The step of [`crate::pipes`] in one pass, streamed down strips of columns.
pub const STEP: &str = include_str!("../../../../../shaders/step_columns.wgsl");
/// Water and terrain edits, sources and drains.
pub const EDITS: &str = include_str!("../../../../../shaders/edits.wgsl");
/// Bodies: their displacement of the step's bed and their drag on the pipes.
pub const BODIES: &str = include_str!("../../../../../shaders/bodies.wgsl");
/// Sleeping tiles: the list of tiles each step runs.
pub const TILES: &str = include_str!("../../../../../shaders/tiles.wgsl");
/// Snapshot texels and the reductions (total water, largest depth and speed).
pub const SNAPSHOT: &str = include_str!("../../../../../shaders/snapshot.wgsl");
/// The detail wave layer ([`crate::detail`]), with `snapshot.wgsl` in front: it reads each flow
/// cell through the snapshot's `cell_texels`.
pub const DETAIL: &str = concat!(include_str!("../../../../../shaders/snapshot.wgsl"), "\n", include_str!("../../../../../shaders/detail.wgsl"));

/// Every pass family by file name, as compiled: `common.wgsl` followed by the file (and what it
/// has in front).
pub fn pass_families() -> [(&'static str, String); 6] {
    [
        ("step_columns.wgsl", with_common(STEP)),
        ("tiles.wgsl", with_common(TILES)),
        ("edits.wgsl", with_common(EDITS)),
        ("bodies.wgsl", with_common(BODIES)),
        ("snapshot.wgsl", with_common(SNAPSHOT)),
        ("detail.wgsl", with_common(DETAIL)),
    ]
}

/// `common.wgsl` followed by `source`.
pub fn with_common(source: &str) -> String {
    format!("{COMMON}\n{source}")
}
