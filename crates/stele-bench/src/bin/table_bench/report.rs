//! Markdown tables of the results, with ratios against Stele.

use std::fmt::Write as _;

use serde_json::Value;

use crate::Job;
use crate::data::SetInfo;
use crate::stores::Input;

#[derive(Debug)]
pub struct Row {
    pub job: Job,
    pub build: Value,
    pub warm: Option<Value>,
    pub cold: Option<Value>,
    pub skipped: Option<String>,
}

impl Row {
    pub fn new(job: &Job, build: Value) -> Self {
        Row {
            job: *job,
            build,
            warm: None,
            cold: None,
            skipped: None,
        }
    }

    pub fn skipped(job: &Job, why: &str) -> Self {
        Row {
            job: *job,
            build: Value::Null,
            warm: None,
            cold: None,
            skipped: Some(why.to_string()),
        }
    }
}

pub fn preamble(lookups: usize, cold: usize) -> String {
    format!(
        "Values: the key's row number in the shuffled key file, 8 bytes little-endian. \
         Build time: from reading the input file (already in the page cache) to the store \
         durable on disk. Warm gets: {lookups} random existing keys per thread after a scan and \
         a warm-up pass; each get reads and checks the value. Cold gets: {cold} random keys \
         after `posix_fadvise(DONTNEED)` on every file of the store, in a fresh process, \
         MADV_RANDOM where the store maps its file; pages = `read_bytes` of /proc/self/io / 4096. \
         Build CPU s: user + system CPU time of the build process (of `sort` for GNU sort); \
         with 2 cores, wall time below CPU time means two threads worked. \
         \"(r×)\" is the figure divided by Stele's (build rows: Sorter in memory for shuffled \
         input, TableBuilder for sorted input; read rows: the TableBuilder table).\n\n"
    )
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn cell(v: Option<f64>, base: Option<f64>, digits: usize) -> String {
    match v {
        None => "-".into(),
        Some(x) => match base {
            Some(b) if b > 0.0 => format!("{x:.digits$} ({:.2}×)", x / b),
            _ => format!("{x:.digits$}"),
        },
    }
}

const MIB: f64 = 1024.0 * 1024.0;

pub fn tables(set: &SetInfo, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Set `{}`: {} keys, {:.1} MB of raw key bytes ({:.1} bytes/key)\n",
        set.name,
        set.entries,
        set.raw_key_bytes as f64 / 1e6,
        set.raw_key_bytes as f64 / set.entries.max(1) as f64
    );
    let _ = writeln!(s, "Keys: {}.\n", set.derivation);
    let find = |store: &str, input: Input| {
        rows.iter()
            .find(|r| r.job.store == store && r.job.input == input && r.skipped.is_none())
    };
    let base_shuf = find("stele-mem", Input::Shuffled);
    let base_sorted = find("stele-builder", Input::Sorted);
    let _ = writeln!(
        s,
        "| store | input | how | build s | build CPU s | peak RSS MiB | file MiB | file / raw keys |\n|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        if let Some(why) = &r.skipped {
            let _ = writeln!(
                s,
                "| {} | {} | {} | skipped: {why} | | | | |",
                r.job.store,
                r.job.input.name(),
                r.job.what
            );
            continue;
        }
        let base = match r.job.input {
            Input::Shuffled => base_shuf,
            Input::Sorted => base_sorted,
        };
        let b = |k: &str| base.and_then(|b| f(&b.build[k]));
        let size_base = base_sorted
            .or(base_shuf)
            .and_then(|b| f(&b.build["file_bytes"]));
        let file = f(&r.build["file_bytes"]);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.job.store,
            r.job.input.name(),
            r.job.what,
            cell(f(&r.build["build_s"]), b("build_s"), 2),
            cell(f(&r.build["cpu_s"]), b("cpu_s"), 2),
            cell(
                f(&r.build["peak_rss_bytes"]).map(|x| x / MIB),
                b("peak_rss_bytes").map(|x| x / MIB),
                0
            ),
            cell(file.map(|x| x / MIB), size_base.map(|x| x / MIB), 1),
            cell(file.map(|x| x / set.raw_key_bytes as f64), None, 2),
        );
    }
    s.push('\n');
    let base = base_sorted.filter(|b| b.warm.is_some());
    let _ = writeln!(
        s,
        "| store | get 1t median ns | get 1t p99 ns | get 1t mean ns (no clock) | get 2t median ns | get 2t p99 ns | 2 threads Mget/s | scan M entries/s | scan MB/s | cold pages/get | cold pages/get, 2nd half | cold median µs | open: read KiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let (Some(w), Some(c)) = (&r.warm, &r.cold) else {
            continue;
        };
        let bw = |path: &[&str]| {
            base.and_then(|b| b.warm.as_ref())
                .and_then(|v| f(path.iter().fold(v, |v, k| &v[*k])))
        };
        let bc = |path: &[&str]| {
            base.and_then(|b| b.cold.as_ref())
                .and_then(|v| f(path.iter().fold(v, |v, k| &v[*k])))
        };
        let scan_rate = |v: &Value| Some(f(&v["scan_entries"])? / f(&v["scan_s"])? / 1e6);
        let scan_mb = |v: &Value| Some(f(&v["scan_bytes"])? / f(&v["scan_s"])? / 1e6);
        let pages = |v: &Value| Some(f(&v["read_bytes"])? / 4096.0 / f(&v["gets"])?);
        let pages2 = |v: &Value| {
            Some(f(&v["read_bytes_second_half"])? / 4096.0 / f(&v["gets_second_half"])?)
        };
        let bwv = base.and_then(|b| b.warm.as_ref());
        let bcv = base.and_then(|b| b.cold.as_ref());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.job.store,
            cell(f(&w["get1"]["median_ns"]), bw(&["get1", "median_ns"]), 0),
            cell(f(&w["get1"]["p99_ns"]), bw(&["get1", "p99_ns"]), 0),
            cell(
                f(&w["get1_untimed_mean_ns"]),
                bw(&["get1_untimed_mean_ns"]),
                0
            ),
            cell(f(&w["get2"]["median_ns"]), bw(&["get2", "median_ns"]), 0),
            cell(f(&w["get2"]["p99_ns"]), bw(&["get2", "p99_ns"]), 0),
            cell(
                f(&w["get2_ops_per_s"]).map(|x| x / 1e6),
                bw(&["get2_ops_per_s"]).map(|x| x / 1e6),
                2
            ),
            cell(scan_rate(w), bwv.and_then(scan_rate), 1),
            cell(scan_mb(w), bwv.and_then(scan_mb), 0),
            cell(pages(c), bcv.and_then(pages), 2),
            cell(pages2(c), bcv.and_then(pages2), 2),
            cell(
                f(&c["latency"]["median_ns"]).map(|x| x / 1e3),
                bc(&["latency", "median_ns"]).map(|x| x / 1e3),
                0
            ),
            cell(
                f(&c["open_read_bytes"]).map(|x| x / 1024.0),
                bc(&["open_read_bytes"]).map(|x| x / 1024.0),
                0
            ),
        );
    }
    s.push('\n');
    let timer: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            Some(format!(
                "{} {}",
                r.job.store,
                r.warm.as_ref()?["timer_overhead_ns"]
            ))
        })
        .collect();
    let _ = writeln!(
        s,
        "Clock overhead included in each timed get (median of an empty timed section, ns): {}.\n",
        timer.join(", ")
    );
    let notes: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            Some(format!(
                "- {} ({}): {}",
                r.job.store,
                r.job.input.name(),
                r.build["note"].as_str()?
            ))
        })
        .collect();
    let _ = writeln!(s, "Notes from the runs:\n{}\n", notes.join("\n"));
    s
}
