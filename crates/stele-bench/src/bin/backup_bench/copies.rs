//! Part 2 of the benchmark: a backup with copies (unlimited and at each `--rates` limit)
//! and with hard links beside `cp -r` of the folder (plain, and followed by a `sync` of
//! every file it wrote: a backup returns with its copy on the disk), each while one writer
//! commits for the whole part (see `writer.rs`). The writer's rate beside each run is
//! compared with its rate alone in the windows just before and just after it (each as long
//! as the run, at least 1 s): a paired ratio per run, so that the machine's drift between
//! runs (other jobs share it) cancels. In `--rounds` rounds; the table gives medians of the
//! rounds, their range, and the medians of the paired ratios.

use super::disk;
use super::writer::{Window, Writer};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use stele::Database;

/// What part 2 measured that later parts use.
pub(crate) struct Copies {
    /// The last round's backup with copies (the incremental backups go into it).
    pub copy_dest: PathBuf,
    /// Median times of `cp -r` and of `stele backup --copy`.
    pub cp: Duration,
    pub copy: Duration,
}

/// One kind of run.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Cp,
    CpSync,
    /// `stele backup --copy`, at most this many MB/s.
    Copy(Option<f64>),
    Links,
}

impl Kind {
    fn name(self) -> String {
        match self {
            Kind::Cp => "cp -r".into(),
            Kind::CpSync => "cp -r, then sync of its files".into(),
            Kind::Copy(None) => "stele backup --copy".into(),
            Kind::Copy(Some(mb)) => format!("stele backup --copy --max-rate {mb}"),
            Kind::Links => "stele backup (hard links)".into(),
        }
    }
}

/// One run: its time, the writer beside it and alone around it.
#[derive(Debug, Clone, Copy)]
struct Run {
    secs: f64,
    /// A backup's log bytes shipped, MB.
    log_mb: Option<f64>,
    beside: Window,
    before: Window,
    after: Window,
}

impl Run {
    fn alone_rate(&self) -> f64 {
        (self.before.commits + self.after.commits) as f64
            / (self.before.secs + self.after.secs).max(1e-9)
    }
    fn ratio(&self) -> f64 {
        self.beside.rate() / self.alone_rate().max(1e-9)
    }
}

/// Runs the rounds; prints the disk's rates and the table.
pub(crate) fn measure(
    db: &Database,
    src: &Path,
    work: &Path,
    rounds: usize,
    rates: &[f64],
) -> Result<Copies> {
    let db_mb = super::folder_bytes(src) as f64 / 1e6;
    let mut kinds = vec![Kind::Cp, Kind::CpSync, Kind::Copy(None)];
    kinds.extend(rates.iter().map(|&r| Kind::Copy(Some(r))));
    kinds.push(Kind::Links);
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); kinds.len()];
    let mut dd = Vec::new();
    let mut copy_dest = PathBuf::new();
    let writer = Writer::start(db);
    // Past the writer's start (its first commits open the collection).
    std::thread::sleep(Duration::from_secs(1));
    for round in 0..rounds {
        dd.push(disk::rates(src, work)?);
        for (k, &kind) in kinds.iter().enumerate() {
            let dest = work.join(format!("copy-{k}-{round}"));
            // Each alone window as long as the run (its last time, or its time at the
            // limit), at least 1 s.
            let guess = match (runs[k].last(), kind) {
                (Some(r), _) => r.secs,
                (None, Kind::Copy(Some(mb))) => db_mb / mb,
                _ => 1.0,
            };
            let w = Duration::from_secs_f64(guess.max(1.0));
            let t0 = writer.now();
            std::thread::sleep(w);
            let t1 = writer.now();
            let (took, log_bytes) = run(kind, src, &dest)?;
            let t2 = writer.now();
            std::thread::sleep(w);
            let t3 = writer.now();
            runs[k].push(Run {
                secs: took.as_secs_f64(),
                log_mb: log_bytes.map(|b| b as f64 / 1e6),
                beside: writer.window(t1, t2),
                before: writer.window(t0, t1),
                after: writer.window(t2, t3),
            });
            if matches!(kind, Kind::Copy(None)) && round + 1 == rounds {
                copy_dest = dest;
            } else {
                std::fs::remove_dir_all(&dest)
                    .with_context(|| format!("removing {}", dest.display()))?;
            }
            // Outside the windows: the removal's journal commit and the discards of the
            // freed blocks (the file system is mounted with `discard`), and what `cp -r`
            // left in the page cache (its writeback was in the window after it), so that
            // the next run's window before it is the writer alone.
            super::timed_command(Command::new("sync").arg("-f").arg(work))?;
            std::thread::sleep(Duration::from_millis(1500));
        }
    }
    writer.finish()?;
    print_disk(&dd, rounds, db_mb);
    print_table(&kinds, &runs, rounds, db_mb);
    let secs = |k: usize| median(runs[k].iter().map(|r| r.secs));
    Ok(Copies {
        copy_dest,
        cp: Duration::from_secs_f64(secs(0)),
        copy: Duration::from_secs_f64(secs(2)),
    })
}

