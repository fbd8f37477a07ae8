//! Table sets on the command line: `stele table build --shards N` (split points from a
//! sample, the input sorted once and cut at the ranges' ends into a table each, then the
//! manifest),
//! `stele table commit`, and reading a table or a set alike.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use stele_table::{Entry, SET_EXTENSION, SET_MAGIC, Table, TableBuilder, TableOptions, TableSet};

use crate::say::count;
use crate::table_cmd::{BuildArgs, duplicate_policy, feed, pair, sorter};

/// A table file or a table set's manifest, read alike.
pub enum Source {
    /// One table.
    Table(Box<Table>),
    /// A set of tables.
    Set(TableSet),
}

/// Entries of a [`Source`] in key order, both ways.
pub type Entries<'s> = Box<dyn DoubleEndedIterator<Item = stele_table::Result<Entry<'s>>> + 's>;

impl Source {
    /// Opens `path`: a set if it is named `*.sts` or starts with the set magic, else a table.
    pub fn open(path: &Path) -> Result<Source> {
        let is_set = path.extension().is_some_and(|e| e == SET_EXTENSION) || {
            let mut magic = [0u8; 8];
            std::fs::File::open(path)
                .and_then(|mut f| f.read_exact(&mut magic))
                .is_ok_and(|()| magic == SET_MAGIC)
        };
        if is_set {
            let set = TableSet::open(path)
                .with_context(|| format!("opening table set {}", path.display()))?;
            return Ok(Source::Set(set));
        }
        let table =
            Table::open(path).with_context(|| format!("opening table {}", path.display()))?;
        Ok(Source::Table(Box::new(table)))
    }

    pub fn get(&self, key: &[u8]) -> stele_table::Result<Option<&[u8]>> {
        match self {
            Source::Table(t) => t.get(key),
            Source::Set(s) => s.get(key),
        }
    }

    pub fn range<'s>(&'s self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Entries<'s> {
        match self {
            Source::Table(t) => Box::new(t.range((lo, hi))),
            Source::Set(s) => Box::new(s.range::<&[u8], _>((lo, hi))),
        }
    }

    pub fn prefix<'s>(&'s self, prefix: &[u8]) -> Entries<'s> {
        match self {
            Source::Table(t) => Box::new(t.prefix(prefix)),
            Source::Set(s) => Box::new(s.prefix(prefix)),
        }
    }
}

/// Keys sampled for split points per shard: partitions come out within a few percent.
const SAMPLE_PER_SHARD: usize = 4096;
/// Files up to this size are sampled whole (every key) rather than at random offsets.
const SAMPLE_WHOLE_BYTES: u64 = 16 << 20;

/// Keys of `path` to plan split points from: every key of a small file, else the line after
/// each of `n` random offsets (a slight lean toward lines after long ones, harmless for
/// balance).
fn sample_keys(args: &BuildArgs, path: &Path, n: usize) -> Result<Vec<Vec<u8>>> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = file.metadata()?.len();
    let mut writer = stele_doc::DocumentWriter::new();
    let mut doc = Vec::new();
    let mut keys = Vec::new();
    let mut line = Vec::new();
    let mut key_of = |line: &[u8], keys: &mut Vec<Vec<u8>>| {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        // A line that does not parse is reported by the worker that reads it, with its number.
        if !text.is_empty()
            && let Ok((key, _)) = pair(args, &mut writer, text, &mut doc)
        {
            keys.push(key.into_owned());
        }
    };
    if len <= SAMPLE_WHOLE_BYTES {
        let mut reader = BufReader::new(file);
        while reader.read_until(b'\n', &mut line)? > 0 {
            key_of(&line, &mut keys);
            line.clear();
        }
        return Ok(keys);
    }
    // A fixed seed: the same input gives the same split points, so a re-run builds the same
    // shard files.
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ len;
    for _ in 0..n {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        file.seek(SeekFrom::Start(z % len))?;
        let mut reader = BufReader::with_capacity(4096, &mut file);
        line.clear();
        reader.read_until(b'\n', &mut line)?; // the rest of the line the offset fell in
        line.clear();
        if reader.read_until(b'\n', &mut line)? > 0 {
            key_of(&line, &mut keys);
        }
    }
    Ok(keys)
}

/// Sorts the input once, as one table would be (one sorter with the whole of `--memory`,
/// spilling beyond it), and cuts the sorted stream at the split points into a table per
/// range. Sorting each range apart costs more: 25 sorters of 1/25 of the budget spill
/// 25 times as many runs. Returns the tables written (an empty range writes none).
fn sort_partitions(
    args: &BuildArgs,
    splits: &[Vec<u8>],
    bar: &indicatif::ProgressBar,
) -> Result<Vec<PathBuf>> {
    let mut ranges = RangeWriter {
        args,
        splits,
        current: None,
        paths: Vec::new(),
    };
    let written = if args.sorted {
        // Sorted input: straight into the ranges' tables.
        feed(args, bar, &mut |k, v| ranges.add(k, v)).map(|_| ())
    } else {
        let mut sorter = sorter(args, args.memory)?;
        feed(args, bar, &mut |k, v| sorter.add(k, v)).and_then(|_| {
            bar.set_message("sorting and writing");
            sorter
                .finish_each(&mut |k, v| ranges.add(k, v))
                .map(|_| ())
                .map_err(|e| {
                    anyhow::Error::new(e)
                        .context(format!("building tables from {}", args.input.display()))
                })
        })
    };
    match written.and_then(|()| ranges.close_current().map_err(anyhow::Error::new)) {
        Ok(()) => Ok(ranges.paths),
        Err(e) => {
            // No manifest will name the shards written so far (a duplicate key, a full
            // disk): they go too.
            for path in &ranges.paths {
                let _ = std::fs::remove_file(path);
            }
            Err(e)
        }
    }
}

