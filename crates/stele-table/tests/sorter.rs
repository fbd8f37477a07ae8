//! Sorter against a model, in memory and spilled, with every duplicate policy.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use stele_table::{
    DuplicatePolicy, Error, Sorter, SorterOptions, Table, TableBuilder, TableOptions,
};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn model(pairs: &Pairs, policy: DuplicatePolicy) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut m = BTreeMap::new();
    for (k, v) in pairs {
        match policy {
            DuplicatePolicy::KeepLast => {
                m.insert(k.clone(), v.clone());
            }
            DuplicatePolicy::KeepFirst => {
                m.entry(k.clone()).or_insert_with(|| v.clone());
            }
            _ => {
                if m.insert(k.clone(), v.clone()).is_some() {
                    return None;
                }
            }
        }
    }
    Some(m)
}

fn sort(
    pairs: &Pairs,
    policy: DuplicatePolicy,
    budget: usize,
    dir: &std::path::Path,
) -> Result<(Table, usize), Error> {
    let opts = SorterOptions::default()
        .memory_budget_bytes(budget)
        .temp_dir(dir)
        .duplicates(policy)
        .table_options(
            TableOptions::default()
                .block_size_bytes(512)
                .duplicates(policy),
        );
    let mut s = Sorter::new(opts)?;
    for (k, v) in pairs {
        s.add(k, v)?;
    }
    let runs = s.spilled_runs();
    let info = s.finish(dir)?;
    Ok((Table::open(&info.path)?, runs))
}

fn contents(t: &Table) -> Vec<(Vec<u8>, Vec<u8>)> {
    t.iter()
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.into_owned(), v.to_vec())
        })
        .collect()
}

/// Only the table file may remain: no run folder, no temp file.
fn assert_only_tables(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(
            name.ends_with(".stt") && !name.starts_with('.'),
            "left over: {name}"
        );
    }
}

fn pairs_strategy() -> impl Strategy<Value = Pairs> {
    prop::collection::vec(
        (
            prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'z', 0]), 0..12),
            prop::collection::vec(any::<u8>(), 0..300),
        ),
        0..1500,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn sorter_matches_model(
        pairs in pairs_strategy(),
        policy in prop::sample::select(vec![DuplicatePolicy::Reject, DuplicatePolicy::KeepFirst, DuplicatePolicy::KeepLast]),
        spill in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        // The smallest budget (64 KiB) spills every few hundred pairs of this size.
        let budget = if spill { 64 << 10 } else { 64 << 20 };
        let result = sort(&pairs, policy, budget, dir.path());
        match model(&pairs, policy) {
            None => {
                let err = result.expect_err("duplicates must be rejected");
                prop_assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
                prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            }
            Some(m) => {
                let (t, _runs) = result.unwrap();
                let want: Vec<_> = m.into_iter().collect();
                prop_assert_eq!(contents(&t), want);
                assert_only_tables(dir.path());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(24), ..ProptestConfig::default() })]

    /// Input that arrives sorted skips the sort; input sorted for a while and then not must
    /// still be sorted.
    #[test]
    fn sorted_and_nearly_sorted_input(
        mut pairs in pairs_strategy(),
        policy in prop::sample::select(vec![DuplicatePolicy::KeepFirst, DuplicatePolicy::KeepLast]),
        break_at in any::<prop::sample::Index>(),
        spill in any::<bool>(),
    ) {
        // Stable: equal keys keep their insertion order, which the policies depend on.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        for broken in [false, true] {
            let mut input = pairs.clone();
            if broken && input.len() > 2 {
                let i = break_at.index(input.len() - 1);
                let moved = input.remove(i);
                input.push(moved);
            }
            let dir = tempfile::tempdir().unwrap();
            let budget = if spill { 64 << 10 } else { 64 << 20 };
            let (t, _) = sort(&input, policy, budget, dir.path()).unwrap();
            let want: Vec<_> = model(&input, policy).unwrap().into_iter().collect();
            prop_assert_eq!(contents(&t), want);
        }
    }
}

fn shuffled_pairs(n: usize, dup_every: usize) -> Pairs {
    // A fixed LCG permutation: deterministic, no extra dependency.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut pairs: Pairs = (0..n)
        .map(|i| {
            let k = format!("key/{:07}/{}", (i * 7919) % n, i % 13).into_bytes();
            (k, i.to_le_bytes().to_vec())
        })
        .collect();
    for i in (1..pairs.len()).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        pairs.swap(i, (x >> 33) as usize % (i + 1));
    }
    if dup_every > 0 {
        let extra: Pairs = pairs
            .iter()
            .step_by(dup_every)
            .map(|(k, _)| (k.clone(), b"dup".to_vec()))
            .collect();
        pairs.extend(extra);
    }
    pairs
}

