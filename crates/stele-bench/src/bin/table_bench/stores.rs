//! The stores under test, behind one small interface: build from the prepared input files,
//! open, point get (returning the decoded 8-byte value), full scan.

use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::data::{self, Keys, SetInfo};
use crate::sys;

/// Which prepared file a build reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// `keys.txt`, random order.
    Shuffled,
    /// `sorted.tsv`, sorted bytewise.
    Sorted,
}

impl Input {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "shuffled" => Ok(Input::Shuffled),
            "sorted" => Ok(Input::Sorted),
            _ => bail!("unknown input {s:?}"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Input::Shuffled => "shuffled",
            Input::Sorted => "sorted",
        }
    }
}

/// What a build produced.
#[derive(Debug)]
pub struct Built {
    /// The file or folder holding the store (measured and evicted as a whole).
    pub path: PathBuf,
    pub entries: u64,
    pub note: String,
}

/// A thread's handle for point reads.
pub trait Getter {
    /// The value of `key`, decoded from its 8 little-endian bytes.
    fn get(&mut self, key: &[u8]) -> Result<Option<u64>>;
}

/// An opened store.
pub trait Reader: Sync {
    /// A handle for one thread (LMDB and redb read transactions are per thread).
    fn getter(&self) -> Result<Box<dyn Getter + '_>>;
    /// Visits every entry in key order; returns (entries, key bytes + value bytes).
    fn scan(&self) -> Result<(u64, u64)>;
}

fn value_u64(v: &[u8]) -> Result<u64> {
    let b: [u8; 8] = v.try_into().context("value is not 8 bytes")?;
    Ok(u64::from_le_bytes(b))
}

/// Reads the whole input once so that every build starts with it in the page cache.
pub fn warm_input(path: &Path) -> Result<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

