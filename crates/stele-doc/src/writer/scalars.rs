//! The scalar values of [`DocumentWriter`]: null, booleans, numbers and strings (short,
//! plain or stored LZ4-compressed).

use super::number::{self, Number};
use super::{DocumentWriter, SHORT_STRING_BYTES};
use crate::error::{Error, Result};
use crate::format::{Tag, put_varint, varint_len};

impl DocumentWriter {
    /// Writes `null`.
    pub fn null(&mut self) -> Result<()> {
        self.value_slot("null")?;
        self.commit(Tag::Null, 0);
        Ok(())
    }

    /// Writes `true` or `false`.
    pub fn bool(&mut self, value: bool) -> Result<()> {
        self.value_slot("a bool")?;
        self.commit(if value { Tag::True } else { Tag::False }, 0);
        Ok(())
    }

    /// Writes a signed integer in the narrowest of 1, 2, 4 or 8 bytes.
    pub fn i64(&mut self, value: i64) -> Result<()> {
        let pos = self.value_slot("an integer")?;
        let tag = self.put_i64(value);
        self.commit(tag, pos);
        Ok(())
    }

    /// Writes an unsigned integer (values above `i64::MAX` keep all their bits).
    pub fn u64(&mut self, value: u64) -> Result<()> {
        let pos = self.value_slot("an integer")?;
        let tag = match i64::try_from(value) {
            Ok(v) => self.put_i64(v),
            Err(_) => {
                self.out.extend_from_slice(&value.to_le_bytes());
                Tag::U64
            }
        };
        self.commit(tag, pos);
        Ok(())
    }

    /// Writes a finite float; it prints back in its shortest round-trip form.
    pub fn f64(&mut self, value: f64) -> Result<()> {
        if !value.is_finite() {
            return Err(Error::NonFiniteFloat { value });
        }
        let pos = self.value_slot("a float")?;
        self.out.extend_from_slice(&value.to_le_bytes());
        self.commit(Tag::F64, pos);
        Ok(())
    }

    /// Writes a number given as JSON number text, kept exactly (see the module `number`).
    pub fn number_text(&mut self, text: &str) -> Result<()> {
        let bytes = text.as_bytes();
        match number::scan_number(bytes) {
            Ok((len, integer)) if len == bytes.len() => self.number_checked(bytes, integer),
            _ => Err(Error::InvalidNumber {
                text: text.to_owned(),
            }),
        }
    }

    /// Writes a number whose text passed `scan_number`.
    #[inline]
    pub(crate) fn number_checked(&mut self, text: &[u8], integer: bool) -> Result<()> {
        self.number_classified(text, number::classify(text, integer))
    }

    /// Writes a number whose text passed `scan_number` and was classified as `number`.
    #[inline]
    pub(crate) fn number_classified(&mut self, text: &[u8], number: Number) -> Result<()> {
        let pos = self.value_slot("a number")?;
        let tag = match number {
            Number::Int(v) => self.put_i64(v),
            Number::UInt(v) => {
                self.out.extend_from_slice(&v.to_le_bytes());
                Tag::U64
            }
            Number::Scaled(negative, mantissa, scale) => {
                self.out.push(scale | if negative { 0x80 } else { 0 });
                put_varint(&mut self.out, mantissa);
                Tag::Scaled
            }
            Number::Decimal => {
                put_varint(&mut self.out, text.len() as u64);
                self.out.extend_from_slice(text);
                Tag::Decimal
            }
        };
        self.commit(tag, pos);
        Ok(())
    }

    /// Writes a scaled decimal: `mantissa / 10^scale`, negative if `negative`, kept exactly
    /// with its trailing zeros (`12.50` is mantissa 1250, scale 2). `scale` is 1 to 127; a
    /// number without fraction digits is an integer ([`Self::i64`]).
    pub fn scaled(&mut self, negative: bool, mantissa: u64, scale: u8) -> Result<()> {
        if scale == 0 || scale > number::MAX_SCALE {
            return Err(Error::Builder {
                expected: "a scaled decimal with 1 to 127 fraction digits",
                got: "a scale of 0 or above 127",
            });
        }
        let pos = self.value_slot("a number")?;
        self.out.push(scale | if negative { 0x80 } else { 0 });
        put_varint(&mut self.out, mantissa);
        self.commit(Tag::Scaled, pos);
        Ok(())
    }

    #[inline]
    fn put_i64(&mut self, v: i64) -> Tag {
        if let Ok(v) = i8::try_from(v) {
            self.out.push(v as u8);
            Tag::I8
        } else if let Ok(v) = i16::try_from(v) {
            self.out.extend_from_slice(&v.to_le_bytes());
            Tag::I16
        } else if let Ok(v) = i32::try_from(v) {
            self.out.extend_from_slice(&v.to_le_bytes());
            Tag::I32
        } else {
            self.out.extend_from_slice(&v.to_le_bytes());
            Tag::I64
        }
    }

