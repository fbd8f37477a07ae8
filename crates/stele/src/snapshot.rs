//! Consistent reads of every collection.

use crate::error::Result;
use crate::ids::{IdKind, id_text};
use crate::state::State;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use stele_doc::Document;

/// A consistent view of every collection as of one commit. Cheap to take and to clone;
/// `Send + Sync`. Holds its tables on disk while it lives.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) state: Arc<State>,
}

/// A stored document, borrowed from the snapshot's files when stored uncompressed.
#[derive(Debug, Clone)]
pub struct Doc<'a> {
    bytes: crate::stored::DocBytes<'a>,
}

impl Doc<'_> {
    /// The document in Stele's binary format.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A reader over the document (validated first: stored bytes are not trusted blindly).
    /// A document read from a cached block of packed documents is validated on its first
    /// read only: the decoded block's bytes never change, so later reads reuse the result.
    pub fn document(&self) -> Result<Document<&[u8]>> {
        self.bytes.document()
    }

    /// A reader over the document without validating it again: the fast path for
    /// documents read from a database this program's Stele wrote.
    ///
    /// # Safety
    ///
    /// The database's files must not have been altered by anything but Stele. Every
    /// document was validated when it was written, and the log and tables are checksummed,
    /// so accidental corruption is caught before this point; deliberately crafted files
    /// with valid checksums are not, and an invalid document read this way may produce
    /// `str` values that are not UTF-8 (undefined behaviour). With files of unknown
    /// origin, use [`document`](Self::document).
    pub unsafe fn document_unchecked(&self) -> Document<&[u8]> {
        // SAFETY: the caller guarantees the bytes are a document Stele wrote and validated
        // (see above), which is `Document::new_unchecked`'s requirement.
        unsafe { Document::new_unchecked(&*self.bytes) }
    }

    /// The document as JSON text, keys in their original order.
    pub fn to_json(&self) -> Result<String> {
        Ok(self.document()?.to_json())
    }

    /// The bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_owned()
    }
}

impl Snapshot {
    pub(crate) fn new(state: Arc<State>) -> Self {
        Snapshot { state }
    }

    /// Sequence number of the last batch this snapshot contains (0 for none).
    pub fn seq(&self) -> u64 {
        self.state.seq
    }

    /// Names of the collections, sorted (internal ones, starting with `_`, left out).
    pub fn collections(&self) -> Vec<&str> {
        self.state
            .collections
            .keys()
            .map(String::as_str)
            .filter(|c| !crate::internal::is_internal(c))
            .collect()
    }

    /// Names of every collection, sorted, internal ones included: `_meta` (dictionaries and
    /// settings), `_packs/<collection>` (packed blocks) and `_import-…/<collection>` (the
    /// staging collection of an import in progress). For inspection and tests; their
    /// contents are not part of the API.
    pub fn all_collections(&self) -> Vec<&str> {
        self.state.collections.keys().map(String::as_str).collect()
    }

    /// Whether `collection` exists: it has been written to, or has an index (an index can be
    /// created before the first document). Front ends use it to tell a misspelt name from an
    /// empty collection.
    pub fn has_collection(&self, collection: &str) -> bool {
        self.collections().contains(&collection) || self.index_states(collection).next().is_some()
    }

    /// Number of documents in `collection` (0 if it does not exist).
    pub fn count(&self, collection: &str) -> u64 {
        crate::collection::count(&self.state, collection)
    }