/// Feeds sorted pairs: streamed from `sorted.tsv`, or, for shuffled input, all read into
/// memory and sorted with `sort_unstable_by` on one thread first (what a user of a peer
/// that needs sorted input has to do).
pub fn for_each_sorted_pair(
    set: &SetInfo,
    input: Input,
    mut f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    match input {
        Input::Sorted => data::for_each_sorted(&set.sorted_path(), f),
        Input::Shuffled => {
            let keys = Keys::read_lines(&set.keys_path())?;
            let mut order: Vec<u32> = (0..keys.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| keys.get(a as usize).cmp(keys.get(b as usize)));
            for &row in &order {
                f(keys.get(row as usize), u64::from(row))?;
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- LMDB (heed)

pub mod lmdb {
    use super::*;
    use heed::types::Bytes;
    use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, PutFlags, RoTxn, WithTls};

    const MAP_SIZE: usize = 1 << 40;

    pub fn build(set: &SetInfo, input: Input, dir: &Path) -> Result<Built> {
        std::fs::create_dir_all(dir)?;
        // SAFETY: the folder is new and used by this process only; no other mapping of it.
        let env = unsafe { EnvOpenOptions::new().map_size(MAP_SIZE).open(dir)? };
        let wtxn = env.write_txn()?;
        let db: Database<Bytes, Bytes> = env
            .create_databases_and_commit(wtxn, |wdo, wtxn| {
                let db: Database<Bytes, Bytes> = wdo.create_database(wtxn, None)?;
                heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db))
            })?
            .unwrap_commit();
        let mut wtxn = env.write_txn()?;
        let mut n = 0u64;
        for_each_sorted_pair(set, input, |k, row| {
            db.put_with_flags(&mut wtxn, PutFlags::APPEND, k, &row.to_le_bytes())?;
            n += 1;
            Ok(())
        })?;
        wtxn.commit()?; // synchronous: LMDB syncs on commit by default
        drop(env);
        Ok(Built {
            path: dir.to_path_buf(),
            entries: n,
            note: "one write transaction, MDB_APPEND, sync on commit".into(),
        })
    }

    struct LmdbReader {
        env: &'static Env,
        db: Database<'static, Bytes, Bytes>,
    }

    struct LmdbGetter<'a> {
        txn: RoTxn<'static, WithTls>,
        db: &'a Database<'static, Bytes, Bytes>,
    }

    impl Getter for LmdbGetter<'_> {
        fn get(&mut self, key: &[u8]) -> Result<Option<u64>> {
            match self.db.get(&self.txn, key)? {
                Some(v) => Ok(Some(value_u64(v)?)),
                None => Ok(None),
            }
        }
    }

    impl Reader for LmdbReader {
        fn getter(&self) -> Result<Box<dyn Getter + '_>> {
            Ok(Box::new(LmdbGetter {
                txn: self.env.read_txn()?,
                db: &self.db,
            }))
        }

        fn scan(&self) -> Result<(u64, u64)> {
            let txn = self.env.read_txn()?;
            let (mut n, mut bytes) = (0u64, 0u64);
            for kv in self.db.iter(&txn)? {
                let (k, v) = kv?;
                n += 1;
                bytes += (k.len() + v.len()) as u64;
                std::hint::black_box((k, v));
            }
            Ok((n, bytes))
        }
    }

    pub fn open(path: &Path, cold: bool) -> Result<Box<dyn Reader>> {
        let mut opts = EnvOpenOptions::new();
        opts.map_size(MAP_SIZE);
        if cold {
            // SAFETY: MDB_NORDAHEAD only makes LMDB call madvise(MADV_RANDOM) on its map.
            unsafe { opts.flags(EnvFlags::NO_READ_AHEAD) };
        }
        // SAFETY: the store was closed by its builder; nothing else maps or writes it now.
        let env = unsafe { opts.open(path)? };
        // One environment per process, kept to the end: leaking gives the 'static borrow
        // that heed's database handles need.
        let env: &'static Env = Box::leak(Box::new(env));
        let rtxn = env.read_txn()?;
        let db: Database<'static, Bytes, Bytes> = env
            .open_databases_and_commit(rtxn, |dbo, rtxn| {
                dbo.open_database(rtxn, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit()
            .context("LMDB unnamed database missing")?;
        Ok(Box::new(LmdbReader { env, db }))
    }
}

// ---------------------------------------------------------------- fst

pub mod fst_map {
    use super::*;
    use fst::{IntoStreamer, Streamer};

    pub fn build(set: &SetInfo, input: Input, dir: &Path) -> Result<Built> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("map.fst");
        let w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        let mut b = fst::MapBuilder::new(w)?;
        let mut n = 0u64;
        for_each_sorted_pair(set, input, |k, row| {
            b.insert(k, row)?;
            n += 1;
            Ok(())
        })?;
        let w = b.into_inner()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(Built {
            path,
            entries: n,
            note: "fst::MapBuilder, value = the u64 output of the key, fsync".into(),
        })
    }

    struct FstReader {
        map: fst::Map<memmap2::Mmap>,
    }

    struct FstGetter<'a>(&'a fst::Map<memmap2::Mmap>);

    impl Getter for FstGetter<'_> {
        fn get(&mut self, key: &[u8]) -> Result<Option<u64>> {
            Ok(self.0.get(key))
        }
    }

    impl Reader for FstReader {
        fn getter(&self) -> Result<Box<dyn Getter + '_>> {
            Ok(Box::new(FstGetter(&self.map)))
        }

        fn scan(&self) -> Result<(u64, u64)> {
            let mut s = self.map.into_stream();
            let (mut n, mut bytes) = (0u64, 0u64);
            while let Some((k, v)) = s.next() {
                n += 1;
                bytes += k.len() as u64 + 8;
                std::hint::black_box((k, v));
            }
            Ok((n, bytes))
        }
    }

    pub fn open(path: &Path, cold: bool) -> Result<Box<dyn Reader>> {
        let file = File::open(path)?;
        // SAFETY: the file is immutable once built and nothing truncates it while mapped.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        if cold {
            sys::madvise_random(&map)?;
        }
        Ok(Box::new(FstReader {
            map: fst::Map::new(map)?,
        }))
    }
}

// ---------------------------------------------------------------- redb

pub mod redb_store {
    use super::*;
    use redb::{ReadableTable, TableDefinition};

    const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");

    pub fn build(set: &SetInfo, input: Input, dir: &Path) -> Result<Built> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("db.redb");
        let db = redb::Database::create(&path)?;
        let txn = db.begin_write()?;
        let mut n = 0u64;
        {
            let mut t = txn.open_table(TABLE)?;
            for_each_sorted_pair(set, input, |k, row| {
                t.insert(k, &row.to_le_bytes()[..])?;
                n += 1;
                Ok(())
            })?;
        }
        txn.commit()?; // Durability::Immediate (default)
        drop(db);
        Ok(Built {
            path,
            entries: n,
            note: "one write transaction of inserts in key order (no bulk-load API), default cache"
                .into(),
        })
    }

    struct RedbReader {
        db: redb::Database,
    }

    struct RedbGetter {
        table: redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
    }

    impl Getter for RedbGetter {
        fn get(&mut self, key: &[u8]) -> Result<Option<u64>> {
            match self.table.get(key)? {
                Some(v) => Ok(Some(value_u64(v.value())?)),
                None => Ok(None),
            }
        }
    }

    impl Reader for RedbReader {
        fn getter(&self) -> Result<Box<dyn Getter + '_>> {
            let txn = self.db.begin_read()?;
            Ok(Box::new(RedbGetter {
                table: txn.open_table(TABLE)?,
            }))
        }

        fn scan(&self) -> Result<(u64, u64)> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(TABLE)?;
            let (mut n, mut bytes) = (0u64, 0u64);
            for kv in table.iter()? {
                let (k, v) = kv?;
                n += 1;
                bytes += (k.value().len() + v.value().len()) as u64;
                std::hint::black_box((k.value(), v.value()));
            }
            Ok((n, bytes))
        }
    }

    pub fn open(path: &Path, _cold: bool) -> Result<Box<dyn Reader>> {
        Ok(Box::new(RedbReader {
            db: redb::Database::open(path)?,
        }))
    }
}

