//! Streaming construction of a table from sorted input.

use crate::block::{BlockBuilder, MAX_BLOCK_BYTES, MIN_BLOCK_BYTES};
use crate::error::{Error, Result};
use crate::footer::{DiffInfo, FLAG_DIFF, FLAG_LIST, FLAG_POSITIONAL, Footer};
use crate::id::TableId;
use crate::index::{IndexBuilder, separator};
use crate::storage::{AtomicFile, FsStorage, Storage};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest key or value, in bytes (lengths stay well inside the u32 block fields).
pub const MAX_ITEM_BYTES: usize = (1 << 30) - 1;

/// Bytes buffered before a write to the file.
pub(crate) const WRITE_BUFFER_BYTES: usize = 4 << 20;
/// Writes to the file cover whole, aligned pieces of this size (except the last): a Linux
/// page cache with large folios (seen on ext4 with kernel 6.18) then holds the file in 2 MiB
/// folios, which a map of it uses as huge pages, so warm random reads miss the TLB far less
/// than with 4 KiB pages. Writes of 1 MiB left it in 1 MiB folios, mapped 4 KiB at a time.
const WRITE_ALIGN_BYTES: usize = 2 << 20;

/// What to do when the same key is added more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DuplicatePolicy {
    /// Fail with [`Error::DuplicateKey`] naming the key.
    #[default]
    Reject,
    /// Keep the value added last.
    KeepLast,
    /// Keep the value added first.
    KeepFirst,
}

/// Options for the file layout, shared by [`TableBuilder`] and [`Sorter`](crate::Sorter).
#[derive(Debug, Clone)]
pub struct TableOptions {
    pub(crate) block_size_bytes: u32,
    pub(crate) restart_interval: u32,
    pub(crate) duplicates: DuplicatePolicy,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) diff: Option<DiffInfo>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size_bytes: 4096,
            restart_interval: 16,
            duplicates: DuplicatePolicy::Reject,
            storage: Arc::new(FsStorage),
            diff: None,
        }
    }
}

impl TableOptions {
    /// Size and alignment of data blocks (power of two, 16 B to 16 MiB; default 4 KiB, the
    /// page size). A random get reads one block: larger blocks cost more per cold read and
    /// more scanning per get, but shrink the in-memory index. A block holds one unit of
    /// entries, or its first entry alone when that entry needs more: units under 256 B suit
    /// only tables whose values span several units, to keep the padding after each one
    /// small (such tables are written as format version 3, unreadable by builds that read
    /// only version 2).
    #[must_use]
    pub fn block_size_bytes(mut self, bytes: u32) -> Self {
        self.block_size_bytes = bytes;
        self
    }

    /// The block size set (see [`block_size_bytes`](Self::block_size_bytes)).
    pub fn block_size(&self) -> u32 {
        self.block_size_bytes
    }

    /// Entries between two restart points (whole keys) in a block (default 16). Larger
    /// intervals compress keys a little better; a get decodes up to this many entries.
    #[must_use]
    pub fn restart_interval(mut self, entries: u32) -> Self {
        self.restart_interval = entries;
        self
    }

    /// Duplicate key policy (default [`DuplicatePolicy::Reject`]).
    #[must_use]
    pub fn duplicates(mut self, policy: DuplicatePolicy) -> Self {
        self.duplicates = policy;
        self
    }

    /// File operations to use (default: the real file system). For fault injection.
    #[must_use]
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }

    /// Marks the table as a diff on top of another table (default: not a diff). The table
    /// then stores the diff's fields in its footer; its values must each start with an
    /// operation byte ([`DIFF_PUT`](crate::DIFF_PUT) + value or [`DIFF_REMOVE`](crate::DIFF_REMOVE)
    /// alone), which [`TableBuilder::add`] checks. Used by durable collections.
    #[must_use]
    pub fn diff(mut self, diff: DiffInfo) -> Self {
        self.diff = Some(diff);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let b = self.block_size_bytes;
        if !b.is_power_of_two() || !(MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&b) {
            return Err(Error::InvalidOption {
                name: "block_size_bytes",
                value: u64::from(b),
                reason: "must be a power of two from 16 to 16777216",
            });
        }
        if !(1..=1 << 16).contains(&self.restart_interval) {
            return Err(Error::InvalidOption {
                name: "restart_interval",
                value: u64::from(self.restart_interval),
                reason: "must be from 1 to 65536",
            });
        }
        Ok(())
    }
}

