//! `stele index create|list|drop`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::db_cmd::{
    close_db, json_str, open_existing, open_reading, require_collection, require_in,
};

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Create an index on one or more fields, each ascending or descending, and build it for
    /// the documents already there.
    #[command(after_help = "Examples:
  stele index create shop.db orders by_customer customer
  stele index create shop.db orders by_status_total status,total:desc
  stele index create shop.db orders by_sku_created items.sku created:desc

Fields are dotted paths (an array's elements are indexed one entry each) separated by commas
or spaces, each with an optional direction: `:desc` (or `:-1`) and `:asc` (the default).
From then on every write keeps the index current. A query uses it when its filter has an
equality on the first fields (then a range on the next), or when its sort follows them in
the index's directions or all reversed: put equality fields first, then the sort, then
range fields. `stele query --explain` says which index was chosen and why.")]
    Create {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The index's name (letters, digits, '_', '-', '.').
        name: String,
        /// The fields in key order: `a,b:desc` or `a b:desc`.
        #[arg(required = true, value_delimiter = ',')]
        fields: Vec<String>,
    },
    /// List a collection's indexes (name and fields, with their directions).
    #[command(after_help = "Example:\n  stele index list shop.db orders --json")]
    List {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// One JSON object per index.
        #[arg(long)]
        json: bool,
    },
    /// Drop an index.
    #[command(after_help = "Example:\n  stele index drop shop.db orders by_customer")]
    Drop {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The index's name.
        name: String,
    },
}

pub fn index(cmd: &IndexCommand) -> Result<()> {
    match cmd {
        IndexCommand::Create {
            db,
            collection,
            name,
            fields,
        } => {
            let database = open_existing(db)?;
            require_collection(&database, db, collection)?;
            let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
            database
                .create_index(collection, name, &refs)
                .with_context(|| format!("creating index {name:?} on collection {collection:?}"))?;
            close_db(database, db)?;
            eprintln!("index {name:?} on {collection}: {}", fields.join(", "));
        }
        IndexCommand::List {
            db,
            collection,
            json,
        } => {
            let snap = open_reading(db)?.snapshot();
            require_in(&snap, db, collection)?;
            let mut w = std::io::stdout().lock();
            for def in snap.indexes(collection) {
                let fields = def.field_specs();
                if *json {
                    let list: Vec<String> = fields.iter().map(|f| json_str(f)).collect();
                    writeln!(
                        w,
                        "{{\"name\":{},\"fields\":[{}]}}",
                        json_str(&def.name),
                        list.join(",")
                    )?;
                } else {
                    writeln!(w, "{}\t{}", def.name, fields.join(", "))?;
                }
            }
        }
        IndexCommand::Drop {
            db,
            collection,
            name,
        } => {
            let database = open_existing(db)?;
            require_collection(&database, db, collection)?;
            database
                .drop_index(collection, name)
                .with_context(|| format!("dropping index {name:?} of collection {collection:?}"))?;
            close_db(database, db)?;
        }
    }
    Ok(())
}
