//! Step 2 of an import, the write: in bulk ([`super::bulk`]) or staged (a spool committed
//! in batches into a staging collection, then merged into the target in one operation).

use super::options::{IResult, ImportError, ImportPhase, ImportProgress, ImportReport};
use super::pending::Sink;
use super::spool::Spool;
use super::{Importer, bulk::BulkWriter};
use crate::internal::Internal;
use crate::wal::LoggedOp;
use std::sync::atomic::{AtomicU64, Ordering};

impl<P: FnMut(ImportProgress)> Importer<'_, P> {
    /// Calls the progress callback, then stops the import if it was cancelled.
    pub(super) fn report_progress(&mut self) -> IResult<()> {
        (self.callback)(self.progress);
        if self.opts.cancelled() {
            return Err(ImportError::Cancelled);
        }
        Ok(())
    }

    pub(super) fn write(mut self) -> IResult<ImportReport> {
        self.convert_pending()?;
        self.finish_converting()?;
        self.report_progress()?;
        self.progress.phase = ImportPhase::Writing;
        if let Some(kind) = self.id_kind.kind()
            && self.progress.documents > 0
        {
            self.db.claim_id_kind(self.collection, kind)?;
        }
        self.report.skipped = self.progress.skipped;
        self.report.bytes_read = self.progress.bytes_read;
        match self.sink.take() {
            Some(Sink::Bulk(bulk)) => self.write_bulk(*bulk),
            Some(Sink::Staged(spool)) => self.write_all_staged(spool),
            None => Ok(self.report),
        }
    }

    /// Step 2 of a bulk write: sort, train, pack and land (see [`bulk`]).
    fn write_bulk(mut self, bulk: BulkWriter) -> IResult<ImportReport> {
        self.report_progress()?;
        let opts = self.opts;
        let outcome = bulk.finish(self.db, self.collection, &|| opts.cancelled())?;
        self.progress.written = outcome.imported;
        self.report.documents = outcome.imported;
        self.report.batches = 1;
        self.report.packed_bytes = outcome.packed_bytes;
        self.report.spilled_bytes = outcome.spilled_bytes;
        self.report.packed_while_reading = outcome.streamed;
        self.report.collection_documents = outcome.landed.documents;
        self.report.merged = outcome.landed.merged;
        (self.callback)(self.progress);
        Ok(self.report)
    }

    /// Step 2 of a staged write (a collection that is not packed).
    fn write_all_staged(mut self, mut spool: Spool) -> IResult<ImportReport> {
        // `/` cannot appear in user collection names: the target is read back from here to
        // compress the staged documents as the target's documents.
        let staging = Internal::Import {
            pid: std::process::id(),
            n: STAGING_COUNTER.fetch_add(1, Ordering::Relaxed),
            target: self.collection.to_owned(),
        }
        .name();
        let result = self.write_staged(&mut spool, &staging);
        if let Err(cause) = result {
            self.progress.phase = ImportPhase::RollingBack;
            (self.callback)(self.progress);
            let drop = self.db.commit_ops(vec![LoggedOp::DropCollection {
                collection: staging.clone(),
            }]);
            return Err(match drop {
                Ok(()) => cause,
                Err(e) => ImportError::RollbackFailed {
                    collection: self.collection.to_owned(),
                    cause: cause.to_string(),
                    rollback: e.to_string(),
                    written: self.progress.written,
                },
            });
        }
        self.report.documents = self.progress.written;
        self.report.collection_documents = self.db.snapshot().count(self.collection);
        // The staged documents went through the target's compressor, whose first training
        // may still be running in the background: wait for it and persist its dictionary, so
        // that an import into a new collection leaves it with one (for the writes and the
        // packing that follow). The import has landed by now and must not be reported as
        // failed: if persisting fails (a full disk), the dictionary is simply trained again
        // later, and the next write reports the disk's state.
        let _ = self.db.settle_dictionaries(Some(self.collection));
        Ok(self.report)
    }

    fn write_staged(&mut self, spool: &mut Spool, staging: &str) -> IResult<()> {
        let mut reader = spool.reader(0, spool.len)?;
        let mut pending: Vec<(String, Vec<u8>)> = Vec::new();
        let mut pending_bytes = 0;
        loop {
            let next = reader.next()?;
            let at_end = next.is_none();
            if let Some((id, Some(doc))) = next {
                pending_bytes += doc.len() + id.len();
                pending.push((id, doc));
            }
            let full =
                pending.len() >= self.opts.batch_docs || pending_bytes >= self.opts.batch_bytes;
            if !pending.is_empty() && (full || at_end) {
                let mut batch = self.db.batch();
                for (id, doc) in &pending {
                    batch.put_trusted(staging, id, doc);
                }
                self.db.commit(batch)?;
                self.progress.written += pending.len() as u64;
                self.report.batches += 1;
                pending.clear();
                pending_bytes = 0;
                self.report_progress()?;
            }
            if at_end {
                break;
            }
        }
        // The whole import lands in one logged operation: all of it, or (after a crash
        // before this point) none, once the next open drops the staging collection.
        self.db.commit_ops(vec![LoggedOp::MergeCollection {
            collection: staging.to_owned(),
            into: self.collection.to_owned(),
        }])?;
        Ok(())
    }
}

/// Numbers this process's imports, for the names of their staging collections
/// (`Internal::Import`).
static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);
