//! What the backend-neutral write rules (`maintenance.rs`, `erasure.rs`) need from one
//! backend's write transaction, already bound to one user: the small storage traits each
//! backend implements over its own SQL.

use membank_core::event::NewEvent;

use crate::StoreError;

/// One user's write transaction.
pub(crate) trait UserTx {
    /// Appends events to the user's log, in order.
    fn append(&mut self, events: &[NewEvent]) -> Result<(), StoreError>;
    /// Marks the user's searchable set changed (the search caches reload it).
    fn bump_revision(&mut self) -> Result<(), StoreError>;
}
