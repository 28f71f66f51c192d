//! One user's write transaction in PostgreSQL, for the backend-neutral write rules
//! (`crate::write`): the plan and erasure traits are implemented beside their SQL, in
//! `maintain.rs` and `erasure.rs`.

use membank_core::event::NewEvent;
use uuid::Uuid;

use super::pool::Tx;
use super::{PgStore, append_events, bump_revision};
use crate::StoreError;
use crate::write::UserTx;

/// A write transaction, the store that opened it and the user (locked) it is bound to.
pub(super) struct UserWriter<'a, 'b> {
    pub(super) store: &'a PgStore,
    pub(super) tx: &'a mut Tx<'b>,
    pub(super) uid: Uuid,
}

impl UserTx for UserWriter<'_, '_> {
    fn append(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        append_events(self.tx, self.uid, events)
    }

    fn bump_revision(&mut self) -> Result<(), StoreError> {
        bump_revision(self.tx, self.uid)
    }
}
