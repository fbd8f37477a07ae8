//! The per-collection compression policy: when to train a dictionary, when to retrain, and
//! whether to adopt the result. Pure logic plus zstd; the database persists what it hands out.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use zstd::bulk;
use zstd::zstd_safe::{CParameter, FrameFormat, ParamSwitch};

use super::codec::{Codec, DictionaryId, MAX_BLOCK_DOCS, encode_raw, put_varint};
use crate::{Error, Result};

/// Document bytes from which [`Compressor::compress_many`] compresses on a second thread:
/// below it, starting the thread (about 20 us) costs more than it saves. A byte count, not a
/// document count: 248 documents of 1.4 KB (mongodb-samples/countries-small, 340 KB) were
/// compressed on one thread under the former rule of 256 documents.
pub const PARALLEL_COMPRESS_BYTES: usize = 64 * 1024;

/// Options of a collection's [`Compressor`]. Defaults come from `stele-bench`'s
/// `compress_bench` over every collection in the shared data (see `docs/benchmarks.md`).
#[derive(Debug, Clone)]
pub struct CompressOptions {
    /// Compress at all. Off: every document is stored raw (one header byte), nothing is
    /// trained. Default on.
    pub enabled: bool,
    /// zstd level. Higher levels shrink small documents only slightly (they are dominated by
    /// what the dictionary already holds) and cost write throughput. Default 3.
    pub level: i32,
    /// zstd level of blocks ([`Compressor::compress_block`]). Blocks are built where documents
    /// are grouped (compaction), off the write path, and gain far more from a higher level
    /// than single documents do: level 9 stores palbum__images' 16 KB blocks 1.6x smaller
    /// than level 3, decodes as fast, and costs about twice the CPU to compress. Default 9.
    pub block_level: i32,
    /// Maximum size of a trained dictionary in bytes; a dictionary is also at most
    /// `1/dictionary_sample_ratio` of the bytes it is trained on, so that small collections
    /// do not pay for a dictionary bigger than what it saves. Bigger dictionaries cover more of
    /// a varied collection but cost training time, memory per reader (prepared dictionaries
    /// are a few times their size), storage (every adopted one is kept while documents use it)
    /// and help little on uniform ones. Default 32 KiB.
    pub dictionary_bytes: usize,
    /// See `dictionary_bytes`. Default 10 (zstd suggests samples of ~100x the dictionary;
    /// below 10x dictionaries stop paying for themselves on small collections).
    pub dictionary_sample_ratio: usize,
    /// Documents seen before the first dictionary is trained; until then documents are
    /// compressed without one (or stored raw when that is smaller). Fewer: the dictionary comes
    /// sooner but is fitted to fewer documents (the retraining on a full ring of
    /// `sample_docs` corrects that). Default 64: smaller than RavenDB's 256, measured better
    /// on every small collection and equal on the big ones.
    pub train_after: usize,
    /// Recent documents kept as training samples (at least `train_after`). When the ring first
    /// fills after the first training, one more training runs on it (adopted only if better).
    /// Default 1024.
    pub sample_docs: usize,
    /// Memory bound on the kept samples, in bytes. Default 8 MiB.
    pub sample_bytes: usize,
    /// Longest prefix of one document kept as a sample. Default 16 KiB.
    pub sample_doc_bytes: usize,
    /// Documents per ratio measurement window. Default 512.
    pub window_docs: usize,
    /// Retrain when a window's stored/raw ratio is worse than the best window since the
    /// current dictionary was adopted by this factor (1.15 = 15 % bigger). Lower retrains more
    /// often (each training costs milliseconds to a second). Default 1.15.
    pub retrain_drift: f64,
    /// A new dictionary is adopted only if it stores held-out recent documents at least this
    /// fraction smaller than the current one (0.02 = 2 %), and (when replacing one) if that
    /// saving over `sample_docs` documents exceeds its own size. Avoids churning dictionaries
    /// (each one is kept while any document uses it). Default 0.02.
    pub adoption_margin: f64,
    /// Retrain on a background thread, so that compressing (and the commit waiting for it)
    /// never waits for a training: documents keep using the current dictionary until the
    /// new one is ready, handed out and adopted. Only retrainings of a dictionary trained on
    /// at least half a ring of samples go to the background; the first training, and the one
    /// that replaces a dictionary trained on fewer samples, run in line in
    /// [`Compressor::take_new_dictionary`] (at most two per collection: a collection of a
    /// few thousand documents would otherwise finish its ingest before its real dictionary
    /// arrives). Off: every training runs in line there (deterministic, for tests and
    /// benchmarks of the policy). Default off; the database turns it on.
    pub background_training: bool,
    /// With `background_training`, run the first training (and the retraining of a
    /// provisional dictionary) on the background thread too: no commit ever waits for a
    /// training, and documents written before the first dictionary arrives stay compressed
    /// without one. Right when documents are stored one by one only for a while (the
    /// database packs them into blocks at compaction); a small collection written in one
    /// go then may never get a dictionary at all. Default off.
    pub background_first_training: bool,
    /// Train each dictionary on the stream forms (`stele_doc::stream`) of every other sample
    /// instead of the documents, so that it serves blocks of stream forms
    /// ([`BlockPacker::pack_documents`]) as well as documents compressed one by one. In the
    /// database such dictionaries store packed collections up to a quarter smaller
    /// (github-webhooks 3.76x -> 2.71x of whole-file zstd -3, mdn-compat-features 1.43x ->
    /// 1.34x, twitter tweets 1.22x -> 1.14x) and documents stored one by one before
    /// compaction 0-10 % bigger (`docs/benchmarks.md`, "Stream blocks"). A training costs
    /// what it did (as many sample bytes) plus turning half the samples into streams.
    /// Default off; the database turns it on when it packs stream forms.
    pub stream_samples: bool,
    /// Spend less CPU on documents compressed one by one, for a database that compresses
    /// them again when it packs them ([`BlockPacker`], at compaction): trainings during
    /// writes build one dictionary with fixed fastCover parameters (`k` = 1024, `d` = 8)
    /// instead of searching five values of `k` for the best, and documents compressed
    /// before the first dictionary leave their literals unencoded (zstd's Huffman stage
    /// builds a table per document, which costs twice the rest of level 1 on documents of
    /// a few hundred bytes, and without a dictionary most of them do not shrink anyway).
    /// On the benchmark collections each training costs a fifth to a quarter of the CPU,
    /// and its dictionary stores held-out documents within 3 % of the searched one's size,
    /// as often smaller as bigger (vega-flights' tiny documents: 7 % bigger); documents
    /// without a dictionary take a third of the CPU (big ones: 0.6) for 0-20 % more bytes;
    /// together, collections of a few hundred to a few thousand documents ingest up to
    /// twice as fast (`docs/benchmarks.md`, "Lighter ingest-time compression"). The
    /// dictionaries that [`Compressor::train_for_blocks`] trains for packing still search
    /// `k`. Default off; the database turns it on when it packs.
    pub light_ingest: bool,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            enabled: true,
            level: 3,
            block_level: 9,
            dictionary_bytes: 32 * 1024,
            dictionary_sample_ratio: 10,
            train_after: 64,
            sample_docs: 1024,
            sample_bytes: 8 << 20,
            sample_doc_bytes: 16 * 1024,
            window_docs: 512,
            retrain_drift: 1.15,
            adoption_margin: 0.02,
            background_training: false,
            background_first_training: false,
            stream_samples: false,
            light_ingest: false,
        }
    }
}

