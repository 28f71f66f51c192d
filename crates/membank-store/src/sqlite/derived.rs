//! Storing derived memories (summaries, portraits) that replace earlier ones: the new
//! memory is inserted and each memory it replaces becomes `superseded` by it, in one
//! transaction, with a `superseded` event on the old and a `summarized` event on the new.
//!
//! Nothing is deleted: an old summary stays readable (and restorable) for audits, which
//! is how "what did membank think of this day last week?" stays answerable.

use membank_core::event_payload as payload;
use membank_core::{Memory, MemoryId, Status, Timestamp};
use rusqlite::params;

use super::{SqliteStore, append_event, bump_revision, fetch_one, insert_in};
use crate::{NewMemory, StoreError};

pub(super) fn insert_superseding(
    store: &SqliteStore,
    new: NewMemory,
    replaces: &[MemoryId],
    now: Timestamp,
) -> Result<Memory, StoreError> {
    let scope = new.memory.scope.clone();
    let kind = new.memory.kind;
    let sources = new.memory.derived_from.len();
    store.write(|tx| {
        let (user, id) = insert_in(tx, new)?;
        for old in replaces {
            let (seq, memory) = fetch_one(tx, user, &scope, *old)?;
            if matches!(memory.status, Status::Superseded | Status::Erased) {
                return Err(StoreError::Conflict(format!(
                    "memory {old} is {} and cannot be superseded again",
                    memory.status
                )));
            }
            tx.prepare_cached(
                "UPDATE memories SET status = 'superseded', superseded_by = ?1 WHERE seq = ?2 AND user_row = ?3",
            )?
            .execute(params![id.to_string(), seq, user])?;
            append_event(tx, user, &payload::superseded_by_summary(*old, now, id, memory.status))?;
        }
        if !replaces.is_empty() {
            bump_revision(tx, user)?;
        }
        append_event(tx, user, &payload::summarized(id, now, kind, sources, replaces))?;
        Ok(fetch_one(tx, user, &scope, id)?.1)
    })
}
