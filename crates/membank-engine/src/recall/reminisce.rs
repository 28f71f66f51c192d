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
//! and the recall's filters, for its first k + [`PROBE`] candidates and their statuses. The
//! same scan gives the first search's dense candidates of either ranking
//! ([`membank_store::Store::dense_search_tiers`]), and the lexical ones of the active
//! ranking are searched beside it, so a recall that does not consult the archive scans
//! once. `a_k` is the cosine of the k-th active one, `b` the best cosine of the archived
//! ones (superseded ones never count). When fewer than k of them are active, either
//! the person has fewer than k matching active memories or more than [`PROBE`] archived ones
//! rank above the k-th active one: either way the archive is worth the ranking's look.

use membank_core::Status;

use super::setup::{Prefetched, Setup};
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
        let text = time::search_text(setup, time);
        let vector = self.embedder.embed_query(&text)?;
        let terms = membank_core::text::query_terms(&text);
        let scope = &request.scope;
        let wide_limit = setup.candidates.max(request.k + PROBE);
        let model = self.model();
        // The lexical candidates under the active filter, beside the scan: most recalls do
        // not consult the archive and use them as they are.
        // Side by side only while a core is spare (`membank_store::parallel`): under load
        // the thread would only queue behind other recalls.
        let _working = membank_store::parallel::working();
        let beside = !terms.is_empty() && membank_store::parallel::spare_core();
        let (tiers, lexical) = std::thread::scope(|threads| {
            let lexical = beside
                .then(|| threads.spawn(|| self.store.lexical_search(scope, &terms, &setup.filter, setup.candidates)));
            let tiers =
                self.store.dense_search_tiers(scope, &model, &vector, &setup.filter, setup.candidates, wide_limit);
            // The lexical search only panics on a bug; pass the panic on as such.
            (tiers, lexical.map(|l| l.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
        });
        let (active_candidates, wide) = tiers?;
        let lexical = match lexical {
            Some(found) => found?,
            None => self.store.lexical_search(scope, &terms, &setup.filter, setup.candidates)?,
        };
        let probe = &wide[..wide.len().min(request.k + PROBE)];
        let active: Vec<f64> = probe.iter().filter(|(_, s)| *s == Status::Active).map(|(h, _)| h.score).collect();
        let archived_best = probe.iter().find(|(_, s)| *s == Status::Archived).map(|(h, _)| h.score);
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
            // The wide list is the archive ranking's dense search, under the same filter.
            let dense = wide.into_iter().take(setup.candidates).map(|(hit, _)| hit).collect();
            setup.prefetched = Some(Prefetched { dense, lexical: None });
        } else {
            setup.prefetched = Some(Prefetched { dense: active_candidates, lexical: Some(lexical) });
        }
        Ok(summary)
    }
}
