//! Import (JSON arrays, JSON Lines, folders) and export: round trips on slices of real
//! collections, ids, bad records, and all-or-nothing imports (including a failed commit
//! in the middle of an import).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;
use common::data::slice;
use std::io;
use stele::export::{ExportOptions, export_jsonl};
use stele::import::{
    IdSource, ImportError, ImportFormat, ImportOptions, ImportPhase, import_path, import_reader,
};
use stele::{Database, DatabaseOptions};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

fn export(db: &Database, coll: &str, opts: &ExportOptions) -> String {
    let mut out = Vec::new();
    export_jsonl(&db.snapshot(), coll, &mut out, opts).unwrap();
    String::from_utf8(out).unwrap()
}

fn minified(line: &str) -> String {
    stele_doc::Document::new(stele_doc::from_json(line.as_bytes()).unwrap())
        .unwrap()
        .to_json()
}

#[test]
fn export_then_import_gives_equal_data_on_real_collections() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for (file, n) in [
        ("geonames-cities.jsonl.zst", 400),
        ("mdn-compat-features.jsonl.zst", 150),
        ("emojibase.jsonl.zst", 300),
        ("github-webhooks.jsonl.zst", 25),
        ("debian-packages.jsonl.zst", 200),
        ("vega-flights-200k.jsonl.zst", 400),
    ] {
        let lines = slice(file, n);
        let text = lines.join("\n") + "\n";
        let coll = file.split('.').next().unwrap();
        let opts = ImportOptions::new().batch_docs(64);
        let report = import_reader(&db, coll, file, text.as_bytes(), None, &opts, |_| {}).unwrap();
        assert_eq!(report.documents, n as u64, "{file}");
        // Written in bulk: one switch, whatever the batch size.
        assert_eq!(report.batches, 1);
        // Counter ids keep input order, so the export is the input, minified.
        let out = export(&db, coll, &ExportOptions::new());
        let want: Vec<String> = lines.iter().map(|l| minified(l)).collect();
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{file}");
        // And importing the export gives the same collection again.
        let copy = format!("{coll}-copy");
        import_reader(&db, &copy, "export", out.as_bytes(), None, &opts, |_| {}).unwrap();
        assert_eq!(export(&db, &copy, &ExportOptions::new()), out, "{file}");
        // Ids survive through an id field added on export.
        let with_ids = export(&db, coll, &ExportOptions::new().id_field("_sid"));
        let again = format!("{coll}-ids");
        let opts = ImportOptions::new().id_field("_sid");
        import_reader(
            &db,
            &again,
            "export",
            with_ids.as_bytes(),
            None,
            &opts,
            |_| {},
        )
        .unwrap();
        let snap = db.snapshot();
        let ids = |c: &str| snap.iter(c).map(|e| e.unwrap().0).collect::<Vec<_>>();
        assert_eq!(ids(coll), ids(&again));
    }
}

