//! Packed documents: compaction moves a compressed collection's documents into blocks; every
//! read, update, delete, index, snapshot and reopen must see the same documents as before.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use stele::{Database, DatabaseOptions, Query};

fn order(i: u32) -> String {
    format!(
        r#"{{"order":{i},"customer":"customer-{}","status":"{}","lines":[{{"sku":"sku-{}","qty":{}}}],"note":"deliver to the back door, ring twice"}}"#,
        i % 97,
        ["paid", "shipped", "pending"][(i % 3) as usize],
        i % 31,
        i % 5 + 1
    )
}

fn id(i: u32) -> String {
    format!("o{i:06}")
}

fn put_orders(db: &Database, range: std::ops::Range<u32>, model: &mut BTreeMap<String, String>) {
    let mut b = db.batch();
    for i in range {
        let json = order(i);
        b.put_json("orders", &id(i), json.as_bytes()).unwrap();
        model.insert(id(i), json);
    }
    db.commit(b).unwrap();
}

fn assert_matches(snap: &stele::Snapshot, model: &BTreeMap<String, String>) {
    assert_eq!(snap.count("orders"), model.len() as u64);
    let got: Vec<(String, String)> = snap
        .iter("orders")
        .map(|e| {
            let (id, doc) = e.unwrap();
            (id, doc.to_json().unwrap())
        })
        .collect();
    let want: Vec<(String, String)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want);
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(
            snap.get("orders", k).unwrap().unwrap().to_json().unwrap(),
            *v
        );
    }
}

fn opts(block_bytes: usize, cache_bytes: usize) -> DatabaseOptions {
    DatabaseOptions::default()
        .pack_block_bytes(block_bytes)
        .block_cache_bytes(cache_bytes)
        .background_training(false)
}

#[test]
fn compaction_packs_and_every_read_sees_the_same_documents() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(4096, 1 << 20)).unwrap();
    let mut model = BTreeMap::new();
    for k in 0..6 {
        put_orders(&db, k * 500..(k + 1) * 500, &mut model);
    }
    let before = db.snapshot();
    assert_eq!(before.stats("orders").packed_blocks, 0);
    db.compact().unwrap();
    let snap = db.snapshot();
    let stats = snap.stats("orders");
    // 3,000 documents of ~150 bytes in blocks of 4 KiB: about 110 blocks.
    assert!(
        (50..400).contains(&stats.packed_blocks),
        "{} blocks",
        stats.packed_blocks
    );
    // The collection's own map is empty once everything is packed: it has no file.
    assert!(stats.pack_bytes > 0);
    assert_eq!(stats.pack_bytes, stats.table_bytes);
    assert_matches(&snap, &model);
    // The snapshot from before compaction still reads its own tables.
    assert_matches(&before, &model);
    // Reads of neighbours hit the cache.
    let s0 = db.block_cache_stats();
    for i in 0..20 {
        snap.get("orders", &id(i)).unwrap().unwrap();
    }
    let s1 = db.block_cache_stats();
    assert!(s1.hits > s0.hits);
    assert!(s1.cached_bytes <= 1 << 20);
}

#[test]
fn updates_deletes_and_later_compactions_on_packed_documents() {
    let dir = tempfile::tempdir().unwrap();
    let small = || {
        opts(2048, 16 << 10)
            .compact_layers(2)
            .checkpoint_bytes(8 << 10)
    };
    let mut db = Database::open_with(dir.path(), small()).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..2000, &mut model);
    db.compact().unwrap();
    let packed = db.snapshot().stats("orders");
    // Replace every third, delete every fifth, add new ones; background compactions pack
    // the new documents next to the old blocks.
    for round in 0..4u32 {
        let mut b = db.batch();
        for i in (round..2000).step_by(3) {
            let json = format!(r#"{{"order":{i},"round":{round}}}"#);
            b.put_json("orders", &id(i), json.as_bytes()).unwrap();
            model.insert(id(i), json);
        }
        for i in (round..2000).step_by(5) {
            b.delete("orders", &id(i)).unwrap();
            model.remove(&id(i));
        }
        db.commit(b).unwrap();
        put_orders(&db, 2000 + round * 300..2300 + round * 300, &mut model);
        db.checkpoint().unwrap();
        assert_matches(&db.snapshot(), &model);
    }
    // Reopened: the block numbers continue above the stored ones.
    drop(db);
    db = Database::open_with(dir.path(), small()).unwrap();
    assert_matches(&db.snapshot(), &model);
    put_orders(&db, 5000..5600, &mut model);
    db.checkpoint().unwrap();
    db.checkpoint().unwrap();
    assert_matches(&db.snapshot(), &model);
    // A full compaction repacks everything: fewer documents than first packed (a fifth
    // deleted, short replacements), so fewer bytes of blocks than blocks kept partly dead.
    db.compact().unwrap();
    let snap = db.snapshot();
    assert_matches(&snap, &model);
    assert_eq!(snap.layers("orders").len(), 1);
    assert!(snap.stats("orders").packed_blocks > 0);
    assert!(packed.packed_blocks > 0);
}

