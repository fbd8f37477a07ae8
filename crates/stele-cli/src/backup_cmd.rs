//! Backup commands: `backup`, `verify`, `replicate`, `restore` (see `docs/BACKUPS.md`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::say::count;
use stele::backup::{self, At, BackupOptions, Replicator, Retention, Shipment};

/// `stele backup DB DEST`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    stele backup shop /mnt/backups/shop        # a new backup, or only what is new since the last\n  \
    stele backup --copy shop /mnt/backups/shop # copy tables even on the same file system\n  \
    stele backup --max-rate 100 shop /mnt/b    # copy at most 100 MB/s: the writer keeps the disk\n\n\
    The database may be open by a writer meanwhile: the backup is at the last commit made when it\n\
    started. The backup folder opens as a database (read-only); `stele restore` makes a new one.")]
pub struct BackupArgs {
    /// The database folder.
    pub db: PathBuf,
    /// The backup folder: new, or a backup made before (only what it lacks is written).
    pub dest: PathBuf,
    /// Copy tables even where a hard link would do (a backup on the same disk shares the
    /// disk's fate when linked).
    #[arg(long)]
    pub copy: bool,
    /// Copy tables at most this fast, so that the database's writer keeps the disk part of
    /// the time: MB/s (100), or with a unit (512KB/s, 1GB/s), or `none` for the disk's
    /// rate (default: the library's, see docs/BACKUPS.md).
    #[arg(long, value_name = "MB/s")]
    pub max_rate: Option<String>,
    /// Points kept in the backup: a count (10) or an age (24h, 7d); the newest is always
    /// kept (default: all).
    #[arg(long, value_name = "COUNT|AGE")]
    pub keep: Option<String>,
}

/// `stele verify PATH`.
#[derive(Debug, Args)]
#[command(
    after_help = "Checks the manifest(s), every table (its bytes against its name, every \
    block's checksum), that every table a manifest needs is there, and every log record.\n\
    Prints each problem with its file and byte offset; exits with 1 if anything is damaged."
)]
pub struct VerifyArgs {
    /// A database or backup folder.
    pub path: PathBuf,
}

/// `stele replicate DB DEST`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    stele replicate shop /mnt/replica/shop --follow --interval 1s --keep 24h\n  \
    stele replicate shop /mnt/replica/shop      # one shipment, then exit (from cron, say)\n\n\
    A reader of DB: the writer never waits for it. Each shipment leaves DEST a whole database at\n\
    one commit point; readers may open DEST read-only meanwhile and refresh to follow it.")]
pub struct ReplicateArgs {
    /// The database folder.
    pub db: PathBuf,
    /// The replica folder.
    pub dest: PathBuf,
    /// Time between shipments with --follow: 1s, 500ms, 5m.
    #[arg(long, default_value = "1s")]
    pub interval: String,
    /// Keep shipping until interrupted (without it: one shipment).
    #[arg(long)]
    pub follow: bool,
    /// Points kept: a count (10) or an age (24h); the newest is always kept (default: all).
    #[arg(long, value_name = "COUNT|AGE")]
    pub keep: Option<String>,
    /// Copy tables even where a hard link would do.
    #[arg(long)]
    pub copy: bool,
    /// Copy tables at most this fast, so that the database's writer keeps the disk part of
    /// the time: MB/s (100), or with a unit (512KB/s, 1GB/s), or `none` for the disk's
    /// rate (default: the library's, see docs/BACKUPS.md).
    #[arg(long, value_name = "MB/s")]
    pub max_rate: Option<String>,
}

/// `stele restore BACKUP OUT`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    stele restore /mnt/backups/shop shop-restored              # the latest version\n  \
    stele restore /mnt/backups/shop shop-old --at 1200         # version 1200\n  \
    stele restore /mnt/backups/shop shop-old --at 2026-11-28T12:30:00Z\n  \
    stele restore /mnt/backups/shop shop-old --at=-10m         # as shipped 10 minutes ago\n  \
    stele restore /mnt/backups/shop --at                       # list the versions held\n\n\
    All or nothing: the files needed are verified first, the database is built beside OUT and\n\
    checked to open at the version asked for, then renamed to OUT.")]
pub struct RestoreArgs {
    /// The backup or replica folder.
    pub backup: PathBuf,
    /// The new database folder (must not exist).
    pub out: Option<PathBuf>,
    /// The version or time to restore; with no value, lists what the backup holds.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "VERSION|TIME")]
    pub at: Option<String>,
}

fn options(copy: bool, keep: Option<&str>, max_rate: Option<&str>) -> Result<BackupOptions> {
    let keep = keep.map(Retention::parse).transpose()?;
    let mut opts = BackupOptions::default().link(!copy).keep(keep);
    if let Some(text) = max_rate {
        let rate = backup::parse_rate(text).context("--max-rate")?;
        opts = opts.max_rate(rate);
    }
    Ok(opts)
}

fn describe(s: &Shipment) -> String {
    format!(
        "version {} ({} copied, {} linked, {} kept; {} of log; {} written)",
        s.seq,
        count(s.tables_copied as u64, "table", "tables"),
        count(s.tables_linked as u64, "table", "tables"),
        s.tables_kept,
        bytes(s.log_bytes),
        bytes(s.bytes_written)
    )
}

