//! How much room indexes take: per index (`Snapshot::index_stats`), per collection
//! (`CollectionStats::index_bytes`) and per database (`DiskUsage::index_bytes`).

use crate::state::State;

/// Facts about one index in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexStats {
    /// The index's name.
    pub name: String,
    /// Its field paths, in key order.
    pub fields: Vec<String>,
    /// Entries (one per document and combination of values), including changes not in a
    /// table yet: exact once the index is packed (at its creation, compaction, close), a
    /// close estimate for the keys written since (see `docs/FORMAT.md`, "Index keys").
    pub entries: u64,
    /// Tables holding it (a base and diffs).
    pub layers: usize,
    /// Bytes on disk of those tables.
    pub table_bytes: u64,
    /// Bytes of the keys in those tables as encoded (value tuple, then document id; see
    /// `docs/FORMAT.md`, "Index keys"), before the tables' prefix compression.
    pub key_bytes: u64,
    /// The fields some document has held an array at, or several values through an array
    /// of objects, since the index was built (MongoDB's "multikey paths"). A sort over such
    /// a field that the filter also tests is done in memory rather than by the index. An
    /// index last saved by a build that did not keep this (manifest version 8 or earlier)
    /// lists every field: not known. A removal does not take a field out; dropping and
    /// creating the index again does.
    pub array_fields: Vec<String>,
}

/// Facts about every index of `collection` in `state`, by name.
pub(crate) fn index_stats(state: &State, collection: &str) -> Vec<IndexStats> {
    state
        .indexes_of(collection)
        .map(|ix| {
            let mut stats = IndexStats {
                name: ix.def.name.clone(),
                fields: ix
                    .def
                    .fields
                    .iter()
                    .map(|f| f.as_str().to_owned())
                    .collect(),
                entries: crate::index::packed::count(&ix.map).unwrap_or(ix.map.len()),
                layers: 0,
                table_bytes: 0,
                key_bytes: 0,
                array_fields: ix
                    .def
                    .fields
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| ix.arrays.has(i))
                    .map(|(_, f)| f.as_str().to_owned())
                    .collect(),
            };
            for (_, t) in ix.map.table_stats() {
                stats.layers += 1;
                stats.table_bytes += t.file_bytes;
                stats.key_bytes += t.raw_key_bytes;
            }
            stats
        })
        .collect()
}

/// Bytes on disk of the tables of `collection`'s indexes (every index with `None`).
pub(crate) fn index_bytes(state: &State, collection: Option<&str>) -> u64 {
    state
        .indexes
        .iter()
        .filter(|((c, _), _)| collection.is_none_or(|want| want == c))
        .flat_map(|(_, ix)| ix.map.table_stats())
        .map(|(_, t)| t.file_bytes)
        .sum()
}
