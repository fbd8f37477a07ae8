//! The sample a bulk import trains its dictionary on: a reservoir of the documents (or
//! text forms) it packs, spread over the input.

/// Largest document kept in the sample (bigger ones are rare; the trainer cuts samples to
/// 16 KiB anyway, and held-out ones are packed whole).
const MAX_SAMPLE_DOC_BYTES: usize = 1 << 20;

/// Most documents an import's sample holds, if within its bytes (`bulk::MAX_SAMPLE_BYTES`, a
/// share of the import): more than the compressor's own ring (`CompressOptions::sample_docs`,
/// 1,024), which for small documents is less than two blocks of them. An import trains on
/// one sampled document per [`BYTES_PER_SAMPLED_DOC`] of its documents, at least the ring's
/// count and at most this: a dictionary is at most a tenth of what it trains on, so a bigger
/// sample of small documents means a bigger dictionary, which only a big collection pays
/// back. The 4.5 million npm package documents (90 bytes of JSON each) trained on 1,024
/// (about 50 KB of text forms) and stored 82.6 MB; on 8,192, 78.9 MB (1.18x zstd -3 instead
/// of 1.24x); on 32,768, 78.9 MB again. Trained on 8,192 whatever their size, vega flights
/// (200,000 documents, 9.9 MB), geonames cities and mongodb zips stored 4-5 % more (their
/// dictionaries grew to 32 KiB), hence the share (`docs/notes/2026-12-02-import-small-docs.md`).
pub(super) const MAX_SAMPLE_DOCS: usize = 8192;

/// See [`MAX_SAMPLE_DOCS`]: 16 KiB, so the sample grows past the ring's 1,024 documents
/// from 16 MiB of documents on.
const BYTES_PER_SAMPLED_DOC: u64 = 16 << 10;

/// How many documents an import of `doc_bytes` bytes of documents samples: one per
/// [`BYTES_PER_SAMPLED_DOC`], at least `ring_docs`, at most [`MAX_SAMPLE_DOCS`] (unless
/// `ring_docs` is more).
pub(super) fn docs_to_sample(doc_bytes: u64, ring_docs: usize) -> usize {
    let for_bytes = usize::try_from(doc_bytes / BYTES_PER_SAMPLED_DOC).unwrap_or(usize::MAX);
    for_bytes.min(MAX_SAMPLE_DOCS).max(ring_docs).max(1)
}

/// As many of `refs` as [`docs_to_sample`] gives for an import of `doc_bytes` bytes of
/// documents, evenly spread over them (all of `refs` if fewer): what the dictionary trains on
/// and the level is judged by ([`MAX_SAMPLE_DOCS`]).
pub(super) fn train_share(refs: Vec<&[u8]>, doc_bytes: u64, ring_docs: usize) -> Vec<&[u8]> {
    let max_docs = docs_to_sample(doc_bytes, ring_docs);
    if refs.len() <= max_docs {
        return refs;
    }
    // `max_docs` of them, evenly spread: a whole stride (every k-th) would keep as few as
    // half of `max_docs` (1,500 of a sample at 1,024 a stride of 2 keeps 750), and a small
    // import would train on less than the ring's count.
    let len = refs.len();
    (0..max_docs)
        .filter_map(|i| refs.get(i * len / max_docs).copied())
        .collect()
}

/// Documents sampled for the dictionary: a reservoir of at most `max_docs` documents and
/// about `max_bytes` bytes, each document of the input equally likely to be in it.
#[derive(Debug)]
pub(super) struct Sample {
    pub(super) docs: Vec<Vec<u8>>,
    pub(super) bytes: usize,
    pub(super) max_docs: usize,
    pub(super) max_bytes: usize,
    pub(super) seen: u64,
    /// SplitMix64 state: deterministic, so the same input trains the same dictionary.
    rng: u64,
}

impl Sample {
    pub(super) fn new(max_docs: usize, max_bytes: usize) -> Self {
        Sample {
            docs: Vec::new(),
            bytes: 0,
            max_docs: max_docs.max(1),
            max_bytes,
            seen: 0,
            rng: 0x5eed_1e55_c0ff_ee00,
        }
    }

