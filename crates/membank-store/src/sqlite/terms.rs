//! The in-process lexical index of each user, for BM25 search.
//!
//! SQLite's FTS5 ranks every row that matches any query term before it can return the best
//! fifty: on a user with 100k memories a query with one common word cost 25 ms there. This
//! index holds, per user, the postings of each term (document, term frequency) and each
//! document's length, built from the memories' own text with the same cutting rules as the
//! FTS5 body ([`membank_core::text::terms`]), and scores with BM25 (k1 = 1.2, b = 0.75, the
//! FTS5 defaults) by walking only the query terms' postings.
//!
//! Statistics are the user's own: N, document frequencies and the average length count this
//! user's memories only, so one user's memories never change another's ranking.
//!
//! It is kept in step with the database exactly like the vector cache
//! ([`super::vectors`]): rows added since (by any process) are loaded incrementally on the
//! next search; a changed `users.revision` re-reads the statuses in place, and reloads the
//! index whole if a memory was erased (its terms must leave memory too).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use chrono::NaiveDate;
use membank_core::{Kind, MemoryId, Status, text};
use rusqlite::{Connection, params};

use super::vectors::{Labels, refresh_statuses};
use crate::StoreError;
use crate::types::{Hit, SearchFilter};

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;

struct Doc {
    seq: i64,
    id: MemoryId,
    kind: Kind,
    day: NaiveDate,
    status: Status,
    agent: Option<Box<str>>,
    session: Option<Box<str>>,
}

/// One user's lexical index.
#[derive(Default)]
pub(crate) struct UserTerms {
    revision: i64,
    max_seq: i64,
    loaded: bool,
    docs: Vec<Doc>,
    terms: HashMap<Box<str>, u32>,
    postings: Vec<Vec<(u32, u32)>>,
    /// Each document's length in terms (apart from `docs`, so the scoring loop reads 4 bytes).
    lens: Vec<u32>,
    total_len: u64,
}

/// All cached users of one store.
#[derive(Default)]
pub(crate) struct TermCache {
    users: Mutex<HashMap<i64, Arc<RwLock<UserTerms>>>>,
}

impl TermCache {
    /// Brings the user's index up to date with `conn`'s snapshot, then ranks by BM25.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search(&self, conn: &Connection, user_row: i64, revision: i64, terms: &[String], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Result<Vec<Hit>, StoreError> {
        let slot = {
            let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(users.entry(user_row).or_default())
        };
        let max_seq: i64 = conn.query_row("SELECT coalesce(max(seq), 0) FROM memories WHERE user_row = ?1", [user_row], |row| row.get(0))?;
        {
            let cached = slot.read().unwrap_or_else(|e| e.into_inner());
            if !(cached.loaded && cached.revision == revision && cached.max_seq == max_seq) {
                drop(cached);
                let mut cached = slot.write().unwrap_or_else(|e| e.into_inner());
                if cached.loaded && cached.revision != revision && cached.max_seq <= max_seq {
                    // Statuses changed: patch them in place unless something was erased.
                    let mut statuses: Vec<(i64, &mut Status)> = cached.docs.iter_mut().map(|d| (d.seq, &mut d.status)).collect();
                    if refresh_statuses(conn, user_row, &mut statuses)? {
                        cached.revision = revision;
                    }
                }
                if !cached.loaded || cached.revision != revision || cached.max_seq > max_seq {
                    *cached = UserTerms { revision, ..Default::default() };
                }
                if cached.max_seq < max_seq || !cached.loaded {
                    load_after(conn, user_row, &mut cached)?;
                    cached.loaded = true;
                }
            }
        }
        let cached = slot.read().unwrap_or_else(|e| e.into_inner());
        Ok(rank(&cached, terms, filter, labels, limit))
    }
}

