//! Part 2, the floor: what one read costs on the smallest documents, split into its parts, so
//! that the per-document cost under the 3-field figures is visible.

use std::hint::black_box;

use stele_doc::{CachedPath, Document};

use super::Ctx;
use super::peers::{digest_ours, digest_serde, digest_sonic};
use super::table::{Table, f, ratio};

/// Reads per timed call: one read is a few nanoseconds, far below the clock's resolution.
const REPS: usize = 1000;

pub fn floor(ctx: &Ctx) {
    println!("### The floor: one small document, one field (ns per read, lower is better)\n");
    println!(
        "Each read opens the document and reads field `a` (absent from `{{}}`), {REPS} reads per \
         timed call. open trusted = `Document::new_unchecked` + the root object's length (bytes verified before, as \
         the store's checksummed blocks are); open validated = `Document::new` (full \
         validation) + the same; get = trusted open + `get(\"a\")` (binary search) + value read; \
         cached = trusted open + `CachedPath::read_doc` (remembered slot, checked) + value read; \
         validated cached = validated open + cached read; sonic get = `get_unchecked` on the \
         JSON text; serde_json = `from_slice::<Value>` + `get`.\n"
    );
    let mut t = Table::new(&[
        "document",
        "open trusted",
        "open validated",
        "get",
        "cached",
        "validated cached",
        "sonic get",
        "serde_json",
        "sonic get / cached",
        "serde_json / cached",
    ]);
    for json in [
        &br#"{}"#[..],
        br#"{"a":1}"#,
        br#"{"a":"Ada Lovelace"}"#,
        br#"{"id":7,"name":"x","a":2.5,"tags":["p","q"],"z":null}"#,
    ] {
        let bytes = stele_doc::from_json(json).expect("valid JSON");
        let mut path = CachedPath::new("a").expect("valid path");
        let mut path2 = path.clone();
        let per_read = |secs: f64| secs * 1e9 / REPS as f64;
        let times = ctx.timer.group(&mut [
            &mut || {
                for _ in 0..REPS {
                    // SAFETY: just written by `DocumentWriter`.
                    let doc = unsafe { Document::new_unchecked(black_box(bytes.as_slice())) };
                    black_box(doc.root_object().map(|o| o.len()));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    let doc = Document::new(black_box(bytes.as_slice())).expect("valid");
                    black_box(doc.root_object().map(|o| o.len()));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    // SAFETY: just written by `DocumentWriter`.
                    let doc = unsafe { Document::new_unchecked(black_box(bytes.as_slice())) };
                    black_box(doc.get("a").map(|v| digest_ours(&v)));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    // SAFETY: just written by `DocumentWriter`.
                    let doc = unsafe { Document::new_unchecked(black_box(bytes.as_slice())) };
                    black_box(path.read_doc(&doc, |v| digest_ours(&v)));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    let doc = Document::new(black_box(bytes.as_slice())).expect("valid");
                    black_box(path2.read_doc(&doc, |v| digest_ours(&v)));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    // SAFETY: valid JSON (converted above).
                    let v = unsafe { sonic_rs::get_unchecked(black_box(json), ["a"]) };
                    black_box(v.ok().map(|v| digest_sonic(&v)));
                }
            },
            &mut || {
                for _ in 0..REPS {
                    let v: serde_json::Value =
                        serde_json::from_slice(black_box(json)).expect("valid JSON");
                    black_box(v.get("a").map(digest_serde));
                }
            },
        ]);
        let [open, validated, get, cached, vcached, sonic, serde] = [
            times[0], times[1], times[2], times[3], times[4], times[5], times[6],
        ]
        .map(per_read);
        t.row(vec![
            format!("`{}`", String::from_utf8_lossy(json)),
            f(open, 1),
            f(validated, 1),
            f(get, 1),
            f(cached, 1),
            f(vcached, 1),
            f(sonic, 1),
            f(serde, 1),
            ratio(sonic / cached),
            ratio(serde / cached),
        ]);
    }
    t.print();
    println!();
}
