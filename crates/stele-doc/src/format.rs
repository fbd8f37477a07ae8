//! On-disk constants of the document format and the small codecs every part shares.
//!
//! The byte layout is specified in `docs/FORMAT.md`; this module is its executable half. Anything
//! that changes the meaning of stored bytes must bump [`FORMAT_VERSION`].

/// The version of the document layout written by this crate and the only one it reads.
pub const FORMAT_VERSION: u8 = 1;

/// First byte of every document: magic nibble `0xB` and the format version.
pub const HEADER_BYTE: u8 = 0xB0 | FORMAT_VERSION;

/// Deepest nesting of containers any document may have; writers may set a lower limit.
///
/// Readers and the validator recurse once per level, so this bounds their stack use.
pub const MAX_DEPTH: usize = 1024;

/// Smallest possible document: header, root tag, trailer flags and two one-byte positions.
pub const MIN_DOCUMENT_BYTES: usize = 5;

/// Object header flag: the object stores its input property order explicitly.
pub(crate) const OBJ_HAS_ORDER: u8 = 1 << 4;
/// Object header flag: the input property order is ascending key id (the order in which the
/// names were first used in the document), so no explicit order is stored.
pub(crate) const OBJ_ORDER_BY_ID: u8 = 1 << 5;
/// Array header flag: every element has the same tag, stored once.
pub(crate) const ARR_UNIFORM: u8 = 1 << 4;

/// The type of a stored value, as written in container tag arrays and in the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Tag {
    /// `null`; no payload.
    Null = 0,
    /// `false`; no payload.
    False = 1,
    /// `true`; no payload.
    True = 2,
    /// Signed integer, 1 byte.
    I8 = 3,
    /// Signed integer, 2 bytes little-endian.
    I16 = 4,
    /// Signed integer, 4 bytes little-endian.
    I32 = 5,
    /// Signed integer, 8 bytes little-endian.
    I64 = 6,
    /// Unsigned integer above `i64::MAX`, 8 bytes little-endian.
    U64 = 7,
    /// IEEE 754 double, 8 bytes little-endian; its shortest text is the original text.
    F64 = 8,
    /// A JSON number kept exactly as its text: varint length, ASCII bytes.
    Decimal = 9,
    /// UTF-8 string: varint length, bytes.
    String = 10,
    /// LZ4 block-compressed UTF-8 string: varint raw length, varint compressed length, block.
    StringLz4 = 11,
    /// Object: header at the referenced position, children before it.
    Object = 12,
    /// Array: header at the referenced position, children before it.
    Array = 13,
    /// A decimal fraction without exponent (`-12.50`): 1 byte (bit 7 sign, bits 0-6 the number
    /// of fraction digits, 1..=127), then the digits as one varint integer. Exact text, no
    /// float conversion on write.
    Scaled = 14,
}

impl Tag {
    /// Decodes a tag byte; `None` for bytes no version-1 writer produces.
    #[inline]
    pub fn from_u8(byte: u8) -> Option<Tag> {
        Some(match byte {
            0 => Tag::Null,
            1 => Tag::False,
            2 => Tag::True,
            3 => Tag::I8,
            4 => Tag::I16,
            5 => Tag::I32,
            6 => Tag::I64,
            7 => Tag::U64,
            8 => Tag::F64,
            9 => Tag::Decimal,
            10 => Tag::String,
            11 => Tag::StringLz4,
            12 => Tag::Object,
            13 => Tag::Array,
            14 => Tag::Scaled,
            _ => return None,
        })
    }

    /// Whether a value of this tag has bytes of its own (and so a nonzero offset).
    #[inline]
    pub fn has_payload(self) -> bool {
        !matches!(self, Tag::Null | Tag::False | Tag::True)
    }

    /// Whether the tag is an object or an array.
    #[inline]
    pub fn is_container(self) -> bool {
        matches!(self, Tag::Object | Tag::Array)
    }

    /// Fixed payload size for scalar tags with one.
    #[inline]
    pub(crate) fn fixed_size(self) -> Option<usize> {
        match self {
            Tag::I8 => Some(1),
            Tag::I16 => Some(2),
            Tag::I32 => Some(4),
            Tag::I64 | Tag::U64 | Tag::F64 => Some(8),
            _ => None,
        }
    }

