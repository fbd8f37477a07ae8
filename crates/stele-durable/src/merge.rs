//! Merging the layers of a stack into one ordered view, in both directions.
//!
//! Sources are ordered newest first: the in-memory diff, then the diff tables from the top
//! down, then the base. For each key the newest source wins; a removal hides the key.

use crate::error::{Error, Result};
use crate::memdiff::{Entry, MemRange};
use stele_table::{DIFF_PUT, DIFF_REMOVE, Key, MmapBytes, TableId};

/// What a layer says about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    Put(&'a [u8]),
    Remove,
}

/// Decodes the value of a diff table entry.
pub(crate) fn decode_op<'a>(id: TableId, key: &[u8], value: &'a [u8]) -> Result<Op<'a>> {
    match value.split_first() {
        Some((&DIFF_PUT, rest)) => Ok(Op::Put(rest)),
        Some((&DIFF_REMOVE, [])) => Ok(Op::Remove),
        _ => Err(Error::CorruptDiff {
            id,
            key: key.to_vec(),
            reason: "value is neither a put (1, value) nor a removal (0)",
        }),
    }
}

/// One layer's entries within the bounds of the iteration.
pub(crate) enum Source<'a> {
    Memory(MemRange<'a>),
    /// A table; `diff` names it when its values carry operation bytes. (Boxed: a table
    /// iterator is several times larger than the in-memory range.)
    Table {
        iter: Box<stele_table::Iter<'a, MmapBytes>>,
        diff: Option<TableId>,
    },
}

type Head<'a> = (Key<'a>, Op<'a>);

impl<'a> Source<'a> {
    fn convert(
        item: Option<stele_table::Result<(Key<'a>, &'a [u8])>>,
        diff: Option<TableId>,
    ) -> Option<Result<Head<'a>>> {
        Some(item?.map_err(Error::from).and_then(|(k, v)| match diff {
            Some(id) => decode_op(id, &k, v).map(|op| (k, op)),
            None => Ok((k, Op::Put(v))),
        }))
    }

    fn mem_head(e: &'a Entry) -> Head<'a> {
        let op = e.value().map_or(Op::Remove, Op::Put);
        (Key::from(e.key()), op)
    }

    fn next_front(&mut self) -> Option<Result<Head<'a>>> {
        match self {
            Source::Memory(r) => r.next().map(|e| Ok(Self::mem_head(e))),
            Source::Table { iter, diff } => Self::convert(iter.next(), *diff),
        }
    }

    fn next_back(&mut self) -> Option<Result<Head<'a>>> {
        match self {
            Source::Memory(r) => r.next_back().map(|e| Ok(Self::mem_head(e))),
            Source::Table { iter, diff } => Self::convert(iter.next_back(), *diff),
        }
    }
}

/// The merged view of several sources: keys ascending from the front, descending from the
/// back, each once, with the newest source's operation.
///
/// Invariant: every entry of source `i` not yet returned is in exactly one place: still in
/// the source, in `front[i]` or in `back[i]`. The front only returns keys below the last
/// key the back returned, and the other way round, so no key is returned twice.
pub(crate) struct Merger<'a> {
    sources: Vec<Source<'a>>,
    front: Vec<Option<Head<'a>>>,
    back: Vec<Option<Head<'a>>>,
    front_last: Option<Key<'a>>,
    back_last: Option<Key<'a>>,
    done: bool,
}

impl<'a> Merger<'a> {
    pub(crate) fn new(sources: Vec<Source<'a>>) -> Self {
        let n = sources.len();
        Merger {
            sources,
            front: (0..n).map(|_| None).collect(),
            back: (0..n).map(|_| None).collect(),
            front_last: None,
            back_last: None,
            done: false,
        }
    }