/// Pairs in ascending key order, written into one table per range of the split points.
struct RangeWriter<'a> {
    args: &'a BuildArgs,
    splits: &'a [Vec<u8>],
    /// The range being written and its table.
    current: Option<(usize, TableBuilder)>,
    /// The tables finished, in key order.
    paths: Vec<PathBuf>,
}

impl RangeWriter<'_> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> stele_table::Result<()> {
        let p = TableSet::partition(self.splits, key);
        match &mut self.current {
            Some((q, builder)) if *q == p => builder.add(key, value),
            _ => {
                self.close_current()?;
                let opts = TableOptions::default().duplicates(duplicate_policy(self.args));
                let mut builder = TableBuilder::new(&self.args.output, opts)?;
                builder.add(key, value)?;
                self.current = Some((p, builder));
                Ok(())
            }
        }
    }

    /// Finishes the range being written, if any.
    fn close_current(&mut self) -> stele_table::Result<()> {
        if let Some((_, builder)) = self.current.take() {
            let info = builder.finish()?;
            if info.entries > 0 {
                self.paths.push(info.path);
            } else {
                let _ = std::fs::remove_file(&info.path);
            }
        }
        Ok(())
    }
}

/// `stele table build --shards N`: split points from a sample of the input, the input
/// sorted once and cut at them into a table per range, then the manifest.
pub fn build_set(args: &BuildArgs) -> Result<()> {
    let shards = args.shards.unwrap_or(1);
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let started = std::time::Instant::now();
    // Standard input is read twice (a sample, then everything): spool it into a file first.
    let spooled;
    let input_args;
    let args = if args.input.as_os_str() == "-" {
        let tmp = tempfile::NamedTempFile::new_in(&args.output)
            .with_context(|| format!("creating a temporary file in {}", args.output.display()))?;
        std::io::copy(&mut std::io::stdin().lock(), &mut tmp.as_file())
            .context("reading standard input")?;
        spooled = tmp;
        input_args = BuildArgs {
            input: spooled.path().to_path_buf(),
            ..args.clone()
        };
        &input_args
    } else {
        args
    };
    let sample = sample_keys(args, &args.input, SAMPLE_PER_SHARD * shards)?;
    let splits = TableSet::plan(&sample, shards);
    let manifest = args
        .output
        .join(format!("{}.{SET_EXTENSION}", args.set_name));
    let bar = crate::table_cmd::progress_bar(args)?;
    let paths = sort_partitions(args, &splits, &bar).with_context(|| {
        format!(
            "building table set {} (no manifest was written)",
            manifest.display()
        )
    })?;
    bar.finish_and_clear();
    let set = TableSet::commit(&manifest, &paths, &splits)
        .with_context(|| format!("committing table set {}", manifest.display()))?;
    report(&set, args.json, started.elapsed().as_secs_f64());
    Ok(())
}

fn report(set: &TableSet, json: bool, seconds: f64) {
    let file_bytes: u64 = set.shards().iter().map(|s| s.file_bytes).sum();
    if json {
        let v = serde_json::json!({
            "path": set.path().display().to_string(),
            "shards": set.shards().len(),
            "entries": set.len(),
            "file_bytes": file_bytes,
            "seconds": seconds,
        });
        println!("{v}");
    } else {
        println!("{}", set.path().display());
        eprintln!(
            "{} in {}, {}, {seconds:.2} s",
            count(set.len(), "entry", "entries"),
            count(set.shards().len() as u64, "shard", "shards"),
            count(file_bytes, "byte", "bytes"),
        );
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Example:
  stele table commit out/users.sts out/*.stt     shards built elsewhere (Spark, Dask, scripts)

The shards must be content-named tables (<hash>.stt, as `stele table build` and the library
write them) in the manifest's folder, with key ranges that do not overlap. Committing the
same shards again writes the same manifest.")]
pub struct CommitArgs {
    /// The manifest to write (`NAME.sts`), beside the shards.
    manifest: PathBuf,
    /// The shard tables.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn commit(args: &CommitArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let none: &[&[u8]] = &[];
    let set = TableSet::commit(&args.manifest, &args.shards, none)
        .with_context(|| format!("committing table set {}", args.manifest.display()))?;
    report(&set, args.json, started.elapsed().as_secs_f64());
    Ok(())
}

/// `stele table stats` of a set.
pub fn set_stats(set: &TableSet, verify: bool, json: bool) -> Result<()> {
    if verify {
        set.verify_all()
            .with_context(|| format!("verifying {}", set.path().display()))?;
    }
    let file_bytes: u64 = set.shards().iter().map(|s| s.file_bytes).sum();
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "kind": "set",
            "shards": set.shards().len(),
            "entries": set.len(),
            "file_bytes": file_bytes,
            "verified": verify,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    writeln!(out, "table set        {} shards", set.shards().len())?;
    writeln!(out, "entries          {}", set.len())?;
    writeln!(out, "files            {file_bytes} bytes")?;
    for (i, s) in set.shards().iter().enumerate() {
        writeln!(
            out,
            "shard {i:<10} {}.stt  {} entries  {:?} .. {:?}",
            s.id,
            s.entries,
            s.first_key.escape_ascii().to_string(),
            s.last_key.escape_ascii().to_string()
        )?;
    }
    if verify {
        writeln!(out, "checksums        all blocks of all shards verified")?;
    }
    Ok(())
}
