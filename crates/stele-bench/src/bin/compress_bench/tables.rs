//! The secondary tables: option variants, block sizes, keyed blocks, streams.

use anyhow::{Context, Result, ensure};
use stele::compress::{BlockPacker, CompressOptions, Compressor, Decoder, Dictionaries};

use crate::inputs::{Input, ours, whole_file};
use crate::table::{Table, f, geomean, ratio};
use crate::timing::thread_cpu_secs;

/// A named change of the default options.
type Variant = (&'static str, fn(&mut CompressOptions));

const VARIANTS: [Variant; 9] = [
    ("dict 8K", |o| o.dictionary_bytes = 8 * 1024),
    ("dict 32K unscaled", |o| o.dictionary_sample_ratio = 1),
    ("dict 64K", |o| o.dictionary_bytes = 64 * 1024),
    ("dict 110K", |o| o.dictionary_bytes = 110 * 1024),
    ("train 256", |o| o.train_after = 256),
    ("train 1024", |o| o.train_after = 1024),
    ("level 1", |o| o.level = 1),
    ("level 9", |o| o.level = 9),
    ("level 19", |o| o.level = 19),
];

pub(crate) fn variants_table(inputs: &[Input]) -> Result<()> {
    println!("## Variants: stored size / whole-file zstd -3 (lower is better)\n");
    println!(
        "Each column changes one default (default: 32 KB dictionary, trained after 64 \
         documents, 1024 samples kept, level 3, Stele documents). \"JSON docs\" feeds the JSON \
         text instead of Stele documents through the same compressor. Dictionaries counted.\n"
    );
    let mut header = vec!["collection", "default"];
    header.extend(VARIANTS.iter().map(|v| v.0));
    header.push("JSON docs");
    header.push("no-LZ4 docs");
    let mut t = Table::new(&header);
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len() + 3];
    let mut secs = vec![0.0f64; VARIANTS.len() + 3];
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let mut row = vec![i.json.name.clone()];
        let mut runs = vec![ours(&i.doc_slices(), CompressOptions::default())?];
        for (_, change) in VARIANTS {
            let mut o = CompressOptions::default();
            change(&mut o);
            runs.push(ours(&i.doc_slices(), o)?);
        }
        runs.push(ours(&i.json.doc_slices(), CompressOptions::default())?);
        runs.push(ours(&i.plain_slices(), CompressOptions::default())?);
        for (k, run) in runs.iter().enumerate() {
            let r = run.total() as f64 / z3;
            row.push(ratio(r));
            if let (Some(c), Some(s)) = (cols.get_mut(k), secs.get_mut(k)) {
                c.push(r);
                *s += run.compress_secs;
            }
        }
        t.row(row);
    }
    let mut g = vec!["**geomean**".to_owned()];
    g.extend(cols.iter().map(|c| ratio(geomean(c))));
    t.row(g);
    let mut s = vec!["compress CPU s (all)".to_owned()];
    s.extend(secs.iter().map(|x| f(*x, 2)));
    t.row(s);
    t.print();
    Ok(())
}

/// Block variant: consecutive documents grouped into blocks of about `block` raw bytes through
/// `Compressor::compress_block` with default options (dictionaries trained, persisted and
/// adopted as for single documents). Returns bytes (values plus dictionaries) and the mean CPU
/// microseconds to decode one block, which is what reading one uncached document costs.
fn blocks(docs: &[&[u8]], block: usize) -> Result<(usize, f64)> {
    let mut c = Compressor::new(CompressOptions::default())?;
    let mut dicts = Dictionaries::new();
    let mut total = 0;
    let mut values: Vec<(Vec<u8>, usize, usize)> = Vec::new();
    let mut start = 0;
    let mut raw = 0;
    for (k, d) in docs.iter().enumerate() {
        raw += d.len();
        if raw < block && k + 1 < docs.len() {
            continue;
        }
        let group = docs.get(start..=k).context("block range")?;
        let mut out = Vec::new();
        c.compress_block(group, &mut out)?;
        total += out.len();
        values.push((out, start, k + 1));
        if let Some(nd) = c.take_new_dictionary()? {
            total += nd.bytes().len();
            dicts.insert(nd.id(), nd.bytes())?;
            c.adopt(nd)?;
        }
        start = k + 1;
        raw = 0;
    }
    let mut dec = Decoder::new()?;
    let t = thread_cpu_secs();
    for (v, a, b) in &values {
        let got = dec.decode_block(v, &dicts)?;
        let want = docs.get(*a..*b).context("block range")?;
        ensure!(got.iter().eq(want.iter().copied()), "block decodes wrong");
    }
    let per_block_us = (thread_cpu_secs() - t) * 1e6 / values.len().max(1) as f64;
    Ok((total, per_block_us))
}

