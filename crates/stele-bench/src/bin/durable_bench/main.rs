//! Durable-map benchmark: Stele's `DurableMap` against Bifurcan's `DurableMap` (Java),
//! LMDB (heed) and RocksDB (rocksdict), as Bifurcan's own durable-collection benchmark:
//! 8-byte random keys, 1016-byte random values (1 KiB entries), sizes from in memory to
//! several times a cgroup memory limit; build time and write amplification, sequential
//! reads, cold and warm random gets with read amplification.
//!
//! Every build and every read phase runs in its own process (`durable_bench run-one`, the
//! JVM, or Python), started inside a cgroup v1 memory group (`scripts/in_cgroup.sh`) so
//! that data bigger than the limit really does not fit in the page cache. Byte counts come
//! from each process's `/proc/self/io`. `durable_bench --test` is the quick smoke run (Stele
//! and LMDB only, no cgroup).

mod data;
mod phases;
mod report;
#[allow(dead_code)]
#[path = "../table_bench/sys.rs"]
mod sys;
mod systems;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::Value;

use phases::ReadPlan;
use report::{Row, report};

/// Every system, in table order. `stele-16k` (16 KiB blocks) and `stele-16k-r1` (16 KiB
/// blocks, a restart point at every entry) are not in the default list.
const SYSTEMS: &[&str] = &[
    "stele",
    "stele-16k",
    "stele-16k-r1",
    "bifurcan",
    "lmdb",
    "rocksdb",
];
const BIFURCAN: &str = "io/lacuna/bifurcan/0.2.0-alpha7/bifurcan-0.2.0-alpha7.jar";

#[derive(Parser, Debug)]
#[command(about = "Durable maps: Stele vs Bifurcan, LMDB, RocksDB, in and beyond memory")]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Smoke run: 20,000 entries, Stele and LMDB only, no cgroup (what CI runs).
    #[arg(long)]
    test: bool,
    /// Entry counts (1 KiB each), comma-separated; k and m suffixes.
    #[arg(long, default_value = "100k,500k,2m,4m")]
    sizes: String,
    /// Comma-separated systems: stele, stele-16k, stele-16k-r1, bifurcan, lmdb, rocksdb.
    #[arg(long, default_value = "stele,bifurcan,lmdb,rocksdb")]
    systems: String,
    /// Memory limit of the cgroup every phase runs in, MiB (0: no cgroup).
    #[arg(long, default_value_t = 1024)]
    cgroup_mib: u64,
    /// Name of the cgroup v1 memory group.
    #[arg(long, default_value = "stele-durable-bench")]
    cgroup: String,
    /// Random gets right after the files were evicted from the page cache.
    #[arg(long, default_value_t = 1000)]
    cold: usize,
    /// Timed random gets after the scan and a warm-up pass (up to 200,000 gets).
    #[arg(long, default_value_t = 200_000)]
    warm: usize,
    /// Entries read by the sequential scan at most.
    #[arg(long, default_value_t = 512 * 1024)]
    scan_cap: u64,
    /// Each read part (cold gets, scan, warm-up, warm gets) stops after this many seconds.
    #[arg(long, default_value_t = 20.0)]
    max_s: f64,
    /// Where stores are built (deleted after each system unless --keep).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Python with rocksdict (default: <repo>/.venv-bench/bin/python).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Bifurcan jar (default: ~/.m2/repository/.../bifurcan-0.2.0-alpha7.jar).
    #[arg(long)]
    bifurcan_jar: Option<PathBuf>,
    /// Java heap of the Bifurcan runs, MiB.
    #[arg(long, default_value_t = 512)]
    java_heap_mib: u64,
    /// Keep the stores after the run.
    #[arg(long)]
    keep: bool,
    /// Also write the markdown to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Internal: one phase of one Rust system, in its own process; prints `RESULT <json>`.
    RunOne {
        #[arg(long)]
        system: String,
        #[arg(long)]
        phase: String,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        entries: u64,
        #[arg(long, default_value_t = 0)]
        cold: usize,
        #[arg(long, default_value_t = 0)]
        warm: usize,
        #[arg(long, default_value_t = 0)]
        scan_cap: u64,
        #[arg(long, default_value_t = 0.0)]
        max_s: f64,
    },
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench_dir() -> PathBuf {
    repo_root().join("crates/stele-bench")
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Some(Cmd::RunOne {
        system,
        phase,
        dir,
        entries,
        cold,
        warm,
        scan_cap,
        max_s,
    }) = &cli.cmd
    {
        let plan = ReadPlan {
            entries: *entries,
            cold: *cold,
            warm: *warm,
            scan_cap: *scan_cap,
            max_s: *max_s,
        };
        let v = run_one(system, phase, dir, plan)?;
        println!("RESULT {}", serde_json::to_string(&v)?);
        return Ok(());
    }
    orchestrate(&cli)
}

