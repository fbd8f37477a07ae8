//! JSON text to document in one forward pass: the parser drives [`DocumentWriter`] directly, with
//! no token or tree in between.
//!
//! Policies (documented in `docs/FORMAT.md`): RFC 8259 grammar, UTF-8 only (invalid UTF-8 and lone
//! surrogate escapes are rejected), no byte order mark, duplicate keys and depth per
//! [`crate::WriteOptions`].

use super::scan::{Level, Portable, Scan};
use super::{DocumentWriter, SHORT_STRING_BYTES};
use crate::error::{Error, Result};

struct Parser<'a, S: Scan> {
    input: &'a [u8],
    pos: usize,
    scan: S,
    /// Whether the whole input is valid UTF-8, checked once with SIMD at the first non-ASCII
    /// string run (`None` before it: ASCII documents never pay for the check). When it is, every
    /// string run is, since runs start and end at ASCII bytes (`"`, `\`, control bytes), which
    /// never fall inside a multi-byte sequence. When not, each non-ASCII run is checked on its
    /// own, so an invalid input gets the error (and position) it always got.
    utf8_valid: Option<bool>,
}

// The methods the main loop calls per token are `inline(always)`: they must be compiled into
// each `parse_with` instance, so that an AVX2 instance inlines the AVX2 scanner.
impl<'a, S: Scan> Parser<'a, S> {
    #[cold]
    fn err(&self, offset: usize, reason: &'static str) -> Error {
        Error::json(self.input, offset, reason)
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        self.pos = self.scan.skip_ws(self.input, self.pos);
    }

    /// Whether the whole input is valid UTF-8 (see `utf8_valid`); always false for scanners
    /// that keep the per-run check.
    #[inline(always)]
    fn whole_input_utf8(&mut self) -> bool {
        if !S::FAST_PATHS {
            return false;
        }
        let input = self.input;
        *self
            .utf8_valid
            .get_or_insert_with(|| simdutf8::basic::from_utf8(input).is_ok())
    }

    fn check_utf8(&self, start: usize, end: usize) -> Result<()> {
        let run = self.input.get(start..end).unwrap_or_default();
        // SIMD validation (AVX2 or SSE4.2 chosen at run time by `simdutf8`) for the common
        // valid case; the standard library then finds where invalid input goes wrong.
        if simdutf8::basic::from_utf8(run).is_ok() {
            return Ok(());
        }
        match std::str::from_utf8(run) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.err(start + e.valid_up_to(), "invalid UTF-8 in a string")),
        }
    }

    /// Parses the string whose opening quote is at `self.pos`. Returns its raw range in the input
    /// when it has no escapes; otherwise decodes it into `buf` and returns `None`.
    #[inline(always)]
    fn string(&mut self, buf: &mut Vec<u8>) -> Result<Option<(usize, usize)>> {
        let start = self.pos + 1;
        let (mut i, mut non_ascii) = self.scan.find_special(self.input, start);
        let mut run_start = start;
        let mut escaped = false;
        loop {
            if non_ascii && !self.whole_input_utf8() {
                self.check_utf8(run_start, i)?;
            }
            match self.input.get(i) {
                Some(b'"') if !escaped => {
                    self.pos = i + 1;
                    return Ok(Some((start, i)));
                }
                Some(b'"') => {
                    buf.extend_from_slice(self.input.get(run_start..i).unwrap_or_default());
                    self.pos = i + 1;
                    return Ok(None);
                }
                Some(b'\\') => {
                    if !escaped {
                        escaped = true;
                        buf.clear();
                    }
                    buf.extend_from_slice(self.input.get(run_start..i).unwrap_or_default());
                    i = self.escape(i, buf)?;
                }
                Some(_) => {
                    return Err(self.err(
                        i,
                        "control character in a string: write it as an escape such as \\n or \\u001f",
                    ));
                }
                None => return Err(self.err(start - 1, "unterminated string")),
            }
            run_start = i;
            (i, non_ascii) = self.scan.find_special(self.input, i);
        }
    }

    fn hex4(&self, at: usize) -> Result<u32> {
        let digits = self
            .input
            .get(at..at + 4)
            .ok_or_else(|| self.err(at, "truncated \\u escape: expected 4 hex digits"))?;
        let mut value = 0u32;
        for (k, &d) in digits.iter().enumerate() {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(self.err(at + k, "invalid hex digit in a \\u escape")),
            };
            value = value * 16 + u32::from(v);
        }
        Ok(value)
    }

    /// Decodes the escape at `i` (a backslash) into `buf`; returns the index after it.
    fn escape(&self, i: usize, buf: &mut Vec<u8>) -> Result<usize> {
        let byte = match self.input.get(i + 1) {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let unit = self.hex4(i + 2)?;
                let (code, next) = match unit {
                    0xD800..=0xDBFF => {
                        if self.input.get(i + 6..i + 8) != Some(b"\\u") {
                            return Err(self.err(
                                i,
                                "lone surrogate: a \\uD800-\\uDBFF escape must be followed by a \\uDC00-\\uDFFF escape",
                            ));
                        }
                        let low = self.hex4(i + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(self.err(
                                i + 6,
                                "invalid surrogate pair: expected a \\uDC00-\\uDFFF escape",
                            ));
                        }
                        (0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), i + 12)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.err(
                            i,
                            "lone surrogate: a \\uDC00-\\uDFFF escape without a high surrogate before it",
                        ));
                    }
                    _ => (unit, i + 6),
                };
                let ch = char::from_u32(code)
                    .ok_or_else(|| self.err(i, "escape is not a Unicode scalar value"))?;
                buf.extend_from_slice(ch.encode_utf8(&mut [0u8; 4]).as_bytes());
                return Ok(next);
            }
            Some(_) => {
                return Err(self.err(
                    i,
                    "invalid escape: JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX",
                ));
            }
            None => return Err(self.err(i, "unterminated string")),
        };
        buf.push(byte);
        Ok(i + 2)
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.input.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.err(self.pos, "invalid literal: expected true, false or null"))
        }
    }

    /// Parses `"key" :` at `self.pos` and hands the key to the writer.
    #[inline(always)]
    fn key(&mut self, w: &mut DocumentWriter, buf: &mut Vec<u8>) -> Result<()> {
        if self.peek() != Some(b'"') {
            return Err(self.err(self.pos, "expected a property name in double quotes"));
        }
        match self.string(buf)? {
            Some((s, e)) => w.key_bytes(self.input.get(s..e).unwrap_or_default())?,
            None => w.key_bytes(buf)?,
        }
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.err(self.pos, "expected ':' after a property name"));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }
}

