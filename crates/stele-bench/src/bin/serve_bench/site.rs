//! The Stele server as the clients see it: its URLs, and the check of every answer against a
//! direct read of the database (the ids of a collection page; a document's every field, its
//! `rev` no newer than a direct read after the answer).
//!
//! The checks decode what they compare once: a listing's ids are read from its JSON without
//! building the documents, a document is compared with the value the generator makes (not
//! its text parsed back), and the direct read takes `rev` from the stored document in place.
//! The collection's ids are read directly once, before the load, and again after it
//! ([`SteleSite::ids_unchanged`]): the writer changes documents, never adds or removes one,
//! so the ids after a cursor are the same at every moment of the load (reading them again
//! for each answer decoded a block of packed documents: a fifth of the clients' CPU).

use crate::load::{self, Kind, Site};
use std::borrow::Cow;

pub struct SteleSite {
    base: String,
    db: stele::ReadOnlyDatabase,
    /// Every id of the collection, in id order, as read directly before the load.
    ids: Vec<String>,
}

/// The ids of a collection page's JSON twin (the rest of the answer is parsed, not kept).
#[derive(serde::Deserialize)]
struct ListIds<'a> {
    #[serde(borrow)]
    documents: Vec<IdOf<'a>>,
}

#[derive(serde::Deserialize)]
struct IdOf<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
}

/// A document's `rev` as read directly now.
fn direct_rev(db: &stele::ReadOnlyDatabase, id: &str) -> Result<u64, String> {
    db.refresh().map_err(|e| e.to_string())?;
    let snap = db.snapshot();
    let d = snap
        .get("docs", id)
        .map_err(|e| e.to_string())?
        .ok_or("missing in a direct read")?;
    let doc = d.document().map_err(|e| e.to_string())?;
    match doc.get("rev") {
        Some(stele_doc::Value::Int(n)) => u64::try_from(n).map_err(|_| "a negative rev".into()),
        Some(stele_doc::Value::UInt(n)) => Ok(n),
        _ => Err("no rev in a direct read".into()),
    }
}

/// The ids of the collection, read directly now.
fn read_ids(db: &stele::ReadOnlyDatabase) -> stele::Result<Vec<String>> {
    db.refresh()?;
    db.snapshot().ids("docs").collect()
}

impl SteleSite {
    /// The site at `base`, checked against `db` (its ids read now).
    pub fn new(base: String, db: stele::ReadOnlyDatabase) -> stele::Result<SteleSite> {
        let ids = read_ids(&db)?;
        Ok(SteleSite { base, db, ids })
    }

    /// Whether the collection's ids, read directly again, are those read before the load.
    pub fn ids_unchanged(&self) -> Result<(), String> {
        let now = read_ids(&self.db).map_err(|e| e.to_string())?;
        (now == self.ids).then_some(()).ok_or_else(|| {
            format!(
                "the collection's ids changed during the load ({} before, {} after): the list checks are void",
                self.ids.len(),
                now.len()
            )
        })
    }

    /// The 50 ids after `id`.
    fn want(&self, id: &str) -> &[String] {
        let start = self.ids.partition_point(|x| x.as_str() <= id);
        let end = (start + 50).min(self.ids.len());
        self.ids.get(start..end).unwrap_or_default()
    }
}

impl Site for SteleSite {
    fn url(&self, kind: Kind, id: &str) -> String {
        match kind {
            Kind::ListHtml => format!("{}c/docs?after={id}", self.base),
            Kind::ListJson => format!("{}c/docs.json?after={id}", self.base),
            Kind::DocHtml => format!("{}c/docs/d/{id}", self.base),
            Kind::DocJson => format!("{}c/docs/d/{id}.json", self.base),
        }
    }