/// A dictionary the compressor trained and found better than the current one. Not used for
/// anything until it comes back through [`Compressor::adopt`], which the database calls only
/// after it has stored [`NewDictionary::bytes`] durably under [`NewDictionary::id`]: no
/// document can be written with a dictionary the database might lose.
pub struct NewDictionary {
    id: DictionaryId,
    bytes: Vec<u8>,
    cctx: bulk::Compressor<'static>,
    /// Stored bytes of the held-out samples with this dictionary and with the current setup.
    eval: (usize, usize),
    /// Samples it was trained on.
    trained_on: usize,
    /// Trained for packed blocks ([`Compressor::train_for_blocks`]), on stream forms.
    for_blocks: bool,
    /// While this lives (handed out, neither adopted nor dropped) the compressor trains
    /// nothing: a dictionary trained meanwhile would be measured against a setup that is
    /// about to change, and a caller that adopts only after its batch is durable would
    /// otherwise collect one proposal per `train_after` documents of a big batch.
    _outstanding: Arc<()>,
}

impl std::fmt::Debug for NewDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewDictionary")
            .field("id", &self.id)
            .field("bytes", &self.bytes.len())
            .field("eval", &self.eval)
            .finish_non_exhaustive()
    }
}

impl NewDictionary {
    /// Its id: unique in the collection, greater than every id handed out before.
    pub fn id(&self) -> DictionaryId {
        self.id
    }

    /// The raw dictionary, to persist (and to load into `Dictionaries` for reading).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes the held-out samples took with this dictionary, and with the one in use when it
    /// was trained (or none).
    pub fn evaluation(&self) -> (usize, usize) {
        self.eval
    }
}

#[path = "retrain.rs"]
mod retrain;
pub use retrain::{
    BlockTrained, BlockTraining, MAX_BLOCK_GROWTH, MIN_BLOCK_DOCS, PackTarget, block_is_full,
};

/// Every `HELD_OUT_EVERY`-th sample is kept out of a training, to judge its dictionary.
const HELD_OUT_EVERY: usize = 8;

/// Smallest dictionary worth training (zstd's trainer needs room for its header and tables).
const MIN_DICTIONARY_BYTES: usize = 1024;

/// Most doublings of the wait between trainings that produce nothing (see
/// `Compressor::failed_trainings`): at most 1024x the normal spacing.
const MAX_BACKOFF_SHIFT: u32 = 10;

/// The parameters of zstd's fastCover trainer that matter: segment size `k` and d-mer
/// size `d`. zstd's default training tries five values of `k` and keeps the best
/// dictionary; once a collection's data has chosen them, later trainings reuse them and
/// build one dictionary instead of five.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CoverParams {
    k: u32,
    d: u32,
}

/// The trainer's parameters when they are not searched ([`CompressOptions::light_ingest`]):
/// zstd's middle `k` of the range it searches and its default `d`. On the benchmark
/// collections the `k` a search picks stores held-out documents at most 3 % smaller than
/// this one (vega-flights 7 %), and as often bigger.
const FIXED_COVER_PARAMS: CoverParams = CoverParams { k: 1024, d: 8 };

/// Trains a dictionary of at most `size` bytes on `samples` with zstd's fastCover trainer:
/// with `params`, once; without, searching `k` as `ZDICT_trainFromBuffer` does (d = 8,
/// 4 steps, the same dictionary as `zstd::dict::from_samples`). `None` when zstd finds the
/// input unusable (too few or too small samples), which only means "no dictionary".
fn train_fast_cover(
    samples: &[&[u8]],
    size: usize,
    level: i32,
    params: Option<CoverParams>,
) -> Option<(Vec<u8>, CoverParams)> {
    fast_cover(samples, size, level, params, None)
}

/// Trains a dictionary as the compressor does, with its choices exposed, for benchmarks
/// of them (`compress_bench`): `k` fixed (with `d` = 8) or `None` to search as zstd's
/// default training does; `table_log` the log2 of the trainer's d-mer table, or `None` to
/// size it to the samples as the compressor does (zstd's own default is 20). Returns the
/// dictionary (at most `size` bytes) and the `k` used, or `None` when zstd trains nothing.
#[doc(hidden)]
pub fn train_dictionary(
    samples: &[&[u8]],
    size: usize,
    level: i32,
    k: Option<u32>,
    table_log: Option<u32>,
) -> Option<(Vec<u8>, u32)> {
    let params = k.map(|k| CoverParams { k, d: 8 });
    let table_log = table_log.map(|f| f.clamp(1, 31));
    fast_cover(samples, size, level, params, table_log).map(|(dict, p)| (dict, p.k))
}

