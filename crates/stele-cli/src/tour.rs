//! `stele tour`: the README's main job on a bundled sample, one part of Stele at a time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use stele_doc::{CachedPath, Document, DocumentWriter, Value};

/// A thousand synthetic orders (nested customer, items array, tags, decimals, non-ASCII names).
const SAMPLE: &str = include_str!("../samples/orders.jsonl");

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele tour                                    the bundled sample of 1,000 orders
  stele tour --input my.jsonl --fields a,b.c,d  your own JSON Lines file and fields")]
pub struct TourArgs {
    /// A JSON Lines file to use instead of the bundled sample.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Three (or more) comma-separated paths to read from every document.
    #[arg(long, default_value = "customer.address.city,total,items[0].sku")]
    fields: String,
}

fn per_doc(elapsed: Duration, docs: usize) -> f64 {
    elapsed.as_nanos() as f64 / docs.max(1) as f64
}

/// Runs `f` repeatedly for at least 200 ms and returns the fastest run (less noise from a
/// shared machine than a mean).
fn time<T>(mut f: impl FnMut() -> T) -> Duration {
    let mut best = Duration::MAX;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(200) {
        let t = Instant::now();
        std::hint::black_box(f());
        best = best.min(t.elapsed());
    }
    best
}

fn touch(v: Option<Value<'_>>) -> usize {
    match v {
        Some(Value::String(s)) => s.len(),
        Some(Value::Int(i)) => i as usize & 0xFF,
        Some(Value::Float(f)) => f as usize & 0xFF,
        Some(_) => 1,
        None => 0,
    }
}

fn touch_json(v: Option<&serde_json::Value>) -> usize {
    match v {
        Some(serde_json::Value::String(s)) => s.len(),
        Some(serde_json::Value::Number(n)) => n.as_f64().map_or(1, |f| f as usize & 0xFF),
        Some(_) => 1,
        None => 0,
    }
}