fn run_one(system: &str, phase: &str, dir: &Path, plan: ReadPlan) -> Result<Value> {
    let n = plan.entries;
    match (system, phase) {
        ("stele", "build") => {
            phases::measure_build(dir, || systems::stele::build(dir, n, None, None))
        }
        ("stele-16k", "build") => {
            phases::measure_build(dir, || systems::stele::build(dir, n, Some(16 << 10), None))
        }
        ("stele-16k-r1", "build") => phases::measure_build(dir, || {
            systems::stele::build(dir, n, Some(16 << 10), Some(1))
        }),
        ("lmdb", "build") => phases::measure_build(dir, || systems::lmdb::build(dir, n)),
        ("stele" | "stele-16k" | "stele-16k-r1", "read") => {
            phases::measure_reads(plan, || systems::stele::open(dir))
        }
        ("lmdb", "read") => phases::measure_reads(plan, || systems::lmdb::open(dir)),
        _ => bail!("no {phase} phase for {system}"),
    }
}

fn parse_count(s: &str) -> Result<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mul) = match s.strip_suffix('m') {
        Some(x) => (x, 1_000_000),
        None => match s.strip_suffix('k') {
            Some(x) => (x, 1_000),
            None => (s.as_str(), 1),
        },
    };
    let v: f64 = num.parse().with_context(|| format!("bad size {s:?}"))?;
    Ok((v * mul as f64) as u64)
}

/// How one system's phases are started.
struct Launcher {
    exe: PathBuf,
    python: PathBuf,
    java_classpath: Option<String>,
    java_heap_mib: u64,
    cgroup: Option<(String, u64)>,
}

impl Launcher {
    fn command(&self, system: &str, phase: &str, dir: &Path, plan: &ReadPlan) -> Result<Command> {
        let read_args = [
            plan.cold.to_string(),
            plan.warm.to_string(),
            plan.scan_cap.to_string(),
            plan.max_s.to_string(),
        ];
        let mut argv: Vec<String> = match system {
            "bifurcan" => {
                let cp = self
                    .java_classpath
                    .clone()
                    .context("Bifurcan classes not compiled")?;
                vec![
                    "java".into(),
                    format!("-Xmx{}m", self.java_heap_mib),
                    "-cp".into(),
                    cp,
                    "DurableBench".into(),
                ]
            }
            "rocksdb" => vec![
                self.python.display().to_string(),
                bench_dir()
                    .join("scripts/rocks_durable.py")
                    .display()
                    .to_string(),
            ],
            _ => vec![
                self.exe.display().to_string(),
                "run-one".into(),
                "--system".into(),
                system.into(),
                "--phase".into(),
            ],
        };
        let rust = !matches!(system, "bifurcan" | "rocksdb");
        if rust {
            argv.push(phase.into());
            argv.extend([
                "--dir".into(),
                dir.display().to_string(),
                "--entries".into(),
                plan.entries.to_string(),
            ]);
            for (flag, v) in ["--cold", "--warm", "--scan-cap", "--max-s"]
                .iter()
                .zip(&read_args)
            {
                argv.extend([(*flag).to_string(), v.clone()]);
            }
        } else {
            argv.extend([
                phase.into(),
                dir.display().to_string(),
                plan.entries.to_string(),
            ]);
            if phase == "read" {
                argv.extend(read_args);
            }
        }
        let mut cmd = match &self.cgroup {
            Some((name, limit)) => {
                let mut c = Command::new("bash");
                c.arg(bench_dir().join("scripts/in_cgroup.sh"))
                    .arg(name)
                    .arg(limit.to_string());
                c.args(&argv);
                c
            }
            None => {
                let (first, rest) = argv.split_first().context("empty command")?;
                let mut c = Command::new(first);
                c.args(rest);
                c
            }
        };
        cmd.stderr(std::process::Stdio::inherit());
        Ok(cmd)
    }

    fn cgroup_file(&self, file: &str) -> Option<PathBuf> {
        self.cgroup
            .as_ref()
            .map(|(name, _)| Path::new("/sys/fs/cgroup/memory").join(name).join(file))
    }

    /// Runs one phase; returns its RESULT json with the cgroup's peak usage added.
    fn run(&self, system: &str, phase: &str, dir: &Path, plan: &ReadPlan) -> Result<Value> {
        if let Some(f) = self.cgroup_file("memory.max_usage_in_bytes")
            && f.exists()
        {
            std::fs::write(&f, "0").with_context(|| format!("resetting {}", f.display()))?;
        }
        let mut cmd = self.command(system, phase, dir, plan)?;
        let t = Instant::now();
        let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!("{system} {phase} failed ({}):\n{stdout}", out.status);
        }
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .with_context(|| format!("{system} {phase}: no RESULT line in:\n{stdout}"))?;
        let mut v: Value = serde_json::from_str(line)?;
        if let Some(f) = self.cgroup_file("memory.max_usage_in_bytes") {
            let peak: u64 = std::fs::read_to_string(&f)?.trim().parse()?;
            v["cgroup_peak_bytes"] = peak.into();
        }
        eprintln!(
            "   {system} {phase}: {:.1} s, load {}",
            t.elapsed().as_secs_f64(),
            load_average()
        );
        Ok(v)
    }
}

