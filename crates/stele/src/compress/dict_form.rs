//! A dictionary as the database stores it (the value of `dict/<collection>/<id>` in the meta
//! collection): compressed, or, when that does not make it smaller, as it is.
//!
//! Why: a trained dictionary is mostly its content, byte strings picked from the samples,
//! and those repeat each other (the same keys and values recur across the segments
//! fastCover picks). zstd stores github-webhooks' 32 KiB dictionary in 5.5 KB: stored as
//! it was, the dictionary was a third of the collection at rest. Loading one costs a
//! decompression of a few tens of KiB (tens of microseconds), once per open.
//!
//! Layout (`docs/FORMAT.md`, "Dictionaries as stored"): either a standard zstd frame (with
//! its magic `28 b5 2f fd`, the content size and a checksum) that decodes to the
//! dictionary, or the dictionary's bytes (a trained dictionary starts with zstd's
//! dictionary magic `37 a4 30 ec`; written so before manifest version 4, and still when
//! compressing does not pay). The two magics differ, so the first four bytes tell them
//! apart.

use super::context::zstd_io;
use crate::{Error, Result};
use std::borrow::Cow;

/// The magic of a standard zstd frame (little-endian 0xFD2FB528).
const FRAME_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// zstd level dictionaries are stored at: 32 KiB take about 0.3 ms at level 9 and come
/// out within 3 % of level 19 (which takes 60 ms).
const STORE_LEVEL: i32 = 9;

/// Largest dictionary a stored frame may decode to: far above any trained one
/// (`CompressOptions::dictionary_bytes`, 32 KiB by default), so that a damaged content
/// size cannot make a load allocate without bound.
pub const MAX_STORED_DICTIONARY_BYTES: usize = 64 << 20;

/// The stored form of dictionary `dict`: a zstd frame if that is smaller, else `dict`.
pub fn to_stored(dict: &[u8]) -> Result<Vec<u8>> {
    let mut cctx =
        zstd::bulk::Compressor::new(STORE_LEVEL).map_err(zstd_io("create compression context"))?;
    // The frame's own checksum (4 bytes) on top of the table's and the log's: a
    // dictionary that decodes wrong would turn every value using it into garbage.
    cctx.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .map_err(zstd_io("set frame parameter"))?;
    let frame = cctx
        .compress(dict)
        .map_err(zstd_io("compress dictionary"))?;
    // A dictionary that itself starts with the frame magic (a raw-content one; the
    // database trains none) must be stored compressed to read back as itself.
    if frame.len() < dict.len() || dict.starts_with(&FRAME_MAGIC) {
        Ok(frame)
    } else {
        Ok(dict.to_vec())
    }
}

/// Bytes [`to_stored`] makes of `dict`: what a dictionary costs at rest.
pub fn stored_len(dict: &[u8]) -> Result<usize> {
    to_stored(dict).map(|s| s.len())
}

/// The dictionary a stored value holds (see the module's layout): the value itself, or
/// the frame it holds decoded. A frame that does not decode, states no content size or a
/// size above [`MAX_STORED_DICTIONARY_BYTES`], or decodes to another size, is an error.
pub fn from_stored(value: &[u8]) -> Result<Cow<'_, [u8]>> {
    if !value.starts_with(&FRAME_MAGIC) {
        return Ok(Cow::Borrowed(value));
    }
    let bad = |message: String| Error::Zstd {
        op: "load stored dictionary",
        message,
    };
    let size = match zstd::zstd_safe::get_frame_content_size(value) {
        Ok(Some(size)) => size,
        Ok(None) => return Err(bad("the frame states no content size".into())),
        Err(_) => return Err(bad("the frame header does not parse".into())),
    };
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= MAX_STORED_DICTIONARY_BYTES)
        .ok_or_else(|| {
            bad(format!(
                "the frame decodes to {size} bytes, more than a dictionary may hold ({MAX_STORED_DICTIONARY_BYTES})"
            ))
        })?;
    let dict = zstd::bulk::decompress(value, size).map_err(|e| bad(e.to_string()))?;
    if dict.len() != size {
        return Err(bad(format!(
            "the frame decodes to {} bytes, not the {size} it states",
            dict.len()
        )));
    }
    Ok(Cow::Owned(dict))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dictionary_like(len: usize) -> Vec<u8> {
        let mut d = vec![0x37, 0xa4, 0x30, 0xec];
        while d.len() < len {
            d.extend_from_slice(br#"{"name":"a","repository":{"url":"https://example.org/"}}"#);
        }
        d.truncate(len);
        d
    }

    #[test]
    fn a_repetitive_dictionary_is_stored_compressed_and_reads_back() {
        let dict = dictionary_like(32 * 1024);
        let stored = to_stored(&dict).unwrap();
        assert!(stored.starts_with(&FRAME_MAGIC));
        assert!(stored.len() < dict.len() / 10, "{}", stored.len());
        assert_eq!(stored_len(&dict).unwrap(), stored.len());
        assert_eq!(from_stored(&stored).unwrap(), &dict[..]);
    }

    #[test]
    fn an_incompressible_dictionary_is_stored_as_it_is() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut dict = vec![0x37, 0xa4, 0x30, 0xec];
        for _ in 0..2048 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            dict.push(x as u8);
        }
        let stored = to_stored(&dict).unwrap();
        assert_eq!(stored, dict);
        // Values written before stored dictionaries were compressed read as they are.
        assert!(matches!(from_stored(&stored).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn a_raw_dictionary_starting_like_a_frame_still_reads_back() {
        let mut dict = FRAME_MAGIC.to_vec();
        dict.extend_from_slice(&[1, 2, 3]);
        assert_eq!(from_stored(&to_stored(&dict).unwrap()).unwrap(), &dict[..]);
    }

    #[test]
    fn damaged_frames_are_errors() {
        let stored = to_stored(&dictionary_like(8192)).unwrap();
        // Cut short, a wrong stated size, no frame after the magic.
        assert!(from_stored(&stored[..stored.len() - 3]).is_err());
        assert!(from_stored(&FRAME_MAGIC).is_err());
        let mut bigger = stored.clone();
        // The single-segment frame header: descriptor byte, then the content size.
        if let Some(b) = bigger.get_mut(5) {
            *b = b.wrapping_add(1);
        }
        assert!(from_stored(&bigger).is_err());
    }
}
