//! The data of the benchmark, generated (never stored): key number `i` is the `i+1`-th
//! output of SplitMix64(SEED) written big-endian; its value is the key again followed by
//! 126 words of SplitMix64(key), 1016 bytes, so that an entry is exactly 1 KiB as in
//! Bifurcan's benchmark. The Java harness (`java/DurableBench.java`) and the RocksDB script
//! (`scripts/rocks_durable.py`) compute the same keys.

pub const SEED: u64 = 0x5EED_D00B_1E00_0001;
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
pub const KEY_BYTES: usize = 8;
pub const VALUE_BYTES: usize = 1016;
pub const ENTRY_BYTES: u64 = (KEY_BYTES + VALUE_BYTES) as u64;

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key number `i` (random order: generation order is the shuffled input).
pub fn key(i: u64) -> u64 {
    mix(SEED.wrapping_add(i.wrapping_add(1).wrapping_mul(GAMMA)))
}

/// The value stored under `key`.
pub fn value(key: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    let (head, rest) = v.split_at_mut(KEY_BYTES);
    head.copy_from_slice(&key.to_be_bytes());
    for (j, w) in rest.chunks_exact_mut(8).enumerate() {
        let word = mix(key.wrapping_add((j as u64 + 1).wrapping_mul(GAMMA)));
        w.copy_from_slice(&word.to_le_bytes());
    }
    v
}

/// Key numbers to look up, uniform in `0..n`, drawn by SplitMix64(seed) (the same draw as
/// the Java and Python peers).
pub struct Lookups {
    state: u64,
    n: u64,
}

impl Lookups {
    pub fn new(n: u64, seed: u64) -> Self {
        Lookups { state: seed, n }
    }
}

impl Iterator for Lookups {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.state = self.state.wrapping_add(GAMMA);
        Some(mix(self.state) % self.n.max(1))
    }
}

/// The key a value starts with (every system's get checks it).
pub fn first_word(v: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(v.get(..KEY_BYTES)?.try_into().ok()?))
}
