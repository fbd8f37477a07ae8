//! A human view of a document's layout: where its bytes go (`stele inspect`).

use std::fmt;

use crate::format::MIN_DOCUMENT_BYTES;
use crate::reader::{Document, Value};

/// Byte accounting of one document, by part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layout {
    /// Whole document.
    pub total_bytes: usize,
    /// Header byte and trailer.
    pub framing_bytes: usize,
    /// Names area: each distinct property name once.
    pub names_bytes: usize,
    /// Distinct property names.
    pub names: usize,
    /// Objects, their properties, and their header bytes (index, offsets, tags, order).
    pub objects: usize,
    /// Properties of all objects.
    pub properties: usize,
    /// Header bytes of all objects.
    pub object_header_bytes: usize,
    /// Objects that store an input order different from the sorted order.
    pub objects_with_order: usize,
    /// Arrays, their elements, and their header bytes.
    pub arrays: usize,
    /// Elements of all arrays.
    pub elements: usize,
    /// Header bytes of all arrays.
    pub array_header_bytes: usize,
    /// Containers by offset width: 1, 2, 4 and 8 bytes.
    pub offset_widths: [usize; 4],
    /// Strings stored plain, and their bytes (with length prefix).
    pub strings: usize,
    /// Bytes of plain strings, with their length prefixes.
    pub string_bytes: usize,
    /// Strings stored LZ4-compressed.
    pub compressed_strings: usize,
    /// Bytes those compressed strings take (with prefixes), and their length uncompressed.
    pub compressed_string_bytes: usize,
    /// Uncompressed length of the compressed strings.
    pub compressed_string_raw_bytes: usize,
    /// Numbers (integers, floats, decimals) and the payload bytes they take.
    pub numbers: usize,
    /// Payload bytes of numbers.
    pub number_bytes: usize,
    /// Deepest nesting of containers.
    pub max_depth: usize,
}

/// Walks a validated document and accounts for its bytes.
pub fn inspect<B: AsRef<[u8]>>(doc: &Document<B>) -> Layout {
    let mut l = Layout {
        total_bytes: doc.as_bytes().len(),
        names_bytes: doc.names_bytes(),
        ..Layout::default()
    };
    let mut names = std::collections::BTreeSet::new();
    walk(&mut l, &mut names, doc.root(), 0);
    l.names = names.len();
    // Header byte + trailer = everything not in the body's values, headers or names.
    l.framing_bytes = doc.as_bytes().len()
        - doc.names_bytes()
        - (l.object_header_bytes
            + l.array_header_bytes
            + l.string_bytes
            + l.compressed_string_bytes
            + l.number_bytes)
            .min(doc.as_bytes().len().saturating_sub(MIN_DOCUMENT_BYTES));
    l
}

fn walk<'a>(
    l: &mut Layout,
    names: &mut std::collections::BTreeSet<&'a str>,
    v: Value<'a>,
    depth: usize,
) {
    match v {
        Value::Null | Value::Bool(_) => {}
        Value::Int(i) => {
            l.numbers += 1;
            l.number_bytes += match i {
                -128..=127 => 1,
                -32_768..=32_767 => 2,
                -2_147_483_648..=2_147_483_647 => 4,
                _ => 8,
            };
        }
        Value::UInt(_) | Value::Float(_) => {
            l.numbers += 1;
            l.number_bytes += 8;
        }
        Value::Scaled(d) => {
            l.numbers += 1;
            l.number_bytes += 1 + crate::format::varint_len(d.mantissa());
        }
        Value::Decimal(t) => {
            l.numbers += 1;
            l.number_bytes += t.len() + varint_len(t.len());
        }
        Value::String(s) => {
            if s.is_compressed() {
                l.compressed_strings += 1;
                l.compressed_string_bytes +=
                    s.stored_len() + varint_len(s.stored_len()) + varint_len(s.len());
                l.compressed_string_raw_bytes += s.len();
            } else {
                l.strings += 1;
                l.string_bytes += s.len() + varint_len(s.len());
            }
        }
        Value::Object(o) => {
            l.objects += 1;
            l.properties += o.len();
            l.object_header_bytes += o.header_len();
            l.objects_with_order += usize::from(o.has_original_order());
            l.max_depth = l.max_depth.max(depth + 1);
            let (_, wo, _) = o.widths();
            bump_width(l, wo);
            for (k, item) in o.iter() {
                names.insert(k);
                walk(l, names, item, depth + 1);
            }
        }
        Value::Array(a) => {
            l.arrays += 1;
            l.elements += a.len();
            l.array_header_bytes += a.header_len();
            l.max_depth = l.max_depth.max(depth + 1);
            bump_width(l, a.offset_width());
            for item in a.iter() {
                walk(l, names, item, depth + 1);
            }
        }
    }
}

fn bump_width(l: &mut Layout, width: usize) {
    let slot = match width {
        1 => 0,
        2 => 1,
        4 => 2,
        _ => 3,
    };
    if let Some(c) = l.offset_widths.get_mut(slot) {
        *c += 1;
    }
}

fn varint_len(v: usize) -> usize {
    crate::format::varint_len(v as u64)
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |part: usize| 100.0 * part as f64 / self.total_bytes.max(1) as f64;
        writeln!(f, "document            {:>10} bytes", self.total_bytes)?;
        writeln!(
            f,
            "  names area        {:>10} bytes {:>5.1}%  ({} distinct names)",
            self.names_bytes,
            pct(self.names_bytes),
            self.names
        )?;
        writeln!(
            f,
            "  object headers    {:>10} bytes {:>5.1}%  ({} objects, {} properties, {} keep input order)",
            self.object_header_bytes,
            pct(self.object_header_bytes),
            self.objects,
            self.properties,
            self.objects_with_order
        )?;
        writeln!(
            f,
            "  array headers     {:>10} bytes {:>5.1}%  ({} arrays, {} elements)",
            self.array_header_bytes,
            pct(self.array_header_bytes),
            self.arrays,
            self.elements
        )?;
        writeln!(
            f,
            "  strings           {:>10} bytes {:>5.1}%  ({} plain)",
            self.string_bytes,
            pct(self.string_bytes),
            self.strings
        )?;
        writeln!(
            f,
            "  compressed strings{:>10} bytes {:>5.1}%  ({} strings, {} bytes uncompressed)",
            self.compressed_string_bytes,
            pct(self.compressed_string_bytes),
            self.compressed_strings,
            self.compressed_string_raw_bytes
        )?;
        writeln!(
            f,
            "  numbers           {:>10} bytes {:>5.1}%  ({} numbers)",
            self.number_bytes,
            pct(self.number_bytes),
            self.numbers
        )?;
        writeln!(
            f,
            "  header + trailer  {:>10} bytes {:>5.1}%",
            self.framing_bytes,
            pct(self.framing_bytes)
        )?;
        let [w1, w2, w4, w8] = self.offset_widths;
        writeln!(
            f,
            "containers by offset width: 1 byte {w1}, 2 bytes {w2}, 4 bytes {w4}, 8 bytes {w8}"
        )?;
        write!(f, "max depth {}", self.max_depth)
    }
}
