//! The one way every size flag is read (`--memory` of `import` and `table build`,
//! `--compress-min` of `convert`): a number of bytes, or a number with a unit.
//!
//! Accepted: `65536` (bytes), `64KiB`, `256MiB`, `1GiB`, `1TiB` (powers of 1024); `K`, `M`,
//! `G`, `T` alone are the same (as `sort -S` reads them); `KB`, `MB`, `GB`, `TB` are powers
//! of 1000; `B` is bytes. Units are case-insensitive, a space may precede them, and the
//! number may have a fraction (`1.5GiB`, rounded down to whole bytes). The parser is a clap
//! value parser, so a bad value's error names the flag (`invalid value '256' for
//! '--memory <SIZE>': ...`).

/// The forms a size flag takes, for its help.
pub const FORMS: &str = "65536 (bytes), 64KiB, 256MiB, 1.5GiB (K, M, G alone: KiB, MiB, GiB; KB, MB, GB: powers of 1000)";

/// Bytes in one `unit` (case-insensitive), or None for a unit not known.
fn unit_bytes(unit: &str) -> Option<u64> {
    let power = |base: u64, n: u32| base.pow(n);
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => power(1024, 1),
        "m" | "mib" => power(1024, 2),
        "g" | "gib" => power(1024, 3),
        "t" | "tib" => power(1024, 4),
        "kb" => power(1000, 1),
        "mb" => power(1000, 2),
        "gb" => power(1000, 3),
        "tb" => power(1000, 4),
        _ => return None,
    })
}

/// `bytes` the way a user would write it back: `256MiB` when it is a whole number of a
/// binary unit, else bytes.
pub fn show(bytes: u64) -> String {
    for (unit, size) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// Parses a size (see the module's doc) into bytes.
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(format!("{text:?} is not a size: write it as {FORMS}"));
    }
    let Some(mult) = unit_bytes(unit.trim()) else {
        return Err(format!(
            "unknown unit {:?} in {text:?}: write a size as {FORMS}",
            unit.trim()
        ));
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if number == "." || fraction.contains('.') {
        return Err(format!("{text:?} is not a size: write it as {FORMS}"));
    }
    let too_large = || format!("{text:?} is too large a size");
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut bytes = whole.checked_mul(mult).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        // Exact for up to 18 fraction digits: `digits * mult / 10^len`, in 128 bits.
        let digits = &fraction[..fraction.len().min(18)];
        let scale = 10u128.pow(digits.len() as u32);
        let part: u128 = digits.parse().map_err(|_| too_large())?;
        let extra = u64::try_from(part * u128::from(mult) / scale).map_err(|_| too_large())?;
        bytes = bytes.checked_add(extra).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// A value parser for a size flag of at least `min` bytes, as `usize`.
pub fn at_least(
    min: u64,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text| {
        let bytes = parse(text)?;
        if bytes < min {
            return Err(format!(
                "{text:?} is {bytes} bytes; give at least {} (e.g. {}; a plain number is bytes)",
                show(min),
                show(min.max(1 << 20) * 64)
            ));
        }
        usize::try_from(bytes).map_err(|_| format!("{text:?} is too large a size"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse("65536"), Ok(65536));
        assert_eq!(parse("256MiB"), Ok(256 << 20));
        assert_eq!(parse("256mib"), Ok(256 << 20));
        assert_eq!(parse("1GiB"), Ok(1 << 30));
        assert_eq!(parse("1G"), Ok(1 << 30));
        assert_eq!(parse("64k"), Ok(64 << 10));
        assert_eq!(parse("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse("0.5K"), Ok(512));
        assert_eq!(parse("2 GB"), Ok(2_000_000_000));
        assert_eq!(parse("500MB"), Ok(500_000_000));
        assert_eq!(parse("7B"), Ok(7));
        for bad in [
            "lots",
            "5XB",
            "",
            "MiB",
            "1.2.3G",
            "-1",
            "99999999999999999999",
            "20000000TiB",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_minimum_is_said_as_a_size() {
        let e = at_least(4 << 20)("256").unwrap_err();
        assert!(
            e.contains("256 bytes") && e.contains("at least 4MiB"),
            "{e}"
        );
        assert_eq!(at_least(4 << 20)("256MiB"), Ok(256 << 20));
        assert_eq!(show(65536), "64KiB");
        assert_eq!(show(1000), "1000");
    }
}
