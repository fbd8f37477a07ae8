//! Every flipped byte and every truncation of a small table is reported as an error
//! naming the damaged part; damaged bytes are never returned as data, and nothing panics.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use stele_table::{Error, ListBuilder, Table, TableBuilder, TableList, TableOptions};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn small_table() -> (Vec<u8>, Entries) {
    small_table_of_units(256)
}

/// The same entries in blocks of `block_bytes` units (16: one entry per block, a version 3
/// table).
fn small_table_of_units(block_bytes: u32) -> (Vec<u8>, Entries) {
    let dir = tempfile::tempdir().unwrap();
    let opts = TableOptions::default()
        .block_size_bytes(block_bytes)
        .restart_interval(4);
    let mut b = TableBuilder::new(dir.path(), opts).unwrap();
    let mut entries = Vec::new();
    for i in 0..60u32 {
        let k = format!("user/{:04}/{}", i * 3, "x".repeat((i % 5) as usize)).into_bytes();
        // Mixed lengths, one value larger than a block (a block of two units).
        let v = if i == 30 {
            vec![7u8; 300]
        } else {
            i.to_be_bytes().repeat((i % 3) as usize)
        };
        b.add(&k, &v).unwrap();
        entries.push((k, v));
    }
    let info = b.finish().unwrap();
    (std::fs::read(info.path).unwrap(), entries)
}

fn is_integrity_error(e: &Error) -> bool {
    matches!(
        e,
        Error::ChecksumMismatch { .. }
            | Error::Corrupt { .. }
            | Error::NotATable { .. }
            | Error::UnsupportedVersion { .. }
    )
}

/// Reads everything every way; returns the first error. Asserts that whatever was returned
/// before the error is the original data.
fn read_all(bytes: Vec<u8>, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Error> {
    let t = Table::from_bytes(bytes)?;
    if t.len() != entries.len() as u64 {
        panic!("entry count changed without an error");
    }
    for (i, r) in t.iter().enumerate() {
        let (k, v) = r?;
        assert_eq!(
            (k.as_ref(), v),
            (entries[i].0.as_slice(), entries[i].1.as_slice())
        );
    }
    for (i, r) in t.iter().rev().enumerate() {
        let (k, v) = r?;
        let e = &entries[entries.len() - 1 - i];
        assert_eq!((k.as_ref(), v), (e.0.as_slice(), e.1.as_slice()));
    }
    for (k, v) in entries {
        assert_eq!(t.get(k)?, Some(v.as_slice()));
    }
    Ok(())
}

#[test]
fn every_flipped_byte_is_an_error() {
    for units in [256, 16] {
        let (bytes, entries) = small_table_of_units(units);
        read_all(bytes.clone(), &entries).unwrap();
        for pos in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[pos] ^= mask;
                let err = read_all(bad, &entries).expect_err(&format!(
                    "{units} B units: flip {mask:#x} at byte {pos} went unnoticed"
                ));
                assert!(
                    is_integrity_error(&err),
                    "{units} B units, byte {pos}: {err}"
                );
            }
        }
    }
}

/// Tables of blocks under 256 bytes are format version 3, others stay version 2 (which
/// builds that read only version 2 still read); a version 2 footer with small blocks is
/// damage, and a version beyond 3 is named as such.
#[test]
fn small_blocks_make_a_version_3_table() {
    let footer = stele_table::FOOTER_BYTES;
    let version =
        |bytes: &[u8]| u32::from_le_bytes(bytes[bytes.len() - footer..][..4].try_into().unwrap());
    let (big, _) = small_table_of_units(256);
    assert_eq!(version(&big), 2);
    let (small, entries) = small_table_of_units(16);
    assert_eq!(version(&small), 3);
    assert_eq!(stele_table::FORMAT_VERSION, 3);
    // Small entries each take a block of their own (with its trailer) in small units...
    assert!(small.len() > big.len(), "{} <= {}", small.len(), big.len());
    let t = Table::from_bytes(small.clone()).unwrap();
    assert_eq!(t.stats().block_size_bytes, 16);
    assert_eq!(t.stats().blocks, entries.len() as u64);
    drop(t);
    // Rewrite the version and the footer checksum: only the version is wrong.
    let with_version = |bytes: &[u8], v: u32| {
        let mut b = bytes.to_vec();
        let start = b.len() - footer;
        b[start..start + 4].copy_from_slice(&v.to_le_bytes());
        let sum = stele_table::checksum(&b[start..start + 104]);
        b[start + 104..start + 112].copy_from_slice(&sum.to_le_bytes());
        b
    };
    let err = Table::from_bytes(with_version(&small, 2)).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("version does not match the block size"),
        "{err}"
    );
    let err = Table::from_bytes(with_version(&big, 4)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedVersion {
                found: 4,
                supported: 3
            }
        ),
        "{err}"
    );
    let err = Table::from_bytes(with_version(&big, 3)).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");

    // ...while values that span units each leave under 16 bytes of padding instead of
    // up to 255.
    let dir = tempfile::tempdir().unwrap();
    let sized = |units: u32| {
        let mut b =
            TableBuilder::new(dir.path(), TableOptions::default().block_size_bytes(units)).unwrap();
        for i in 0..40u32 {
            b.add(&i.to_be_bytes(), &vec![i as u8; 700 + 37 * i as usize])
                .unwrap();
        }
        std::fs::metadata(b.finish().unwrap().path).unwrap().len()
    };
    let (small, big) = (sized(16), sized(256));
    assert!(small + 40 * 64 < big, "{small} vs {big}");
}

