//! Batch `n` (committed as the database's `n`-th batch) puts document `d<n>` and sets
//! `meta/last` to `n`: a database at version `v` holds exactly `d1..=dv` and `last = v`,
//! which [`whole_version`] checks.

use std::path::Path;
use stele::Database;

/// Commits batches `from + 1 ..= to`, one each.
pub fn commit_upto(db: &Database, from: u64, to: u64) {
    for n in from + 1..=to {
        let mut b = db.batch();
        let json = format!(
            r#"{{"n":{n},"pad":"{}"}}"#,
            "x".repeat(64 + (n % 50) as usize)
        );
        b.put_json("d", &format!("d{n}"), json.as_bytes()).unwrap();
        b.put_json("meta", "last", format!(r#"{{"n":{n}}}"#).as_bytes())
            .unwrap();
        db.commit(b).unwrap();
    }
}

/// Opens the database in `dir` read-only and checks it is whole at one commit point: its
/// last batch `n` of [`commit_upto`] says `last = n`, and it holds `d1..=dn` and nothing
/// after. Returns `n`. (Its version can be higher: compactions log batches of their own.)
pub fn whole_version(dir: &Path) -> u64 {
    let db = Database::open_read_only(dir).unwrap();
    let snap = db.snapshot();
    let n = snap.get("meta", "last").unwrap().map_or(0, |d| {
        d.document().unwrap().get("n").unwrap().as_u64().unwrap()
    });
    assert_eq!(
        snap.count("d"),
        n,
        "{}: documents after batch {n}",
        dir.display()
    );
    if n > 0 {
        assert!(snap.get("d", &format!("d{n}")).unwrap().is_some());
    }
    assert!(snap.get("d", &format!("d{}", n + 1)).unwrap().is_none());
    n
}

/// The version (last batch's sequence number) the database in `dir` opens at.
pub fn opened_seq(dir: &Path) -> u64 {
    Database::open_read_only(dir).unwrap().snapshot().seq()
}
