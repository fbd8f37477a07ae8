//! Options of the writer: each setter states its default and what it trades.

use crate::format::MAX_DEPTH;

/// What to do when one object has the same key more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DuplicateKeys {
    /// Keep the last value, at the position of the first occurrence (what `JSON.parse` and
    /// `serde_json` do). The default: RFC 8259 allows such input and most producers mean this.
    #[default]
    LastWins,
    /// Keep the first value and ignore the later ones.
    FirstWins,
    /// Fail with [`crate::Error::DuplicateKey`] naming the key.
    Reject,
}

/// Which property order a document keeps for iteration and JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyOrder {
    /// Keep the order of the input (default). Costs one small index per object whose input order
    /// is not already sorted (1 byte per property for objects under 256 properties).
    #[default]
    Original,
    /// Keep only the sorted order: smaller documents, output with sorted keys.
    Sorted,
}

/// How the writer turns input into a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    pub(crate) duplicate_keys: DuplicateKeys,
    pub(crate) key_order: KeyOrder,
    pub(crate) max_depth: usize,
    pub(crate) compress_min_bytes: Option<usize>,
    pub(crate) portable_scanner: bool,
}

/// Strings shorter than this are never LZ4-compressed by default: below it LZ4 rarely saves the
/// 12.5% a compressed string must save, and the attempt costs time. Measured in
/// `docs/benchmarks.md` (string compression threshold).
pub const DEFAULT_COMPRESS_MIN_BYTES: usize = 128;

/// Nesting limit by default: as deep as `serde_json` accepts, far beyond real documents.
pub const DEFAULT_MAX_DEPTH: usize = 128;

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            duplicate_keys: DuplicateKeys::default(),
            key_order: KeyOrder::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            compress_min_bytes: Some(DEFAULT_COMPRESS_MIN_BYTES),
            portable_scanner: false,
        }
    }
}

impl WriteOptions {
    /// Policy for repeated keys in one object. Default: [`DuplicateKeys::LastWins`].
    pub fn duplicate_keys(mut self, policy: DuplicateKeys) -> Self {
        self.duplicate_keys = policy;
        self
    }

    /// Property order kept by documents. Default: [`KeyOrder::Original`].
    pub fn key_order(mut self, order: KeyOrder) -> Self {
        self.key_order = order;
        self
    }

    /// Deepest nesting accepted; deeper input fails with [`crate::Error::TooDeep`].
    /// Default 128; values above [`MAX_DEPTH`] (1024) are clamped to it, the format's own limit.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.min(MAX_DEPTH);
        self
    }

    /// Strings of at least this many bytes are stored LZ4-compressed when that saves at least
    /// one eighth of their size; `None` never compresses (faster writes and reads of long
    /// strings, larger documents). Default: `Some(128)`.
    pub fn compress_strings(mut self, min_bytes: Option<usize>) -> Self {
        self.compress_min_bytes = min_bytes;
        self
    }

    /// Converts JSON with the portable scanner (eight bytes at a time in a `u64`, numbers read in
    /// two passes: the converter before its SIMD scanners) even where this CPU has SIMD ones.
    /// Documents and errors are the same either way; this is for tests and comparisons.
    /// Default: `false` (AVX2 or SSE2 on x86-64, checked at run time).
    pub fn portable_scanner(mut self, portable: bool) -> Self {
        self.portable_scanner = portable;
        self
    }
}
