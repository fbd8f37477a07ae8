//! `$group` past its memory budget: the groups spill through the table sorter and come
//! back merged, with the answer of an unlimited budget.

#![allow(clippy::unwrap_used, reason = "tests")]

use stele::{Database, DatabaseOptions, Pipeline};

/// A database in a new temp folder, with 4 KiB packed blocks (many blocks from a few
/// thousand documents) and no background training. The folder lives as long as `.0`.
fn small_blocks_db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatabaseOptions::default()
        .pack_block_bytes(4096)
        .background_training(false);
    let db = Database::open_with(dir.path(), opts).unwrap();
    (dir, db)
}

#[test]
fn a_group_past_its_memory_budget_spills_and_answers_alike() {
    for packed in [false, true] {
        let (_dir, db) = small_blocks_db();
        let mut b = db.batch();
        for i in 0..5000u32 {
            let json = format!(
                r#"{{"n":{i},"k":{},"cat":"c{}","score":{},"f":{}}}"#,
                i % 1700,
                i % 7,
                i % 50,
                f64::from(i) / 4.0
            );
            b.put_json("c", &format!("d{i:05}"), json.as_bytes())
                .unwrap();
        }
        db.commit(b).unwrap();
        if packed {
            db.compact().unwrap();
        }
        let snap = db.snapshot();
        let accs = r#""n": {"$sum": 1}, "s": {"$sum": "$score"}, "fs": {"$sum": "$f"}, "a": {"$avg": "$score"}, "mn": {"$min": "$cat"}, "mx": {"$max": "$n"}, "c": {"$count": {}}, "first": {"$first": "$n"}, "last": {"$last": "$n"}, "all": {"$push": "$n"}"#;
        for pipeline in [
            format!(r#"[{{"$group": {{"_id": "$k", {accs}}}}}]"#),
            format!(
                r#"[{{"$group": {{"_id": "$score", {accs}}}}}, {{"$sort": {{"mx": -1}}}}, {{"$limit": 7}}]"#
            ),
            format!(r#"[{{"$match": {{"cat": "c2"}}}}, {{"$group": {{"_id": "$cat", {accs}}}}}]"#),
        ] {
            let p = Pipeline::parse(&pipeline).unwrap();
            let want = snap.aggregate("c", &p).unwrap();
            assert_eq!(want.stats.spilled_bytes, 0);
            let got = snap.aggregate("c", &p.clone().memory_budget(1)).unwrap();
            assert_eq!(got.rows, want.rows, "packed {packed}: {pipeline}");
            assert!(!got.rows.is_empty());
            if pipeline.contains("$k") {
                assert!(got.stats.spilled_bytes > 0, "packed {packed}: {pipeline}");
            }
        }
        // A $count right after a $group counts the groups without keeping them.
        for budget in [1, stele::query::DEFAULT_MEMORY_BUDGET_BYTES] {
            let p = Pipeline::parse(r#"[{"$group": {"_id": "$k"}}, {"$count": "groups"}]"#)
                .unwrap()
                .memory_budget(budget);
            let out = snap.aggregate("c", &p).unwrap();
            assert_eq!(out.rows, [r#"{"groups":1700}"#], "packed {packed}");
        }
    }
}

/// A group per document (and groups of many) over a packed collection read by the
/// parallel scan, whose forks take stretches cut to the budget (`Collector::fork_docs`):
/// every budget gives the answer worked out here from the documents, `$first` / `$last` /
/// `$push` in id order included.
#[test]
fn groups_per_document_answer_alike_whatever_the_budget() {
    let (_dir, db) = small_blocks_db();
    let n = 12_000u32;
    let mut b = db.batch();
    for i in 0..n {
        let json = format!(r#"{{"n":{i},"k":{},"name":"é{i}"}}"#, i % 97);
        b.put_json("c", &format!("d{i:05}"), json.as_bytes())
            .unwrap();
    }
    db.commit(b).unwrap();
    db.compact().unwrap();
    let snap = db.snapshot();
    let per_doc = Pipeline::parse(
        r#"[{"$group": {"_id": "$_id", "n": {"$sum": "$n"}, "w": {"$first": "$name"}}}]"#,
    )
    .unwrap();
    let want_per_doc: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"_id":"d{i:05}","n":{i},"w":"é{i}"}}"#))
        .collect();
    let by_k = Pipeline::parse(
        r#"[{"$group": {"_id": "$k", "c": {"$sum": 1}, "f": {"$first": "$n"}, "l": {"$last": "$n"}, "all": {"$push": "$n"}}}]"#,
    )
    .unwrap();
    let want_by_k: Vec<String> = (0..97u32)
        .map(|k| {
            let all: Vec<String> = (k..n).step_by(97).map(|i| i.to_string()).collect();
            format!(
                r#"{{"_id":{k},"c":{},"f":{k},"l":{},"all":[{}]}}"#,
                all.len(),
                all.last().unwrap(),
                all.join(",")
            )
        })
        .collect();
    for budget in [
        1,
        64 << 10,
        1 << 20,
        stele::query::DEFAULT_MEMORY_BUDGET_BYTES,
    ] {
        let got = snap
            .aggregate("c", &per_doc.clone().memory_budget(budget))
            .unwrap();
        assert_eq!(got.rows, want_per_doc, "budget {budget}");
        if budget <= 1 << 20 {
            assert!(got.stats.spilled_bytes > 0, "budget {budget}");
        }
        let got = snap
            .aggregate("c", &by_k.clone().memory_budget(budget))
            .unwrap();
        assert_eq!(got.rows, want_by_k, "budget {budget}");
    }
}

/// Keys of every kind in one `$group`: numbers equal by value (`1`, `1.0`), objects equal
/// whatever their order, a missing key with `null`, strings with a zero byte, quotes and
/// non-ASCII text, arrays, the integer limits, and a third of the documents in a group of
/// their own (floats, strings, objects in turn). On a collection read on the caller's
/// thread (3,000 and 6,000 documents) and by the parallel scan (20,000), each with every
/// budget (1 byte spills): the groups worked out here from the documents, and one order.
#[test]
fn keys_of_mixed_types_group_alike_serial_parallel_and_spilled() {
    // (the key as stored, or none for a missing key; the group it falls in)
    let variants: [(Option<&str>, usize); 20] = [
        (Some("1"), 0),
        (Some("2.5"), 1),
        (Some("-7"), 2),
        (Some(r#""a""#), 3),
        (Some(r#""""#), 4),
        (Some(r#""é漢""#), 5),
        (Some(r#""x\"y""#), 6),
        (Some("null"), 7),
        (Some("true"), 8),
        (Some("false"), 9),
        (Some(r#"[1,"b"]"#), 10),
        (Some(r#"{"x":1,"y":[2]}"#), 11),
        (Some("{}"), 12),
        (Some("[]"), 13),
        (Some("18446744073709551615"), 14),
        (Some("-9223372036854775808"), 15),
        (Some(r#""a\u0000b""#), 16),
        (Some("1.0"), 0),
        (Some(r#"{"y":[2],"x":1}"#), 11),
        (None, 7),
    ];
    for n in [3_000u32, 6_000, 20_000] {
        let (_dir, db) = small_blocks_db();
        let mut b = db.batch();
        // Each group's key as printed (the first document's) and its documents' `n`.
        let mut want: std::collections::BTreeMap<String, (String, Vec<u32>)> =
            std::collections::BTreeMap::new();
        for i in 0..n {
            let (key, group) = match i % 9 {
                0 => (Some(format!("{i}.5")), format!("f{i}")),
                3 => (Some(format!(r#""u{i}""#)), format!("s{i}")),
                6 => (Some(format!(r#"{{"u":{i}}}"#)), format!("o{i}")),
                _ => {
                    let (key, g) = variants[i as usize % variants.len()];
                    (key.map(str::to_owned), format!("v{g:02}"))
                }
            };
            let json = match &key {
                Some(k) => format!(r#"{{"n":{i},"k":{k}}}"#),
                None => format!(r#"{{"n":{i}}}"#),
            };
            b.put_json("c", &format!("d{i:05}"), json.as_bytes())
                .unwrap();
            want.entry(group)
                .or_insert_with(|| (key.unwrap_or_else(|| "null".to_owned()), Vec::new()))
                .1
                .push(i);
        }
        db.commit(b).unwrap();
        db.compact().unwrap();
        let snap = db.snapshot();
        let mut want: Vec<String> = want
            .into_values()
            .map(|(key, docs)| {
                // The writer prints a zero byte in a string as `\u0000`, as it was given.
                format!(
                    r#"{{"_id":{key},"c":{},"f":{},"l":{},"m":{}}}"#,
                    docs.len(),
                    docs[0],
                    docs[docs.len() - 1],
                    docs[docs.len() - 1]
                )
            })
            .collect();
        want.sort();
        let p = Pipeline::parse(
            r#"[{"$group": {"_id": "$k", "c": {"$sum": 1}, "f": {"$first": "$n"}, "l": {"$last": "$n"}, "m": {"$max": "$n"}}}]"#,
        )
        .unwrap();
        let mut order = None;
        for budget in [1, 64 << 10, stele::query::DEFAULT_MEMORY_BUDGET_BYTES] {
            let out = snap
                .aggregate("c", &p.clone().memory_budget(budget))
                .unwrap();
            if budget == 1 {
                assert!(out.stats.spilled_bytes > 0, "n {n}");
            }
            let mut got = out.rows.clone();
            got.sort();
            assert_eq!(got, want, "n {n} budget {budget}");
            match &order {
                None => order = Some(out.rows),
                Some(o) => assert_eq!(&out.rows, o, "n {n} budget {budget}"),
            }
        }
    }
}
