//! `stele serve`: a read-only web view of a Stele database, beside a live writer.
//!
//! [`Server::start`] opens the database with [`stele::Database::open_read_only`], listens on
//! 127.0.0.1 unless told otherwise, and answers with a bounded pool of worker threads that
//! share one listening socket (tiny_http: a small synchronous HTTP server, no async runtime).
//! Each request first catches up with what the writer committed
//! ([`stele::ReadOnlyDatabase::refresh`]), then reads one snapshot, within a time budget.
//!
//! Pages (each with a JSON twin: a `.json` suffix or `Accept: application/json`):
//!
//! | URL | page |
//! |---|---|
//! | `/` | the database: collections, counts, sizes, indexes; tables beside it |
//! | `/c/NAME?after=ID&limit=N&jump=ID` | a collection's documents in id order, by cursor; schema summary |
//! | `/c/NAME/d/ID` | one document |
//! | `/c/NAME/query?filter=..&sort=..&limit=..&projection=..&facet=..` | a query, its plan, facets |
//! | `/c/NAME.jsonl`, `.csv`, `/c/NAME/query.jsonl?..`, `.csv` | the whole result, streamed |
//! | `/t/NAME?key=..&prefix=..&from=..&to=..&after=..` | a table or table set in the folder |
//!
//! The layout of the modules: [`route`] (URL to page, checked), [`html`] (escaping and
//! drawing), `pages/` (one module per page), `server` (the pool and the answers).

mod assets;
pub mod error;
pub mod html;
mod kick;
mod options;
mod pages;
pub mod route;
mod server;

pub use error::ServeError;
pub use options::Options;
pub use server::Server;
