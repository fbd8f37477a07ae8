//! `stele`: the command line of the Stele storage engine.
//!
//! Each group of subcommands lives in its own module; this file parses the command line,
//! dispatches, and turns errors into a message and an exit code.

mod doc_cmd;
mod io;
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
        Command::Tour(args) => tour::run(&args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "stele", &mut std::io::stdout());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
