//! What `stele table build` reads: its arguments, its input (lines, TSV, JSON Lines) as key
//! and value pairs, and the sorter or writer they go to.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use stele_table::{DuplicatePolicy, Sorter, SorterOptions, TableBuilder, TableOptions};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum InputFormat {
    /// One key per line, empty values.
    Lines,
    /// `key<TAB>value` per line (split at the first tab).
    Tsv,
    /// One JSON object per line; the key is `--key-field`, the value the object as a Stele
    /// document.
    Jsonl,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Duplicates {
    /// Fail, naming the key (default).
    Reject,
    /// Keep the last value given for a key.
    Last,
    /// Keep the first value given for a key.
    First,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  stele table build names.txt -o tables/                       one key per line, any order
  stele table build pairs.tsv --format tsv --memory 256MiB -o tables/
  stele table build docs.jsonl --format jsonl --key-field id -o tables/
  zstd -dc keys.txt.zst | stele table build - --duplicates last -o tables/

The table is written atomically into the output folder and named by the hash of its content;
the path is printed when done.")]
pub struct BuildArgs {
    /// Input file, or - for standard input.
    pub(crate) input: PathBuf,
    /// Folder to write the table into (created if missing).
    #[arg(short, long, default_value = ".")]
    pub(crate) output: PathBuf,
    /// How to read the input.
    #[arg(long, value_enum, default_value = "lines")]
    pub(crate) format: InputFormat,
    /// JSON Lines: the field holding each document's key (a string or a number).
    #[arg(long)]
    pub(crate) key_field: Option<String>,
    /// Memory budget for sorting (at least 64KiB); beyond it sorted runs spill to disk. A
    /// size: 65536 (bytes), 64KiB, 256MiB, 1.5GiB (K, M, G alone: KiB, MiB, GiB; KB, MB, GB:
    /// powers of 1000).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = crate::size::at_least(stele_table::MIN_MEMORY_BUDGET_BYTES))]
    pub(crate) memory: usize,
    /// What to do with a key given more than once.
    #[arg(long, value_enum, default_value = "reject")]
    pub(crate) duplicates: Duplicates,
    /// The input is already sorted by key: stream it (fails at the first key out of order).
    #[arg(long)]
    pub(crate) sorted: bool,
    /// Build a table set of N shards of about equal entry counts: the input is sorted once
    /// within --memory and the sorted stream cut into a table each, then the manifest is
    /// written; prints the manifest's path.
    #[arg(long, value_parser = crate::say::at_least_one())]
    pub(crate) shards: Option<usize>,
    /// With --shards: the manifest's name in the output folder, without `.sts`.
    #[arg(long, default_value = "set", requires = "shards")]
    pub(crate) set_name: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `--duplicates` asks of the sorter or builder.
pub(crate) fn duplicate_policy(args: &BuildArgs) -> DuplicatePolicy {
    match args.duplicates {
        Duplicates::Reject => DuplicatePolicy::Reject,
        Duplicates::Last => DuplicatePolicy::KeepLast,
        Duplicates::First => DuplicatePolicy::KeepFirst,
    }
}

/// The sorter of `args`: `memory` bytes, spilling into the output folder.
pub(crate) fn sorter(args: &BuildArgs, memory: usize) -> stele_table::Result<Sorter> {
    Sorter::new(
        SorterOptions::default()
            .memory_budget_bytes(memory)
            .temp_dir(&args.output)
            .duplicates(duplicate_policy(args)),
    )
}

/// Where build pairs go: the sorter for any order, the builder for sorted input.
pub(crate) enum Sink {
    Sorter(Box<Sorter>),
    Builder(Box<TableBuilder>),
}

impl Sink {
    /// The sink of `args` (a builder with `--sorted`, else a sorter of `memory` bytes that
    /// spills into the output folder).
    pub(crate) fn new(args: &BuildArgs, memory: usize) -> Result<Sink> {
        let policy = duplicate_policy(args);
        Ok(if args.sorted {
            Sink::Builder(Box::new(TableBuilder::new(
                &args.output,
                TableOptions::default().duplicates(policy),
            )?))
        } else {
            Sink::Sorter(Box::new(sorter(args, memory)?))
        })
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> stele_table::Result<()> {
        match self {
            Sink::Sorter(s) => s.add(key, value),
            Sink::Builder(b) => b.add(key, value),
        }
    }

    /// Writes the table (into the output folder of `args`).
    pub(crate) fn finish(self, args: &BuildArgs) -> Result<stele_table::TableInfo> {
        match self {
            Sink::Sorter(s) => s.finish(&args.output),
            Sink::Builder(b) => b.finish(),
        }
        .map_err(|e| with_hint(e, format!("building a table from {}", args.input.display())))
    }
}

/// Adds `context` and, for the errors a flag fixes, the flag to use.
fn with_hint(e: stele_table::Error, context: String) -> anyhow::Error {
    let hint = match e {
        stele_table::Error::OutOfOrder { .. } => {
            " (drop --sorted: without it the input may be in any order)"
        }
        _ => "",
    };
    anyhow::Error::new(e).context(format!("{context}{hint}"))
}

pub(crate) fn open_input(path: &Path) -> Result<(Box<dyn Read>, Option<u64>)> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(std::io::stdin().lock()), None));
    }
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(file), len))
}

