//! One user's rows for the in-process search caches (`crate::search`), read in the read
//! transaction of the search: the caches' [`Source`] over PostgreSQL.
//!
//! Sequence numbers come from global sequences, but every write transaction locks its
//! user's row before it takes one, so one user's numbers rise in commit order, which is all
//! the caches' incremental loading needs; `users.revision` is bumped by every status change
//! and erasure, as in SQLite. Rows stream from the server as they are read.
//!
//! **Why in-process search on PostgreSQL too.** The first version searched in SQL, always
//! fresh with no cache: dense search as pgvector's exact `<#>` over the user's rows of
//! `embeddings`, lexical search as BM25 computed in SQL from `memory_terms` (one row per
//! user, term and memory; bit-identical scores to SQLite's index). PostgreSQL's own
//! full-text search was never an option: `ts_rank` has no IDF and no length saturation, and
//! its parsers do not cut Chinese. Measured over HTTP with the query's embedding
//! (`membank bench http --db postgres://…`, 2 cores, release build), SQL search made a
//! recall's p50 2.5 times SQLite's at 10k memories and 8–10 times at 100k: the dense scan
//! read a 156 MB table through PostgreSQL's small ring buffer on every query (about 76 ms at
//! 100k), and BM25 in SQL cost as much as the postings of the query's commonest term (p50
//! 59 ms, p95 184 ms at 100k). With the caches a search costs two small reads (the user's
//! revision, the newest sequence numbers) on top of SQLite's in-memory scan. The price is
//! the memory of the caches, bounded by the same budget as SQLite's, and the first search of
//! a user, which loads its rows.

use membank_core::Status;
use postgres::fallible_iterator::FallibleIterator;
use uuid::Uuid;

use super::error::PgError;
use super::pool::Tx;
use super::row::{col, memory_id, parse};
use super::vector::Vector;
use crate::StoreError;
use crate::cache::CacheKind;
use crate::search::{RowMeta, Source, TextSink, VectorSink};

/// The rows of user `uid` in `tx`'s snapshot.
pub(super) struct PgSource<'t, 'c> {
    pub tx: &'t mut Tx<'c>,
    pub uid: Uuid,
}

/// The columns [`meta`] reads, 0 to 7 of a select of memories `m`.
const META_COLUMNS: &str = "m.seq, m.id, m.kind, m.day, m.status, m.agent, m.session, m.metadata ->> 'speaker'";

/// Reads `seq, id, kind, day, status, agent, session, speaker` from columns 0 to 7.
fn meta(row: &postgres::Row) -> Result<RowMeta, StoreError> {
    Ok(RowMeta {
        seq: col(row, 0)?,
        id: memory_id(col(row, 1)?)?,
        kind: parse("kind", col(row, 2)?)?,
        day: col(row, 3)?,
        status: parse("status", col(row, 4)?)?,
        agent: col::<Option<String>>(row, 5)?.map(Into::into),
        session: col::<Option<String>>(row, 6)?.map(Into::into),
        speaker: col::<Option<&str>>(row, 7)?.map(Into::into),
    })
}

impl Source for PgSource<'_, '_> {
    fn max_seq(&mut self, kind: CacheKind) -> Result<i64, StoreError> {
        let sql = match kind {
            CacheKind::Vectors => "SELECT coalesce(max(seq), 0)::bigint FROM embeddings WHERE uid = $1",
            CacheKind::Terms => "SELECT coalesce(max(seq), 0)::bigint FROM memories WHERE uid = $1",
        };
        col(&self.tx.query_one(sql, &[&self.uid])?, 0)
    }

    fn count_after(&mut self, kind: CacheKind, after: i64) -> Result<usize, StoreError> {
        let sql = match kind {
            CacheKind::Vectors => "SELECT count(*) FROM embeddings WHERE uid = $1 AND seq > $2",
            CacheKind::Terms => "SELECT count(*) FROM memories WHERE uid = $1 AND seq > $2",
        };
        let n: i64 = col(&self.tx.query_one(sql, &[&self.uid, &after])?, 0)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn vectors_after(&mut self, after: i64, dim: usize, each: &mut VectorSink<'_>) -> Result<(), StoreError> {
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&self.uid, &after];
        let sql = format!(
            "SELECT {META_COLUMNS}, e.vector FROM embeddings e JOIN memories m ON m.uid = e.uid AND m.seq = e.seq
             WHERE e.uid = $1 AND e.seq > $2 ORDER BY e.seq"
        );
        let mut rows = self.tx.query_iter(&sql, &params)?;
        while let Some(row) = rows.next().map_err(PgError::from)? {
            let entry = meta(&row)?;
            let Vector(vector) = col(&row, 8)?;
            if vector.len() != dim {
                return Err(StoreError::Corrupt(format!(
                    "vector of memory row {} has {} dimensions, the store {dim}",
                    entry.seq,
                    vector.len()
                )));
            }
            each(entry, &vector)?;
        }
        Ok(())
    }

    fn texts_after(&mut self, after: i64, each: &mut TextSink<'_>) -> Result<(), StoreError> {
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&self.uid, &after];
        let sql = format!(
            "SELECT {META_COLUMNS}, m.content, m.user_text, m.assistant_text
             FROM memories m WHERE m.uid = $1 AND m.seq > $2 ORDER BY m.seq"
        );
        let mut rows = self.tx.query_iter(&sql, &params)?;
        while let Some(row) = rows.next().map_err(PgError::from)? {
            let entry = meta(&row)?;
            let (content, user_text, assistant_text): (Option<&str>, Option<&str>, Option<&str>) =
                (col(&row, 8)?, col(&row, 9)?, col(&row, 10)?);
            each(entry, content, user_text, assistant_text)?;
        }
        Ok(())
    }

    fn statuses_upto(&mut self, last: i64) -> Result<Vec<(i64, Status)>, StoreError> {
        let rows = self
            .tx
            .query("SELECT seq, status FROM memories WHERE uid = $1 AND seq <= $2 ORDER BY seq", &[&self.uid, &last])?;
        rows.iter().map(|row| Ok((col(row, 0)?, parse("status", col(row, 1)?)?))).collect()
    }
}
