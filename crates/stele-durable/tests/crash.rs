//! A child process commits generations of a map and is killed (SIGKILL) at random moments;
//! after each kill the root holds exactly an acknowledged generation or a later one, whole.
//! `STELE_CRASH_ROUNDS` sets the number of rounds (default 50).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};
use stele_durable::{DurableMap, Store};

const CHILD_ENV: &str = "STELE_CRASH_CHILD_DIR";

mod generations;
use generations::model;

fn generation(map: &DurableMap) -> u64 {
    map.get(b"gen")
        .unwrap()
        .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap())
}

/// The child: commits generation after generation until killed.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return; // only runs when started by the parent below
    };
    let store = Store::open(dir).unwrap();
    let mut map = store.map_at_root_or_new("main").unwrap();
    let mut out = std::io::stdout().lock();
    for g in generation(&map) + 1.. {
        generations::write(&mut map, g).unwrap();
        map.commit().unwrap();
        writeln!(out, "ack {g}").unwrap();
        out.flush().unwrap();
        if g % 4 == 0 {
            map.compact().unwrap();
            map.commit().unwrap();
        }
        if g % 7 == 0 {
            store.collect_garbage().unwrap();
        }
    }
}

/// xorshift64: enough randomness for kill times without a dependency.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn killed_writers_leave_a_whole_acknowledged_state() {
    let rounds: u32 = std::env::var("STELE_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("seed {seed}");
    let exe = std::env::current_exe().unwrap();
    let mut last_acked = 0;
    let mut kills_mid_work = 0;
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acked = 0u64;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(g) = line.strip_prefix("ack ") {
                    acked = g.parse().unwrap();
                }
            }
            acked
        });
        let delay_ms = 20 + next_random(&mut seed) % 150;
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "round {round}: the child ended by itself"
        );
        let acked = reader.join().unwrap();
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
