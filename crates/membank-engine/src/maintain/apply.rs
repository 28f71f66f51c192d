//! The end of a cycle: the plan applied in one transaction, then the summaries an erasure
//! took away made again.

use membank_core::Scope;
use membank_store::MaintenancePlan;
use serde_json::json;

use super::cycle::Cycle;
use super::types::MaintainReport;
use crate::{Engine, EngineError};

impl Engine {
    /// Applies the cycle's plan in one transaction, with the report's numbers as its
    /// summary. Changes whose memories changed status while the cycle ran are skipped and
    /// counted in the report.
    pub(super) fn apply(&self, cycle: Cycle) -> Result<MaintainReport, EngineError> {
        let maintained_through = cycle.maintained_through();
        let Cycle { scope, now, policy, updates, archive, supersede, inserts: insert, mut report, .. } = cycle;
        let summary = json!({
            "policy": policy.kind.as_str(), "examined": report.examined, "promoted": report.promoted, "demoted": report.demoted,
            "archived": report.archived.len(), "deferred": report.deferred, "merged": report.merged.len(), "fused": report.fused.len(),
            "conflicts": report.conflicts, "rated": report.rated, "skipped": report.skipped,
        });
        let plan = MaintenancePlan {
            now,
            updates: updates.into_values().collect(),
            archive,
            insert,
            supersede,
            summary,
            maintained_through,
        };
        let applied = self.store.apply_maintenance(&scope, plan)?;
        if applied.skipped > 0 {
            report
                .skipped
                .push(format!("{} changes: their memories changed status while the cycle ran", applied.skipped));
        }
        tracing::debug!(user = %scope.user, archived = applied.archived, superseded = applied.superseded, inserted = applied.inserted, "maintenance cycle applied");
        Ok(report)
    }

    /// Summaries an erasure took away are made again here when an LLM is configured
    /// (without one, `summarize` does it when it next runs).
    pub(super) fn resummarize_erased(&self, scope: &Scope, report: &mut MaintainReport) -> Result<(), EngineError> {
        if self.llm.is_some() && self.store.maintenance_state(scope)?.resummarize_due {
            match self.summarize(crate::companion::SummarizeRequest { scope: scope.clone(), force: false }) {
                Ok(done) => {
                    tracing::info!(user = %scope.user, days = done.days.iter().filter(|d| d.summary.changed() || d.portrait.changed()).count(), "summaries made again after an erasure")
                }
                Err(err) => report.skipped.push(format!("summaries due after an erasure were not made again: {err}")),
            }
        }
        Ok(())
    }
}
