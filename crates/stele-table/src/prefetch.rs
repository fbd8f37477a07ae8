//! A software prefetch hint, for passes that walk arena records in sorted order: each key
//! is a cache miss at a random address, and asking for the keys a few records ahead lets
//! the misses overlap instead of stalling one after another.

/// Asks the CPU to start loading the cache line holding `bytes[0]`; a no-op elsewhere.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` is `unsafe` only because it is an intrinsic with a
        // `target_feature` (SSE, part of the x86_64 baseline, so always present). A prefetch
        // never faults and has no effect on memory or program state; the pointer comes from
        // a live slice anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