// ---------------------------------------------------------------- fjall

pub mod fjall_store {
    use super::*;
    use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};

    pub fn build(set: &SetInfo, input: Input, dir: &Path) -> Result<Built> {
        let ks = Config::new(dir).open()?;
        let p = ks.open_partition("t", PartitionCreateOptions::default())?;
        if input != Input::Sorted {
            bail!("the fjall run reads sorted input only");
        }
        let mut lines = SortedLines::open(&set.sorted_path())?;
        p.ingest(lines.by_ref())?;
        if let Some(e) = lines.error.take() {
            return Err(e);
        }
        let n = lines.count;
        ks.persist(PersistMode::SyncAll)?;
        drop(p);
        drop(ks);
        Ok(Built {
            path: dir.to_path_buf(),
            entries: n,
            note: "PartitionHandle::ingest (bulk ingestion of sorted pairs), persist SyncAll"
                .into(),
        })
    }

    /// `key<TAB>row` lines as owned pairs, for APIs that take an iterator.
    struct SortedLines {
        reader: std::io::BufReader<File>,
        line: Vec<u8>,
        error: Option<anyhow::Error>,
        count: u64,
    }

    impl SortedLines {
        fn open(path: &Path) -> Result<Self> {
            Ok(Self {
                reader: std::io::BufReader::with_capacity(1 << 20, File::open(path)?),
                line: Vec::with_capacity(256),
                error: None,
                count: 0,
            })
        }

        fn next_pair(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
            use std::io::BufRead;
            self.line.clear();
            if self.reader.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(None);
            }
            if self.line.last() == Some(&b'\n') {
                self.line.pop();
            }
            let tab = self
                .line
                .iter()
                .rposition(|&b| b == b'\t')
                .context("sorted.tsv line without a tab")?;
            let row: u64 = std::str::from_utf8(&self.line[tab + 1..])?.parse()?;
            Ok(Some((
                self.line[..tab].to_vec(),
                row.to_le_bytes().to_vec(),
            )))
        }
    }

    impl Iterator for SortedLines {
        type Item = (Vec<u8>, Vec<u8>);

        fn next(&mut self) -> Option<Self::Item> {
            if self.error.is_some() {
                return None;
            }
            match self.next_pair() {
                Ok(Some(p)) => {
                    self.count += 1;
                    Some(p)
                }
                Ok(None) => None,
                Err(e) => {
                    self.error = Some(e);
                    None
                }
            }
        }
    }

    struct FjallReader {
        _ks: Keyspace,
        p: PartitionHandle,
    }

    struct FjallGetter<'a>(&'a PartitionHandle);

    impl Getter for FjallGetter<'_> {
        fn get(&mut self, key: &[u8]) -> Result<Option<u64>> {
            match self.0.get(key)? {
                Some(v) => Ok(Some(value_u64(&v)?)),
                None => Ok(None),
            }
        }
    }

    impl Reader for FjallReader {
        fn getter(&self) -> Result<Box<dyn Getter + '_>> {
            Ok(Box::new(FjallGetter(&self.p)))
        }

        fn scan(&self) -> Result<(u64, u64)> {
            let (mut n, mut bytes) = (0u64, 0u64);
            for kv in self.p.iter() {
                let (k, v) = kv?;
                n += 1;
                bytes += (k.len() + v.len()) as u64;
                std::hint::black_box((&k, &v));
            }
            Ok((n, bytes))
        }
    }

    /// Block cache of the readers: 1 GiB (redb's default; fjall's is 32 MiB), so that a warm
    /// get finds its block in fjall's cache rather than in the page cache through `pread`.
    const READ_CACHE_BYTES: u64 = 1 << 30;

    pub fn open(path: &Path, _cold: bool) -> Result<Box<dyn Reader>> {
        let ks = Config::new(path).cache_size(READ_CACHE_BYTES).open()?;
        let p = ks.open_partition("t", PartitionCreateOptions::default())?;
        Ok(Box::new(FjallReader { _ks: ks, p }))
    }
}
