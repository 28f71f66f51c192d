//! Erasure in PostgreSQL: the cascade of `crate::erasure` over this backend's rows, in one
//! transaction under the user's lock. Each memory it reaches loses its content, texts,
//! metadata and vector, LLM-written `reason`s are removed from its events and stored
//! idempotent answers that quoted it are dropped, as in the SQLite store.
//!
//! What is not the same: the bytes. SQLite zeroes freed space (`secure_delete`) and
//! truncates its WAL; PostgreSQL keeps the old row versions (with the text) in the table
//! files until VACUUM — autovacuum, or an operator's — removes them, and in WAL segments
//! and base backups until those are recycled. After a commit no query, index or search can
//! return the text (each server's search cache reloads a user after an erasure), but a file-level
//! copy taken before VACUUM can still hold it. An operator who must guarantee physical removal runs `VACUUM memories, embeddings,
//! events` after erasures and keeps WAL archives and backups under the same
//! retention rule.

use membank_core::{Memory, MemoryId, Scope, Status, Timestamp};

use super::txn::UserWriter;
use super::{PgStore, col, existing_user, fetch_one, memory_id, not_found_as, parse};
use crate::StoreError;
use crate::erasure::{EraseTx, Reached, erase_cascade};

/// Erases `id` and everything that reached it; returns the root's tombstone.
pub(super) fn erase(store: &PgStore, scope: &Scope, id: MemoryId, now: Timestamp) -> Result<Memory, StoreError> {
    store.pool.write(|tx| {
        let uid = existing_user(tx, scope).map_err(not_found_as(id))?;
        let (seq, root) = fetch_one(tx, uid, scope, id)?;
        if root.status == Status::Erased {
            return Ok(root);
        }
        let root = Reached { seq, id, status: root.status, kind: root.kind };
        erase_cascade(&mut UserWriter { store, tx, uid }, root, now)?;
        Ok(fetch_one(tx, uid, scope, id)?.1)
    })
}

impl EraseTx for UserWriter<'_, '_> {
    fn reached_by(&mut self, id: MemoryId) -> Result<Vec<Reached>, StoreError> {
        let rows = self.tx.query(
            "SELECT m.seq, m.id, m.status, m.kind FROM memories m
             WHERE m.uid = $1 AND m.status <> 'erased' AND (m.superseded_by = $2 OR m.derived_from @> ARRAY[$2]::uuid[])
             ORDER BY m.seq",
            &[&self.uid, &id.as_uuid()],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Reached {
                    seq: col(row, 0)?,
                    id: memory_id(col(row, 1)?)?,
                    status: parse("status", &col::<String>(row, 2)?)?,
                    kind: parse("kind", &col::<String>(row, 3)?)?,
                })
            })
            .collect()
    }

    fn erase_row(&mut self, seq: i64, id: MemoryId) -> Result<(), StoreError> {
        let (tx, uid) = (&mut *self.tx, self.uid);
        tx.execute(
            "UPDATE memories SET content = NULL, user_text = NULL, assistant_text = NULL, metadata = '{}', status = 'erased' WHERE uid = $1 AND seq = $2",
            &[&uid, &seq],
        )?;
        tx.execute("DELETE FROM embeddings WHERE uid = $1 AND seq = $2", &[&uid, &seq])?;
        // Events are content-free but for reasons an LLM wrote (conflicts), which may quote it.
        tx.execute(
            "UPDATE events SET data = data - 'reason' WHERE uid = $1 AND memory_id = $2 AND data ? 'reason'",
            &[&uid, &id.as_uuid()],
        )?;
        // A stored idempotent answer that quoted it: the ids stay (a retry still stores
        // nothing), the answer is rebuilt from the tombstones.
        tx.execute(
            "UPDATE idempotency_keys SET response = NULL WHERE uid = $1 AND response IS NOT NULL AND $2 = ANY(memory_ids)",
            &[&uid, &id.as_uuid()],
        )?;
        Ok(())
    }

    fn mark_resummarize_due(&mut self) -> Result<(), StoreError> {
        self.tx.execute("UPDATE users SET resummarize_due = true WHERE uid = $1", &[&self.uid])?;
        Ok(())
    }
}
