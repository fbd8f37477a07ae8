//! [`BlockPacker`]: compresses runs of documents into block values with one fixed setup,
//! choosing between keyed blocks of documents and stream blocks ([`super::streams`]).

use zstd::bulk;

use super::context::{block_context, compress_joined, encode_block};
use super::header::{Codec, DictionaryId, MAX_BLOCK_DOCS};
use super::keyed::join;
use super::streams::{
    FormChoice, Forms, is_kept_text, push_stream, push_stream_trusted, to_document,
};
use crate::{Error, Result};

/// Compresses runs of documents into block values with one fixed setup (level and
/// dictionary), independent of any [`Compressor`]'s training: what the database uses to pack
/// a collection's documents at compaction, off the write path.
pub struct BlockPacker {
    pub(super) cctx: bulk::Compressor<'static>,
    pub(super) dict_id: DictionaryId,
    pub(super) joined: Vec<u8>,
    pub(super) scratch: Vec<u8>,
    /// Stream forms of documents, checked by rebuilding them ([`super::streams`]).
    pub(super) writer: stele_doc::DocumentWriter,
    pub(super) forms: FormChoice,
    pub(super) stream_forms: Forms,
    pub(super) doc_forms: Forms,
    /// The block in the form a trial did not keep.
    pub(super) alternative: Vec<u8>,
    /// Whether the documents given are known valid ([`BlockPacker::trusting_documents`]):
    /// their stream forms are made without validating them first.
    trusted: bool,
}

impl std::fmt::Debug for BlockPacker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockPacker")
            .field("dict_id", &self.dict_id)
            .finish_non_exhaustive()
    }
}

impl BlockPacker {
    /// A packer at zstd `level` with `dictionary` (its id and bytes as persisted), if any.
    /// Preparing a dictionary at a high level takes a few milliseconds: make one per run.
    pub fn new(level: i32, dictionary: Option<(DictionaryId, &[u8])>) -> Result<BlockPacker> {
        let (cctx, dict_id) = match dictionary {
            Some((id, bytes)) => (block_context(level, Some(bytes))?, id),
            None => (block_context(level, None)?, 0),
        };
        Ok(BlockPacker {
            cctx,
            dict_id,
            joined: Vec::new(),
            scratch: Vec::new(),
            writer: stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options()),
            forms: FormChoice::new(),
            stream_forms: Forms::default(),
            doc_forms: Forms::default(),
            alternative: Vec::new(),
            trusted: false,
        })
    }

    /// Compresses `docs` (1 to [`MAX_BLOCK_DOCS`]) into one block value in `out` (cleared
    /// first), decoded by [`super::Decoder::decode_block`].
    pub fn pack(&mut self, docs: &[&[u8]], out: &mut Vec<u8>) -> Result<()> {
        encode_block(
            &mut self.cctx,
            self.dict_id,
            docs,
            &mut self.joined,
            &mut self.scratch,
            out,
        )
    }

    /// Compresses `keys` (strictly ascending, at most [`super::MAX_KEY_BYTES`] each) and
    /// their `values` (1 to [`MAX_BLOCK_DOCS`] of each, as many values as keys) into one keyed
    /// block value in `out` (cleared first); [`super::Decoder::decode_block`] yields the keys,
    /// then the values.
    pub fn pack_keyed(
        &mut self,
        keys: &[&[u8]],
        values: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.pack_keyed_as(Codec::KeyedBlock, keys, values, out)
    }

    /// [`Self::pack_keyed`] under `codec` ([`Codec::KeyedBlock`], or [`Codec::StreamBlock`]
    /// when the values are stream forms, [`Codec::TextBlock`] when text forms are among
    /// them; the layout is the same).
    pub(super) fn pack_keyed_as(
        &mut self,
        codec: Codec,
        keys: &[&[u8]],
        values: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if keys.is_empty() || keys.len() > MAX_BLOCK_DOCS as usize || keys.len() != values.len() {
            return Err(Error::Zstd {
                op: "compress keyed block",
                message: format!(
                    "a keyed block holds 1 to {MAX_BLOCK_DOCS} keys and one value per key, not {} keys and {} values",
                    keys.len(),
                    values.len()
                ),
            });
        }
        join(keys, values, &mut self.joined)?;
        compress_joined(
            &mut self.cctx,
            codec,
            self.dict_id,
            keys.len(),
            &self.joined,
            &mut self.scratch,
            out,
        )
    }
}

