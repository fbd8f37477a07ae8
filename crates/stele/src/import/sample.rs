//! The sample a bulk import trains its dictionary on: a reservoir of the documents (or
//! text forms) it packs, spread over the input.

/// Largest document kept in the sample (bigger ones are rare; the trainer cuts samples to
/// 16 KiB anyway, and held-out ones are packed whole).
const MAX_SAMPLE_DOC_BYTES: usize = 1 << 20;

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
