//! The in-process cache of each user's vectors, for exact dense search.
//!
//! A user's vectors are read from SQLite once into one contiguous `f32` matrix and then
//! scanned in memory. The cache is checked against the database on every search: rows
//! appended since (by any process) are loaded incrementally, and a changed
//! `users.revision` (status changes, erasure) triggers a full reload. So the cache never
//! serves a stale view, and a read never writes.
//!
//! **Exact, but screened in int8.** Scanning 100k × 384 `f32` moves 154 MB through the
//! memory bus per query, which alone costs more than a recall's whole latency budget. So
//! each row is also kept quantised to `i8` with its own scale (a quarter of the bytes),
//! and a search runs in two passes:
//! 1. every admitted row gets an approximate score `a = scale · Σ q_j c_j` and an error
//!    bound `e = (scale / 2) · ‖q‖₁` (each code is off by at most half a step), plus a
//!    margin for float rounding;
//! 2. with `L` the `limit`-th largest lower bound `a − e`, every row whose upper bound
//!    `a + e` reaches `L` is re-scored exactly in `f32`, and the best `limit` are kept.
//!
//! The `limit` rows with the highest lower bounds all score at least `L` exactly, so every
//! row of the exact top `limit` scores at least `L` too and is among the re-scored ones:
//! the result is the same as a full `f32` scan (same scores, same tie order), not an
//! approximation. Both passes run AVX2+FMA code when the CPU has it ([`kernels`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use chrono::NaiveDate;
use membank_core::{Kind, MemoryId, Status};
use rusqlite::{Connection, params};

use crate::types::{Hit, SearchFilter};
use crate::{StoreError, kernels};

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
    /// Row-major `f32` vectors, exact.
    data: Vec<f32>,
    /// The same rows quantised to `i8`, `codes[r * dim + j] * scales[r] ≈ data[r * dim + j]`.
    codes: Vec<i8>,
    scales: Vec<f32>,
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
        let start = cached.data.len();
        cached.data.extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        let row = &cached.data[start..];
        let scale = kernels::quantise_scale(row);
        let codes: Vec<i8> = row.iter().map(|&x| kernels::quantise(x, scale)).collect();
        cached.codes.extend_from_slice(&codes);
        cached.scales.push(scale);
        cached.max_seq = seq;
    }
    Ok(())
}

fn scan(cached: &UserVectors, dim: usize, query: &[f32], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Vec<Hit> {
    let admitted = |entry: &Entry| {
        let status_ok = match entry.status {
            Status::Active => true,
            Status::Archived | Status::Superseded => filter.include_archived,
            Status::Erased => false,
        };
        status_ok
            && (filter.kinds.is_empty() || filter.kinds.contains(&entry.kind))
            && !filter.day_from.is_some_and(|from| entry.day < from)
            && !filter.day_to.is_some_and(|to| entry.day > to)
            && !labels.agent.is_some_and(|a| entry.agent.as_deref() != Some(a))
            && !labels.session.is_some_and(|s| entry.session.as_deref() != Some(s))
    };
    let rows: Vec<u32> = cached.entries.iter().enumerate().filter(|(_, e)| admitted(e)).map(|(i, _)| i as u32).collect();
    let limit = limit.min(rows.len());
    if limit == 0 {
        return Vec::new();
    }
    let candidates: Vec<u32> = if rows.len() <= limit {
        rows
    } else {
        // Pass 1: approximate scores of every admitted row from its int8 codes.
        let mut approx = vec![0f32; rows.len()];
        kernels::dot_i8_rows(&cached.codes, &cached.scales, dim, &rows, query, &mut approx);
        let l1: f32 = query.iter().map(|x| x.abs()).sum();
        // Half a quantisation step per component, plus the float rounding of both sums:
        // each adds at most (dim/8 + 8) roundings of a partial sum no larger than
        // Σ|q_j x_j| ≤ 127 · scale · ‖q‖₁ (8 lanes, then the lanes and the tail).
        let rounding = (dim as f32 / 8.0 + 16.0) * 2.0 * f32::EPSILON * 127.0;
        let bound = |r: u32| cached.scales[r as usize] * l1 * (0.5 + rounding);
        let mut lower: Vec<f32> = rows.iter().zip(&approx).map(|(&r, &a)| a - bound(r)).collect();
        let (_, kth, _) = lower.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        let floor = *kth;
        rows.iter().zip(&approx).filter(|&(&r, &a)| a + bound(r) >= floor).map(|(&r, _)| r).collect()
    };
    // Pass 2: exact f32 scores of the candidates only.
    let mut scored: Vec<(f32, usize)> = candidates.iter().map(|&r| {
        let r = r as usize;
        (kernels::dot(&cached.data[r * dim..(r + 1) * dim], query), r)
    }).collect();
    let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit < scored.len() {
        scored.select_nth_unstable_by(limit - 1, by_score);
        scored.truncate(limit);
    }
    scored.sort_by(by_score);
    scored.into_iter().map(|(score, index)| Hit { id: cached.entries[index].id, score: f64::from(score) }).collect()
}
