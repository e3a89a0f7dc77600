//! Sources and drains: placing them, their rates and the checks that a rate fits a cell.

use super::Simulation;
use crate::error::{check_range, Error, Result};
use crate::params::LONGEST_STEP;
use crate::quanta::MAX_DEPTH;
use crate::sources::{Source, SourceId, MAX_SOURCE_RATE};

impl Simulation {
    /// Adds a source (`rate` > 0) or drain (`rate` < 0) of `|rate|` m³/s spread over the cells
    /// within `radius` m of local point `(x, z)`. A drain never removes more than is there; a
    /// source stops adding to a cell that holds [`MAX_DEPTH`] (the ledger counts what entered).
    ///
    /// Refused when the rate itself cannot fit: more than [`MAX_DEPTH`] m of water for its
    /// heaviest cell within one step of up to [`LONGEST_STEP`] s (the error names the limit
    /// and the largest rate for that footprint).
    pub fn add_source(&mut self, x: f32, z: f32, rate: f32, radius: f32) -> Result<SourceId> {
        Self::check_point(x, z)?;
        check_range("rate", rate, -MAX_SOURCE_RATE, MAX_SOURCE_RATE)?;
        self.check_edit(0.0, radius)?;
        let cells = self.source_cells(x, z, radius)?;
        self.check_source_rate(rate, &cells)?;
        let id = SourceId(self.next_source_id);
        // Only a state restored from a crafted save starts this near the end of the ids.
        let Some(next) = self.next_source_id.checked_add(1) else {
            return Err(Error::invalid("source id", self.next_source_id, format!("1 ..= {}: every source id has been used (remove sources and restart from a state with fewer)", u32::MAX - 1)));
        };
        self.next_source_id = next;
        self.sources.push(Source { id, cells, rate, carry: 0.0 });
        Ok(id)
    }

    /// Moves a source or drain to local point `(x, z)` with a new `radius` (m), keeping its id,
    /// rate and remainder. False when no such source exists.
    pub fn move_source(&mut self, id: SourceId, x: f32, z: f32, radius: f32) -> Result<bool> {
        Self::check_point(x, z)?;
        self.check_edit(0.0, radius)?;
        let cells = self.source_cells(x, z, radius)?;
        let Some(index) = self.sources.iter().position(|s| s.id == id) else { return Ok(false) };
        // A smaller footprint gives its heaviest cell a larger share of the same rate.
        self.check_source_rate(self.sources[index].rate, &cells)?;
        self.sources[index].cells = cells;
        Ok(true)
    }

    /// The cells of a source within `radius` m of local `(x, z)` and their shares of its rate.
    pub(super) fn source_cells(&self, x: f32, z: f32, radius: f32) -> Result<Vec<(u32, f64)>> {
        let footprint = self.lattice().footprint(x, z, radius);
        if footprint.is_empty() {
            return Err(Error::invalid("position", format!("({x}, {z})"), "a point whose radius reaches the grid"));
        }
        let total: f64 = footprint.iter().map(|&(_, w)| w as f64).sum();
        Ok(footprint.into_iter().map(|(c, w)| (c, w as f64 / total)).collect())
    }

    /// Changes the rate of a source, m³/s (refused like [`Simulation::add_source`]'s). False
    /// when no such source exists.
    pub fn set_source_rate(&mut self, id: SourceId, rate: f32) -> Result<bool> {
        check_range("rate", rate, -MAX_SOURCE_RATE, MAX_SOURCE_RATE)?;
        let Some(index) = self.sources.iter().position(|s| s.id == id) else { return Ok(false) };
        self.check_source_rate(rate, &self.sources[index].cells)?;
        self.sources[index].rate = rate;
        Ok(true)
    }

    /// Refuses a source or drain rate that would move more than [`MAX_DEPTH`] m of water in or out
    /// of its heaviest cell (`cells`: cells and shares) in one step of [`LONGEST_STEP`] s.
    pub(super) fn check_source_rate(&self, rate: f32, cells: &[(u32, f64)]) -> Result<()> {
        let share = cells.iter().map(|&(_, share)| share).fold(0.0, f64::max);
        let area = self.lattice().cell_area();
        let per_step = rate.abs() as f64 * share * LONGEST_STEP as f64 / area;
        if per_step <= MAX_DEPTH as f64 {
            return Ok(());
        }
        let fits = (MAX_DEPTH as f64 * area / (share * LONGEST_STEP as f64) * 1000.0).floor() / 1000.0;
        Err(Error::invalid(
            "rate",
            format!("{rate} m³/s"),
            format!(
                "-{fits} ..= {fits} m³/s for this footprint: its heaviest cell takes {:.1} % of the rate, and a cell may gain at most the {MAX_DEPTH} m of water it holds in one step of up to {LONGEST_STEP} s (spread it over a larger radius)",
                share * 100.0
            ),
        ))
    }

    /// Removes a source. False when no such source exists.
    pub fn remove_source(&mut self, id: SourceId) -> bool {
        let before = self.sources.len();
        self.sources.retain(|s| s.id != id);
        self.sources.len() != before
    }

    /// Ids of the sources and drains in place.
    pub fn source_ids(&self) -> Vec<SourceId> {
        self.sources.iter().map(|s| s.id).collect()
    }
}
