//! Map keys: strings as they are, chars, integers, finite floats and bools as their text.

use ::serde::ser::{self, Impossible, Serialize};

use super::text::{key_error, with_f32_text, with_text};
use crate::error::{Error, Result};
use crate::writer::DocumentWriter;

/// Writes a map key: strings as they are; chars, integers, finite floats and bools as their
/// text, like `serde_json`; anything else is an error.
pub(super) struct KeySerializer<'a> {
    pub(super) writer: &'a mut DocumentWriter,
}

impl KeySerializer<'_> {
    fn display(self, value: impl std::fmt::Display) -> Result<()> {
        with_text(value, |t| self.writer.key(t))
    }
}

impl ser::Serializer for KeySerializer<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.writer.key(if v { "true" } else { "false" })
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        self.display(v)
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        self.display(v)
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        self.display(v)
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        self.display(v)
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        self.display(v)
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        self.display(v)
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        self.display(v)
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        self.display(v)
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        self.display(v)
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        self.display(v)
    }

    fn serialize_f32(self, v: f32) -> Result<()> {
        with_f32_text(v, |t| self.writer.key(t))
    }

    fn serialize_f64(self, v: f64) -> Result<()> {
        if !v.is_finite() {
            return Err(Error::NonFiniteFloat { value: v });
        }
        self.writer.key(ryu::Buffer::new().format_finite(v))
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.writer.key(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.writer.key(v)
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<()> {
        Err(key_error("bytes"))
    }

    fn serialize_none(self) -> Result<()> {
        Err(key_error("None"))
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        Err(key_error("()"))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<()> {
        Err(key_error(&format!("unit struct {name}")))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.writer.key(variant)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(key_error(&format!("newtype variant {name}::{variant}")))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_error("a sequence"))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(key_error("a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_error(&format!("tuple struct {name}")))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_error(&format!("tuple variant {name}::{variant}")))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_error("a map"))
    }

    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(key_error(&format!("struct {name}")))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_error(&format!("struct variant {name}::{variant}")))
    }

    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result<()> {
        self.writer.key(&value.to_string())
    }
}
