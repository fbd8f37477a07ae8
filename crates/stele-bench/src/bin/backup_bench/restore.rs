//! A restore of the replica against what bounds it: opening the replica read-only (its
//! tables mapped, its log replayed), reading every byte of its files once, and `cp -r` of
//! the replica folder.

use anyhow::Result;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};
use stele::Database;
use stele::backup::{At, BackupOptions};

/// Measures and prints the restores of `replica` into `work`.
pub(crate) fn measure(work: &Path, replica: &Path) -> Result<()> {
    let t = Instant::now();
    drop(Database::open_read_only(replica)?);
    let open = t.elapsed();
    let t = Instant::now();
    let bytes = read_all(replica)?;
    let read = t.elapsed();
    let cp = super::timed_command(
        std::process::Command::new("cp")
            .arg("-r")
            .arg(replica)
            .arg(work.join("replica-cp")),
    )?;
    let t = Instant::now();
    let linked = stele::backup::restore(replica, work.join("restored"), At::Latest)?;
    let restore_linked = t.elapsed();
    let t = Instant::now();
    let opts = BackupOptions::default().link(false);
    stele::backup::restore_with(replica, work.join("restored-copy"), At::Latest, &opts)?;
    let restore_copied = t.elapsed();
    println!(
        "\n| restore of the replica (version {}, {:.1} MB) | time s | / open | / read once |",
        linked.seq,
        bytes as f64 / 1e6
    );
    println!("|---|---:|---:|---:|");
    let row = |name: &str, d: Duration| {
        println!(
            "| {name} | {:.3} | {:.2} | {:.2} |",
            d.as_secs_f64(),
            d.as_secs_f64() / open.as_secs_f64().max(1e-9),
            d.as_secs_f64() / read.as_secs_f64().max(1e-9)
        );
    };
    row("open it read-only (tables mapped, log replayed)", open);
    row("read every byte of its files once (1 MiB reads)", read);
    row("cp -r of the replica folder", cp);
    row(
        "stele restore (tables hard-linked, every byte hashed)",
        restore_linked,
    );
    row(
        "stele restore, copies (every byte hashed, copied, synced)",
        restore_copied,
    );
    Ok(())
}

/// Reads every file under `dir` once; returns the bytes read.
fn read_all(dir: &Path) -> Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let mut f = std::fs::File::open(&path)?;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
        }
    }
    Ok(total)
}
