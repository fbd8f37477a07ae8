//! The state of a database as a value: every collection and index map, the dictionaries
//! and counts. A commit applies its batch to a copy; a snapshot holds one.

use crate::compress::Dictionaries;
use crate::error::Result;
use crate::index::{ArrayFields, IndexDef};
use crate::internal::{META, MetaKey};
use crate::pack::packing::Packing;
use std::collections::BTreeMap;
use std::sync::Arc;
use stele_durable::DurableMap;

/// A consistent state of every collection.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// Sequence number of the last batch applied.
    pub(crate) seq: u64,
    pub(crate) collections: BTreeMap<String, DurableMap>,
    /// By (collection, index name).
    pub(crate) indexes: BTreeMap<(String, String), IndexState>,
    /// Compression dictionaries by collection, as persisted in the meta collection.
    pub(crate) dicts: BTreeMap<String, Dictionaries>,
    /// Block numbers and the cache of decoded blocks: one per open database, shared by all
    /// its states.
    pub(crate) packing: Arc<Packing>,
    /// Visible documents per collection (a collection's map also holds removal marks and
    /// documents that replace packed ones, so its length is not the count).
    pub(crate) counts: BTreeMap<String, u64>,
    /// Collections marked as holding integer ids in the meta collection
    /// ([`MetaKey::IntIds`]), kept in step with it as `dicts` is.
    pub(crate) int_ids: std::collections::BTreeSet<String>,
}

/// Names one map of the state: a collection or an index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum MapRef {
    Collection(String),
    Index(String, String),
}

/// An index and its entries: keys are value tuple + id, values empty.
#[derive(Debug, Clone)]
pub(crate) struct IndexState {
    pub(crate) def: Arc<IndexDef>,
    pub(crate) map: DurableMap,
    /// The fields some document has held an array at (`crate::index::arrays`).
    pub(crate) arrays: ArrayFields,
}

impl State {
    /// The map of `collection`'s packed blocks, if it has one. Looked up without building
    /// its name (`_packs/<collection>`): this runs on every read of a document.
    pub(crate) fn packs(&self, collection: &str) -> Option<&DurableMap> {
        thread_local! {
            static NAME: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        NAME.with(|name| match name.try_borrow_mut() {
            Ok(mut name) => {
                crate::internal::packs_name_into(collection, &mut name);
                self.collections.get(name.as_str())
            }
            // Not reentrant in practice; allocate rather than fail if it ever is.
            Err(_) => self
                .collections
                .get(&crate::internal::packs_name(collection)),
        })
    }

    /// Every durable map: collections, then indexes.
    pub(crate) fn maps_mut(&mut self) -> impl Iterator<Item = &mut DurableMap> {
        self.collections
            .values_mut()
            .chain(self.indexes.values_mut().map(|ix| &mut ix.map))
    }

    /// The indexes of `collection`.
    pub(crate) fn map_mut(&mut self, r: &MapRef) -> Option<&mut DurableMap> {
        match r {
            MapRef::Collection(c) => self.collections.get_mut(c),
            MapRef::Index(c, n) => self
                .indexes
                .get_mut(&(c.clone(), n.clone()))
                .map(|ix| &mut ix.map),
        }
    }

    /// Every map, named.
    pub(crate) fn map_refs(&self) -> impl Iterator<Item = (MapRef, &DurableMap)> {
        let colls = self
            .collections
            .iter()
            .map(|(c, m)| (MapRef::Collection(c.clone()), m));
        let ixs = self
            .indexes
            .iter()
            .map(|((c, n), ix)| (MapRef::Index(c.clone(), n.clone()), &ix.map));
        colls.chain(ixs)
    }

    /// Whether `collection` stores new documents compressed (its [`MetaKey::Compress`]
    /// setting; default on): the one reading of the setting.
    pub(crate) fn compression(&self, collection: &str) -> Result<bool> {
        Ok(match self.collections.get(META) {
            Some(m) => m
                .get(&MetaKey::compress(collection))?
                .is_none_or(|v| v != b"0"),
            None => true,
        })
    }

    /// The kind of ids `collection` holds; `None` while it holds no documents (its next
    /// documents decide). A mark left on an emptied collection is no longer its kind.
    pub(crate) fn id_kind(&self, collection: &str) -> Option<crate::IdKind> {
        let documents = self.counts.get(collection).copied().unwrap_or(0);
        (documents > 0).then(|| self.marked_kind(collection))
    }

    /// The kind the meta collection marks `collection` with (text when unmarked), whether
    /// or not it holds documents: how its stored keys read.
    pub(crate) fn marked_kind(&self, collection: &str) -> crate::IdKind {
        if self.int_ids.contains(collection) {
            crate::IdKind::Int
        } else {
            crate::IdKind::Text
        }
    }

    pub(crate) fn indexes_of<'a>(
        &'a self,
        collection: &'a str,
    ) -> impl Iterator<Item = &'a IndexState> + 'a {
        self.indexes
            .range((collection.to_owned(), String::new())..)
            .take_while(move |((c, _), _)| c == collection)
            .map(|(_, ix)| ix)
    }
}
