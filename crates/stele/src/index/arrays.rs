//! Which fields of an index have held an array: MongoDB's "multikey paths".
//!
//! A document whose path reaches one value that is not an array (or nothing: the missing
//! marker) has exactly one entry for that field, and that entry is the value its sort key
//! and its filter conditions see. Once a path reaches an array (its elements become
//! entries of their own) or several values (through an array of objects), the document has
//! an entry per element, and an index scan meets it at the first element that passes the
//! key conditions, which need not be the element that sets its sort key. So the planner
//! serves a sort over a path the filter tests only while no document has held an array
//! there, and an index scan skips removing repeated documents while no field of the index
//! has held one.
//!
//! The set only grows while the index lives: a write that puts an array adds its field, a
//! removal takes nothing away (the state cannot tell whether another document holds one).
//! Building the index (at its creation, or again when an import lands) starts it afresh.
//! It is derived from the documents written, so replaying the log gives it again; the
//! manifest keeps it for the documents in tables (field flag bit 1, `crate::manifest`).
//! An index whose manifest predates the set (version 8 and earlier) counts every field as
//! having held arrays, which is always safe.

/// A set of an index's fields (at most 16, `IndexDef::from_parts`), by position.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ArrayFields(u16);

impl ArrayFields {
    /// No field has held an array.
    pub(crate) const NONE: ArrayFields = ArrayFields(0);

    /// Adds field `i` (positions past 15 do not occur: an index has at most 16 fields).
    pub(crate) fn add(&mut self, i: usize) {
        if let Some(bit) = 1u16.checked_shl(u32::try_from(i).unwrap_or(u32::MAX)) {
            self.0 |= bit;
        }
    }

    /// Whether field `i` has held an array (a position past 15: counted as yes).
    pub(crate) fn has(self, i: usize) -> bool {
        match 1u16.checked_shl(u32::try_from(i).unwrap_or(u32::MAX)) {
            Some(bit) => self.0 & bit != 0,
            None => true,
        }
    }

    /// Whether any of the first `fields` fields has.
    pub(crate) fn any(self, fields: usize) -> bool {
        (0..fields).any(|i| self.has(i))
    }

    /// Both sets together.
    pub(crate) fn union(self, other: ArrayFields) -> ArrayFields {
        ArrayFields(self.0 | other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::ArrayFields;

    #[test]
    fn fields_are_added_and_found_by_position() {
        let mut a = ArrayFields::NONE;
        assert!(!a.any(16));
        a.add(3);
        a.add(15);
        a.add(16); // no such field: ignored
        assert!(a.has(3) && a.has(15) && !a.has(0) && !a.has(4));
        assert!(
            a.has(16),
            "a position past the last counts as holding arrays"
        );
        assert!(!a.any(3) && a.any(4));
        let mut b = ArrayFields::NONE;
        b.add(0);
        assert!(a.union(b).has(0) && a.union(b).has(3));
    }
}
