//! Whole recovery points for the GPU backends: what a simulation goes on from when its device is
//! lost.
//!
//! A GPU backend's snapshot is not enough for that. In tile mode (always on Godot's
//! RenderingDevice; on wgpu whenever nothing reads the textures on the CPU) it is current only for
//! the tiles queries touched lately, and everywhere else it shows the water as it was loaded. So
//! each GPU backend also copies its whole state (terrain, depth quanta, pipe flows and the ledger
//! counters, all of one frame) back to the host at a bounded rate ([`recovery_interval_frames`]),
//! and [`RecoveryReads`] keeps the newest copy that arrived. It is exact: the fields as the device
//! holds them, not rebuilt from texels.
//!
//! How old a recovery point can be: at most [`recovery_interval_frames`] frames plus the frames a
//! read takes to arrive (two on wgpu, Godot's frame delay on the RenderingDevice), or as old as
//! the last load, whichever is newer. Its cost: one copy of the state on the host (24 bytes a
//! cell) and, on wgpu, a staging buffer of the same size; the copy moves on average at most
//! [`RECOVERY_BYTES_PER_FRAME`] a frame past a floor of one copy every
//! [`RECOVERY_MIN_INTERVAL_FRAMES`].

use super::readback::Readbacks;
use crate::grid::Grid;
use crate::state::{Counters, Snapshot, State};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Fewest frames between two recovery reads (one second at 60 frames a second).
pub const RECOVERY_MIN_INTERVAL_FRAMES: u64 = 60;
/// Average bytes a frame that recovery reads may copy to the host: larger grids are read less
/// often (a 4096² grid, 402 MB, every 384 frames).
pub const RECOVERY_BYTES_PER_FRAME: u64 = 1 << 20;
/// Bytes of the ledger counters in front of a recovery read, and of the devices' counter buffers
/// (the ten words of [`Counters::to_device_words`]).
pub const COUNTER_BYTES: usize = 40;
/// Bytes a cell takes in a recovery read: terrain (`f32`), depth (`i32` quanta), four pipe flows.
pub const STATE_BYTES_PER_CELL: usize = 24;

/// Frames between two recovery reads of a grid of `cells` cells.
pub fn recovery_interval_frames(cells: usize) -> u64 {
    let bytes = (cells * STATE_BYTES_PER_CELL + COUNTER_BYTES) as u64;
    bytes.div_ceil(RECOVERY_BYTES_PER_FRAME).max(RECOVERY_MIN_INTERVAL_FRAMES)
}

/// Bytes of one recovery read of a grid of `cells` cells, in the order [`RecoveryReads::accept`]
/// takes them: counters, terrain, depth, flows.
pub fn recovery_read_bytes(cells: usize) -> usize {
    COUNTER_BYTES + cells * STATE_BYTES_PER_CELL
}

/// The whole state of one frame, as the device held it.
#[derive(Debug, Clone)]
pub struct ExactPoint {
    /// Terrain, depth and pipe flows.
    pub state: State,
    /// The ledger counters of the same frame.
    pub counters: Counters,
    /// The frame it shows.
    pub frame: u64,
}

/// What a simulation goes on from after a lost device.
#[derive(Debug, Clone)]
pub enum RecoveryPoint {
    /// The device's own fields of one frame: exact.
    Exact(Arc<ExactPoint>),
    /// A snapshot that covers every cell with texels of one frame: depths exact below 16 m, pipe
    /// flows rebuilt from the cells' velocities ([`State::from_snapshot`]).
    Snapshot(Arc<Snapshot>),
}

impl RecoveryPoint {
    /// The frame it shows.
    pub fn frame(&self) -> u64 {
        match self {
            RecoveryPoint::Exact(point) => point.frame,
            RecoveryPoint::Snapshot(snapshot) => snapshot.sequence,
        }
    }
}

