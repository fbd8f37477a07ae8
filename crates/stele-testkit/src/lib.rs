//! Test-only helpers shared by the tests of `stele-table`, `stele-durable` and `stele`
//! (a dev-dependency only; no library crate depends on it).
//!
//! [`SimDisk`] is a [`Storage`] that passes every operation through to the real files, so the
//! workload runs (and reads through mmap) as usual, and records an operation log: writes,
//! cuts, creations, renames, links, removals, folder creations and every kind of sync. A
//! [`Recording`] of that log can then [`explore`] the states a power cut at any moment could
//! leave, each materialised into a fresh folder where the real code opens it. The crash model
//! is described in `docs/POWER-LOSS.md`. [`explore_sessions`] starts a next session (a
//! recovery, then more work) from chosen crash states and explores it the same way.
//!
//! [`faults::FaultyStorage`] is the real file system with injected I/O errors: a shared
//! [`faults::Faults`] control fails the n-th operation of chosen kinds (a full disk, say)
//! and counts them. [`crash::Crash`] runs a workload in a child process (the test binary run
//! again) and kills it with SIGKILL at random moments, round after round, for the test to
//! check what the workload's folder holds after each kill.

pub mod crash;
pub mod faults;
mod model;
mod nosync;
mod rng;
mod sessions;
mod sim;

pub use model::Pick;
pub use nosync::{NoSync, no_sync};
pub use rng::Rng;
pub use sessions::{OpInfo, OpKind, SessionsExplored, Start, explore_sessions};
pub use sim::{Recording, Replay, SimDisk};

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

/// How much [`explore`] does.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// Crash states to open and check (about: every chosen moment gets its extremes).
    pub states: usize,
    /// Seed of the random choices; the failure message names it.
    pub seed: u64,
}

