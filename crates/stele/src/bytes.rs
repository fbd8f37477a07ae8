//! Small byte codecs shared by the log and the manifest: LEB128 varints (the one codec of
//! `stele_table::varint`), length-prefixed byte strings, and a reader that returns `None`
//! past the end instead of panicking; and the parts of a concatenation, by their end offsets (packing's buffers of ids and values).

/// Appends `v` as a LEB128 varint (the codec of `stele_table::varint`).
pub(crate) use stele_table::varint::put as put_varint;

/// Appends `b` preceded by its length as a varint.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// The parts of `bytes` that end at each of `ends`, in order.
pub(crate) fn split_at_ends<'b>(bytes: &'b [u8], ends: &[usize]) -> Vec<&'b [u8]> {
    let mut start = 0;
    ends.iter()
        .map(|&end| {
            let part = bytes.get(start..end).unwrap_or_default();
            start = end;
            part
        })
        .collect()
}

/// Reads untrusted bytes front to back; every method returns `None` when the bytes end
/// (or do not decode) before the value does.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.bytes
    }

    /// True when every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A canonical LEB128 varint (`stele_table::varint`: overlong and overflowing forms do
    /// not decode).
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let (v, used) = stele_table::varint::decode(self.bytes, 0).ok()?;
        self.bytes = self.bytes.get(used..)?;
        Some(v)
    }

    /// A length-prefixed byte string.
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.take(n)
    }

    /// A length-prefixed UTF-8 string.
    pub(crate) fn text(&mut self) -> Option<String> {
        Some(std::str::from_utf8(self.bytes()?).ok()?.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_varints_follow_the_one_rule() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        put_varint(&mut out, 0);
        let mut r = Reader::new(&out);
        assert_eq!(
            (r.varint(), r.varint(), r.is_empty()),
            (Some(300), Some(0), true)
        );
        // Overlong (0 as 80 00, 1 as 81 80 00), overflowing (11 bytes; a 10th byte of 2)
        // and truncated forms do not decode, and leave the reader where it was.
        let mut tenth_too_big = vec![0xff; 9];
        tenth_too_big.push(2);
        for bad in [
            &[0x80, 0x00][..],
            &[0x81, 0x80, 0x00],
            &[0xff; 11],
            &tenth_too_big,
            &[0x80],
            &[],
        ] {
            let mut r = Reader::new(bad);
            assert_eq!(r.varint(), None, "{bad:02x?}");
            assert_eq!(r.rest(), bad);
        }
        // A length prefix is a varint too.
        assert_eq!(Reader::new(&[0x81, 0x00, b'a']).bytes(), None);
    }
}
