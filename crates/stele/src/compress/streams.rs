//! Stream blocks (codec 6): keyed blocks whose documents are stored in their stream form
//! (`stele_doc::stream`), and the packer's choice between them and keyed blocks of documents.
//!
//! A stream holds a document's values in input order with its keys spelled out and no
//! offsets; zstd compresses it better than the document, whose offsets and key ids differ
//! from document to document (15 % smaller blocks over the shared collections, a third on
//! the ones of large nested documents). Collections of small documents of numbers compress
//! better as documents (vega-flights: a tenth bigger as streams), so [`BlockPacker`] packs a
//! block both ways every [`TRIAL_EVERY_BLOCKS`] blocks and keeps the smaller form until the
//! next trial (`docs/benchmarks.md`, "Document store"). Each trial that keeps the form the
//! one before kept doubles the blocks until the next, up to [`MOST_BLOCKS_BETWEEN_TRIALS`];
//! a trial that changes it starts again at [`TRIAL_EVERY_BLOCKS`]. A trial packs its block
//! twice and rebuilds each text form's document: on 4.5M small documents, whose blocks all
//! kept the same form, trials every 16 blocks took about 3 % of the import's CPU.
//!
//! A stream is turned back into its document when read ([`to_document`]): 0.2-2 us for
//! documents under 1 KiB, about 250-700 MB/s of document. The database's block cache keeps
//! each document once rebuilt.
//!
//! Values are told apart by their first byte: a document starts with `0xB1`, a stream with a
//! byte of at most `0x0A` ([`stele_doc::stream::is_stream`]), a text form with `{`
//! ([`is_text_form`]). A document whose stream does not rebuild it byte for byte (LZ4
//! strings, sorted keys, a duplicate key's leftover bytes) is stored as the document.
//!
//! Text blocks (codec 7) are stream blocks that may also hold text forms: a document's JSON
//! text, as an import read it, where [`stele_doc::stream::write_options`] rebuild exactly the
//! document from it (the import checks that, [`text_form_rebuilds`]). zstd compresses JSON
//! text better than streams, whose length bytes break the runs that documents of one
//! collection share: 4.5 million small documents (npm package names and URLs) pack into 32
//! KiB blocks 16 % smaller as text than as streams, 20 % smaller than as documents
//! (`docs/notes/`, "Import at scale"). An import pays for it by checking that the text
//! rebuilds the document, instead of making and checking its stream form: under its
//! default write options the one parse that makes the document is that check (repeated
//! keys refused, `crate::import` parses a record so refused again), under others a second
//! parse.

use std::borrow::Cow;
use std::cell::RefCell;

use stele_doc::{Document, DocumentWriter, stream};

use super::elide::is_elided;
use super::header::corrupt;
use crate::Result;

/// Blocks packed in the chosen form between two trials of both forms, at first and after
/// a trial that changed the form.
pub const TRIAL_EVERY_BLOCKS: u32 = 16;

/// Most blocks between two trials, reached after trials that kept the form (16, 32, ...).
pub const MOST_BLOCKS_BETWEEN_TRIALS: u32 = 256;

thread_local! {
    /// The writer that rebuilds documents from streams on this thread (reused: a fresh one
    /// would allocate its tables for every document).
    static REBUILDER: RefCell<DocumentWriter> =
        RefCell::new(DocumentWriter::with_options(stream::write_options()));
    /// The JSON text of an elided text form with its id put back, on this thread (reused).
    static RESTORED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether a stored block entry is a text form (a document's JSON text, an object): its
/// first byte is `{`, which starts neither a document (`0xB1`) nor a stream (`0x00-0x0A`).
pub fn is_text_form(value: &[u8]) -> bool {
    value.first() == Some(&b'{')
}

/// Whether `text` may be stored as the text form of `doc`: it is an object's JSON text that
/// `writer` (made with [`stele_doc::stream::write_options`], as [`to_document`] rebuilds
/// text forms) turns into exactly `doc`'s bytes.
pub fn text_form_rebuilds(text: &[u8], doc: &[u8], writer: &mut DocumentWriter) -> bool {
    is_text_form(text) && writer.from_json(text).is_ok_and(|rebuilt| rebuilt == doc)
}

/// A stored block entry (under `key`) as a document: `value` itself, or the document
/// rebuilt from it if it is a stream form, a text form or an elided text form (whose id
/// field is `key`, [`super::elide`]). The error says why one does not decode.
pub fn to_document<'v>(key: &[u8], value: &'v [u8]) -> Result<Cow<'v, [u8]>> {
    to_document_written(key, value).map(|(doc, _)| doc)
}

