//! Iteration over a range of a table set, shard after shard, from either end.

use std::ops::Bound;

use super::TableSet;
use crate::table::Iter;
use crate::{Entry, Result, Table};

/// Entries of a [`TableSet`] in a key range, in key order; double-ended. Each shard's
/// part of the range is read by that shard's own iterator, opened when reached. When the
/// two ends meet in one shard they share its iterator, so no entry is read twice.
pub struct SetIter<'s> {
    set: &'s TableSet,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// Shards not yet opened from either end: `next_front..next_back`.
    next_front: usize,
    next_back: usize,
    front: Option<Iter<'s, crate::MmapBytes>>,
    back: Option<Iter<'s, crate::MmapBytes>>,
    /// An error ends the iteration after it is yielded.
    done: bool,
}

impl std::fmt::Debug for SetIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetIter")
            .field("set", &self.set.path())
            .field("next_front", &self.next_front)
            .field("next_back", &self.next_back)
            .finish_non_exhaustive()
    }
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'s> SetIter<'s> {
    pub(super) fn new(
        set: &'s TableSet,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        first: usize,
        end: usize,
    ) -> Self {
        SetIter {
            set,
            lo,
            hi,
            next_front: first,
            next_back: end,
            front: None,
            back: None,
            done: false,
        }
    }

    /// The iterator of shard `i` over the range.
    fn open(&self, i: usize) -> Result<Iter<'s, crate::MmapBytes>> {
        let table: &'s Table = self.set.shard(i)?;
        Ok(table.range((borrowed(&self.lo), borrowed(&self.hi))))
    }

    fn fail(&mut self, e: crate::Error) -> Option<Result<Entry<'s>>> {
        self.done = true;
        Some(Err(e))
    }
}

impl<'s> Iterator for SetIter<'s> {
    type Item = Result<Entry<'s>>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(it) = &mut self.front {
                match it.next() {
                    Some(Err(e)) => return self.fail(e),
                    Some(ok) => return Some(ok),
                    None => self.front = None,
                }
            }
            if self.next_front < self.next_back {
                match self.open(self.next_front) {
                    Ok(it) => self.front = Some(it),
                    Err(e) => return self.fail(e),
                }
                self.next_front += 1;
                continue;
            }
            // Every shard is opened: what is left is in the back end's shard.
            return match self.back.as_mut()?.next() {
                Some(Err(e)) => self.fail(e),
                other => other,
            };
        }
        None
    }
}

impl DoubleEndedIterator for SetIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(it) = &mut self.back {
                match it.next_back() {
                    Some(Err(e)) => return self.fail(e),
                    Some(ok) => return Some(ok),
                    None => self.back = None,
                }
            }
            if self.next_front < self.next_back {
                match self.open(self.next_back - 1) {
                    Ok(it) => self.back = Some(it),
                    Err(e) => return self.fail(e),
                }
                self.next_back -= 1;
                continue;
            }
            return match self.front.as_mut()?.next_back() {
                Some(Err(e)) => self.fail(e),
                other => other,
            };
        }
        None
    }
}

impl std::iter::FusedIterator for SetIter<'_> {}
