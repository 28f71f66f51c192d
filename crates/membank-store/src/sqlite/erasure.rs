//! Erasure in SQLite: the cascade of `crate::erasure` over this backend's rows, and the
//! bytes that go with them.
//!
//! The bytes go too, not only the rows: the writer runs with `secure_delete` (freed
//! space is zeroed), the full-text index runs with FTS5's `secure-delete` (a deleted row's
//! terms are removed from the index's pages at once, at a cost that depends on the row's
//! terms, not on the index: no `optimize` of the whole table under the writer lock),
//! stored idempotent answers that quoted an erased memory are dropped, LLM-written
//! reasons in its events are removed, and the WAL is checkpointed and truncated once the
//! transaction commits, so no older page image survives in `-wal`. A reader holding an
//! older snapshot can keep that checkpoint from finishing; the erasure is then marked due
//! a purge in the same transaction, and `wal_purge` finishes it once the reader is done.

use membank_core::{Memory, MemoryId, Scope, Status, Timestamp};
use rusqlite::params;

use super::txn::UserWriter;
use super::{SqliteStore, fetch_one, index_body_of, scope_tag, wal_purge};
use crate::StoreError;
use crate::erasure::{EraseTx, Reached, erase_cascade};

/// Erases `id` and everything that reached it; returns the root's tombstone.
pub(super) fn erase(store: &SqliteStore, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
    let (memory, due) = store.write(|tx| {
        let user = SqliteStore::existing_user(tx, scope).map_err(|_| StoreError::memory_not_found(id))?;
        let (seq, root) = fetch_one(tx, user, scope, id)?;
        if root.status == Status::Erased {
            return Ok((root, None));
        }
        let root = Reached { seq, id, status: root.status, kind: root.kind };
        let erased = erase_cascade(&mut UserWriter { tx, user }, root, now)?;
        // Durably due a purge of the WAL, in the same transaction: if this process stops
        // before the checkpoint below finishes, whoever opens the file next finishes it.
        let due = if erased > 0 { Some(wal_purge::mark(tx)?) } else { None };
        Ok((fetch_one(tx, user, scope, id)?.1, due))
    })?;
    // The erasure is committed: from here on it happened, whatever the checkpoint does
    // (see `SqliteStore::purge_wal`).
    if let Some(due) = due {
        store.purge_wal(due);
    }
    Ok(memory)
}

impl EraseTx for UserWriter<'_, '_> {
    fn reached_by(&mut self, id: MemoryId) -> Result<Vec<Reached>, StoreError> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT m.seq, m.id, m.status, m.kind FROM memories m
             WHERE m.user_row = ?1 AND m.status != 'erased'
               AND (m.superseded_by = ?2 OR EXISTS (SELECT 1 FROM json_each(m.derived_from) j WHERE j.value = ?2))
             ORDER BY m.seq",
        )?;
        let rows = stmt.query_map(params![self.user, id.to_string()], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, found, status, kind) = row?;
            out.push(Reached {
                seq,
                id: found.parse().map_err(|_| StoreError::Corrupt(format!("bad memory id {found:?}")))?,
                status: status.parse().map_err(|_| StoreError::Corrupt(format!("bad status {status:?}")))?,
                kind: kind.parse().map_err(|_| StoreError::Corrupt(format!("bad kind {kind:?}")))?,
            });
        }
        Ok(out)
    }

    fn erase_row(&mut self, seq: i64, id: MemoryId) -> Result<(), StoreError> {
        let (tx, user) = (self.tx, self.user);
        // Out of the full-text index by its own terms, before the text goes: FTS5's 'delete'
        // command with `secure-delete` on removes them from the index pages now (a DELETE
        // on the `contentless_delete` table of schemas before v6 only marked the rowid
        // deleted, and the terms stayed in the segments until a merge).
        let (content, user_text, assistant_text): (Option<String>, Option<String>, Option<String>) = tx
            .prepare_cached("SELECT content, user_text, assistant_text FROM memories WHERE seq = ?1 AND user_row = ?2")?
            .query_row(params![seq, user], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let body = index_body_of(content.as_deref(), user_text.as_deref(), assistant_text.as_deref());
        tx.prepare_cached("INSERT INTO memory_fts (memory_fts, rowid, scope_tag, body) VALUES ('delete', ?1, ?2, ?3)")?
            .execute(params![seq, scope_tag(user), body])?;
        tx.prepare_cached("UPDATE memories SET content = NULL, user_text = NULL, assistant_text = NULL, metadata = '{}', status = 'erased' WHERE seq = ?1 AND user_row = ?2")?
            .execute(params![seq, user])?;
        tx.prepare_cached("DELETE FROM embeddings WHERE memory_seq = ?1")?.execute([seq])?;
        // Events are content-free but for reasons an LLM wrote (conflicts), which may quote it.
        tx.prepare_cached("UPDATE events SET data = json_remove(data, '$.reason') WHERE user_row = ?1 AND memory_id = ?2 AND json_extract(data, '$.reason') IS NOT NULL")?
            .execute(params![user, id.to_string()])?;
        // A stored idempotent answer that quoted it: the ids stay (a retry still stores
        // nothing), the answer is rebuilt from the tombstones.
        tx.prepare_cached("UPDATE idempotency_keys SET response = NULL WHERE user_row = ?1 AND response IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(memory_ids) j WHERE j.value = ?2)")?
            .execute(params![user, id.to_string()])?;
        Ok(())
    }

    fn mark_resummarize_due(&mut self) -> Result<(), StoreError> {
        self.tx.prepare_cached("UPDATE users SET resummarize_due = 1 WHERE id = ?1")?.execute([self.user])?;
        Ok(())
    }
}
