//! A child process commits generations of a map and is killed (SIGKILL) at random moments;
//! after each kill the root holds exactly an acknowledged generation or a later one, whole.
//! `STELE_CRASH_ROUNDS` sets the number of rounds (default 50).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use stele_durable::{DurableMap, Store};
use stele_testkit::crash::{self, Crash};

const CHILD_ENV: &str = "STELE_CRASH_CHILD_DIR";

use crate::generations;
use generations::model;

fn generation(map: &DurableMap) -> u64 {
    map.get(b"gen")
        .unwrap()
        .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap())
}

/// The child: commits generation after generation until killed.
#[test]
fn crash_child() {
    // Only runs when started by the parent below.
    crash::run_child_if_asked(CHILD_ENV, |dir| {
        let store = Store::open(dir).unwrap();
        let mut map = store.map_at_root_or_new("main").unwrap();
        for g in generation(&map) + 1.. {
            generations::write(&mut map, g).unwrap();
            map.commit().unwrap();
            crash::ack(g);
            if g % 4 == 0 {
                map.compact().unwrap();
                map.commit().unwrap();
            }
            if g % 7 == 0 {
                store.collect_garbage().unwrap();
            }
        }
    });
}

#[test]
fn killed_writers_leave_a_whole_acknowledged_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut crash = Crash::new(
        &stele_testkit::test_path!("crash_child"),
        CHILD_ENV,
        dir.path(),
    )
    .kill_after_ms(20, 150)
    .stretch_until_first_ack();
    let rounds = crash.rounds();
    let mut last_acked = 0;
    let mut kills_mid_work = 0;
    for round in 0..rounds {
        let killed = crash.kill_one();
        assert!(
            !killed.status.success(),
            "round {round}: the child ended by itself"
        );
        let acked = killed.acked;
        last_acked = last_acked.max(acked);

        let store = Store::open(dir.path()).unwrap();
        let Ok(map) = store.map_at_root("main") else {
            assert_eq!(last_acked, 0, "round {round}: acknowledged data lost");
            continue;
        };
        let g = generation(&map);
        assert!(
            g >= last_acked,
            "round {round}: root at {g}, {last_acked} was acknowledged"
        );
        if g > acked {
            kills_mid_work += 1; // committed, killed before the acknowledgement
        }
        let got: BTreeMap<Vec<u8>, Vec<u8>> = map
            .iter()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(got, model(g), "round {round}: generation {g} is not whole");
        assert_eq!(map.len(), model(g).len() as u64);
        drop(map);
        store.collect_garbage().unwrap();
        last_acked = g;
    }
    assert!(last_acked > 0, "no generation was ever committed");
    eprintln!(
        "{rounds} rounds, reached generation {last_acked}, {kills_mid_work} kills between commit and acknowledgement"
    );
}
