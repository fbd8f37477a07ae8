//! Rows of Arrow arrays written as documents ([`build`]), on every core: what an Arrow or
//! Parquet import hands to the bulk write, a row at a time ([`RowWriter`]).

use super::docs::{Cells, Scratch};
use super::import::{ID, Ids, Plan, malformed};
use crate::ids::IdKind;
use crate::import::{BulkImport, ImportError, numbered_id};
use arrow_array::RecordBatch;
use rayon::prelude::*;
use stele_doc::{Document, DocumentWriter, WriteOptions};

/// A row written: its id (as stored), the id's kind and its document; or why it is bad.
pub(super) type Built = Result<(String, IdKind, Vec<u8>), String>;

/// One row of `columns` as a document and an id; `record` is its number from 1.
///
/// Where the import's write options are those of a stream form but for the duplicate policy
/// and the depth limit (`crate::import::parses_as_streams`, true of the defaults), a row is
/// written with repeated keys refused (`strict`) and handed on in its stream form, made
/// without the packer's check that it rebuilds the document (`stele_doc::stream::encode_written`):
/// such a document is what its stream rebuilds. The check was a tenth of the CPU of a
/// Parquet import of mdn-compat-features (`docs/notes/2026-12-03-arrow-import-streams.md`).
/// A row that repeats a key, or fails, is written again under the import's own options,
/// which decide its document or its error, and handed on as the document (checked when packed).
struct RowWriter {
    writer: DocumentWriter,
    strict: Option<DocumentWriter>,
    scratch: Scratch,
    ids: Ids,
}

impl RowWriter {
    fn new(write: &WriteOptions, ids: &Ids, streams: bool) -> RowWriter {
        RowWriter {
            writer: DocumentWriter::with_options(write.clone()),
            strict: (streams && crate::import::parses_as_streams(write))
                .then(|| DocumentWriter::with_options(crate::import::strict_options(write))),
            scratch: Scratch::new(),
            ids: ids.clone(),
        }
    }

