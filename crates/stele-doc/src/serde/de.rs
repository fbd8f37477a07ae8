//! `serde::Deserializer` reading straight from the zero-copy reader: strings stored plain are
//! lent to the visitor (`visit_borrowed_str`), so `&'de str` fields borrow from the document.

use std::borrow::Cow;

use ::serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use ::serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use ::serde::forward_to_deserialize_any;

use crate::error::{Error, Result};
use crate::reader::{ArrayIter, ObjectIter, Str, Value};

/// A `serde::Deserializer` over one [`Value`] of a document.
///
/// Most callers want [`crate::from_document`] or [`crate::from_value`]; `Value` also implements
/// [`IntoDeserializer`].
#[derive(Debug, Clone, Copy)]
pub struct Deserializer<'de> {
    value: Value<'de>,
}

impl<'de> Deserializer<'de> {
    /// A deserializer reading `value`.
    pub fn new(value: Value<'de>) -> Self {
        Deserializer { value }
    }
}

impl<'de> IntoDeserializer<'de, Error> for Value<'de> {
    type Deserializer = Deserializer<'de>;

    fn into_deserializer(self) -> Deserializer<'de> {
        Deserializer::new(self)
    }
}

/// How `value` is named in "invalid type" errors.
fn unexpected<'a>(value: &'a Value<'_>) -> Unexpected<'a> {
    match *value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(b),
        Value::Int(i) => Unexpected::Signed(i),
        Value::UInt(u) => Unexpected::Unsigned(u),
        Value::Float(f) => Unexpected::Float(f),
        Value::Scaled(d) => Unexpected::Float(d.to_f64()),
        Value::Decimal(_) => Unexpected::Other("number"),
        Value::String(s) => match s.as_borrowed() {
            Some(s) => Unexpected::Str(s),
            None => Unexpected::Other("string"),
        },
        Value::Object(_) => Unexpected::Map,
        Value::Array(_) => Unexpected::Seq,
    }
}

/// A decimal text as a number the visitor knows: `i64`, else `u64`, else the nearest `f64`.
fn visit_decimal<'de, V: Visitor<'de>>(text: &str, visitor: V) -> Result<V::Value> {
    if let Ok(i) = text.parse::<i64>() {
        visitor.visit_i64(i)
    } else if let Ok(u) = text.parse::<u64>() {
        visitor.visit_u64(u)
    } else {
        visitor.visit_f64(decimal_f64(text)?)
    }
}

/// The nearest `f64` to a decimal text; an error if it is beyond the range of `f64`.
fn decimal_f64(text: &str) -> Result<f64> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(f),
        _ => Err(Error::Serde(format!(
            "number {text} is beyond the range of f64; deserialize it as a string or \
             serde_json::Number (arbitrary_precision) from the document's JSON"
        ))),
    }
}

fn visit_str<'de, V: Visitor<'de>>(s: Str<'de>, visitor: V) -> Result<V::Value> {
    match s.to_cow() {
        Cow::Borrowed(b) => visitor.visit_borrowed_str(b),
        Cow::Owned(o) => visitor.visit_string(o),
    }
}

fn visit_array<'de, V: Visitor<'de>>(iter: ArrayIter<'de>, visitor: V) -> Result<V::Value> {
    let total = iter.len();
    let mut access = SeqAccess { iter };
    let out = visitor.visit_seq(&mut access)?;
    if access.iter.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(total, &"fewer elements in array"))
    }
}

fn visit_object<'de, V: Visitor<'de>>(iter: ObjectIter<'de>, visitor: V) -> Result<V::Value> {
    let total = iter.len();
    let mut access = MapAccess { iter, value: None };
    let out = visitor.visit_map(&mut access)?;
    if access.iter.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(total, &"fewer elements in map"))
    }
}