/// [`train_fast_cover`] with fastCover's `f` given, or (`None`) sized to the samples
/// ([`frequency_table_log`]).
fn fast_cover(
    samples: &[&[u8]],
    size: usize,
    level: i32,
    params: Option<CoverParams>,
    table_log: Option<u32>,
) -> Option<(Vec<u8>, CoverParams)> {
    use zstd::zstd_safe::zstd_sys;
    let count = u32::try_from(samples.len()).ok()?;
    let mut flat = Vec::with_capacity(samples.iter().map(|s| s.len()).sum());
    let mut sizes = Vec::with_capacity(samples.len());
    for s in samples {
        flat.extend_from_slice(s);
        sizes.push(s.len());
    }
    let mut dict = vec![0u8; size];
    // Zeros are zstd's defaults (accel = 1, split point, no shrinking).
    let mut p = zstd_sys::ZDICT_fastCover_params_t {
        k: params.map_or(0, |p| p.k),
        d: params.map_or(8, |p| p.d),
        f: table_log.unwrap_or_else(|| frequency_table_log(flat.len())),
        steps: if params.is_some() { 0 } else { 4 },
        nbThreads: 0,
        splitPoint: 0.0,
        accel: 0,
        shrinkDict: 0,
        shrinkDictMaxRegression: 0,
        zParams: zstd_sys::ZDICT_params_t {
            compressionLevel: level,
            notificationLevel: 0,
            dictID: 0,
        },
    };
    let written = match params {
        // SAFETY: `dict` is writable for `dict.len()` bytes; `flat` holds exactly the sum of
        // `sizes` bytes and `sizes` has `count` entries; zstd reads and writes nothing else
        // and keeps no pointer after returning.
        Some(_) => unsafe {
            zstd_sys::ZDICT_trainFromBuffer_fastCover(
                dict.as_mut_ptr().cast(),
                dict.len(),
                flat.as_ptr().cast(),
                sizes.as_ptr(),
                count,
                p,
            )
        },
        // SAFETY: as above; `p` is a valid parameter struct that zstd fills with the
        // parameters it chose.
        None => unsafe {
            zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(
                dict.as_mut_ptr().cast(),
                dict.len(),
                flat.as_ptr().cast(),
                sizes.as_ptr(),
                count,
                &mut p,
            )
        },
    };
    // SAFETY: a pure function of an integer.
    if unsafe { zstd_sys::ZDICT_isError(written) } != 0 || written > dict.len() {
        return None;
    }
    dict.truncate(written);
    Some((dict, CoverParams { k: p.k, d: p.d }))
}

/// zstd's fastCover `f` for `sample_bytes` of samples: the log2 of the entries of its
/// d-mer frequency table. zstd's default, 20, allocates and clears 4 MiB for the table and
/// 6 MiB more for each `k` it tries, whatever the input; most of a training on a few
/// dozen small documents went into those page faults (and the TLB shootdowns they cause
/// on the thread that commits). A table of at least twice as many entries as there are
/// d-mers in the samples (one per byte, at most) keeps collisions as rare as the default
/// does on inputs of half a MiB; bigger inputs keep the default.
fn frequency_table_log(sample_bytes: usize) -> u32 {
    const MIN_LOG: u32 = 12;
    const DEFAULT_LOG: u32 = 20;
    let entries = sample_bytes.saturating_mul(2).max(1);
    let log = usize::BITS - (entries - 1).leading_zeros();
    log.clamp(MIN_LOG, DEFAULT_LOG)
}

/// What a training needs, owned, so that it can run on another thread.
#[derive(Clone)]
struct TrainJob {
    /// Samples shared with the compressor's ring (no copy).
    samples: Vec<Arc<[u8]>>,
    /// The dictionary in use (to compare against), or none.
    current: Option<Arc<[u8]>>,
    level: i32,
    dictionary_bytes: usize,
    dictionary_sample_ratio: usize,
    adoption_margin: f64,
    cap_docs: usize,
    /// Trainer parameters chosen by an earlier training of the collection, if any.
    params: Option<CoverParams>,
    /// Train on the samples' stream forms too ([`CompressOptions::stream_samples`]).
    stream_samples: bool,
    /// [`CompressOptions::light_ingest`]: compare against documents compressed by
    /// [`document_context`] as the compressor does.
    light: bool,
}

/// A trained dictionary that beat the setup it was trained against.
struct Trained {
    params: CoverParams,
    trained_on: usize,
    /// Trained for packed blocks (`train_for_blocks`), not for documents.
    for_blocks: bool,
    bytes: Vec<u8>,
    cctx: bulk::Compressor<'static>,
    eval: (usize, usize),
}

/// A training running on a background thread.
struct Running {
    handle: JoinHandle<Result<Option<Trained>>>,
}

struct Current {
    id: DictionaryId,
    cctx: bulk::Compressor<'static>,
    /// The same dictionary at `block_level`, made on first use.
    block: Option<bulk::Compressor<'static>>,
    /// Shared with background trainings, which compare against it.
    bytes: Arc<[u8]>,
    /// Samples it was trained on (`usize::MAX` when resumed: unknown, taken as a full ring).
    trained_on: usize,
    /// Trained for packed blocks, on stream forms: provisional for documents compressed
    /// one by one (see [`Compressor::provisional`]).
    for_blocks: bool,
    /// Whether the one training on a full ring that a provisional dictionary (trained on
    /// less than half a ring, or for blocks) gets has started.
    ring_tried: bool,
}

/// Counters of what a compressor did (for logs and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompressStats {
    /// Documents compressed.
    pub docs: u64,
    /// Trainings run.
    pub trainings: u64,
    /// Trainings whose dictionary beat the current setup (handed out).
    pub candidates: u64,
    /// Dictionaries adopted.
    pub adopted: u64,
}

