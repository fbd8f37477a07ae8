//! Cache hints for [`PathSet::prefetch`](super::PathSet::prefetch): where the parts a read of
//! the set touches sat in the last document it learned, so that a loop over many documents out
//! of cache can ask for all of them, for a document a few ahead, before reading it.
//!
//! Opening a document reads its trailer (at the end), then the root header and the names area
//! (just before the trailer: the root object closes last), then each value (for the first keys
//! of an object, near the document's start). Each read depends on the one before, so out of
//! cache these are two or three cache misses one after the other per document. Documents of
//! one shape have the same names area and a root header of the same size, so these parts sit
//! at the same distance from the document's end; values at about the same distance from its
//! start. A hint from those distances needs no load from the document itself.

use super::super::Layout;
use super::super::layout::prefetch_at;

/// Bytes of a cache line (x86-64 and most aarch64 cores).
const LINE_BYTES: usize = 64;

/// Documents of at most this many lines are hinted whole; larger ones get the lines of the
/// parts a read uses.
const WHOLE_LINES: usize = 16;

/// Where the parts of the last document learned are that a read uses, so that a hint can ask
/// for the same lines of the next document.
///
/// Small documents (under [`WHOLE_LINES`] lines, 1 KB) are hinted whole, one hint every 64
/// bytes from the start: more lines than a read needs (the values it skips), but the hints then
/// run in address order, which the CPU's own stream prefetcher follows to the next documents;
/// measured on 800-byte documents, 97 ns per document against 105-125 for the lines of the
/// parts alone. Larger documents get the first and last line of each part a read uses: the
/// values (at the same distances from the document's start), the root header, the names area
/// and the trailer (at the same distances from its end: the root object closes last, so
/// documents of one shape have these at the same distance from the end).
///
/// Reading a document stores only the positions (a few words); the hint does the arithmetic,
/// so that a loop without hints pays nothing for them. The number of hints changes only with
/// the learned document (a power of two of lines): a loop whose trip count changes with each
/// document costs branch mispredictions, more than the hints save when the documents are in
/// cache (measured).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Hints {
    /// Whether the fields below describe a document.
    known: bool,
    /// The learned document's length, root position, names area and trailer positions.
    len: usize,
    root_pos: usize,
    names_pos: usize,
    names_end: usize,
    /// Bytes of the root header a read uses (count, flags, key ids, the places of the keys).
    head_bytes: usize,
    /// Bytes of the names area a read compares.
    names_bytes: usize,
}

impl Hints {
    /// Remembers where the parts of a document of `len` bytes with `layout` are that a read
    /// uses: `head_bytes` of the root header, `names_bytes` of the names area.
    #[inline]
    pub(super) fn learn(
        &mut self,
        len: usize,
        layout: &Layout,
        head_bytes: usize,
        names_bytes: usize,
    ) {
        *self = Hints {
            known: true,
            len,
            root_pos: layout.root_pos,
            names_pos: layout.names_pos,
            names_end: layout.names_end,
            head_bytes,
            names_bytes,
        };
    }

    /// Forgets the document (its root is not an object).
    pub(super) fn forget(&mut self) {
        self.known = false;
    }

    /// Hints the lines of `bytes` that a read of a document shaped as the learned one uses
    /// (see [`Hints`]), the values at `values` (positions from the start in the learned
    /// document; `usize::MAX` for none); without a learned document, its start and end. Reads
    /// nothing: any bytes are fine, and a position past a shorter document's end hints its
    /// last byte.
    #[inline(always)]
    pub(super) fn prefetch(&self, bytes: &[u8], values: impl Iterator<Item = usize>) {
        self.positions(bytes.len(), values, |pos| prefetch_at(bytes, pos));
    }