/// Runs `kind`; returns its time and (a backup) the log bytes it shipped.
fn run(kind: Kind, src: &Path, dest: &Path) -> Result<(Duration, Option<u64>)> {
    let plain = |t: Result<Duration>| t.map(|t| (t, None));
    match kind {
        Kind::Cp => plain(super::timed_command(
            Command::new("cp").arg("-r").arg(src).arg(dest),
        )),
        // `sync FILE...` fsyncs each file (coreutils), as a backup does.
        Kind::CpSync => plain(super::timed_command(Command::new("sh").arg("-c").arg(
            format!(
                "cp -r '{}' '{}' && find '{}' -type f -exec sync {{}} +",
                src.display(),
                dest.display(),
                dest.display()
            ),
        ))),
        Kind::Copy(rate) => backup_child(src, dest, true, rate),
        Kind::Links => backup_child(src, dest, false, None),
    }
}

fn print_disk(dd: &[disk::Rates], rounds: usize, db_mb: f64) {
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
}

fn print_table(kinds: &[Kind], runs: &[Vec<Run>], rounds: usize, db_mb: f64) {
    let all: Vec<&Run> = runs.iter().flatten().collect();
    let noise: Vec<f64> = all
        .iter()
        .map(|r| r.after.rate() / r.before.rate().max(1e-9))
        .collect();
    let alone_p50 = median(all.iter().map(|r| r.before.p50_ms));
    let alone_p99 = median(all.iter().map(|r| r.before.p99_ms));
    let cpu = median(all.iter().map(|r| r.before.cpu_share));
    let alone = median(all.iter().map(|r| r.alone_rate()));
    println!(
        "\nwriter alone (the windows before and after every run): {alone:.0} commits/s (median), a commit p50 {alone_p50:.2} ms, p99 {alone_p99:.2} ms, {:.0}% of it on the CPU (the rest waits for the log's fdatasync); the window after a run over the one before it: median {:.2}, {:.2}-{:.2}",
        cpu * 100.0,
        median(noise.iter().copied()),
        noise.iter().copied().fold(f64::INFINITY, f64::min),
        noise.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "\n| run ({rounds} rounds) | median s | min s | max s | MB/s | vs cp -r | vs cp -r + sync | writer commits/s beside / alone | beside / alone (paired, median) | range | commit p50 / p99 ms beside | log MB shipped |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let secs = |k: usize| runs[k].iter().map(|r| r.secs).collect::<Vec<_>>();
    let ratio = |k: usize, base: usize| {
        median(secs(k).iter().zip(secs(base)).map(|(a, b)| a / b.max(1e-9)))
    };
    for (k, kind) in kinds.iter().enumerate() {
        let s = secs(k);
        let r = &runs[k];
        let paired: Vec<f64> = r.iter().map(Run::ratio).collect();
        let med = median(s.iter().copied());
        println!(
            "| {} | {med:.3} | {:.3} | {:.3} | {:.0} | {:.2} | {:.2} | {:.0} / {:.0} | {:.2} | {:.2}-{:.2} | {:.1} / {:.1} | {} |",
            kind.name(),
            s.iter().copied().fold(f64::INFINITY, f64::min),
            s.iter().copied().fold(0.0, f64::max),
            db_mb / med.max(1e-9),
            ratio(k, 0),
            ratio(k, 1),
            median(r.iter().map(|x| x.beside.rate())),
            median(r.iter().map(Run::alone_rate)),
            median(paired.iter().copied()),
            paired.iter().copied().fold(f64::INFINITY, f64::min),
            paired.iter().copied().fold(0.0, f64::max),
            median(r.iter().map(|x| x.beside.p50_ms)),
            median(r.iter().map(|x| x.beside.p99_ms)),
            if r.iter().any(|x| x.log_mb.is_some()) {
                format!("{:.1}", median(r.iter().filter_map(|x| x.log_mb)))
            } else {
                "-".into()
            },
        );
    }
}

/// The median of `values` (the lower middle one of an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

/// A backup by this binary run again (a separate reader process, as `stele backup` is).
/// Returns its time and the log bytes it shipped.
fn backup_child(
    src: &Path,
    dest: &Path,
    copy: bool,
    mb_per_s: Option<f64>,
) -> Result<(Duration, Option<u64>)> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("child-backup")
        .arg(src)
        .arg(dest)
        .arg(if copy { "copy" } else { "link" });
    if let Some(mb) = mb_per_s {
        cmd.arg(format!("{mb}"));
    }
    let start = std::time::Instant::now();
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    let took = start.elapsed();
    if !out.status.success() {
        anyhow::bail!(
            "{cmd:?} failed: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let log_bytes = text
        .split_whitespace()
        .skip_while(|w| *w != "log_bytes")
        .nth(1)
        .and_then(|n| n.parse().ok());
    Ok((took, log_bytes))
}