#[test]
fn errors_name_the_damaged_part() {
    let (bytes, entries) = small_table();
    let footer = stele_table::FOOTER_BYTES;
    let cases = [
        (0usize, "data block 0"),
        (bytes.len() - footer - 1, "index"),
        (bytes.len() - 20, "footer"),
    ];
    for (pos, want) in cases {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x10;
        let msg = read_all(bad, &entries).unwrap_err().to_string();
        assert!(msg.contains(want), "byte {pos}: {msg}");
    }
}

#[test]
fn every_truncation_is_an_error() {
    let (small, small_entries) = small_table_of_units(16);
    for len in 0..small.len() {
        let err = read_all(small[..len].to_vec(), &small_entries)
            .expect_err(&format!("16 B units: truncation to {len} went unnoticed"));
        assert!(is_integrity_error(&err), "16 B units, length {len}: {err}");
    }
    let (bytes, entries) = small_table();
    for len in 0..bytes.len() {
        let err = read_all(bytes[..len].to_vec(), &entries)
            .expect_err(&format!("truncation to {len} went unnoticed"));
        assert!(is_integrity_error(&err), "length {len}: {err}");
    }
    // Extra bytes at the end are noticed too.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 16]);
    assert!(read_all(longer, &entries).is_err());
}

#[test]
fn every_flipped_byte_of_a_list_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut b =
        ListBuilder::new(dir.path(), TableOptions::default().block_size_bytes(256)).unwrap();
    let values: Vec<Vec<u8>> = (0..80u32)
        .map(|i| i.to_le_bytes().repeat((i % 4) as usize))
        .collect();
    for v in &values {
        b.push(v).unwrap();
    }
    let bytes = std::fs::read(b.finish().unwrap().path).unwrap();
    let check = |bytes: Vec<u8>| -> Result<(), Error> {
        let l = TableList::from_bytes(bytes)?;
        for (i, v) in values.iter().enumerate() {
            assert_eq!(l.get(i as u64)?, Some(v.as_slice()));
        }
        Ok(())
    };
    check(bytes.clone()).unwrap();
    for pos in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x04;
        let err = check(bad).expect_err(&format!("flip at byte {pos} went unnoticed"));
        assert!(is_integrity_error(&err), "byte {pos}: {err}");
    }
}

/// Damage that a checksum cannot see (the block checksum is recomputed after the change)
/// must still never panic: every read either errors or returns some bytes.
#[test]
fn checksum_valid_garbage_never_panics() {
    let (bytes, entries) = small_table();
    let t = Table::from_bytes(bytes.clone()).unwrap();
    let block_size = t.stats().block_size_bytes as usize;
    let data_end = bytes.len() - stele_table::FOOTER_BYTES - t.stats().index_bytes as usize;
    drop(t);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for round in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let pos = (x % data_end as u64) as usize;
        let mut bad = bytes.clone();
        bad[pos] = bad[pos].wrapping_add(1 + (round % 251) as u8);
        // Recompute the checksum of the block holding `pos`: walk the unit boundaries; a
        // block ends where the checksum of the bytes before a boundary is stored there.
        let (mut start, mut end) = (0, block_size);
        while end <= data_end {
            let stored = u64::from_le_bytes(bytes[end - 8..end].try_into().unwrap());
            if stele_table::checksum(&bytes[start..end - 8]) == stored {
                if pos < end {
                    break;
                }
                start = end;
            }
            end += block_size;
        }
        let sum = stele_table::checksum(&bad[start..end - 8]);
        bad[end - 8..end].copy_from_slice(&sum.to_le_bytes());
        // The forged checksum holds: whatever fails now fails on structure, not checksums.
        if let Err(e) = read_all_lenient(bad, &entries) {
            assert!(
                !matches!(e, Error::ChecksumMismatch { .. }),
                "forging failed: {e}"
            );
        }
    }
}

/// Like `read_all` but tolerates wrong data (the checksum was forged): only panics matter.
fn read_all_lenient(bytes: Vec<u8>, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Error> {
    let t = Table::from_bytes(bytes)?;
    for r in t.iter() {
        r?;
    }
    for r in t.iter().rev() {
        r?;
    }
    for (k, _) in entries {
        t.get(k)?;
        t.rank(k)?;
        for r in t.prefix(&k[..3]) {
            r?;
        }
    }
    for i in 0..t.len() + 2 {
        t.nth(i)?;
    }
    Ok(())
}
