//! Part 1 (JSON to document) and part 3 (document to JSON).

use std::hint::black_box;

use anyhow::{Context, Result};
use stele_doc::{Document, DocumentWriter, JsonOptions};

use super::Ctx;
use super::data::Collection;
use super::table::{Table, f, geomean, mbps, ratio};

/// Documents of `c` that every parser accepts, and a note about the others.
fn accepted(c: &Collection) -> (Vec<&[u8]>, Option<String>) {
    let mut w = DocumentWriter::new();
    let mut buf = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    let (mut ours, mut serde, mut sonic, mut simd) = (0, 0, 0, 0);
    let mut keep = Vec::new();
    for d in c.docs() {
        let a = w.from_json(d).is_ok();
        let b = serde_json::from_slice::<serde_json::Value>(d).is_ok();
        let s = sonic_rs::from_slice::<sonic_rs::Value>(d).is_ok();
        buf.clear();
        buf.extend_from_slice(d);
        let m = simd_json::value::borrowed::to_value_with_buffers(&mut buf, &mut buffers).is_ok();
        ours += usize::from(!a);
        serde += usize::from(!b);
        sonic += usize::from(!s);
        simd += usize::from(!m);
        if a && b && s && m {
            keep.push(d);
        }
    }
    let note = (ours + serde + sonic + simd > 0).then(|| {
        format!(
            "{}: rejected by ours {ours}, serde_json {serde}, sonic-rs {sonic}, simd-json {simd}; \
             measured on the {} documents all accept",
            c.name,
            keep.len()
        )
    });
    (keep, note)
}

/// Part 1: JSON text to each library's in-memory form, MB/s of JSON input.
pub fn json_to_doc(ctx: &Ctx) -> Result<()> {
    println!("## 1. JSON to document (MB/s of JSON input, higher is better)\n");
    println!(
        "ours = `DocumentWriter::from_json` (one writer reused, default options; it predicts \
         key names from the previous document, so a set of one document calls \
         `forget_shape` before each conversion); serde_json = \
         `from_slice::<Value>`; sonic-rs = `from_slice::<sonic_rs::Value>`; simd-json = \
         `to_borrowed_value` with reused `Buffers`, *including* a copy of the input into a reused \
         mutable buffer (it parses in place). Collections: one conversion per line, MB/s over all \
         lines.\n"
    );
    let timer = &ctx.timer;
    let mut notes = Vec::new();
    for (title, set) in [
        ("JSON corpus (whole files)", &ctx.corpus),
        ("collections (one document per line)", &ctx.collections),
    ] {
        println!("### {title}\n");
        let mut t = Table::new(&[
            "input",
            "docs",
            "MB",
            "ours",
            "serde_json",
            "sonic-rs",
            "simd-json",
            "ours/serde_json",
            "ours/sonic-rs",
            "ours/simd-json",
        ]);
        let (mut r1, mut r2, mut r3) = (Vec::new(), Vec::new(), Vec::new());
        for c in set.iter() {
            eprintln!("part 1: {}", c.name);
            let (docs, note) = accepted(c);
            notes.extend(note);
            let bytes: usize = docs.iter().map(|d| d.len()).sum();
            let mut w = DocumentWriter::new();
            // A set of one document is timed as a first conversion each time: the writer would
            // otherwise predict every key from the same document's previous conversion.
            let first_conversion = docs.len() == 1;
            let mut ours = || {
                for d in &docs {
                    if first_conversion {
                        w.forget_shape();
                    }
                    let b = w.from_json(d).expect("accepted before timing");
                    black_box(b);
                }
            };
            let mut serde = || {
                for d in &docs {
                    let v: serde_json::Value =
                        serde_json::from_slice(d).expect("accepted before timing");
                    black_box(v);
                }
            };
            let mut sonic = || {
                for d in &docs {
                    let v: sonic_rs::Value =
                        sonic_rs::from_slice(d).expect("accepted before timing");
                    black_box(v);
                }
            };
            let mut buf = Vec::new();
            let mut buffers = simd_json::Buffers::default();
            let mut simd = || {
                for d in &docs {
                    buf.clear();
                    buf.extend_from_slice(d);
                    let v =
                        simd_json::value::borrowed::to_value_with_buffers(&mut buf, &mut buffers)
                            .expect("accepted before timing");
                    black_box(&v);
                }
            };
            let t4 = timer.group(&mut [&mut ours, &mut serde, &mut sonic, &mut simd]);
            let [ours, serde, sonic, simd] = [t4[0], t4[1], t4[2], t4[3]];
            let (o, s, n, m) = (
                mbps(bytes, ours),
                mbps(bytes, serde),
                mbps(bytes, sonic),
                mbps(bytes, simd),
            );
            r1.push(o / s);
            r2.push(o / n);
            r3.push(o / m);
            t.row(vec![
                c.name.clone(),
                docs.len().to_string(),
                f(bytes as f64 / 1e6, 2),
                f(o, 0),
                f(s, 0),
                f(n, 0),
                f(m, 0),
                ratio(o / s),
                ratio(o / n),
                ratio(o / m),
            ]);
        }
        t.row(vec![
            "**geometric mean**".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            ratio(geomean(&r1)),
            ratio(geomean(&r2)),
            ratio(geomean(&r3)),
        ]);
        t.print();
    }
    for n in notes {
        println!("- note: {n}");
    }
    println!();
    Ok(())
}

