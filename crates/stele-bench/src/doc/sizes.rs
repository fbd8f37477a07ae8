//! Part 4 (sizes against MessagePack, BSON, CBOR) and part 6 (string compression threshold).

use std::hint::black_box;

use anyhow::{Context, Result, ensure};
use stele_doc::{Document, DocumentWriter, JsonOptions, KeyOrder, WriteOptions};

use super::Ctx;
use super::data::{Collection, Docs};
use super::peers::Plain;
use super::table::{Table, bytes, f, mbps, ratio};

/// Sum of `inspect` over a collection's documents.
#[derive(Debug, Default)]
struct Parts {
    total: usize,
    names: usize,
    object_headers: usize,
    array_headers: usize,
    strings: usize,
    compressed: usize,
    compressed_raw: usize,
    numbers: usize,
    framing: usize,
    objects: usize,
    objects_with_order: usize,
    properties: usize,
}

fn check_msgpack_writes_maps() -> Result<()> {
    let v: serde_json::Value = serde_json::from_str(r#"{"a":1}"#)?;
    let b = rmp_serde::to_vec(&Plain(&v))?;
    ensure!(
        b.first() == Some(&0x81),
        "rmp_serde wrote {b:02x?}, not a one-entry map"
    );
    Ok(())
}

pub fn sizes(ctx: &Ctx) -> Result<()> {
    check_msgpack_writes_maps()?;
    println!("## 4. Sizes (bytes, total over all documents; lower is better)\n");
    println!(
        "minified JSON = `serde_json::to_vec` of each document; ours = default options (input key \
         order kept, strings >= 128 bytes LZ4-compressed when that saves >= 1/8); sorted = \
         `KeyOrder::Sorted`; no LZ4 = `compress_strings(None)`; MessagePack = `rmp_serde::to_vec` \
         (maps with string keys, checked); BSON = `bson::serialize_to_vec` (objects only, u64 \
         beyond i64 fails and the document is skipped); CBOR = `ciborium::into_writer`. Peers \
         encode numbers as i64/u64/f64 (decimal texts beyond f64 lose exactness there, not in \
         ours). zstd-3 = the whole collection's JSON Lines text compressed at once (reference \
         for the stored-size target).\n"
    );
    let mut t = Table::new(&[
        "collection",
        "docs",
        "minified JSON",
        "ours",
        "ours sorted",
        "ours no LZ4",
        "MessagePack",
        "BSON",
        "CBOR",
        "zstd-3 file",
        "ours/JSON",
        "ours/MessagePack",
        "sorted/MessagePack",
        "ours/BSON",
        "ours/CBOR",
    ]);
    let mut pt = Table::new(&[
        "collection",
        "ours",
        "names",
        "object headers",
        "array headers",
        "strings",
        "LZ4 strings (raw)",
        "numbers",
        "header+trailer",
        "props/object",
        "objects keeping order",
    ]);
    let mut notes = Vec::new();
    let mut w = DocumentWriter::new();
    let mut ws = DocumentWriter::with_options(WriteOptions::default().key_order(KeyOrder::Sorted));
    let mut wn = DocumentWriter::with_options(WriteOptions::default().compress_strings(None));
    let mut totals = [0usize; 8];
    for c in &ctx.collections {
        eprintln!("part 4: {}", c.name);
        let mut s = [0usize; 8];
        let mut parts = Parts::default();
        let mut bson_skipped = 0usize;
        let mut cbor = Vec::new();
        for d in c.docs() {
            let v: serde_json::Value = serde_json::from_slice(d)?;
            s[0] += serde_json::to_vec(&v)?.len();
            let ours = w.from_json(d)?;
            s[1] += ours.len();
            s[2] += ws.from_json(d)?.len();
            s[3] += wn.from_json(d)?.len();
            s[4] += rmp_serde::to_vec(&Plain(&v))?.len();
            match bson::serialize_to_vec(&Plain(&v)) {
                Ok(b) if v.is_object() => s[5] += b.len(),
                _ => bson_skipped += 1,
            }
            cbor.clear();
            ciborium::into_writer(&Plain(&v), &mut cbor)
                .map_err(|e| anyhow::anyhow!("CBOR: {e}"))?;
            s[6] += cbor.len();
            let doc = Document::new(ours.as_slice())
                .with_context(|| format!("{}: writer output fails validation", c.name))?;
            let l = stele_doc::inspect(&doc);
            parts.total += l.total_bytes;
            parts.names += l.names_bytes;
            parts.object_headers += l.object_header_bytes;
            parts.array_headers += l.array_header_bytes;
            parts.strings += l.string_bytes;
            parts.compressed += l.compressed_string_bytes;
            parts.compressed_raw += l.compressed_string_raw_bytes;
            parts.numbers += l.number_bytes;
            parts.framing += l.framing_bytes;
            parts.objects += l.objects;
            parts.objects_with_order += l.objects_with_order;
            parts.properties += l.properties;
        }
        let mut all = Vec::with_capacity(c.json_bytes() + c.len());
        for d in c.docs() {
            all.extend_from_slice(d);
            all.push(b'\n');
        }
        s[7] = zstd::bulk::compress(&all, 3)?.len();
        if bson_skipped > 0 {
            notes.push(format!(
                "{}: BSON skipped {bson_skipped} documents (not an object, or a u64 beyond i64)",
                c.name
            ));
        }
        for (t, x) in totals.iter_mut().zip(s) {
            *t += x;
        }
        let r = |a: usize, b: usize| ratio(a as f64 / b as f64);
        t.row(vec![
            c.name.clone(),
            c.len().to_string(),
            bytes(s[0]),
            bytes(s[1]),
            bytes(s[2]),
            bytes(s[3]),
            bytes(s[4]),
            bytes(s[5]),
            bytes(s[6]),
            bytes(s[7]),
            r(s[1], s[0]),
            r(s[1], s[4]),
            r(s[2], s[4]),
            if bson_skipped == 0 {
                r(s[1], s[5])
            } else {
                "-".into()
            },
            r(s[1], s[6]),
        ]);
        let p = |x: usize| format!("{:.1}%", 100.0 * x as f64 / parts.total.max(1) as f64);
        pt.row(vec![
            c.name.clone(),
            bytes(parts.total),
            p(parts.names),
            p(parts.object_headers),
            p(parts.array_headers),
            p(parts.strings),
            format!("{} ({})", p(parts.compressed), bytes(parts.compressed_raw)),
            p(parts.numbers),
            p(parts.framing),
            f(parts.properties as f64 / parts.objects.max(1) as f64, 1),
            format!(
                "{:.0}%",
                100.0 * parts.objects_with_order as f64 / parts.objects.max(1) as f64
            ),
        ]);
    }
    let r = |a: usize, b: usize| ratio(a as f64 / b as f64);
    t.row(vec![
        "**all**".into(),
        ctx.collections
            .iter()
            .map(Collection::len)
            .sum::<usize>()
            .to_string(),
        bytes(totals[0]),
        bytes(totals[1]),
        bytes(totals[2]),
        bytes(totals[3]),
        bytes(totals[4]),
        bytes(totals[5]),
        bytes(totals[6]),
        bytes(totals[7]),
        r(totals[1], totals[0]),
        r(totals[1], totals[4]),
        r(totals[2], totals[4]),
        String::new(),
        r(totals[1], totals[6]),
    ]);
    t.print();
    for n in notes {
        println!("- note: {n}");
    }
    println!();
    println!("### Where our bytes go (`stele_doc::inspect`, summed over each collection)\n");
    pt.print();
    Ok(())
}

const THRESHOLDS: [Option<usize>; 6] = [None, Some(32), Some(64), Some(128), Some(256), Some(512)];

fn label(n: Option<usize>) -> String {
    n.map_or_else(|| "None".to_owned(), |n| n.to_string())
}

pub fn threshold(ctx: &Ctx) -> Result<()> {
    println!("## 6. String compression threshold (`compress_strings(Some(N))`)\n");
    println!(
        "Per collection and N: total document size (and as a share of the size without \
         compression), JSON-to-document speed (MB/s of JSON), and document-to-JSON speed (MB/s of \
         JSON out; reads every string, so it pays for decompression). Default: 128.\n"
    );
    let mut head = vec!["collection".to_owned()];
    head.extend(THRESHOLDS.iter().map(|n| label(*n)));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut size_t = Table::new(&head);
    let mut conv_t = Table::new(&head);
    let mut out_t = Table::new(&head);
    let timer = &ctx.timer;
    let mut totals = [0usize; THRESHOLDS.len()];
    let mut json_total = 0usize;
    let opts = JsonOptions::default();
    for c in &ctx.collections {
        eprintln!("part 6: {}", c.name);
        let json = c.doc_slices();
        let bytes_in = c.json_bytes();
        json_total += bytes_in;
        let mut sizes_row = vec![c.name.clone()];
        let mut conv_row = vec![c.name.clone()];
        let mut out_row = vec![c.name.clone()];
        let mut variants = Vec::new();
        for n in THRESHOLDS {
            let mut w = DocumentWriter::with_options(WriteOptions::default().compress_strings(n));
            let docs = Docs::convert(&mut w, c)?;
            variants.push((w, docs, Vec::<u8>::new()));
        }
        let base = variants.first().map_or(1, |v| v.1.total_bytes()).max(1);
        for (i, (_, docs, _)) in variants.iter().enumerate() {
            let size = docs.total_bytes();
            if let Some(t) = totals.get_mut(i) {
                *t += size;
            }
            sizes_row.push(format!(
                "{} ({:.1}%)",
                bytes(size),
                100.0 * size as f64 / base as f64
            ));
        }
        let produced: usize = {
            let (_, docs, out) = variants
                .first_mut()
                .ok_or_else(|| anyhow::anyhow!("no variants"))?;
            docs.iter()
                .map(|b| {
                    // SAFETY: bytes written by `DocumentWriter`.
                    let doc = unsafe { Document::new_unchecked(b) };
                    out.clear();
                    doc.write_json(out, &opts);
                    out.len()
                })
                .sum()
        };
        let mut conv: Vec<Box<dyn FnMut() + '_>> = Vec::new();
        let mut to_json: Vec<Box<dyn FnMut() + '_>> = Vec::new();
        for (w, docs, out) in variants.iter_mut() {
            let json = &json;
            let opts = &opts;
            conv.push(Box::new(move || {
                for d in json {
                    black_box(w.from_json(d).expect("converted before timing"));
                }
            }));
            let docs = &*docs;
            to_json.push(Box::new(move || {
                for b in docs.iter() {
                    // SAFETY: bytes written by `DocumentWriter`.
                    let doc = unsafe { Document::new_unchecked(b) };
                    out.clear();
                    doc.write_json(out, opts);
                    black_box(&out);
                }
            }));
        }
        let mut refs: Vec<&mut dyn FnMut()> = conv
            .iter_mut()
            .map(|b| &mut **b as &mut dyn FnMut())
            .collect();
        for t in timer.group(&mut refs) {
            conv_row.push(f(mbps(bytes_in, t), 0));
        }
        let mut refs: Vec<&mut dyn FnMut()> = to_json
            .iter_mut()
            .map(|b| &mut **b as &mut dyn FnMut())
            .collect();
        for t in timer.group(&mut refs) {
            out_row.push(f(mbps(produced, t), 0));
        }
        size_t.row(sizes_row);
        conv_t.row(conv_row);
        out_t.row(out_row);
    }
    let mut total_row =
        vec!["**all** (bytes, % of None; JSON total ".to_owned() + &bytes(json_total) + ")"];
    for t in totals {
        total_row.push(format!(
            "{} ({:.1}%)",
            bytes(t),
            100.0 * t as f64 / totals[0].max(1) as f64
        ));
    }
    size_t.row(total_row);
    println!("### Size\n");
    size_t.print();
    println!("### JSON to document, MB/s\n");
    conv_t.print();
    println!("### Document to JSON, MB/s\n");
    out_t.print();
    Ok(())
}
