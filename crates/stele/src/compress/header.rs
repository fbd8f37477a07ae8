//! The stored-value header: codec byte, dictionary id, lengths (layout in [`super::codec`]),
//! parsed and checked without decoding anything.

use crate::{Error, Result};
use stele_table::varint::VarintError;

/// Identifies a dictionary within one collection. Ids start at 1, grow, and are never reused.
pub type DictionaryId = u32;

/// How a stored value holds its document (the first byte of every stored value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Codec {
    /// The document bytes as they are.
    Raw = 0,
    /// One zstd frame, no dictionary.
    Zstd = 1,
    /// One zstd frame compressed with a collection dictionary.
    ZstdDict = 2,
    /// Several documents in one zstd frame, with or without a dictionary.
    Block = 3,
    /// The mark of a removed document (no payload).
    Removed = 4,
    /// Keys (front-coded, ascending) and their values in one zstd frame (layout in
    /// `docs/FORMAT.md`, "Stored document values").
    KeyedBlock = 5,
    /// A keyed block whose values are documents in their stream form
    /// (`stele_doc::stream`: smaller once compressed, rebuilt when read), or documents
    /// where a stream would not rebuild them exactly ([`Block::document`] reads either).
    StreamBlock = 6,
    /// A stream block whose values may also be text forms (a document's JSON text, rebuilt
    /// when read; `super::streams`): what an import of JSON text packs (manifest version 5).
    TextBlock = 7,
}

impl Codec {
    /// The codec of a codec byte, if it is one.
    pub fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::Raw),
            1 => Some(Codec::Zstd),
            2 => Some(Codec::ZstdDict),
            3 => Some(Codec::Block),
            4 => Some(Codec::Removed),
            5 => Some(Codec::KeyedBlock),
            6 => Some(Codec::StreamBlock),
            7 => Some(Codec::TextBlock),
            _ => None,
        }
    }

    /// Whether values of this codec hold several entries ([`Decoder::decode_block`]).
    pub fn is_block(self) -> bool {
        matches!(
            self,
            Codec::Block | Codec::KeyedBlock | Codec::StreamBlock | Codec::TextBlock
        )
    }
}

/// The most a zstd frame can expand per input byte: a 4-byte RLE block (3-byte header plus the
/// byte) yields at most one 128 KiB block. Bounds `raw_len` against the frame size.
pub(super) const MAX_EXPANSION: u64 = (128 * 1024) / 4 + 1;

/// Largest document a stored value may claim (4 GiB - 1): the format's widest offsets are u32.
pub const MAX_DOCUMENT_BYTES: u64 = u32::MAX as u64;

/// The header of a stored value, parsed and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// How the document is stored.
    pub codec: Codec,
    /// The dictionary it needs ([`Codec::ZstdDict`] only).
    pub dictionary: Option<DictionaryId>,
    /// Length of the document once decoded (for a block: of its decoded frame, the length
    /// table and every document).
    pub raw_len: u64,
    /// Entries [`Decoder::decode_block`] yields: 1 for a single document, `count` for a
    /// block, `2n` (keys and values) for a keyed block of `n` keys.
    pub docs: u32,
    /// Where the payload starts in the stored value.
    pub payload_at: usize,
}

pub(super) fn corrupt(offset: usize, problem: impl Into<String>) -> Error {
    Error::CorruptValue {
        offset,
        problem: problem.into(),
    }
}

/// Appends `v` as a LEB128 varint (the codec of `stele_table::varint`).
pub(crate) use stele_table::varint::put as put_varint;

/// Reads a canonical LEB128 varint at `pos` (`stele_table::varint`); returns the value and
/// the position after it. The error names the varint (`what`) and its offset.
pub(super) fn get_varint(bytes: &[u8], pos: usize, what: &str) -> Result<(u64, usize)> {
    stele_table::varint::decode(bytes, pos).map_err(|e| {
        let problem = match e {
            VarintError::Truncated { .. } => format!("value ends inside the {what} varint"),
            VarintError::Overlong { .. } => format!("{what} varint is overlong"),
            VarintError::Overflow { .. } => format!("{what} varint overflows 64 bits"),
        };
        corrupt(e.offset(), problem)
    })
}

/// Parses and checks the header of a stored value (not the payload).
pub fn parse_header(stored: &[u8]) -> Result<Header> {
    let Some(&first) = stored.first() else {
        return Err(corrupt(0, "stored value is empty (no codec byte)"));
    };
    let Some(codec) = Codec::from_byte(first) else {
        return Err(corrupt(
            0,
            format!(
                "unknown codec byte {first:#04x} (known: 0 raw, 1 zstd, 2 zstd+dictionary, 3 block, 4 removed, 5 keyed block, 6 stream block)"
            ),
        ));
    };
    if codec.is_block() {
        return parse_block(stored, codec);
    }
    if codec == Codec::Removed {
        return Err(corrupt(
            0,
            "value marks a removed document; there is no document to decode",
        ));
    }
    let mut pos = 1;
    let dictionary = if codec == Codec::ZstdDict {
        let (id, p) = get_varint(stored, pos, "dictionary id")?;
        if id == 0 || id > u64::from(DictionaryId::MAX) {
            return Err(corrupt(pos, format!("dictionary id {id} is out of range")));
        }
        pos = p;
        Some(id as DictionaryId)
    } else {
        None
    };
    let raw_len = if codec == Codec::Raw {
        (stored.len() - pos) as u64
    } else {
        let (n, p) = get_varint(stored, pos, "document length")?;
        check_frame(stored, p, n, pos)?;
        pos = p;
        n
    };
    Ok(Header {
        codec,
        dictionary,
        raw_len,
        docs: 1,
        payload_at: pos,
    })
}

