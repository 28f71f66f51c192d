//! One maintenance cycle over one user: importance and layers,
//! archiving under the configured policy, near-duplicate merging, and — with an LLM —
//! importance rating, fusion of fading clusters and conflict resolution.
//!
//! The cycle is planned from one snapshot of the user's active memories and applied by
//! [`membank_store::Store::apply_maintenance`] in one transaction, so a crash leaves the
//! user as before or as after, never half. LLM calls happen while planning, before the
//! transaction; a call that fails or answers malformed JSON drops only its own item, which
//! the report names in `skipped`, and changes nothing. Nothing is ever deleted: archived and
//! superseded memories stay restorable, and every change is an event with its numbers.
//!
//! It deliberately does not summarise days (that is `summarize`) and never reads the
//! system clock: `now` comes from the request or the engine's clock.
//!
//! **Stages.** [`Engine::maintain`] runs them in order around one `Cycle` (`cycle`): the
//! snapshot, importance rated and layers updated (`importance`), archiving (`archive`),
//! near-duplicates merged (`duplicates`), fusion and conflicts (`fusion`, `conflicts`),
//! and the plan applied (`apply`).

mod apply;
mod archive;
mod conflicts;
mod cycle;
mod derived;
mod duplicates;
mod fusion;
mod importance;
mod similarity;
mod types;

pub use types::{MaintainReport, MaintainRequest, Merge};

use crate::{Engine, EngineError};

impl Engine {
    /// Runs one maintenance cycle over one user.
    pub fn maintain(&self, request: MaintainRequest) -> Result<MaintainReport, EngineError> {
        let mut cycle = self.start_cycle(&request)?;
        if !self.snapshot(&mut cycle)? {
            // A user the store does not know has nothing to maintain.
            return Ok(cycle.report);
        }
        self.rate_importance(&mut cycle);
        cycle.update_layers();
        cycle.archive_fading();
        cycle.merge_duplicates(self.store.as_ref());
        self.consolidate(&mut cycle);
        if cycle.dry_run {
            return Ok(cycle.report);
        }
        let mut report = self.apply(cycle)?;
        self.resummarize_erased(&request.scope, &mut report)?;
        Ok(report)
    }
}
