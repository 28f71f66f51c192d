//! The in-process search caches both backends share: each user's vectors (exact dense
//! search, [`vectors`]) and BM25 index ([`terms`]), kept in step with the database by
//! [`usercache`] and bounded by the store's [`crate::cache::CacheBudget`].
//!
//! The caches never read the database themselves: a backend hands them a [`Source`], one
//! user's rows as seen by one read snapshot (a SQLite read transaction, a PostgreSQL
//! `READ ONLY REPEATABLE READ` transaction). What they need of a backend is only that a
//! user's sequence numbers rise in commit order (each backend's writes lock their user
//! first) and that `users.revision` is bumped by every status change and erasure.

pub(crate) mod batch;
pub(crate) mod terms;
pub(crate) mod usercache;
pub(crate) mod vectors;

use membank_core::Status;

pub(crate) use usercache::{Labels, RowMeta};

use crate::StoreError;
use crate::cache::CacheKind;

/// Receives one vector row: its memory's metadata and the vector.
pub(crate) type VectorSink<'a> = dyn FnMut(RowMeta, &[f32]) -> Result<(), StoreError> + 'a;
/// Receives one memory's row: its metadata, content, user text and assistant text.
pub(crate) type TextSink<'a> =
    dyn FnMut(RowMeta, Option<&str>, Option<&str>, Option<&str>) -> Result<(), StoreError> + 'a;

/// One user's rows in one read snapshot, as the caches load them.
/// A query vector must have the model's dimension.
pub(crate) fn check_query_dim(model: &crate::EmbeddingModel, query: &[f32]) -> Result<(), crate::StoreError> {
    if query.len() != model.dim {
        return Err(crate::StoreError::Invalid(membank_core::InvalidInput::new(
            "query vector",
            format!("has {} dimensions, the model {}", query.len(), model.dim),
        )));
    }
    Ok(())
}

pub(crate) trait Source {
    /// The newest sequence number the cache of `kind` holds rows up to (0 if none): of the
    /// user's vectors for [`CacheKind::Vectors`], of its memories for [`CacheKind::Terms`].
    fn max_seq(&mut self, kind: CacheKind) -> Result<i64, StoreError>;
    /// How many rows a load of `kind` after sequence number `after` reads (so a whole load
    /// reserves its arrays exactly).
    fn count_after(&mut self, kind: CacheKind, after: i64) -> Result<usize, StoreError>;
    /// Each of the user's vectors after `after`, in sequence order, with its memory's
    /// metadata; a vector of another dimension than `dim` is `Corrupt`.
    fn vectors_after(&mut self, after: i64, dim: usize, each: &mut VectorSink<'_>) -> Result<(), StoreError>;
    /// Each of the user's memories after `after`, in sequence order, with its metadata and
    /// its text (content, user text, assistant text).
    fn texts_after(&mut self, after: i64, each: &mut TextSink<'_>) -> Result<(), StoreError>;
    /// Sequence number and status of each of the user's memories up to `last`, in order.
    fn statuses_upto(&mut self, last: i64) -> Result<Vec<(i64, Status)>, StoreError>;
}

/// The text a memory is searched by: both sides of a turn, else its content. SQLite's FTS5
/// body and the in-process BM25 index ([`terms`]) both cut this text.
pub(crate) fn body_text(content: Option<&str>, user_text: Option<&str>, assistant_text: Option<&str>) -> String {
    match user_text {
        Some(user) => format!("{user}\n{}", assistant_text.unwrap_or("")),
        None => content.unwrap_or("").to_string(),
    }
}

/// The terms of [`body_text`], in order, without building the joined string: the newline
/// between the two sides of a turn cuts terms as any separator does, so each side is cut on
/// its own. What the BM25 index calls for every memory of a user it loads.
pub(crate) fn for_each_body_term(
    content: Option<&str>,
    user_text: Option<&str>,
    assistant_text: Option<&str>,
    buffer: &mut String,
    mut each: impl FnMut(&str),
) {
    match user_text {
        Some(user) => {
            membank_core::text::for_each_term(user, buffer, &mut each);
            membank_core::text::for_each_term(assistant_text.unwrap_or(""), buffer, &mut each);
        }
        None => membank_core::text::for_each_term(content.unwrap_or(""), buffer, &mut each),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_terms_are_the_terms_of_the_body_text() {
        let cases = [
            (Some("I adopted a cat"), None, None),
            (None, Some("我的猫叫"), Some("咪咪！Nice")),
            (None, Some("ends with 中文"), Some("文字 starts")),
            (None, Some("only the user"), None),
            (Some("ignored content"), Some(""), Some("")),
            (None, None, None),
        ];
        let mut buffer = String::new();
        for (content, user, assistant) in cases {
            let mut got = Vec::new();
            for_each_body_term(content, user, assistant, &mut buffer, |t| got.push(t.to_owned()));
            assert_eq!(
                got,
                membank_core::text::terms(&body_text(content, user, assistant)),
                "{content:?} {user:?} {assistant:?}"
            );
        }
    }
}
