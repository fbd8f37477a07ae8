//! The shared data sets (`../shared/data`, or `STELE_DATA`): slices of the collections.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

/// The folder of the shared data.
pub fn data_dir() -> PathBuf {
    std::env::var_os("STELE_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    )
}

/// The first `n` lines of a compressed collection (`name` under `collections/`).
pub fn slice(name: &str, n: usize) -> Vec<String> {
    let path = data_dir().join("collections").join(name);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = io::BufReader::new(zstd::Decoder::new(file).unwrap());
    reader.lines().take(n).map(Result::unwrap).collect()
}
