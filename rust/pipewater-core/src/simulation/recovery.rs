//! A lost GPU device: the simulation moves its water to the next backend and records a
//! [`DeviceLoss`] (Godot's RenderingDevice → wgpu → CPU).

use super::{gpu_backend, Simulation};
use crate::backend::cpu::CpuBackend;
use crate::backend::recovery::RecoveryPoint;
use crate::backend::{Backend, BackendKind};
use crate::error::{Error, Result};
use crate::state::State;

/// A GPU device lost under a running simulation, and where its water went: the simulation took
/// the lost backend's recovery point (the whole state of a recent frame, which the backend copies
/// to the host at a bounded rate, or a newer snapshot that covers every cell) and goes on on the
/// next backend — Godot's RenderingDevice → wgpu (a fresh device) → CPU — with its sources, clock
/// and the ledger counters of that point.
pub struct DeviceLoss {
    /// The backend whose device was lost.
    pub from: BackendKind,
    /// The backend the water runs on now.
    pub to: BackendKind,
    /// What the lost backend reported.
    pub reason: Error,
    /// Frame the recovered water shows (the backend's recovery point,
    /// [`crate::backend::recovery`]), and the frame the simulation had reached: what the frames
    /// between did (their flow, their edits, what their sources and edges added) is lost, along
    /// with edits queued on the device. A GPU backend keeps a recovery point at most
    /// [`crate::backend::recovery::recovery_interval_frames`] frames old, plus its readback
    /// latency.
    pub recovered_frame: u64,
    /// See `recovered_frame`.
    pub frame: u64,
    /// Whether the recovered water is the device's own state of that frame, every field exact
    /// (`true`), or rebuilt from a snapshot's texels that covered every cell (`false`: depths
    /// exact below 16 m, pipe flows from the cells' velocities).
    pub exact: bool,
    /// Water in the recovered state minus the recovery point's exact total, m³: 0 for an exact
    /// point; for one rebuilt from texels, the depths' rounding. The ledger's initial total
    /// absorbs it, so the mass identity keeps holding.
    pub difference_m3: f64,
    /// The lost backend, kept so that an engine can let go of what shows its resources (a
    /// texture on Godot's device) before it is dropped with this notice.
    pub retired: Box<dyn Backend>,
}

impl std::fmt::Debug for DeviceLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceLoss")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("reason", &self.reason)
            .field("recovered_frame", &self.recovered_frame)
            .field("frame", &self.frame)
            .field("exact", &self.exact)
            .field("difference_m3", &self.difference_m3)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for DeviceLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |kind: BackendKind| match kind {
            BackendKind::EngineGpu => "the engine's GPU device",
            BackendKind::Gpu => "the wgpu device",
            BackendKind::Cpu => "the CPU",
        };
        let why = match &self.reason {
            Error::DeviceLost(why) => why.clone(),
            other => other.to_string(),
        };
        write!(
            f,
            "{} was lost ({why}); the water goes on on {} from {} of frame {} (the simulation was at frame {}: what the {} frames between did is lost), {:+.3} m³ from that point's total",
            name(self.from),
            name(self.to),
            if self.exact { "the device's whole state" } else { "a snapshot of every cell" },
            self.recovered_frame,
            self.frame,
            self.frame.saturating_sub(self.recovered_frame),
            self.difference_m3
        )
    }
}

impl Simulation {
    /// Makes the GPU device the simulation runs on lost, as a driver reset would
    /// ([`Backend::simulate_device_loss`]): the next call that reaches the device moves the water
    /// to the next backend and records a [`DeviceLoss`]. On wgpu the process-wide device goes,
    /// so every wgpu simulation moves; a new one gets a fresh device. False on the CPU.
    pub fn simulate_device_loss(&mut self) -> bool {
        self.backend.simulate_device_loss()
    }

    /// The device losses since the last call, oldest first. An engine warns about each, and lets
    /// go of whatever shows the lost backend's resources before dropping the notice (which drops
    /// the backend).
    pub fn take_device_losses(&mut self) -> Vec<DeviceLoss> {
        std::mem::take(&mut self.device_losses)
    }

    /// Runs `call` on the backend. When the backend's device has failed ([`Error::is_device_failure`]),
    /// moves the water to the next backend ([`Simulation::recover`]) and runs `call` there.
    pub(super) fn on_backend<T>(&mut self, call: impl Fn(&mut dyn Backend) -> Result<T>) -> Result<T> {
        // Reads, edits and steps wait for a load being applied: its rows are half written.
        self.refuse_while_restoring("reading, editing or stepping the water")?;
        match call(self.backend.as_mut()) {
            Err(e) if e.is_device_failure() && self.backend.kind() != BackendKind::Cpu => {
                self.recover(e)?;
                call(self.backend.as_mut())
            }
            result => result,
        }
    }

    /// Moves the water of the lost backend's recovery point ([`Backend::recovery_point`]) to the
    /// next backend: Godot's RenderingDevice goes on on wgpu (a fresh device) where one exists,
    /// wgpu on the CPU. The ledger keeps the point's counters; for a point rebuilt from texels its
    /// initial total absorbs what the rebuilt state differs from the point's exact total, so the
    /// mass identity keeps holding. Records a [`DeviceLoss`].
    pub(super) fn recover(&mut self, reason: Error) -> Result<()> {
        let from = self.backend.kind();
        let Some(point) = self.backend.recovery_point() else { return Err(reason) };
        let recovered_frame = point.frame();
        let (state, counters, difference, exact) = match point {
            RecoveryPoint::Exact(point) => (point.state.clone(), point.counters, 0, true),
            RecoveryPoint::Snapshot(snapshot) => {
                let state = State::from_snapshot(&snapshot, &self.params);
                let difference = state.total_quanta() - snapshot.total_quanta;
                (state, snapshot.counters, difference, false)
            }
        };
        let gpu = match from {
            BackendKind::EngineGpu => gpu_backend(&state).ok(),
            BackendKind::Gpu | BackendKind::Cpu => None,
        };
        let mut next = gpu.unwrap_or_else(|| Box::new(CpuBackend::new(&state)));
        if next.restore(&state, counters, self.frames).is_err() {
            next = Box::new(CpuBackend::new(&state));
            next.restore(&state, counters, self.frames)?;
        }
        self.initial_total += difference;
        next.set_sleeping(self.sleeping);
        let retired = std::mem::replace(&mut self.backend, next);
        // The detail waves start again at rest on the new backend; one without the layer
        // turns it off rather than stopping the water.
        if let Some(detail) = &mut self.detail {
            match self.backend.configure_detail(Some(detail.layout())) {
                Ok(()) => detail.restart(),
                Err(_) => self.detail = None,
            }
        }
        self.device_losses.push(DeviceLoss {
            from,
            to: self.backend.kind(),
            reason,
            recovered_frame,
            frame: self.frames,
            exact,
            difference_m3: difference as f64 * self.quantum_volume(),
            retired,
        });
        Ok(())
    }
}
