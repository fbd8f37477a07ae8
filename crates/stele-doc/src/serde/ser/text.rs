//! Small helpers of the serializer: stack-formatted numbers and the errors for keys and
//! numbers it cannot write.

use std::fmt::Write as _;

use crate::error::{Error, Result};

/// The struct name under which `serde_json::Number` serializes itself when `serde_json` has its
/// `arbitrary_precision` feature: a struct with one field of that name holding the number text.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Formats small values (integers, floats, chars) on the stack.
struct StackText {
    buf: [u8; 48],
    len: usize,
}

impl StackText {
    fn new() -> Self {
        StackText {
            buf: [0; 48],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Calls `f` with the decimal text of `value` (an integer: at most 40 bytes).
pub(super) fn with_text<R>(
    value: impl std::fmt::Display,
    f: impl FnOnce(&str) -> Result<R>,
) -> Result<R> {
    let mut text = StackText::new();
    match write!(text, "{value}") {
        // Only ASCII digits and '-' were written, so this is UTF-8.
        Ok(()) => f(std::str::from_utf8(text.as_bytes()).unwrap_or_default()),
        Err(_) => f(&value.to_string()),
    }
}

/// Shortest round-trip text of a finite `f32` (as `serde_json` prints it) given to `f`.
pub(super) fn with_f32_text<R>(value: f32, f: impl FnOnce(&str) -> Result<R>) -> Result<R> {
    if !value.is_finite() {
        return Err(Error::NonFiniteFloat {
            value: f64::from(value),
        });
    }
    f(ryu::Buffer::new().format_finite(value))
}

pub(super) fn key_error(got: &str) -> Error {
    Error::Serde(format!(
        "map key must be a string, char, integer, float, bool or unit variant, got {got}; \
         convert the keys to strings or serialize the map as a sequence of pairs"
    ))
}

pub(super) fn number_error() -> Error {
    Error::Serde(format!(
        "struct {NUMBER_TOKEN:?} is reserved for serde_json numbers: one field of that name \
         holding the number text"
    ))
}
