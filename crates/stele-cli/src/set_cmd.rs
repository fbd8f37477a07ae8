//! Table sets on the command line: `stele table build --shards N` (split points from a
//! sample, one worker process per core that sorts its key ranges, then the manifest),
//! `stele table commit`, and reading a table or a set alike.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use clap::Args;
use stele_table::{Entry, SET_EXTENSION, SET_MAGIC, Table, TableSet};

use crate::say::count;
use crate::table_cmd::{BuildArgs, Duplicates, InputFormat, Sink, feed, pair};

/// Cores this process may use (the cgroup quota included).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

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

fn write_splits(path: &Path, splits: &[Vec<u8>]) -> Result<()> {
    let mut out = Vec::new();
    for s in splits {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// Reads the split points file a driver wrote.
fn read_splits(file: &str) -> Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading split points {file}"))?;
    let mut splits = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some((len, tail)) = rest.split_first_chunk::<4>() {
        let len = u32::from_le_bytes(*len) as usize;
        let Some(key) = tail.get(..len) else {
            bail!("split points file {file} is cut off");
        };
        splits.push(key.to_vec());
        rest = &tail[len..];
    }
    if !rest.is_empty() {
        bail!("split points file {file} is cut off");
    }
    Ok(splits)
}

/// Worker `j` of `w` (`--worker J W FILE`): reads the input once and sorts each partition
/// `p` with `p % w == j` into its own table, the worker's memory (`--memory`) shared among
/// them; prints `{"paths": [...]}`.
pub fn run_worker(args: &BuildArgs, worker: &[String]) -> Result<()> {
    let [j, w, file] = worker else {
        bail!("--worker takes the worker number, the number of workers and the split points");
    };
    let (j, w): (usize, usize) = (
        j.parse().context("--worker: J is a number")?,
        w.parse().context("--worker: W is a number")?,
    );
    let splits = read_splits(file)?;
    let parts = splits.len() + 1;
    if w == 0 || j >= w {
        bail!("--worker {j} {w}: J must be below W");
    }
    let mine: Vec<usize> = (0..parts).filter(|p| p % w == j).collect();
    let memory = (args.memory / mine.len().max(1)).max(8 << 20);
    let mut sinks = mine
        .iter()
        .map(|_| Sink::new(args, memory))
        .collect::<Result<Vec<_>>>()?;
    let bar = indicatif::ProgressBar::hidden();
    feed(args, &bar, &mut |k, v| {
        let p = TableSet::partition(&splits, k);
        match sinks.get_mut(p / w) {
            Some(sink) if p % w == j => sink.add(k, v),
            _ => Ok(()),
        }
    })?;
    let mut paths = Vec::new();
    for sink in sinks {
        let info = sink.finish(args)?;
        if info.entries > 0 {
            paths.push(info.path.display().to_string());
        } else {
            // An empty range: its empty table names no keys and would only be skipped.
            let _ = std::fs::remove_file(&info.path);
        }
    }
    println!("{}", serde_json::json!({ "paths": paths }));
    Ok(())
}

/// `stele table build --shards N`: split points from a sample, one worker process per
/// partition (this program, reading the whole input and keeping its key range), then the
/// manifest.
pub fn build_set(args: &BuildArgs) -> Result<()> {
    let shards = args.shards.unwrap_or(1);
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let started = std::time::Instant::now();
    // Standard input is read once into a file the workers can each read.
    let spooled;
    let input = if args.input.as_os_str() == "-" {
        let tmp = tempfile::NamedTempFile::new_in(&args.output)
            .with_context(|| format!("creating a temporary file in {}", args.output.display()))?;
        std::io::copy(&mut std::io::stdin().lock(), &mut tmp.as_file())
            .context("reading standard input")?;
        spooled = tmp;
        spooled.path().to_path_buf()
    } else {
        args.input.clone()
    };
    let sample = sample_keys(args, &input, SAMPLE_PER_SHARD * shards)?;
    let splits = TableSet::plan(&sample, shards);
    let splits_file = tempfile::NamedTempFile::new_in(&args.output)
        .with_context(|| format!("creating a temporary file in {}", args.output.display()))?;
    write_splits(splits_file.path(), &splits)?;
    let exe = std::env::current_exe().context("finding the stele program to run workers")?;
    // One worker per core (at most one per range): each reads the input once, so more
    // workers than cores would only parse the input more often.
    let workers = cores().min(splits.len() + 1);
    let memory = (args.memory / workers).max(16 << 20);
    let mut children = Vec::new();
    for j in 0..workers {
        let mut cmd = Command::new(&exe);
        cmd.arg("table").arg("build").arg(&input);
        cmd.arg("--output").arg(&args.output);
        cmd.args(["--format", format_name(args.format)]);
        if let Some(k) = &args.key_field {
            cmd.args(["--key-field", k]);
        }
        cmd.args(["--memory", &memory.to_string()]);
        cmd.args(["--duplicates", duplicates_name(args.duplicates)]);
        if args.sorted {
            cmd.arg("--sorted");
        }
        cmd.arg("--worker")
            .arg(j.to_string())
            .arg(workers.to_string());
        cmd.arg(splits_file.path());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = cmd.spawn().context("starting a worker process")?;
        children.push(child);
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut failures = Vec::new();
    for (j, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().context("waiting for a worker")?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            failures.push(format!(
                "worker {j}: {}",
                err.trim().trim_start_matches("error: ")
            ));
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("reading the result of worker {j}"))?;
        let Some(list) = v["paths"].as_array() else {
            bail!("worker {j} printed no table paths");
        };
        paths.extend(list.iter().filter_map(|p| p.as_str()).map(PathBuf::from));
    }
    if let Some(first) = failures.first() {
        // Every worker reads the whole input: the same bad line fails them all; say it once.
        bail!("{first} (no manifest was written)");
    }
    let manifest = args
        .output
        .join(format!("{}.{SET_EXTENSION}", args.set_name));
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

fn format_name(f: InputFormat) -> &'static str {
    match f {
        InputFormat::Lines => "lines",
        InputFormat::Tsv => "tsv",
        InputFormat::Jsonl => "jsonl",
    }
}

fn duplicates_name(d: Duplicates) -> &'static str {
    match d {
        Duplicates::Reject => "reject",
        Duplicates::Last => "last",
        Duplicates::First => "first",
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
