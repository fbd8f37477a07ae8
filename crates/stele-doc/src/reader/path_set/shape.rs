//! The root object shape a [`PathSet`](super::PathSet) remembers, and how a document's root
//! compares with it.

use super::super::types::Object;
use super::field::{Field, KeyedField};

/// The root object shape remembered from the last document read in full.
#[derive(Debug, Clone, Default)]
pub(super) struct Shape {
    /// Whether the fields below describe a document (and the set has keyed paths).
    pub(super) known: bool,
    /// Whether a keyed path's key was absent from that document.
    pub(super) absent: bool,
    pub(super) len: usize,
    pub(super) flags: u8,
    pub(super) key_ids: Vec<u8>,
    /// The names area's bytes from its start: up to the end of the last name a keyed path
    /// found, or when some key was absent, of the last name of a root key. A document with the
    /// same key ids whose names area starts with these bytes names each key the paths found
    /// the same way (its entry lies inside them); in the second case every root key too (each
    /// root key id's entry lies inside them), so the root has the same keys and an absent one
    /// is absent again.
    pub(super) names: Vec<u8>,
    /// Bytes of the root header the fixed-place reads need (the largest place's end).
    pub(super) head_len: usize,
}

/// How a document's root compares with the remembered shape.
pub(super) enum Likeness<'a> {
    /// The same header layout, key ids and names: every key at its remembered place (the
    /// root header's first bytes, as many as the places need).
    Same(&'a [u8]),
    /// The same names (so the same key ids for the keys the paths use, all found last time),
    /// another header: each key found by its id.
    SameNames,
    /// Anything else.
    Other,
}

impl Shape {
    /// How `o` compares with the remembered shape: the same names from the names area's start
    /// as far as [`Shape::names`] goes, then the same count and flags (so the same header
    /// layout) and the same key ids in sorted order: every keyed path's key sits at its
    /// remembered index, or is absent.
    #[inline(always)]
    pub(super) fn compare<'a>(&self, o: &Object<'a>) -> Likeness<'a> {
        let same_names = self.known
            && o.names()
                .get(..self.names.len())
                .is_some_and(|names| same_bytes(names, &self.names));
        if !same_names {
            return Likeness::Other;
        }
        if o.len_and_flags() == (self.len, self.flags)
            && same_bytes(o.key_id_bytes(), &self.key_ids)
            && let Some(head) = o.head_bytes(self.head_len)
        {
            return Likeness::Same(head);
        }
        match self.absent {
            false => Likeness::SameNames,
            true => Likeness::Other,
        }
    }

    /// Remembers `o`'s shape, the keyed fields' places having just been set from it.
    pub(super) fn learn(&mut self, o: &Object<'_>, fields: &[Field]) {
        let (mut names_end, mut keyed, mut absent) = (0, false, false);
        for field in fields {
            let Field::Keyed(k) = field else {
                continue;
            };
            keyed = true;
            match (&k.at, k.first.key_slot()) {
                (Some(_), Some(slot)) => {
                    names_end = names_end.max(slot.key_id.saturating_add(slot.entry.len()));
                }
                _ => absent = true,
            }
        }
        if absent {
            names_end = names_end.max(o.names_end_of_keys());
        }
        let names = o.names().get(..names_end);
        let (Some(names), true) = (names, keyed) else {
            // No keyed path (nothing to share), or a broken promise of trusted bytes.
            self.known = false;
            return;
        };
        self.names.clear();
        self.names.extend_from_slice(names);
        self.absent = absent;
        self.learn_header(o, fields);
    }

    /// Remembers `o`'s root header (count, flags, key ids) and how much of it the keyed fields'
    /// places need; the names stay.
    pub(super) fn learn_header(&mut self, o: &Object<'_>, fields: &[Field]) {
        (self.len, self.flags) = o.len_and_flags();
        self.key_ids.clear();
        self.key_ids.extend_from_slice(o.key_id_bytes());
        self.head_len = fields
            .iter()
            .filter_map(|field| match field {
                Field::Keyed(KeyedField {
                    at: Some((_, place)),
                    ..
                }) => Some(place.end_rel()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        self.known = true;
    }
}

/// `a == b`, without a `memcmp` call for up to 32 bytes (key ids and the first names of most
/// documents): two overlapping loads from each end.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let len = a.len();
    if len != b.len() {
        return false;
    }
    match len {
        0 => true,
        1..4 => a == b,
        4..8 => ends::<4>(a) == ends::<4>(b),
        8..16 => ends::<8>(a) == ends::<8>(b),
        16..=32 => ends::<16>(a) == ends::<16>(b),
        _ => a == b,
    }
}

/// The first and the last `N` bytes of `s` (which has at least `N`; the two overlap when it has
/// fewer than `2 * N`).
#[inline(always)]
fn ends<const N: usize>(s: &[u8]) -> Option<(&[u8; N], &[u8; N])> {
    Some((s.first_chunk::<N>()?, s.last_chunk::<N>()?))
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_slice_equality() {
        let a: Vec<u8> = (0..40).collect();
        for len in 0..40 {
            for at in 0..len {
                let mut b = a[..len].to_vec();
                assert!(same_bytes(&a[..len], &b));
                b[at] ^= 1;
                assert!(!same_bytes(&a[..len], &b), "len {len}, byte {at}");
            }
            assert!(!same_bytes(&a[..len], &a[..len + 1]));
        }
    }
}
