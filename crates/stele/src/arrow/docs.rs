//! Arrow rows to stored documents, written straight into a `DocumentWriter` (no JSON text in
//! between): the inference rule of [`crate::arrow`] in reverse.
//!
//! | column | document value |
//! |---|---|
//! | `Boolean` | `true` / `false` |
//! | `Int8`-`Int64`, `UInt8`-`UInt64` | the integer |
//! | `Float16`-`Float64` | the number, as its shortest round-trip text reads (`1.5`, `1e-7`); NaN and infinities, which JSON has none for, `null` |
//! | `Utf8`, `LargeUtf8`, `Utf8View` | the string |
//! | the same marked `arrow.json` | the value of its JSON text (objects, arrays, numbers kept exactly) |
//! | `Struct` | an object of the children that are not null, in the struct's order |
//! | `List`, `LargeList`, `FixedSizeList` | an array (null elements as `null`) |
//! | `Null`, or a null anywhere at a row's top level or in a struct | left out |
//!
//! A root column `doc._id` is the root property `_id` (the scan's name for it), and the
//! column `_id`, when it is the id, is the document's id and not a property of it.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_schema::{DataType, Field};
use stele_doc::DocumentWriter;

/// One column's values, each reachable by row without looking at its type again.
pub(super) enum Cells<'a> {
    Null,
    Bool(&'a arrow_array::BooleanArray),
    Int(Ints<'a>),
    Float(Floats<'a>),
    /// Strings; JSON text when the flag is set.
    Str(Strs<'a>, bool),
    Struct {
        array: &'a arrow_array::StructArray,
        children: Vec<(&'a str, Cells<'a>)>,
    },
    List {
        array: &'a dyn Array,
        /// Where each row's elements start and end in `item`.
        bounds: Bounds<'a>,
        item: Box<Cells<'a>>,
    },
}

pub(super) enum Ints<'a> {
    I8(&'a PrimitiveArray<Int8Type>),
    I16(&'a PrimitiveArray<Int16Type>),
    I32(&'a PrimitiveArray<Int32Type>),
    I64(&'a PrimitiveArray<Int64Type>),
    U8(&'a PrimitiveArray<UInt8Type>),
    U16(&'a PrimitiveArray<UInt16Type>),
    U32(&'a PrimitiveArray<UInt32Type>),
    U64(&'a PrimitiveArray<UInt64Type>),
}

pub(super) enum Floats<'a> {
    F16(&'a PrimitiveArray<Float16Type>),
    F32(&'a PrimitiveArray<Float32Type>),
    F64(&'a PrimitiveArray<Float64Type>),
}

pub(super) enum Strs<'a> {
    Small(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

pub(super) enum Bounds<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
    Fixed(usize),
}

/// Whether `field` is marked as JSON text (the `arrow.json` extension).
fn is_json(field: &Field) -> bool {
    field
        .metadata()
        .get(super::kind::EXTENSION_KEY)
        .is_some_and(|v| v == super::kind::JSON_EXTENSION)
}

impl<'a> Cells<'a> {
    /// The cells of `col` (of `field`), or why its type has no JSON value (with the fix).
    pub(super) fn of(col: &'a dyn Array, field: &Field, at: &str) -> Result<Cells<'a>, String> {
        fn prim<T: ArrowPrimitiveType>(col: &dyn Array) -> &PrimitiveArray<T> {
            col.as_primitive::<T>()
        }
        Ok(match col.data_type() {
            DataType::Null => Cells::Null,
            DataType::Boolean => Cells::Bool(col.as_boolean()),
            DataType::Int8 => Cells::Int(Ints::I8(prim(col))),
            DataType::Int16 => Cells::Int(Ints::I16(prim(col))),
            DataType::Int32 => Cells::Int(Ints::I32(prim(col))),
            DataType::Int64 => Cells::Int(Ints::I64(prim(col))),
            DataType::UInt8 => Cells::Int(Ints::U8(prim(col))),
            DataType::UInt16 => Cells::Int(Ints::U16(prim(col))),
            DataType::UInt32 => Cells::Int(Ints::U32(prim(col))),
            DataType::UInt64 => Cells::Int(Ints::U64(prim(col))),
            DataType::Float16 => Cells::Float(Floats::F16(prim(col))),
            DataType::Float32 => Cells::Float(Floats::F32(prim(col))),
            DataType::Float64 => Cells::Float(Floats::F64(prim(col))),
            DataType::Utf8 => Cells::Str(Strs::Small(col.as_string::<i32>()), is_json(field)),
            DataType::LargeUtf8 => Cells::Str(Strs::Large(col.as_string::<i64>()), is_json(field)),
            DataType::Utf8View => Cells::Str(Strs::View(col.as_string_view()), is_json(field)),
            DataType::Struct(fields) => {
                let array = col.as_struct();
                let children = fields
                    .iter()
                    .zip(array.columns())
                    .map(|(f, c)| {
                        let at = format!("{at}.{}", f.name());
                        Ok((f.name().as_str(), Cells::of(c.as_ref(), f, &at)?))
                    })
                    .collect::<Result<_, String>>()?;
                Cells::Struct { array, children }
            }
            DataType::List(item) => {
                let list = col.as_list::<i32>();
                let item = Cells::of(list.values().as_ref(), item, &format!("{at}[]"))?;
                Cells::List {
                    array: col,
                    bounds: Bounds::Small(list.value_offsets()),
                    item: Box::new(item),
                }
            }
            DataType::LargeList(item) => {
                let list = col.as_list::<i64>();
                let item = Cells::of(list.values().as_ref(), item, &format!("{at}[]"))?;
                Cells::List {
                    array: col,
                    bounds: Bounds::Large(list.value_offsets()),
                    item: Box::new(item),
                }
            }
            DataType::FixedSizeList(item, n) => {
                let list = col.as_fixed_size_list();
                let item = Cells::of(list.values().as_ref(), item, &format!("{at}[]"))?;
                // A fixed-size list's values start at its offset times its size.
                let n = usize::try_from(*n).unwrap_or(0);
                Cells::List {
                    array: col,
                    bounds: Bounds::Fixed(n),
                    item: Box::new(item),
                }
            }
            other => {
                return Err(format!(
                    "column {at} has type {other}, which has no JSON value: cast it to a string (pyarrow: table.cast(...), pandas: df[col].astype(str)) or drop it"
                ));
            }
        })
    }

    /// Whether row `i` is null (a `Null` column always is).
    pub(super) fn is_null(&self, i: usize) -> bool {
        match self {
            Cells::Null => true,
            Cells::Bool(a) => a.is_null(i),
            Cells::Int(n) => match n {
                Ints::I8(a) => a.is_null(i),
                Ints::I16(a) => a.is_null(i),
                Ints::I32(a) => a.is_null(i),
                Ints::I64(a) => a.is_null(i),
                Ints::U8(a) => a.is_null(i),
                Ints::U16(a) => a.is_null(i),
                Ints::U32(a) => a.is_null(i),
                Ints::U64(a) => a.is_null(i),
            },
            Cells::Float(f) => match f {
                Floats::F16(a) => a.is_null(i),
                Floats::F32(a) => a.is_null(i),
                Floats::F64(a) => a.is_null(i),
            },
            Cells::Str(s, _) => match s {
                Strs::Small(a) => a.is_null(i),
                Strs::Large(a) => a.is_null(i),
                Strs::View(a) => a.is_null(i),
            },
            Cells::Struct { array, .. } => array.is_null(i),
            Cells::List { array, .. } => array.is_null(i),
        }
    }

    /// The string of row `i` of a string column (not null).
    pub(super) fn str(&self, i: usize) -> Option<&'a str> {
        match self {
            Cells::Str(Strs::Small(a), _) => Some(a.value(i)),
            Cells::Str(Strs::Large(a), _) => Some(a.value(i)),
            Cells::Str(Strs::View(a), _) => Some(a.value(i)),
            _ => None,
        }
    }

    /// The integer of row `i` of an integer column (not null); `Err` for one beyond `i64`.
    pub(super) fn int(&self, i: usize) -> Option<Result<i64, u64>> {
        let Cells::Int(n) = self else {
            return None;
        };
        Some(match n {
            Ints::I8(a) => Ok(i64::from(a.value(i))),
            Ints::I16(a) => Ok(i64::from(a.value(i))),
            Ints::I32(a) => Ok(i64::from(a.value(i))),
            Ints::I64(a) => Ok(a.value(i)),
            Ints::U8(a) => Ok(i64::from(a.value(i))),
            Ints::U16(a) => Ok(i64::from(a.value(i))),
            Ints::U32(a) => Ok(i64::from(a.value(i))),
            Ints::U64(a) => i64::try_from(a.value(i)).map_err(|_| a.value(i)),
        })
    }

    /// Writes row `i` (not null) as the next value of `w`; `json` parses JSON text.
    pub(super) fn write(
        &self,
        i: usize,
        w: &mut DocumentWriter,
        json: &mut Scratch,
    ) -> Result<(), String> {
        let e = |e: stele_doc::Error| e.to_string();
        match self {
            Cells::Null => w.null().map_err(e),
            Cells::Bool(a) => w.bool(a.value(i)).map_err(e),
            Cells::Int(_) => match self.int(i) {
                Some(Ok(n)) => w.i64(n).map_err(e),
                Some(Err(n)) => w.u64(n).map_err(e),
                None => w.null().map_err(e),
            },
            Cells::Float(f) => {
                let x = match f {
                    Floats::F16(a) => f64::from(a.value(i)),
                    Floats::F32(a) => f64::from(a.value(i)),
                    Floats::F64(a) => a.value(i),
                };
                json.float(x, w)
            }
            Cells::Str(_, is_json) => {
                let s = self.str(i).unwrap_or_default();
                if *is_json {
                    json.value(s, w)
                } else {
                    w.string(s).map_err(e)
                }
            }
            Cells::Struct { children, .. } => {
                w.begin_object().map_err(e)?;
                for (name, child) in children {
                    if child.is_null(i) {
                        continue;
                    }
                    w.key(name).map_err(e)?;
                    child
                        .write(i, w, json)
                        .map_err(|r| format!(".{name}: {r}"))?;
                }
                w.end_object().map_err(e)
            }
            Cells::List { bounds, item, .. } => {
                let (start, end) = match bounds {
                    Bounds::Small(o) => (
                        o.get(i).map_or(0, |&s| s as usize),
                        o.get(i + 1).map_or(0, |&s| s as usize),
                    ),
                    Bounds::Large(o) => (
                        o.get(i).map_or(0, |&s| s as usize),
                        o.get(i + 1).map_or(0, |&s| s as usize),
                    ),
                    Bounds::Fixed(n) => (i * n, (i + 1) * n),
                };
                w.begin_array().map_err(e)?;
                for j in start..end {
                    if item.is_null(j) {
                        w.null().map_err(e)?;
                    } else {
                        item.write(j, w, json).map_err(|r| format!("[]: {r}"))?;
                    }
                }
                w.end_array().map_err(e)
            }
        }
    }
}

/// What writing numbers needs besides the writer: a buffer for a float's text.
pub(super) struct Scratch {
    text: String,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch {
            text: String::new(),
        }
    }

    /// A float as the number its shortest round-trip text reads (what the JSON import of
    /// that text stores: `1.5` as a decimal of scale 1); not finite: `null`.
    fn float(&mut self, x: f64, w: &mut DocumentWriter) -> Result<(), String> {
        use std::fmt::Write;
        if !x.is_finite() {
            return w.null().map_err(|e| e.to_string());
        }
        self.text.clear();
        // Writing to a String cannot fail.
        let _ = write!(self.text, "{x:?}");
        w.number_text(&self.text).map_err(|e| e.to_string())
    }

    /// The value of JSON text `s`, written into `w`: parsed straight into it (with its
    /// options: duplicate keys, depth counted from the document's root), not into a
    /// document of its own, validated and copied over (on mdn-compat-features, whose
    /// browser support columns are JSON text, the Parquet import then took 0.84x the CPU:
    /// `docs/notes/2026-12-02-parquet-import.md`).
    fn value(&mut self, s: &str, w: &mut DocumentWriter) -> Result<(), String> {
        w.json_value(s.as_bytes())
            .map_err(|e| format!("its JSON text does not parse: {e}"))
    }
}