#[test]
fn indexes_read_packed_documents_and_follow_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(4096, 0)).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..1200, &mut model);
    db.compact().unwrap();
    // Built over packed documents, read without any cache.
    db.create_index("orders", "by_customer", &["customer"])
        .unwrap();
    let q = Query::new("orders").eq("customer", "\"customer-5\"");
    let hits = db.snapshot().query(&q).unwrap().rows.len();
    assert_eq!(hits, (0..1200).filter(|i| i % 97 == 5).count());
    // Updating a packed document moves its index entry (the old value is read from its
    // block).
    let mut b = db.batch();
    b.put_json("orders", &id(5), br#"{"customer":"someone else"}"#)
        .unwrap();
    db.commit(b).unwrap();
    assert_eq!(db.snapshot().query(&q).unwrap().rows.len(), hits - 1);
}

#[test]
fn uncompressed_collections_are_not_packed_and_packing_can_be_off() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(4096, 1 << 20)).unwrap();
    db.set_compression("orders", false).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..500, &mut model);
    db.compact().unwrap();
    assert_eq!(db.snapshot().stats("orders").packed_blocks, 0);
    // Packed while on, then off: the packed documents stay readable through compactions.
    db.set_compression("orders", true).unwrap();
    put_orders(&db, 500..1000, &mut model);
    db.compact().unwrap();
    assert!(db.snapshot().stats("orders").packed_blocks > 0);
    db.set_compression("orders", false).unwrap();
    put_orders(&db, 1000..1200, &mut model);
    db.compact().unwrap();
    assert_matches(&db.snapshot(), &model);
    drop(db);

    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(0, 1 << 20)).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..500, &mut model);
    db.compact().unwrap();
    assert_eq!(db.snapshot().stats("orders").packed_blocks, 0);
    assert_matches(&db.snapshot(), &model);
}

/// `compression_stats` reads the bytes before and after compression from the values'
/// headers: about 1x with compression off, more once documents are compressed, more still
/// once they are packed; nothing for a collection that does not exist.
#[test]
fn compression_stats_follow_what_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(16384, 1 << 20)).unwrap();
    let none = db.snapshot().compression_stats("nothing").unwrap();
    assert_eq!(
        (none.raw_bytes, none.stored_bytes, none.ratio()),
        (0, 0, 1.0)
    );
    db.set_compression("orders", false).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..1000, &mut model);
    let off = db.snapshot().compression_stats("orders").unwrap();
    // Raw values: one codec byte each on top of the document.
    assert_eq!(off.stored_bytes, off.raw_bytes + 1000, "{off:?}");
    db.set_compression("orders", true).unwrap();
    // The first batch trains the dictionary; the second is compressed with it.
    put_orders(&db, 0..1000, &mut model);
    put_orders(&db, 0..1000, &mut model);
    let alone = db.snapshot().compression_stats("orders").unwrap();
    assert_eq!(alone.raw_bytes, off.raw_bytes, "the same documents");
    assert!(alone.ratio() > 1.5, "{alone:?}");
    db.compact().unwrap();
    let packed = db.snapshot().compression_stats("orders").unwrap();
    assert!(
        packed.ratio() > 2.0 * alone.ratio(),
        "{packed:?} vs {alone:?}"
    );
    assert!(db.snapshot().stats("orders").packed_blocks > 0);
    // A removal's mark is not a document.
    let mut b = db.batch();
    b.delete("orders", &id(5)).unwrap();
    db.commit(b).unwrap();
    assert_eq!(db.snapshot().compression_stats("orders").unwrap(), packed);
}

