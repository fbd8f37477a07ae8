//! Point gets from a map's in-memory diff: 100,000 keys put in random order (not saved), then 2,000,000
//! gets of random present keys, timed, then 100,000 updates of random present keys with a
//! snapshot (a clone) taken every 200, for three shapes of key (12-byte counters like
//! `user00012345`, 24-character hex object ids, 36-character UUID-like strings). Prints
//! ns of CPU time per get and per update, for a writable store (the diff in key order) and a read-only
//! one (also indexed by hash). The reader of a live database answers most gets from this diff.
//!
//! ```text
//! cargo run --release -p stele-durable --example diff_get -- /tmp/diff-get
//! ```

/// CPU time of the calling thread in nanoseconds (Linux: the first field of
/// `/proc/thread-self/schedstat`): what the work cost whatever else runs on the machine.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
use stele_durable::Store;

/// Makes key `i` of a shape.
type KeyOf = fn(u64) -> String;

/// SplitMix64: random numbers without a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: diff_get <empty folder>")?;
    let keys: u64 = 100_000;
    let gets: u64 = 2_000_000;
    let shapes: [(&str, KeyOf); 3] = [
        ("counter (12 bytes)", |i| format!("user{i:08}")),
        ("object id (24 bytes)", |i| {
            format!(
                "5a9427648b0beebeb{:07x}",
                i.wrapping_mul(2_654_435_761) % (1 << 28)
            )
        }),
        ("uuid (36 bytes)", |i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            format!(
                "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                h >> 32,
                h & 0xffff,
                i & 0xfff,
                (h >> 20) & 0xfff,
                i
            )
        }),
    ];
    // A writable store's maps keep their diff in key order only; a read-only store's (a
    // reader's, which only its refreshes write) also index it by hash.
    drop(Store::open(&dir)?);
    let stores = [
        ("writable", Store::open(&dir)?),
        ("read-only", Store::open_read_only(&dir)?),
    ];
    for ((name, key), (kind, store)) in shapes
        .iter()
        .flat_map(|shape| stores.iter().map(move |store| (shape, store)))
    {
        // Put in random order (as a live writer's updates arrive), so that neither the
        // keys' nor the values' allocations follow key order.
        let mut put_order: Vec<u64> = (0..keys).collect();
        let mut rng = 3u64;
        for i in (1..put_order.len()).rev() {
            put_order.swap(i, (next(&mut rng) % (i as u64 + 1)) as usize);
        }
        let mut map = store.new_map();
        for &i in &put_order {
            map.put(key(i).as_bytes(), b"a value of some thirty bytes..")?;
        }
        let ids: Vec<String> = (0..keys).map(key).collect();
        let mut rng = 7u64;
        let order: Vec<usize> = (0..gets)
            .map(|_| (next(&mut rng) % keys) as usize)
            .collect();
        let start = thread_cpu_ns();
        let mut found = 0usize;
        for &i in &order {
            found += map.get(ids[i].as_bytes())?.map_or(0, <[u8]>::len);
        }
        let ns = (thread_cpu_ns() - start) as f64 / gets as f64;
        assert_eq!(found as u64, gets * 30, "every key is present");
        // Updates of present keys while snapshots are held, as a reader's refresh applies
        // them (a snapshot taken every 200 puts, the previous one dropped then): each put
        // copies the nodes on its path that the snapshot shares.
        let start = thread_cpu_ns();
        let mut snapshot = map.clone();
        for (n, &i) in order.iter().take(keys as usize).enumerate() {
            map.put(ids[i].as_bytes(), b"another value of thirty bytes.")?;
            if n % 200 == 199 {
                snapshot = map.clone();
            }
        }
        drop(snapshot);
        let put_ns = (thread_cpu_ns() - start) as f64 / keys as f64;
        println!(
            "{name}, {kind} store: {ns:.0} ns per get from a diff of {keys} keys; {put_ns:.0} ns per update beside snapshots"
        );
    }
    Ok(())
}