const BLOCKS: [usize; 4] = [4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024];

pub(crate) fn blocks_table(inputs: &[Input]) -> Result<()> {
    println!("## Blocks of documents (not per document): size / zstd-3, and cost of one read\n");
    println!(
        "Consecutive Stele documents written without LZ4 strings, grouped into blocks of about \
         N raw bytes by `Compressor::compress_block` (default options: block level 9, \
         dictionaries trained and adopted as for single documents, counted), one zstd frame per block holding \
         the documents' lengths and the documents. \"per doc\" = the same no-LZ4 documents one value each. A read of one document decodes its whole block: \"us/read\" is the mean \
         CPU time to decode one block (what a cache miss costs; a block cache hides it for \
         neighbours).\n"
    );
    let mut header = vec!["collection".to_owned(), "per doc (ours)".to_owned()];
    for b in BLOCKS {
        header.push(format!("{} KB", b / 1024));
        header.push(format!("{} KB us/read", b / 1024));
    }
    header.push("16 KB, LZ4 docs".to_owned());
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&h);
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); BLOCKS.len() + 2];
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let plain = i.plain_slices();
        let per_doc = ours(&plain, CompressOptions::default())?.total() as f64 / z3;
        let mut row = vec![i.json.name.clone(), ratio(per_doc)];
        if let Some(c) = cols.get_mut(0) {
            c.push(per_doc);
        }
        for (k, b) in BLOCKS.iter().enumerate() {
            let (size, us) = blocks(&plain, *b)?;
            row.push(ratio(size as f64 / z3));
            row.push(f(us, 1));
            if let Some(c) = cols.get_mut(k + 1) {
                c.push(size as f64 / z3);
            }
        }
        let (size, _) = blocks(&i.doc_slices(), 16 * 1024)?;
        row.push(ratio(size as f64 / z3));
        if let Some(c) = cols.last_mut() {
            c.push(size as f64 / z3);
        }
        t.row(row);
    }
    let mut g = vec!["**geomean**".to_owned()];
    for (k, c) in cols.iter().enumerate() {
        g.push(ratio(geomean(c)));
        if k > 0 && k <= BLOCKS.len() {
            g.push(String::new());
        }
    }
    t.row(g);
    t.print();
    Ok(())
}

/// Ids and documents packed as the database packs them, about 32 KiB of both per block at
/// level 9 without a dictionary: ids stored whole (2n entries of a plain block, codec 3) or
/// front-coded (a keyed block, codec 5). Returns bytes and the mean CPU microseconds to
/// decode one block, checked against the input.
fn id_blocks(ids: &[String], docs: &[&[u8]], keyed: bool) -> Result<(usize, f64)> {
    let mut packer = BlockPacker::new(9, None)?;
    let mut values: Vec<(Vec<u8>, usize, usize)> = Vec::new();
    let (mut start, mut raw) = (0, 0);
    for (k, (id, d)) in ids.iter().zip(docs).enumerate() {
        raw += id.len() + d.len();
        if raw < 32 * 1024 && k + 1 < docs.len() {
            continue;
        }
        let keys: Vec<&[u8]> = ids
            .get(start..=k)
            .context("ids")?
            .iter()
            .map(|i| i.as_bytes())
            .collect();
        let group = docs.get(start..=k).context("block range")?;
        let mut out = Vec::new();
        if keyed {
            packer.pack_keyed(&keys, group, &mut out)?;
        } else {
            let all: Vec<&[u8]> = keys.iter().chain(group).copied().collect();
            packer.pack(&all, &mut out)?;
        }
        values.push((out, start, k + 1));
        (start, raw) = (k + 1, 0);
    }
    let (dicts, mut dec) = (Dictionaries::new(), Decoder::new()?);
    let t = thread_cpu_secs();
    for (v, a, b) in &values {
        let got = dec.decode_block(v, &dicts)?;
        let want_ids = ids.get(*a..*b).context("ids")?.iter().map(|i| i.as_bytes());
        let want = want_ids.chain(docs.get(*a..*b).context("block range")?.iter().copied());
        ensure!(got.iter().eq(want), "block decodes wrong");
    }
    let per_block_us = (thread_cpu_secs() - t) * 1e6 / values.len().max(1) as f64;
    Ok((values.iter().map(|v| v.0.len()).sum(), per_block_us))
}

/// Ids `00000000`, `00000001`, ...: the 8-digit line numbers `store_bench` uses.
fn line_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:08}")).collect()
}

