//! The stream form of a document: its values in input order, each tag before its payload and
//! every key spelled out, as in JSON, with the binary format's exact scalars. Stored blocks of
//! documents compress better in this form, and are turned back into documents when read.
//!
//! A document's offsets, key ids and header widths differ from one document to the next even
//! where the JSON texts are alike, and cost zstd more than JSON's repeated syntax: packed in
//! 32 KiB blocks, documents compress to 1.3-2.1x of whole-file zstd -3 on collections where
//! their stream forms reach 1.0-1.5x (`docs/benchmarks.md`, "Document store"). A stream holds
//! no positions at all; [`decode`] rebuilds the document with a [`DocumentWriter`], which
//! computes them again.
//!
//! ```text
//! stream := value                       (nothing after the root value)
//! value  := 0x00                        null
//!         | 0x01 | 0x02                 false | true
//!         | 0x03 varint                 integer in i64, zigzag
//!         | 0x04 u64 (8 bytes LE)       integer above i64::MAX
//!         | 0x05 f64 (8 bytes LE)       finite float
//!         | 0x06 varint len | text      decimal: exact JSON number text
//!         | 0x07 varint len | UTF-8     string
//!         | 0x08 varint n | (varint len | UTF-8 key | value) * n     object, input order
//!         | 0x09 varint n | value * n   array
//!         | 0x0A sign_scale | varint    scaled decimal: bit 7 sign, bits 0-6 fraction digits
//! ```
//!
//! The first byte of a stream is at most `0x0A`, never the document header byte
//! ([`crate::format::HEADER_BYTE`], `0xB1`), so a reader tells a stream from a document by its
//! first byte.
//!
//! [`encode`] gives a stream only when [`decode`] of it rebuilds the very same bytes: a document
//! written with other options (LZ4 strings, sorted keys, integers wider than needed) or holding
//! unreachable bytes has none, and is kept as it is.

use crate::error::{Error, Result};
use crate::format::{MAX_DEPTH, get_varint, put_varint};
use crate::reader::{Document, Value};
use crate::writer::{DocumentWriter, DuplicateKeys, KeyOrder, WriteOptions};

const NULL: u8 = 0x00;
const FALSE: u8 = 0x01;
const TRUE: u8 = 0x02;
const INT: u8 = 0x03;
const UINT: u8 = 0x04;
const FLOAT: u8 = 0x05;
const DECIMAL: u8 = 0x06;
const STRING: u8 = 0x07;
const OBJECT: u8 = 0x08;
const ARRAY: u8 = 0x09;
const SCALED: u8 = 0x0A;

/// The options of the writer [`decode`] must be given: input key order kept, strings never
/// LZ4-compressed, duplicate keys rejected (a document has none, so neither has its stream),
/// the deepest nesting the format allows. [`encode`] checks its result with them.
pub fn write_options() -> WriteOptions {
    WriteOptions::default()
        .key_order(KeyOrder::Original)
        .duplicate_keys(DuplicateKeys::Reject)
        .compress_strings(None)
        .max_depth(MAX_DEPTH)
}

/// Whether `bytes` is a stream form (as opposed to a document, which starts with `0xB1`).
pub fn is_stream(bytes: &[u8]) -> bool {
    bytes.first().is_some_and(|&b| b <= SCALED)
}

/// Appends the stream form of `doc` to `out` and returns true if `writer` (made with
/// [`write_options`]) rebuilds exactly `doc`'s bytes from it; otherwise leaves `out` as it
/// was and returns false (keep the document as it is).
///
/// The check costs a [`decode`] (less its UTF-8 checks: the texts are `doc`'s own); the stream
/// costs nothing to keep when it is not exact.
pub fn encode<B: AsRef<[u8]>>(
    doc: &Document<B>,
    writer: &mut DocumentWriter,
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    if put_value(doc.root(), out).is_none() {
        out.truncate(start);
        return false;
    }
    let exact = rebuilds(out.get(start..), doc.as_bytes(), writer, false);
    if !exact {
        out.truncate(start);
    }
    exact
}

/// Appends the stream form of `doc` to `out` without [`encode`]'s check, and returns true;
/// false (and `out` as it was) where `doc` holds a value a stream cannot (an LZ4 string).
///
/// For a document a [`DocumentWriter`] wrote under [`write_options`], or under options that
/// differ from them only in the duplicate policy, with no object repeating a key, or in a
/// lower depth limit: [`decode`] of its stream makes the same calls to a writer of the same
/// options, so it rebuilds exactly `doc`'s bytes, and the check (a [`decode`], about 2 us for
/// a 1 KiB document) would only repeat that. Given any other document the stream still
/// holds its values in its order, and rebuilds a document of those values whose bytes may
/// differ: use [`encode`] there. Debug builds make the check anyway and panic if it fails.
pub fn encode_written<B: AsRef<[u8]>>(doc: &Document<B>, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    if put_value(doc.root(), out).is_none() {
        out.truncate(start);
        return false;
    }
    #[cfg(debug_assertions)]
    {
        let mut writer = DocumentWriter::with_options(write_options());
        assert!(
            rebuilds(out.get(start..), doc.as_bytes(), &mut writer, true),
            "encode_written: the stream of a document does not rebuild it (a document not \
             written under stream::write_options?)"
        );
    }
    true
}

