//! The three engines behind one writer and one reader interface: Stele (a writer process,
//! reader processes with `Database::open_read_only`), SQLite in WAL mode (documents as JSON
//! text, fields by `json_extract`), LMDB through heed (JSON text, fields by sonic-rs's lazy
//! `get`). Every commit is durable when it returns in all three (Stele's log fsync, SQLite
//! `synchronous=FULL`, LMDB's sync on commit).

use anyhow::{Context, Result};
use std::path::Path;

/// The engines, by the name the command line uses.
pub const ENGINES: [&str; 3] = ["stele", "sqlite", "lmdb"];

pub trait Writer {
    /// Puts every `(id, JSON)` in one durable commit.
    fn commit(&mut self, docs: &[(String, String)]) -> Result<()>;
    /// After the initial fill: the state a database settles into (Stele writes its log into
    /// tables, as its checkpoints do every 64 MiB of log; SQLite moves its WAL into the main
    /// file; LMDB has nothing to do).
    fn settle(&mut self) -> Result<()>;
}

pub trait Reader {
    /// Starts reading the latest commit.
    fn refresh(&mut self) -> Result<()>;
    /// Reads document `id` and its fields `name`, `city` and `amount`; returns `amount`
    /// plus the two strings' lengths (so that nothing is optimised away).
    fn get3(&mut self, id: &str) -> Result<i64>;
}

pub fn open_writer(engine: &str, dir: &Path) -> Result<Box<dyn Writer>> {
    match engine {
        "stele" => Ok(Box::new(SteleWriter(stele::Database::open(dir)?))),
        "sqlite" => {
            let c = rusqlite::Connection::open(dir.join("db.sqlite"))?;
            c.pragma_update(None, "journal_mode", "wal")?;
            c.pragma_update(None, "synchronous", "full")?;
            c.execute(
                "CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL)",
                [],
            )?;
            Ok(Box::new(SqliteWriter(c)))
        }
        "lmdb" => Ok(Box::new(lmdb::writer(dir)?)),
        other => anyhow::bail!("unknown engine {other:?} (stele, sqlite, lmdb)"),
    }
}

