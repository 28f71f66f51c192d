//! The rules of all-or-nothing inserts with an optional `Idempotency-Key`, shared by both
//! backends: which keys are accepted, that one insert belongs to one user, and what a
//! retry with a claimed key gets. Each backend claims the key and stores the memories in
//! one transaction of its own.

use membank_core::{InvalidInput, Scope};

use crate::StoreError;
use crate::types::{IdempotencyClaim, IdempotencyRecord, Insertion, NewMemory};

/// Longest key accepted, in bytes.
pub(crate) const MAX_KEY_BYTES: usize = 255;

/// Checks a batch and its claim before any transaction: the scope the batch is stored
/// under, or `None` for an empty batch (which stores nothing).
pub(crate) fn check_insert(batch: &[NewMemory], claim: Option<&IdempotencyClaim>) -> Result<Option<Scope>, StoreError> {
    let Some(first) = batch.first() else { return Ok(None) };
    let scope = first.memory.scope.clone();
    if batch.iter().any(|n| n.memory.scope.tenant != scope.tenant || n.memory.scope.user != scope.user) {
        return Err(StoreError::Invalid(InvalidInput::new("batch", "all memories of one insert belong to one user")));
    }
    if let Some(claim) = claim {
        check_key(&claim.key)?;
    }
    Ok(Some(scope))
}

/// What a request whose key is claimed already gets: the first request's record, if it
/// was the same request.
pub(crate) fn replay(record: IdempotencyRecord, claim: &IdempotencyClaim) -> Result<Insertion, StoreError> {
    if record.request_hash != claim.request_hash {
        return Err(StoreError::Invalid(InvalidInput::new(
            "Idempotency-Key",
            "was already used with a different request; use a new key for a new request",
        )));
    }
    Ok(Insertion::Replayed(record))
}

/// A key is 1 to [`MAX_KEY_BYTES`] visible ASCII characters.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(StoreError::Invalid(InvalidInput::new(
            "Idempotency-Key",
            format!("must be 1 to {MAX_KEY_BYTES} visible ASCII characters"),
        )));
    }
    Ok(())
}
