//! What a frame of the simulation did: a plain record, below both [`crate::simulation`], which
//! makes it, and [`crate::save`], which keeps the last one.

/// What one [`crate::Simulation::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameReport {
    /// Steps taken.
    pub substeps: u32,
    /// Length of each step, s.
    pub step: f32,
    /// Simulated time of the frame, s: less than asked when `max_substeps` capped it, 0 when the
    /// frame (with time carried from earlier short frames) was shorter than [`crate::simulation::MIN_STEP`], whose
    /// time is then carried into the next frame rather than dropped.
    pub simulated: f32,
    /// Simulated time the frame had to drop to stay stable, s.
    pub dropped: f32,
}
