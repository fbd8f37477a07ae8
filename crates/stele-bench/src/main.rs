//! `stele-bench`: whole-run benchmarks of Stele against its peers, side by side in one process.
//!
//! `stele-bench doc` runs the document-format benchmark (`--quick` for the CI smoke run). The
//! sorted-table benchmark is the separate `table_bench` binary.

mod doc;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(about = "Benchmarks of Stele against its peers")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Document format: JSON to document, field reads, document to JSON, sizes, wide objects,
    /// string compression threshold; vs serde_json, sonic-rs, simd-json, MessagePack, BSON, CBOR.
    Doc(doc::Args),
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Doc(args) => doc::run(&args),
    }
}
