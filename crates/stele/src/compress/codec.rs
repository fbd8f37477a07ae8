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

use zstd::dict::DecoderDictionary;
use zstd::zstd_safe::{self, DCtx, DParameter, FrameFormat};

use crate::{Error, Result};

pub use super::block::Block;
pub use super::header::{
    Codec, DictionaryId, Header, MAX_BLOCK_DOCS, MAX_DOCUMENT_BYTES, encode_raw, parse_header,
    stored_dictionary,
};
use super::header::{corrupt, split_block};

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
            Codec::Block
            | Codec::KeyedBlock
            | Codec::StreamBlock
            | Codec::TextBlock
            | Codec::Removed => {
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
            Codec::Block
            | Codec::KeyedBlock
            | Codec::StreamBlock
            | Codec::TextBlock
            | Codec::Removed => {
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
            Codec::StreamBlock | Codec::TextBlock => {
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

/// Decodes one stored value with a fresh context (convenience; keep a [`Decoder`] for many).
pub fn decode<'a>(stored: &'a [u8], dicts: &Dictionaries) -> Result<Cow<'a, [u8]>> {
    Decoder::new()?.decode(stored, dicts)
}
