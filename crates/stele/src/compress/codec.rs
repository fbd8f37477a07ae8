//! The stored-value codec: a small header naming how a document was stored, then the payload.
//!
//! ```text
//! raw        := 0x00 | document bytes
//! zstd       := 0x01 | varint raw_len | zstd frame (magicless, no checksum, no dictionary id)
//! zstd+dict  := 0x02 | varint dict_id | varint raw_len | zstd frame (same, with dictionary dict_id)
//! block      := 0x03 | varint dict_id (0: none) | varint count | varint raw_len | zstd frame
//!               the frame decodes to raw_len bytes: varint len * count, then the documents
//! removed    := 0x04
//! keyed      := 0x05 | varint dict_id (0: none) | varint n | varint raw_len | zstd frame
//!               n front-coded keys, their values' lengths, the values (see [`super::keyed`])
//! streams    := 0x06 | the same as keyed, each value a document's stream form
//!               (`stele_doc::stream`) or, where it has none, the document
//! ```
//!
//! A removed value is the database's mark of a deleted document whose older version may
//! still sit in a packed block below (`crate::pack`): it hides that version, and holds no
//! document.
//!
//! A block holds `count >= 1` consecutive documents compressed together in one frame (their
//! lengths first, then their concatenation, all inside the frame): far smaller than one frame
//! per document on collections of small documents, at the price of decoding the whole block
//! to read one of them ([`Decoder::decode_block`]; a cache of decoded blocks hides it for
//! neighbours). The lengths go inside the frame because on collections of 50-100-byte
//! documents, which compress to 5-7 bytes each, one or two raw length bytes per document
//! outside it cost a third of the block (`docs/benchmarks.md`, "Document store").
//!
//! Varints are LEB128 and canonical (overlong forms are rejected). `raw_len` is the length of the
//! decompressed document: decoding allocates exactly that much, after checking that a frame of
//! the given size can expand to it at all, so hostile bytes cannot ask for huge buffers.
//! Frames are "magicless" and carry neither a checksum nor zstd's own dictionary id: the codec
//! byte and our header say all of that, and the durable map checksums its blocks.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use stele_table::varint::VarintError;
use zstd::dict::DecoderDictionary;
use zstd::zstd_safe::{self, DCtx, DParameter, FrameFormat};

use crate::{Error, Result};

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
            _ => None,
        }
    }

    /// Whether values of this codec hold several entries ([`Decoder::decode_block`]).
    pub fn is_block(self) -> bool {
        matches!(self, Codec::Block | Codec::KeyedBlock | Codec::StreamBlock)
    }
}

/// The most a zstd frame can expand per input byte: a 4-byte RLE block (3-byte header plus the
/// byte) yields at most one 128 KiB block. Bounds `raw_len` against the frame size.
const MAX_EXPANSION: u64 = (128 * 1024) / 4 + 1;

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
fn check_frame(stored: &[u8], frame_at: usize, n: u64, len_at: usize) -> Result<()> {
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
fn parse_block(stored: &[u8], codec: Codec) -> Result<Header> {
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
        Codec::KeyedBlock | Codec::StreamBlock => {
            (count * super::keyed::MIN_ENTRY_BYTES, count * 2)
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
fn split_block(h: &Header, bytes: &[u8]) -> Result<(Vec<usize>, usize)> {
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

/// The dictionaries of one collection, prepared for decoding, by id.
///
/// Cheap to clone (dictionaries are shared); readers on many threads can each hold one.
#[derive(Clone, Default)]
pub struct Dictionaries {
    by_id: HashMap<DictionaryId, Arc<DecoderDictionary<'static>>>,
}

impl std::fmt::Debug for Dictionaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<_> = self.by_id.keys().copied().collect();
        ids.sort_unstable();
        f.debug_struct("Dictionaries").field("ids", &ids).finish()
    }
}

impl Dictionaries {
    /// An empty set.
    pub fn new() -> Dictionaries {
        Dictionaries::default()
    }

    /// Adds (or replaces) dictionary `id` from its raw bytes, as persisted by the database.
    pub fn insert(&mut self, id: DictionaryId, bytes: &[u8]) -> Result<()> {
        if id == 0 {
            return Err(Error::Zstd {
                op: "load dictionary",
                message: "dictionary id 0 is reserved".into(),
            });
        }
        let d = DecoderDictionary::try_copy(bytes).map_err(|e| Error::Zstd {
            op: "load dictionary",
            message: format!("dictionary {id} ({} bytes): {e}", bytes.len()),
        })?;
        self.by_id.insert(id, Arc::new(d));
        Ok(())
    }

    /// Removes dictionary `id` (once no stored value needs it); true if it was there.
    pub fn remove(&mut self, id: DictionaryId) -> bool {
        self.by_id.remove(&id).is_some()
    }

    /// The ids of the dictionaries held, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = DictionaryId> + '_ {
        self.by_id.keys().copied()
    }

    /// Whether dictionary `id` is loaded.
    pub fn contains(&self, id: DictionaryId) -> bool {
        self.by_id.contains_key(&id)
    }

    /// Number of loaded dictionaries.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no dictionary is loaded.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn get(&self, id: DictionaryId) -> Option<&DecoderDictionary<'static>> {
        self.by_id.get(&id).map(|d| &**d)
    }
}

