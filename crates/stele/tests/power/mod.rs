//! The database workload of the power-loss tests and its invariants, shared by
//! `power_loss.rs` (cuts during the work) and `power_loss_recovery.rs` (cuts during the
//! next session, which starts from a crash state of this work).
#![allow(
    dead_code,
    reason = "each test file is its own crate and uses part of this"
)]

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use stele::import::{ImportOptions, import_reader};
use stele::{Database, DatabaseOptions, Query};
use stele_table::Storage;
use stele_testkit::{CrashState, SimDisk};

/// A batch the workload wrote: its documents (collection, id, JSON), when its commit
/// returned, and when a later batch that deleted all of them returned (for a next session,
/// moment 0 with `acked` never: gone when the session started, so never back).
#[derive(Debug, Clone)]
pub struct Written {
    pub docs: Vec<(&'static str, String, String)>,
    pub acked: usize,
    pub deleted: Option<usize>,
}

/// What the workload did and when (moments of the simulated disk).
#[derive(Debug, Default)]
pub struct Record {
    pub batches: Vec<Written>,
    pub index: Option<usize>,
    /// The import: its documents and when it returned.
    pub import: Option<(BTreeMap<String, String>, usize)>,
}

pub const THREADS: u32 = 3;
pub const BATCHES: u32 = 16;

/// The documents of batch `i` of thread `t`: four orders and one log line, in two
/// collections (a batch is atomic across collections).
pub fn batch_docs(t: u32, i: u32) -> Vec<(&'static str, String, String)> {
    let mut docs: Vec<_> = (0..4)
        .map(|j| {
            let n = t * 1000 + i * 10 + j;
            ("orders", format!("t{t}-b{i:02}-{j}"), common::order_json(n))
        })
        .collect();
    docs.push((
        "events",
        format!("t{t}-b{i:02}"),
        common::log_json(t * 1000 + i),
    ));
    docs
}

pub fn commit(db: &Database, docs: &[(&'static str, String, String)]) {
    let mut b = db.batch();
    for (c, id, json) in docs {
        b.put_json(c, id, json.as_bytes()).unwrap();
    }
    db.commit(b).unwrap();
}

/// Commits `docs` and notes when the commit returned.
pub fn commit_noted(
    db: &Database,
    disk: &SimDisk,
    record: &Mutex<Record>,
    docs: Vec<(&'static str, String, String)>,
) {
    commit(db, &docs);
    let acked = disk.moment();
    record.lock().unwrap().batches.push(Written {
        docs,
        acked,
        deleted: None,
    });
}

pub fn options(storage: Arc<dyn Storage>) -> DatabaseOptions {
    // Small checkpoints and few layers: cuts land in checkpoints and compactions too.
    DatabaseOptions::default()
        .checkpoint_bytes(6 << 10)
        .compact_layers(2)
        .storage(storage)
}

/// Runs the workload on a database in `root/db` through `disk`; returns what it did.
pub fn workload(disk: &Arc<SimDisk>, root: &Path) -> Record {
    let storage: Arc<dyn Storage> = disk.clone();
    let db = Database::open_with(root.join("db"), options(storage)).unwrap();
    let record = Arc::new(Mutex::new(Record::default()));
    // Group commit: several threads commit at once.
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, disk, record) = (&db, disk, &record);
            s.spawn(move || {
                for i in 0..BATCHES {
                    commit_noted(db, disk, record, batch_docs(t, i));
                }
            });
        }
    });
    db.create_index("orders", "by_customer", &["customer"])
        .unwrap();
    record.lock().unwrap().index = Some(disk.moment());
    // Writes the index keeps, a checkpoint, a deletion of a whole batch, a full compaction.
    for i in 0..6 {
        commit_noted(&db, disk, &record, batch_docs(9, i));
    }
    db.checkpoint().unwrap();
    {
        let mut r = record.lock().unwrap();
        let victim = r.batches.first_mut().unwrap();
        let mut b = db.batch();
        for (c, id, _) in &victim.docs {
            b.delete(c, id).unwrap();
        }
        db.commit(b).unwrap();
        victim.deleted = Some(disk.moment());
    }
    db.compact().unwrap();
    // An import in several batches through its staging collection.
    let opts = ImportOptions::new().id_field("id").batch_docs(80);
    let imported = import_numbered(&db, 240, &opts);
    record.lock().unwrap().import = Some((imported, disk.moment()));
    commit_noted(&db, disk, &record, batch_docs(9, 99));
    drop(db);
    Arc::try_unwrap(record).unwrap().into_inner().unwrap()
}

