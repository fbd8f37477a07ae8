//! Which fields a collection is queried on, chosen from its documents (so the benchmark
//! runs on any collection, including ones no one here has looked at), among top-level
//! string and number fields present in at least half the documents (`_id` left out: in
//! Stele it names the document id):
//! - `cat`: 2 to 5,000 distinct values, the commonest covering at most half; the most
//!   distinct values wins, strings before numbers;
//! - `num`: another field with the most distinct values, numbers before strings.
//!
//! The query constants come from the same documents: the commonest `cat` value, rarer
//! ones (at most 100 documents each, up to 200 of them) for selective queries, and
//! `num`'s median.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone)]
pub struct Fields {
    pub cat: String,
    pub num: String,
    /// The commonest value of `cat`, as JSON.
    pub common: String,
    /// The next commonest (the commonest again if `cat` has one value), as JSON.
    pub second: String,
    /// Values of `cat` held by 1 to 100 documents, as JSON.
    pub rare: Vec<String>,
    /// The median of `num`, as JSON.
    pub median: String,
}

#[derive(Default)]
struct Seen {
    values: HashMap<String, usize>,
    numbers: usize,
    strings: usize,
    sorted: Vec<Value>,
}

pub fn choose(docs: &[&[u8]]) -> Option<Fields> {
    let mut fields: HashMap<String, Seen> = HashMap::new();
    for d in docs {
        let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(d) else {
            continue;
        };
        for (k, v) in m {
            if k == "_id" || !(v.is_string() || v.is_number()) {
                continue;
            }
            let s = fields.entry(k).or_default();
            if v.is_number() {
                s.numbers += 1;
            } else {
                s.strings += 1;
            }
            *s.values.entry(v.to_string()).or_default() += 1;
            s.sorted.push(v);
        }
    }
    let half = docs.len() / 2;
    let present = |s: &Seen| s.numbers.max(s.strings) >= half.max(1);
    let (cat, cat_seen) = fields
        .iter()
        .filter(|(_, s)| {
            let n: usize = s.values.values().sum();
            let top = s.values.values().max().copied().unwrap_or(0);
            present(s) && (2..=5000).contains(&s.values.len()) && top * 2 <= n
        })
        .max_by_key(|(k, s)| {
            (
                s.strings > s.numbers,
                s.values.len(),
                std::cmp::Reverse((*k).clone()),
            )
        })?;
    let (num, num_seen) = fields
        .iter()
        .filter(|(k, s)| present(s) && *k != cat)
        .max_by_key(|(k, s)| {
            (
                s.numbers > s.strings,
                s.values.len(),
                std::cmp::Reverse((*k).clone()),
            )
        })?;
    let numeric = num_seen.numbers > num_seen.strings;
    let mut sorted: Vec<&Value> = num_seen
        .sorted
        .iter()
        .filter(|v| v.is_number() == numeric)
        .collect();
    sorted.sort_by(|a, b| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        _ => a
            .as_str()
            .unwrap_or("")
            .as_bytes()
            .cmp(b.as_str().unwrap_or("").as_bytes()),
    });
    let median = sorted.get(sorted.len() / 2)?.to_string();
    let by_count: BTreeMap<usize, Vec<&String>> =
        cat_seen
            .values
            .iter()
            .fold(BTreeMap::new(), |mut m, (v, n)| {
                m.entry(*n).or_default().push(v);
                m
            });
    let common = (*by_count.iter().next_back()?.1.iter().min()?).clone();
    // By count then value, the commonest first.
    let mut ranked: Vec<(&usize, &String)> = by_count
        .iter()
        .rev()
        .flat_map(|(n, vs)| {
            let mut vs = vs.clone();
            vs.sort();
            vs.into_iter().map(move |v| (n, v))
        })
        .collect();
    ranked.dedup();
    let second = ranked
        .get(1)
        .map_or_else(|| common.clone(), |(_, v)| (*v).clone());
    let rare: Vec<String> = by_count
        .range(1..=100)
        .rev()
        .flat_map(|(_, vs)| vs.iter().map(|v| (*v).clone()))
        .take(200)
        .collect();
    Some(Fields {
        cat: cat.clone(),
        num: num.clone(),
        common,
        second,
        rare,
        median,
    })
}
