//! Editing a memory with its history kept: the edited text becomes a new memory and the
//! old one is `superseded` by it, in one transaction. The old text therefore stays
//! inspectable (and restorable, and erasable) like any other memory, and the event log
//! stays content-free: it records *that* an edit happened and which ids it linked.

use membank_core::event_payload as payload;
use membank_core::{MemoryId, Scope, Status};
use rusqlite::params;

use super::{SqliteStore, append_event, bump_revision, fetch_one, insert_in};
use crate::StoreError;
use crate::types::NewMemory;

/// See [`crate::Store::supersede`].
pub(super) fn supersede(
    store: &SqliteStore,
    scope: &Scope,
    old: MemoryId,
    new: NewMemory,
) -> Result<membank_core::Memory, StoreError> {
    if new.memory.scope.tenant != scope.tenant || new.memory.scope.user != scope.user {
        return Err(StoreError::Invalid(membank_core::InvalidInput::new(
            "scope",
            "an edit must stay with the same user",
        )));
    }
    store.write(|tx| {
        let user = SqliteStore::existing_user(tx, scope).map_err(|_| StoreError::memory_not_found(old))?;
        let (old_seq, previous) = fetch_one(tx, user, scope, old)?;
        if previous.status != Status::Active {
            return Err(StoreError::Conflict(format!(
                "memory {old} is {}, only an active memory can be edited",
                previous.status
            )));
        }
        let at = new.memory.recorded_at;
        let new_scope = new.memory.scope.clone();
        let (_, new_id) = insert_in(tx, new)?;
        tx.prepare_cached(
            "UPDATE memories SET status = 'superseded', superseded_by = ?1 WHERE seq = ?2 AND user_row = ?3",
        )?
        .execute(params![new_id.to_string(), old_seq, user])?;
        bump_revision(tx, user)?;
        append_event(tx, user, &payload::edited(new_id, at, old))?;
        append_event(tx, user, &payload::superseded_by_edit(old, at, new_id))?;
        Ok(fetch_one(tx, user, &new_scope, new_id)?.1)
    })
}