/// What a finished build produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableInfo {
    /// Path of the table: `<dir>/<xxh3-128 of the content, hex>.stt`.
    pub path: PathBuf,
    /// The table's content id (the hash in its file name).
    pub id: TableId,
    /// Number of entries.
    pub entries: u64,
    /// Number of data blocks.
    pub blocks: u64,
    /// Size of the file in bytes.
    pub file_bytes: u64,
    /// Sum of the key lengths.
    pub raw_key_bytes: u64,
    /// Sum of the value lengths.
    pub raw_value_bytes: u64,
}

/// One or more finished blocks, encoded off the writer's thread.
#[derive(Debug, Default)]
pub(crate) struct EncodedBlocks {
    pub bytes: Vec<u8>,
    /// Per block: separator, length in block-size units, entry count.
    pub blocks: Vec<(Vec<u8>, u64, u64)>,
    pub entries: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
}

/// The file side of building: block bytes in order, the index, the footer, the commit.
#[derive(Debug)]
pub(crate) struct TableWriter {
    file: AtomicFile,
    index: IndexBuilder,
    out: Vec<u8>,
    block_size_bytes: u32,
    restart_interval: u32,
    list: bool,
    diff: Option<DiffInfo>,
    entries: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
}

impl TableWriter {
    pub(crate) fn new(dir: &Path, opts: &TableOptions, list: bool) -> Result<Self> {
        opts.validate()?;
        let file = AtomicFile::create(Arc::clone(&opts.storage), dir)?;
        Ok(TableWriter {
            file,
            index: IndexBuilder::default(),
            out: Vec::with_capacity(WRITE_BUFFER_BYTES + opts.block_size_bytes as usize),
            block_size_bytes: opts.block_size_bytes,
            restart_interval: opts.restart_interval,
            list,
            diff: opts.diff,
            entries: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
        })
    }

    /// Finishes `block` into the file, indexed under `separator`.
    fn finish_block(&mut self, block: &mut BlockBuilder, separator: &[u8]) -> Result<()> {
        if block.is_empty() {
            return Ok(());
        }
        let count = block.entry_count();
        let bytes = block.finish_into(&mut self.out);
        let units = (bytes / self.block_size_bytes as usize) as u64;
        self.index.add(separator, units, u64::from(count));
        self.write_aligned()
    }

    /// Once the buffer is full, writes the part of it that ends on a `WRITE_ALIGN_BYTES`
    /// boundary of the file and keeps the rest.
    fn write_aligned(&mut self) -> Result<()> {
        if self.out.len() < WRITE_BUFFER_BYTES {
            return Ok(());
        }
        let end = self.file.written_bytes() + self.out.len() as u64;
        let aligned_end = end - end % WRITE_ALIGN_BYTES as u64;
        let n =
            (aligned_end.saturating_sub(self.file.written_bytes()) as usize).min(self.out.len());
        let ready = self.out.get(..n).unwrap_or_default();
        self.file.write_all(ready)?;
        self.out.drain(..n);
        Ok(())
    }

    fn count(&mut self, key_len: usize, value_len: usize) {
        self.entries += 1;
        self.raw_key_bytes += key_len as u64;
        self.raw_value_bytes += value_len as u64;
    }