/// Whether `stream` (a stream form just written from the document `doc`) rebuilds exactly
/// `doc`'s bytes with `writer`, checking its texts to be UTF-8 only if `check_utf8`: they
/// are the document's own (UTF-8, as every document's are), so [`encode`]'s rebuild skips
/// checking them again (3.8 % of an import's CPU on twitter tweets). Keeps nothing of the
/// rebuilt bytes but whether they are `doc`'s.
fn rebuilds(
    stream: Option<&[u8]>,
    doc: &[u8],
    writer: &mut DocumentWriter,
    check_utf8: bool,
) -> bool {
    stream
        .and_then(|stream| decode_with(stream, writer, check_utf8).ok())
        .is_some_and(|rebuilt| rebuilt == doc)
}

/// Writes `v` and everything below it; `None` for a value a stream cannot hold (an LZ4
/// string). Recursion is bounded by the document's depth, at most [`MAX_DEPTH`].
fn put_value(v: Value<'_>, out: &mut Vec<u8>) -> Option<()> {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Int(i) => {
            out.push(INT);
            put_varint(out, ((i << 1) ^ (i >> 63)) as u64);
        }
        Value::UInt(u) => {
            out.push(UINT);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(FLOAT);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Value::Decimal(text) => {
            out.push(DECIMAL);
            put_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        Value::Scaled(s) => {
            out.push(SCALED);
            out.push(s.scale() | if s.is_negative() { 0x80 } else { 0 });
            put_varint(out, s.mantissa());
        }
        Value::String(s) => {
            let text = s.as_borrowed()?;
            out.push(STRING);
            put_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        Value::Object(o) => {
            out.push(OBJECT);
            put_varint(out, o.len() as u64);
            for (key, value) in o.iter_original() {
                put_varint(out, key.len() as u64);
                out.extend_from_slice(key.as_bytes());
                put_value(value, out)?;
            }
        }
        Value::Array(a) => {
            out.push(ARRAY);
            put_varint(out, a.len() as u64);
            for value in a.iter() {
                put_value(value, out)?;
            }
        }
    }
    Some(())
}

/// Reads a stream: every length checked against the bytes left, every text checked as UTF-8
/// before the writer sees it.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Whether texts (keys, strings, decimals) are checked to be UTF-8: always, but for the
    /// check of [`encode`], whose stream was just written from a valid document's texts.
    check_utf8: bool,
}

impl<'a> Reader<'a> {
    fn byte(&mut self, what: &'static str) -> Result<u8> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| Error::invalid(self.pos, what))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self, what: &'static str) -> Result<u64> {
        if let Some(&b) = self.bytes.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        let (v, used) =
            get_varint(self.bytes, self.pos).ok_or_else(|| Error::invalid(self.pos, what))?;
        self.pos += used;
        Ok(v)
    }

    fn take(&mut self, len: u64, what: &'static str) -> Result<&'a [u8]> {
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| self.pos.checked_add(l))
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Error::invalid(self.pos, what))?;
        let s = self.bytes.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(s)
    }

    fn u64_le(&mut self, what: &'static str) -> Result<u64> {
        let b = self.take(8, what)?;
        let arr: [u8; 8] = b.try_into().map_err(|_| Error::invalid(self.pos, what))?;
        Ok(u64::from_le_bytes(arr))
    }

    fn text(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let len = self.varint(what)?;
        let at = self.pos;
        let s = self.take(len, what)?;
        if self.check_utf8 {
            std::str::from_utf8(s).map_err(|_| Error::invalid(at, "stream text is not UTF-8"))?;
        }
        Ok(s)
    }
}

/// Rebuilds the document a stream holds, with `writer` (which must have been made with
/// [`write_options`]; it is reset first and left ready for the next document).
///
/// Any bytes are safe to give: a malformed stream is an [`Error::Invalid`] naming the byte,
/// and whatever a well-formed stream says, the result is a valid document. Nesting is
/// bounded by the writer's depth limit and kept on the heap, not the thread's stack.
pub fn decode(stream: &[u8], writer: &mut DocumentWriter) -> Result<Vec<u8>> {
    decode_with(stream, writer, true)
}

