//! A decoded block of packed documents, as the block cache holds it.
//!
//! A keyed block decodes to its ids and documents. A stream block (codec 6) decodes to its
//! ids and its documents' stream forms, and each document is rebuilt from its stream on its
//! first read and kept: a read that misses the cache pays for zstd and one document, not
//! for rebuilding the whole block (0.2-16 us per document against 50-130 us per 32 KiB
//! block on the shared collections). Once half of a block's documents have been read, the rest are
//! rebuilt as well and the stream forms dropped, so a block read through holds its
//! documents only, as a keyed block does; its cache charge follows (see
//! [`DecodedBlock::document`]).

use crate::compress::Block;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a decoded block holds.
#[derive(Debug)]
enum Body {
    /// Ids, then documents.
    Documents(Block),
    /// A stream block's ids, and its stream forms until every document is rebuilt.
    Streams {
        ids: Block,
        /// Ids then stream forms (or documents stored as such), dropped once `docs` is full.
        stored: Mutex<Option<Block>>,
        docs: Box<[OnceLock<Box<[u8]>>]>,
        /// Documents rebuilt one by one (reset to 0 when a block-wide rebuild fails, so the
        /// next attempt waits for as many reads again).
        rebuilt: AtomicUsize,
    },
}

/// A decoded block: `n` ids in ascending order and their `n` documents, and which
/// documents have been validated (the bytes never change once decoded or rebuilt, so a
/// document validated once need not be validated again on later reads).
#[derive(Debug)]
pub(crate) struct DecodedBlock {
    number: u64,
    body: Body,
    n: usize,
    checked: Box<[AtomicBool]>,
    /// How to find an id without reading many of them (see [`IdHints`]).
    hints: IdHints,
}

/// The ids of a block as numbers that order them: the 8 bytes of each id after the prefix
/// all of them share, big-endian, zero-padded. A binary search over these touches one or
/// two cache lines where one over the ids would touch a line per step; ids compare in
/// full only where hints tie. Invariant: `a < b` implies `hint(a) <= hint(b)`, and every
/// id lies between the first and the last, so shares their common prefix.
///
/// A search first reads a summary, every `GROUP`-th hint, then one group of `GROUP` hints
/// (one cache line): two or three lines whatever the block's length. The prefix's first
/// bytes are kept here too, so that an id is checked against it without reading the block.
#[derive(Debug, Default)]
struct IdHints {
    prefix_len: usize,
    /// The first `min(prefix_len, PREFIX_HEAD)` bytes of the shared prefix.
    prefix_head: [u8; PREFIX_HEAD],
    /// `hints[GROUP * g]` for every group `g`.
    summary: Box<[u64]>,
    hints: Box<[u64]>,
}

/// Hints per group: one 64-byte cache line of them.
const GROUP: usize = 8;
/// Bytes of the shared prefix kept in [`IdHints`] (longer prefixes are checked against the
/// block's first id).
const PREFIX_HEAD: usize = 16;

