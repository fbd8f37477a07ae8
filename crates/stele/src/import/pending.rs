//! Records read and waiting to be converted ([`Pending`]), and where converted documents
//! go ([`Sink`]).

use super::bulk::BulkWriter;
use super::options::IResult;
use super::spool::{Origin, Spool};

/// A record read but not converted yet: where its text ends in [`Pending::text`], where it
/// starts in its source, the source (a file of a folder) and the file stem.
pub(super) struct RawRecord {
    pub(super) end: usize,
    pub(super) at: Origin,
    /// Shared by the records of one source (a clone per record would allocate).
    pub(super) source: std::sync::Arc<str>,
    pub(super) stem: Option<String>,
}

/// Most bytes of records converted in one batch by an import packed while read.
pub(super) const STREAMED_BATCH_BYTES: usize = 1 << 20;

/// Most records converted in one batch by an import packed while read.
pub(super) const STREAMED_BATCH_RECORDS: usize = 8 << 10;

/// Records waiting to be converted together on every core, within a share of the import's
/// memory budget (their text, then their documents while they are handed on). Two such
/// shares at most: one being read, one being converted ([`Conversion`]).
pub(super) struct Pending {
    pub(super) text: Vec<u8>,
    pub(super) records: Vec<RawRecord>,
    pub(super) limit_bytes: usize,
    pub(super) limit_records: usize,
}

/// Most bytes of text in one batch of records converted together, for an import of
/// `budget_bytes`: a 64th of it, 256 KiB to 8 MiB.
pub(super) fn batch_bytes(budget_bytes: usize) -> usize {
    (budget_bytes / 64).clamp(256 << 10, 8 << 20)
}

/// Memory an import into a packed collection holds whatever its budget: the process, its
/// read buffer, the block packer's frames and compression contexts, the sorter's run
/// buffers while merging (an import of 4.5M small records peaked 28-40 MiB above its
/// sorter's share, `docs/notes/2026-12-01-ids-stored-once.md`).
const IMPORT_RESERVE_BYTES: usize = 32 << 20;

/// The sorter's share of an import's budget of `budget_bytes` whose dictionary sample
/// holds up to `sample_bytes`: the rest less two batches of records in flight (each its
/// text, its records and their conversions: about three times the text,
/// `batch_bytes`) and [`IMPORT_RESERVE_BYTES`]; at least a quarter of the
/// budget, and 1 MiB.
pub(super) fn sort_budget(budget_bytes: usize, sample_bytes: usize) -> usize {
    let batches = 6 * batch_bytes(budget_bytes);
    budget_bytes
        .saturating_sub(IMPORT_RESERVE_BYTES + batches + sample_bytes)
        .max(budget_bytes / 4)
        .max(1 << 20)
}

impl Pending {
    pub(super) fn new(budget_bytes: usize) -> Self {
        Pending {
            text: Vec::new(),
            records: Vec::new(),
            limit_bytes: batch_bytes(budget_bytes),
            limit_records: 1 << 16,
        }
    }

    /// Converts smaller batches: for an import packed while read, whose packing of a
    /// batch waits for its conversion, and whose last batch is packed after the reading
    /// ends (with batches of 8 MiB, a third of geonames-cities' 17 MB was).
    pub(super) fn batches_for_packing_while_read(&mut self) {
        self.limit_bytes = self.limit_bytes.min(STREAMED_BATCH_BYTES);
        self.limit_records = self.limit_records.min(STREAMED_BATCH_RECORDS);
    }

    pub(super) fn push(&mut self, source: &str, text: &[u8], at: Origin, stem: Option<&str>) {
        self.text.extend_from_slice(text);
        let source = match self.records.last() {
            Some(last) if &*last.source == source => std::sync::Arc::clone(&last.source),
            _ => std::sync::Arc::from(source),
        };
        self.records.push(RawRecord {
            end: self.text.len(),
            at,
            source,
            stem: stem.map(str::to_owned),
        });
    }

    pub(super) fn is_full(&self) -> bool {
        self.text.len() >= self.limit_bytes || self.records.len() >= self.limit_records
    }
}

/// Where converted documents go: the sorter of a bulk write, or the spool of a staged one.
pub(super) enum Sink {
    Bulk(Box<BulkWriter>),
    Staged(Spool),
}

impl Sink {
    pub(super) fn push(&mut self, id: &[u8], doc: &[u8]) -> IResult<()> {
        match self {
            Sink::Bulk(b) => b.push(id, doc),
            Sink::Staged(s) => s.push(id, Some(doc)),
        }
    }
}
