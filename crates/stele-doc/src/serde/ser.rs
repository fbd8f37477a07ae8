//! `serde::Serializer` writing straight into a [`DocumentWriter`]: no JSON text, no tree.

use std::fmt::Write as _;

use ::serde::ser::{self, Impossible, Serialize};

use crate::error::{Error, Result};
use crate::writer::DocumentWriter;

/// The struct name under which `serde_json::Number` serializes itself when `serde_json` has its
/// `arbitrary_precision` feature: a struct with one field of that name holding the number text.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A `serde::Serializer` that feeds one value into a [`DocumentWriter`].
///
/// Most callers want [`crate::to_document`]. Use this type directly to serialize several values
/// into one document (for example as elements of an array you opened with
/// [`DocumentWriter::begin_array`]). After an error the writer holds a partial document: call
/// [`DocumentWriter::reset`] before reusing it.
#[derive(Debug)]
pub struct Serializer<'w> {
    writer: &'w mut DocumentWriter,
}

impl<'w> Serializer<'w> {
    /// A serializer writing the next value of `writer`.
    pub fn new(writer: &'w mut DocumentWriter) -> Self {
        Serializer { writer }
    }
}

/// Formats small values (integers, floats, chars) on the stack.
struct StackText {
    buf: [u8; 48],
    len: usize,
}

impl StackText {
    fn new() -> Self {
        StackText {
            buf: [0; 48],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Calls `f` with the decimal text of `value` (an integer: at most 40 bytes).
fn with_text<R>(value: impl std::fmt::Display, f: impl FnOnce(&str) -> Result<R>) -> Result<R> {
    let mut text = StackText::new();
    match write!(text, "{value}") {
        // Only ASCII digits and '-' were written, so this is UTF-8.
        Ok(()) => f(std::str::from_utf8(text.as_bytes()).unwrap_or_default()),
        Err(_) => f(&value.to_string()),
    }
}

/// Shortest round-trip text of a finite `f32` (as `serde_json` prints it) given to `f`.
fn with_f32_text<R>(value: f32, f: impl FnOnce(&str) -> Result<R>) -> Result<R> {
    if !value.is_finite() {
        return Err(Error::NonFiniteFloat {
            value: f64::from(value),
        });
    }
    f(ryu::Buffer::new().format_finite(value))
}

fn key_error(got: &str) -> Error {
    Error::Serde(format!(
        "map key must be a string, char, integer, float, bool or unit variant, got {got}; \
         convert the keys to strings or serialize the map as a sequence of pairs"
    ))
}

impl<'a, 'w> ser::Serializer for &'a mut Serializer<'w> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 'w>;
    type SerializeTuple = Compound<'a, 'w>;
    type SerializeTupleStruct = Compound<'a, 'w>;
    type SerializeTupleVariant = Compound<'a, 'w>;
    type SerializeMap = Compound<'a, 'w>;
    type SerializeStruct = StructCompound<'a, 'w>;
    type SerializeStructVariant = Compound<'a, 'w>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.writer.bool(v)
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        self.writer.i64(v)
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        if let Ok(v) = i64::try_from(v) {
            self.writer.i64(v)
        } else if let Ok(v) = u64::try_from(v) {
            self.writer.u64(v)
        } else {
            with_text(v, |t| self.writer.number_text(t))
        }
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        self.writer.i64(i64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        self.writer.u64(v)
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        match u64::try_from(v) {
            Ok(v) => self.writer.u64(v),
            Err(_) => with_text(v, |t| self.writer.number_text(t)),
        }
    }

    /// Stored as the `f64` nearest to the `f32`'s shortest text (what `serde_json` prints), so
    /// `0.1f32` reads back as `0.1`, not `0.10000000149011612`.
    fn serialize_f32(self, v: f32) -> Result<()> {
        with_f32_text(v, |t| self.writer.number_text(t))
    }

    fn serialize_f64(self, v: f64) -> Result<()> {
        self.writer.f64(v)
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.writer.string(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.writer.string(v)
    }

    /// Bytes become an array of integers, as in `serde_json`.
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.writer.begin_array()?;
        for &b in v {
            self.writer.i64(i64::from(b))?;
        }
        self.writer.end_array()
    }

    fn serialize_none(self) -> Result<()> {
        self.writer.null()
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        self.writer.null()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.writer.null()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.writer.string(variant)
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
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        self.writer.begin_object()?;
        self.writer.key(variant)?;
        value.serialize(&mut *self)?;
        self.writer.end_object()
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 'w>> {
        self.writer.begin_array()?;
        Ok(Compound {
            ser: self,
            closers: 1,
            is_array: true,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 'w>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, 'w>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'w>> {
        self.writer.begin_object()?;
        self.writer.key(variant)?;
        self.writer.begin_array()?;
        Ok(Compound {
            ser: self,
            closers: 2,
            is_array: true,
        })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 'w>> {
        self.writer.begin_object()?;
        Ok(Compound {
            ser: self,
            closers: 1,
            is_array: false,
        })
    }

    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<StructCompound<'a, 'w>> {
        if name == NUMBER_TOKEN {
            return Ok(StructCompound(StructState::Number {
                ser: self,
                written: false,
            }));
        }
        self.writer.begin_object()?;
        Ok(StructCompound(StructState::Object(Compound {
            ser: self,
            closers: 1,
            is_array: false,
        })))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'w>> {
        self.writer.begin_object()?;
        self.writer.key(variant)?;
        self.writer.begin_object()?;
        Ok(Compound {
            ser: self,
            closers: 2,
            is_array: false,
        })
    }

    fn is_human_readable(&self) -> bool {
        true
    }
}

/// An open array or object; `closers` is 2 for variants (`{"Variant": [...]}`), else 1.
#[derive(Debug)]
pub struct Compound<'a, 'w> {
    ser: &'a mut Serializer<'w>,
    closers: u8,
    /// Whether the innermost container is an array (else an object).
    is_array: bool,
}

impl Compound<'_, '_> {
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.ser)
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &str, value: &T) -> Result<()> {
        self.ser.writer.key(key)?;
        value.serialize(&mut *self.ser)
    }

    fn close(self) -> Result<()> {
        if self.is_array {
            self.ser.writer.end_array()?;
        } else {
            self.ser.writer.end_object()?;
        }
        if self.closers == 2 {
            self.ser.writer.end_object()?;
        }
        Ok(())
    }
}

/// The four array-like compounds differ only in their trait and method names.
macro_rules! array_compound {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                self.element(value)
            }

            fn end(self) -> Result<()> {
                self.close()
            }
        }
    )*};
}

