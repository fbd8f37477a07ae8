//! A path of a [`PathSet`](super::PathSet): keyed (its first step a key, with where that key
//! sat in the remembered shape) or read on its own.

use super::super::Document;
use super::super::path::CachedPath;
use super::super::slots::SlotPlace;
use super::super::types::{Object, Value};

#[derive(Debug, Clone)]
pub(super) enum Field {
    /// A path whose first step is a key.
    Keyed(KeyedField),
    /// The empty path, or one that starts with an index: read on its own every time.
    Other(CachedPath),
}

/// A path whose first step is a key, and where that key sat in the remembered shape.
#[derive(Debug, Clone)]
pub(super) struct KeyedField {
    /// The first key as a one-key cached path: read when the names differ from the
    /// remembered ones.
    pub(super) first: CachedPath,
    /// The steps after the first key.
    pub(super) rest: Option<CachedPath>,
    /// The key's id in the remembered document (the offset of its name in the names area).
    pub(super) key_id: usize,
    /// Its sorted index there, and where its parts sit in the root header; `None`: absent.
    pub(super) at: Option<(usize, SlotPlace)>,
    /// Where its value sat in the last document learned (from the document's start), for
    /// [`PathSet::prefetch`]; `usize::MAX`: nowhere.
    pub(super) value_pos: usize,
}

impl Field {
    /// A path of the same shape that goes on after its first key (or starts with an index).
    #[inline(never)]
    pub(super) fn read_longer<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        o: &Object<'a>,
        head: &[u8],
        f: impl FnOnce(Value<'a>),
    ) {
        match self {
            Field::Keyed(KeyedField {
                rest,
                at: Some((_, place)),
                ..
            }) => {
                o.read_placed(head, place, |v| match rest {
                    Some(rest) => {
                        rest.read(v, f);
                    }
                    None => f(v),
                });
            }
            Field::Keyed(KeyedField { at: None, .. }) => {}
            Field::Other(p) => {
                p.read_doc(doc, f);
            }
        }
    }

    /// The path read on its own (its cached paths' slots); for a keyed path, whether the first
    /// key was found.
    #[inline(always)]
    pub(super) fn read_alone<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        f: impl FnOnce(Value<'a>),
    ) -> bool {
        match self {
            // One call of `f` in line, as in `PathSet::read_doc`.
            Field::Keyed(KeyedField {
                first, rest: None, ..
            }) => first.read_doc(doc, f).is_some(),
            _ => self.read_alone_longer(doc, f),
        }
    }

    /// [`Field::read_alone`] for a path that goes on after its first key or starts with an
    /// index.
    #[inline(never)]
    pub(super) fn read_alone_longer<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        f: impl FnOnce(Value<'a>),
    ) -> bool {
        match self {
            Field::Keyed(k) => {
                let rest = &mut k.rest;
                k.first
                    .read_doc(doc, |v| match rest {
                        None => f(v),
                        Some(rest) => {
                            rest.read(v, f);
                        }
                    })
                    .is_some()
            }
            Field::Other(p) => p.read_doc(doc, f).is_some(),
        }
    }
}
