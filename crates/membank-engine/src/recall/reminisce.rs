//! Reminiscence: archived memories stay searchable as a cold tier, and a recall consults
//! them when the active memories do not answer well ([`Reminisce`] has the rule).
//!
//! The stage takes the hits selected over the active memories and returns them unchanged,
//! or, when the archive is consulted, the hits of the same pipeline run again over the
//! active and the archived memories, the archived ones marked [`reminisced`](super::RecallHit::reminisced).
//! `always` made the first ranking over both already (see `setup`); `never` and audits
//! (`include_archived`) pass through.
//!
//! **The probe.** One dense search over the person's memories with the archived ones
//! admitted, with the query vector and the filters of the active recall, limited to its
//! first [`PROBE`] candidates. The store's search admits archived and superseded memories
//! together, so a probe candidate is known to be archived by its row: a candidate that is
//! not among the active dense candidates cannot be active (the active search kept more
//! candidates than the probe does), and only those rows are read. `b` is the best cosine
//! of the archived ones (superseded ones never count), `a_k` the cosine of the k-th active
//! dense candidate.

use std::collections::HashSet;

use membank_core::{MemoryId, Status};
use membank_store::{Hit, SearchFilter};

use super::Ranked;
use super::setup::Setup;
use super::time::QueryTime;
use super::types::{Reminisce, Reminiscence};
use crate::{Engine, EngineError};

/// How many candidates the probe of the archive takes at least (it takes k when k is more,
/// up to the recall's candidates). Only its best archived cosine is used: whenever an
/// archived memory beats the k-th active one, some archived memory is among the first k.
pub(super) const PROBE: usize = 16;

impl Engine {
    /// Decides whether this recall consults the archive and, when it does, ranks again
    /// over the active and the archived memories; `setup` is then the archive's.
    pub(super) fn reminisce<'a>(
        &'a self,
        setup: &mut Setup<'a>,
        time: Option<&QueryTime>,
        ranked: Ranked,
    ) -> Result<(Ranked, Reminiscence), EngineError> {
        let request = setup.request;
        let mut summary = Reminiscence {
            mode: request.reminisce,
            probed: false,
            consulted: setup.reminiscing,
            archived_hits: 0,
            active_best: None,
            active_bar: None,
            archived_best: None,
            margin: setup.config.reminisce_margin,
        };
        if request.reminisce != Reminisce::Auto || request.include_archived || setup.reminiscing {
            return Ok((ranked, summary));
        }
        let active_best = ranked.dense.first().map(|h| h.score);
        // The bar: the cosine of the k-th active dense candidate, the last one that could be
        // returned on cosine alone (none when fewer than k are active: then any archived
        // candidate may fill a place).
        let bar = ranked.dense.get(request.k.saturating_sub(1)).map(|h| h.score);
        let archived_best = self.best_archived(setup, &ranked.vector, &ranked.dense)?;
        summary.probed = true;
        summary.active_best = active_best;
        summary.active_bar = bar;
        summary.archived_best = archived_best;
        let consult = match (bar, archived_best) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b > a + summary.margin,
        };
        if !consult {
            return Ok((ranked, summary));
        }
        *setup = setup.with_archive();
        summary.consulted = true;
        // The same pipeline over both tiers decides which archived memories come back.
        let ranked = self.rank(setup, time)?;
        Ok((ranked, summary))
    }

    /// The best cosine to `vector` among the person's archived memories under the recall's
    /// filters (`None` when none is among the probe's candidates).
    fn best_archived(&self, setup: &Setup, vector: &[f32], active: &[Hit]) -> Result<Option<f64>, EngineError> {
        let scope = &setup.request.scope;
        let filter = SearchFilter { include_archived: true, ..setup.filter.clone() };
        let probe = self.store.dense_search(
            scope,
            &self.model(),
            vector,
            &filter,
            PROBE.max(setup.request.k).min(setup.candidates),
        )?;
        let active: HashSet<MemoryId> = active.iter().map(|h| h.id).collect();
        let others: Vec<&Hit> = probe.iter().filter(|h| !active.contains(&h.id)).collect();
        if others.is_empty() {
            return Ok(None);
        }
        let ids: Vec<MemoryId> = others.iter().map(|h| h.id).collect();
        let archived: HashSet<MemoryId> = self
            .store
            .get_many(scope, &ids)?
            .into_iter()
            .filter(|m| m.status == Status::Archived)
            .map(|m| m.id)
            .collect();
        Ok(others.iter().find(|h| archived.contains(&h.id)).map(|h| h.score))
    }
}
