//! The dictionary trainer: zstd's fastCover through its FFI (with the frequency table sized
//! to the samples and parameters reused once chosen), and a training as a job that can run
//! on another thread and judges its dictionary on held-out samples.

use std::sync::Arc;
use std::thread::JoinHandle;

use zstd::bulk;

use super::context::{context, document_context, encode_with};
use crate::Result;

/// Every `HELD_OUT_EVERY`-th sample is kept out of a training, to judge its dictionary.
pub(super) const HELD_OUT_EVERY: usize = 8;

/// Smallest dictionary worth training (zstd's trainer needs room for its header and tables).
pub(super) const MIN_DICTIONARY_BYTES: usize = 1024;

/// The parameters of zstd's fastCover trainer that matter: segment size `k` and d-mer
/// size `d`. zstd's default training tries five values of `k` and keeps the best
/// dictionary; once a collection's data has chosen them, later trainings reuse them and
/// build one dictionary instead of five.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CoverParams {
    pub(super) k: u32,
    pub(super) d: u32,
}

/// The trainer's parameters when they are not searched ([`CompressOptions::light_ingest`]):
/// zstd's middle `k` of the range it searches and its default `d`. On the benchmark
/// collections the `k` a search picks stores held-out documents at most 3 % smaller than
/// this one (vega-flights 7 %), and as often bigger.
pub(super) const FIXED_COVER_PARAMS: CoverParams = CoverParams { k: 1024, d: 8 };

/// Trains a dictionary of at most `size` bytes on `samples` with zstd's fastCover trainer:
/// with `params`, once; without, searching `k` as `ZDICT_trainFromBuffer` does (d = 8,
/// 4 steps, the same dictionary as `zstd::dict::from_samples`). `None` when zstd finds the
/// input unusable (too few or too small samples), which only means "no dictionary".
pub(super) fn train_fast_cover(
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
pub(super) fn fast_cover(
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
pub(super) fn frequency_table_log(sample_bytes: usize) -> u32 {
    const MIN_LOG: u32 = 12;
    const DEFAULT_LOG: u32 = 20;
    let entries = sample_bytes.saturating_mul(2).max(1);
    let log = usize::BITS - (entries - 1).leading_zeros();
    log.clamp(MIN_LOG, DEFAULT_LOG)
}

/// What a training needs, owned, so that it can run on another thread.
#[derive(Clone)]
pub(super) struct TrainJob {
    /// Samples shared with the compressor's ring (no copy).
    pub(super) samples: Vec<Arc<[u8]>>,
    /// The dictionary in use (to compare against), or none.
    pub(super) current: Option<Arc<[u8]>>,
    pub(super) level: i32,
    pub(super) dictionary_bytes: usize,
    pub(super) dictionary_sample_ratio: usize,
    pub(super) adoption_margin: f64,
    pub(super) cap_docs: usize,
    /// Trainer parameters chosen by an earlier training of the collection, if any.
    pub(super) params: Option<CoverParams>,
    /// Train on the samples' stream forms too ([`CompressOptions::stream_samples`]).
    pub(super) stream_samples: bool,
    /// [`CompressOptions::light_ingest`]: compare against documents compressed by
    /// [`document_context`] as the compressor does.
    pub(super) light: bool,
}

/// A trained dictionary that beat the setup it was trained against.
pub(super) struct Trained {
    pub(super) params: CoverParams,
    pub(super) trained_on: usize,
    /// Trained for packed blocks (`train_for_blocks`), not for documents.
    pub(super) for_blocks: bool,
    pub(super) bytes: Vec<u8>,
    pub(super) cctx: bulk::Compressor<'static>,
    pub(super) eval: (usize, usize),
}

/// A training running on a background thread.
pub(super) struct Running {
    pub(super) handle: JoinHandle<Result<Option<Trained>>>,
}

impl TrainJob {
    /// Trains a dictionary on the samples (all but every 8th), compares it with the current
    /// setup on the held-out 1/8, and returns it if it wins.
    pub(super) fn run(self) -> Result<Option<Trained>> {
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