    /// A short human name, used in errors and `stele inspect`.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Null => "null",
            Tag::False | Tag::True => "bool",
            Tag::I8 | Tag::I16 | Tag::I32 | Tag::I64 | Tag::U64 => "integer",
            Tag::F64 => "float",
            Tag::Decimal | Tag::Scaled => "decimal",
            Tag::String | Tag::StringLz4 => "string",
            Tag::Object => "object",
            Tag::Array => "array",
        }
    }
}

/// Bytes of an offset of width code `code` (0..=3 → 1, 2, 4, 8).
#[inline]
pub(crate) fn width_bytes(code: u8) -> usize {
    1usize << (code & 3)
}

/// The narrowest width code whose unsigned integers hold `max`.
#[inline]
pub(crate) fn width_code_for(max: u64) -> u8 {
    if max <= 0xFF {
        0
    } else if max <= 0xFFFF {
        1
    } else if max <= 0xFFFF_FFFF {
        2
    } else {
        3
    }
}

/// Appends `value` as `width` little-endian bytes; the caller chose `width` to hold it.
#[inline]
pub(crate) fn put_uint(out: &mut Vec<u8>, value: u64, width: usize) {
    debug_assert!(width == 8 || value < (1u64 << (8 * width)));
    // One fixed-size store per width: a slice of runtime length would call `memcpy`.
    match width {
        1 => out.push(value as u8),
        2 => out.extend_from_slice(&(value as u16).to_le_bytes()),
        4 => out.extend_from_slice(&(value as u32).to_le_bytes()),
        _ => out.extend_from_slice(&value.to_le_bytes()),
    }
}

/// Reads a `width`-byte little-endian unsigned integer at `pos`, if it is in bounds. `width` is
/// 1, 2, 4 or 8 (anything else reads nothing); each width is a single load, no `memcpy` call.
#[inline]
pub(crate) fn get_uint(bytes: &[u8], pos: usize, width: usize) -> Option<u64> {
    let rest = bytes.get(pos..)?;
    match width {
        1 => rest.first().map(|&b| u64::from(b)),
        2 => rest
            .first_chunk::<2>()
            .map(|b| u64::from(u16::from_le_bytes(*b))),
        4 => rest
            .first_chunk::<4>()
            .map(|b| u64::from(u32::from_le_bytes(*b))),
        8 => rest.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)),
        _ => None,
    }
}

/// The two digits of every number below 100, `00` to `99`.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `n` at the end of `buf` and returns them (no allocation; 20
/// bytes hold every `u64`). Two digits a division: the JSON writer prints every number of
/// every row it renders.
#[inline]
pub(crate) fn u64_digits(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    #[inline(always)]
    fn pair(buf: &mut [u8; 20], i: usize, two: usize) {
        if let (Some(dst), Some(src)) =
            (buf.get_mut(i..i + 2), DIGIT_PAIRS.get(2 * two..2 * two + 2))
        {
            dst.copy_from_slice(src);
        }
    }
    let mut i = buf.len();
    while n >= 100 {
        i -= 2;
        pair(buf, i, (n % 100) as usize);
        n /= 100;
    }
    if n >= 10 {
        i -= 2;
        pair(buf, i, n as usize);
    } else {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + n as u8;
        }
    }
    buf.get(i..).unwrap_or_default()
}

/// Appends `bytes` to `out`: byte by byte when short (most keys, numbers and string
/// values of a document), where a `memcpy` call cost more than the copy (13 % of writing
/// small documents as JSON, profiled); `extend_from_slice` otherwise.
#[inline(always)]
pub(crate) fn append(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() <= 16 {
        out.reserve(bytes.len());
        for &b in bytes {
            out.push(b);
        }
    } else {
        out.extend_from_slice(bytes);
    }
}

