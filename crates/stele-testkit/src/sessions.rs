//! The next session after a power cut. Crash states of one recording become the starting
//! folders of a second workload (opening, which recovers: cuts a torn log tail, replays the
//! log, removes partial files, collects garbage; then more work), itself recorded and
//! explored like any workload, so that a power cut during recovery is checked with the same
//! invariants as one during any other work.

use crate::model::Op;
use crate::{CrashState, ExploreOptions, Pick, Recording, SimDisk, explore, scratch_dir};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kinds of recorded operations (see [`Recording::ops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpKind {
    /// A new file.
    Create,
    /// A new folder.
    Mkdir,
    /// Bytes written.
    Write,
    /// A file cut or extended.
    SetLen,
    /// fsync of a file.
    Fsync,
    /// fdatasync of a file.
    Fdatasync,
    /// A hard link (`path` is the new name).
    Link,
    /// A rename (`path` is the new name).
    Rename,
    /// A name removed.
    Remove,
    /// fsync of a folder.
    SyncDir,
}

/// One recorded operation as a test sees it: its kind and the name it concerns (for writes,
/// cuts and syncs of a file, the name the file was created under or found at).
#[derive(Debug, Clone)]
pub struct OpInfo {
    /// What it did.
    pub kind: OpKind,
    /// Relative to the recorded root.
    pub path: PathBuf,
}

impl Recording {
    /// The operations recorded, in order: operation `i` is the last one a cut at moment
    /// `i + 1` keeps.
    pub fn ops(&self) -> Vec<OpInfo> {
        let mut names: HashMap<usize, PathBuf> = self
            .base
            .files
            .iter()
            .map(|(path, ino, _)| (*ino, path.clone()))
            .collect();
        let name = |names: &HashMap<usize, PathBuf>, ino: &usize| {
            names.get(ino).cloned().unwrap_or_default()
        };
        let mut out = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            let (kind, path) = match op {
                Op::Create { path, ino } => {
                    names.insert(*ino, path.clone());
                    (OpKind::Create, path.clone())
                }
                Op::Mkdir { path } => (OpKind::Mkdir, path.clone()),
                Op::Write { ino, .. } => (OpKind::Write, name(&names, ino)),
                Op::SetLen { ino, .. } => (OpKind::SetLen, name(&names, ino)),
                Op::Sync { ino, data_only } => (
                    if *data_only {
                        OpKind::Fdatasync
                    } else {
                        OpKind::Fsync
                    },
                    name(&names, ino),
                ),
                Op::Link { to, .. } => (OpKind::Link, to.clone()),
                Op::Rename { to, .. } => (OpKind::Rename, to.clone()),
                Op::Remove { path } => (OpKind::Remove, path.clone()),
                Op::SyncDir { path } => (OpKind::SyncDir, path.clone()),
            };
            out.push(OpInfo { kind, path });
        }
        out
    }
}

/// A crash state of a first recording to start the next session from.
#[derive(Debug, Clone)]
pub struct Start {
    /// Operations before the cut.
    pub moment: usize,
    /// What the cut kept ([`Pick::LastOpLost`] is everything kept one operation earlier).
    pub pick: Pick,
    /// What the state was chosen for (a torn log tail, a partial table, ...): failure
    /// messages name it.
    pub why: &'static str,
}

/// What [`explore_sessions`] did.
#[derive(Debug, Clone, Copy)]
pub struct SessionsExplored {
    /// Starting states, each the folder of one recorded next session.
    pub starts: usize,
    /// Crash states of the next sessions opened and checked, in all.
    pub states: usize,
    /// Operations the next sessions recorded, in all.
    pub ops: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// For each start: materialises it into a fresh folder, lets `prepare` change that folder
/// (damage it as a cut could have: a torn record after the log's last one, say), starts
/// recording there (what the folder holds is the durable base), runs `session` on it (the
/// next session: opening, which recovers, then more work; it returns what the check needs,
/// or an error) and explores the states a cut at any moment of that session could leave
/// with `check`, `opts.states` shared by the starts. Panics at the first violation, with
/// the start's moment, pick and reason.
pub fn explore_sessions<R>(
    recording: &Recording,
    starts: &[Start],
    opts: &ExploreOptions,
    mut prepare: impl FnMut(&Start, &Path) -> Result<(), String>,
    mut session: impl FnMut(&Arc<SimDisk>, &Path) -> Result<R, String>,
    mut check: impl FnMut(&R, &CrashState<'_>) -> Result<(), String>,
) -> SessionsExplored {
    let started = Instant::now();
    // The replay only moves forward: starts in the order of their moments.
    let mut order: Vec<(usize, Pick, &Start)> = starts
        .iter()
        .map(|s| match s.pick {
            Pick::LastOpLost => (s.moment.saturating_sub(1), Pick::AllKept, s),
            pick => (s.moment, pick, s),
        })
        .collect();
    order.sort_by_key(|(at, _, _)| *at);
    let base = scratch_dir("stele-sessions-");
    let mut replay = recording.replay();
    let (mut states, mut ops) = (0, 0);
    for (i, (at, pick, start)) in order.into_iter().enumerate() {
        let what = format!(
            "next session from {} (cut after {at} of {} operations, pick {pick:?})",
            start.why,
            recording.len()
        );
        replay.advance_to(at);
        let dir = base.path().join(format!("start{i}"));
        replay
            .materialise(&dir, pick)
            .and_then(|()| prepare(start, &dir))
            .unwrap_or_else(|e| panic!("{what}: preparing the start: {e}"));
        let disk = SimDisk::new(&dir).unwrap_or_else(|e| panic!("{what}: recording: {e}"));
        let result = session(&disk, &dir).unwrap_or_else(|e| panic!("{what}: {e}"));
        let next = disk.recording();
        ops += next.len();
        // The states of each session are picked with their own seed: the same start
        // explored alone (a shorter list) makes the same picks.
        // The budget left, shared by the starts left: what one explored short of its share
        // (a whole number of states per moment) goes to the next ones.
        let left = starts.len() - i;
        let opts = ExploreOptions {
            states: (opts.states.saturating_sub(states) / left).max(1),
            seed: opts.seed ^ (at as u64).rotate_left(32),
        };
        let explored = explore(&next, &opts, |state| {
            check(&result, state).map_err(|e| format!("{e}\n  in the {what}"))
        });
        states += explored.states;
        let _ = std::fs::remove_dir_all(&dir);
    }
    SessionsExplored {
        starts: starts.len(),
        states,
        ops,
        elapsed: started.elapsed(),
    }
}
