//! Key sets: decompression of the npm names, the derived ~14M set, shuffling, sorted copies.
//!
//! A prepared set lives in `<data dir>/<set>/`:
//! - `keys.txt`: the keys in shuffled order, one per line; the value of a key is its line
//!   number (row), stored as 8 bytes little-endian;
//! - `sorted.tsv`: the same pairs sorted bytewise by key, as `key<TAB>row` lines;
//! - `meta.json`: entry count, raw key bytes and how the set was derived.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The npm package names, shuffled, one per line (zstd).
pub const NPM_SOURCE: &str = "npm-package-names.shuffled.txt.zst";
/// Seed of the shuffle of derived sets.
pub const SHUFFLE_SEED: u64 = 0x5354_454c_455f_3134; // "STELE_14"

/// SplitMix64: small, fast, deterministic; the same generator is written in the Python peer
/// script so both sides can draw the same lookups.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; bias is below 2^-40 for our sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Many byte strings in one buffer.
#[derive(Debug, Default)]
pub struct Keys {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Keys {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.buf[start..self.ends[i]]
    }

    pub fn push(&mut self, key: &[u8]) {
        self.buf.extend_from_slice(key);
        self.ends.push(self.buf.len());
    }

    pub fn raw_bytes(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Reads a file of newline-separated keys.
    pub fn read_lines(path: &Path) -> Result<Self> {
        let mut data = Vec::new();
        File::open(path)
            .with_context(|| format!("opening {}", path.display()))?
            .read_to_end(&mut data)?;
        let mut keys = Keys {
            buf: Vec::with_capacity(data.len()),
            ends: Vec::new(),
        };
        for line in data.split(|&b| b == b'\n') {
            if !line.is_empty() {
                keys.push(line);
            }
        }
        Ok(keys)
    }
}

/// Metadata of a prepared set.
#[derive(Debug, Clone)]
pub struct SetInfo {
    pub name: String,
    pub dir: PathBuf,
    pub entries: u64,
    pub raw_key_bytes: u64,
    pub derivation: String,
}

impl SetInfo {
    pub fn keys_path(&self) -> PathBuf {
        self.dir.join("keys.txt")
    }

    pub fn sorted_path(&self) -> PathBuf {
        self.dir.join("sorted.tsv")
    }
}

/// Which set to prepare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// The 4.5M npm names in the shuffled order of the source file.
    Npm,
    /// Each name `n` gives `n`, `n/v1`, `n#2`, and for every 9th name also `n@latest`;
    /// shuffled with SplitMix64(`SHUFFLE_SEED`). `limit`: keep only the first names.
    Derived {
        names: Option<usize>,
        keys: Option<usize>,
    },
}

impl SetKind {
    pub fn name(self) -> String {
        match self {
            SetKind::Npm => "npm".into(),
            SetKind::Derived { keys: None, .. } => "npm14".into(),
            SetKind::Derived { keys: Some(k), .. } => format!("small{k}"),
        }
    }
}

fn read_source(src: &Path, limit: Option<usize>) -> Result<Keys> {
    let file = File::open(src).with_context(|| format!("opening {}", src.display()))?;
    let dec = zstd::stream::read::Decoder::new(file)?;
    let mut reader = BufReader::with_capacity(1 << 20, dec);
    let mut keys = Keys::default();
    let mut line = Vec::new();
    loop {
        if limit.is_some_and(|l| keys.len() >= l) {
            break;
        }
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        if line.contains(&b'\t') || line.contains(&b'\r') {
            bail!(
                "a source key contains a tab or CR: {:?}",
                String::from_utf8_lossy(&line)
            );
        }
        keys.push(&line);
    }
    Ok(keys)
}

fn derive(names: &Keys) -> Keys {
    let mut out = Keys::default();
    let mut k = Vec::new();
    for i in 0..names.len() {
        let n = names.get(i);
        out.push(n);
        for suffix in [&b"/v1"[..], b"#2"] {
            k.clear();
            k.extend_from_slice(n);
            k.extend_from_slice(suffix);
            out.push(&k);
        }
        if i % 9 == 0 {
            k.clear();
            k.extend_from_slice(n);
            k.extend_from_slice(b"@latest");
            out.push(&k);
        }
    }
    out
}

fn shuffle(keys: &Keys, seed: u64) -> Keys {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let mut out = Keys {
        buf: Vec::with_capacity(keys.buf.len()),
        ends: Vec::with_capacity(keys.len()),
    };
    for &i in &order {
        out.push(keys.get(i as usize));
    }
    out
}

