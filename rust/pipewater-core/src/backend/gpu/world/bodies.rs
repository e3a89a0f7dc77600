//! Floating bodies on a world: the displacement of their hulls on the bed the step sees, and the
//! drag they give the water's pipes ([`crate::world_water::WorldWater::couple_bodies`] works both
//! out from the water it reads).
//!
//! The world has one terrain field on the device, and the step reads it as its bed
//! (`cells_paged.wgsl` binds the terrain slot as `step_terrain`). So the host keeps the true
//! terrain ([`World::terrain_region`], what queries, windows and saves read) and the heads of the
//! hulls apart, per page, and a page's terrain slot holds terrain plus heads: written when the
//! heads of its cells change, and whenever the page comes in or its terrain is set. A page that
//! is not resident holds no water near it, so a hull over it moves nothing until the page comes
//! in with its heads already on it. A dense grid keeps a second field for this (`terrain` and
//! `step_terrain`); a world keeps 4 bytes a resident cell fewer and pays a page's terrain upload
//! (`side²` × 4 bytes) for each page whose heads changed in a frame.
//!
//! The drag is applied on the host: the coupling has just read the depth and pipes of the cells
//! around each hull (waiting for the device), so the nudged pipes are worked out with
//! [`crate::pipes::nudged_pipe`] as the CPU backend does and written into the current copy
//! before the next frame ([`World::set_flows`]).

use super::{map_and_wait, World, NO_PAGE, ZERO_SLOT};
use crate::backend::sleep::WAKE_FIRST_STEP;
use crate::error::{Error, Result};
use crate::quanta::MAX_TERRAIN_ABS;
use std::collections::HashMap;

