//! Why talking to PostgreSQL failed.

use crate::StoreError;

/// Why talking to PostgreSQL failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The server refused a statement, failed, or could not be reached (its message says
    /// which; the SQLSTATE is in the source).
    #[error("{0}")]
    Client(#[from] postgres::Error),
    /// Every connection of the pool stayed busy for the whole wait: the server is
    /// overloaded or the pool is too small for the load (`PgOptions::max_connections`).
    #[error("no database connection became free within {waited:?} ({open} open)")]
    PoolExhausted {
        /// How long the operation waited.
        waited: std::time::Duration,
        /// Connections open meanwhile.
        open: usize,
    },
}

impl From<postgres::Error> for StoreError {
    fn from(err: postgres::Error) -> Self {
        StoreError::Postgres(PgError::Client(err))
    }
}
