//! A packed index against a model (a sorted set): keys packed in blocks, then keys added
//! and removed as loose entries and marks (saved in layers or not), read back by range scans
//! in both directions; and blocks that do not decode are errors, never panics.

use super::*;
use proptest::prelude::*;
use std::ops::Bound;

/// An index key of the shape the index writes: a type byte (0x10 or more), then bytes.
fn key() -> impl Strategy<Value = Vec<u8>> {
    (0x10u8..0x50, proptest::collection::vec(0u8..4, 0..6)).prop_map(|(t, rest)| {
        let mut k = vec![t];
        k.extend(rest);
        k
    })
}

fn bound(b: Option<(bool, Vec<u8>)>) -> Bound<Vec<u8>> {
    match b {
        None => Bound::Unbounded,
        Some((true, k)) => Bound::Included(k),
        Some((false, k)) => Bound::Excluded(k),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn scans_equal_the_model(
        packed in proptest::collection::btree_set(key(), 0..200),
        block_bytes in 8usize..200,
        ops in proptest::collection::vec((any::<bool>(), key(), any::<bool>()), 0..80),
        ranges in proptest::collection::vec(
            (proptest::option::of((any::<bool>(), key())), proptest::option::of((any::<bool>(), key())), any::<bool>()),
            1..8,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let keys = packed.iter().cloned().map(Ok);
        let mut map = pack_in_blocks_of(&store, keys, block_bytes).unwrap();
        prop_assert_eq!(has_blocks(&map), !packed.is_empty());
        prop_assert!(!has_loose(&map));
        let mut model = packed.clone();
        for (add, k, save) in ops {
            if add {
                insert(&mut map, &k).unwrap();
                model.insert(k);
            } else {
                remove(&mut map, &k).unwrap();
                model.remove(&k);
            }
            if save {
                map.save().unwrap();
            }
        }
        // Scans go through a cache of decoded blocks shared by every scan below (and the
        // repacked map's), as a database's are, and without one: the same keys.
        let cache = KeyBlockCache::new(1 << 20);
        let all: Vec<Vec<u8>> = scan(&map, Bound::Unbounded, Bound::Unbounded, false, None)
            .map(Result::unwrap)
            .collect();
        prop_assert_eq!(&all, &model.iter().cloned().collect::<Vec<_>>());
        for (lo, hi, descending) in ranges {
            let (lo, hi) = (bound(lo), bound(hi));
            let lo_ref = lo.as_ref().map(Vec::as_slice);
            let hi_ref = hi.as_ref().map(Vec::as_slice);
            // BTreeSet::range panics on an empty or inverted range; the scan returns nothing.
            let inverted = match (&lo, &hi) {
                (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                    a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
                }
                _ => false,
            };
            let mut want: Vec<Vec<u8>> = if inverted {
                Vec::new()
            } else {
                model.range::<Vec<u8>, _>((lo.clone(), hi.clone())).cloned().collect()
            };
            if descending {
                want.reverse();
            }
            for cache in [None, Some(&cache)] {
                let got: Vec<Vec<u8>> = scan(&map, lo_ref, hi_ref, descending, cache)
                    .map(Result::unwrap)
                    .collect();
                prop_assert_eq!(&got, &want, "{:?}..{:?} descending {}", lo, hi, descending);
            }
        }
        // Repacked: blocks only, the same keys.
        let repacked = repack(&store, &map).unwrap();
        prop_assert!(!has_loose(&repacked));
        let again: Vec<Vec<u8>> = scan(&repacked, Bound::Unbounded, Bound::Unbounded, false, Some(&cache))
            .map(Result::unwrap)
            .collect();
        prop_assert_eq!(again, all);
        prop_assert_eq!(count(&repacked).unwrap(), model.len() as u64);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        frame in proptest::collection::vec(any::<u8>(), 0..64),
        count in 0u64..100,
        raw_len in 0u64..1000,
    ) {
        let _ = decode_block(&bytes);
        // A header that passes, then a frame of noise.
        let mut value = vec![BLOCK_FORMAT];
        put_varint(&mut value, count);
        put_varint(&mut value, raw_len);
        value.extend_from_slice(&frame);
        if let Ok(keys) = decode_block(&value) {
            prop_assert_eq!(keys.len() as u64, count);
        }
    }

    #[test]
    fn damaged_blocks_are_errors(
        keys in proptest::collection::btree_set(key(), 1..50),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let keys: Vec<Vec<u8>> = keys.into_iter().collect();
        let block = encode_block(&keys).unwrap();
        prop_assert_eq!(decode_block(&block).unwrap(), keys.clone());
        let mut bad = block.clone();
        let i = at.index(bad.len());
        bad[i] = byte;
        // Any outcome but a panic; a changed block that decodes still holds sorted keys.
        if let Ok(got) = decode_block(&bad) {
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]));
        }
        let short = &block[..cut.index(block.len())];
        prop_assert!(decode_block(short).is_err());
    }
}

/// Raw sizes (as the packer counts them: each key and 2 bytes) of the blocks of `map`.
fn block_sizes(map: &DurableMap) -> Vec<usize> {
    map.range((
        Bound::Included(&[BLOCK_KEY][..]),
        Bound::Excluded(&[LOOSE_FROM][..]),
    ))
    .map(|e| {
        let (_, v) = e.unwrap();
        decode_block(v).unwrap().iter().map(|k| k.len() + 2).sum()
    })
    .collect()
}

#[test]
fn blocks_hold_one_to_one_and_a_half_sizes_and_no_small_tail() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // Keys of 10 bytes: 12 raw bytes each as the packer counts them, blocks of 120.
    let keys = |n: u32| (0..n).map(|i| Ok([&[0x40u8][..], format!("{i:09}").as_bytes()].concat()));
    let sizes = |n: u32| block_sizes(&pack_in_blocks_of(&store, keys(n), 120).unwrap());
    // 10 keys fill one block; 11 to 14 more keys go into it as a tail, 15 make a block.
    assert_eq!(sizes(10), [120]);
    assert_eq!(sizes(11), [132]);
    assert_eq!(sizes(14), [168]);
    assert_eq!(sizes(15), [120, 60]);
    assert_eq!(sizes(34), [120, 120, 168]);
    assert_eq!(sizes(35), [120, 120, 120, 60]);
    // Fewer keys than a block: one block.
    assert_eq!(sizes(3), [36]);
    assert!(sizes(0).is_empty());
}