impl IdHints {
    fn new(ids: &[&[u8]]) -> Self {
        let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
            return IdHints::default();
        };
        let prefix_len = first
            .iter()
            .zip(last.iter())
            .take_while(|(a, b)| a == b)
            .count();
        let mut prefix_head = [0u8; PREFIX_HEAD];
        let head = prefix_len.min(PREFIX_HEAD);
        if let (Some(dst), Some(src)) = (prefix_head.get_mut(..head), first.get(..head)) {
            dst.copy_from_slice(src);
        }
        let hints: Box<[u64]> = ids.iter().map(|id| hint(id, prefix_len)).collect();
        IdHints {
            prefix_len,
            prefix_head,
            summary: hints.iter().step_by(GROUP).copied().collect(),
            hints,
        }
    }

    /// The first position whose hint is at least `h`.
    fn first_at_least(&self, h: u64) -> usize {
        // Groups before `k` start below `h`, group `k` (if any) does not: the answer lies
        // after the start of group `k - 1` and at most at the start of group `k`.
        let k = self.summary.partition_point(|&x| x < h);
        let Some(start) = k.checked_sub(1).map(|g| g * GROUP + 1) else {
            return 0;
        };
        let end = (k * GROUP).min(self.hints.len());
        start
            + self
                .hints
                .get(start..end)
                .unwrap_or_default()
                .partition_point(|&x| x < h)
    }

    /// The end of the run of hints equal to `h` that starts at `lo` (`lo` itself if there is
    /// none). Galloping from `lo`: a run is one hint long unless ids share the 8 bytes after
    /// their prefix, and the probes stay in `lo`'s cache line until the run is longer, where
    /// a binary search over everything after `lo` would first read the far end.
    fn end_of_run(&self, lo: usize, h: u64) -> usize {
        let rest = self.hints.get(lo..).unwrap_or_default();
        let mut step = 1;
        while rest.get(step - 1).is_some_and(|&x| x == h) {
            step *= 2;
        }
        // Every hint before `step / 2` equals `h`; the one at `step - 1` does not, or is past
        // the end.
        let known = step / 2;
        let upto = (step - 1).min(rest.len());
        lo + known
            + rest
                .get(known..upto)
                .unwrap_or_default()
                .partition_point(|&x| x == h)
    }
}

/// The 8 bytes of `id` after its first `skip`, big-endian, zero-padded.
fn hint(id: &[u8], skip: usize) -> u64 {
    let rest = id.get(skip..).unwrap_or_default();
    let mut bytes = [0u8; 8];
    let n = rest.len().min(8);
    if let (Some(dst), Some(src)) = (bytes.get_mut(..n), rest.get(..n)) {
        dst.copy_from_slice(src);
    }
    u64::from_be_bytes(bytes)
}

impl DecodedBlock {
    /// Checks the layout of block `number` stored under key `last_id`: an even number of
    /// entries, ids strictly ascending, the last one equal to the key. The reason if not.
    pub(crate) fn new(number: u64, block: Block, last_id: &[u8]) -> Result<Self, String> {
        let entries = block.len();
        if entries == 0 || !entries.is_multiple_of(2) {
            return Err(format!(
                "a packed block holds ids and documents in pairs, not {entries} entries"
            ));
        }
        let n = entries / 2;
        let ids: Vec<&[u8]> = (0..n).filter_map(|i| block.get(i)).collect();
        if ids.windows(2).any(|w| w.first() >= w.get(1)) {
            return Err("the ids of a packed block are not in ascending order".to_owned());
        }
        if ids.last() != Some(&last_id) {
            return Err("the last id of a packed block differs from its key".to_owned());
        }
        let hints = IdHints::new(&ids);
        let body = if block.holds_streams(n) {
            let mut bytes = Vec::with_capacity(ids.iter().map(|i| i.len()).sum());
            let mut ends = Vec::with_capacity(n);
            for id in &ids {
                bytes.extend_from_slice(id);
                ends.push(bytes.len());
            }
            let ids = Block::from_parts(bytes, ends).map_err(|e| e.to_string())?;
            Body::Streams {
                ids,
                stored: Mutex::new(Some(block)),
                docs: (0..n).map(|_| OnceLock::new()).collect(),
                rebuilt: AtomicUsize::new(0),
            }
        } else {
            Body::Documents(block)
        };
        let checked = (0..n).map(|_| AtomicBool::new(false)).collect();
        Ok(DecodedBlock {
            number,
            body,
            n,
            checked,
            hints,
        })
    }

    /// The block's number (its key in the cache).
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Documents in the block.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Id of document `i` (empty if out of range; callers keep `i < len()`).
    pub(crate) fn id(&self, i: usize) -> &[u8] {
        match &self.body {
            Body::Documents(block) => block.get(i),
            Body::Streams { ids, .. } => ids.get(i),
        }
        .unwrap_or_default()
    }

