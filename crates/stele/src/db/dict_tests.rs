//! Removal of unused dictionaries against the two races that only the database's internals
//! can stage on purpose: a batch compressed with a dictionary that stops being current
//! before the batch is applied (pins), and a newer dictionary persisted but not yet adopted
//! while writes still use the current one (the current id is never removed).

use super::*;

#[path = "../../tests/common/docs.rs"]
mod docs;

/// Document `i` of kind `kind` (0: log lines, 1: orders): orders compress worse than log
/// lines with a dictionary of log lines, so switching from 0 to 1 makes the compressor see
/// its ratio drift and train a new dictionary. Minified JSON.
fn doc(kind: u32, i: u32) -> String {
    if kind == 1 {
        docs::order_json(i)
    } else {
        docs::log_json(i)
    }
}

fn batch(db: &Database, prefix: &str, kind: u32, range: std::ops::Range<u32>) -> Batch {
    let mut b = db.batch();
    for i in range {
        b.put_json("c", &format!("{prefix}{i:06}"), doc(kind, i).as_bytes())
            .unwrap();
    }
    b
}

fn current(db: &Database) -> Option<crate::compress::DictionaryId> {
    db.compressor("c")
        .unwrap()
        .lock()
        .unwrap()
        .current_dictionary()
}

fn persisted(db: &Database, id: crate::compress::DictionaryId) -> bool {
    db.snapshot_state()
        .dicts
        .get("c")
        .is_some_and(|d| d.contains(id))
}

/// Every document `prefix{i}` of `range` reads back as `doc(kind, i)`.
fn assert_reads(db: &Database, prefix: &str, kind: u32, range: std::ops::Range<u32>) {
    let snap = db.snapshot();
    for i in range {
        let id = format!("{prefix}{i:06}");
        let got = snap.get("c", &id).unwrap().unwrap().to_json().unwrap();
        assert_eq!(got, doc(kind, i), "{id}");
    }
}

fn open(dir: &Path) -> Database {
    Database::open_with(dir, DatabaseOptions::default().background_training(false)).unwrap()
}

/// As [`open`], with blocks of a dozen documents, where the dictionary matters (in 32 KiB
/// blocks these repetitive documents compress about as well with any dictionary).
fn open_small_blocks(dir: &Path) -> Database {
    let opts = DatabaseOptions::default()
        .background_training(false)
        .pack_block_bytes(2048);
    Database::open_with(dir, opts).unwrap()
}

/// Writes kind 0 until the collection has a dictionary, then more of it so that the
/// compressor's ratio windows (measured only once a dictionary is in use) learn kind 0's
/// ratio; returns the dictionary's id.
fn first_dictionary(db: &Database) -> crate::compress::DictionaryId {
    db.commit(batch(db, "a", 0, 0..2000)).unwrap();
    db.commit(batch(db, "a", 0, 2000..3000)).unwrap();
    current(db).unwrap()
}

#[test]
fn a_batch_compressed_before_a_removal_keeps_its_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    first_dictionary(&db);
    db.compact().unwrap();
    // The compaction may have trained a dictionary for its blocks, which the next writes
    // replace with one for documents (a dictionary for blocks is provisional for them);
    // each time the ratio windows start over: let them learn kind 0's ratio again.
    db.commit(batch(&db, "a", 0, 3000..4000)).unwrap();
    db.commit(batch(&db, "a", 0, 4000..5000)).unwrap();
    let x = current(&db).unwrap();
    // A batch compressed with X, held back before it is applied.
    let mut held = batch(&db, "held", 0, 0..20).into_ops();
    let (proposals, pins) = db.compress_ops(&mut held).unwrap();
    assert!(proposals.is_empty());
    // Other writes move the collection to a newer dictionary.
    let mut n = 0;
    while current(&db) == Some(x) {
        db.commit(batch(&db, "b", 1, n * 250..(n + 1) * 250))
            .unwrap();
        n += 1;
        assert!(
            n < 200,
            "no new dictionary after {} documents: {:?}",
            n * 250,
            db.compressor("c").unwrap().lock().unwrap().stats()
        );
    }
    // Every stored document is packed with the newer one now: only the held batch names X.
    db.compact().unwrap();
    assert!(
        persisted(&db, x),
        "dictionary {x} went while a batch in flight used it"
    );
    db.commit_ops(held).unwrap();
    drop(pins);
    assert_reads(&db, "held", 0, 0..20);
    drop(db);
    let db = open(dir.path());
    assert_reads(&db, "held", 0, 0..20);
    // Once the batch is packed too, X may go.
    db.compact().unwrap();
    assert!(!persisted(&db, x));
    assert_reads(&db, "held", 0, 0..20);
}

