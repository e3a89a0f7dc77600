//! The WGSL sources of the GPU backends: one file per pass family in `shaders/`, each compiled
//! with the shared fragments it lists in front of it: `common.wgsl` (the constants structs and
//! the helpers every pass shares) and, for the passes that move water, `ledger_counters.wgsl`.
//! Each WGSL function is written once, in one file. Both GPU backends (wgpu here, Godot's
//! RenderingDevice in pipewater-godot) compile a family through [`Family::source`], so they run
//! the same WGSL.

/// One WGSL file of `shaders/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    /// File name in `shaders/`.
    pub file: &'static str,
    /// Its text.
    pub text: &'static str,
}

/// The [`Fragment`] of a file in `shaders/`.
macro_rules! fragment {
    ($file:literal) => {
        Fragment { file: $file, text: include_str!(concat!("../../../../../shaders/", $file)) }
    };
}

/// Declarations shared by every pass family.
pub const COMMON: Fragment = fragment!("common.wgsl");
/// `count`, which adds to the ledger's 64-bit counters, for the families that bind `counters`
/// and move water (the step, the edits).
pub const LEDGER_COUNTERS: Fragment = fragment!("ledger_counters.wgsl");
/// `snapshot.wgsl` (the detail layer reads each flow cell through its `cell_texels`).
pub const SNAPSHOT_FILE: Fragment = fragment!("snapshot.wgsl");
/// How `snapshot.wgsl`'s `cell_texels` reads a dense grid's fields (a world's pages read them
/// through [`TEXELS_PAGED`]).
pub const TEXELS_DENSE: Fragment = fragment!("texels_dense.wgsl");
/// How `snapshot.wgsl`'s `cell_texels` reads a world's pages, with the bindings of the page
/// layout: the alternative to [`TEXELS_DENSE`], defining the same functions.
pub const TEXELS_PAGED: Fragment = fragment!("texels_paged.wgsl");

/// A pass family as compiled: its fragments in order, the shared ones first and the file that
/// holds its entry points last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The fragments, joined by newlines in this order.
    pub fragments: &'static [Fragment],
}

impl Family {
    /// The file that holds the family's entry points (its last fragment), which names it.
    pub fn file(&self) -> &'static str {
        self.fragments[self.fragments.len() - 1].file
    }

    /// The WGSL compiled for the family.
    pub fn source(&self) -> String {
        self.fragments.iter().map(|f| f.text).collect::<Vec<_>>().join("\n")
    }

    /// The WGSL compiled for the family with its own file replaced by `own` (a variant of the
    /// kernel read at run time, for benchmarks), the shared fragments as usual.
    pub fn source_with(&self, own: &str) -> String {
        let shared = &self.fragments[..self.fragments.len() - 1];
        shared.iter().map(|f| f.text).chain([own]).collect::<Vec<_>>().join("\n")
    }
}

/// Where a cell's fields lie in a dense grid's buffers, for the step and the plan.
pub const CELLS_DENSE: Fragment = fragment!("cells_dense.wgsl");
/// Where a cell's fields lie in a world's pages ([`super::world`]), for the step and the plan.
pub const CELLS_PAGED: Fragment = fragment!("cells_paged.wgsl");
/// The step kernel's own file.
pub const STEP_FILE: Fragment = fragment!("step_columns.wgsl");
/// The sleeping tiles' own file.
pub const TILES_FILE: Fragment = fragment!("tiles.wgsl");

/// The step of [`crate::pipes`] in one pass, streamed down strips of columns.
pub const STEP: Family = Family { fragments: &[COMMON, LEDGER_COUNTERS, CELLS_DENSE, STEP_FILE] };
/// The step over a world stored in pages.
pub const WORLD_STEP: Family = Family { fragments: &[COMMON, LEDGER_COUNTERS, CELLS_PAGED, STEP_FILE] };
/// Water and terrain edits, sources and drains.
pub const EDITS: Family = Family { fragments: &[COMMON, LEDGER_COUNTERS, fragment!("edits.wgsl")] };
/// Bodies: their displacement of the step's bed and their drag on the pipes.
pub const BODIES: Family = Family { fragments: &[COMMON, fragment!("bodies.wgsl")] };
/// Sleeping tiles: the list of tiles each step runs.
pub const TILES: Family = Family { fragments: &[COMMON, CELLS_DENSE, TILES_FILE] };
/// The sleeping tiles of a world stored in pages: a page steps only when its neighbours hold
/// their fields.
pub const WORLD_TILES: Family = Family { fragments: &[COMMON, CELLS_PAGED, TILES_FILE] };
/// Snapshot texels and the reductions (total water, largest depth and speed).
pub const SNAPSHOT: Family = Family { fragments: &[COMMON, TEXELS_DENSE, SNAPSHOT_FILE] };
/// The detail wave layer ([`crate::detail`]), with `snapshot.wgsl` in front: it reads each flow
/// cell through the snapshot's `cell_texels`.
pub const DETAIL: Family = Family { fragments: &[COMMON, TEXELS_DENSE, SNAPSHOT_FILE, fragment!("detail.wgsl")] };
/// The far water of a world in pages ([`super::world::World::begin_coarse`]): the snapshot's
/// `cell_texels` read from the pages, summed over blocks of cells.
pub const WORLD_COARSE: Family = Family { fragments: &[COMMON, TEXELS_PAGED, SNAPSHOT_FILE, fragment!("world_coarse.wgsl")] };
/// The flow region under a world's detail window gathered from the pages into dense buffers
/// ([`super::world::World::set_detail_layer`]), which [`DETAIL`] then reads as its flow grid: the
/// snapshot's reads of the pages, as [`WORLD_COARSE`]'s.
pub const WORLD_DETAIL: Family = Family { fragments: &[COMMON, TEXELS_PAGED, SNAPSHOT_FILE, fragment!("world_detail.wgsl")] };

/// Cooling ([`crate::cooling`]): still fluid turned into ground after a frame, judged for every
/// cell before any changes.
pub const COOLING: Family = Family { fragments: &[COMMON, LEDGER_COUNTERS, fragment!("cooling.wgsl")] };

/// The tiles whose water changed since a multiplayer server's last capture, compared on the
/// device and read back alone ([`super::tile_changes`]).
pub const TILE_CHANGES: Family = Family { fragments: &[COMMON, fragment!("tile_changes.wgsl")] };

/// Cells set to another simulation's water, a multiplayer client's copy of the server's tiles
/// ([`super::overwrite`]).
pub const OVERWRITE: Family = Family { fragments: &[COMMON, LEDGER_COUNTERS, fragment!("overwrite.wgsl")] };

/// Every pass family.
pub const FAMILIES: [Family; 11] = [STEP, TILES, EDITS, BODIES, SNAPSHOT, DETAIL, COOLING, TILE_CHANGES, OVERWRITE, WORLD_COARSE, WORLD_DETAIL];
