//! Per-collection compression of stored documents (zstd with trained dictionaries).
//!
//! Every stored value starts with a codec byte (raw, zstd, zstd with a dictionary) and, for a
//! dictionary, the dictionary's id, so each document can be read alone ([`codec`] has the byte
//! layout). A collection's [`Compressor`] compresses documents, keeps recent ones as samples,
//! trains a dictionary once enough exist (RavenDB 5.0's scheme), retrains when the stored/raw
//! ratio drifts (on a background thread if asked; spaced out further after each training that
//! produced nothing), and proposes a new dictionary only when it beats the current one on
//! held-out recent documents. One proposal at a time: a proposed dictionary is used only after
//! the database has persisted it and handed it back ([`Compressor::adopt`]), and nothing is
//! trained while it is out. Readers decode with a [`Decoder`] (one reusable zstd
//! context) and the collection's [`Dictionaries`].
//!
//! Per-document values keep every document readable alone but stay 2-5x bigger than zstd over
//! the whole collection on most data; [`Compressor::compress_block`] stores runs of documents
//! as one value (a block) for the database to use where size matters more than the cost of
//! decoding a block per uncached read (`docs/benchmarks.md`, "Document compression").

mod block;
pub mod codec;
mod compressor;
mod context;
mod dict_form;
pub mod elide;
mod header;
mod keyed;
mod options;
mod packer;
mod retrain;
mod streams;
mod trainer;

pub use codec::{
    Block, Codec, Decoder, Dictionaries, DictionaryId, Header, MAX_BLOCK_DOCS, MAX_DOCUMENT_BYTES,
    decode, encode_raw, parse_header, stored_dictionary,
};
pub use compressor::{CompressStats, Compressor, NewDictionary};
pub use dict_form::{
    MAX_STORED_DICTIONARY_BYTES, from_stored as dictionary_from_stored,
    stored_len as dictionary_stored_len, to_stored as dictionary_to_stored,
};
pub use keyed::MAX_KEY_BYTES;
pub use options::{CompressOptions, PARALLEL_COMPRESS_BYTES};
pub use packer::BlockPacker;
pub use retrain::{
    BlockTrained, BlockTraining, MAX_BLOCK_GROWTH, MIN_BLOCK_DOCS, PackTarget, block_is_full,
    cheapest_level,
};
pub(crate) use streams::to_document_written;
pub use streams::{
    MOST_BLOCKS_BETWEEN_TRIALS, TRIAL_EVERY_BLOCKS, is_kept_text, is_text_form, text_form_rebuilds,
    to_document,
};
/// The trainer with its choices exposed: for the benchmarks (`compress_bench`) and the
/// test that makes the fuzz targets' seeds; not part of the supported API. Not behind a
/// feature: a feature only the benchmarks turned on made every other build of the workspace
/// compile this crate (and all above it) a second time.
#[doc(hidden)]
pub use trainer::train_dictionary;