#[test]
fn spilled_and_in_memory_builds_are_byte_identical() {
    let pairs = shuffled_pairs(20_000, 7);
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let (t1, runs1) = sort(&pairs, DuplicatePolicy::KeepLast, 64 << 20, d1.path()).unwrap();
    let (t2, runs2) = sort(&pairs, DuplicatePolicy::KeepLast, 128 << 10, d2.path()).unwrap();
    assert_eq!(runs1, 0);
    assert!(runs2 >= 4, "expected several runs, got {runs2}");
    // Spilling writes each pair once to a run and once to the table: about 2x in all.
    let mut s = Sorter::new(
        SorterOptions::default()
            .memory_budget_bytes(128 << 10)
            .temp_dir(d2.path())
            .duplicates(DuplicatePolicy::KeepLast),
    )
    .unwrap();
    for (k, v) in &pairs {
        s.add(k, v).unwrap();
    }
    let spilled = s.spilled_bytes();
    let info = s.finish(d2.path()).unwrap();
    let raw = info.raw_key_bytes + info.raw_value_bytes;
    assert!(
        spilled > 0 && spilled < raw + raw / 2,
        "runs of {spilled} bytes for {raw} raw bytes"
    );
    assert_eq!(t1.path().file_name(), t2.path().file_name());
    assert_eq!(
        std::fs::read(t1.path()).unwrap(),
        std::fs::read(t2.path()).unwrap()
    );
    assert_only_tables(d2.path());
    // The same pairs through the streaming builder give the same file too.
    let d3 = tempfile::tempdir().unwrap();
    let mut b =
        TableBuilder::new(d3.path(), TableOptions::default().block_size_bytes(512)).unwrap();
    for (k, v) in contents(&t1) {
        b.add(&k, &v).unwrap();
    }
    assert_eq!(b.finish().unwrap().path.file_name(), t1.path().file_name());
}

#[test]
fn large_sort_takes_the_radix_path() {
    // Above the radix threshold (65536 entries), with keys sharing their first 2 bytes.
    let pairs = shuffled_pairs(70_000, 0);
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = sort(&pairs, DuplicatePolicy::Reject, 256 << 20, dir.path()).unwrap();
    let mut want: Pairs = pairs.clone();
    want.sort();
    assert_eq!(contents(&t), want);
    // And with duplicates, keeping the last (duplicates are found from the radix digits).
    let pairs = shuffled_pairs(70_000, 3);
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = sort(&pairs, DuplicatePolicy::KeepLast, 256 << 20, dir.path()).unwrap();
    let want: Pairs = model(&pairs, DuplicatePolicy::KeepLast)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(contents(&t), want);
}