/// One collection's compression policy: compresses documents into stored values and trains,
/// retrains and proposes dictionaries as documents flow through it.
///
/// ```text
/// let stored = c.compress(doc)?;            // uses only persisted dictionaries
/// if let Some(d) = c.take_new_dictionary() { // trained from recent documents, better
///     db.persist_dictionary(d.id(), d.bytes())?; // durably, before any use
///     dicts.insert(d.id(), d.bytes())?;
///     c.adopt(d)?;                           // later documents use it
/// }
/// ```
pub struct Compressor {
    opts: CompressOptions,
    plain: bulk::Compressor<'static>,
    /// A second context with the dictionary in force (its id; `None`: no dictionary) for
    /// [`Compressor::compress_many`]'s helper thread, made on first use.
    helper: Option<(Option<DictionaryId>, bulk::Compressor<'static>)>,
    plain_block: Option<bulk::Compressor<'static>>,
    current: Option<Current>,
    candidate: Option<NewDictionary>,
    /// Alive while a handed-out candidate is neither adopted nor dropped.
    outstanding: Weak<()>,
    /// The background training, if one runs.
    running: Option<Running>,
    /// Trainings in a row that produced no candidate; each doubles the samples the next one
    /// waits for, so that a collection whose ratio keeps drifting without any dictionary
    /// helping (or that does not compress at all) stops paying for trainings.
    failed_trainings: u32,
    /// Trainer parameters the collection's first dictionary trained on at least half a
    /// ring was built with; later trainings reuse them (one dictionary built instead of
    /// five).
    cover_params: Option<CoverParams>,
    /// The last id handed out or resumed from; the next is one more.
    last_id: DictionaryId,
    samples: VecDeque<Arc<[u8]>>,
    sample_total: usize,
    /// Samples added since the last training (or since start).
    fresh_samples: usize,
    /// A training is due: it runs when the caller next asks for a dictionary
    /// ([`Compressor::take_new_dictionary`]), on every sample kept by then. A caller that
    /// can use a dictionary only after its batch is durable asks once per batch, so the
    /// training sees the whole batch (a 1,000-document first batch trains once on 1,000
    /// documents instead of on the first 64).
    due: bool,
    window: (usize, usize, usize),
    best_window: Option<f64>,
    scratch: Vec<u8>,
    block: Vec<u8>,
    stats: CompressStats,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("opts", &self.opts)
            .field("current", &self.current.as_ref().map(|c| c.id))
            .field("candidate", &self.candidate)
            .field("training", &self.running.is_some())
            .field("last_id", &self.last_id)
            .field("samples", &self.samples.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn zstd_io(op: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::Zstd {
        op,
        message: e.to_string(),
    }
}

/// A compression context with our frame settings (magicless, no checksum, no dictionary id,
/// no content size: the stored-value header carries what is needed).
fn context(level: i32, dict: Option<&[u8]>) -> Result<bulk::Compressor<'static>> {
    let mut c = match dict {
        Some(d) => bulk::Compressor::with_dictionary(level, d),
        None => bulk::Compressor::new(level),
    }
    .map_err(zstd_io("create compression context"))?;
    for p in [
        CParameter::Format(FrameFormat::Magicless),
        CParameter::ChecksumFlag(false),
        CParameter::DictIdFlag(false),
        CParameter::ContentSizeFlag(false),
    ] {
        c.set_parameter(p).map_err(zstd_io("set frame parameter"))?;
    }
    Ok(c)
}

/// The context that compresses documents one by one, with `dict` or without one: as
/// [`context`], and without one also without Huffman coding of literals when `light`
/// ([`CompressOptions::light_ingest`]).
fn document_context(
    level: i32,
    dict: Option<&[u8]>,
    light: bool,
) -> Result<bulk::Compressor<'static>> {
    let mut c = context(level, dict)?;
    if light && dict.is_none() {
        c.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))
            .map_err(zstd_io("set literal compression"))?;
    }
    Ok(c)
}

/// Compresses `docs` together with `cctx` (made with dictionary `dict_id`, 0 for none) into
/// a block value in `out` (cleared first); `joined` and `scratch` are reused buffers.
fn encode_block(
    cctx: &mut bulk::Compressor<'static>,
    dict_id: DictionaryId,
    docs: &[&[u8]],
    joined: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    if docs.is_empty() || docs.len() > MAX_BLOCK_DOCS as usize {
        return Err(Error::Zstd {
            op: "compress block",
            message: format!(
                "a block holds 1 to {MAX_BLOCK_DOCS} documents, not {}",
                docs.len()
            ),
        });
    }
    // The frame holds the length table, then the documents (see `codec`'s layout).
    joined.clear();
    for d in docs {
        put_varint(joined, d.len() as u64);
    }
    for d in docs {
        joined.extend_from_slice(d);
    }
    compress_joined(
        cctx,
        Codec::Block,
        dict_id,
        docs.len(),
        joined,
        scratch,
        out,
    )
}

/// Compresses the frame content `joined` of a block of `count` entries into a stored value of
/// `codec` in `out`.
fn compress_joined(
    cctx: &mut bulk::Compressor<'static>,
    codec: Codec,
    dict_id: DictionaryId,
    count: usize,
    joined: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    scratch.clear();
    scratch.reserve(zstd::zstd_safe::compress_bound(joined.len()));
    cctx.compress_to_buffer(joined, scratch)
        .map_err(zstd_io("compress"))?;
    out.clear();
    out.push(codec as u8);
    put_varint(out, u64::from(dict_id));
    put_varint(out, count as u64);
    put_varint(out, joined.len() as u64);
    out.extend_from_slice(scratch);
    Ok(())
}

/// Compresses runs of documents into block values with one fixed setup (level and
/// dictionary), independent of any [`Compressor`]'s training: what the database uses to pack
/// a collection's documents at compaction, off the write path.
pub struct BlockPacker {
    pub(super) cctx: bulk::Compressor<'static>,
    pub(super) dict_id: DictionaryId,
    pub(super) joined: Vec<u8>,
    pub(super) scratch: Vec<u8>,
    /// Stream forms of documents, checked by rebuilding them ([`super::streams`]).
    pub(super) writer: stele_doc::DocumentWriter,
    pub(super) forms: super::streams::FormChoice,
    pub(super) stream_forms: super::streams::Forms,
    pub(super) doc_forms: super::streams::Forms,
    /// The block in the form a trial did not keep.
    pub(super) alternative: Vec<u8>,
}

impl std::fmt::Debug for BlockPacker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockPacker")
            .field("dict_id", &self.dict_id)
            .finish_non_exhaustive()
    }
}

