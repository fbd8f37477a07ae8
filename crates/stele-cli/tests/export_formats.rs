//! `stele export --format parquet|csv|jsonl --fields --filter`: the sample orders written
//! in each format and read back, checked against the sample itself.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use predicates::prelude::*;
use serde_json::Value;

#[allow(dead_code, reason = "each test file uses some of the helpers")]
use crate::common;
use common::{SAMPLE, on, shop_with_orders, stdout_of};

fn sample() -> Vec<Value> {
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The sample orders in a database, exported to `orders.parquet` beside it.
fn orders_parquet() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (dir, db) = shop_with_orders();
    let out = dir.path().join("orders.parquet");
    on("export", &db)
        .args(["orders", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("exported 1000 documents"));
    (dir, db, out)
}

#[test]
fn parquet_holds_every_document() {
    let (_dir, _db, out) = orders_parquet();
    let file = std::fs::File::open(&out).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let (mut ids, mut total) = (Vec::new(), 0.0);
    for batch in reader {
        let batch = batch.unwrap();
        assert_eq!(batch.schema().field(0).name(), "_id");
        let id = batch.column(0).as_string::<i32>();
        ids.extend(id.iter().map(|s| s.unwrap().to_owned()));
        let t = batch.column_by_name("total").unwrap();
        total += t
            .as_primitive::<Float64Type>()
            .iter()
            .flatten()
            .sum::<f64>();
    }
    let want = sample();
    let want_ids: Vec<String> = want
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, want_ids);
    let want_total: f64 = want.iter().map(|d| d["total"].as_f64().unwrap()).sum();
    assert!((total - want_total).abs() < 1e-6, "{total} {want_total}");
}

#[test]
fn csv_and_jsonl_of_named_fields_of_filtered_documents() {
    let (_dir, db) = shop_with_orders();
    let paid: Vec<Value> = sample()
        .into_iter()
        .filter(|d| d["status"] == "paid")
        .collect();
    let filter = r#"{"status": "paid"}"#;
    let csv = stdout_of(
        &[
            "export",
            "orders",
            "--format",
            "csv",
            "--fields",
            "_id,total,customer.address.city,items",
            "--filter",
            filter,
        ],
        &db,
    );
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("_id,total,customer.address.city,items"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), paid.len());
    for (row, d) in rows.iter().zip(&paid) {
        let city = d["customer"]["address"]["city"].as_str().unwrap();
        let total = d["total"].as_f64().unwrap();
        let start = format!("{},{total},{city},", d["id"].as_str().unwrap());
        assert!(row.starts_with(&start), "{row} / {start}");
        // Arrays as their JSON text, quoted (it holds commas and quotes).
        if d["items"].as_array().unwrap().len() > 1 {
            assert!(row.contains(",\"[{\"\""), "{row}");
        }
    }
    let jsonl = stdout_of(
        &[
            "export",
            "orders",
            "--fields",
            "total,customer.name",
            "--filter",
            filter,
        ],
        &db,
    );
    let got: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), paid.len());
    for (g, d) in got.iter().zip(&paid) {
        let want =
            serde_json::json!({"total": d["total"], "customer": {"name": d["customer"]["name"]}});
        assert_eq!(g, &want);
    }
    on("export", &db)
        .args(["orders", "--salvage", "--format", "csv"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--salvage writes whole documents"));
    on("export", &db)
        .args([
            "orders",
            "--format",
            "csv",
            "--filter",
            "{\"status\": {\"$bad\": 1}}",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--filter"));
}

/// `v` without null object members, numbers as floats: what a trip through typed columns
/// keeps (a missing field and a null read alike; an Int64 next to floats becomes Float64).
fn typed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), typed(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(typed).collect()),
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        other => other.clone(),
    }
}

#[test]
fn parquet_exported_imports_back() {
    let (dir, db, out) = orders_parquet();
    on("import", &db)
        .args(["copy"])
        .arg(&out)
        .args(["--id-field", "_id"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1000 documents"));
    // The `_id` column is the ids, not a property: asked for as one here.
    let got = stdout_of(&["export", "copy", "--id-field", "_id"], &db);
    let got: Vec<Value> = got
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), 1000);
    for (mut g, w) in got.into_iter().zip(sample()) {
        let id = g.as_object_mut().unwrap().remove("_id").unwrap();
        assert_eq!(id, w["id"]);
        assert_eq!(typed(&g), typed(&w));
    }
    // Not Parquet: a clear error, nothing imported.
    let fake = dir.path().join("fake.parquet");
    std::fs::write(&fake, b"not parquet").unwrap();
    on("import", &db)
        .args(["fake"])
        .arg(&fake)
        .assert()
        .failure()
        .stderr(predicate::str::contains("not a Parquet file"));
}

/// The first `n` lines of a shared collection (`../shared/data/collections`, or
/// `STELE_DATA`), written to `dir/name.jsonl`.
fn shared_slice(dir: &std::path::Path, name: &str, n: usize) -> std::path::PathBuf {
    use std::io::BufRead;
    let data = std::env::var_os("STELE_DATA").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        std::path::PathBuf::from,
    );
    let file = std::fs::File::open(data.join("collections").join(name)).unwrap();
    let lines = std::io::BufReader::new(zstd::Decoder::new(file).unwrap()).lines();
    let text: String = lines.take(n).map(|l| l.unwrap() + "\n").collect();
    let out = dir.join(name.replace('/', "-").replace(".zst", ""));
    std::fs::write(&out, text).unwrap();
    out
}

