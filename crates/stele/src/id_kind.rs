//! What a collection's document ids are (`crate::ids` holds their keys): a leaf, so that
//! errors can name it.

/// What a collection's document ids are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdKind {
    /// Strings (1 to 1024 bytes of UTF-8), in byte order.
    Text,
    /// Integers from `i64::MIN` to `i64::MAX`, in numeric order.
    Int,
}

impl IdKind {
    /// How errors name the kind: "text" or "integer".
    pub fn name(self) -> &'static str {
        match self {
            IdKind::Text => "text",
            IdKind::Int => "integer",
        }
    }
}
