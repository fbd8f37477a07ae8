//! The byte scanners of the JSON converter: where a string's plain run ends, where whitespace
//! ends, and how a number is read. One portable implementation (eight bytes at a time in a
//! `u64`, the converter's original code) and SIMD ones picked at run time: AVX2 or SSE2 on
//! x86-64 (other CPUs use the portable one: a NEON
//! scanner for aarch64 is not written yet).
//!
//! The parser is driven token by token, so it always knows whether it stands inside a string:
//! the scanners answer "where is the next byte that matters" from a known position, 16 or 32
//! bytes per step, and never need the in-string mask that a whole-input structural index
//! (simdjson's first stage) computes with a prefix XOR. Every scanner returns exactly what the
//! portable one returns (tests and the `json_scanners` fuzz target compare them).

use super::number::{self, Number};

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

/// What the parser asks of a scanner. Implementations are zero-sized tokens; the SIMD ones can
/// only be made where the CPU has their instructions.
pub(crate) trait Scan: Copy {
    /// Whether the parser takes its shortcuts: one UTF-8 check of the whole input (with SIMD)
    /// instead of one per non-ASCII string run, and short strings copied with one fixed-size
    /// store. False only for [`Portable`], the reference the others are compared with (tests,
    /// the `json_scanners` fuzz target), which keeps the converter's original code.
    const FAST_PATHS: bool = true;

    /// Index of the first `"`, `\` or control byte (< 0x20) at or after `i` (or `input.len()`),
    /// and whether any byte from `i` up to it is non-ASCII (then the run needs a UTF-8 check).
    fn find_special(self, input: &[u8], i: usize) -> (usize, bool);

    /// Index of the first byte at or after `i` that is not JSON whitespace (or `input.len()`).
    fn skip_ws(self, input: &[u8], i: usize) -> usize;

    /// Reads the JSON number at the start of `bytes`: its length and how it is stored, or where
    /// and why it is malformed (the position and reason of [`number::scan_number`]).
    #[inline(always)]
    fn number(self, bytes: &[u8]) -> Result<(usize, Number), (usize, &'static str)> {
        number::parse_number(bytes)
    }
}

/// The portable scanner: the converter's code before the SIMD scanners, kept as the fallback on
/// CPUs without them and as the reference the others are tested against (its numbers are read in
/// two passes: [`number::scan_number`], then [`number::classify`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Bit 7 of each byte of the result is set where `x` has a zero byte (exact for the lowest one).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// [`Scan::find_special`], eight bytes at a time: the common case is long plain runs.
#[inline(always)]
pub(crate) fn find_special(input: &[u8], mut i: usize) -> (usize, bool) {
    let mut non_ascii = 0u64;
    while let Some(chunk) = input.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*chunk);
        let special =
            zero_bytes(x ^ (ONES * b'"' as u64)) | zero_bytes(x ^ (ONES * b'\\' as u64)) | {
                // Bytes below 0x20: borrow into bit 7 only where the byte is < 0x20 and < 0x80.
                x.wrapping_sub(ONES * 0x20) & !x & HIGHS
            };
        if special != 0 {
            let at = (special.trailing_zeros() / 8) as usize;
            // Only the bytes before the special one matter for the UTF-8 check.
            non_ascii |= x & HIGHS & ((1u64 << (at * 8)) - 1);
            return (i + at, non_ascii != 0);
        }
        non_ascii |= x & HIGHS;
        i += 8;
    }
    let (end, seen) = find_special_bytewise(input, i);
    (end, seen || non_ascii != 0)
}

/// [`Scan::find_special`] one byte at a time: the tails the wider scanners leave.
#[inline(always)]
fn find_special_bytewise(input: &[u8], mut i: usize) -> (usize, bool) {
    let mut seen = false;
    while let Some(&b) = input.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        seen |= b >= 0x80;
        i += 1;
    }
    (i, seen)
}

/// Whether `b` is JSON whitespace (space, tab, line feed, carriage return).
#[inline(always)]
fn is_ws(b: u8) -> bool {
    b <= b' ' && matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// [`Scan::skip_ws`] one byte at a time.
#[inline(always)]
fn skip_ws_bytewise(input: &[u8], mut i: usize) -> usize {
    while input.get(i).is_some_and(|&b| is_ws(b)) {
        i += 1;
    }
    i
}

impl Scan for Portable {
    const FAST_PATHS: bool = false;

    #[inline(always)]
    fn find_special(self, input: &[u8], i: usize) -> (usize, bool) {
        find_special(input, i)
    }

    #[inline(always)]
    fn skip_ws(self, input: &[u8], i: usize) -> usize {
        skip_ws_bytewise(input, i)
    }

    #[inline(always)]
    fn number(self, bytes: &[u8]) -> Result<(usize, Number), (usize, &'static str)> {
        let (len, integer) = number::scan_number(bytes)?;
        Ok((
            len,
            number::classify(bytes.get(..len).unwrap_or_default(), integer),
        ))
    }
}

/// The scanner the converter uses on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// [`Portable`].
    Portable,
    #[cfg(target_arch = "x86_64")]
    /// [`x86::Sse2`] (every x86-64 CPU has SSE2).
    Sse2,
    #[cfg(target_arch = "x86_64")]
    /// [`x86::Avx2`], where the CPU has it (checked at run time).
    Avx2,
}

impl Level {
    /// The fastest scanner this CPU runs (the feature check is cached by `std`).
    #[inline]
    pub(crate) fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if x86::Avx2::new().is_some() {
                return Level::Avx2;
            }
            Level::Sse2
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Level::Portable
        }
    }

    /// Its name, for benchmark headers.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable (8 bytes in a u64)",
            #[cfg(target_arch = "x86_64")]
            Level::Sse2 => "SSE2 (16 bytes)",
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => "AVX2 (32 bytes)",
        }
    }
}

#[cfg(test)]
mod tests;