impl BlockPacker {
    /// Whether [`Self::pack_documents`] may store documents in their stream form (default:
    /// on). Streams make blocks 0-35 % smaller (15 % over the shared collections) and cost,
    /// per document packed, turning it into a stream and rebuilding it once to check it
    /// (about 2 us for a 1 KiB document); off, every block holds documents.
    pub fn streams(mut self, on: bool) -> Self {
        self.forms.allowed = on;
        self
    }

    /// This packer, taking the documents given to [`BlockPacker::pack_documents`] as valid:
    /// their stream forms are made without validating them (a tenth of the CPU of a small
    /// import's packing: `stele_doc::validate` and its UTF-8 checks); each stream form is
    /// still checked by rebuilding its document.
    ///
    /// # Safety
    ///
    /// Every value later given to [`BlockPacker::pack_documents`] must be a stream form, a
    /// text form or a document that `stele_doc::validate` accepts (for example, one `DocumentWriter` just
    /// wrote in this process and nothing read back from disk since).
    #[must_use]
    pub(crate) unsafe fn trusting_documents(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// Compresses `keys` (strictly ascending, at most [`super::MAX_KEY_BYTES`] each) and their
    /// documents (1 to [`super::MAX_BLOCK_DOCS`], one per key; each a document, a stream
    /// form read from another block, or a text form an import checked) into one block value
    /// in `out` (cleared first): a stream block (a text block where text forms are among
    /// them) or a keyed block of documents, whichever the packer's last trial found smaller.
    /// [`super::Decoder::decode_block`] yields the keys, then the entries
    /// [`super::Block::document`] reads as documents. Returns the codec used.
    pub fn pack_documents(
        &mut self,
        keys: &[&[u8]],
        values: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<Codec> {
        if !self.forms.allowed {
            self.forms.streams = false;
        }
        let trial = self.forms.allowed && self.forms.until_trial == 0;
        let streams = trial || self.forms.streams;
        let documents = trial || !self.forms.streams;
        let mut stream_forms = std::mem::take(&mut self.stream_forms);
        let mut doc_forms = std::mem::take(&mut self.doc_forms);
        stream_forms.clear();
        doc_forms.clear();
        let mut texts = false;
        if streams {
            for v in values {
                texts |= is_kept_text(v);
                if self.trusted {
                    // SAFETY: `trusted` is set only by `trusting_documents`, whose caller
                    // promised that every value given here is a stream form or a valid
                    // document.
                    unsafe { push_stream_trusted(v, &mut self.writer, &mut stream_forms.bytes) };
                } else {
                    push_stream(v, &mut self.writer, &mut stream_forms.bytes);
                }
                stream_forms.ends.push(stream_forms.bytes.len());
            }
        }
        if documents {
            for (k, v) in keys.iter().zip(values) {
                doc_forms.bytes.extend_from_slice(&to_document(k, v)?);
                doc_forms.ends.push(doc_forms.bytes.len());
            }
        }
        let result = self.pack_forms(keys, &stream_forms, &doc_forms, trial, texts, out);
        (self.stream_forms, self.doc_forms) = (stream_forms, doc_forms);
        result
    }

    fn pack_forms(
        &mut self,
        keys: &[&[u8]],
        stream_forms: &Forms,
        doc_forms: &Forms,
        trial: bool,
        texts: bool,
        out: &mut Vec<u8>,
    ) -> Result<Codec> {
        // Stream forms, and text forms among them where the values hold some.
        let codec_of = |streams: bool| match (streams, texts) {
            (true, true) => Codec::TextBlock,
            (true, false) => Codec::StreamBlock,
            (false, _) => Codec::KeyedBlock,
        };
        if !trial {
            let forms = if self.forms.streams {
                stream_forms
            } else {
                doc_forms
            };
            let codec = codec_of(self.forms.streams);
            self.pack_keyed_as(codec, keys, &forms.parts(), out)?;
            self.forms.until_trial = self.forms.until_trial.saturating_sub(1);
            return Ok(codec);
        }
        let mut as_docs = std::mem::take(&mut self.alternative);
        self.pack_keyed_as(Codec::KeyedBlock, keys, &doc_forms.parts(), &mut as_docs)?;
        self.pack_keyed_as(codec_of(true), keys, &stream_forms.parts(), out)?;
        self.forms.tried(out.len() <= as_docs.len());
        if !self.forms.streams {
            std::mem::swap(out, &mut as_docs);
        }
        self.alternative = as_docs;
        Ok(codec_of(self.forms.streams))
    }
}
