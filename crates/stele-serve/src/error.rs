//! What can go wrong serving a request, with the HTTP status each answer gets.

use std::fmt;

/// An error answering one request. Each variant keeps the facts the message states; the
/// message says what is wrong, where, and how to fix it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The URL names no page of the server.
    NoRoute {
        /// The path asked for.
        path: String,
    },
    /// A part of the URL is not acceptable (bad percent encoding, `..`, an encoded slash,
    /// NUL, too long).
    BadUrl {
        /// Which part (`collection name`, `document id`, `query parameter`, ...).
        part: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A query parameter holds a value that does not parse.
    BadParameter {
        /// The parameter's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The collection does not exist.
    NoCollection {
        /// Its name.
        name: String,
    },
    /// The document does not exist.
    NoDocument {
        /// The collection.
        collection: String,
        /// The id asked for.
        id: String,
    },
    /// No table or table set of that name lies in the database folder.
    NoTable {
        /// Its name.
        name: String,
    },
    /// The request ran past its time budget and was stopped.
    TimeBudget {
        /// How long it ran, in milliseconds.
        elapsed_ms: u64,
        /// The budget, in milliseconds.
        budget_ms: u64,
    },
    /// The request is larger than the server takes.
    TooLarge {
        /// What was too large (`URL`, `body`).
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Only GET and HEAD are served: the server never writes.
    Method {
        /// The method asked for.
        method: String,
    },
    /// The database or a table failed to read.
    Store(stele::Error),
    /// A table failed to read.
    Table(stele_table::Error),
    /// The listening socket failed while serving (tiny_http's accept loop ended), so the
    /// server stopped.
    Listener {
        /// The error it ended with.
        reason: String,
    },
    /// The server could not start (the address is taken, or not an address).
    Bind {
        /// The address asked for.
        addr: String,
        /// Why it failed.
        reason: String,
    },
}

impl ServeError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self {
            ServeError::NoRoute { .. }
            | ServeError::NoCollection { .. }
            | ServeError::NoDocument { .. }
            | ServeError::NoTable { .. } => 404,
            ServeError::BadUrl { .. } | ServeError::BadParameter { .. } => 400,
            ServeError::TimeBudget { .. } => 503,
            ServeError::TooLarge { what: "URL", .. } => 414,
            ServeError::TooLarge { .. } => 413,
            ServeError::Method { .. } => 405,
            ServeError::Store(e) => match e {
                stele::Error::InvalidFilter { .. } | stele::Error::InvalidQuery { .. } => 400,
                stele::Error::QueryTimeout { .. } => 503,
                _ => 500,
            },
            ServeError::Table(_) | ServeError::Bind { .. } | ServeError::Listener { .. } => 500,
        }
    }

    /// A short name of the kind of error, for the JSON answers (`"error": "no-document"`).
    pub fn kind(&self) -> &'static str {
        match self {
            ServeError::NoRoute { .. } => "no-route",
            ServeError::BadUrl { .. } => "bad-url",
            ServeError::BadParameter { .. } => "bad-parameter",
            ServeError::NoCollection { .. } => "no-collection",
            ServeError::NoDocument { .. } => "no-document",
            ServeError::NoTable { .. } => "no-table",
            ServeError::TimeBudget { .. } => "time-budget",
            ServeError::TooLarge { .. } => "too-large",
            ServeError::Method { .. } => "method",
            ServeError::Store(stele::Error::QueryTimeout { .. }) => "time-budget",
            ServeError::Store(stele::Error::InvalidFilter { .. }) => "bad-query",
            ServeError::Store(stele::Error::InvalidQuery { .. }) => "bad-query",
            ServeError::Store(_) => "store",
            ServeError::Table(_) => "table",
            ServeError::Bind { .. } => "bind",
            ServeError::Listener { .. } => "listener",
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::NoRoute { path } => write!(
                f,
                "no page at {path:?}: pages are /, /c/COLLECTION, /c/COLLECTION/d/ID, /c/COLLECTION/query and /t/TABLE (see the database page)"
            ),
            ServeError::BadUrl { part, reason } => {
                write!(f, "the {part} in the URL is not accepted: {reason}")
            }
            ServeError::BadParameter { name, reason } => {
                write!(f, "the parameter {name:?} is not accepted: {reason}")
            }
            ServeError::NoCollection { name } => write!(
                f,
                "no collection {name:?} in this database (the database page lists them)"
            ),
            ServeError::NoDocument { collection, id } => write!(
                f,
                "no document {id:?} in collection {collection:?} (ids are exact: case and spaces count)"
            ),
            ServeError::NoTable { name } => write!(
                f,
                "no table or table set {name:?} in the database folder (the database page lists them)"
            ),
            ServeError::TimeBudget {
                elapsed_ms,
                budget_ms,
            } => write!(
                f,
                "stopped after {elapsed_ms} ms, past the time budget of {budget_ms} ms per request (narrow the filter, add an index, or start the server with a larger --time-limit)"
            ),
            ServeError::TooLarge { what, bytes, limit } => write!(
                f,
                "the request's {what} is {bytes} bytes, more than the {limit} bytes this server takes"
            ),
            ServeError::Method { method } => write!(
                f,
                "method {method} is not served: this server is read-only and answers GET and HEAD"
            ),
            ServeError::Store(e) => write!(f, "{e}"),
            ServeError::Table(e) => write!(f, "{e}"),
            ServeError::Listener { reason } => write!(
                f,
                "the server stopped: accepting a connection failed ({reason}); start it again (too many open files: raise `ulimit -n`)"
            ),
            ServeError::Bind { addr, reason } => write!(
                f,
                "cannot listen on {addr}: {reason} (choose another --port, or stop what uses it)"
            ),
        }
    }
}

impl std::error::Error for ServeError {}

impl From<stele::Error> for ServeError {
    fn from(e: stele::Error) -> Self {
        ServeError::Store(e)
    }
}

impl From<stele_table::Error> for ServeError {
    fn from(e: stele_table::Error) -> Self {
        ServeError::Table(e)
    }
}