/// Part 3: document to JSON text, MB/s of (minified) JSON output.
pub fn doc_to_json(ctx: &Ctx) -> Result<()> {
    println!("## 3. Document to JSON (MB/s of minified JSON output, higher is better)\n");
    println!(
        "ours = `Document::new_unchecked` + `write_json` into one reused `Vec` (compact, original \
         key order); serde_json = `to_string(&Value)` per document (as asked), and `to_writer` \
         into a reused `Vec`; sonic-rs = `to_string(&sonic_rs::Value)`. Values parsed before \
         timing. `same bytes` = documents whose output is byte-identical to serde_json's.\n"
    );
    let timer = &ctx.timer;
    let mut t = Table::new(&[
        "input",
        "MB out",
        "ours",
        "serde_json to_string",
        "serde_json to_writer",
        "sonic-rs",
        "ours/serde to_string",
        "ours/serde to_writer",
        "ours/sonic-rs",
        "same bytes",
    ]);
    let (mut r1, mut r2, mut r3) = (Vec::new(), Vec::new(), Vec::new());
    let opts = JsonOptions::default();
    let mut first_mismatch = Vec::new();
    for c in ctx.corpus.iter().chain(&ctx.collections) {
        eprintln!("part 3: {}", c.name);
        let docs = super::convert_default(c)?;
        let values: Vec<serde_json::Value> = c
            .docs()
            .map(serde_json::from_slice)
            .collect::<Result<_, _>>()
            .with_context(|| format!("serde_json parse of {}", c.name))?;
        let sonic_values: Vec<sonic_rs::Value> = c
            .docs()
            .map(sonic_rs::from_slice)
            .collect::<Result<_, _>>()
            .with_context(|| format!("sonic-rs parse of {}", c.name))?;
        // Check: our output against serde_json's (arbitrary_precision + preserve_order keep the
        // input's numbers and order, so they should agree byte for byte).
        let mut out = Vec::new();
        let mut same = 0;
        let mut minified = 0;
        for (b, v) in docs.iter().zip(&values) {
            // SAFETY: bytes written by `DocumentWriter` just above.
            let doc = unsafe { Document::new_unchecked(b) };
            out.clear();
            doc.write_json(&mut out, &opts);
            let theirs = serde_json::to_vec(v)?;
            minified += theirs.len();
            if out == theirs {
                same += 1;
            } else if first_mismatch.len() < 3 {
                let at = out
                    .iter()
                    .zip(&theirs)
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.len().min(theirs.len()));
                let lo = at.saturating_sub(40);
                first_mismatch.push(format!(
                    "{}: at byte {at}: ours `{}` vs serde_json `{}`",
                    c.name,
                    String::from_utf8_lossy(
                        out.get(lo..(at + 40).min(out.len())).unwrap_or_default()
                    ),
                    String::from_utf8_lossy(
                        theirs
                            .get(lo..(at + 40).min(theirs.len()))
                            .unwrap_or_default()
                    )
                ));
            }
        }
        let mut ours = || {
            for b in docs.iter() {
                // SAFETY: bytes written by `DocumentWriter`.
                let doc = unsafe { Document::new_unchecked(b) };
                out.clear();
                doc.write_json(&mut out, &opts);
                black_box(&out);
            }
        };
        let mut serde_string = || {
            for v in &values {
                let s = serde_json::to_string(v).expect("serializes");
                black_box(s);
            }
        };
        let mut buf = Vec::new();
        let mut serde_writer = || {
            for v in &values {
                buf.clear();
                serde_json::to_writer(&mut buf, v).expect("serializes");
                black_box(&buf);
            }
        };
        let mut sonic = || {
            for v in &sonic_values {
                let s = sonic_rs::to_string(v).expect("serializes");
                black_box(s);
            }
        };
        let t4 = timer.group(&mut [&mut ours, &mut serde_string, &mut serde_writer, &mut sonic]);
        let [ours, serde_string, serde_writer, sonic] = [t4[0], t4[1], t4[2], t4[3]];
        let (o, s1, s2, n) = (
            mbps(minified, ours),
            mbps(minified, serde_string),
            mbps(minified, serde_writer),
            mbps(minified, sonic),
        );
        r1.push(o / s1);
        r2.push(o / s2);
        r3.push(o / n);
        t.row(vec![
            c.name.clone(),
            f(minified as f64 / 1e6, 2),
            f(o, 0),
            f(s1, 0),
            f(s2, 0),
            f(n, 0),
            ratio(o / s1),
            ratio(o / s2),
            ratio(o / n),
            format!("{same}/{}", values.len()),
        ]);
    }
    t.row(vec![
        "**geometric mean**".into(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        ratio(geomean(&r1)),
        ratio(geomean(&r2)),
        ratio(geomean(&r3)),
        String::new(),
    ]);
    t.print();
    for m in first_mismatch {
        println!("- output differs: {m}");
    }
    println!();
    Ok(())
}