impl World {
    /// Sets the heads (m, `0 ..= MAX_TERRAIN_ABS`) of floating bodies on cells `(x, y, head)`,
    /// each cell at most once, in place of the last ones: the step's bed there is the terrain
    /// plus the head from the next frame on, and cells left out lose theirs. The tiles of every
    /// cell whose head changed step next. Refused, nothing changed, naming the cell or the head.
    pub fn set_displacement(&mut self, cells: &[(u32, u32, f32)]) -> Result<()> {
        let mut next: HashMap<usize, Vec<(u32, f32)>> = HashMap::new();
        for &(x, y, head) in cells {
            if x >= self.width || y >= self.height {
                return Err(Error::invalid("displacement cell", format!("({x}, {y})"), format!("a cell of the {}x{} world", self.width, self.height)));
            }
            if !(head.is_finite() && (0.0..=MAX_TERRAIN_ABS).contains(&head)) {
                return Err(Error::invalid("displacement head", head, format!("0 ..= {MAX_TERRAIN_ABS} m")));
            }
            if head > 0.0 {
                let (page, within) = self.page_cell(x, y);
                next.entry(page).or_default().push((within as u32, head));
            }
        }
        for heads in next.values_mut() {
            heads.sort_unstable_by_key(|h| h.0);
            if heads.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Error::invalid("displacement cells", "a cell listed twice", "each cell at most once"));
            }
        }
        let mut pages: Vec<usize> = next.keys().chain(self.displacement.keys()).copied().collect();
        pages.sort_unstable();
        pages.dedup();
        let empty = Vec::new();
        for page in pages {
            let (old, new) = (self.displacement.get(&page).unwrap_or(&empty), next.get(&page).unwrap_or(&empty));
            let changed = changed_cells(old, new);
            if changed.is_empty() {
                continue;
            }
            for within in changed {
                self.mark_cell_of_page(page, within);
            }
            match next.remove(&page) {
                Some(heads) => self.displacement.insert(page, heads),
                None => self.displacement.remove(&page),
            };
            if self.slots[page][0] != NO_PAGE {
                self.upload_terrain(page);
            }
        }
        Ok(())
    }

    /// Cells with a head on them now, `(x, y, head)`, in no particular order.
    pub fn displacement(&self) -> Vec<(u32, u32, f32)> {
        let (side, tx) = (self.side, self.pages.tiles[0] as usize);
        self.displacement.iter().flat_map(|(&page, heads)| heads.iter().map(move |&(within, head)| ((page % tx) as u32 * side + within % side, (page / tx) as u32 * side + within / side, head))).collect()
    }

    /// The heads of `page`'s cells added to `terrain` (its `side²` cells, row-major).
    pub(super) fn add_heads(&self, page: usize, terrain: &mut [f32]) {
        for &(within, head) in self.displacement.get(&page).into_iter().flatten() {
            terrain[within as usize] += head;
        }
    }

    /// The bed the step reads (terrain plus heads) for the `w × h` cells from (x, y), row-major,
    /// from the device: `None` for cells of pages whose terrain is not resident. Waits for it.
    pub fn read_step_terrain(&mut self, x: u32, y: u32, w: u32, h: u32) -> Result<Vec<Option<f32>>> {
        if x as u64 + w as u64 > self.width as u64 || y as u64 + h as u64 > self.height as u64 {
            return Err(Error::invalid("region", format!("{w}x{h} at ({x}, {y})"), format!("a region within the {}x{} world", self.width, self.height)));
        }
        let page_cells = (self.side * self.side) as u64;
        let size = self.fields.terrain_capacity as u64 * page_cells * 4;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("world step terrain read"), size: size.max(16), usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world step terrain read") });
        encoder.copy_buffer_to_buffer(&self.fields.terrain, 0, &staging, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        map_and_wait(&self.ctx, &staging, "the world's step terrain")?;
        let bytes = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..size as usize].to_vec();
        staging.unmap();
        let terrain: &[f32] = bytemuck::cast_slice(&bytes);
        let mut out = Vec::with_capacity(w as usize * h as usize);
        for row in y..y + h {
            for col in x..x + w {
                let (page, within) = self.page_cell(col, row);
                let slot = self.slots[page][0];
                out.push((slot != NO_PAGE).then(|| terrain[(slot as u64 * page_cells) as usize + within]));
            }
        }
        Ok(out)
    }

    /// Writes the pipes' flows (E, S, SE, SW, as [`World::read_flow`] returns them) of cells
    /// `(x, y, flows)` into the water as it is now, before the next frame: the drag of floating
    /// bodies, worked out on the host from a read of the same cells with nothing stepped since.
    /// Cells of pages without water fields are skipped (no water is near them to drag); the tiles
    /// of the others step next. Refused, nothing written, naming a cell off the world or a flow
    /// that is not finite.
    pub fn set_flows(&mut self, cells: &[(u32, u32, [f32; 4])]) -> Result<()> {
        for &(x, y, flows) in cells {
            if x >= self.width || y >= self.height {
                return Err(Error::invalid("flow cell", format!("({x}, {y})"), format!("a cell of the {}x{} world", self.width, self.height)));
            }
            if !flows.iter().all(|f| f.is_finite()) {
                return Err(Error::invalid("flows", format!("{flows:?}"), "finite m³/s (or m²/s)"));
            }
        }
        // Pending water edits go first, as a frame applies them before its steps: the flows are
        // written after them either way (they touch depth only), and the pages they need come in.
        self.flush_edits()?;
        let page_cells = (self.side * self.side) as u64;
        let mut writes: Vec<(u64, [f32; 4])> = Vec::with_capacity(cells.len());
        for &(x, y, flows) in cells {
            let (page, within) = self.page_cell(x, y);
            let slot = self.slots[page][1];
            if slot == ZERO_SLOT {
                continue;
            }
            writes.push((slot as u64 * page_cells + within as u64, flows));
            self.mark_cell_of_page(page, within as u32);
            // A held page keeps both copies equal (record_held_syncs copies this one over).
            if self.held[page] && !self.held_syncs.contains(&page) {
                self.held_syncs.push(page);
            }
        }
        // Runs of neighbouring cells in one write each: a hull's cells lie in rows.
        writes.sort_unstable_by_key(|w| w.0);
        let buffer = &self.fields.flux[self.current];
        let mut k = 0;
        while k < writes.len() {
            let mut end = k + 1;
            while end < writes.len() && writes[end].0 == writes[end - 1].0 + 1 {
                end += 1;
            }
            let run: Vec<[f32; 4]> = writes[k..end].iter().map(|w| w.1).collect();
            self.ctx.queue.write_buffer(buffer, writes[k].0 * 16, bytemuck::cast_slice(&run));
            k = end;
        }
        Ok(())
    }

    /// Marks the tile of cell `within` (row-major in the page) of `page` to step next.
    fn mark_cell_of_page(&mut self, page: usize, within: u32) {
        let tx = self.pages.tiles[0] as usize;
        let (x, y) = ((page % tx) as u32 * self.side + within % self.side, (page / tx) as u32 * self.side + within / self.side);
        if x >= self.width || y >= self.height {
            return;
        }
        let tile = self.tiles.tile_of(x, y);
        if self.marks[tile] == 0 {
            self.marked.push(tile);
        }
        self.marks[tile] |= WAKE_FIRST_STEP;
    }
}

/// The cells (within a page) whose head differs between two sorted lists of `(cell, head)`.
fn changed_cells(old: &[(u32, f32)], new: &[(u32, f32)]) -> Vec<u32> {
    let (mut i, mut j, mut changed) = (0, 0, Vec::new());
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                if a.1.to_bits() != b.1.to_bits() {
                    changed.push(a.0);
                }
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                changed.push(a.0);
                i += 1;
            }
            (Some(_), Some(b)) => {
                changed.push(b.0);
                j += 1;
            }
            (Some(a), None) => {
                changed.push(a.0);
                i += 1;
            }
            (None, Some(b)) => {
                changed.push(b.0);
                j += 1;
            }
            (None, None) => break,
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::changed_cells;

    #[test]
    fn changed_cells_are_those_added_dropped_or_altered() {
        let old = [(1, 0.5), (3, 0.25), (7, 1.0)];
        let new = [(1, 0.5), (4, 0.1), (7, 1.5)];
        let changed = changed_cells(&old, &new);
        println!("old {old:?} -> new {new:?}: changed {changed:?}");
        assert_eq!(changed, vec![3, 4, 7]);
        assert!(changed_cells(&old, &old).is_empty());
    }
}
