//! API keys in PostgreSQL: the rows behind [`ApiKeyStore`] (its rules are in `crate::keys`).
//! One table for the whole database, not keyed by user: a key is looked up by its hash
//! before anyone's scope is known. With Citus it is a reference table.

use postgres::Row;

use super::{PgStore, col};
use crate::StoreError;
use crate::keys::{ApiKeyRecord, ApiKeyStore, KEY_COLUMNS, KEY_COLUMNS_AND_HASH, NewApiKey};
use membank_core::{TenantId, Timestamp, UserId};

fn row_to_key(row: &Row) -> Result<ApiKeyRecord, StoreError> {
    let bad = |e: membank_core::InvalidInput| StoreError::Corrupt(format!("bad key row: {e}"));
    Ok(ApiKeyRecord {
        key_id: col(row, 0)?,
        tenant: TenantId::new(&col::<String>(row, 1)?).map_err(bad)?,
        user: col::<Option<String>>(row, 2)?.map(|u| UserId::new(&u)).transpose().map_err(bad)?,
        admin: col(row, 3)?,
        label: col(row, 4)?,
        created_at: col(row, 5)?,
        revoked_at: col(row, 6)?,
    })
}

impl ApiKeyStore for PgStore {
    fn create_key(&self, key: NewApiKey) -> Result<ApiKeyRecord, StoreError> {
        for text in [Some(&key.key_id), Some(&key.hash), key.label.as_ref()].into_iter().flatten() {
            super::refuse_nul("API key", text)?;
        }
        self.pool.write(|tx| {
            let row = tx.query_one(
                &format!("INSERT INTO api_keys (key_id, hash, tenant, user_key, admin, label, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {KEY_COLUMNS}"),
                &[&key.key_id, &key.hash, &key.tenant.as_str(), &key.user.as_ref().map(|u| u.as_str()), &key.admin, &key.label, &super::millis(key.created_at)],
            )?;
            row_to_key(&row)
        })
    }

    fn find_key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.pool.read(|tx| {
            tx.query_opt(
                &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE hash = $1 AND revoked_at IS NULL"),
                &[&hash],
            )?
            .map(|row| row_to_key(&row))
            .transpose()
        })
    }

    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.pool.read(|tx| {
            tx.query(&format!("SELECT {KEY_COLUMNS} FROM api_keys ORDER BY row_seq"), &[])?
                .iter()
                .map(row_to_key)
                .collect()
        })
    }

    fn revoke_key(&self, key_id: &str, now: Timestamp) -> Result<ApiKeyRecord, StoreError> {
        self.pool.write(|tx| {
            let found = tx
                .query_opt(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = $1 FOR UPDATE"), &[&key_id])?
                .map(|row| row_to_key(&row))
                .transpose()?;
            let Some(found) = found else { return Err(StoreError::NotFound { what: format!("key {key_id}") }) };
            if found.revoked_at.is_some() {
                return Err(StoreError::Conflict(format!("key {key_id} is already revoked")));
            }
            let row = tx.query_one(
                &format!("UPDATE api_keys SET revoked_at = $2 WHERE key_id = $1 RETURNING {KEY_COLUMNS}"),
                &[&key_id, &super::millis(now)],
            )?;
            row_to_key(&row)
        })
    }

    fn live_key_count(&self) -> Result<u64, StoreError> {
        self.pool.read(|tx| {
            Ok(col::<i64>(&tx.query_one("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL", &[])?, 0)?.max(0)
                as u64)
        })
    }

    fn export_keys(&self) -> Result<Vec<(ApiKeyRecord, String)>, StoreError> {
        self.pool.read(|tx| {
            tx.query(&format!("SELECT {KEY_COLUMNS_AND_HASH} FROM api_keys ORDER BY row_seq"), &[])?
                .iter()
                .map(|row| Ok((row_to_key(row)?, col(row, 7)?)))
                .collect()
        })
    }

    fn import_key(&self, key: &ApiKeyRecord, hash: &str) -> Result<bool, StoreError> {
        for text in [key.key_id.as_str(), hash].into_iter().chain(key.label.as_deref()) {
            super::refuse_nul("API key", text)?;
        }
        self.pool.write(|tx| {
            // The table is locked against other imports and creations of keys for the rest of
            // the transaction, so the check and the insert cannot be raced into a unique
            // violation (a database error) instead of a Conflict.
            tx.execute("LOCK TABLE api_keys IN SHARE ROW EXCLUSIVE MODE", &[])?;
            let found: Vec<(ApiKeyRecord, String)> =
                tx.query(&format!("SELECT {KEY_COLUMNS_AND_HASH} FROM api_keys WHERE key_id = $1 OR hash = $2"), &[&key.key_id, &hash])?.iter().map(|row| Ok((row_to_key(row)?, col(row, 7)?))).collect::<Result<_, StoreError>>()?;
            if let Some(conflict) = found.iter().find_map(|(record, found_hash)| record.import_conflict(found_hash, key, hash)) {
                return Err(conflict);
            }
            if !found.is_empty() {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO api_keys (key_id, hash, tenant, user_key, admin, label, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&key.key_id, &hash, &key.tenant.as_str(), &key.user.as_ref().map(|u| u.as_str()), &key.admin, &key.label, &super::millis(key.created_at), &key.revoked_at.map(super::millis)],
            )?;
            Ok(true)
        })
    }
}
