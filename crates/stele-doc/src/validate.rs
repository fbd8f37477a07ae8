//! Complete validation of untrusted bytes: after [`validate`] accepts a document, every reader
//! accessor is in bounds, every string is UTF-8, every number is valid, and every value is reachable
//! once (children of a container never overlap, so no crafted document expands exponentially
//! when printed).

use crate::error::{Error, Result};
use crate::format::{
    ARR_UNIFORM, MAX_DEPTH, OBJ_HAS_ORDER, Tag, get_uint, get_varint, width_bytes, width_code_for,
};
use crate::reader::Layout;
use crate::writer::number::scan_number;

/// Checks that `bytes` are a complete, consistent document.
///
/// It checks the header and trailer, every offset and length (bounds, no overlap between siblings,
/// children before their container), every tag, that object keys are valid names in strictly
/// ascending order (so no duplicates), that stored orders are permutations, that strings (also the
/// compressed ones, after decompression) are UTF-8, that numbers are JSON numbers and floats
/// finite, and that nesting stays within [`MAX_DEPTH`]. Cost: linear in the document size plus a
/// sort of each container's children.
///
/// ```
/// let mut bytes = stele_doc::from_json(br#"{"a":[1,2,3]}"#)?;
/// assert!(stele_doc::validate(&bytes).is_ok());
/// let last = bytes.len() - 1;
/// bytes[last] = 0xFF;
/// assert!(stele_doc::validate(&bytes).is_err());
/// # Ok::<(), stele_doc::Error>(())
/// ```
pub fn validate(bytes: &[u8]) -> Result<()> {
    validate_layout(bytes).map(|_| ())
}

pub(crate) fn validate_layout(bytes: &[u8]) -> Result<Layout> {
    let layout = Layout::read(bytes)?;
    let mut v = Validator {
        bytes,
        body_end: layout.names_pos,
        names_pos: layout.names_pos,
        name_starts: Vec::new(),
        scratch: Vec::new(),
    };
    v.names(layout.names_end)?;
    v.value(layout.root_tag, layout.root_pos, 0)?;
    Ok(layout)
}

struct Validator<'a> {
    bytes: &'a [u8],
    /// End of the body: values and headers all lie in `1..body_end`.
    body_end: usize,
    names_pos: usize,
    /// Valid name ids (offsets of entries in the names area), ascending.
    name_starts: Vec<usize>,
    scratch: Vec<u8>,
}

/// Bytes `[start, end)` a value occupies (for containers: descendants and header).
type Extent = (usize, usize);

