//! [`CompressOptions`]: how a collection's compressor compresses and when it trains.

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