/// Imports `count` documents (ids `i0000`, ...; of 0 to 39 bytes of padding) into collection
/// `imported` of `db` with `opts`, and returns them by id, as written.
pub fn import_numbered(
    db: &Database,
    count: u32,
    opts: &ImportOptions,
) -> BTreeMap<String, String> {
    let mut input = String::new();
    let mut imported = BTreeMap::new();
    for i in 0..count {
        let json = format!(
            r#"{{"id":"i{i:04}","n":{i},"pad":"{}"}}"#,
            "y".repeat(i as usize % 40)
        );
        input.push_str(&json);
        input.push('\n');
        imported.insert(format!("i{i:04}"), json);
    }
    import_reader(
        db,
        "imported",
        "input",
        input.as_bytes(),
        None,
        opts,
        |_| {},
    )
    .unwrap();
    imported
}

/// Every document of `collection`, read whole (its dictionary must be there).
pub fn read_all(
    snap: &stele::Snapshot,
    collection: &str,
) -> Result<BTreeMap<String, String>, String> {
    snap.iter(collection)
        .map(|e| {
            let (id, doc) = e.map_err(|e| format!("reading {collection}: {e}"))?;
            let json = doc
                .to_json()
                .map_err(|e| format!("reading {collection}/{id}: {e}"))?;
            Ok((id, json))
        })
        .collect()
}

/// The invariants of a crash state of [`workload`].
pub fn check(state: &CrashState<'_>, record: &Record) -> Result<(), String> {
    let moment = state.moment;
    let opts = DatabaseOptions::default().storage(stele_testkit::no_sync());
    let db = Database::open_with(state.dir.join("db"), opts).map_err(|e| format!("open: {e}"))?;
    let snap = db.snapshot();
    let mut all = BTreeMap::new();
    for c in ["orders", "events"] {
        all.insert(c, read_all(&snap, c)?);
    }
    let mut expected = 0;
    for b in &record.batches {
        let mut present = 0;
        for (c, id, json) in &b.docs {
            match all.get(c).and_then(|m| m.get(id)) {
                Some(got) if got == json => present += 1,
                Some(got) => return Err(format!("{c}/{id} holds {got}, not {json}")),
                None => {}
            }
        }
        let first = &b.docs[0].1;
        if present != 0 && present != b.docs.len() {
            return Err(format!(
                "batch of {first} is there in part: {present} of {}",
                b.docs.len()
            ));
        }
        let deleted = b.deleted.is_some_and(|d| d <= moment);
        if deleted && present > 0 {
            return Err(format!(
                "batch of {first} is back after it was gone (its deletion acknowledged, or \
                 gone when the session started)"
            ));
        }
        if b.acked <= moment && b.deleted.is_none() && present == 0 {
            return Err(format!("acknowledged batch of {first} is lost"));
        }
        expected += present;
    }
    let found: usize = all.values().map(BTreeMap::len).sum();
    if found != expected {
        return Err(format!(
            "{found} documents, but the batches there hold {expected}"
        ));
    }
    // The index: there once acknowledged, and equal to a scan.
    let has_index = !snap.indexes("orders").is_empty();
    if record.index.is_some_and(|m| m <= moment) && !has_index {
        return Err("the acknowledged index by_customer is gone".into());
    }
    if has_index {
        for customer in ["c-0", "c-5", "c-42"] {
            let out = snap
                .query(&Query::new("orders").eq("customer", &format!("\"{customer}\"")))
                .map_err(|e| format!("query: {e}"))?;
            if out.plan.index().is_none() {
                return Err(format!("the query did not use the index: {}", out.plan));
            }
            let mut got: Vec<String> = out.rows.into_iter().map(|r| r.id).collect();
            got.sort();
            let want: Vec<String> = all["orders"]
                .iter()
                .filter(|(_, json)| json.contains(&format!("\"customer\":\"{customer}\"")))
                .map(|(id, _)| id.clone())
                .collect();
            if got != want {
                return Err(format!(
                    "index by_customer for {customer}: {got:?}, scan: {want:?}"
                ));
            }
        }
    }
    // The import: whole or not at all; whole once acknowledged.
    if let Some((docs, acked)) = &record.import {
        let got = read_all(&snap, "imported")?;
        if !got.is_empty() && got != *docs {
            return Err(format!(
                "the import is there in part: {} of {}",
                got.len(),
                docs.len()
            ));
        }
        if *acked <= moment && got.is_empty() {
            return Err("the acknowledged import is lost".into());
        }
    }
    Ok(())
}
