//! Values read in place.

use std::borrow::Cow;

use super::DocRef;
use super::array::Array;
use super::container::Object;
use crate::format::{Tag, get_uint, get_varint};

/// A string stored in a document: borrowed as is, or LZ4-compressed.
#[derive(Clone, Copy)]
pub struct Str<'a> {
    /// The UTF-8 bytes, or the LZ4 block when `raw_len` is set.
    bytes: &'a [u8],
    /// Length after decompression; `None` for a plain string.
    raw_len: Option<usize>,
}

impl std::fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.to_cow(), f)
    }
}

impl<'a> Str<'a> {
    /// Length in bytes of the (decompressed) string.
    pub fn len(&self) -> usize {
        self.raw_len.unwrap_or(self.bytes.len())
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the string is stored compressed (reading it allocates).
    pub fn is_compressed(&self) -> bool {
        self.raw_len.is_some()
    }

    /// Bytes the string takes in the document, without its length prefix.
    pub fn stored_len(&self) -> usize {
        self.bytes.len()
    }

    /// The string without copying, if it is stored uncompressed.
    pub fn as_borrowed(&self) -> Option<&'a str> {
        match self.raw_len {
            // SAFETY: documents are validated (or promised valid by the caller of
            // `Document::new_unchecked`), and validation checked this string is UTF-8.
            None => Some(unsafe { std::str::from_utf8_unchecked(self.bytes) }),
            Some(_) => None,
        }
    }

    /// The string: borrowed when stored plain, decompressed otherwise.
    pub fn to_cow(&self) -> Cow<'a, str> {
        match self.as_borrowed() {
            Some(s) => Cow::Borrowed(s),
            None => {
                let mut out = Vec::new();
                self.append_to(&mut out);
                // SAFETY: validation decompressed this string and checked it is UTF-8.
                Cow::Owned(unsafe { String::from_utf8_unchecked(out) })
            }
        }
    }

    /// Appends the string's UTF-8 bytes to `out` (decompressing if needed).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        match self.raw_len {
            None => out.extend_from_slice(self.bytes),
            Some(raw_len) => {
                let start = out.len();
                out.resize(start + raw_len, 0);
                let ok = out.get_mut(start..).is_some_and(|dst| {
                    matches!(lz4_flex::block::decompress_into(self.bytes, dst), Ok(n) if n == raw_len)
                });
                if !ok {
                    // Only reachable for invalid documents read through the unchecked path.
                    out.truncate(start);
                }
            }
        }
    }

    /// Compares with `other` without allocating when stored plain.
    pub fn eq_str(&self, other: &str) -> bool {
        match self.as_borrowed() {
            Some(s) => s == other,
            None => self.len() == other.len() && self.to_cow() == other,
        }
    }
}

/// A decimal fraction stored scaled: `mantissa / 10^scale`, with its sign. Prints back exactly
/// as written (`10.50` stays `10.50`, `-0.0` stays `-0.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScaledDecimal {
    negative: bool,
    mantissa: u64,
    scale: u8,
}

impl ScaledDecimal {
    /// Whether a minus sign was written (also for zero).
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// All digits as one integer: 1050 for `10.50`.
    pub fn mantissa(&self) -> u64 {
        self.mantissa
    }

    /// Number of fraction digits: 2 for `10.50`.
    pub fn scale(&self) -> u8 {
        self.scale
    }

    /// The nearest `f64` (correctly rounded).
    pub fn to_f64(&self) -> f64 {
        crate::writer::number::scaled_to_f64(self.negative, self.mantissa, self.scale)
    }

    /// Appends the exact text.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        crate::writer::number::write_scaled(out, self.negative, self.mantissa, self.scale);
    }
}

impl std::fmt::Display for ScaledDecimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = Vec::with_capacity(24);
        self.write_to(&mut out);
        f.write_str(std::str::from_utf8(&out).map_err(|_| std::fmt::Error)?)
    }
}

