//! A SIGKILL crash harness: a child process runs a workload and is killed at a random
//! moment, round after round, and the test checks after each kill what the workload's
//! folder holds.
//!
//! It models a process killed at any instruction (a crash, an OOM kill, `kill -9`): the
//! operating system keeps every write the process made, so unlike a power cut
//! ([`crate::SimDisk`]) nothing written is lost; what the kill tests is that no moment
//! leaves a state the code cannot open, or one that lost what it acknowledged.
//!
//! The child is the test binary itself, run again filtered to one test (the child test)
//! with an environment variable naming the workload's folder; that test does nothing when
//! the variable is unset, so a normal run passes it. It reports what it made durable by
//! printing `ack <n>` lines ([`ack`]); the harness hands the last one of each round to the
//! test.
//!
//! ```ignore
//! #[test]
//! fn crash_child() {
//!     crash::run_child_if_asked(CHILD_ENV, |dir| { /* commit, then crash::ack(n) */ });
//! }
//!
//! #[test]
//! fn killed_writers_lose_nothing() {
//!     let dir = tempfile::tempdir().unwrap();
//!     let mut crash = Crash::new("crash_child", CHILD_ENV, dir.path()).kill_after_ms(20, 150);
//!     for round in 0..crash.rounds() {
//!         let killed = crash.kill_one();
//!         // open dir.path(), check it against killed.acked
//!     }
//! }
//! ```

use crate::Rng;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, SystemTime};

/// The environment variable that sets the number of rounds (the soak run raises it).
pub const ROUNDS_ENV: &str = "STELE_CRASH_ROUNDS";

/// In the child test: runs `workload` on the folder the environment variable `env` names,
/// if it is set (the harness started this process); else does nothing.
pub fn run_child_if_asked(env: &str, workload: impl FnOnce(&Path)) {
    if let Some(dir) = std::env::var_os(env) {
        workload(Path::new(&dir));
    }
}

/// In the child: tells the harness that `n` is durable (prints `ack <n>` and flushes).
pub fn ack(n: u64) {
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "ack {n}").and_then(|()| out.flush());
    if let Err(e) = written {
        panic!("acknowledging {n}: {e}");
    }
}

/// `STELE_CRASH_ROUNDS` divided by `divisor` (rounded up), or `default` when it is unset.
pub fn rounds_from_env(default: u32, divisor: u32) -> u32 {
    std::env::var(ROUNDS_ENV)
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .map_or(default, |r| r.div_ceil(divisor.max(1)))
}

/// The name libtest knows the test `test` by, in the module whose [`module_path!`] is
/// `module_path`: the path without the crate's name. A test binary of one file names its
/// tests `test`; one that holds every file as a module (`tests/it.rs`) names them
/// `file::test`, which `--exact` needs. See [`test_path!`](crate::test_path).
pub fn test_path(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// [`test_path`] of the test named `$test` in the module this is written in: what a parent
/// test passes to [`Crash::new`] or to `--exact` to run a child test of its own binary.
#[macro_export]
macro_rules! test_path {
    ($test:literal) => {
        $crate::crash::test_path(module_path!(), $test)
    };
}

/// What one round left, for the test to check.
#[derive(Debug, Clone, Copy)]
pub struct Killed {
    /// The last `ack` the child printed before it died (0 if none).
    pub acked: u64,
    /// How the child ended: killed, unless it finished (or failed) first.
    pub status: ExitStatus,
}

/// The parent side: spawns the child test, kills it, round after round.
#[derive(Debug)]
pub struct Crash {
    exe: PathBuf,
    child_test: String,
    env: String,
    dir: PathBuf,
    rounds: u32,
    min_ms: u64,
    spread_ms: u64,
    seed: u64,
    rng: Rng,
    /// While kill delays grow because no child has acknowledged anything yet (see
    /// [`Crash::stretch_until_first_ack`]): the factor they are multiplied by now.
    stretch: Option<u64>,
}

impl Crash {
    /// Runs test `child_test` of this test binary with `env` set to `dir`; rounds from
    /// `STELE_CRASH_ROUNDS` (default 50); kills after 20 to 169 ms; the seed of the kill
    /// times from the clock (printed).
    pub fn new(child_test: &str, env: &str, dir: &Path) -> Self {
        let exe = std::env::current_exe()
            .unwrap_or_else(|e| panic!("finding the test binary to run as the child: {e}"));
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 | 1);
        eprintln!("seed {seed}");
        Crash {
            exe,
            child_test: child_test.to_owned(),
            env: env.to_owned(),
            dir: dir.to_path_buf(),
            rounds: rounds_from_env(50, 1),
            min_ms: 20,
            spread_ms: 150,
            seed,
            rng: Rng::new(seed),
            stretch: None,
        }
    }

    /// Sets the number of rounds (see [`rounds_from_env`]).
    pub fn rounds_of(mut self, rounds: u32) -> Self {
        self.rounds = rounds;
        self
    }

    /// Kills each child `min_ms` plus a random part of `spread_ms` milliseconds after it
    /// starts.
    pub fn kill_after_ms(mut self, min_ms: u64, spread_ms: u64) -> Self {
        self.min_ms = min_ms;
        self.spread_ms = spread_ms;
        self
    }

    /// Doubles the kill delay (up to 16 times) after each round whose child acknowledged
    /// nothing, until one child has: on a loaded machine a child may need longer than the
    /// configured delay just to start and reach its first commit, and a test whose rounds
    /// all end before any commit checks nothing. Only for children that acknowledge early
    /// and keep working (a child that acknowledges only at its end would be let finish).
    pub fn stretch_until_first_ack(mut self) -> Self {
        self.stretch = Some(1);
        self
    }

    /// The rounds to run.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The seed of the kill times.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The folder the child works in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One round: starts the child, waits a random time, kills it with SIGKILL, and
    /// returns once it is gone and all it printed is read.
    pub fn kill_one(&mut self) -> Killed {
        let mut child = Command::new(&self.exe)
            .args([
                OsStr::new(&self.child_test),
                OsStr::new("--exact"),
                OsStr::new("--nocapture"),
                OsStr::new("--test-threads=1"),
            ])
            .env(&self.env, &self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the child {}: {e}", self.child_test));
        let stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut acked = 0u64;
            let Some(stdout) = stdout else { return acked };
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                    acked = n;
                }
            }
            acked
        });
        let delay = (self.min_ms + self.rng.below(self.spread_ms as usize) as u64)
            * self.stretch.unwrap_or(1);
        std::thread::sleep(Duration::from_millis(delay));
        // SIGKILL (a child that already ended is only reaped).
        if let Err(e) = child.kill() {
            panic!("killing the child: {e}");
        }
        let status = child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for the child: {e}"));
        let acked = reader
            .join()
            .unwrap_or_else(|_| panic!("reading the child's output failed"));
        if let Some(factor) = self.stretch {
            self.stretch = (acked == 0).then(|| (factor * 2).min(16));
        }
        Killed { acked, status }
    }
}
