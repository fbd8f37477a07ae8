//! `serde::Serializer` writing straight into a [`DocumentWriter`]: no JSON text, no tree.

mod keys;
mod number;
mod text;

use ::serde::ser::{self, Serialize};

use crate::error::{Error, Result};
use crate::writer::DocumentWriter;
use keys::KeySerializer;
use number::NumberTextSerializer;
pub(crate) use text::NUMBER_TOKEN;
use text::{number_error, with_f32_text, with_text};

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
