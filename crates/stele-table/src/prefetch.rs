//! A software prefetch hint, for passes that walk arena records in sorted order: each key
//! is a cache miss at a random address, and asking for the keys a few records ahead lets
//! the misses overlap instead of stalling one after another.

/// Asks the CPU to start loading the cache line holding `bytes[0]`; a no-op elsewhere.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    prefetch_ptr(bytes.as_ptr());
}

/// Asks the CPU to start loading the cache line holding address `at`, which need not be
/// valid (a prefetch of an unmapped address is dropped); a no-op elsewhere.
#[inline(always)]
pub(crate) fn prefetch_ptr(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` is `unsafe` only because it is an intrinsic with a
        // `target_feature` (SSE, part of the x86_64 baseline, so always present). A prefetch
        // never faults, whatever the address, and has no effect on memory or program state.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
