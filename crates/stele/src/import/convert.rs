//! Converting records to documents on every core, a batch at a time, while the importer
//! reads the next batch ([`Conversion`]).

use super::Ids;
use super::options::{IResult, ImportError, NON_OBJECT_FIX};
use super::pending::RawRecord;
use crate::batch::check_id;
use crate::compress::{elide, is_text_form, text_form_rebuilds};
use crate::error::Error;
use crate::ids::{IdKind, int_key};
use rayon::prelude::*;
use std::sync::mpsc;
use stele_doc::{CachedPath, Document, DocumentWriter, DuplicateKeys, Value, WriteOptions, stream};

/// Records converted together, in input order: each one's id (as stored: an integer id is
/// its `crate::ids` key), the id's kind and its document (or its text form, see
/// [`convert_all`]); or where (line, column) and why it is bad. Held in a few buffers of
/// many records each, not two allocations per record: made on the pool's threads and freed
/// on the importing one, those left each thread's allocator holding a share of the
/// import's memory (4.5M small records: 283 MiB at the peak for a 256 MiB budget).
pub(super) struct Converted {
    chunks: Vec<Chunk>,
}

/// Converted records one after the other: ids and values back to back in `bytes`.
struct Chunk {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

enum Entry {
    Good {
        id_len: usize,
        kind: IdKind,
        value_len: usize,
    },
    Bad(u64, Option<u64>, String),
}

/// One converted record: its id, kind and value, or the bad record's line, column and
/// reason.
pub(super) type Record<'c> = Result<(&'c str, IdKind, &'c [u8]), (u64, Option<u64>, String)>;

impl Converted {
    /// The records, in input order.
    pub(super) fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        self.chunks.iter().flat_map(|chunk| {
            let mut at = 0usize;
            chunk.entries.iter().map(move |e| match e {
                Entry::Good {
                    id_len,
                    kind,
                    value_len,
                } => {
                    let id = chunk.bytes.get(at..at + id_len).unwrap_or_default();
                    let value = chunk
                        .bytes
                        .get(at + id_len..at + id_len + value_len)
                        .unwrap_or_default();
                    at += id_len + value_len;
                    // Written from a `String` just before.
                    let id = std::str::from_utf8(id).unwrap_or_default();
                    Ok((id, *kind, value))
                }
                Entry::Bad(line, column, reason) => Err((*line, *column, reason.clone())),
            })
        })
    }
}

/// Records per [`Chunk`]: few allocations a batch, and enough chunks for every core.
const CHUNK_RECORDS: usize = 512;

/// What a conversion sends back: its records and their conversions (or the panic that
/// stopped it).
type Done = (Vec<RawRecord>, std::thread::Result<Converted>);

/// A batch of records being converted on the pool: the importer reads the next batch
/// meanwhile, then [`Conversion::wait`]s for this one and hands it on in input order.
pub(super) struct Conversion {
    done: mpsc::Receiver<Done>,
}

impl Conversion {
    /// Starts converting the records of `text` (each ending where its record says) with
    /// `write`, ids from `ids`, non-objects wrapped under `wrap` (else refused), keeping
    /// text forms where `texts` (see [`convert_all`]).
    pub(super) fn start(
        text: Vec<u8>,
        records: Vec<RawRecord>,
        write: WriteOptions,
        ids: Ids,
        wrap: Option<String>,
        texts: bool,
    ) -> Conversion {
        let (sender, done) = mpsc::channel();
        rayon::spawn(move || {
            let converted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                convert_all(&text, &records, &write, &ids, wrap.as_deref(), texts)
            }));
            // The receiver is gone only if the import already failed.
            let _ = sender.send((records, converted));
        });
        Conversion { done }
    }

    /// The records and their conversions, once done.
    pub(super) fn wait(self) -> IResult<(Vec<RawRecord>, Converted)> {
        let lost = || {
            ImportError::from(Error::CommitFailed {
                reason: "a thread converting the import's records stopped (it panicked)".into(),
            })
        };
        let (records, converted) = self.done.recv().map_err(|_| lost())?;
        Ok((records, converted.map_err(|_| lost())?))
    }
}

