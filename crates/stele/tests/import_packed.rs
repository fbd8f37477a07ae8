//! Compressed inputs: a zstd-compressed JSON or JSON Lines file (or stream) imports as its
//! text does; an input packed in a way the import does not read (gzip, bzip2, xz, zip,
//! Parquet) is refused at its first bytes with what it is and how to unpack it, and
//! nothing lands; a cut or corrupt zstd input fails as a read error, nothing landing.

use crate::common;
use common::data::slice;
use stele::Database;
use stele::export::{ExportOptions, export_jsonl};
use stele::import::{ImportError, ImportOptions, import_path, import_reader};

fn export(db: &Database, coll: &str) -> String {
    let mut out = Vec::new();
    export_jsonl(&db.snapshot(), coll, &mut out, &ExportOptions::new()).unwrap();
    String::from_utf8(out).unwrap()
}

/// `text` as zstd frames of at most `frame_bytes` of it each (a file concatenated from
/// several frames, as `zstd` writes for `cat a.zst b.zst`).
fn zstd_frames(text: &[u8], frame_bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.chunks(frame_bytes) {
        out.extend(zstd::encode_all(part, 3).unwrap());
    }
    out
}

#[test]
fn zstd_compressed_files_and_streams_import_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    // Enough documents for a dictionary (over 1 MiB of JSON), in JSON Lines and as one
    // JSON array.
    let lines = slice("geonames-cities.jsonl.zst", 12_000);
    let jsonl = lines.join("\n") + "\n";
    assert!(jsonl.len() > 1 << 20);
    let array = format!("[{}]", lines.join(",\n"));
    let opts = ImportOptions::new();
    for (name, text) in [("lines", jsonl.as_bytes()), ("array", array.as_bytes())] {
        let plain = dir.path().join(format!("{name}.json"));
        std::fs::write(&plain, text).unwrap();
        let packed = dir.path().join(format!("{name}.json.zst"));
        std::fs::write(&packed, zstd_frames(text, 300_000)).unwrap();
        let want = import_path(&db, &format!("{name}-plain"), &plain, &opts, |_| {}).unwrap();
        let got = import_path(&db, &format!("{name}-zst"), &packed, &opts, |_| {}).unwrap();
        assert_eq!(got.documents, 12_000, "{name}");
        assert_eq!(got.documents, want.documents, "{name}");
        // The bytes read are the text's, not the compressed file's.
        assert_eq!(got.bytes_read, text.len() as u64, "{name}");
        let plain_docs = export(&db, &format!("{name}-plain"));
        assert_eq!(export(&db, &format!("{name}-zst")), plain_docs, "{name}");
        // The same through a reader (standard input).
        let stream = std::fs::File::open(&packed).unwrap();
        let coll = format!("{name}-stream");
        import_reader(&db, &coll, "<stdin>", stream, None, &opts, |_| {}).unwrap();
        assert_eq!(export(&db, &coll), plain_docs, "{name}");
    }
    // Ids from a field, out of order: the sorted path reads the decoder as well.
    let mut shuffled = lines.clone();
    shuffled.reverse();
    let text = shuffled.join("\n");
    let packed = dir.path().join("ids.jsonl.zst");
    std::fs::write(&packed, zstd_frames(text.as_bytes(), 1 << 20)).unwrap();
    let by_id = ImportOptions::new().id_field("name");
    let report = import_path(&db, "ids", &packed, &by_id, |_| {}).unwrap();
    let plain = dir.path().join("ids.jsonl");
    std::fs::write(&plain, &text).unwrap();
    let want = import_path(&db, "ids-plain", &plain, &by_id, |_| {}).unwrap();
    assert_eq!(report.documents, want.documents);
    assert_eq!(export(&db, "ids"), export(&db, "ids-plain"));
}

