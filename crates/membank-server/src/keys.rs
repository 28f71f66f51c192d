//! API keys: making them, hashing them, and turning a presented key into a [`Principal`].
//!
//! A key is `mbk_<id>_<secret>`: `id` is 8 random bytes in hex (public: lists and
//! revocation use it), `secret` 32 random bytes in hex. Only SHA-256 of the whole key is
//! stored. A slow password hash is not needed here: the secret has 256 bits of entropy,
//! so there is no dictionary to attack, and a fast hash keeps authentication to one
//! indexed lookup. The key itself is printed once, at creation, and never again.

use membank_engine::core::{TenantId, Timestamp, UserId};
use membank_store::{ApiKeyRecord, ApiKeyStore, NewApiKey, StoreError};
use sha2::{Digest, Sha256};

/// Who is calling, as established by the key (or by the no-auth loopback mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key's public id (`None` in no-auth mode).
    pub key_id: Option<String>,
    /// The tenant the key belongs to.
    pub tenant: TenantId,
    /// When set, the only user this caller may act for.
    pub user: Option<UserId>,
    /// May choose any tenant (header `X-Membank-Tenant`) and call admin endpoints.
    pub admin: bool,
}

impl Principal {
    /// The principal of a stored key.
    pub fn of_key(record: &ApiKeyRecord) -> Self {
        Self {
            key_id: Some(record.key_id.clone()),
            tenant: record.tenant.clone(),
            user: record.user.clone(),
            admin: record.admin,
        }
    }

    /// The principal of a local, unauthenticated caller (loopback-only mode): the
    /// configured tenant, any user, no tenant switching.
    pub fn local(tenant: TenantId) -> Self {
        Self { key_id: None, tenant, user: None, admin: false }
    }
}

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The system's random source failed (ours).
    #[error("no randomness available: {0}")]
    Random(String),
    /// The store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A freshly created key: the secret (shown once) and its stored record.
#[derive(Debug, Clone)]
pub struct CreatedKey {
    /// The whole key, to hand to the client. Not stored anywhere.
    pub key: String,
    /// What was stored.
    pub record: ApiKeyRecord,
}

/// SHA-256 of a presented key, in lowercase hex: what the store keeps and looks up.
pub fn hash_key(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(bytes: usize) -> Result<String, KeyError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Makes and stores a new key for `tenant` (optionally bound to one user, or admin).
pub fn create_key(
    store: &dyn ApiKeyStore,
    tenant: TenantId,
    user: Option<UserId>,
    admin: bool,
    label: Option<String>,
    now: Timestamp,
) -> Result<CreatedKey, KeyError> {
    let key_id = random_hex(8)?;
    let key = format!("mbk_{key_id}_{}", random_hex(32)?);
    let record =
        store.create_key(NewApiKey { key_id, hash: hash_key(&key), tenant, user, admin, label, created_at: now })?;
    Ok(CreatedKey { key, record })
}

/// Finds the principal of a presented key; `None` for unknown or revoked keys.
pub fn authenticate(store: &dyn ApiKeyStore, presented: &str) -> Result<Option<Principal>, StoreError> {
    // Reject obviously malformed keys before touching the database.
    if !presented.starts_with("mbk_") || presented.len() > 200 {
        return Ok(None);
    }
    Ok(store.find_key_by_hash(&hash_key(presented))?.map(|r| Principal::of_key(&r)))
}
