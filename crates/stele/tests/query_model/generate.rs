//! The query model's generated documents and queries (`super`: the model and the checks).

use super::{Q, cmp};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::cmp::Ordering;

// ---------- documents ----------

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-4i64..5).prop_map(|n| json!(n)),
        (-4i64..5).prop_map(|n| json!(n as f64 + 0.5)),
        Just(serde_json::from_str("18446744073709551615").unwrap()),
        Just(serde_json::from_str("2.50").unwrap()),
        prop::sample::select(vec!["", "a", "ab", "b", "é", "ü✓", "a\u{0}b"]).prop_map(|s| json!(s)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..4).prop_map(Value::Array),
        1 => scalar().prop_map(|c| json!({"c": c})),
    ]
}

fn item() -> impl Strategy<Value = Value> {
    (prop::option::of(scalar()), prop::option::of(-2i64..3)).prop_map(|(sku, qty)| {
        let mut m = serde_json::Map::new();
        if let Some(s) = sku {
            m.insert("sku".into(), s);
        }
        if let Some(q) = qty {
            m.insert("qty".into(), json!(q));
        }
        Value::Object(m)
    })
}

pub(super) fn document() -> impl Strategy<Value = Value> {
    (
        prop::option::of(value()),
        prop::option::of(value()),
        prop::option::of(prop::collection::vec(
            prop::sample::select(vec!["x", "y", "z", "ab"]).prop_map(|s| json!(s)),
            0..4,
        )),
        prop::option::of(prop::collection::vec(item(), 0..3)),
    )
        .prop_map(|(a, c, tags, items)| {
            let mut m = serde_json::Map::new();
            if let Some(a) = a {
                m.insert("a".into(), a);
            }
            if let Some(c) = c {
                m.insert("b".into(), json!({ "c": c }));
            }
            if let Some(t) = tags {
                m.insert("tags".into(), Value::Array(t));
            }
            if let Some(i) = items {
                m.insert("items".into(), Value::Array(i));
            }
            Value::Object(m)
        })
}

// ---------- filters ----------

const PATHS: [&str; 9] = [
    "a",
    "b.c",
    "tags",
    "tags.0",
    "items.sku",
    "items.qty",
    "_id",
    "nope",
    "b",
];

fn operand() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => scalar(),
        1 => prop::sample::select(vec!["d03", "d10", "d2"]).prop_map(|s| json!(s)),
        1 => prop::sample::select(vec![-37i64, 0, 9, 10, 100, 12345]).prop_map(|n| json!(n)),
        1 => prop::sample::select(vec!["x", "z"]).prop_map(|s| json!(s)),
        1 => Just(json!({"c": 1})),
        1 => Just(json!([1, 2])),
    ]
}

fn condition() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => operand(),
        2 => (prop::sample::select(vec!["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), operand())
            .prop_map(|(op, v)| json!({ op: v })),
        2 => (operand(), operand()).prop_filter_map("ordered", |(lo, hi)| {
            (cmp(&lo, &hi) != Ordering::Greater).then(|| json!({"$gte": lo, "$lt": hi}))
        }),
        1 => (prop::sample::select(vec!["$in", "$nin", "$all"]), prop::collection::vec(operand(), 0..3))
            .prop_filter("non-empty $all", |(op, v)| *op != "$all" || !v.is_empty())
            .prop_map(|(op, v)| json!({ op: v })),
        1 => any::<bool>().prop_map(|b| json!({"$exists": b})),
        1 => prop::sample::select(vec!["null", "bool", "number", "integer", "string", "object", "array"])
            .prop_map(|t| json!({"$type": t})),
        1 => (0u64..3).prop_map(|n| json!({"$size": n})),
        1 => prop::sample::select(vec!["", "a", "d0", "x"]).prop_map(|p| json!({"$prefix": p})),
        1 => operand().prop_map(|v| json!({"$not": {"$gt": v}})),
        1 => operand().prop_map(|v| json!({"$elemMatch": {"$gte": v}})),
        1 => (-1i64..2).prop_map(|q| json!({"$elemMatch": {"qty": {"$gte": q}}})),
    ]
}

fn filter() -> impl Strategy<Value = Value> {
    let leaf =
        (prop::sample::select(PATHS.to_vec()), condition()).prop_map(|(p, c)| json!({ p: c }));
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            (
                prop::sample::select(vec!["$and", "$or", "$nor"]),
                prop::collection::vec(inner.clone(), 1..3)
            )
                .prop_map(|(op, fs)| json!({ op: fs })),
            prop::collection::vec(inner, 1..3).prop_map(|fs| {
                let mut m = serde_json::Map::new();
                for f in fs {
                    if let Value::Object(o) = f {
                        m.extend(o);
                    }
                }
                Value::Object(m)
            }),
        ]
    })
}

/// A query: mostly any filter and sort, sometimes one an index can serve by merging key
/// ranges ([`in_list_sort`]).
pub(super) fn query() -> impl Strategy<Value = Q> {
    let any_query = (
        filter(),
        prop::collection::vec(
            (
                prop::sample::select(vec!["a", "b.c", "tags", "items.qty", "_id"]),
                any::<bool>(),
            ),
            0..3,
        ),
        prop_oneof![Just(0usize), 0usize..4],
        prop::option::of(1usize..6),
    )
        .prop_map(|(filter, sort, skip, limit)| Q {
            filter,
            sort,
            skip,
            limit,
        });
    prop_oneof![4 => any_query, 1 => in_list_sort()]
}

/// `$in` of scalars on the first field of an index of `super::INDEXES` and a sort on its
/// second (`b.c` then `a`, `tags` then `a`, `a` then `tags`), maybe with a condition on the
/// sorted field, a skip and a limit: over several key ranges, merged when no array stands
/// in the way (`stele::query::entries`).
fn in_list_sort() -> impl Strategy<Value = Q> {
    (
        prop::sample::select(vec![("b.c", "a"), ("tags", "a"), ("a", "tags")]),
        prop::collection::vec(scalar(), 2..5),
        prop::option::of(condition()),
        any::<bool>(),
        prop_oneof![Just(0usize), 0usize..4],
        prop::option::of(1usize..6),
    )
        .prop_map(|((first, sorted), values, on_sorted, desc, skip, limit)| {
            let mut filter = serde_json::Map::new();
            filter.insert(first.into(), json!({ "$in": values }));
            if let Some(c) = on_sorted {
                filter.insert(sorted.into(), c);
            }
            Q {
                filter: Value::Object(filter),
                sort: vec![(sorted, desc)],
                skip,
                limit,
            }
        })
}
