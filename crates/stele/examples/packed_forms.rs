//! What a collection's packed blocks hold: documents by stored form (whole or elided text
//! forms, the others), and the bytes of keys and values, raw and each compressed apart
//! (zstd -3 per block, no dictionary): the share of bytes the keys take.
//!
//! ```text
//! cargo run --release -p stele --example packed_forms -- DB COLLECTION
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, collection] = args.as_slice() else {
        eprintln!("usage: packed_forms DB COLLECTION");
        return ExitCode::from(2);
    };
    let run = || -> stele::Result<()> {
        let db = stele::Database::open_read_only(db)?;
        let snap = db.snapshot();
        let f = snap.packed_forms(collection)?;
        let folder = snap.stats(collection).pack_bytes;
        let share = |a: u64, b: u64| 100.0 * a as f64 / (a + b).max(1) as f64;
        println!(
            "{} blocks; documents: {} elided text, {} text, {} other",
            f.blocks, f.elided, f.text, f.other
        );
        println!(
            "raw: keys {} bytes, values {} bytes (keys {:.1} %)",
            f.key_bytes,
            f.value_bytes,
            share(f.key_bytes, f.value_bytes)
        );
        println!(
            "zstd -3 apart: keys {} bytes, values {} bytes (keys {:.1} %); packs as stored {} bytes",
            f.keys_zstd3,
            f.values_zstd3,
            share(f.keys_zstd3, f.values_zstd3),
            folder
        );
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