/// One recovery read a backend issued: the frame it copies and the load generation it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryRead {
    /// Frame count of the state it copies.
    pub frame: u64,
    /// [`RecoveryReads::generation`] when it was issued.
    pub generation: u64,
}

/// Longest [`RecoveryReads::settle`] waits for reads being decoded.
const DECODE_WAIT_LIMIT: Duration = Duration::from_secs(10);

/// Reads decoded on worker threads, waiting to be taken on the backend's thread.
#[derive(Debug, Default)]
struct Decoded {
    /// Decodes started and not yet delivered.
    running: AtomicUsize,
    points: Mutex<Vec<(RecoveryRead, ExactPoint)>>,
}

/// The host side of a GPU backend's recovery reads: when the next is due, and the newest point.
#[derive(Debug)]
pub struct RecoveryReads {
    grid: Grid,
    interval: u64,
    generation: u64,
    /// Frame of the last read issued (or of the last load).
    last_issued: u64,
    point: Arc<ExactPoint>,
    decoded: Arc<Decoded>,
}

impl RecoveryReads {
    /// Recovery for a backend that was just loaded with `state` (frame 0, zero counters): the
    /// state itself is the first point.
    pub fn new(state: &State) -> Self {
        let point = Arc::new(ExactPoint { state: state.clone(), counters: Counters::default(), frame: 0 });
        RecoveryReads { grid: state.grid, interval: recovery_interval_frames(state.grid.cell_count()), generation: 0, last_issued: 0, point, decoded: Arc::default() }
    }

    /// A new state was loaded (or restored) as of frame `frames` with `counters`: it is the point
    /// until a read issued after it arrives; reads issued before it are discarded.
    pub fn load(&mut self, state: &State, counters: Counters, frames: u64) {
        self.generation += 1;
        self.last_issued = frames;
        self.point = Arc::new(ExactPoint { state: state.clone(), counters, frame: frames });
    }

    /// [`RecoveryReads::load`] of a state already shared (a restore decoded on a worker): the
    /// same, without copying it. Returns the point it replaced.
    pub fn load_point(&mut self, point: Arc<ExactPoint>) -> Arc<ExactPoint> {
        self.generation += 1;
        self.last_issued = point.frame;
        std::mem::replace(&mut self.point, point)
    }

    /// The load generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Frames between two reads on this grid.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// The read the frame `frame` (just recorded, its state current on the device) should issue:
    /// `None` until [`RecoveryReads::interval`] frames have passed since the last one. A backend
    /// that cannot issue it now (its staging buffer still busy) asks again next frame.
    pub fn due(&self, frame: u64) -> Option<RecoveryRead> {
        (frame >= self.last_issued + self.interval).then_some(RecoveryRead { frame, generation: self.generation })
    }

    /// `read` was issued.
    pub fn issued(&mut self, read: RecoveryRead) {
        self.last_issued = read.frame;
    }

    /// Takes the bytes of `read` ([`recovery_read_bytes`]: counters, terrain, depth, flows, each
    /// little-endian as the device holds them) as the newest point, unless a load came after it
    /// was issued or the point is newer already. Returns whether it was taken.
    pub fn accept(&mut self, read: RecoveryRead, counters: &[u8], terrain: &[u8], depth: &[u8], flow: &[u8]) -> bool {
        match decode_point(self.grid, read, counters, terrain, depth, flow) {
            Some(point) => self.adopt(read, point),
            None => false,
        }
    }

    /// Takes `point`, decoded from `read`, as the newest point unless a load came after it was
    /// issued or the point is newer already.
    fn adopt(&mut self, read: RecoveryRead, point: ExactPoint) -> bool {
        if read.generation != self.generation || read.frame <= self.point.frame {
            return false;
        }
        self.point = Arc::new(point);
        true
    }