fn json_path<'a>(
    mut v: &'a serde_json::Value,
    path: &stele_doc::Path,
) -> Option<&'a serde_json::Value> {
    for seg in path.segments() {
        v = match seg {
            stele_doc::PathSegment::Key(k) => v.get(k)?,
            stele_doc::PathSegment::Index(i) => v.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

pub fn run(args: &TourArgs) -> Result<()> {
    let owned;
    let (name, text) = match &args.input {
        Some(p) => {
            owned =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            (p.display().to_string(), owned.as_str())
        }
        None => ("bundled sample (samples/orders.jsonl)".to_owned(), SAMPLE),
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        bail!("{name} has no documents: expected one JSON value per line");
    }
    // The input's size as `ls` says it (line ends included), the one figure every step
    // compares with.
    let json_bytes = text.len();
    println!(
        "Stele tour: {} documents, {} bytes of JSON, from {name}\n",
        lines.len(),
        json_bytes
    );

    println!("1. JSON text to documents (one forward pass, no tree)");
    let mut writer = DocumentWriter::new();
    let mut docs = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        docs.push(
            writer
                .from_json(line.as_bytes())
                .with_context(|| format!("{name}, line {}", n + 1))?,
        );
    }
    let ours = time(|| {
        lines
            .iter()
            .map(|l| writer.from_json(l.as_bytes()).map_or(0, |d| d.len()))
            .sum::<usize>()
    });
    let serde = time(|| {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .count()
    });
    let mb_s = |d: Duration| json_bytes as f64 / d.as_secs_f64() / 1e6;
    println!(
        "   stele  {:>8.0} MB/s   serde_json::Value {:>8.0} MB/s   ({:.1}x)",
        mb_s(ours),
        mb_s(serde),
        serde.as_secs_f64() / ours.as_secs_f64()
    );

    let doc_bytes: usize = docs.iter().map(Vec::len).sum();
    println!("\n2. Sizes");
    println!(
        "   JSON {json_bytes} bytes, documents {doc_bytes} bytes ({:.2} of JSON), readable in place",
        doc_bytes as f64 / json_bytes as f64
    );

    println!("\n3. Reading fields without parsing: {}", args.fields);
    let paths: Vec<&str> = args.fields.split(',').map(str::trim).collect();
    let mut cached = paths
        .iter()
        .map(|p| CachedPath::new(p))
        .collect::<Result<Vec<_>, _>>()?;
    let parsed: Vec<stele_doc::Path> = cached.iter().map(|c| c.path().clone()).collect();
    let views: Vec<Document<&[u8]>> = docs
        .iter()
        .map(|d| Document::new(d.as_slice()))
        .collect::<Result<_, _>>()?;
    let ours = time(|| {
        let mut sum = 0;
        for doc in &views {
            for c in &mut cached {
                sum += touch(c.get(doc.root()));
            }
        }
        sum
    });
    let serde = time(|| {
        let mut sum = 0;
        for line in &lines {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                for p in &parsed {
                    sum += touch_json(json_path(&v, p));
                }
            }
        }
        sum
    });
    println!(
        "   stele {:>8.0} ns/doc   serde_json parse + index {:>8.0} ns/doc   ({:.0}x)",
        per_doc(ours, docs.len()),
        per_doc(serde, docs.len()),
        serde.as_secs_f64() / ours.as_secs_f64()
    );
    if let Some(first) = views.first() {
        for c in &mut cached {
            let v = c
                .get(first.root())
                .map_or("(absent)".to_owned(), |v| v.to_json());
            println!("   first document: {} = {v}", c.path_text());
        }
    }

    println!("\n4. Exact round trip");
    let mut exact = 0;
    for (doc, line) in views.iter().zip(&lines) {
        let back = doc.to_json();
        let same_value = serde_json::from_str::<serde_json::Value>(&back).ok()
            == serde_json::from_str::<serde_json::Value>(line).ok();
        if !same_value {
            bail!("round trip changed a document:\n  in:  {line}\n  out: {back}");
        }
        exact += usize::from(back == *line);
    }
    println!(
        "   {} of {} documents equal as values; {exact} byte for byte",
        views.len(),
        views.len()
    );

    if let Some(first) = views.first() {
        println!("\n5. Where the bytes of the first document go (stele inspect)");
        for line in stele_doc::inspect(first).to_string().lines() {
            println!("   {line}");
        }
    }
    database_step(&name, text, &views)?;
    query_and_map_step(&views)?;
    println!(
        "\nTimings are one quick run on this machine; docs/benchmarks.md has the measured comparisons."
    );
    Ok(())
}

