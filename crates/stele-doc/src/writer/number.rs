//! Exact number handling: every JSON number is stored as the narrowest form that gives back its
//! text byte for byte.
//!
//! - integers in `i64` or `u64` (and not `-0`) are stored as integers;
//! - fractions without exponent whose digits fit a `u64` (`-12.50`, `0.000123`, 19 digits at
//!   most) are stored scaled: the digits as one integer plus the count of fraction digits, which
//!   gives back the text exactly (trailing zeros included) and needs no float conversion;
//! - everything else (exponents, `-0`, more digits, beyond `u64`) is kept as its decimal text, so
//!   no digit is ever lost.
//!
//! Floats written as `f64` values (builder, serde) are stored as `f64` and print in their
//! shortest round-trip form.

use crate::format::{append, u64_digits};

/// How a valid JSON number text is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i64),
    UInt(u64),
    /// `negative`, all digits as one integer, number of fraction digits.
    Scaled(bool, u64, u8),
    Decimal,
}

/// Length of the JSON number at the start of `bytes`, or `None` if it does not start with one.
/// Follows RFC 8259: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. Also returns whether the
/// number is an integer (no fraction, no exponent).
#[inline]
pub(crate) fn scan_number(bytes: &[u8]) -> Result<(usize, bool), (usize, &'static str)> {
    let mut i = 0;
    if bytes.first() == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            i += 1;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return Err((i, "expected a digit in the number")),
    }
    let mut integer = true;
    if bytes.get(i) == Some(&b'.') {
        integer = false;
        i += 1;
        if !matches!(bytes.get(i), Some(b'0'..=b'9')) {
            return Err((i, "expected a digit after the decimal point"));
        }
        while matches!(bytes.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    let (i, exponent) = exponent_and_end(bytes, i)?;
    Ok((i, integer && !exponent))
}

/// The optional exponent of a number at `bytes[i..]` and the check after its last digit: the
/// index after the number and whether it had an exponent.
#[inline(always)]
fn exponent_and_end(bytes: &[u8], mut i: usize) -> Result<(usize, bool), (usize, &'static str)> {
    let mut exponent = false;
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        exponent = true;
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(bytes.get(i), Some(b'0'..=b'9')) {
            return Err((i, "expected a digit in the exponent"));
        }
        while matches!(bytes.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    // Only a number starting with `0` can be followed by a digit here.
    if matches!(bytes.get(i), Some(b'0'..=b'9')) {
        return Err((i, "leading zeros are not allowed in JSON numbers"));
    }
    Ok((i, exponent))
}

/// Whether the 8 bytes of `x` (little-endian) are all ASCII digits.
#[inline(always)]
fn eight_digits(x: u64) -> bool {
    // High nibbles must be 3, and adding 6 to each byte must not carry out of the low nibble.
    ((x & 0xF0F0_F0F0_F0F0_F0F0)
        | ((x.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4))
        == 0x3333_3333_3333_3333
}

/// The value of 8 ASCII digits (little-endian, first digit in the lowest byte): three
/// multiply-shift steps that combine pairs, then quads, then the two halves.
#[inline(always)]
fn eight_digits_value(x: u64) -> u64 {
    let x = (x & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
    let x = (x & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    (x & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32
}

/// Reads the digits at `bytes[i..]` into `value` (wrapping: exact while `count` <= 19); returns
/// the index after them and adds their number to `count`.
#[inline(always)]
fn digits(bytes: &[u8], mut i: usize, value: &mut u64, count: &mut usize) -> usize {
    while let Some(chunk) = bytes.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*chunk);
        if !eight_digits(x) {
            break;
        }
        *value = value
            .wrapping_mul(100_000_000)
            .wrapping_add(eight_digits_value(x));
        *count += 8;
        i += 8;
    }
    while let Some(&d) = bytes.get(i).filter(|d| d.is_ascii_digit()) {
        *value = value.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
        *count += 1;
        i += 1;
    }
    i
}

/// [`scan_number`] and [`classify`] in one pass, with the same results (and errors): the digits
/// are accumulated while the grammar is checked, eight at a time where there are eight. Numbers
/// of more than 19 digits (rare) are classified by [`classify`] from their text.
#[inline(always)]
pub(crate) fn parse_number(bytes: &[u8]) -> Result<(usize, Number), (usize, &'static str)> {
    let negative = bytes.first() == Some(&b'-');
    let mut i = usize::from(negative);
    let (mut value, mut count) = (0u64, 0usize);
    match bytes.get(i) {
        Some(b'0') => {
            i += 1;
            count = 1;
        }
        Some(b'1'..=b'9') => i = digits(bytes, i, &mut value, &mut count),
        _ => return Err((i, "expected a digit in the number")),
    }
    let mut scale = None;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(bytes.get(i), Some(b'0'..=b'9')) {
            return Err((i, "expected a digit after the decimal point"));
        }
        let before = count;
        i = digits(bytes, i, &mut value, &mut count);
        scale = Some(count - before);
    }
    let (i, exponent) = exponent_and_end(bytes, i)?;
    let number = if exponent {
        Number::Decimal
    } else if count > 19 {
        classify(bytes.get(..i).unwrap_or_default(), scale.is_none())
    } else {
        // At most 19 digits: `value` is exact and below 10^19 (so within u64).
        match scale {
            // A fraction: 1 to 18 fraction digits here, within MAX_SCALE.
            Some(s) => Number::Scaled(negative, value, s as u8),
            None if !negative => match i64::try_from(value) {
                Ok(v) => Number::Int(v),
                Err(_) => Number::UInt(value),
            },
            // `-0` would print back as `0`: keep it as text; below -2^63 too.
            None if value == 0 || value > 1u64 << 63 => Number::Decimal,
            None => Number::Int((value as i64).wrapping_neg()),
        }
    };
    Ok((i, number))
}

/// Picks the storage of a number text already checked by [`scan_number`].
#[inline]
pub(crate) fn classify(text: &[u8], integer: bool) -> Number {
    if integer {
        let (negative, digits) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        // 19 digits always fit in a u64; 20 may; more never do.
        if digits.len() <= 20 {
            let mut value: u64 = 0;
            let mut fits = true;
            for &d in digits {
                match value
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(d - b'0')))
                {
                    Some(v) => value = v,
                    None => {
                        fits = false;
                        break;
                    }
                }
            }
            if fits {
                if !negative {
                    return if value <= i64::MAX as u64 {
                        Number::Int(value as i64)
                    } else {
                        Number::UInt(value)
                    };
                }
                // `-0` would print back as `0`: keep it as text.
                if value != 0 && value <= 1u64 << 63 {
                    return Number::Int((value as i64).wrapping_neg());
                }
            }
        }
        return Number::Decimal;
    }
    scaled(text).unwrap_or(Number::Decimal)
}

/// The scaled form of a fraction without exponent, if its digits fit a `u64`.
#[inline]
fn scaled(text: &[u8]) -> Option<Number> {
    let (negative, body) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut mantissa: u64 = 0;
    let mut scale: Option<u8> = None;
    for &c in body {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                if let Some(s) = scale.as_mut() {
                    *s = s.checked_add(1).filter(|&s| s <= MAX_SCALE)?;
                }
            }
            b'.' => scale = Some(0),
            // An exponent: keep the text.
            _ => return None,
        }
    }
    let scale = scale.filter(|&s| s >= 1)?;
    Some(Number::Scaled(negative, mantissa, scale))
}

