//! Reading typed values out of PostgreSQL rows; a value that is not what the schema says
//! is `Corrupt`.

use std::str::FromStr;

use membank_core::MemoryId;
use postgres::Row;
use postgres::types::FromSql;
use uuid::Uuid;

use crate::StoreError;

/// A column of a row, or `Corrupt` naming it if it does not hold that type.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, index: usize) -> Result<T, StoreError> {
    row.try_get(index)
        .map_err(|e| StoreError::Corrupt(format!("column {}: {e}", row.columns().get(index).map_or("?", |c| c.name()))))
}

/// A memory id from its UUID.
pub(super) fn memory_id(uuid: Uuid) -> Result<MemoryId, StoreError> {
    MemoryId::from_str(&uuid.hyphenated().to_string()).map_err(|e| StoreError::Corrupt(format!("bad memory id: {e}")))
}

/// A column's text parsed, or `Corrupt` naming `what`.
pub(super) fn parse<T: FromStr>(what: &'static str, value: &str) -> Result<T, StoreError> {
    value.parse().map_err(|_| StoreError::Corrupt(format!("bad {what} {value:?}")))
}