/// [`to_document`], and whether the document was written here by a `DocumentWriter` (rebuilt
/// from a text or stream form), which makes it a valid document by construction (what
/// `stele_doc::Document::new_unchecked` asks for): `false` when the stored bytes are handed
/// back as they are, which only validation can vouch for.
pub(crate) fn to_document_written<'v>(
    key: &[u8],
    value: &'v [u8],
) -> Result<(Cow<'v, [u8]>, bool)> {
    if is_elided(value) {
        return RESTORED.with(|buf| {
            let mut fresh = Vec::new();
            let mut held = buf.try_borrow_mut();
            let text = match held.as_deref_mut() {
                Ok(b) => b,
                Err(_) => &mut fresh,
            };
            super::elide::restore(key, value, text)?;
            let (doc, written) = to_document_written(key, text)?;
            Ok((Cow::Owned(doc.into_owned()), written))
        });
    }
    let text = is_text_form(value);
    if !text && !stream::is_stream(value) {
        return Ok((Cow::Borrowed(value), false));
    }
    let rebuild = |w: &mut DocumentWriter| {
        if text {
            w.from_json(value)
        } else {
            stream::decode(value, w)
        }
    };
    REBUILDER
        .with(|w| match w.try_borrow_mut() {
            Ok(mut w) => rebuild(&mut w),
            // Only reachable if decoding re-entered this function; a fresh writer is correct.
            Err(_) => rebuild(&mut DocumentWriter::with_options(stream::write_options())),
        })
        .map(|doc| (Cow::Owned(doc), true))
        .map_err(|e| {
            let form = if text { "text" } else { "stream" };
            corrupt(0, format!("a stored {form} form does not decode: {e}"))
        })
}

/// Whether a stored block entry is kept as JSON text, whole or elided: it goes into a text
/// block, and packers copy it as it is.
pub fn is_kept_text(value: &[u8]) -> bool {
    is_text_form(value) || is_elided(value)
}

/// Appends the stream form of the document `bytes` to `out` and returns true if they are a
/// valid document whose stream `writer` rebuilds exactly (else leaves `out` as it was).
pub(super) fn append_stream_form(
    bytes: &[u8],
    writer: &mut DocumentWriter,
    out: &mut Vec<u8>,
) -> bool {
    Document::new(bytes).is_ok_and(|doc| stream::encode(&doc, writer, out))
}

/// Appends `value` (a document or a stream form) to `out` in stream form where a document
/// has one that rebuilds it exactly, else as the document.
/// A text form goes in as it is.
pub(super) fn push_stream(value: &[u8], writer: &mut DocumentWriter, out: &mut Vec<u8>) {
    if stream::is_stream(value) || is_kept_text(value) || !append_stream_form(value, writer, out) {
        out.extend_from_slice(value);
    }
}

/// As [`push_stream`], without validating the document first (the stream form is still
/// checked by rebuilding it): for documents this process just wrote.
///
/// # Safety
///
/// `value` must be a stream form, a text form or a document that `stele_doc::validate`
/// accepts.
pub(super) unsafe fn push_stream_trusted(
    value: &[u8],
    writer: &mut DocumentWriter,
    out: &mut Vec<u8>,
) {
    if stream::is_stream(value) || is_kept_text(value) {
        out.extend_from_slice(value);
        return;
    }
    // SAFETY: neither a stream nor a text form, so a valid document by the caller's contract.
    let doc = unsafe { Document::new_unchecked(value) };
    if !stream::encode(&doc, writer, out) {
        out.extend_from_slice(value);
    }
}

/// Which form a packer gives its blocks' documents; see the module documentation.
#[derive(Debug, Clone, Copy)]
pub(super) struct FormChoice {
    /// Whether stream forms may be used at all ([`BlockPacker::streams`]).
    pub(super) allowed: bool,
    /// Whether the last trial found streams smaller.
    pub(super) streams: bool,
    /// Blocks to pack before the next trial (0: the next block is one).
    pub(super) until_trial: u32,
    /// Blocks from the last trial to the next (0: no trial yet).
    pub(super) between: u32,
}

impl FormChoice {
    pub(super) fn new() -> Self {
        FormChoice {
            allowed: true,
            streams: true,
            until_trial: 0,
            between: 0,
        }
    }

