//! API keys of the REST and MCP server: stored as hashes, never as the key itself.
//!
//! This module only stores and finds rows; generating keys and hashing them is the
//! server's business (it hands us the hash). A key belongs to a tenant, may be bound to
//! one user of that tenant, may be an admin key, and is revoked rather than deleted so the
//! list keeps its history. It deliberately has no method that returns a key's secret:
//! there is none to return. The hashes leave the store only through
//! [`ApiKeyStore::export_keys`], for `membank migrate` to copy keys into another store
//! ([`ApiKeyStore::import_key`]) so they keep working there.

use membank_core::{TenantId, Timestamp, UserId};
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, from_millis, millis};
use crate::StoreError;

/// A stored API key (without its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// Public identifier (shown in lists, used to revoke).
    pub key_id: String,
    /// The tenant whose users the key may act for (admin keys: any tenant).
    pub tenant: TenantId,
    /// When set, the only user the key may act for.
    pub user: Option<UserId>,
    /// Operations key: may act for any tenant and call admin endpoints.
    pub admin: bool,
    /// Free-form label.
    pub label: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
}

/// A key to store: its public id, the hash of its secret, and what it may do.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    /// Public identifier.
    pub key_id: String,
    /// Hash of the secret (hex); the secret itself is never stored.
    pub hash: String,
    /// Owning tenant.
    pub tenant: TenantId,
    /// Optional user binding.
    pub user: Option<UserId>,
    /// Admin key.
    pub admin: bool,
    /// Free-form label.
    pub label: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
}

/// Storage of API keys, separate from [`crate::Store`] because only the server needs it.
pub trait ApiKeyStore: Send + Sync {
    /// Stores a new key.
    fn create_key(&self, key: NewApiKey) -> Result<ApiKeyRecord, StoreError>;
    /// Finds the live (not revoked) key with this hash.
    fn find_key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>, StoreError>;
    /// All keys, revoked ones included, oldest first.
    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError>;
    /// Revokes a key; `NotFound` if there is no such key, `Conflict` if already revoked.
    fn revoke_key(&self, key_id: &str, now: Timestamp) -> Result<ApiKeyRecord, StoreError>;
    /// How many live keys exist (zero means the server runs without auth).
    fn live_key_count(&self) -> Result<u64, StoreError>;
    /// Every key with the hash of its secret, revoked ones included, oldest first: what a
    /// migration copies into another store. Nothing else needs the hashes out.
    fn export_keys(&self) -> Result<Vec<(ApiKeyRecord, String)>, StoreError>;
    /// Stores a key exactly as another store holds it (id, hash, tenant, user binding,
    /// admin, label, creation and revocation times, to the millisecond): `Ok(true)` when
    /// stored, `Ok(false)` when this identical key is here already (so a migration run
    /// again changes nothing); `Conflict` when another key holds its id or its hash.
    fn import_key(&self, key: &ApiKeyRecord, hash: &str) -> Result<bool, StoreError>;
}

/// `key` as a store gives it back: its times cut to whole milliseconds, as both stores
/// keep them. Compared with what is stored when a key is imported again.
fn stored_form(key: &ApiKeyRecord) -> ApiKeyRecord {
    let cut = |t: Timestamp| chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t);
    ApiKeyRecord { created_at: cut(key.created_at), revoked_at: key.revoked_at.map(cut), ..key.clone() }
}

impl ApiKeyRecord {
    /// Why the imported `key` (with `hash`) cannot be stored beside this stored key (with
    /// `stored_hash`, found by the same id or the same hash), or `None` when it is the same
    /// key. Shared by both stores' [`ApiKeyStore::import_key`].
    pub(crate) fn import_conflict(&self, stored_hash: &str, key: &ApiKeyRecord, hash: &str) -> Option<StoreError> {
        if self.key_id != key.key_id {
            return Some(StoreError::Conflict(format!(
                "key {} has the secret hash of key {}, which is stored already; the two stores disagree about who holds that secret",
                key.key_id, self.key_id
            )));
        }
        if stored_hash != hash {
            return Some(StoreError::Conflict(format!(
                "key {} exists already with another secret; revoke it in one of the stores and create a new key",
                key.key_id
            )));
        }
        if *self != stored_form(key) {
            return Some(StoreError::Conflict(format!(
                "key {} exists already with other settings (tenant, user, admin, label or times)",
                key.key_id
            )));
        }
        None
    }
}

const KEY_COLUMNS: &str = "key_id, tenant, user_key, admin, label, created_at, revoked_at";
/// [`KEY_COLUMNS`] and the hash after them.
const KEY_COLUMNS_AND_HASH: &str = "key_id, tenant, user_key, admin, label, created_at, revoked_at, hash";

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