    /// Calls `hint` with each position of a document of `len` bytes whose line
    /// [`Hints::prefetch`] asks for (each below `len`).
    #[inline(always)]
    fn positions(
        &self,
        len: usize,
        values: impl Iterator<Item = usize>,
        mut hint: impl FnMut(usize),
    ) {
        let Some(last) = len.checked_sub(1) else {
            return;
        };
        if !self.known {
            hint(last.min(1));
            hint(last);
            return;
        }
        // A document of `lines` lines' bytes spans at most `lines + 1` lines (it may start
        // anywhere in a line): `lines` steps of a line from its start, and its last byte.
        let lines = self.len.div_ceil(LINE_BYTES);
        if lines < WHOLE_LINES {
            // The step is a line, so the k-th position lies in the k-th line from the first
            // wherever the document starts in its line.
            for line in 0..lines.next_power_of_two() {
                hint((line * LINE_BYTES).min(last));
            }
            // The last byte's line, which the steps above miss when the document does not
            // start at a line's start (or is longer than the one learned).
            hint(last);
            return;
        }
        for pos in values {
            hint(pos.min(last));
        }
        // The same distance from the end as in the learned document.
        let at = |pos: usize| len.saturating_sub(self.len.saturating_sub(pos)).min(last);
        let last_of = |pos: usize, n: usize| pos.saturating_add(n.max(1) - 1);
        hint(at(self.root_pos));
        hint(at(last_of(self.root_pos, self.head_bytes)));
        hint(at(self.names_pos));
        hint(at(last_of(self.names_pos, self.names_bytes)));
        hint(at(self.names_end));
        hint(last);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::LINE_BYTES;
    use crate::reader::path_set::PathSet;
    use crate::{Document, from_json};

    /// The lines (address / 64) of `bytes` that the set's hint asks for.
    fn hinted(set: &PathSet, bytes: &[u8]) -> BTreeSet<usize> {
        let mut lines = BTreeSet::new();
        set.hints
            .positions(bytes.len(), set.value_positions(), |pos| {
                assert!(pos < bytes.len(), "hint at {pos} of {} bytes", bytes.len());
                lines.insert(bytes[pos..].as_ptr().addr() / LINE_BYTES);
            });
        lines
    }

    /// The line of `bytes[pos]`.
    fn line(bytes: &[u8], pos: usize) -> usize {
        bytes[pos..].as_ptr().addr() / LINE_BYTES
    }

    /// `doc` copied to each of 64 alignments in a buffer: (buffer, start).
    fn placed(doc: &[u8]) -> Vec<(Vec<u8>, usize)> {
        (0..64)
            .map(|shift| {
                let mut buf = vec![0u8; doc.len() + 128];
                let base = buf.as_ptr().addr();
                let start = (64 - base % 64) % 64 + shift;
                buf[start..start + doc.len()].copy_from_slice(doc);
                (buf, start)
            })
            .collect()
    }

    #[test]
    fn before_any_document_the_start_and_the_end() {
        let set = PathSet::new(["a"]).unwrap();
        let mut got = Vec::new();
        set.hints
            .positions(100, set.value_positions(), |p| got.push(p));
        assert_eq!(got, [1, 99]);
        got.clear();
        set.hints
            .positions(0, set.value_positions(), |p| got.push(p));
        assert!(got.is_empty());
    }

    #[test]
    fn a_small_document_is_hinted_whole_at_every_alignment() {
        // 200 to 1,000 bytes: 4 to 16 lines, some documents of another length than the one
        // learned (the hint must still cover a document of that shape, by the power of two).
        for pad in [100, 150, 230, 400, 900] {
            let learned = from_json(
                format!(r#"{{"id":7,"name":"{}","size":12}}"#, "x".repeat(pad)).as_bytes(),
            )
            .unwrap();
            let other = |n: u32, len: usize| {
                let text = format!(r#"{{"id":{n},"name":"{}","size":3}}"#, "y".repeat(len));
                from_json(text.as_bytes()).unwrap()
            };
            let mut set = PathSet::new(["id", "size"]).unwrap();
            set.read_doc(&Document::new(&learned[..]).unwrap(), |_, _| {});
            for doc in [&learned, &other(8, pad - 20)] {
                for (buf, start) in placed(doc) {
                    let bytes = &buf[start..start + doc.len()];
                    let want: BTreeSet<usize> = (0..bytes.len()).map(|p| line(bytes, p)).collect();
                    assert_eq!(hinted(&set, bytes), want, "{} bytes at {start}", doc.len());
                }
            }
            // A longer one: its start and its trailer at least.
            let longer = other(9, pad + 300);
            for (buf, start) in placed(&longer) {
                let bytes = &buf[start..start + longer.len()];
                let got = hinted(&set, bytes);
                for pos in [0, bytes.len() - 1] {
                    assert!(got.contains(&line(bytes, pos)), "{pos} of {}", bytes.len());
                }
            }
        }
    }

    #[test]
    fn a_large_document_gets_the_lines_a_read_uses() {
        // Over 1 KB: the values near the start, the root header, the names a read compares
        // and the trailer at the same distances from the end in a document of the same shape.
        // 60 more root keys after the ones read: a root header of about 250 bytes, whose part
        // a read uses (key ids, the first offsets and tags) ends well before the names.
        let text = |n: u32, pad: usize| {
            let tags: Vec<String> = (0..400 + pad)
                .map(|i| (i * 7919 % 1000).to_string())
                .collect();
            let more: String = (0..60).map(|k| format!(r#","z{k:02}":{k}"#)).collect();
            format!(
                r#"{{"id":{n},"name":"{}","size":{n},"tags":[{}],"zeta":"z"{more}}}"#,
                "x".repeat(pad % 100),
                tags.join(","),
            )
        };
        let mut set = PathSet::new(["id", "name", "size"]).unwrap();
        let learned = from_json(text(1, 0).as_bytes()).unwrap();
        set.read_doc(&Document::new(&learned[..]).unwrap(), |_, _| {});
        assert!(learned.len() > 1100, "{} bytes", learned.len());
        assert!(
            set.hints.len.div_ceil(LINE_BYTES) >= super::WHOLE_LINES,
            "hinted by parts"
        );
        for (n, pad) in [(1, 0), (2, 30), (300, 333)] {
            let doc = from_json(text(n, pad).as_bytes()).unwrap();
            let d = Document::new(&doc[..]).unwrap();
            let root = d.layout.root_pos;
            let names = d.layout.names_pos;
            let value = |key: &str| {
                let o = d.root_object().unwrap();
                o.value_pos(o.find(key).unwrap()).unwrap().1
            };
            for (buf, start) in placed(&doc) {
                let bytes = &buf[start..start + doc.len()];
                let got = hinted(&set, bytes);
                let mut want = vec![
                    ("trailer", bytes.len() - 1),
                    ("root header", root),
                    ("names", names),
                ];
                if (n, pad) == (1, 0) {
                    // Values: where they sat in the learned document (the first and the last).
                    want.push(("first value", value("id")));
                    want.push(("last value", value("size")));
                }
                for (part, pos) in want {
                    assert!(
                        got.contains(&line(bytes, pos)),
                        "{part} at {pos} of {} bytes (at {start}) not hinted",
                        bytes.len()
                    );
                }
                assert!(got.len() <= 10, "{} lines hinted", got.len());
            }
        }
    }
}