/// Decodes stored values, reusing one zstd decompression context. One per reader thread.
pub struct Decoder {
    dctx: DCtx<'static>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").finish_non_exhaustive()
    }
}

fn zstd_err(op: &'static str, code: usize) -> Error {
    Error::Zstd {
        op,
        message: zstd_safe::get_error_name(code).to_owned(),
    }
}

impl Decoder {
    /// A decoder with its own decompression context.
    pub fn new() -> Result<Decoder> {
        let mut dctx = DCtx::try_create().ok_or(Error::Zstd {
            op: "create decompression context",
            message: "out of memory".into(),
        })?;
        dctx.set_parameter(DParameter::Format(FrameFormat::Magicless))
            .map_err(|c| zstd_err("set magicless format", c))?;
        Ok(Decoder { dctx })
    }

    /// Decodes a stored value into the document bytes: borrowed for raw values, decompressed
    /// otherwise. Checks the header, that the needed dictionary is in `dicts`, and that the frame
    /// decompresses to exactly the length the header states. It does not validate the document
    /// itself (`stele_doc::Document::new` does, unless a checksum already vouches for the bytes).
    pub fn decode<'a>(&mut self, stored: &'a [u8], dicts: &Dictionaries) -> Result<Cow<'a, [u8]>> {
        let h = parse_header(stored)?;
        let payload = stored.get(h.payload_at..).unwrap_or_default();
        match h.codec {
            Codec::Raw => return Ok(Cow::Borrowed(payload)),
            Codec::Block | Codec::KeyedBlock | Codec::StreamBlock | Codec::Removed => {
                return Err(not_single(&h));
            }
            Codec::Zstd | Codec::ZstdDict => {}
        }
        let mut out = Vec::new();
        self.decompress(&h, payload, dicts, &mut out)?;
        Ok(Cow::Owned(out))
    }

    /// Like [`Decoder::decode`], into `out` (cleared first; its capacity is reused).
    pub fn decode_into(
        &mut self,
        stored: &[u8],
        dicts: &Dictionaries,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let h = parse_header(stored)?;
        let payload = stored.get(h.payload_at..).unwrap_or_default();
        out.clear();
        match h.codec {
            Codec::Raw => {
                out.extend_from_slice(payload);
                return Ok(());
            }
            Codec::Block | Codec::KeyedBlock | Codec::StreamBlock | Codec::Removed => {
                return Err(not_single(&h));
            }
            Codec::Zstd | Codec::ZstdDict => {}
        }
        self.decompress(&h, payload, dicts, out)
    }

    /// Decodes a block (or a single-document value, as a block of one): every document of it.
    pub fn decode_block(&mut self, stored: &[u8], dicts: &Dictionaries) -> Result<Block> {
        let Some(&first) = stored.first() else {
            return Err(corrupt(0, "stored value is empty (no codec byte)"));
        };
        if !Codec::from_byte(first).is_some_and(Codec::is_block) {
            let mut bytes = Vec::new();
            self.decode_into(stored, dicts, &mut bytes)?;
            let ends = vec![bytes.len()];
            return Ok(Block {
                bytes,
                ends,
                start: 0,
                streams_from: None,
            });
        }
        let h = parse_header(stored)?;
        let payload = stored.get(h.payload_at..).unwrap_or_default();
        let mut bytes = Vec::new();
        self.decompress(&h, payload, dicts, &mut bytes)?;
        match h.codec {
            Codec::KeyedBlock => return super::keyed::split(&h, &bytes),
            Codec::StreamBlock => {
                let mut block = super::keyed::split(&h, &bytes)?;
                block.streams_from = Some(block.len() / 2);
                return Ok(block);
            }
            _ => {}
        }
        let (ends, start) = split_block(&h, &bytes)?;
        Ok(Block {
            bytes,
            ends,
            start,
            streams_from: None,
        })
    }

    fn decompress(
        &mut self,
        h: &Header,
        frame: &[u8],
        dicts: &Dictionaries,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let want = usize::try_from(h.raw_len)
            .map_err(|_| corrupt(1, format!("document length {} exceeds memory", h.raw_len)))?;
        out.clear();
        // Fallible: a damaged header may claim up to 4 GiB; fail instead of aborting.
        out.try_reserve_exact(want).map_err(|_| {
            corrupt(
                1,
                format!("cannot allocate {want} bytes for the decoded value"),
            )
        })?;
        let res = match h.dictionary {
            Some(id) => {
                let Some(d) = dicts.get(id) else {
                    return Err(Error::MissingDictionary { id });
                };
                self.dctx.decompress_using_ddict(out, frame, d.as_ddict())
            }
            None => self.dctx.decompress(out, frame),
        };
        // The context may hold state from a failed frame; reset it for the next value.
        let n = res.map_err(|c| {
            let _ = self.dctx.reset(zstd_safe::ResetDirective::SessionOnly);
            corrupt(
                h.payload_at,
                format!(
                    "zstd frame does not decode: {}",
                    zstd_safe::get_error_name(c)
                ),
            )
        })?;
        if n != want || out.len() != want {
            return Err(corrupt(
                h.payload_at,
                format!("zstd frame decodes to {n} bytes, header says {want}"),
            ));
        }
        Ok(())
    }
}

