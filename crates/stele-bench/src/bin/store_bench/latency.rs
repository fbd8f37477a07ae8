//! Latency of a durable commit of one small document, against what the disk allows in the
//! same run: the same record bytes appended to a file and fdatasync'd, and written into a
//! file zeroed in advance and fdatasync'd (what Stele's log does).

use anyhow::Result;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;
use stele::Database;

use crate::percentile;
use crate::table::{Table, f};

/// The document of every commit (about 60 bytes, as an order or an event might be).
const DOC: &[u8] = br#"{"user":"ada","total":12.5,"tags":["gift","express"],"n":1}"#;

/// p50, p90 and p99 of `samples_ns`, in microseconds.
fn spread_us(mut samples_ns: Vec<u64>) -> [f64; 3] {
    samples_ns.sort_unstable();
    [0.5, 0.9, 0.99].map(|p| percentile(&samples_ns, p) as f64 / 1e3)
}

fn stele_commits(dir: &Path, warmup: usize, n: usize) -> Result<Vec<u64>> {
    let _ = std::fs::remove_dir_all(dir);
    let db = Database::open(dir)?;
    let mut ns = Vec::with_capacity(n);
    for i in 0..warmup + n {
        let t = Instant::now();
        let mut batch = db.batch();
        batch.put_json("events", &format!("{i:08}"), DOC)?;
        db.commit(batch)?;
        if i >= warmup {
            ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    drop(db);
    std::fs::remove_dir_all(dir)?;
    Ok(ns)
}

/// `n` writes of `record_bytes` and an fdatasync each: appended to a growing file, or
/// written into a file of zeroes written and synced before the first.
fn raw_syncs(path: &Path, record_bytes: usize, n: usize, zeroed: bool) -> Result<Vec<u64>> {
    let _ = std::fs::remove_file(path);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)?;
    if zeroed {
        file.write_all(&vec![0; record_bytes * n])?;
        file.sync_all()?;
    }
    let record = vec![b'x'; record_bytes];
    let mut ns = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        if zeroed {
            file.write_all_at(&record, (i * record_bytes) as u64)?;
        } else {
            file.write_all(&record)?;
        }
        file.sync_data()?;
        ns.push(t.elapsed().as_nanos() as u64);
    }
    drop(file);
    std::fs::remove_file(path)?;
    Ok(ns)
}

/// Prints the commit latency table.
pub(crate) fn run(work: &Path, quick: bool) -> Result<()> {
    let (warmup, n) = if quick { (20, 200) } else { (500, 3000) };
    let stele = spread_us(stele_commits(&work.join("latency-db"), warmup, n)?);
    // About the size of this commit's log record (header, batch framing, id, document).
    let record_bytes = 128;
    let file = work.join("latency.raw");
    let append = spread_us(raw_syncs(&file, record_bytes, n, false)?);
    let zeroed = spread_us(raw_syncs(&file, record_bytes, n, true)?);
    println!(
        "\n## Commit latency\n\nOne document ({} bytes of JSON) per durable commit, {n} commits after {warmup} \
         to warm up, in a fresh database; beside it, the disk alone in the same run: a record of \
         {record_bytes} bytes (about a commit's log record) written and fdatasync'd {n} times, appended to a growing file, and \
         written into a file zeroed in advance (as Stele's log is).\n",
        DOC.len()
    );
    let mut t = Table::new(&["what", "p50 us", "p90 us", "p99 us", "p50 / Stele"]);
    for (what, s) in [
        ("Stele: put_json + commit", stele),
        ("disk: append + fdatasync", append),
        ("disk: write into zeroes + fdatasync", zeroed),
    ] {
        t.row(vec![
            what.to_owned(),
            f(s[0], 0),
            f(s[1], 0),
            f(s[2], 0),
            f(s[0] / stele[0], 2),
        ]);
    }
    t.print();
    Ok(())
}
