//! The three types a document's values are made of, which refer to each other: a [`Value`]
//! may be an [`Object`] or an [`Array`], whose reads give values. Defined together here; their
//! methods are in `value.rs`, `container.rs` and `array.rs`, each importing only this file.

use super::DocRef;
use super::head::{ArrShape, ObjShape};
use super::scalars::{ScaledDecimal, Str};

/// One value of a document.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Value<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer in `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    /// A float whose shortest round-trip text is the text it was written from.
    Float(f64),
    /// A number kept as its exact JSON text (exponent forms such as `1E5`, `-0`, more digits than
    /// a `u64` holds).
    Decimal(&'a str),
    /// A fraction without exponent, kept exactly as digits and scale (`12.50`).
    Scaled(ScaledDecimal),
    /// A string.
    String(Str<'a>),
    /// An object.
    Object(Object<'a>),
    /// An array.
    Array(Array<'a>),
}

/// An object: properties sorted by name (bytewise) for binary search, plus the input order.
#[derive(Clone, Copy)]
pub struct Object<'a> {
    pub(super) doc: DocRef<'a>,
    pub(super) shape: ObjShape,
}

/// An array: O(1) access by index.
#[derive(Clone, Copy)]
pub struct Array<'a> {
    pub(super) doc: DocRef<'a>,
    pub(super) shape: ArrShape,
}