fn not_single(h: &Header) -> Error {
    corrupt(
        0,
        format!(
            "value is a block of {} documents, not one document; read it with decode_block",
            h.docs
        ),
    )
}

/// The decoded documents of a block, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The decoded frame: the length table, then the documents from `start` on.
    bytes: Vec<u8>,
    /// End of each document within `bytes`, non-decreasing, the last one `bytes.len()`.
    ends: Vec<usize>,
    /// Where the first document starts.
    start: usize,
    /// Entries from this one on may be stream forms (a [`Codec::StreamBlock`]'s values).
    streams_from: Option<usize>,
}

impl Block {
    /// A block of documents given as their concatenation and the end offset of each; checks
    /// that the ends grow and that the last one is the length of `bytes`.
    pub fn from_parts(bytes: Vec<u8>, ends: Vec<usize>) -> Result<Block> {
        let grows = ends.windows(2).all(|w| w.first() <= w.get(1));
        if ends.is_empty() || !grows || ends.last() != Some(&bytes.len()) {
            return Err(corrupt(
                0,
                "block parts do not fit: ends must grow and end at the length of the bytes",
            ));
        }
        Ok(Block {
            bytes,
            ends,
            start: 0,
            streams_from: None,
        })
    }

    /// Bytes this block holds on the heap (documents and offsets), for cache budgets.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the block holds no document (never, for a decoded block).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i` as stored: a key or a document, or, in a [`Codec::StreamBlock`], a
    /// document's stream form ([`Block::document`] rebuilds it).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 {
            self.start
        } else {
            *self.ends.get(i - 1)?
        };
        self.bytes.get(start..end)
    }

    /// Whether entry `i` may be a stream form, to be read with [`Block::document`].
    pub fn holds_streams(&self, i: usize) -> bool {
        self.streams_from.is_some_and(|from| i >= from)
    }

    /// Entry `i` as a document: as stored, or rebuilt from its stream form. `None` if `i`
    /// is out of range; an error if a stream form does not decode.
    pub fn document(&self, i: usize) -> Option<Result<Cow<'_, [u8]>>> {
        let entry = self.get(i)?;
        if !self.holds_streams(i) {
            return Some(Ok(Cow::Borrowed(entry)));
        }
        Some(super::streams::to_document(entry))
    }

    /// The entries in order, as stored (see [`Block::get`]).
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Decodes one stored value with a fresh context (convenience; keep a [`Decoder`] for many).
pub fn decode<'a>(stored: &'a [u8], dicts: &Dictionaries) -> Result<Cow<'a, [u8]>> {
    Decoder::new()?.decode(stored, dicts)
}