#[test]
fn reject_names_the_duplicate_across_runs() {
    let mut pairs = shuffled_pairs(5_000, 0);
    let dup = pairs[1234].0.clone();
    pairs.push((dup.clone(), b"again".to_vec()));
    let dir = tempfile::tempdir().unwrap();
    let err = sort(&pairs, DuplicatePolicy::Reject, 64 << 10, dir.path())
        .err()
        .unwrap();
    match &err {
        Error::DuplicateKey { key } => assert_eq!(key, &dup),
        other => panic!("unexpected {other}"),
    }
    assert!(
        err.to_string().contains(std::str::from_utf8(&dup).unwrap()),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn dropped_sorter_removes_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Sorter::new(
        SorterOptions::default()
            .memory_budget_bytes(64 << 10)
            .temp_dir(dir.path()),
    )
    .unwrap();
    for (k, v) in shuffled_pairs(5_000, 0) {
        s.add(&k, &v).unwrap();
    }
    assert!(s.spilled_runs() > 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    drop(s);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn tiny_budget_is_refused() {
    let err = Sorter::new(SorterOptions::default().memory_budget_bytes(1000))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::InvalidOption {
                name: "memory_budget_bytes",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn long_shared_prefixes_and_prefix_keys_sort_correctly() {
    // Keys equal for 300+ bytes (past the radix depth), keys that are prefixes of others,
    // and trailing zero bytes, which the zero-padded digits must not confuse.
    let base = vec![b'p'; 300];
    let mut pairs: Pairs = Vec::new();
    for i in 0..200u32 {
        let mut k = base.clone();
        k.extend_from_slice(format!("{}", (i * 37) % 200).as_bytes());
        pairs.push((k, i.to_le_bytes().to_vec()));
        let short: Vec<u8> = b"ab\0\0".iter().take((i % 5) as usize).copied().collect();
        if i < 5 {
            pairs.push((short, vec![]));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = sort(&pairs, DuplicatePolicy::Reject, 64 << 20, dir.path()).unwrap();
    let mut want = pairs.clone();
    want.sort();
    assert_eq!(contents(&t), want);
}

#[test]
fn finish_each_hands_over_the_model_in_key_order_in_memory_and_spilled() {
    let pairs = shuffled_pairs(20_000, 5);
    for policy in [DuplicatePolicy::KeepLast, DuplicatePolicy::KeepFirst] {
        let want: Pairs = model(&pairs, policy).unwrap().into_iter().collect();
        for budget in [64 << 20, 128 << 10] {
            let dir = tempfile::tempdir().unwrap();
            let mut s = Sorter::new(
                SorterOptions::default()
                    .memory_budget_bytes(budget)
                    .temp_dir(dir.path())
                    .duplicates(policy),
            )
            .unwrap();
            for (k, v) in &pairs {
                s.add(k, v).unwrap();
            }
            assert_eq!(s.spilled_runs() > 0, budget < 1 << 20);
            let mut got: Pairs = Vec::new();
            let n = s
                .finish_each(&mut |k, v| {
                    got.push((k.to_vec(), v.to_vec()));
                    Ok(())
                })
                .unwrap();
            assert_eq!(n as usize, want.len());
            assert_eq!(got, want, "{policy:?}, budget {budget}");
            // No runs left behind, no table written.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }
}

#[test]
fn finish_each_stops_at_the_sinks_error() {
    let pairs = shuffled_pairs(20_000, 0);
    for budget in [64 << 20, 128 << 10] {
        let mut s = Sorter::new(
            SorterOptions::default()
                .memory_budget_bytes(budget)
                .duplicates(DuplicatePolicy::KeepLast),
        )
        .unwrap();
        for (k, v) in &pairs {
            s.add(k, v).unwrap();
        }
        let mut seen = 0;
        let err = s
            .finish_each(&mut |_, _| {
                seen += 1;
                if seen == 100 {
                    return Err(Error::Internal("stop here"));
                }
                Ok(())
            })
            .unwrap_err();
        assert!(matches!(err, Error::Internal("stop here")), "{err}");
        assert_eq!(seen, 100);
    }
}

/// A sorter made and fed on a pool of one thread (its spills then sort on one thread, one
/// run a batch) gives the table one fed from outside it gives (two threads here, two runs
/// a batch), byte for byte.
#[test]
fn sorters_on_pools_of_one_and_of_every_thread_give_the_same_table() {
    let pairs = shuffled_pairs(20_000, 5);
    let outside = tempfile::tempdir().unwrap();
    let (t1, runs1) = sort(&pairs, DuplicatePolicy::KeepLast, 128 << 10, outside.path()).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let inside = tempfile::tempdir().unwrap();
    let (t2, runs2) = pool
        .install(|| sort(&pairs, DuplicatePolicy::KeepLast, 128 << 10, inside.path()))
        .unwrap();
    assert!(runs1 >= 2 && runs2 >= 2, "runs {runs1} and {runs2}");
    assert_eq!(
        std::fs::read(t1.path()).unwrap(),
        std::fs::read(t2.path()).unwrap()
    );
    assert_only_tables(outside.path());
    assert_only_tables(inside.path());
}

/// A sorter spills in the background while a query's parallel scan adds to it from every
/// thread of the global pool, under a lock: the thread holding the lock waits for the
/// spill, the others for the lock. Had the spill's sort queued its work on the global
/// pool, no thread would be left to do it (a deadlock, seen with such a version of the
/// sorter; caught here by a watchdog rather than a hung test).
#[test]
fn waiting_for_a_background_spill_on_the_pool_does_not_deadlock() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dir = tempfile::tempdir().unwrap();
        let sorter = Sorter::new(
            SorterOptions::default()
                .memory_budget_bytes(8 << 20)
                .temp_dir(dir.path())
                .duplicates(DuplicatePolicy::KeepLast),
        )
        .unwrap();
        let sorter = std::sync::Mutex::new(sorter);
        let value = vec![7u8; 200];
        for round in 0u32..12 {
            // From outside the pool: the last add of these starts a spill in the background.
            {
                let mut s = sorter.lock().unwrap();
                for i in 0u32..20_000 {
                    let key = format!("{:08x}-{round}", i.wrapping_mul(2_654_435_761));
                    s.add(key.as_bytes(), &value).unwrap();
                }
            }
            // Then from every thread of the pool at once, each under the lock.
            rayon::broadcast(|ctx| {
                for i in 0u32..5_000 {
                    let key = format!("{:08x}-{round}-{}", i.wrapping_mul(40_503), ctx.index());
                    sorter.lock().unwrap().add(key.as_bytes(), &value).unwrap();
                }
            });
        }
        let sorter = sorter.into_inner().unwrap();
        let mut n = 0u64;
        let mut last: Vec<u8> = Vec::new();
        sorter
            .finish_each(&mut |k, _| {
                assert!(k > last.as_slice());
                last = k.to_vec();
                n += 1;
                Ok(())
            })
            .unwrap();
        let threads = rayon::current_num_threads() as u64;
        done.send(n == 12 * (20_000 + 5_000 * threads)).unwrap();
    });
    let all_there = finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the sort did not finish in 2 minutes: deadlocked");
    assert!(all_there, "pairs lost or repeated");
}
