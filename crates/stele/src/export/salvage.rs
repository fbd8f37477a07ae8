//! Salvage: the export of a damaged collection, every readable document written and every
//! unreadable part reported (its file, offset and the ids it held), so that a user can keep
//! what is left.
//!
//! Why not the ordinary export: it reads the collection as one merged stream, which stops at
//! the first error (after an error its position is unknown). Here each of the collection's
//! two sources is read entry by entry, by position (`DurableMap::nth`), so a damaged entry
//! is skipped and the next one read: the packed blocks (`_packs/<collection>`, one entry a
//! block of documents) and the map of documents written since (one entry a document or a
//! removal mark). The two are merged by id as the reads do (the map wins on equal ids).
//!
//! What a loss can hide: a damaged map entry is an unknown id, so an older packed version of
//! that document (which the entry replaced or removed) may be exported in its place; the
//! report says where the entry was.

use super::{ExportError, ExportOptions, json_line};
use crate::compress::Decoder;
use crate::error::{Error, Result};
use crate::pack::{self, DecodedBlock};
use crate::snapshot::Snapshot;
use crate::state::State;
use crate::stored::{self, DocBytes};
use std::cmp::Ordering;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use stele_doc::JsonOptions;
use stele_durable::DurableMap;

/// A part of a collection that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lost {
    /// What it was: `packed block 3 of 15`, `unpacked entry 7 of 20`, `document "k1"`.
    pub part: String,
    /// The table files it is stored in (the layers of the map it belongs to; one after a
    /// compaction or an import).
    pub files: Vec<PathBuf>,
    /// Offset of the damaged table block in its file, when a table block's checksum or
    /// structure failed.
    pub offset: Option<u64>,
    /// Ids known to be lost (a block whose key was readable: its last id; a document that
    /// fails its check: its id).
    pub ids: Vec<String>,
    /// Every lost id is greater than this one (`None`: possibly from the first id)...
    pub after: Option<String>,
    /// ...and smaller than this one (`None`: possibly to the last id), the next id read.
    pub before: Option<String>,
    /// Why it could not be read.
    pub reason: String,
}

impl Lost {
    /// Document `id`, whose bytes were read but fail to decode or validate.
    fn document(id: &str, files: Vec<PathBuf>, e: &Error) -> Lost {
        Lost {
            part: format!("document {id:?}"),
            files,
            offset: None,
            ids: vec![id.to_owned()],
            after: None,
            before: None,
            reason: e.to_string(),
        }
    }
}

/// What a salvage wrote and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SalvageReport {
    /// Documents written.
    pub documents: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The unreadable parts, in the order met.
    pub lost: Vec<Lost>,
}

/// Writes every readable document of `collection` in `snapshot` to `out` as JSON Lines (id
/// order, as [`export_jsonl`](super::export_jsonl)), skipping and reporting each part that
/// cannot be read. Fails only if writing fails (or no decoder can be made).
pub fn export_salvage(
    snapshot: &Snapshot,
    collection: &str,
    out: impl Write,
    opts: &ExportOptions,
) -> std::result::Result<SalvageReport, ExportError> {
    let state: &State = &snapshot.state;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut report = SalvageReport::default();
    let mut lost = Losses::default();
    let mut map = Source::new(state.collections.get(collection));
    let mut blocks = Blocks::new(state, collection)?;
    let (mut line, json) = (Vec::new(), JsonOptions::default());
    let mut m = map.next(state, collection, &mut lost);
    let mut p = blocks.next(&mut lost);
    loop {
        let order = match (&m, &p) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        // The map's entry wins on equal ids (a newer version, or a removal).
        let next = if order == Ordering::Greater {
            let taken = p.take();
            p = blocks.next(&mut lost);
            taken.map(|(id, doc)| (id, Some(doc)))
        } else {
            if order == Ordering::Equal {
                p = blocks.next(&mut lost);
            }
            let taken = m.take();
            m = map.next(state, collection, &mut lost);
            taken
        };
        let Some((id, Some(doc))) = next else {
            continue;
        };
        let kind = state.marked_kind(collection);
        let key = id;
        let id = crate::ids::id_text(kind, key.clone());
        match doc.document() {
            Ok(view) => {
                json_line(&mut line, (&id, kind), &view, opts, &json);
                out.write_all(&line)?;
                report.documents += 1;
                report.bytes += line.len() as u64;
            }
            Err(e) => lost.push(Lost::document(&lossy(&key), Vec::new(), &e)),
        }
    }
    out.flush()?;
    // Losses name stored keys: as ids people use (integers in a collection of them).
    let kind = state.marked_kind(collection);
    let text =
        |key: &mut String| *key = crate::ids::id_text(kind, std::mem::take(key).into_bytes());
    report.lost = lost.done();
    for l in &mut report.lost {
        l.ids.iter_mut().for_each(text);
        l.after.iter_mut().for_each(text);
        l.before.iter_mut().for_each(text);
    }
    Ok(report)
}

