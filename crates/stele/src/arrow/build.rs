//! Column builders: document values appended to Arrow arrays by column kind.
//!
//! Invariant: every builder of a batch holds the same number of rows after each document,
//! unless an append failed, and then the batch is dropped whole (the error ends the stream).

use super::kind::Kind;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, ListArray, NullArray, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, FieldRef, Fields};
use std::sync::Arc;
use stele_doc::{JsonOptions, Value};

/// A value that does not fit its column: where below the column, and what it was.
#[derive(Debug)]
pub(crate) struct Misfit {
    /// The path below the column (`.b`, `[]`), built outward as the error returns.
    pub(crate) below: String,
    pub(crate) expected: String,
    pub(crate) found: &'static str,
}

/// The most bytes one string array holds: its offsets are `i32`.
const MAX_STRING_BYTES: usize = i32::MAX as usize;

/// One column's array under construction.
#[derive(Debug)]
pub(crate) enum Col {
    Null(usize),
    Bool(BooleanBuilder),
    Int64(Int64Builder),
    Float64(Float64Builder),
    Utf8(StringBuilder),
    /// JSON text, and a buffer to write each value's text into.
    Json(StringBuilder, Vec<u8>),
    Struct {
        fields: Fields,
        children: Vec<Col>,
        valid: NullBufferBuilder,
    },
    List {
        item_field: FieldRef,
        /// Element offsets: one more than the rows.
        offsets: Vec<i32>,
        valid: NullBufferBuilder,
        item: Box<Col>,
    },
}

impl Col {
    /// An empty builder for `kind`, sized for `rows` rows.
    pub(crate) fn new(kind: &Kind, rows: usize) -> Col {
        match kind {
            Kind::Null => Col::Null(0),
            Kind::Bool => Col::Bool(BooleanBuilder::with_capacity(rows)),
            Kind::Int64 => Col::Int64(Int64Builder::with_capacity(rows)),
            Kind::Float64 => Col::Float64(Float64Builder::with_capacity(rows)),
            Kind::Utf8 => Col::Utf8(StringBuilder::with_capacity(rows, rows * 16)),
            Kind::Json => Col::Json(StringBuilder::with_capacity(rows, rows * 16), Vec::new()),
            Kind::Struct(children) => {
                let fields = match kind.data_type() {
                    arrow_schema::DataType::Struct(f) => f,
                    _ => Fields::empty(),
                };
                Col::Struct {
                    fields,
                    children: children.iter().map(|(_, k)| Col::new(k, rows)).collect(),
                    valid: NullBufferBuilder::new(rows),
                }
            }
            Kind::List(item) => Col::List {
                item_field: Arc::new(item.field("item")),
                offsets: vec![0],
                valid: NullBufferBuilder::new(rows),
                item: Box::new(Col::new(item, rows)),
            },
        }
    }

    /// Appends one row: `v` is `None` for a missing value. A misfit is appended as a null
    /// when `lenient`, else returned (and the batch must be dropped).
    pub(crate) fn append(&mut self, v: Option<Value<'_>>, lenient: bool) -> Result<(), Misfit> {
        let v = match v {
            None | Some(Value::Null) => {
                self.append_null();
                return Ok(());
            }
            Some(v) => v,
        };
        let fitted = match (&mut *self, v) {
            (Col::Bool(b), Value::Bool(x)) => {
                b.append_value(x);
                Ok(())
            }
            (Col::Int64(b), Value::Int(x)) => {
                b.append_value(x);
                Ok(())
            }
            (Col::Float64(b), v) => match number_f64(&v) {
                Some(x) => {
                    b.append_value(x);
                    Ok(())
                }
                None => Err(v),
            },
            (Col::Utf8(b), Value::String(s)) => {
                let s = s.to_cow();
                if b.values_slice().len() + s.len() > MAX_STRING_BYTES {
                    return Err(too_long());
                }
                b.append_value(s);
                Ok(())
            }
            (Col::Json(b, text), v) => {
                text.clear();
                v.write_json(text, &JsonOptions::new());
                if b.values_slice().len() + text.len() > MAX_STRING_BYTES {
                    return Err(too_long());
                }
                // The writer emits JSON text, which is UTF-8.
                b.append_value(String::from_utf8_lossy(text));
                Ok(())
            }
            (Col::Struct { .. }, Value::Object(o)) => return self.append_object(&o, lenient),
            (
                Col::List {
                    offsets,
                    valid,
                    item,
                    ..
                },
                Value::Array(a),
            ) => {
                for e in a.iter() {
                    item.append(Some(e), lenient).map_err(|mut m| {
                        m.below.insert_str(0, "[]");
                        m
                    })?;
                }
                let end = offsets.last().copied().unwrap_or(0) as usize + a.len();
                let end = i32::try_from(end).map_err(|_| too_long())?;
                offsets.push(end);
                valid.append_non_null();
                Ok(())
            }
            (_, v) => Err(v),
        };
        match fitted {
            Ok(()) => Ok(()),
            Err(_) if lenient => {
                self.append_null();
                Ok(())
            }
            Err(v) => Err(Misfit {
                below: String::new(),
                expected: self.expected(),
                found: v.type_name(),
            }),
        }
    }