#[test]
fn the_current_dictionary_stays_while_a_newer_one_awaits_adoption() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let x = first_dictionary(&db);
    // Commit kind 1 without adopting what the compressor proposes, until it proposes one.
    let mut pending = None;
    for n in 0..200u32 {
        let mut ops = batch(&db, "b", 1, n * 250..(n + 1) * 250).into_ops();
        let (proposals, pins) = db.compress_ops(&mut ops).unwrap();
        db.commit_ops(ops).unwrap();
        drop(pins);
        if let Some(p) = proposals.into_iter().next() {
            pending = Some(p);
            break;
        }
    }
    let (compressor, y) = pending.unwrap();
    assert!(y.id() > x);
    assert_eq!(current(&db), Some(x));
    // The compaction packs every document with Y, the newest persisted dictionary; X is
    // still the one commits compress with.
    db.compact().unwrap();
    assert!(persisted(&db, x), "the current dictionary {x} went");
    db.commit(batch(&db, "late", 1, 0..20)).unwrap();
    assert_reads(&db, "late", 1, 0..20);
    compressor.lock().unwrap().adopt(y).unwrap();
    drop(db);
    let db = open(dir.path());
    assert_reads(&db, "late", 1, 0..20);
    assert_reads(&db, "a", 0, 0..3000);
}

/// A collection written in one go keeps the dictionary of its first documents (its sample
/// ring of 1,024 never fills); a full compaction trains one on documents spread over the
/// whole collection, adopts it because the blocks plus the dictionary come out smaller, and
/// then removes the first one, which nothing names any more.
#[test]
fn full_compaction_retrains_the_dictionary_of_the_first_documents() {
    let dir = tempfile::tempdir().unwrap();
    let open = open_small_blocks;
    let db = open(dir.path());
    db.commit(batch(&db, "a", 0, 0..64)).unwrap();
    assert_eq!(current(&db), Some(1), "trained on the first 64 documents");
    db.commit(batch(&db, "b", 1, 0..600)).unwrap();
    assert_eq!(
        current(&db),
        Some(1),
        "600 orders neither fill the ring nor a window"
    );
    db.compact().unwrap();
    let now = current(&db).unwrap();
    assert!(now > 1, "compaction adopted no new dictionary");
    assert!(persisted(&db, now));
    assert!(!persisted(&db, 1), "the first dictionary was not removed");
    assert_eq!(db.snapshot().dictionaries("c"), 1);
    assert_reads(&db, "a", 0, 0..64);
    assert_reads(&db, "b", 1, 0..600);
    // Compacting again finds nothing better than what it just trained.
    db.compact().unwrap();
    assert_eq!(current(&db), Some(now));
    drop(db);
    let db = open(dir.path());
    assert_reads(&db, "b", 1, 0..600);
}

/// Writes 64 log lines and 600 orders and compacts them; returns the dictionary the
/// compaction trained for the blocks.
fn packed_with_a_dictionary_for_blocks(db: &Database) -> crate::compress::DictionaryId {
    db.commit(batch(db, "a", 0, 0..64)).unwrap();
    db.commit(batch(db, "b", 1, 0..600)).unwrap();
    db.compact().unwrap();
    let for_blocks = current(db).unwrap();
    assert!(
        for_blocks > 1,
        "compaction adopted no dictionary for its blocks"
    );
    for_blocks
}

/// Writes 1,200 more orders, which fill the ring of 1,024 samples: a dictionary for
/// documents must replace `for_blocks` as the current one, which stays for the blocks,
/// and every document must stay readable.
fn writes_train_a_dictionary_for_documents(
    db: &Database,
    for_blocks: crate::compress::DictionaryId,
) {
    db.commit(batch(db, "c", 1, 0..1200)).unwrap();
    let now = current(db).unwrap();
    assert!(
        now > for_blocks,
        "no dictionary for documents after the ring filled: {:?}",
        db.compressor("c").unwrap().lock().unwrap().stats()
    );
    assert!(persisted(db, for_blocks), "the blocks' dictionary went");
    assert_reads(db, "b", 1, 0..600);
    assert_reads(db, "c", 1, 0..1200);
}