    /// Appends blocks encoded elsewhere.
    pub(crate) fn push_encoded(&mut self, enc: &EncodedBlocks) -> Result<()> {
        // Through the buffer (one copy), so that writes stay aligned as in `finish_block`.
        self.out.extend_from_slice(&enc.bytes);
        self.write_aligned()?;
        for (sep, units, count) in &enc.blocks {
            self.index.add(sep, *units, *count);
        }
        self.entries += enc.entries;
        self.raw_key_bytes += enc.key_bytes;
        self.raw_value_bytes += enc.value_bytes;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<TableInfo> {
        let index_offset = self.file.written_bytes() + self.out.len() as u64;
        let blocks = self.index.blocks();
        let index = std::mem::take(&mut self.index).into_bytes();
        let diff_flags = match self.diff {
            Some(d) if d.positional => FLAG_DIFF | FLAG_POSITIONAL,
            Some(_) => FLAG_DIFF,
            None => 0,
        };
        let footer = Footer {
            flags: if self.list { FLAG_LIST } else { diff_flags },
            block_size: self.block_size_bytes,
            restart_interval: self.restart_interval,
            entry_count: self.entries,
            block_count: blocks,
            index_offset,
            index_len: index.len() as u64,
            raw_key_bytes: self.raw_key_bytes,
            raw_value_bytes: self.raw_value_bytes,
            index_checksum: xxhash_rust::xxh3::xxh3_64(&index),
            parent: self.diff.map_or([0; 16], |d| d.parent.to_bytes()),
            logical_len: self.diff.map_or(self.entries, |d| d.logical_len),
        };
        self.out.extend_from_slice(&index);
        self.out.extend_from_slice(&footer.encode());
        self.file.write_all(&self.out)?;
        let file_bytes = self.file.written_bytes();
        let (path, id) = self.file.commit()?;
        Ok(TableInfo {
            path,
            id,
            entries: self.entries,
            blocks,
            file_bytes,
            raw_key_bytes: self.raw_key_bytes,
            raw_value_bytes: self.raw_value_bytes,
        })
    }
}

/// Builds a table from entries given in strictly ascending key order, streaming: memory use
/// is one block plus the index, whatever the input size.
#[derive(Debug)]
pub struct TableBuilder {
    policy: DuplicatePolicy,
    writer: TableWriter,
    block: BlockBuilder,
    /// Separator of the block being built.
    block_sep: Vec<u8>,
    last_key: Vec<u8>,
    any: bool,
    /// KeepLast holds the latest value of the last key until a larger key arrives.
    pending_value: Vec<u8>,
    list: bool,
}

impl TableBuilder {
    /// Starts a table in folder `dir` (which must exist).
    pub fn new(dir: impl AsRef<Path>, opts: TableOptions) -> Result<Self> {
        Self::with_kind(dir.as_ref(), opts, false)
    }

    pub(crate) fn with_kind(dir: &Path, opts: TableOptions, list: bool) -> Result<Self> {
        if list && opts.diff.is_some() {
            return Err(Error::InvalidOption {
                name: "diff",
                value: 1,
                reason: "a list table cannot be a diff (list diffs are positional tables)",
            });
        }
        let writer = TableWriter::new(dir, &opts, list)?;
        Ok(TableBuilder {
            block: BlockBuilder::new(opts.block_size_bytes as usize, opts.restart_interval),
            policy: opts.duplicates,
            writer,
            block_sep: Vec::new(),
            last_key: Vec::new(),
            any: false,
            pending_value: Vec::new(),
            list,
        })
    }

    /// Entries accepted so far (duplicates dropped by the policy not counted).
    pub fn len(&self) -> u64 {
        self.writer.entries + u64::from(self.has_pending())
    }

    /// True if no entry was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn has_pending(&self) -> bool {
        self.any && self.policy == DuplicatePolicy::KeepLast && !self.list
    }

    /// Adds an entry; its key must be greater than the previous one (or equal, as the
    /// duplicate policy allows).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_sizes(key, value)?;
        if let Some(diff) = self.writer.diff {
            check_diff_entry(key, value, diff.positional)?;
        }
        if self.any {
            match key.cmp(&self.last_key) {
                Ordering::Greater => {}
                Ordering::Less => {
                    return Err(Error::OutOfOrder {
                        previous: self.last_key.clone(),
                        got: key.to_vec(),
                    });
                }
                Ordering::Equal => match self.policy {
                    DuplicatePolicy::Reject => {
                        return Err(Error::DuplicateKey { key: key.to_vec() });
                    }
                    DuplicatePolicy::KeepFirst => return Ok(()),
                    DuplicatePolicy::KeepLast => {
                        self.pending_value.clear();
                        self.pending_value.extend_from_slice(value);
                        return Ok(());
                    }
                },
            }
        }
        if self.policy == DuplicatePolicy::KeepLast {
            if self.any {
                let (k, v) = (
                    std::mem::take(&mut self.last_key),
                    std::mem::take(&mut self.pending_value),
                );
                self.emit(&k, &v)?;
                self.pending_value = v;
                self.last_key = k;
            }
            self.pending_value.clear();
            self.pending_value.extend_from_slice(value);
        } else {
            self.emit(key, value)?;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.any = true;
        Ok(())
    }

