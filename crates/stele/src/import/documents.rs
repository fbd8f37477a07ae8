//! [`BulkImport`]: a bulk write of documents handed over in batches rather than read from
//! a file (the Python package's `put_many` of many documents). The same write as an import's
//! ([`super::bulk`]): sorted by id, packed once, switched in at the end, all or nothing.

use super::bulk::BulkWriter;
use super::options::{IResult, ImportError, ImportOptions, ImportReport};
use crate::Database;
use crate::batch::Batch;
use crate::error::Error;
use crate::ids::IdKind;
use crate::internal::check_collection_name;
use crate::pack::PackSettings;
use crate::wal::LoggedOp;

/// Documents of one collection written in bulk: [`BulkImport::add`] batches of puts, then
/// [`BulkImport::finish`] lands every one of them at once (a later put of an id replaces an
/// earlier one); dropped unfinished, nothing lands.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use stele::import::{BulkImport, ImportOptions};
/// let db = stele::Database::open("/tmp/shop")?;
/// if let Some(mut bulk) = BulkImport::new(&db, "orders", &ImportOptions::new())? {
///     let mut batch = db.batch();
///     batch.put_json("orders", "o-1", br#"{"total": 12.5}"#)?;
///     bulk.add(batch)?;
///     let report = bulk.finish()?;
///     println!("{} documents landed", report.documents);
/// }
/// # Ok(()) }
/// ```
pub struct BulkImport {
    db: Database,
    collection: String,
    writer: BulkWriter,
    added: u64,
    /// The kind of the ids: the collection's, or the first document's.
    kind: Option<IdKind>,
}

impl std::fmt::Debug for BulkImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkImport")
            .field("collection", &self.collection)
            .field("added", &self.added)
            .finish_non_exhaustive()
    }
}

impl BulkImport {
    /// A bulk write into `collection` of `db` with the memory budget and pack level of
    /// `opts`; `None` if the collection is not written in bulk (compression off, packing
    /// disabled, or [`ImportOptions::bulk`] off): commit batches instead.
    pub fn new(db: &Database, collection: &str, opts: &ImportOptions) -> IResult<Option<Self>> {
        check_collection_name(collection)?;
        let Some(settings) = db.bulk_settings(collection)?.filter(|_| opts.bulk) else {
            return Ok(None);
        };
        let (level, small_level) = opts.pack_levels();
        let settings = PackSettings { level, ..settings };
        let writer = BulkWriter::new(
            db,
            collection,
            settings,
            small_level,
            opts.memory_budget_bytes,
        )?;
        Ok(Some(BulkImport {
            db: db.clone(),
            collection: collection.to_owned(),
            writer,
            added: 0,
            kind: db.snapshot().id_kind(collection),
        }))
    }

    /// Adds the puts of `batch` (documents converted and checked when put into it). A
    /// batch that deletes, or puts into another collection, is refused whole; so is one
    /// whose ids are not of the kind of the collection's (or the first batch's) ids, as a
    /// commit would refuse it, except that a text id that writes an integer joins integers.
    pub fn add(&mut self, batch: Batch) -> IResult<()> {
        let (ops, kinds) = batch.into_parts();
        let mut docs = Vec::with_capacity(ops.len());
        let mut kind = self.kind;
        for (op, &k) in ops.iter().zip(&kinds) {
            let doc = match op {
                LoggedOp::Put {
                    collection,
                    id,
                    value,
                } if *collection == self.collection => crate::stored::raw(value).map(|d| (id, d)),
                _ => None,
            };
            let Some((id, doc)) = doc else {
                return Err(ImportError::NotPutsOf {
                    collection: self.collection.clone(),
                });
            };
            let id = key_of(&self.collection, &mut kind, id, k)?;
            docs.push((id, doc));
        }
        self.kind = kind;
        for (id, doc) in docs {
            self.writer.push(&id, doc)?;
            self.added += 1;
        }
        Ok(())
    }

    #[cfg(feature = "arrow")]
    /// Adds one document under `id`, as stored (an integer id, `kind` [`IdKind::Int`], is
    /// its `crate::ids` key): for imports that write their documents themselves (the Arrow
    /// import, `crate::arrow`). Ids of the other kind than the collection's (or the first
    /// document's) are refused, or joined, as [`Self::add`] does.
    pub(crate) fn add_document(&mut self, id: &[u8], kind: IdKind, doc: &[u8]) -> IResult<()> {
        let mut want = self.kind;
        let id = key_of(&self.collection, &mut want, id, kind)?;
        self.kind = want;
        self.writer.push(&id, doc)?;
        self.added += 1;
        Ok(())
    }

    #[cfg(feature = "arrow")]
    /// This bulk write, for an import that writes its documents itself (the Arrow import):
    /// packed at the cheaper of the two levels where a sample packs nearly as small at it,
    /// when `opts` chose no level (as the JSON import's bulk write), and its documents
    /// taken as valid, not validated again.
    ///
    /// # Safety
    ///
    /// Every document later added must be one a `stele_doc::DocumentWriter` just finished
    /// (which `stele_doc::validate` accepts).
    pub(crate) unsafe fn for_written_documents(self, opts: &ImportOptions) -> Self {
        let (_, small_level) = opts.pack_levels();
        let mut writer = self.writer;
        if opts.pack_level.is_none() {
            writer = writer.level_from_sample(small_level);
        }
        BulkImport {
            // SAFETY: the caller promised documents a `DocumentWriter` wrote, which is what
            // `BulkWriter::converted` asks.
            writer: unsafe { writer.converted() },
            ..self
        }
    }

