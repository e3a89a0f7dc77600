//! Water written from elsewhere, exactly: what a multiplayer client does with the server's tiles
//! ([`crate::sync`]) so that its next step is the server's.

use super::Simulation;
use crate::error::{Error, Result};
use crate::quanta::MAX_DEPTH_QUANTA;
use crate::state::Counters;

/// One cell's water as another simulation holds it: depth (quanta) and the flows of its four
/// pipes ([`crate::State::flow`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellOverwrite {
    /// Row-major cell index.
    pub cell: u32,
    /// Depth, quanta, `0 ..= MAX_DEPTH_QUANTA`.
    pub depth: i32,
    /// Flows of the E, S, SE and SW pipes, finite.
    pub flow: [f32; 4],
}

impl Simulation {
    /// Frames run since the start or the last reset or load: one per [`Simulation::run_steps`]
    /// (an [`Simulation::advance`] that ran at least one step). A multiplayer server's clock.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Sets the depth and pipe flows of `cells` to exactly the values given (the bits of the
    /// flows kept), so that the next step runs from them as it would have in the simulation
    /// they came from. The depth changed is booked as added or removed water, so the ledger
    /// still balances. Refuses, changing nothing, a cell off the grid, a depth out of range or
    /// a flow that is not finite.
    ///
    /// On the CPU and wgpu backends only the cells given are touched (their tiles wake, as
    /// after an edit; on wgpu one small upload and a dispatch, `shaders/overwrite.wgsl`, with
    /// no wait for the device); a backend without such a write reads the whole state and
    /// writes it back.
    pub fn overwrite_cells(&mut self, cells: &[CellOverwrite]) -> Result<()> {
        let n = self.grid.cell_count();
        for c in cells {
            if c.cell as usize >= n {
                return Err(Error::invalid("cell", c.cell, format!("0 ..= {} (cells of this grid)", n - 1)));
            }
            if !(0..=MAX_DEPTH_QUANTA).contains(&c.depth) {
                return Err(Error::invalid("depth", c.depth, format!("0 ..= {MAX_DEPTH_QUANTA} quanta")));
            }
            if let Some(f) = c.flow.iter().find(|f| !f.is_finite()) {
                return Err(Error::invalid("flow", f, "a finite number"));
            }
        }
        if cells.is_empty() {
            return Ok(());
        }
        self.refuse_while_restoring("overwrite_cells")?;
        if self.on_backend(|b| b.overwrite_cells(cells))? {
            return Ok(());
        }
        let mut state = self.on_backend(|b| b.read_state())?;
        let counters = self.on_backend(|b| b.read_counters())?;
        let booked = write_overwrites(&mut state.depth, &mut state.flow, cells, |_| {});
        let frames = self.frames;
        self.on_backend(|b| b.restore(&state, counters.wrapping_add(booked), frames))
    }
}

/// Writes `cells` (on the grid, checked by the caller) into row-major `depth` and `flow`,
/// calling `changed` with each cell whose water it changed, and returns the depth that changed
/// as the water added and removed the ledger books: the one way a backend and the whole-state
/// fallback of [`Simulation::overwrite_cells`] set cells.
pub(crate) fn write_overwrites(depth: &mut [i32], flow: &mut [[f32; 4]], cells: &[CellOverwrite], mut changed: impl FnMut(u32)) -> Counters {
    let (mut added, mut removed) = (0u64, 0u64);
    for c in cells {
        let i = c.cell as usize;
        let (Some(d), Some(f)) = (depth.get_mut(i), flow.get_mut(i)) else { continue };
        if *d == c.depth && f.map(f32::to_bits) == c.flow.map(f32::to_bits) {
            continue;
        }
        let diff = c.depth as i64 - *d as i64;
        if diff > 0 {
            added += diff as u64;
        } else {
            removed += diff.unsigned_abs();
        }
        (*d, *f) = (c.depth, c.flow);
        changed(c.cell);
    }
    Counters { added, removed, ..Counters::default() }
}
