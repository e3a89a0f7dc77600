//! A multiplayer server's capture on Godot's RenderingDevice ([`Backend::begin_tile_changes`]):
//! the same pass as on wgpu (`shaders/tile_changes.wgsl`, `compare_tiles`), which compares the
//! water with the copy the last capture took, tile by tile and bit for bit, describes each tile
//! that differs (total, hash, change) and copies only the tiles the server asks for into its
//! report, laid out as the wgpu backend stages it (the counts and the slots' tiles, the records,
//! then the slots' depths, then their flows); one `buffer_copy` brings its first bytes to the
//! staging buffer, so the decoding and the slots' and limit's meaning are the wgpu backend's, and
//! the core's [`SyncServer::capture_records`] takes either.
//!
//! The read: with Godot 4.4+ one `buffer_get_data_async` of the staging buffer, begun at one
//! sync and taken at the next (its callback arrives Godot's frame delay later, so a server in a
//! window never waits for it); when it has not arrived by the time the server must take it, the
//! same bytes are read with `buffer_get_data`, waiting. Godot 4.3 has only `buffer_get_data`,
//! which flushes and waits for the GPU: there the read waits at the sync that takes it, as every
//! read of this backend does on 4.3 (the header is read that way every frame), but it moves the
//! records and the tiles asked for only, not the whole state and every tile compared on the host
//! as before.
//!
//! Nothing is made until a server resets the comparison ([`Backend::reset_tile_changes`]): a game
//! that is not a server pays nothing.
//!
//! [`Backend::begin_tile_changes`]: pipewater_core::backend::Backend::begin_tile_changes
//! [`Backend::reset_tile_changes`]: pipewater_core::backend::Backend::reset_tile_changes
//! [`SyncServer::capture_records`]: pipewater_core::sync::SyncServer::capture_records

use super::{callable_variant, device, free_all, update, RdBackend, WaterList, ENTRY_COMPARE_TILES};
use godot::classes::RenderingDevice;
use godot::prelude::*;
use parking_lot::Mutex;
use pipewater_core::backend::gpu::tile_changes::{wanted_bytes, wanted_words, TileChangeParams, MAX_TILE_CHANGE_CELLS};
use pipewater_core::backend::sleep::TileGrid;
use pipewater_core::backend::{TileChanges, TileChangesReader, TileRequest};
use pipewater_core::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bytes of a read arrived from Godot's callback, with the number of the read.
type Arrival = Arc<Mutex<Option<(u64, Vec<u8>)>>>;

/// A backend's comparison over one cutting into tiles: the captured copy, the slots the pass
/// fills, the staging buffer they are packed into, and the read in flight.
pub(super) struct RdTileChanges {
    pub(super) tiles: TileGrid,
    /// Most tiles one comparison reads.
    capacity: usize,
    pub(super) params: Rid,
    pub(super) captured_depth: Rid,
    pub(super) captured_flow: Rid,
    /// What the pass writes for the host, laid out as staged ([`TileChanges::staged_bytes`]).
    pub(super) report: Rid,
    pub(super) wanted: Rid,
    /// Per tile, whether it differed at the last comparison.
    pub(super) differed: Rid,
    staging: Rid,
    /// Number of the newest read begun; a reader whose number is not the newest (its buffers
    /// remade or freed since) fails instead of reading them.
    newest: Arc<AtomicU64>,
    /// Held by the reader of the read in flight: one read at a time, as on wgpu.
    out: Arc<()>,
    arrived: Arrival,
}

impl RdTileChanges {
    fn new(rd: &mut Gd<RenderingDevice>, cells: usize, tiles: TileGrid) -> Result<RdTileChanges> {
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        let capacity = (MAX_TILE_CHANGE_CELLS / stride).clamp(1, tiles.count());
        let storage = |rd: &mut Gd<RenderingDevice>, bytes: usize| rd.storage_buffer_create(bytes.max(16) as u32);
        let changes = RdTileChanges {
            tiles,
            capacity,
            params: rd.uniform_buffer_create(std::mem::size_of::<TileChangeParams>() as u32),
            captured_depth: storage(rd, 4 * cells),
            captured_flow: storage(rd, 16 * cells),
            report: storage(rd, TileChanges::staged_bytes(capacity, stride, tiles.count())),
            wanted: storage(rd, 4 * wanted_words(&tiles)),
            differed: storage(rd, 4 * tiles.count()),
            staging: storage(rd, TileChanges::staged_bytes(capacity, stride, tiles.count())),
            newest: Arc::new(AtomicU64::new(0)),
            out: Arc::new(()),
            arrived: Arc::new(Mutex::new(None)),
        };
        if changes.rids().iter().any(|r| !r.is_valid()) {
            changes.free(rd);
            return Err(Error::Gpu(format!("Godot could not allocate the tile comparison of a {}x{} grid", tiles.cells[0], tiles.cells[1])));
        }
        Ok(changes)
    }

    fn rids(&self) -> [Rid; 7] {
        [self.params, self.captured_depth, self.captured_flow, self.report, self.wanted, self.differed, self.staging]
    }

    /// Frees the buffers; a reader still out fails rather than read them.
    pub(super) fn free(&self, rd: &mut Gd<RenderingDevice>) {
        self.newest.fetch_add(1, Ordering::AcqRel);
        free_all(rd, self.rids());
    }
}