    /// An object into a struct column: each child reads its key; keys the struct does not
    /// have are a misfit unless `lenient` (then they are left out).
    fn append_object(&mut self, o: &stele_doc::Object<'_>, lenient: bool) -> Result<(), Misfit> {
        let Col::Struct {
            fields,
            children,
            valid,
        } = self
        else {
            return Ok(());
        };
        let mut found = 0;
        for (field, child) in fields.iter().zip(children.iter_mut()) {
            let v = o.get(field.name());
            found += usize::from(v.is_some());
            child.append(v, lenient).map_err(|mut m| {
                m.below.insert_str(0, &format!(".{}", field.name()));
                m
            })?;
        }
        if found < o.len() && !lenient {
            let extra = o
                .iter_original()
                .find(|(k, _)| fields.find(k).is_none())
                .map_or_else(String::new, |(k, _)| format!(".{k}"));
            return Err(Misfit {
                below: extra,
                expected: "(no such field in the struct)".to_owned(),
                found: "a property",
            });
        }
        valid.append_non_null();
        Ok(())
    }

    /// Appends a document id (`key`: as stored): the id column is Utf8, or Int64 for a
    /// collection of integer ids, whose keys all stand for integers (`crate::ids`); never null.
    pub(crate) fn append_id(&mut self, key: &str) {
        match self {
            Col::Utf8(b) => b.append_value(key),
            Col::Int64(b) => match crate::ids::int_from_key(key.as_bytes()) {
                Some(n) => b.append_value(n),
                // Not an integer's key: the batch is refused (the column holds no nulls).
                None => b.append_null(),
            },
            _ => {}
        }
    }

    fn append_null(&mut self) {
        match self {
            Col::Null(n) => *n += 1,
            Col::Bool(b) => b.append_null(),
            Col::Int64(b) => b.append_null(),
            Col::Float64(b) => b.append_null(),
            Col::Utf8(b) | Col::Json(b, _) => b.append_null(),
            Col::Struct {
                children, valid, ..
            } => {
                // A null struct still has a row in each child (masked by its validity).
                children.iter_mut().for_each(Col::append_null);
                valid.append_null();
            }
            Col::List { offsets, valid, .. } => {
                offsets.push(offsets.last().copied().unwrap_or(0));
                valid.append_null();
            }
        }
    }

    /// The column type, as Arrow writes it, for errors.
    fn expected(&self) -> String {
        match self {
            Col::Null(_) => "Null".to_owned(),
            Col::Bool(_) => "Boolean".to_owned(),
            Col::Int64(_) => "Int64".to_owned(),
            Col::Float64(_) => "Float64".to_owned(),
            Col::Utf8(_) => "Utf8".to_owned(),
            Col::Json(..) => "Utf8 (JSON text)".to_owned(),
            Col::Struct { fields, .. } => format!("Struct with {} fields", fields.len()),
            Col::List { item_field, .. } => format!("List of {}", item_field.data_type()),
        }
    }

    /// The array built so far; the builder is left empty for the next batch.
    pub(crate) fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            Col::Null(n) => Arc::new(NullArray::new(std::mem::take(n))),
            Col::Bool(b) => Arc::new(b.finish()),
            Col::Int64(b) => Arc::new(b.finish()),
            Col::Float64(b) => Arc::new(b.finish()),
            Col::Utf8(b) | Col::Json(b, _) => Arc::new(b.finish()),
            Col::Struct {
                fields,
                children,
                valid,
            } => {
                let arrays = children
                    .iter_mut()
                    .map(Col::finish)
                    .collect::<Result<Vec<_>, _>>()?;
                // Structs have at least one field (`Kind` sees to it), so the children
                // give the row count.
                Arc::new(StructArray::try_new(
                    fields.clone(),
                    arrays,
                    valid.finish(),
                )?)
            }
            Col::List {
                item_field,
                offsets,
                valid,
                item,
            } => {
                let offsets = std::mem::replace(offsets, vec![0]);
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                Arc::new(ListArray::try_new(
                    item_field.clone(),
                    offsets,
                    item.finish()?,
                    valid.finish(),
                )?)
            }
        })
    }
}

fn too_long() -> Misfit {
    Misfit {
        below: String::new(),
        expected: "at most 2 GiB of text or 2^31 list elements in one batch (read smaller batches)"
            .to_owned(),
        found: "more",
    }
}

/// A number as a float (any number fits a Float64 column, integers beyond 2^53 rounded).
fn number_f64(v: &Value<'_>) -> Option<f64> {
    match v {
        Value::Int(x) => Some(*x as f64),
        Value::UInt(x) => Some(*x as f64),
        Value::Float(x) => Some(*x),
        Value::Scaled(s) => Some(s.to_f64()),
        Value::Decimal(t) => t.parse().ok(),
        _ => None,
    }
}
