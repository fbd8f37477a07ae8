//! Container headers decoded into shapes: the positions of an object's or array's parts,
//! found once, so that every access after is a multiply-add and a load.

use std::cmp::Ordering;

use crate::format::{
    ARR_UNIFORM, OBJ_HAS_ORDER, OBJ_ORDER_BY_ID, get_varint, width_bytes, width_code_for,
};

/// The name with id `id` (its offset in the names area).
#[inline]
pub(crate) fn name_at(names: &[u8], id: usize) -> &[u8] {
    match get_varint(names, id) {
        Some((len, used)) => names
            .get(id + used..(id + used).saturating_add(len as usize))
            .unwrap_or_default(),
        None => &[],
    }
}

/// Bytewise comparison without a `memcmp` call for short names (most keys): the call costs more
/// than comparing a dozen bytes in place.
#[inline]
pub(crate) fn cmp_name(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() <= 16 && b.len() <= 16 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    } else {
        a.cmp(b)
    }
}

/// The flags byte and element count that start every container header, and their size.
#[inline]
fn read_prefix(bytes: &[u8], pos: usize) -> Option<(u8, usize, u8)> {
    let flags = *bytes.get(pos)?;
    let (len, used) = get_varint(bytes, pos + 1)?;
    Some((flags, usize::try_from(len).ok()?, 1 + used as u8))
}

/// A container header's prefix, decoded: what an object's and an array's shape share. Plain
/// fields (no enum), so a document's layout stays in registers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Head {
    pub(super) pos: usize,
    pub(super) len: usize,
    pub(super) flags: u8,
    pub(super) prefix: u8,
}

impl Head {
    /// No container (an empty placeholder).
    pub(crate) const NONE: Head = Head {
        pos: 0,
        len: 0,
        flags: 0,
        prefix: 0,
    };

    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<Head> {
        let (flags, len, prefix) = read_prefix(bytes, pos)?;
        Some(Head {
            pos,
            len,
            flags,
            prefix,
        })
    }

    #[inline]
    pub(crate) fn object(self) -> ObjShape {
        ObjShape {
            pos: self.pos,
            len: self.len,
            flags: self.flags,
            prefix: self.prefix,
        }
    }

    #[inline]
    pub(crate) fn array(self) -> ArrShape {
        ArrShape {
            pos: self.pos,
            len: self.len,
            flags: self.flags,
            prefix: self.prefix,
        }
    }
}

/// How an object's input order is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputOrder {
    /// Input order is the sorted order.
    Sorted,
    /// Input order is ascending key id (names were first used in this order).
    ById,
    /// An explicit permutation follows the tags, entries of this many bytes.
    Explicit(usize),
}

/// An object header, decoded: 24 bytes, so values stay small to copy; the positions of its
/// parts are derived with a shift and a multiply-add when needed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjShape {
    /// Position of the header; child offsets count back from here.
    pub(super) pos: usize,
    pub(super) len: usize,
    pub(super) flags: u8,
    /// Bytes of flags and count: where the key ids start, relative to `pos`.
    pub(super) prefix: u8,
}

impl ObjShape {
    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<ObjShape> {
        Head::read(bytes, pos).map(Head::object)
    }

    #[inline]
    pub(super) fn key_width(&self) -> usize {
        width_bytes(self.flags >> 2)
    }

    #[inline]
    pub(super) fn offset_width(&self) -> usize {
        width_bytes(self.flags)
    }

    #[inline]
    pub(super) fn keys_at(&self) -> usize {
        self.pos + usize::from(self.prefix)
    }

    #[inline]
    pub(super) fn offsets_at(&self) -> usize {
        self.keys_at() + self.len * self.key_width()
    }

    #[inline]
    pub(super) fn tags_at(&self) -> usize {
        self.offsets_at() + self.len * self.offset_width()
    }

    #[inline]
    pub(super) fn order_at(&self) -> usize {
        self.tags_at() + self.len
    }

    #[inline]
    pub(super) fn order(&self) -> InputOrder {
        if self.flags & OBJ_HAS_ORDER != 0 {
            InputOrder::Explicit(width_bytes(width_code_for(
                self.len.saturating_sub(1) as u64
            )))
        } else if self.flags & OBJ_ORDER_BY_ID != 0 {
            InputOrder::ById
        } else {
            InputOrder::Sorted
        }
    }
}

/// An array header, decoded (24 bytes; part positions derived when needed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArrShape {
    pub(super) pos: usize,
    pub(super) len: usize,
    pub(super) flags: u8,
    /// Bytes of flags and count: where the offsets start, relative to `pos`.
    pub(super) prefix: u8,
}

impl ArrShape {
    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<ArrShape> {
        Head::read(bytes, pos).map(Head::array)
    }

    #[inline]
    pub(super) fn offset_width(&self) -> usize {
        width_bytes(self.flags)
    }

    #[inline]
    pub(super) fn offsets_at(&self) -> usize {
        self.pos + usize::from(self.prefix)
    }

    #[inline]
    pub(super) fn tags_at(&self) -> usize {
        self.offsets_at() + self.len * self.offset_width()
    }

    #[inline]
    pub(super) fn uniform(&self) -> bool {
        self.flags & ARR_UNIFORM != 0
    }
}
