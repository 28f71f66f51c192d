//! Dense and lexical search in SQL, exact and always fresh.
//!
//! **Dense**: every admitted vector of the user is scored with pgvector's `<#>` (negative
//! inner product; the vectors are L2-normalised, so its negation is the cosine) and the
//! best `limit` are kept, ties by insertion order as in the SQLite store. No ANN index by
//! default: exact search has perfect recall and one user's vectors are one range of the
//! `embeddings` primary key.
//!
//! **Lexical**: BM25 computed in SQL from `memory_terms`, rows of (user, term, memory,
//! term frequency) that the store writes with each memory from the same terms the SQLite
//! store's in-process index holds ([`membank_core::text::terms`]: lowercase words, CJK
//! bigrams). The statistics are the user's own (documents and total length kept in
//! `users`, document frequencies counted from the user's postings of the query terms), the
//! formula and the order of the additions are the SQLite index's (k1 = 1.2, b = 0.75,
//! Lucene's IDF, each memory's per-term shares summed in query-term order), so both
//! backends rank alike and score alike to the last bit.
//!
//! Why not PostgreSQL's full-text search: `ts_rank` has no IDF (a rare word counts as much
//! as a common one, so "the rarer the term, the more its match is worth" fails) and no
//! length saturation, and its parsers do not cut Chinese; keeping our own tokens as a
//! `tsvector` would still leave ranking to `ts_rank`, and the conformance tests that pin
//! BM25's behaviour would fail. Why not the in-process index fed from the database: it is
//! the fastest (below), but it needs the SQLite store's cache-freshness machinery for
//! several servers and the global cache budget being built now; exact SQL is always fresh
//! and was the first step. With BM25 in SQL the two backends give the same scores to the
//! last bit (`tests/it/postgres.rs`, `both_backends_rank_alike`).
//!
//! Measured (`examples/search_timing.rs`: one user, 10,000 memories of 8–30 words from a
//! Zipf vocabulary, 384-dimensional vectors, 150 candidates, PostgreSQL 15 + pgvector 0.8
//! on the same two-core machine, after VACUUM ANALYZE; medians): dense 5.3 ms here against
//! 2.3 ms for the SQLite store's cached int8-screened scan; lexical 1.4 ms against 0.05 ms,
//! and 14 ms against 0.08 ms when the query holds a word found in most memories (the cost
//! here grows with the postings of the query's terms). Without planner statistics (right
//! after a bulk load) the same queries take 6.9 and 1.8 ms: every statement reads its user's
//! rows through one table and probes the memories by key only for the best `limit`, so no
//! plan can join the other way round (an earlier join of every posting went quadratic
//! there: 1.4 s a query).

use membank_core::Scope;
use uuid::Uuid;

use super::pool::Tx;
use super::vector::VectorRef;
use super::{col, label_filter, labels, memory_id, scope_uid};
use crate::StoreError;
use crate::types::{Hit, SearchFilter};

/// BM25 term-frequency saturation (the SQLite index's).
const K1: f64 = 1.2;
/// BM25 length normalisation (the SQLite index's).
const B: f64 = 0.75;

/// The statuses a search with `filter` admits.
fn statuses(filter: &SearchFilter) -> Vec<&'static str> {
    if filter.include_archived { vec!["active", "archived", "superseded"] } else { vec!["active"] }
}

/// SQL admitting the memories `m` a search may return: statuses `$s`, kinds `$s+1` (empty:
/// all), days `$s+2`..`$s+3`, labels `$s+4`..`$s+5`.
fn admitted(s: usize) -> String {
    format!(
        "m.status = ANY(${s}) AND (cardinality(${k}::text[]) = 0 OR m.kind = ANY(${k})) AND (${f}::date IS NULL OR m.day >= ${f}) AND (${t}::date IS NULL OR m.day <= ${t}) {labels}",
        k = s + 1,
        f = s + 2,
        t = s + 3,
        labels = label_filter(s + 4)
    )
}

