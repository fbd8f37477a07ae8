//! serde support: any `Serialize` straight into a document, any `Deserialize` straight out of one.
//!
//! The data model is `serde_json`'s, so a document converted to JSON reads as
//! `serde_json::to_string` of the same value would:
//!
//! - structs and maps become objects, in field (or iteration) order; map keys may be strings,
//!   chars, integers, finite floats, bools or unit variants (the last five as their text), other
//!   keys are an error;
//! - sequences, tuples and tuple structs become arrays, bytes an array of integers;
//! - `()`, unit structs and `None` become `null`, `Some(v)` and newtype structs `v`;
//! - enums are externally tagged: a unit variant is its name, other variants `{"Name": content}`;
//! - integers keep their exact value over the whole `i64`/`u64` range (`i128`/`u128` beyond it are
//!   kept as decimal text); `f64` exactly; an `f32` as the `f64` nearest its shortest text (what
//!   `serde_json` prints: `0.1f32` is `0.1`); NaN and infinities fail with
//!   [`Error::NonFiniteFloat`] (where `serde_json` would write `null`);
//! - `serde_json::Value` and `serde_json::Number` with `arbitrary_precision` keep their number
//!   text exactly.
//!
//! Reading lends strings stored plain to the visitor, so `&'de str` fields borrow from the
//! document; strings stored LZ4-compressed (see [`crate::WriteOptions::compress_strings`]) are
//! decompressed into owned `String`s, so a borrowed `&str` field fails for them (use `String` or
//! `Cow<str>`). Numbers kept as decimal text read as `i64` or `u64` when they are integers in
//! range, otherwise as the nearest `f64` (or `i128`/`u128` when asked for).

mod de;
mod ser;

use std::fmt::Display;

use ::serde::{Deserialize, Serialize};

pub use de::Deserializer;
pub use ser::{Compound, Serializer, StructCompound};

use crate::error::{Error, Result};
use crate::reader::{Document, Value};
use crate::writer::{DocumentWriter, WriteOptions};

impl ::serde::ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Serde(msg.to_string())
    }
}

impl ::serde::de::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Serde(msg.to_string())
    }
}

/// Serializes `value` into a document with default [`WriteOptions`].
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use stele_doc::Document;
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// enum Role {
///     Admin,
///     Guest { until: u32 },
/// }
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct User<'a> {
///     name: &'a str,
///     born: i64,
///     roles: Vec<Role>,
///     email: Option<String>,
/// }
///
/// let user = User {
///     name: "Ada",
///     born: 1815,
///     roles: vec![Role::Admin, Role::Guest { until: 1852 }],
///     email: None,
/// };
/// let bytes = stele_doc::to_document(&user)?;
/// let doc = Document::new(bytes)?;
/// assert_eq!(
///     doc.to_json(),
///     r#"{"name":"Ada","born":1815,"roles":["Admin",{"Guest":{"until":1852}}],"email":null}"#
/// );
/// let back: User<'_> = stele_doc::from_document(&doc)?; // `name` borrows from `doc`
/// assert_eq!(back, user);
/// # Ok::<(), stele_doc::Error>(())
/// ```
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    to_document_with(value, WriteOptions::default())
}

/// Serializes `value` into a document with the given options (key order, duplicate keys,
/// maximum depth, string compression).
pub fn to_document_with<T: Serialize + ?Sized>(
    value: &T,
    options: WriteOptions,
) -> Result<Vec<u8>> {
    write_document(&mut DocumentWriter::with_options(options), value)
}

/// Serializes `value` as one whole document with `writer`, reusing its buffers: for many
/// documents, keep one writer. The writer must be between documents (anything it holds is
/// dropped on error); it is ready for the next document afterwards, error or not.
pub fn write_document<T: Serialize + ?Sized>(
    writer: &mut DocumentWriter,
    value: &T,
) -> Result<Vec<u8>> {
    let serialized = value.serialize(&mut Serializer::new(writer));
    let result = serialized.and_then(|()| writer.finish());
    if result.is_err() {
        writer.reset();
    }
    result
}

/// Deserializes a `T` from the root of `doc`; `T` may borrow strings from the document.
pub fn from_document<'de, T, B>(doc: &'de Document<B>) -> Result<T>
where
    T: Deserialize<'de>,
    B: AsRef<[u8]>,
{
    from_value(doc.root())
}

/// Deserializes a `T` from one value of a document (for example `doc.get("user")`).
pub fn from_value<'de, T: Deserialize<'de>>(value: Value<'de>) -> Result<T> {
    T::deserialize(Deserializer::new(value))
}
