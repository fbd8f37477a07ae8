//! This binary run again as a separate process: a backup, or a replicator that prints each
//! shipment (`shipped <version> <unix ns>`) for the lag measure.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use stele::backup::{BackupOptions, Replicator};

pub(crate) fn run(raw: &[String]) -> Result<()> {
    let arg = |i: usize| raw.get(i).context("a missing argument of the child");
    match raw.first().map(String::as_str) {
        Some("child-backup") => {
            let rate = match raw.get(4) {
                Some(mb) => stele::backup::parse_rate(mb)?,
                None => None,
            };
            let opts = BackupOptions::default()
                .link(arg(3)? != "copy")
                .max_rate(rate);
            let s = stele::backup::backup_with(Path::new(arg(1)?), Path::new(arg(2)?), &opts)?;
            // For the parent: what the backup wrote of the log (the writer's records since
            // its last checkpoint) and in all.
            println!(
                "log_bytes {} bytes_written {}",
                s.log_bytes, s.bytes_written
            );
            Ok(())
        }
        Some("child-replicate") => {
            let interval = Duration::from_millis(arg(3)?.parse()?);
            let mut rep = Replicator::new(arg(1)?, arg(2)?, BackupOptions::default())?;
            let mut out = std::io::stdout().lock();
            loop {
                let start = Instant::now();
                let shipped = rep.ship()?;
                writeln!(out, "shipped {} {}", shipped.seq, unix_ns())?;
                out.flush()?;
                std::thread::sleep(interval.saturating_sub(start.elapsed()));
            }
        }
        other => bail!("unknown child {other:?}"),
    }
}

pub(crate) fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
