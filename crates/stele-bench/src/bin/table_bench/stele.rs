//! Stele's tables (`stele-table`): Sorter in memory, Sorter with a 256 MiB budget, Sorter
//! fed sorted input, and TableBuilder over sorted input.

use std::path::Path;

use anyhow::{Context, Result, bail};
use stele_table::{Access, Sorter, SorterOptions, Table, TableBuilder, TableOptions};

use crate::data::{self, SetInfo};
use crate::stores::{Built, Getter, Input, Reader};

pub const AVAILABLE: bool = true;

/// Budget of the "in memory" runs: well above what 14M pairs take.
const IN_MEMORY_BUDGET: usize = 8 << 30;
/// Budget of the bounded runs.
const SMALL_BUDGET: usize = 256 << 20;

pub fn build(store: &str, set: &SetInfo, input: Input, dir: &Path) -> Result<Built> {
    std::fs::create_dir_all(dir)?;
    let out = dir.join("out");
    std::fs::create_dir_all(&out)?;
    let (info, note) = match store {
        "stele-mem" | "stele-256m" | "stele-mem-sorted" => {
            let budget = if store == "stele-256m" {
                SMALL_BUDGET
            } else {
                IN_MEMORY_BUDGET
            };
            let tmp = dir.join("tmp");
            std::fs::create_dir_all(&tmp)?;
            let mut s = Sorter::new(
                SorterOptions::default()
                    .memory_budget_bytes(budget)
                    .temp_dir(&tmp),
            )?;
            let add = |s: &mut Sorter, k: &[u8], row: u64| -> Result<()> {
                s.add(k, &row.to_le_bytes())?;
                Ok(())
            };
            match input {
                Input::Shuffled => {
                    data::for_each_shuffled(&set.keys_path(), |k, row| add(&mut s, k, row))?
                }
                Input::Sorted => {
                    data::for_each_sorted(&set.sorted_path(), |k, row| add(&mut s, k, row))?
                }
            }
            let info = s.finish(&out)?;
            (
                info,
                format!(
                    "Sorter, memory_budget_bytes({budget}), temp dir on the same disk, default \
                     table options"
                ),
            )
        }
        "stele-builder" | "stele-keys" => {
            if input != Input::Sorted {
                bail!("TableBuilder needs sorted input");
            }
            let keys_only = store == "stele-keys";
            let mut b = TableBuilder::new(&out, TableOptions::default())?;
            data::for_each_sorted(&set.sorted_path(), |k, row| {
                let v = row.to_le_bytes();
                b.add(k, if keys_only { &[] } else { &v[..] })?;
                Ok(())
            })?;
            let what = if keys_only {
                "TableBuilder, default table options, empty values (keys only)"
            } else {
                "TableBuilder, default table options"
            };
            (b.finish()?, what.to_string())
        }
        s => bail!("unknown Stele store {s}"),
    };
    Ok(Built {
        path: info.path.clone(),
        entries: info.entries,
        note: format!("{note}; {} data blocks", info.blocks),
    })
}

struct SteleReader(Table);

struct SteleGetter<'a>(&'a Table);

impl Getter for SteleGetter<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<u64>> {
        match self.0.get(key)? {
            Some(v) => {
                let b: [u8; 8] = v.try_into().context("value is not 8 bytes")?;
                Ok(Some(u64::from_le_bytes(b)))
            }
            None => Ok(None),
        }
    }
}

impl Reader for SteleReader {
    fn getter(&self) -> Result<Box<dyn Getter + '_>> {
        Ok(Box::new(SteleGetter(&self.0)))
    }

    fn scan(&self) -> Result<(u64, u64)> {
        let (mut n, mut bytes) = (0u64, 0u64);
        for e in self.0.iter() {
            let (k, v) = e?;
            n += 1;
            bytes += (k.len() + v.len()) as u64;
            std::hint::black_box((&k, v));
        }
        Ok((n, bytes))
    }
}

pub fn open(path: &Path, cold: bool) -> Result<Box<dyn Reader>> {
    // Random access advice (MADV_RANDOM) is the default of Table::open; say it for cold reads.
    let t = if cold {
        Table::open_with(path, Access::Random)?
    } else {
        Table::open(path)?
    };
    Ok(Box::new(SteleReader(t)))
}
