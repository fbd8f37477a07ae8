//! Part 2: read 3 fields from every document of a collection.

use std::collections::HashMap;
use std::hint::black_box;

use anyhow::Result;
use stele_doc::{CachedPath, Document, PathSet};

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

/// Every path of the set read on `doc`, added to `r`.
#[inline(always)]
fn read_fields(doc: &Document<&[u8]>, set: &mut PathSet, r: &mut Read) {
    set.read_doc(doc, |_, v| {
        r.0 += 1;
        r.1 = r.1.wrapping_add(digest_ours(&v));
    });
}

/// Every path read on `doc` with its own `CachedPath::read_doc`, added to `r`.
#[inline(always)]
fn read_each(doc: &Document<&[u8]>, paths: &mut [CachedPath], r: &mut Read) {
    for p in paths.iter_mut() {
        if let Some(d) = p.read_doc(doc, |v| digest_ours(&v)) {
            r.0 += 1;
            r.1 = r.1.wrapping_add(d);
        }
    }
}

/// The 3 fields read with one `PathSet` (one shape check per document).
fn ours_cached(docs: &Docs, set: &mut PathSet) -> Read {
    let mut r = (0, 0);
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        read_fields(&unsafe { Document::new_unchecked(b) }, set, &mut r);
    }
    r
}

/// The 3 fields read with a `CachedPath` each (a slot check per field).
fn ours_cached_path(docs: &Docs, paths: &mut [CachedPath]) -> Read {
    let mut r = (0, 0);
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        read_each(&unsafe { Document::new_unchecked(b) }, paths, &mut r);
    }
    r
}

/// Documents ahead of the one read that [`ours_prefetch`] asks the CPU to load.
const PREFETCH_AHEAD: usize = 4;

/// As [`ours_cached`], with `PathSet::prefetch` on the document [`PREFETCH_AHEAD`] ahead (the
/// lines its read will touch, where they sat in the last document learned): the loop a user
/// writes over many documents out of cache, with the public API, to overlap their cache misses.
fn ours_prefetch(docs: &Docs, set: &mut PathSet) -> Read {
    let mut r = (0, 0);
    let mut ahead = docs.iter().skip(PREFETCH_AHEAD);
    for b in docs.iter() {
        if let Some(next) = ahead.next() {
            set.prefetch(next);
        }
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        read_fields(&unsafe { Document::new_unchecked(b) }, set, &mut r);
    }
    r
}

/// As [`ours_cached_path`], the value returned by `CachedPath::get` (a whole `Value`).
fn ours_cached_get(docs: &Docs, paths: &mut [CachedPath]) -> Read {
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

/// The per-document floor: a document opened (trusted bytes) and its root object read, no
/// field.
fn ours_open(docs: &Docs) -> usize {
    // The root object's property count: a read of its header, decoded on open.
    let mut objects = 0;
    for b in docs.iter() {
        // SAFETY: bytes written by `DocumentWriter` (trusted).
        let doc = unsafe { Document::new_unchecked(b) };
        objects += black_box(doc.root_object()).map_or(0, |o| o.len());
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

fn ours_validated(docs: &Docs, set: &mut PathSet) -> Read {
    let mut r = (0, 0);
    for b in docs.iter() {
        read_fields(&Document::new(b).expect("valid document"), set, &mut r);
    }
    r
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
         ours cached = `Document::new_unchecked` (trusted bytes) + one `PathSet` of the 3 fields \
         over pre-converted documents (one check of the root shape per document, then each field \
         at its remembered place), each value read inside `PathSet::read_doc` (a closure, so no \
         `Value` goes through memory), no cache hint; ours prefetch = the same loop with \
         `set.prefetch(next)` on the document 4 ahead (public API: hints the lines that \
         document's read will touch, where they sat in the last document the set learned; what \
         a user's loop over documents out of cache writes); ours cached path = one `CachedPath` per field, read with \
         `CachedPath::read_doc` (a slot check per field); ours cached get = the same with \
         `CachedPath::get` (the value returned); ours open = `Document::new_unchecked` + its root object's \
         length, no field (the per-document floor); ours get = `doc.get(key)`; ours validated = `Document::new` (full validation) + \
         the `PathSet`; sonic get = `sonic_rs::get_unchecked` once per field on the JSON text; \
         sonic many = `get_many_unchecked` with a 3-path `PointerTree` (one pass); serde_json = \
         `from_slice::<Value>` then `get` x3. Ratios are peer time / ours cached (or / ours \
         prefetch where named so); \"best sonic\" is the faster of the two sonic-rs ways. \
         Layout: converted documents back to back in one buffer, JSON texts back to back in \
         another, both in file order; collections larger than the CPU's cache are read from \
         memory by every reader.\n"
    );
    let mut kt = Table::new(&["collection", "docs", "fields (share of docs that have it)"]);
    let mut t = Table::new(&[
        "collection",
        "ours cached",
        "ours prefetch",
        "ours cached path",
        "ours cached get",
        "ours open",
        "ours get",
        "ours validated",
        "sonic get",
        "sonic many",
        "serde_json",
        "best sonic / ours",
        "best sonic / ours prefetch",
        "serde_json / ours",
    ]);
    let (mut rs, mut rp, mut rj) = (Vec::new(), Vec::new(), Vec::new());
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
        let mut set = PathSet::from_paths(paths.iter().map(|p| p.path().clone()).collect());
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
            ("ours cached", ours_cached(&docs, &mut set)),
            ("ours prefetch", ours_prefetch(&docs, &mut set)),
            ("ours cached path", ours_cached_path(&docs, &mut paths)),
            ("ours cached get", ours_cached_get(&docs, &mut paths)),
            ("ours get", ours_get(&docs, &keys)),
            ("ours validated", ours_validated(&docs, &mut set)),
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
        let (mut s1, mut s2, mut s3) = (set.clone(), set.clone(), set);
        let (mut p1, mut p2) = (paths.clone(), paths);
        let t6 = timer.group(&mut [
            &mut || {
                black_box(ours_cached(&docs, &mut s1));
            },
            &mut || {
                black_box(ours_prefetch(&docs, &mut s2));
            },
            &mut || {
                black_box(ours_cached_path(&docs, &mut p1));
            },
            &mut || {
                black_box(ours_cached_get(&docs, &mut p2));
            },
            &mut || {
                black_box(ours_open(&docs));
            },
            &mut || {
                black_box(ours_get(&docs, &keys));
            },
            &mut || {
                black_box(ours_validated(&docs, &mut s3));
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
        let [a, pf, cp, cg, o, b, v, g, m, s] = [
            t6[0], t6[1], t6[2], t6[3], t6[4], t6[5], t6[6], t6[7], t6[8], t6[9],
        ]
        .map(ns);
        let best = g.min(m);
        rs.push(best / a);
        rp.push(best / pf);
        rj.push(s / a);
        t.row(vec![
            c.name.clone(),
            f(a, 1),
            f(pf, 1),
            f(cp, 1),
            f(cg, 1),
            f(o, 1),
            f(b, 1),
            f(v, 0),
            f(g, 0),
            f(m, 0),
            f(s, 0),
            ratio(best / a),
            ratio(best / pf),
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
        String::new(),
        String::new(),
        String::new(),
        ratio(geomean(&rs)),
        ratio(geomean(&rp)),
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