    /// Decodes `read` on a thread of its own: `decode` turns what arrived into a point (copying
    /// from a mapped buffer, say: 0.3 s for a 4096² grid on an H100's host, which the game's
    /// frame must not wait for) and runs `done` when it has finished with the bytes (unmapping
    /// them). [`RecoveryReads::take_decoded`] takes the result on the backend's thread.
    pub fn decode_later(&self, read: RecoveryRead, decode: impl FnOnce(Grid) -> Option<ExactPoint> + Send + 'static) {
        let (grid, decoded) = (self.grid, self.decoded.clone());
        decoded.running.fetch_add(1, Ordering::AcqRel);
        std::thread::spawn(move || {
            if let Some(point) = decode(grid) {
                decoded.points.lock().push((read, point));
            }
            decoded.running.fetch_sub(1, Ordering::AcqRel);
        });
    }

    /// Takes the points decoded on other threads since the last call (the newest wins).
    pub fn take_decoded(&mut self) {
        let mut arrived = std::mem::take(&mut *self.decoded.points.lock());
        arrived.sort_by_key(|(read, _)| read.frame);
        for (read, point) in arrived {
            self.adopt(read, point);
        }
    }

    /// Waits (at most [`DECODE_WAIT_LIMIT`]) until every decode started has finished, then takes
    /// them: before the point is used, after a lost device.
    pub fn settle(&mut self) {
        self.wait_for_decodes();
        self.take_decoded();
    }

