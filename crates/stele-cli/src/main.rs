//! `stele`: the command line of the Stele storage engine.
//!
//! Each group of subcommands lives in its own module; this file parses the command line,
//! dispatches, and turns errors into a message and an exit code.

mod backup_cmd;
mod db_cmd;
mod doc_cmd;
mod io;
mod query_cmd;
mod say;
mod serve_cmd;
mod set_cmd;
mod size;
mod table_cmd;
mod tour;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Stele: an embedded storage engine for JSON documents and large read-mostly data sets.
///
/// Exit codes: 0 success, 1 the command failed (the message says why and how to fix it),
/// 2 the command line is wrong.
#[derive(Debug, Parser)]
#[command(name = "stele", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert JSON to a Stele document or a document back to JSON.
    Convert(doc_cmd::ConvertArgs),
    /// Show how a document's bytes are laid out, or read a value from it by path.
    Inspect(doc_cmd::InspectArgs),
    /// Sorted tables: build from any input with bounded memory, read through mmap.
    #[command(subcommand)]
    Table(table_cmd::TableCommand),
    /// Import a JSON array, JSON Lines or a folder of .json files into a collection.
    Import(db_cmd::ImportArgs),
    /// Print documents by id.
    Get(db_cmd::GetArgs),
    /// Insert or replace one document.
    Put(db_cmd::PutArgs),
    /// Delete documents by id.
    Delete(db_cmd::DeleteArgs),
    /// Write a collection as JSON Lines, keys in their original order.
    Export(db_cmd::ExportArgs),
    /// Merge every collection's tables into one table each.
    Compact(db_cmd::CompactArgs),
    /// Show a database's collections: documents, layers, bytes on disk, compression ratio and dictionaries.
    Stats(db_cmd::StatsArgs),
    /// Find or count documents: a filter on any fields (MongoDB's JSON form), sort, skip, limit,
    /// projection; --explain shows the plan.
    Query(query_cmd::QueryArgs),
    /// Run an aggregation pipeline ($match $group $sort $limit $skip $project $count $unwind).
    Aggregate(query_cmd::AggregateArgs),
    /// Print the distinct values of a field, optionally of the documents matching a filter.
    Distinct(query_cmd::DistinctArgs),
    /// Secondary indexes on one or more fields (each ascending or descending): create, list, drop.
    #[command(subcommand)]
    Index(query_cmd::IndexCommand),
    /// Back a database up while its writer runs: a new backup, or only what is new since the last.
    Backup(backup_cmd::BackupArgs),
    /// Check every file of a database or backup; each problem with its file and offset.
    Verify(backup_cmd::VerifyArgs),
    /// Ship a database's new tables and log records to a replica folder, once or continuously.
    Replicate(backup_cmd::ReplicateArgs),
    /// Make a new database from a backup at its latest version, a version or a time; --at lists them.
    Restore(backup_cmd::RestoreArgs),
    /// Look at a database in a web page (read-only, beside a live writer), with a JSON twin of each page.
    Serve(serve_cmd::ServeArgs),
    /// Run the guided tour on the bundled sample: convert, read fields, sizes and timings.
    Tour(tour::TourArgs),
    /// Print shell completions for bash, zsh, fish, elvish or powershell.
    #[command(
        after_help = "Example:\n  stele completions bash > ~/.local/share/bash-completion/completions/stele"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Restores the default SIGPIPE action, so `stele ... | head` ends quietly like other Unix
/// tools instead of failing on a closed pipe (Rust ignores SIGPIPE by default).
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any thread starts; `signal` with SIG_DFL installs
    // no handler code, it only resets the disposition of SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => doc_cmd::convert(&args),
        Command::Inspect(args) => doc_cmd::inspect(&args),
        Command::Table(cmd) => table_cmd::run(&cmd),
        Command::Import(args) => db_cmd::import(&args),
        Command::Get(args) => db_cmd::get(&args),
        Command::Put(args) => db_cmd::put(&args),
        Command::Delete(args) => db_cmd::delete(&args),
        Command::Export(args) => db_cmd::export(&args),
        Command::Compact(args) => db_cmd::compact(&args),
        Command::Stats(args) => db_cmd::stats(&args),
        Command::Query(args) => query_cmd::query(&args),
        Command::Aggregate(args) => query_cmd::aggregate(&args),
        Command::Distinct(args) => query_cmd::distinct(&args),
        Command::Index(cmd) => query_cmd::index(&cmd),
        Command::Backup(args) => backup_cmd::backup(&args),
        Command::Verify(args) => backup_cmd::verify(&args),
        Command::Replicate(args) => backup_cmd::replicate(&args),
        Command::Restore(args) => backup_cmd::restore(&args),
        Command::Serve(args) => serve_cmd::run(&args),
        Command::Tour(args) => tour::run(&args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "stele", &mut std::io::stdout());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", say::error_line(&e));
            ExitCode::from(1)
        }
    }
}
