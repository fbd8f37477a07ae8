//! `stele`: the command line of the Stele storage engine.
//!
//! Each group of subcommands lives in its own module; this file only parses the command line,
//! dispatches, and turns errors into a message and an exit code.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Stele: an embedded storage engine for JSON documents and large read-mostly data sets.
#[derive(Debug, Parser)]
#[command(name = "stele", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
