//! Whether a write open may make a database in a folder: only in one that does not exist,
//! is empty, or already is a database (or a database's first steps, cut short by a
//! crash), so that a mistyped path never scatters a database's files among a user's own.

use super::bulk::SORT_PREFIX;
use super::{LOCK_FILE, TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use std::path::Path;

/// How many of a folder's entries an error names.
const NAMED: usize = 5;

/// Whether `name` is an entry a database keeps at the top of its folder. A folder holding
/// only these is a database, possibly one whose creation was cut short before its log
/// folder was made: opening it again finishes the creation.
fn is_own(name: &str) -> bool {
    name == LOCK_FILE
        || name == WAL_DIR
        || name == TABLES_DIR
        || name
            .strip_prefix(crate::manifest::FILE_NAME)
            .is_some_and(|rest| rest.is_empty() || rest == ".tmp")
        || name.starts_with(SORT_PREFIX)
}

/// Checks that a write open may use `dir`: fails with [`Error::NotAFolder`] for a file and
/// with [`Error::NotADatabase`] for a folder holding entries of its own and no database,
/// unless `create_here` (then the database is made beside them).
pub(super) fn check_folder(dir: &Path, create_here: bool) -> Result<()> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        // Missing: created. Any other failure is met again, with its cause, creating it.
        Err(_) => return Ok(()),
    };
    if !meta.is_dir() {
        return Err(Error::NotAFolder {
            path: dir.to_path_buf(),
        });
    }
    if create_here || dir.join(WAL_DIR).is_dir() {
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // Unlistable: opening reports the cause with the folder's name.
        Err(_) => return Ok(()),
    };
    let mut foreign: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !is_own(name))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let entries = foreign.len();
    foreign.truncate(NAMED);
    Err(Error::NotADatabase {
        path: dir.to_path_buf(),
        entries,
        first: foreign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_empty_or_own_folders_are_taken() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("new");
        check_folder(&missing, false).unwrap();
        std::fs::create_dir(&missing).unwrap();
        check_folder(&missing, false).unwrap();
        // A creation cut short: the lock and the tables folder, no log yet.
        std::fs::write(missing.join(LOCK_FILE), "1\n").unwrap();
        std::fs::create_dir(missing.join(TABLES_DIR)).unwrap();
        check_folder(&missing, false).unwrap();

        let file = root.path().join("data.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        let e = check_folder(&file, true).unwrap_err();
        assert!(matches!(e, Error::NotAFolder { .. }), "{e}");

        std::fs::write(missing.join("readme.txt"), "mine").unwrap();
        let e = check_folder(&missing, false).unwrap_err();
        assert!(
            matches!(&e, Error::NotADatabase { entries: 1, first, .. } if first == &["readme.txt"]),
            "{e}"
        );
        assert!(e.to_string().contains("readme.txt"), "{e}");
        check_folder(&missing, true).unwrap();
    }
}