/// Prepares (or finds already prepared) a set under `data_dir`.
pub fn prepare(kind: SetKind, source_dir: &Path, data_dir: &Path) -> Result<SetInfo> {
    let name = kind.name();
    let dir = data_dir.join(&name);
    let meta_path = dir.join("meta.json");
    if let Ok(text) = std::fs::read_to_string(&meta_path) {
        let v: serde_json::Value = serde_json::from_str(&text)?;
        return Ok(SetInfo {
            name,
            dir,
            entries: v["entries"].as_u64().context("meta entries")?,
            raw_key_bytes: v["raw_key_bytes"].as_u64().context("meta raw_key_bytes")?,
            derivation: v["derivation"].as_str().unwrap_or("").to_string(),
        });
    }
    std::fs::create_dir_all(&dir)?;
    let src = source_dir.join(NPM_SOURCE);
    let t = std::time::Instant::now();
    let (keys, derivation) = match kind {
        SetKind::Npm => (
            read_source(&src, None)?,
            format!("the lines of {NPM_SOURCE}, in the file's (shuffled) order"),
        ),
        SetKind::Derived { names, keys } => {
            let source = read_source(&src, names)?;
            let derived = derive(&source);
            let mut shuffled = shuffle(&derived, SHUFFLE_SEED);
            if let Some(k) = keys {
                let mut cut = Keys::default();
                for i in 0..k.min(shuffled.len()) {
                    cut.push(shuffled.get(i));
                }
                shuffled = cut;
            }
            let what = match names {
                Some(n) => format!("the first {n} lines of {NPM_SOURCE}"),
                None => format!("every line of {NPM_SOURCE}"),
            };
            let cut = keys
                .map(|k| format!(", first {k} keys kept"))
                .unwrap_or_default();
            (
                shuffled,
                format!(
                    "for each name n of {what}: n, n/v1, n#2, and n@latest for every 9th name \
                     (line index % 9 == 0); shuffled by Fisher-Yates with SplitMix64 seed \
                     {SHUFFLE_SEED:#x}{cut}"
                ),
            )
        }
    };
    // Sorted order, and a check that keys are unique.
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| keys.get(a as usize).cmp(keys.get(b as usize)));
    for w in order.windows(2) {
        if keys.get(w[0] as usize) == keys.get(w[1] as usize) {
            bail!(
                "duplicate key {:?} in set {name}",
                String::from_utf8_lossy(keys.get(w[0] as usize))
            );
        }
    }
    let mut out = BufWriter::with_capacity(1 << 20, File::create(dir.join("keys.txt.tmp"))?);
    for i in 0..keys.len() {
        out.write_all(keys.get(i))?;
        out.write_all(b"\n")?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(dir.join("sorted.tsv.tmp"))?);
    for &row in &order {
        out.write_all(keys.get(row as usize))?;
        writeln!(out, "\t{row}")?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(dir.join("keys.txt.tmp"), dir.join("keys.txt"))?;
    std::fs::rename(dir.join("sorted.tsv.tmp"), dir.join("sorted.tsv"))?;
    let info = SetInfo {
        name,
        dir,
        entries: keys.len() as u64,
        raw_key_bytes: keys.raw_bytes(),
        derivation,
    };
    let meta = serde_json::json!({
        "entries": info.entries,
        "raw_key_bytes": info.raw_key_bytes,
        "derivation": info.derivation,
    });
    std::fs::write(&meta_path, serde_json::to_string_pretty(&meta)?)?;
    eprintln!(
        "prepared set {} ({} keys, {} raw key bytes) in {:.1} s",
        info.name,
        info.entries,
        info.raw_key_bytes,
        t.elapsed().as_secs_f64()
    );
    Ok(info)
}

/// Streams `key\n` lines (value = row number) from the shuffled file.
pub fn for_each_shuffled(path: &Path, mut f: impl FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut line = Vec::with_capacity(256);
    let mut row = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        f(&line, row)?;
        row += 1;
    }
}

/// Streams `key<TAB>row` lines from the sorted file.
pub fn for_each_sorted(path: &Path, mut f: impl FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let tab = line
            .iter()
            .rposition(|&b| b == b'\t')
            .context("sorted.tsv line without a tab")?;
        let row = parse_u64(&line[tab + 1..])?;
        f(&line[..tab], row)?;
    }
}

fn parse_u64(s: &[u8]) -> Result<u64> {
    let mut v = 0u64;
    if s.is_empty() {
        bail!("empty number");
    }
    for &b in s {
        if !b.is_ascii_digit() {
            bail!("bad digit in {:?}", String::from_utf8_lossy(s));
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Ok(v)
}

/// Lookups: `count` rows drawn uniformly with `seed`.
pub fn lookups(entries: u64, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..count).map(|_| rng.below(entries)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_python_peer() {
        // The same draws come out of rocks_bench.py's SplitMix64 (printed by `lookups(14000000, 4, 1)` there).
        assert_eq!(lookups(14_000_000, 4, 1), PY_LOOKUPS.to_vec());
    }

    const PY_LOOKUPS: [u64; 4] = [7_931_862, 10_440_944, 13_594_038, 6_221_029];

    #[test]
    fn derived_keys_are_distinct_and_counted() {
        let mut names = Keys::default();
        for n in ["a", "@s/b", "c"] {
            names.push(n.as_bytes());
        }
        let d = derive(&names);
        let got: Vec<&[u8]> = (0..d.len()).map(|i| d.get(i)).collect();
        let want: Vec<&[u8]> = vec![
            b"a",
            b"a/v1",
            b"a#2",
            b"a@latest",
            b"@s/b",
            b"@s/b/v1",
            b"@s/b#2",
            b"c",
            b"c/v1",
            b"c#2",
        ];
        assert_eq!(got, want);
        let s = shuffle(&d, 7);
        assert_eq!(s.len(), d.len());
        assert_eq!(s.raw_bytes(), d.raw_bytes());
    }
}