/// Converts the records of `text` on every core, in order. With `texts` (a bulk import,
/// whose packer takes text forms: `crate::compress::to_document`), a record whose JSON text
/// (without the blanks around it) rebuilds exactly its document is handed on as that text,
/// the text form, instead of the document: it packs smaller, and its stream form need not
/// be made and checked.
pub(super) fn convert_all(
    text: &[u8],
    records: &[RawRecord],
    write: &WriteOptions,
    ids: &Ids,
    wrap: Option<&str>,
    texts: bool,
) -> Converted {
    let ends: Vec<usize> = records.iter().map(|r| r.end).collect();
    let parts = crate::bytes::split_at_ends(text, &ends);
    let pairs: Vec<(&[u8], &RawRecord)> = parts.into_iter().zip(records).collect();
    let chunks = pairs
        .par_chunks(CHUNK_RECORDS)
        .map_init(
            || {
                let check = texts.then(|| DocumentWriter::with_options(stream::write_options()));
                let strict = (texts && parses_as_streams(write))
                    .then(|| DocumentWriter::with_options(strict_options(write)));
                (
                    Writers {
                        user: DocumentWriter::with_options(write.clone()),
                        strict,
                    },
                    ids.clone(),
                    check,
                    (Vec::new(), Vec::new()),
                )
            },
            |(writers, ids, check, scratch), pairs| {
                let text_bytes: usize = pairs.iter().map(|(t, _)| t.len()).sum();
                let mut chunk = Chunk {
                    bytes: Vec::with_capacity(text_bytes + 16 * pairs.len()),
                    entries: Vec::with_capacity(pairs.len()),
                };
                for (text, r) in pairs {
                    let converted = convert(writers, ids, text, r.at, r.stem.as_deref(), wrap);
                    let (id, kind, Parsed { doc, rebuilds }) = match converted {
                        Ok(c) => c,
                        Err((line, column, reason)) => {
                            chunk.entries.push(Entry::Bad(line, column, reason));
                            continue;
                        }
                    };
                    chunk.bytes.extend_from_slice(id.as_bytes());
                    let start = chunk.bytes.len();
                    store_form(
                        text,
                        (&id, kind),
                        (&doc, rebuilds),
                        ids,
                        check,
                        scratch,
                        &mut chunk.bytes,
                    );
                    chunk.entries.push(Entry::Good {
                        id_len: id.len(),
                        kind,
                        value_len: chunk.bytes.len() - start,
                    });
                }
                chunk
            },
        )
        .collect();
    Converted { chunks }
}

/// The writers a conversion thread parses records with: `user` under the import's write
/// options, and `strict` (where [`parses_as_streams`] holds) under [`strict_options`].
struct Writers {
    user: DocumentWriter,
    strict: Option<DocumentWriter>,
}

/// A record's document, and whether it is what [`stream::write_options`] make of the
/// record's text (so that the text, if an object's, is its text form without a check).
struct Parsed {
    doc: Vec<u8>,
    rebuilds: bool,
}

/// Whether a document written under `write` with repeated keys refused is, byte for byte,
/// the one [`stream::write_options`] (which `crate::compress::to_document` rebuilds text
/// forms with) make of the same text: the options differ at most in the depth limit (that
/// of `write` is at most the stream options', the format's own limit, so a text within it
/// is within theirs and the limit changes no byte) and in the scanner (which changes no
/// byte either), and with repeated keys refused in both the duplicate policy does not
/// matter. Then one parse of a record checks its text form, in place of two: about a
/// tenth of the CPU of an import of small records. Without repeated keys the writer's
/// policy changes nothing (`dedup_sorted` only reads it when two keys are equal), so a
/// document of `write` itself is the same.
pub(crate) fn parses_as_streams(write: &WriteOptions) -> bool {
    strict_options(write)
        .max_depth(usize::MAX)
        .portable_scanner(false)
        == stream::write_options()
}

/// `write` with repeated keys refused: what [`Writers::strict`] parses under.
pub(crate) fn strict_options(write: &WriteOptions) -> WriteOptions {
    write.clone().duplicate_keys(DuplicateKeys::Reject)
}

