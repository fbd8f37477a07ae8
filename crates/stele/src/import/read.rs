//! The input loops of an import: records cut from a JSON Lines or JSON array stream, or
//! one per file of a folder, each queued for conversion ([`Importer::record`]) with where
//! it starts, then the write.

use super::Importer;
use super::options::{IResult, ImportError, ImportFormat, ImportProgress, ImportReport};
use super::split::{ArraySplitter, SplitError};
use super::spool::{Counting, Origin};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

impl<P: FnMut(ImportProgress)> Importer<'_, P> {
    pub(super) fn run_reader(mut self, source: &str, reader: impl Read) -> IResult<ImportReport> {
        let mut input = BufReader::with_capacity(
            1 << 20,
            Counting {
                inner: reader,
                count: 0,
            },
        );
        let read_err = |error| ImportError::Read {
            file: source.to_owned(),
            error,
        };
        let mut record = 0u64;
        let mut buf = Vec::new();
        if self.format == ImportFormat::JsonLines {
            let mut line = 0u64;
            loop {
                buf.clear();
                let n = input.read_until(b'\n', &mut buf).map_err(read_err)?;
                if n == 0 {
                    break;
                }
                line += 1;
                let text = if line == 1 {
                    buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf)
                } else {
                    &buf
                };
                // Without its line break: an error at the end of a cut-off record is then
                // placed on the record's own line, not at the start of the next one.
                let text = text.strip_suffix(b"\n").unwrap_or(text);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                if text.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                record += 1;
                self.progress.bytes_read = input.get_ref().count;
                let at = Origin {
                    line,
                    column: 1,
                    record,
                };
                self.record(source, text, at, None)?;
            }
        } else {
            let mut splitter = ArraySplitter::new(&mut input);
            loop {
                let at = match splitter.next_element(&mut buf) {
                    Ok(Some((line, column))) => Origin {
                        line,
                        column,
                        record: record + 1,
                    },
                    Ok(None) => break,
                    Err(SplitError::Io(e)) => return Err(read_err(e)),
                    Err(SplitError::Malformed { line, reason }) => {
                        return Err(ImportError::Malformed {
                            file: source.to_owned(),
                            line,
                            reason: reason.into(),
                        });
                    }
                };
                record += 1;
                self.progress.bytes_read = splitter.input.get_ref().count;
                self.record(source, &buf, at, None)?;
            }
        }
        self.progress.bytes_read = input.get_ref().count;
        self.write()
    }

    pub(super) fn run_dir(mut self, dir: &Path) -> IResult<ImportReport> {
        let source = dir.display().to_string();
        let read_err = |error| ImportError::Read {
            file: source.clone(),
            error,
        };
        let mut files = Vec::new();
        let mut total = 0;
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            let path = entry.path();
            // Follows symbolic links: a link to a .json file is imported.
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                total += std::fs::metadata(&path).map_err(read_err)?.len();
                files.push(path);
            }
        }
        files.sort();
        self.progress.bytes_total = Some(total);
        for (n, path) in files.iter().enumerate() {
            let name = path.display().to_string();
            let text = std::fs::read(path).map_err(|error| ImportError::Read {
                file: name.clone(),
                error,
            })?;
            self.progress.bytes_read += text.len() as u64;
            let stem = path.file_stem().map(|s| s.to_string_lossy());
            let at = Origin {
                line: 1,
                column: 1,
                record: n as u64 + 1,
            };
            self.record(&name, &text, at, stem.as_deref())?;
        }
        self.write()
    }
}
