//! Documents to JSON text: compact or pretty, original or sorted key order.
//!
//! Escaping matches `serde_json` (and so most JSON writers): `"` and `\` escaped, control
//! characters as `\n`-style or `\u00XX`, everything else (including non-ASCII) written as UTF-8.
//! With this, a minified input in that canonical form comes back byte for byte.

use crate::format::Tag;
use crate::format::{append, u64_digits};
use crate::reader::{Array, ArrayIter, DocRef, Document, Object, ObjectIter, Value};
use crate::writer::scan::find_special;

/// How to print JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonOptions {
    pretty: bool,
    sorted_keys: bool,
}

impl JsonOptions {
    /// Compact output in original key order (the default).
    pub fn new() -> Self {
        Self::default()
    }

    /// Two-space indented output, one property or element per line (like `serde_json`'s pretty
    /// printer). Default: compact.
    pub fn pretty(mut self, yes: bool) -> Self {
        self.pretty = yes;
        self
    }

    /// Properties in sorted (bytewise) key order instead of input order. Default: input order.
    pub fn sorted_keys(mut self, yes: bool) -> Self {
        self.sorted_keys = yes;
        self
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    if s.len() <= 16 {
        // Short (most keys and many values): tested and copied in one pass, where a scan
        // for the bytes to escape and then a copy cost twice the loop (profiled).
        for &b in s {
            if b == b'"' || b == b'\\' || b < 0x20 {
                write_escape(out, b);
            } else {
                out.push(b);
            }
        }
        out.push(b'"');
        return;
    }
    let mut i = 0;
    loop {
        let (j, _) = find_special(s, i);
        out.extend_from_slice(s.get(i..j).unwrap_or_default());
        let Some(&b) = s.get(j) else { break };
        write_escape(out, b);
        i = j + 1;
    }
    out.push(b'"');
}

/// Appends the escape of `b`, one of the bytes a JSON string cannot hold as they are.
fn write_escape(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0C => out.extend_from_slice(b"\\f"),
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xF)]);
        }
    }
}

fn newline(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    out.resize(out.len() + 2 * depth, b' ');
}