/// `pack_level` sets the blocks' zstd level: the same documents pack smaller at a higher
/// level, and read back the same at any level (out-of-range levels are clamped).
#[test]
fn the_pack_level_trades_compaction_time_for_size() {
    let mut sizes = Vec::new();
    for level in [-5, 1, 19, 99] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_with(dir.path(), opts(16384, 1 << 20).pack_level(level)).unwrap();
        let mut model = BTreeMap::new();
        put_orders(&db, 0..2000, &mut model);
        db.compact().unwrap();
        let snap = db.snapshot();
        assert_matches(&snap, &model);
        sizes.push(snap.stats("orders").pack_bytes);
    }
    // -5 is level 1, 99 is level 22.
    assert_eq!(sizes[0], sizes[1], "{sizes:?}");
    assert!(sizes[2] < sizes[1], "{sizes:?}");
    assert!(sizes[3] <= sizes[2], "{sizes:?}");
}

/// Stream forms (the default) make packed documents of nested text smaller than documents
/// would, read back the same through every path, and survive updates, another compaction
/// and reopen.
#[test]
fn stream_blocks_are_smaller_and_read_back_the_same() {
    // Varied nested documents (a pseudo-random walk over words, shapes and lengths).
    let nested = |i: u32| {
        let words = [
            "box", "shipped", "north", "blue", "fragile", "tall", "kept", "paper",
        ];
        let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut word = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            words[(x % 8) as usize]
        };
        let text: Vec<&str> = (0..(i % 7 + 2)).map(|_| word()).collect();
        format!(
            r#"{{"name":"{} {i}","tags":["{}","{}"],"spec":{{"w":{},"ok":{},"note":null,"text":"{}","more":{{"{}":[{},{}]}}}}}}"#,
            word(),
            word(),
            word(),
            i % 13,
            i.is_multiple_of(2),
            text.join(" "),
            word(),
            i * 7,
            i % 3
        )
    };
    let mut sizes = Vec::new();
    for streams in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let o = || opts(8192, 64 << 10).pack_streams(streams);
        let db = Database::open_with(dir.path(), o()).unwrap();
        let mut model = BTreeMap::new();
        let mut b = db.batch();
        for i in 0..3000 {
            b.put_json("orders", &id(i), nested(i).as_bytes()).unwrap();
            model.insert(id(i), nested(i));
        }
        db.commit(b).unwrap();
        db.compact().unwrap();
        let snap = db.snapshot();
        assert_matches(&snap, &model);
        sizes.push(snap.stats("orders").pack_bytes);
        // A cache smaller than the collection: blocks are decoded, rebuilt, evicted and
        // decoded again, and the cache stays within its budget.
        for round in 0..2 {
            for (k, v) in model.iter().skip(round).step_by(3) {
                assert_eq!(
                    snap.get("orders", k).unwrap().unwrap().to_json().unwrap(),
                    *v
                );
            }
        }
        assert!(db.block_cache_stats().cached_bytes <= 64 << 10);
        // Changes into packed blocks, a background-style partial packing, then reopen.
        put_orders(&db, 1000..1100, &mut model);
        let mut b = db.batch();
        b.delete("orders", &id(5)).unwrap();
        model.remove(&id(5));
        db.commit(b).unwrap();
        db.compact().unwrap();
        assert_matches(&db.snapshot(), &model);
        drop((snap, db));
        let db = Database::open_with(dir.path(), o()).unwrap();
        assert_matches(&db.snapshot(), &model);
    }
    assert!(
        sizes[0] < sizes[1],
        "streams {} >= documents {}",
        sizes[0],
        sizes[1]
    );
}

