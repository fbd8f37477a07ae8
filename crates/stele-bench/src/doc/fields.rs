//! Part 2: read 3 fields from every document of a collection.

use std::collections::HashMap;
use std::hint::black_box;

use anyhow::Result;
use stele_doc::{CachedPath, Document};

use super::data::{Collection, Docs};
use super::peers::{digest_ours, digest_serde, digest_sonic};
use super::table::{Table, f, geomean, ratio};
use super::{Ctx, convert_default, key_path};

/// The 3 most frequent top-level keys of the first 1,000 documents (ties: first seen first).
fn pick_keys(c: &Collection) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for d in c.docs().take(1000) {
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(d) {
            for k in m.keys() {
                let seen = counts.len();
                counts.entry(k.clone()).or_insert((0, seen)).0 += 1;
            }
        }
    }
    let mut keys: Vec<(String, (usize, usize))> = counts.into_iter().collect();
    keys.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    keys.into_iter().take(3).map(|(k, _)| k).collect()
}

/// (fields found, digest of their values).
type Read = (u64, u64);

fn ours_cached(docs: &Docs, paths: &mut [CachedPath]) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        let doc = unsafe { Document::new_unchecked(b) };
        let root = doc.root();
        for p in paths.iter_mut() {
            if let Some(v) = p.get(root) {
                found += 1;
                sum = sum.wrapping_add(digest_ours(&v));
            }
        }
    }
    (found, sum)
}

/// The per-document floor: a document opened (trusted bytes) and its root read, no field.
fn ours_open(docs: &Docs) -> usize {
    let mut objects = 0;
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        let doc = unsafe { Document::new_unchecked(b) };
        objects += usize::from(black_box(doc.root()).as_object().is_some());
    }
    objects
}

fn ours_get(docs: &Docs, keys: &[String]) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        let doc = unsafe { Document::new_unchecked(b) };
        for k in keys {
            if let Some(v) = doc.get(k) {
                found += 1;
                sum = sum.wrapping_add(digest_ours(&v));
            }
        }
    }
    (found, sum)
}

fn ours_validated(docs: &Docs, paths: &mut [CachedPath]) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for b in docs.iter() {
        let doc = Document::new(b).expect("valid document");
        let root = doc.root();
        for p in paths.iter_mut() {
            if let Some(v) = p.get(root) {
                found += 1;
                sum = sum.wrapping_add(digest_ours(&v));
            }
        }
    }
    (found, sum)
}

fn sonic_get(json: &[&[u8]], keys: &[String]) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for d in json {
        for k in keys {
            // SAFETY: the collection's JSON was checked valid by a full sonic-rs parse before.
            if let Ok(v) = unsafe { sonic_rs::get_unchecked(*d, [k.as_str()]) } {
                found += 1;
                sum = sum.wrapping_add(digest_sonic(&v));
            }
        }
    }
    (found, sum)
}

fn sonic_many(json: &[&[u8]], tree: &sonic_rs::PointerTree) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for d in json {
        // SAFETY: the collection's JSON was checked valid by a full sonic-rs parse before.
        if let Ok(vals) = unsafe { sonic_rs::get_many_unchecked(*d, tree) } {
            for v in vals.iter().flatten() {
                found += 1;
                sum = sum.wrapping_add(digest_sonic(v));
            }
        }
    }
    (found, sum)
}

fn serde_parse(json: &[&[u8]], keys: &[String]) -> Read {
    let (mut found, mut sum) = (0u64, 0u64);
    for d in json {
        let v: serde_json::Value = serde_json::from_slice(d).expect("valid JSON");
        for k in keys {
            if let Some(x) = v.get(k) {
                found += 1;
                sum = sum.wrapping_add(digest_serde(x));
            }
        }
    }
    (found, sum)
}

