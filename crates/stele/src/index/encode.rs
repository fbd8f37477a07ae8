//! Order-preserving encoding of JSON values for index keys.
//!
//! Byte order of encodings is value order: missing < null < false < true < numbers (by
//! numeric value, exactly, whatever their JSON spelling) < strings (by UTF-8 bytes) <
//! objects < arrays. Every encoding delimits itself (no encoding is a prefix of another),
//! so tuples of values concatenate and compare element by element, and complementing every
//! byte of one encoding reverses its order (descending index fields).
//!
//! ```text
//! missing  0x08 (a document without the field: index entries only, never a value)
//! null     0x10            false 0x20          true 0x21
//! number   0x30 negative:  exponent and digits below, every byte complemented
//!          0x31 zero
//!          0x32 positive:  u16 big-endian (exponent + 0x8000), then one byte per
//!                          significant digit (digit + 1), then 0x00
//!          (value = 0.d1d2d3... x 10^exponent, d1 != 0, no trailing zero digits)
//! string   0x40, the bytes with 0x00 written as 0x00 0xFF, then 0x00 0x00
//! object   0x50, per property in key order (UTF-8 bytes): the key as a string, then its
//!          value; then 0x00
//! array    0x60, the elements in order, then 0x00
//! ```
//!
//! Objects compare property by property in key order (so key order in the text does not
//! matter), arrays element by element; a shorter one that is a prefix of the other sorts
//! first (0x00 is below every encoding's first byte).

use stele_doc::{JsonOptions, Value};

pub(crate) const MISSING: u8 = 0x08;
const NULL: u8 = 0x10;
const FALSE: u8 = 0x20;
const TRUE: u8 = 0x21;
const NEGATIVE: u8 = 0x30;
const ZERO: u8 = 0x31;
const POSITIVE: u8 = 0x32;
const STRING: u8 = 0x40;
const OBJECT: u8 = 0x50;
const ARRAY: u8 = 0x60;
/// Containers nested deeper than this are encoded as their JSON text (a string): documents
/// are at most 128 levels deep, so this only bounds the recursion.
const MAX_DEPTH: u32 = 200;

/// A JSON number's exact decimal form: sign, significant digits, exponent (value =
/// 0.digits x 10^exponent). `None` for text that is not a JSON number.
fn decimal(text: &str) -> Option<(bool, Vec<u8>, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (rest.get(..i)?, rest.get(i + 1..)?.parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (mantissa.get(..i)?, mantissa.get(i + 1..)?),
        None => (mantissa, ""),
    };
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let Some(first) = all.iter().position(|&d| d != 0) else {
        return Some((false, Vec::new(), 0)); // zero, whatever its sign
    };
    let last = all.iter().rposition(|&d| d != 0).unwrap_or(first);
    // The first significant digit sits at position `first` of the integer+fraction digits;
    // its place value is 10^(int.len() - 1 - first).
    let exponent = exp.checked_add(int.len() as i64 - first as i64)?;
    Some((negative, all.get(first..=last)?.to_vec(), exponent))
}

fn encode_number(text: &str, out: &mut Vec<u8>) -> bool {
    let Some((negative, digits, exponent)) = decimal(text) else {
        return false;
    };
    write_number(negative, &digits, exponent, out);
    true
}

/// Writes a number from its exact decimal form: `digits` (values 0-9, no leading or
/// trailing zero; empty for zero) and `exponent` (value = 0.digits x 10^exponent).
fn write_number(negative: bool, digits: &[u8], exponent: i64, out: &mut Vec<u8>) {
    if digits.is_empty() {
        out.push(ZERO);
        return;
    }
    // Exponents beyond what u16 holds are clamped: such numbers still sort by sign and
    // magnitude class, and JSON rarely carries them.
    let e = (exponent.clamp(-0x7fff, 0x7fff) + 0x8000) as u16;
    let start = out.len() + 1;
    out.push(if negative { NEGATIVE } else { POSITIVE });
    out.extend_from_slice(&e.to_be_bytes());
    out.extend(digits.iter().map(|d| d + 1));
    out.push(0);
    if negative {
        for b in out.get_mut(start..).unwrap_or(&mut []) {
            *b = !*b;
        }
    }
}

/// Writes `magnitude / 10^scale` with its sign, without going through text: integers and
/// scaled decimals, the numbers most documents hold (the text path costs a vector and a
/// render per number, 15 % of a top-20 scan).
fn encode_scaled(negative: bool, magnitude: u64, scale: u8, out: &mut Vec<u8>) {
    // u64 has at most 20 decimal digits.
    let mut buf = [0u8; 20];
    let mut n = magnitude;
    let mut at = buf.len();
    while n > 0 {
        at -= 1;
        if let Some(slot) = buf.get_mut(at) {
            *slot = (n % 10) as u8;
        }
        n /= 10;
    }
    let all = buf.get(at..).unwrap_or(&[]);
    let significant = all.len() as i64;
    let end = all.iter().rposition(|&d| d != 0).map_or(0, |i| i + 1);
    let digits = all.get(..end).unwrap_or(&[]);
    // 0.d1d2... x 10^(digits before the point): `significant - scale` of them.
    write_number(negative, digits, significant - i64::from(scale), out);
}

