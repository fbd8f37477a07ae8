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
//! for the first key). Keys that count up by one (each the one before with the decimal
//! number it ends with plus one, at the same width: an import's numbered records) are
//! stored as the first key only (manifest version 5 on):
//!
//! ```text
//!     0x01 | varint len | the first key (len bytes)                   counted keys
//!     varint value_len * n | values, concatenated                     as above
//! ```
//!
//! (a front-coded table starts with `shared` 0, so the byte 1 tells the two apart; counted
//! keys add up to at most 16 times the frame's bytes, else they are front-coded). On 1M
//! numbered small documents they stored 1.7 % less, 4 % on vega-flights. The database packs documents under their ids this way: ids that share
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

/// The first byte of a keyed block's frame whose keys are counted: a front-coded first key
/// starts with `shared` 0, so 1 is free to say so.
const COUNTED: u8 = 1;

/// Counted keys may add up to at most this many times the bytes of the frame (the
/// writer front-codes them otherwise): a damaged block cannot make a reader allocate more.
const COUNTED_MAX_EXPANSION: usize = 16;

/// Adds one to the decimal number `key` ends with, keeping its width ("a0099" -> "a0100");
/// false (and `key` partly changed) if it ends with no digit or with only nines.
fn increment(key: &mut [u8]) -> bool {
    for b in key.iter_mut().rev() {
        match *b {
            b'9' => *b = b'0',
            b'0'..=b'8' => {
                *b += 1;
                return true;
            }
            _ => return false,
        }
    }
    false
}

/// Whether each of `keys` after the first is the one before plus one ([`increment`]): the
/// numbered records of an import (`0000000001`, `0000000002`, ...; with a prefix too).
fn counted(keys: &[&[u8]]) -> bool {
    let mut next = Vec::new();
    keys.len() >= 2
        && keys.windows(2).all(|w| match w {
            [a, b] => {
                next.clear();
                next.extend_from_slice(a);
                increment(&mut next) && next.as_slice() == *b
            }
            _ => false,
        })
}

/// Appends the frame content of a keyed block of `keys` and `values` to `joined` (cleared
/// first). The caller checks the counts; keys must be strictly ascending. Keys that count
/// up by one ([`counted`]) are written as the first one only: `COUNTED | varint len | key`.
pub(super) fn join(keys: &[&[u8]], values: &[&[u8]], joined: &mut Vec<u8>) -> Result<()> {
    joined.clear();
    if let Some(first) = keys.first().filter(|f| f.len() <= MAX_KEY_BYTES)
        && counted(keys)
    {
        joined.push(COUNTED);
        put_varint(joined, first.len() as u64);
        joined.extend_from_slice(first);
        put_values(values, joined);
        if keys.len() * first.len() <= COUNTED_MAX_EXPANSION * joined.len() {
            return Ok(());
        }
        joined.clear();
    }
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
    put_values(values, joined);
    Ok(())
}

/// The value lengths, then the values.
fn put_values(values: &[&[u8]], joined: &mut Vec<u8>) {
    for v in values {
        put_varint(joined, v.len() as u64);
    }
    for v in values {
        joined.extend_from_slice(v);
    }
}