impl<'de> de::Deserializer<'de> for Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Int(i) => visitor.visit_i64(i),
            Value::UInt(u) => visitor.visit_u64(u),
            Value::Float(f) => visitor.visit_f64(f),
            Value::Scaled(d) => visitor.visit_f64(d.to_f64()),
            Value::Decimal(t) => visit_decimal(t, visitor),
            Value::String(s) => visit_str(s, visitor),
            Value::Array(a) => visit_array(a.iter(), visitor),
            Value::Object(o) => visit_object(o.iter_original(), visitor),
        }
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Decimal(t) => match t.parse::<i128>() {
                Ok(i) => visitor.visit_i128(i),
                Err(_) => visit_decimal(t, visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Decimal(t) => match t.parse::<u128>() {
                Ok(u) => visitor.visit_u128(u),
                Err(_) => visit_decimal(t, visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_f64(visitor)
    }

    /// Decimal texts go straight to the nearest `f64` (so `-0` stays negative zero).
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Decimal(t) => visitor.visit_f64(decimal_f64(t)?),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::String(s) => match s.to_cow() {
                Cow::Borrowed(b) => visitor.visit_borrowed_bytes(b.as_bytes()),
                Cow::Owned(o) => visitor.visit_byte_buf(o.into_bytes()),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.value {
            Value::String(s) => visitor.visit_enum(EnumAccess {
                variant: s.to_cow(),
                value: None,
            }),
            Value::Object(o) => {
                let mut iter = o.iter_original();
                match (iter.next(), iter.next()) {
                    (Some((name, value)), None) => visitor.visit_enum(EnumAccess {
                        variant: Cow::Borrowed(name),
                        value: Some(value),
                    }),
                    _ => Err(de::Error::invalid_value(
                        Unexpected::Map,
                        &"map with a single key",
                    )),
                }
            }
            other => Err(de::Error::invalid_type(
                unexpected(&other),
                &"string or map",
            )),
        }
    }

    /// Skips the value without looking inside it.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        true
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 char str string unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// Elements of an array.
struct SeqAccess<'de> {
    iter: ArrayIter<'de>,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.iter.next() {
            Some(v) => seed.deserialize(Deserializer::new(v)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// Properties of an object, in their original order.
struct MapAccess<'de> {
    iter: ObjectIter<'de>,
    value: Option<Value<'de>>,
}

impl<'de> de::MapAccess<'de> for MapAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        match self.iter.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(KeyDeserializer { key }).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        match self.value.take() {
            Some(v) => seed.deserialize(Deserializer::new(v)),
            None => Err(Error::Serde(
                "MapAccess::next_value called before next_key".to_owned(),
            )),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// A property name (always stored plain, so always borrowed). Like `serde_json`, numeric and
/// bool targets parse the name, so `BTreeMap<u32, _>` and `HashMap<bool, _>` read back.
struct KeyDeserializer<'de> {
    key: &'de str,
}

impl KeyDeserializer<'_> {
    fn parse<T: std::str::FromStr>(&self, what: &'static str) -> Result<T> {
        self.key
            .parse()
            .map_err(|_| de::Error::invalid_value(Unexpected::Str(self.key), &what))
    }
}

impl<'de> de::Deserializer<'de> for KeyDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.key)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.key {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(de::Error::invalid_type(Unexpected::Str(self.key), &visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_i64(self.parse("an integer key")?)
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_i128(self.parse("an integer key")?)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_u64(self.parse("a non-negative integer key")?)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_u128(self.parse("a non-negative integer key")?)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_f64(self.parse("a number key")?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // Keys are never null.
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(EnumAccess {
            variant: Cow::Borrowed(self.key),
            value: None,
        })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        true
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier
    }
}

/// An externally tagged enum: a variant name, and its content unless it is a unit variant
/// written as a plain string.
struct EnumAccess<'de> {
    variant: Cow<'de, str>,
    value: Option<Value<'de>>,
}

impl<'de> de::EnumAccess<'de> for EnumAccess<'de> {
    type Error = Error;
    type Variant = VariantAccess<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantAccess<'de>)> {
        let variant = match self.variant {
            Cow::Borrowed(name) => seed.deserialize(BorrowedStrDeserializer::<Error>::new(name)),
            Cow::Owned(name) => seed.deserialize(StringDeserializer::<Error>::new(name)),
        }?;
        Ok((variant, VariantAccess { value: self.value }))
    }
}

/// The content of a variant.
struct VariantAccess<'de> {
    value: Option<Value<'de>>,
}

impl<'de> de::VariantAccess<'de> for VariantAccess<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<()> {
        match self.value {
            Some(v) => de::Deserialize::deserialize(Deserializer::new(v)),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        match self.value {
            Some(v) => seed.deserialize(Deserializer::new(v)),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        match self.value {
            Some(v) => de::Deserializer::deserialize_seq(Deserializer::new(v), visitor),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.value {
            Some(v) => de::Deserializer::deserialize_any(Deserializer::new(v), visitor),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}