/// The losses met, each waiting for the next id its source reads (its `before`).
#[derive(Default)]
struct Losses {
    done: Vec<Lost>,
    /// Indexes in `done` of losses of each source (map 0, blocks 1) awaiting `before`.
    open: [Vec<usize>; 2],
    /// Each source's last unreadable entry: its position, and the first position of the run
    /// of unreadable entries it ends (one damaged table block holds many).
    run: [Option<(u64, u64)>; 2],
}

impl Losses {
    fn push(&mut self, lost: Lost) {
        self.done.push(lost);
    }

    /// Entry `at` of `total` (a `noun`) of source `source` could not be read: a loss, or,
    /// right after one at the same damaged offset, a longer one.
    fn push_entry(&mut self, source: usize, at: u64, total: u64, noun: &str, lost: Lost) {
        let same_place = |last: &Lost| last.offset.is_some() && last.offset == lost.offset;
        if let Some((last_at, first)) = self.run[source]
            && last_at + 1 == at
            && let Some(last) = self.open[source].last().and_then(|&i| self.done.get_mut(i))
            && same_place(last)
        {
            last.part = format!("{noun}s {} to {} of {total}", first + 1, at + 1);
            self.run[source] = Some((at, first));
            return;
        }
        self.run[source] = Some((at, at));
        self.open[source].push(self.done.len());
        self.done.push(Lost {
            part: format!("{noun} {} of {total}", at + 1),
            ..lost
        });
    }

    /// Source `source` read `id`: the end of the range of its open losses.
    fn read(&mut self, source: usize, id: &[u8]) {
        for i in self.open[source].drain(..) {
            if let Some(lost) = self.done.get_mut(i) {
                lost.before = Some(String::from_utf8_lossy(id).into_owned());
            }
        }
    }

    fn done(self) -> Vec<Lost> {
        self.done
    }
}

/// The table files of `map` and the offset of the damaged table block `e` names, if any.
fn place(map: &DurableMap, e: &Error) -> (Vec<PathBuf>, Option<u64>) {
    let dir = map.store().dir();
    let files = map
        .layer_ids()
        .into_iter()
        .map(|id| dir.join(id.file_name()))
        .collect();
    let table = match e {
        Error::Table(t) | Error::Durable(stele_durable::Error::Table(t)) => Some(t),
        _ => None,
    };
    let offset = match table {
        Some(
            stele_table::Error::ChecksumMismatch { part, .. }
            | stele_table::Error::Corrupt { part, .. },
        ) => match part {
            stele_table::Part::Block { offset, .. } => Some(*offset),
            _ => None,
        },
        _ => None,
    };
    (files, offset)
}

/// The map of documents written since the last packing, read entry by entry.
struct Source<'a> {
    map: Option<&'a DurableMap>,
    next: u64,
    /// The last id read, the start of the range of a loss.
    last: Option<Vec<u8>>,
}

/// An entry of the map: its id and its document, `None` for a removal mark.
type MapEntry<'a> = (Vec<u8>, Option<DocBytes<'a>>);

impl<'a> Source<'a> {
    fn new(map: Option<&'a DurableMap>) -> Self {
        Source {
            map,
            next: 0,
            last: None,
        }
    }

    /// The next readable entry; unreadable ones go to `lost`.
    fn next(&mut self, state: &State, collection: &str, lost: &mut Losses) -> Option<MapEntry<'a>> {
        let map = self.map?;
        while self.next < map.len() {
            let at = self.next;
            self.next += 1;
            let (id, stored) = match map.nth(at) {
                Ok(Some(entry)) => entry,
                // Within `len` of a map that does not change: never.
                Ok(None) => return None,
                Err(e) => {
                    let e = Error::from(e);
                    let (files, offset) = place(map, &e);
                    lost.push_entry(
                        0,
                        at,
                        map.len(),
                        "unpacked entry",
                        Lost {
                            part: String::new(),
                            files,
                            offset,
                            ids: Vec::new(),
                            after: self.last.as_deref().map(lossy),
                            before: None,
                            reason: e.to_string(),
                        },
                    );
                    continue;
                }
            };
            let id = id.into_owned();
            lost.read(0, &id);
            self.last = Some(id.clone());
            if pack::is_removed(stored) {
                return Some((id, None));
            }
            match stored::decode(state, collection, &id, stored) {
                Ok(doc) => return Some((id, Some(doc))),
                Err(e) => lost.push(Lost::document(&lossy(&id), place(map, &e).0, &e)),
            }
        }
        None
    }
}

fn lossy(id: &[u8]) -> String {
    String::from_utf8_lossy(id).into_owned()
}

/// The packed blocks, read block by block.
struct Blocks<'a> {
    state: &'a State,
    collection: &'a str,
    packs: Option<&'a DurableMap>,
    next: u64,
    current: Option<(Arc<DecodedBlock>, usize)>,
    decoder: Decoder,
    /// The last id read, the start of the range of a loss.
    last: Option<Vec<u8>>,
}

impl<'a> Blocks<'a> {
    fn new(state: &'a State, collection: &'a str) -> Result<Self> {
        Ok(Blocks {
            state,
            collection,
            packs: state.packs(collection),
            next: 0,
            current: None,
            decoder: Decoder::new()?,
            last: None,
        })
    }

