//! Storing derived memories (summaries, portraits) that replace earlier ones: the new
//! memory is inserted and each memory it replaces becomes `superseded` by it, in one
//! transaction, with a `superseded` event on the old and a `summarized` event on the new.
//!
//! Nothing is deleted: an old summary stays readable (and restorable) for audits, which
//! is how "what did membank think of this day last week?" stays answerable.

use membank_core::event::{EventKind, NewEvent};
use membank_core::{Memory, MemoryId, Status, Timestamp};
use rusqlite::params;
use serde_json::json;

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
            append_event(
                tx,
                user,
                &NewEvent::about(
                    *old,
                    EventKind::Superseded,
                    now,
                    json!({ "by": id.to_string(), "previous_status": memory.status.as_str() }),
                ),
            )?;
        }
        if !replaces.is_empty() {
            bump_revision(tx, user)?;
        }
        let replaced: Vec<String> = replaces.iter().map(ToString::to_string).collect();
        append_event(
            tx,
            user,
            &NewEvent::about(
                id,
                EventKind::Summarized,
                now,
                json!({ "kind": kind.as_str(), "sources": sources, "replaces": replaced }),
            ),
        )?;
        Ok(fetch_one(tx, user, &scope, id)?.1)
    })
}
