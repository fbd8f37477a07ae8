//! Every integration test of this crate in one binary: one link instead of one per
//! file (each a link of the whole crate graph; minutes of CI on 2 cores). A file here
//! is a module; its tests are named `file::test`.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod arrow;
mod arrow_import;
mod arrow_parquet;
mod arrow_rows;
mod backup;
mod backup_faults;
mod backup_rate;
mod blocks;
mod common;
mod compact;
mod compress;
mod crash;
mod db;
mod dictionaries;
mod faults;
mod golden_db;
mod import_bulk;
mod import_cancel;
mod import_crash;
mod import_export;
mod import_id_field;
mod import_packed;
mod import_streamed;
mod import_syncs;
mod int_ids;
mod pack;
mod parquet_import;
mod power;
mod power_loss;
mod power_loss_recovery;
mod query;
mod query_array_fields;
mod query_index_cache;
mod query_model;
mod query_model_regressions;
mod query_paths;
mod query_spill;
mod query_stream;
mod readers;
mod readers_in_place;
mod tiered_compaction;