pub fn open_reader(engine: &str, dir: &Path) -> Result<Box<dyn Reader>> {
    match engine {
        "stele" => {
            let db = stele::Database::open_read_only(dir)?;
            let snap = db.snapshot();
            Ok(Box::new(SteleReader { db, snap }))
        }
        "sqlite" => {
            let c = rusqlite::Connection::open_with_flags(
                dir.join("db.sqlite"),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?;
            c.execute_batch("BEGIN")?;
            Ok(Box::new(SqliteReader(c)))
        }
        "lmdb" => Ok(Box::new(lmdb::reader(dir)?)),
        other => anyhow::bail!("unknown engine {other:?} (stele, sqlite, lmdb)"),
    }
}

struct SteleWriter(stele::Database);

impl Writer for SteleWriter {
    fn commit(&mut self, docs: &[(String, String)]) -> Result<()> {
        let mut b = self.0.batch();
        for (id, json) in docs {
            b.put_json("docs", id, json.as_bytes())?;
        }
        Ok(self.0.commit(b)?)
    }

    fn settle(&mut self) -> Result<()> {
        Ok(self.0.compact()?)
    }
}

struct SteleReader {
    db: stele::ReadOnlyDatabase,
    snap: stele::Snapshot,
}

impl Reader for SteleReader {
    /// Lets go of the old snapshot before refreshing (`refresh_snapshot`), as the other two
    /// end their read transaction before starting the next: the refresh then applies the
    /// log in place instead of copying what the old snapshot shares.
    fn refresh(&mut self) -> Result<()> {
        self.db.refresh_snapshot(&mut self.snap)?;
        Ok(())
    }

    fn get3(&mut self, id: &str) -> Result<i64> {
        let doc = self.snap.get("docs", id)?.context("document missing")?;
        let doc = doc.document()?;
        let len = |k: &str| {
            doc.get(k)
                .and_then(|v| v.as_str().map(|s| s.len()))
                .unwrap_or(0)
        };
        let amount = doc.get("amount").and_then(|v| v.as_i64()).unwrap_or(0);
        Ok(amount + (len("name") + len("city")) as i64)
    }
}

struct SqliteWriter(rusqlite::Connection);

impl Writer for SqliteWriter {
    fn commit(&mut self, docs: &[(String, String)]) -> Result<()> {
        let tx = self.0.transaction()?;
        {
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO docs (id, doc) VALUES (?1, ?2)")?;
            for (id, json) in docs {
                put.execute((id, json))?;
            }
        }
        Ok(tx.commit()?)
    }

    fn settle(&mut self) -> Result<()> {
        Ok(self.0.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?)
    }
}

/// Holds a read transaction between refreshes (as the other two hold one snapshot).
struct SqliteReader(rusqlite::Connection);

impl Reader for SqliteReader {
    fn refresh(&mut self) -> Result<()> {
        Ok(self.0.execute_batch("COMMIT; BEGIN")?)
    }

    fn get3(&mut self, id: &str) -> Result<i64> {
        let mut q = self.0.prepare_cached(
            "SELECT json_extract(doc, '$.name'), json_extract(doc, '$.city'), \
             json_extract(doc, '$.amount') FROM docs WHERE id = ?1",
        )?;
        let (name, city, amount): (String, String, i64) =
            q.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(amount + (name.len() + city.len()) as i64)
    }
}

mod lmdb {
    use super::{Reader, Writer};
    use anyhow::{Context, Result};
    use heed::types::{Bytes, Str};
    use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, RoTxn, WithTls};
    use std::path::Path;

    const MAP_SIZE: usize = 1 << 36;

    fn env(dir: &Path) -> Result<&'static Env> {
        let dir = dir.join("lmdb");
        std::fs::create_dir_all(&dir)?;
        // SAFETY: each process opens the environment once (one writer process and reader
        // processes, as LMDB allows) and nothing else writes its files.
        let env = unsafe { EnvOpenOptions::new().map_size(MAP_SIZE).open(&dir)? };
        // Kept to the end of the process: a read transaction held in a struct borrows it.
        Ok(Box::leak(Box::new(env)))
    }

    pub struct LmdbWriter {
        env: &'static Env,
        db: Database<'static, Str, Bytes>,
    }

    pub fn writer(dir: &Path) -> Result<LmdbWriter> {
        let env = env(dir)?;
        let db: Database<'static, Str, Bytes> = env
            .create_databases_and_commit(env.write_txn()?, |wdo, wtxn| {
                let db: Database<Str, Bytes> = wdo.create_database(wtxn, None)?;
                heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db))
            })?
            .unwrap_commit();
        Ok(LmdbWriter { env, db })
    }

    impl Writer for LmdbWriter {
        fn commit(&mut self, docs: &[(String, String)]) -> Result<()> {
            let mut w = self.env.write_txn()?;
            for (id, json) in docs {
                self.db.put(&mut w, id, json.as_bytes())?;
            }
            Ok(w.commit()?)
        }

        fn settle(&mut self) -> Result<()> {
            Ok(())
        }
    }

    pub struct LmdbReader {
        env: &'static Env,
        db: Database<'static, Str, Bytes>,
        /// `None` only while a refresh replaces it (one read transaction per thread).
        txn: Option<RoTxn<'static, WithTls>>,
    }

    pub fn reader(dir: &Path) -> Result<LmdbReader> {
        let env = env(dir)?;
        let db: Database<'static, Str, Bytes> = env
            .open_databases_and_commit(env.read_txn()?, |dbo, rtxn| {
                dbo.open_database(rtxn, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit()
            .context("LMDB unnamed database missing")?;
        let txn = Some(env.read_txn()?);
        Ok(LmdbReader { env, db, txn })
    }

    impl Reader for LmdbReader {
        fn refresh(&mut self) -> Result<()> {
            self.txn = None;
            self.txn = Some(self.env.read_txn()?);
            Ok(())
        }

        fn get3(&mut self, id: &str) -> Result<i64> {
            let txn = self.txn.as_ref().context("no read transaction")?;
            let json = self.db.get(txn, id)?.context("document missing")?;
            let len = |k: &str| {
                sonic_rs::get(json, [k])
                    .ok()
                    .and_then(|v| sonic_rs::JsonValueTrait::as_str(&v).map(str::len))
                    .unwrap_or(0)
            };
            let amount = sonic_rs::get(json, ["amount"])
                .ok()
                .and_then(|v| sonic_rs::JsonValueTrait::as_i64(&v))
                .unwrap_or(0);
            Ok(amount + (len("name") + len("city")) as i64)
        }
    }
}
