//! Complete validation of untrusted bytes: after [`validate`] accepts a document, every reader
//! accessor is in bounds, every string is UTF-8, every number is valid, and every value is reachable
//! once (children of a container never overlap, so no crafted document expands exponentially
//! when printed).

use crate::error::{Error, Result};
use crate::format::{
    ARR_UNIFORM, MAX_DEPTH, OBJ_HAS_ORDER, OBJ_ORDER_BY_ID, Tag, get_uint, get_varint, width_bytes,
    width_code_for,
};
use crate::reader::layout::Layout;
use crate::writer::number::{MAX_SCALE, scan_number};

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
        // Sized once for the common case (a name takes at least 2 bytes: its length and a
        // byte), instead of growing step by step: a reader validates every document it
        // takes from a busy writer's log.
        name_starts: Vec::with_capacity(
            (layout.names_end.saturating_sub(layout.names_pos) / 2).min(256),
        ),
        scratch: Vec::new(),
    };
    v.names(layout.names_end)?;
    v.value(layout.root_tag, layout.root_pos)?;
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
                .ok_or_else(|| Error::invalid(pos, "bad name length in the names area"))?;
            let start = pos + used;
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| start.checked_add(l))
                .filter(|&e| e <= names_end)
                .ok_or_else(|| Error::invalid(pos, "name runs past the names area"))?;
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
            .ok_or_else(|| Error::invalid(pos, what))
    }

    fn varint(&self, pos: usize) -> Result<(u64, usize)> {
        get_varint(self.bytes, pos).ok_or_else(|| Error::invalid(pos, "bad varint"))
    }

    /// Checks a scalar of type `tag` at `pos`; returns the bytes it occupies (`None` for values
    /// without payload).
    fn scalar(&mut self, tag: Tag, pos: usize) -> Result<Option<Extent>> {
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
            Tag::Scaled => {
                let head = *self
                    .bytes
                    .get(pos)
                    .filter(|_| pos >= 1 && pos < self.body_end)
                    .ok_or_else(|| Error::invalid(pos, "number runs past the body"))?;
                let scale = head & 0x7F;
                if scale == 0 || scale > MAX_SCALE {
                    return Err(Error::invalid(pos, "scaled decimal with a bad scale"));
                }
                let (_, used) = self.varint(pos + 1)?;
                let (_, end) = self.span(pos, 1 + used as u64, "number runs past the body")?;
                Ok(Some((pos, end)))
            }
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
                    .ok_or_else(|| Error::invalid(pos, "implausible decompressed string length"))?;
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
            _ => Err(Error::invalid(pos, "unknown tag")),
        }
    }

    /// Checks the value at the root and everything below it, depth first with an explicit stack
    /// (so a deep document cannot overflow the thread's stack).
    fn value(&mut self, tag: Tag, pos: usize) -> Result<()> {
        if !tag.is_container() {
            return self.scalar(tag, pos).map(|_| ());
        }
        let mut stack: Vec<Frame<'a>> = Vec::with_capacity(8);
        // Extents of checked children of every open container; each frame owns a suffix.
        let mut extents: Vec<Extent> = Vec::with_capacity(32);
        stack.push(self.open(tag == Tag::Object, pos, 0)?);
        while let Some(frame) = stack.last_mut() {
            if frame.next < frame.n {
                let i = frame.next;
                frame.next += 1;
                let (child_tag, child_pos) = self.child(frame, i)?;
                if child_tag.is_container() {
                    if stack.len() >= MAX_DEPTH {
                        return Err(Error::invalid(
                            child_pos,
                            "containers nest deeper than 1024",
                        ));
                    }
                    let child = self.open(child_tag == Tag::Object, child_pos, extents.len())?;
                    stack.push(child);
                } else if let Some(extent) = self.scalar(child_tag, child_pos)? {
                    Self::add_extent(&mut extents, frame.h, extent)?;
                }
                continue;
            }
            // The frame `last_mut` just returned.
            let Some(frame) = stack.pop() else { break };
            let extent = self.close(&frame, &mut extents)?;
            if let Some(parent) = stack.last() {
                Self::add_extent(&mut extents, parent.h, extent)?;
            }
        }
        Ok(())
    }

    fn add_extent(extents: &mut Vec<Extent>, parent_h: usize, extent: Extent) -> Result<()> {
        if extent.1 > parent_h {
            return Err(Error::invalid(
                extent.0,
                "child overlaps its container's header",
            ));
        }
        extents.push(extent);
        Ok(())
    }

    /// Reads and bounds-checks the header of the container at `h`.
    fn open(&self, is_object: bool, h: usize, extents_from: usize) -> Result<Frame<'a>> {
        let flags = *self
            .bytes
            .get(h)
            .filter(|_| h >= 1 && h < self.body_end)
            .ok_or_else(|| Error::invalid(h, "container header out of bounds"))?;
        let allowed = if is_object {
            0x0F | OBJ_HAS_ORDER | OBJ_ORDER_BY_ID
        } else {
            0x03 | ARR_UNIFORM
        };
        if flags & !allowed != 0 {
            return Err(Error::invalid(h, "reserved container flag bits are set"));
        }
        let by_id = is_object && flags & OBJ_ORDER_BY_ID != 0;
        if by_id && flags & OBJ_HAS_ORDER != 0 {
            return Err(Error::invalid(h, "two input orders for one object"));
        }
        let (n, used) = self.varint(h + 1)?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.body_end)
            .ok_or_else(|| Error::invalid(h + 1, "element count larger than the document"))?;
        let wo = width_bytes(flags);
        let wk = if is_object {
            width_bytes(flags >> 2)
        } else {
            0
        };
        let uniform = !is_object && flags & ARR_UNIFORM != 0;
        let has_order = is_object && flags & OBJ_HAS_ORDER != 0;
        if (uniform || has_order || by_id) && n == 0 {
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
        let order_at = tags_at + if uniform { 1 } else { n };
        let header_end = order_at + n * wp;
        if header_end > self.body_end {
            return Err(Error::invalid(h, "container header runs past the body"));
        }
        Ok(Frame {
            is_object,
            h,
            n,
            next: 0,
            wk,
            wo,
            wp,
            keys_at,
            offsets_at,
            tags_at,
            order_at,
            header_end,
            uniform,
            previous_name: None,
            extents_from,
        })
    }

    /// Checks child `i` of `frame` (key, tag, offset); returns its tag and payload position.
    fn child(&self, frame: &mut Frame<'a>, i: usize) -> Result<(Tag, usize)> {
        if frame.is_object {
            let at = frame.keys_at + i * frame.wk;
            let id = get_uint(self.bytes, at, frame.wk).unwrap_or(u64::MAX) as usize;
            let name = self.name(id, at)?;
            if frame.previous_name.is_some_and(|p| p >= name) {
                return Err(Error::invalid(
                    at,
                    "object keys not in strictly ascending order",
                ));
            }
            frame.previous_name = Some(name);
        }
        let tag_at = if frame.uniform {
            frame.tags_at
        } else {
            frame.tags_at + i
        };
        let tag = self
            .bytes
            .get(tag_at)
            .and_then(|&t| Tag::from_u8(t))
            .ok_or_else(|| Error::invalid(tag_at, "unknown type tag"))?;
        let off_at = frame.offsets_at + i * frame.wo;
        let off = get_uint(self.bytes, off_at, frame.wo).unwrap_or(u64::MAX);
        if !tag.has_payload() {
            if off != 0 {
                return Err(Error::invalid(
                    off_at,
                    "offset set for a value without payload",
                ));
            }
            return Ok((tag, 0));
        }
        let pos = usize::try_from(off)
            .ok()
            .filter(|&o| o >= 1 && o < frame.h)
            .map(|o| frame.h - o)
            .ok_or_else(|| Error::invalid(off_at, "child offset out of bounds"))?;
        Ok((tag, pos))
    }

    /// Final checks of a container whose children are all checked: the order permutation and
    /// that the children do not overlap. Returns the container's extent.
    fn close(&self, frame: &Frame<'a>, extents: &mut Vec<Extent>) -> Result<Extent> {
        if frame.wp > 0 {
            // Which positions the order names so far: bits on the stack for objects of up
            // to 256 properties (no allocation per object), a vector past that.
            let mut bits = [0u64; 4];
            let mut seen = if frame.n > 256 {
                vec![false; frame.n]
            } else {
                Vec::new()
            };
            for i in 0..frame.n {
                let at = frame.order_at + i * frame.wp;
                let k = get_uint(self.bytes, at, frame.wp).unwrap_or(u64::MAX) as usize;
                let fresh = if k >= frame.n {
                    false
                } else if frame.n > 256 {
                    seen.get_mut(k).is_some_and(|s| !std::mem::replace(s, true))
                } else {
                    bits.get_mut(k / 64).is_some_and(|word| {
                        let bit = 1u64 << (k % 64);
                        let fresh = *word & bit == 0;
                        *word |= bit;
                        fresh
                    })
                };
                if !fresh {
                    return Err(Error::invalid(at, "property order is not a permutation"));
                }
            }
        }
        let mine = extents.get_mut(frame.extents_from..).unwrap_or_default();
        mine.sort_unstable();
        for pair in mine.windows(2) {
            if let [(_, end), (start, _)] = pair
                && end > start
            {
                return Err(Error::invalid(*start, "children of a container overlap"));
            }
        }
        let start = mine.first().map_or(frame.h, |&(s, _)| s);
        extents.truncate(frame.extents_from);
        Ok((start, frame.header_end))
    }
}