pub(super) fn dense(tx: &mut Tx<'_>, scope: &Scope, query: &[f32], filter: &SearchFilter, limit: usize) -> Result<Vec<Hit>, StoreError> {
    let uid: Uuid = scope_uid(scope);
    // The vectors' own copy of status, kind, day and labels: the best `limit` are found in
    // this table alone, then each is looked up once (LATERAL: whatever the planner's
    // statistics, the memories are probed by key from the few best, never the other way).
    let sql = format!(
        "WITH best AS MATERIALIZED (
             SELECT e.seq, -(e.vector <#> $2::vector) AS score FROM embeddings e
             WHERE e.uid = $1 AND {}
             ORDER BY e.vector <#> $2::vector, e.seq LIMIT $9
         )
         SELECT m.id, best.score FROM best CROSS JOIN LATERAL (SELECT m.id FROM memories m WHERE m.uid = $1 AND m.seq = best.seq OFFSET 0) m
         ORDER BY best.score DESC, best.seq",
        admitted(3).replace("m.", "e.")
    );
    let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let (agent, session) = labels(scope);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(&sql, &[&uid, &VectorRef(query), &statuses(filter), &kinds, &filter.day_from, &filter.day_to, &agent, &session, &limit])?;
    rows.iter().map(|row| Ok(Hit { id: memory_id(col(row, 0)?)?, score: col(row, 1)? })).collect()
}

pub(super) fn lexical(tx: &mut Tx<'_>, scope: &Scope, terms: &[String], filter: &SearchFilter, limit: usize) -> Result<Vec<Hit>, StoreError> {
    let uid: Uuid = scope_uid(scope);
    // Each distinct query term once, at its first position; its postings (one index range
    // each) with the user's document frequency, counted before the filter as the SQLite
    // index counts it; each admitted memory's BM25 summed in query-term order, with the
    // same operations in the same order as `sqlite/terms.rs`; the best `limit` looked up.
    let sql = format!(
        "WITH q AS (
             SELECT term, min(n) AS n FROM unnest($2::text[]) WITH ORDINALITY AS t(term, n) GROUP BY term
         ), stats AS (
             SELECT lexical_docs::float8 AS docs, lexical_terms::float8 / lexical_docs::float8 AS average FROM users WHERE uid = $1 AND lexical_docs > 0
         ), postings AS MATERIALIZED (
             SELECT q.n, t.seq, t.tf::float8 AS tf, t.len::float8 AS len, count(*) OVER (PARTITION BY q.term)::float8 AS df,
                    t.status, t.kind, t.day, t.agent, t.session
             FROM q JOIN memory_terms t ON t.uid = $1 AND t.term = q.term
         ), best AS MATERIALIZED (
             SELECT e.seq, sum(
                      ln(1.0::float8 + (s.docs - e.df + 0.5::float8) / (e.df + 0.5::float8)) * e.tf * ($9::float8 + 1.0::float8)
                      / (e.tf + $9::float8 * (1.0::float8 - $10::float8 + $10::float8 * e.len / s.average))
                      ORDER BY e.n) AS score
             FROM postings e CROSS JOIN stats s
             WHERE {}
             GROUP BY e.seq
             ORDER BY score DESC, e.seq
             LIMIT $11
         )
         SELECT m.id, best.score FROM best CROSS JOIN LATERAL (SELECT m.id FROM memories m WHERE m.uid = $1 AND m.seq = best.seq OFFSET 0) m
         ORDER BY best.score DESC, best.seq",
        admitted(3).replace("m.", "e.")
    );
    let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let (agent, session) = labels(scope);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(&sql, &[&uid, &terms, &statuses(filter), &kinds, &filter.day_from, &filter.day_to, &agent, &session, &K1, &B, &limit])?;
    rows.iter().map(|row| Ok(Hit { id: memory_id(col(row, 0)?)?, score: col(row, 1)? })).collect()
}
