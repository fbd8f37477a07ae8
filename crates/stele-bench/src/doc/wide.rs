//! Part 5: wide objects (1,250 and 10,000 keys), the case RavenDB took 135 ms per write on.

use std::hint::black_box;

use anyhow::{Result, ensure};
use sonic_rs::JsonValueTrait;
use stele_doc::{Document, DocumentWriter};

use super::Ctx;
use super::peers::{digest_ours, digest_serde, digest_sonic};
use super::table::{Table, f, ratio};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A flat object of `n` distinct keys in random (unsorted) order with mixed scalar values, and
/// its keys in another random order for lookups. Deterministic.
fn generate(n: usize) -> (String, Vec<String>) {
    let mut st = 0x5e1e_0000 + n as u64;
    let mut keys = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::new();
    while keys.len() < n {
        let k = format!("prop_{:08x}", splitmix(&mut st) as u32);
        if seen.insert(k.clone()) {
            keys.push(k);
        }
    }
    let mut json = String::from("{");
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let r = splitmix(&mut st);
        let v = match i % 4 {
            0 => (r % 1_000_000).to_string(),
            1 => format!("\"value {:x}\"", r % 65_536),
            2 => format!("{}.25", r % 10_000),
            _ => r.is_multiple_of(2).to_string(),
        };
        json.push_str(&format!("\"{k}\":{v}"));
    }
    json.push('}');
    // Fisher-Yates for the lookup order.
    let mut order = keys;
    for i in (1..order.len()).rev() {
        let j = (splitmix(&mut st) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    (json, order)
}

pub fn wide_objects(ctx: &Ctx) -> Result<()> {
    println!("## 5. Wide objects (one flat object, keys in random order)\n");
    println!(
        "write = JSON text to the library's form (ours: `DocumentWriter::from_json`, reused \
         writer), per document; lookup = every key once in another random order, per key: ours \
         `doc.get` on the document (binary search), serde_json `Value::get` (IndexMap with \
         preserve_order; a BTreeMap by default), sonic-rs `Value::get` on its parsed value, and \
         sonic-rs lazy `get_unchecked` on the JSON text (first 1,000 keys only). RavenDB: 135 ms \
         per write at 1,250 keys.\n"
    );
    let mut t = Table::new(&[
        "keys",
        "JSON KB",
        "doc KB",
        "ours write",
        "serde_json parse",
        "sonic-rs parse",
        "ours lookup",
        "serde_json lookup",
        "sonic-rs Value lookup",
        "sonic-rs lazy lookup",
        "write serde/ours",
        "lookup sonic lazy/ours",
    ]);
    let timer = &ctx.timer;
    for n in [1_250usize, 10_000] {
        eprintln!("part 5: {n} keys");
        let (json, order) = generate(n);
        let text = json.as_bytes();
        let mut w = DocumentWriter::new();
        let bytes = w.from_json(text)?;
        let doc = Document::new(bytes.as_slice())?;
        let sv: serde_json::Value = serde_json::from_slice(text)?;
        let nv: sonic_rs::Value = sonic_rs::from_slice(text)?;
        // Every reader must find every key with the same value.
        let ours_sum: u64 = order
            .iter()
            .filter_map(|k| doc.get(k))
            .map(|v| digest_ours(&v))
            .fold(0, u64::wrapping_add);
        let serde_sum: u64 = order
            .iter()
            .filter_map(|k| sv.get(k))
            .map(digest_serde)
            .fold(0, u64::wrapping_add);
        let found = order.iter().filter(|k| doc.get(k).is_some()).count();
        ensure!(found == n, "ours found {found} of {n} keys");
        ensure!(ours_sum == serde_sum, "wide object: digests differ");

        let tw = timer.group(&mut [
            &mut || {
                black_box(w.from_json(text).expect("converted before"));
            },
            &mut || {
                let v: serde_json::Value = serde_json::from_slice(text).expect("parsed before");
                black_box(v);
            },
            &mut || {
                let v: sonic_rs::Value = sonic_rs::from_slice(text).expect("parsed before");
                black_box(v);
            },
        ]);
        let [write, serde_parse, sonic_parse] = [tw[0], tw[1], tw[2]];
        let lazy_keys: Vec<&str> = order.iter().take(1000).map(String::as_str).collect();
        let tl = timer.group(&mut [
            &mut || {
                let mut s = 0u64;
                for k in &order {
                    if let Some(v) = doc.get(k) {
                        s = s.wrapping_add(digest_ours(&v));
                    }
                }
                black_box(s);
            },
            &mut || {
                let mut s = 0u64;
                for k in &order {
                    if let Some(v) = sv.get(k) {
                        s = s.wrapping_add(digest_serde(v));
                    }
                }
                black_box(s);
            },
            &mut || {
                let mut s = 0u64;
                for k in &order {
                    if let Some(v) = nv.get(k) {
                        s = s.wrapping_add(v.as_i64().unwrap_or(1) as u64);
                    }
                }
                black_box(s);
            },
            &mut || {
                let mut s = 0u64;
                for k in &lazy_keys {
                    // SAFETY: the text was parsed successfully by sonic-rs above.
                    if let Ok(v) = unsafe { sonic_rs::get_unchecked(text, [*k]) } {
                        s = s.wrapping_add(digest_sonic(&v));
                    }
                }
                black_box(s);
            },
        ]);
        let per = |secs: f64, k: usize| secs * 1e9 / k as f64;
        let ours_lookup = per(tl[0], n);
        let serde_lookup = per(tl[1], n);
        let sonic_lookup = per(tl[2], n);
        let lazy_lookup = per(tl[3], lazy_keys.len());
        t.row(vec![
            n.to_string(),
            f(text.len() as f64 / 1e3, 1),
            f(bytes.len() as f64 / 1e3, 1),
            format!("{} ms", f(write * 1e3, 3)),
            format!("{} ms", f(serde_parse * 1e3, 3)),
            format!("{} ms", f(sonic_parse * 1e3, 3)),
            format!("{} ns", f(ours_lookup, 1)),
            format!("{} ns", f(serde_lookup, 1)),
            format!("{} ns", f(sonic_lookup, 1)),
            format!("{} ns", f(lazy_lookup, 0)),
            ratio(serde_parse / write),
            ratio(lazy_lookup / ours_lookup),
        ]);
    }
    t.print();
    Ok(())
}