/// The header of a container being checked, and how far its children are.
struct Frame<'a> {
    is_object: bool,
    h: usize,
    n: usize,
    next: usize,
    wk: usize,
    wo: usize,
    wp: usize,
    keys_at: usize,
    offsets_at: usize,
    tags_at: usize,
    order_at: usize,
    header_end: usize,
    uniform: bool,
    previous_name: Option<&'a [u8]>,
    /// Where this container's children start in the shared extents stack.
    extents_from: usize,
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests: a failed unwrap is a failed test"
)]
mod tests {
    use super::*;

    /// A document whose root object of `n` properties stores its input order, where the
    /// order's entries sit and their width.
    fn object_with_order(n: usize) -> Option<(Vec<u8>, usize, usize)> {
        // Names first used ascending inside "x", then the root's own in descending order:
        // neither sorted nor by key id, so the root stores its input order.
        let names: Vec<String> = (0..n - 1).map(|i| format!("\"k{i:03}\":{i}")).collect();
        let mut root = names.clone();
        root.reverse();
        let json = format!("{{\"x\":{{{}}},{}}}", names.join(","), root.join(","));
        let doc = crate::from_json(json.as_bytes()).unwrap();
        let layout = Layout::read(&doc).unwrap();
        let v = Validator {
            bytes: &doc,
            body_end: layout.names_pos,
            names_pos: layout.names_pos,
            name_starts: Vec::new(),
            scratch: Vec::new(),
        };
        let frame = v.open(true, layout.root_pos, 0).unwrap();
        let (at, wp) = (frame.order_at, frame.wp);
        (wp > 0).then_some((doc, at, wp))
    }