impl BlockPacker {
    /// A packer at zstd `level` with `dictionary` (its id and bytes as persisted), if any.
    /// Preparing a dictionary at a high level takes a few milliseconds: make one per run.
    pub fn new(level: i32, dictionary: Option<(DictionaryId, &[u8])>) -> Result<BlockPacker> {
        let (cctx, dict_id) = match dictionary {
            Some((id, bytes)) => (context(level, Some(bytes))?, id),
            None => (context(level, None)?, 0),
        };
        Ok(BlockPacker {
            cctx,
            dict_id,
            joined: Vec::new(),
            scratch: Vec::new(),
            writer: stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options()),
            forms: super::streams::FormChoice::new(),
            stream_forms: super::streams::Forms::default(),
            doc_forms: super::streams::Forms::default(),
            alternative: Vec::new(),
        })
    }

    /// Compresses `docs` (1 to [`MAX_BLOCK_DOCS`]) into one block value in `out` (cleared
    /// first), decoded by [`super::Decoder::decode_block`].
    pub fn pack(&mut self, docs: &[&[u8]], out: &mut Vec<u8>) -> Result<()> {
        encode_block(
            &mut self.cctx,
            self.dict_id,
            docs,
            &mut self.joined,
            &mut self.scratch,
            out,
        )
    }

    /// Compresses `keys` (strictly ascending, at most [`super::MAX_KEY_BYTES`] each) and
    /// their `values` (1 to [`MAX_BLOCK_DOCS`] of each, as many values as keys) into one keyed
    /// block value in `out` (cleared first); [`super::Decoder::decode_block`] yields the keys,
    /// then the values.
    pub fn pack_keyed(
        &mut self,
        keys: &[&[u8]],
        values: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.pack_keyed_as(Codec::KeyedBlock, keys, values, out)
    }

    /// [`Self::pack_keyed`] under `codec` ([`Codec::KeyedBlock`], or [`Codec::StreamBlock`]
    /// when the values are stream forms; the layout is the same).
    pub(super) fn pack_keyed_as(
        &mut self,
        codec: Codec,
        keys: &[&[u8]],
        values: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if keys.is_empty() || keys.len() > MAX_BLOCK_DOCS as usize || keys.len() != values.len() {
            return Err(Error::Zstd {
                op: "compress keyed block",
                message: format!(
                    "a keyed block holds 1 to {MAX_BLOCK_DOCS} keys and one value per key, not {} keys and {} values",
                    keys.len(),
                    values.len()
                ),
            });
        }
        super::keyed::join(keys, values, &mut self.joined)?;
        compress_joined(
            &mut self.cctx,
            codec,
            self.dict_id,
            keys.len(),
            &self.joined,
            &mut self.scratch,
            out,
        )
    }
}

/// Each document compressed alone with `cctx` (made with dictionary `dict`), in order.
fn encode_all(
    cctx: &mut bulk::Compressor<'static>,
    dict: Option<DictionaryId>,
    docs: &[&[u8]],
) -> Result<Vec<Vec<u8>>> {
    let mut scratch = Vec::new();
    docs.iter()
        .map(|doc| {
            let mut out = Vec::new();
            encode_with(cctx, dict, doc, &mut scratch, &mut out)?;
            Ok(out)
        })
        .collect()
}

