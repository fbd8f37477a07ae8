//! zstd compression contexts with our frame settings, and the stored values they write:
//! one document alone ([`encode_with`]), a block of documents ([`encode_block`]), a keyed
//! block's frame ([`compress_joined`]).

use zstd::bulk;
use zstd::zstd_safe::{CParameter, DictAttachPref, FrameFormat, ParamSwitch};

use super::header::{Codec, DictionaryId, MAX_BLOCK_DOCS, encode_raw, put_varint};
use crate::{Error, Result};

pub(super) fn zstd_io(op: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::Zstd {
        op,
        message: e.to_string(),
    }
}

/// A compression context with our frame settings (magicless, no checksum, no dictionary id,
/// no content size: the stored-value header carries what is needed).
pub(super) fn context(level: i32, dict: Option<&[u8]>) -> Result<bulk::Compressor<'static>> {
    let mut c = match dict {
        Some(d) => bulk::Compressor::with_dictionary(level, d),
        None => bulk::Compressor::new(level),
    }
    .map_err(zstd_io("create compression context"))?;
    for p in [
        CParameter::Format(FrameFormat::Magicless),
        CParameter::ChecksumFlag(false),
        CParameter::DictIdFlag(false),
        CParameter::ContentSizeFlag(false),
    ] {
        c.set_parameter(p).map_err(zstd_io("set frame parameter"))?;
    }
    Ok(c)
}

/// The context that compresses blocks: as [`context`], with a dictionary's tables copied
/// into the context for each block rather than searched beside it. zstd's choice for
/// inputs of about 32 KiB is to search them beside (its "attach" mode, cheaper to set up),
/// whose match finder took 40 % of an import's CPU on geonames-cities (171,075 documents
/// of 100 bytes in blocks of 32 KiB); copied, the import took 0.42-0.44 s of user CPU
/// against 0.46-0.49 s in alternating runs, and stored 3,638,334 bytes against 3,639,870
/// (2026-11-26, `docs/notes/store.md`). The copy (the dictionary's match tables, under a
/// megabyte at the block levels) costs too much for one small document: documents
/// compressed one by one keep [`context`].
pub(super) fn block_context(level: i32, dict: Option<&[u8]>) -> Result<bulk::Compressor<'static>> {
    let mut c = context(level, dict)?;
    if dict.is_some() {
        c.set_parameter(CParameter::ForceAttachDict(DictAttachPref::ForceCopy))
            .map_err(zstd_io("set dictionary mode"))?;
    }
    Ok(c)
}

/// The context that compresses documents one by one, with `dict` or without one: as
/// [`context`], and without one also without Huffman coding of literals when `light`
/// ([`CompressOptions::light_ingest`]).
pub(super) fn document_context(
    level: i32,
    dict: Option<&[u8]>,
    light: bool,
) -> Result<bulk::Compressor<'static>> {
    let mut c = context(level, dict)?;
    if light && dict.is_none() {
        c.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))
            .map_err(zstd_io("set literal compression"))?;
    }
    Ok(c)
}

/// Compresses `docs` together with `cctx` (made with dictionary `dict_id`, 0 for none) into
/// a block value in `out` (cleared first); `joined` and `scratch` are reused buffers.
pub(super) fn encode_block(
    cctx: &mut bulk::Compressor<'static>,
    dict_id: DictionaryId,
    docs: &[&[u8]],
    joined: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    if docs.is_empty() || docs.len() > MAX_BLOCK_DOCS as usize {
        return Err(Error::Zstd {
            op: "compress block",
            message: format!(
                "a block holds 1 to {MAX_BLOCK_DOCS} documents, not {}",
                docs.len()
            ),
        });
    }
    // The frame holds the length table, then the documents (see `codec`'s layout).
    joined.clear();
    for d in docs {
        put_varint(joined, d.len() as u64);
    }
    for d in docs {
        joined.extend_from_slice(d);
    }
    compress_joined(
        cctx,
        Codec::Block,
        dict_id,
        docs.len(),
        joined,
        scratch,
        out,
    )
}

/// Compresses the frame content `joined` of a block of `count` entries into a stored value of
/// `codec` in `out`.
pub(super) fn compress_joined(
    cctx: &mut bulk::Compressor<'static>,
    codec: Codec,
    dict_id: DictionaryId,
    count: usize,
    joined: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    scratch.clear();
    scratch.reserve(zstd::zstd_safe::compress_bound(joined.len()));
    cctx.compress_to_buffer(joined, scratch)
        .map_err(zstd_io("compress"))?;
    out.clear();
    out.push(codec as u8);
    put_varint(out, u64::from(dict_id));
    put_varint(out, count as u64);
    put_varint(out, joined.len() as u64);
    out.extend_from_slice(scratch);
    Ok(())
}

/// Each document compressed alone with `cctx` (made with dictionary `dict`), in order.
pub(super) fn encode_all(
    cctx: &mut bulk::Compressor<'static>,
    dict: Option<DictionaryId>,
    docs: &[&[u8]],
) -> Result<Vec<Vec<u8>>> {
    let mut scratch = Vec::new();
    docs.iter()
        .map(|doc| {
            let mut out = Vec::new();
            encode_with(cctx, dict, doc, &mut scratch, &mut out)?;
            Ok(out)
        })
        .collect()
}

/// Compresses `doc` with `cctx` into a stored value in `out`, or stores it raw when that is not
/// bigger. Returns the codec used.
pub(super) fn encode_with(
    cctx: &mut bulk::Compressor<'static>,
    dict: Option<DictionaryId>,
    doc: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<Codec> {
    scratch.clear();
    scratch.reserve(zstd::zstd_safe::compress_bound(doc.len()));
    cctx.compress_to_buffer(doc, scratch)
        .map_err(zstd_io("compress"))?;
    out.clear();
    let codec = match dict {
        Some(id) => {
            out.push(Codec::ZstdDict as u8);
            put_varint(out, u64::from(id));
            Codec::ZstdDict
        }
        None => {
            out.push(Codec::Zstd as u8);
            Codec::Zstd
        }
    };
    put_varint(out, doc.len() as u64);
    if out.len() + scratch.len() > doc.len() {
        encode_raw(doc, out);
        return Ok(Codec::Raw);
    }
    out.extend_from_slice(scratch);
    Ok(codec)
}
