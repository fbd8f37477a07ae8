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

use crate::power;

use power::{Record, Written, batch_docs, check, commit, import_numbered, options, workload};
use std::collections::BTreeMap;
use std::sync::Arc;
use stele::Database;
use stele::import::{ImportOptions, import_path};
use stele_table::Storage;
use stele_testkit::{CrashState, ExploreOptions, SimDisk, explore};

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
