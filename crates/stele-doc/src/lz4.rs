//! An LZ4 block encoder that writes exactly the bytes of `lz4_flex::block::compress` for inputs
//! under 64 KiB, made for compressing many short strings one after the other.
//!
//! Why not call `lz4_flex`: the converter keeps a compressed string only if it saves an eighth,
//! and `lz4_flex` always runs to the end; this encoder stops as soon as its output passes the
//! caller's limit. Its loop, written for this one case (one block, no dictionary, no stream
//! offset), also runs about 10 % faster than `lz4_flex`'s general one.
//!
//! The table is zeroed for every input, as `lz4_flex` does. Tried and measured slower
//! (2026-11-26, all giving the same bytes): entries tagged with the input's generation or
//! stored above a per-input base, so that old entries read as empty without the 8 KiB clear.
//! Every form of that test sat between the table load and the candidate compare, the hottest
//! dependency chain of the loop, and cost 5-50 % of the encoder's speed against about 5 %
//! for the clear (gsoc-2018.json's long strings).
//!
//! The documents keep strings in `lz4_flex`'s bytes (docs/FORMAT.md), so this is a copy of
//! `lz4_flex` 0.14's `compress_internal` for one block without dictionary, with its small
//! table (4,096 entries of 16-bit positions, 4-byte hash), step by step: the same hash, the
//! same table updates, the same match search and extension, the same sequences. The tests
//! (`tests/lz4.rs`, the fuzz target `lz4`) compare it with `lz4_flex` byte for byte.

/// The longest input this encoder takes: `lz4_flex` switches to a table of 32-bit positions
/// and another hash from `u16::MAX` bytes on (callers use `lz4_flex` itself for those).
pub const MAX_INPUT_BYTES: usize = u16::MAX as usize - 1;

/// Entries of the match table (lz4_flex's `HashTable4KU16`).
const TABLE_ENTRIES: usize = 4096;
/// Bytes compared by one match candidate check and the least a match can cover.
const MIN_MATCH: usize = 4;
/// A match must start at least this many bytes before the end of the input (LZ4's `MFLIMIT`).
const MATCH_FIND_LIMIT: usize = 12;
/// The last bytes of the input are always literals; matches stop this far before the end.
const END_OFFSET: usize = 6;
/// Inputs shorter than this are one literal run.
const MIN_LENGTH: usize = MATCH_FIND_LIMIT + 1;
/// After `1 << SKIP_SHIFT` positions without a match the search step grows by one.
const SKIP_SHIFT: usize = 5;

/// A reusable LZ4 block encoder; see the module documentation.
pub struct Lz4Encoder {
    /// Input positions by hash slot, zeroed for every input: lz4_flex's `HashTable4KU16`.
    table: Box<[u16; TABLE_ENTRIES]>,
}

impl std::fmt::Debug for Lz4Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4Encoder").finish_non_exhaustive()
    }
}

impl Default for Lz4Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Lz4Encoder {
    /// A fresh encoder (an 8 KiB table).
    pub fn new() -> Self {
        Lz4Encoder {
            table: Box::new([0; TABLE_ENTRIES]),
        }
    }

    /// Compresses `input` into `out` as `lz4_flex::block::compress(input)` would and returns the
    /// number of bytes written, or `None` if that output is longer than `out` (the rest of
    /// `out` is then unspecified) or `input` is longer than [`MAX_INPUT_BYTES`].
    ///
    /// Stopping when `out` is full gives exactly the answer of compressing everything and then
    /// comparing the length: the output only grows, and every byte written is a byte of the
    /// final output.
    pub fn compress_within(&mut self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        if input.len() > MAX_INPUT_BYTES {
            return None;
        }
        let mut sink = Sink { out, pos: 0 };
        if input.len() < MIN_LENGTH {
            last_literals(&mut sink, input, 0)?;
        } else {
            self.table.fill(0);
            self.encode(input, &mut sink)?;
        }
        Some(sink.pos)
    }

