//! Export of a collection to JSON Lines, keys in their original order.
//!
//! ```no_run
//! use stele::export::{ExportOptions, export_jsonl};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = stele::Database::open("/tmp/shop")?;
//! let out = std::fs::File::create("orders.jsonl")?;
//! let report = export_jsonl(&db.snapshot(), "orders", out, &ExportOptions::new())?;
//! println!("{} documents, {} bytes", report.documents, report.bytes);
//! # Ok(()) }
//! ```
//!
//! One document per line, in id order, each exactly as imported (same values, same key
//! order, same number text), so that importing the file again gives equal data. Ids are
//! not part of a document: when they came from a field, they are in the output already;
//! otherwise [`ExportOptions::id_field`] adds them as a first field.

mod salvage;

pub use salvage::{Lost, SalvageReport, export_salvage};

use crate::error::Error;
use crate::ids::IdKind;
use crate::snapshot::Snapshot;
use std::io::{BufWriter, Write};
use stele_doc::JsonOptions;

/// Options of an export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    id_field: Option<String>,
}

impl ExportOptions {
    /// The default options: documents as stored.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds each document's id as the first property `name` of objects that have no
    /// property `name` (top level; other documents are written as they are). Import the
    /// output with the same id field to get the same ids back.
    #[must_use]
    pub fn id_field(mut self, name: impl Into<String>) -> Self {
        self.id_field = Some(name.into());
        self
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// Documents written.
    pub documents: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading the collection failed (e.g. a corrupt table).
    #[error(transparent)]
    Database(#[from] Error),
    /// Writing the output failed.
    #[error("writing the export: {0}")]
    Write(#[from] std::io::Error),
}

/// Writes every document of `collection` in `snapshot` to `out` as JSON Lines (id order).
/// A collection that does not exist exports as nothing. `out` is buffered here.
pub fn export_jsonl(
    snapshot: &Snapshot,
    collection: &str,
    out: impl Write,
    opts: &ExportOptions,
) -> Result<ExportReport, ExportError> {
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut line = Vec::new();
    let mut report = ExportReport::default();
    let json = JsonOptions::default();
    let kind = snapshot.id_kind(collection).unwrap_or(IdKind::Text);
    for entry in snapshot.iter(collection) {
        let (id, doc) = entry?;
        json_line(&mut line, (&id, kind), &doc.document()?, opts, &json);
        out.write_all(&line)?;
        report.documents += 1;
        report.bytes += line.len() as u64;
    }
    out.flush()?;
    Ok(report)
}

/// Sets `line` to the export's line of document `id` (its text and kind): its JSON (with
/// the id added as [`ExportOptions::id_field`] says: an integer id as a JSON number) and a
/// line end.
fn json_line(
    line: &mut Vec<u8>,
    (id, kind): (&str, IdKind),
    view: &stele_doc::Document<&[u8]>,
    opts: &ExportOptions,
    json: &JsonOptions,
) {
    line.clear();
    let add_id = opts
        .id_field
        .as_deref()
        .filter(|f| view.root().as_object().is_some_and(|o| !o.contains_key(f)));
    match add_id {
        Some(field) => {
            let mut body = Vec::new();
            view.write_json(&mut body, json);
            line.push(b'{');
            crate::json_text::write_json_string(line, field);
            line.push(b':');
            match kind {
                IdKind::Int => line.extend_from_slice(id.as_bytes()),
                _ => crate::json_text::write_json_string(line, id),
            }
            // `body` is `{...}`: keep everything after its `{`, with a comma unless empty.
            let rest = body.get(1..).unwrap_or_default();
            if rest != b"}" {
                line.push(b',');
            }
            line.extend_from_slice(rest);
        }
        None => view.write_json(line, json),
    }
    line.push(b'\n');
}