    /// The order of an object must name each position once, on both sides of the size
    /// where the check stops keeping its marks on the stack: a repeated position and one
    /// past the end are refused.
    #[test]
    fn an_order_that_is_not_a_permutation_is_refused() {
        let mut tried = Vec::new();
        for n in [2, 3, 9, 63, 64, 65, 255, 256, 257, 300] {
            let Some((doc, at, wp)) = object_with_order(n) else {
                continue;
            };
            tried.push(n);
            validate(&doc).unwrap();
            let entry = |doc: &[u8], i: usize| get_uint(doc, at + i * wp, wp).unwrap();
            let set = |doc: &mut Vec<u8>, i: usize, value: u64| {
                let mut bytes = Vec::new();
                crate::format::put_uint(&mut bytes, value, wp);
                doc[at + i * wp..at + (i + 1) * wp].copy_from_slice(&bytes);
            };
            for i in [0, n / 2, n - 1] {
                let mut repeated = doc.clone();
                let other = entry(&doc, (i + 1) % n);
                set(&mut repeated, i, other);
                let e = validate(&repeated).unwrap_err().to_string();
                assert!(
                    e.contains("not a permutation"),
                    "{n} properties, entry {i}: {e}"
                );
                if wp > 1 || n < 255 {
                    let mut past = doc.clone();
                    set(&mut past, i, n as u64);
                    let e = validate(&past).unwrap_err().to_string();
                    assert!(
                        e.contains("not a permutation"),
                        "{n} properties, entry {i}: {e}"
                    );
                }
            }
        }
        // Both sides of 256 were tried.
        assert!(
            tried.contains(&64) && tried.contains(&256) && tried.contains(&257),
            "{tried:?}"
        );
    }
}