/// One value of a document.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Value<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer in `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    /// A float whose shortest round-trip text is the text it was written from.
    Float(f64),
    /// A number kept as its exact JSON text (exponent forms such as `1E5`, `-0`, more digits than
    /// a `u64` holds).
    Decimal(&'a str),
    /// A fraction without exponent, kept exactly as digits and scale (`12.50`).
    Scaled(ScaledDecimal),
    /// A string.
    String(Str<'a>),
    /// An object.
    Object(Object<'a>),
    /// An array.
    Array(Array<'a>),
}

impl<'a> Value<'a> {
    /// Decodes the value of type `tag` whose payload is at `pos`.
    #[inline(always)]
    pub(crate) fn decode(doc: DocRef<'a>, tag: Tag, pos: usize) -> Option<Value<'a>> {
        Self::decode_with(doc, tag, pos, |v| v)
    }

    /// Decodes the value of type `tag` whose payload is at `pos` and hands it to `f`.
    // Each arm calls `f` with its own variant, so once inlined the caller's `match` on the value
    // folds away per arm. Returning the value instead joins the arms into one 64-byte `Value` in
    // memory, written field by field and read back whole: a store-forwarding stall on every
    // field read (most of a 3-field read, profiled). Always inlined for the same reason.
    #[inline(always)]
    pub(crate) fn decode_with<R>(
        doc: DocRef<'a>,
        tag: Tag,
        pos: usize,
        f: impl FnOnce(Value<'a>) -> R,
    ) -> Option<R> {
        let b = doc.bytes;
        Some(match tag {
            Tag::Null => f(Value::Null),
            Tag::False => f(Value::Bool(false)),
            Tag::True => f(Value::Bool(true)),
            Tag::I8 => f(Value::Int(i64::from(*b.get(pos)? as i8))),
            Tag::I16 => f(Value::Int(i64::from(get_uint(b, pos, 2)? as u16 as i16))),
            Tag::I32 => f(Value::Int(i64::from(get_uint(b, pos, 4)? as u32 as i32))),
            Tag::I64 => f(Value::Int(get_uint(b, pos, 8)? as i64)),
            Tag::U64 => f(Value::UInt(get_uint(b, pos, 8)?)),
            Tag::F64 => f(Value::Float(f64::from_bits(get_uint(b, pos, 8)?))),
            Tag::Scaled => {
                let head = *b.get(pos)?;
                let (mantissa, _) = get_varint(b, pos + 1)?;
                f(Value::Scaled(ScaledDecimal {
                    negative: head & 0x80 != 0,
                    mantissa,
                    scale: head & 0x7F,
                }))
            }
            Tag::Decimal => {
                let (len, used) = get_varint(b, pos)?;
                let text = b.get(pos + used..(pos + used).checked_add(len as usize)?)?;
                // SAFETY: validation checked the text is a JSON number, hence ASCII.
                f(Value::Decimal(unsafe {
                    std::str::from_utf8_unchecked(text)
                }))
            }
            Tag::String => {
                let (len, used) = get_varint(b, pos)?;
                let bytes = b.get(pos + used..(pos + used).checked_add(len as usize)?)?;
                f(Value::String(Str {
                    bytes,
                    raw_len: None,
                }))
            }
            Tag::StringLz4 => {
                let (raw_len, used1) = get_varint(b, pos)?;
                let (len, used2) = get_varint(b, pos + used1)?;
                let start = pos + used1 + used2;
                let bytes = b.get(start..start.checked_add(len as usize)?)?;
                f(Value::String(Str {
                    bytes,
                    raw_len: Some(usize::try_from(raw_len).ok()?),
                }))
            }
            Tag::Object => f(Value::Object(Object::at(doc, pos)?)),
            Tag::Array => f(Value::Array(Array::at(doc, pos)?)),
        })
    }

    /// `true` for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The bool, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The integer, if this is one that fits `i64` (also a decimal text that is an integer).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(v) => Some(v),
            Value::UInt(v) => i64::try_from(v).ok(),
            Value::Decimal(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// The integer, if this is one that fits `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(v) => u64::try_from(v).ok(),
            Value::UInt(v) => Some(v),
            Value::Decimal(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// Any number as the nearest `f64` (decimals beyond `f64`'s range become infinite).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::UInt(v) => Some(v as f64),
            Value::Float(v) => Some(v),
            Value::Scaled(d) => Some(d.to_f64()),
            Value::Decimal(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// The string (borrowed unless stored compressed), if this is one.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        match self {
            Value::String(s) => Some(s.to_cow()),
            _ => None,
        }
    }

    /// The stored string, if this is one.
    pub fn as_string(&self) -> Option<Str<'a>> {
        match *self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The object, if this is one.
    #[inline]
    pub fn as_object(&self) -> Option<Object<'a>> {
        match *self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, if this is one.
    pub fn as_array(&self) -> Option<Array<'a>> {
        match *self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Property `key` of an object; `None` for other values.
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        self.as_object()?.get(key)
    }

    /// Element `index` of an array; `None` for other values.
    pub fn index(&self, index: usize) -> Option<Value<'a>> {
        self.as_array()?.get(index)
    }

    /// The JSON type name: `null`, `bool`, `number`, `string`, `object` or `array`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_)
            | Value::UInt(_)
            | Value::Float(_)
            | Value::Decimal(_)
            | Value::Scaled(_) => "number",
            Value::String(_) => "string",
            Value::Object(_) => "object",
            Value::Array(_) => "array",
        }
    }
}
