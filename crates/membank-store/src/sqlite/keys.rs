//! API keys in SQLite: the rows behind [`ApiKeyStore`] (its rules are in `crate::keys`).

use membank_core::{TenantId, Timestamp, UserId};
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, from_millis, millis};
use crate::StoreError;
use crate::keys::{ApiKeyRecord, ApiKeyStore, KEY_COLUMNS, KEY_COLUMNS_AND_HASH, NewApiKey};

fn row_to_key(row: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKeyRecord> {
    let bad = |what: &'static str| {
        move |e: membank_core::InvalidInput| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, format!("bad {what}: {e}").into())
        }
    };
    Ok(ApiKeyRecord {
        key_id: row.get(0)?,
        tenant: TenantId::new(&row.get::<_, String>(1)?).map_err(bad("tenant"))?,
        user: row.get::<_, Option<String>>(2)?.map(|u| UserId::new(&u)).transpose().map_err(bad("user"))?,
        admin: row.get(3)?,
        label: row.get(4)?,
        created_at: from_millis(row.get(5)?)?,
        revoked_at: row.get::<_, Option<i64>>(6)?.map(from_millis).transpose()?,
    })
}

impl ApiKeyStore for SqliteStore {
    fn create_key(&self, key: NewApiKey) -> Result<ApiKeyRecord, StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO api_keys (key_id, hash, tenant, user_key, admin, label, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![key.key_id, key.hash, key.tenant.as_str(), key.user.as_ref().map(|u| u.as_str()), key.admin, key.label, millis(key.created_at)],
            )?;
            Ok(tx.query_row(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?1"), [&key.key_id], row_to_key)?)
        })
    }

    fn find_key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE hash = ?1 AND revoked_at IS NULL"))?
                .query_row([hash], row_to_key)
                .optional()?)
        })
    }

    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {KEY_COLUMNS} FROM api_keys ORDER BY id"))?;
            Ok(stmt.query_map([], row_to_key)?.collect::<Result<_, _>>()?)
        })
    }

    fn revoke_key(&self, key_id: &str, now: Timestamp) -> Result<ApiKeyRecord, StoreError> {
        self.write(|tx| {
            let found = tx
                .query_row(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?1"), [key_id], row_to_key)
                .optional()?;
            let Some(found) = found else { return Err(StoreError::NotFound { what: format!("key {key_id}") }) };
            if found.revoked_at.is_some() {
                return Err(StoreError::Conflict(format!("key {key_id} is already revoked")));
            }
            tx.execute("UPDATE api_keys SET revoked_at = ?1 WHERE key_id = ?2", params![millis(now), key_id])?;
            Ok(tx.query_row(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?1"), [key_id], row_to_key)?)
        })
    }

    fn live_key_count(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            Ok(conn
                .query_row("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL", [], |r| r.get::<_, i64>(0))?
                .max(0) as u64)
        })
    }

    fn export_keys(&self) -> Result<Vec<(ApiKeyRecord, String)>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {KEY_COLUMNS_AND_HASH} FROM api_keys ORDER BY id"))?;
            Ok(stmt.query_map([], |row| Ok((row_to_key(row)?, row.get::<_, String>(7)?)))?.collect::<Result<_, _>>()?)
        })
    }

    fn import_key(&self, key: &ApiKeyRecord, hash: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let mut stmt = tx.prepare(&format!("SELECT {KEY_COLUMNS_AND_HASH} FROM api_keys WHERE key_id = ?1 OR hash = ?2"))?;
            let found: Vec<(ApiKeyRecord, String)> = stmt.query_map(params![key.key_id, hash], |row| Ok((row_to_key(row)?, row.get::<_, String>(7)?)))?.collect::<Result<_, _>>()?;
            if let Some(conflict) = found.iter().find_map(|(record, found_hash)| record.import_conflict(found_hash, key, hash)) {
                return Err(conflict);
            }
            if !found.is_empty() {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO api_keys (key_id, hash, tenant, user_key, admin, label, created_at, revoked_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![key.key_id, hash, key.tenant.as_str(), key.user.as_ref().map(|u| u.as_str()), key.admin, key.label, millis(key.created_at), key.revoked_at.map(millis)],
            )?;
            Ok(true)
        })
    }
}
