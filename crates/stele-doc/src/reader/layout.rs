//! Where the parts of a document are (its trailer, the root container's header), and the
//! cache hints that opening one starts with. Below the reader and the validator alike: a
//! checked open validates, and validation reads the layout first.

use super::head::Head;
use crate::error::{Error, Result};
use crate::format::{HEADER_BYTE, MIN_DOCUMENT_BYTES, Tag, get_uint, width_bytes};

/// Where the parts of a document are, read from its trailer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// The root container's header, decoded once per document rather than once per access.
    pub(super) root_shape: RootShape,
    pub(crate) root_tag: Tag,
    pub(crate) root_pos: usize,
    pub(crate) names_pos: usize,
    pub(crate) names_end: usize,
}

impl Layout {
    /// Reads and checks the header byte and the trailer.
    #[inline]
    pub(crate) fn read(bytes: &[u8]) -> Result<Layout> {
        if bytes.len() < MIN_DOCUMENT_BYTES {
            return Err(Error::invalid(
                bytes.len(),
                "too short: a document has at least 5 bytes",
            ));
        }
        match bytes.first() {
            Some(&HEADER_BYTE) => {}
            Some(b) if b >> 4 == HEADER_BYTE >> 4 => {
                return Err(Error::invalid(
                    0,
                    "unsupported format version (this build reads version 1)",
                ));
            }
            _ => return Err(Error::invalid(0, "bad header byte")),
        }
        let len = bytes.len();
        let flags = bytes.get(len - 1).copied().unwrap_or(0xFF);
        if flags & !3 != 0 {
            return Err(Error::invalid(len - 1, "reserved trailer bits are set"));
        }
        let w = width_bytes(flags);
        let root_tag = bytes
            .get(len - 2)
            .and_then(|&t| Tag::from_u8(t))
            .ok_or_else(|| Error::invalid(len - 2, "unknown root type tag"))?;
        let names_end = len
            .checked_sub(2 + 2 * w)
            .filter(|&e| e >= 1)
            .ok_or_else(|| Error::invalid(0, "trailer longer than the document"))?;
        let root_pos = get_uint(bytes, names_end, w).unwrap_or(u64::MAX);
        let names_pos = get_uint(bytes, names_end + w, w).unwrap_or(u64::MAX);
        let names_pos = usize::try_from(names_pos)
            .ok()
            .filter(|&p| p >= 1 && p <= names_end)
            .ok_or_else(|| Error::invalid(names_end + w, "names area position out of bounds"))?;
        let root_pos = usize::try_from(root_pos)
            .ok()
            .filter(|&p| {
                if root_tag.has_payload() {
                    p >= 1 && p < names_pos
                } else {
                    p == 0
                }
            })
            .ok_or_else(|| Error::invalid(names_end, "root position out of bounds"))?;
        Ok(Layout::with_root(
            bytes, root_tag, root_pos, names_pos, names_end,
        ))
    }

    /// The layout from the trailer's positions, the root container's header decoded.
    #[inline(always)]
    fn with_root(
        bytes: &[u8],
        root_tag: Tag,
        root_pos: usize,
        names_pos: usize,
        names_end: usize,
    ) -> Layout {
        // Names are compared next to the root header; ask for them while it is read.
        prefetch(bytes.get(names_pos.saturating_sub(1)..).unwrap_or_default());
        Layout {
            root_shape: RootShape::read(bytes, root_tag, root_pos),
            root_tag,
            root_pos,
            names_pos,
            names_end,
        }
    }

    /// The trailer of bytes promised valid ([`Document::new_unchecked`]): the same positions as
    /// [`Layout::read`] without the checks that only reject invalid documents (header byte,
    /// reserved bits, position order) and without building errors. Every read stays bounds
    /// checked: a broken promise gives `None` or wrong positions, never an access outside
    /// `bytes`.
    #[inline(always)]
    pub(super) fn read_trusted(bytes: &[u8]) -> Option<Layout> {
        let len = bytes.len();
        let [tag, flags] = *bytes.get(len.checked_sub(2)?..)?.first_chunk::<2>()?;
        let w = width_bytes(flags);
        let root_tag = Tag::from_u8(tag)?;
        let names_end = len.checked_sub(2 + 2 * w)?;
        let root_pos = get_uint(bytes, names_end, w)? as usize;
        let names_pos = get_uint(bytes, names_end + w, w)? as usize;
        Some(Layout::with_root(
            bytes, root_tag, root_pos, names_pos, names_end,
        ))
    }
}

/// Asks the CPU to start loading the parts of a document that opening it reads first (its
/// trailer, where the root header and names usually sit too, and its start), without waiting.
/// For loops over many documents out of cache: hint document `i + 4` while reading document `i`,
/// so its cache misses overlap the work on this one. A hint only: no effect on other CPUs, never
/// faults, any bytes are fine. Reading with a [`PathSet`], prefer [`PathSet::prefetch`]: it also
/// hints the root header, the names and the values, where the set found them last (debian
/// packages, 800-byte documents out of cache: 97-109 ns per document against 143-168).
#[inline]
pub fn prefetch_document(bytes: &[u8]) {
    prefetch(bytes);
    prefetch(
        bytes
            .get(bytes.len().saturating_sub(2)..)
            .unwrap_or_default(),
    );
}

/// Hints the CPU to load the cache line of `bytes`' second byte (a document's first value;
/// no effect on other CPUs).
#[inline(always)]
pub(super) fn prefetch(bytes: &[u8]) {
    prefetch_at(bytes, 1);
}

/// Hints the CPU to load the cache line that holds `bytes[pos]`; nothing if `pos` is out of
/// bounds (no effect on other CPUs).
#[inline(always)]
pub(crate) fn prefetch_at(bytes: &[u8], pos: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.get(pos) {
        // SAFETY: a prefetch is a hint: it never faults and changes no memory; the address is
        // inside `bytes` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                std::ptr::from_ref(byte).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, pos);
}

/// The root container's header. A struct, not an enum of shapes: an enum with data was built
/// in memory and read back whole on every open (a store-forwarding stall, profiled).
#[derive(Debug, Clone, Copy)]
pub(super) struct RootShape {
    pub(super) kind: RootKind,
    pub(super) head: Head,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RootKind {
    Object,
    Array,
    /// Not a container, or (bytes promised valid but not) a header that does not decode.
    Other,
}

impl RootShape {
    pub(super) const OTHER: RootShape = RootShape {
        kind: RootKind::Other,
        head: Head::NONE,
    };

    #[inline(always)]
    fn read(bytes: &[u8], root_tag: Tag, root_pos: usize) -> RootShape {
        let kind = match root_tag {
            Tag::Object => RootKind::Object,
            Tag::Array => RootKind::Array,
            _ => return RootShape::OTHER,
        };
        match Head::read(bytes, root_pos) {
            Some(head) => RootShape { kind, head },
            None => RootShape::OTHER,
        }
    }
}