/// Appends to `out` what a record's value is stored as: without its id field (ids from a
/// field, where that rebuilds `doc`), as its text (where that rebuilds `doc`), or `doc`;
/// only `doc` when there is no `check` writer (an import not packed in blocks). Where
/// `rebuilds` ([`Parsed::rebuilds`]), a text form needs no check: `doc` is what the text
/// rebuilds.
fn store_form(
    text: &[u8],
    id: (&str, IdKind),
    (doc, rebuilds): (&[u8], bool),
    ids: &Ids,
    check: &mut Option<DocumentWriter>,
    (elided, restored): &mut (Vec<u8>, Vec<u8>),
    out: &mut Vec<u8>,
) {
    let Some(check) = check.as_mut() else {
        out.extend_from_slice(doc);
        return;
    };
    // Blanks around a JSON text change nothing in its document; `rebuilds` says `text`
    // parsed, so what is trimmed is JSON white space (all of it ASCII white space).
    let trimmed = text.trim_ascii();
    let rebuilt = rebuilds && is_text_form(trimmed);
    if let Ids::Field(_, name) = ids
        && elided_form(trimmed, name, id, (doc, rebuilt), check, (elided, restored))
    {
        out.extend_from_slice(elided);
    } else if rebuilt || text_form_rebuilds(trimmed, doc, check) {
        out.extend_from_slice(trimmed);
    } else {
        out.extend_from_slice(doc);
    }
}

/// Whether `elided` (cleared first) now holds the text form of `text` without its id
/// field `name` (`crate::compress::elide`): only if putting the id back under its key
/// rebuilds exactly `doc` (checked with `check`, as [`text_form_rebuilds`] checks whole
/// text forms; `restored` is scratch). Where `text` itself is known to rebuild `doc`
/// (`rebuilt`), a restored text equal to it byte for byte needs no check.
fn elided_form(
    text: &[u8],
    name: &str,
    (id, kind): (&str, IdKind),
    (doc, rebuilt): (&[u8], bool),
    check: &mut DocumentWriter,
    (elided, restored): (&mut Vec<u8>, &mut Vec<u8>),
) -> bool {
    elide::cut(text, name, kind, elided)
        && elide::restore(id.as_bytes(), elided, restored).is_ok()
        && ((rebuilt && restored.as_slice() == text) || text_form_rebuilds(restored, doc, check))
}

/// Where (line, column) and why a record is bad.
type BadAt = (u64, Option<u64>, String);

/// The id and the document of one record, or where and why it is bad.
fn convert(
    writers: &mut Writers,
    ids: &mut Ids,
    text: &[u8],
    at: super::spool::Origin,
    stem: Option<&str>,
    wrap: Option<&str>,
) -> Result<(String, IdKind, Parsed), BadAt> {
    // The strict writer first (see `parses_as_streams`); a text it refuses (repeated keys,
    // bad JSON) is parsed again under the import's options, which decide what it becomes
    // and what a bad record's error says. An object's document so parsed is what its text
    // rebuilds (only non-objects are wrapped below).
    let strict = writers.strict.as_mut().and_then(|w| w.from_json(text).ok());
    let rebuilds = strict.is_some() && non_object(text).is_none();
    let writer = &mut writers.user;
    let doc = match strict {
        Some(doc) => doc,
        None => writer.from_json(text).map_err(|e| match e {
            stele_doc::Error::Json {
                line,
                column,
                reason,
                ..
            } => {
                let (line, column) = (line as u64, column as u64);
                let abs_col = if line == 1 {
                    at.column + column - 1
                } else {
                    column
                };
                (
                    at.line + line - 1,
                    Some(abs_col),
                    format!("invalid JSON: {reason}"),
                )
            }
            other => (at.line, None, other.to_string()),
        })?,
    };
    let bad = |reason: String| (at.line, None, reason);
    // Checked once the text is known to be JSON, so that bad JSON is said to be that.
    let doc = match (non_object(text), wrap) {
        (None, _) => doc,
        (Some(kind), None) => {
            return Err(bad(format!(
                "the record is {kind}, not a JSON object: a collection holds objects; {NON_OBJECT_FIX}"
            )));
        }
        (Some(_), Some(field)) => writer
            .from_json(&wrap_in(field, text))
            .map_err(|e| bad(e.to_string()))?,
    };
    let (id, kind) = match ids {
        Ids::Counter(prefix) => (super::numbered_id(prefix, at.record), IdKind::Text),
        Ids::FileStem => (stem.unwrap_or_default().to_owned(), IdKind::Text),
        Ids::Field(path, name) => {
            debug_assert!(
                Document::new(doc.as_slice()).is_ok(),
                "the writer made a document that does not validate"
            );
            // SAFETY: every path above made `doc` with `DocumentWriter::from_json` just now,
            // and a writer writes only documents `stele_doc::validate` accepts: validating
            // it again to read one field was 3-4 % of an id-field import's CPU (`perf`,
            // 4.5M npm records, `docs/notes/2026-12-02-id-field-import.md`).
            let view = unsafe { Document::new_unchecked(doc.as_slice()) };
            field_id(path, &view, name).map_err(bad)?
        }
    };
    check_id(&id).map_err(|e| bad(e.to_string()))?;
    Ok((id, kind, Parsed { doc, rebuilds }))
}

