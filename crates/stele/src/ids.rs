//! Kinds of document ids, and the stored key of an integer id.
//!
//! A collection holds text ids or integer ids, never both. Text ids are stored as their
//! UTF-8 bytes. Integer ids (`i64`) are stored as a key whose byte order is the numbers'
//! order, so that a collection of integer ids iterates, ranges and packs in numeric order:
//!
//! ```text
//! n >= 0:  [0x40 + d]  d ASCII digits of n            0 -> "A0", 42 -> "B42", 1000 -> "D1000"
//! n <  0:  [0x40 - d]  d ASCII digits of |n|, each    -1 -> "?8", -42 -> ">57", i64::MIN ->
//!                      replaced by '9' minus it               "-0776627963145224191"
//! ```
//!
//! `d` is the number of digits (1 to 19, no leading zero). A longer non-negative number
//! is a bigger one, and its first byte (`A` to `S`) is bigger; a longer negative number is
//! a smaller one, and its first byte (`?` down to `-`) is smaller; among numbers of as many
//! digits, the digits (complemented for negatives) sort as the numbers do. Every key is
//! ASCII, so code that carries ids as text carries these keys unchanged, and they front-code
//! and compress as the decimal text they hold. Which kind a collection holds is the meta
//! key `ids/<collection>` (value `int`; absent: text), taken from its first documents
//! ([`crate::Batch::put_json_int`], an import whose id field holds integers).

use crate::error::{Error, Result};

pub use crate::id_kind::IdKind;

/// The value of the meta key that marks a collection of integer ids.
pub(crate) const INT_MARK: &[u8] = b"int";

/// First byte of the key of a non-negative integer of no digits; see the module
/// documentation.
const ZERO_DIGITS: u8 = 0x40;

/// The stored key of integer id `n` (see the module documentation).
pub fn int_key(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let d = digits.len() as u8;
    let mut out = String::with_capacity(digits.len() + 1);
    if n >= 0 {
        out.push(char::from(ZERO_DIGITS + d));
        out.push_str(&digits);
    } else {
        out.push(char::from(ZERO_DIGITS - d));
        out.extend(digits.bytes().map(|b| char::from(b'9' - b + b'0')));
    }
    out
}

/// The integer whose stored key is `key`, or `None` if `key` is no such key.
pub fn int_from_key(key: &[u8]) -> Option<i64> {
    let (&first, digits) = key.split_first()?;
    let negative = first < ZERO_DIGITS;
    let d = if negative {
        ZERO_DIGITS.checked_sub(first)?
    } else {
        first - ZERO_DIGITS
    };
    if usize::from(d) != digits.len() || !(1..=19).contains(&d) {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &b in digits {
        let digit = if negative {
            b'9'.checked_sub(b)?
        } else {
            b.checked_sub(b'0')?
        };
        if digit > 9 {
            return None;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    // No leading zero: one key per number.
    if d > 1 && magnitude < 10u64.pow(u32::from(d) - 1) {
        return None;
    }
    if negative {
        if magnitude == 0 {
            return None;
        }
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// The integer `text` writes as people and JSON write integers (`-12`, `0`, `42`: an
/// optional minus, digits, no leading zero, no `-0`), if it fits an `i64`.
pub fn parse_int_id(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    canonical.then(|| text.parse().ok()).flatten()
}

/// The stored key of id `id` in a collection of ids of kind `kind`: the bytes of a text
/// id, the key of an integer written as text ([`parse_int_id`]); an error saying which
/// kind the collection holds for an id of the other kind.
pub(crate) fn key_for<'a>(
    collection: &str,
    kind: IdKind,
    id: &'a str,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    match kind {
        // Borrowed: a get by text id allocates nothing here.
        IdKind::Text => Ok(std::borrow::Cow::Borrowed(id.as_bytes())),
        IdKind::Int => match parse_int_id(id) {
            Some(n) => Ok(std::borrow::Cow::Owned(int_key(n).into_bytes())),
            None => Err(Error::IdKindMismatch {
                collection: collection.to_owned(),
                holds: IdKind::Int,
                id: id.chars().take(80).collect(),
            }),
        },
    }
}

/// The id of stored key `key` in a collection of ids of kind `kind`, as text: the
/// decimal integer in a collection of integer ids.
pub(crate) fn id_text(kind: IdKind, key: Vec<u8>) -> String {
    match (kind, int_from_key(&key)) {
        (IdKind::Int, Some(n)) => n.to_string(),
        _ => String::from_utf8(key)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDGES: [i64; 16] = [
        i64::MIN,
        i64::MIN + 1,
        -10_000_000_000,
        -1000,
        -999,
        -100,
        -42,
        -10,
        -9,
        -1,
        0,
        1,
        9,
        10,
        1_000_000_007,
        i64::MAX,
    ];

    #[test]
    fn keys_sort_as_the_numbers_and_decode_back() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut numbers: Vec<i64> = EDGES.to_vec();
        for _ in 0..5000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // Every magnitude: shift by a random amount.
            numbers.push((rng as i64) >> (rng % 64));
        }
        for &n in &numbers {
            let key = int_key(n);
            assert!(key.is_ascii(), "{n}: {key}");
            assert_eq!(int_from_key(key.as_bytes()), Some(n), "{n}: {key}");
            assert_eq!(parse_int_id(&n.to_string()), Some(n));
        }
        for pair in numbers.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert_eq!(a.cmp(&b), int_key(a).cmp(&int_key(b)), "{a} {b}");
        }
        assert_eq!(int_key(42), "B42");
        assert_eq!(int_key(-42), ">57");
        assert_eq!(int_key(i64::MIN), "-0776627963145224191");
    }

    #[test]
    fn other_keys_and_texts_are_no_integers() {
        for key in [
            &b""[..],
            b"A",
            b"A00",
            b"B05",
            b"B4",
            b"?9",
            b"T12345678901234567890",
            b"S9999999999999999999",
            b"-0776627963145224190",
            b"Ax",
            b"42",
        ] {
            assert_eq!(int_from_key(key), None, "{}", String::from_utf8_lossy(key));
        }
        for text in [
            "",
            "-",
            "-0",
            "007",
            "+1",
            "1.0",
            "1e3",
            " 1",
            "9223372036854775808",
        ] {
            assert_eq!(parse_int_id(text), None, "{text}");
        }
        let err = key_for("c", IdKind::Int, "abc").unwrap_err();
        assert!(err.to_string().contains("integer ids"), "{err}");
        assert_eq!(key_for("c", IdKind::Int, "-7").unwrap().as_ref(), b"?2");
        assert_eq!(id_text(IdKind::Int, b"?2".to_vec()), "-7");
        assert_eq!(id_text(IdKind::Text, b"?2".to_vec()), "?2");
    }
}