pub fn backup(args: &BackupArgs) -> Result<()> {
    let start = Instant::now();
    let opts = options(args.copy, args.keep.as_deref(), args.max_rate.as_deref())?;
    let shipped = backup::backup_with(&args.db, &args.dest, &opts).with_context(|| {
        format!(
            "backing up {} into {}",
            args.db.display(),
            args.dest.display()
        )
    })?;
    println!(
        "backed up {} into {}: {} in {:.2} s",
        args.db.display(),
        args.dest.display(),
        describe(&shipped),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

pub fn verify(args: &VerifyArgs) -> Result<()> {
    let report =
        backup::verify(&args.path).with_context(|| format!("verifying {}", args.path.display()))?;
    for f in &report.findings {
        let kind = if f.damage { "damaged" } else { "note" };
        println!("{kind}: {f}");
    }
    let summary = format!(
        "{}, {} ({}), {} holding {}; last version {}",
        count(report.manifests as u64, "manifest", "manifests"),
        count(report.tables as u64, "table", "tables"),
        bytes(report.table_bytes),
        count(report.segments as u64, "log segment", "log segments"),
        count(report.records, "record", "records"),
        report.last_seq
    );
    if !report.is_ok() {
        let damaged = report.findings.iter().filter(|f| f.damage).count();
        // A backup (it keeps its points) can give an earlier point; a database needs a backup.
        let remedy = if backup::is_backup(&args.path) {
            "restore an earlier version of this backup with `stele restore --at`, or use another backup"
        } else {
            "restore it from a backup (`stele restore BACKUP OUT`)"
        };
        bail!(
            "{} is damaged: {} ({summary}); {remedy}",
            args.path.display(),
            count(damaged as u64, "problem", "problems")
        );
    }
    println!("{}: ok: {summary}", args.path.display());
    Ok(())
}

pub fn replicate(args: &ReplicateArgs) -> Result<()> {
    let interval = parse_interval(&args.interval)?;
    let opts = options(args.copy, args.keep.as_deref(), args.max_rate.as_deref())?;
    let mut rep = Replicator::new(&args.db, &args.dest, opts)
        .with_context(|| format!("opening replica {}", args.dest.display()))?;
    // With --follow, a shipment that found nothing new prints nothing.
    let mut printed: Option<u64> = None;
    loop {
        let started = Instant::now();
        let step = rep.step().with_context(|| {
            format!("shipping {} to {}", args.db.display(), args.dest.display())
        })?;
        let pruned = if step.points_pruned > 0 {
            format!(
                "; {} pruned",
                count(step.points_pruned as u64, "point", "points")
            )
        } else {
            String::new()
        };
        let idle = printed == Some(step.shipment.seq)
            && step.shipment.bytes_written == 0
            && step.points_pruned == 0;
        printed = Some(step.shipment.seq);
        // A commit made just after this shipment's cut is shipped by the next one: the lag
        // is at most the interval plus a shipment's time.
        if !idle {
            println!(
                "shipped {} in {} ms{pruned}; lag at most {} ms",
                describe(&step.shipment),
                step.took.as_millis(),
                (interval + step.took).as_millis()
            );
        }
        if !args.follow {
            return Ok(());
        }
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

pub fn restore(args: &RestoreArgs) -> Result<()> {
    let at = match args.at.as_deref() {
        Some("") => return list(&args.backup),
        Some(text) => At::parse(text)?,
        None => At::Latest,
    };
    let Some(out) = &args.out else {
        bail!("give the folder to restore into (OUT), or --at alone to list the versions held");
    };
    let start = Instant::now();
    let r = backup::restore(&args.backup, out, at)
        .with_context(|| format!("restoring {} into {}", args.backup.display(), out.display()))?;
    println!(
        "restored version {} (point {}, {}, {} written) into {} in {:.2} s",
        r.seq,
        r.point_seq,
        count(r.tables as u64, "table", "tables"),
        bytes(r.bytes_written),
        out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn list(dir: &Path) -> Result<()> {
    let held = backup::held(dir).with_context(|| format!("reading backup {}", dir.display()))?;
    println!("{} holds {}", dir.display(), held.describe());
    for p in &held.points {
        println!(
            "  point at version {:>10}  shipped {}",
            p.seq,
            p.shipped_at.map_or_else(|| "?".into(), utc)
        );
    }
    if let Some((seq, t)) = held.shipped.last() {
        println!("  last shipment: version {seq} at {}", utc(*t));
    }
    Ok(())
}

/// `1s`, `500ms`, `2m`, `1h`.
fn parse_interval(text: &str) -> Result<Duration> {
    let t = text.trim();
    let parsed = if let Some(ms) = t.strip_suffix("ms") {
        ms.parse::<u64>().ok().map(Duration::from_millis)
    } else {
        let (n, unit) = t.split_at(t.len().saturating_sub(1));
        let secs = match unit {
            "s" => Some(1),
            "m" => Some(60),
            "h" => Some(3600),
            _ => None,
        };
        n.parse::<u64>()
            .ok()
            .zip(secs)
            .map(|(n, s)| Duration::from_secs(n * s))
    };
    match parsed {
        Some(d) if !d.is_zero() => Ok(d),
        _ => bail!("--interval {text:?} does not parse: give a number with ms, s, m or h (1s)"),
    }
}

/// A size in the largest unit that keeps it above 1.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A time as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_in_utc_and_intervals_parse() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(parse_interval("1s").ok(), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_interval("250ms").ok(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_interval("2m").ok(), Some(Duration::from_secs(120)));
        for bad in ["0s", "1", "fast", "ms"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
