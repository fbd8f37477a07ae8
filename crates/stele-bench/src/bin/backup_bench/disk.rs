//! What the disk takes: `dd` of the database's largest table (in the page cache) to a new
//! file, plain (into the page cache) and with `conv=fdatasync` (on the disk), giving the
//! write rates a durable copy is bound by.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

/// The rates in MB/s: (plain, with fdatasync), and the bytes each wrote.
pub(crate) fn rates(src: &Path, work: &Path) -> Result<(f64, f64, u64)> {
    let largest = std::fs::read_dir(src.join("tables"))?
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
        .max()
        .context("the database has no table")?;
    let (bytes, table) = largest;
    let run = |name: &str, extra: &[&str]| -> Result<f64> {
        let out = work.join(name);
        let t = super::timed_command(
            Command::new("dd")
                .arg(format!("if={}", table.display()))
                .arg(format!("of={}", out.display()))
                .arg("bs=4M")
                .arg("status=none")
                .args(extra),
        )?;
        std::fs::remove_file(&out)?;
        Ok(bytes as f64 / 1e6 / t.as_secs_f64().max(1e-9))
    };
    let plain = run("dd-plain", &[])?;
    let synced = run("dd-fdatasync", &["conv=fdatasync"])?;
    Ok((plain, synced, bytes))
}