/// Step 6: the document store: import into a temporary database (written once, packed and
/// compressed), get, stats (its size against the JSON), export.
fn database_step(name: &str, text: &str, views: &[Document<&[u8]>]) -> Result<()> {
    use stele::export::{ExportOptions, export_jsonl};
    use stele::import::{ImportOptions, import_reader};
    println!("\n6. A database (stele import / get / stats / export)");
    let dir = tempfile::tempdir().context("creating a temporary folder for the tour's database")?;
    let db = stele::Database::open(dir.path())?;
    // The bundled orders carry their id; other input gets numbered ids.
    let has_id = views
        .first()
        .and_then(|d| d.get("id"))
        .is_some_and(|v| matches!(v, Value::String(_) | Value::Int(_)));
    let opts = if has_id {
        ImportOptions::new().id_field("id")
    } else {
        ImportOptions::new()
    };
    let started = Instant::now();
    let report = import_reader(&db, "tour", name, text.as_bytes(), None, &opts, |_| {})
        .with_context(|| format!("importing {name}"))?;
    db.checkpoint()?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "   imported {} documents in {:.0} ms ({:.0} documents/s, durable)",
        report.documents,
        seconds * 1e3,
        report.documents as f64 / seconds.max(1e-9)
    );
    let snap = db.snapshot();
    if let Some(entry) = snap.iter("tour").next() {
        let (id, _) = entry?;
        let started = Instant::now();
        let doc = snap.get("tour", &id)?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let json = doc.map(|d| d.to_json()).transpose()?.unwrap_or_default();
        let short: String = json.chars().take(70).collect();
        println!("   get {id:?} ({micros:.1} us): {short}...");
    }
    let stats = snap.stats("tour");
    let dict_bytes = snap.dictionary_bytes("tour")?;
    let at_rest = stats.table_bytes + dict_bytes;
    // A small input trains no dictionary (its blocks are compressed without one).
    let dictionary = match dict_bytes {
        0 => "no dictionary: the input is too small to train one".to_owned(),
        n => format!("with the {n}-byte dictionary trained on the input"),
    };
    println!(
        "   stats: {} in {} ({} bytes, {dictionary}: {:.2}x of the {} bytes of JSON), written \
         once by the import",
        crate::say::count(stats.documents, "document", "documents"),
        crate::say::count(stats.packed_blocks, "compressed block", "compressed blocks"),
        at_rest,
        at_rest as f64 / text.len().max(1) as f64,
        text.len(),
    );
    let mut out = Vec::new();
    export_jsonl(&snap, "tour", &mut out, &ExportOptions::new())?;
    let exported = String::from_utf8(out).context("export is not UTF-8")?;
    let want: Vec<String> = views.iter().map(Document::to_json).collect();
    let got: Vec<&str> = exported.lines().collect();
    // Numbered ids keep input order; ids from a field come back in id order.
    let equal = if has_id {
        let input: std::collections::HashSet<&str> = want.iter().map(String::as_str).collect();
        got.len() <= want.len() && got.iter().all(|line| input.contains(line))
    } else {
        got == want
    };
    if !equal {
        bail!("the export after the import differs from the input's documents");
    }
    println!(
        "   export: {} lines, equal to the input's documents ({} bytes)",
        got.len(),
        exported.len()
    );
    Ok(())
}

/// Step 7: an index and a query on the sample, then a durable map of the documents' first
/// fields with a diff on top, compacted.
fn query_and_map_step(views: &[Document<&[u8]>]) -> Result<()> {
    println!("\n7. Indexes and queries, durable maps (stele query / stele-durable)");
    let dir = tempfile::tempdir().context("creating a temporary folder for the tour")?;
    let db = stele::Database::open(dir.path().join("db"))?;
    let mut batch = db.batch();
    for (i, doc) in views.iter().enumerate() {
        batch.put_document("tour", &format!("{i:06}"), doc.as_bytes())?;
    }
    db.commit(batch)?;
    // The first top-level field of the first document, and its value there.
    let first = views.first().and_then(|d| {
        let root = d.root();
        let obj = root.as_object()?;
        let (k, v) = obj.iter_original().next()?;
        Some((k.to_owned(), v.to_json()))
    });
    if let Some((field, value)) = first {
        let q = stele::Query::new("tour").eq(&field, &value).limit(3);
        let scanned = db.snapshot().query(&q)?;
        db.create_index("tour", "first_field", &[&field])?;
        let indexed = db.snapshot().query(&q)?;
        if scanned.rows != indexed.rows {
            bail!("the query gave other rows once indexed");
        }
        println!(
            "   {field} = {value}: {} row(s); before the index: {}",
            indexed.rows.len(),
            scanned.plan
        );
        println!("   after `create_index`: {}", indexed.plan);
    }
    let store = stele_durable::Store::open(dir.path().join("maps"))?;
    let pairs = views
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("{i:06}").into_bytes(), d.to_json().into_bytes()));
    let mut map = store.build_map(pairs)?;
    let base = map.len();
    map.put(b"zzz-new", b"{}")?;
    map.remove(b"000000")?;
    map.save()?;
    let layers = map.layer_ids().len();
    let snapshot = map.clone();
    map.compact()?;
    println!(
        "   durable map: {base} entries, a diff saved on top ({layers} layers, {} entries), compacted to {} table; the snapshot still reads {} entries",
        snapshot.len(),
        map.layer_ids().len(),
        snapshot.len()
    );
    Ok(())
}
