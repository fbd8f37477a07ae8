//! DuckDB's side of the query benchmark: the three scans over a table `read_json` made
//! (columnar; reported beside the others, not a target).

use crate::fields::Fields;

/// DuckDB's times for the three scans, from `scripts/duckdb_queries.py` run by `$STELE_PYTHON`
/// (default `python3`) over the documents written as JSON Lines; `None` (and a note) when
/// that Python has no duckdb.
pub fn times(
    work: &std::path::Path,
    name: &str,
    docs: &[&[u8]],
    fl: &Fields,
    runs: usize,
    checks: &mut Vec<String>,
) -> Option<[f64; 3]> {
    let file = work.join(format!("{}.jsonl", name.replace([' ', '/', '(', ')'], "_")));
    let text: Vec<u8> = docs
        .iter()
        .flat_map(|d| d.iter().copied().chain([b'\n']))
        .collect();
    std::fs::write(&file, text).ok()?;
    let python = std::env::var("STELE_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/duckdb_queries.py");
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(&file)
        .args([&fl.cat, &fl.num, &fl.common, &fl.median])
        .arg(runs.to_string())
        .output();
    let _ = std::fs::remove_file(&file);
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let why = if o.status.code() == Some(3) {
                "no duckdb".to_owned()
            } else {
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("failed")
                    .to_owned()
            };
            checks.push(format!(
                "DuckDB not run ({python}: {why}; set STELE_PYTHON to a Python with duckdb)"
            ));
            return None;
        }
        Err(e) => {
            checks.push(format!("DuckDB not run ({python}: {e})"));
            return None;
        }
    };
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let ms = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    checks.push(format!(
        "DuckDB read_json into a table: {:.0} ms",
        ms("load")
    ));
    Some([ms("count"), ms("group"), ms("top20")])
}
