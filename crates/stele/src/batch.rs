//! Batches: operations across collections committed all or nothing.

use crate::error::{Error, Result};
use crate::ids::{IdKind, int_key};
use crate::internal::check_collection_name;
use crate::wal::LoggedOp;
use stele_doc::{Document, DocumentWriter, WriteOptions};

/// Longest document id, in bytes.
pub const MAX_ID_BYTES: usize = 1024;

pub(crate) fn check_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_ID_BYTES {
        "it is longer than 1024 bytes"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.chars().take(80).collect(),
        reason,
    })
}

/// How the database turns JSON text into documents ([`Batch::put_json`], imports, the
/// Python package): [`WriteOptions::default`] without LZ4 compression of long strings. A
/// compressed collection's zstd shrinks long strings far better when they are stored plain:
/// LZ4-compressed strings made packed blocks of `mongodb-samples/books` 30 % bigger and of
/// `debian-packages` 5 % (`docs/benchmarks.md`, "Document store"); a collection with
/// compression off stores documents as they are, which is what turning it off asks for.
/// Documents given as bytes ([`Batch::put_document`]) are stored as they are.
pub fn write_options() -> WriteOptions {
    WriteOptions::default().compress_strings(None)
}

/// Total JSON text from which [`Batch::put_json_many`] converts on more than one thread:
/// below it, starting threads costs more than it saves (about 20 us each, the time to
/// convert some 5 KB).
pub const PARALLEL_JSON_BYTES: usize = 64 * 1024;

/// The logged put of stored value `value` as document `id` of `collection`.
fn put_op(collection: &str, id: &str, value: std::sync::Arc<[u8]>) -> LoggedOp {
    LoggedOp::Put {
        collection: collection.to_owned(),
        id: id.as_bytes().to_vec(),
        value,
    }
}

/// Converts `docs` (the ones from position `start` of a [`Batch::put_json_many`]) into put
/// operations of `collection`.
fn convert_all<I: AsRef<str>, J: AsRef<[u8]>>(
    writer: &mut DocumentWriter,
    collection: &str,
    docs: &[(I, J)],
    start: usize,
) -> Result<Vec<LoggedOp>> {
    let mut ops = Vec::with_capacity(docs.len());
    let mut buf = Vec::new();
    for (at, (id, json)) in docs.iter().enumerate() {
        let id = id.as_ref();
        let bad = |source: Error| Error::InvalidDocument {
            collection: collection.to_owned(),
            position: start + at,
            id: id.chars().take(80).collect(),
            source: Box::new(source),
        };
        check_id(id).map_err(bad)?;
        let value = crate::stored::encode_json(writer, json.as_ref(), &mut buf)
            .map_err(|e| bad(Error::Document(e)))?;
        ops.push(put_op(collection, id, value));
    }
    Ok(ops)
}

/// Splits `docs` into at most `parts` consecutive runs of about equal JSON bytes.
fn split_by_bytes<I, J: AsRef<[u8]>>(
    docs: &[(I, J)],
    parts: usize,
    total_bytes: usize,
) -> Vec<&[(I, J)]> {
    let share = total_bytes.div_ceil(parts.max(1)).max(1);
    let mut chunks = Vec::with_capacity(parts);
    let (mut start, mut bytes) = (0, 0);
    for (at, (_, json)) in docs.iter().enumerate() {
        bytes += json.as_ref().len();
        if bytes >= share && chunks.len() + 1 < parts {
            chunks.push(docs.get(start..=at).unwrap_or_default());
            (start, bytes) = (at + 1, 0);
        }
    }
    if start < docs.len() {
        chunks.push(docs.get(start..).unwrap_or_default());
    }
    chunks
}

/// Puts and deletes across collections, applied by [`Database::commit`](crate::Database::commit)
/// all or nothing. Documents are converted and checked when added, so a bad one is
/// reported here, before anything is written.
#[derive(Debug)]
pub struct Batch {
    ops: Vec<LoggedOp>,
    /// The kind of id each operation of `ops` was given with (`crate::db::id_kinds`).
    kinds: Vec<IdKind>,
    writer: DocumentWriter,
    /// The stored form of the document being converted, reused.
    buf: Vec<u8>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    pub(crate) fn new() -> Self {
        Batch {
            ops: Vec::new(),
            kinds: Vec::new(),
            writer: DocumentWriter::with_options(write_options()),
            buf: Vec::new(),
        }
    }

