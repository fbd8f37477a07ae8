//! Power cuts at every moment of the document store's work: group commits from several
//! threads, checkpoints, background and full compactions (packing, dictionary training and
//! removal, garbage collection), index creation, deletions and an import. In every state a
//! cut can leave (`stele_testkit`'s crash model, `docs/POWER-LOSS.md`) the database opens;
//! every batch acknowledged before the cut is there whole, no batch is there in part, no
//! document appears that no batch wrote, every document reads (its dictionary is there),
//! an acknowledged index exists and agrees with the documents, and the import is there
//! whole or not at all. `STELE_CRASH_STATES` sets how many states are checked.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use stele::import::{ImportOptions, import_path, import_reader};
use stele::{Database, DatabaseOptions, Query};
use stele_table::Storage;
use stele_testkit::{CrashState, ExploreOptions, SimDisk, explore};

/// A batch the workload wrote: its documents (collection, id, JSON), when its commit
/// returned, and when a later batch that deleted all of them returned.
#[derive(Debug, Clone)]
struct Written {
    docs: Vec<(&'static str, String, String)>,
    acked: usize,
    deleted: Option<usize>,
}

/// What the workload did and when (moments of the simulated disk).
#[derive(Debug, Default)]
struct Record {
    batches: Vec<Written>,
    index: Option<usize>,
    /// The import: its documents and when it returned.
    import: Option<(BTreeMap<String, String>, usize)>,
}

const THREADS: u32 = 3;
const BATCHES: u32 = 16;

/// The documents of batch `i` of thread `t`: four orders and one log line, in two
/// collections (a batch is atomic across collections).
fn batch_docs(t: u32, i: u32) -> Vec<(&'static str, String, String)> {
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

fn commit(db: &Database, docs: &[(&'static str, String, String)]) {
    let mut b = db.batch();
    for (c, id, json) in docs {
        b.put_json(c, id, json.as_bytes()).unwrap();
    }
    db.commit(b).unwrap();
}

/// Commits `docs` and notes when the commit returned.
fn commit_noted(
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

fn options(storage: Arc<dyn Storage>) -> DatabaseOptions {
    // Small checkpoints and few layers: cuts land in checkpoints and compactions too.
    DatabaseOptions::default()
        .checkpoint_bytes(6 << 10)
        .compact_layers(2)
        .storage(storage)
}

/// Runs the workload on a database in `root/db` through `disk`; returns what it did.
fn workload(disk: &Arc<SimDisk>, root: &Path) -> Record {
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
fn import_numbered(db: &Database, count: u32, opts: &ImportOptions) -> BTreeMap<String, String> {
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
fn read_all(snap: &stele::Snapshot, collection: &str) -> Result<BTreeMap<String, String>, String> {
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
fn check(state: &CrashState<'_>, record: &Record) -> Result<(), String> {
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
                "batch of {first} is back after its deletion was acknowledged"
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

#[test]
fn the_store_survives_power_cuts() {
    let root = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let record = workload(&disk, root.path());
    let explored = explore(
        &disk.recording(),
        &ExploreOptions::from_env(2400),
        |state| check(state, &record),
    );
    eprintln!("store: {explored:?}");
    assert!(explored.states > 0);
}

/// Regression: the database's folders were made with `create_dir_all` and no parent was
/// synced, so a cut after a new database's first acknowledged commit could lose the `wal`
/// folder (or the database folder) with the commit in it.
#[test]
fn a_new_databases_first_commit_survives_a_power_cut() {
    let root = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    let db = Database::open_with(root.path().join("new/db"), options(storage)).unwrap();
    let docs = batch_docs(0, 0);
    commit(&db, &docs);
    let acked = disk.moment();
    drop(db);
    let record = Record {
        batches: vec![Written {
            docs,
            acked,
            deleted: None,
        }],
        ..Record::default()
    };
    check_new_database(&disk, &record, acked);
}

/// Checks every state a power cut could leave of a new database `new/db` that `disk`
/// recorded, whose first durable act was acknowledged at moment `acked`: before it the
/// folder may be gone, after it it must be there and pass [`check`] for `record`.
fn check_new_database(disk: &SimDisk, record: &Record, acked: usize) {
    // A short recording: a few hundred states cover every moment many times over.
    let mut opts = ExploreOptions::from_env(200);
    opts.states = opts.states.min(500);
    let explored = explore(&disk.recording(), &opts, |state| {
        let moved = state.dir.join("new");
        if !moved.exists() {
            return if acked <= state.moment {
                Err("the database folder is gone".into())
            } else {
                Ok(())
            };
        }
        check(
            &CrashState {
                dir: &moved,
                moment: state.moment,
                pick: state.pick,
            },
            record,
        )
    });
    assert!(explored.states > 0);
}

/// A new database whose first durable act is an import's landing (a checkpoint, nothing
/// logged): opening syncs none of its new folders, the landing syncs them after its
/// manifest (`db/folders.rs`). Cut at every moment, the database opens, and the import is
/// there whole once acknowledged, else whole or not at all.
#[test]
fn a_new_databases_first_import_survives_a_power_cut() {
    let root = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    let db = Database::open_with(root.path().join("new/db"), options(storage)).unwrap();
    let imported = import_numbered(&db, 120, &ImportOptions::new().id_field("id"));
    let acked = disk.moment();
    drop(db);
    let record = Record {
        import: Some((imported, acked)),
        ..Record::default()
    };
    check_new_database(&disk, &record, acked);
}

/// As above, for a first import packed while it is read (a file of numbered records): its
/// blocks are written as the records come, before the landing; cut at every moment, the
/// database opens with the import whole once acknowledged, else whole or not at all.
#[test]
fn a_new_databases_first_import_packed_while_read_survives_a_power_cut() {
    let root = tempfile::tempdir().unwrap();
    let input_dir = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    // Blocks of 1 KiB: 6,000 records are enough to be packed while read.
    let opts = options(storage).pack_block_bytes(1024);
    let db = Database::open_with(root.path().join("new/db"), opts).unwrap();
    let (mut input, mut imported) = (String::new(), BTreeMap::new());
    for n in 1..=6_000u32 {
        let json = format!(r#"{{"n":{n},"pad":"{}"}}"#, "y".repeat(n as usize % 40));
        input.push_str(&json);
        input.push('\n');
        imported.insert(format!("{n:010}"), json);
    }
    let file = input_dir.path().join("numbered.jsonl");
    std::fs::write(&file, input).unwrap();
    let report = import_path(&db, "imported", &file, &ImportOptions::new(), |_| {}).unwrap();
    assert!(report.packed_while_reading, "{report:?}");
    let acked = disk.moment();
    drop(db);
    let record = Record {
        import: Some((imported, acked)),
        ..Record::default()
    };
    check_new_database(&disk, &record, acked);
}