/// Records kept as the JSON text they were read as (text forms) and those that are not
/// (a duplicate key, blanks, escapes, numbers spelled many ways) export as the documents
/// the import made of them, key order included, from JSON Lines and from a JSON array.
#[test]
fn records_kept_as_their_text_export_as_their_documents() {
    let shapes = [
        r#"{"z":1,"a":{"y":[1,2.50,-0,1e3,18446744073709551616],"x":null},"s":"\u00e9\n\"q\""}"#,
        r#"{"a":1,"a":2,"b":"duplicate key: the last one kept, at the first one's place"}"#,
        r#"{ "spaced" : [ true , false ] , "t" : "  blanks inside  " }   "#,
        r#"{"n":123456789012345678901234567890,"f":0.1,"e":-1.5E-7}"#,
        r#"{}"#,
    ];
    let lines: Vec<String> = (0..3000)
        .map(|i| {
            let s = shapes[i % shapes.len()];
            s.replacen('{', &format!(r#"{{"i":{i},"#), 1)
                .replace(",}", "}")
        })
        .collect();
    let want: Vec<String> = lines.iter().map(|l| minified(l)).collect();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let jsonl = lines.join("\n") + "\n";
    let array = format!("[\n  {}\n]", lines.join(" ,\n  "));
    for (coll, text) in [("lines", jsonl), ("array", array)] {
        let r = import_reader(
            &db,
            coll,
            coll,
            text.as_bytes(),
            None,
            &ImportOptions::new(),
            |_| {},
        )
        .unwrap();
        assert_eq!(r.documents, 3000, "{coll}");
        let out = export(&db, coll, &ExportOptions::new());
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{coll}");
        // Packed again by a compaction (stored forms copied or rebuilt): the same.
        db.compact().unwrap();
        let out = export(&db, coll, &ExportOptions::new());
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{coll} compacted");
    }
}

#[test]
fn json_arrays_with_id_fields_nested_and_integer() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let file = dir.path().join("in.json");
    std::fs::write(
        &file,
        "[\n  {\"meta\": {\"id\": 12}, \"v\": [1, \"],\\\"\"]},\n  {\"meta\": {\"id\": 7}, \"v\": 2.50}\n]\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    let opts = ImportOptions::new().id_field("meta.id");
    let report = import_path(&db, "t", &file, &opts, |p| seen.push(p)).unwrap();
    assert_eq!(report.documents, 2);
    let last = seen.last().unwrap();
    assert_eq!(last.phase, ImportPhase::Writing);
    assert_eq!((last.written, last.bytes_total), (2, Some(last.bytes_read)));
    let snap = db.snapshot();
    assert_eq!(
        snap.get("t", "12").unwrap().unwrap().to_json().unwrap(),
        r#"{"meta":{"id":12},"v":[1,"],\""]}"#
    );
    assert_eq!(
        snap.get("t", "7").unwrap().unwrap().to_json().unwrap(),
        r#"{"meta":{"id":7},"v":2.50}"#
    );
    // Counter ids with a prefix, and an explicit format.
    let opts = ImportOptions::new()
        .format(ImportFormat::Json)
        .id(IdSource::Counter {
            prefix: "x-".into(),
        });
    import_path(&db, "u", &file, &opts, |_| {}).unwrap();
    let snap = db.snapshot();
    let ids: Vec<String> = snap.iter("u").map(|e| e.unwrap().0).collect();
    assert_eq!(ids, ["x-0000000001", "x-0000000002"]);
}

#[test]
fn folders_of_json_files_use_file_stems() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("ada.json"), r#"{"name":"Ada"}"#).unwrap();
    std::fs::write(docs.join("bob.json"), "{\n \"name\": \"Bob\"\n}").unwrap();
    std::fs::write(docs.join("notes.txt"), "not json").unwrap();
    let report = import_path(&db, "people", &docs, &ImportOptions::new(), |_| {}).unwrap();
    assert_eq!(report.documents, 2);
    let snap = db.snapshot();
    assert_eq!(
        snap.get("people", "bob")
            .unwrap()
            .unwrap()
            .to_json()
            .unwrap(),
        r#"{"name":"Bob"}"#
    );
    // A bad file names itself and its line.
    std::fs::write(docs.join("carl.json"), "{\n \"name\": }").unwrap();
    let err = import_path(&db, "people2", &docs, &ImportOptions::new(), |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("carl.json:2:10"), "{msg}");
    assert_eq!(db.snapshot().count("people2"), 0);
}

#[test]
fn a_record_cut_off_at_its_line_break_is_placed_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for (text, at) in [
        (
            "{\"a\":1}\n{\"a\":2,\n{\"a\":3}\n",
            "in.jsonl:2:8: record 2",
        ),
        ("{\"a\":1}\r\n{\"a\":\r\n", "in.jsonl:2:6: record 2"),
        ("{\"a\":1}\n[1,\n", "in.jsonl:2:4: record 2"),
    ] {
        let opts = ImportOptions::new();
        let err =
            import_reader(&db, "c", "in.jsonl", text.as_bytes(), None, &opts, |_| {}).unwrap_err();
        assert!(err.to_string().starts_with(at), "{text:?}: {err}");
    }
    assert_eq!(db.snapshot().count("c"), 0);
}