/// An open container while printing.
enum Open<'a> {
    Object(ObjectIter<'a>),
    Array(ArrayIter<'a>),
}

/// Appends `v` as JSON; `depth` is the indentation level of `v` for pretty output.
pub(crate) fn write_value(out: &mut Vec<u8>, v: Value<'_>, opts: &JsonOptions, depth: usize) {
    if opts.pretty {
        write_nested(out, v, opts, depth);
    } else {
        write_compact(out, v, opts.sorted_keys, COMPACT_LEVELS);
    }
}

/// Containers the compact writer opens by recursion before it hands what is below to the
/// iterative writer: bounds its stack use (a document may nest [`crate::MAX_DEPTH`] levels)
/// while nearly every document is written by the recursion alone.
const COMPACT_LEVELS: usize = 32;

/// Compact JSON of `v`, by recursion over its containers down to `levels` of them.
fn write_compact(out: &mut Vec<u8>, v: Value<'_>, sorted_keys: bool, levels: usize) {
    match v {
        Value::Object(o) => write_object(out, o, sorted_keys, levels),
        Value::Array(a) => write_array(out, a, sorted_keys, levels),
        scalar => write_scalar(out, scalar),
    }
}

/// Compact JSON of the value of type `tag` at `pos` of `doc` (`null` if it does not decode,
/// only in bytes wrongly promised valid, as the containers' iterators give it). Containers
/// are opened from their tag and scalars decoded straight into the arm that writes them
/// ([`Value::decode_with`]): the iterative writer moved every value through a 64-byte
/// [`Value`] (written field by field, read back whole) and an iterator on a heap stack, and
/// took 1.6x the time on 85-byte documents (`docs/notes/2026-12-02-index-rows.md`).
#[inline(always)]
fn write_at(
    out: &mut Vec<u8>,
    doc: DocRef<'_>,
    at: Option<(Tag, usize)>,
    sorted_keys: bool,
    levels: usize,
) {
    let written = match at {
        Some((Tag::Object, pos)) => {
            Object::at(doc, pos).map(|o| write_object(out, o, sorted_keys, levels))
        }
        Some((Tag::Array, pos)) => {
            Array::at(doc, pos).map(|a| write_array(out, a, sorted_keys, levels))
        }
        Some((tag, pos)) => Value::decode_with(doc, tag, pos, |v| write_scalar(out, v)),
        None => None,
    };
    if written.is_none() {
        out.extend_from_slice(b"null");
    }
}

/// A container below the compact writer's recursion, by the iterative writer.
fn write_deep(out: &mut Vec<u8>, v: Value<'_>, sorted_keys: bool) {
    write_nested(out, v, &JsonOptions::new().sorted_keys(sorted_keys), 0);
}

fn write_object(out: &mut Vec<u8>, o: Object<'_>, sorted_keys: bool, levels: usize) {
    let Some(below) = levels.checked_sub(1) else {
        return write_deep(out, Value::Object(o), sorted_keys);
    };
    out.push(b'{');
    let doc = o.doc_ref();
    let mut first = true;
    let mut property = |i: usize| {
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(out, o.key_at(i).as_bytes());
        out.push(b':');
        write_at(out, doc, o.value_pos(i), sorted_keys, below);
    };
    if sorted_keys {
        (0..o.len()).for_each(property);
    } else {
        o.each_in_input_order(&mut property);
    }
    out.push(b'}');
}

fn write_array(out: &mut Vec<u8>, a: Array<'_>, sorted_keys: bool, levels: usize) {
    let Some(below) = levels.checked_sub(1) else {
        return write_deep(out, Value::Array(a), sorted_keys);
    };
    out.push(b'[');
    let doc = a.doc_ref();
    for i in 0..a.len() {
        if i > 0 {
            out.push(b',');
        }
        write_at(out, doc, a.value_pos(i), sorted_keys, below);
    }
    out.push(b']');
}

/// Appends `v` as JSON; `depth` is the indentation level of `v` for pretty output. Iterative:
/// an explicit stack of open containers, so deep documents cannot overflow the thread's stack.
fn write_nested(out: &mut Vec<u8>, v: Value<'_>, opts: &JsonOptions, depth: usize) {
    let mut stack: Vec<(Open<'_>, bool)> = Vec::new();
    let mut next = Some(v);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::Object(o) => {
                    out.push(b'{');
                    let iter = if opts.sorted_keys {
                        o.iter()
                    } else {
                        o.iter_original()
                    };
                    stack.push((Open::Object(iter), true));
                }
                Value::Array(a) => {
                    out.push(b'[');
                    stack.push((Open::Array(a.iter()), true));
                }
                scalar => write_scalar(out, scalar),
            }
        }
        let level = depth + stack.len();
        let Some((open, first)) = stack.last_mut() else {
            return;
        };
        let item = match open {
            Open::Object(iter) => iter.next().map(|(key, item)| (Some(key), item)),
            Open::Array(iter) => iter.next().map(|item| (None, item)),
        };
        match item {
            Some((key, item)) => {
                if !*first {
                    out.push(b',');
                }
                if opts.pretty {
                    newline(out, level);
                }
                if let Some(key) = key {
                    write_str(out, key.as_bytes());
                    out.push(b':');
                    if opts.pretty {
                        out.push(b' ');
                    }
                }
                *first = false;
                next = Some(item);
            }
            None => {
                let was_empty = *first;
                let close = match open {
                    Open::Object(_) => b'}',
                    Open::Array(_) => b']',
                };
                stack.pop();
                if opts.pretty && !was_empty {
                    newline(out, level - 1);
                }
                out.push(close);
            }
        }
    }
}

