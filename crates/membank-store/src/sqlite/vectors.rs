//! The in-process cache of each user's vectors, for exact dense search.
//!
//! A user's vectors are read from SQLite once into one contiguous `f32` matrix and then
//! scanned in memory. The cache is checked against the database on every search: rows
//! appended since (by any process) are loaded incrementally, and a changed
//! `users.revision` (status changes, erasure) triggers a full reload. So the cache never
//! serves a stale view, and a read never writes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use chrono::NaiveDate;
use membank_core::{Kind, MemoryId, Status};
use rusqlite::{Connection, params};

use crate::types::{Hit, SearchFilter};
use crate::StoreError;

/// What a dense search needs to know of one row besides its vector.
struct Entry {
    id: MemoryId,
    kind: Kind,
    day: NaiveDate,
    status: Status,
    agent: Option<Box<str>>,
    session: Option<Box<str>>,
}

/// One user's vectors.
#[derive(Default)]
pub(crate) struct UserVectors {
    revision: i64,
    max_seq: i64,
    loaded: bool,
    entries: Vec<Entry>,
    data: Vec<f32>,
}

/// All cached users of one store.
#[derive(Default)]
pub(crate) struct VectorCache {
    users: Mutex<HashMap<i64, Arc<RwLock<UserVectors>>>>,
}

/// Narrowing of a search to an agent or session label.
pub(crate) struct Labels<'a> {
    pub agent: Option<&'a str>,
    pub session: Option<&'a str>,
}

impl VectorCache {
    /// Brings the user's cached vectors up to date with `conn`'s snapshot, then scans them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search(&self, conn: &Connection, user_row: i64, revision: i64, dim: usize, query: &[f32], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Result<Vec<Hit>, StoreError> {
        let slot = {
            let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(users.entry(user_row).or_default())
        };
        let max_seq: i64 = conn.query_row("SELECT coalesce(max(memory_seq), 0) FROM embeddings WHERE user_row = ?1", [user_row], |row| row.get(0))?;
        {
            let cached = slot.read().unwrap_or_else(|e| e.into_inner());
            if !(cached.loaded && cached.revision == revision && cached.max_seq == max_seq) {
                drop(cached);
                let mut cached = slot.write().unwrap_or_else(|e| e.into_inner());
                if !cached.loaded || cached.revision != revision || cached.max_seq > max_seq {
                    *cached = UserVectors { revision, ..Default::default() };
                }
                if cached.max_seq < max_seq || !cached.loaded {
                    load_after(conn, user_row, dim, &mut cached)?;
                    cached.loaded = true;
                }
            }
        }
        let cached = slot.read().unwrap_or_else(|e| e.into_inner());
        Ok(scan(&cached, dim, query, filter, labels, limit))
    }
}

fn load_after(conn: &Connection, user_row: i64, dim: usize, cached: &mut UserVectors) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.memory_seq, m.id, m.kind, m.day, m.status, m.agent, m.session, e.dim, e.vector
         FROM embeddings e JOIN memories m ON m.seq = e.memory_seq
         WHERE e.user_row = ?1 AND e.memory_seq > ?2 ORDER BY e.memory_seq",
    )?;
    let mut rows = stmt.query(params![user_row, cached.max_seq])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let row_dim: i64 = row.get(7)?;
        let blob = row.get_ref(8)?.as_blob().map_err(|e| StoreError::Corrupt(format!("vector of row {seq}: {e}")))?;
        if row_dim as usize != dim || blob.len() != dim * 4 {
            return Err(StoreError::Corrupt(format!("vector of memory row {seq} has {row_dim} dimensions, the store {dim}")));
        }
        let parse = |col: usize| -> Result<String, StoreError> { Ok(row.get::<_, String>(col)?) };
        let entry = Entry {
            id: parse(1)?.parse().map_err(|_| StoreError::Corrupt(format!("bad memory id in row {seq}")))?,
            kind: parse(2)?.parse().map_err(|_| StoreError::Corrupt(format!("bad kind in row {seq}")))?,
            day: NaiveDate::parse_from_str(&parse(3)?, "%Y-%m-%d").map_err(|_| StoreError::Corrupt(format!("bad day in row {seq}")))?,
            status: parse(4)?.parse().map_err(|_| StoreError::Corrupt(format!("bad status in row {seq}")))?,
            agent: row.get::<_, Option<String>>(5)?.map(Into::into),
            session: row.get::<_, Option<String>>(6)?.map(Into::into),
        };
        cached.entries.push(entry);
        cached.data.extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        cached.max_seq = seq;
    }
    Ok(())
}

fn scan(cached: &UserVectors, dim: usize, query: &[f32], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Vec<Hit> {
    let mut scored: Vec<(f32, usize)> = Vec::new();
    for (index, entry) in cached.entries.iter().enumerate() {
        let status_ok = match entry.status {
            Status::Active => true,
            Status::Archived | Status::Superseded => filter.include_archived,
            Status::Erased => false,
        };
        if !status_ok
            || (!filter.kinds.is_empty() && !filter.kinds.contains(&entry.kind))
            || filter.day_from.is_some_and(|from| entry.day < from)
            || filter.day_to.is_some_and(|to| entry.day > to)
            || labels.agent.is_some_and(|a| entry.agent.as_deref() != Some(a))
            || labels.session.is_some_and(|s| entry.session.as_deref() != Some(s))
        {
            continue;
        }
        let row = &cached.data[index * dim..(index + 1) * dim];
        scored.push((dot(row, query), index));
    }
    let limit = limit.min(scored.len());
    if limit == 0 {
        return Vec::new();
    }
    let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit < scored.len() {
        scored.select_nth_unstable_by(limit - 1, by_score);
        scored.truncate(limit);
    }
    scored.sort_by(by_score);
    scored.into_iter().map(|(score, index)| Hit { id: cached.entries[index].id, score: f64::from(score) }).collect()
}

/// Dot product in eight independent lanes so the compiler vectorises it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = a.len() / 8;
    for i in 0..chunks {
        for lane in 0..8 {
            lanes[lane] += a[i * 8 + lane] * b[i * 8 + lane];
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for i in chunks * 8..a.len() {
        sum += a[i] * b[i];
    }
    sum
}
