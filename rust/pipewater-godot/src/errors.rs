//! The node's error reporting: every rejected argument or failed operation goes to Godot's
//! error log and is kept for `get_last_error()`.
//!
//! A component of its own so that the node's other parts (building, outputs) can report while
//! the node lends them its other fields.

use godot::global::godot_error;
use pipewater_core::Error as CoreError;

/// The last error message, and the one way errors reach Godot.
pub struct ErrorLog {
    /// What the messages in Godot's log start with: the class that reports.
    reporter: &'static str,
    last: String,
}

impl Default for ErrorLog {
    /// The `PipeWater` node's log.
    fn default() -> Self {
        ErrorLog::for_class("PipeWater")
    }
}

impl ErrorLog {
    /// A log whose messages start with `class` in Godot's output.
    pub fn for_class(class: &'static str) -> Self {
        ErrorLog { reporter: class, last: String::new() }
    }

    /// Forwards a rejected argument or failed operation to Godot and remembers it.
    pub fn reject(&mut self, message: String) {
        godot_error!("{}: {message}", self.reporter);
        self.last = message;
    }

    /// The value of a check, or `None` after reporting why it failed.
    pub fn accept<T>(&mut self, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(message) => {
                self.reject(message);
                None
            }
        }
    }

    /// Unwraps a core call made on the simulation (`None` when there was none), reporting the
    /// core's error under `method`.
    pub fn core_result<T>(&mut self, method: &str, result: Option<Result<T, CoreError>>) -> Option<T> {
        match result? {
            Ok(v) => Some(v),
            Err(e) => {
                self.reject(format!("{method}: {}", core_message(&e)));
                None
            }
        }
    }

    /// The most recent message; empty when none.
    pub fn last(&self) -> &str {
        &self.last
    }

    /// Forgets the last message (`clear_last_error()`).
    pub fn clear(&mut self) {
        self.last.clear();
    }
}

/// A core error worded as the node's own checks word theirs: an argument out of range reads
/// "`name` = value is out of range: valid range is …".
pub fn core_message(e: &CoreError) -> String {
    match e {
        CoreError::InvalidArgument { name, value, valid } => format!("{name} = {value} is out of range: valid range is {valid}"),
        other => other.to_string(),
    }
}

/// A core error about the node's property `property` (whatever the core calls the value), with
/// the property's name, its value and its valid range.
pub fn property_message(property: &str, e: &CoreError) -> String {
    match e {
        CoreError::InvalidArgument { value, valid, .. } => format!("{property} = {value} is out of range: valid range is {valid}"),
        other => format!("{property}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_range_errors_name_the_property_its_value_and_its_range() {
        let e = CoreError::invalid("level", "3000 m", "-1000000 ..= 2048 m on this terrain");
        let message = property_message("initial_water_level", &e);
        let by_core = core_message(&CoreError::invalid("boundary_level_north", "3000 m", "..= 2050 m"));
        println!("{message}\n{by_core}");
        assert_eq!(message, "initial_water_level = 3000 m is out of range: valid range is -1000000 ..= 2048 m on this terrain");
        assert_eq!(by_core, "boundary_level_north = 3000 m is out of range: valid range is ..= 2050 m");
        assert_eq!(property_message("backend", &CoreError::Gpu("x".into())), "backend: GPU error: x");
    }
}