    /// Position of `id`, or where it would go.
    pub(crate) fn find(&self, id: &[u8]) -> std::result::Result<usize, usize> {
        let IdHints {
            prefix_len,
            prefix_head,
            hints,
            ..
        } = &self.hints;
        let (mut lo, mut hi) = (0, self.n);
        if hints.len() == self.n && self.n > 0 {
            let in_prefix = match prefix_head.get(..*prefix_len) {
                Some(head) => id.starts_with(head),
                None => id.starts_with(self.id(0).get(..*prefix_len).unwrap_or_default()),
            };
            if !in_prefix {
                // Outside the block's range: ids sharing no prefix with all of it sort
                // before the first or after the last.
                return Err(if id < self.id(0) { 0 } else { self.n });
            }
            let h = hint(id, *prefix_len);
            lo = self.hints.first_at_least(h);
            hi = self.hints.end_of_run(lo, h);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id(mid).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Document `i` once [`Self::document`] has returned it (empty before that in a stream
    /// block, and if out of range).
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        match &self.body {
            Body::Documents(block) => block.get(self.n + i).unwrap_or_default(),
            Body::Streams { docs, .. } => docs.get(i).and_then(|d| d.get()).map_or(&[], |d| d),
        }
    }

    /// Document `i` as a stream block stores it (its stream form, or the document where it
    /// has none), while the block still holds them; `None` for a block of documents or once
    /// the streams were dropped. Compaction repacks these without rebuilding documents.
    pub(crate) fn stored_form(&self, i: usize) -> Option<Vec<u8>> {
        let Body::Streams { stored, .. } = &self.body else {
            return None;
        };
        let guard = lock_unpoisoned(stored);
        guard.as_ref()?.get(self.n + i).map(<[u8]>::to_vec)
    }

    /// Document `i`, rebuilt from its stream form if need be, and by how many bytes the
    /// block's memory grew (negative when the stream forms were dropped): the caller passes
    /// that on to the cache. The reason if a stream form does not decode.
    pub(crate) fn document(&self, i: usize) -> Result<(&[u8], isize), String> {
        let Body::Streams {
            stored,
            docs,
            rebuilt,
            ..
        } = &self.body
        else {
            return Ok((self.get(i), 0));
        };
        let Some(cell) = docs.get(i) else {
            return Err(format!("no document {i} in a block of {}", self.n));
        };
        if let Some(doc) = cell.get() {
            return Ok((doc, 0));
        }
        let mut guard = lock_unpoisoned(stored);
        // Another reader may have rebuilt it (or the whole block) while this one waited.
        if let Some(doc) = cell.get() {
            return Ok((doc, 0));
        }
        let Some(block) = guard.as_ref() else {
            return Err(
                "a stream block lost its stream forms before every document was rebuilt".to_owned(),
            );
        };
        let mut grown: isize = 0;
        let mut rebuild = |k: usize, cell: &OnceLock<Box<[u8]>>| -> Result<(), String> {
            let entry = block.get(self.n + k).unwrap_or_default();
            let (doc, written) = crate::compress::to_document_written(self.id(k), entry)
                .map_err(|e| e.to_string())?;
            grown = grown.saturating_add_unsigned(doc.len());
            // Only this thread, holding the lock, sets cells.
            if cell.set(doc.into_owned().into_boxed_slice()).is_ok() && written {
                // Written by a `DocumentWriter` just now: valid by construction, so its
                // reads need not validate it again (`DocBytes::document`).
                self.mark_checked(k);
            }
            Ok(())
        };
        rebuild(i, cell)?;
        let done = rebuilt.fetch_add(1, Ordering::AcqRel) + 1;
        if 2 * done >= self.n {
            // Half read: rebuild the rest (costing at most what the reads so far did) and
            // keep documents only. A stream that does not decode is not this read's error:
            // its cell stays empty (its own read reports it) and the streams stay.
            let mut all = true;
            for (k, c) in docs.iter().enumerate() {
                if c.get().is_none() {
                    all &= rebuild(k, c).is_ok();
                }
            }
            if all {
                rebuilt.store(self.n, Ordering::Release);
                grown = grown.saturating_sub_unsigned(block.heap_bytes());
                *guard = None;
            } else {
                // Try again only after as many reads again.
                rebuilt.store(0, Ordering::Release);
            }
        }
        Ok((cell.get().map_or(&[], |d| d), grown))
    }

    /// Whether document `i` passed `stele_doc::Document::new` before.
    pub(crate) fn is_checked(&self, i: usize) -> bool {
        self.checked
            .get(i)
            .is_some_and(|c| c.load(Ordering::Acquire))
    }

    /// Records that document `i` passed `stele_doc::Document::new`.
    pub(crate) fn mark_checked(&self, i: usize) {
        if let Some(c) = self.checked.get(i) {
            c.store(true, Ordering::Release);
        }
    }

    /// Bytes this block holds on the heap now (ids, documents and stream forms).
    pub(crate) fn heap_bytes(&self) -> usize {
        let body = match &self.body {
            Body::Documents(block) => block.heap_bytes(),
            Body::Streams {
                ids, stored, docs, ..
            } => {
                let stored = lock_unpoisoned(stored)
                    .as_ref()
                    .map_or(0, Block::heap_bytes);
                let rebuilt: usize = docs.iter().filter_map(|d| d.get()).map(|d| d.len()).sum();
                ids.heap_bytes()
                    + stored
                    + rebuilt
                    + docs.len() * std::mem::size_of::<OnceLock<Box<[u8]>>>()
            }
        };
        body + self.checked.len()
            + (self.hints.hints.len() + self.hints.summary.len()) * std::mem::size_of::<u64>()
    }
}

/// Locks `m` even if a thread panicked while holding it: for the block cache and decoded
/// blocks, whose data no holder can leave inconsistent halfway (at worst a count is off, or
/// a document already rebuilt is rebuilt again).
pub(crate) fn lock_unpoisoned<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::compress::{BlockPacker, Codec, Decoder, Dictionaries};
    use proptest::strategy::Just;

    /// A stream block of 20 nested documents under ids `d00`..`d19`, document `bad` replaced
    /// by a stream that does not decode (packed as is: a packer trusts stream forms it is
    /// given, as compaction gives it those of other blocks).
    fn block(bad: Option<usize>) -> (DecodedBlock, Vec<Vec<u8>>) {
        let docs: Vec<Vec<u8>> = (0..20)
            .map(|i| {
                let json = format!(r#"{{"name":"n{i}","tags":["x","y{i}"],"o":{{"k":"v {i}"}}}}"#);
                stele_doc::from_json_with(json.as_bytes(), crate::write_options()).unwrap()
            })
            .collect();
        let ids: Vec<String> = (0..20).map(|i| format!("d{i:02}")).collect();
        let ids: Vec<&[u8]> = ids.iter().map(|k| k.as_bytes()).collect();
        let mut values: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        let mut packer = BlockPacker::new(3, None).unwrap();
        let mut out = Vec::new();
        // The first block is a trial; the second is packed in the form it chose.
        assert_eq!(
            packer.pack_documents(&ids, &values, &mut out).unwrap(),
            Codec::StreamBlock
        );
        let broken = [0x07u8, 0x09, b'c', b'u', b't'];
        if let Some(b) = bad {
            values[b] = &broken;
        }
        packer.pack_documents(&ids, &values, &mut out).unwrap();
        let decoded = Decoder::new()
            .unwrap()
            .decode_block(&out, &Dictionaries::new())
            .unwrap();
        (DecodedBlock::new(7, decoded, b"d19").unwrap(), docs)
    }

    /// A block of documents (each one byte) under `ids`.
    fn keyed(ids: &[Vec<u8>]) -> DecodedBlock {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for id in ids {
            bytes.extend_from_slice(id);
            ends.push(bytes.len());
        }
        for _ in ids {
            bytes.push(0);
            ends.push(bytes.len());
        }
        let last = ids.last().cloned().unwrap_or_default();
        DecodedBlock::new(1, Block::from_parts(bytes, ends).unwrap(), &last).unwrap()
    }

    #[test]
    fn find_within_long_runs_of_equal_hints() {
        // No shared prefix (first "a", last "z"), and runs of 1 to 40 ids whose first 8
        // bytes are equal: their hints tie and the full ids decide.
        for run in [1usize, 2, 3, 4, 5, 7, 8, 9, 16, 17, 40] {
            let mut ids: Vec<Vec<u8>> = vec![b"a".to_vec()];
            ids.extend((0..run).map(|k| format!("m1234567{k:03}").into_bytes()));
            ids.push(b"m1234568".to_vec());
            ids.push(b"z".to_vec());
            let b = keyed(&ids);
            let mut probes = ids.clone();
            probes.extend(
                [
                    &b"m1234567"[..],
                    b"m1234567999",
                    b"m12345670",
                    b"m1234566",
                    b"n",
                ]
                .map(<[u8]>::to_vec),
            );
            for p in &probes {
                assert_eq!(b.find(p), ids.binary_search(p), "run {run}, probe {p:?}");
            }
        }
    }

    proptest::proptest! {
        /// `find` (hints after the shared prefix, then full ids where hints tie) agrees
        /// with a binary search over the ids, for ids that share long prefixes, differ
        /// only in trailing zero bytes, or lie outside the block.
        #[test]
        fn find_agrees_with_a_binary_search(
            stem in proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(b'a'), Just(255u8)], 0..10),
            tails in proptest::collection::btree_set(proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(1u8), Just(b'z'), Just(255u8)], 0..12), 1..120),
            probes in proptest::collection::vec(proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(1u8), Just(b'a'), Just(b'z'), Just(255u8)], 0..22), 1..40),
        ) {
            let ids: Vec<Vec<u8>> = tails.iter().map(|t| [stem.as_slice(), t].concat()).collect();
            let b = keyed(&ids);
            let mut all = probes.clone();
            all.extend(ids.iter().cloned());
            all.extend(probes.iter().map(|p| [stem.as_slice(), p].concat()));
            for p in &all {
                proptest::prop_assert_eq!(b.find(p), ids.binary_search(p), "probe {:?}", p);
            }
        }
    }

    #[test]
    fn documents_are_rebuilt_one_by_one_then_all_at_half() {
        let (b, docs) = block(None);
        let before = b.heap_bytes();
        let mut grown = 0isize;
        for (i, want) in docs.iter().enumerate().take(9) {
            let (doc, g) = b.document(i).unwrap();
            assert_eq!(doc, want.as_slice());
            assert_eq!(g, doc.len() as isize);
            grown += g;
            assert_eq!(b.get(i), want.as_slice());
            assert!(
                b.is_checked(i),
                "rebuilt by a writer: valid, not validated again"
            );
        }
        assert!(b.get(15).is_empty(), "not rebuilt yet");
        assert!(!b.is_checked(15));
        assert!(stele_doc::stream::is_stream(&b.stored_form(15).unwrap()));
        // The tenth read is half the block: everything is rebuilt, the streams dropped.
        let (_, g) = b.document(9).unwrap();
        grown += g;
        assert!(g < 0, "the streams' memory is given back");
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(b.get(i), d.as_slice());
            assert!(b.is_checked(i));
            assert_eq!(b.document(i).unwrap(), (d.as_slice(), 0));
            assert_eq!(b.stored_form(i), None, "streams dropped");
        }
        assert_eq!(b.heap_bytes() as isize, before as isize + grown);
    }

    #[test]
    fn a_stream_that_does_not_decode_fails_its_own_read_only() {
        let (b, docs) = block(Some(3));
        for i in (0..20).filter(|&i| i != 3) {
            assert_eq!(b.document(i).unwrap().0, docs[i].as_slice(), "document {i}");
        }
        let e = b.document(3).unwrap_err();
        assert!(e.contains("does not decode"), "{e}");
        assert!(b.get(3).is_empty());
        assert_eq!(b.id(3), b"d03");
        // The stored forms are still there (the half-block rebuild failed on document 3).
        assert_eq!(
            b.stored_form(3).as_deref(),
            Some(&[0x07u8, 0x09, b'c', b'u', b't'][..])
        );
    }
}