// Always inlined: in the compact writer each arm of `Value::decode_with` then keeps only its
// own variant's code.
#[inline(always)]
fn write_scalar(out: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => {
            if i < 0 {
                out.push(b'-');
            }
            append(out, u64_digits(i.unsigned_abs(), &mut [0u8; 20]));
        }
        Value::UInt(u) => append(out, u64_digits(u, &mut [0u8; 20])),
        Value::Float(f) => out.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes()),
        Value::Decimal(t) => out.extend_from_slice(t.as_bytes()),
        Value::Scaled(d) => d.write_to(out),
        Value::String(s) => match s.as_borrowed() {
            Some(b) => write_str(out, b.as_bytes()),
            None => write_str(out, s.to_cow().as_bytes()),
        },
        // Containers are handled by `write_value`.
        Value::Object(_) | Value::Array(_) => {}
    }
}

/// JSON text of a value (its methods live here, beside the writer, so that the reader does
/// not depend on the writer).
impl Value<'_> {
    /// Compact JSON text of this value in original key order.
    pub fn to_json(&self) -> String {
        self.to_json_with(&JsonOptions::default())
    }

    /// JSON text of this value with the given options (pretty, sorted keys).
    pub fn to_json_with(&self, opts: &JsonOptions) -> String {
        let mut out = String::new();
        self.write_json_string(&mut out, opts);
        out
    }

    /// Appends the JSON text of this value to `out`: [`Value::write_json`] without
    /// checking again that the text is UTF-8 (it is by construction: that check was 3 % of
    /// an indexed query returning rows).
    pub fn write_json_string(&self, out: &mut String, opts: &JsonOptions) {
        /// Takes back what was appended if the writer unwinds (it can panic only on a
        /// capacity overflow), which might end inside a character.
        struct Appending<'s> {
            bytes: &'s mut Vec<u8>,
            start: usize,
            done: bool,
        }
        impl Drop for Appending<'_> {
            fn drop(&mut self) {
                if !self.done {
                    self.bytes.truncate(self.start);
                }
            }
        }
        // SAFETY: the writer appends ASCII (punctuation, escapes, the digits of numbers) and
        // the bytes of `str`s (names, strings, decimals' text), each whole, UTF-8 by the
        // type's own guarantee; an escape stands for an ASCII byte, never for a byte of a
        // multi-byte character. So what it appends is UTF-8 once it returns, and the guard
        // takes it back if it unwinds: `out` is UTF-8 whenever it can be seen again.
        let bytes = unsafe { out.as_mut_vec() };
        let start = bytes.len();
        let mut appending = Appending {
            bytes,
            start,
            done: false,
        };
        write_value(appending.bytes, *self, opts, 0);
        debug_assert!(
            std::str::from_utf8(appending.bytes.get(start..).unwrap_or_default()).is_ok()
        );
        appending.done = true;
    }

    /// Appends the JSON text of this value to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>, opts: &JsonOptions) {
        write_value(out, *self, opts, 0);
    }
}

/// JSON text of a document.
impl<B: AsRef<[u8]>> Document<B> {
    /// Compact JSON in original key order.
    pub fn to_json(&self) -> String {
        self.to_json_with(&JsonOptions::default())
    }

    /// JSON text with the given options.
    pub fn to_json_with(&self, opts: &JsonOptions) -> String {
        self.root().to_json_with(opts)
    }

