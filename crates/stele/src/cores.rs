//! The number of cores this process may use, for the stages that share work across threads
//! (`batch`'s JSON conversion, `db::compression`'s batch compression). Imports nothing of
//! the crate: any module may use it.

/// The cores this process may use, read once. `std::thread::available_parallelism` reads
/// the cgroup's CPU quota files on every call (30 us here); commits and conversions ask for
/// it each time, and a one-document commit took 30 us longer for it.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
