//! What the database commands share: opening (existing, for reading, or creating), closing,
//! the creating write that cleans up after itself, and the check that a collection exists.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use stele::{Database, DatabaseOptions, ReadOnlyDatabase, Snapshot};

/// Opens the database at `dir`, which must exist already.
pub(crate) fn open_existing(dir: &Path) -> Result<Database> {
    check_existing(dir)?;
    open_writing(dir, DatabaseOptions::default())
}

/// Opens the database at `dir`, which must exist already, for reading only: the read
/// commands work beside a process that has it open for writing, and on a folder they may
/// not write.
pub(crate) fn open_reading(dir: &Path) -> Result<ReadOnlyDatabase> {
    check_existing(dir)?;
    Database::open_read_only(dir)
        .with_context(|| format!("opening database {} for reading", dir.display()))
}

/// Fails unless `dir` is a database folder.
fn check_existing(dir: &Path) -> Result<()> {
    if dir.is_file() {
        bail!(
            "{} is a file, not a database folder: give the folder `stele import` or `stele put` created",
            dir.display()
        );
    }
    if !dir.join("wal").is_dir() {
        bail!(
            "no database at {}: check the path, or create one with `stele import` or `stele put`",
            dir.display()
        );
    }
    Ok(())
}

/// Opens the database at `dir` for writing with `opts`: creating it if the folder is new
/// or empty (or `opts` say to create it beside other entries).
fn open_writing(dir: &Path, opts: DatabaseOptions) -> Result<Database> {
    match Database::open_with(dir, opts) {
        Ok(db) => Ok(db),
        // These name the folder and say what is there: no "opening database" before them.
        Err(e @ (stele::Error::NotADatabase { .. } | stele::Error::NotAFolder { .. })) => {
            Err(e.into())
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("opening database {}", dir.display()))),
    }
}

/// Closes `db` (the folder `dir`), reporting what closing did: a clean close leaves the
/// database compact at rest (see `Database::close`).
pub(crate) fn close_db(db: Database, dir: &Path) -> Result<()> {
    db.close().with_context(|| {
        format!(
            "closing database {} (every change is in its log: the next open recovers it)",
            dir.display()
        )
    })
}

/// Runs `write` on the database at `dir`, creating it if the folder is new or empty (or,
/// with `create_here`, beside the entries it holds), then closes it. If `write` fails on a
/// database this call created, what the call created is removed again: a failed first
/// import or put leaves no folder behind. Entries that were in the folder before stay.
pub(crate) fn write_creating<T>(
    dir: &Path,
    create_here: bool,
    write: impl FnOnce(&Database) -> Result<T>,
) -> Result<T> {
    let opts = || DatabaseOptions::default().create_here(create_here);
    let write_and_close = |db: Database| {
        let out = write(&db)?;
        close_db(db, dir).map(|()| out)
    };
    if dir.join("wal").is_dir() {
        return write_and_close(open_writing(dir, opts())?);
    }
    // What to clean up after a failure: the top-most folder this call creates (the database
    // folder or a missing parent of it), or else the entries it adds to an existing folder.
    // A folder that cannot be listed for another reason is left alone.
    enum Before {
        Missing(PathBuf),
        Entries(HashSet<OsString>),
        Unknown,
    }
    let before = match std::fs::read_dir(dir) {
        Ok(entries) => Before::Entries(
            entries
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .collect(),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut top = dir.to_path_buf();
            while let Some(parent) = top
                .parent()
                .filter(|p| !p.as_os_str().is_empty() && !p.exists())
            {
                top = parent.to_path_buf();
            }
            Before::Missing(top)
        }
        Err(_) => Before::Unknown,
    };
    let result = open_writing(dir, opts()).and_then(write_and_close);
    // The database is closed here (the `Database` was closed or dropped above), so its lock is free.
    if result.is_err() {
        match &before {
            Before::Missing(top) => {
                let _ = std::fs::remove_dir_all(top);
            }
            Before::Entries(kept) => {
                for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    if !kept.contains(&entry.file_name()) {
                        let path = entry.path();
                        let _ = if path.is_dir() {
                            std::fs::remove_dir_all(&path)
                        } else {
                            std::fs::remove_file(&path)
                        };
                    }
                }
            }
            Before::Unknown => {}
        }
    }
    result
}

/// Fails unless `collection` exists, listing the ones that do.
pub(crate) fn require_collection(db: &Database, dir: &Path, collection: &str) -> Result<()> {
    require_in(&db.snapshot(), dir, collection)
}

/// Fails unless `collection` exists in `snap`, listing the ones that do.
pub(crate) fn require_in(snap: &Snapshot, dir: &Path, collection: &str) -> Result<()> {
    let names = snap.collections();
    if !snap.has_collection(collection) {
        let have = if names.is_empty() {
            "it has none yet".to_owned()
        } else {
            format!("it has: {}", names.join(", "))
        };
        bail!(
            "no collection {collection:?} in database {} ({have})",
            dir.display()
        );
    }
    Ok(())
}

/// Id `id` as JSON: the number in a collection of integer ids (`kind`, from
/// `Snapshot::id_kind`), else a string literal.
pub(crate) fn id_json(kind: Option<stele::IdKind>, id: &str) -> String {
    match kind {
        Some(stele::IdKind::Int) if stele::parse_int_id(id).is_some() => id.to_owned(),
        _ => json_str(id),
    }
}

/// `s` as a JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}
