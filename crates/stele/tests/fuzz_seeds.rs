//! Seeds of the fuzz targets in `fuzz/` that read stored bytes, made by the real writers
//! (a database, a durable store, the table builder, the document writer and its stream
//! form, the compressor, the block packer, the dictionary trainer, the index). Needs the
//! `fuzzing` feature:
//!
//! ```text
//! STELE_WRITE_FUZZ_SEEDS=1 cargo test -p stele --features fuzzing --test fuzz_seeds
//! ```
//!
//! writes them to `fuzz/corpus/<target>/seed<n>` (replacing the `seed*` files there; other
//! files are hand-made inputs, kept). Without the variable the test checks that the
//! committed seeds are exactly what the writers make now: a change of a format (a new
//! version) fails it until the seeds are written again, so that the fuzz targets start
//! from the current version. Older versions the readers still take have seeds of their
//! own (the manifest's versions 2 and 3, laid out as the current one).

#![cfg(feature = "fuzzing")]
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use stele::compress::{
    BlockPacker, Dictionaries, dictionary_from_stored, dictionary_to_stored, train_dictionary,
};
use stele::compress::{CompressOptions, Compressor, Decoder, encode_raw};
use stele::fuzzing::{
    MANIFEST_VERSION, SEED_DICTIONARY, index_keys, manifest_as_version, manifest_meaning,
    manifest_version, parse_dictionary_key, read_index_block, read_log_segment, read_packed_block,
    reencode_manifest, split_index_key, tail_log_segment, write_index_block,
};
use stele::{Database, DatabaseOptions};
use stele_durable::{Kind, RootInfo, Store};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn doc(json: &str) -> Vec<u8> {
    stele_doc::from_json(json.as_bytes()).unwrap()
}

/// The log segments of the database in `dir`, each cut 16 bytes after its last record (the
/// writer keeps 1 MiB of zeroes there).
fn log_segments(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let mut bytes = std::fs::read(p).unwrap();
            let valid = read_log_segment(&bytes).unwrap().valid;
            bytes.truncate(valid + 16);
            bytes
        })
        .collect()
}

