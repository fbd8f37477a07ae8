//! An index built by the sorter over documents already there (`create_index` after the
//! writes) holds exactly the keys of one kept current write by write (`create_index`
//! before them), and both answer queries as a model does (a scan of the documents), through
//! checkpoints, packing and reopening.

use crate::{Database, DatabaseOptions, Query};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// One write: put document `id` with `tag` (a string, a number, or missing) and `tags`, or
/// delete it.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Put {
        id: u8,
        tag: Option<Tag>,
        tags: Vec<u8>,
    },
    Delete(u8),
    Checkpoint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tag {
    Text(u8),
    Number(i16),
}

fn op() -> impl Strategy<Value = Op> {
    let tag = prop_oneof![
        (0u8..12).prop_map(Tag::Text),
        (-50i16..50).prop_map(Tag::Number)
    ];
    prop_oneof![
        6 => (0u8..40, proptest::option::of(tag), proptest::collection::vec(0u8..6, 0..4))
            .prop_map(|(id, tag, tags)| Op::Put { id, tag, tags }),
        2 => (0u8..40).prop_map(Op::Delete),
        1 => Just(Op::Checkpoint),
    ]
}

/// A document as the model keeps it: its `tag` and its `tags`.
pub(crate) type ModelDoc = (Option<Tag>, Vec<u8>);

