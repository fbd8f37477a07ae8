//! Content identifiers of table files.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The identity of a table file: the XXH3-128 hash of all its bytes, which is also its file
/// name (`<32 hex digits>.stt`). Equal content, equal id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId([u8; 16]);

impl TableId {
    /// The id from its 16 bytes (big-endian digits of the hash, as in the file name).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        TableId(bytes)
    }

    /// The id from the 128-bit hash value.
    pub const fn from_u128(hash: u128) -> Self {
        TableId(hash.to_be_bytes())
    }

    /// The 16 bytes of the id.
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The file name of the table: `<hex>.stt`.
    pub fn file_name(self) -> String {
        format!("{self}.{}", crate::TABLE_EXTENSION)
    }

    /// The id in a table path's file name, if it has the form `<32 hex digits>.stt`.
    pub fn from_path(path: &Path) -> Option<TableId> {
        if path.extension()? != crate::TABLE_EXTENSION {
            return None;
        }
        path.file_stem()?.to_str()?.parse().ok()
    }
}

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", u128::from_be_bytes(self.0))
    }
}

impl fmt::Debug for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableId({self})")
    }
}

/// The text is not 32 hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a table id: {text:?} (expected 32 hexadecimal digits, the stem of a .stt file name)")]
pub struct ParseTableIdError {
    /// The text that was given.
    pub text: String,
}

impl FromStr for TableId {
    type Err = ParseTableIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseTableIdError {
            text: s.chars().take(80).collect(),
        };
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err());
        }
        u128::from_str_radix(s, 16)
            .map(TableId::from_u128)
            .map_err(|_| err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip_and_errors() {
        let id = TableId::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let text = id.to_string();
        assert_eq!(text, "0123456789abcdef0011223344556677");
        assert_eq!(text.parse::<TableId>(), Ok(id));
        assert_eq!(
            TableId::from_path(Path::new("/x/0123456789abcdef0011223344556677.stt")),
            Some(id)
        );
        assert_eq!(TableId::from_path(Path::new("/x/0123.stt")), None);
        assert!(
            "+123456789abcdef0011223344556677"
                .parse::<TableId>()
                .is_err()
        );
        assert!("".parse::<TableId>().is_err());
    }
}
