//! Part 2 of the benchmark: a backup with copies and with hard links beside `cp -r` of
//! the folder (plain, and followed by a `sync` of every file it wrote: a backup returns
//! with its copy on the disk), each while a writer commits, in rounds (the machine is
//! shared: each round runs every kind once, one after the other, and the table gives the
//! median of the rounds, their range, and the median of each round's ratios).

use super::disk;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use stele::Database;

/// What part 2 measured that later parts use.
pub(crate) struct Copies {
    /// The last round's backup with copies (the incremental backups go into it).
    pub copy_dest: PathBuf,
    /// Median times of `cp -r` and of `stele backup --copy`.
    pub cp: Duration,
    pub copy: Duration,
}

const KINDS: [&str; 4] = [
    "cp -r",
    "cp -r, then sync of its files",
    "stele backup --copy",
    "stele backup (hard links)",
];

/// Runs the rounds; prints the disk's rates and the table.
pub(crate) fn measure(
    db: &Database,
    src: &Path,
    work: &Path,
    rounds: usize,
    period: Duration,
) -> Result<Copies> {
    let db_mb = super::folder_bytes(src) as f64 / 1e6;
    let alone = writer_rate(db, || {
        std::thread::sleep(period);
        Ok(period)
    })?;
    // Per kind, per round: (time, writer commits/s).
    let mut runs: Vec<Vec<(Duration, f64)>> = vec![Vec::new(); KINDS.len()];
    let mut dd = Vec::new();
    let mut copy_dest = PathBuf::new();
    for round in 0..rounds {
        dd.push(disk::rates(src, work)?);
        for (k, times) in runs.iter_mut().enumerate() {
            let dest = work.join(format!("copy-{k}-{round}"));
            let run = match k {
                0 => writer_rate(db, || {
                    super::timed_command(Command::new("cp").arg("-r").arg(src).arg(&dest))
                })?,
                // `sync FILE...` fsyncs each file (coreutils), as a backup does.
                1 => writer_rate(db, || {
                    super::timed_command(Command::new("sh").arg("-c").arg(format!(
                        "cp -r '{}' '{}' && find '{}' -type f -exec sync {{}} +",
                        src.display(),
                        dest.display(),
                        dest.display()
                    )))
                })?,
                2 => writer_rate(db, || backup_child(src, &dest, true))?,
                _ => writer_rate(db, || backup_child(src, &dest, false))?,
            };
            times.push(run);
            if k == 2 && round + 1 == rounds {
                copy_dest = dest;
            } else {
                std::fs::remove_dir_all(&dest)
                    .with_context(|| format!("removing {}", dest.display()))?;
                // The file system discards the freed blocks meanwhile.
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    let plain = median(dd.iter().map(|d| d.plain));
    let direct = median(dd.iter().map(|d| d.direct));
    let synced = median(dd.iter().map(|d| d.fdatasync));
    let dd_mb = dd.first().map_or(0.0, |d| d.bytes as f64 / 1e6);
    println!(
        "disk (median of {rounds} rounds): dd of the largest table ({dd_mb:.1} MB): {plain:.0} MB/s into the page cache, {direct:.0} MB/s with oflag=direct, {synced:.0} MB/s with conv=fdatasync; the database's {db_mb:.1} MB take {:.3} s into the page cache, {:.3} s to the device (direct), {:.3} s into the page cache and then to the device",
        db_mb / plain,
        db_mb / direct,
        db_mb / synced
    );
    println!(
        "\n| run ({rounds} rounds) | median s | min s | max s | vs cp -r | vs cp -r + sync | writer commits/s | vs writer alone |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| writer alone | - | - | - | - | - | {:.0} | 1.00 |",
        alone.1
    );
    let secs = |k: usize| {
        runs[k]
            .iter()
            .map(|r| r.0.as_secs_f64())
            .collect::<Vec<_>>()
    };
    let ratio = |k: usize, base: usize| {
        median(secs(k).iter().zip(secs(base)).map(|(a, b)| a / b.max(1e-9)))
    };
    for (k, kind) in KINDS.iter().enumerate() {
        let s = secs(k);
        let rate = median(runs[k].iter().map(|r| r.1));
        println!(
            "| {kind} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {rate:.0} | {:.2} |",
            median(s.iter().copied()),
            s.iter().copied().fold(f64::INFINITY, f64::min),
            s.iter().copied().fold(0.0, f64::max),
            ratio(k, 0),
            ratio(k, 1),
            rate / alone.1
        );
    }
    let med = |k: usize| Duration::from_secs_f64(median(secs(k).into_iter()));
    Ok(Copies {
        copy_dest,
        cp: med(0),
        copy: med(2),
    })
}

/// The median of `values` (the lower middle one of an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

/// Runs `during` while a writer thread commits batches of 100 documents; returns what
/// `during` timed and the writer's commits per second meanwhile.
fn writer_rate(
    db: &Database,
    during: impl FnOnce() -> Result<Duration>,
) -> Result<(Duration, f64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, stop, commits) = (db.clone(), Arc::clone(&stop), Arc::clone(&commits));
        std::thread::spawn(move || -> Result<()> {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut b = db.batch();
                for _ in 0..100 {
                    n += 1;
                    b.put_json(
                        "bench-writer",
                        &format!("w{}", n % 100_000),
                        format!(
                            r#"{{"n":{n},"text":"a small document written while the backup runs"}}"#
                        )
                        .as_bytes(),
                    )?;
                }
                db.commit(b)?;
                commits.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
    };
    let start = Instant::now();
    let before = commits.load(Ordering::Relaxed);
    let timed = during();
    let elapsed = start.elapsed();
    let done = commits.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer panicked"))??;
    Ok((timed?, done as f64 / elapsed.as_secs_f64()))
}

/// A backup by this binary run again (a separate reader process, as `stele backup` is).
fn backup_child(src: &Path, dest: &Path, copy: bool) -> Result<Duration> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("child-backup")
        .arg(src)
        .arg(dest)
        .arg(if copy { "copy" } else { "link" });
    super::timed_command(&mut cmd)
}
