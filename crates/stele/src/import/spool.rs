//! The spool: good records converted and checked, kept in an anonymous temporary file in
//! the database folder until they are written; and a reader that counts the input's bytes.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::options::{IResult, ImportError};

/// Counts bytes read for progress.
pub(super) struct Counting<R> {
    pub(super) inner: R,
    pub(super) count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Where a record starts in its source.
#[derive(Debug, Clone, Copy)]
pub(super) struct Origin {
    pub(super) line: u64,
    pub(super) column: u64,
    pub(super) record: u64,
}

/// Length-prefixed records in an anonymous temporary file.
pub(super) struct Spool {
    pub(super) file: BufWriter<File>,
    pub(super) dir: PathBuf,
    pub(super) len: u64,
}

impl Spool {
    pub(super) fn new(dir: &Path) -> IResult<Spool> {
        let file = tempfile::tempfile_in(dir).map_err(|error| ImportError::Spool {
            dir: dir.to_owned(),
            error,
        })?;
        Ok(Spool {
            file: BufWriter::with_capacity(1 << 20, file),
            dir: dir.to_owned(),
            len: 0,
        })
    }

    pub(super) fn err(&self, error: std::io::Error) -> ImportError {
        ImportError::Spool {
            dir: self.dir.clone(),
            error,
        }
    }

    /// Appends `id`, a presence byte and (if present) the document.
    pub(super) fn push(&mut self, id: &[u8], doc: Option<&[u8]>) -> IResult<()> {
        let mut head = Vec::with_capacity(13);
        head.extend_from_slice(&(id.len() as u32).to_le_bytes());
        head.push(u8::from(doc.is_some()));
        head.extend_from_slice(&(doc.map_or(0, <[u8]>::len) as u64).to_le_bytes());
        let written = self
            .file
            .write_all(&head)
            .and_then(|()| self.file.write_all(id))
            .and_then(|()| self.file.write_all(doc.unwrap_or_default()));
        written.map_err(|e| self.err(e))?;
        self.len += (head.len() + id.len() + doc.map_or(0, <[u8]>::len)) as u64;
        Ok(())
    }

    /// A reader over the records from byte `from` to byte `to`.
    pub(super) fn reader(&mut self, from: u64, to: u64) -> IResult<SpoolReader> {
        self.file.flush().map_err(|e| self.err(e))?;
        let mut file = self.file.get_ref().try_clone().map_err(|e| self.err(e))?;
        file.seek(SeekFrom::Start(from)).map_err(|e| self.err(e))?;
        Ok(SpoolReader {
            inner: BufReader::with_capacity(1 << 20, file.take(to - from)),
            dir: self.dir.clone(),
        })
    }
}

pub(super) struct SpoolReader {
    pub(super) inner: BufReader<std::io::Take<File>>,
    pub(super) dir: PathBuf,
}

impl SpoolReader {
    /// The next record: (id, document or none), or `None` at the end.
    pub(super) fn next(&mut self) -> IResult<Option<(String, Option<Vec<u8>>)>> {
        let err = |error| ImportError::Spool {
            dir: self.dir.clone(),
            error,
        };
        if self.inner.fill_buf().map_err(err)?.is_empty() {
            return Ok(None);
        }
        let mut head = [0u8; 13];
        self.inner.read_exact(&mut head).map_err(err)?;
        let [a, b, c, d, present, rest @ ..] = head;
        let id_len = u32::from_le_bytes([a, b, c, d]) as usize;
        let doc_len = usize::try_from(u64::from_le_bytes(rest)).unwrap_or(usize::MAX);
        let mut id = vec![0; id_len];
        self.inner.read_exact(&mut id).map_err(err)?;
        let id = String::from_utf8(id).map_err(|e| {
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                e.utf8_error(),
            ))
        })?;
        if present == 0 {
            return Ok(Some((id, None)));
        }
        let mut doc = vec![0; doc_len];
        self.inner.read_exact(&mut doc).map_err(err)?;
        Ok(Some((id, Some(doc))))
    }
}