/// JSON text of `tag` (strings of different lengths, so that keys of different lengths sort
/// together).
pub(crate) fn tag_json(tag: &Tag) -> String {
    match tag {
        Tag::Text(t) => format!(r#""t{t:02} {}""#, "x".repeat(*t as usize)),
        Tag::Number(n) => n.to_string(),
    }
}

fn json_of((tag, tags): &ModelDoc) -> String {
    let tags: Vec<String> = tags.iter().map(|t| format!(r#""k{t}""#)).collect();
    match tag {
        Some(tag) => format!(r#"{{"tag":{},"tags":[{}]}}"#, tag_json(tag), tags.join(",")),
        None => format!(r#"{{"tags":[{}]}}"#, tags.join(",")),
    }
}

pub(crate) fn apply(db: &Database, ops: &[Op], model: &mut BTreeMap<String, ModelDoc>) {
    for op in ops {
        match op {
            Op::Put { id, tag, tags } => {
                let id = format!("d{id:02}");
                let doc = (tag.clone(), tags.clone());
                let mut b = db.batch();
                b.put_json("c", &id, json_of(&doc).as_bytes()).unwrap();
                db.commit(b).unwrap();
                model.insert(id, doc);
            }
            Op::Delete(id) => {
                let id = format!("d{id:02}");
                let mut b = db.batch();
                b.delete("c", &id).unwrap();
                db.commit(b).unwrap();
                model.remove(&id);
            }
            Op::Checkpoint => db.checkpoint().unwrap(),
        }
    }
}

/// Every key of index `name` on "c".
pub(crate) fn index_keys(db: &Database, name: &str) -> Vec<Vec<u8>> {
    let state = std::sync::Arc::clone(&db.snapshot().state);
    let ix = &state.indexes[&("c".to_owned(), name.to_owned())];
    let all = crate::index::packed::scan(
        &ix.map,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        false,
        None,
    );
    all.map(|k| k.unwrap()).collect()
}

/// Ids of the documents whose field `field` equals `value` (JSON), by the index.
fn ids_by_query(db: &Database, field: &str, value: &str) -> BTreeSet<String> {
    let out = db
        .snapshot()
        .query(&Query::new("c").eq(field, value))
        .unwrap();
    assert!(out.plan.index().is_some(), "{:?}", out.plan);
    out.rows.into_iter().map(|r| r.id).collect()
}

/// The ids the model says have `tag` equal to `value` (JSON text), or (with `in_tags`) an
/// element of `tags` equal to it.
fn ids_by_model(
    model: &BTreeMap<String, ModelDoc>,
    in_tags: bool,
    value: &str,
) -> BTreeSet<String> {
    model
        .iter()
        .filter(|(_, (tag, tags))| {
            if in_tags {
                tags.iter().any(|t| format!(r#""k{t}""#) == value)
            } else {
                tag.as_ref().is_some_and(|t| tag_json(t) == value)
            }
        })
        .map(|(id, _)| id.clone())
        .collect()
}

/// Ids of the documents with `tag` in [-10, "t06..."), in index order (numbers before
/// strings, then by value, then by id), by the index, ascending or descending.
pub(crate) fn range_by_query(db: &Database, descending: bool) -> Vec<String> {
    use std::ops::Bound::{Excluded, Included};
    let hi = tag_json(&Tag::Text(6));
    let q = Query::new("c")
        .range("tag", Included("-10"), Excluded(hi.as_str()))
        .order_by("tag", descending);
    let out = db.snapshot().query(&q).unwrap();
    assert!(out.plan.index().is_some(), "{:?}", out.plan);
    out.rows.into_iter().map(|r| r.id).collect()
}

/// The same by the model, ascending.
pub(crate) fn range_by_model(model: &BTreeMap<String, ModelDoc>) -> Vec<String> {
    model_hits(model, false)
}

/// The same by the model, descending (ties in id order).
pub(crate) fn range_by_model_desc(model: &BTreeMap<String, ModelDoc>) -> Vec<String> {
    model_hits(model, true)
}

fn model_hits(model: &BTreeMap<String, ModelDoc>, descending: bool) -> Vec<String> {
    let mut hits: Vec<((u8, i16, u8), String)> = model
        .iter()
        .filter_map(|(id, (tag, _))| match tag {
            Some(Tag::Number(n)) if *n >= -10 => Some(((0, *n, 0), id.clone())),
            Some(Tag::Text(t)) if *t < 6 => Some(((1, 0, *t), id.clone())),
            _ => None,
        })
        .collect();
    hits.sort_by(|a, b| {
        let by_key = if descending {
            b.0.cmp(&a.0)
        } else {
            a.0.cmp(&b.0)
        };
        by_key.then_with(|| a.1.cmp(&b.1))
    });
    hits.into_iter().map(|(_, id)| id).collect()
}

pub(crate) fn options() -> DatabaseOptions {
    DatabaseOptions::default()
        .idle_checkpoint(None)
        .background_compaction(false)
        .compact_layers(2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(12), ..ProptestConfig::default() })]

    #[test]
    fn built_by_the_sorter_equals_kept_write_by_write(ops in proptest::collection::vec(op(), 1..60)) {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let kept = Database::open_with(a.path(), options()).unwrap();
        let built = Database::open_with(b.path(), options()).unwrap();
        // An index on a collection that does not exist yet is refused; one document first.
        let seed = [Op::Put { id: 0, tag: None, tags: Vec::new() }];
        let (mut model_a, mut model_b) = (BTreeMap::new(), BTreeMap::new());
        apply(&kept, &seed, &mut model_a);
        apply(&built, &seed, &mut model_b);
        for (name, field) in [("by_tag", "tag"), ("by_tags", "tags[]")] {
            kept.create_index("c", name, &[field]).unwrap();
        }
        apply(&kept, &ops, &mut model_a);
        apply(&built, &ops, &mut model_b);
        for (name, field) in [("by_tag", "tag"), ("by_tags", "tags[]")] {
            built.create_index("c", name, &[field]).unwrap();
        }
        prop_assert_eq!(&model_a, &model_b);
        for name in ["by_tag", "by_tags"] {
            prop_assert_eq!(index_keys(&kept, name), index_keys(&built, name), "{}", name);
        }
        // Ranges across blocks, loose keys and removal marks, both ways.
        let want = range_by_model(&model_a);
        for db in [&kept, &built] {
            prop_assert_eq!(&range_by_query(db, false), &want);
            // Descending: ties (equal tags) still in id order.
            prop_assert_eq!(&range_by_query(db, true), &range_by_model_desc(&model_a));
        }
        // Closed (packed, checkpointed) and reopened: the same answers as the model.
        drop(kept);
        drop(built);
        for dir in [a.path(), b.path()] {
            let db = Database::open_with(dir, options()).unwrap();
            let values = (0..12u8)
                .map(Tag::Text)
                .chain([-50i16, -1, 0, 7, 49].map(Tag::Number));
            for tag in values {
                let v = tag_json(&tag);
                prop_assert_eq!(ids_by_query(&db, "tag", &v), ids_by_model(&model_a, false, &v));
            }
            prop_assert_eq!(&range_by_query(&db, false), &want);
            for t in 0..6u8 {
                let v = format!(r#""k{t}""#);
                prop_assert_eq!(ids_by_query(&db, "tags[]", &v), ids_by_model(&model_a, true, &v));
            }
        }
    }
}