#[test]
fn inputs_packed_otherwise_are_refused_with_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "a.jsonl.gz",
            &[0x1F, 0x8B, 8, 0, 0, 0, 0, 0],
            "gzip-compressed",
        ),
        ("a.jsonl.bz2", b"BZh91AY&SY", "bzip2-compressed"),
        (
            "a.jsonl.xz",
            &[0xFD, b'7', b'z', b'X', b'Z', 0, 0, 4],
            "xz-compressed",
        ),
        ("a.zip", b"PK\x03\x04\x14\x00", "a zip archive"),
        ("a.parquet", b"PAR1\x15\x04", "a Parquet file"),
    ];
    for (name, bytes, what) in cases {
        assert!(
            bytes.len() >= 6,
            "{name}: the magic and a byte or two after it"
        );
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let err = import_path(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap_err();
        match &err {
            ImportError::Malformed { line, reason, .. } => {
                assert_eq!(*line, 1, "{name}");
                assert!(reason.contains(what), "{name}: {reason}");
            }
            other => panic!("{name}: {other:?}"),
        }
        let shown = err.to_string();
        assert!(shown.contains("nothing was imported"), "{shown}");
        // Parquet points to its own import; the others say how to unpack.
        if name.ends_with(".parquet") {
            assert!(shown.contains("--format parquet"), "{shown}");
        } else {
            assert!(shown.contains("| stele import DB COLL -"), "{shown}");
        }
        // A stream says the same.
        let err = import_reader(
            &db,
            "c",
            "<stdin>",
            bytes,
            None,
            &ImportOptions::new(),
            |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains(what), "{err}");
    }
    assert!(db.snapshot().collections().is_empty());
    // Text that only starts like one of them is JSON Lines: its first line a bad record,
    // skipped with --skip-bad.
    let skip = ImportOptions::new().skip_bad(true);
    for (i, first) in ["BZh9 not bzip2", "PAR1 not parquet", "PAR1", "P*M not zstd"]
        .iter()
        .enumerate()
    {
        let text = format!("{first}\n{{\"a\": 1}}\n");
        let coll = format!("t{i}");
        let report = import_reader(&db, &coll, "text", text.as_bytes(), None, &skip, |_| {});
        let report = report.unwrap();
        assert_eq!((report.documents, report.skipped), (1, 1), "{first}");
    }
}