    /// Writes a string.
    pub fn string(&mut self, value: &str) -> Result<()> {
        self.string_bytes(value.as_bytes())
    }

    /// Writes a string from UTF-8 bytes the caller checked.
    #[inline]
    pub(crate) fn string_bytes(&mut self, value: &[u8]) -> Result<()> {
        let pos = self.value_slot("a string")?;
        let tag = self.put_string(value);
        self.commit(tag, pos);
        Ok(())
    }

    /// Writes a string of fewer than [`SHORT_STRING_BYTES`] bytes: the first `len` bytes of
    /// `window`. The same bytes as [`Self::string_bytes`] (so short a string is never
    /// compressed), stored with one fixed-size copy cut to length instead of a `memcpy` call of
    /// runtime length: most JSON strings are short (a name, a code, a number in quotes).
    #[inline]
    pub(crate) fn short_string(
        &mut self,
        window: &[u8; SHORT_STRING_BYTES],
        len: usize,
    ) -> Result<()> {
        let pos = self.value_slot("a string")?;
        debug_assert!(len < SHORT_STRING_BYTES);
        // A length below 128 is its own one-byte varint.
        self.out.push(len as u8);
        let end = self.out.len() + len;
        self.out.extend_from_slice(window);
        self.out.truncate(end);
        self.commit(Tag::String, pos);
        Ok(())
    }

    /// Appends a string payload, LZ4-compressed when long enough and worth it.
    #[inline]
    fn put_string(&mut self, s: &[u8]) -> Tag {
        if let Some(min) = self.opts.compress_min_bytes
            && s.len() >= min.max(SHORT_STRING_BYTES)
            && self.put_compressed(s)
        {
            return Tag::StringLz4;
        }
        put_varint(&mut self.out, s.len() as u64);
        self.out.extend_from_slice(s);
        Tag::String
    }

    /// Appends `s` as an LZ4 string if that saves at least an eighth; false if it did not.
    #[cold]
    fn put_compressed(&mut self, s: &[u8]) -> bool {
        // The longest compressed form kept: varint(len) + varint(n) + n <= len - len/8.
        let Some(max_n) = max_compressed_len(s.len()) else {
            return false;
        };
        // Grow only: zero-filling the whole buffer for every string would cost as much as
        // compressing it.
        let bound = lz4_flex::block::get_maximum_output_size(s.len());
        if self.scratch.len() < bound {
            self.scratch.resize(bound, 0);
        }
        let n = if s.len() <= crate::lz4::MAX_INPUT_BYTES && !self.opts.portable_scanner {
            // Stops as soon as the output passes `max_n`: the same decision, sooner.
            let out = self.scratch.get_mut(..max_n).unwrap_or_default();
            match self.lz4.compress_within(s, out) {
                Some(n) => n,
                None => return false,
            }
        } else {
            // A fresh table every time: `lz4_flex::block::compress`'s bytes.
            let out = self.scratch.get_mut(..bound).unwrap_or_default();
            match lz4_flex::block::compress_into(s, out) {
                Ok(n) if n <= max_n => n,
                _ => return false,
            }
        };
        put_varint(&mut self.out, s.len() as u64);
        put_varint(&mut self.out, n as u64);
        self.out
            .extend_from_slice(self.scratch.get(..n).unwrap_or_default());
        true
    }
}

/// The longest LZ4 form of a `len`-byte string that is stored compressed: one that saves at
/// least an eighth with its two length varints, `varint(len) + varint(n) + n <= len - len/8`;
/// `None` if no length qualifies. The left side grows with `n`, so every shorter form also
/// qualifies and every longer one does not.
fn max_compressed_len(len: usize) -> Option<usize> {
    let budget = (len - len / 8).checked_sub(varint_len(len as u64))?;
    // varint(n) + n <= budget: try the largest n each varint length allows.
    (0..budget)
        .rev()
        .take(10)
        .find(|&n| varint_len(n as u64) + n <= budget)
}

#[cfg(test)]
mod compressed_len_tests {
    use super::*;

    #[test]
    fn the_longest_kept_form_is_exact() {
        for len in 0..70_000usize {
            let kept =
                |n: usize| varint_len(len as u64) + varint_len(n as u64) + n <= len - len / 8;
            match max_compressed_len(len) {
                Some(max) => assert!(kept(max) && !kept(max + 1), "len {len}"),
                None => assert!(!kept(0), "len {len}"),
            }
        }
    }
}
