//! No code: this crate exists for its `Cargo.toml`, which asks every third-party dependency
//! of the workspace for the union of the features its crates use (`cargo hakari generate`),
//! so that every package set builds them alike (see `docs/ARCHITECTURE.md`).
