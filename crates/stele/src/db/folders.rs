//! The folders a new database made whose entries are not durable yet.
//!
//! A new folder's entry in its parent survives a power cut only once the parent is synced.
//! Opening a new database makes up to four folders (the database folder and any missing
//! parents, `wal`, `tables`, `tables/roots`) and used to sync each parent there and then:
//! three folder syncs, each its own journal commit on ext4 (about 0.2 ms apiece here),
//! before anything was written that a cut could lose. Now opening only records the
//! folders (`open::create_folders`), and the first durable act syncs them: a commit before
//! it writes its records, a checkpoint (an import's landing is one) right after its
//! manifest, whose own sync of the database folder already covers `wal` and `tables`, so
//! that only the parent is left. A cut before then may lose any of
//! the new folders; they held nothing acknowledged, and the next open makes what is
//! missing. `tests/power_loss.rs` cuts a new database's first commit and first import
//! at every moment.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use stele_table::Storage;

/// Folders to sync before the next acknowledgement (none for a database that existed).
#[derive(Debug, Default)]
pub(super) struct UnsyncedFolders {
    /// Whether `dirs` may hold any: one atomic load for every commit after the first.
    any: AtomicBool,
    /// In the order to sync them: the deepest first.
    dirs: Mutex<Vec<PathBuf>>,
}

impl UnsyncedFolders {
    pub(super) fn new(dirs: Vec<PathBuf>) -> Self {
        UnsyncedFolders {
            any: AtomicBool::new(!dirs.is_empty()),
            dirs: Mutex::new(dirs),
        }
    }

    /// Syncs every folder still listed but `synced_already` (a folder the caller synced
    /// after the entries were made), and forgets them. On an error the folders not synced
    /// stay listed, for the next durable act to try again.
    pub(super) fn sync(&self, storage: &dyn Storage, synced_already: Option<&Path>) -> Result<()> {
        if !self.any.load(Ordering::Acquire) {
            return Ok(());
        }
        // Held while syncing: a commit racing a checkpoint must not return before the
        // folders are synced by whichever of them got here first.
        let mut dirs = self
            .dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(dir) = dirs.first() {
            if Some(dir.as_path()) != synced_already {
                storage
                    .sync_dir(dir)
                    .map_err(|e| Error::io("syncing folder", dir, e))?;
            }
            dirs.remove(0);
        }
        self.any.store(false, Ordering::Release);
        Ok(())
    }

    /// The folders still to sync (for tests).
    #[cfg(test)]
    pub(super) fn pending(&self) -> Vec<PathBuf> {
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use stele_testkit::faults::{Faults, FaultyStorage, Op};

    /// Sync order, the folder already synced skipped, and a failure that keeps the folders
    /// not yet synced for the next try (then synced once each, never again).
    #[test]
    fn folders_are_synced_once_in_order_and_kept_after_a_failure() {
        let root = tempfile::tempdir().expect("a temporary folder");
        let (a, b, c) = (
            root.path().join("a"),
            root.path().join("b"),
            root.path().join("c"),
        );
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let seen: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
        let log = Arc::clone(&seen);
        // The second folder sync fails, once.
        let faults = Faults::new()
            .kinds(&[Op::SyncDir])
            .fail_at(1)
            .on_op(move |op, path| {
                if op == Op::SyncDir {
                    log.lock().expect("not poisoned").push(path.to_path_buf());
                }
            })
            .shared();
        let storage = FaultyStorage::with_faults(&faults);
        let folders = UnsyncedFolders::new(vec![a.clone(), b.clone(), c.clone()]);
        assert!(folders.sync(&*storage, Some(&b)).is_err());
        let synced = seen.lock().expect("not poisoned").clone();
        // `a` synced, `b` skipped as synced already, `c` failed: only `c` is left.
        assert_eq!(synced, vec![a.clone(), c.clone()]);
        assert_eq!(folders.pending(), vec![c.clone()]);
        folders.sync(&*storage, None).expect("the retry succeeds");
        assert!(folders.pending().is_empty());
        folders.sync(&*storage, None).expect("nothing left");
        assert_eq!(*seen.lock().expect("not poisoned"), vec![a, c.clone(), c]);
    }
}
