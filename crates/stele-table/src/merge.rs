//! K-way merge of several tables: the building block of layered maps.

use crate::builder::DuplicatePolicy;
use crate::error::{Error, Result};
use crate::table::{Cursor, Table};
use std::fmt;

/// Iterates the union of several tables in key order. Where tables share a key, the
/// policy picks one: `KeepLast` the table listed last (the newest layer), `KeepFirst` the
/// one listed first, `Reject` fails with [`Error::DuplicateKey`].
///
/// Yields `(key, value, table position in the input)`. Each step compares the heads of all
/// tables (O(k)), which suits the few layers of a map; keys are copied once per yield.
pub fn merge<'t, B: AsRef<[u8]>>(
    tables: &[&'t Table<B>],
    policy: DuplicatePolicy,
) -> MergeIter<'t, B> {
    MergeIter {
        cursors: tables.iter().map(|t| t.cursor()).collect(),
        heads: Vec::new(),
        started: false,
        policy,
        done: false,
    }
}

/// One merged entry: key, value, and the position of the table it came from.
pub type Merged<'t> = (Vec<u8>, &'t [u8], usize);

/// Iterator returned by [`merge`].
pub struct MergeIter<'t, B> {
    cursors: Vec<Cursor<'t, B>>,
    heads: Vec<Option<(Vec<u8>, &'t [u8])>>,
    started: bool,
    policy: DuplicatePolicy,
    done: bool,
}

impl<B> fmt::Debug for MergeIter<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergeIter")
            .field("tables", &self.cursors.len())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<'t, B: AsRef<[u8]>> MergeIter<'t, B> {
    fn advance(&mut self, i: usize) -> Result<()> {
        let Some(c) = self.cursors.get_mut(i) else {
            return Ok(());
        };
        let next = c.next_entry()?.map(|(k, v)| (k.to_vec(), v));
        if let Some(h) = self.heads.get_mut(i) {
            *h = next;
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Option<Merged<'t>>> {
        if !self.started {
            self.started = true;
            self.heads = vec![None; self.cursors.len()];
            for i in 0..self.cursors.len() {
                self.advance(i)?;
            }
        }
        let mut min: Option<&[u8]> = None;
        for (k, _) in self.heads.iter().flatten() {
            if min.is_none_or(|m| k.as_slice() < m) {
                min = Some(k);
            }
        }
        let Some(min) = min.map(<[u8]>::to_vec) else {
            return Ok(None);
        };
        let equal: Vec<usize> = (0..self.heads.len())
            .filter(|&i| {
                self.heads
                    .get(i)
                    .and_then(Option::as_ref)
                    .is_some_and(|(k, _)| *k == min)
            })
            .collect();
        if equal.len() > 1 && self.policy == DuplicatePolicy::Reject {
            return Err(Error::DuplicateKey { key: min });
        }
        let winner = match self.policy {
            DuplicatePolicy::KeepFirst | DuplicatePolicy::Reject => equal.first(),
            DuplicatePolicy::KeepLast => equal.last(),
        }
        .copied()
        .unwrap_or(0);
        let value = self
            .heads
            .get(winner)
            .and_then(Option::as_ref)
            .map_or(&[][..], |(_, v)| *v);
        for i in equal {
            self.advance(i)?;
        }
        Ok(Some((min, value, winner)))
    }
}

impl<'t, B: AsRef<[u8]>> Iterator for MergeIter<'t, B> {
    type Item = Result<Merged<'t>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
