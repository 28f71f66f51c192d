//! The store's error type. Each variant says whose fault it is; none carries SQL text
//! to the caller's user (the database error is kept as a source for logs).

use membank_core::InvalidInput;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Caller's: the memory (or user) does not exist in this scope.
    #[error("{what} not found")]
    NotFound {
        /// What was looked for, e.g. `memory 0192…`.
        what: String,
    },
    /// Caller's: a value breaks a domain rule.
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// Caller's: the operation does not apply to the memory's current state
    /// (restoring an active memory, pinning an erased one).
    #[error("{0}")]
    Conflict(String),
    /// Caller's configuration: the store holds vectors of another embedding model.
    #[error(
        "this store holds vectors of {store_model} ({store_dim} dimensions) but was given {given_model} ({given_dim}); re-embedding is an explicit migration, mixing is refused"
    )]
    ModelMismatch {
        /// The store's model.
        store_model: String,
        /// Its dimension.
        store_dim: usize,
        /// The model given.
        given_model: String,
        /// Its dimension.
        given_dim: usize,
    },
    /// Caller's: the database file was written by a newer membank.
    #[error("database schema version {found} is newer than this membank supports ({supported}); upgrade membank")]
    NewerSchema {
        /// Version in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// The file is not a membank database, or is damaged.
    #[error("not a usable membank database: {0}")]
    Corrupt(String),
    /// The destination of a streamed result failed (a closed pipe or connection); the
    /// store itself is fine.
    #[error("writing the output failed: {0}")]
    Output(std::io::Error),
    /// Ours or the machine's: the database failed (disk full, locked too long, I/O).
    #[error("database error: {0}")]
    Database(#[from] rusqlite::Error),
    /// Ours or the machine's: the PostgreSQL server failed or refused a statement (see
    /// [`crate::postgres::PgError`]; one that could not be reached is [`Self::Unavailable`]).
    #[cfg(feature = "postgres")]
    #[error("database error: {0}")]
    Postgres(#[source] crate::postgres::PgError),
    /// The machine's, for now: the database server, or a node of a distributed one, cannot
    /// be reached or went away during the operation (stopped, restarting, out of
    /// connections, the connection broke), or no connection became free in time. Nothing
    /// about the request was wrong and retrying later can succeed. A transaction that
    /// failed before its commit was sent was rolled back; one whose connection broke
    /// while committing may or may not have been applied (PostgreSQL alone knows).
    #[error("the database cannot be reached now (try again shortly)")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// True when the database could not write because its disk (or its size limit) is
    /// full: SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full` (53100). The transaction was
    /// rolled back, so nothing of the operation was stored.
    pub fn is_storage_full(&self) -> bool {
        match self {
            StoreError::Database(rusqlite::Error::SqliteFailure(e, _)) => e.code == rusqlite::ErrorCode::DiskFull,
            #[cfg(feature = "postgres")]
            StoreError::Postgres(crate::postgres::PgError::Client(e)) => {
                e.code() == Some(&postgres::error::SqlState::DISK_FULL)
            }
            _ => false,
        }
    }

    pub(crate) fn memory_not_found(id: impl std::fmt::Display) -> Self {
        StoreError::NotFound { what: format!("memory {id}") }
    }
}
