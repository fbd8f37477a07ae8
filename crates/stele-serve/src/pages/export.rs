//! The whole result of a listing or a query, streamed as JSON Lines or CSV
//! (`/c/NAME.jsonl`, `/c/NAME.csv`, `/c/NAME/query.jsonl?...`, `/c/NAME/query.csv?...`).
//!
//! A thread of its own produces the bytes into a bounded channel that the answer reads
//! (chunked transfer encoding), so memory stays at a few chunks whatever the result's size,
//! and a client that goes away stops the producer at its next send. A failure midway ends
//! the answer without its last chunk: the client sees a cut transfer, never a short file
//! that looks whole.
//!
//! Lines: each document with its id as a first `_id` field (when it has none), as
//! `stele export --id-field _id` writes them. CSV: `_id` and the top-level fields of the
//! first [`CSV_SAMPLE`] documents as columns; strings as they are, other values as JSON.
//!
//! Time: an unsorted query is read in chunks of [`CHUNK`] documents by id, each chunk
//! within the request's time budget; a sorted one must be sorted whole, within one budget.

use super::{Ctx, Reply};
use crate::error::ServeError;
use crate::route::Format;
use serde_json::{Map, Value};
use std::io::{self, Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;
use stele::{Filter, Query, Snapshot};

/// Documents per query chunk.
const CHUNK: usize = 1000;
/// Documents whose top-level fields make the CSV columns.
const CSV_SAMPLE: usize = 1000;
/// Bytes per message of the channel, and messages it holds.
const PIECE: usize = 64 * 1024;
const QUEUE: usize = 8;

pub(crate) fn page(ctx: &Ctx<'_>, name: &str, query: Option<Query>) -> Result<Reply, ServeError> {
    let snap = ctx.snap.clone();
    let name = name.to_owned();
    let budget = ctx.deadline.budget();
    let sorted = !ctx.req.param("sort").trim().is_empty();
    let format = ctx.req.format;
    if let Some(q) = &query {
        // Fail before the answer starts when the query itself is wrong (a 400, not a cut
        // stream).
        snap.explain(q)?;
    }
    let reader = stream(move |out| {
        let mut sink = Sink::new(format, out);
        match query {
            None if format == Format::Jsonl => {
                let opts = stele::export::ExportOptions::new().id_field("_id");
                stele::export::export_jsonl(&snap, &name, &mut sink.out, &opts)
                    .map_err(|e| e.to_string())?;
                sink.finish()
            }
            None => {
                for entry in snap.iter(&name) {
                    let (id, doc) = entry.map_err(|e| e.to_string())?;
                    sink.row(&id, &doc.to_json().map_err(|e| e.to_string())?)?;
                }
                sink.finish()
            }
            Some(q) => {
                query_rows(&snap, q, sorted, budget, &mut sink)?;
                sink.finish()
            }
        }
    });
    let ct = match format {
        Format::Csv => "text/csv; charset=utf-8",
        _ => "application/x-ndjson",
    };
    Ok(Reply::Stream(ct, reader))
}

/// Runs `q` in chunks by id (unsorted) or whole (sorted), each within `budget`.
fn query_rows(
    snap: &Snapshot,
    q: Query,
    sorted: bool,
    budget: Duration,
    sink: &mut Sink<'_>,
) -> Result<(), String> {
    if sorted {
        let out = snap
            .query(&q.time_budget(budget))
            .map_err(|e| e.to_string())?;
        for r in out.rows {
            sink.row(&r.id, &r.json)?;
        }
        return Ok(());
    }
    let mut after: Option<String> = None;
    loop {
        let mut chunk = q.clone().limit(CHUNK).time_budget(budget);
        if let Some(id) = &after {
            let f = format!("{{\"_id\": {{\"$gt\": {}}}}}", Value::String(id.clone()));
            chunk = chunk.filter(Filter::parse(&f).map_err(|e| e.to_string())?);
        }
        let rows = snap.query(&chunk).map_err(|e| e.to_string())?.rows;
        for r in &rows {
            sink.row(&r.id, &r.json)?;
        }
        match rows.last() {
            Some(r) if rows.len() == CHUNK => after = Some(r.id.clone()),
            _ => return Ok(()),
        }
    }
}

/// Writes rows as JSON Lines or CSV.
struct Sink<'a> {
    format: Format,
    out: io::BufWriter<&'a mut ChannelWriter>,
    /// CSV: rows held until the columns are known.
    held: Vec<(String, Map<String, Value>)>,
    columns: Option<Vec<String>>,
}

impl<'a> Sink<'a> {
    fn new(format: Format, out: &'a mut ChannelWriter) -> Self {
        Sink {
            format,
            out: io::BufWriter::with_capacity(PIECE, out),
            held: Vec::new(),
            columns: None,
        }
    }