/// `[len] | key | value`: how the packed block and dictionary targets take a key and a value.
fn keyed(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = vec![u8::try_from(key.len()).unwrap()];
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

fn database_seeds(dir: &Path) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let opts = DatabaseOptions::default()
        .background_compaction(false)
        .background_training(false);
    let path = dir.join("db");
    let db = Database::open_with(&path, opts).unwrap();
    db.checkpoint().unwrap();
    let mut manifests = vec![std::fs::read(path.join("MANIFEST")).unwrap()];
    let mut b = db.batch();
    b.put_json(
        "books",
        "b1",
        br#"{"title":"Dune","year":1965,"tags":["sf"]}"#,
    )
    .unwrap();
    b.put_json("books", "b2", br#"{"title":"Emma","year":1815}"#)
        .unwrap();
    b.put_json("authors", "a1", br#"{"name":"Austen"}"#)
        .unwrap();
    db.commit(b).unwrap();
    db.create_index("books", "by_year", &["year", "tags[]"])
        .unwrap();
    let mut logs = log_segments(&path);
    db.checkpoint().unwrap();
    manifests.push(std::fs::read(path.join("MANIFEST")).unwrap());
    let mut b = db.batch();
    b.delete("books", "b2").unwrap();
    b.put_json("books", "b3", br#"{"title":"Ubik","year":1969}"#)
        .unwrap();
    db.commit(b).unwrap();
    db.drop_index("books", "by_year").unwrap();
    logs.extend(log_segments(&path));
    // The older versions the reader takes and writes again as the current one: versions 2
    // and 3 are laid out as 4 (`manifest.rs`), so the writer's bytes with the older version.
    let older: Vec<Vec<u8>> = [2, 3]
        .iter()
        .flat_map(|&v| manifests.iter().map(move |m| manifest_as_version(m, v)))
        .collect();
    manifests.extend(older);
    (logs, manifests)
}

/// Documents of several shapes (every kind of value, nesting, long and short strings).
const DOCUMENTS: [&str; 6] = [
    r#"{"id":1,"name":"Ada","tags":["x","y"],"ok":true,"none":null,"score":-2.5}"#,
    r#"{"a":{"b":{"c":[1,2,{"d":"deep"}]}},"e":[]}"#,
    r#"[1,"two",3.0,false,{"k":"v"}]"#,
    r#""a lone string with some length to it, repeated repeated repeated""#,
    r#"{"n":12345678901234567890,"small":0,"neg":-1,"exp":1e300}"#,
    r#"{"text":"caf\u00e9 \ud83d\ude00","empty":"","o":{}}"#,
];

fn document_seeds() -> Vec<Vec<u8>> {
    DOCUMENTS.iter().map(|json| doc(json)).collect()
}

fn stream_seeds() -> Vec<Vec<u8>> {
    let mut w = stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options());
    DOCUMENTS
        .iter()
        .filter_map(|json| {
            let bytes = doc(json);
            let mut out = Vec::new();
            let d = stele_doc::Document::new(bytes.as_slice()).unwrap();
            stele_doc::stream::encode(&d, &mut w, &mut out).then_some(out)
        })
        .collect()
}

/// Stored values as the compressor writes them: raw, zstd, zstd with the seed dictionary,
/// and blocks (plain, keyed, stream) as the packer writes them.
fn stored_value_seeds() -> Vec<Vec<u8>> {
    let docs: Vec<Vec<u8>> = DOCUMENTS.iter().map(|json| doc(json)).collect();
    let mut seeds = Vec::new();
    let mut raw = Vec::new();
    encode_raw(&docs[0], &mut raw);
    seeds.push(raw);
    let mut compressor = Compressor::new(CompressOptions::default()).unwrap();
    seeds.push(compressor.compress(&docs[1]).unwrap());
    let big = doc(&format!(r#"{{"text":"{}"}}"#, "stele ".repeat(200)));
    seeds.push(compressor.compress(&big).unwrap());
    let ids: Vec<Vec<u8>> = (0..docs.len())
        .map(|i| format!("d{i}").into_bytes())
        .collect();
    let ids: Vec<&[u8]> = ids.iter().map(Vec::as_slice).collect();
    let docs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let mut block = Vec::new();
    for (dictionary, streams) in [
        (None, true),
        (None, false),
        (Some((1, SEED_DICTIONARY)), false),
    ] {
        let mut packer = BlockPacker::new(3, dictionary).unwrap().streams(streams);
        packer.pack_documents(&ids, &docs, &mut block).unwrap();
        seeds.push(block.clone());
    }
    let entries: Vec<&[u8]> = ids.iter().chain(&docs).copied().collect();
    BlockPacker::new(3, None)
        .unwrap()
        .pack(&entries, &mut block)
        .unwrap();
    seeds.push(block);
    seeds
}

/// Tables as the builder writes them: small blocks, so that there are several, and one
/// table of a single entry.
fn table_seeds(dir: &Path) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (n, name) in [(40u32, "many"), (1, "one")] {
        let out = dir.join(name);
        std::fs::create_dir_all(&out).unwrap();
        let opts = stele_table::TableOptions::default().block_size_bytes(256);
        let mut b = stele_table::TableBuilder::new(&out, opts).unwrap();
        for i in 0..n {
            let value = format!("value {i} {}", "v".repeat(i as usize % 9));
            b.add(format!("key{i:04}").as_bytes(), value.as_bytes())
                .unwrap();
        }
        seeds.push(std::fs::read(b.finish().unwrap().path).unwrap());
    }
    seeds
}

fn root_seeds(dir: &Path) -> Vec<Vec<u8>> {
    let store = Store::open(dir.join("store")).unwrap();
    let mut map = store.new_map();
    map.put(b"k", b"v").unwrap();
    let first = map.save().unwrap();
    store.switch_root("m", None, first, Kind::Map).unwrap();
    let mut seeds = vec![std::fs::read(store.dir().join("roots/m")).unwrap()];
    map.put(b"k2", b"v2").unwrap();
    let second = map.save().unwrap();
    store
        .switch_root("m", Some(first), second, Kind::Map)
        .unwrap();
    seeds.push(std::fs::read(store.dir().join("roots/m")).unwrap());
    let mut list = store.new_list();
    list.push(b"x").unwrap();
    let id = list.save().unwrap();
    store.switch_root("l", None, id, Kind::List).unwrap();
    seeds.push(std::fs::read(store.dir().join("roots/l")).unwrap());
    seeds
}

fn packed_block_seeds() -> Vec<Vec<u8>> {
    let docs: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            doc(&format!(
                r#"{{"id":{i},"name":"user number {i}","email":"user{i}@example.com","tags":["a","b"],"score":{i}.5}}"#
            ))
        })
        .collect();
    let docs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let ids: Vec<Vec<u8>> = (0..6).map(|i| format!("u{i:03}").into_bytes()).collect();
    let ids: Vec<&[u8]> = ids.iter().map(Vec::as_slice).collect();
    let last = ids[5];
    let value = |number: u64, block: &[u8]| {
        let mut v = Vec::new();
        stele_table::varint::put(&mut v, number);
        v.extend_from_slice(block);
        keyed(last, &v)
    };
    let mut seeds = Vec::new();
    let mut block = Vec::new();
    // Stream forms (a trial packs both ways and keeps the smaller), documents, a dictionary.
    let mut packer = BlockPacker::new(9, None).unwrap();
    packer.pack_documents(&ids, &docs, &mut block).unwrap();
    seeds.push(value(1, &block));
    let mut packer = BlockPacker::new(9, None).unwrap().streams(false);
    packer.pack_documents(&ids, &docs, &mut block).unwrap();
    seeds.push(value(2, &block));
    let mut packer = BlockPacker::new(9, Some((1, SEED_DICTIONARY)))
        .unwrap()
        .streams(false);
    packer.pack_documents(&ids, &docs, &mut block).unwrap();
    seeds.push(value(300, &block));
    // Codec 3, as packed before keyed blocks: the ids, then the documents.
    let entries: Vec<&[u8]> = ids.iter().chain(&docs).copied().collect();
    BlockPacker::new(9, None)
        .unwrap()
        .pack(&entries, &mut block)
        .unwrap();
    seeds.push(value(4, &block));
    // A text block of an import with ids from a field: texts without the id field
    // (elided text forms), the field first, in the middle and last in turn.
    let elided: Vec<Vec<u8>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let id = String::from_utf8(id.to_vec()).unwrap();
            let text = match i % 3 {
                0 => format!(r#"{{"uid":"{id}","email":"user{i}@example.com"}}"#),
                1 => format!(r#"{{"n":{i},"uid":"{id}","tags":["a"]}}"#),
                _ => format!(r#"{{"n":{i},"uid":"{id}"}}"#),
            };
            let mut out = Vec::new();
            assert!(stele::compress::elide::cut(
                text.as_bytes(),
                "uid",
                stele::IdKind::Text,
                &mut out
            ));
            out
        })
        .collect();
    let elided: Vec<&[u8]> = elided.iter().map(Vec::as_slice).collect();
    let mut packer = BlockPacker::new(9, None).unwrap();
    packer.pack_documents(&ids, &elided, &mut block).unwrap();
    seeds.push(value(5, &block));
    seeds
}

fn dictionary_seeds() -> Vec<Vec<u8>> {
    let samples: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            doc(&format!(
                r#"{{"id":{i},"kind":"order","customer":"c{}","total":{}.25,"lines":[{{"sku":"s{}","qty":{}}}]}}"#,
                i % 17,
                i * 3,
                i % 11,
                i % 5
            ))
        })
        .collect();
    let samples: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let (trained, _) = train_dictionary(&samples, 2048, 3, None, None).unwrap();
    vec![
        keyed(b"dict/orders/0000000001", &trained),
        keyed(b"dict/books/0000000007", SEED_DICTIONARY),
        // As the database stores a trained dictionary: compressed.
        keyed(
            b"dict/orders/0000000002",
            &dictionary_to_stored(&trained).unwrap(),
        ),
    ]
}

