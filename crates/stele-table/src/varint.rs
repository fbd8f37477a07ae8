//! LEB128 unsigned varints with checked decoding.

/// Appends `value` as a LEB128 varint.
pub(crate) fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // Truncation is the point: the low 7 bits go out with the continuation bit.
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Number of bytes `put` writes for `value`.
pub(crate) fn len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Decodes a varint at `*pos`, advancing it. `None` if truncated or longer than 10 bytes
/// or overflowing 64 bits.
#[inline]
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        let low = u64::from(byte & 0x7f);
        if shift == 63 && low > 1 {
            return None;
        }
        result |= low << shift;
        if byte & 0x80 == 0 {
            return Some(result);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_length() {
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
            let mut b = Vec::new();
            put(&mut b, v);
            assert_eq!(b.len(), len(v), "{v}");
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Some(v));
            assert_eq!(p, b.len());
        }
    }

    #[test]
    fn rejects_truncated_and_overlong() {
        let mut p = 0;
        assert_eq!(get(&[0x80], &mut p), None);
        let mut p = 0;
        assert_eq!(get(&[0xff; 11], &mut p), None);
        let mut p = 0;
        // 10th byte may only carry the single top bit.
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert_eq!(get(&b, &mut p), None);
    }
}