impl ExploreOptions {
    /// `default_states` states, or `STELE_CRASH_STATES` if set; seed from `STELE_CRASH_SEED`,
    /// else a fixed one (the same states on every CI run; the soak run sets a new seed).
    pub fn from_env(default_states: usize) -> Self {
        let states = std::env::var("STELE_CRASH_STATES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default_states);
        let seed = std::env::var("STELE_CRASH_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0x5eed_57e1e);
        ExploreOptions { states, seed }
    }
}

/// One crash state handed to the check of [`explore`].
#[derive(Debug)]
pub struct CrashState<'a> {
    /// The folder the state was materialised into (what the recorded root held).
    pub dir: &'a Path,
    /// Operations that happened before the cut (compare with [`SimDisk::moment`] marks).
    pub moment: usize,
    /// What the cut kept of the operations not yet made durable.
    pub pick: Pick,
}

/// What [`explore`] did.
#[derive(Debug, Clone, Copy)]
pub struct Explored {
    /// Crash states opened and checked.
    pub states: usize,
    /// Distinct moments they were cut at.
    pub moments: usize,
    /// Sync operations in the recording.
    pub sync_points: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// Cuts the recording at its sync points (right after each) and at a moment between each
/// pair, materialises crash states there (everything not durable lost, everything kept, the
/// last operation lost, and random picks of what survives) and runs `check` on each: it
/// returns an error, or panics, to report a violated invariant. Panics on the first
/// violation with the moment, the pick, the operations around the cut and the seed.
pub fn explore(
    recording: &Recording,
    opts: &ExploreOptions,
    mut check: impl FnMut(&CrashState<'_>) -> Result<(), String>,
) -> Explored {
    let started = Instant::now();
    let mut rng = Rng::new(opts.seed);
    let syncs = recording.sync_moments();
    // Moments: after each sync, and one between it and the previous one.
    let mut moments = Vec::new();
    let mut prev = 0;
    for &m in &syncs {
        if m > prev + 1 {
            moments.push(prev + 1 + rng.below(m - prev - 1));
        }
        moments.push(m);
        prev = m;
    }
    if recording.len() > prev {
        moments.push(recording.len());
    }
    // Four states per moment at least (three extremes and one random pick); fewer moments,
    // spread evenly, when the budget is smaller.
    let per_moment = (opts.states / moments.len().max(1)).max(4);
    if moments.len() * per_moment > opts.states && !moments.is_empty() {
        let keep = (opts.states / per_moment).max(1);
        let step = moments.len() as f64 / keep as f64;
        moments = (0..keep)
            .map(|i| moments[((i as f64 * step) as usize).min(moments.len() - 1)])
            .collect();
        moments.dedup();
    }
    // What the whole moments leave of the budget: one more random pick for the first ones,
    // so that a budget above four per moment is met exactly.
    let n = moments.len().max(1);
    let rest = opts.states.saturating_sub(moments.len() * per_moment);
    let mut jobs = Vec::with_capacity(opts.states.max(moments.len() * per_moment));
    for (i, &moment) in moments.iter().enumerate() {
        let here = per_moment + rest / n + usize::from(i < rest % n);
        // The last operation lost is the state of one operation earlier with everything
        // kept: checked first, since the replay only moves forward.
        if moment > 0 {
            jobs.push((moment - 1, Pick::LastOpLost));
        }
        jobs.push((moment, Pick::AllLost));
        jobs.push((moment, Pick::AllKept));
        for _ in 3..here {
            jobs.push((moment, Pick::Random(rng.next_u64())));
        }
    }
    let states = check_states(recording, opts, &jobs, &mut check);
    Explored {
        states,
        moments: moments.len(),
        sync_points: syncs.len(),
        elapsed: started.elapsed(),
    }
}

/// Like [`explore`], with every state cut at one moment: `opts.states` of them, random
/// picks after the extremes. For a regression test whose bug shows in a few states of one
/// moment only (say one random pick in fifteen after the last operation).
pub fn explore_at(
    recording: &Recording,
    moment: usize,
    opts: &ExploreOptions,
    mut check: impl FnMut(&CrashState<'_>) -> Result<(), String>,
) -> Explored {
    let started = Instant::now();
    let mut rng = Rng::new(opts.seed);
    let mut jobs = vec![(moment, Pick::AllLost), (moment, Pick::AllKept)];
    while jobs.len() < opts.states {
        jobs.push((moment, Pick::Random(rng.next_u64())));
    }
    let states = check_states(recording, opts, &jobs, &mut check);
    Explored {
        states,
        moments: 1,
        sync_points: recording.sync_moments().len(),
        elapsed: started.elapsed(),
    }
}

/// Materialises and checks the states `jobs` name (moments in order); panics at the first
/// violation. Returns how many were checked.
fn check_states(
    recording: &Recording,
    opts: &ExploreOptions,
    jobs: &[(usize, Pick)],
    check: &mut dyn FnMut(&CrashState<'_>) -> Result<(), String>,
) -> usize {
    let base = scratch_dir("stele-crash-");
    let mut replay = recording.replay();
    let mut states = 0;
    for &(at, pick) in jobs {
        replay.advance_to(at);
        let dir = base.path().join(format!("s{states}"));
        let what = replay.materialise(&dir, pick).and_then(|()| {
            let state = CrashState {
                dir: &dir,
                moment: at,
                pick,
            };
            match catch_unwind(AssertUnwindSafe(|| check(&state))) {
                Ok(r) => r,
                Err(payload) => Err(format!("panicked: {}", panic_text(&*payload))),
            }
        });
        if let Err(violation) = what {
            let mut msg = format!(
                "power-loss state violates an invariant: {violation}\n  cut after {at} of {} \
                 operations, pick {pick:?}, seed {} (STELE_CRASH_SEED)\n  operations around \
                 the cut:\n",
                recording.len(),
                opts.seed
            );
            for line in recording.describe_around(at, 12) {
                let _ = writeln!(msg, "    {line}");
            }
            panic!("{msg}");
        }
        let _ = std::fs::remove_dir_all(&dir);
        states += 1;
    }
    states
}

/// A new folder for crash states, removed when dropped. In memory where there is a tmpfs:
/// on this project's VMs removing and creating the files of a state on the disk took
/// 20-30 ms, more than opening it.
pub(crate) fn scratch_dir(prefix: &str) -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    if shm.is_dir() {
        builder.tempdir_in(shm).or_else(|_| builder.tempdir())
    } else {
        builder.tempdir()
    }
    .unwrap_or_else(|e| panic!("creating a folder for crash states: {e}"))
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

/// The names of the table files (`*.stt`) of database folder `db_dir`, sorted: what a test
/// compares before and after an operation that must leave no table behind.
pub fn table_files(db_dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(db_dir.join("tables"))
        .expect("listing the database's tables folder")
        .map(|e| {
            let entry = e.expect("reading the tables folder");
            entry.file_name().to_string_lossy().into_owned()
        })
        .filter(|n| n.ends_with(".stt"))
        .collect();
    names.sort();
    names
}

/// Copies folder `from` into `to` (made if missing), files and folders: a database folder
/// set up once, copied for each round of a test that changes it.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("making the copy's folder");
    for entry in std::fs::read_dir(from).expect("listing the folder copied") {
        let entry = entry.expect("reading the folder copied");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copying a file");
        }
    }
}

/// Cases for a property test: `default` times `STELE_PROPTEST_SCALE` (a whole number,
/// default 1). CI runs the defaults; a longer hunt (`STELE_PROPTEST_SCALE=100`) finds what
/// a few dozen random cases rarely reach: two planner bugs of the query model's property
/// were found at 4,000 cases after passing at 48 for weeks.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("STELE_PROPTEST_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .map_or(default, |scale| default.saturating_mul(scale.max(1)))
}