    /// The next readable packed document; unreadable blocks and documents go to `lost`.
    fn next(&mut self, lost: &mut Losses) -> Option<(Vec<u8>, DocBytes<'static>)> {
        let packs = self.packs?;
        loop {
            if let Some((block, i)) = &mut self.current
                && *i < block.len()
            {
                let at = *i;
                *i += 1;
                let id = block.id(at).to_vec();
                lost.read(1, &id);
                self.last = Some(id.clone());
                match DocBytes::in_block(self.state, self.collection, Arc::clone(block), at) {
                    Ok(doc) => return Some((id, doc)),
                    Err(e) => lost.push(Lost::document(&lossy(&id), place(packs, &e).0, &e)),
                }
            }
            self.current = None;
            if self.next >= packs.len() {
                return None;
            }
            let at = self.next;
            self.next += 1;
            let read = match packs.nth(at) {
                Ok(Some((last_id, value))) => {
                    let last_id = last_id.into_owned();
                    pack::load_block(
                        self.state,
                        self.collection,
                        &last_id,
                        value,
                        &mut self.decoder,
                    )
                    .map_err(|e| (e, Some(last_id)))
                }
                Ok(None) => continue,
                Err(e) => Err((Error::from(e), None)),
            };
            match read {
                Ok(block) => self.current = Some((block, 0)),
                Err((e, last_id)) => {
                    let (files, offset) = place(packs, &e);
                    lost.push_entry(
                        1,
                        at,
                        packs.len(),
                        "packed block",
                        Lost {
                            part: String::new(),
                            files,
                            offset,
                            ids: last_id.as_deref().map(lossy).into_iter().collect(),
                            after: self.last.as_deref().map(lossy),
                            before: None,
                            reason: e.to_string(),
                        },
                    );
                    // The block's last id, when read, is past every id it held.
                    if let Some(id) = last_id {
                        self.last = Some(id);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::export::{ExportOptions, export_salvage};
    use crate::{Database, DatabaseOptions};

    /// Documents written since the last packing (the map's diff table) with a byte flipped
    /// in the middle of that table: the damaged table block is one loss, named by its file
    /// and offset, and the documents before and after it are exported.
    #[test]
    fn a_damaged_unpacked_table_block_is_one_loss_and_the_rest_is_exported() {
        salvage_a_damaged_block(false);
    }

    /// The same with integer ids: the losses name them as integers, not stored keys.
    #[test]
    fn losses_of_integer_ids_name_the_integers() {
        salvage_a_damaged_block(true);
    }

    fn salvage_a_damaged_block(int_ids: bool) {
        let dir = tempfile::tempdir().expect("a folder");
        let opts = DatabaseOptions::default()
            .pack_on_close(false)
            .idle_checkpoint(None);
        let db = Database::open_with(dir.path(), opts).expect("open");
        for chunk in 0..4 {
            let mut batch = db.batch();
            for i in chunk * 500..(chunk + 1) * 500 {
                let json = format!("{{\"n\":{i},\"text\":\"{}\"}}", "word ".repeat(i % 30));
                match int_ids {
                    true => batch.put_json_int("c", i as i64, json.as_bytes()),
                    false => batch.put_json("c", &format!("k{i:05}"), json.as_bytes()),
                }
                .expect("put");
            }
            db.commit(batch).expect("commit");
        }
        db.close().expect("close");
        let reader = Database::open_read_only(dir.path()).expect("open to read");
        let layers = reader.snapshot().layers("c");
        assert_eq!(layers.len(), 1, "{layers:?}");
        let file = dir.path().join("tables").join(layers[0].file_name());
        drop(reader);
        let mut bytes = std::fs::read(&file).expect("the table");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&file, bytes).expect("damaged");

        let reader = Database::open_read_only(dir.path()).expect("open to read");
        let mut out = Vec::new();
        let report = export_salvage(&reader.snapshot(), "c", &mut out, &ExportOptions::new())
            .expect("a salvage");
        assert_eq!(report.lost.len(), 1, "{:?}", report.lost);
        let lost = &report.lost[0];
        assert!(lost.part.starts_with("unpacked entr"), "{lost:?}");
        assert_eq!(lost.files, [file]);
        assert!(lost.offset.is_some_and(|o| o <= middle as u64), "{lost:?}");
        assert!(lost.after.is_some() && lost.before.is_some(), "{lost:?}");
        if int_ids {
            let n = |id: &Option<String>| id.as_deref().and_then(|s| s.parse::<i64>().ok());
            assert!(
                matches!((n(&lost.after), n(&lost.before)), (Some(a), Some(b)) if a < b),
                "{lost:?}"
            );
        }
        let text = String::from_utf8(out).expect("UTF-8");
        let n: Vec<u64> = text
            .lines()
            .map(|l| {
                let at = l.find(':').expect("a field") + 1;
                let end = l.find(',').expect("two fields");
                l[at..end].parse().expect("a number")
            })
            .collect();
        assert_eq!(n.len() as u64, report.documents);
        assert!(n.len() > 1000 && n.len() < 2000, "{} exported", n.len());
        assert!(n.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((n[0], n[n.len() - 1]), (0, 1999), "both ends are whole");
    }
}