    /// Waits, at most [`DECODE_WAIT_LIMIT`], until no decode is running.
    fn wait_for_decodes(&self) {
        let start = Instant::now();
        while self.decoded.running.load(Ordering::Acquire) > 0 && start.elapsed() < DECODE_WAIT_LIMIT {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The newest exact point taken so far.
    pub fn point(&self) -> Arc<ExactPoint> {
        self.point.clone()
    }

    /// The newer of the exact point and `reads`' snapshot where that covers every cell with texels
    /// of one frame (a full read, or a load with no tile read since): the exact point when both
    /// show the same frame.
    pub fn newest(&self, reads: &Readbacks) -> RecoveryPoint {
        let snapshot = reads.latest();
        if reads.latest_is_whole() && snapshot.sequence > self.point.frame {
            RecoveryPoint::Snapshot(snapshot)
        } else {
            RecoveryPoint::Exact(self.point.clone())
        }
    }
}

impl Drop for RecoveryReads {
    /// Waits for reads still being decoded: on wgpu a decode reads a mapped staging buffer, which
    /// must not outlive the backend (a process that exits under it crashes in the driver).
    fn drop(&mut self) {
        self.wait_for_decodes();
    }
}

/// The point that the bytes of `read` hold (counters, terrain, depth, flows, as
/// [`RecoveryReads::accept`] takes them); `None` when one is too short.
pub fn decode_point(grid: Grid, read: RecoveryRead, counters: &[u8], terrain: &[u8], depth: &[u8], flow: &[u8]) -> Option<ExactPoint> {
    let n = grid.cell_count();
    if counters.len() < COUNTER_BYTES || terrain.len() < 4 * n || depth.len() < 4 * n || flow.len() < 16 * n {
        return None;
    }
    let words: Vec<u32> = bytemuck::pod_collect_to_vec(&counters[..COUNTER_BYTES]);
    let state = State {
        grid,
        terrain: bytemuck::pod_collect_to_vec(&terrain[..4 * n]),
        depth: bytemuck::pod_collect_to_vec(&depth[..4 * n]),
        flow: bytemuck::pod_collect_to_vec(&flow[..16 * n]),
    };
    Some(ExactPoint { state, counters: Counters::from_device_words(&words), frame: read.frame })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(grid: Grid, depth: i32) -> State {
        let n = grid.cell_count();
        State { grid, terrain: (0..n).map(|i| i as f32 * 0.5).collect(), depth: vec![depth; n], flow: vec![[0.25, -0.5, 0.0, 1.0]; n] }
    }

    fn read_bytes(s: &State, counters: Counters) -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
        let words = counters.to_device_words();
        (bytemuck::cast_slice(&words).to_vec(), bytemuck::cast_slice(&s.terrain).to_vec(), bytemuck::cast_slice(&s.depth).to_vec(), bytemuck::cast_slice(&s.flow).to_vec())
    }

    /// Interval: one copy a second at least, larger grids no more than a mebibyte a frame on
    /// average.
    #[test]
    fn larger_grids_are_read_less_often_within_the_byte_budget() {
        let figures: Vec<(u32, u64)> = [256u32, 1024, 2048, 4096].iter().map(|&side| (side, recovery_interval_frames((side * side) as usize))).collect();
        println!("recovery interval (frames) by grid side: {figures:?}");
        assert_eq!(figures, vec![(256, 60), (1024, 60), (2048, 97), (4096, 385)]);
        for (side, frames) in figures {
            let bytes = recovery_read_bytes((side * side) as usize) as u64;
            assert!(bytes.div_ceil(frames) <= RECOVERY_BYTES_PER_FRAME, "{side}²: {bytes} B every {frames} frames");
        }
    }

    /// A read arrives as the exact state of its frame; one issued before a load, or older than the
    /// point, is discarded, and reads fall due an interval after the last.
    #[test]
    fn reads_become_exact_points_unless_a_load_came_after_them() {
        let grid = Grid::new(6, 4, 1.0).unwrap();
        let mut reads = RecoveryReads::new(&state(grid, 7));
        let interval = reads.interval();
        assert_eq!(reads.due(interval - 1), None);
        let first = reads.due(interval).expect("due after one interval");
        reads.issued(first);
        assert_eq!(reads.due(interval + 1), None, "the next is an interval later");
        let later = state(grid, 9);
        let counters = Counters { added: 1 << 40, removed: 3, boundary_in: 5, boundary_out: 7, solidified: 9 };
        let (c, t, d, f) = read_bytes(&later, counters);
        assert!(reads.accept(first, &c, &t, &d, &f));
        let point = reads.point();
        println!("point of frame {}: counters {:?}, depth[0] {}", point.frame, point.counters, point.state.depth[0]);
        assert_eq!((point.frame, point.counters), (interval, counters));
        assert_eq!((&point.state.terrain, &point.state.depth, &point.state.flow), (&later.terrain, &later.depth, &later.flow));
        assert!(!reads.accept(first, &c, &t, &d, &f), "a read no newer than the point is not taken again");

        let stale = reads.due(3 * interval).unwrap();
        reads.load(&state(grid, 1), Counters::default(), 3 * interval + 1);
        assert!(!reads.accept(stale, &c, &t, &d, &f), "a read issued before a load shows water that is gone");
        assert_eq!(reads.point().state.depth[0], 1);
        assert!(!reads.accept(reads.due(10 * interval).unwrap(), &c[..8], &t, &d, &f), "a short read is refused");
    }

    /// A read decoded on another thread becomes the point once taken, and `settle` waits for it.
    #[test]
    fn a_read_decoded_on_a_worker_thread_is_taken_after_settling() {
        let grid = Grid::new(5, 3, 1.0).unwrap();
        let mut reads = RecoveryReads::new(&state(grid, 2));
        let read = reads.due(reads.interval()).unwrap();
        reads.issued(read);
        let later = state(grid, 11);
        let (c, t, d, f) = read_bytes(&later, Counters { added: 4, ..Counters::default() });
        reads.decode_later(read, move |grid| {
            std::thread::sleep(Duration::from_millis(50));
            decode_point(grid, read, &c, &t, &d, &f)
        });
        let before = reads.point().frame;
        reads.settle();
        println!("point frame before settling {before}, after {}", reads.point().frame);
        assert_eq!(before, 0, "nothing is taken before the decode is");
        assert_eq!((reads.point().frame, reads.point().state.depth[0], reads.point().counters.added), (read.frame, 11, 4));
    }
}