    fn row(&mut self, plan: &Plan, columns: &[Cells<'_>], i: usize, record: u64) -> Built {
        let strict = self
            .strict
            .as_mut()
            .and_then(|w| write_row(w, plan, columns, i, &mut self.scratch).ok());
        // `canonical`: written under stream options with repeated keys refused, so its
        // stream form rebuilds it.
        let (doc, canonical) = match strict {
            Some(doc) => (doc, true),
            None => (
                write_row(&mut self.writer, plan, columns, i, &mut self.scratch)?,
                false,
            ),
        };
        let (id, kind) = match &mut self.ids {
            Ids::Counter(prefix) => (numbered_id(prefix, record), IdKind::Text),
            Ids::Column => {
                let cells = plan.id_column.and_then(|c| columns.get(c));
                column_id(cells, i)?
            }
            Ids::Field(path, name) => {
                let view = Document::new(doc.as_slice()).map_err(|e| e.to_string())?;
                BulkImport::field_id(path, &view, name)?
            }
        };
        crate::batch::check_id(&id).map_err(|e| e.to_string())?;
        if !canonical {
            return Ok((id, kind, doc));
        }
        // SAFETY: `doc` is what `DocumentWriter::finish` just returned.
        let view = unsafe { Document::new_unchecked(doc.as_slice()) };
        let mut stream = Vec::with_capacity(doc.len());
        if stele_doc::stream::encode_written(&view, &mut stream) {
            Ok((id, kind, stream))
        } else {
            Ok((id, kind, doc))
        }
    }
}

/// Row `i` of `columns` written by `w` as a document of the properties `plan` names.
fn write_row(
    w: &mut DocumentWriter,
    plan: &Plan,
    columns: &[Cells<'_>],
    i: usize,
    scratch: &mut Scratch,
) -> Result<Vec<u8>, String> {
    w.reset();
    let e = |e: stele_doc::Error| e.to_string();
    w.begin_object().map_err(e)?;
    for (c, key) in &plan.props {
        let Some(cells) = columns.get(*c) else {
            continue;
        };
        if cells.is_null(i) {
            continue;
        }
        w.key(key).map_err(e)?;
        cells
            .write(i, w, scratch)
            .map_err(|r| format!("column {key}{r}"))?;
    }
    w.end_object().map_err(e)?;
    w.finish().map_err(e)
}

/// The id in row `i` of the id column: a string as it is, an integer as its key.
fn column_id(cells: Option<&Cells<'_>>, i: usize) -> Result<(String, IdKind), String> {
    let Some(cells) = cells.filter(|c| !c.is_null(i)) else {
        return Err(format!(
            "no id: the column {ID} is null (every row needs one)"
        ));
    };
    if let Some(s) = cells.str(i) {
        return Ok((s.to_owned(), IdKind::Text));
    }
    match cells.int(i) {
        Some(Ok(n)) => Ok((crate::ids::int_key(n), IdKind::Int)),
        Some(Err(n)) => Err(format!(
            "the id {n} in column {ID} is beyond the range of integer ids ({} to {}): cast the column to strings",
            i64::MIN,
            i64::MAX
        )),
        None => Err(format!(
            "the column {ID} holds neither strings nor integers: ids must be one or the other (cast it, or name another id column)"
        )),
    }
}

/// The rows of `slice` as documents, on every core, in order; the first is record `first`.
/// With `streams`, a row whose document its stream form rebuilds is given in that form
/// ([`RowWriter`]): what the bulk write packs; without, as the document (a Parquet import's
/// sample, which the dictionary trains on as the sorted write's reservoir of documents).
pub(super) fn build(
    slice: &RecordBatch,
    plan: &Plan,
    first: u64,
    write: &WriteOptions,
    streams: bool,
) -> Result<Vec<Built>, ImportError> {
    let schema = slice.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(slice.columns())
        .map(|(f, c)| Cells::of(c.as_ref(), f, f.name()))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|reason| malformed(first, reason))?;
    let columns = &columns;
    Ok((0..slice.num_rows())
        .into_par_iter()
        .with_min_len(256)
        .map_init(
            || RowWriter::new(write, &plan.ids, streams),
            |w, i| w.row(plan, columns, i, first + i as u64),
        )
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "tests: a failed unwrap is a failed test"
    )]
    use super::*;
    use crate::Database;
    use crate::arrow::ArrowOptions;
    use crate::import::ImportOptions;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::collections::HashMap;
    use std::io::BufRead;
    use std::sync::Arc;
    use stele_doc::stream;

