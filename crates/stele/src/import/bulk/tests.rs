//! Unit tests of the bulk writer.

use super::*;
use crate::import::{ImportOptions, import_reader};

/// JSON Lines of `n` documents of about 100 bytes.
fn lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\":\"k{i:06}\",\"city\":\"{}\",\"n\":{i},\"note\":\"{}\"}}\n",
                ["Lima", "Oslo", "Pune"][i % 3],
                "y".repeat(i % 40)
            )
        })
        .collect()
}

/// A database of 4 KiB blocks.
fn small_blocks(dir: &std::path::Path) -> Database {
    Database::open_with(
        dir,
        crate::DatabaseOptions::default().pack_block_bytes(4096),
    )
    .expect("open")
}

/// Fewer bytes than `DICTIONARY_MIN_BLOCKS` blocks: no training runs; more: one does.
#[test]
fn only_imports_of_enough_blocks_train_a_dictionary() {
    // 900 documents: 61 KB of JSON, 15 blocks (a dictionary under the rule of 8 blocks).
    for (docs, trains) in [(30, false), (900, false), (3_000, true)] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let db = small_blocks(dir.path());
        let text = lines(docs);
        let min_bytes = DICTIONARY_MIN_BLOCKS * 4096;
        // The rule counts documents as stored (smaller than their JSON): the cases
        // stand clear of the line either way.
        assert_eq!(
            text.len() >= 3 * min_bytes / 2,
            trains,
            "{} bytes",
            text.len()
        );
        let opts = ImportOptions::new().id_field("id");
        import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).expect("import");
        let stats = db
            .compressor_of("c")
            .expect("a compressor")
            .lock()
            .expect("not poisoned")
            .stats();
        assert_eq!(stats.trainings > 0, trains, "{docs} documents: {stats:?}");
        assert_eq!(db.snapshot().count("c"), docs as u64);
    }
}

/// An import too small for a dictionary packs at `SMALL_IMPORT_PACK_LEVEL` unless a
/// level is asked for; a bigger one, or one of a block or less, at the default level.
#[test]
fn small_imports_pack_at_the_small_level_unless_one_is_asked_for() {
    use crate::import::{DEFAULT_IMPORT_PACK_LEVEL, SMALL_IMPORT_PACK_LEVEL};
    let packed = |docs: usize, level: Option<i32>| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let db = small_blocks(dir.path());
        let mut opts = ImportOptions::new().id_field("id");
        if let Some(level) = level {
            opts = opts.pack_level(level);
        }
        let text = lines(docs);
        import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {})
            .expect("import")
            .packed_bytes
    };
    // 900 documents: under DICTIONARY_MIN_BLOCKS blocks of 4 KiB.
    let small = packed(900, None);
    assert_eq!(small, packed(900, Some(SMALL_IMPORT_PACK_LEVEL)));
    assert_ne!(small, packed(900, Some(DEFAULT_IMPORT_PACK_LEVEL)));
    // 30 documents: one block.
    assert_eq!(
        packed(30, None),
        packed(30, Some(DEFAULT_IMPORT_PACK_LEVEL))
    );
    assert_ne!(packed(30, None), packed(30, Some(SMALL_IMPORT_PACK_LEVEL)));
    let big = packed(3_000, None);
    assert_eq!(big, packed(3_000, Some(DEFAULT_IMPORT_PACK_LEVEL)));
    assert_ne!(big, packed(3_000, Some(SMALL_IMPORT_PACK_LEVEL)));
}

/// One dictionary size, the usual one: a tenth of the training bytes here (the samples
/// being small), not a half or a quarter of it that a compaction also tries.
#[test]
fn an_import_trains_its_dictionary_at_the_usual_size() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let db = small_blocks(dir.path());
    let opts = ImportOptions::new().id_field("id");
    // 6,000 documents of about 56 bytes each as stored: a quarter of them (SAMPLE_SHARE)
    // is more than the sample, so all of it is trained on.
    let text = lines(6_000);
    import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).expect("import");
    let state = db.visible_state();
    let (_, dict) = crate::pack::last_dictionary(&state, "c")
        .expect("the dictionary read")
        .expect("a dictionary");
    // 1,024 documents sampled, 7/8 of them trained on: about 50 KiB, a usual size of
    // about 5 KiB (zstd's trainer fills the size asked); the half size would be about
    // 2.5 KiB.
    assert!(dict.len() > 4096, "{} bytes", dict.len());
}