/// On real documents (when the shared data is present): packing makes a collection smaller,
/// and every document reads back the same.
#[test]
fn packing_shrinks_real_collections() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/collections/mongodb-samples/sample_mflix__theaters.jsonl.zst");
    let Ok(file) = std::fs::File::open(&path) else {
        eprintln!("shared data not found; skipping");
        return;
    };
    let lines: Vec<Vec<u8>> = BufReader::new(zstd::stream::read::Decoder::new(file).unwrap())
        .split(b'\n')
        .map(Result::unwrap)
        .filter(|l| !l.trim_ascii().is_empty())
        .collect();
    let mut sizes = Vec::new();
    for block_bytes in [0, 32 * 1024] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_with(dir.path(), opts(block_bytes, 1 << 20)).unwrap();
        for (k, chunk) in lines.chunks(200).enumerate() {
            let mut b = db.batch();
            for (i, l) in chunk.iter().enumerate() {
                b.put_json("t", &format!("{:06}", k * 200 + i), l).unwrap();
            }
            db.commit(b).unwrap();
        }
        db.compact().unwrap();
        let snap = db.snapshot();
        for (i, l) in lines.iter().enumerate().step_by(13) {
            let doc = snap.get("t", &format!("{i:06}")).unwrap().unwrap();
            let want = stele_doc::DocumentWriter::new().from_json(l).unwrap();
            assert_eq!(doc.bytes(), &want[..]);
        }
        sizes.push(snap.stats("t").table_bytes);
    }
    // Measured at 157 KB one by one and about 60 KB packed; demand at least 1.5x.
    assert!(sizes[1] * 3 < sizes[0] * 2, "sizes {sizes:?}");
}

/// Removals and replacements racing with background compactions that pack: a removal
/// written while a packing of the same documents runs must still hide them once the
/// packing lands (and after reopening).
#[test]
fn removals_during_background_packing_stay_removed() {
    let dir = tempfile::tempdir().unwrap();
    let small = || {
        opts(1024, 64 << 10)
            .compact_layers(2)
            .checkpoint_bytes(4 << 10)
    };
    let mut db = Database::open_with(dir.path(), small()).unwrap();
    let mut model = BTreeMap::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n) as u32
    };
    for round in 0..400u32 {
        let mut b = db.batch();
        for _ in 0..12 {
            let i = next(600);
            let json = format!(r#"{{"order":{i},"round":{round}}}"#);
            b.put_json("orders", &id(i), json.as_bytes()).unwrap();
            model.insert(id(i), json);
        }
        for _ in 0..8 {
            let i = next(600);
            b.delete("orders", &id(i)).unwrap();
            model.remove(&id(i));
        }
        db.commit(b).unwrap();
        if round % 50 == 49 {
            assert_matches(&db.snapshot(), &model);
        }
    }
    for _ in 0..3 {
        db.checkpoint().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_matches(&db.snapshot(), &model);
    assert!(db.snapshot().stats("orders").packed_blocks > 0);
    drop(db);
    db = Database::open_with(dir.path(), small()).unwrap();
    assert_matches(&db.snapshot(), &model);
    db.compact().unwrap();
    assert_matches(&db.snapshot(), &model);
}

/// Blocks hold at least 32 documents while they stay under 8 times the block size: big
/// documents share little with 2 or 3 neighbours. Small documents still fill blocks of the
/// block size.
#[test]
fn blocks_hold_a_dozen_and_more_big_documents() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(8 * 1024, 0)).unwrap();
    let mut model = BTreeMap::new();
    // 40 documents of about 2.2 KiB (hex that string compression cannot shrink): 4 fill
    // 8 KiB, but a block takes up to 32 of them, within 64 KiB: 29 or so, then the rest.
    let mut b = db.batch();
    for i in 0..40u32 {
        let text: String = (0..64u64)
            .map(|j| {
                format!(
                    "{:016x} ",
                    (u64::from(i) * 1000 + j).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                )
            })
            .collect();
        let json = format!(r#"{{"n":{i},"text":"{text}","more":"{text}"}}"#);
        b.put_json("orders", &id(i), json.as_bytes()).unwrap();
        model.insert(id(i), json);
    }
    db.commit(b).unwrap();
    db.compact().unwrap();
    let snap = db.snapshot();
    let blocks = snap.stats("orders").packed_blocks;
    assert_eq!(blocks, 2, "{blocks} blocks of 40 documents of 2 KiB");
    assert_matches(&snap, &model);
    // Small documents: 300 orders of about 150 bytes fill 8 KiB blocks of about 50 each.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts(8 * 1024, 0)).unwrap();
    let mut model = BTreeMap::new();
    put_orders(&db, 0..300, &mut model);
    db.compact().unwrap();
    let blocks = db.snapshot().stats("orders").packed_blocks;
    assert!(
        (4..=8).contains(&blocks),
        "{blocks} blocks of small documents"
    );
    assert_matches(&db.snapshot(), &model);
}