#[test]
fn a_bad_record_stops_and_nothing_stays_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    batch.put_json("c", "0000000001", br#"{"old":1}"#).unwrap();
    db.commit(batch).unwrap();
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!("{{\"n\":{i}}}\n"));
    }
    text.push_str("\n{\"n\": tru}\n{\"n\":99}\n");
    let opts = ImportOptions::new().batch_docs(7);
    let err =
        import_reader(&db, "c", "in.jsonl", text.as_bytes(), None, &opts, |_| {}).unwrap_err();
    let ImportError::BadRecord(bad) = &err else {
        panic!("{err}")
    };
    assert_eq!((bad.line, bad.column, bad.record), (52, Some(7), 51));
    assert!(
        err.to_string()
            .starts_with("in.jsonl:52:7: record 51: invalid JSON"),
        "{err}"
    );
    let snap = db.snapshot();
    assert_eq!(snap.count("c"), 1);
    assert_eq!(
        snap.get("c", "0000000001")
            .unwrap()
            .unwrap()
            .to_json()
            .unwrap(),
        r#"{"old":1}"#
    );
    // Skipping instead: counted and listed.
    let opts = opts.skip_bad(true);
    let report = import_reader(&db, "c", "in.jsonl", text.as_bytes(), None, &opts, |_| {}).unwrap();
    assert_eq!((report.documents, report.skipped), (51, 1));
    assert_eq!(report.bad[0].line, 52);
    // Ids count bad records too: the last good one is record 52.
    assert!(db.snapshot().contains("c", "0000000052").unwrap());
    // Missing or unusable id fields are bad records with their line.
    let text = "{\"id\":\"a\"}\n{\"id\":[1]}\n{\"x\":1}\n";
    let opts = ImportOptions::new().id_field("id");
    let err =
        import_reader(&db, "d", "ids.jsonl", text.as_bytes(), None, &opts, |_| {}).unwrap_err();
    assert!(
        err.to_string()
            .contains("ids.jsonl:2: record 2: id field \"id\" is a array"),
        "{err}"
    );
    let report = import_reader(
        &db,
        "d",
        "ids.jsonl",
        text.as_bytes(),
        None,
        &opts.skip_bad(true),
        |_| {},
    )
    .unwrap();
    assert_eq!(report.skipped, 2);
    assert!(report.bad[1].reason.contains("no id field"));
    // Malformed arrays stop even when skipping.
    let err = import_reader(
        &db,
        "e",
        "a.json",
        "[{\"a\":1},\n{\"a\":2},]".as_bytes(),
        None,
        &ImportOptions::new().skip_bad(true),
        |_| {},
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with("a.json:2: a comma before"),
        "{err}"
    );
    assert_eq!(db.snapshot().count("e"), 0);
    // Blank lines before the first record count (the format is detected after them).
    for (name, text) in [
        ("lead.jsonl", "\n\n{\"a\":1}\n{bad}\n"),
        ("lead.json", "\n\n[{\"a\":1},\n {bad}]"),
    ] {
        let opts = ImportOptions::new();
        let err = import_reader(&db, "f", name, text.as_bytes(), None, &opts, |_| {}).unwrap_err();
        let ImportError::BadRecord(bad) = &err else {
            panic!("{err}")
        };
        assert_eq!((bad.line, bad.record), (4, 2), "{err}");
    }
}

#[test]
fn a_failed_commit_mid_import_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    batch.put_json("c", "0000000003", br#"{"old":3}"#).unwrap();
    batch.put_json("c", "keep", br#"{"old":0}"#).unwrap();
    db.commit(batch).unwrap();
    drop(db);
    // The third batch's log sync fails: the first two batches must be undone.
    // (The third sync of a log file, counted from 0 as 2, fails once; the log appends.)
    let faults = Faults::new()
        .kinds(&[Op::Sync, Op::SyncData])
        .only(|path| path.extension().is_some_and(|e| e == "log"))
        .fail_at(2)
        .error(io::ErrorKind::StorageFull)
        .shared();
    let db = Database::open_with(
        dir.path(),
        DatabaseOptions::default().storage(FaultyStorage::appending_log(&faults)),
    )
    .unwrap();
    let text: String = (0..40).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let mut phases = Vec::new();
    // The staged write (bulk writes do not commit through the log; see import_bulk.rs).
    let opts = ImportOptions::new().batch_docs(10).bulk(false);
    let err = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |p| {
        phases.push(p.phase);
    })
    .unwrap_err();
    assert!(matches!(err, ImportError::Database(_)), "{err}");
    assert!(phases.contains(&ImportPhase::RollingBack));
    let check = |db: &Database| {
        let snap = db.snapshot();
        let all: Vec<(String, String)> = snap
            .iter("c")
            .map(|e| {
                let (id, doc) = e.unwrap();
                (id, doc.to_json().unwrap())
            })
            .collect();
        assert_eq!(
            all,
            [
                ("0000000003".to_owned(), r#"{"old":3}"#.to_owned()),
                ("keep".to_owned(), r#"{"old":0}"#.to_owned())
            ]
        );
    };
    check(&db);
    drop(db);
    check(&Database::open(dir.path()).unwrap());
}

/// With packing on (the default), an import trains the collection's dictionary on a
/// sample of its own input, so that a collection written in one import has a dictionary
/// when the import returns (and keeps it after reopening); its blocks use it.
#[test]
fn an_import_into_a_new_collection_leaves_it_a_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let text = slice("geonames-cities.jsonl.zst", 20_000).join("\n") + "\n";
    {
        let db = Database::open(dir.path()).unwrap();
        let report = import_reader(
            &db,
            "cities",
            "cities.jsonl",
            text.as_bytes(),
            None,
            &ImportOptions::new(),
            |_| {},
        )
        .unwrap();
        assert_eq!(report.documents, 20_000);
        assert!(db.snapshot().dictionaries("cities") >= 1);
    }
    let db = Database::open(dir.path()).unwrap();
    assert!(db.snapshot().dictionaries("cities") >= 1);
    assert_eq!(db.snapshot().count("cities"), 20_000);
}