    /// Appends an entry for a list (no key, no order).
    pub(crate) fn push_list_value(&mut self, value: &[u8]) -> Result<()> {
        check_sizes(&[], value)?;
        self.emit(&[], value)
    }

    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if !self.block.try_add(key, value) {
            let sep = if self.list {
                Vec::new()
            } else {
                separator(self.block.last_key(), key).to_vec()
            };
            self.writer.finish_block(&mut self.block, &self.block_sep)?;
            self.block_sep = sep;
            // An empty block accepts any entry.
            let added = self.block.try_add(key, value);
            debug_assert!(added);
        }
        self.writer.count(key.len(), value.len());
        Ok(())
    }

    /// Writes the index and footer and makes the file durable under its content name.
    pub fn finish(mut self) -> Result<TableInfo> {
        if self.has_pending() {
            let (k, v) = (
                std::mem::take(&mut self.last_key),
                std::mem::take(&mut self.pending_value),
            );
            self.emit(&k, &v)?;
        }
        self.writer.finish_block(&mut self.block, &self.block_sep)?;
        self.writer.finish()
    }
}

/// Values of a diff start with an operation byte; keys of a positional diff are positions.
fn check_diff_entry(key: &[u8], value: &[u8], positional: bool) -> Result<()> {
    let ok_value = match value.split_first() {
        Some((&crate::DIFF_PUT, _)) => true,
        Some((&crate::DIFF_REMOVE, rest)) => rest.is_empty() && !positional,
        _ => false,
    };
    if !ok_value {
        return Err(Error::InvalidDiffEntry {
            key: key.to_vec(),
            reason: if positional {
                "a list diff value must be the put byte (1) followed by the value"
            } else {
                "a diff value must be the put byte (1) followed by the value, or the remove byte (0) alone"
            },
        });
    }
    if positional && key.len() != 8 {
        return Err(Error::InvalidDiffEntry {
            key: key.to_vec(),
            reason: "a list diff key must be an 8-byte big-endian position",
        });
    }
    Ok(())
}

pub(crate) fn check_sizes(key: &[u8], value: &[u8]) -> Result<()> {
    for (what, len) in [("key", key.len()), ("value", value.len())] {
        if len > MAX_ITEM_BYTES {
            return Err(Error::TooLarge {
                what,
                len,
                max_bytes: MAX_ITEM_BYTES as u64,
            });
        }
    }
    Ok(())
}

/// The bytes of an empty map table as [`TableBuilder`] writes them with default options:
/// the footer alone (no block, empty index). Its id is [`empty_map_id`]. Durable stores do
/// not write this file: they serve these bytes from memory wherever a map is empty.
pub fn empty_map_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<[u8; crate::FOOTER_BYTES]> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let opts = TableOptions::default();
        Footer {
            flags: 0,
            block_size: opts.block_size_bytes,
            restart_interval: opts.restart_interval,
            entry_count: 0,
            block_count: 0,
            index_offset: 0,
            index_len: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            index_checksum: xxhash_rust::xxh3::xxh3_64(&[]),
            parent: [0; 16],
            logical_len: 0,
        }
        .encode()
    })
}

/// The id of [`empty_map_bytes`] (the XXH3-128 of its bytes, as for every table).
pub fn empty_map_id() -> TableId {
    static ID: std::sync::OnceLock<TableId> = std::sync::OnceLock::new();
    *ID.get_or_init(|| TableId::from_u128(xxhash_rust::xxh3::xxh3_128(empty_map_bytes())))
}
