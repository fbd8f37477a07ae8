//! SQLite's side: the documents in two tables, as JSON text (`docs`) and as JSONB (`docsb`,
//! `jsonb(text)`), each with its id as the primary key; the same questions in SQL over
//! `json_extract`, and the expression indexes on the two fields.

use anyhow::Result;
use rusqlite::{Connection, params};

pub struct Sql {
    conn: Connection,
    cat: String,
    num: String,
}

/// A JSON path naming a top-level field, quoted (`$."name"`).
fn path(field: &str) -> String {
    format!("$.\"{}\"", field.replace('"', "\\\""))
}

/// A JSON scalar as the SQL value `json_extract` gives for it.
fn sql_value(json: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::String(s)) => V::Text(s),
        Ok(serde_json::Value::Number(n)) => match n.as_i64() {
            Some(i) => V::Integer(i),
            None => V::Real(n.as_f64().unwrap_or(0.0)),
        },
        _ => V::Null,
    }
}

impl Sql {
    pub fn build(file: &std::path::Path, docs: &[&[u8]], cat: &str, num: &str) -> Result<Sql> {
        let _ = std::fs::remove_file(file);
        let conn = Connection::open(file)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-262144;
             CREATE TABLE docs(id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID;
             CREATE TABLE docsb(id TEXT PRIMARY KEY, body BLOB) WITHOUT ROWID;",
        )?;
        let tx = conn.unchecked_transaction()?;
        {
            let mut a = tx.prepare("INSERT INTO docs VALUES (?1, ?2)")?;
            let mut b = tx.prepare("INSERT INTO docsb VALUES (?1, jsonb(?2))")?;
            for (i, d) in docs.iter().enumerate() {
                let id = format!("{i:09}");
                let text = std::str::from_utf8(d)?;
                a.execute(params![id, text])?;
                b.execute(params![id, text])?;
            }
        }
        tx.commit()?;
        Ok(Sql {
            conn,
            cat: path(cat),
            num: path(num),
        })
    }

    fn table(jsonb: bool) -> &'static str {
        if jsonb { "docsb" } else { "docs" }
    }

    pub fn create_indexes(&self, _cat: &str, _num: &str) -> Result<()> {
        for (t, name) in [("docs", "ix_t"), ("docsb", "ix_b")] {
            self.conn.execute_batch(&format!(
                "CREATE INDEX {name} ON {t}(json_extract(body, '{c}'), json_extract(body, '{n}')); ANALYZE;",
                c = self.cat,
                n = self.num
            ))?;
        }
        Ok(())
    }

    pub fn count_two(&self, jsonb: bool, cat: &str, median: &str) -> Result<u64> {
        let sql = format!(
            "SELECT count(*) FROM {} WHERE json_extract(body, '{}') = ?1 AND json_extract(body, '{}') > ?2",
            Self::table(jsonb),
            self.cat,
            self.num
        );
        let n: i64 = self
            .conn
            .prepare_cached(&sql)?
            .query_row(params![sql_value(cat), sql_value(median)], |r| r.get(0))?;
        Ok(n as u64)
    }

    pub fn group(&self, jsonb: bool) -> Result<usize> {
        let sql = format!(
            "SELECT json_extract(body, '{}') AS k, count(*) FROM {} GROUP BY k",
            self.cat,
            Self::table(jsonb)
        );
        let mut st = self.conn.prepare_cached(&sql)?;
        let mut rows = st.query([])?;
        let mut n = 0;
        while rows.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    fn rows(&self, sql: &str, p: impl rusqlite::Params) -> Result<usize> {
        let mut st = self.conn.prepare_cached(sql)?;
        let mut rows = st.query(p)?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let body: String = r.get(1)?;
            std::hint::black_box(body);
            n += 1;
        }
        Ok(n)
    }

    fn body(jsonb: bool) -> &'static str {
        if jsonb { "json(body)" } else { "body" }
    }

    pub fn top20(&self, jsonb: bool) -> Result<usize> {
        let sql = format!(
            "SELECT id, {} FROM {} ORDER BY json_extract(body, '{}') DESC LIMIT 20",
            Self::body(jsonb),
            Self::table(jsonb),
            self.num
        );
        self.rows(&sql, [])
    }

    pub fn selective(&self, jsonb: bool, cat: &str, median: &str) -> Result<usize> {
        let sql = format!(
            "SELECT id, {} FROM {} WHERE json_extract(body, '{}') = ?1 AND json_extract(body, '{}') > ?2",
            Self::body(jsonb),
            Self::table(jsonb),
            self.cat,
            self.num
        );
        self.rows(&sql, params![sql_value(cat), sql_value(median)])
    }

    pub fn sort_within(&self, jsonb: bool, cat: &str) -> Result<usize> {
        let sql = format!(
            "SELECT id, {} FROM {} WHERE json_extract(body, '{}') = ?1 ORDER BY json_extract(body, '{}') DESC LIMIT 20",
            Self::body(jsonb),
            Self::table(jsonb),
            self.cat,
            self.num
        );
        self.rows(&sql, params![sql_value(cat)])
    }

    /// The sort within a category with a range on the sorted field (the median and above).
    pub fn ranged_sort(&self, jsonb: bool, cat: &str, median: &str) -> Result<usize> {
        let sql = format!(
            "SELECT id, {} FROM {} WHERE json_extract(body, '{}') = ?1 AND json_extract(body, '{}') > ?2 ORDER BY json_extract(body, '{}') DESC LIMIT 20",
            Self::body(jsonb),
            Self::table(jsonb),
            self.cat,
            self.num,
            self.num
        );
        self.rows(&sql, params![sql_value(cat), sql_value(median)])
    }

    /// The sort within two categories (`IN`), the 20 largest.
    pub fn in_two_sort(&self, jsonb: bool, cat: &str, second: &str) -> Result<usize> {
        let sql = format!(
            "SELECT id, {} FROM {} WHERE json_extract(body, '{}') IN (?1, ?2) ORDER BY json_extract(body, '{}') DESC LIMIT 20",
            Self::body(jsonb),
            Self::table(jsonb),
            self.cat,
            self.num
        );
        self.rows(&sql, params![sql_value(cat), sql_value(second)])
    }
}
