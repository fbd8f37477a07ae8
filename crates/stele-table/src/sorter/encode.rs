//! The in-memory path's direct write: a sorted batch becomes a table with every step but
//! the file writes spread over the rayon pool.
//!
//! 1. In parallel chunks: resolve duplicates and find each kept key's common prefix with
//!    the previous kept key, from the common prefix lengths the radix sort computed.
//! 2. Sequentially, with integers only: place block boundaries with the same size
//!    arithmetic (`BlockSizer`) as the streaming builder, so the file is byte-identical to
//!    the one `TableBuilder` (and the spilling path) writes for the same pairs.
//! 3. In parallel groups of blocks: encode the blocks; the writer appends them in order.

use super::batch::Batch;
use super::pipeline::produce_in_order;
use super::radix::PREFETCH_AHEAD;
use crate::block::{BlockBuilder, BlockSizer};
use crate::builder::{DuplicatePolicy, EncodedBlocks, TableInfo, TableWriter};
use crate::error::{Error, Result};
use crate::index::separator;
use rayon::prelude::*;

/// Blocks encoded per task: about 1 MiB of output at 4 KiB blocks.
const BLOCKS_PER_GROUP: usize = 256;

/// A kept record: its index in the sorted batch and the common prefix length of its key
/// with the previous kept key.
#[derive(Debug, Clone, Copy)]
struct Kept {
    rec: u32,
    lcp: u32,
}

/// Resolves duplicates in `start..end`; `start` is the first record of a run of equal keys.
/// Uses the common prefix lengths the sort left, so it reads no key bytes except to name a
/// rejected duplicate.
fn keep_range(
    batch: &Batch,
    start: usize,
    end: usize,
    policy: DuplicatePolicy,
) -> Result<Vec<Kept>> {
    let mut out = Vec::with_capacity(end - start);
    let mut i = start;
    while i < end {
        let mut j = i + 1;
        while j < batch.len() && batch.same_as_previous(j) {
            j += 1;
        }
        if j - i > 1 && policy == DuplicatePolicy::Reject {
            return Err(Error::DuplicateKey {
                key: batch.key_at(i).to_vec(),
            });
        }
        let chosen = if policy == DuplicatePolicy::KeepLast {
            j - 1
        } else {
            i
        };
        // The previous kept key equals the key just before this run.
        out.push(Kept {
            rec: chosen as u32,
            lcp: batch.lcp_at(i) as u32,
        });
        i = j;
    }
    Ok(out)
}

/// Writes the sorted `batch` through `writer`.
pub(crate) fn write_sorted(
    batch: &Batch,
    policy: DuplicatePolicy,
    block_bytes: usize,
    restart_interval: u32,
    writer: TableWriter,
) -> Result<TableInfo> {
    let n = batch.len();
    if u32::try_from(n).is_err() {
        return Err(Error::Internal(
            "more than 2^32 entries in one in-memory batch",
        ));
    }
    // 1. Chunk starts, moved forward to the start of a run of equal keys.
    let pieces = (rayon::current_num_threads() * 8).max(1);
    let mut starts: Vec<usize> = (0..pieces).map(|p| p * n / pieces).collect();
    for s in starts.iter_mut().skip(1) {
        while *s > 0 && *s < n && batch.same_as_previous(*s) {
            *s += 1;
        }
    }
    starts.push(n);
    starts.dedup();
    let parts: Vec<Result<Vec<Kept>>> = starts
        .par_windows(2)
        .map(|w| keep_range(batch, w[0], w[1], policy))
        .collect();
    let mut kept = Vec::with_capacity(n);
    for part in parts {
        kept.extend(part?);
    }

    // 2. Block boundaries.
    let mut sizer = BlockSizer::new(block_bytes, restart_interval);
    let mut block_starts = vec![0usize];
    for (j, k) in kept.iter().enumerate() {
        let (key_len, value_len) = batch.lens_at(k.rec as usize);
        if sizer.admit(k.lcp as usize, key_len, value_len).is_none() {
            sizer.reset();
            block_starts.push(j);
            sizer.admit(0, key_len, value_len);
        }
    }
    if kept.is_empty() {
        block_starts.clear();
    }
    block_starts.push(kept.len());

    // 3. Encode groups of blocks in parallel, a bounded window at a time, while another
    //    thread appends the previous window to the file (copying into the page cache is
    //    about a tenth of the build, and the encoders need not wait for it).
    let blocks: Vec<(usize, usize)> = block_starts.windows(2).map(|w| (w[0], w[1])).collect();
    let groups: Vec<&[(usize, usize)]> = blocks.chunks(BLOCKS_PER_GROUP).collect();
    let window = rayon::current_num_threads().max(1) * 2;
    let writer = produce_in_order(
        &groups,
        window,
        |group| encode_group(batch, &kept, group, block_bytes, restart_interval),
        writer,
        |writer, enc| writer.push_encoded(&enc),
    )?;
    writer.finish()
}

fn encode_group(
    batch: &Batch,
    kept: &[Kept],
    group: &[(usize, usize)],
    block_bytes: usize,
    restart_interval: u32,
) -> Result<EncodedBlocks> {
    let mut enc = EncodedBlocks {
        bytes: Vec::with_capacity(group.len() * block_bytes),
        ..EncodedBlocks::default()
    };
    let mut block = BlockBuilder::new(block_bytes, restart_interval);
    let key = |j: usize| batch.key_at(kept[j].rec as usize);
    for &(start, end) in group {
        for (j, kept_entry) in kept[start..end].iter().enumerate() {
            if let Some(ahead) = kept.get(start + j + PREFETCH_AHEAD) {
                batch.prefetch(ahead.rec as usize);
            }
            let rec = kept_entry.rec as usize;
            let (k, v) = (batch.key_at(rec), batch.value_at(rec));
            if !block.try_add_with_lcp(k, v, kept_entry.lcp as usize) {
                return Err(Error::Internal(
                    "block boundaries disagree with the block builder",
                ));
            }
            enc.key_bytes += k.len() as u64;
            enc.value_bytes += v.len() as u64;
        }
        let sep = match start.checked_sub(1) {
            Some(prev) => separator(key(prev), key(start)).to_vec(),
            None => Vec::new(),
        };
        let bytes = block.finish_into(&mut enc.bytes);
        enc.blocks
            .push((sep, (bytes / block_bytes) as u64, (end - start) as u64));
        enc.entries += (end - start) as u64;
    }
    Ok(enc)
}
