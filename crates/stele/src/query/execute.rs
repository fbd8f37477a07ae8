//! Running a query: the chosen access path yields documents, each is tested against the
//! whole filter, and the collector keeps rows in the order asked (`collect.rs`).

use super::collect::{Collector, Rows};
use super::entries::index_entries;
use super::explain::{Access, Plan};
use super::filter::Cond;
use super::plan::{self, Chosen, IndexAccess};
use super::run::Run;
use super::{CountOutput, Query, QueryOutput};
use crate::collection::{Near, get_near};
use crate::error::{Error, Result};
use crate::index::cache::KeyBlockCache;
use crate::snapshot::Snapshot;
use crate::state::IndexState;
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// Ids an index access collects and sorts before reading their documents, when the
/// collector does not need them in index order: a batch bounds the memory of a broad
/// range, and sorting it puts the ids of one packed block together.
const ID_ORDER_BATCH: usize = 4_096;

impl Snapshot {
    /// Runs `query`: its rows, the plan that ran and what it examined. See the
    /// [module documentation](crate::query) for the language.
    pub fn query(&self, query: &Query) -> Result<QueryOutput> {
        query.check()?;
        let query = &*super::int_ids::for_state(&self.state, query);
        let run = Run::new(query.time_budget);
        let (chosen, plan) = self.plan(query);
        let mut rows = Rows::new(query, chosen.sorted(&query.sort));
        self.feed(query, &chosen, &run, &mut rows)?;
        let mut rows = rows.finish(query, &run)?;
        super::int_ids::rows_for(&self.state, &query.collection, &mut rows);
        let stats = run.stats(rows.len() as u64);
        Ok(QueryOutput {
            plan: Plan {
                sorted_in_memory: !chosen.sorted(&query.sort),
                ..plan
            },
            rows,
            stats,
        })
    }

    /// Runs `query` and keeps only what it did: the plan, the candidates and the counts.
    pub fn explain(&self, query: &Query) -> Result<QueryOutput> {
        let mut out = self.query(query)?;
        out.rows.clear();
        Ok(out)
    }

    /// Counts the documents `query` matches (after its skip and limit). From an index's keys
    /// alone when every condition of the filter is on the fields of the index chosen and can
    /// be decided from one key (equality, `$in`, ranges, `$prefix`, `$exists`): then
    /// [`QueryStats::docs_examined`] is 0.
    pub fn count_matching(&self, query: &Query) -> Result<CountOutput> {
        query.check()?;
        let query = &*super::int_ids::for_state(&self.state, query);
        let run = Run::new(query.time_budget);
        // A count neither sorts nor projects: the query without them, borrowed when it has
        // none (cloning the whole query was a sixth of a count over 11 documents).
        let unsorted = if query.sort.is_empty() && query.projection.is_none() {
            std::borrow::Cow::Borrowed(query)
        } else {
            std::borrow::Cow::Owned(Query {
                sort: Vec::new(),
                projection: None,
                ..query.clone()
            })
        };
        let unsorted = &*unsorted;
        let (chosen, mut plan) = self.plan(unsorted);
        // The key conditions, found once: they decide whether the keys alone answer, and
        // then test each entry.
        let keyed = match &chosen {
            Chosen::Index(access) => Some((
                access,
                super::keys::key_conditions(&query.filter, access.ix),
            )),
            _ => None,
        };
        let mut count = match keyed {
            Some((access, (conds, true))) => {
                if let Access::Index { covered, .. } = &mut plan.access {
                    *covered = true;
                }
                self.count_keys(access, &conds, &run)?
            }
            _ => {
                let mut rows = Rows::counting();
                self.feed(unsorted, &chosen, &run, &mut rows)?;
                rows.count()
            }
        };
        count = count.saturating_sub(query.skip as u64);
        if let Some(limit) = query.limit {
            count = count.min(limit as u64);
        }
        Ok(CountOutput {
            count,
            plan,
            stats: run.stats(count),
        })
    }

