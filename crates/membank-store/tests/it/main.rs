//! The stores at their trait boundary: the conformance suite, one body of tests run on
//! every backend (`conformance.rs`; PostgreSQL when `MEMBANK_TEST_PG_URL` is set), and the
//! SQLite store against an in-memory model under random operation sequences (two handles
//! on one file, as two processes would be), its caches, and opening database files of
//! every released schema version.

#![allow(missing_docs)]

mod cache;
mod conformance;
mod erasure_bytes;
mod maintenance;
mod migrations;
mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod search;

use membank_core::{Kind, Memory, Scope, Timestamp};

/// A new active memory of `kind` with `text` as its content, occurring and recorded at `at`.
pub fn memory(scope: &Scope, kind: Kind, text: &str, at: Timestamp) -> Memory {
    Memory::fixture(scope, kind, text, at)
}