    fn row(&mut self, id: &str, json: &str) -> Result<(), String> {
        let mut obj = match serde_json::from_str::<Value>(json).map_err(|e| e.to_string())? {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                m
            }
        };
        if self.format == Format::Jsonl {
            let mut line = Map::new();
            if !obj.contains_key("_id") {
                line.insert("_id".into(), Value::String(id.to_owned()));
            }
            line.append(&mut obj);
            let text = Value::Object(line).to_string();
            return self.write(format!("{text}\n").as_bytes());
        }
        match &self.columns {
            None => {
                self.held.push((id.to_owned(), obj));
                if self.held.len() >= CSV_SAMPLE {
                    self.flush_held()?;
                }
                Ok(())
            }
            Some(cols) => {
                let line = csv_line(id, &obj, cols);
                self.write(line.as_bytes())
            }
        }
    }

    /// Decides the columns from the rows held, writes the header and the rows.
    fn flush_held(&mut self) -> Result<(), String> {
        let mut cols: Vec<String> = vec!["_id".into()];
        for (_, obj) in &self.held {
            for k in obj.keys() {
                if !cols.contains(k) {
                    cols.push(k.clone());
                }
            }
        }
        let header: Vec<String> = cols.iter().map(|c| csv_field(c)).collect();
        self.write(format!("{}\r\n", header.join(",")).as_bytes())?;
        let held = std::mem::take(&mut self.held);
        for (id, obj) in &held {
            self.write(csv_line(id, obj, &cols).as_bytes())?;
        }
        self.columns = Some(cols);
        Ok(())
    }

    fn finish(mut self) -> Result<(), String> {
        if self.format == Format::Csv && self.columns.is_none() {
            self.flush_held()?;
        }
        self.out.flush().map_err(|e| e.to_string())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.out.write_all(bytes).map_err(|e| e.to_string())
    }
}

/// One CSV record: `_id`, then each column's value (strings as they are, others as JSON;
/// a missing field empty).
fn csv_line(id: &str, obj: &Map<String, Value>, cols: &[String]) -> String {
    let fields: Vec<String> = cols
        .iter()
        .map(|c| match (c.as_str(), obj.get(c)) {
            (_, Some(Value::String(s))) => csv_field(s),
            (_, Some(v)) => csv_field(&v.to_string()),
            ("_id", None) => csv_field(id),
            (_, None) => String::new(),
        })
        .collect();
    format!("{}\r\n", fields.join(","))
}

/// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

enum Piece {
    Data(Vec<u8>),
    Failed(String),
}

/// The producing end: sends what is written in pieces; fails once the reader is gone.
pub(crate) struct ChannelWriter {
    tx: SyncSender<Piece>,
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tx
            .send(Piece::Data(buf.to_vec()))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The answering end: reads the pieces; a failure becomes a read error (the answer is cut).
struct ChannelReader {
    rx: Receiver<Piece>,
    piece: Vec<u8>,
    at: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.piece.len() {
            match self.rx.recv() {
                Ok(Piece::Data(d)) => {
                    self.piece = d;
                    self.at = 0;
                }
                Ok(Piece::Failed(e)) => return Err(io::Error::other(e)),
                // The producer is done.
                Err(_) => return Ok(0),
            }
        }
        let rest = self.piece.get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), rest.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.at += n;
        Ok(n)
    }
}

/// Runs `produce` on a thread of its own, its output read by the returned reader.
fn stream(
    produce: impl FnOnce(&mut ChannelWriter) -> Result<(), String> + Send + 'static,
) -> Box<dyn Read + Send> {
    let (tx, rx) = sync_channel(QUEUE);
    let mut w = ChannelWriter { tx: tx.clone() };
    std::thread::spawn(move || {
        if let Err(e) = produce(&mut w) {
            // The reader may be gone already; then nobody is left to tell.
            let _ = tx.send(Piece::Failed(e));
        }
    });
    Box::new(ChannelReader {
        rx,
        piece: Vec::new(),
        at: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\"\n"), "\"say \"\"hi\"\"\n\"");
        let obj: Map<String, Value> =
            serde_json::from_str(r#"{"a": 1, "b": "x,y", "c": [1, 2]}"#).unwrap_or_default();
        let cols = ["_id", "a", "b", "c", "d"].map(String::from);
        assert_eq!(csv_line("k1", &obj, &cols), "k1,1,\"x,y\",\"[1,2]\",\r\n");
    }

    #[test]
    fn a_failure_cuts_the_stream() {
        let mut r = stream(|w| {
            w.write_all(b"first").map_err(|e| e.to_string())?;
            Err("broken".into())
        });
        let mut out = Vec::new();
        let res = r.read_to_end(&mut out);
        assert_eq!(out, b"first");
        assert!(res.is_err());
    }
}