#[test]
fn cut_or_corrupt_zstd_input_fails_and_lands_nothing() {
    // Frames without their sizes (read as a stream), and with them on an input big enough
    // to be sampled through a decoder first (the corruption is then met by the sample).
    let small = slice("mongodb-zips.jsonl.zst", 5_000).join("\n") + "\n";
    let big = slice("geonames-cities.jsonl.zst", 50_000).join("\n") + "\n";
    let cases = [
        (5_000, zstd::encode_all(small.as_bytes(), 3).unwrap()),
        (50_000, zstd_sized_frames(big.as_bytes(), big.len())),
    ];
    for (docs, whole) in cases {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();
        let mut corrupt = whole.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle..middle + 64].fill(0xA5);
        for (name, bytes) in [
            ("cut", &whole[..whole.len() / 2]),
            ("header only", &whole[..4]),
            ("corrupt", corrupt.as_slice()),
        ] {
            let path = dir.path().join("in.zst");
            std::fs::write(&path, bytes).unwrap();
            let err = import_path(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap_err();
            // Without a checksum in the frame, zstd may decode corrupt bytes into text that
            // is then a bad record: the import fails either way, nothing landing.
            let bad_text = name == "corrupt" && matches!(err, ImportError::BadRecord(_));
            assert!(
                matches!(err, ImportError::Read { .. }) || bad_text,
                "{docs} {name}: {err:?}"
            );
            assert!(
                err.to_string().contains("nothing was imported"),
                "{docs} {name}: {err}"
            );
            assert!(db.snapshot().collections().is_empty(), "{docs} {name}");
        }
        // The database is as it was: the whole file then imports.
        let path = dir.path().join("in.zst");
        std::fs::write(&path, &whole).unwrap();
        let report = import_path(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap();
        assert_eq!(report.documents, docs);
    }
}

/// `text` as zstd frames of at most `frame_bytes` of it each that give their content size,
/// as `zstd FILE` writes them.
fn zstd_sized_frames(text: &[u8], frame_bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.chunks(frame_bytes) {
        out.extend(zstd::bulk::compress(part, 3).unwrap());
    }
    out
}

#[test]
fn a_zstd_file_whose_frames_give_their_sizes_is_packed_while_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    // Over 4 MiB of documents: an import big enough to be packed while read.
    let lines = slice("geonames-cities.jsonl.zst", 50_000);
    let text = lines.join("\n") + "\n";
    let opts = ImportOptions::new();
    let plain = dir.path().join("n.jsonl");
    std::fs::write(&plain, &text).unwrap();
    let want = import_path(&db, "plain", &plain, &opts, |_| {}).unwrap();
    assert!(want.packed_while_reading);
    // Numbered, in one frame and in several: packed while read, as the text file is.
    for (name, frame_bytes) in [("one", text.len()), ("many", 250_000)] {
        let packed = dir.path().join(format!("{name}.jsonl.zst"));
        std::fs::write(&packed, zstd_sized_frames(text.as_bytes(), frame_bytes)).unwrap();
        let got = import_path(&db, name, &packed, &opts, |_| {}).unwrap();
        assert!(got.packed_while_reading, "{name}");
        assert!(!got.restarted_sorted, "{name}");
        assert_eq!(got.documents, 50_000, "{name}");
        assert_eq!(got.bytes_read, text.len() as u64, "{name}");
        assert_eq!(export(&db, name), export(&db, "plain"), "{name}");
    }
    // A skippable frame first (as some tools write one): recognised as zstd, the same.
    let mut skippable = 0x184D_2A5Eu32.to_le_bytes().to_vec();
    skippable.extend(3u32.to_le_bytes());
    skippable.extend(b"abc");
    skippable.extend(zstd_sized_frames(text.as_bytes(), 250_000));
    let first_skipped = dir.path().join("skippable.jsonl.zst");
    std::fs::write(&first_skipped, skippable).unwrap();
    let got = import_path(&db, "skippable", &first_skipped, &opts, |_| {}).unwrap();
    assert!(got.packed_while_reading);
    assert_eq!(export(&db, "skippable"), export(&db, "plain"));
    // A JSON array in sized frames: not sampled (only JSON Lines are), the same documents.
    let array = format!("[{}]", lines.join(",\n"));
    let array_file = dir.path().join("array.json.zst");
    std::fs::write(&array_file, zstd_sized_frames(array.as_bytes(), 250_000)).unwrap();
    let got = import_path(&db, "array", &array_file, &opts, |_| {}).unwrap();
    assert!(!got.packed_while_reading);
    assert_eq!(got.documents, 50_000);
    assert_eq!(export(&db, "array"), export(&db, "plain"));
    // Frames without their sizes: read as a stream, sorted, the same documents.
    let unsized_file = dir.path().join("unsized.jsonl.zst");
    std::fs::write(&unsized_file, zstd_frames(text.as_bytes(), 250_000)).unwrap();
    let got = import_path(&db, "unsized", &unsized_file, &opts, |_| {}).unwrap();
    assert!(!got.packed_while_reading);
    assert_eq!(export(&db, "unsized"), export(&db, "plain"));

    // Ids from a field that ascend: packed while read; one pair out of order between the
    // sample's places: started again, sorted, with the same documents as the text file's.
    let keyed: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{{\"k\":\"{i:08}\",{}", l.trim_start_matches('{')))
        .collect();
    let mut swapped = keyed.clone();
    swapped.swap(100, 101);
    let by_k = ImportOptions::new().id_field("k");
    for (name, rows, streamed) in [("asc", &keyed, true), ("swapped", &swapped, false)] {
        let text = rows.join("\n") + "\n";
        let plain = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&plain, &text).unwrap();
        import_path(&db, &format!("{name}-plain"), &plain, &by_k, |_| {}).unwrap();
        let packed = dir.path().join(format!("{name}.jsonl.zst"));
        std::fs::write(&packed, zstd_sized_frames(text.as_bytes(), 300_000)).unwrap();
        let got = import_path(&db, name, &packed, &by_k, |_| {}).unwrap();
        assert_eq!(got.packed_while_reading, streamed, "{name}");
        assert_eq!(got.restarted_sorted, !streamed, "{name}");
        assert_eq!(got.documents, 50_000, "{name}");
        assert_eq!(
            export(&db, name),
            export(&db, &format!("{name}-plain")),
            "{name}"
        );
    }
}
