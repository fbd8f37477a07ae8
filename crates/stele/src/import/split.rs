//! Reading the input: the format sniffed from its first bytes, and the splitter that
//! cuts a JSON array into its elements without parsing them.

use std::io::{BufRead, Read};

use super::options::ImportFormat;

/// Detects JSON versus JSON Lines from the first non-blank byte: `[` is JSON. Returns the
/// bytes read to find it, to be read again before the rest (after 1 MiB of blanks it stops
/// looking: JSON Lines).
pub(super) fn sniff(reader: &mut impl Read) -> std::io::Result<(ImportFormat, Vec<u8>)> {
    let mut prefix = Vec::new();
    let mut chunk = [0u8; 4096];
    while prefix.len() < 1 << 20 {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let new = chunk.get(..n).unwrap_or_default();
        prefix.extend_from_slice(new);
        if let Some(&b) = new.iter().find(|b| !is_blank(**b)) {
            let format = if b == b'[' {
                ImportFormat::Json
            } else {
                ImportFormat::JsonLines
            };
            return Ok((format, prefix));
        }
    }
    Ok((ImportFormat::JsonLines, prefix))
}

/// How an input's first bytes say it is packed, when it is not JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Packed {
    /// A zstd frame (`.zst`): read through a decoder, frame after frame.
    Zstd,
    /// Not read by this import: the user is told what it is (`what`) and what to do,
    /// rather than "invalid JSON" at line 1: unpack it with `unpack` (FILE standing for
    /// the file), or, without one (a Parquet file), import it as Parquet.
    Refused {
        what: &'static str,
        unpack: Option<&'static str>,
    },
}

/// The reason of the error for an input [`Packed::Refused`] names.
pub(super) fn refusal(what: &str, unpack: Option<&str>) -> String {
    match unpack {
        Some(unpack) => format!(
            "this is {what}, not JSON text: unpack it first, e.g. \
             `{unpack} | stele import DB COLL -` (zstd-compressed files are read as they are)"
        ),
        None => format!(
            "this is {what}, not JSON: import it with `stele import DB COLL FILE.parquet` \
             (or --format parquet), or `stele::arrow::import_parquet_file`"
        ),
    }
}

/// What the magic bytes at the start of `prefix` (10 bytes are enough) say about the
/// input, if they say anything. None of these byte strings can begin JSON text (with or
/// without a byte order mark), nor a line of text that a `--skip-bad` import would skip
/// as one bad record: each holds a byte that is not text (a control byte or one that no
/// UTF-8 character starts with), or, for bzip2, the digits of pi its blocks start with.
pub(super) fn packed(prefix: &[u8]) -> Option<Packed> {
    const ZSTD: &[u8] = &[0x28, 0xB5, 0x2F, 0xFD];
    const OTHERS: &[(&[u8], &str, &str)] = &[
        (&[0x1F, 0x8B], "gzip-compressed", "gunzip -c FILE"),
        (
            &[0xFD, b'7', b'z', b'X', b'Z', 0x00],
            "xz-compressed",
            "xz -dc FILE",
        ),
        (b"PK\x03\x04", "a zip archive", "unzip -p FILE"),
    ];
    if prefix.starts_with(ZSTD) {
        return Some(Packed::Zstd);
    }
    // A zstd skippable frame (magic 0x184D2A50 to 0x184D2A5F, little-endian: its fourth
    // byte a control byte), which some tools put first (seekable-format indexes, metadata);
    // the decoder skips it.
    if let [0x50..=0x5F, 0x2A, 0x4D, 0x18, ..] = prefix {
        return Some(Packed::Zstd);
    }
    // "BZh", the block size ('1' to '9'), then a block's magic (BCD pi, 0x314159265359).
    if let [
        b'B',
        b'Z',
        b'h',
        b'1'..=b'9',
        0x31,
        0x41,
        0x59,
        0x26,
        0x53,
        0x59,
        ..,
    ] = prefix
    {
        return Some(Packed::Refused {
            what: "bzip2-compressed",
            unpack: Some("bunzip2 -c FILE"),
        });
    }
    // "PAR1" then the first page's header (Thrift), whose first byte is not text.
    if let [b'P', b'A', b'R', b'1', next, ..] = prefix
        && !(next.is_ascii_graphic() || next.is_ascii_whitespace())
    {
        return Some(Packed::Refused {
            what: "a Parquet file",
            unpack: None,
        });
    }
    OTHERS
        .iter()
        .find(|(magic, _, _)| prefix.starts_with(magic))
        .map(|&(_, what, unpack)| Packed::Refused {
            what,
            unpack: Some(unpack),
        })
}

