//! Mass bookkeeping: `total = initial + added − removed + boundary_in − boundary_out − solidified`.

use crate::state::Counters;

/// The water a simulation should hold, from where it started and what crossed its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MassLedger {
    /// Total water when the state was loaded, quanta.
    pub initial: i64,
    /// What crossed the domain's limits since.
    pub counters: Counters,
    /// Fluid that cooled into ground since, quanta ([`crate::cooling`]): it left the water and
    /// raised the terrain by as many quanta. The backend counts it with the others
    /// ([`Counters::solidified`], on the device for the GPU backends); a simulation's ledgers
    /// carry the same number here.
    pub solidified: u64,
}

impl MassLedger {
    /// The total the identity predicts, quanta. Taken modulo 2⁶⁴ like the counters
    /// ([`Counters::net`]): exact whenever the identity holds, since the total is then what a
    /// grid holds, and never an overflow, whatever a restored save's counters say.
    pub fn expected_total(&self) -> i64 {
        self.initial.wrapping_add(self.counters.net()).wrapping_sub(self.solidified as i64)
    }

    /// `actual − expected`, quanta: zero when the identity holds (modulo 2⁶⁴, like
    /// [`MassLedger::expected_total`]).
    pub fn discrepancy(&self, actual_total: i64) -> i64 {
        actual_total.wrapping_sub(self.expected_total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This crate's tests run with integer overflow checks (Cargo.toml's `dev` and `test`
    /// profiles, which the editor's debug library is built with too): an unchecked sum that
    /// overflows panics here instead of wrapping, so the tests of hostile input would see it.
    #[test]
    fn an_unchecked_overflow_panics_in_this_build() {
        let overflowed = std::panic::catch_unwind(|| std::hint::black_box(i64::MAX) + std::hint::black_box(1));
        println!("i64::MAX + 1 unchecked: {}", if overflowed.is_err() { "panicked" } else { "wrapped" });
        assert!(overflowed.is_err());
    }

    /// Counters pushed past 2⁶³ and past 2⁶⁴ keep the ledger exact: the net and the expected total
    /// are taken modulo 2⁶⁴, as the devices count, and equal those of the counters before the push.
    #[test]
    fn counters_past_two_to_the_sixty_four_keep_the_net_and_the_expected_total() {
        let small = Counters { added: 7_000, removed: 2_000, boundary_in: 500, boundary_out: 1_500, solidified: 0 };
        // 2⁶³ more added and entered (2⁶⁴ in all), and 10 000 quanta fewer removed (wrapping below
        // zero) and added.
        let wrapped = Counters { added: small.added.wrapping_add(1 << 63).wrapping_sub(10_000), removed: small.removed.wrapping_sub(10_000), boundary_in: small.boundary_in.wrapping_add(1 << 63), boundary_out: small.boundary_out, solidified: 0 };
        let (a, b) = (MassLedger { initial: 1_000_000, counters: small, solidified: 0 }, MassLedger { initial: 1_000_000, counters: wrapped, solidified: 0 });
        println!("net {} and {}; expected totals {} and {}", small.net(), wrapped.net(), a.expected_total(), b.expected_total());
        assert_eq!(small.net(), 4_000);
        assert_eq!(wrapped.net(), small.net());
        assert_eq!(b.expected_total(), 1_004_000);
        assert_eq!(b.discrepancy(1_004_000), 0);
    }
}