/// A string: its bytes, each 0 as `0 0xff`, ended by `0 0`. Copied whole when it holds no
/// zero byte (found by `contains`, a word at a time), else by the runs between them, where
/// a `push` per byte was 4-9 % of a group-by on a string
/// (`docs/notes/2026-12-02-group-arena.md`).
fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 3);
    out.push(STRING);
    if !s.contains(&0) {
        out.extend_from_slice(s);
        out.extend_from_slice(&[0, 0]);
        return;
    }
    let mut runs = s.split(|&b| b == 0);
    if let Some(first) = runs.next() {
        out.extend_from_slice(first);
    }
    for run in runs {
        out.extend_from_slice(&[0, 0xff]);
        out.extend_from_slice(run);
    }
    out.extend_from_slice(&[0, 0]);
}

/// Appends the encoding of a string (a document id, a prefix bound).
pub(crate) fn encode_str(s: &str, out: &mut Vec<u8>) {
    encode_string(s.as_bytes(), out);
}

/// Appends the encoding of a scalar value; arrays and objects are not indexed (false).
pub(crate) fn encode_value(v: &Value<'_>, out: &mut Vec<u8>) -> bool {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::String(s) => encode_string(s.to_cow().as_bytes(), out),
        Value::Int(i) => encode_scaled(*i < 0, i.unsigned_abs(), 0, out),
        Value::UInt(u) => encode_scaled(false, *u, 0, out),
        Value::Scaled(d) => encode_scaled(d.is_negative(), d.mantissa(), d.scale(), out),
        Value::Float(_) | Value::Decimal(_) => {
            let mut text = Vec::new();
            v.write_json(&mut text, &JsonOptions::new());
            return std::str::from_utf8(&text).is_ok_and(|t| encode_number(t, out));
        }
        // Objects, arrays, and value kinds a later format may add, are not indexed.
        _ => return false,
    }
    true
}

/// Appends the encoding of any value, objects and arrays included (comparisons, sorts,
/// group keys). Scalars encode as [`encode_value`] does.
pub(crate) fn encode_any(v: &Value<'_>, out: &mut Vec<u8>) {
    encode_any_at(v, out, 0);
}

fn encode_any_at(v: &Value<'_>, out: &mut Vec<u8>, depth: u32) {
    if depth > MAX_DEPTH {
        encode_string(v.to_json().as_bytes(), out);
        return;
    }
    match v {
        Value::Object(o) => {
            out.push(OBJECT);
            // `iter` visits properties in key order (the object's sorted index).
            for (k, child) in o.iter() {
                encode_string(k.as_bytes(), out);
                encode_any_at(&child, out, depth + 1);
            }
            out.push(0);
        }
        Value::Array(a) => {
            out.push(ARRAY);
            for child in a.iter() {
                encode_any_at(&child, out, depth + 1);
            }
            out.push(0);
        }
        other => {
            if !encode_value(other, out) {
                // A value kind a later format may add: ordered as its JSON text.
                encode_string(other.to_json().as_bytes(), out);
            }
        }
    }
}

/// The type class of an encoding: values of one class compare with each other in range
/// operators (`$gt: 5` matches numbers only). Missing and null are their own classes,
/// false and true one, all numbers one.
pub(crate) fn class_of(first_byte: u8) -> u8 {
    match first_byte {
        0x30..=0x32 => 0x30,
        0x20..=0x21 => 0x20,
        b => b,
    }
}

/// The encodings of class `class` lie in `[class, class_end(class))`.
pub(crate) fn class_end(class: u8) -> u8 {
    match class {
        0x30 => 0x33,
        0x20 => 0x22,
        b => b.saturating_add(1),
    }
}

/// The length of the encoded value at the start of `bytes` whose every byte was XORed with
/// `flip` (0xFF for a descending index field, 0 otherwise).
pub(crate) fn encoded_len_flipped(bytes: &[u8], flip: u8) -> Option<usize> {
    let at = |i: usize| bytes.get(i).map(|b| b ^ flip);
    match at(0)? {
        MISSING | NULL | FALSE | TRUE | ZERO => Some(1),
        POSITIVE => (3..bytes.len()).find(|&i| at(i) == Some(0)).map(|i| i + 1),
        NEGATIVE => (3..bytes.len())
            .find(|&i| at(i) == Some(0xff))
            .map(|i| i + 1),
        STRING => {
            let mut i = 1;
            loop {
                match (at(i)?, at(i + 1)) {
                    (0, Some(0)) => return Some(i + 2),
                    (0, Some(0xff)) => i += 2,
                    (0, _) => return None,
                    _ => i += 1,
                }
            }
        }
        OBJECT | ARRAY => {
            let mut i = 1;
            loop {
                if at(i)? == 0 {
                    return Some(i + 1);
                }
                i += encoded_len_flipped(bytes.get(i..)?, flip)?;
            }
        }
        _ => None,
    }
}

