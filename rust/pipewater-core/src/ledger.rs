//! Mass bookkeeping: `total = initial + added − removed + boundary_in − boundary_out`.

use crate::state::Counters;

/// The water a simulation should hold, from where it started and what crossed its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MassLedger {
    /// Total water when the state was loaded, quanta.
    pub initial: i64,
    /// What crossed the domain's limits since.
    pub counters: Counters,
}

impl MassLedger {
    /// The total the identity predicts, quanta.
    pub fn expected_total(&self) -> i64 {
        self.initial + self.counters.net()
    }

    /// `actual − expected`, quanta: zero when the identity holds.
    pub fn discrepancy(&self, actual_total: i64) -> i64 {
        actual_total - self.expected_total()
    }
}