    fn check(&self, kind: Kind, id: &str, body: &str) -> Result<(), String> {
        match kind {
            Kind::ListHtml => {
                let got = load::linked_ids(body, "<tr><td><a href=\"/c/docs/d/");
                (got == self.want(id))
                    .then_some(())
                    .ok_or_else(|| format!("ids {got:?}"))
            }
            Kind::ListJson => {
                let list: ListIds<'_> = serde_json::from_str(body).map_err(|e| e.to_string())?;
                let want = self.want(id);
                let same = list.documents.len() == want.len()
                    && list.documents.iter().zip(want).all(|(g, w)| g.id == *w);
                same.then_some(()).ok_or_else(|| {
                    let got: Vec<&str> = list.documents.iter().map(|d| &*d.id).collect();
                    format!("ids {got:?}")
                })
            }
            Kind::DocHtml => {
                let n: u64 = id.trim_start_matches('d').parse().map_err(|_| "bad id")?;
                let ok = body.contains(&format!("<h1 class=\"docid\">{id}</h1>"))
                    && body.contains(&format!("customer {n}"));
                ok.then_some(())
                    .ok_or_else(|| "id or name missing".to_owned())
            }
            Kind::DocJson => {
                let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
                let n: u64 = id.trim_start_matches('d').parse().map_err(|_| "bad id")?;
                let rev = v["document"]["rev"].as_u64().ok_or("no rev")?;
                if v["document"] != crate::doc_value(n, rev) {
                    return Err(format!("document {}", v["document"]));
                }
                // The page's rev is no newer than a direct read after it.
                let after = direct_rev(&self.db, id)?;
                (rev <= after)
                    .then_some(())
                    .ok_or_else(|| format!("rev {rev} newer than the direct read's {after}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn site() -> (tempfile::TempDir, SteleSite) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("db");
        crate::build(&path, 120).unwrap_or_else(|e| panic!("build: {e}"));
        let db = stele::Database::open_read_only(&path).unwrap_or_else(|e| panic!("open: {e}"));
        let base = "http://127.0.0.1:1/".to_owned();
        let site = SteleSite::new(base, db).unwrap_or_else(|e| panic!("ids: {e}"));
        (dir, site)
    }

    fn listing(ids: impl Iterator<Item = u64>) -> String {
        let docs: Vec<_> = ids
            .map(|i| json!({"id": crate::id(i), "stored_bytes": 1, "document": crate::doc_value(i, 0)}))
            .collect();
        json!({"collection": "docs", "documents": docs, "next": null}).to_string()
    }

    fn rows(ids: impl Iterator<Item = u64>) -> String {
        ids.map(|i| {
            format!(
                "<tr><td><a href=\"/c/docs/d/{0}\">{0}</a></td></tr>",
                crate::id(i)
            )
        })
        .collect()
    }

    #[test]
    fn right_answers_pass_and_wrong_ones_are_caught() {
        let (_dir, s) = site();
        let after = crate::id(10);
        // Collection pages: the 50 ids after the cursor, in order, no more, no fewer.
        assert_eq!(s.check(Kind::ListJson, &after, &listing(11..61)), Ok(()));
        assert!(s.check(Kind::ListJson, &after, &listing(12..62)).is_err());
        assert!(s.check(Kind::ListJson, &after, &listing(11..60)).is_err());
        assert!(
            s.check(Kind::ListJson, &after, &listing((11..61).rev()))
                .is_err()
        );
        assert!(
            s.check(Kind::ListJson, &after, "{\"documents\": [")
                .is_err()
        );
        assert_eq!(s.check(Kind::ListHtml, &after, &rows(11..61)), Ok(()));
        assert!(s.check(Kind::ListHtml, &after, &rows(11..62)).is_err());
        assert!(
            s.check(Kind::ListHtml, &after, &rows((11..60).chain(70..71)))
                .is_err()
        );
        // The tail of the collection: fewer than 50.
        assert_eq!(
            s.check(Kind::ListJson, &crate::id(100), &listing(101..120)),
            Ok(())
        );
        // Document pages: every field, and no rev newer than the database's.
        let id = crate::id(7);
        let page = |d: serde_json::Value| json!({"id": id, "document": d}).to_string();
        assert_eq!(
            s.check(Kind::DocJson, &id, &page(crate::doc_value(7, 0))),
            Ok(())
        );
        let mut wrong = crate::doc_value(7, 0);
        wrong["amount"] = json!(1);
        assert!(s.check(Kind::DocJson, &id, &page(wrong)).is_err());
        let mut extra = crate::doc_value(7, 0);
        extra["x"] = json!(null);
        assert!(s.check(Kind::DocJson, &id, &page(extra)).is_err());
        assert!(
            s.check(Kind::DocJson, &id, &page(crate::doc_value(8, 0)))
                .is_err()
        );
        let newer = s.check(Kind::DocJson, &id, &page(crate::doc_value(7, 3)));
        assert!(newer.is_err_and(|e| e.contains("newer")));
        let html =
            format!("<h1 class=\"docid\">{id}</h1><span class=\"s\">&quot;customer 7&quot;</span>");
        assert_eq!(s.check(Kind::DocHtml, &id, &html), Ok(()));
        assert!(
            s.check(
                Kind::DocHtml,
                &id,
                &html.replace("customer 7", "customer 8")
            )
            .is_err()
        );
    }

    #[test]
    fn a_changed_set_of_ids_voids_the_list_checks() {
        let (dir, s) = site();
        assert_eq!(s.ids_unchanged(), Ok(()));
        let db = stele::Database::open(dir.path().join("db")).unwrap_or_else(|e| panic!("{e}"));
        let mut b = db.batch();
        b.put_json("docs", "d00000055x", b"{}")
            .unwrap_or_else(|e| panic!("{e}"));
        db.commit(b).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.ids_unchanged().is_err());
    }
}