/// Blocks of index keys as packing writes them: the keys of a few documents' indexes.
fn index_block_seeds() -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for (i, json) in [
        r#"{"a":[1,-2.5,"x\u0000y",null,true],"b":{"c":false}}"#,
        r#"{"a":"Oslo","b":{"c":"Oslo"}}"#,
        r#"{"a":["Bergen","Oslo",7]}"#,
    ]
    .iter()
    .enumerate()
    {
        let id = format!("doc-{i:04}");
        keys.extend(index_keys(&["a[]"], &doc(json), id.as_bytes()).unwrap());
    }
    keys.sort();
    keys.dedup();
    vec![
        write_index_block(&keys).unwrap(),
        write_index_block(&keys[..1]).unwrap(),
    ]
}

fn index_key_seeds() -> Vec<Vec<u8>> {
    let json = r#"{"a":[1,-2.5,"x\u0000y",null,true],"b":{"c":false},"n":1e300}"#;
    let mut seeds = vec![json.as_bytes().to_vec()];
    for (fields, id) in [
        (&["a[]"][..], "d1"),
        (&["a[]", "b.c"], "d2"),
        (&["n", "a[]"], ""),
    ] {
        let keys = index_keys(fields, &doc(json), id.as_bytes()).unwrap();
        // Byte 0 picks the number of fields: (byte % 16) + 1.
        let first = u8::try_from(fields.len() - 1).unwrap();
        seeds.extend(keys.iter().take(2).map(|k| [&[first][..], k].concat()));
    }
    seeds
}

fn all_seeds() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let dir = tempfile::tempdir().unwrap();
    let (logs, manifests) = database_seeds(dir.path());
    // The tailing target: a step of 7 bytes, then the segment.
    let tails = logs.iter().map(|l| [&[6u8][..], l].concat()).collect();
    vec![
        ("log_segment", logs),
        ("log_tail", tails),
        ("manifest", manifests),
        ("root", root_seeds(dir.path())),
        ("packed_block", packed_block_seeds()),
        ("dictionary", dictionary_seeds()),
        ("index_key", index_key_seeds()),
        ("index_block", index_block_seeds()),
        ("document", document_seeds()),
        ("stream", stream_seeds()),
        ("stored_value", stored_value_seeds()),
        ("table", table_seeds(dir.path())),
    ]
}