impl<'a> Validator<'a> {
    fn names(&mut self, names_end: usize) -> Result<()> {
        let mut pos = self.names_pos;
        while pos < names_end {
            let (len, used) = get_varint(self.bytes, pos)
                .ok_or(Error::invalid(pos, "bad name length in the names area"))?;
            let start = pos + used;
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| start.checked_add(l))
                .filter(|&e| e <= names_end)
                .ok_or(Error::invalid(pos, "name runs past the names area"))?;
            let name = self.bytes.get(start..end).unwrap_or_default();
            if let Err(e) = std::str::from_utf8(name) {
                return Err(Error::invalid(start + e.valid_up_to(), "name is not UTF-8"));
            }
            self.name_starts.push(pos - self.names_pos);
            pos = end;
        }
        Ok(())
    }

    fn name(&self, id: usize, at: usize) -> Result<&'a [u8]> {
        if self.name_starts.binary_search(&id).is_err() {
            return Err(Error::invalid(
                at,
                "key id does not name an entry of the names area",
            ));
        }
        let pos = self.names_pos + id;
        let (len, used) = get_varint(self.bytes, pos).unwrap_or((0, 0));
        Ok(self
            .bytes
            .get(pos + used..pos + used + len as usize)
            .unwrap_or_default())
    }

    /// `pos..pos+len` if it lies inside the body.
    fn span(&self, pos: usize, len: u64, what: &'static str) -> Result<(usize, usize)> {
        usize::try_from(len)
            .ok()
            .and_then(|l| pos.checked_add(l))
            .filter(|&end| pos >= 1 && end <= self.body_end)
            .map(|end| (pos, end))
            .ok_or(Error::invalid(pos, what))
    }

    fn varint(&self, pos: usize) -> Result<(u64, usize)> {
        get_varint(self.bytes, pos).ok_or(Error::invalid(pos, "bad varint"))
    }

    /// Checks the value of type `tag` at `pos`; returns the bytes it occupies (`None` for values
    /// without payload).
    fn value(&mut self, tag: Tag, pos: usize, depth: usize) -> Result<Option<Extent>> {
        if !tag.has_payload() {
            return Ok(None);
        }
        if let Some(size) = tag.fixed_size() {
            let extent = self.span(pos, size as u64, "number runs past the body")?;
            if tag == Tag::F64 {
                let bits = get_uint(self.bytes, pos, 8).unwrap_or(0);
                if !f64::from_bits(bits).is_finite() {
                    return Err(Error::invalid(pos, "float is NaN or infinite"));
                }
            }
            return Ok(Some(extent));
        }
        match tag {
            Tag::Decimal | Tag::String => {
                let (len, used) = self.varint(pos)?;
                let (start, end) = self.span(pos + used, len, "string runs past the body")?;
                let text = self.bytes.get(start..end).unwrap_or_default();
                if tag == Tag::Decimal {
                    if !matches!(scan_number(text), Ok((n, _)) if n == text.len()) {
                        return Err(Error::invalid(start, "decimal is not a JSON number"));
                    }
                } else if let Err(e) = std::str::from_utf8(text) {
                    return Err(Error::invalid(
                        start + e.valid_up_to(),
                        "string is not UTF-8",
                    ));
                }
                Ok(Some((pos, end)))
            }
            Tag::StringLz4 => {
                let (raw_len, used1) = self.varint(pos)?;
                let (len, used2) = self.varint(pos + used1)?;
                let (start, end) = self.span(
                    pos + used1 + used2,
                    len,
                    "compressed string runs past the body",
                )?;
                // LZ4 expands at most ~255x: a larger claim is corrupt (and would let a tiny
                // document demand a huge allocation).
                let raw_len = usize::try_from(raw_len)
                    .ok()
                    .filter(|&r| r <= (end - start).saturating_mul(255).saturating_add(16))
                    .ok_or(Error::invalid(
                        pos,
                        "implausible decompressed string length",
                    ))?;
                self.scratch.clear();
                self.scratch.resize(raw_len, 0);
                let block = self.bytes.get(start..end).unwrap_or_default();
                match lz4_flex::block::decompress_into(block, &mut self.scratch) {
                    Ok(n) if n == raw_len => {}
                    _ => {
                        return Err(Error::invalid(
                            start,
                            "compressed string does not decompress",
                        ));
                    }
                }
                if std::str::from_utf8(&self.scratch).is_err() {
                    return Err(Error::invalid(start, "compressed string is not UTF-8"));
                }
                Ok(Some((pos, end)))
            }
            Tag::Object | Tag::Array => {
                if depth >= MAX_DEPTH {
                    return Err(Error::invalid(pos, "containers nest deeper than 1024"));
                }
                self.container(tag == Tag::Object, pos, depth + 1).map(Some)
            }
            _ => Err(Error::invalid(pos, "unknown tag")),
        }
    }

    fn container(&mut self, is_object: bool, h: usize, depth: usize) -> Result<Extent> {
        let flags = *self
            .bytes
            .get(h)
            .filter(|_| h >= 1 && h < self.body_end)
            .ok_or(Error::invalid(h, "container header out of bounds"))?;
        let allowed = if is_object {
            0x0F | OBJ_HAS_ORDER
        } else {
            0x03 | ARR_UNIFORM
        };
        if flags & !allowed != 0 {
            return Err(Error::invalid(h, "reserved container flag bits are set"));
        }
        let (n, used) = self.varint(h + 1)?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.body_end)
            .ok_or(Error::invalid(
                h + 1,
                "element count larger than the document",
            ))?;
        let wo = width_bytes(flags);
        let wk = if is_object {
            width_bytes(flags >> 2)
        } else {
            0
        };
        let uniform = !is_object && flags & ARR_UNIFORM != 0;
        let has_order = is_object && flags & OBJ_HAS_ORDER != 0;
        if (uniform || has_order) && n == 0 {
            return Err(Error::invalid(h, "flag set on an empty container"));
        }
        let wp = if has_order {
            width_bytes(width_code_for(n as u64 - 1))
        } else {
            0
        };
        let keys_at = h + 1 + used;
        let offsets_at = keys_at + n * wk;
        let tags_at = offsets_at + n * wo;
        let tag_count = if uniform { 1 } else { n };
        let order_at = tags_at + tag_count;
        let header_end = order_at + n * wp;
        if header_end > self.body_end {
            return Err(Error::invalid(h, "container header runs past the body"));
        }

        let mut extents: Vec<Extent> = Vec::with_capacity(n);
        let mut previous: Option<&[u8]> = None;
        for i in 0..n {
            if is_object {
                let at = keys_at + i * wk;
                let id = get_uint(self.bytes, at, wk).unwrap_or(u64::MAX) as usize;
                let name = self.name(id, at)?;
                if previous.is_some_and(|p| p >= name) {
                    return Err(Error::invalid(
                        at,
                        "object keys not in strictly ascending order",
                    ));
                }
                // Names live in the immutable input, not in `self`.
                previous = Some(name);
            }
            let tag_at = if uniform { tags_at } else { tags_at + i };
            let tag = self
                .bytes
                .get(tag_at)
                .and_then(|&t| Tag::from_u8(t))
                .ok_or(Error::invalid(tag_at, "unknown type tag"))?;
            let off_at = offsets_at + i * wo;
            let off = get_uint(self.bytes, off_at, wo).unwrap_or(u64::MAX);
            if !tag.has_payload() {
                if off != 0 {
                    return Err(Error::invalid(
                        off_at,
                        "offset set for a value without payload",
                    ));
                }
                continue;
            }
            let pos = usize::try_from(off)
                .ok()
                .filter(|&o| o >= 1 && o < h)
                .map(|o| h - o)
                .ok_or(Error::invalid(off_at, "child offset out of bounds"))?;
            if let Some((start, end)) = self.value(tag, pos, depth)? {
                if end > h {
                    return Err(Error::invalid(pos, "child overlaps its container's header"));
                }
                extents.push((start, end));
            }
        }
        if has_order {
            let mut seen = vec![false; n];
            for i in 0..n {
                let at = order_at + i * wp;
                let k = get_uint(self.bytes, at, wp).unwrap_or(u64::MAX) as usize;
                match seen.get_mut(k) {
                    Some(s) if !*s => *s = true,
                    _ => return Err(Error::invalid(at, "property order is not a permutation")),
                }
            }
        }
        extents.sort_unstable();
        for pair in extents.windows(2) {
            if let [(_, end), (start, _)] = pair
                && end > start
            {
                return Err(Error::invalid(*start, "children of a container overlap"));
            }
        }
        let start = extents.first().map_or(h, |&(s, _)| s);
        Ok((start, header_end))
    }
}
