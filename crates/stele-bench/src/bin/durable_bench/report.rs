//! The results page: one table of every system at every size, then the ratios.

use serde_json::Value;

use crate::phases::logical;

/// One system at one size: its build and read results, or why it did not run.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) system: String,
    pub(crate) entries: u64,
    pub(crate) build: Option<Value>,
    pub(crate) read: Option<Value>,
    pub(crate) skipped: Option<String>,
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

fn us(v: &Value, k: &str) -> String {
    format!(
        "{:.1} / {:.1}",
        f(&v[k], "median_ns") / 1e3,
        f(&v[k], "p99_ns") / 1e3
    )
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// `cgroup`: the memory limit the phases ran under (name, bytes), if any.
pub(crate) fn report(
    rows: &[Row],
    cgroup: Option<&(String, u64)>,
    load_start: &str,
    load_end: &str,
    test: bool,
) -> String {
    let mut md = String::new();
    md.push_str(&format!(
        "Entries: 8-byte random keys (big-endian u64), 1016-byte random values (1 KiB per \
         entry). Memory limit: {}. Each phase in its own process; byte counts from its \
         /proc/self/io. Write amp = write_bytes / logical bytes (in parentheses: net of \
         cancelled_write_bytes, i.e. temp files deleted before write-back). Read amp = \
         read_bytes / logical bytes read. Cold gets: first gets after posix_fadvise(DONTNEED) \
         of every file. Warm gets: after a scan and a warm-up pass, in the same cgroup \
         (beyond the limit most of them still miss the cache). Latencies median / p99 in us, \
         timer included.\n\n",
        match cgroup {
            Some((name, limit)) => format!("cgroup v1 `{name}`, {} MiB", limit >> 20),
            None => "none (smoke run)".into(),
        }
    ));
    md.push_str(
        "| entries | data | system | build s | write amp | file / data | scan MB/s | scan read amp | cold get us | cold read amp | warm get us | warm read amp | cgroup peak MiB |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let data = logical(r.entries) as f64;
        let size = format!("{:.2} GB", data / 1e9);
        let (Some(b), Some(rd)) = (&r.build, &r.read) else {
            md.push_str(&format!(
                "| {} | {size} | {} | {} |||||||||| \n",
                r.entries,
                r.system,
                r.skipped.as_deref().unwrap_or("not run")
            ));
            continue;
        };
        let peak = [b, rd]
            .iter()
            .map(|v| f(v, "cgroup_peak_bytes"))
            .fold(f64::NAN, f64::max);
        let cold_logical = f(rd, "cold_gets") * logical(1) as f64;
        let warm_logical = f(rd, "warm_gets") * logical(1) as f64;
        let peak = if peak.is_nan() {
            "-".to_string()
        } else {
            format!("{:.0}", peak / (1u64 << 20) as f64)
        };
        md.push_str(&format!(
            "| {} | {size} | {} | {:.1} | {:.2} ({:.2}) | {:.2} | {:.0} | {:.2} | {} | {:.1} | {} | {:.2} | {peak} |\n",
            r.entries,
            r.system,
            f(b, "build_s"),
            f(b, "write_bytes") / data,
            (f(b, "write_bytes") - f(b, "cancelled_write_bytes")) / data,
            f(b, "file_bytes") / data,
            f(rd, "scan_bytes") / f(rd, "scan_s") / 1e6,
            ratio(f(rd, "scan_read_bytes"), f(rd, "scan_bytes")),
            us(rd, "cold"),
            ratio(f(rd, "cold_read_bytes"), cold_logical),
            us(rd, "warm"),
            ratio(f(rd, "warm_read_bytes"), warm_logical),
        ));
    }
    md.push('\n');
    md.push_str(&ratios(rows));
    md.push_str(&format!(
        "Load average (1, 5, 15 min) at the start: {load_start}; at the end: {load_end}.{}\n",
        if test { " Smoke run: tiny sizes." } else { "" }
    ));
    let notes: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let b = r.build.as_ref()?;
            Some(format!("- {}: {}", r.system, b["note"].as_str()?))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    md.push_str(&format!(
        "\nHow each system was built:\n{}\n",
        notes.join("\n")
    ));
    md
}

/// Peer / Stele ratios per size (above 1: Stele is faster or amplifies less).
fn ratios(rows: &[Row]) -> String {
    let mut md = String::from(
        "Peer / Stele, same size (above 1: Stele is better): build time, write amp, cold get \
         median, cold read amp, warm get median.\n\n| entries | peer | build | write amp | cold get | cold read amp | warm get |\n|---:|---|---:|---:|---:|---:|---:|\n",
    );
    for r in rows.iter().filter(|r| r.system != "stele") {
        let Some(s) = rows
            .iter()
            .find(|s| s.system == "stele" && s.entries == r.entries)
        else {
            continue;
        };
        let (Some(sb), Some(sr), Some(pb), Some(pr)) = (&s.build, &s.read, &r.build, &r.read)
        else {
            continue;
        };
        let cold_amp = |v: &Value| ratio(f(v, "cold_read_bytes"), f(v, "cold_gets"));
        md.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
            r.entries,
            r.system,
            ratio(f(pb, "build_s"), f(sb, "build_s")),
            ratio(f(pb, "write_bytes"), f(sb, "write_bytes")),
            ratio(f(&pr["cold"], "median_ns"), f(&sr["cold"], "median_ns")),
            ratio(cold_amp(pr), cold_amp(sr)),
            ratio(f(&pr["warm"], "median_ns"), f(&sr["warm"], "median_ns")),
        ));
    }
    md.push('\n');
    md
}
