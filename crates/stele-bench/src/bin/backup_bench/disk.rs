//! What the disk takes: `dd` of the database's largest table (in the page cache) to a new
//! file: plain (into the page cache: the faster of two runs, the first paying for the
//! blocks a removal before it freed), with `oflag=direct` (straight to the device) and
//! with `conv=fdatasync` (into the page cache, then waiting for the device), giving the
//! write rates a durable copy is bound by.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

/// The write rates in MB/s of one round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rates {
    pub plain: f64,
    pub direct: f64,
    pub fdatasync: f64,
    /// The bytes each run wrote.
    pub bytes: u64,
}

/// Measures the rates, writing into `work`.
pub(crate) fn rates(src: &Path, work: &Path) -> Result<Rates> {
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
    let plain = run("dd-plain", &[])?.max(run("dd-plain", &[])?);
    let direct = run("dd-direct", &["oflag=direct"])?;
    let fdatasync = run("dd-fdatasync", &["conv=fdatasync"])?;
    Ok(Rates {
        plain,
        direct,
        fdatasync,
        bytes,
    })
}
