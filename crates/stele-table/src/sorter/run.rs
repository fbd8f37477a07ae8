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
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// One sample per this many bytes of run: enough to split the key space finely and to start
/// a range within this distance of its first key.
const SAMPLE_EVERY_BYTES: u64 = 64 << 10;
const IO_BUFFER_BYTES: usize = 1 << 20;
const READ_BUFFER_BYTES: usize = 256 << 10;

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
    pub(crate) fn create(path: PathBuf) -> Result<Self> {
        let f = File::create(&path).map_err(|e| Error::io("creating sort run", &path, e))?;
        Ok(RunWriter {
            out: BufWriter::with_capacity(IO_BUFFER_BYTES, f),
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

/// Reads a run from some offset on.
pub(crate) struct RunReader {
    input: BufReader<File>,
    path: PathBuf,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    remaining_bytes: u64,
}

fn read_varint(r: &mut impl Read) -> std::io::Result<u64> {
    let mut buf = [0u8; 10];
    for i in 0..10 {
        r.read_exact(&mut buf[i..=i])?;
        if buf[i] & 0x80 == 0 {
            let mut pos = 0;
            return varint::get(&buf[..=i], &mut pos)
                .ok_or_else(|| std::io::Error::other("bad varint in sort run"));
        }
    }
    Err(std::io::Error::other("bad varint in sort run"))
}

impl RunReader {
    pub(crate) fn open(run: &Run, offset: u64) -> Result<Self> {
        let mut f =
            File::open(&run.path).map_err(|e| Error::io("opening sort run", &run.path, e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io("seeking in sort run", &run.path, e))?;
        Ok(RunReader {
            input: BufReader::with_capacity(READ_BUFFER_BYTES, f),
            path: run.path.clone(),
            key: Vec::new(),
            value: Vec::new(),
            remaining_bytes: run.bytes.saturating_sub(offset),
        })
    }

    /// Reads the next entry into `key`/`value`; false at the end of the run.
    pub(crate) fn advance(&mut self) -> Result<bool> {
        if self.remaining_bytes == 0 {
            return Ok(false);
        }
        let path = &self.path;
        let io = |e| Error::io("reading sort run", path, e);
        let key_len = read_varint(&mut self.input).map_err(io)?;
        let value_len = read_varint(&mut self.input).map_err(io)?;
        if key_len.max(value_len) > MAX_ITEM_BYTES as u64 {
            // Only a damaged run file can say this; refuse rather than allocate it.
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "length in sort run exceeds the item limit (damaged temp file)",
            )));
        }
        self.key.resize(key_len as usize, 0);
        self.input.read_exact(&mut self.key).map_err(io)?;
        self.value.resize(value_len as usize, 0);
        self.input.read_exact(&mut self.value).map_err(io)?;
        let used = varint::len(key_len) + varint::len(value_len);
        self.remaining_bytes = self
            .remaining_bytes
            .saturating_sub(used as u64 + key_len + value_len);
        Ok(true)
    }
}