/// Appends `value` as LEB128.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a LEB128 value at `pos`: `(value, bytes used)`. Rejects overlong and overflowing forms
/// so that every value has exactly one encoding: the rule of `stele_table::varint`, which the
/// other crates share. This crate depends on no other Stele crate, so it keeps this copy; its
/// tests check it against the shared one.
// Always inlined: the one-byte form (lengths and counts under 128, nearly all) is a load and a
// compare; longer forms take the out-of-line loop.
#[inline(always)]
pub(crate) fn get_varint(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let first = *bytes.get(pos)?;
    if first < 0x80 {
        return Some((u64::from(first), 1));
    }
    get_varint_long(bytes, pos)
}

/// [`get_varint`] for values of two bytes and more.
#[inline(never)]
fn get_varint_long(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut shift = 0u32;
    let mut used = 0usize;
    loop {
        let byte = *bytes.get(pos + used)?;
        used += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            // A final zero byte after the first one is an overlong encoding.
            if byte == 0 && used > 1 {
                return None;
            }
            return Some((value, used));
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Bytes `put_varint` uses for `value`.
#[inline]
pub(crate) fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_rejects_overlong() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(get_varint(&out, 0), Some((v, out.len())));
        }
        assert_eq!(get_varint(&[0x80, 0x00], 0), None);
        assert_eq!(get_varint(&[0xFF; 11], 0), None);
        assert_eq!(get_varint(&[0x80], 0), None);
    }

    /// This copy of the codec against the one the other crates share, `stele_table::varint`
    /// (a dev-dependency only: the library depends on no other Stele crate), whose tests
    /// check the rule: the same bytes written for every value, the same verdict on every
    /// input, so the same rule.
    mod same_rule_as_stele_table {
        use super::super::*;
        use proptest::prelude::*;
        use stele_table::varint;

        /// Bytes around varint edges: continuation bytes, zeroes, the values a 10th byte may
        /// and may not hold, anything.
        fn edgy_bytes() -> impl Strategy<Value = Vec<u8>> {
            let byte = prop_oneof![
                Just(0x80u8),
                Just(0xff),
                Just(0x00),
                Just(0x01),
                Just(0x02),
                Just(0x7f),
                Just(0x81),
                any::<u8>(),
            ];
            proptest::collection::vec(byte, 0..13)
        }

        proptest! {
            #[test]
            fn writes_the_same_bytes(v: u64, small in 0u64..(1 << 21)) {
                for v in [v, small, u64::from(v as u32)] {
                    let (mut mine, mut shared) = (Vec::new(), Vec::new());
                    put_varint(&mut mine, v);
                    varint::put(&mut shared, v);
                    prop_assert_eq!(&mine, &shared);
                    prop_assert_eq!(varint_len(v), varint::len(v));
                }
            }

            #[test]
            fn reads_with_the_same_verdict(bytes in edgy_bytes(), at in 0usize..3) {
                let shared = varint::decode(&bytes, at).ok().map(|(v, end)| (v, end - at));
                prop_assert_eq!(get_varint(&bytes, at), shared, "{:02x?} at {}", bytes, at);
            }

            #[test]
            fn rejects_every_overlong_form(v in 0u64..(1 << 35), extra in 1usize..6) {
                let mut b = Vec::new();
                put_varint(&mut b, v);
                if let Some(last) = b.last_mut() {
                    *last |= 0x80;
                }
                b.resize(b.len() + extra - 1, 0x80);
                b.push(0);
                prop_assert_eq!(get_varint(&b, 0), None);
                prop_assert!(varint::decode(&b, 0).is_err());
            }
        }
    }

    #[test]
    fn widths() {
        assert_eq!(width_code_for(0), 0);
        assert_eq!(width_code_for(255), 0);
        assert_eq!(width_code_for(256), 1);
        assert_eq!(width_code_for(70_000), 2);
        assert_eq!(width_code_for(1 << 40), 3);
        for code in 0..4 {
            let w = width_bytes(code);
            let mut out = Vec::new();
            let v = if w == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * w)) - 1
            };
            put_uint(&mut out, v, w);
            assert_eq!(get_uint(&out, 0, w), Some(v));
        }
        assert_eq!(get_uint(&[1, 2], 1, 2), None);
    }
}
