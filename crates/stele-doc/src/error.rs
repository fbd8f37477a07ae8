//! The one error type of the crate: every failure says what, where, and how to fix it.

/// The fix that [`Error::DuplicateKey`]'s message suggests, in this crate's API terms.
/// Front ends whose users set the policy elsewhere (a command-line flag, a keyword argument)
/// replace this exact text in the message with their own option's name.
pub const DUPLICATE_KEY_FIX: &str =
    "set WriteOptions::duplicate_keys to LastWins or FirstWins to accept such input";

/// The fix that [`Error::TooDeep`]'s message suggests, in this crate's API terms; replaced
/// by front ends as [`DUPLICATE_KEY_FIX`] is. (1024 is [`crate::format::MAX_DEPTH`]; a test checks it.)
pub const MAX_DEPTH_FIX: &str =
    "raise WriteOptions::max_depth (at most 1024) if this input is expected";

/// Errors from writing, reading, validating and (de)serializing documents.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The JSON text is malformed or breaks a policy of [`crate::WriteOptions`].
    #[error("invalid JSON at line {line}, column {column} (byte {offset}): {reason}")]
    Json {
        /// Byte offset of the problem in the input.
        offset: usize,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in bytes) of the problem.
        column: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An object has the same key twice and the policy is [`crate::DuplicateKeys::Reject`].
    #[error("duplicate key {key:?} in one object; {DUPLICATE_KEY_FIX}")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// Containers nest deeper than the configured limit.
    #[error("containers nest deeper than the limit of {limit}; {MAX_DEPTH_FIX}")]
    TooDeep {
        /// The limit in force.
        limit: usize,
    },
    /// Builder calls out of order, e.g. a value in an object without a key before it.
    #[error("builder used out of order: expected {expected}, got {got}")]
    Builder {
        /// What the builder expected next.
        expected: &'static str,
        /// What the caller did.
        got: &'static str,
    },
    /// NaN or an infinity, which JSON cannot represent.
    #[error("float {value} is not finite; JSON has no NaN or infinity: store null or a string")]
    NonFiniteFloat {
        /// The rejected value.
        value: f64,
    },
    /// Text given as a number is not a JSON number.
    #[error(
        "{text:?} is not a JSON number (grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)"
    )]
    InvalidNumber {
        /// The rejected text.
        text: String,
    },
    /// Bytes that claim to be a document are not a valid one.
    #[error(
        "not a valid stele document: {reason} at byte {offset} (file corrupt or not a document)"
    )]
    Invalid {
        /// Byte offset where the inconsistency was found.
        offset: usize,
        /// What is inconsistent.
        reason: &'static str,
    },
    /// A path expression such as `a.b[3].c` is malformed.
    #[error("invalid path {path:?} at character {at}: {reason}")]
    Path {
        /// The path text.
        path: String,
        /// Byte position in the path.
        at: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A serde `Serialize` or `Deserialize` implementation reported an error.
    #[error("{0}")]
    Serde(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(offset: usize, reason: &'static str) -> Error {
        Error::Invalid { offset, reason }
    }

    /// Builds a [`Error::Json`] for `input`, computing line and column only now (errors are rare,
    /// counting newlines on the happy path would not be).
    pub(crate) fn json(input: &[u8], offset: usize, reason: &'static str) -> Error {
        let offset = offset.min(input.len());
        let before = input.get(..offset).unwrap_or_default();
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        Error::Json {
            offset,
            line,
            column: offset - line_start + 1,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::MAX_DEPTH;

    #[test]
    fn the_depth_fix_quotes_the_real_maximum() {
        assert!(MAX_DEPTH_FIX.contains(&format!("at most {MAX_DEPTH})")));
    }
}