/// Parses all of `input` as one JSON value into `w` (which must be reset), with the fastest
/// scanner of this CPU unless the options ask for the portable one.
pub(crate) fn parse(w: &mut DocumentWriter, input: &[u8]) -> Result<()> {
    debug_assert!(w.frames.is_empty(), "parse takes a reset writer");
    parse_nested(w, input)
}

/// Parses all of `input` as one JSON value into `w` as its next value, where `w` may be in
/// the middle of a document (its open containers are left as they are): the value ends
/// when the containers it opened are closed.
fn parse_nested(w: &mut DocumentWriter, input: &[u8]) -> Result<()> {
    let level = if w.opts.portable_scanner {
        Level::Portable
    } else {
        Level::detect()
    };
    match level {
        Level::Portable => parse_with(w, input, Portable),
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => parse_with(w, input, super::scan::x86::Sse2),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => match super::scan::x86::Avx2::new() {
            // SAFETY: `Avx2::new` checked that this CPU has AVX2.
            Some(scan) => unsafe { parse_avx2(w, input, scan) },
            None => parse_with(w, input, super::scan::x86::Sse2),
        },
    }
}

/// [`parse_with`] compiled for AVX2, so that the AVX2 scanner inlines into it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn parse_avx2(w: &mut DocumentWriter, input: &[u8], scan: super::scan::x86::Avx2) -> Result<()> {
    parse_with(w, input, scan)
}

#[inline(always)]
fn parse_with<S: Scan>(w: &mut DocumentWriter, input: &[u8], scan: S) -> Result<()> {
    // The unescaping buffer is taken from the writer once per document (not once per string:
    // moving it out and back per string was 8% of converting small documents).
    let mut buf = std::mem::take(&mut w.unescaped);
    // Containers open before the value: not the parser's to close.
    let base = w.frames.len();
    let result = parse_into(w, input, scan, &mut buf, base);
    w.unescaped = buf;
    result
}

