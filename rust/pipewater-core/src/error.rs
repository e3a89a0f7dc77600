//! Errors returned by the simulation API.

use std::fmt;

/// Everything that can go wrong when configuring or driving a simulation.
///
/// Each variant names the offending argument and, where there is one, its valid range, so that
/// an engine layer can forward the message to its users as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// An argument was outside its valid range (or not finite).
    InvalidArgument {
        /// Name of the argument, as the caller knows it.
        name: &'static str,
        /// The rejected value, printed.
        value: String,
        /// The valid range, printed.
        valid: String,
    },
    /// An array had the wrong number of elements.
    WrongLength {
        /// Name of the array.
        name: &'static str,
        /// Elements it must have.
        expected: usize,
        /// Elements it had.
        actual: usize,
    },
    /// No GPU adapter could be found, or the device could not be created.
    GpuUnavailable(String),
    /// The GPU accepted the device but failed later (validation, out of memory, a failed
    /// readback).
    Gpu(String),
    /// The GPU device is gone (a driver reset, a removed GPU, or `destroy`): nothing on it can be
    /// used again. A [`crate::Simulation`] moves its water to the next backend when it sees this.
    DeviceLost(String),
    /// A saved state could not be restored: not a PipeWater state, truncated, corrupt, from a
    /// newer format version, inconsistent, or made for another grid. Says which.
    InvalidSave(String),
    /// The simulation is applying a load ([`crate::Simulation::poll_restore`]): until it lands the
    /// water waits and calls that read, edit or step it are refused; or a world is asked to step
    /// while a change record is open ([`crate::world_water::WorldWater::begin_record`]). Says
    /// which call.
    Busy(String),
}

impl Error {
    /// Builds an [`Error::InvalidArgument`] from anything printable.
    pub fn invalid(name: &'static str, value: impl fmt::Display, valid: impl Into<String>) -> Self {
        Error::InvalidArgument { name, value: value.to_string(), valid: valid.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { name, value, valid } => {
                write!(f, "invalid {name} = {value}: valid range is {valid}")
            }
            Error::WrongLength { name, expected, actual } => {
                write!(f, "{name} has {actual} elements, expected {expected}")
            }
            Error::GpuUnavailable(why) => write!(f, "no usable GPU adapter: {why}"),
            Error::Gpu(why) => write!(f, "GPU error: {why}"),
            Error::DeviceLost(why) => write!(f, "the GPU device was lost: {why}"),
            Error::InvalidSave(why) => write!(f, "cannot restore the saved state: {why}"),
            Error::Busy(why) => write!(f, "{why}"),
        }
    }
}

impl Error {
    /// Whether the device a backend runs on failed after it was created ([`Error::Gpu`],
    /// [`Error::DeviceLost`]): the backend cannot go on, but its last snapshot can.
    pub fn is_device_failure(&self) -> bool {
        matches!(self, Error::Gpu(_) | Error::DeviceLost(_))
    }
}

impl std::error::Error for Error {}

/// Result type of the simulation API.
pub type Result<T> = std::result::Result<T, Error>;

/// Checks that `value` is finite and within `min..=max`.
pub fn check_range(name: &'static str, value: f32, min: f32, max: f32) -> Result<f32> {
    if value.is_finite() && value >= min && value <= max {
        Ok(value)
    } else {
        Err(Error::invalid(name, value, format!("{min} ..= {max}")))
    }
}
