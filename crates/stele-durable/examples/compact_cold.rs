//! Compaction of a map whose tables are not in the page cache: 400,000 entries of 1 KiB
//! (8-byte random keys), one diff of 1,000 puts on top, files evicted with
//! `posix_fadvise(DONTNEED)`, then `compact` timed.
//!
//! ```text
//! cargo run --release -p stele-durable --example compact_cold -- /tmp/compact-cold
//! ```

mod common;

use std::time::Instant;
use stele_durable::Store;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = common::folder_arg("compact_cold")?;
    let entries: u64 = 400_000;
    let store = Store::open(&dir)?;
    let mut map = common::sample_map(&store, entries)?;
    for i in 0..1000u64 {
        map.put(&i.to_be_bytes(), b"new")?;
    }
    map.save()?;
    let ids = map.layer_ids();
    drop(map);
    for id in &ids {
        common::evict(&store.table_path(*id))?;
    }
    let top = *ids.last().ok_or("no table")?;
    let mut map = store.open_map(top)?;
    let started = Instant::now();
    map.compact()?;
    println!(
        "compact of {entries} entries, tables evicted first: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