/// [`parse_with`] with the unescaping buffer `buf` held apart from the writer, into a
/// writer with `base` containers open before the value.
#[inline(always)]
fn parse_into<S: Scan>(
    w: &mut DocumentWriter,
    input: &[u8],
    scan: S,
    buf: &mut Vec<u8>,
    base: usize,
) -> Result<()> {
    let mut p = Parser {
        input,
        pos: 0,
        scan,
        utf8_valid: None,
    };
    if input.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(p.err(0, "byte order mark before the JSON text: remove it"));
    }
    p.skip_ws();
    'value: loop {
        let Some(b) = p.peek() else {
            return Err(p.err(p.pos, "unexpected end of input: expected a value"));
        };
        match b {
            b'{' => {
                p.pos += 1;
                w.begin_object()?;
                p.skip_ws();
                if p.peek() == Some(b'}') {
                    p.pos += 1;
                    w.end_object()?;
                } else {
                    p.key(w, buf)?;
                    continue 'value;
                }
            }
            b'[' => {
                p.pos += 1;
                w.begin_array()?;
                p.skip_ws();
                if p.peek() == Some(b']') {
                    p.pos += 1;
                    w.end_array()?;
                } else {
                    continue 'value;
                }
            }
            b'"' => match p.string(buf)? {
                Some((s, e)) => match input.get(s..).and_then(|r| r.first_chunk()) {
                    Some(window) if S::FAST_PATHS && e - s < SHORT_STRING_BYTES => {
                        w.short_string(window, e - s)?;
                    }
                    _ => w.string_bytes(input.get(s..e).unwrap_or_default())?,
                },
                None => w.string_bytes(buf)?,
            },
            b't' => {
                p.literal(b"true")?;
                w.bool(true)?;
            }
            b'f' => {
                p.literal(b"false")?;
                w.bool(false)?;
            }
            b'n' => {
                p.literal(b"null")?;
                w.null()?;
            }
            b'-' | b'0'..=b'9' => {
                let rest = input.get(p.pos..).unwrap_or_default();
                match p.scan.number(rest) {
                    Ok((len, number)) => {
                        w.number_classified(rest.get(..len).unwrap_or_default(), number)?;
                        p.pos += len;
                    }
                    Err((at, reason)) => return Err(p.err(p.pos + at, reason)),
                }
            }
            _ => return Err(p.err(p.pos, "expected a value")),
        }
        // After a value: close containers or move to the next element.
        loop {
            p.skip_ws();
            // The value is done once the containers it opened are closed.
            let opened = w.frames.get(base..).unwrap_or_default();
            let Some(in_object) = opened.last().map(|f| f.is_object) else {
                if p.pos != input.len() {
                    return Err(p.err(p.pos, "trailing characters after the JSON value"));
                }
                return Ok(());
            };
            match (in_object, p.peek()) {
                (true, Some(b',')) => {
                    p.pos += 1;
                    p.skip_ws();
                    p.key(w, buf)?;
                    continue 'value;
                }
                (true, Some(b'}')) => {
                    p.pos += 1;
                    w.end_object()?;
                }
                (false, Some(b',')) => {
                    p.pos += 1;
                    p.skip_ws();
                    continue 'value;
                }
                (false, Some(b']')) => {
                    p.pos += 1;
                    w.end_array()?;
                }
                (true, _) => {
                    return Err(p.err(p.pos, "expected ',' or '}' after a property value"));
                }
                (false, _) => {
                    return Err(p.err(p.pos, "expected ',' or ']' after an array element"));
                }
            }
        }
    }
}

impl DocumentWriter {
    /// Writes the value of one JSON text as the next value of the document being written
    /// (a property's value after [`Self::key`], an array element, or the root): what
    /// [`Self::from_json`] would parse, without writing it into a document of its own
    /// and copying it over. On error the document being written is left unfinished:
    /// [`Self::reset`] it.
    ///
    /// ```
    /// let mut w = stele_doc::DocumentWriter::new();
    /// w.begin_object()?;
    /// w.key("a")?;
    /// w.json_value(br#"{"b": [1, 2.5, "x"]}"#)?;
    /// w.key("c")?;
    /// w.i64(3)?;
    /// w.end_object()?;
    /// let bytes = w.finish()?;
    /// let doc = stele_doc::Document::new(bytes.as_slice())?;
    /// assert_eq!(doc.to_json(), r#"{"a":{"b":[1,2.5,"x"]},"c":3}"#);
    /// assert!(w.json_value(b"[1,").is_err());
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    pub fn json_value(&mut self, input: &[u8]) -> Result<()> {
        parse_nested(self, input)
    }

    /// Converts one JSON text to a document.
    ///
    /// ```
    /// let mut w = stele_doc::DocumentWriter::new();
    /// let bytes = w.from_json(br#"{"b": [1, 2.5, "x"], "a": null}"#)?;
    /// let doc = stele_doc::Document::new(&bytes)?;
    /// assert_eq!(doc.to_json(), r#"{"b":[1,2.5,"x"],"a":null}"#);
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    pub fn from_json(&mut self, input: &[u8]) -> Result<Vec<u8>> {
        let mut doc = Vec::new();
        self.from_json_into(input, &mut doc)?;
        Ok(doc)
    }

    /// Converts one JSON text to a document appended to `out` (see [`Self::finish_into`]):
    /// the bytes [`Self::from_json`] returns, without an allocation of their own when `out`
    /// has room. On error `out` is as it was.
    ///
    /// ```
    /// let mut w = stele_doc::DocumentWriter::new();
    /// let mut buf = Vec::new();
    /// for line in [&b"{\"a\":1}"[..], b"[true]"] {
    ///     buf.clear();
    ///     w.from_json_into(line, &mut buf)?;
    ///     assert_eq!(buf, w.from_json(line)?);
    /// }
    /// assert!(w.from_json_into(b"{", &mut buf).is_err());
    /// assert_eq!(buf, w.from_json(b"[true]")?);
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    pub fn from_json_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.reset();
        match parse(self, input) {
            Ok(()) => self.finish_into(out),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }
}
