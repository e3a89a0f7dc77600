//! A multiplayer client's write of the server's tiles on Godot's RenderingDevice
//! ([`Backend::overwrite_cells`]): as on wgpu, the cells given (each its depth and four flows'
//! bits) go up in one small list and `shaders/overwrite.wgsl` scatters them into the copy that
//! holds the state, booking the depth changed in the ledger on the device; the host marks their
//! tiles to step next ([`GpuHost::overwrites`]). No whole state crosses between host and device,
//! nothing waits for the GPU, and only the tiles written wake (a whole read and restore, before,
//! waited twice for the GPU and woke every tile).
//!
//! Recorded in a compute list of its own after the edits queued before it, so it lands between
//! the frame before and the frame after, as on the CPU and wgpu. The list is made with the
//! backend's other lists, small, and grows with the first keyframe.
//!
//! [`Backend::overwrite_cells`]: pipewater_core::backend::Backend::overwrite_cells
//! [`GpuHost::overwrites`]: pipewater_core::backend::gpu_host::GpuHost::overwrites

use super::{ListId, RdBackend, WaterList, ENTRY_OVERWRITE_CELLS};
use pipewater_core::backend::gpu::list_workgroups;
use pipewater_core::backend::gpu::overwrite::OVERWRITE_WORKGROUP;
use pipewater_core::simulation::CellOverwrite;
use pipewater_core::Result;

impl RdBackend {
    /// [`pipewater_core::backend::Backend::overwrite_cells`]: the queued edits, then the write,
    /// each in a compute list of its own.
    pub(super) fn overwrite_cells_now(&mut self, cells: &[CellOverwrite]) -> Result<bool> {
        let mut rd = self.check_device()?;
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let items = self.host.overwrites(cells);
        if items.is_empty() {
            return Ok(true);
        }
        self.fill_list(ListId::Overwrites, bytemuck::cast_slice(&items))?;
        let groups = [list_workgroups(items.len(), OVERWRITE_WORKGROUP, self.max_workgroups), 1];
        let list = rd.compute_list_begin();
        let recorded = self.dispatch(&mut rd, list, ENTRY_OVERWRITE_CELLS, WaterList::User, groups);
        rd.compute_list_end();
        recorded?;
        Ok(true)
    }
}
