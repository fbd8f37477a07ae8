//! Table sets on the command line: `stele table build --shards N` (the input sorted once
//! and cut into tables of equal entry counts, then the manifest),
//! `stele table commit`, and reading a table or a set alike.

use std::io::{Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use stele_table::{Entry, SET_EXTENSION, SET_MAGIC, Table, TableBuilder, TableOptions, TableSet};

use crate::say::count;
use crate::table_cmd::input::{BuildArgs, duplicate_policy, feed, sorter};

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

/// Sorts the input once, as one table would be (one sorter with the whole of `--memory`,
/// spilling beyond it), and cuts the sorted stream into `shards` tables of equal entry
/// counts. The entry count is known once the input is read, before the first key comes
/// out of the sorter, so no sample is read and no key is looked up in split points: the
/// ranges' ends are the keys where the cuts fall. Sorted input (`--sorted`) is cut by the
/// input bytes read instead. Sorting each range apart costs more: 25 sorters of 1/25 of
/// the budget spill 25 times as many runs. Returns the tables written and the split
/// points between them (each table's first key but the first's).
fn sort_into_shards(
    args: &BuildArgs,
    shards: usize,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<PathBuf>, Vec<Vec<u8>>)> {
    let written = |ranges: &mut RangeWriter<'_>| -> Result<()> {
        if args.sorted {
            // Sorted input: straight into the ranges' tables, cut by the share of the input
            // read (the bar counts input bytes whether it is drawn or not).
            let total_bytes = bar.length().unwrap_or(0);
            ranges.cut = Cut::InputBytes {
                per_shard: total_bytes.div_ceil(shards as u64).max(1),
                bar: bar.clone(),
            };
            feed(args, bar, &mut |k, v| ranges.add(k, v))?;
        } else {
            let mut sorter = sorter(args, args.memory)?;
            let mut entries = 0u64;
            feed(args, bar, &mut |k, v| {
                entries += 1;
                sorter.add(k, v)
            })?;
            ranges.cut = Cut::Entries {
                per_shard: entries.div_ceil(shards as u64).max(1),
            };
            bar.set_message("sorting and writing");
            sorter
                .finish_each(&mut |k, v| ranges.add(k, v))
                .map_err(|e| {
                    anyhow::Error::new(e)
                        .context(format!("building tables from {}", args.input.display()))
                })?;
        }
        ranges.close_current().map_err(anyhow::Error::new)
    };
    let mut ranges = RangeWriter {
        args,
        shards,
        cut: Cut::Entries {
            per_shard: u64::MAX,
        },
        current: None,
        cut_after: None,
        splits: Vec::new(),
        paths: Vec::new(),
    };
    match written(&mut ranges) {
        Ok(()) => Ok((ranges.paths, ranges.splits)),
        Err(e) => {
            // No manifest will name the shards written so far (a duplicate key, a full
            // disk): they go too.
            // The table being written, unfinished, removes its own temporary file.
            drop(ranges.current.take());
            for path in &ranges.paths {
                let _ = std::fs::remove_file(path);
            }
            Err(e)
        }
    }
}

/// When the table being written is full.
enum Cut {
    /// After this many entries.
    Entries { per_shard: u64 },
    /// After the input read reaches the next multiple of this many bytes (sorted input,
    /// written while it is read).
    InputBytes {
        per_shard: u64,
        bar: indicatif::ProgressBar,
    },
}

/// Pairs in ascending key order, written into at most `shards` tables of about equal size.
///
/// Invariant: a cut falls only between two different keys (equal keys, which the duplicate
/// policy resolves, stay in one table), so the tables' key ranges are disjoint and each
/// split point is the first key of the table it starts.
struct RangeWriter<'a> {
    args: &'a BuildArgs,
    shards: usize,
    cut: Cut,
    /// The table being written and its entries so far.
    current: Option<(TableBuilder, u64)>,
    /// Set once the current table is full: its last key. The next greater key starts a
    /// new table.
    cut_after: Option<Vec<u8>>,
    /// The first key of every table after the first, ascending.
    splits: Vec<Vec<u8>>,
    /// The tables finished, in key order.
    paths: Vec<PathBuf>,
}

impl RangeWriter<'_> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> stele_table::Result<()> {
        // A key not above the full table's last one goes into it: an equal key for the
        // duplicate policy, a smaller one for the builder's out-of-order error.
        let cut_here = self.cut_after.as_deref().is_some_and(|last| key > last);
        if cut_here {
            self.close_current()?;
        }
        let (builder, entries) = match self.current {
            Some(ref mut current) => current,
            None => {
                if !self.paths.is_empty() {
                    self.splits.push(key.to_vec());
                }
                self.cut_after = None;
                let opts = TableOptions::default().duplicates(duplicate_policy(self.args));
                self.current
                    .insert((TableBuilder::new(&self.args.output, opts)?, 0))
            }
        };
        builder.add(key, value)?;
        *entries += 1;
        let started = self.paths.len() + 1;
        if self.cut_after.is_none() && started < self.shards {
            let full = match &self.cut {
                Cut::Entries { per_shard } => *entries >= *per_shard,
                Cut::InputBytes { per_shard, bar } => {
                    bar.position() >= per_shard.saturating_mul(started as u64)
                }
            };
            if full {
                self.cut_after = Some(key.to_vec());
            }
        }
        Ok(())
    }

    /// Finishes the table being written, if any.
    fn close_current(&mut self) -> stele_table::Result<()> {
        if let Some((builder, _)) = self.current.take() {
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

/// `stele table build --shards N`: the input sorted once and cut into N tables of equal
/// entry counts, then the manifest.
pub fn build_set(args: &BuildArgs) -> Result<()> {
    let shards = args.shards.unwrap_or(1);
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let started = std::time::Instant::now();
    // Sorted input is cut by the share of the input read: standard input, a pipe or
    // anything else that is not a regular file is spooled into a file first, to know its
    // length.
    let spooled;
    let input_args;
    let regular_file =
        args.input.as_os_str() != "-" && std::fs::metadata(&args.input).is_ok_and(|m| m.is_file());
    let args = if args.sorted && !regular_file {
        let tmp = tempfile::NamedTempFile::new_in(&args.output)
            .with_context(|| format!("creating a temporary file in {}", args.output.display()))?;
        let (mut input, _) = crate::table_cmd::input::open_input(&args.input)?;
        std::io::copy(&mut input, &mut tmp.as_file())
            .with_context(|| format!("reading {}", args.input.display()))?;
        spooled = tmp;
        input_args = BuildArgs {
            input: spooled.path().to_path_buf(),
            ..args.clone()
        };
        &input_args
    } else {
        args
    };
    let manifest = args
        .output
        .join(format!("{}.{SET_EXTENSION}", args.set_name));
    let bar = crate::table_cmd::input::progress_bar(args)?;
    let (paths, splits) = sort_into_shards(args, shards, &bar).with_context(|| {
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
