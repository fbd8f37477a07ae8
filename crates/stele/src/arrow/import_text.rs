//! Import from Arrow into a collection that is not written in bulk (compression off, or
//! `ImportOptions::bulk` off): each batch's rows are written as JSON Lines into a buffer the
//! JSON import ([`crate::import::import_reader`]) reads, one batch at a time, so the staged
//! import is the JSON import's own, all or nothing, with the same ids and reports.

use crate::import::{ImportError, ImportFormat, ImportOptions, ImportProgress, ImportReport};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Fields};
use std::io::Read;

/// Imports `batches` through the JSON import, as the rows' JSON Lines text.
pub(super) fn import_as_text(
    db: &crate::Database,
    collection: &str,
    batches: impl RecordBatchReader,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let lines = Lines {
        batches,
        buf: Vec::new(),
        pos: 0,
        line: String::new(),
    };
    let opts = opts.clone().format(ImportFormat::JsonLines);
    crate::import::import_reader(db, collection, "(arrow)", lines, None, &opts, progress)
}

/// The batches as JSON Lines text, a batch at a time.
struct Lines<R> {
    batches: R,
    buf: Vec<u8>,
    pos: usize,
    line: String,
}

impl<R: RecordBatchReader> Read for Lines<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            let Some(batch) = self.batches.next() else {
                return Ok(0);
            };
            let batch = batch.map_err(std::io::Error::other)?;
            self.buf.clear();
            self.pos = 0;
            for row in 0..batch.num_rows() {
                self.line.clear();
                write_row(&batch, row, &mut self.line);
                self.buf.extend_from_slice(self.line.as_bytes());
                self.buf.push(b'\n');
            }
        }
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), rest.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.pos += n;
        Ok(n)
    }
}

/// Row `row` of a batch as a JSON object.
fn write_row(batch: &RecordBatch, row: usize, out: &mut String) {
    write_members(batch.schema().fields(), batch.columns(), row, out);
}

/// Row `row` of the columns `cols` (named by `fields`) as a JSON object, its null members
/// left out: a batch's row, or a struct's value.
fn write_members(fields: &Fields, cols: &[ArrayRef], row: usize, out: &mut String) {
    out.push('{');
    let mut first = true;
    for (field, col) in fields.iter().zip(cols) {
        if col.is_null(row) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        json_string(field.name(), out);
        out.push(':');
        write_value(col.as_ref(), field, row, out);
    }
    out.push('}');
}

/// Value `i` of `col` as JSON (nulls as `null`; checked types only, see [`check_type`]).
fn write_value(col: &dyn Array, field: &Field, i: usize, out: &mut String) {
    use std::fmt::Write;
    if col.is_null(i) {
        out.push_str("null");
        return;
    }
    let json_text = field
        .metadata()
        .get(super::kind::EXTENSION_KEY)
        .is_some_and(|v| v == super::kind::JSON_EXTENSION);
    // Writing to a String cannot fail.
    let _ = match col.data_type() {
        DataType::Boolean => write!(out, "{}", col.as_boolean().value(i)),
        DataType::Int8 => write!(out, "{}", col.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => write!(out, "{}", col.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => write!(out, "{}", col.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => write!(out, "{}", col.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => write!(out, "{}", col.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => write!(out, "{}", col.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => write!(out, "{}", col.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => write!(out, "{}", col.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => float(f64::from(col.as_primitive::<Float32Type>().value(i)), out),
        DataType::Float64 => float(col.as_primitive::<Float64Type>().value(i), out),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = match col.data_type() {
                DataType::Utf8 => col.as_string::<i32>().value(i),
                DataType::LargeUtf8 => col.as_string::<i64>().value(i),
                _ => col.as_string_view().value(i),
            };
            if json_text {
                out.push_str(s);
            } else {
                json_string(s, out);
            }
            Ok(())
        }
        DataType::Struct(fields) => {
            write_members(fields, col.as_struct().columns(), i, out);
            Ok(())
        }
        DataType::List(item) => list(&col.as_list::<i32>().value(i), item, out),
        DataType::LargeList(item) => list(&col.as_list::<i64>().value(i), item, out),
        DataType::FixedSizeList(item, _) => list(&col.as_fixed_size_list().value(i), item, out),
        _ => {
            out.push_str("null");
            Ok(())
        }
    };
}

fn list(values: &dyn Array, item: &Field, out: &mut String) -> std::fmt::Result {
    out.push('[');
    for j in 0..values.len() {
        if j > 0 {
            out.push(',');
        }
        write_value(values, item, j, out);
    }
    out.push(']');
    Ok(())
}

/// A float as JSON: its shortest round-trip text; NaN and infinities, which JSON has no
/// text for, as null.
fn float(x: f64, out: &mut String) -> std::fmt::Result {
    use std::fmt::Write;
    if x.is_finite() {
        write!(out, "{x:?}")
    } else {
        out.push_str("null");
        Ok(())
    }
}

/// `s` as a JSON string (the export's escaping).
fn json_string(s: &str, out: &mut String) {
    let mut bytes = Vec::with_capacity(s.len() + 2);
    crate::json_text::write_json_string(&mut bytes, s);
    out.push_str(&String::from_utf8_lossy(&bytes));
}