/// [`decode`], checking texts to be UTF-8 only if `check_utf8`. Without the check, a text
/// that is not UTF-8 goes into the result as it is, which is then no valid document: only
/// for a stream whose texts were copied from a valid document ([`encode`]'s check, which
/// compares the result with that document's bytes and keeps nothing else of it).
fn decode_with(stream: &[u8], writer: &mut DocumentWriter, check_utf8: bool) -> Result<Vec<u8>> {
    writer.reset();
    let result = decode_into(stream, writer, check_utf8);
    if result.is_err() {
        writer.reset();
    }
    result
}

fn decode_into(stream: &[u8], w: &mut DocumentWriter, check_utf8: bool) -> Result<Vec<u8>> {
    let mut r = Reader {
        bytes: stream,
        pos: 0,
        check_utf8,
    };
    // Open containers: (is an object, children still to read).
    let mut open: Vec<(bool, u64)> = Vec::new();
    loop {
        if let Some((is_object, left)) = open.last_mut() {
            if *left == 0 {
                if *is_object {
                    w.end_object()?;
                } else {
                    w.end_array()?;
                }
                open.pop();
                if open.is_empty() {
                    break;
                }
                continue;
            }
            *left -= 1;
            if *is_object {
                let key = r.text("stream key runs past the end")?;
                w.key_bytes(key)?;
            }
        }
        let at = r.pos;
        match r.byte("stream ends before its value")? {
            NULL => w.null()?,
            FALSE => w.bool(false)?,
            TRUE => w.bool(true)?,
            INT => {
                let z = r.varint("stream integer is cut short")?;
                w.i64(((z >> 1) as i64) ^ -((z & 1) as i64))?;
            }
            UINT => w.u64(r.u64_le("stream integer is cut short")?)?,
            FLOAT => {
                let f = f64::from_bits(r.u64_le("stream float is cut short")?);
                if !f.is_finite() {
                    return Err(Error::invalid(at, "stream float is NaN or infinite"));
                }
                w.f64(f)?;
            }
            DECIMAL => {
                let text = r.text("stream decimal runs past the end")?;
                match crate::writer::number::scan_number(text) {
                    Ok((n, integer)) if n == text.len() => w.number_checked(text, integer)?,
                    _ => return Err(Error::invalid(at, "stream decimal is not a JSON number")),
                }
            }
            STRING => w.string_bytes(r.text("stream string runs past the end")?)?,
            SCALED => {
                let head = r.byte("stream number is cut short")?;
                let mantissa = r.varint("stream number is cut short")?;
                w.scaled(head & 0x80 != 0, mantissa, head & 0x7F)
                    .map_err(|_| Error::invalid(at, "stream scaled decimal has a bad scale"))?;
            }
            tag @ (OBJECT | ARRAY) => {
                let n = r.varint("stream count is cut short")?;
                let is_object = tag == OBJECT;
                if is_object {
                    w.begin_object()?;
                } else {
                    w.begin_array()?;
                }
                open.push((is_object, n));
                continue;
            }
            _ => return Err(Error::invalid(at, "unknown stream tag")),
        }
        if open.is_empty() {
            break;
        }
    }
    if r.pos != stream.len() {
        return Err(Error::invalid(r.pos, "bytes after the stream's root value"));
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(json: &str) -> Vec<u8> {
        let mut w = DocumentWriter::with_options(write_options());
        let bytes = w.from_json(json.as_bytes()).unwrap();
        let doc = Document::new(bytes.as_slice()).unwrap();
        let mut stream = Vec::new();
        assert!(encode(&doc, &mut w, &mut stream), "{json}");
        assert!(is_stream(&stream));
        assert_eq!(decode(&stream, &mut w).unwrap(), bytes);
        stream
    }

    #[test]
    fn every_kind_of_value_round_trips() {
        for json in [
            "null",
            "true",
            "-7",
            "18446744073709551615",
            "1.5e300",
            "-0",
            "12.50",
            "\"x\"",
            "[]",
            "{}",
            r#"{"b":1,"a":[true,null,"x",{"z":-1.25,"y":[[]]}],"c":{"b":2,"a":3}}"#,
            r#"[{"k":1,"j":2},{"k":3,"j":4},{"j":5,"k":6}]"#,
            "[-9223372036854775808,9223372036854775807,0.1,1e5,100000000000000000000]",
        ] {
            round_trip(json);
        }
    }

    /// The example of `docs/FORMAT.md` ("Stream form"), byte for byte: the layout is stored
    /// in packed blocks and must not drift.
    #[test]
    fn the_format_example_has_these_bytes() {
        let stream = round_trip(r#"{"b":1,"a":[true,null,"x"]}"#);
        let want = [
            0x08, 0x02, 0x01, b'b', 0x03, 0x02, 0x01, b'a', 0x09, 0x03, 0x02, 0x00, 0x07, 0x01,
            b'x',
        ];
        assert_eq!(stream, want);
        let numbers = round_trip("[-2,12.50,1E5,18446744073709551615]");
        let mut want = vec![0x09, 0x04, 0x03, 0x03, 0x0A, 0x02, 0xE2, 0x09];
        want.extend_from_slice(&[0x06, 0x03, b'1', b'E', b'5', 0x04]);
        want.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(numbers, want);
    }

    #[test]
    fn a_stream_holds_no_positions() {
        // Two objects alike but for the length of one string: their documents differ in
        // offsets, their streams only in that string.
        let a = round_trip(r#"{"name":"Ada","born":1815}"#);
        let b = round_trip(r#"{"name":"Adalbert","born":1815}"#);
        assert_eq!(a.len() + 5, b.len());
        assert_eq!(a.get(..8), b.get(..8));
        assert_eq!(a.get(a.len() - 8..), b.get(b.len() - 8..));
    }

    #[test]
    fn documents_a_stream_cannot_rebuild_are_refused() {
        let long = "y".repeat(400);
        let json = format!(r#"{{"s":"{long}"}}"#);
        for opts in [
            WriteOptions::default(),                                        // LZ4 string
            write_options().key_order(KeyOrder::Sorted),                    // order lost
            write_options().duplicate_keys(crate::DuplicateKeys::LastWins), // fine
        ] {
            let bytes = crate::from_json_with(json.as_bytes(), opts.clone()).unwrap();
            let doc = Document::new(bytes.as_slice()).unwrap();
            let mut w = DocumentWriter::with_options(write_options());
            let mut out = vec![9];
            let ok = encode(&doc, &mut w, &mut out);
            assert_eq!(ok, opts.compress_min_bytes.is_none(), "{opts:?}");
            if !ok {
                assert_eq!(out, [9]);
            }
        }
        // Sorted keys in an object whose input order differs: the names area keeps the input
        // order, the stream the sorted one.
        let bytes = crate::from_json_with(
            br#"{"b":1,"a":2}"#,
            write_options().key_order(KeyOrder::Sorted),
        )
        .unwrap();
        let doc = Document::new(bytes.as_slice()).unwrap();
        let mut w = DocumentWriter::with_options(write_options());
        assert!(!encode(&doc, &mut w, &mut Vec::new()));
        // A duplicate key's dropped value stays behind as unreachable bytes.
        let bytes = crate::from_json_with(
            br#"{"a":"dropped","a":1}"#,
            write_options().duplicate_keys(crate::DuplicateKeys::LastWins),
        )
        .unwrap();
        let doc = Document::new(bytes.as_slice()).unwrap();
        assert!(!encode(&doc, &mut w, &mut Vec::new()));
    }

    #[test]
    fn malformed_streams_are_errors_and_the_writer_stays_usable() {
        let mut w = DocumentWriter::with_options(write_options());
        let good = round_trip(r#"{"a":[1,"x",2.5]}"#);
        for cut in 0..good.len() {
            let e = decode(good.get(..cut).unwrap(), &mut w).unwrap_err();
            assert!(matches!(e, Error::Invalid { .. }), "cut {cut}: {e}");
        }
        let cases: [&[u8]; 8] = [
            &[0x0B],                               // unknown tag
            &[0x00, 0x00],                         // bytes after the root
            &[0x07, 0x01, 0xFF],                   // string not UTF-8
            &[0x08, 0x01, 0x01, 0xC3, 0x00],       // key not UTF-8
            &[0x06, 0x02, b'1', b'x'],             // decimal not a number
            &[0x05, 0, 0, 0, 0, 0, 0, 0xF0, 0x7F], // infinity
            &[0x0A, 0x00, 0x05],                   // scale 0
            &[0x09, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], // a huge count, no elements
        ];
        for bad in cases {
            assert!(decode(bad, &mut w).is_err(), "{bad:?}");
        }
        // Nesting deeper than the format allows.
        let deep: Vec<u8> = std::iter::repeat_n([0x09u8, 0x01], MAX_DEPTH + 1)
            .flatten()
            .chain([0x00])
            .collect();
        assert!(matches!(decode(&deep, &mut w), Err(Error::TooDeep { .. })));
        // A duplicate key (which no document has).
        assert!(decode(&[0x08, 0x02, 0x01, b'a', 0x00, 0x01, b'a', 0x01], &mut w).is_err());
        assert_eq!(decode(&good, &mut w).unwrap().first(), Some(&0xB1));
    }
}