/// Compresses `doc` with `cctx` into a stored value in `out`, or stores it raw when that is not
/// bigger. Returns the codec used.
fn encode_with(
    cctx: &mut bulk::Compressor<'static>,
    dict: Option<DictionaryId>,
    doc: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<Codec> {
    scratch.clear();
    scratch.reserve(zstd::zstd_safe::compress_bound(doc.len()));
    cctx.compress_to_buffer(doc, scratch)
        .map_err(zstd_io("compress"))?;
    out.clear();
    let codec = match dict {
        Some(id) => {
            out.push(Codec::ZstdDict as u8);
            put_varint(out, u64::from(id));
            Codec::ZstdDict
        }
        None => {
            out.push(Codec::Zstd as u8);
            Codec::Zstd
        }
    };
    put_varint(out, doc.len() as u64);
    if out.len() + scratch.len() > doc.len() {
        encode_raw(doc, out);
        return Ok(Codec::Raw);
    }
    out.extend_from_slice(scratch);
    Ok(codec)
}

impl Compressor {
    /// A compressor for a new collection (no dictionary yet, ids start at 1).
    pub fn new(opts: CompressOptions) -> Result<Compressor> {
        Compressor::resume(opts, None, 0)
    }

    /// A compressor for a reopened collection: `current` is the dictionary in use when it was
    /// closed (id and bytes as persisted), `last_id` the greatest dictionary id ever persisted
    /// for the collection (new ids continue after it). An id handed out by
    /// [`Compressor::take_new_dictionary`] but never persisted may be handed out again after a
    /// restart; no stored value can name it, so ids of persisted dictionaries stay unique.
    pub fn resume(
        opts: CompressOptions,
        current: Option<(DictionaryId, &[u8])>,
        last_id: DictionaryId,
    ) -> Result<Compressor> {
        let plain = document_context(opts.level, None, opts.light_ingest)?;
        let current = match current {
            Some((id, bytes)) => Some(Current {
                id,
                cctx: context(opts.level, Some(bytes))?,
                block: None,
                bytes: Arc::from(bytes),
                trained_on: usize::MAX,
                for_blocks: false,
                ring_tried: false,
            }),
            None => None,
        };
        let last_id = last_id.max(current.as_ref().map_or(0, |c| c.id));
        Ok(Compressor {
            opts,
            plain,
            helper: None,
            plain_block: None,
            current,
            candidate: None,
            outstanding: Weak::new(),
            running: None,
            failed_trainings: 0,
            cover_params: None,
            last_id,
            samples: VecDeque::new(),
            sample_total: 0,
            fresh_samples: 0,
            due: false,
            window: (0, 0, 0),
            best_window: None,
            scratch: Vec::new(),
            block: Vec::new(),
            stats: CompressStats::default(),
        })
    }

    /// The options.
    pub fn options(&self) -> &CompressOptions {
        &self.opts
    }

    /// The id of the dictionary new documents are compressed with, if any.
    pub fn current_dictionary(&self) -> Option<DictionaryId> {
        self.current.as_ref().map(|c| c.id)
    }

    /// What the compressor did so far.
    pub fn stats(&self) -> CompressStats {
        self.stats
    }

    /// Whether a training runs on a background thread now (see
    /// [`CompressOptions::background_training`]).
    pub fn training(&self) -> bool {
        self.running.is_some()
    }

    /// Waits for the background training, if one runs, and keeps its dictionary as the
    /// candidate if it won. For tests and for callers that want the dictionary now (e.g.
    /// before writing the rest of a small collection).
    pub fn finish_training(&mut self) -> Result<()> {
        match self.running.take() {
            Some(r) => self.collect(r),
            None => Ok(()),
        }
    }

    /// Collects the background training if it has finished (never waits).
    fn poll_training(&mut self) -> Result<()> {
        match self.running.take() {
            Some(r) if r.handle.is_finished() => self.collect(r),
            other => {
                self.running = other;
                Ok(())
            }
        }
    }

    fn collect(&mut self, r: Running) -> Result<()> {
        let trained = r.handle.join().map_err(|_| Error::Zstd {
            op: "train dictionary",
            message: "the training thread panicked".into(),
        })??;
        self.conclude(trained)
    }

    /// Compresses one document (stele document bytes) into a new stored value.
    pub fn compress(&mut self, doc: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.compress_into(doc, &mut out)?;
        Ok(out)
    }

    /// Compresses one document into `out` (cleared first) and returns the codec used. Uses
    /// only the adopted dictionary; may train a new one afterwards (then
    /// [`Compressor::take_new_dictionary`] returns it).
    pub fn compress_into(&mut self, doc: &[u8], out: &mut Vec<u8>) -> Result<Codec> {
        if !self.opts.enabled {
            encode_raw(doc, out);
            return Ok(Codec::Raw);
        }
        let codec = match &mut self.current {
            Some(c) => encode_with(&mut c.cctx, Some(c.id), doc, &mut self.scratch, out)?,
            None => encode_with(&mut self.plain, None, doc, &mut self.scratch, out)?,
        };
        self.stats.docs += 1;
        self.observe(doc, out.len())?;
        Ok(codec)
    }

    /// Compresses `docs` into stored values exactly as [`Compressor::compress`] called on each
    /// in turn would (same values, same samples and training), using a second thread for
    /// half of them when `threads` > 1 and they hold at least [`PARALLEL_COMPRESS_BYTES`].
    /// Within one call the dictionary cannot change (only [`Compressor::adopt`] changes it),
    /// so the documents are independent.
    pub fn compress_many(&mut self, docs: &[&[u8]], threads: usize) -> Result<Vec<Vec<u8>>> {
        let total_bytes: usize = docs.iter().map(|d| d.len()).sum();
        if !self.opts.enabled
            || threads < 2
            || docs.len() < 2
            || total_bytes < PARALLEL_COMPRESS_BYTES
        {
            return docs.iter().map(|d| self.compress(d)).collect();
        }
        let id = self.current.as_ref().map(|c| c.id);
        let helper = match &mut self.helper {
            Some((hid, h)) if *hid == id => h,
            slot => {
                let dict = self.current.as_ref().map(|c| &c.bytes[..]);
                let cctx = document_context(self.opts.level, dict, self.opts.light_ingest)?;
                &mut slot.insert((id, cctx)).1
            }
        };
        let main = match &mut self.current {
            Some(c) => &mut c.cctx,
            None => &mut self.plain,
        };
        let (first, second) = docs.split_at(docs.len() / 2);
        let (a, b) = std::thread::scope(|s| {
            let handle = s.spawn(|| encode_all(helper, id, second));
            let a = encode_all(main, id, first);
            let b = handle.join().unwrap_or_else(|_| {
                Err(Error::Zstd {
                    op: "compress",
                    message: "a compression thread panicked".into(),
                })
            });
            (a, b)
        });
        let mut out = a?;
        out.extend(b?);
        for (doc, value) in docs.iter().zip(&out) {
            self.stats.docs += 1;
            self.observe(doc, value.len())?;
        }
        Ok(out)
    }

    /// Compresses consecutive documents together into one block value in `out` (cleared
    /// first): much smaller than one value per document on collections of small documents;
    /// reading any of them decodes the whole block ([`super::Decoder::decode_block`]). Blocks
    /// are always zstd-compressed (with the adopted dictionary, if any), even when
    /// `enabled` is off. The documents count as samples like those of `compress`.
    pub fn compress_block(&mut self, docs: &[&[u8]], out: &mut Vec<u8>) -> Result<()> {
        let level = self.opts.block_level;
        let (cctx, id) = match &mut self.current {
            Some(c) => {
                let cctx = match &mut c.block {
                    Some(b) => b,
                    slot => slot.insert(context(level, Some(&c.bytes[..]))?),
                };
                (cctx, c.id)
            }
            None => {
                let cctx = match &mut self.plain_block {
                    Some(b) => b,
                    slot => slot.insert(context(level, None)?),
                };
                (cctx, 0)
            }
        };
        encode_block(cctx, id, docs, &mut self.block, &mut self.scratch, out)?;
        let total = self.block.len().max(1);
        for d in docs {
            self.stats.docs += 1;
            self.observe(d, out.len() * d.len() / total)?;
        }
        Ok(())
    }

    /// A new dictionary, if one is ready and beat the current setup on held-out recent
    /// documents. Persist it, then pass it to [`Compressor::adopt`]. Dropping it instead is
    /// harmless (its id is simply never used).
    ///
    /// Runs the training that the documents compressed so far made due: in line, or (with
    /// [`CompressOptions::background_training`], once the collection has a dictionary trained
    /// on a full ring) on a background thread whose result a later call hands out. While the
    /// returned dictionary is alive (until adopted or dropped), no training starts.
    pub fn take_new_dictionary(&mut self) -> Result<Option<NewDictionary>> {
        self.poll_training()?;
        if self.due && !self.proposing() {
            self.due = false;
            self.train()?;
        }
        let Some(nd) = self.candidate.take() else {
            return Ok(None);
        };
        self.outstanding = Arc::downgrade(&nd._outstanding);
        Ok(Some(nd))
    }

    /// Takes the current dictionary as one trained for packed blocks
    /// ([`Compressor::train_for_blocks`]): provisional for documents, so that once the
    /// sample ring fills, a dictionary for documents is trained. For a compressor resumed
    /// ([`Compressor::resume`]) on a collection whose blocks use its dictionary.
    pub fn current_serves_blocks(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.for_blocks = true;
        }
    }

    /// Starts compressing new documents with `dict`, which the caller has persisted.
    pub fn adopt(&mut self, dict: NewDictionary) -> Result<()> {
        if dict.id <= self.current.as_ref().map_or(0, |c| c.id) {
            return Err(Error::Zstd {
                op: "adopt dictionary",
                message: format!(
                    "dictionary {} is not newer than the current one; adopt dictionaries in the \
                     order they were handed out",
                    dict.id
                ),
            });
        }
        self.current = Some(Current {
            id: dict.id,
            cctx: dict.cctx,
            block: None,
            bytes: Arc::from(dict.bytes),
            trained_on: dict.trained_on,
            for_blocks: dict.for_blocks,
            ring_tried: false,
        });
        self.stats.adopted += 1;
        self.failed_trainings = 0;
        self.best_window = None;
        self.window = (0, 0, 0);
        self.due = false;
        Ok(())
    }

    /// Whether a proposal is under way: a training runs, or a dictionary it made waits to be
    /// handed out or awaits adoption. One proposal at a time: nothing else trains meanwhile.
    fn proposing(&self) -> bool {
        self.candidate.is_some() || self.running.is_some() || self.outstanding.strong_count() > 0
    }

    /// Samples kept at most (the ring).
    fn ring(&self) -> usize {
        self.opts.sample_docs.max(self.opts.train_after).max(1)
    }

    fn observe(&mut self, doc: &[u8], stored: usize) -> Result<()> {
        // Keep the document as a sample.
        let keep = &doc[..doc.len().min(self.opts.sample_doc_bytes)];
        let cap_docs = self.ring();
        while !self.samples.is_empty()
            && (self.samples.len() >= cap_docs
                || self.sample_total + keep.len() > self.opts.sample_bytes)
        {
            if let Some(old) = self.samples.pop_front() {
                self.sample_total -= old.len();
            }
        }
        self.sample_total += keep.len();
        self.samples.push_back(Arc::from(keep));
        self.fresh_samples += 1;

        // Ratio windows (only once a dictionary is in use).
        let mut drifted = false;
        if self.current.is_some() {
            let w = &mut self.window;
            w.0 += doc.len();
            w.1 += stored;
            w.2 += 1;
            if w.2 >= self.opts.window_docs.max(1) {
                let ratio = w.1 as f64 / w.0.max(1) as f64;
                *w = (0, 0, 0);
                match self.best_window {
                    Some(best) if ratio > best * self.opts.retrain_drift => drifted = true,
                    Some(best) if ratio >= best => {}
                    _ => self.best_window = Some(ratio),
                }
            }
        }

        let full = self.samples.len() >= cap_docs;
        // From the second training in a row that produced nothing, each doubles the wait
        // for the next. The first miss costs nothing: a drift often needs one more half
        // ring before a dictionary wins by enough to pay for itself (palbum__images).
        let shift = self
            .failed_trainings
            .saturating_sub(1)
            .min(MAX_BACKOFF_SHIFT);
        let backoff = 1usize << shift;
        let half_ring = (cap_docs / 2).saturating_mul(backoff);
        let due = if self.due || self.proposing() {
            false // one proposal at a time, and none while one awaits adoption
        } else {
            match &self.current {
                // First dictionary; after a failed attempt wait for as many new samples again.
                None => self.fresh_samples >= self.opts.train_after.saturating_mul(backoff),
                // A provisional dictionary (trained on less than half a ring): once more
                // when the ring is full.
                Some(_) if self.provisional() => full && self.fresh_samples >= half_ring,
                // Retrain on drift, at most once per half ring of fresh samples.
                Some(_) => drifted && self.fresh_samples >= half_ring,
            }
        };
        self.due |= due;
        // A background training starts at once: its samples are as fresh as they get, and
        // waiting for the caller's next `take_new_dictionary` (the end of the batch) would
        // leave the current dictionary in use a batch longer.
        if self.due && self.trains_in_background() {
            self.due = false;
            self.train()?;
        }
        Ok(())
    }

    /// Whether the current dictionary is provisional: trained on less than half a ring
    /// (the first one, when the caller asked for it after `train_after` documents) or for
    /// packed blocks (on stream forms, which serve documents compressed one by one badly:
    /// 1.4-3x their bytes with a dictionary trained on both forms), and not yet retrained
    /// on a full ring.
    fn provisional(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|c| (c.trained_on < self.ring() / 2 || c.for_blocks) && !c.ring_tried)
    }

    /// Whether the next training runs on a background thread: with
    /// [`CompressOptions::background_training`], once a dictionary is in use and is not
    /// provisional. The first training and the one retraining a provisional dictionary run
    /// in line, at most two per collection, so that a collection of a few thousand
    /// documents does not end its ingest before its real dictionary arrives (and they run
    /// when the caller asks, on everything written up to then).
    fn trains_in_background(&self) -> bool {
        self.opts.background_training
            && (self.opts.background_first_training
                || (self.current.is_some() && !self.provisional()))
    }

    /// Trains a dictionary on the kept samples, in line or on a background thread (see
    /// [`CompressOptions::background_training`]).
    fn train(&mut self) -> Result<()> {
        self.fresh_samples = 0;
        self.stats.trainings += 1;
        let job = TrainJob {
            samples: self.samples.iter().cloned().collect(),
            current: self.current.as_ref().map(|c| Arc::clone(&c.bytes)),
            level: self.opts.level,
            dictionary_bytes: self.opts.dictionary_bytes,
            dictionary_sample_ratio: self.opts.dictionary_sample_ratio,
            adoption_margin: self.opts.adoption_margin,
            cap_docs: self.ring(),
            params: if self.opts.light_ingest {
                Some(FIXED_COVER_PARAMS)
            } else {
                self.cover_params
            },
            stream_samples: self.opts.stream_samples,
            light: self.opts.light_ingest,
        };
        let background = self.trains_in_background();
        if let Some(c) = self.current.as_mut() {
            // Whatever this training gives, a provisional dictionary gets no second one of
            // its own: later trainings follow the drift rule.
            c.ring_tried = true;
        }
        if background {
            // Cloning the job copies reference counts, not samples.
            let background = job.clone();
            let spawned = std::thread::Builder::new()
                .name("stele-train".into())
                .spawn(move || background.run());
            // No thread to be had (resource limits): train in line rather than fail the
            // write.
            if let Ok(handle) = spawned {
                self.running = Some(Running { handle });
                return Ok(());
            }
        }
        let trained = job.run()?;
        self.conclude(trained)
    }

    /// Records a finished training: its dictionary (if it won) becomes the candidate under
    /// the next id; a training that produced nothing makes the next one wait longer.
    fn conclude(&mut self, trained: Option<Trained>) -> Result<()> {
        let Some(t) = trained else {
            self.failed_trainings = self.failed_trainings.saturating_add(1);
            return Ok(());
        };
        self.failed_trainings = 0;
        // Fixed parameters chose nothing: `train_for_blocks` searches its own.
        if t.trained_on >= self.ring() / 2 && self.cover_params.is_none() && !self.opts.light_ingest
        {
            self.cover_params = Some(t.params);
        }
        let Some(id) = self.last_id.checked_add(1) else {
            return Err(Error::Zstd {
                op: "train dictionary",
                message: "dictionary ids are exhausted for this collection".into(),
            });
        };
        self.last_id = id;
        self.stats.candidates += 1;
        self.candidate = Some(NewDictionary {
            id,
            bytes: t.bytes,
            cctx: t.cctx,
            eval: t.eval,
            trained_on: t.trained_on,
            for_blocks: t.for_blocks,
            _outstanding: Arc::new(()),
        });
        Ok(())
    }
}

