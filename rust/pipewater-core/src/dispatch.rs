//! Workgroup arithmetic every GPU pass shares, on wgpu and on Godot's RenderingDevice alike. A
//! leaf, so that the host sides of the passes (the frame recipe, the detail layer's) need no GPU.

/// Workgroups for a list of `count` entries at `workgroup` entries a group, at most the device's
/// `max_per_dimension` (and 65535, what every device takes): the shaders stride over the rest.
pub fn list_workgroups(count: usize, workgroup: u32, max_per_dimension: u32) -> u32 {
    (count as u32).div_ceil(workgroup).clamp(1, max_per_dimension.clamp(1, 65535))
}
