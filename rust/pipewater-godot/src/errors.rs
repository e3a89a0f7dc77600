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
                self.reject(format!("{method}: {e}"));
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