impl TrainJob {
    /// Trains a dictionary on the samples (all but every 8th), compares it with the current
    /// setup on the held-out 1/8, and returns it if it wins.
    fn run(self) -> Result<Option<Trained>> {
        let mut train: Vec<&[u8]> = Vec::with_capacity(self.samples.len());
        let mut eval: Vec<&[u8]> = Vec::with_capacity(self.samples.len() / HELD_OUT_EVERY + 1);
        for (i, s) in self.samples.iter().enumerate() {
            if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 {
                eval.push(s);
            } else {
                train.push(s);
            }
        }
        // zstd's trainer fails on too little input (too few or too small samples); that only
        // means "no dictionary yet".
        let train_bytes: usize = train.iter().map(|s| s.len()).sum();
        let size = self
            .dictionary_bytes
            .min(train_bytes / self.dictionary_sample_ratio.max(1))
            .max(MIN_DICTIONARY_BYTES);
        // Every other training sample in its stream form, where it is a whole document (a
        // sample may be a cut prefix, which has none): as many bytes to train on as without,
        // so a training costs what it did. The held-out documents stay documents.
        let streams: Vec<Option<Vec<u8>>> = if self.stream_samples {
            let mut w = stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options());
            train
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut out = Vec::new();
                    (i % 2 == 1 && super::streams::append_stream_form(s, &mut w, &mut out))
                        .then_some(out)
                })
                .collect()
        } else {
            Vec::new()
        };
        for (sample, stream) in train.iter_mut().zip(&streams) {
            if let Some(stream) = stream {
                *sample = stream;
            }
        }
        let Some((bytes, params)) = train_fast_cover(&train, size, self.level, self.params) else {
            return Ok(None);
        };
        let mut cctx = context(self.level, Some(&bytes))?;
        let mut old = document_context(self.level, self.current.as_deref(), self.light)?;
        // The id only sizes the header (one varint byte either way for small ids).
        let id = self.current.as_ref().map(|_| 1);
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        let (mut new_total, mut old_total) = (0usize, 0usize);
        for s in &eval {
            encode_with(&mut cctx, Some(1), s, &mut scratch, &mut out)?;
            new_total += out.len();
            encode_with(&mut old, id, s, &mut scratch, &mut out)?;
            old_total += out.len();
        }
        if (new_total as f64) > (old_total as f64) * (1.0 - self.adoption_margin) {
            return Ok(None);
        }
        // Replacing a dictionary must also pay for storing the new one (the old one stays
        // while documents use it): the saving per held-out document, over a ring of future
        // documents, must exceed the dictionary's size.
        let saved_per_doc = (old_total - new_total) as f64 / eval.len().max(1) as f64;
        if self.current.is_some() && saved_per_doc * (self.cap_docs as f64) < bytes.len() as f64 {
            return Ok(None);
        }
        Ok(Some(Trained {
            params,
            trained_on: train.len(),
            for_blocks: false,
            bytes,
            cctx,
            eval: (new_total, old_total),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequency_tables_fit_the_samples() {
        // At least 2^12 entries, then twice the sample bytes, up to zstd's default 2^20.
        assert_eq!(frequency_table_log(0), 12);
        assert_eq!(frequency_table_log(2048), 12);
        assert_eq!(frequency_table_log(2049), 13);
        assert_eq!(frequency_table_log(14_087), 15);
        assert_eq!(frequency_table_log(1 << 19), 20);
        assert_eq!(frequency_table_log(8 << 20), 20);
        assert_eq!(frequency_table_log(usize::MAX), 20);
    }

    /// Trainings with fixed parameters and with a smaller table still make dictionaries
    /// that compress what they were trained on, and keep the parameters they were given.
    #[test]
    fn fixed_parameters_train_without_a_search() {
        let samples: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                format!(r#"{{"id":{i},"name":"sensor {}","unit":"celsius"}}"#, i % 7).into_bytes()
            })
            .collect();
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        let (dict, params) =
            train_fast_cover(&refs, 2048, 1, Some(FIXED_COVER_PARAMS)).expect("a dictionary");
        assert_eq!(params, FIXED_COVER_PARAMS);
        assert!(!dict.is_empty() && dict.len() <= 2048);
        let (searched, _) = train_fast_cover(&refs, 2048, 1, None).expect("a dictionary");
        assert!(!searched.is_empty());
    }
}
