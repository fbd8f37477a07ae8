//! The stored-value codec: a small header naming how a document was stored, then the payload.
//!
//! ```text
//! raw        := 0x00 | document bytes
//! zstd       := 0x01 | varint raw_len | zstd frame (magicless, no checksum, no dictionary id)
//! zstd+dict  := 0x02 | varint dict_id | varint raw_len | zstd frame (same, with dictionary dict_id)
//! ```
//!
//! Varints are LEB128 and canonical (overlong forms are rejected). `raw_len` is the length of the
//! decompressed document: decoding allocates exactly that much, after checking that a frame of
//! the given size can expand to it at all, so hostile bytes cannot ask for huge buffers.
//! Frames are "magicless" and carry neither a checksum nor zstd's own dictionary id: the codec
//! byte and our header say all of that, and the durable map checksums its blocks.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

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
}

impl Codec {
    /// The codec of a codec byte, if it is one.
    pub fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::Raw),
            1 => Some(Codec::Zstd),
            2 => Some(Codec::ZstdDict),
            _ => None,
        }
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
    /// Length of the document once decoded.
    pub raw_len: u64,
    /// Where the payload starts in the stored value.
    pub payload_at: usize,
}

fn corrupt(offset: usize, problem: impl Into<String>) -> Error {
    Error::CorruptValue {
        offset,
        problem: problem.into(),
    }
}

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a canonical LEB128 varint at `pos`; returns the value and the position after it.
fn get_varint(bytes: &[u8], pos: usize, what: &str) -> Result<(u64, usize)> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    let mut p = pos;
    loop {
        let Some(&b) = bytes.get(p) else {
            return Err(corrupt(p, format!("value ends inside the {what} varint")));
        };
        if shift == 63 && b > 1 {
            return Err(corrupt(p, format!("{what} varint overflows 64 bits")));
        }
        v |= u64::from(b & 0x7f) << shift;
        p += 1;
        if b & 0x80 == 0 {
            if b == 0 && p - pos > 1 {
                return Err(corrupt(pos, format!("{what} varint is overlong")));
            }
            return Ok((v, p));
        }
        shift += 7;
    }
}

/// Parses and checks the header of a stored value (not the payload).
pub fn parse_header(stored: &[u8]) -> Result<Header> {
    let Some(&first) = stored.first() else {
        return Err(corrupt(0, "stored value is empty (no codec byte)"));
    };
    let Some(codec) = Codec::from_byte(first) else {
        return Err(corrupt(
            0,
            format!("unknown codec byte {first:#04x} (known: 0 raw, 1 zstd, 2 zstd+dictionary)"),
        ));
    };
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
        let frame = (stored.len() - p) as u64;
        if frame == 0 {
            return Err(corrupt(p, "zstd frame is missing"));
        }
        if n > MAX_DOCUMENT_BYTES || n > frame.saturating_mul(MAX_EXPANSION) {
            return Err(corrupt(
                pos,
                format!("document length {n} is impossible for a {frame}-byte zstd frame"),
            ));
        }
        pos = p;
        n
    };
    Ok(Header {
        codec,
        dictionary,
        raw_len,
        payload_at: pos,
    })
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
        if h.codec == Codec::Raw {
            return Ok(Cow::Borrowed(payload));
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
        if h.codec == Codec::Raw {
            out.extend_from_slice(payload);
            return Ok(());
        }
        self.decompress(&h, payload, dicts, out)
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
        out.reserve_exact(want);
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

/// Decodes one stored value with a fresh context (convenience; keep a [`Decoder`] for many).
pub fn decode<'a>(stored: &'a [u8], dicts: &Dictionaries) -> Result<Cow<'a, [u8]>> {
    Decoder::new()?.decode(stored, dicts)
}
