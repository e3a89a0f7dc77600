//! The one growable list on a wgpu device: records in the core's [`list_bytes`] layout (`[count,
//! pad…, items…]`), the buffer replaced by one twice as large when the items outgrow it. The
//! backend's edit, forcing, body and tile lists and the detail layer's lists are all one.

use crate::backend::pending::{list_bytes, list_header_bytes};

/// A list of `item_bytes`-byte records on the device, grown by powers of two.
pub(super) struct DeviceList {
    pub(super) buffer: wgpu::Buffer,
    capacity: usize,
    item_bytes: usize,
}

impl DeviceList {
    /// Room for `capacity` records (at least 16, rounded up to a power of two).
    pub(super) fn new(device: &wgpu::Device, label: &str, capacity: usize, item_bytes: usize) -> Self {
        let capacity = capacity.max(16).next_power_of_two();
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (list_header_bytes(item_bytes) + item_bytes * capacity) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        DeviceList { buffer, capacity, item_bytes }
    }

    /// Uploads `items` (whole records); true when the buffer was replaced, so that bind groups
    /// naming it are stale.
    pub(super) fn upload(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, label: &str, items: &[u8]) -> bool {
        let count = items.len() / self.item_bytes;
        let grown = count > self.capacity;
        if grown {
            *self = DeviceList::new(device, label, count, self.item_bytes);
        }
        queue.write_buffer(&self.buffer, 0, &list_bytes(items, self.item_bytes));
        grown
    }
}