    /// The next entry from the front, removals included.
    pub(crate) fn next_op(&mut self) -> Option<Result<Head<'a>>> {
        self.step(true)
    }

    /// The next entry from the back, removals included.
    pub(crate) fn next_back_op(&mut self) -> Option<Result<Head<'a>>> {
        self.step(false)
    }

    fn step(&mut self, forward: bool) -> Option<Result<Head<'a>>> {
        if self.done {
            return None;
        }
        // Fill this end's head of every source.
        for i in 0..self.sources.len() {
            let (near, far) = if forward {
                (&mut self.front, &mut self.back)
            } else {
                (&mut self.back, &mut self.front)
            };
            let (Some(near_slot), Some(far_slot), Some(src)) =
                (near.get_mut(i), far.get_mut(i), self.sources.get_mut(i))
            else {
                continue;
            };
            if near_slot.is_some() {
                continue;
            }
            let pulled = if forward {
                src.next_front()
            } else {
                src.next_back()
            };
            match pulled {
                Some(Ok(head)) => *near_slot = Some(head),
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                // The source is empty from this end: its last entry may wait at the other.
                None => *near_slot = far_slot.take(),
            }
        }
        let heads = if forward { &self.front } else { &self.back };
        // The winning key: smallest from the front, largest from the back; on ties the
        // lowest index (newest source) wins.
        let mut best: Option<usize> = None;
        for (i, head) in heads.iter().enumerate() {
            let Some((k, _)) = head else { continue };
            let better = match best.and_then(|b| heads.get(b)).and_then(|h| h.as_ref()) {
                None => true,
                Some((bk, _)) => {
                    if forward {
                        k.as_bytes() < bk.as_bytes()
                    } else {
                        k.as_bytes() > bk.as_bytes()
                    }
                }
            };
            if better {
                best = Some(i);
            }
        }
        let Some(best) = best else {
            self.done = true;
            return None;
        };
        let heads = if forward {
            &mut self.front
        } else {
            &mut self.back
        };
        let (key, op) = heads.get_mut(best)?.take()?;
        for head in heads.iter_mut() {
            if head
                .as_ref()
                .is_some_and(|(k, _)| k.as_bytes() == key.as_bytes())
            {
                *head = None;
            }
        }
        let other_end = if forward {
            &self.back_last
        } else {
            &self.front_last
        };
        if let Some(limit) = other_end {
            let crossed = if forward {
                key.as_bytes() >= limit.as_bytes()
            } else {
                key.as_bytes() <= limit.as_bytes()
            };
            if crossed {
                self.done = true;
                return None;
            }
        }
        if forward {
            self.front_last = Some(key.clone());
        } else {
            self.back_last = Some(key.clone());
        }
        Some(Ok((key, op)))
    }
}

/// Entries of a map in key order (double-ended), values borrowed from the tables or the
/// in-memory diff.
pub struct MapIter<'a> {
    pub(crate) inner: Inner<'a>,
}

pub(crate) enum Inner<'a> {
    /// A base table alone (no diffs, nothing unsaved): its own iterator, nothing to merge.
    Single(Box<stele_table::Iter<'a, MmapBytes>>),
    Merged(Merger<'a>),
}

impl<'a> MapIter<'a> {
    pub(crate) fn new(mut sources: Vec<Source<'a>>, memory_is_empty: bool) -> Self {
        if memory_is_empty
            && sources.len() == 2
            && let Some(Source::Table { diff: None, .. }) = sources.get(1)
            && let Some(Source::Table { iter, .. }) = sources.pop()
        {
            return MapIter {
                inner: Inner::Single(iter),
            };
        }
        MapIter {
            inner: Inner::Merged(Merger::new(sources)),
        }
    }
}

impl std::fmt::Debug for MapIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapIter").finish_non_exhaustive()
    }
}

impl<'a> Iterator for MapIter<'a> {
    type Item = Result<(Key<'a>, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let merger = match &mut self.inner {
            Inner::Single(it) => return it.next().map(|e| e.map_err(Error::from)),
            Inner::Merged(m) => m,
        };
        loop {
            match merger.next_op()? {
                Ok((k, Op::Put(v))) => return Some(Ok((k, v))),
                Ok((_, Op::Remove)) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl DoubleEndedIterator for MapIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let merger = match &mut self.inner {
            Inner::Single(it) => return it.next_back().map(|e| e.map_err(Error::from)),
            Inner::Merged(m) => m,
        };
        loop {
            match merger.next_back_op()? {
                Ok((k, Op::Put(v))) => return Some(Ok((k, v))),
                Ok((_, Op::Remove)) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl std::iter::FusedIterator for MapIter<'_> {}