    pub(crate) fn plan<'s>(&'s self, query: &Query) -> (Chosen<'s>, Plan) {
        let coll = query.collection.as_str();
        let indexes: Vec<&'s IndexState> = self
            .state
            .indexes
            .range((coll.to_owned(), String::new())..)
            .take_while(|((c, _), _)| c == coll)
            .map(|(_, ix)| ix)
            .collect();
        let mut considered = Vec::new();
        let chosen = plan::choose(&query.filter, &query.sort, &indexes, &mut considered);
        let plan = Plan {
            access: chosen.access(),
            sorted_in_memory: false,
            considered,
        };
        (chosen, plan)
    }

    /// Feeds every document the access yields that passes the filter to `out`.
    pub(crate) fn feed(
        &self,
        query: &Query,
        chosen: &Chosen<'_>,
        run: &Run,
        out: &mut dyn Collector,
    ) -> Result<()> {
        match chosen {
            Chosen::Full => super::scan::full_scan(self, query, run, out),
            Chosen::IdRange(lo, hi) => {
                let lo = lo
                    .as_ref()
                    .map_or(Bound::Unbounded, |s| Bound::Included(s.as_bytes().to_vec()));
                let hi = match hi {
                    Some((h, true)) => Bound::Included(h.as_bytes().to_vec()),
                    Some((h, false)) => Bound::Excluded(h.as_bytes().to_vec()),
                    None => Bound::Unbounded,
                };
                super::scan::scan_stretch(self, query, run, &(lo, hi), out)
            }
            Chosen::Ids(ids) => {
                let ids: BTreeSet<&String> = ids.iter().collect();
                self.fetch_ids(query, ids.into_iter().map(String::as_str), run, out)
            }
            Chosen::Index(access) => self.index_feed(query, access, run, out),
            Chosen::Union(parts) => {
                let mut ids = BTreeSet::new();
                for part in parts {
                    self.collect_ids(query, part, run, &mut ids)?;
                }
                self.fetch_ids(query, ids.iter().map(String::as_str), run, out)
            }
        }
    }

    fn fetch_ids<'i>(
        &self,
        query: &Query,
        ids: impl Iterator<Item = &'i str>,
        run: &Run,
        out: &mut dyn Collector,
    ) -> Result<()> {
        let mut near = Near::default();
        for (n, id) in ids.enumerate() {
            if n.is_multiple_of(256) {
                run.check()?;
            }
            if self.fetch(query, id, run, out, &mut near, Hit::default())? == Some(false) {
                break;
            }
        }
        Ok(())
    }

    /// Reads document `id`, tests it (unless its index entry decided the filter) and hands
    /// it to `out` if it passes (with the key its entry gives for a served sort, see
    /// [`Collector::take_sorted`]): `None` if there is no such document, else whether `out`
    /// wants more.
    fn fetch(
        &self,
        query: &Query,
        id: &str,
        run: &Run,
        out: &mut dyn Collector,
        near: &mut Near,
        hit: Hit<'_>,
    ) -> Result<Option<bool>> {
        // `id` is the stored key (an integer id's is not its text).
        let Some(doc) = get_near(&self.state, &query.collection, id.as_bytes(), near)? else {
            return Ok(None);
        };
        run.docs.fetch_add(1, Ordering::Relaxed);
        let d = doc.document()?;
        if hit.decided || query.filter.matches(d.root(), id) {
            return match hit.sort {
                Some(key) => out.take_sorted(id, &d, key),
                None => out.take(id, &d),
            }
            .map(Some);
        }
        Ok(Some(true))
    }

    /// The ids an access yields (a `$or` branch), without reading documents where an index
    /// gives them.
    fn collect_ids(
        &self,
        query: &Query,
        part: &Chosen<'_>,
        run: &Run,
        ids: &mut BTreeSet<String>,
    ) -> Result<()> {
        match part {
            Chosen::Ids(list) => ids.extend(list.iter().cloned()),
            Chosen::Index(access) => {
                let (conds, _) = super::keys::key_conditions(&query.filter, access.ix);
                index_entries(access, &conds, run, self.index_blocks(), |id, _| {
                    ids.insert(String::from_utf8_lossy(id).into_owned());
                    Ok(true)
                })?;
            }
            other => {
                let mut all = super::collect::Ids(Vec::new());
                let q = Query {
                    filter: super::Filter::all(),
                    ..query.clone()
                };
                self.feed(&q, other, run, &mut all)?;
                ids.extend(all.0);
            }
        }
        Ok(())
    }

    fn index_feed(
        &self,
        query: &Query,
        access: &IndexAccess<'_>,
        run: &Run,
        out: &mut dyn Collector,
    ) -> Result<()> {
        let mut near = Near::default();
        // When the entries' key conditions are the whole filter (as for a covered count),
        // an entry that passes them decides its document: the filter is not run again on it.
        let (conds, decided) = super::keys::key_conditions(&query.filter, access.ix);
        let by_index = Hit {
            decided,
            sort: None,
        };
        let missing = |id: &str| Error::InvalidQuery {
            reason: format!(
                "index {:?} names document {id:?}, which does not exist (drop the index and create it again)",
                access.ix.def.name
            ),
        };
        if access.sorted || !out.any_order() {
            // The rows' order is the index's: documents are read as their entries come.
            // A served sort's rows tie when their entries' sort fields do: the collector
            // takes that instead of computing each document's sort key.
            index_entries(access, &conds, run, self.index_blocks(), |id, sort| {
                let hit = Hit {
                    sort: access.sorted.then_some(sort),
                    ..by_index
                };
                let id = String::from_utf8_lossy(id);
                self.fetch(query, &id, run, out, &mut near, hit)?
                    .ok_or_else(|| missing(&id))
            })?;
            return Ok(());
        }
        // The collector orders what it keeps itself: the ids are read in id order, a batch
        // at a time, so the documents of one packed block are found in it one after the
        // other (`Near`) rather than each through the packs map and the block cache.
        // The batch's ids lie in one buffer (`spans` says where): no allocation per id.
        let mut bytes: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut wants_more = true;
        let mut drain = |bytes: &mut Vec<u8>, spans: &mut Vec<(usize, usize)>| -> Result<bool> {
            let id_at = |&(a, b): &(usize, usize)| bytes.get(a..b).unwrap_or_default();
            spans.sort_unstable_by(|x, y| id_at(x).cmp(id_at(y)));
            let mut more = true;
            for span in spans.iter() {
                let id = String::from_utf8_lossy(id_at(span));
                if !self
                    .fetch(query, &id, run, out, &mut near, by_index)?
                    .ok_or_else(|| missing(&id))?
                {
                    more = false;
                    break;
                }
            }
            bytes.clear();
            spans.clear();
            Ok(more)
        };
        index_entries(access, &conds, run, self.index_blocks(), |id, _| {
            spans.push((bytes.len(), bytes.len() + id.len()));
            bytes.extend_from_slice(id);
            if spans.len() >= ID_ORDER_BATCH {
                wants_more = drain(&mut bytes, &mut spans)?;
            }
            Ok(wants_more)
        })?;
        if wants_more {
            drain(&mut bytes, &mut spans)?;
        }
        Ok(())
    }

    /// The database's cache of decoded index blocks.
    fn index_blocks(&self) -> &KeyBlockCache {
        &self.state.packing.index_blocks
    }

    /// Counts the distinct documents whose entries meet the key conditions `conds`.
    fn count_keys(
        &self,
        access: &IndexAccess<'_>,
        conds: &[Option<&Cond>],
        run: &Run,
    ) -> Result<u64> {
        let mut n = 0u64;
        index_entries(access, conds, run, self.index_blocks(), |_, _| {
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }
}

/// What an index entry tells about the document it names, for [`Snapshot::fetch`].
#[derive(Default, Clone, Copy)]
struct Hit<'k> {
    /// The entry met key conditions that are the whole filter: the document matches.
    decided: bool,
    /// For a sort the index serves: what stands for the document's sort key.
    sort: Option<&'k [u8]>,
}
