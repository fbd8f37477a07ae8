//! Values read in place.

use std::borrow::Cow;

use super::DocRef;
use super::scalars::{ScaledDecimal, Str};
use super::types::{Array, Object, Value};
use crate::format::{Tag, get_uint, get_varint};

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