pub fn field_reads(ctx: &Ctx) -> Result<()> {
    println!("## 2. Reading 3 fields from every document (ns per document, lower is better)\n");
    println!(
        "Fields: the 3 most frequent top-level keys of each collection's first 1,000 documents. \
         Every reader fetches each field and reads its value (string length after unescaping and \
         decompression, number parsed as i64/u64/f64); the digests are compared across readers. \
         ours cached = `Document::new_unchecked` (trusted bytes) + one `CachedPath` per field over \
         pre-converted documents; ours open = `Document::new_unchecked` + its root, no field (the \
         per-document floor); ours get = `doc.get(key)`; ours validated = `Document::new` (full validation) + \
         `CachedPath`; sonic get = `sonic_rs::get_unchecked` once per field on the JSON text; \
         sonic many = `get_many_unchecked` with a 3-path `PointerTree` (one pass); serde_json = \
         `from_slice::<Value>` then `get` x3. Ratios are peer time / ours cached; \"best sonic\" \
         is the faster of the two sonic-rs ways.\n"
    );
    let mut kt = Table::new(&["collection", "docs", "fields (share of docs that have it)"]);
    let mut t = Table::new(&[
        "collection",
        "ours cached",
        "ours open",
        "ours get",
        "ours validated",
        "sonic get",
        "sonic many",
        "serde_json",
        "best sonic / ours",
        "serde_json / ours",
    ]);
    let (mut rs, mut rj) = (Vec::new(), Vec::new());
    let mut problems = Vec::new();
    let timer = &ctx.timer;
    for c in &ctx.collections {
        eprintln!("part 2: {}", c.name);
        let keys = pick_keys(c);
        if keys.is_empty() {
            continue;
        }
        let docs = convert_default(c)?;
        let json = c.doc_slices();
        let n = json.len().max(1) as f64;
        let mut paths: Vec<CachedPath> = keys
            .iter()
            .map(|k| CachedPath::new(&key_path(k)))
            .collect::<Result<_, _>>()?;
        let mut tree = sonic_rs::PointerTree::new();
        for k in &keys {
            tree.add_path([k.as_str()]);
        }
        // Coverage per key, and the cross-check of all readers.
        let coverage: Vec<String> = keys
            .iter()
            .map(|k| {
                let have = docs
                    .iter()
                    .filter(|b| {
                        // SAFETY: bytes written by `DocumentWriter`.
                        unsafe { Document::new_unchecked(*b) }.get(k).is_some()
                    })
                    .count();
                format!("`{k}` {:.0}%", 100.0 * have as f64 / n)
            })
            .collect();
        kt.row(vec![
            c.name.clone(),
            json.len().to_string(),
            coverage.join(", "),
        ]);
        let reference = serde_parse(&json, &keys);
        for (name, got) in [
            ("ours cached", ours_cached(&docs, &mut paths)),
            ("ours get", ours_get(&docs, &keys)),
            ("ours validated", ours_validated(&docs, &mut paths)),
            ("sonic get", sonic_get(&json, &keys)),
            ("sonic many", sonic_many(&json, &tree)),
        ] {
            if got != reference {
                problems.push(format!(
                    "{}: {name} read (found {}, digest {:#x}) but serde_json (found {}, digest {:#x})",
                    c.name, got.0, got.1, reference.0, reference.1
                ));
            }
        }
        let ns = |secs: f64| secs * 1e9 / n;
        let (mut p1, mut p2) = (paths.clone(), paths);
        let t6 = timer.group(&mut [
            &mut || {
                black_box(ours_cached(&docs, &mut p1));
            },
            &mut || {
                black_box(ours_open(&docs));
            },
            &mut || {
                black_box(ours_get(&docs, &keys));
            },
            &mut || {
                black_box(ours_validated(&docs, &mut p2));
            },
            &mut || {
                black_box(sonic_get(&json, &keys));
            },
            &mut || {
                black_box(sonic_many(&json, &tree));
            },
            &mut || {
                black_box(serde_parse(&json, &keys));
            },
        ]);
        let [a, o, b, v, g, m, s] = [t6[0], t6[1], t6[2], t6[3], t6[4], t6[5], t6[6]].map(ns);
        let best = g.min(m);
        rs.push(best / a);
        rj.push(s / a);
        t.row(vec![
            c.name.clone(),
            f(a, 1),
            f(o, 1),
            f(b, 1),
            f(v, 0),
            f(g, 0),
            f(m, 0),
            f(s, 0),
            ratio(best / a),
            ratio(s / a),
        ]);
    }
    kt.print();
    t.row(vec![
        "**geometric mean**".into(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        ratio(geomean(&rs)),
        ratio(geomean(&rj)),
    ]);
    t.print();
    if problems.is_empty() {
        println!("- check: every reader found the same fields with the same values.\n");
    }
    for p in problems {
        println!("- MISMATCH: {p}");
    }
    println!();
    super::floor::floor(ctx);
    Ok(())
}