/// The documents of `coll` with their ids (as `__id`), as JSON.
fn exported(db: &std::path::Path, coll: &str) -> Vec<Value> {
    let text = stdout_of(&["export", coll, "--id-field", "__id"], db);
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Documents -> Parquet -> documents on slices of the shared collections: the same ids and
/// the same documents under the inference rule (`typed`), and a second trip changes nothing.
#[test]
fn shared_collections_round_trip_through_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (name, n) in [
        ("geonames-cities.jsonl.zst", 300),
        ("mdn-compat-features.jsonl.zst", 120),
        ("emojibase.jsonl.zst", 300),
        ("github-webhooks.jsonl.zst", 40),
        ("debian-packages.jsonl.zst", 200),
        ("vega-flights-200k.jsonl.zst", 300),
        ("mongodb-zips.jsonl.zst", 300),
        ("mongodb-samples/twitter__tweets.jsonl.zst", 150),
        ("mongodb-samples/restaurant.jsonl.zst", 150),
        ("mongodb-samples/sample_mflix__users.jsonl.zst", 150),
    ] {
        let src = shared_slice(dir.path(), name, n);
        let tag: String = name
            .trim_end_matches(".jsonl.zst")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let [orig, copy, again] = ["src", "copy", "again"].map(|c| format!("{tag}-{c}"));
        on("import", &db).arg(&orig).arg(&src).assert().success();
        let mut copies = Vec::new();
        for (from, to) in [(&orig, &copy), (&copy, &again)] {
            let pq = dir.path().join(format!("{to}.parquet"));
            on("export", &db)
                .arg(from)
                .arg("-o")
                .arg(&pq)
                .assert()
                .success();
            on("import", &db).arg(to).arg(&pq).assert().success();
            copies.push(exported(&db, to));
        }
        let want = exported(&db, &orig);
        assert_eq!(copies[0].len(), want.len(), "{name}");
        for (g, w) in copies[0].iter().zip(&want) {
            assert_eq!(typed(g), typed(w), "{name}");
        }
        assert_eq!(
            copies[0], copies[1],
            "{name}: a second trip changed the documents"
        );
    }
}

/// More rows than a row group holds, with nested columns (a struct, a list of structs:
/// several Parquet leaves per Arrow column, encoded on every core): every row group is in
/// the file in order, and the file imports back to the same documents.
#[test]
fn parquet_of_many_row_groups_and_nested_columns_imports_back() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nested.jsonl");
    let docs: Vec<Value> = (0..20_000)
        .map(|i| {
            let mut d = serde_json::json!({
                "n": i,
                "who": {"name": format!("ünï {i}"), "age": i % 90},
                "items": (0..i % 4).map(|k| serde_json::json!({"sku": format!("s{k}"), "q": k})).collect::<Vec<_>>(),
            });
            if i % 3 == 0 {
                d["note"] = Value::from(format!("n{i}"));
            }
            d
        })
        .collect();
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(&src, text).unwrap();
    let db = dir.path().join("db");
    on("import", &db).args(["c"]).arg(&src).assert().success();
    let out = dir.path().join("c.parquet");
    on("export", &db)
        .args(["c", "-o"])
        .arg(&out)
        .assert()
        .success();
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap()).unwrap();
    let groups = builder.metadata().num_row_groups();
    assert_eq!(groups, 20_000usize.div_ceil(8192), "row groups");
    let rows: usize = builder
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 20_000);
    on("import", &db)
        .args(["back"])
        .arg(&out)
        .args(["--id-field", "_id"])
        .assert()
        .success();
    let got: Vec<Value> = stdout_of(&["export", "back"], &db)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), docs.len());
    for (g, w) in got.iter().zip(&docs) {
        assert_eq!(typed(g), typed(w));
    }
}

/// `stele import --pack-level`: a Parquet import packed at level 1 lands the same documents
/// in more bytes than the default level 6; a level outside 1-22 is refused, nothing created.
#[test]
fn an_import_packs_at_the_level_asked() {
    let dir = tempfile::tempdir().unwrap();
    let src = shared_slice(dir.path(), "geonames-cities.jsonl.zst", 20_000);
    let db = dir.path().join("db");
    on("import", &db).arg("c").arg(&src).assert().success();
    let pq = dir.path().join("c.parquet");
    on("export", &db)
        .args(["c", "-o"])
        .arg(&pq)
        .assert()
        .success();
    fn size(d: &std::path::Path) -> u64 {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let meta = e.metadata().unwrap();
                if meta.is_dir() {
                    size(&e.path())
                } else {
                    meta.len()
                }
            })
            .sum()
    }
    let [six, one] = ["six", "one"].map(|n| dir.path().join(n));
    on("import", &six).arg("c").arg(&pq).assert().success();
    on("import", &one)
        .arg("c")
        .arg(&pq)
        .args(["--pack-level", "1"])
        .assert()
        .success();
    assert_eq!(exported(&six, "c"), exported(&one, "c"));
    assert!(size(&one) > size(&six), "{} <= {}", size(&one), size(&six));
    let none = dir.path().join("none");
    on("import", &none)
        .arg("c")
        .arg(&pq)
        .args(["--pack-level", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--pack-level"));
    assert!(!none.exists());
}
