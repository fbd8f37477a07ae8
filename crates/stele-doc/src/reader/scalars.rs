//! The scalars a value may hold beside numbers and booleans: strings ([`Str`], borrowed or
//! LZ4-compressed) and exact decimal fractions ([`ScaledDecimal`]).

use std::borrow::Cow;

/// A string stored in a document: borrowed as is, or LZ4-compressed.
#[derive(Clone, Copy)]
pub struct Str<'a> {
    /// The UTF-8 bytes, or the LZ4 block when `raw_len` is set.
    pub(super) bytes: &'a [u8],
    /// Length after decompression; `None` for a plain string.
    pub(super) raw_len: Option<usize>,
}

impl std::fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.to_cow(), f)
    }
}

impl<'a> Str<'a> {
    /// Length in bytes of the (decompressed) string.
    pub fn len(&self) -> usize {
        self.raw_len.unwrap_or(self.bytes.len())
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the string is stored compressed (reading it allocates).
    pub fn is_compressed(&self) -> bool {
        self.raw_len.is_some()
    }

    /// Bytes the string takes in the document, without its length prefix.
    pub fn stored_len(&self) -> usize {
        self.bytes.len()
    }

    /// The string without copying, if it is stored uncompressed.
    pub fn as_borrowed(&self) -> Option<&'a str> {
        match self.raw_len {
            // SAFETY: documents are validated (or promised valid by the caller of
            // `Document::new_unchecked`), and validation checked this string is UTF-8.
            None => Some(unsafe { std::str::from_utf8_unchecked(self.bytes) }),
            Some(_) => None,
        }
    }

    /// The string: borrowed when stored plain, decompressed otherwise.
    pub fn to_cow(&self) -> Cow<'a, str> {
        match self.as_borrowed() {
            Some(s) => Cow::Borrowed(s),
            None => {
                let mut out = Vec::new();
                self.append_to(&mut out);
                // SAFETY: validation decompressed this string and checked it is UTF-8.
                Cow::Owned(unsafe { String::from_utf8_unchecked(out) })
            }
        }
    }

    /// Appends the string's UTF-8 bytes to `out` (decompressing if needed).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        match self.raw_len {
            None => out.extend_from_slice(self.bytes),
            Some(raw_len) => {
                let start = out.len();
                out.resize(start + raw_len, 0);
                let ok = out.get_mut(start..).is_some_and(|dst| {
                    matches!(lz4_flex::block::decompress_into(self.bytes, dst), Ok(n) if n == raw_len)
                });
                if !ok {
                    // Only reachable for invalid documents read through the unchecked path.
                    out.truncate(start);
                }
            }
        }
    }

    /// Compares with `other` without allocating when stored plain.
    pub fn eq_str(&self, other: &str) -> bool {
        match self.as_borrowed() {
            Some(s) => s == other,
            None => self.len() == other.len() && self.to_cow() == other,
        }
    }
}

/// A decimal fraction stored scaled: `mantissa / 10^scale`, with its sign. Prints back exactly
/// as written (`10.50` stays `10.50`, `-0.0` stays `-0.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScaledDecimal {
    pub(super) negative: bool,
    pub(super) mantissa: u64,
    pub(super) scale: u8,
}

impl ScaledDecimal {
    /// Whether a minus sign was written (also for zero).
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// All digits as one integer: 1050 for `10.50`.
    pub fn mantissa(&self) -> u64 {
        self.mantissa
    }

    /// Number of fraction digits: 2 for `10.50`.
    pub fn scale(&self) -> u8 {
        self.scale
    }

    /// The nearest `f64` (correctly rounded).
    pub fn to_f64(&self) -> f64 {
        crate::writer::number::scaled_to_f64(self.negative, self.mantissa, self.scale)
    }

    /// Appends the exact text.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        crate::writer::number::write_scaled(out, self.negative, self.mantissa, self.scale);
    }
}

impl std::fmt::Display for ScaledDecimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = Vec::with_capacity(24);
        self.write_to(&mut out);
        f.write_str(std::str::from_utf8(&out).map_err(|_| std::fmt::Error)?)
    }
}
