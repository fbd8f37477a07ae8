//! The hasher of `$group`'s map of groups.

/// The hasher of the groups' map: the keys' order encodings hashed by xxh3 with a seed
/// drawn per map (SipHash, std's default, was 8 % of a group-by of 1M documents into
/// 1,311 groups: `docs/notes/2026-12-02-scan-costs.md`). The seed keeps keys chosen to
/// collide from being chosen in advance.
#[derive(Clone, Copy)]
pub(crate) struct KeyHash(u64);

impl KeyHash {
    pub(crate) fn new() -> KeyHash {
        use std::hash::BuildHasher;
        KeyHash(std::collections::hash_map::RandomState::new().hash_one(0x5EED_u32))
    }
}

impl std::hash::BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// See [`KeyHash`]. A `[u8]` hashes as its length, then its bytes.
pub(crate) struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