    /// The first `n` lines of a shared collection (`../shared/data`, or `STELE_DATA`).
    fn lines_of(name: &str, n: usize) -> Vec<String> {
        let dir = std::env::var_os("STELE_DATA").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
            std::path::PathBuf::from,
        );
        let path = dir.join("collections").join(name);
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let reader = std::io::BufReader::new(zstd::Decoder::new(file).unwrap());
        reader.lines().take(n).map(Result::unwrap).collect()
    }

    /// Rows of `batch` written both ways: (rows given as stream forms, rows given as
    /// documents), after checking that each stream form rebuilds exactly the document
    /// written under the import's own options, and every other row is that document.
    fn check(batch: &RecordBatch) -> (usize, usize) {
        let plan = Plan::new(&batch.schema(), Ids::Counter(String::new()));
        let write = crate::write_options();
        let given = build(batch, &plan, 1, &write, true).unwrap();
        let docs = build(batch, &plan, 1, &write, false).unwrap();
        let mut rebuild = DocumentWriter::with_options(stream::write_options());
        let (mut streams, mut kept) = (0, 0);
        for (g, d) in given.into_iter().zip(docs) {
            let ((gid, _, g), (did, _, d)) = (g.unwrap(), d.unwrap());
            assert_eq!(gid, did);
            if stream::is_stream(&g) {
                assert_eq!(stream::decode(&g, &mut rebuild).unwrap(), d, "row {gid}");
                streams += 1;
            } else {
                assert_eq!(g, d, "row {gid}");
                kept += 1;
            }
        }
        (streams, kept)
    }

    #[test]
    fn a_row_given_as_its_stream_form_rebuilds_exactly_its_document() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let mut sets: Vec<Vec<String>> = [
            "geonames-cities.jsonl.zst",
            "mdn-compat-features.jsonl.zst",
            "emojibase.jsonl.zst",
            "github-webhooks.jsonl.zst",
            "debian-packages.jsonl.zst",
            "vega-flights-200k.jsonl.zst",
            "mongodb-zips.jsonl.zst",
            "mongodb-samples/restaurant.jsonl.zst",
            "mongodb-samples/grades.jsonl.zst",
        ]
        .iter()
        .map(|f| lines_of(f, 200))
        .collect();
        sets.push(
            [
                r#"{"s":"héllo ✓ 𝄞 \u0000 \"q\"","n":1,"f":1.5,"big":18446744073709551615,"huge":123456789012345678901234567890,"mix":1,"nest":{"a":{"b":[1,2,{"c":null}]}},"e":{},"arr":[[1],[2,3]],"nul":null}"#,
                r#"{"s":null,"n":-9223372036854775808,"f":2,"big":1,"huge":1,"mix":"one","nest":{"a":{"b":[]},"x":true},"e":{},"arr":[],"exp":1E5,"dec":12.50}"#,
                r#"{"n":9223372036854775807,"f":-0.0,"mix":[1],"nest":null,"arr":[null,[null]],"exp":2.5e-3,"dec":0.10,"tiny":1e-7}"#,
            ]
            .iter()
            .map(|d| (*d).to_owned())
            .collect(),
        );
        let (mut streams, mut kept) = (0, 0);
        for (n, lines) in sets.iter().enumerate() {
            let coll = format!("c{n}");
            let text = lines.join("\n") + "\n";
            let opts = ImportOptions::new();
            crate::import::import_reader(
                &db,
                &coll,
                "t.jsonl",
                text.as_bytes(),
                None,
                &opts,
                |_| {},
            )
            .unwrap();
            let reader = db
                .snapshot()
                .scan_arrow(&coll, ArrowOptions::new().batch_rows(64))
                .unwrap();
            for batch in reader {
                let (s, k) = check(&batch.unwrap());
                streams += s;
                kept += k;
            }
        }
        assert!(streams > 1_500, "{streams} rows given as streams");
        assert_eq!(kept, 0, "every row of these has a stream form");
    }

    #[test]
    fn a_row_that_repeats_a_key_is_given_as_the_document_its_options_write() {
        // A JSON text column whose second row repeats a key: refused by the strict writer,
        // written again with the last value winning, and given as that document.
        let meta = HashMap::from([("ARROW:extension:name".to_owned(), "arrow.json".to_owned())]);
        let field = Field::new("j", DataType::Utf8, true).with_metadata(meta);
        let schema = Arc::new(Schema::new(vec![field]));
        let column: ArrayRef = Arc::new(StringArray::from(vec![
            r#"{"a":1,"b":2}"#,
            r#"{"a":1,"a":2}"#,
        ]));
        let batch = RecordBatch::try_new(schema, vec![column]).unwrap();
        assert_eq!(check(&batch), (1, 1));
        let plan = Plan::new(&batch.schema(), Ids::Counter(String::new()));
        let docs = build(&batch, &plan, 1, &crate::write_options(), true).unwrap();
        let (_, _, doc) = docs.into_iter().nth(1).unwrap().unwrap();
        let json = Document::new(doc.as_slice()).unwrap().to_json();
        assert_eq!(json, r#"{"j":{"a":2}}"#);
    }
}