array_compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<()> {
        key.serialize(KeySerializer {
            writer: &mut *self.ser.writer,
        })
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.ser)
    }

    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.field(key, value)
    }

    fn end(self) -> Result<()> {
        self.close()
    }
}

/// A struct being serialized: an object, or a `serde_json::Number` (arbitrary precision) whose
/// text becomes a number.
#[derive(Debug)]
pub struct StructCompound<'a, 'w>(StructState<'a, 'w>);

#[derive(Debug)]
enum StructState<'a, 'w> {
    Object(Compound<'a, 'w>),
    /// A `serde_json::Number` with `arbitrary_precision`; `written` once its text came.
    Number {
        ser: &'a mut Serializer<'w>,
        written: bool,
    },
}

impl ser::SerializeStruct for StructCompound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        match &mut self.0 {
            StructState::Object(c) => c.field(key, value),
            StructState::Number { ser, written } if key == NUMBER_TOKEN && !*written => {
                value.serialize(NumberTextSerializer {
                    writer: &mut *ser.writer,
                })?;
                *written = true;
                Ok(())
            }
            StructState::Number { .. } => Err(number_error()),
        }
    }

    fn end(self) -> Result<()> {
        match self.0 {
            StructState::Object(c) => c.close(),
            StructState::Number { written: true, .. } => Ok(()),
            StructState::Number { .. } => Err(number_error()),
        }
    }
}

fn number_error() -> Error {
    Error::Serde(format!(
        "struct {NUMBER_TOKEN:?} is reserved for serde_json numbers: one field of that name \
         holding the number text"
    ))
}

/// Writes a map key: strings as they are; chars, integers, finite floats and bools as their
/// text, like `serde_json`; anything else is an error.
struct KeySerializer<'a> {
    writer: &'a mut DocumentWriter,
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

/// Accepts only the text of a `serde_json::Number` and writes it as a number.
struct NumberTextSerializer<'a> {
    writer: &'a mut DocumentWriter,
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
