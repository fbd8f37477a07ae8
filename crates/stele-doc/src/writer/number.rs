//! Exact number handling: every JSON number is stored as the narrowest form that gives back its
//! text byte for byte.
//!
//! - integers in `i64` or `u64` (and not `-0`) are stored as integers;
//! - other numbers whose `f64` prints back (shortest round-trip form, `ryu`) as the same text are
//!   stored as `f64`;
//! - everything else (more digits than an `f64` holds, `1E5`, `1e+5`, `-0`, beyond `u64`) is kept as
//!   its decimal text, so no digit is ever lost.

/// How a valid JSON number text is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i64),
    UInt(u64),
    Float(f64),
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
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        integer = false;
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
    if matches!(bytes.get(i), Some(b'0'..=b'9')) {
        return Err((i, "leading zeros are not allowed in JSON numbers"));
    }
    Ok((i, integer))
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
    // SAFETY: `scan_number` accepted `text`, so it is ASCII and valid UTF-8.
    let s = unsafe { std::str::from_utf8_unchecked(text) };
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && ryu::Buffer::new().format_finite(f).as_bytes() == text => {
            Number::Float(f)
        }
        _ => Number::Decimal,
    }
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
        assert_eq!(class("1.5"), Number::Float(1.5));
        assert_eq!(class("-0.0"), Number::Float(-0.0));
        assert_eq!(class("1.0"), Number::Float(1.0));
        assert_eq!(class("1e21"), Number::Float(1e21));
        assert_eq!(class("1E21"), Number::Decimal);
        assert_eq!(class("1.50"), Number::Decimal);
        assert_eq!(class("-65.613616999999977"), Number::Decimal);
        assert_eq!(class("1e400"), Number::Decimal);
        assert_eq!(class("0.1"), Number::Float(0.1));
    }

    #[test]
    fn grammar() {
        for bad in ["-", "01", "1.", ".5", "1e", "1e+", "+1", "-01", "00"] {
            let r = scan_number(bad.as_bytes());
            assert!(r.is_err() || r.unwrap().0 != bad.len(), "{bad} accepted");
        }
    }
}
