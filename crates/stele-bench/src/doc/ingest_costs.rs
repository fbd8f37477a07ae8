//! What `CompressOptions::light_ingest` trades: Stele's dictionary trainer
//! (`stele::compress::train_dictionary`) with and without its search for `k` (and with
//! zstd's default frequency table against the one it sizes to the samples), and level-1
//! compression of documents without a dictionary with and without Huffman-coded literals.

use anyhow::{Result, bail};
use zstd::zstd_safe::{CParameter, ParamSwitch};

use crate::table::{Table, f, geomean, ratio};
use crate::timing::thread_cpu_secs;

/// A training: the dictionary, the `k` it used and the CPU seconds it took.
struct Trained {
    dict: Vec<u8>,
    k: u32,
    secs: f64,
}

/// `stele::compress::train_dictionary` at level 1, timed.
fn train(
    samples: &[&[u8]],
    size: usize,
    k: Option<u32>,
    table_log: Option<u32>,
) -> Result<Trained> {
    let t0 = thread_cpu_secs();
    let Some((dict, k)) = stele::compress::train_dictionary(samples, size, 1, k, table_log) else {
        bail!("zstd trained no dictionary");
    };
    Ok(Trained {
        dict,
        k,
        secs: thread_cpu_secs() - t0,
    })
}

/// Bytes of `docs` compressed one by one at level 1 with `dict` (each at most its raw size,
/// as Stele stores a document raw when zstd does not shrink it).
fn stored_bytes(docs: &[&[u8]], dict: &[u8]) -> Result<usize> {
    let mut c = zstd::bulk::Compressor::with_dictionary(1, dict)?;
    let mut total = 0;
    for d in docs {
        total += c.compress(d)?.len().min(d.len());
    }
    Ok(total)
}

/// Trainer variants on every collection of at least 300 documents: the first half (at most
/// 1,024 documents, 16 KiB prefixes, as the compressor's ring keeps them) trains, the next
/// documents (at most 2,048) are compressed with the dictionary.
pub fn trainer_table(collections: &[(&str, Vec<&[u8]>)]) -> Result<()> {
    println!("## Dictionary trainer: searching k or not (`CompressOptions::light_ingest`)\n");
    println!(
        "zstd's fastCover trainer at level 1 on the first half of each collection of 300 or \
         more documents (at most 1,024, cut to 16 KiB; dictionary of at most 32 KiB and a \
         tenth of the samples), its dictionary then compressing each of the next documents \
         (at most 2,048) alone at level 1. search: five values of k as zstd's default \
         training tries them (d = 8), with zstd's default table of 2^20 d-mer counts (f = 20) \
         and with one of twice the sample bytes (f fitted, Stele's trainer); fixed: k = 1024 \
         once, f fitted. CPU ms of the training; held-out bytes relative to search f = 20.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "sample KB",
        "search f=20 ms",
        "search f fitted ms",
        "fixed ms",
        "k searched",
        "held-out bytes f=20",
        "search f fitted / f=20",
        "fixed / f=20",
    ]);
    let (mut fitted_ratios, mut fixed_ratios, mut speedups) = (Vec::new(), Vec::new(), Vec::new());
    for (name, docs) in collections {
        if docs.len() < 300 {
            continue;
        }
        let n_train = (docs.len() / 2).min(1024);
        let samples: Vec<&[u8]> = docs
            .iter()
            .take(n_train)
            .map(|d| &d[..d.len().min(16 * 1024)])
            .collect();
        let held_out: Vec<&[u8]> = docs.iter().skip(n_train).take(2048).copied().collect();
        let sample_bytes: usize = samples.iter().map(|s| s.len()).sum();
        let size = (sample_bytes / 10).min(32 * 1024);
        let search20 = train(&samples, size, None, Some(20))?;
        let search_fit = train(&samples, size, None, None)?;
        let fixed = train(&samples, size, Some(1024), None)?;
        let base = stored_bytes(&held_out, &search20.dict)? as f64;
        let fit_ratio = stored_bytes(&held_out, &search_fit.dict)? as f64 / base;
        let fixed_ratio = stored_bytes(&held_out, &fixed.dict)? as f64 / base;
        fitted_ratios.push(fit_ratio);
        fixed_ratios.push(fixed_ratio);
        speedups.push(search_fit.secs / fixed.secs.max(1e-9));
        t.row(vec![
            (*name).to_owned(),
            f(sample_bytes as f64 / 1e3, 0),
            f(search20.secs * 1e3, 1),
            f(search_fit.secs * 1e3, 1),
            f(fixed.secs * 1e3, 1),
            search_fit.k.to_string(),
            (base as usize).to_string(),
            ratio(fit_ratio),
            ratio(fixed_ratio),
        ]);
    }
    t.print();
    println!(
        "Geometric means: search f fitted / f=20 {}, fixed / f=20 {}; search / fixed CPU {}x.\n",
        ratio(geomean(&fitted_ratios)),
        ratio(geomean(&fixed_ratios)),
        f(geomean(&speedups), 1)
    );
    Ok(())
}

/// Level 1 without a dictionary, with and without Huffman-coded literals, on the first
/// 1,000 documents of each collection.
pub fn literals_table(collections: &[(&str, Vec<&[u8]>)]) -> Result<()> {
    println!("## Documents before the first dictionary: literals coded or not\n");
    println!(
        "The first 1,000 documents of each collection compressed one by one at zstd level 1 \
         without a dictionary (each at most its raw size), with zstd's Huffman coding of \
         literals and without it (`CompressOptions::light_ingest`). CPU us per document.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "raw KB",
        "coded KB",
        "uncoded KB",
        "uncoded / coded bytes",
        "coded us/doc",
        "uncoded us/doc",
        "uncoded / coded CPU",
    ]);
    let (mut byte_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    for (name, docs) in collections {
        let docs = &docs[..docs.len().min(1000)];
        let raw: usize = docs.iter().map(|d| d.len()).sum();
        let mut results = Vec::new();
        for coded in [true, false] {
            let mut c = zstd::bulk::Compressor::new(1)?;
            if !coded {
                c.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))?;
            }
            let t0 = thread_cpu_secs();
            let mut total = 0;
            for d in docs {
                total += c.compress(d)?.len().min(d.len());
            }
            results.push((total, thread_cpu_secs() - t0));
        }
        let [(coded, coded_s), (uncoded, uncoded_s)] = results[..] else {
            bail!("two runs expected");
        };
        let n = docs.len().max(1) as f64;
        byte_ratios.push(uncoded as f64 / coded.max(1) as f64);
        cpu_ratios.push(uncoded_s / coded_s.max(1e-9));
        t.row(vec![
            (*name).to_owned(),
            f(raw as f64 / 1e3, 1),
            f(coded as f64 / 1e3, 1),
            f(uncoded as f64 / 1e3, 1),
            ratio(uncoded as f64 / coded.max(1) as f64),
            f(coded_s * 1e6 / n, 2),
            f(uncoded_s * 1e6 / n, 2),
            ratio(uncoded_s / coded_s.max(1e-9)),
        ]);
    }
    t.print();
    println!(
        "Geometric means: uncoded / coded bytes {}, CPU {}.\n",
        ratio(geomean(&byte_ratios)),
        ratio(geomean(&cpu_ratios))
    );
    Ok(())
}
