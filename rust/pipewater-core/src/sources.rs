//! Sources and drains as the simulation keeps (and saves) them: plain records, below both
//! [`crate::simulation`], which adds, moves and runs them, and [`crate::save`], which writes and
//! reads them.

/// Largest source or drain rate, m³/s (magnitude).
pub const MAX_SOURCE_RATE: f32 = 1.0e6;

/// Identifies a source or drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(pub u32);

/// A source or drain: where, how much, and what it still owes.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) id: SourceId,
    /// Cells and their share of the rate (shares sum to 1).
    pub(crate) cells: Vec<(u32, f64)>,
    /// m³/s; negative drains.
    pub(crate) rate: f32,
    /// Quanta owed from earlier frames (the fractions that did not make a whole quantum).
    pub(crate) carry: f64,
}