/// The first three fields of /proc/loadavg: other work on the machine shows here.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Compiles the Java harness; returns the class path (jar + classes).
fn compile_java(jar: &Path, out: &Path) -> Result<String> {
    std::fs::create_dir_all(out)?;
    let status = Command::new("javac")
        .arg("-cp")
        .arg(jar)
        .arg("-d")
        .arg(out)
        .arg(bench_dir().join("java/DurableBench.java"))
        .status()
        .context("running javac")?;
    if !status.success() {
        bail!("javac failed: {status}");
    }
    Ok(format!("{}:{}", jar.display(), out.display()))
}

fn orchestrate(cli: &Cli) -> Result<()> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(|| {
        let name = if cli.test {
            "durable-bench-test"
        } else {
            "durable-bench"
        };
        repo_root().join("target/data").join(name)
    });
    let (sizes, wanted, cgroup, plan_base) = if cli.test {
        (
            vec![20_000],
            vec!["stele".to_string(), "lmdb".to_string()],
            None,
            (200, 20_000, 20_000, 5.0),
        )
    } else {
        let sizes = cli
            .sizes
            .split(',')
            .map(parse_count)
            .collect::<Result<Vec<_>>>()?;
        let wanted = cli
            .systems
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        let cg = (cli.cgroup_mib > 0).then(|| (cli.cgroup.clone(), cli.cgroup_mib << 20));
        (
            sizes,
            wanted,
            cg,
            (cli.cold, cli.warm, cli.scan_cap, cli.max_s),
        )
    };
    for w in &wanted {
        if !SYSTEMS.contains(&w.as_str()) {
            bail!("unknown system {w:?} (known: {})", SYSTEMS.join(", "));
        }
    }
    let python = cli
        .python
        .clone()
        .unwrap_or_else(|| repo_root().join(".venv-bench/bin/python"));
    let jar = cli.bifurcan_jar.clone().unwrap_or_else(|| {
        PathBuf::from(std::env::var("HOME").unwrap_or_default())
            .join(".m2/repository")
            .join(BIFURCAN)
    });
    let mut skip_reason = std::collections::HashMap::new();
    let mut java_classpath = None;
    if wanted.iter().any(|w| w == "bifurcan") {
        if !jar.exists() {
            skip_reason.insert("bifurcan", "no Bifurcan jar: run scripts/setup-peers.sh");
        } else {
            java_classpath = Some(compile_java(&jar, &data_dir.join("java-classes"))?);
        }
    }
    if wanted.iter().any(|w| w == "rocksdb") && !python.exists() {
        skip_reason.insert("rocksdb", "no rocksdict venv: run scripts/setup-peers.sh");
    }
    let launcher = Launcher {
        exe: std::env::current_exe()?,
        python,
        java_classpath,
        java_heap_mib: cli.java_heap_mib,
        cgroup,
    };
    let load_start = load_average();
    let mut rows = Vec::new();
    let mut failures = 0;
    for &n in &sizes {
        for system in SYSTEMS.iter().filter(|s| wanted.iter().any(|w| w == *s)) {
            let mut row = Row {
                system: system.to_string(),
                entries: n,
                build: None,
                read: None,
                skipped: skip_reason.get(system).map(|s| s.to_string()),
            };
            if row.skipped.is_none() {
                let plan = ReadPlan {
                    entries: n,
                    cold: plan_base.0,
                    warm: plan_base.1,
                    scan_cap: plan_base.2,
                    max_s: plan_base.3,
                };
                if let Err(e) = run_system(&launcher, &data_dir, system, &plan, &mut row) {
                    eprintln!("!! {system} at {n} entries failed: {e:#}");
                    let first = format!("{e:#}");
                    row.skipped = Some(format!(
                        "FAILED: {}",
                        first.lines().next().unwrap_or_default()
                    ));
                    failures += 1;
                }
                if !cli.keep {
                    std::fs::remove_dir_all(data_dir.join(system)).ok();
                }
            }
            rows.push(row);
        }
    }
    let md = report(
        &rows,
        launcher.cgroup.as_ref(),
        &load_start,
        &load_average(),
        cli.test,
    );
    println!("{md}");
    if let Some(out) = &cli.out {
        std::fs::write(out, &md)?;
    }
    if failures > 0 {
        bail!("{failures} run(s) failed (see the tables)");
    }
    Ok(())
}

fn run_system(
    launcher: &Launcher,
    data_dir: &Path,
    system: &str,
    plan: &ReadPlan,
    row: &mut Row,
) -> Result<()> {
    let dir = data_dir.join(system);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    eprintln!("== {system}, {} entries: build", plan.entries);
    let build = launcher.run(system, "build", &dir, plan)?;
    if build["entries"].as_u64() != Some(plan.entries) {
        bail!(
            "{system} built {} entries, expected {}",
            build["entries"],
            plan.entries
        );
    }
    row.build = Some(build);
    sys::evict(&dir)?;
    eprintln!("== {system}, {} entries: read", plan.entries);
    row.read = Some(launcher.run(system, "read", &dir, plan)?);
    Ok(())
}
