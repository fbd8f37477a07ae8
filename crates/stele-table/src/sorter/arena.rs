//! The batch's arena: pairs copied into chunks of anonymous memory, and the records
//! ([`Rec`]) that locate them.

use crate::error::{Error, Result};
use crate::memory::HUGE_PAGE_BYTES;
use memmap2::{Advice, MmapMut};

/// Arena chunk size: big enough that chunk switches are rare, small enough that the last,
/// partly used chunk wastes little of the budget.
pub(super) const CHUNK_BYTES: usize = 4 << 20;
/// Page size assumed when touching fresh memory (a smaller real page only leaves some
/// pages to be faulted in later).
const PAGE_BYTES: usize = 4096;

/// One pair: the first 8 key bytes (big-endian, so integer order is byte order), where the
/// key and value are, and their lengths.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rec {
    pub(super) prefix: u64,
    /// Chunk number in the high 32 bits, offset in the chunk in the low 32. With the
    /// length, also the insertion order, which breaks ties between equal keys (see
    /// [`Rec::order`]).
    pub(super) loc: u64,
    pub(super) key_len: u32,
    pub(super) value_len: u32,
}

impl Rec {
    /// The insertion order of records, as a sort key. `loc` alone is not unique: a pair
    /// with an empty key and an empty value takes no arena bytes, so the next pair starts
    /// at the same place. All the pairs at one `loc` but the last are such empty pairs
    /// (each later one starts where they did), so among them the lengths order them as
    /// they came: the empty pairs (identical, in any order) before the one that has bytes.
    /// Comparing `loc` alone let a sort put an empty value after a later duplicate of its
    /// empty key, and `KeepFirst` then kept the later value.
    pub(super) fn order(&self) -> (u64, u64) {
        (
            self.loc,
            u64::from(self.key_len) + u64::from(self.value_len),
        )
    }
}

/// One arena chunk: an anonymous map and how much of it is used. A map rather than a
/// vector so that the kernel places it on a 2 MiB boundary (for lengths that are multiples
/// of 2 MiB) and backs it with huge pages, and so that freeing it returns the memory.
#[derive(Debug)]
pub(super) struct Chunk {
    pub(super) map: MmapMut,
    pub(super) len: usize,
}

impl Chunk {
    pub(super) fn new(bytes: usize) -> Result<Self> {
        let map =
            MmapMut::map_anon(bytes).map_err(|e| Error::io("allocating sort memory", "", e))?;
        if bytes >= HUGE_PAGE_BYTES {
            // Only a hint: without huge pages the sort is slower, not wrong.
            let _ = map.advise(Advice::HugePage);
        }
        Ok(Chunk { map, len: 0 })
    }

    pub(super) fn spare_bytes(&self) -> usize {
        self.map.len() - self.len
    }

    /// Writes one byte of every page, so that the kernel faults in (and zeroes) the whole
    /// chunk now rather than while pairs are copied into it.
    pub(super) fn touch(&mut self) {
        for b in self.map.iter_mut().step_by(PAGE_BYTES) {
            *b = 0;
        }
    }

    pub(super) fn append(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(dst) = self.map.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        }
    }
}

impl std::ops::Deref for Chunk {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.get(..self.len).unwrap_or_default()
    }
}

/// Arena chunks made ready on a thread of their own: mapped, advised and with every page
/// touched. Why: faulting in and zeroing fresh memory was about a tenth of the CPU time of
/// an in-memory build (`perf` on 14M pairs: `clear_page_erms` under the arena copies), all
/// of it on the thread that adds pairs, one at a time, while the other cores wait for the
/// sort. One chunk is kept ready (a rendezvous channel: the thread makes the next chunk only
/// once the previous one is taken); it is counted in the batch's memory.
#[derive(Debug)]
pub(super) struct ChunkSupply {
    /// In a mutex only so that a batch stays `Sync` (sorting shares it between threads);
    /// only the adding thread takes chunks, once per chunk.
    ready: std::sync::Mutex<std::sync::mpsc::Receiver<Result<Chunk>>>,
}

impl ChunkSupply {
    /// Starts the thread; `None` if it cannot be started (chunks are then made in line).
    pub(super) fn start(chunk_bytes: usize) -> Option<Self> {
        let (tx, ready) = std::sync::mpsc::sync_channel(0);
        std::thread::Builder::new()
            .name("stele-sort-arena".into())
            .spawn(move || {
                loop {
                    let chunk = Chunk::new(chunk_bytes).map(|mut c| {
                        c.touch();
                        c
                    });
                    // Fails once the batch is gone: the thread ends, freeing its chunk.
                    if tx.send(chunk).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(ChunkSupply {
            ready: std::sync::Mutex::new(ready),
        })
    }

    pub(super) fn take(&self) -> Option<Result<Chunk>> {
        self.ready.lock().ok()?.recv().ok()
    }
}

/// The key of the pair `r` locates in `chunks`.
pub(super) fn key<'a>(chunks: &'a [Chunk], r: &Rec) -> &'a [u8] {
    let chunk = &chunks[(r.loc >> 32) as usize];
    let off = (r.loc & 0xffff_ffff) as usize;
    &chunk[off..off + r.key_len as usize]
}

/// The value of the pair `r` locates in `chunks`.
pub(super) fn value<'a>(chunks: &'a [Chunk], r: &Rec) -> &'a [u8] {
    let chunk = &chunks[(r.loc >> 32) as usize];
    let off = (r.loc & 0xffff_ffff) as usize + r.key_len as usize;
    &chunk[off..off + r.value_len as usize]
}
