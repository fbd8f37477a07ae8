//! A sample of a JSON Lines file taken before its import reads it: whole lines from
//! windows at evenly spread offsets, converted to documents. It lets an import whose ids
//! come in ascending order (numbered records) train its dictionary first and pack each
//! block as soon as it is full, while the rest of the file is still being read and
//! converted, instead of holding every document until the end ([`super::bulk`]).
//!
//! Reading windows rather than the whole file keeps the cost fixed (at most
//! [`WINDOWS`] reads of a few dozen KiB, whatever the file's size) and spreads the sample
//! over the whole input, as the reservoir of a sorted import spreads it: a file whose
//! records change along the way (a log, an export sorted by one field) is sampled from
//! end to end, not from its first records.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use stele_doc::{DocumentWriter, WriteOptions};

/// Where a presample reads its windows from: a seekable file, or a stream read once.
pub(super) trait Windows {
    /// Reads up to `len` bytes from offset `start` into `buf` (cleared first): fewer only at
    /// the end. Each `start` is at least the one before.
    fn window(&mut self, start: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<()>;
}

impl Windows for File {
    fn window(&mut self, start: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        self.seek(SeekFrom::Start(start))?;
        buf.clear();
        self.take(len as u64).read_to_end(buf)?;
        Ok(())
    }
}

/// The windows of a stream that cannot seek (a compressed file's decompressed text), read
/// once from its start: the bytes between windows are read and dropped, so a presample
/// costs one pass over the stream (a decompression of the file).
pub(super) struct Sequential<R> {
    reader: R,
    /// Offset of the next byte `reader` gives.
    pos: u64,
    /// The last window and its offset: a window that starts inside it (the windows of a
    /// small file overlap) takes its first bytes from there.
    last: Vec<u8>,
    last_start: u64,
}

impl<R: Read> Sequential<R> {
    pub(super) fn new(reader: R) -> Self {
        Sequential {
            reader,
            pos: 0,
            last: Vec::new(),
            last_start: 0,
        }
    }
}

impl<R: Read> Windows for Sequential<R> {
    fn window(&mut self, start: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.clear();
        if start < self.pos {
            let from = usize::try_from(start.saturating_sub(self.last_start)).unwrap_or(usize::MAX);
            buf.extend_from_slice(self.last.get(from..).unwrap_or(&[]));
        } else {
            let skip = start - self.pos;
            self.pos += std::io::copy(&mut (&mut self.reader).take(skip), &mut std::io::sink())?;
        }
        let want = len.saturating_sub(buf.len()) as u64;
        self.pos += (&mut self.reader).take(want).read_to_end(buf)? as u64;
        self.last_start = start;
        self.last.clear();
        self.last.extend_from_slice(buf);
        Ok(())
    }
}

/// Windows read. 64 windows of the sample's budget: each window gives at most 1/64 of the
/// documents and bytes of the sample.
pub(super) const WINDOWS: u64 = 64;

/// Smallest window read, in bytes (a window ends wherever it ends: its last, cut line is
/// not used, nor its first unless the window starts the file).
const MIN_WINDOW_BYTES: usize = 64 << 10;

/// Lines longer than this are not sampled (as the sorted import's reservoir skips
/// documents over 1 MiB): the window would have to be as long.
const MAX_LINE_BYTES: usize = 1 << 20;

/// Documents sampled from a file before it is imported.
#[derive(Debug, Default)]
pub(crate) struct Presample {
    /// The documents, in file order.
    pub(super) docs: Vec<Vec<u8>>,
    /// Their JSON texts (without the blanks around them): what a bulk import packs where
    /// they rebuild the documents (text forms, `super::convert::convert_all`), and so what
    /// its dictionary trains on.
    pub(super) texts: Vec<Vec<u8>>,
    /// Bytes of the JSON lines they were converted from (line breaks not counted).
    pub(super) json_bytes: u64,
    /// Bytes of the documents.
    pub(super) doc_bytes: u64,
}

impl Presample {
    /// Estimated document bytes of a file of `file_bytes` bytes of JSON Lines: the sample's
    /// ratio of document to JSON bytes applied to the whole file (0 for an empty sample).
    pub(super) fn estimated_doc_bytes(&self, file_bytes: u64) -> u64 {
        if self.json_bytes == 0 {
            return 0;
        }
        (u128::from(file_bytes) * u128::from(self.doc_bytes) / u128::from(self.json_bytes))
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// Estimated records of a file of `file_bytes` bytes (at least 1).
    pub(super) fn estimated_docs(&self, file_bytes: u64) -> u64 {
        let lines = self.docs.len() as u64;
        if self.json_bytes == 0 || lines == 0 {
            return 1;
        }
        // Each line also has its line break.
        let per_line = (self.json_bytes + lines).div_ceil(lines);
        (file_bytes / per_line).max(1)
    }
}

/// Samples up to `max_docs` documents and about `max_bytes` bytes of them from `file`
/// (`file_bytes` long, JSON Lines), converting each line with `write`; lines that are
/// blank, too long or not valid JSON are left out (the import itself reports them). Reads
/// from `file`'s own handle (a [`File`]: the caller reads the file from its start
/// afterwards) or from a stream of its own ([`Sequential`]).
pub(super) fn presample(
    file: &mut impl Windows,
    file_bytes: u64,
    max_docs: usize,
    max_bytes: usize,
    write: &WriteOptions,
) -> std::io::Result<Presample> {
    let docs_per_window = max_docs.div_ceil(WINDOWS as usize).max(1);
    let bytes_per_window = max_bytes.div_ceil(WINDOWS as usize).max(1);
    let window_bytes = (2 * bytes_per_window).max(MIN_WINDOW_BYTES);
    let mut writer = DocumentWriter::with_options(write.clone());
    let mut sample = Presample::default();
    let mut window = Vec::with_capacity(window_bytes);
    // End of the last line a window looked at: the next window starts there at the
    // earliest, so that no line is sampled twice (windows of a small file overlap).
    let mut last_end = 0u64;
    for w in 0..WINDOWS {
        let start = (file_bytes / WINDOWS * w).max(last_end);
        if start >= file_bytes {
            break;
        }
        file.window(start, window_bytes, &mut window)?;
        let at_end = start + window.len() as u64 >= file_bytes;
        let mut offset = 0usize;
        let mut lines = window.split_inclusive(|&b| b == b'\n');
        if start != last_end {
            // The window starts inside a line, or at the start of one; either way the
            // line before the first break is skipped (it may be cut).
            offset += lines.next().map_or(0, <[u8]>::len);
        }
        let (mut taken_docs, mut taken_bytes) = (0usize, 0usize);
        for line in lines {
            let whole = line.ends_with(b"\n") || at_end;
            if !whole || taken_docs >= docs_per_window || taken_bytes >= bytes_per_window {
                break;
            }
            offset += line.len();
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = if start == 0 && taken_docs == 0 {
                text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
            } else {
                text
            };
            if text.len() > MAX_LINE_BYTES || text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(doc) = writer.from_json(text) else {
                continue;
            };
            taken_docs += 1;
            taken_bytes += doc.len();
            sample.texts.push(text.trim_ascii().to_vec());
            sample.json_bytes += text.len() as u64;
            sample.doc_bytes += doc.len() as u64;
            sample.docs.push(doc);
        }
        last_end = start + offset as u64;
    }
    Ok(sample)
}

impl Presample {
    /// A sample of documents an import writes itself (the Arrow import of a Parquet file,
    /// `crate::arrow`), in input order: the blocks hold the documents as they are, so the
    /// dictionary trains on them (what the sorted write's reservoir would have held), and
    /// their bytes stand for the input's.
    #[cfg(feature = "parquet")]
    pub(crate) fn of_documents(docs: Vec<Vec<u8>>) -> Presample {
        let doc_bytes: u64 = docs.iter().map(|d| d.len() as u64).sum();
        Presample {
            texts: docs.clone(),
            docs,
            json_bytes: doc_bytes,
            doc_bytes,
        }
    }

