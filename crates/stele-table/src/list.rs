//! Lists: values by position, from append-order input.
//!
//! A list is a table file with the list flag, empty keys and a restart interval of 1, so
//! every entry's offset is in its block's restart array: reading value `i` is one lookup in
//! the in-memory position index (O(1) for typical lists), one restart offset, one decode.

use crate::builder::{TableBuilder, TableInfo, TableOptions};
use crate::error::Result;
use crate::table::{Access, MmapBytes, Table, TableStats};
use std::path::Path;

/// Builds a [`TableList`] from values in order.
#[derive(Debug)]
pub struct ListBuilder {
    inner: TableBuilder,
}

impl ListBuilder {
    /// Starts a list in folder `dir`. The restart interval and duplicate policy of `opts`
    /// are ignored (a list has neither keys nor restarts other than one per value).
    pub fn new(dir: impl AsRef<Path>, opts: TableOptions) -> Result<Self> {
        let opts = opts.restart_interval(1);
        Ok(ListBuilder {
            inner: TableBuilder::with_kind(dir.as_ref(), opts, true)?,
        })
    }

    /// Appends a value; it gets the next position.
    pub fn push(&mut self, value: &[u8]) -> Result<()> {
        self.inner.push_list_value(value)
    }

    /// Values pushed so far.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// True if nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Writes the index and footer and makes the file durable under its content name.
    pub fn finish(self) -> Result<TableInfo> {
        self.inner.finish()
    }
}

/// An immutable list of values read by position. `Send + Sync`.
pub struct TableList<B = MmapBytes> {
    table: Table<B>,
}

impl<B: AsRef<[u8]>> std::fmt::Debug for TableList<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableList")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>> TableList<B> {
    /// Reads a list from bytes in memory, checking the footer and index.
    pub fn from_bytes(bytes: B) -> Result<Self> {
        Ok(TableList {
            table: Table::from_bytes_kind(bytes, true)?,
        })
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.table.len()
    }

    /// True if the list is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The value at position `i`, borrowed from the list; `None` past the end.
    pub fn get(&self, i: u64) -> Result<Option<&[u8]>> {
        if i >= self.len() {
            return Ok(None);
        }
        let mut key_buf = Vec::new();
        Ok(Some(self.table.entry_at(i, &mut key_buf)?.1))
    }

    /// Values in order (double-ended).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Result<&[u8]>> + '_ {
        self.table.iter().map(|r| r.map(|(_, v)| v))
    }

    /// Values at positions `range` in order (double-ended).
    pub fn range(
        &self,
        range: std::ops::Range<u64>,
    ) -> impl DoubleEndedIterator<Item = Result<&[u8]>> + '_ {
        let end = range.end.min(self.len());
        crate::table::Iter::new(&self.table, range.start.min(end), end).map(|r| r.map(|(_, v)| v))
    }

    /// Facts about the list.
    pub fn stats(&self) -> TableStats {
        self.table.stats()
    }

    /// Checks the checksum of every data block.
    pub fn verify_all(&self) -> Result<()> {
        self.table.verify_all()
    }
}

impl TableList<MmapBytes> {
    /// Opens a list file for random reads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Access::Random)
    }

    /// Opens a list file with an access hint.
    pub fn open_with(path: impl AsRef<Path>, access: Access) -> Result<Self> {
        TableList::from_bytes(MmapBytes::map(path.as_ref(), access)?)
    }
}
