//! The systems run in Rust: Stele's durable map and LMDB (heed). Bifurcan runs in a JVM
//! (`java/DurableBench.java`), RocksDB in Python (`scripts/rocks_durable.py`).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::data::{self, first_word};
use crate::phases::{Reader, scan_until};

/// Root name under which the built map is recorded, for the read phase to reopen it.
const ROOT: &str = "bench";

pub mod stele {
    use super::*;
    use stele_durable::{DurableMap, Kind, Store, StoreOptions};
    use stele_table::TableOptions;

    /// `Store::build_map` over the pairs in generation (random) order, default store
    /// options (256 MiB sort budget) but for the block size and restart interval (`None`:
    /// the defaults, 4 KiB and 16), then a root pointing at the result.
    pub fn build(
        dir: &Path,
        n: u64,
        block_bytes: Option<u32>,
        restart_interval: Option<u32>,
    ) -> Result<(u64, String)> {
        let mut table = TableOptions::default();
        if let Some(b) = block_bytes {
            table = table.block_size_bytes(b);
        }
        if let Some(r) = restart_interval {
            table = table.restart_interval(r);
        }
        let opts = StoreOptions::default().table_options(table);
        let store = Store::open_with(dir, opts)?;
        let pairs = (0..n).map(|i| {
            let k = data::key(i);
            (k.to_be_bytes(), data::value(k))
        });
        let map = store.build_map(pairs)?;
        let id = map.id().context("built map has no table")?;
        store.switch_root(ROOT, None, id, Kind::Map)?;
        Ok((
            map.len(),
            format!(
                "Store::build_map of the pairs in random order, default StoreOptions (256 MiB \
                 sort budget) with {} KiB blocks, restart interval {}, switch_root",
                block_bytes.unwrap_or(4096) / 1024,
                restart_interval.unwrap_or(16)
            ),
        ))
    }

    struct SteleReader(DurableMap);

    impl Reader for SteleReader {
        fn get(&self, key: &[u8]) -> Result<Option<u64>> {
            Ok(self.0.get(key)?.and_then(first_word))
        }

        fn scan(&self, cap: u64, deadline: Instant) -> Result<(u64, u64)> {
            scan_until(self.0.iter(), cap, deadline)
        }
    }

    pub fn open(dir: &Path) -> Result<Box<dyn Reader>> {
        let store = Store::open(dir)?;
        Ok(Box::new(SteleReader(store.map_at_root(ROOT)?)))
    }
}

pub mod lmdb {
    use super::*;
    use heed::types::Bytes;
    use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, PutFlags, RoTxn, WithTls};

    const MAP_SIZE: usize = 1 << 40;

    /// Keys sorted in memory (8 bytes each; values are computed from the key, so only keys
    /// are sorted), then one write transaction of MDB_APPEND puts, sync on commit.
    pub fn build(dir: &Path, n: u64) -> Result<(u64, String)> {
        std::fs::create_dir_all(dir)?;
        let mut keys: Vec<u64> = (0..n).map(data::key).collect();
        keys.sort_unstable();
        // SAFETY: the folder is new and used by this process only; no other mapping of it.
        let env = unsafe { EnvOpenOptions::new().map_size(MAP_SIZE).open(dir)? };
        let db: Database<Bytes, Bytes> = env
            .create_databases_and_commit(env.write_txn()?, |wdo, wtxn| {
                let db: Database<Bytes, Bytes> = wdo.create_database(wtxn, None)?;
                heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db))
            })?
            .unwrap_commit();
        let mut wtxn = env.write_txn()?;
        for &k in &keys {
            db.put_with_flags(
                &mut wtxn,
                PutFlags::APPEND,
                &k.to_be_bytes(),
                &data::value(k),
            )?;
        }
        wtxn.commit()?;
        let len = {
            let rtxn = env.read_txn()?;
            db.len(&rtxn)?
        };
        drop(env);
        Ok((
            len,
            "heed: keys sorted in memory (values derived from keys, so the sort moves 8 bytes \
             per entry), one transaction of MDB_APPEND puts, sync on commit"
                .into(),
        ))
    }

    struct LmdbReader {
        // Field order: the transaction and database go before the environment.
        txn: RoTxn<'static, WithTls>,
        db: Database<'static, Bytes, Bytes>,
        _env: &'static Env,
    }

    impl Reader for LmdbReader {
        fn get(&self, key: &[u8]) -> Result<Option<u64>> {
            Ok(self.db.get(&self.txn, key)?.and_then(first_word))
        }

        fn scan(&self, cap: u64, deadline: Instant) -> Result<(u64, u64)> {
            scan_until(self.db.iter(&self.txn)?, cap, deadline)
        }
    }

    /// Opened with MDB_NORDAHEAD (LMDB's MADV_RANDOM) for the cold gets.
    pub fn open(dir: &Path) -> Result<Box<dyn Reader>> {
        let mut opts = EnvOpenOptions::new();
        opts.map_size(MAP_SIZE);
        // SAFETY: MDB_NORDAHEAD only makes LMDB call madvise(MADV_RANDOM) on its map.
        unsafe { opts.flags(EnvFlags::NO_READ_AHEAD) };
        // SAFETY: the store was closed by its builder; nothing else maps or writes it now.
        let env = unsafe { opts.open(dir)? };
        // One environment per process, kept to the end: leaking gives the 'static borrow
        // that a read transaction held in a struct needs.
        let env: &'static Env = Box::leak(Box::new(env));
        let db: Database<'static, Bytes, Bytes> = env
            .open_databases_and_commit(env.read_txn()?, |dbo, rtxn| {
                dbo.open_database(rtxn, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit()
            .context("LMDB unnamed database missing")?;
        let txn = env.read_txn()?;
        Ok(Box::new(LmdbReader { txn, db, _env: env }))
    }
}
