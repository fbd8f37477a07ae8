//! What a read-only database's `refresh()` costs beside a live writer, in CPU time: a
//! database of 100,000 documents (about 330 bytes of JSON each, as in `readers_bench`),
//! compacted, then updated by WARM commits of 1,000 random documents (default 200: the
//! log then holds most ids, as after a few seconds of `readers_bench`); then ROUNDS rounds
//! (default 300) of COMMITS commits (default 12) of 10 updated documents by the writer, each followed
//! by a reader's `refresh()` and a new snapshot (MODE `hold`, the default: the previous one
//! held meanwhile, as a reader that other threads still read from does; `replace`:
//! `refresh_snapshot`, which lets go of it first, so the refresh applies in place) and
//! 1,000 random gets + 3 fields from it. Prints the reader's
//! CPU time per document applied by `refresh()` and per get. One process, the writer and
//! the reader in turn, so the figures are the reader's own work whatever the machine's load.
//!
//! ```text
//! cargo run --release -p stele --example refresh_cost -- /tmp/refresh-cost [ROUNDS] [COMMITS] [WARM] [MODE]
//! ```

use std::time::Instant;

/// SplitMix64: random ids without a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn id(i: u64) -> String {
    format!("user{i:08}")
}

/// The document `readers_bench` writes.
fn doc_json(i: u64, amount: i64) -> String {
    format!(
        r#"{{"id":"{}","name":"user number {i}","city":"city {}","amount":{amount},"tags":["t{}","t{}"],"active":{},"bio":"member since {} who writes about topics {} and {} with a preference for long walks, tea and databases that keep their promises"}}"#,
        id(i),
        i % 997,
        i % 13,
        i % 7,
        i.is_multiple_of(2),
        2000 + i % 25,
        i % 101,
        i % 37
    )
}

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`, exact to the
/// call; `/proc/thread-self/schedstat`, read before, is brought up to date only when the
/// thread is switched out or at a tick, so it missed the most recent run of work).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is a clock every
    // Linux has.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or(
        "usage: refresh_cost <empty folder> [rounds] [commits per refresh] [warm-up commits] [hold|replace]",
    )?;
    let rounds: u64 = args.next().map_or(Ok(300), |r| r.parse())?;
    let commits: u64 = args.next().map_or(Ok(12), |r| r.parse())?;
    let warm_batches: u64 = args.next().map_or(Ok(200), |r| r.parse())?;
    let replace = match args.next().as_deref() {
        None | Some("hold") => false,
        Some("replace") => true,
        Some(other) => return Err(format!("mode {other:?}: hold or replace").into()),
    };
    let docs: u64 = 100_000;
    let mut rng = 7u64;
    let db = stele::Database::open(&dir)?;
    for start in (0..docs).step_by(1000) {
        let mut b = db.batch();
        for i in start..(start + 1000).min(docs) {
            b.put_json("docs", &id(i), doc_json(i, 0).as_bytes())?;
        }
        db.commit(b)?;
    }
    db.compact()?;
    // Updates since the compaction, as a writer that has run a while has them: its log (and
    // so a reader's in-memory diff) holds most of the ids.
    for round in 0..warm_batches {
        let mut b = db.batch();
        for _ in 0..1000 {
            let i = next(&mut rng) % docs;
            b.put_json("docs", &id(i), doc_json(i, -(round as i64)).as_bytes())?;
        }
        db.commit(b)?;
    }
    let reader = stele::Database::open_read_only(&dir)?;
    let mut snap = reader.snapshot();
    let (mut applied, mut refresh_ns, mut gets, mut get_ns, mut sum) = (0u64, 0u64, 0u64, 0, 0i64);
    let wall = Instant::now();
    for round in 0..rounds {
        for _ in 0..commits {
            let mut b = db.batch();
            for _ in 0..10 {
                let i = next(&mut rng) % docs;
                b.put_json("docs", &id(i), doc_json(i, round as i64).as_bytes())?;
            }
            db.commit(b)?;
            applied += 10;
        }
        let t = thread_cpu_ns();
        if replace {
            reader.refresh_snapshot(&mut snap)?;
            refresh_ns += thread_cpu_ns() - t;
        } else {
            reader.refresh()?;
            let new = reader.snapshot();
            refresh_ns += thread_cpu_ns() - t;
            std::hint::black_box(&snap);
            snap = new;
        }
        let t = thread_cpu_ns();
        for _ in 0..1000 {
            let doc = snap
                .get("docs", &id(next(&mut rng) % docs))?
                .ok_or("a document is missing")?;
            let doc = doc.document()?;
            let len = |k: &str| doc.get(k).and_then(|v| v.as_str().map(|s| s.len()));
            sum += doc.get("amount").and_then(|v| v.as_i64()).unwrap_or(0)
                + (len("name").unwrap_or(0) + len("city").unwrap_or(0)) as i64;
            gets += 1;
        }
        get_ns += thread_cpu_ns() - t;
    }
    std::hint::black_box(sum);
    println!(
        "{} {rounds} rounds in {:.1} s: refresh {:.0} ns per document applied ({:.0} us per refresh of {}), get + 3 fields {:.0} ns",
        if replace { "replace" } else { "hold" },
        wall.elapsed().as_secs_f64(),
        refresh_ns as f64 / applied as f64,
        refresh_ns as f64 / rounds as f64 / 1000.0,
        commits * 10,
        get_ns as f64 / gets as f64,
    );
    Ok(())
}
