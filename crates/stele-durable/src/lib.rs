//! Durable maps and lists: immutable sorted tables with diffs layered on top, compaction,
//! named roots switched atomically, and snapshot reads.
//!
//! The ideas come from Bifurcan's durable collections, made ordered by key and complete:
//!
//! - A [`Store`] is a folder of content-named tables (`<hash>.stt`, from `stele-table`)
//!   and named roots (like git refs) that point at the top table of a collection.
//! - A [`DurableMap`] is a base table plus diff tables plus an in-memory diff; reads merge
//!   them. [`DurableMap::save`] writes the in-memory diff as a small table whose footer
//!   names the table below it; [`DurableMap::compact`] merges all layers into a new base.
//!   [`DurableList`] does the same for values by position (`push`, `set`, `pop`).
//! - Roots are switched with compare-and-swap ([`Store::switch_root`],
//!   [`DurableMap::commit`]). A collection you hold is a snapshot: it keeps reading its own
//!   tables, which [`Store::collect_garbage`] removes only when no root reaches them and no
//!   process has them open (every open table holds a shared file lock).
//! - Every file is created by temp file, fsync, rename and folder fsync, so a crash leaves
//!   the previous state readable.
//!
//! ```no_run
//! use stele_durable::Store;
//! # fn main() -> stele_durable::Result<()> {
//! let store = Store::open("/tmp/durable-demo")?;
//! // Build from pairs in any order (sorted with a memory budget).
//! let mut map = store.build_map([(b"pear".to_vec(), b"3".to_vec()), (b"apple".to_vec(), b"1".to_vec())])?;
//! map.put(b"fig", b"7")?;
//! map.remove(b"pear")?;
//! assert_eq!(map.get(b"fig")?, Some(&b"7"[..]));
//! let diff = map.save()?;            // a small table on top of the base
//! store.switch_root("fruit", None, diff, stele_durable::Kind::Map)?;
//! let snapshot = store.map_at_root("fruit")?;
//! map.compact()?;                     // one new base; the snapshot still reads the old stack
//! assert_eq!(snapshot.len(), 2);
//! store.collect_garbage()?;           // old tables go once nothing needs them
//! # Ok(()) }
//! ```

mod builder;
mod error;
mod list;
mod map;
mod memdiff;
mod merge;
mod root;
mod store;
mod undo;

pub use builder::MapBuilder;
pub use error::{Error, Result};
pub use list::{DurableList, ListIter};
pub use map::{DurableMap, Origin};
pub use merge::MapIter;
pub use root::{Kind, ROOT_BYTES, ROOT_MAGIC, ROOT_VERSION, RootInfo};
pub use stele_table::{Key, TableId};
pub use store::{GcReport, MAX_LAYERS, ROOTS_DIR, Store, StoreOptions};
