//! Lookups by metadata, for idempotent imports: which values of one metadata key (such
//! as `import_key`) already exist among a scope's memories, and which memory carries each;
//! lookups by position, for neighbour expansion: the memories just before and after one;
//! and which days have memories, for a date named without a year.
//!
//! Read-only, scoped like every other query; it deliberately knows nothing of import
//! formats — the engine decides what a key means.

use std::collections::HashMap;

use chrono::NaiveDate;
use membank_core::MemoryId;

use membank_core::Scope;
use rusqlite::{OptionalExtension, named_params, params};

use super::{LABEL_FILTER, SqliteStore, quoted_list, user_row};
use crate::StoreError;
use crate::types::{Adjacent, SearchFilter};

/// The values of metadata key `key` among the memories of `scope`'s user, in any status
/// but erased (erasure clears metadata), each with the id of the first memory carrying it.
pub(super) fn metadata_index(
    store: &SqliteStore,
    scope: &Scope,
    key: &str,
) -> Result<HashMap<String, MemoryId>, StoreError> {
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(HashMap::new()) };
        // The key is passed as a JSON path member quoted by SQLite's own json_quote, so no
        // key text can change the path's meaning.
        let mut stmt = conn.prepare_cached(
            "SELECT json_extract(m.metadata, '$.' || json_quote(?2)), m.id FROM memories m
             WHERE m.user_row = ?1 AND json_extract(m.metadata, '$.' || json_quote(?2)) IS NOT NULL ORDER BY m.seq",
        )?;
        let rows = stmt.query_map(params![user, key], |row| {
            Ok((row.get::<_, rusqlite::types::Value>(0)?, row.get::<_, String>(1)?))
        })?;
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

/// The SQL condition for the memories of `:user` that a recall with `filter` may return
/// (its statuses, kinds and the `:agent`/`:session` labels), on the alias `m`.
fn admitted_by(filter: &SearchFilter) -> String {
    let statuses = if filter.include_archived { "'active', 'archived', 'superseded'" } else { "'active'" };
    let kinds = if filter.kinds.is_empty() {
        String::new()
    } else {
        let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
        format!("AND m.kind IN ({})", quoted_list(&kinds))
    };
    format!("m.user_row = :user AND m.status IN ({statuses}) {kinds} {LABEL_FILTER}")
}

/// See [`crate::Store::adjacent`]. Two indexed seeks per id on `memories_by_user_day`,
/// however many memories the day or the user holds.
pub(super) fn adjacent(
    store: &SqliteStore,
    scope: &Scope,
    ids: &[MemoryId],
    filter: &SearchFilter,
) -> Result<Vec<Adjacent>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
        let admitted = admitted_by(filter);
        let mut this = conn.prepare_cached(&format!("SELECT m.seq, m.day, m.occurred_at FROM memories m WHERE m.id = :id AND {admitted}"))?;
        let side = |cmp: &str, order: &str| {
            format!(
                "SELECT m.id FROM memories m WHERE {admitted} AND m.day = :day
                 AND (m.occurred_at {cmp} :at OR (m.occurred_at = :at AND m.seq {cmp} :seq))
                 ORDER BY m.occurred_at {order}, m.seq {order} LIMIT 1"
            )
        };
        let mut before = conn.prepare_cached(&side("<", "DESC"))?;
        let mut after = conn.prepare_cached(&side(">", "ASC"))?;
        let agent = scope.agent.as_ref().map(|a| a.as_str());
        let session = scope.session.as_ref().map(|s| s.as_str());
        let parse = |id: Option<String>| -> Result<Option<MemoryId>, StoreError> {
            id.map(|id| id.parse().map_err(|_| StoreError::Corrupt("bad memory id".into()))).transpose()
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let found = this
                .query_row(named_params! { ":id": id.to_string(), ":user": user, ":agent": agent, ":session": session }, |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?))
                })
                .optional()?;
            let Some((seq, day, at)) = found else { continue };
            let params = named_params! { ":user": user, ":agent": agent, ":session": session, ":day": day, ":at": at, ":seq": seq };
            let before_id = before.query_row(params, |row| row.get::<_, String>(0)).optional()?;
            let after_id = after.query_row(params, |row| row.get::<_, String>(0)).optional()?;
            out.push(Adjacent { id: *id, before: parse(before_id)?, after: parse(after_id)? });
        }
        Ok(out)
    })
}

/// See [`crate::Store::days_with_memories`]. One seek per day on `memories_by_user_day`.
pub(super) fn days_with_memories(
    store: &SqliteStore,
    scope: &Scope,
    days: &[NaiveDate],
    filter: &SearchFilter,
) -> Result<Vec<NaiveDate>, StoreError> {
    if days.is_empty() {
        return Ok(Vec::new());
    }
    store.read(|conn| {
        let Some((user, _)) = user_row(conn, &scope.tenant, &scope.user)? else { return Ok(Vec::new()) };
        let mut any = conn.prepare_cached(&format!(
            "SELECT 1 FROM memories m WHERE {} AND m.day = :day LIMIT 1",
            admitted_by(filter)
        ))?;
        let agent = scope.agent.as_ref().map(|a| a.as_str());
        let session = scope.session.as_ref().map(|s| s.as_str());
        let mut out = Vec::new();
        for day in days {
            let text = day.format("%Y-%m-%d").to_string();
            if any
                .query_row(named_params! { ":user": user, ":day": text, ":agent": agent, ":session": session }, |_| {
                    Ok(())
                })
                .optional()?
                .is_some()
            {
                out.push(*day);
            }
        }
        Ok(out)
    })
}
