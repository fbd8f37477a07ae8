//! Keys handed out by iteration: borrowed from the file where stored whole, else rebuilt
//! without a heap allocation when short.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Keys up to this many bytes are rebuilt inline (no allocation).
const INLINE_BYTES: usize = 30;

/// A key from a table. Derefs to `[u8]`.
///
/// Keys stored whole in the file (restart points, and keys sharing nothing with the
/// previous one) borrow the table; prefix-compressed keys are rebuilt, inline when at most
/// 30 bytes long, on the heap otherwise.
#[derive(Clone)]
pub struct Key<'t>(Repr<'t>);

#[derive(Clone)]
enum Repr<'t> {
    Borrowed(&'t [u8]),
    Inline { len: u8, bytes: [u8; INLINE_BYTES] },
    Owned(Vec<u8>),
}

impl<'t> From<&'t [u8]> for Key<'t> {
    /// A key borrowing `bytes`.
    #[inline]
    fn from(bytes: &'t [u8]) -> Self {
        Key::borrowed(bytes)
    }
}

impl<'t> Key<'t> {
    #[inline]
    pub(crate) fn borrowed(bytes: &'t [u8]) -> Self {
        Key(Repr::Borrowed(bytes))
    }

    /// A copy of `bytes` (inline when short).
    #[inline]
    pub(crate) fn copied(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_BYTES {
            let mut inline = [0u8; INLINE_BYTES];
            if let Some(dst) = inline.get_mut(..bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            Key(Repr::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            })
        } else {
            Key(Repr::Owned(bytes.to_vec()))
        }
    }

    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Borrowed(b) => b,
            Repr::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Repr::Owned(v) => v,
        }
    }

    /// True if the key is a slice of the table's bytes (zero-copy).
    #[inline]
    pub fn is_borrowed(&self) -> bool {
        matches!(self.0, Repr::Borrowed(_))
    }

    /// The key as an owned vector.
    #[inline]
    pub fn into_owned(self) -> Vec<u8> {
        match self.0 {
            Repr::Owned(v) => v,
            _ => self.as_bytes().to_vec(),
        }
    }
}

impl Deref for Key<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Key<'_> {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key<'_> {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(\"{}\")", self.as_bytes().escape_ascii())
    }
}

impl PartialEq for Key<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key<'_> {}

impl PartialEq<[u8]> for Key<'_> {
    #[inline]
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<&[u8]> for Key<'_> {
    #[inline]
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_bytes() == *other
    }
}

impl PartialOrd for Key<'_> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key<'_> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for Key<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl From<Key<'_>> for Vec<u8> {
    #[inline]
    fn from(k: Key<'_>) -> Vec<u8> {
        k.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_heap_and_borrowed_keys_read_the_same() {
        let long = vec![7u8; 100];
        for bytes in [&b""[..], b"abc", &[1u8; 30][..], &[2u8; 31][..], &long] {
            let k = Key::copied(bytes);
            assert_eq!(k.as_bytes(), bytes);
            assert_eq!(&*k, bytes);
            assert!(!k.is_borrowed());
            assert_eq!(k.clone().into_owned(), bytes.to_vec());
            let b = Key::borrowed(bytes);
            assert!(b.is_borrowed());
            assert_eq!(b, k);
        }
        assert!(Key::copied(b"a") < Key::borrowed(b"b"));
    }
}