    /// Records a trial that found `streams` smaller or not, and when the next one comes:
    /// twice as many blocks on if the trial kept the form the last one kept, else
    /// [`TRIAL_EVERY_BLOCKS`].
    pub(super) fn tried(&mut self, streams: bool) {
        self.between = if self.between > 0 && streams == self.streams {
            (self.between * 2).min(MOST_BLOCKS_BETWEEN_TRIALS)
        } else {
            TRIAL_EVERY_BLOCKS
        };
        self.streams = streams;
        self.until_trial = self.between - 1;
    }
}

/// The documents of one block in one form, concatenated, and each one's end.
#[derive(Debug, Default)]
pub(super) struct Forms {
    pub(super) bytes: Vec<u8>,
    pub(super) ends: Vec<usize>,
}

impl Forms {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub(super) fn parts(&self) -> Vec<&[u8]> {
        crate::bytes::split_at_ends(&self.bytes, &self.ends)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::{BlockPacker, Codec, Decoder, Dictionaries};

    fn doc(json: &str) -> Vec<u8> {
        stele_doc::from_json_with(json.as_bytes(), crate::write_options()).unwrap()
    }

    #[test]
    fn documents_come_back_from_either_form() {
        let docs: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                doc(&format!(
                    r#"{{"name":"user {i}","tags":["a","b{i}"],"n":{i}.5}}"#
                ))
            })
            .collect();
        let keys: Vec<String> = (0..200).map(|i| format!("{i:05}")).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let values: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        let mut packer = BlockPacker::new(3, None).unwrap();
        let mut out = Vec::new();
        let codec = packer.pack_documents(&keys, &values, &mut out).unwrap();
        assert_eq!(
            codec,
            Codec::StreamBlock,
            "nested text documents pack smaller as streams"
        );
        let block = Decoder::new()
            .unwrap()
            .decode_block(&out, &Dictionaries::new())
            .unwrap();
        assert_eq!(block.len(), 400);
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(block.get(i), Some(keys[i]));
            assert!(stream::is_stream(block.get(200 + i).unwrap()));
            assert_eq!(&*block.document(200 + i).unwrap().unwrap(), d.as_slice());
        }
        // Re-packing the stored streams (the copy path of compaction) gives the same block.
        let stored: Vec<&[u8]> = (200..400).map(|i| block.get(i).unwrap()).collect();
        let mut again = Vec::new();
        packer.pack_documents(&keys, &stored, &mut again).unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn small_numeric_documents_stay_documents_after_a_trial() {
        // Rows of numbers under keys that share a shape: documents compress better.
        let docs: Vec<Vec<u8>> = (0..2000)
            .map(|i| {
                doc(&format!(
                    r#"{{"d":{},"t":{},"o":"A{}"}}"#,
                    i * 7919 % 1000,
                    i % 97,
                    i % 5
                ))
            })
            .collect();
        let keys: Vec<String> = (0..2000).map(|i| format!("{i:08}")).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let values: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        let mut packer = BlockPacker::new(9, None).unwrap();
        let (mut streams, mut documents) = (Vec::new(), Vec::new());
        packer.forms = FormChoice {
            allowed: true,
            streams: true,
            until_trial: 1,
            between: 0,
        };
        packer.pack_documents(&keys, &values, &mut streams).unwrap();
        packer.forms = FormChoice {
            allowed: true,
            streams: false,
            until_trial: 1,
            between: 0,
        };
        packer
            .pack_documents(&keys, &values, &mut documents)
            .unwrap();
        // A trial keeps the smaller of the two and packs the next blocks the same way.
        packer.forms = FormChoice::new();
        let mut chosen = Vec::new();
        let codec = packer.pack_documents(&keys, &values, &mut chosen).unwrap();
        assert_eq!(chosen.len(), streams.len().min(documents.len()));
        assert_eq!(
            codec == Codec::StreamBlock,
            streams.len() <= documents.len()
        );
        assert_eq!(packer.forms.until_trial, TRIAL_EVERY_BLOCKS - 1);
        let mut next = Vec::new();
        assert_eq!(
            packer.pack_documents(&keys, &values, &mut next).unwrap(),
            codec
        );
        assert_eq!(next, chosen);
        // Streams off: documents, whatever they would save.
        let mut off = BlockPacker::new(9, None).unwrap().streams(false);
        let stored: Vec<&[u8]> = values.clone();
        assert_eq!(
            off.pack_documents(&keys, &stored, &mut next).unwrap(),
            Codec::KeyedBlock
        );
        assert_eq!(next, documents);
    }

    /// An import's text forms pack as a text block (codec 7), come back as the documents
    /// they were checked against, and pack again as they are (compaction's copy path);
    /// texts that would not rebuild their document are refused by the check.
    #[test]
    fn text_forms_pack_as_text_blocks_and_come_back() {
        let texts: Vec<String> = (0..200)
            .map(|i| {
                format!(r#"{{"name":"user {i}","n":{i}.50,"tags":["a","b{i}"],"e":"\u00e9"}}"#)
            })
            .collect();
        let docs: Vec<Vec<u8>> = texts.iter().map(|t| doc(t)).collect();
        let mut w = DocumentWriter::with_options(stream::write_options());
        for (t, d) in texts.iter().zip(&docs) {
            assert!(text_form_rebuilds(t.as_bytes(), d, &mut w), "{t}");
        }
        // A duplicate key (the import kept the last one), blanks before the object, another
        // document: no text form.
        assert!(!text_form_rebuilds(
            br#"{"a":1,"a":2}"#,
            &doc(r#"{"a":2}"#),
            &mut w
        ));
        assert!(!text_form_rebuilds(
            br#" {"a":1}"#,
            &doc(r#"{"a":1}"#),
            &mut w
        ));
        assert!(!text_form_rebuilds(
            br#"{"a":1}"#,
            &doc(r#"{"a":1.0}"#),
            &mut w
        ));
        let keys: Vec<String> = (0..200).map(|i| format!("{i:05}")).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let mut values: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        values[5] = &docs[5];
        let mut packer = BlockPacker::new(3, None).unwrap();
        let mut out = Vec::new();
        let codec = packer.pack_documents(&keys, &values, &mut out).unwrap();
        assert_eq!(codec, Codec::TextBlock);
        let block = Decoder::new()
            .unwrap()
            .decode_block(&out, &Dictionaries::new())
            .unwrap();
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(block.get(i), Some(keys[i]));
            let stored = block.get(200 + i).unwrap();
            assert_eq!(is_text_form(stored), i != 5, "{i}");
            assert_eq!(&*block.document(200 + i).unwrap().unwrap(), d.as_slice());
        }
        let stored: Vec<&[u8]> = (200..400).map(|i| block.get(i).unwrap()).collect();
        let mut again = Vec::new();
        packer.pack_documents(&keys, &stored, &mut again).unwrap();
        assert_eq!(again, out);
        // Streams off: the same values go in as documents.
        let mut off = BlockPacker::new(3, None).unwrap().streams(false);
        assert_eq!(
            off.pack_documents(&keys, &values, &mut again).unwrap(),
            Codec::KeyedBlock
        );
        let e = to_document(b"k", br#"{"a":"#).unwrap_err();
        assert!(e.to_string().contains("text form does not decode"), "{e}");
    }

    #[test]
    fn documents_without_an_exact_stream_are_stored_whole() {
        let lz4 =
            stele_doc::from_json(format!(r#"{{"s":"{}"}}"#, "x".repeat(500)).as_bytes()).unwrap();
        let mut w = DocumentWriter::with_options(stream::write_options());
        let mut out = Vec::new();
        push_stream(&lz4, &mut w, &mut out);
        assert_eq!(out, lz4);
        out.clear();
        push_stream(b"not a document", &mut w, &mut out);
        assert_eq!(out, b"not a document");
        assert_eq!(&*to_document(b"k", &lz4).unwrap(), lz4.as_slice());
        let e = to_document(b"k", &[0x07, 0x05, b'a']).unwrap_err();
        assert!(e.to_string().contains("stream form does not decode"), "{e}");
    }

    /// Trials that keep the form space out (16, 32, ... 256 blocks); one that changes it
    /// brings the next back to 16 blocks on.
    #[test]
    fn trials_that_keep_the_form_space_out() {
        let mut forms = FormChoice::new();
        let mut gaps = Vec::new();
        for _ in 0..7 {
            forms.tried(true);
            gaps.push(forms.until_trial + 1);
        }
        assert_eq!(gaps, [16, 32, 64, 128, 256, 256, 256]);
        assert!(forms.streams);
        forms.tried(false);
        assert_eq!(
            (forms.streams, forms.until_trial),
            (false, TRIAL_EVERY_BLOCKS - 1)
        );
        forms.tried(false);
        assert_eq!(forms.until_trial, 2 * TRIAL_EVERY_BLOCKS - 1);
        forms.tried(true);
        assert_eq!(
            (forms.streams, forms.until_trial),
            (true, TRIAL_EVERY_BLOCKS - 1)
        );
        // The first trial has no form before it to keep, even if it finds streams (the
        // form a packer starts with).
        let mut first = FormChoice::new();
        first.tried(true);
        assert_eq!(first.until_trial, TRIAL_EVERY_BLOCKS - 1);
    }
}
