//! A backup's write rate limit: the copies' bytes spread over time, so that the disk is
//! idle part of the time for the database's writer (whose every commit waits for the disk:
//! see `BackupOptions::max_rate`).
//!
//! One pace for every copying thread: each chunk reserves its slot on a shared clock
//! (`bytes / rate` after the previous one's) and waits for it; so the copies together never
//! write faster than the rate (over any span, give or take [`CATCH_UP`] of it), and a
//! thread that falls behind (a slow read, a late wake-up) catches up on at most
//! [`CATCH_UP`] of the clock.

use super::error::BackupError;
use crate::error::Result;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The smallest rate accepted, bytes/s: below it a gigabyte takes more than a day.
pub(crate) const MIN_RATE: u64 = 1 << 14;

/// Parses a write rate as a user gives it: megabytes per second by default (`100`,
/// `2.5`), or with a unit: `512KB/s`, `100MB/s`, `1GB/s` (decimal units, `/s` optional,
/// `KiB`/`MiB`/`GiB` binary); `none` or `off` for no limit. Returns bytes per second.
pub fn parse_rate(text: &str) -> Result<Option<u64>> {
    let bad = || BackupError::BadArgument {
        what: "backup rate limit",
        text: text.to_string(),
        expected: "megabytes per second (100, 2.5) or a rate with a unit (512KB/s, 100MB/s, 1GB/s), at least 16KiB/s; or none",
    };
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let t = t.strip_suffix("/s").unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "m" | "mb" => 1e6,
        "k" | "kb" => 1e3,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad().into()),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < MIN_RATE as f64 || bytes > u64::MAX as f64 {
        return Err(bad().into());
    }
    Ok(Some(bytes as u64))
}

/// How far the copies may fall behind the clock and still catch up. Without it a copy
/// on a busy machine writes well under its rate: each 1 MiB slot at 400 MB/s is 2.6 ms,
/// and a thread woken a few milliseconds late each time (the 2-vCPU VM at load 7) wrote
/// 138 MB/s. With it the copies write at most the rate over any time, plus this much.
const CATCH_UP: Duration = Duration::from_millis(50);

/// A shared clock of the bytes written.
#[derive(Debug)]
pub(crate) struct Pace {
    /// Bytes per second.
    rate: u64,
    /// When the next chunk may be written.
    next: Mutex<Option<Instant>>,
}

impl Pace {
    pub(crate) fn new(rate: u64) -> Pace {
        Pace {
            rate: rate.max(MIN_RATE),
            next: Mutex::new(None),
        }
    }

    /// Waits until `bytes` more may be written.
    pub(crate) fn take(&self, bytes: usize) {
        let wait_until = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            // A thread woken late (a busy scheduler, a slow read) may catch up on the last
            // CATCH_UP of the clock; idle time before that is not saved up for a burst.
            let earliest = now.checked_sub(CATCH_UP).unwrap_or(now);
            let slot = next.map_or(now, |n| n.max(earliest));
            let span = Duration::from_secs_f64(bytes as f64 / self.rate as f64);
            *next = Some(slot + span);
            slot
        };
        let now = Instant::now();
        if wait_until > now {
            std::thread::sleep(wait_until - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_and_without_units() {
        assert_eq!(parse_rate("100").unwrap(), Some(100_000_000));
        assert_eq!(parse_rate("2.5").unwrap(), Some(2_500_000));
        assert_eq!(parse_rate("100MB/s").unwrap(), Some(100_000_000));
        assert_eq!(parse_rate("512KB/s").unwrap(), Some(512_000));
        assert_eq!(parse_rate("1 GB").unwrap(), Some(1_000_000_000));
        assert_eq!(parse_rate("64MiB/s").unwrap(), Some(64 << 20));
        assert_eq!(parse_rate("none").unwrap(), None);
        for bad in ["", "0", "-5", "fast", "10 TB/s", "1e3", "0.001", "5x"] {
            let e = parse_rate(bad).expect_err(bad).to_string();
            assert!(
                e.contains("backup rate limit") && e.contains("MB/s"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn chunks_are_spread_at_the_rate_across_threads() {
        // 4 threads x 5 chunks of 64 KiB at 8 MiB/s: 20 x 64 KiB = 1.25 MiB, so at least
        // 19 slots of 1/128 s = 0.148 s apart from the first (the first is at once), less
        // what a late thread may catch up on.
        let pace = Pace::new(8 << 20);
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        pace.take(64 << 10);
                    }
                });
            }
        });
        let took = start.elapsed().as_secs_f64();
        assert!(
            took >= 19.0 / 128.0 - CATCH_UP.as_secs_f64(),
            "took {took} s"
        );
    }

    #[test]
    fn idle_time_is_not_saved_for_a_burst() {
        let pace = Pace::new(1 << 20);
        pace.take(1 << 16);
        std::thread::sleep(Duration::from_millis(200));
        // After the pause the clock starts CATCH_UP before now: 4 chunks of 64 KiB at
        // 1 MiB/s take 3/16 s less that, not the nothing a saved-up 200 ms would give.
        let start = Instant::now();
        for _ in 0..4 {
            pace.take(1 << 16);
        }
        let took = start.elapsed().as_secs_f64();
        assert!(took >= 3.0 / 16.0 - CATCH_UP.as_secs_f64(), "took {took} s");
    }
}