fn load_after(conn: &Connection, user_row: i64, cached: &mut UserTerms) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, id, kind, day, status, agent, session, content, user_text, assistant_text
         FROM memories WHERE user_row = ?1 AND seq > ?2 ORDER BY seq",
    )?;
    let mut rows = stmt.query(params![user_row, cached.max_seq])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        cached.max_seq = seq;
        let status: Status = row.get::<_, String>(4)?.parse().map_err(|_| StoreError::Corrupt(format!("bad status in row {seq}")))?;
        if status == Status::Erased {
            continue;
        }
        let content: Option<String> = row.get(7)?;
        let user_text: Option<String> = row.get(8)?;
        let assistant_text: Option<String> = row.get(9)?;
        // The same text as the FTS5 body (see `index_body`).
        let body = match (&user_text, &assistant_text) {
            (Some(user), assistant) => text::terms(&format!("{user}\n{}", assistant.as_deref().unwrap_or(""))),
            _ => text::terms(content.as_deref().unwrap_or("")),
        };
        let doc = cached.docs.len() as u32;
        let mut counts: HashMap<&str, u32> = HashMap::new();
        for term in &body {
            *counts.entry(term.as_str()).or_insert(0) += 1;
        }
        for (term, tf) in counts {
            let next = cached.postings.len() as u32;
            let index = *cached.terms.entry(term.into()).or_insert(next);
            if index == next {
                cached.postings.push(Vec::new());
            }
            cached.postings[index as usize].push((doc, tf));
        }
        let parse = |col: usize| -> Result<String, StoreError> { Ok(row.get::<_, String>(col)?) };
        cached.docs.push(Doc {
            seq,
            id: parse(1)?.parse().map_err(|_| StoreError::Corrupt(format!("bad memory id in row {seq}")))?,
            kind: parse(2)?.parse().map_err(|_| StoreError::Corrupt(format!("bad kind in row {seq}")))?,
            day: NaiveDate::parse_from_str(&parse(3)?, "%Y-%m-%d").map_err(|_| StoreError::Corrupt(format!("bad day in row {seq}")))?,
            status,
            agent: row.get::<_, Option<String>>(5)?.map(Into::into),
            session: row.get::<_, Option<String>>(6)?.map(Into::into),
        });
        cached.lens.push(body.len() as u32);
        cached.total_len += body.len() as u64;
    }
    Ok(())
}

fn rank(cached: &UserTerms, terms: &[String], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Vec<Hit> {
    let n = cached.docs.len();
    if n == 0 || limit == 0 {
        return Vec::new();
    }
    let average = cached.total_len as f64 / n as f64;
    let admitted = |doc: &Doc| {
        let status_ok = match doc.status {
            Status::Active => true,
            Status::Archived | Status::Superseded => filter.include_archived,
            Status::Erased => false,
        };
        status_ok
            && (filter.kinds.is_empty() || filter.kinds.contains(&doc.kind))
            && !filter.day_from.is_some_and(|from| doc.day < from)
            && !filter.day_to.is_some_and(|to| doc.day > to)
            && !labels.agent.is_some_and(|a| doc.agent.as_deref() != Some(a))
            && !labels.session.is_some_and(|s| doc.session.as_deref() != Some(s))
    };
    // Dense accumulators: a posting costs one add, however common its term.
    let mut scores = vec![0f64; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut seen_terms = std::collections::HashSet::new();
    for term in terms {
        if !seen_terms.insert(term.as_str()) {
            continue;
        }
        let Some(&index) = cached.terms.get(term.as_str()) else { continue };
        let postings = &cached.postings[index as usize];
        let df = postings.len() as f64;
        // FTS5's IDF, floored at a tiny positive value for terms in over half the documents.
        let idf = (((n as f64) - df + 0.5) / (df + 0.5)).ln().max(1e-6);
        for &(doc, tf) in postings {
            let tf = f64::from(tf);
            let norm = K1 * (1.0 - B + B * f64::from(cached.lens[doc as usize]) / average);
            let slot = &mut scores[doc as usize];
            if *slot == 0.0 {
                touched.push(doc);
            }
            *slot += idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    // Filters apply once per matching document, not once per posting.
    let mut ranked: Vec<(f64, u32)> = touched.into_iter().filter(|&doc| admitted(&cached.docs[doc as usize])).map(|doc| (scores[doc as usize], doc)).collect();
    let by_score = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit < ranked.len() {
        ranked.select_nth_unstable_by(limit - 1, by_score);
        ranked.truncate(limit);
    }
    ranked.sort_by(by_score);
    ranked.into_iter().map(|(score, doc)| Hit { id: cached.docs[doc as usize].id, score }).collect()
}
