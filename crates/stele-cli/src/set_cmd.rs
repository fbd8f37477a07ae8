//! Table sets on the command line: `stele table build --shards N` (split points from a
//! sample, one pass over the input that sorts each key range into its own table, then the
//! manifest),
//! `stele table commit`, and reading a table or a set alike.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use clap::Args;
use stele_table::{Entry, SET_EXTENSION, SET_MAGIC, Table, TableSet};

use crate::say::count;
use crate::table_cmd::{BuildArgs, Sink, feed, pair};

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

/// Sorts every partition of `splits` into its own table in this process, reading the input
/// once: each key goes to the sorter of its range, the memory budget (`--memory`) shared
/// among them. Returns the tables written (an empty range writes none).
fn sort_partitions(
    args: &BuildArgs,
    splits: &[Vec<u8>],
    bar: &indicatif::ProgressBar,
) -> Result<Vec<PathBuf>> {
    let parts = splits.len() + 1;
    // Each sorter sorts and spills with every core (rayon), so one pass over the input
    // keeps both busy; worker processes would each have to parse the whole input.
    let memory = (args.memory / parts).max(MIN_SORTER_BYTES);
    let mut sinks = (0..parts)
        .map(|_| Sink::new(args, memory))
        .collect::<Result<Vec<_>>>()?;
    feed(args, bar, &mut |k, v| {
        let p = TableSet::partition(splits, k);
        match sinks.get_mut(p) {
            Some(sink) => sink.add(k, v),
            None => Ok(()),
        }
    })?;
    // The ranges' merges and writes, on every core: one range's merge is sequential.
    let mut queue: Vec<(usize, Sink)> = sinks.into_iter().enumerate().rev().collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(queue.len());
    let queue = Mutex::new(std::mem::take(&mut queue));
    let done = Mutex::new(Vec::with_capacity(parts));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().map_or(None, |mut q| q.pop());
                    let Some((i, sink)) = next else { break };
                    let result = sink.finish(args);
                    let failed = result.is_err();
                    if let Ok(mut done) = done.lock() {
                        done.push((i, result));
                    }
                    if failed {
                        // Stop the others early: this build fails whatever they do.
                        if let Ok(mut q) = queue.lock() {
                            q.clear();
                        }
                    }
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a thread writing a shard panicked"))?;
    done.sort_by_key(|(i, _)| *i);
    let mut paths = Vec::new();
    let mut first_error = None;
    for (_, result) in done {
        match result {
            Ok(info) if info.entries > 0 => paths.push(info.path),
            // An empty range: its empty table names no keys and would only be skipped.
            Ok(info) => {
                let _ = std::fs::remove_file(&info.path);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        // No manifest will name the shards written (a duplicate key found while merging
        // another range, a full disk): they go too.
        for path in &paths {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    Ok(paths)
}

/// The least memory a partition's sorter gets whatever `--memory` says: below it, runs
/// get so small that merging them costs more than the memory saved.
const MIN_SORTER_BYTES: usize = 8 << 20;

/// `stele table build --shards N`: split points from a sample of the input, one pass that
/// sorts each key range into its own table, then the manifest.
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
