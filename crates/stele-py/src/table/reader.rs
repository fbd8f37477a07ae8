//! What a `Table` object reads: one table, or a set of them read as one.

use std::path::PathBuf;
use std::sync::Arc;

use stele_table::{Entry, Table, TableSet};

use super::iter::Source;

/// What a `Table` object reads: one table, or a set of them read as one.
#[derive(Debug)]
pub(crate) enum Reader {
    Table(Arc<Table>),
    Set(Arc<TableSet>),
}

impl Reader {
    pub(crate) fn source(&self) -> Source {
        match self {
            Reader::Table(t) => Source::Table(Arc::clone(t)),
            Reader::Set(s) => Source::Set(Arc::clone(s)),
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        match self {
            Reader::Table(t) => t.path().to_path_buf(),
            Reader::Set(s) => s.path().to_path_buf(),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        match self {
            Reader::Table(t) => t.len(),
            Reader::Set(s) => s.len(),
        }
    }

    pub(crate) fn get(&self, key: &[u8]) -> stele_table::Result<Option<&[u8]>> {
        match self {
            Reader::Table(t) => t.get(key),
            Reader::Set(s) => s.get(key),
        }
    }

    pub(crate) fn get_many(&self, keys: &[&[u8]]) -> stele_table::Result<Vec<Option<&[u8]>>> {
        match self {
            Reader::Table(t) => t.get_many(keys),
            Reader::Set(s) => s.get_many(keys),
        }
    }

    pub(crate) fn nth(&self, i: u64) -> stele_table::Result<Option<Entry<'_>>> {
        match self {
            Reader::Table(t) => t.nth(i),
            Reader::Set(s) => s.nth(i),
        }
    }

    pub(crate) fn rank(&self, key: &[u8]) -> stele_table::Result<u64> {
        match self {
            Reader::Table(t) => t.rank(key),
            Reader::Set(s) => s.rank(key),
        }
    }

    pub(crate) fn first(&self) -> stele_table::Result<Option<Entry<'_>>> {
        self.nth(0)
    }

    pub(crate) fn last(&self) -> stele_table::Result<Option<Entry<'_>>> {
        match self.len().checked_sub(1) {
            Some(i) => self.nth(i),
            None => Ok(None),
        }
    }

    pub(crate) fn verify_all(&self) -> stele_table::Result<()> {
        match self {
            Reader::Table(t) => t.verify_all(),
            Reader::Set(s) => s.verify_all(),
        }
    }
}