/// Whether `seed` reads as a valid input of `target`.
fn reads(target: &str, seed: &[u8]) -> bool {
    let (key, value) = match seed.split_first() {
        Some((&n, rest)) if rest.len() >= usize::from(n) => rest.split_at(usize::from(n)),
        _ => (&[][..], &[][..]),
    };
    match target {
        "log_segment" => read_log_segment(seed).is_ok_and(|s| s.batches > 0 && s.stopped.is_none()),
        "log_tail" => seed.split_first().is_some_and(|(&step, bytes)| {
            tail_log_segment(bytes, usize::from(step) + 1).is_ok_and(|t| {
                t.batches > 0 && read_log_segment(bytes).is_ok_and(|w| w.reencoded == t.reencoded)
            })
        }),
        "manifest" => reencode_manifest(seed).is_ok_and(|again| {
            if manifest_version(seed) == Some(MANIFEST_VERSION) {
                again == seed
            } else {
                manifest_meaning(&again).ok() == manifest_meaning(seed).ok()
            }
        }),
        "document" => stele_doc::Document::new(seed).is_ok(),
        "stream" => {
            let mut w = stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options());
            stele_doc::stream::decode(seed, &mut w).is_ok()
        }
        "stored_value" => {
            let mut dicts = Dictionaries::new();
            dicts.insert(1, SEED_DICTIONARY).unwrap();
            let mut dec = Decoder::new().unwrap();
            dec.decode(seed, &dicts).is_ok() || dec.decode_block(seed, &dicts).is_ok()
        }
        "table" => {
            stele_table::Table::from_bytes(seed.to_vec()).is_ok_and(|t| t.verify_all().is_ok())
        }
        "root" => RootInfo::decode(seed, Path::new("r")).is_ok(),
        "packed_block" => {
            let mut dicts = Dictionaries::new();
            dicts.insert(1, SEED_DICTIONARY).unwrap();
            read_packed_block(key, value, &dicts).is_ok()
        }
        "dictionary" => parse_dictionary_key(key).is_some_and(|(_, id)| {
            let mut dicts = Dictionaries::new();
            dictionary_from_stored(value).is_ok_and(|d| dicts.insert(id, &d).is_ok())
        }),
        "index_block" => read_index_block(seed).is_ok_and(|keys| !keys.is_empty()),
        "index_key" => {
            stele_doc::from_json(seed).is_ok()
                || split_index_key(usize::from(seed[0] % 16) + 1, &seed[1..]).is_some()
        }
        _ => false,
    }
}

/// The committed seeds of `target` made by the writers: its `seed<n>` files, by number.
fn committed(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut seeds: Vec<(usize, PathBuf)> = std::fs::read_dir(corpus(target))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let n = p
                .file_name()?
                .to_str()?
                .strip_prefix("seed")?
                .parse()
                .ok()?;
            Some((n, p))
        })
        .collect();
    seeds.sort();
    seeds
        .into_iter()
        .map(|(_, p)| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn seeds_are_made_by_the_writers_and_read() {
    let seeds = all_seeds();
    for (target, made) in &seeds {
        assert!(!made.is_empty());
        for (i, seed) in made.iter().enumerate() {
            assert!(reads(target, seed), "{target} seed {i} as made");
        }
    }
    if std::env::var_os("STELE_WRITE_FUZZ_SEEDS").is_some() {
        for (target, made) in &seeds {
            let dir = corpus(target);
            std::fs::create_dir_all(&dir).unwrap();
            for (path, _) in committed(target) {
                std::fs::remove_file(path).unwrap();
            }
            for (i, seed) in made.iter().enumerate() {
                std::fs::write(dir.join(format!("seed{i}")), seed).unwrap();
            }
        }
        return;
    }
    for (target, made) in &seeds {
        let committed = committed(target);
        let fix = "write them again: STELE_WRITE_FUZZ_SEEDS=1 cargo test -p stele --features \
                   fuzzing --test fuzz_seeds";
        assert_eq!(
            committed.len(),
            made.len(),
            "fuzz/corpus/{target} has {} seeds, the writers make {}; {fix}",
            committed.len(),
            made.len()
        );
        for ((path, bytes), seed) in committed.iter().zip(made) {
            assert!(
                bytes == seed,
                "{} is not what the writers make now (a format changed?); {fix}",
                path.display()
            );
        }
    }
}