    /// Every k-th document of the sample, k the smallest that keeps them within about
    /// `max_bytes` (a reservoir's documents are spread over the input, or in input order
    /// when it kept them all: every k-th keeps them spread either way).
    pub(super) fn spread(&self, max_bytes: usize) -> Vec<&[u8]> {
        let docs: Vec<&[u8]> = self.docs.iter().map(Vec::as_slice).collect();
        spread(&docs, self.bytes as u64, max_bytes)
    }

    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn offer(&mut self, doc: &[u8]) {
        self.seen += 1;
        if doc.len() > MAX_SAMPLE_DOC_BYTES {
            return;
        }
        if self.docs.len() < self.max_docs && self.bytes + doc.len() <= self.max_bytes {
            self.bytes += doc.len();
            self.docs.push(doc.to_vec());
            return;
        }
        let slot = (self.next_random() % self.seen) as usize;
        if let Some(old) = self.docs.get_mut(slot)
            && self.bytes - old.len() + doc.len() <= self.max_bytes
        {
            self.bytes = self.bytes - old.len() + doc.len();
            old.clear();
            old.extend_from_slice(doc);
        }
    }
}

/// Every k-th of `docs` (`bytes` in all), k the smallest that keeps them within about
/// `max_bytes`: a training share spread over the whole sample.
pub(super) fn spread<'d>(docs: &[&'d [u8]], bytes: u64, max_bytes: usize) -> Vec<&'d [u8]> {
    let stride = usize::try_from(bytes.div_ceil(max_bytes.max(1) as u64))
        .unwrap_or(usize::MAX)
        .max(1);
    docs.iter().step_by(stride).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An import trains on one sampled document per 16 KiB of its documents, at least the
    /// ring's count and at most all of the sample, spread over it.
    #[test]
    fn an_import_trains_on_more_of_its_sample_the_bigger_it_is() {
        let docs: Vec<Vec<u8>> = (0..MAX_SAMPLE_DOCS as u32)
            .map(|i| i.to_le_bytes().to_vec())
            .collect();
        let refs = || docs.iter().map(Vec::as_slice).collect::<Vec<&[u8]>>();
        // 9.9 MB of documents: the ring's 1,024, every 8th.
        let small = train_share(refs(), 9_900_000, 1024);
        assert_eq!(small.len(), 1024);
        assert_eq!(small[1], 8u32.to_le_bytes());
        // 64 MiB: 4,096, every other one.
        assert_eq!(train_share(refs(), 64 << 20, 1024).len(), 4096);
        // 370 MB: all 8,192 (the sample holds no more).
        assert_eq!(
            train_share(refs(), 370_000_000, 1024).len(),
            MAX_SAMPLE_DOCS
        );
        // 1,500 documents for the ring's 1,024: 1,024 of them, not every other one (750).
        assert_eq!(
            train_share(refs()[..1500].to_vec(), 1 << 20, 1024).len(),
            1024
        );
        // A sample smaller than the ring: all of it.
        assert_eq!(
            train_share(refs()[..100].to_vec(), 1 << 20, 1024).len(),
            100
        );
    }

    /// The training share of a sample: every k-th document, within the bytes asked for,
    /// from the whole sample; all of it when it fits.
    #[test]
    fn a_spread_sample_keeps_every_kth_document_within_its_bytes() {
        let mut sample = Sample::new(1000, 1 << 20);
        for i in 0..100u8 {
            sample.offer(&[i; 10]);
        }
        assert_eq!(sample.bytes, 1000);
        let firsts = |docs: Vec<&[u8]>| docs.iter().map(|d| d[0]).collect::<Vec<u8>>();
        let quarter = firsts(sample.spread(250));
        assert_eq!(quarter, (0..100).step_by(4).collect::<Vec<u8>>());
        let third = firsts(sample.spread(333));
        assert_eq!(third.len(), 25, "stride 4: 250 bytes, not more than asked");
        assert_eq!(firsts(sample.spread(1000)).len(), 100);
        assert_eq!(firsts(sample.spread(usize::MAX)).len(), 100);
        assert_eq!(firsts(sample.spread(0)), vec![0], "at least one document");
    }
}
