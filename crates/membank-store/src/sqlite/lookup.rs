//! Lookups by metadata, for idempotent imports: which values of one metadata key (such
//! as `import_key`) already exist among a scope's memories, and which memory carries each.
//!
//! Read-only, scoped like every other query; it deliberately knows nothing of import
//! formats — the engine decides what a key means.

use std::collections::HashMap;

use membank_core::MemoryId;

use membank_core::Scope;
use rusqlite::params;

use super::{SqliteStore, user_row};
use crate::StoreError;

/// The values of metadata key `key` among the memories of `scope`'s user, in any status
/// but erased (erasure clears metadata), each with the id of the first memory carrying it.
pub(super) fn metadata_index(store: &SqliteStore, scope: &Scope, key: &str) -> Result<HashMap<String, MemoryId>, StoreError> {
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(HashMap::new()) };
        // The key is passed as a JSON path member quoted by SQLite's own json_quote, so no
        // key text can change the path's meaning.
        let mut stmt = conn.prepare_cached(
            "SELECT json_extract(m.metadata, '$.' || json_quote(?2)), m.id FROM memories m
             WHERE m.user_row = ?1 AND json_extract(m.metadata, '$.' || json_quote(?2)) IS NOT NULL ORDER BY m.seq",
        )?;
        let rows = stmt.query_map(params![user, key], |row| Ok((row.get::<_, rusqlite::types::Value>(0)?, row.get::<_, String>(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (value, id) = row?;
            let value = match value {
                rusqlite::types::Value::Text(text) => text,
                rusqlite::types::Value::Integer(n) => n.to_string(),
                _ => continue,
            };
            let id: MemoryId = id.parse().map_err(|_| StoreError::Corrupt("bad memory id".into()))?;
            out.entry(value).or_insert(id);
        }
        Ok(out)
    })
}
