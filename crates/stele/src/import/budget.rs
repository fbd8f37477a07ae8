//! How an import shares its memory budget: the batches of records in flight and the
//! sorter of a bulk write (used by both [`super::pending`] and [`super::bulk`]).

/// Most bytes of text in one batch of records converted together, for an import of
/// `budget_bytes`: a 64th of it, 256 KiB to 8 MiB.
pub(super) fn batch_bytes(budget_bytes: usize) -> usize {
    (budget_bytes / 64).clamp(256 << 10, 8 << 20)
}

/// Memory an import into a packed collection holds whatever its budget: the process, its
/// read buffer, the block packer's frames and compression contexts, the sorter's run
/// buffers while merging (an import of 4.5M small records peaked 28-40 MiB above its
/// sorter's share, `docs/notes/2026-12-01-ids-stored-once.md`), and the heaps of the
/// sorter's spill threads, which keep 10-15 MiB of what the sorts there freed (that
/// import peaked at 252-257 MiB of 256 with 32 MiB here, 238-241 MiB with one heap,
/// `docs/notes/2026-12-04-spill-in-background.md`).
const IMPORT_RESERVE_BYTES: usize = 40 << 20;

/// The sorter's share of an import's budget of `budget_bytes` whose dictionary sample
/// holds up to `sample_bytes`: the rest less two batches of records in flight (each its
/// text, its records and their conversions: about three times the text,
/// `batch_bytes`) and [`IMPORT_RESERVE_BYTES`]; at least a quarter of the
/// budget, and 1 MiB.
pub(super) fn sort_budget(budget_bytes: usize, sample_bytes: usize) -> usize {
    let batches = 6 * batch_bytes(budget_bytes);
    budget_bytes
        .saturating_sub(IMPORT_RESERVE_BYTES + batches + sample_bytes)
        .max(budget_bytes / 4)
        .max(1 << 20)
}