    /// The document `id` of `collection`. In a collection of integer ids
    /// ([`Snapshot::id_kind`]) `id` is the integer as text (`"42"`, `"-7"`); a text id
    /// there is an [`Error::IdKindMismatch`](crate::Error::IdKindMismatch).
    pub fn get(&self, collection: &str, id: &str) -> Result<Option<Doc<'_>>> {
        match self.key(collection, id)? {
            Some(key) => self.get_key(collection, &key),
            None => Ok(None),
        }
    }

    /// The document whose stored key is `key` (`crate::ids`: an integer id's is not its
    /// text).
    pub(crate) fn get_key(&self, collection: &str, key: &[u8]) -> Result<Option<Doc<'_>>> {
        Ok(crate::collection::get(&self.state, collection, key)?.map(|bytes| Doc { bytes }))
    }

    /// True if document `id` exists in `collection` (`id` as [`get`](Self::get) takes it).
    pub fn contains(&self, collection: &str, id: &str) -> Result<bool> {
        match self.key(collection, id)? {
            Some(key) => crate::collection::contains(&self.state, collection, &key),
            None => Ok(false),
        }
    }

    /// The kind of ids `collection` holds, or `None` while it holds no documents (its
    /// first documents decide: [`Batch::put_json_int`](crate::Batch::put_json_int) or an
    /// import whose id field holds integers makes a collection of integer ids).
    pub fn id_kind(&self, collection: &str) -> Option<IdKind> {
        self.state.id_kind(collection)
    }

    /// The stored key of id `id` of `collection`; `None` for a text id in an empty
    /// collection marked for integers (no document has it).
    fn key<'i>(&self, collection: &str, id: &'i str) -> Result<Option<std::borrow::Cow<'i, [u8]>>> {
        let kind = self.state.marked_kind(collection);
        match crate::ids::key_for(collection, kind, id) {
            Ok(key) => Ok(Some(key)),
            Err(_) if self.state.id_kind(collection).is_none() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every document of `collection` in id order (byte order of the UTF-8 ids; numeric
    /// order in a collection of integer ids, whose ids come as the integers' text).
    pub fn iter<'a>(
        &'a self,
        collection: &'a str,
    ) -> impl Iterator<Item = Result<(String, Doc<'a>)>> + 'a {
        self.range(collection, ..)
    }

    /// The documents of `collection` whose id lies in `ids`, in id order (byte order of the
    /// UTF-8 ids): `snap.range("users", "a".."n")`, `snap.range("users", "m"..)`. Documents
    /// are read (and decompressed) one at a time, as the iterator advances.
    ///
    /// ```
    /// # fn main() -> stele::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| stele::Error::Io { op: "temp", path: "".into(), source: e })?;
    /// let db = stele::Database::open(dir.path())?;
    /// let mut batch = db.batch();
    /// for id in ["ant", "bee", "cat", "dog"] {
    ///     batch.put_json("animals", id, br#"{"legs": 4}"#)?;
    /// }
    /// db.commit(batch)?;
    /// let snap = db.snapshot();
    /// let ids: Vec<String> = snap
    ///     .range("animals", "b".."d")
    ///     .map(|entry| entry.map(|(id, _doc)| id))
    ///     .collect::<stele::Result<_>>()?;
    /// assert_eq!(ids, ["bee", "cat"]);
    /// # Ok(()) }
    /// ```
    pub fn range<'a, 'r, R: RangeBounds<&'r str>>(
        &'a self,
        collection: &'a str,
        ids: R,
    ) -> impl Iterator<Item = Result<(String, Doc<'a>)>> + 'a {
        let kind = self.state.marked_kind(collection);
        self.entries(collection, &ids, true)
            .filter_map(move |entry| match entry {
                Ok((id, Some(bytes))) => Some(Ok((id_text(kind, id), Doc { bytes }))),
                Ok((_, None)) => None,
                Err(e) => Some(Err(e)),
            })
    }

    /// The ids of `collection` in id order, without reading (or decompressing) the
    /// documents written since the last compaction (packed documents come in blocks, which
    /// are decoded for their ids).
    pub fn ids<'a>(&'a self, collection: &'a str) -> impl Iterator<Item = Result<String>> + 'a {
        self.ids_in(collection, ..)
    }

    /// The ids of `collection` that lie in `ids`, in id order (see [`ids`](Self::ids)).
    pub fn ids_in<'a, 'r, R: RangeBounds<&'r str>>(
        &'a self,
        collection: &'a str,
        ids: R,
    ) -> impl Iterator<Item = Result<String>> + 'a {
        let kind = self.state.marked_kind(collection);
        self.entries(collection, &ids, false)
            .map(move |entry| entry.map(|(id, _)| id_text(kind, id)))
    }

    fn entries<'a, 'r, R: RangeBounds<&'r str>>(
        &'a self,
        collection: &'a str,
        ids: &R,
        decode: bool,
    ) -> Box<dyn Iterator<Item = crate::collection::Entry<'a>> + 'a> {
        let kind = self.state.marked_kind(collection);
        let bounds = match byte_bounds(collection, kind, ids) {
            Ok(bounds) => bounds,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let (lo, hi) = as_slices(&bounds);
        match crate::collection::Entries::new(&self.state, collection, lo, hi, decode) {
            Ok(entries) => Box::new(entries),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }

    /// Tables per collection (base first), for statistics.
    pub fn layers(&self, collection: &str) -> Vec<stele_table::TableId> {
        self.state
            .collections
            .get(collection)
            .map(|m| m.layer_ids())
            .unwrap_or_default()
    }

    /// Facts about every index of `collection`, by name.
    pub fn index_stats(&self, collection: &str) -> Vec<crate::IndexStats> {
        crate::index::stats::index_stats(&self.state, collection)
    }

    /// The indexes of `collection`, by name.
    pub fn indexes(&self, collection: &str) -> Vec<crate::IndexDef> {
        self.index_states(collection)
            .map(|ix| (*ix.def).clone())
            .collect()
    }

    pub(crate) fn index_states<'a>(
        &'a self,
        collection: &'a str,
    ) -> impl Iterator<Item = &'a crate::state::IndexState> + 'a {
        self.state.indexes_of(collection)
    }

    /// Number of compression dictionaries `collection` has.
    pub fn dictionaries(&self, collection: &str) -> usize {
        self.state.dicts.get(collection).map_or(0, |d| d.len())
    }

    /// Bytes of the compression dictionaries `collection` has, as stored in the meta
    /// collection (not counted in [`CollectionStats`]; each one is kept while documents
    /// may use it).
    pub fn dictionary_bytes(&self, collection: &str) -> Result<u64> {
        let Some(meta) = self.state.collections.get(crate::internal::META) else {
            return Ok(0);
        };
        let prefix = crate::internal::MetaKey::dicts_of(collection);
        let mut total = 0u64;
        for entry in meta.prefix(prefix.as_bytes()) {
            total += entry?.1.len() as u64;
        }
        Ok(total)
    }

    /// Facts about `collection` (zeros if it does not exist).
    pub fn stats(&self, collection: &str) -> CollectionStats {
        let mut stats = CollectionStats {
            name: collection.to_owned(),
            documents: self.count(collection),
            layers: 0,
            table_bytes: 0,
            stored_bytes: 0,
            unsaved_changes: 0,
            packed_blocks: 0,
            pack_bytes: 0,
            index_bytes: crate::index::stats::index_bytes(&self.state, Some(collection)),
        };
        if let Some(map) = self.state.collections.get(collection) {
            stats.unsaved_changes = map.unsaved_changes();
            for (_, t) in map.table_stats() {
                stats.layers += 1;
                stats.table_bytes += t.file_bytes;
                stats.stored_bytes += t.raw_value_bytes;
            }
        }
        if let Some(packs) = self
            .state
            .collections
            .get(&crate::internal::packs_name(collection))
        {
            stats.packed_blocks = packs.len();
            for (_, t) in packs.table_stats() {
                stats.table_bytes += t.file_bytes;
                stats.stored_bytes += t.raw_value_bytes;
                stats.pack_bytes += t.file_bytes;
            }
        }
        stats
    }

    /// The documents of `collection`'s packed blocks by stored form (whole or elided text
    /// forms, the others) and the bytes their keys and values take: decodes every block.
    /// For tests and benchmarks; not part of the supported API.
    #[doc(hidden)]
    pub fn packed_forms(&self, collection: &str) -> Result<crate::pack::forms::PackedForms> {
        crate::pack::forms::packed_forms(&self.state, collection)
    }

    /// How much compression shrinks `collection`: the bytes of its stored values before and
    /// after compression (zeros if it does not exist). One pass over its values reading only
    /// their headers, no decompression: the documents of its map as stored (the newest
    /// version of each; removal marks skipped) and its packed blocks, whose bytes before
    /// compression are their decoded frames (ids, lengths and documents, or the documents'
    /// stream forms in a stream block, which are 0.6-1.1x the documents' size; including
    /// versions that newer writes replaced until the next compaction repacks them).
    ///
    /// ```no_run
    /// # fn main() -> stele::Result<()> {
    /// let db = stele::Database::open("/tmp/shop")?;
    /// let c = db.snapshot().compression_stats("orders")?;
    /// println!("{:.2}x ({} bytes -> {})", c.ratio(), c.raw_bytes, c.stored_bytes);
    /// # Ok(()) }
    /// ```
    pub fn compression_stats(&self, collection: &str) -> Result<CompressionStats> {
        let mut c = CompressionStats::default();
        let mut add = |h: &crate::compress::Header, stored_bytes: usize| {
            c.raw_bytes += h.raw_len;
            c.stored_bytes += stored_bytes as u64;
        };
        crate::collection::for_each_value_header(&self.state, collection, &mut add)?;
        crate::collection::for_each_block_header(&self.state, collection, &mut add)?;
        Ok(c)
    }
}

