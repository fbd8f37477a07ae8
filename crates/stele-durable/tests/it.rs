//! Every integration test of this crate in one binary: one link instead of one per
//! file (each a link of the whole crate graph; minutes of CI on 2 cores). A file here
//! is a module; its tests are named `file::test`.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod concurrency;
mod crash;
#[allow(
    dead_code,
    reason = "each test module uses a part of the shared helpers"
)]
mod generations;
mod model;
mod power_loss;
mod store;
