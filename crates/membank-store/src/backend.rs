//! One handle over whichever backend a location names: a path means a SQLite file, a
//! `postgres://` (or `postgresql://`) URL means PostgreSQL with pgvector. The CLI and the
//! server hold an `Arc<dyn Backend>` and never name a concrete store.

use std::path::PathBuf;
use std::sync::Arc;

use crate::{ApiKeyStore, CacheStats, SqliteStore, Store, StoreError, StoreOptions};

/// Where a store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://USER@HOST:PORT/DB`).
    Postgres(String),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL is PostgreSQL; anything else is a path.
    pub fn parse(text: &str) -> Self {
        let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            Self::Postgres(text.to_string())
        } else {
            Self::Sqlite(PathBuf::from(text))
        }
    }

    /// The backend's name: `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// For messages: the path, or the URL without its password.
    pub fn display(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(url) => redact(url),
        }
    }
}

/// The URL with any password (in the user part or a `password=` parameter) replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| {
                    if p.to_ascii_lowercase().starts_with("password=") {
                        "password=***".to_string()
                    } else {
                        p.to_string()
                    }
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Everything the server and the CLI need of a store, whichever backend it is.
pub trait Backend: Store + ApiKeyStore {
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// The schema version of the database.
    fn schema_version(&self) -> Result<i64, StoreError>;
    /// The backend's consistency checks; empty means healthy.
    fn integrity_check(&self) -> Result<Vec<String>, StoreError>;
    /// The in-process search caches (both backends keep them under the same budget, and
    /// check them against the database on every search).
    fn cache_stats(&self) -> CacheStats;
    /// The SQLite store, when it is one (backups use SQLite's online backup).
    fn as_sqlite(&self) -> Option<&SqliteStore> {
        None
    }
}

impl Backend for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }
    fn schema_version(&self) -> Result<i64, StoreError> {
        SqliteStore::schema_version(self)
    }
    fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        SqliteStore::integrity_check(self)
    }
    fn cache_stats(&self) -> CacheStats {
        SqliteStore::cache_stats(self)
    }
    fn as_sqlite(&self) -> Option<&SqliteStore> {
        Some(self)
    }
}

#[cfg(feature = "postgres")]
impl Backend for crate::PgStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }
    fn schema_version(&self) -> Result<i64, StoreError> {
        crate::PgStore::schema_version(self)
    }
    fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        crate::PgStore::integrity_check(self)
    }
    fn cache_stats(&self) -> CacheStats {
        crate::PgStore::cache_stats(self)
    }
}

/// Opens the store at `location` (creating a SQLite file, or the schema in an empty
/// PostgreSQL database), with the cache budget of `options`.
pub fn open(location: &Location, options: StoreOptions) -> Result<Arc<dyn Backend>, StoreError> {
    match location {
        Location::Sqlite(path) => Ok(Arc::new(SqliteStore::open_with(path, options)?)),
        #[cfg(feature = "postgres")]
        Location::Postgres(url) => Ok(Arc::new(crate::PgStore::open_with(
            url,
            crate::PgOptions {
                cache_budget: options.cache_budget,
                dense_screen: options.dense_screen,
                ..Default::default()
            },
        )?)),
        #[cfg(not(feature = "postgres"))]
        Location::Postgres(_) => Err(StoreError::Invalid(membank_core::InvalidInput::new(
            "database",
            "this build has no PostgreSQL support (build with the `postgres` feature)",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_and_everything_else_is_a_path() {
        assert_eq!(Location::parse("postgres://u@h:5/db").kind(), "postgres");
        assert_eq!(Location::parse("PostgreSQL://u@h/db").kind(), "postgres");
        assert_eq!(Location::parse("postgres.db").kind(), "sqlite");
        assert_eq!(Location::parse("./postgres://x").kind(), "sqlite");
        assert_eq!(Location::parse(""), Location::Sqlite(PathBuf::new()));
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://me:secret@db:5432/m"), "postgres://me:***@db:5432/m");
        assert_eq!(
            redact("postgres://me@db/m?sslmode=disable&password=x"),
            "postgres://me@db/m?sslmode=disable&password=***"
        );
        assert_eq!(redact("postgres://db/m"), "postgres://db/m");
        assert_eq!(redact("postgres://a:b:c@d@e/f"), "postgres://a:***@e/f");
    }
}
