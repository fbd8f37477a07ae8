//! Keyed blocks (codec 5): `n` keys in strictly ascending order and their `n` values, in one
//! zstd frame, the keys front-coded.
//!
//! ```text
//! keyed block := 0x05 | varint dict_id (0 = none) | varint n | varint raw_len | zstd frame
//! the frame decodes to raw_len bytes:
//!     ( varint shared | varint suffix_len | suffix bytes ) * n     the keys
//!     varint value_len * n                                         the value lengths
//!     values, concatenated
//! ```
//!
//! Key `i` is the first `shared` bytes of key `i - 1` followed by its suffix (`shared` is 0
//! for the first key). The database packs documents under their ids this way: ids that share
//! a prefix (sequential numbers, a common tenant or type prefix) cost a byte or two each
//! before zstd instead of their whole length, and the layout, unlike a plain block of
//! `2n` entries, keeps the keys' structure visible to zstd (on vega-flights, 200,000 documents
//! of about 40 bytes under 8-digit ids, packed collections shrink by a quarter;
//! `docs/benchmarks.md`, "Document store").
//!
//! Decoding yields the same [`Block`] as a plain block of `2n` entries (keys, then values), so
//! readers need not know which layout a value has. It checks, before allocating, that every
//! `shared` is at most the previous key's length, that each key after the first is strictly
//! greater than the one before (so `suffix_len >= 1`), that no key is longer than
//! [`MAX_KEY_BYTES`], and that the value lengths exactly cover the rest of the frame.

use super::block::Block;
use super::header::{Header, corrupt, get_varint, put_varint};
use crate::Result;

/// Longest key a keyed block may hold (document ids are at most 1 KiB).
pub const MAX_KEY_BYTES: usize = 64 * 1024;

/// Appends the frame content of a keyed block of `keys` and `values` to `joined` (cleared
/// first). The caller checks the counts; keys must be strictly ascending.
pub(super) fn join(keys: &[&[u8]], values: &[&[u8]], joined: &mut Vec<u8>) -> Result<()> {
    joined.clear();
    let mut prev: &[u8] = &[];
    for (i, key) in keys.iter().enumerate() {
        if (i > 0 && *key <= prev) || key.len() > MAX_KEY_BYTES {
            return Err(crate::Error::Zstd {
                op: "compress keyed block",
                message: format!(
                    "key {i} is not greater than the one before it or longer than {MAX_KEY_BYTES} bytes"
                ),
            });
        }
        let shared = prev
            .iter()
            .zip(key.iter())
            .take_while(|(a, b)| a == b)
            .count();
        let suffix = key.get(shared..).unwrap_or_default();
        put_varint(joined, shared as u64);
        put_varint(joined, suffix.len() as u64);
        joined.extend_from_slice(suffix);
        prev = key;
    }
    for v in values {
        put_varint(joined, v.len() as u64);
    }
    for v in values {
        joined.extend_from_slice(v);
    }
    Ok(())
}

/// [`get_varint`] with the one-byte case inline (keys, suffixes and small values are shorter
/// than 128 bytes).
#[inline]
fn varint(bytes: &[u8], pos: usize, what: &str) -> Result<(u64, usize)> {
    match bytes.get(pos) {
        Some(&b) if b < 0x80 => Ok((u64::from(b), pos + 1)),
        _ => get_varint(bytes, pos, what),
    }
}

/// Rebuilds the keys and values of a decoded keyed-block frame (`frame`, `h.docs / 2` keys,
/// from a value whose payload starts at `h.payload_at`, for error offsets).
pub(super) fn split(h: &Header, frame: &[u8]) -> Result<Block> {
    let n = (h.docs / 2) as usize;
    let at = h.payload_at;
    let cut = |what: &str| corrupt(at, format!("the {what} of a keyed block is cut short"));
    // First pass: check the keys and measure them, before allocating more than the list of
    // their suffixes.
    let mut pos = 0;
    let (mut prev_len, mut keys_len) = (0usize, 0usize);
    let mut suffixes = Vec::with_capacity(n); // (shared, suffix range); n <= raw_len / 3
    for i in 0..n {
        let (shared, p) = varint(frame, pos, "shared prefix").map_err(|_| cut("key table"))?;
        let (suffix_len, p) = varint(frame, p, "suffix length").map_err(|_| cut("key table"))?;
        let (shared, suffix_len) = (shared as usize, suffix_len as usize);
        let end = p.checked_add(suffix_len).filter(|&e| e <= frame.len());
        let Some(end) = end else {
            return Err(cut("key table"));
        };
        let len = shared.saturating_add(suffix_len);
        if shared > prev_len || (i > 0 && suffix_len == 0) || len > MAX_KEY_BYTES {
            return Err(corrupt(
                at,
                format!(
                    "key {i} of a keyed block shares {shared} bytes with a key of {prev_len} \
                     and adds {suffix_len} (keys must grow, at most {MAX_KEY_BYTES} bytes)"
                ),
            ));
        }
        suffixes.push((shared, p..end));
        keys_len = keys_len.saturating_add(len);
        prev_len = len;
        pos = end;
    }
    let mut value_ends = Vec::with_capacity(n);
    let mut total: u64 = 0;
    for _ in 0..n {
        let (len, p) = varint(frame, pos, "value length").map_err(|_| cut("length table"))?;
        total = total.saturating_add(len);
        value_ends.push(total);
        pos = p;
    }
    let values = frame.get(pos..).unwrap_or_default();
    if total != values.len() as u64 {
        return Err(corrupt(
            at,
            format!(
                "the values of a keyed block add up to {total} bytes, its frame holds {}",
                values.len()
            ),
        ));
    }
    // Second pass: keys, then values, into one buffer. `keys_len` is at most
    // `n * MAX_KEY_BYTES`; allocate fallibly all the same.
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(keys_len.saturating_add(values.len()))
        .map_err(|_| corrupt(at, format!("cannot allocate {keys_len} bytes of keys")))?;
    let mut ends = Vec::with_capacity(2 * n);
    let mut prev_start = 0;
    for (i, (shared, suffix)) in suffixes.into_iter().enumerate() {
        let start = bytes.len();
        // In bounds: the previous key is `bytes[prev_start..start]`, and the first pass
        // checked `shared <= ` its length (0 for the first key).
        bytes.extend_from_within(prev_start..prev_start + shared);
        bytes.extend_from_slice(frame.get(suffix).unwrap_or_default());
        let key = bytes.get(start..).unwrap_or_default();
        let before = bytes.get(prev_start..start).unwrap_or_default();
        // Keys differ first at byte `shared` when the writer front-coded them (the usual
        // case: one byte comparison); a longer key is greater; anything else (a damaged or
        // hand-made block) is compared in full.
        let greater = match (key.get(shared), before.get(shared)) {
            (Some(k), Some(b)) if k != b => k > b,
            (Some(_), None) => true,
            _ => key > before,
        };
        if i > 0 && !greater {
            return Err(corrupt(
                at,
                format!("key {i} of a keyed block is not greater than the one before it"),
            ));
        }
        ends.push(bytes.len());
        prev_start = start;
    }
    let keys_end = bytes.len();
    bytes.extend_from_slice(values);
    ends.extend(value_ends.into_iter().map(|e| keys_end + e as usize));
    Block::from_parts(bytes, ends)
}