impl RdBackend {
    /// [`pipewater_core::backend::Backend::reset_tile_changes`]: the captured copy made (or
    /// remade, for other tiles) and set to the current copy of the fields, the queued edits
    /// applied first.
    pub(super) fn reset_tile_changes_now(&mut self, tiles: &TileGrid) -> Result<bool> {
        let mut rd = self.check_device()?;
        let grid = self.host.grid;
        if tiles.cells != [grid.width, grid.height] || tiles.size[0] != tiles.size[1] || tiles.size[0] == 0 {
            return Err(Error::invalid("tiles", format!("{:?} of {:?} cells", tiles.size, tiles.cells), format!("square tiles of the grid's {} × {} cells", grid.width, grid.height)));
        }
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        if self.tile_changes.as_ref().is_none_or(|c| c.tiles != *tiles) {
            if let Some(old) = self.tile_changes.take() {
                old.free(&mut rd);
            }
            self.tile_changes = Some(RdTileChanges::new(&mut rd, grid.cell_count(), *tiles)?);
            // Sets naming the old buffers went with them.
            self.drop_sets(&mut rd);
        }
        let changes = self.tile_changes.as_ref().expect("made above");
        let n = grid.cell_count() as u32;
        let k = self.host.current;
        copy(&mut rd, self.depth[k], changes.captured_depth, 4 * n)?;
        copy(&mut rd, self.flux[k], changes.captured_flow, 16 * n)?;
        // Every tile starts again as one that did not differ: its first change is read at once.
        match rd.buffer_clear(changes.differed, 0, 4 * tiles.count() as u32) {
            godot::global::Error::OK => Ok(true),
            e => Err(Error::Gpu(format!("Godot refused to clear the tile comparison's flags: {e:?}"))),
        }
    }

    /// [`pipewater_core::backend::Backend::begin_tile_changes`]: the comparison over copy
    /// `host.current` in a compute list after the work recorded so far, its records and first
    /// `request.max_tiles` slots packed into the staging buffer and, with Godot 4.4+, read back
    /// without waiting.
    pub(super) fn begin_tile_changes_now(&mut self, tiles: &TileGrid, request: &TileRequest) -> Result<Option<TileChangesReader>> {
        let mut rd = self.check_device()?;
        match self.tile_changes.as_ref() {
            Some(c) if c.tiles == *tiles && Arc::strong_count(&c.out) == 1 => {}
            _ => return Ok(None),
        }
        let queued = self.host.take_edits();
        self.submit_edits(queued)?;
        let changes = self.tile_changes.as_ref().expect("checked above");
        let limit = request.max_tiles.clamp(1, changes.capacity);
        let stride = tiles.size[0] as usize * tiles.size[1] as usize;
        let tile_count = tiles.count();
        let params = TileChangeParams::new(tiles, limit, request.read_every_change);
        update(&mut rd, changes.params, bytemuck::bytes_of(&params));
        update(&mut rd, changes.wanted, &wanted_bytes(tiles, request));
        rd.buffer_clear(changes.report, 0, 8);
        let (report, staging) = (changes.report, changes.staging);
        let list = rd.compute_list_begin();
        let recorded = self.dispatch(&mut rd, list, ENTRY_COMPARE_TILES, WaterList::User, tiles.tiles);
        rd.compute_list_end();
        recorded?;
        // The report of `limit` slots is its first bytes, as staged.
        let total = TileChanges::staged_bytes(limit, stride, tile_count);
        copy(&mut rd, report, staging, total as u32)?;
        let changes = self.tile_changes.as_ref().expect("checked above");
        let number = changes.newest.fetch_add(1, Ordering::AcqRel) + 1;
        let arrived = changes.arrived.clone();
        *arrived.lock() = None;
        if self.async_reads {
            let landing = arrived.clone();
            let callback = Callable::from_fn("pipewater_tile_changes", move |args: &[&Variant]| {
                if let Some(bytes) = args.first().and_then(|v| v.try_to::<PackedByteArray>().ok()) {
                    *landing.lock() = Some((number, bytes.to_vec()));
                }
            });
            // A read Godot refuses never arrives: the reader then reads the bytes waiting.
            rd.call("buffer_get_data_async", &[staging.to_variant(), callable_variant(&callback), 0.to_variant(), (total as i64).to_variant()]);
        }
        // Godot 4.3 cannot read without waiting: its read is always "ready" to be taken, and the
        // taking waits (once a sync, as the header's read does every frame there).
        let waits_anyway = !self.async_reads;
        let (token, newest) = (changes.out.clone(), changes.newest.clone());
        let here = arrived.clone();
        let ready = Box::new(move || waits_anyway || here.lock().as_ref().is_some_and(|(n, _)| *n == number));
        let staging_bits = staging.to_u64();
        let read = Box::new(move || {
            let _token = token;
            if let Some((n, bytes)) = arrived.lock().take() {
                if n == number {
                    return TileChanges::from_staged(&bytes, limit, stride, tile_count);
                }
            }
            if newest.load(Ordering::Acquire) != number {
                return Err(Error::Gpu("the tile comparison was remade or freed before its read was taken".into()));
            }
            // Not arrived (Godot 4.3, or a callback later than the server can wait): the same
            // bytes, waiting for the GPU.
            let mut rd = device()?;
            let bytes = rd.buffer_get_data_ex(Rid::new(staging_bits)).offset_bytes(0).size_bytes(total as u32).done();
            TileChanges::from_staged(bytes.as_slice(), limit, stride, tile_count)
        });
        Ok(Some(TileChangesReader { ready, read }))
    }
}

/// `size` bytes from the start of `from` to the start of `to`, in the frame's graph.
fn copy(rd: &mut Gd<RenderingDevice>, from: Rid, to: Rid, size: u32) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    match rd.buffer_copy(from, to, 0, 0, size) {
        godot::global::Error::OK => Ok(()),
        e => Err(Error::Gpu(format!("Godot refused to copy {size} bytes between the tile comparison's buffers: {e:?}"))),
    }
}