/// A table's last row: "geomean" and `value` in column `at` of `columns`.
fn geomean_row(columns: usize, at: usize, value: f64) -> Vec<String> {
    let mut row = vec![String::new(); columns];
    if let Some(first) = row.first_mut() {
        *first = "**geomean**".to_owned();
    }
    if let Some(cell) = row.get_mut(at) {
        *cell = ratio(value);
    }
    row
}

/// Plain blocks (ids whole) against keyed blocks (ids front-coded), ids = 8-digit line
/// numbers as in `store_bench`.
pub(crate) fn keyed_table(inputs: &[Input]) -> Result<()> {
    println!("## Ids in blocks: whole (codec 3) or front-coded (codec 5)\n");
    println!(
        "Each collection's no-LZ4 documents under 8-digit line numbers, packed as the database \
         packs them (ids then documents, about 32 KiB per block, level 9, no dictionary): the \
         ids stored whole in a plain block or front-coded in a keyed block. us/read: mean CPU \
         time to decode one block (ids rebuilt for the keyed one), checked against the input.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "ids whole / zstd-3",
        "front-coded / zstd-3",
        "front-coded / whole",
        "whole us/read",
        "front-coded us/read",
    ]);
    let mut gains = Vec::new();
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let docs = i.plain_slices();
        let ids = line_ids(docs.len());
        let (whole, whole_us) = id_blocks(&ids, &docs, false)?;
        let (keyed, keyed_us) = id_blocks(&ids, &docs, true)?;
        gains.push(keyed as f64 / whole as f64);
        t.row(vec![
            i.json.name.clone(),
            ratio(whole as f64 / z3),
            ratio(keyed as f64 / z3),
            ratio(keyed as f64 / whole as f64),
            f(whole_us, 1),
            f(keyed_us, 1),
        ]);
    }
    t.row(geomean_row(6, 3, geomean(&gains)));
    t.print();
    Ok(())
}

/// Keyed blocks of documents against keyed blocks of their stream forms
/// (`stele_doc::stream`), and what rebuilding a document from its stream costs.
pub(crate) fn stream_table(inputs: &[Input]) -> Result<()> {
    println!("## Documents or their stream forms in blocks\n");
    println!(
        "Each collection's no-LZ4 documents under 8-digit line numbers in keyed blocks (about \
         32 KiB, level 9, no dictionary), as documents or as their stream forms \
         (`stele_doc::stream`: values in input order, keys spelled out, no offsets; a document \
         whose stream does not rebuild it exactly stays a document). rebuild: mean CPU time to \
         turn one stream back into its document, and the documents' bytes per second, checked \
         against the input.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "documents / zstd-3",
        "streams / zstd-3",
        "streams / documents",
        "kept as documents",
        "stream / document bytes",
        "rebuild us/doc",
        "rebuild MB/s",
    ]);
    let mut gains = Vec::new();
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let docs = i.plain_slices();
        let ids = line_ids(docs.len());
        let mut w = stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options());
        let mut streams: Vec<Vec<u8>> = Vec::with_capacity(docs.len());
        let mut kept = 0usize;
        for d in &docs {
            let doc = stele_doc::Document::new(*d)?;
            let mut s = Vec::new();
            if !stele_doc::stream::encode(&doc, &mut w, &mut s) {
                s = d.to_vec();
                kept += 1;
            }
            streams.push(s);
        }
        let stream_slices: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let (as_docs, _) = id_blocks(&ids, &docs, true)?;
        let (as_streams, _) = id_blocks(&ids, &stream_slices, true)?;
        let t0 = thread_cpu_secs();
        let mut rebuilt = 0usize;
        for (s, d) in stream_slices.iter().zip(&docs) {
            if stele_doc::stream::is_stream(s) {
                let doc = stele_doc::stream::decode(s, &mut w)?;
                ensure!(doc.as_slice() == *d, "stream rebuilds another document");
                rebuilt += d.len();
            }
        }
        let secs = thread_cpu_secs() - t0;
        let n = (docs.len() - kept).max(1) as f64;
        let doc_bytes: usize = docs.iter().map(|d| d.len()).sum();
        let stream_bytes: usize = stream_slices.iter().map(|s| s.len()).sum();
        gains.push(as_streams as f64 / as_docs as f64);
        t.row(vec![
            i.json.name.clone(),
            ratio(as_docs as f64 / z3),
            ratio(as_streams as f64 / z3),
            ratio(as_streams as f64 / as_docs as f64),
            kept.to_string(),
            ratio(stream_bytes as f64 / doc_bytes as f64),
            f(secs * 1e6 / n, 2),
            f(rebuilt as f64 / secs.max(1e-9) / 1e6, 0),
        ]);
    }
    t.row(geomean_row(8, 3, geomean(&gains)));
    t.print();
    Ok(())
}
