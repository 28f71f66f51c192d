//! One user's rows for the search caches (`crate::search`), read on the connection of a
//! read transaction: the caches' [`Source`] over SQLite.

use chrono::NaiveDate;
use membank_core::Status;
use rusqlite::{Connection, Row, params};

use crate::StoreError;
use crate::cache::CacheKind;
use crate::search::{RowMeta, Source, TextSink, VectorSink};

/// The rows of user `user_row` on `conn`.
pub(super) struct SqliteSource<'c> {
    pub conn: &'c Connection,
    pub user_row: i64,
}

/// The columns [`meta`] reads, 0 to 7 of a select of memories `m`.
const META_COLUMNS: &str = "m.seq, m.id, m.kind, m.day, m.status, m.agent, m.session, m.metadata ->> '$.\"speaker\"'";

/// Reads `seq, id, kind, day, status, agent, session, speaker` from columns 0 to 7.
fn meta(row: &Row<'_>) -> Result<RowMeta, StoreError> {
    let seq: i64 = row.get(0)?;
    let bad = |what: &str| StoreError::Corrupt(format!("bad {what} in row {seq}"));
    // Borrowed, not copied: a user's first search reads this for every one of its rows.
    let text = |col: usize| -> Result<&str, StoreError> { row.get_ref(col)?.as_str().map_err(|_| bad("text column")) };
    Ok(RowMeta {
        seq,
        id: text(1)?.parse().map_err(|_| bad("memory id"))?,
        kind: text(2)?.parse().map_err(|_| bad("kind"))?,
        // `YYYY-MM-DD`, as written; `NaiveDate`'s own parser, not a strftime pattern.
        day: text(3)?.parse::<NaiveDate>().map_err(|_| bad("day"))?,
        status: text(4)?.parse().map_err(|_| bad("status"))?,
        agent: row.get::<_, Option<String>>(5)?.map(Into::into),
        session: row.get::<_, Option<String>>(6)?.map(Into::into),
        // Metadata values are strings; one stored otherwise (by hand) is read as its text.
        speaker: match row.get_ref(7)? {
            rusqlite::types::ValueRef::Null => None,
            rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into()),
            rusqlite::types::ValueRef::Integer(i) => Some(i.to_string().into()),
            rusqlite::types::ValueRef::Real(r) => Some(r.to_string().into()),
            rusqlite::types::ValueRef::Blob(_) => return Err(bad("speaker")),
        },
    })
}

/// The last row a cache of `kind` would load, asked before every search.
///
/// `+?1`: written `user_row = ?1`, the bundled SQLite marked the statement to be compiled
/// again whenever the user was bound, so each search parsed and planned it anew (1.3 % of
/// all CPU time of a server under 32 clients, `sqlite3Reprepare` in a profile). The plan
/// is the same either way: one seek to the user's last entry of the covering index.
pub(super) fn max_seq_sql(kind: CacheKind) -> &'static str {
    match kind {
        CacheKind::Vectors => "SELECT coalesce(max(memory_seq), 0) FROM embeddings WHERE user_row = +?1",
        CacheKind::Terms => "SELECT coalesce(max(seq), 0) FROM memories WHERE user_row = +?1",
    }
}

impl Source for SqliteSource<'_> {
    fn max_seq(&mut self, kind: CacheKind) -> Result<i64, StoreError> {
        Ok(self.conn.prepare_cached(max_seq_sql(kind))?.query_row([self.user_row], |row| row.get(0))?)
    }

    fn count_after(&mut self, kind: CacheKind, after: i64) -> Result<usize, StoreError> {
        let sql = match kind {
            CacheKind::Vectors => "SELECT count(*) FROM embeddings WHERE user_row = ?1 AND memory_seq > ?2",
            CacheKind::Terms => "SELECT count(*) FROM memories WHERE user_row = ?1 AND seq > ?2",
        };
        let n: i64 = self.conn.prepare_cached(sql)?.query_row(params![self.user_row, after], |row| row.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn vectors_after(&mut self, after: i64, dim: usize, each: &mut VectorSink<'_>) -> Result<(), StoreError> {
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            format!(
                "SELECT {META_COLUMNS}, e.dim, e.vector FROM embeddings e JOIN memories m ON m.seq = e.memory_seq
                 WHERE e.user_row = ?1 AND e.memory_seq > ?2 ORDER BY e.memory_seq"
            )
        });
        let mut stmt = self.conn.prepare_cached(&SQL)?;
        let mut rows = stmt.query(params![self.user_row, after])?;
        let mut vector = Vec::with_capacity(dim);
        while let Some(row) = rows.next()? {
            let entry = meta(row)?;
            let seq = entry.seq;
            let row_dim: i64 = row.get(8)?;
            let blob =
                row.get_ref(9)?.as_blob().map_err(|e| StoreError::Corrupt(format!("vector of row {seq}: {e}")))?;
            if row_dim as usize != dim || blob.len() != dim * 4 {
                return Err(StoreError::Corrupt(format!(
                    "vector of memory row {seq} has {row_dim} dimensions, the store {dim}"
                )));
            }
            vector.clear();
            vector.extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            each(entry, &vector)?;
        }
        Ok(())
    }

    fn texts_after(&mut self, after: i64, each: &mut TextSink<'_>) -> Result<(), StoreError> {
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            format!(
                "SELECT {META_COLUMNS}, m.content, m.user_text, m.assistant_text
                 FROM memories m WHERE m.user_row = ?1 AND m.seq > ?2 ORDER BY m.seq"
            )
        });
        let mut stmt = self.conn.prepare_cached(&SQL)?;
        let mut rows = stmt.query(params![self.user_row, after])?;
        while let Some(row) = rows.next()? {
            let entry = meta(row)?;
            let text = |col: usize| -> Result<Option<&str>, StoreError> {
                row.get_ref(col)?.as_str_or_null().map_err(|e| StoreError::Corrupt(e.to_string()))
            };
            each(entry, text(8)?, text(9)?, text(10)?)?;
        }
        Ok(())
    }

    fn statuses_upto(&mut self, last: i64) -> Result<Vec<(i64, Status)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, status FROM memories WHERE user_row = ?1 AND seq <= ?2 ORDER BY seq")?;
        let mut rows = stmt.query(params![self.user_row, last])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let status: Status = row
                .get::<_, String>(1)?
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("bad status in row {seq}")))?;
            out.push((seq, status));
        }
        Ok(out)
    }
}
