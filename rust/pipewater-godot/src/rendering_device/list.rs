//! The one growable list on Godot's RenderingDevice: records in the core's [`list_bytes`] layout
//! (`[count, pad…, items…]`), the buffer replaced by a larger one when the items outgrow it. The
//! backend's edit, forcing, body and tile lists and the detail layer's lists are all one.

use godot::classes::RenderingDevice;
use godot::prelude::*;
use pipewater_core::backend::pending::{list_bytes, list_header_bytes};

use super::update;

/// A list of records on the device.
pub(crate) struct DeviceList {
    pub(crate) buffer: Rid,
    capacity_bytes: usize,
    item_bytes: usize,
}

impl DeviceList {
    /// Room for `capacity` records of `item_bytes`.
    pub(crate) fn new(rd: &mut Gd<RenderingDevice>, capacity: usize, item_bytes: usize) -> Self {
        let capacity_bytes = list_header_bytes(item_bytes) + capacity * item_bytes;
        DeviceList { buffer: rd.storage_buffer_create(capacity_bytes as u32), capacity_bytes, item_bytes }
    }

    /// Uploads `items` (whole records); true when the buffer was replaced (the old one freed), so
    /// that uniform sets naming it are stale.
    pub(crate) fn fill(&mut self, rd: &mut Gd<RenderingDevice>, items: &[u8]) -> bool {
        let bytes = list_bytes(items, self.item_bytes);
        let replaced = bytes.len() > self.capacity_bytes;
        if replaced {
            rd.free_rid(self.buffer);
            self.capacity_bytes = bytes.len().next_power_of_two();
            self.buffer = rd.storage_buffer_create(self.capacity_bytes as u32);
        }
        update(rd, self.buffer, &bytes);
        replaced
    }
}

/// The most workgroups a dispatch may have along x on `rd` (`limit_get`).
pub(crate) fn max_workgroups_x(rd: &Gd<RenderingDevice>) -> u32 {
    rd.limit_get(godot::classes::rendering_device::Limit::MAX_COMPUTE_WORKGROUP_COUNT_X).min(u32::MAX as u64) as u32
}