/// A dictionary a compaction trains for its blocks (on stream forms) is provisional for
/// the documents written one by one after it: once the sample ring fills again, the next
/// writes train one for documents, and the blocks keep theirs.
#[test]
fn writes_after_a_compaction_train_a_dictionary_for_documents() {
    let dir = tempfile::tempdir().unwrap();
    let open = open_small_blocks;
    let db = open(dir.path());
    let for_blocks = packed_with_a_dictionary_for_blocks(&db);
    writes_train_a_dictionary_for_documents(&db, for_blocks);
    assert_eq!(db.snapshot().dictionaries("c"), 2);
    drop(db);
    let db = open(dir.path());
    db.compact().unwrap();
    assert_reads(&db, "a", 0, 0..64);
    assert_reads(&db, "c", 1, 0..1200);
}

/// The same after a restart: a compressor resumed on a dictionary its collection's blocks
/// use takes it as trained for them.
#[test]
fn writes_after_a_compaction_and_a_reopen_train_a_dictionary_for_documents() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_small_blocks(dir.path());
    let for_blocks = packed_with_a_dictionary_for_blocks(&db);
    drop(db);
    let db = open_small_blocks(dir.path());
    writes_train_a_dictionary_for_documents(&db, for_blocks);
}

/// The documents a compaction trains on are spread over the whole collection, at most
/// `max_docs` of them, and within the byte budget (fewer, still spread, when it is small).
#[test]
fn training_samples_are_spread_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.commit(batch(&db, "a", 1, 0..1000)).unwrap();
    let state = db.snapshot_state();
    let read =
        |max_docs, budget| crate::collection::spread_sample(&state, "c", max_docs, budget).unwrap();
    let all = read(100, usize::MAX);
    assert_eq!(all.len(), 100, "every 10th of 1,000");
    let bytes = |s: &[Vec<u8>]| s.iter().map(Vec::len).sum::<usize>();
    let small = read(100, bytes(&all) / 3);
    assert!(small.len() >= 25 && small.len() <= 50, "{}", small.len());
    assert!(bytes(&small) <= bytes(&all) / 3);
    // Both reach the end of the collection: documents of the last tenth are in them.
    for s in [&all, &small] {
        let tail = s.last().unwrap();
        let d = stele_doc::Document::new(&tail[..]).unwrap();
        let order = d.get("order").unwrap().as_str().unwrap().into_owned();
        let n: u32 = order.trim_start_matches("o-").parse().unwrap();
        assert!(n >= 900, "last sample is order {n}");
    }
    // One document over the budget is kept alone.
    assert_eq!(read(100, 1).len(), 1);
}

#[test]
fn dictionaries_are_stored_compressed_and_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    first_dictionary(&db);
    db.close().unwrap();
    let db = open(dir.path());
    let state = db.snapshot_state();
    let meta = state.collections.get(crate::internal::META).unwrap();
    let mut stored_total = 0;
    for entry in meta.prefix(crate::internal::MetaKey::dicts_of("c").as_bytes()) {
        let (_, stored) = entry.unwrap();
        // A zstd frame (its magic), smaller than the dictionary it decodes to.
        assert!(
            stored.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]),
            "{:?}",
            &stored[..4]
        );
        let dict = crate::compress::dictionary_from_stored(stored).unwrap();
        assert!(
            stored.len() < dict.len(),
            "{} >= {}",
            stored.len(),
            dict.len()
        );
        stored_total += stored.len() as u64;
    }
    assert!(stored_total > 0);
    let (_, newest) = crate::pack::last_dictionary(&state, "c").unwrap().unwrap();
    assert!(newest.starts_with(&[0x37, 0xa4, 0x30, 0xec]));
    assert_eq!(db.snapshot().dictionary_bytes("c").unwrap(), stored_total);
    assert_reads(&db, "a", 0, 0..3000);
}
