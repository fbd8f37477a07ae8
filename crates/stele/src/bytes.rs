//! Small byte codecs shared by the log and the manifest: LEB128 varints, length-prefixed
//! byte strings, and a reader that returns `None` past the end instead of panicking; and
//! the parts of a concatenation, by their end offsets (packing's buffers of ids and values).

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

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

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
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
