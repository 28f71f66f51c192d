//! Lookups by metadata (which values of one metadata key a user's memories carry, for
//! idempotent imports), by position (a memory's neighbours on its day, for neighbour
//! expansion) and by day (which days hold memories, for a date named without a year).
//! Read-only and scoped like every other query; the SQLite store's `lookup.rs` is the
//! reference for each answer.

use std::collections::HashMap;

use chrono::NaiveDate;
use membank_core::{MemoryId, Scope};
use uuid::Uuid;

use super::{PgStore, col, label_filter, labels, memory_id, scope_uid};
use crate::StoreError;
use crate::types::{Adjacent, SearchFilter};

/// See [`crate::Store::metadata_index`]: every status but erased (erasure clears metadata),
/// the first memory carrying each value.
pub(super) fn metadata_index(
    store: &PgStore,
    scope: &Scope,
    key: &str,
) -> Result<HashMap<String, MemoryId>, StoreError> {
    let uid = scope_uid(scope);
    store.pool.read(|tx| {
        // The key is a bound parameter of `->>` and `?`: no key text can change the query.
        let rows = tx.query(
            "SELECT m.metadata ->> $2, m.id FROM memories m WHERE m.uid = $1 AND m.metadata ? $2 ORDER BY m.seq",
            &[&uid, &key],
        )?;
        let mut out = HashMap::new();
        for row in rows {
            let Some(value) = col::<Option<String>>(&row, 0)? else { continue };
            out.entry(value).or_insert(memory_id(col(&row, 1)?)?);
        }
        Ok(out)
    })
}

/// The SQL condition for the memories of `$1` that a recall with `filter` may return: its
/// statuses and kinds (bound as `$2`, `$3`) and the labels (`$4`, `$5`), on the alias `m`.
fn admitted() -> String {
    format!(
        "m.uid = $1 AND m.status = ANY($2) AND (cardinality($3::text[]) = 0 OR m.kind = ANY($3)) {}",
        label_filter(4)
    )
}

fn statuses(filter: &SearchFilter) -> Vec<&'static str> {
    if filter.include_archived { vec!["active", "archived", "superseded"] } else { vec!["active"] }
}

/// See [`crate::Store::adjacent`]. One statement for all ids: for each, the admitted memory
/// just before and just after it on its day in `(occurred_at, seq)` order, each found by
/// one descent of `memories_by_user_day`.
pub(super) fn adjacent(
    store: &PgStore,
    scope: &Scope,
    ids: &[MemoryId],
    filter: &SearchFilter,
) -> Result<Vec<Adjacent>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let uid = scope_uid(scope);
    let admitted = admitted();
    let side = |cmp: &str, order: &str| {
        format!(
            "(SELECT n.id FROM memories n WHERE {} AND n.day = m.day
                AND (n.occurred_at {cmp} m.occurred_at OR (n.occurred_at = m.occurred_at AND n.seq {cmp} m.seq))
              ORDER BY n.occurred_at {order}, n.seq {order} LIMIT 1)",
            admitted.replace("m.", "n.")
        )
    };
    let sql = format!(
        "SELECT m.id, {}, {} FROM memories m WHERE {admitted} AND m.id = ANY($6)",
        side("<", "DESC"),
        side(">", "ASC")
    );
    let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let (agent, session) = labels(scope);
    let list: Vec<Uuid> = ids.iter().map(MemoryId::as_uuid).collect();
    store.pool.read(|tx| {
        let mut found: HashMap<MemoryId, Adjacent> = HashMap::new();
        for row in tx.query(&sql, &[&uid, &statuses(filter), &kinds, &agent, &session, &list])? {
            let id = memory_id(col(&row, 0)?)?;
            let before = col::<Option<Uuid>>(&row, 1)?.map(memory_id).transpose()?;
            let after = col::<Option<Uuid>>(&row, 2)?.map(memory_id).transpose()?;
            found.insert(id, Adjacent { id, before, after });
        }
        Ok(ids.iter().filter_map(|id| found.get(id).copied()).collect())
    })
}

/// See [`crate::Store::days_with_memories`]. One statement; one index probe per day.
pub(super) fn days_with_memories(
    store: &PgStore,
    scope: &Scope,
    days: &[NaiveDate],
    filter: &SearchFilter,
) -> Result<Vec<NaiveDate>, StoreError> {
    if days.is_empty() {
        return Ok(Vec::new());
    }
    let uid = scope_uid(scope);
    let sql = format!(
        "SELECT d.day FROM unnest($6::date[]) AS d(day) WHERE EXISTS (SELECT 1 FROM memories m WHERE {} AND m.day = d.day)",
        admitted()
    );
    let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let (agent, session) = labels(scope);
    store.pool.read(|tx| {
        tx.query(&sql, &[&uid, &statuses(filter), &kinds, &agent, &session, &days])?
            .iter()
            .map(|row| col(row, 0))
            .collect()
    })
}