/// The encoding of a string used as a prefix: without the terminator, so every encoded
/// string starting with it sorts from here.
pub(crate) fn string_prefix(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 1);
    encode_string(s.as_bytes(), &mut out);
    out.truncate(out.len() - 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(json: &str) -> Vec<u8> {
        let doc = stele_doc::Document::new(stele_doc::from_json(json.as_bytes()).unwrap()).unwrap();
        let mut out = Vec::new();
        assert!(encode_value(&doc.root(), &mut out), "{json}");
        assert_eq!(encoded_len_flipped(&out, 0), Some(out.len()), "{json}");
        out
    }

    /// The direct encoding of integers and scaled decimals is byte for byte the encoding of
    /// their JSON text, for whatever kind the document writer stores a number as.
    #[test]
    fn numbers_encode_as_their_text_does() {
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "10.50",
            "0.05",
            "-0.05",
            "100",
            "1000.000",
            "7",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "0.000001",
            "123456789.987654321",
            "-1.5",
            "1e3",
            "12e-2",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5_000 {
            // xorshift: a spread of magnitudes, signs and scales.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = x >> (x % 64);
            let sign = if x & 1 == 1 { "-" } else { "" };
            let scale = (x >> 8) % 12;
            let digits = n.to_string();
            texts.push(format!("{sign}{digits}"));
            if scale > 0 && (scale as usize) < digits.len() {
                let (int, frac) = digits.split_at(digits.len() - scale as usize);
                texts.push(format!("{sign}{int}.{frac}"));
            }
            texts.push(format!(
                "{sign}0.{:0>width$}",
                n % 1000,
                width = scale as usize + 1
            ));
        }
        let (mut ints, mut scaled) = (0, 0);
        for t in &texts {
            let doc =
                stele_doc::Document::new(stele_doc::from_json(t.as_bytes()).unwrap()).unwrap();
            match doc.root() {
                Value::Int(_) | Value::UInt(_) => ints += 1,
                Value::Scaled(_) => scaled += 1,
                _ => {}
            }
            let mut direct = Vec::new();
            assert!(encode_value(&doc.root(), &mut direct), "{t}");
            let mut via_text = Vec::new();
            assert!(encode_number(&doc.root().to_json(), &mut via_text), "{t}");
            assert_eq!(direct, via_text, "{t} ({:?})", doc.root());
        }
        assert!(
            ints > 1_000 && scaled > 1_000,
            "{ints} integers, {scaled} scaled"
        );
    }

    #[test]
    fn order_is_value_order() {
        let ordered = [
            "null",
            "false",
            "true",
            "-1e300",
            "-12.5",
            "-12.25",
            "-2",
            "-1",
            "-0.5",
            "-0.05",
            "0",
            "1e-7",
            "0.1",
            "0.5",
            "1",
            "1.05",
            "2",
            "10",
            "12.25",
            "12.5",
            "100",
            "9007199254740993",
            "18446744073709551615",
            "1e30",
            r#""""#,
            r#""\u0000""#,
            r#""a""#,
            r#""a\u0000""#,
            r#""ab""#,
            r#""b""#,
            r#""é""#,
        ];
        for pair in ordered.windows(2) {
            assert!(enc(pair[0]) < enc(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        // Same value, different spellings: same key.
        for same in [
            ["1", "1.0"],
            ["100", "1e2"],
            ["-0", "0"],
            ["12.50", "12.5"],
            ["0.001", "1E-3"],
        ] {
            assert_eq!(enc(same[0]), enc(same[1]), "{same:?}");
        }
    }

    #[test]
    fn prefixes_of_strings() {
        let p = string_prefix("ab");
        assert!(enc(r#""ab""#).starts_with(&p));
        assert!(enc(r#""abc""#).starts_with(&p));
        assert!(!enc(r#""a""#).starts_with(&p));
    }

    /// Strings are copied by the runs between their zero bytes: the same bytes as the
    /// definition (each byte, a 0 followed by 0xff), wherever the zeros lie.
    #[test]
    fn strings_with_zero_bytes_encode_by_the_definition() {
        for s in [
            &b""[..],
            b"a",
            b"\0",
            b"\0\0",
            b"a\0",
            b"\0a",
            b"ab\0\0cd\0",
            b"\xff\0\xff",
            "é\0漢".as_bytes(),
        ] {
            let mut want = vec![STRING];
            for &b in s {
                want.push(b);
                if b == 0 {
                    want.push(0xff);
                }
            }
            want.extend_from_slice(&[0, 0]);
            let mut got = vec![7];
            encode_string(s, &mut got);
            assert_eq!(got.get(1..), Some(&want[..]), "{s:?}");
            assert_eq!(encoded_len_flipped(&want, 0), Some(want.len()), "{s:?}");
        }
    }

    #[test]
    fn lengths_of_garbage_never_panic() {
        for bytes in [
            &[][..],
            &[0x32],
            &[0x32, 0, 0],
            &[0x40, 0],
            &[0x40, 0, 1],
            &[0x30, 1, 2, 3],
            &[7],
        ] {
            let _ = encoded_len_flipped(bytes, 0);
            let _ = encoded_len_flipped(bytes, 0xff);
        }
    }
}