/// The progress bar of reading the input of `args`: a spinner for standard input or
/// anything else that is not a regular file. The input is not opened here (a pipe opened
/// and closed before it is read would lose what its writer sent, or block).
pub(crate) fn progress_bar(args: &BuildArgs) -> Result<ProgressBar> {
    let len = if args.input.as_os_str() == "-" {
        None
    } else {
        let meta = std::fs::metadata(&args.input)
            .with_context(|| format!("opening {}", args.input.display()))?;
        meta.is_file().then_some(meta.len())
    };
    Ok(progress(len))
}

fn progress(len: Option<u64>) -> ProgressBar {
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    let style = ProgressStyle::with_template(
        "{spinner} {elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
    )
    .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

/// The (key, value) of one non-empty input line; a JSON Lines document is converted into
/// `doc`, which the value then borrows.
pub(crate) fn pair<'a>(
    args: &BuildArgs,
    writer: &mut stele_doc::DocumentWriter,
    text: &'a [u8],
    doc: &'a mut Vec<u8>,
) -> Result<(Cow<'a, [u8]>, &'a [u8])> {
    Ok(match args.format {
        InputFormat::Lines => (Cow::Borrowed(text), b""),
        InputFormat::Tsv => {
            let Some(tab) = text.iter().position(|&b| b == b'\t') else {
                bail!("no tab; TSV lines are key<TAB>value");
            };
            (Cow::Borrowed(&text[..tab]), &text[tab + 1..])
        }
        InputFormat::Jsonl => {
            let field = args.key_field.as_deref().unwrap_or_default();
            *doc = writer.from_json(text)?;
            let view = stele_doc::Document::new(doc.as_slice())?;
            let key = match view.get(field) {
                Some(stele_doc::Value::String(s)) => s.to_cow().into_owned().into_bytes(),
                Some(v @ (stele_doc::Value::Int(_) | stele_doc::Value::UInt(_))) => {
                    v.to_json().into_bytes()
                }
                Some(other) => bail!(
                    "key field {field:?} is a {}, expected a string or an integer",
                    other.type_name()
                ),
                None => bail!("no key field {field:?}"),
            };
            (Cow::Owned(key), doc.as_slice())
        }
    })
}

/// Where `feed` hands each (key, value) pair.
pub(crate) type AddPair<'a> = dyn FnMut(&[u8], &[u8]) -> stele_table::Result<()> + 'a;

/// Reads the input line by line, handing each (key, value) pair to `add`. Returns the
/// number of lines.
pub(crate) fn feed(args: &BuildArgs, bar: &ProgressBar, add: &mut AddPair<'_>) -> Result<u64> {
    let (input, _) = open_input(&args.input)?;
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut line = Vec::new();
    let mut writer = stele_doc::DocumentWriter::new();
    let mut doc = Vec::new();
    let mut line_no = 0u64;
    let name = args.input.display();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {name}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        bar.inc(n as u64);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            continue;
        }
        let (key, value) = pair(args, &mut writer, text, &mut doc)
            .with_context(|| format!("{name}, line {line_no}"))?;
        add(&key, value).map_err(|e| with_hint(e, format!("{name}, line {line_no}")))?;
    }
    Ok(line_no)
}