    #[inline(always)]
    fn put(&mut self, hash: usize, pos: usize) {
        // Positions are at most MAX_INPUT_BYTES < 2^16.
        self.table[hash % TABLE_ENTRIES] = pos as u16;
    }

    /// `compress_internal` of lz4_flex for `input_pos == 0`, no dictionary, no stream offset.
    fn encode(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Option<()> {
        let end_pos_check = input.len() - MATCH_FIND_LIMIT;
        let mut literal_start = 0;
        // The block cannot start with a match.
        self.put(hash_at(input, 0)?, 0);
        let mut cur = 1;
        loop {
            let mut non_match_count = 1 << SKIP_SHIFT;
            let mut next_cur = cur;
            let mut candidate;
            // Find a position whose 4 bytes equal those at the position its hash slot held.
            loop {
                let step = non_match_count >> SKIP_SHIFT;
                non_match_count += 1;
                cur = next_cur;
                next_cur += step;
                if cur > end_pos_check {
                    return last_literals(sink, input, literal_start);
                }
                let seq = batch(input, cur)?;
                let hash = hash(seq);
                candidate = usize::from(self.table[hash % TABLE_ENTRIES]);
                self.put(hash, cur);
                // lz4_flex also skips candidates over 65,535 bytes back, which cannot occur
                // below MAX_INPUT_BYTES; a candidate is always before `cur`.
                if batch(input, candidate)? == seq {
                    break;
                }
            }
            let offset = (cur - candidate) as u16;
            // Extend the match backwards over literals that also match.
            while candidate > 0
                && cur > literal_start
                && input.get(cur - 1)? == input.get(candidate - 1)?
            {
                cur -= 1;
                candidate -= 1;
            }
            let match_start = cur;
            let literal_len = match_start - literal_start;
            cur += MIN_MATCH;
            candidate += MIN_MATCH;
            let match_len = same_bytes(input, cur, candidate, input.len() - END_OFFSET);
            cur += match_len;
            self.put(hash_at(input, cur - 2)?, cur - 2);

            sink.push(token(literal_len, match_len))?;
            if literal_len >= 0xF {
                sink.length(literal_len - 0xF)?;
            }
            sink.literals(input, literal_start, match_start)?;
            sink.extend(&offset.to_le_bytes())?;
            if match_len >= 0xF {
                sink.length(match_len - 0xF)?;
            }
            literal_start = cur;
        }
    }
}

/// Where the encoder writes; every write past the end of `out` fails.
struct Sink<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl Sink<'_> {
    #[inline(always)]
    fn push(&mut self, byte: u8) -> Option<()> {
        *self.out.get_mut(self.pos)? = byte;
        self.pos += 1;
        Some(())
    }

    #[inline(always)]
    fn extend(&mut self, bytes: &[u8]) -> Option<()> {
        self.out
            .get_mut(self.pos..self.pos + bytes.len())?
            .copy_from_slice(bytes);
        self.pos += bytes.len();
        Some(())
    }

    /// Copies `input[start..end]`. Runs of up to 16 bytes (most of them) as one 16-byte copy
    /// when both sides have room, then cut to length: the bytes past the run are overwritten
    /// by the next write or lie past the output's end.
    #[inline(always)]
    fn literals(&mut self, input: &[u8], start: usize, end: usize) -> Option<()> {
        let len = end - start;
        if len <= 16
            && let (Some(from), Some(to)) = (
                input.get(start..start + 16),
                self.out.get_mut(self.pos..self.pos + 16),
            )
        {
            to.copy_from_slice(from);
            self.pos += len;
            return Some(());
        }
        self.extend(input.get(start..end)?)
    }

    /// LZ4's length continuation: 255s, then the remainder.
    #[inline]
    fn length(&mut self, mut n: usize) -> Option<()> {
        while n >= 0xFF {
            n -= 0xFF;
            self.push(0xFF)?;
        }
        self.push(n as u8)
    }
}

