//! Reminiscence: archived memories stay searchable as a cold tier, and a recall consults
//! them when the active memories do not answer well ([`Reminisce`] has the rule).
//!
//! The stage runs before the first search and decides whether the recall's one ranking is
//! made over the active memories alone or over the active and the archived ones (the archived
//! hits then marked [`reminisced`](super::RecallHit::reminisced)). `always` decided that
//! already (see `setup`); `never` and audits (`include_archived`) pass through.
//!
//! **The probe.** One dense search over the person's memories with the archived ones
//! admitted, with the query's vector (the search text's, which the first search then reuses)
//! and the recall's filters, for its first k + [`PROBE`] candidates, whose rows are read for
//! their status. `a_k` is the cosine of the k-th active one, `b` the best cosine of the
//! archived ones (superseded ones never count). When fewer than k of them are active, either
//! the person has fewer than k matching active memories or more than [`PROBE`] archived ones
//! rank above the k-th active one: either way the archive is worth the ranking's look.

use std::collections::HashMap;

use membank_core::{MemoryId, Status};
use membank_store::SearchFilter;

use super::setup::Setup;
use super::time::{self, QueryTime};
use super::types::{Reminisce, Reminiscence};
use crate::{Engine, EngineError};

/// How many candidates beyond k the probe of the archive takes.
pub(super) const PROBE: usize = 16;

impl Engine {
    /// Decides whether this recall consults the archive; when it does, `setup` becomes the
    /// archive's. Either way a probing `setup` keeps the query's vector for the first search.
    pub(super) fn reminisce<'a>(
        &'a self,
        setup: &mut Setup<'a>,
        time: Option<&QueryTime>,
    ) -> Result<Reminiscence, EngineError> {
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
            return Ok(summary);
        }
        let vector = self.embedder.embed_query(&time::search_text(setup, time))?;
        let scope = &request.scope;
        let filter = SearchFilter { include_archived: true, ..setup.filter.clone() };
        let probe = self.store.dense_search(scope, &self.model(), &vector, &filter, request.k + PROBE)?;
        let ids: Vec<MemoryId> = probe.iter().map(|h| h.id).collect();
        let status: HashMap<MemoryId, Status> =
            self.store.get_many(scope, &ids)?.into_iter().map(|m| (m.id, m.status)).collect();
        let is = |id: &MemoryId, wanted: Status| status.get(id) == Some(&wanted);
        let active: Vec<f64> = probe.iter().filter(|h| is(&h.id, Status::Active)).map(|h| h.score).collect();
        let archived_best = probe.iter().find(|h| is(&h.id, Status::Archived)).map(|h| h.score);
        summary.probed = true;
        summary.active_best = active.first().copied();
        // The bar: the k-th active cosine, the last active memory the recall could return
        // on meaning alone.
        summary.active_bar = active.get(request.k.saturating_sub(1)).copied();
        summary.archived_best = archived_best;
        let consult = match (summary.active_bar, archived_best) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b > a + summary.margin,
        };
        setup.query_vector = Some(vector);
        if consult {
            *setup = setup.with_archive();
            summary.consulted = true;
        }
        Ok(summary)
    }
}
