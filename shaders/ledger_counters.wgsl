// The ledger's counters (common.wgsl COUNTER_*): each a 64-bit count of quanta kept in two u32
// words, low then high, added to with 32-bit atomics. A family that counts declares
// `counters: array<atomic<u32>, COUNTER_WORDS>` at its own binding and lists this file after common.wgsl
// (backend/gpu/shaders.rs).

// Adds `amount` quanta to counter `slot`, carrying into its high word when the low one wraps.
fn count(slot: u32, amount: u32) {
    if amount == 0u {
        return;
    }
    let old = atomicAdd(&counters[2u * slot], amount);
    if old > 0xffffffffu - amount {
        atomicAdd(&counters[2u * slot + 1u], 1u);
    }
}