/// The bytes of a collection's stored values before and after compression, from
/// [`Snapshot::compression_stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompressionStats {
    /// Bytes before compression: documents as Stele documents, blocks as decoded frames
    /// (stream blocks: with their documents' stream forms).
    pub raw_bytes: u64,
    /// Bytes as stored (headers included).
    pub stored_bytes: u64,
}

impl CompressionStats {
    /// `raw_bytes / stored_bytes`: 3.0 means compression stores a third of the bytes; 1.0
    /// (or a little less, for headers) when nothing is compressed or nothing is stored.
    pub fn ratio(&self) -> f64 {
        if self.stored_bytes == 0 {
            1.0
        } else {
            self.raw_bytes as f64 / self.stored_bytes as f64
        }
    }
}

/// Facts about one collection in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectionStats {
    /// The collection's name.
    pub name: String,
    /// Number of documents.
    pub documents: u64,
    /// Tables holding it (a base and diffs); 0 before the first checkpoint.
    pub layers: usize,
    /// Bytes on disk of those table files and of the packs table (blocks of packed
    /// documents).
    pub table_bytes: u64,
    /// Bytes of the stored values in those tables (documents as stored, after any
    /// compression, and blocks of packed documents; diffs count superseded versions too,
    /// and blocks the documents no longer packed in them, until compaction).
    pub stored_bytes: u64,
    /// Documents changed since the last checkpoint (held in memory and in the log).
    pub unsaved_changes: usize,
    /// Blocks of packed documents (see [`DatabaseOptions::pack_block_bytes`](crate::DatabaseOptions::pack_block_bytes)).
    pub packed_blocks: u64,
    /// Bytes on disk of the table holding those blocks (part of `table_bytes`).
    pub pack_bytes: u64,
    /// Bytes on disk of the tables of the collection's indexes (not part of `table_bytes`;
    /// per index: [`Snapshot::index_stats`]).
    pub index_bytes: u64,
}

/// Id bounds as owned byte bounds of the collection's map (text ids are stored as their
/// UTF-8, integers as `crate::ids` keys), so that iterators need not borrow the caller's
/// bounds.
type OwnedBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn byte_bounds<'r>(
    collection: &str,
    kind: IdKind,
    ids: &impl RangeBounds<&'r str>,
) -> Result<OwnedBounds> {
    let key = |b: Bound<&&str>| -> Result<Bound<Vec<u8>>> {
        Ok(match b {
            Bound::Included(s) => {
                Bound::Included(crate::ids::key_for(collection, kind, s)?.into_owned())
            }
            Bound::Excluded(s) => {
                Bound::Excluded(crate::ids::key_for(collection, kind, s)?.into_owned())
            }
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Ok((key(ids.start_bound())?, key(ids.end_bound())?))
}

fn as_slices(bounds: &OwnedBounds) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (
        bounds.0.as_ref().map(Vec::as_slice),
        bounds.1.as_ref().map(Vec::as_slice),
    )
}