/// Checks that a frame starting at `frame_at` can decode to `n` bytes (`len_at`: where the
/// length was written, for the error).
pub(super) fn check_frame(stored: &[u8], frame_at: usize, n: u64, len_at: usize) -> Result<()> {
    let frame = (stored.len() - frame_at) as u64;
    if frame == 0 {
        return Err(corrupt(frame_at, "zstd frame is missing"));
    }
    if n > MAX_DOCUMENT_BYTES || n > frame.saturating_mul(MAX_EXPANSION) {
        return Err(corrupt(
            len_at,
            format!("decoded length {n} is impossible for a {frame}-byte zstd frame"),
        ));
    }
    Ok(())
}

/// Most documents one block may hold.
pub const MAX_BLOCK_DOCS: u32 = 1 << 20;

/// Parses the header of a block or keyed block (the lengths of its documents are inside the
/// frame, read by [`split_block`] or [`super::keyed::split`] once decoded).
pub(super) fn parse_block(stored: &[u8], codec: Codec) -> Result<Header> {
    let (id, mut pos) = get_varint(stored, 1, "dictionary id")?;
    if id > u64::from(DictionaryId::MAX) {
        return Err(corrupt(1, format!("dictionary id {id} is out of range")));
    }
    let count_at = pos;
    let (count, p) = get_varint(stored, pos, "document count")?;
    pos = p;
    if count == 0 || count > u64::from(MAX_BLOCK_DOCS) {
        return Err(corrupt(
            count_at,
            format!("block document count {count} is out of range (1..={MAX_BLOCK_DOCS})"),
        ));
    }
    let len_at = pos;
    let (raw_len, p) = get_varint(stored, pos, "block length")?;
    pos = p;
    // Each length takes at least one byte of the decoded frame (a key and its value three).
    let (min_bytes, entries) = match codec {
        Codec::KeyedBlock | Codec::StreamBlock | Codec::TextBlock => {
            (count * MIN_ENTRY_BYTES, count * 2)
        }
        _ => (count, count),
    };
    if min_bytes > raw_len {
        return Err(corrupt(
            count_at,
            format!("block claims {count} documents in {raw_len} decoded bytes"),
        ));
    }
    check_frame(stored, pos, raw_len, len_at)?;
    Ok(Header {
        codec,
        dictionary: (id != 0).then_some(id as DictionaryId),
        raw_len,
        docs: entries as u32,
        payload_at: pos,
    })
}

/// Reads the length table at the start of a decoded block frame (`bytes`, from a value whose
/// header is `h`): the end offset of each document within `bytes`, and where the first one
/// starts. Checks that the lengths exactly cover the rest of the frame.
pub(super) fn split_block(h: &Header, bytes: &[u8]) -> Result<(Vec<usize>, usize)> {
    let count = h.docs as usize;
    // `count <= raw_len == bytes.len()` (checked by `parse_block` and `decompress`), so
    // this allocation is bounded by the decoded size.
    // First each document's end relative to the end of the table (running totals), then,
    // once they are known to cover the rest of the frame exactly, shifted by the table's length.
    let mut ends = Vec::with_capacity(count);
    let mut pos = 0;
    let mut total: u64 = 0;
    for _ in 0..count {
        let (n, p) = get_varint(bytes, pos, "document length")
            .map_err(|_| corrupt(h.payload_at, "the length table of a block is cut short"))?;
        total = total.saturating_add(n);
        ends.push(total);
        pos = p;
    }
    let rest = (bytes.len() - pos) as u64;
    if total != rest {
        return Err(corrupt(
            h.payload_at,
            format!("the documents of a block add up to {total} bytes, its frame holds {rest}"),
        ));
    }
    // Cannot overflow: every running total is at most `rest`, and `pos + rest == bytes.len()`.
    let ends = ends.into_iter().map(|end| pos + end as usize).collect();
    Ok((ends, pos))
}

/// The dictionary a stored value needs, if any (for reference counting dictionaries).
pub fn stored_dictionary(stored: &[u8]) -> Result<Option<DictionaryId>> {
    Ok(parse_header(stored)?.dictionary)
}

/// Wraps `doc` as a raw stored value.
pub fn encode_raw(doc: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(doc.len() + 1);
    out.push(Codec::Raw as u8);
    out.extend_from_slice(doc);
}

/// Fewest decoded bytes one key and its value take (shared, suffix length and value length
/// varints): bounds `n` by `raw_len` in the header check.
pub(super) const MIN_ENTRY_BYTES: u64 = 3;
