//! What a collection's packed blocks hold, form by form ([`PackedForms`]): for tests that
//! check how an import stored its records, and for the benchmarks' share of bytes the keys
//! take.

use super::load_block;
use crate::compress::elide::is_elided;
use crate::compress::is_text_form;
use crate::error::{Error, Result};
use crate::state::State;

/// The documents of a collection's packed blocks by stored form, and the bytes of their
/// keys and values; from `Snapshot::packed_forms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackedForms {
    /// Packed blocks.
    pub blocks: u64,
    /// Documents kept as their JSON text without their id field (put back from the key).
    pub elided: u64,
    /// Documents kept as their JSON text, whole.
    pub text: u64,
    /// Documents kept as stream forms or as documents.
    pub other: u64,
    /// Bytes of the keys, as they are (before front-coding).
    pub key_bytes: u64,
    /// Bytes of the values as stored in the blocks (before compression).
    pub value_bytes: u64,
    /// zstd level 3 of the blocks' keys alone (one frame per block, keys one after the
    /// other, no dictionary): what the keys would take compressed apart.
    pub keys_zstd3: u64,
    /// zstd level 3 of the blocks' values alone, the same way.
    pub values_zstd3: u64,
}

/// The packed forms of `collection` in `state` (zeros if it has no packed blocks).
pub(crate) fn packed_forms(state: &State, collection: &str) -> Result<PackedForms> {
    let mut f = PackedForms::default();
    let Some(packs) = state.packs(collection) else {
        return Ok(f);
    };
    let mut decoder = crate::compress::Decoder::new()?;
    let zstd3 = |bytes: &[u8]| -> Result<u64> {
        zstd::bulk::compress(bytes, 3)
            .map(|c| c.len() as u64)
            .map_err(|e| Error::Zstd {
                op: "compress",
                message: e.to_string(),
            })
    };
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for entry in packs.iter() {
        let (last_id, value) = entry?;
        let block = load_block(state, collection, &last_id, value, &mut decoder)?;
        f.blocks += 1;
        keys.clear();
        values.clear();
        for i in 0..block.len() {
            keys.extend_from_slice(block.id(i));
            let stored = match block.stored_form(i) {
                Some(s) => s,
                None => block.get(i).to_vec(),
            };
            match () {
                () if is_elided(&stored) => f.elided += 1,
                () if is_text_form(&stored) => f.text += 1,
                () => f.other += 1,
            }
            values.extend_from_slice(&stored);
        }
        f.key_bytes += keys.len() as u64;
        f.value_bytes += values.len() as u64;
        f.keys_zstd3 += zstd3(&keys)?;
        f.values_zstd3 += zstd3(&values)?;
    }
    Ok(f)
}
