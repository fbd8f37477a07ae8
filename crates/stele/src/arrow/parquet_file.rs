//! [`Snapshot::export_parquet_file`]: a Parquet export to a path that is either whole or
//! not there. The bytes go to a temporary file beside the path, are synced, and only then
//! renamed into place (and the folder synced), so a crash or an error during the export
//! leaves a file already at the path as it was and no partial file under its name.

use super::ArrowOptions;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes buffered before each write to the file: the Parquet writer hands over pages of a
/// few KiB; 1 MiB writes keep the system calls few.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

impl Snapshot {
    /// Writes `collection` as [`Snapshot::export_parquet`] does, to the file `path`
    /// (replacing one that is there), and returns the rows written.
    ///
    /// The file is written under a temporary name in `path`'s folder (`.NAME.tmp-PID-N`),
    /// synced to the disk, then renamed to `path` and the folder synced: when this returns
    /// `Ok`, the file is durable; after an error (or a crash) a file already at `path` is
    /// as it was, and the temporary file is removed (after a crash it may be left, under
    /// its hidden name).
    pub fn export_parquet_file(
        &self,
        collection: &str,
        options: ArrowOptions,
        path: impl AsRef<Path>,
    ) -> Result<u64> {
        let path = path.as_ref();
        let temp = temp_beside(path);
        let written = (|| {
            let file = File::create(&temp).map_err(|e| Error::io("creating", &temp, e))?;
            let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, file);
            let rows = self.export_parquet(collection, options, &mut out)?;
            let file = out
                .into_inner()
                .map_err(|e| Error::io("writing", &temp, e.into_error()))?;
            file.sync_all()
                .map_err(|e| Error::io("syncing", &temp, e))?;
            drop(file);
            std::fs::rename(&temp, path)
                .map_err(|e| Error::io("renaming the Parquet file to", path, e))?;
            Ok(rows)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
            return written;
        }
        let dir = folder_of(path);
        // The rename is in the folder's entries: synced so that the name survives a crash.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("syncing folder", dir, e))?;
        written
    }
}

/// The folder `path` is in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A temporary name beside `path`, hidden, unique within this process and across processes
/// (the process id and a counter): two exports to one path never write the same file.
fn temp_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    folder_of(path).join(format!(".{name}.tmp-{}-{n}", std::process::id()))
}
