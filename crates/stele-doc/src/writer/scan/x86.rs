//! SIMD scanners for x86-64: SSE2 (16 bytes a step; part of every x86-64 CPU) and AVX2 (32 bytes;
//! checked at run time). Each answers exactly what [`super::Portable`] answers.

use std::arch::x86_64::{
    __m128i, __m256i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8,
    _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
};

use super::{Scan, find_special_bytewise, is_ws, skip_ws_bytewise};

/// The SSE2 scanner.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sse2;

/// The AVX2 scanner; only [`Avx2::new`] makes one, after checking the CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2 {
    _checked: (),
}

impl Avx2 {
    /// The scanner, if this CPU has AVX2.
    #[inline]
    pub(crate) fn new() -> Option<Avx2> {
        is_x86_feature_detected!("avx2").then_some(Avx2 { _checked: () })
    }
}

/// Masks of 16 bytes at `input[i..i + 16]`: bit k set where byte k is `"`, `\` or below 0x20,
/// and bit k set where byte k is non-ASCII. `None` if fewer than 16 bytes remain.
#[inline(always)]
fn special_mask_16(input: &[u8], i: usize) -> Option<(u32, u32)> {
    let chunk = input.get(i..)?.first_chunk::<16>()?;
    // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline); `chunk` is 16 readable
    // bytes and `_mm_loadu_si128` has no alignment requirement.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned v <= 0x1F exactly where max(v, 0x1F) == 0x1F.
        let low = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        let special = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control));
        Some((special as u32, _mm_movemask_epi8(v) as u32))
    }
}

/// Bit k set where byte k of `input[i..i + 16]` is not JSON whitespace; `None` if fewer than 16
/// bytes remain.
#[inline(always)]
fn non_ws_mask_16(input: &[u8], i: usize) -> Option<u32> {
    let chunk = input.get(i..)?.first_chunk::<16>()?;
    // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline); `chunk` is 16 readable
    // bytes and `_mm_loadu_si128` has no alignment requirement.
    let ws = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8)),
            ),
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\r' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\t' as i8)),
            ),
        )
    };
    // SAFETY: as above.
    Some(!(unsafe { _mm_movemask_epi8(ws) } as u32) & 0xFFFF)
}

#[inline(always)]
fn find_special_sse2(input: &[u8], mut i: usize) -> (usize, bool) {
    let mut non_ascii = 0u32;
    while let Some((special, high)) = special_mask_16(input, i) {
        if special != 0 {
            let at = special.trailing_zeros();
            // Only the bytes before the special one matter for the UTF-8 check.
            non_ascii |= high & ((1u32 << at) - 1);
            return (i + at as usize, non_ascii != 0);
        }
        non_ascii |= high;
        i += 16;
    }
    let (end, seen) = find_special_bytewise(input, i);
    (end, seen || non_ascii != 0)
}

#[inline(always)]
fn skip_ws_sse2(input: &[u8], mut i: usize) -> usize {
    // Compact JSON: the next byte is already a token.
    if !input.get(i).is_some_and(|&b| is_ws(b)) {
        return i;
    }
    while let Some(mask) = non_ws_mask_16(input, i) {
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    skip_ws_bytewise(input, i)
}

impl Scan for Sse2 {
    #[inline(always)]
    fn find_special(self, input: &[u8], i: usize) -> (usize, bool) {
        find_special_sse2(input, i)
    }

    #[inline(always)]
    fn skip_ws(self, input: &[u8], i: usize) -> usize {
        skip_ws_sse2(input, i)
    }
}

/// [`special_mask_16`] for 32 bytes.
#[target_feature(enable = "avx2")]
#[inline]
fn special_mask_32(input: &[u8], i: usize) -> Option<(u32, u32)> {
    let chunk = input.get(i..)?.first_chunk::<32>()?;
    // SAFETY: `chunk` is 32 readable bytes; `_mm256_loadu_si256` has no alignment requirement.
    let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()) };
    let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
    let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
    let low = _mm256_set1_epi8(0x1F);
    let control = _mm256_cmpeq_epi8(_mm256_max_epu8(v, low), low);
    let special = _mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(quote, backslash), control));
    Some((special as u32, _mm256_movemask_epi8(v) as u32))
}

/// [`non_ws_mask_16`] for 32 bytes.
#[target_feature(enable = "avx2")]
#[inline]
fn non_ws_mask_32(input: &[u8], i: usize) -> Option<u32> {
    let chunk = input.get(i..)?.first_chunk::<32>()?;
    // SAFETY: `chunk` is 32 readable bytes; `_mm256_loadu_si256` has no alignment requirement.
    let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()) };
    let ws = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b' ' as i8)),
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\n' as i8)),
        ),
        _mm256_or_si256(
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\r' as i8)),
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\t' as i8)),
        ),
    );
    Some(!(_mm256_movemask_epi8(ws) as u32))
}

#[target_feature(enable = "avx2")]
#[inline]
fn find_special_avx2(input: &[u8], mut i: usize) -> (usize, bool) {
    let mut non_ascii = 0u32;
    while let Some((special, high)) = special_mask_32(input, i) {
        if special != 0 {
            let at = special.trailing_zeros();
            non_ascii |= high & ((1u64 << at) - 1) as u32;
            return (i + at as usize, non_ascii != 0);
        }
        non_ascii |= high;
        i += 32;
    }
    let (end, seen) = find_special_sse2(input, i);
    (end, seen || non_ascii != 0)
}

#[target_feature(enable = "avx2")]
#[inline]
fn skip_ws_avx2(input: &[u8], mut i: usize) -> usize {
    if !input.get(i).is_some_and(|&b| is_ws(b)) {
        return i;
    }
    while let Some(mask) = non_ws_mask_32(input, i) {
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 32;
    }
    skip_ws_sse2(input, i)
}

impl Scan for Avx2 {
    #[inline(always)]
    fn find_special(self, input: &[u8], i: usize) -> (usize, bool) {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2 (`Avx2::new`).
        unsafe { find_special_avx2(input, i) }
    }

    #[inline(always)]
    fn skip_ws(self, input: &[u8], i: usize) -> usize {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2 (`Avx2::new`).
        unsafe { skip_ws_avx2(input, i) }
    }
}
