//! Real data: every file of the JSON benchmark corpus and the first 2,000 documents of every
//! collection round-trip exactly (value equality, and byte equality for minified input).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use crate::common;

#[test]
fn json_corpus_round_trips() {
    let dir = common::data_dir().join("json-corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "corpus has {} files", files.len());
    for path in files {
        let input = std::fs::read(&path).unwrap();
        common::round_trip(&input);
        common::byte_exact(&input);
    }
}

#[test]
fn collections_round_trip() {
    for path in common::collection_files() {
        let lines = common::zst_lines(&path, 2000);
        assert!(!lines.is_empty(), "{}", path.display());
        let mut w = stele_doc::DocumentWriter::new();
        for (n, line) in lines.iter().enumerate() {
            let bytes = w
                .from_json(line.as_bytes())
                .unwrap_or_else(|e| panic!("{} line {}: {e}", path.display(), n + 1));
            let doc = stele_doc::Document::new(bytes.as_slice()).unwrap();
            assert_eq!(
                common::exact(doc.to_json().as_bytes()),
                common::exact(line.as_bytes()),
                "{} line {}",
                path.display(),
                n + 1
            );
            common::byte_exact(line.as_bytes());
        }
    }
}