/// What the JSON text `text` is when it is not an object ("a number", ...), from its first
/// byte past white space and a byte order mark; `None` for an object, and for text that is
/// not JSON at all (its conversion says what is wrong).
fn non_object(text: &[u8]) -> Option<&'static str> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    let first = text.iter().find(|b| !b.is_ascii_whitespace())?;
    Some(match first {
        b'[' => "an array",
        b'"' => "a string",
        b'-' | b'0'..=b'9' => "a number",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => return None,
    })
}

/// `{"field": text}`, the JSON text of the object a non-object record is stored as.
fn wrap_in(field: &str, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len() + text.len() + 5);
    out.push(b'{');
    crate::json_text::write_json_string(&mut out, field);
    out.push(b':');
    out.extend_from_slice(text);
    out.push(b'}');
    out
}

/// The id of `doc` at `path` (field `name`) as stored, and its kind: a string as it is,
/// an integer (`i64`) as its `crate::ids` key; else why there is none (no value there, or
/// one that is not a string or an `i64`: ids do not round floats, and an integer beyond
/// `i64` would lose its type, so both are refused with the fix).
pub(super) fn field_id(
    path: &mut CachedPath,
    doc: &Document<&[u8]>,
    name: &str,
) -> Result<(String, IdKind), String> {
    let beyond = |n: &dyn std::fmt::Display| {
        format!(
            "id field {name:?} holds {n}, an integer beyond the range of integer ids \
             ({} to {}): write such ids as strings",
            i64::MIN,
            i64::MAX
        )
    };
    match path.get(doc.root()) {
        Some(Value::String(s)) => Ok((s.to_cow().into_owned(), IdKind::Text)),
        Some(Value::Int(n)) => Ok((int_key(n), IdKind::Int)),
        Some(Value::UInt(n)) => match i64::try_from(n) {
            Ok(n) => Ok((int_key(n), IdKind::Int)),
            Err(_) => Err(beyond(&n)),
        },
        Some(Value::Decimal(d))
            if d.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit()) =>
        {
            Err(beyond(&d))
        }
        Some(v @ (Value::Float(_) | Value::Decimal(_) | Value::Scaled(_))) => Err(format!(
            "id field {name:?} holds {}, a number that is not an integer; ids must be strings or integers",
            v.to_json()
        )),
        Some(other) => Err(format!(
            "id field {name:?} is a {}; ids must be strings or integers",
            other.type_name()
        )),
        None => Err(format!("no id field {name:?} (every document needs one)")),
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;
    use crate::import::{ImportError, ImportOptions, import_reader};
    use stele_doc::{DocumentWriter, KeyOrder};

    /// The import's own write options parse each record once (its text form checked by
    /// that parse); options whose documents a text form would not rebuild do not.
    #[test]
    fn one_parse_checks_text_forms_under_the_import_options_only() {
        let import = crate::write_options();
        assert!(super::parses_as_streams(&import));
        assert!(super::parses_as_streams(
            &import.clone().max_depth(16).portable_scanner(true)
        ));
        assert!(!super::parses_as_streams(
            &import.clone().key_order(KeyOrder::Sorted)
        ));
        assert!(!super::parses_as_streams(
            &stele_doc::WriteOptions::default()
        ));
    }

    /// Records whose text the strict parse refuses (repeated keys) or whose text is not the
    /// text form (blanks inside and around, escapes, numbers spelled in many ways) come back from a bulk import as the documents the import's options
    /// make of them, byte for byte, numbered (5 MB: packed while read) and with ids from a
    /// field (sorted).
    #[test]
    fn every_record_lands_as_the_document_its_text_makes() {
        let shapes = [
            "{\"id\":\"a{i}\",\"n\":{i},\"s\":\"x{i}\"}",
            "  {\"id\":\"a{i}\", \"n\" : {i},\"s\":\"x\"}\t",
            "{\"n\":{i},\"n\":\"again\",\"id\":\"a{i}\"}",
            "{\"id\":\"a{i}\",\"o\":{\"k\":1,\"k\":2},\"z\":[1.0,1e5,-0,12345678901234567890123]}",
            "{\"b\":true,\"id\":\"a{i}\",\"u\":\"\\u00e9t\u{e9}\\n\",\"a\":null}",
            "{\"a\":[1,{\"b\":2}], \"id\" : \"a{i}\" ,\"c\":{}}",
        ];
        let lines: Vec<String> = (0..90_000)
            .map(|i| shapes[i % shapes.len()].replace("{i}", &i.to_string()))
            .collect();
        let text = lines.join("\n");
        let mut writer = DocumentWriter::with_options(crate::write_options());
        for id_field in [None, Some("id")] {
            let dir = tempfile::tempdir().expect("a folder");
            let file = dir.path().join("in.jsonl");
            std::fs::write(&file, &text).expect("the input written");
            let db = Database::open(dir.path().join("db")).expect("open");
            let mut opts = ImportOptions::new();
            if let Some(f) = id_field {
                opts = opts.id_field(f);
            }
            let report =
                crate::import::import_path(&db, "c", &file, &opts, |_| {}).expect("imported");
            assert_eq!(report.documents, lines.len() as u64);
            assert!(report.packed_bytes > 0, "a bulk import, packed in blocks");
            assert_eq!(report.packed_while_reading, id_field.is_none());
            let snap = db.snapshot();
            for (i, line) in lines.iter().enumerate() {
                let id = match id_field {
                    Some(_) => format!("a{i}"),
                    None => crate::import::numbered_id("", i as u64 + 1),
                };
                let want = writer.from_json(line.as_bytes()).expect("a document");
                let got = snap.get("c", &id).expect("a get").expect("the document");
                assert_eq!(
                    got.bytes(),
                    want.as_slice(),
                    "{id_field:?}, line {i}: {line}"
                );
            }
        }
    }

    /// 20,000 JSON lines (about 1 MB: four batches of 256 KiB) with bad records on lines
    /// 5,000 and 15,000, in different batches.
    fn input() -> String {
        (1..=20_000)
            .map(|line| match line {
                5_000 | 15_000 => "{\"n\": oops}\n".to_owned(),
                _ => format!("{{\"n\":{line},\"pad\":\"{}\"}}\n", "x".repeat(line % 40)),
            })
            .collect()
    }

    /// Whatever batch is being converted while the next is read, records are handed on in
    /// input order: the first bad record stops the import (and nothing lands), skipped
    /// ones are listed in order, and the counter ids follow the input; the same from a
    /// thread of the pool, which converts in place.
    #[test]
    fn records_are_handed_on_in_input_order_while_the_next_batch_is_read() {
        let run = |skip_bad: bool| {
            let dir = tempfile::tempdir().expect("a folder");
            let db = Database::open(dir.path()).expect("open");
            let opts = ImportOptions::new()
                .skip_bad(skip_bad)
                .memory_budget_bytes(1 << 20);
            let text = input();
            let result = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {});
            let snap = db.snapshot();
            let last = snap
                .get("c", "0000020000")
                .expect("a get")
                .map(|d| d.to_json().expect("its JSON"));
            let outcome = match result {
                Ok(r) => Ok((
                    r.documents,
                    r.bad.iter().map(|b| b.line).collect::<Vec<_>>(),
                )),
                Err(ImportError::BadRecord(bad)) => Err(bad.line),
                Err(e) => panic!("{e}"),
            };
            (outcome, snap.count("c"), last)
        };
        let stopped = run(false);
        assert_eq!(stopped, (Err(5_000), 0, None));
        let skipped = run(true);
        assert_eq!(skipped.0, Ok((19_998, vec![5_000, 15_000])));
        assert_eq!(skipped.1, 19_998);
        let last = skipped.2.clone().expect("the last record");
        assert!(last.starts_with("{\"n\":20000,"), "{last}");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool");
        assert_eq!(pool.install(|| run(false)), stopped);
        assert_eq!(pool.install(|| run(true)), skipped);
    }
}
