//! One user's write transaction in SQLite, for the backend-neutral write rules
//! (`crate::write`): the plan and erasure traits are implemented beside their SQL, in
//! `maintain.rs` and `erasure.rs`.

use super::group_commit::Tx;
use membank_core::event::NewEvent;

use super::{append_event, bump_revision};
use crate::StoreError;
use crate::write::UserTx;

/// A write transaction and the user's row it is bound to.
pub(super) struct UserWriter<'a, 'c> {
    pub(super) tx: &'a Tx<'c>,
    pub(super) user: i64,
}

impl UserTx for UserWriter<'_, '_> {
    fn append(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        events.iter().try_for_each(|event| append_event(self.tx, self.user, event))
    }

    fn bump_revision(&mut self) -> Result<(), StoreError> {
        bump_revision(self.tx, self.user)
    }
}
