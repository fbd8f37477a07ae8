//! Sorted, immutable, checksummed tables of byte-string keys and values.
//!
//! - [`Sorter`] takes pairs in any order within a memory budget (parallel in-memory sort,
//!   or sorted runs spilled to disk and merged in parallel) and writes a table.
//! - [`TableBuilder`] streams pairs that are already sorted into a table.
//! - [`Table`] reads one through mmap (or from any `AsRef<[u8]>`): get, multi-get, range,
//!   prefix, iteration both ways, rank and nth, with values borrowed from the file.
//! - [`TableList`] stores values by position and reads the i-th in O(1) index lookups.
//!
//! Files are created atomically (temp file, fsync, rename, fsync of the folder) and named by
//! the xxh3-128 hash of their bytes. The byte layout is described in `docs/FORMAT.md` (sorted table format).
//!
//! ```no_run
//! use stele_table::{Sorter, SorterOptions, Table};
//! # fn main() -> stele_table::Result<()> {
//! let dir = std::path::Path::new("/tmp/tables");
//! let mut sorter = Sorter::new(SorterOptions::default().memory_budget_bytes(64 << 20))?;
//! sorter.add(b"pear", b"3")?;
//! sorter.add(b"apple", b"1")?;
//! let info = sorter.finish(dir)?;
//! let table = Table::open(&info.path)?;
//! assert_eq!(table.get(b"apple")?, Some(&b"1"[..]));
//! for entry in table.range(&b"a"[..]..&b"p"[..]) {
//!     let (key, value) = entry?;
//!     println!("{:?} = {:?}", key, value);
//! }
//! # Ok(()) }
//! ```

mod block;
mod builder;
mod error;
mod footer;
mod id;
mod index;
mod list;
mod memory;
mod merge;
mod prefetch;
mod prefix;
mod set;
mod sorter;
mod storage;
mod table;
pub mod varint;

pub use builder::{
    DuplicatePolicy, MAX_ITEM_BYTES, TableBuilder, TableInfo, TableOptions, empty_map_bytes,
    empty_map_id,
};
pub use error::{DUPLICATE_KEY_FIX, Error, Part, Result};
pub use footer::{DIFF_PUT, DIFF_REMOVE, DiffInfo, FOOTER_BYTES, FORMAT_VERSION, MAGIC};
pub use id::{ParseTableIdError, TableId};
pub use list::{ListBuilder, TableList};
pub use merge::{MergeIter, Merged, merge};
pub use set::{SET_EXTENSION, SET_MAGIC, SET_VERSION, SetIter, ShardInfo, TableSet};
pub use sorter::{MIN_MEMORY_BUDGET_BYTES, SortedSink, Sorter, SorterOptions};
pub use storage::{
    FsStorage, Storage, StorageFile, TABLE_EXTENSION, create_dir_all, create_dir_all_unsynced,
    remove_partials, replace_file,
};
/// The checksum used throughout the format: XXH3-64 with seed 0.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

pub use table::{Access, Cursor, Entry, Iter, Key, MmapBytes, Table, TableStats, prefix_successor};
