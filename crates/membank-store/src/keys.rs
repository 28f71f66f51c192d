//! API keys of the REST and MCP server: stored as hashes, never as the key itself. The
//! records, the trait both backends implement and the rules they share; the SQL is in each
//! backend's `keys.rs`.
//!
//! A store only stores and finds rows; generating keys and hashing them is the server's
//! business (it hands the store the hash). A key belongs to a tenant, may be bound to
//! one user of that tenant, may be an admin key, and is revoked rather than deleted so the
//! list keeps its history. It deliberately has no method that returns a key's secret:
//! there is none to return. The hashes leave the store only through
//! [`ApiKeyStore::export_keys`], for `membank migrate` to copy keys into another store
//! ([`ApiKeyStore::import_key`]) so they keep working there.

use membank_core::{TenantId, Timestamp, UserId};

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

/// The columns of an [`ApiKeyRecord`], in the order both backends read them.
pub(crate) const KEY_COLUMNS: &str = "key_id, tenant, user_key, admin, label, created_at, revoked_at";
/// [`KEY_COLUMNS`] and the hash after them.
pub(crate) const KEY_COLUMNS_AND_HASH: &str = "key_id, tenant, user_key, admin, label, created_at, revoked_at, hash";
