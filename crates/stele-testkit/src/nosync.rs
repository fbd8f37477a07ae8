//! A real-file storage that skips every sync, for opening crash states: what the code under
//! test syncs there is thrown away with the state, and real fsyncs on a shared disk made
//! the exploration wait on I/O most of its time (1,240 states: 42 s against 8 s).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use stele_table::{FsStorage, Storage, StorageFile};

/// [`FsStorage`] without syncs.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSync;

/// A [`NoSync`] storage to hand to options.
pub fn no_sync() -> Arc<dyn Storage> {
    Arc::new(NoSync)
}

#[derive(Debug)]
struct File(Box<dyn StorageFile>);

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl StorageFile for File {
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.0.write_at(offset, buf)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl Storage for NoSync {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(File(FsStorage.create(path)?)))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(File(FsStorage.open_append(path)?)))
    }
    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(File(FsStorage.open_log(path)?)))
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}