/// The rest of the input from `start` as the final literal run.
#[cold]
fn last_literals(sink: &mut Sink<'_>, input: &[u8], start: usize) -> Option<()> {
    let len = input.len() - start;
    sink.push(token(len, 0))?;
    if len >= 0xF {
        sink.length(len - 0xF)?;
    }
    sink.extend(input.get(start..)?)
}

/// A sequence's token: literal length in the high nibble, match length in the low one, each
/// saturated at 15 (the rest follows as a length continuation).
#[inline(always)]
fn token(literal_len: usize, match_len: usize) -> u8 {
    ((literal_len.min(0xF) as u8) << 4) | match_len.min(0xF) as u8
}

/// The 4 bytes at `pos` as lz4_flex reads them (native byte order).
#[inline(always)]
fn batch(input: &[u8], pos: usize) -> Option<u32> {
    let bytes = input.get(pos..pos + 4)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

/// lz4_flex's `HashTable4KU16` slot of the 4 bytes at `pos`: the top 12 bits of a 32-bit
/// multiplicative hash (lz4_flex's `hash(seq) >> 4`).
#[inline(always)]
fn hash_at(input: &[u8], pos: usize) -> Option<usize> {
    Some(hash(batch(input, pos)?))
}

/// The slot of 4 input bytes read by [`batch`].
#[inline(always)]
fn hash(seq: u32) -> usize {
    (seq.wrapping_mul(2_654_435_761) >> 20) as usize
}

/// How many bytes from `cur` equal those from `candidate`, counting no further than `limit`
/// (`candidate < cur`, so `cur` reaches the limit first).
#[inline(always)]
fn same_bytes(input: &[u8], cur: usize, candidate: usize, limit: usize) -> usize {
    let (Some(a), Some(b)) = (input.get(cur..limit), input.get(candidate..)) else {
        return 0;
    };
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) else {
            return n;
        };
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a
        .iter()
        .skip(n)
        .zip(b.iter().skip(n))
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(input: &[u8]) -> Vec<u8> {
        lz4_flex::block::compress(input)
    }

    fn ours(enc: &mut Lz4Encoder, input: &[u8], limit: usize) -> Option<Vec<u8>> {
        let mut out = vec![0; limit];
        let n = enc.compress_within(input, &mut out)?;
        out.truncate(n);
        Some(out)
    }

    #[test]
    fn one_encoder_for_many_inputs() {
        let mut enc = Lz4Encoder::new();
        let text = b"abcdefgh abcdefgh abcdefgh, the same words, the same words again".repeat(3);
        let other = b"a completely different input, with other repeats repeats repeats";
        for _ in 0..3 {
            assert_eq!(ours(&mut enc, &text, 1000), Some(reference(&text)));
            assert_eq!(ours(&mut enc, other, 1000), Some(reference(other)));
        }
    }

    #[test]
    fn a_limit_one_byte_short_fails_and_the_exact_one_succeeds() {
        let mut enc = Lz4Encoder::new();
        let text =
            b"{\"name\":\"x\",\"name\":\"y\"} lorem ipsum dolor sit amet lorem ipsum".repeat(5);
        let want = reference(&text);
        assert_eq!(ours(&mut enc, &text, want.len()), Some(want.clone()));
        assert_eq!(ours(&mut enc, &text, want.len() - 1), None);
    }

    #[test]
    fn too_long_inputs_are_refused() {
        let mut enc = Lz4Encoder::new();
        let text = vec![7u8; MAX_INPUT_BYTES + 1];
        assert_eq!(ours(&mut enc, &text, text.len() * 2), None);
        let text = vec![7u8; MAX_INPUT_BYTES];
        assert_eq!(
            ours(&mut enc, &text, text.len() * 2),
            Some(reference(&text))
        );
    }
}
