//! Documents to JSON text: compact or pretty, original or sorted key order.
//!
//! Escaping matches `serde_json` (and so most JSON writers): `"` and `\` escaped, control
//! characters as `\n`-style or `\u00XX`, everything else (including non-ASCII) written as UTF-8.
//! With this, a minified input in that canonical form comes back byte for byte.

use crate::format::u64_digits;
use crate::reader::{ArrayIter, ObjectIter, Value};
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
    out.push(b'"');
    let mut i = 0;
    loop {
        let (j, _) = find_special(s, i);
        out.extend_from_slice(s.get(i..j).unwrap_or_default());
        let Some(&b) = s.get(j) else { break };
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
        i = j + 1;
    }
    out.push(b'"');
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

/// Appends `v` as JSON; `depth` is the indentation level of `v` for pretty output. Iterative:
/// an explicit stack of open containers, so deep documents cannot overflow the thread's stack.
pub(crate) fn write_value(out: &mut Vec<u8>, v: Value<'_>, opts: &JsonOptions, depth: usize) {
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

fn write_scalar(out: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => {
            if i < 0 {
                out.push(b'-');
            }
            out.extend_from_slice(u64_digits(i.unsigned_abs(), &mut [0u8; 20]));
        }
        Value::UInt(u) => out.extend_from_slice(u64_digits(u, &mut [0u8; 20])),
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
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}\u{7f}é/".as_bytes());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}é/\""
        );
    }
}
