//! [`BulkImport`]: a bulk write of documents handed over in batches rather than read from
//! a file (the Python package's `put_many` of many documents). The same write as an import's
//! ([`super::bulk`]): sorted by id, packed once, switched in at the end, all or nothing.

use super::bulk::BulkWriter;
use super::options::{IResult, ImportError, ImportOptions, ImportReport};
use crate::Database;
use crate::batch::Batch;
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
        }))
    }

    /// Adds the puts of `batch` (documents converted and checked when put into it). A
    /// batch that deletes, or puts into another collection, is refused whole.
    pub fn add(&mut self, batch: Batch) -> IResult<()> {
        let ops = batch.into_ops();
        let mut docs = Vec::with_capacity(ops.len());
        for op in &ops {
            let doc = match op {
                LoggedOp::Put {
                    collection,
                    id,
                    value,
                } if *collection == self.collection => crate::stored::raw(value).map(|d| (id, d)),
                _ => None,
            };
            let Some(doc) = doc else {
                return Err(ImportError::NotPutsOf {
                    collection: self.collection.clone(),
                });
            };
            docs.push(doc);
        }
        for (id, doc) in docs {
            self.writer.push(id, doc)?;
            self.added += 1;
        }
        Ok(())
    }

    /// Documents added so far (a repeated id counts each time).
    pub fn added(&self) -> u64 {
        self.added
    }

    /// Sorts, packs and lands every document added, at once.
    pub fn finish(self) -> IResult<ImportReport> {
        let outcome = self.writer.finish(&self.db, &self.collection, &|| false)?;
        Ok(ImportReport {
            documents: outcome.imported,
            batches: 1,
            packed_bytes: outcome.packed_bytes,
            spilled_bytes: outcome.spilled_bytes,
            collection_documents: outcome.landed.documents,
            merged: outcome.landed.merged,
            ..ImportReport::default()
        })
    }
}
