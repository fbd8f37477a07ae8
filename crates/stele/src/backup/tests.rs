//! Unit tests of the arguments; backups themselves are tested in `tests/backup.rs` (with a
//! writer at work, damage and retention) and `tests/backup_faults.rs` (failing storage,
//! power cuts, killed processes).

use super::{At, Retention};
use std::time::{Duration, UNIX_EPOCH};

#[test]
fn retention_parses_counts_and_durations_and_names_bad_input() {
    assert_eq!(Retention::parse("10").ok(), Some(Retention::Count(10)));
    assert_eq!(
        Retention::parse("24h").ok(),
        Some(Retention::Age(Duration::from_secs(86_400)))
    );
    assert_eq!(
        Retention::parse("90s").ok(),
        Some(Retention::Age(Duration::from_secs(90)))
    );
    for bad in ["0", "", "h", "10x", "-3", "1.5h"] {
        let err = Retention::parse(bad).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("retention")),
            "{bad}: {err:?}"
        );
    }
}

#[test]
fn points_in_time_parse_versions_times_and_offsets() {
    assert_eq!(At::parse("1234").ok(), Some(At::Version(1234)));
    assert_eq!(
        At::parse("@1700000000").ok(),
        Some(At::Time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)))
    );
    // 2023-11-14T22:13:20Z is Unix time 1700000000.
    assert_eq!(
        At::parse("2023-11-14T22:13:20Z").ok(),
        Some(At::Time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)))
    );
    assert_eq!(
        At::parse("1970-01-01T00:00:00Z").ok(),
        Some(At::Time(UNIX_EPOCH))
    );
    assert!(matches!(At::parse("-10m"), Ok(At::Time(_))));
    for bad in ["yesterday", "2023-13-01T00:00:00Z", "@x", "-10"] {
        assert!(At::parse(bad).is_err(), "{bad}");
    }
}

/// A line a crash tore at the end of the shipping log is not read (its time could be cut
/// short); whole lines are, whatever came before.
#[test]
fn the_shipping_log_reads_whole_lines_only() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let points = dir.path().join(super::POINTS_DIR);
    std::fs::create_dir(&points).unwrap_or_else(|e| panic!("{e}"));
    let log = points.join(super::SHIPPED_LOG);
    std::fs::write(&log, "\n5 1000\n\n7 2000\n9 30").unwrap_or_else(|e| panic!("{e}"));
    let read = super::points::shipped_log(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let seqs: Vec<u64> = read.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, [5, 7]);
    assert_eq!(read[1].1, UNIX_EPOCH + Duration::from_millis(2000));
}
