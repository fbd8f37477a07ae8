//! LEB128 unsigned varints, canonical: the one codec every Stele crate above `stele-table`
//! uses for the varints of stored bytes (tables, the document store's log, manifest, packed
//! blocks and stored values).
//!
//! A value has exactly one encoding, the shortest: 7 bits per byte, low bits first, bit 7
//! set on every byte but the last. Decoding rejects
//! - overlong forms: a last byte of zero after the first byte (`80 00` for 0), which
//!   [`put`] never writes;
//! - overflow: a 10th byte above 1 (it would carry bits past 64), so also every form
//!   longer than 10 bytes;
//! - truncation: the bytes end while bit 7 says more follow.
//!
//! (`stele-doc` keeps its own copy: it depends on no other Stele crate. Its tests check that
//! the copy writes the same bytes and gives the same verdict on every input as this one.)

use std::fmt;

/// Most bytes a varint takes (a `u64` needs 10).
pub const MAX_LEN: usize = 10;

/// Why the varint at `offset` does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes end inside the varint.
    Truncated {
        /// Where the varint starts.
        offset: usize,
    },
    /// The varint is longer than its value needs (a last byte of zero after the first).
    Overlong {
        /// Where the varint starts.
        offset: usize,
    },
    /// The varint holds more than 64 bits (a 10th byte above 1).
    Overflow {
        /// Where the varint starts.
        offset: usize,
    },
}

impl VarintError {
    /// Where the varint starts.
    pub fn offset(&self) -> usize {
        match *self {
            VarintError::Truncated { offset }
            | VarintError::Overlong { offset }
            | VarintError::Overflow { offset } => offset,
        }
    }
}

impl fmt::Display for VarintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarintError::Truncated { offset } => {
                write!(f, "the bytes end inside the varint at offset {offset}")
            }
            VarintError::Overlong { offset } => write!(
                f,
                "the varint at offset {offset} is overlong (a shorter form holds its value)"
            ),
            VarintError::Overflow { offset } => {
                write!(f, "the varint at offset {offset} overflows 64 bits")
            }
        }
    }
}

impl std::error::Error for VarintError {}

/// Appends `value` as a LEB128 varint (its shortest form).
#[inline]
pub fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // Truncation is the point: the low 7 bits go out with the continuation bit.
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Number of bytes `put` writes for `value`.
#[inline]
pub fn len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Decodes the varint at `pos` of `buf`: its value and the position after it.
#[inline]
pub fn decode(buf: &[u8], pos: usize) -> Result<(u64, usize), VarintError> {
    match buf.get(pos) {
        Some(&b) if b < 0x80 => Ok((u64::from(b), pos + 1)),
        _ => decode_long(buf, pos),
    }
}

/// [`decode`] past its one-byte case.
fn decode_long(buf: &[u8], start: usize) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    let mut at = start;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = buf.get(at) else {
            return Err(VarintError::Truncated { offset: start });
        };
        at += 1;
        if shift == 63 && byte > 1 {
            return Err(VarintError::Overflow { offset: start });
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            if byte == 0 && at - start > 1 {
                return Err(VarintError::Overlong { offset: start });
            }
            return Ok((value, at));
        }
    }
    // Unreachable: the 10th byte (shift 63) either ends the varint or is above 1.
    Err(VarintError::Overflow { offset: start })
}

/// [`decode`] for readers that only need to know that the bytes are bad: the value, and
/// `*pos` advanced past it; `None` (and `*pos` unchanged) if it does not decode.
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let (value, next) = decode(buf, *pos).ok()?;
    *pos = next;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded(v: u64) -> Vec<u8> {
        let mut b = Vec::new();
        put(&mut b, v);
        b
    }

    /// Every longer form of `v` than its shortest: continuation bits on the shortest form's
    /// last byte, then zero groups, the last one ending the varint.
    fn overlong_forms(v: u64) -> Vec<Vec<u8>> {
        let short = encoded(v);
        (short.len() + 1..=MAX_LEN)
            .map(|n| {
                let mut b = short.clone();
                if let Some(last) = b.last_mut() {
                    *last |= 0x80;
                }
                b.resize(n - 1, 0x80);
                b.push(0);
                b
            })
            .collect()
    }

    #[test]
    fn known_values() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX.into(),
            u64::MAX,
        ] {
            let b = encoded(v);
            assert_eq!(b.len(), len(v), "{v}");
            assert_eq!(decode(&b, 0), Ok((v, b.len())));
        }
        assert_eq!(encoded(u64::MAX).len(), MAX_LEN);
        assert_eq!(
            decode(&[0x80, 0x00], 0),
            Err(VarintError::Overlong { offset: 0 })
        );
        assert_eq!(
            decode(&[0x80], 0),
            Err(VarintError::Truncated { offset: 0 })
        );
        assert_eq!(decode(&[], 0), Err(VarintError::Truncated { offset: 0 }));
        assert_eq!(
            decode(&[0xff; 11], 0),
            Err(VarintError::Overflow { offset: 0 })
        );
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert_eq!(decode(&b, 0), Err(VarintError::Overflow { offset: 0 }));
        // The error says where the varint starts.
        let e = decode(&[7, 0x85, 0x80, 0x00], 1).unwrap_err();
        assert_eq!(e, VarintError::Overlong { offset: 1 });
        assert_eq!(
            e.to_string(),
            "the varint at offset 1 is overlong (a shorter form holds its value)"
        );
        let mut p = 1;
        assert_eq!(get(&[7, 0x85], &mut p), None);
        assert_eq!(p, 1);
    }

    proptest! {
        #[test]
        fn round_trip_u64(v: u64, prefix in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut b = prefix.clone();
            put(&mut b, v);
            prop_assert_eq!(b.len() - prefix.len(), len(v));
            prop_assert_eq!(decode(&b, prefix.len()), Ok((v, b.len())));
        }

        #[test]
        fn round_trip_u32(v: u32) {
            let b = encoded(v.into());
            prop_assert!(b.len() <= 5);
            prop_assert_eq!(decode(&b, 0), Ok((u64::from(v), b.len())));
        }

        #[test]
        fn every_overlong_form_is_rejected(v in 0u64..(1 << 35)) {
            for b in overlong_forms(v) {
                prop_assert_eq!(decode(&b, 0), Err(VarintError::Overlong { offset: 0 }), "{:02x?}", b);
            }
        }

        #[test]
        fn overflow_is_rejected(low in proptest::collection::vec(0x80u8..=0xff, 9), tenth in 2u8..=0xff, more: Vec<u8>) {
            let mut b = low;
            b.push(tenth);
            b.extend_from_slice(&more);
            prop_assert_eq!(decode(&b, 0), Err(VarintError::Overflow { offset: 0 }));
        }

        #[test]
        fn truncated_is_an_error(v in 128u64.., cut_seed: usize) {
            let b = encoded(v);
            let cut = cut_seed % b.len();
            prop_assert_eq!(decode(&b[..cut], 0), Err(VarintError::Truncated { offset: 0 }));
        }

        #[test]
        fn arbitrary_bytes_decode_to_their_one_form(bytes: Vec<u8>) {
            // Whatever decodes re-encodes to exactly the bytes it used.
            if let Ok((v, end)) = decode(&bytes, 0) {
                let again = encoded(v);
                prop_assert_eq!(&bytes[..end], again.as_slice());
            }
        }
    }
}
