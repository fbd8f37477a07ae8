//! Database commands, one file each: `import`, `get`, `put`, `delete`, `export`, `compact`,
//! `stats`; what they share (opening, closing, creating) is in `shared.rs`.

mod compact;
mod delete;
mod export;
mod export_arrow;
mod get;
mod import;
mod put;
mod shared;
mod stats;

pub use compact::{CompactArgs, compact};
pub use delete::{DeleteArgs, delete};
pub use export::{ExportArgs, export};
pub use get::{GetArgs, get};
pub use import::{ImportArgs, import};
pub use put::{PutArgs, put};
pub(crate) use shared::{
    close_db, id_json, json_str, open_existing, open_reading, require_collection, require_in,
    write_creating,
};
pub use stats::{StatsArgs, stats};
