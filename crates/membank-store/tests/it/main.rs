//! The stores at their trait boundary: the conformance suite, one body of tests run on
//! every backend (`conformance.rs`; PostgreSQL when `MEMBANK_TEST_PG_URL` is set), and the
//! SQLite store against an in-memory model under random operation sequences (two handles
//! on one file, as two processes would be), its caches, and opening database files of
//! every released schema version.

#![allow(missing_docs)]

mod cache;
mod conformance;
mod maintenance;
mod migrations;
mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod search;

use std::collections::BTreeMap;

use membank_core::{ForgettingState, Kind, Memory, MemoryId, Scope, Source, Status, Timestamp};

/// A new active memory of `kind` with `text` as its content, occurring and recorded at `at`.
pub fn memory(scope: &Scope, kind: Kind, text: &str, at: Timestamp) -> Memory {
    Memory {
        id: MemoryId::generate(at),
        scope: scope.clone(),
        kind,
        source: Source::User,
        content: Some(text.to_string()),
        user_text: None,
        assistant_text: None,
        occurred_at: at,
        recorded_at: at,
        day: at.date_naive(),
        forgetting: ForgettingState::new(at),
        status: Status::Active,
        superseded_by: None,
        derived_from: Vec::new(),
        metadata: BTreeMap::new(),
    }
}