    #[cfg(feature = "parquet")]
    /// The most documents and bytes a sample for [`Self::streaming`] should hold for an
    /// import of about `est_doc_bytes` bytes of documents (`None` once streaming): what the
    /// sorted write's own reservoir would train on (`BulkWriter::sample_limits`).
    pub(crate) fn sample_limits(&self, est_doc_bytes: u64) -> Option<(usize, usize)> {
        self.writer.sample_limits(est_doc_bytes)
    }

    #[cfg(feature = "parquet")]
    /// Whether an import of about `est_doc_bytes` bytes of documents is big enough to be
    /// packed while it is read (`BulkWriter::streams`).
    pub(crate) fn streams(&self, est_doc_bytes: u64) -> bool {
        BulkWriter::streams(self.writer.settings(), est_doc_bytes)
    }

    #[cfg(feature = "parquet")]
    /// This bulk write, given nothing yet, switched to documents added in strictly
    /// ascending id order, each block packed as soon as it is full, with a dictionary
    /// trained now on `sample` (`BulkWriter::streaming`): an id that does not sort after
    /// the one before sets `out_of_order` and fails the add, for the caller to start again
    /// sorted. The ids must be the collection's kind (no key conversion reorders them).
    pub(crate) fn streaming(
        self,
        sample: &super::presample::Presample,
        est_docs: u64,
        est_doc_bytes: u64,
        out_of_order: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> IResult<Self> {
        debug_assert_eq!(self.added, 0, "streaming from the first document on");
        let writer = self.writer.streaming(
            &self.db,
            &self.collection,
            sample,
            est_docs,
            est_doc_bytes,
            out_of_order,
        )?;
        Ok(BulkImport { writer, ..self })
    }

    #[cfg(feature = "parquet")]
    /// The kind of the ids of the collection (or of the first document added), if known.
    pub(crate) fn id_kind(&self) -> Option<IdKind> {
        self.kind
    }

    #[cfg(feature = "arrow")]
    /// As [`Self::finish`], stopping with [`ImportError::Cancelled`] before anything landed
    /// once the cancel flag of `opts` is set.
    pub(crate) fn finish_unless_cancelled(self, opts: &ImportOptions) -> IResult<ImportReport> {
        self.finish_with(&|| opts.cancelled())
    }

    /// Documents added so far (a repeated id counts each time).
    pub fn added(&self) -> u64 {
        self.added
    }

    /// Sorts, packs and lands every document added, at once.
    pub fn finish(self) -> IResult<ImportReport> {
        self.finish_with(&|| false)
    }

    fn finish_with(self, cancelled: &(dyn Fn() -> bool + Sync)) -> IResult<ImportReport> {
        if let Some(kind) = self.kind.filter(|_| self.added > 0) {
            self.db.claim_id_kind(&self.collection, kind)?;
        }
        let outcome = self.writer.finish(&self.db, &self.collection, cancelled)?;
        Ok(ImportReport {
            documents: outcome.imported,
            batches: 1,
            packed_bytes: outcome.packed_bytes,
            spilled_bytes: outcome.spilled_bytes,
            collection_documents: outcome.landed.documents,
            merged: outcome.landed.merged,
            packed_while_reading: outcome.streamed,
            ..ImportReport::default()
        })
    }
}

/// The stored key of `id` (of kind `k`) in a collection whose ids are of kind `want` (set
/// to `k` if not known yet): a text id that writes an integer joins integer ids; an integer
/// id among text ids is refused, as a commit would refuse it.
fn key_of(collection: &str, want: &mut Option<IdKind>, id: &[u8], k: IdKind) -> IResult<Vec<u8>> {
    let want = *want.get_or_insert(k);
    Ok(match (want, k) {
        (IdKind::Int, IdKind::Text) => {
            crate::ids::key_for(collection, want, &String::from_utf8_lossy(id))?.into_owned()
        }
        (IdKind::Text, IdKind::Int) => {
            return Err(Error::IdKindMismatch {
                collection: collection.to_owned(),
                holds: IdKind::Text,
                id: crate::ids::id_text(IdKind::Int, id.to_vec()),
            }
            .into());
        }
        _ => id.to_vec(),
    })
}

/// What an import that writes its documents itself (the Arrow import) reads of its options.
#[cfg(feature = "arrow")]
impl ImportOptions {
    /// Where ids come from (`None`: the importer's default).
    pub(crate) fn id_source(&self) -> Option<&super::IdSource> {
        self.id.as_ref()
    }

    /// Whether bad records are skipped.
    pub(crate) fn skips_bad(&self) -> bool {
        self.skip_bad
    }

    /// How documents are written.
    pub(crate) fn document_options(&self) -> &stele_doc::WriteOptions {
        &self.write
    }

    /// Whether the import was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled()
    }
}

#[cfg(feature = "arrow")]
impl BulkImport {
    /// The id of `doc` at `path` (the id field `name`) as stored, and its kind; else why
    /// there is none (the JSON import's rule).
    pub(crate) fn field_id(
        path: &mut stele_doc::CachedPath,
        doc: &stele_doc::Document<&[u8]>,
        name: &str,
    ) -> Result<(String, IdKind), String> {
        super::convert::field_id(path, doc, name)
    }
}
