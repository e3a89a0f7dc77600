//! The wgpu backend. (Being written: until then it reports that no GPU backend is available.)

use super::{Backend, BackendKind, CellTerrain, CellWater, EditOutcome, FramePlan};
use crate::error::{Error, Result};
use crate::state::{Counters, Snapshot, State};
use std::sync::Arc;

/// The GPU backend.
pub struct GpuBackend {
    _private: (),
}

impl GpuBackend {
    /// Creates the backend on the process-wide device.
    pub fn new(_state: &State) -> Result<Self> {
        Err(Error::GpuUnavailable("the wgpu backend is not implemented yet".into()))
    }
}

impl Backend for GpuBackend {
    fn kind(&self) -> BackendKind { BackendKind::Gpu }
    fn description(&self) -> String { String::new() }
    fn load(&mut self, _state: &State) -> Result<()> { unreachable!() }
    fn edit_water(&mut self, _cells: &[CellWater]) -> Result<EditOutcome> { unreachable!() }
    fn edit_terrain(&mut self, _cells: &[CellTerrain]) -> Result<()> { unreachable!() }
    fn set_terrain(&mut self, _terrain: &[f32]) -> Result<()> { unreachable!() }
    fn advance(&mut self, _plan: &FramePlan) -> Result<()> { unreachable!() }
    fn snapshot(&mut self) -> Option<Arc<Snapshot>> { unreachable!() }
    fn read_state(&mut self) -> Result<State> { unreachable!() }
    fn read_counters(&mut self) -> Result<Counters> { unreachable!() }
}