/// The keys of a frame of counted keys (`n` of them; see [`join`]) and where the value
/// lengths start: the first key, then each one the one before plus one.
fn counted_keys(h: &Header, frame: &[u8], n: usize) -> Result<(Vec<u8>, Vec<usize>, usize)> {
    let at = h.payload_at;
    let (len, p) = varint(frame, 1, "counted key length")?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    let first = p
        .checked_add(len)
        .and_then(|end| frame.get(p..end))
        .filter(|_| len <= MAX_KEY_BYTES)
        .ok_or_else(|| corrupt(at, "the first counted key of a keyed block is cut short"))?;
    let total = n.saturating_mul(len);
    if total > COUNTED_MAX_EXPANSION.saturating_mul(frame.len()) {
        return Err(corrupt(
            at,
            format!(
                "{n} counted keys of {len} bytes are more than a keyed block of {} bytes holds",
                frame.len()
            ),
        ));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(total.saturating_add(frame.len()))
        .map_err(|_| corrupt(at, format!("cannot allocate {total} bytes of keys")))?;
    let mut ends = Vec::with_capacity(2 * n);
    bytes.extend_from_slice(first);
    ends.push(len);
    for i in 1..n {
        let start = bytes.len();
        bytes.extend_from_within(start - len..start);
        if !bytes.get_mut(start..).is_some_and(increment) {
            return Err(corrupt(
                at,
                format!("counted key {i} of a keyed block does not follow the one before it"),
            ));
        }
        ends.push(bytes.len());
    }
    Ok((bytes, ends, p + len))
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
    if frame.first() == Some(&COUNTED) {
        let (bytes, ends, pos) = counted_keys(h, frame, n)?;
        let (value_ends, values) = value_table(h, frame, n, pos)?;
        return append_values(bytes, ends, &value_ends, values);
    }
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
    let (value_ends, values) = value_table(h, frame, n, pos)?;
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
    append_values(bytes, ends, &value_ends, values)
}

/// The end of each of the `n` values (from 0) and the values, of a frame whose value
/// lengths start at `pos`; checks that they add up to exactly the rest of the frame.
fn value_table<'f>(
    h: &Header,
    frame: &'f [u8],
    n: usize,
    mut pos: usize,
) -> Result<(Vec<u64>, &'f [u8])> {
    let at = h.payload_at;
    let mut value_ends = Vec::with_capacity(n);
    let mut total: u64 = 0;
    for _ in 0..n {
        let (len, p) = varint(frame, pos, "value length")
            .map_err(|_| corrupt(at, "the length table of a keyed block is cut short"))?;
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
    Ok((value_ends, values))
}

/// The block of the keys in `bytes` (ending at `ends`) and the values after them.
fn append_values(
    mut bytes: Vec<u8>,
    mut ends: Vec<usize>,
    value_ends: &[u64],
    values: &[u8],
) -> Result<Block> {
    let keys_end = bytes.len();
    bytes.extend_from_slice(values);
    ends.extend(value_ends.iter().map(|&e| keys_end + e as usize));
    Block::from_parts(bytes, ends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::{BlockPacker, Decoder, Dictionaries};

    /// Packs `keys` (each with a small value) and decodes them back.
    fn round_trip(keys: &[&str]) -> (Vec<u8>, Block) {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let values: Vec<Vec<u8>> = (0..keys.len()).map(|i| vec![b'v'; i % 7]).collect();
        let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut joined = Vec::new();
        join(&keys, &values, &mut joined).unwrap();
        let mut out = Vec::new();
        BlockPacker::new(3, None)
            .unwrap()
            .pack_keyed(&keys, &values, &mut out)
            .unwrap();
        let block = Decoder::new()
            .unwrap()
            .decode_block(&out, &Dictionaries::new())
            .unwrap();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(block.get(i), Some(*k));
            assert_eq!(block.get(keys.len() + i), Some(values[i]));
        }
        (joined, block)
    }

    /// Numbered ids (with a prefix, across carries) are stored as the first one only; ids
    /// with a gap, or ending in nines that would widen, are front-coded as before.
    #[test]
    fn keys_counting_up_by_one_are_stored_as_the_first() {
        let numbered: Vec<String> = (95..1105).map(|i| format!("{i:010}")).collect();
        let refs: Vec<&str> = numbered.iter().map(String::as_str).collect();
        let (joined, _) = round_trip(&refs);
        assert_eq!(joined.first(), Some(&COUNTED));
        assert_eq!(joined.get(1..12), Some(&b"\x0a0000000095"[..]));
        let (joined, _) = round_trip(&["p-a98", "p-a99", "p-b00"]);
        assert_ne!(joined.first(), Some(&COUNTED), "b00 is no carry of a99");
        let (joined, _) = round_trip(&["x0098", "x0099", "x0100"]);
        assert_eq!(joined.first(), Some(&COUNTED));
        let (joined, _) = round_trip(&["8", "9", "90"]);
        assert_ne!(joined.first(), Some(&COUNTED), "9 + 1 would widen");
        let (joined, _) = round_trip(&["0001", "0002", "0004"]);
        assert_ne!(joined.first(), Some(&COUNTED), "a gap");
        let (joined, _) = round_trip(&["0001"]);
        assert_ne!(joined.first(), Some(&COUNTED), "one key");
    }

    /// Damaged counted keys are errors, never panics or huge allocations.
    #[test]
    fn damaged_counted_keys_are_errors() {
        let h = |n: u32| Header {
            codec: super::super::Codec::KeyedBlock,
            dictionary: None,
            raw_len: 0,
            docs: 2 * n,
            payload_at: 3,
        };
        // Two keys "9" and (no) "10"; a key cut short; a million keys claimed by a frame of a
        // few bytes; values that do not add up.
        for (n, frame) in [
            (2, vec![COUNTED, 1, b'9', 0, 0]),
            (2, vec![COUNTED, 5, b'1']),
            (1_000_000, vec![COUNTED, 4, b'0', b'0', b'0', b'1', 0, 0]),
            (2, vec![COUNTED, 1, b'1', 3, 0]),
        ] {
            let e = split(&h(n), &frame).unwrap_err();
            assert!(e.to_string().contains("keyed block"), "{e}");
        }
        let ok = split(&h(2), &[COUNTED, 1, b'1', 1, 0, b'x']).unwrap();
        assert_eq!(ok.get(1), Some(&b"2"[..]));
    }
}
