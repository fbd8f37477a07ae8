//! `stele table ...`: build sorted tables from lines, TSV or JSON Lines, and read them.

pub(crate) mod input;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

use crate::set_cmd::Source;
use input::{BuildArgs, InputFormat, Sink, feed, progress_bar};

#[derive(Debug, Subcommand)]
pub enum TableCommand {
    /// Build a sorted table from a file of keys, TSV pairs or JSON Lines, in any order.
    Build(BuildArgs),
    /// Look up keys in a table or a table set (`.sts`); prints `key<TAB>value` for each key found.
    Get(GetArgs),
    /// Print entries in a key range.
    Range(RangeArgs),
    /// Print entries whose key starts with a prefix.
    Prefix(PrefixArgs),
    /// Show a table's counts and sizes (checks every block's checksum with --verify).
    Stats(StatsArgs),
    /// Write a table set's manifest over shard tables built elsewhere.
    Commit(crate::set_cmd::CommitArgs),
}

pub fn build(args: &BuildArgs) -> Result<()> {
    if matches!(args.format, InputFormat::Jsonl) && args.key_field.is_none() {
        bail!("--format jsonl needs --key-field NAME: the field that holds each document's key");
    }
    if args.shards.is_some() {
        return crate::set_cmd::build_set(args);
    }
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut sink = Sink::new(args, args.memory)?;
    let bar = progress_bar(args)?;
    let started = std::time::Instant::now();
    feed(args, &bar, &mut |k, v| sink.add(k, v))?;
    bar.set_message("sorting and writing");
    let info = sink.finish(args)?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        let v = serde_json::json!({
            "path": info.path.display().to_string(),
            "entries": info.entries,
            "blocks": info.blocks,
            "file_bytes": info.file_bytes,
            "raw_key_bytes": info.raw_key_bytes,
            "raw_value_bytes": info.raw_value_bytes,
            "seconds": seconds,
        });
        println!("{v}");
    } else {
        println!("{}", info.path.display());
        eprintln!(
            "{}, {} ({:.2} of raw keys + values), {seconds:.2} s",
            crate::say::count(info.entries, "entry", "entries"),
            crate::say::count(info.file_bytes, "byte", "bytes"),
            info.file_bytes as f64 / (info.raw_key_bytes + info.raw_value_bytes).max(1) as f64
        );
    }
    Ok(())
}

fn open(path: &Path) -> Result<Source> {
    Source::open(path)
}