    /// Appends JSON text to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>, opts: &JsonOptions) {
        self.root().write_json(out, opts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_escapes() {
        for v in [0i64, 7, -7, 10, i64::MIN, i64::MAX, -100] {
            let mut out = Vec::new();
            let doc = crate::from_json(v.to_string().as_bytes()).unwrap();
            write_value(
                &mut out,
                crate::Document::new(doc).unwrap().root(),
                &JsonOptions::new(),
                0,
            );
            assert_eq!(out, v.to_string().as_bytes());
        }
        assert_eq!(
            u64_digits(u64::MAX, &mut [0; 20]),
            u64::MAX.to_string().as_bytes()
        );
        for n in [
            0u64, 9, 10, 99, 100, 101, 999, 1000, 12345, 100000, 9999999999,
        ] {
            assert_eq!(u64_digits(n, &mut [0; 20]), n.to_string().as_bytes());
        }
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}\u{7f}é/".as_bytes());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}é/\""
        );
    }

    /// The compact writer (recursion down to `COMPACT_LEVELS`, then the iterative writer)
    /// writes the bytes the iterative writer does, in both key orders.
    #[test]
    fn compact_writes_what_the_iterative_writer_does() {
        let many: Vec<String> = (0..40).rev().map(|i| format!("\"k{i}\": {i}")).collect();
        let deep = |n: usize| format!("{}1{}", "[{\"a\":".repeat(n), "}]".repeat(n));
        let docs = [
            r#"{"b": 1, "a": [2, 2.50, -0.001, 1e300, "x"], "c": {"z": null, "y": true}}"#
                .to_owned(),
            // Input order by key id, then an explicit order (the inner keys' ids are "a" < "b").
            r#"{"x": {"a": 1, "b": 2}, "y": {"b": 1, "a": 2}, "": {}, "e": []}"#.to_owned(),
            format!("{{{}}}", many.join(",")),
            r#"["short\"", "exactly sixteen!", "seventeen bytes..", "\u0001\t\n", "é ü"]"#
                .to_owned(),
            format!("[\"{}\\\\{}\"]", "long ".repeat(10), "é".repeat(20)),
            deep(COMPACT_LEVELS / 2 - 1),
            deep(COMPACT_LEVELS / 2),
            deep(COMPACT_LEVELS / 2 + 1),
            deep(60), // 120 levels, near the default limit of 128
            "18446744073709551615".to_owned(),
        ];
        for json in &docs {
            let bytes = crate::from_json(json.as_bytes()).unwrap();
            let doc = crate::Document::new(bytes.as_slice()).unwrap();
            for sorted in [false, true] {
                let opts = JsonOptions::new().sorted_keys(sorted);
                let (mut compact, mut nested) = (Vec::new(), Vec::new());
                write_value(&mut compact, doc.root(), &opts, 0);
                write_nested(&mut nested, doc.root(), &opts, 0);
                assert_eq!(
                    String::from_utf8(compact).unwrap(),
                    String::from_utf8(nested).unwrap(),
                    "{json}, sorted keys {sorted}"
                );
            }
        }
    }

    /// `Value::write_json_string` appends what `write_json` writes, whatever precedes it in
    /// the string, for text with escapes, multi-byte characters and every kind of value.
    #[test]
    fn json_appended_to_a_string_is_the_bytes_written() {
        let docs = [
            r#"{"a":"x\"y\\z\n\u0001","é":["ü€😀",1.5e300,-0,12345678901234567890123],"n":null}"#,
            r#"["short","a string longer than sixteen bytes with \t and \u001f and 日本語",true]"#,
            r#"{"deep":{"deeper":[[[{"k":"v"}]]]},"big":1e400,"dec":0.10}"#,
            r#""just text""#,
        ];
        for json in docs {
            let bytes = crate::from_json(json.as_bytes()).unwrap();
            let doc = crate::Document::new(&bytes[..]).unwrap();
            for opts in [
                JsonOptions::new(),
                JsonOptions::new().pretty(true).sorted_keys(true),
            ] {
                let mut want = Vec::new();
                doc.root().write_json(&mut want, &opts);
                let mut out = String::from("é:");
                doc.root().write_json_string(&mut out, &opts);
                assert_eq!(
                    out.as_bytes(),
                    [&b"\xc3\xa9:"[..], &want].concat(),
                    "{json}"
                );
                assert_eq!(doc.root().to_json_with(&opts).as_bytes(), want.as_slice());
            }
        }
    }
}