/// Reads up to `len` bytes from the start of `reader` (fewer at its end), to look at its
/// magic bytes; they are to be read again before the rest.
pub(super) fn head(reader: &mut impl Read, len: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(len);
    reader.by_ref().take(len as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Whitespace around JSON values, plus the bytes of a UTF-8 byte order mark.
pub(super) fn is_blank(b: u8) -> bool {
    is_ws(b) || is_bom(b)
}

pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

pub(super) fn is_bom(b: u8) -> bool {
    matches!(b, 0xEF | 0xBB | 0xBF)
}

pub(super) enum SplitError {
    Io(std::io::Error),
    Malformed { line: u64, reason: &'static str },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Before the opening `[`.
    Start,
    /// After `[` (`first`) or after a `,`.
    BeforeElement { first: bool },
    /// After the closing `]`.
    Done,
}

/// Finds the elements of one top-level JSON array incrementally: it tracks strings (with
/// escapes) and nesting only; each element's own syntax is checked when it is converted.
pub(super) struct ArraySplitter<R> {
    pub(super) input: R,
    pub(super) state: State,
    pub(super) line: u64,
    pub(super) column: u64,
}

impl<R: BufRead> ArraySplitter<R> {
    pub(super) fn new(input: R) -> Self {
        ArraySplitter {
            input,
            state: State::Start,
            line: 1,
            column: 1,
        }
    }

    fn malformed<T>(&self, reason: &'static str) -> Result<T, SplitError> {
        Err(SplitError::Malformed {
            line: self.line,
            reason,
        })
    }

    fn advance(&mut self, b: u8) {
        if b == b'\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }

    /// Puts the next element's bytes in `out` and returns its line and column, or `None`
    /// after the closing `]`.
    pub(super) fn next_element(
        &mut self,
        out: &mut Vec<u8>,
    ) -> Result<Option<(u64, u64)>, SplitError> {
        out.clear();
        // Outside elements: blanks and punctuation, one byte at a time.
        loop {
            let buf = self.input.fill_buf().map_err(SplitError::Io)?;
            let Some(&b) = buf.first() else {
                return match self.state {
                    State::Done => Ok(None),
                    State::Start => self.malformed(
                        "empty input: expected a JSON array `[...]` (for one document per line, use JSON Lines)",
                    ),
                    _ => self.malformed("the input ends inside the array: expected `]`"),
                };
            };
            if is_ws(b) || (self.state == State::Start && is_bom(b)) {
                self.input.consume(1);
                self.advance(b);
                continue;
            }
            match (self.state, b) {
                (State::Start, b'[') => self.state = State::BeforeElement { first: true },
                (State::Start, _) => {
                    return self.malformed(
                        "expected a JSON array `[...]` of documents (for one document per line, use JSON Lines; for one per file, a folder)",
                    );
                }
                (State::BeforeElement { first: true }, b']') => self.state = State::Done,
                (State::BeforeElement { .. }, b']') => {
                    return self.malformed("a comma before `]`: remove the trailing comma");
                }
                (State::BeforeElement { .. }, b',') => {
                    return self.malformed("an empty element (two commas in a row)");
                }
                (State::BeforeElement { .. }, _) => break,
                (State::Done, _) => {
                    return self.malformed("data after the array's closing `]`");
                }
            }
            self.input.consume(1);
            self.advance(b);
        }
        let start = (self.line, self.column);
        let (mut depth, mut in_string, mut escaped) = (0u64, false, false);
        loop {
            let buf = self.input.fill_buf().map_err(SplitError::Io)?;
            if buf.is_empty() {
                return self.malformed(if in_string {
                    "the input ends inside a string: a closing quote is missing"
                } else {
                    "the input ends inside the array: expected `]`"
                });
            }
            let mut end = None;
            let mut used = buf.len();
            for (i, &b) in buf.iter().enumerate() {
                if b == b'\n' {
                    self.line += 1;
                    self.column = 1;
                } else {
                    self.column += 1;
                }
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth > 0 => depth -= 1,
                    b']' | b',' if depth == 0 => {
                        end = Some(b);
                        used = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            out.extend_from_slice(&buf[..used - usize::from(end.is_some())]);
            self.input.consume(used);
            match end {
                Some(b']') => {
                    self.state = State::Done;
                    return Ok(Some(start));
                }
                Some(_) => {
                    self.state = State::BeforeElement { first: false };
                    return Ok(Some(start));
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use std::io::BufReader;

    fn split(text: &str) -> Result<Vec<(String, u64, u64)>, String> {
        let mut s = ArraySplitter::new(text.as_bytes());
        let mut out = Vec::new();
        let mut all = Vec::new();
        loop {
            match s.next_element(&mut out) {
                Ok(Some((l, c))) => all.push((String::from_utf8(out.clone()).unwrap(), l, c)),
                Ok(None) => return Ok(all),
                Err(SplitError::Malformed { line, reason }) => {
                    return Err(format!("{line}: {reason}"));
                }
                Err(SplitError::Io(e)) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn splits_elements_with_strings_escapes_and_nesting() {
        let got =
            split("\u{feff} [\n {\"a\":\"x,]\\\"}\"},\n  [1,[2]] , 3,\"s\\\\\",{}\n]\n").unwrap();
        let texts: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(
            texts,
            ["{\"a\":\"x,]\\\"}\"}", "[1,[2]] ", "3", "\"s\\\\\"", "{}\n"]
        );
        assert_eq!((got[0].1, got[0].2), (2, 2));
        assert_eq!((got[1].1, got[1].2), (3, 3));
        assert_eq!(split("[]").unwrap(), vec![]);
        assert_eq!(split(" [ ] \n").unwrap(), vec![]);
    }

    #[test]
    fn malformed_arrays_name_the_line() {
        assert!(split("").unwrap_err().contains("empty input"));
        assert!(
            split("{\"a\":1}")
                .unwrap_err()
                .contains("expected a JSON array")
        );
        assert!(
            split("[1,\n2,]")
                .unwrap_err()
                .starts_with("2: a comma before")
        );
        assert!(split("[1,,2]").unwrap_err().contains("empty element"));
        assert!(split("[1] x").unwrap_err().contains("after the array"));
        assert!(split("[1, \"abc").unwrap_err().contains("inside a string"));
        assert!(
            split("[1, {\"a\": [2]}")
                .unwrap_err()
                .contains("expected `]`")
        );
    }

    #[test]
    fn splits_across_small_reads() {
        let text = "[{\"k\":\"a\\\"b\"},\n{\"k\":[1,2,{}]},\n\"z\"]";
        let reader = BufReader::with_capacity(1, text.as_bytes());
        let mut s = ArraySplitter::new(reader);
        let mut out = Vec::new();
        let mut all = Vec::new();
        while let Ok(Some(_)) = s.next_element(&mut out) {
            all.push(String::from_utf8(out.clone()).unwrap());
        }
        assert_eq!(all, ["{\"k\":\"a\\\"b\"}", "{\"k\":[1,2,{}]}", "\"z\""]);
    }
}