    /// Inserts or replaces document `id` of `collection` with JSON text (one value, usually
    /// an object). The collection is created on first write.
    pub fn put_json(&mut self, collection: &str, id: &str, json: &[u8]) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        let value = crate::stored::encode_json(&mut self.writer, json, &mut self.buf)?;
        self.ops.push(put_op(collection, id, value));
        self.kinds.push(IdKind::Text);
        Ok(())
    }

    /// Inserts or replaces document `id` of `collection`, an integer id, with JSON text.
    /// The first integer id written to an empty collection makes it a collection of
    /// integer ids, in numeric order ([`IdKind::Int`]); a collection of text ids refuses
    /// it when the batch is committed ([`Error::IdKindMismatch`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = stele::Database::open(dir.path())?;
    /// let mut batch = db.batch();
    /// for id in [10, -3, 2] {
    ///     batch.put_json_int("things", id, br#"{"n": 1}"#)?;
    /// }
    /// db.commit(batch)?;
    /// let snap = db.snapshot();
    /// assert_eq!(snap.id_kind("things"), Some(stele::IdKind::Int));
    /// let ids: Vec<String> = snap.ids("things").collect::<stele::Result<_>>()?;
    /// assert_eq!(ids, ["-3", "2", "10"]);
    /// assert!(snap.get("things", "10")?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_json_int(&mut self, collection: &str, id: i64, json: &[u8]) -> Result<()> {
        check_collection_name(collection)?;
        let value = crate::stored::encode_json(&mut self.writer, json, &mut self.buf)?;
        self.ops.push(put_op(collection, &int_key(id), value));
        self.kinds.push(IdKind::Int);
        Ok(())
    }

    /// Inserts or replaces many documents of `collection` by integer id, as
    /// [`put_json_many`](Self::put_json_many) does by text id (see
    /// [`put_json_int`](Self::put_json_int) for what integer ids do).
    pub fn put_json_many_int<J: AsRef<[u8]> + Sync>(
        &mut self,
        collection: &str,
        docs: &[(i64, J)],
    ) -> Result<()> {
        let keyed: Vec<(String, &[u8])> = docs
            .iter()
            .map(|(id, json)| (int_key(*id), json.as_ref()))
            .collect();
        self.put_json_many(collection, &keyed)?;
        let start = self.kinds.len() - docs.len();
        self.kinds[start..].fill(IdKind::Int);
        Ok(())
    }

    /// Inserts or replaces document `id`, an integer id, with a document already in
    /// Stele's binary format (validated), as [`put_document`](Self::put_document) does.
    pub fn put_document_int(&mut self, collection: &str, id: i64, doc: &[u8]) -> Result<()> {
        self.put_document(collection, &int_key(id), doc)?;
        if let Some(kind) = self.kinds.last_mut() {
            *kind = IdKind::Int;
        }
        Ok(())
    }

    /// Deletes document `id`, an integer id, of `collection` (nothing happens if it does
    /// not exist).
    pub fn delete_int(&mut self, collection: &str, id: i64) -> Result<()> {
        check_collection_name(collection)?;
        self.push(collection, &int_key(id), None);
        if let Some(kind) = self.kinds.last_mut() {
            *kind = IdKind::Int;
        }
        Ok(())
    }

    /// Inserts or replaces many documents of `collection`, each given as `(id, JSON text)`,
    /// converting them on all cores when there is enough text to share (at least
    /// [`PARALLEL_JSON_BYTES`]; a single thread below it). The same as calling
    /// [`put_json`](Self::put_json) for each in order, but all or nothing: if an id or a
    /// text is bad, [`Error::InvalidDocument`] names the first bad one (its position in
    /// `docs` and its id) and the batch is left as it was.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = stele::Database::open(dir.path())?;
    /// let mut batch = db.batch();
    /// let docs = [("a", &br#"{"n": 1}"#[..]), ("b", br#"{"n": 2}"#)];
    /// batch.put_json_many("things", &docs)?;
    /// db.commit(batch)?;
    /// assert_eq!(db.snapshot().count("things"), 2);
    ///
    /// let mut batch = db.batch();
    /// let err = batch.put_json_many("things", &[("c", &b"{}"[..]), ("d", b"{nope")]).unwrap_err();
    /// assert!(err.to_string().contains("document 1 (id \"d\")"), "{err}");
    /// assert!(batch.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_json_many<I, J>(&mut self, collection: &str, docs: &[(I, J)]) -> Result<()>
    where
        I: AsRef<str> + Sync,
        J: AsRef<[u8]> + Sync,
    {
        check_collection_name(collection)?;
        let total_bytes: usize = docs.iter().map(|(_, json)| json.as_ref().len()).sum();
        let threads = crate::cores::cores();
        let ops = if threads < 2 || docs.len() < 2 || total_bytes < PARALLEL_JSON_BYTES {
            convert_all(&mut self.writer, collection, docs, 0)?
        } else {
            let chunks = split_by_bytes(docs, threads, total_bytes);
            let mut starts = Vec::with_capacity(chunks.len());
            let mut start = 0;
            for chunk in &chunks {
                starts.push(start);
                start += chunk.len();
            }
            let (first, rest) = chunks.split_first().unwrap_or((&docs, &[]));
            let writer = &mut self.writer;
            let results = std::thread::scope(|s| {
                // A run whose thread cannot be started (the process is out of threads or
                // memory) is converted here afterwards: slower, not an error.
                let handles: Vec<_> = rest
                    .iter()
                    .zip(starts.iter().skip(1))
                    .map(|(&chunk, &start)| {
                        let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                            let mut writer = DocumentWriter::with_options(write_options());
                            convert_all(&mut writer, collection, chunk, start)
                        });
                        (chunk, start, spawned.ok())
                    })
                    .collect();
                let mut results = vec![convert_all(writer, collection, first, 0)];
                for (chunk, start, handle) in handles {
                    results.push(match handle {
                        // A panic in a conversion thread is a bug; it resumes here, on the
                        // caller's thread, as any panic of `put_json` would.
                        Some(handle) => handle
                            .join()
                            .unwrap_or_else(|p| std::panic::resume_unwind(p)),
                        None => convert_all(writer, collection, chunk, start),
                    });
                }
                results
            });
            let mut ops = Vec::with_capacity(docs.len());
            // In order: the first error is the one of the lowest position.
            for result in results {
                ops.extend(result?);
            }
            ops
        };
        debug_assert_eq!(ops.len(), docs.len());
        self.kinds
            .extend(std::iter::repeat_n(IdKind::Text, ops.len()));
        self.ops.extend(ops);
        Ok(())
    }

    /// Inserts or replaces with a document already in Stele's binary format; the bytes are
    /// validated.
    pub fn put_document(&mut self, collection: &str, id: &str, doc: &[u8]) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        Document::new(doc)?;
        self.push(collection, id, Some(doc));
        Ok(())
    }

    /// Deletes document `id` of `collection` (nothing happens if it does not exist).
    pub fn delete(&mut self, collection: &str, id: &str) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        self.push(collection, id, None);
        Ok(())
    }

    /// Puts a document this crate's writer produced into any collection, internal ones
    /// included (no name check, no second validation).
    pub(crate) fn put_trusted(&mut self, collection: &str, id: &str, doc: &[u8]) {
        self.push(collection, id, Some(doc));
    }

    fn push(&mut self, collection: &str, id: &str, doc: Option<&[u8]>) {
        self.ops.push(match doc {
            Some(doc) => put_op(collection, id, crate::stored::encode(doc)),
            None => LoggedOp::Delete {
                collection: collection.to_owned(),
                id: id.as_bytes().to_vec(),
            },
        });
        self.kinds.push(IdKind::Text);
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn into_ops(self) -> Vec<LoggedOp> {
        self.ops
    }

    /// The operations and the kind of id each was given with.
    pub(crate) fn into_parts(self) -> (Vec<LoggedOp>, Vec<IdKind>) {
        (self.ops, self.kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::split_by_bytes;

    #[test]
    fn runs_cover_every_document_in_order_with_about_equal_bytes() {
        let sizes = [5usize, 1, 1, 1, 9, 2, 2, 2, 2, 3, 0, 40, 1];
        let docs: Vec<(usize, Vec<u8>)> = sizes.iter().map(|&n| (n, vec![b'x'; n])).collect();
        let total: usize = sizes.iter().sum();
        for parts in 1..=20 {
            let runs = split_by_bytes(&docs, parts, total);
            assert!(
                !runs.is_empty() && runs.len() <= parts,
                "{parts}: {}",
                runs.len()
            );
            let flat: Vec<usize> = runs.iter().flat_map(|r| r.iter().map(|d| d.0)).collect();
            assert_eq!(flat, sizes, "{parts} parts");
            assert!(runs.iter().all(|r| !r.is_empty()));
        }
        // Two parts of 69 bytes: the first run ends once it holds half of them.
        let runs = split_by_bytes(&docs, 2, total);
        assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), [12, 1]);
        let even: Vec<(u8, Vec<u8>)> = (0..8).map(|i| (i, vec![0; 10])).collect();
        let runs = split_by_bytes(&even, 4, 80);
        assert_eq!(
            runs.iter().map(|r| r.len()).collect::<Vec<_>>(),
            [2, 2, 2, 2]
        );
    }
}
