//! The first 8 bytes of a key as a big-endian integer (zero-padded): comparing two of them
//! orders keys correctly whenever they differ, so most comparisons need no memcmp.

/// First 8 bytes of `key`, big-endian, zero-padded.
#[inline]
pub(crate) fn prefix8(key: &[u8]) -> u64 {
    if let Some(first) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*first);
    }
    let mut p = [0u8; 8];
    for (d, s) in p.iter_mut().zip(key) {
        *d = *s;
    }
    u64::from_be_bytes(p)
}

/// `a <= b`, with `pa`/`pb` their `prefix8`.
#[inline]
pub(crate) fn le_with_prefix(pa: u64, a: &[u8], pb: u64, b: &[u8]) -> bool {
    if pa != pb { pa < pb } else { a <= b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_order_agrees_with_byte_order_when_different() {
        let keys: [&[u8]; 9] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"\xff",
        ];
        for a in keys {
            for b in keys {
                let (pa, pb) = (prefix8(a), prefix8(b));
                if pa != pb {
                    assert_eq!(pa < pb, a < b, "{a:?} {b:?}");
                }
                assert_eq!(le_with_prefix(pa, a, pb, b), a <= b, "{a:?} {b:?}");
            }
        }
    }
}