/// Most fraction digits a scaled decimal may have (7 bits of its first byte).
pub(crate) const MAX_SCALE: u8 = 127;

/// Appends the text of a scaled decimal: the exact inverse of [`scaled`].
pub(crate) fn write_scaled(out: &mut Vec<u8>, negative: bool, mantissa: u64, scale: u8) {
    if negative {
        out.push(b'-');
    }
    let mut buf = [0u8; 20];
    let digits = u64_digits(mantissa, &mut buf);
    let scale = usize::from(scale);
    // Short copies by `append`: this prints every fraction of the rows a query renders.
    if digits.len() <= scale {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + scale - digits.len(), b'0');
        append(out, digits);
    } else {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.reserve(digits.len() + 1);
        append(out, int);
        out.push(b'.');
        append(out, frac);
    }
}

/// The nearest `f64` to a scaled decimal: exact arithmetic when both parts are exact in `f64`
/// (one correctly rounded division), else a correctly rounded parse of the text.
pub(crate) fn scaled_to_f64(negative: bool, mantissa: u64, scale: u8) -> f64 {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let magnitude = match POW10.get(usize::from(scale)) {
        Some(&p) if mantissa < (1u64 << 53) => mantissa as f64 / p,
        _ => {
            let mut text = Vec::with_capacity(24);
            write_scaled(&mut text, false, mantissa, scale);
            std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(f64::NAN)
        }
    };
    if negative { -magnitude } else { magnitude }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Number {
        let (len, integer) = scan_number(text.as_bytes()).unwrap();
        assert_eq!(len, text.len(), "{text}");
        classify(text.as_bytes(), integer)
    }

    #[test]
    fn integers_floats_and_decimals() {
        assert_eq!(class("0"), Number::Int(0));
        assert_eq!(class("-0"), Number::Decimal);
        assert_eq!(class("9223372036854775807"), Number::Int(i64::MAX));
        assert_eq!(class("-9223372036854775808"), Number::Int(i64::MIN));
        assert_eq!(class("9223372036854775808"), Number::UInt(1 << 63));
        assert_eq!(class("18446744073709551615"), Number::UInt(u64::MAX));
        assert_eq!(class("18446744073709551616"), Number::Decimal);
        assert_eq!(class("-9223372036854775809"), Number::Decimal);
        assert_eq!(class("1.5"), Number::Scaled(false, 15, 1));
        assert_eq!(class("-0.0"), Number::Scaled(true, 0, 1));
        assert_eq!(class("1.50"), Number::Scaled(false, 150, 2));
        assert_eq!(class("0.001"), Number::Scaled(false, 1, 3));
        assert_eq!(
            class("-65.613616999999977"),
            Number::Scaled(true, 65_613_616_999_999_977, 15)
        );
        assert_eq!(class("1e21"), Number::Decimal);
        assert_eq!(class("1E21"), Number::Decimal);
        assert_eq!(class("1e400"), Number::Decimal);
        assert_eq!(
            class("184467440737095516.15"),
            Number::Scaled(false, u64::MAX, 2)
        );
        assert_eq!(class("184467440737095516.16"), Number::Decimal);
        let long = format!("0.{}1", "0".repeat(126));
        assert_eq!(class(&long), Number::Scaled(false, 1, 127));
        assert_eq!(class(&format!("0.{}1", "0".repeat(127))), Number::Decimal);
    }

    #[test]
    fn scaled_text_and_value_round_trip() {
        for text in [
            "0.5",
            "-0.0",
            "10.50",
            "0.000123",
            "-65.613616999999977",
            "123.456",
            "184467440737095516.15",
            "9007199254740993.1",
            "0.30000000000000004",
        ] {
            let Number::Scaled(neg, m, s) = class(text) else {
                panic!("{text}")
            };
            let mut out = Vec::new();
            write_scaled(&mut out, neg, m, s);
            assert_eq!(out, text.as_bytes());
            assert_eq!(
                scaled_to_f64(neg, m, s),
                text.parse::<f64>().unwrap(),
                "{text}"
            );
        }
        assert!(scaled_to_f64(true, 0, 1).is_sign_negative());
    }

    #[test]
    fn grammar() {
        for bad in ["-", "01", "1.", ".5", "1e", "1e+", "+1", "-01", "00"] {
            let r = scan_number(bad.as_bytes());
            assert!(r.is_err() || r.unwrap().0 != bad.len(), "{bad} accepted");
        }
    }
}