/// Writes `key<TAB>value`: values that are Stele documents print as JSON, other UTF-8 as is,
/// anything else as hex.
fn print_entry(out: &mut impl Write, key: &[u8], value: &[u8]) -> Result<()> {
    out.write_all(key)?;
    if !value.is_empty() {
        out.write_all(b"\t")?;
        if value.first() == Some(&stele_doc::format::HEADER_BYTE)
            && let Ok(doc) = stele_doc::Document::new(value)
        {
            out.write_all(doc.to_json().as_bytes())?;
        } else if let Ok(text) = std::str::from_utf8(value) {
            out.write_all(text.as_bytes())?;
        } else {
            for b in value {
                write!(out, "{b:02x}")?;
            }
        }
    }
    out.write_all(b"\n")?;
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele table get tables/3f2a...stt react lodash
  stele table get tables/3f2a...stt missing || echo 'not found (exit code 1)'")]
pub struct GetArgs {
    /// The table file, or a table set's manifest (`.sts`).
    table: PathBuf,
    /// Keys to look up.
    #[arg(required = true)]
    keys: Vec<String>,
}

pub fn get(args: &GetArgs) -> Result<()> {
    let table = open(&args.table)?;
    let mut out = std::io::stdout().lock();
    let mut missing = Vec::new();
    for key in &args.keys {
        match table.get(key.as_bytes())? {
            Some(value) => print_entry(&mut out, key.as_bytes(), value)?,
            None => missing.push(key.as_str()),
        }
    }
    out.flush()?;
    if !missing.is_empty() {
        bail!(
            "not found in {}: {}",
            args.table.display(),
            missing.join(", ")
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele table range T.stt --from a --to b          keys in [a, b)
  stele table range T.stt --from x --reverse -n 5  the last 5 keys from x on")]
pub struct RangeArgs {
    /// The table file, or a table set's manifest (`.sts`).
    table: PathBuf,
    /// First key (inclusive); default the first key.
    #[arg(long)]
    from: Option<String>,
    /// End key (exclusive); default past the last key.
    #[arg(long)]
    to: Option<String>,
    /// At most this many entries (at least 1).
    #[arg(short = 'n', long, value_parser = crate::say::at_least_one())]
    limit: Option<usize>,
    /// Largest key first: walk the range backwards, in descending key order (with -n, the
    /// last N keys of the range).
    #[arg(long)]
    reverse: bool,
}

fn print_iter<'t>(
    iter: impl DoubleEndedIterator<Item = stele_table::Result<stele_table::Entry<'t>>>,
    reverse: bool,
    limit: Option<usize>,
) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let limit = limit.unwrap_or(usize::MAX);
    let iter: Box<dyn Iterator<Item = _>> = if reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    for entry in iter.take(limit) {
        let (key, value) = entry?;
        print_entry(&mut out, &key, value)?;
    }
    out.flush()?;
    Ok(())
}

pub fn range(args: &RangeArgs) -> Result<()> {
    use std::ops::Bound;
    let table = open(&args.table)?;
    let lo = args
        .from
        .as_deref()
        .map_or(Bound::Unbounded, |k| Bound::Included(k.as_bytes()));
    let hi = args
        .to
        .as_deref()
        .map_or(Bound::Unbounded, |k| Bound::Excluded(k.as_bytes()));
    if let (Some(from), Some(to)) = (&args.from, &args.to)
        && from > to
    {
        bail!(
            "--to {to:?} comes before --from {from:?}: swap them (keys in [from, to) are listed)"
        );
    }
    print_iter(table.range(lo, hi), args.reverse, args.limit)
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele table prefix T.stt @babel/ -n 20")]
pub struct PrefixArgs {
    /// The table file, or a table set's manifest (`.sts`).
    table: PathBuf,
    /// Key prefix.
    prefix: String,
    /// At most this many entries (at least 1).
    #[arg(short = 'n', long, value_parser = crate::say::at_least_one())]
    limit: Option<usize>,
}

pub fn prefix(args: &PrefixArgs) -> Result<()> {
    let table = open(&args.table)?;
    print_iter(table.prefix(args.prefix.as_bytes()), false, args.limit)
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele table stats T.stt
  stele table stats T.stt --verify --json")]
pub struct StatsArgs {
    /// The table file, or a table set's manifest (`.sts`).
    table: PathBuf,
    /// Check every block's checksum (reads the whole file).
    #[arg(long)]
    verify: bool,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

pub fn stats(args: &StatsArgs) -> Result<()> {
    let table = match open(&args.table)? {
        Source::Table(t) => *t,
        Source::Set(set) => return crate::set_cmd::set_stats(&set, args.verify, args.json),
    };
    if args.verify {
        table
            .verify_all()
            .with_context(|| format!("verifying {}", args.table.display()))?;
    }
    let s = table.stats();
    if args.json {
        let v = serde_json::json!({
            "entries": s.entries,
            "blocks": s.blocks,
            "block_size_bytes": s.block_size_bytes,
            "restart_interval": s.restart_interval,
            "file_bytes": s.file_bytes,
            "index_bytes": s.index_bytes,
            "raw_key_bytes": s.raw_key_bytes,
            "raw_value_bytes": s.raw_value_bytes,
            "verified": args.verify,
        });
        println!("{v}");
    } else {
        println!("entries          {}", s.entries);
        println!(
            "blocks           {} of {} bytes",
            s.blocks, s.block_size_bytes
        );
        println!("restart interval {}", s.restart_interval);
        println!("file             {} bytes", s.file_bytes);
        println!("index            {} bytes", s.index_bytes);
        println!(
            "raw keys/values  {} / {} bytes (file is {:.2} of raw)",
            s.raw_key_bytes,
            s.raw_value_bytes,
            s.file_bytes as f64 / (s.raw_key_bytes + s.raw_value_bytes).max(1) as f64
        );
        if args.verify {
            println!("checksums        all blocks verified");
        }
    }
    Ok(())
}

pub fn run(cmd: &TableCommand) -> Result<()> {
    match cmd {
        TableCommand::Build(a) => build(a),
        TableCommand::Get(a) => get(a),
        TableCommand::Range(a) => range(a),
        TableCommand::Prefix(a) => prefix(a),
        TableCommand::Stats(a) => stats(a),
        TableCommand::Commit(a) => crate::set_cmd::commit(a),
    }
}
