//! Records read and waiting to be converted ([`Pending`]), and where converted documents
//! go ([`Sink`]).

use super::budget::batch_bytes;
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