    /// Replaces each sampled text by its form without the top-level field `name` where it
    /// has one (`crate::compress::elide`), as the import will store it.
    pub(super) fn elide_texts(&mut self, name: &str) {
        let mut cut = Vec::new();
        for text in &mut self.texts {
            if crate::compress::elide::cut(text, name, crate::IdKind::Text, &mut cut) {
                std::mem::swap(text, &mut cut);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(text: &str) -> (tempfile::NamedTempFile, u64) {
        let mut f = tempfile::NamedTempFile::new().expect("a temporary file");
        f.write_all(text.as_bytes()).expect("written");
        (f, text.len() as u64)
    }

    /// The presample of `text` by seeks in a file; the same as the one read in one pass
    /// over it as a stream (`Sequential`, how a compressed file's text is sampled).
    fn sample(text: &str, max_docs: usize, max_bytes: usize) -> Presample {
        let (f, len) = file_of(text);
        let mut file = f.reopen().expect("reopened");
        let write = WriteOptions::default();
        let seeked = presample(&mut file, len, max_docs, max_bytes, &write).expect("sampled");
        let mut stream = Sequential::new(text.as_bytes());
        let read = presample(&mut stream, len, max_docs, max_bytes, &write).expect("sampled");
        assert_eq!(read.docs, seeked.docs);
        assert_eq!(read.texts, seeked.texts);
        assert_eq!(
            (read.json_bytes, read.doc_bytes),
            (seeked.json_bytes, seeked.doc_bytes)
        );
        seeked
    }

    /// Numbers of the sampled documents `{"n":N}`.
    fn numbers(s: &Presample) -> Vec<u64> {
        s.docs
            .iter()
            .map(|d| {
                let doc = stele_doc::Document::new(d.as_slice()).expect("a document");
                let v = doc.root().get("n").expect("n");
                match v {
                    stele_doc::Value::UInt(n) => n,
                    stele_doc::Value::Int(n) => u64::try_from(n).expect("positive"),
                    other => panic!("{other:?}"),
                }
            })
            .collect()
    }

    /// A big file is sampled from end to end, whole lines only, in file order, within the
    /// documents asked for.
    #[test]
    fn windows_spread_over_the_whole_file() {
        let text: String = (0..200_000).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        let s = sample(&text, 640, 1 << 20);
        let ns = numbers(&s);
        assert_eq!(ns.len(), 640, "10 documents from each of 64 windows");
        assert!(ns.windows(2).all(|w| w[0] < w[1]), "in file order");
        assert!(ns[0] < 10, "the first window starts the file: {}", ns[0]);
        assert!(
            *ns.last().expect("some") > 195_000,
            "the last one ends near the end"
        );
        // Every 10 of them come from one window, 1/64 of the file's bytes apart: 3,125
        // lines of the average length, more of the first, shorter lines.
        let gap = ns[10] - ns[0];
        assert!((3_125..4_000).contains(&gap), "{gap}");
        assert_eq!(
            s.json_bytes,
            ns.iter()
                .map(|n| format!("{{\"n\":{n}}}").len() as u64)
                .sum::<u64>()
        );
        let est = s.estimated_docs(text.len() as u64);
        assert!((190_000..210_000).contains(&est), "{est}");
    }

    /// A small file is read once: no line sampled twice, bad and blank lines left out.
    #[test]
    fn a_small_file_gives_each_line_once() {
        let text = "\u{feff}{\"n\":0}\n\n{\"n\":1}\r\nnot json\n{\"n\":2}";
        let s = sample(text, 1000, 1 << 20);
        assert_eq!(numbers(&s), vec![0, 1, 2]);
        assert_eq!(s.estimated_doc_bytes(0), 0);
        assert_eq!(sample("", 10, 100).docs.len(), 0);
        assert_eq!(sample("", 10, 100).estimated_docs(100), 1);
    }

    /// Lines cut by a window's end are not taken.
    #[test]
    fn cut_lines_are_not_sampled() {
        let long = "x".repeat(100 << 10);
        let text: String = (0..64)
            .map(|n| format!("{{\"n\":{n},\"pad\":\"{long}\"}}\n"))
            .collect();
        let s = sample(&text, 64, 64 << 20);
        // Each window of 200 KiB holds one whole line at most after its cut first one.
        assert!(!s.docs.is_empty());
        let ns = numbers(&s);
        assert!(ns.windows(2).all(|w| w[0] < w[1]), "{ns:?}");
    }
}
