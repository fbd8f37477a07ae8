//! The number text inside the struct `serde_json::Number` serializes itself as.

use ::serde::ser::{self, Impossible, Serialize};

use super::text::number_error;
use crate::error::{Error, Result};
use crate::writer::DocumentWriter;

/// Accepts only the text of a `serde_json::Number` and writes it as a number.
pub(super) struct NumberTextSerializer<'a> {
    pub(super) writer: &'a mut DocumentWriter,
}

impl ser::Serializer for NumberTextSerializer<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<()> {
        self.writer.number_text(v)
    }

    fn serialize_bool(self, _v: bool) -> Result<()> {
        Err(number_error())
    }

    fn serialize_i64(self, _v: i64) -> Result<()> {
        Err(number_error())
    }

    fn serialize_u64(self, _v: u64) -> Result<()> {
        Err(number_error())
    }

    fn serialize_f64(self, _v: f64) -> Result<()> {
        Err(number_error())
    }

    fn serialize_char(self, _v: char) -> Result<()> {
        Err(number_error())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<()> {
        Err(number_error())
    }

    fn serialize_none(self) -> Result<()> {
        Err(number_error())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _value: &T) -> Result<()> {
        Err(number_error())
    }

    fn serialize_unit(self) -> Result<()> {
        Err(number_error())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        Err(number_error())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<()> {
        Err(number_error())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(number_error())
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(number_error())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(number_error())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(number_error())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(number_error())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(number_error())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(number_error())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(number_error())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(number_error())
    }

    fn serialize_i8(self, _v: i8) -> Result<()> {
        Err(number_error())
    }

    fn serialize_i16(self, _v: i16) -> Result<()> {
        Err(number_error())
    }

    fn serialize_i32(self, _v: i32) -> Result<()> {
        Err(number_error())
    }

    fn serialize_u8(self, _v: u8) -> Result<()> {
        Err(number_error())
    }

    fn serialize_u16(self, _v: u16) -> Result<()> {
        Err(number_error())
    }

    fn serialize_u32(self, _v: u32) -> Result<()> {
        Err(number_error())
    }

    fn serialize_f32(self, _v: f32) -> Result<()> {
        Err(number_error())
    }
}
