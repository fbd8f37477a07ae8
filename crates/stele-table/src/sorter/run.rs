//! Sorted runs spilled to disk: `varint key_len, varint value_len, key, value` repeated,
//! with a sparse in-memory sample of keys and offsets to start reading anywhere.
//!
//! Runs are private temp files read back once by this process, so they carry no checksum:
//! a damaged run surfaces as an I/O error (unexpected end) or as a wrong table whose
//! checksums are computed over what was read.

use crate::builder::MAX_ITEM_BYTES;
use crate::error::{Error, Result};
use crate::varint;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// One sample per this many bytes of run: enough to split the key space finely and to start
/// a range within this distance of its first key.
pub(crate) const SAMPLE_EVERY_BYTES: u64 = 64 << 10;
/// Largest write buffer of a run writer (smaller budgets get smaller buffers).
pub(crate) const MAX_WRITE_BUFFER_BYTES: usize = 1 << 20;
/// Largest read buffer of a run reader.
pub(crate) const MAX_READ_BUFFER_BYTES: usize = 256 << 10;
/// Smallest I/O buffer: below this, system calls per byte start to dominate.
pub(crate) const MIN_IO_BUFFER_BYTES: usize = 16 << 10;

/// A finished run.
#[derive(Debug)]
pub(crate) struct Run {
    pub path: PathBuf,
    pub bytes: u64,
    /// `(key, offset of its entry)` every ~64 KiB, in key order.
    pub samples: Vec<(Vec<u8>, u64)>,
}

pub(crate) struct RunWriter {
    out: BufWriter<File>,
    path: PathBuf,
    bytes: u64,
    next_sample: u64,
    samples: Vec<(Vec<u8>, u64)>,
    header: Vec<u8>,
}

impl RunWriter {
    pub(crate) fn create(path: PathBuf, buffer_bytes: usize) -> Result<Self> {
        let f = File::create(&path).map_err(|e| Error::io("creating sort run", &path, e))?;
        Ok(RunWriter {
            out: BufWriter::with_capacity(buffer_bytes, f),
            path,
            bytes: 0,
            next_sample: 0,
            samples: Vec::new(),
            header: Vec::with_capacity(20),
        })
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.bytes >= self.next_sample {
            self.samples.push((key.to_vec(), self.bytes));
            self.next_sample = self.bytes + SAMPLE_EVERY_BYTES;
        }
        self.header.clear();
        varint::put(&mut self.header, key.len() as u64);
        varint::put(&mut self.header, value.len() as u64);
        let path = &self.path;
        let io = |e| Error::io("writing sort run", path, e);
        self.out.write_all(&self.header).map_err(io)?;
        self.out.write_all(key).map_err(io)?;
        self.out.write_all(value).map_err(io)?;
        self.bytes += (self.header.len() + key.len() + value.len()) as u64;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<Run> {
        self.out
            .flush()
            .map_err(|e| Error::io("writing sort run", &self.path, e))?;
        Ok(Run {
            path: self.path,
            bytes: self.bytes,
            samples: self.samples,
        })
    }
}

/// Reads a run from some offset on, parsing entries out of its own buffer (one `read`
/// call per buffer, up to 256 KiB, instead of several per entry).
pub(crate) struct RunReader {
    input: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Unparsed bytes are `buf[pos..]`.
    pos: usize,
    /// Bytes asked for per read (the buffer grows beyond only for a larger entry).
    read_bytes: usize,
    /// Bytes of the run not yet read into `buf`.
    unread_bytes: u64,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl RunReader {
    pub(crate) fn open(run: &Run, offset: u64, buffer_bytes: usize) -> Result<Self> {
        let mut f =
            File::open(&run.path).map_err(|e| Error::io("opening sort run", &run.path, e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io("seeking in sort run", &run.path, e))?;
        Ok(RunReader {
            input: f,
            path: run.path.clone(),
            buf: Vec::with_capacity(buffer_bytes),
            pos: 0,
            read_bytes: buffer_bytes,
            unread_bytes: run.bytes.saturating_sub(offset),
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// Makes at least `need` unparsed bytes available, if the run has them.
    fn fill(&mut self, need: usize) -> Result<bool> {
        if self.buf.len() - self.pos >= need {
            return Ok(true);
        }
        self.buf.drain(..self.pos);
        self.pos = 0;
        let want = need.max(self.read_bytes).saturating_sub(self.buf.len());
        let take = (want as u64).min(self.unread_bytes) as usize;
        let start = self.buf.len();
        self.buf.resize(start + take, 0);
        let slot = self.buf.get_mut(start..).unwrap_or_default();
        self.input
            .read_exact(slot)
            .map_err(|e| Error::io("reading sort run", &self.path, e))?;
        self.unread_bytes -= take as u64;
        Ok(self.buf.len() - self.pos >= need)
    }

    fn damaged(&self) -> Error {
        Error::io(
            "reading sort run",
            &self.path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "damaged temp file: bad lengths in sort run",
            ),
        )
    }

    /// Reads the next entry into `key`/`value`; false at the end of the run.
    pub(crate) fn advance(&mut self) -> Result<bool> {
        // Two varints take at most 20 bytes; near the end of the run, fewer are left.
        self.fill(20)?;
        if self.pos >= self.buf.len() {
            return Ok(false);
        }
        let mut p = self.pos;
        let lens = varint::get(&self.buf, &mut p).zip(varint::get(&self.buf, &mut p));
        let Some((key_len, value_len)) = lens else {
            return Err(self.damaged());
        };
        if key_len.max(value_len) > MAX_ITEM_BYTES as u64 {
            // Only a damaged run file can say this; refuse rather than allocate it.
            return Err(self.damaged());
        }
        let (key_len, value_len) = (key_len as usize, value_len as usize);
        let header = p - self.pos;
        if !self.fill(header + key_len + value_len)? {
            return Err(self.damaged());
        }
        let p = self.pos + header;
        let (Some(k), Some(v)) = (
            self.buf.get(p..p + key_len),
            self.buf.get(p + key_len..p + key_len + value_len),
        ) else {
            return Err(self.damaged());
        };
        self.key.clear();
        self.key.extend_from_slice(k);
        self.value.clear();
        self.value.extend_from_slice(v);
        self.pos = p + key_len + value_len;
        Ok(true)
    }
}
