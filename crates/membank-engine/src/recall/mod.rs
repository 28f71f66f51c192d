//! The recall pipeline: embed the query, take dense (exact cosine over this user's
//! vectors) and lexical (BM25 over CJK-aware terms) candidates, fuse them by reciprocal
//! rank, optionally weight by retention, keep the top k, and strengthen what was returned when the policy says a retrieval is a recall. Time boosts
//! and neighbour expansion are in `expansion`; the stages for evidence in several places
//! (speaker query, feedback, day diversity, a day's summary first, the model's query
//! rewrite) in `feedback`, each a knob of [`RecallConfig`].
//!
//! Every hit carries its own scores: its cosine, its BM25 score, its fused score, how
//! that score was made ([`ScoreParts`]) and its retention before and after this recall.
//! Nothing here is shared across hits.
//!
//! **Reading a score.** The fused score is reciprocal rank fusion: each ranking a memory is
//! in adds `weight / (k + rank)` (k = 60), whatever its cosine or BM25 value, so first place
//! in one ranking adds 1/61 ≈ 0.0164 and a memory first in both the dense and the lexical
//! ranking scores ≈ 0.033. A time expression adds the same shares from the two rankings
//! restricted to its days (weighted 2 for an exact date), neighbour expansion adds a share
//! of a neighbour's score, and a named speaker or retention weighting multiply the sum.
//!
//! **Stages.** [`Engine::recall`] runs the stages in order, each a function of its own
//! file: `setup` (check the request), `time` (resolve a time expression, the day-restricted
//! rankings), `reminisce` (whether to rank over the archive too, because the active
//! memories do not answer well: [`Reminisce`]), `search` (the first searches and the speaker
//! re-query), `rankings` (the named rankings and each candidate's record), `second_stage`
//! (rewrites, feedback), `select` (hits from the fused candidates), then `select` again (day
//! diversity, summaries first) and `log`.

mod log;
mod rankings;
mod reminisce;
mod search;
mod second_stage;
mod select;
mod setup;
pub(crate) mod speakers;
mod time;
mod types;

pub use types::{
    DEFAULT_REMINISCE_MARGIN, DateFilter, RecallConfig, RecallHit, RecallRequest, RecallResponse, Reminisce,
    Reminiscence, ScoreParts, YearChoice,
};

use crate::{Engine, EngineError};
use rankings::Rankings;
use setup::Setup;
use time::QueryTime;

/// The selected hits of one ranking and what later stages need of it.
struct Ranked {
    /// The hits, best first.
    hits: Vec<RecallHit>,
    /// The rankings they were fused from.
    rankings: Rankings,
    /// The query vector the searches used.
    vector: Vec<f32>,
}

impl Engine {
    /// Recalls the memories most relevant to a query.
    pub fn recall(&self, request: RecallRequest) -> Result<RecallResponse, EngineError> {
        let mut setup = self.setup(&request)?;
        let config = setup.config;
        let time = self.resolve_time(&setup)?;
        // Whether the ranking is made over the archive too is decided before it.
        let reminiscence = self.reminisce(&mut setup, time.as_ref())?;
        let ranked = self.rank(&setup, time.as_ref())?;
        let hits = select::diversify_days(&setup, ranked.hits);
        let mut hits = self.promote_summaries(&setup, time.as_ref(), &ranked.rankings, hits)?;
        hits.truncate(request.k);
        let logged = self.log_and_strengthen(&setup, ranked.vector, &mut hits)?;
        // A user with memories is known; with none, the user row says whether anything was
        // ever stored for them (an empty answer then is not a mistyped name).
        let user_known =
            !hits.is_empty() || self.store.find_user(&request.scope.tenant, &request.scope.user)?.is_some();
        Ok(RecallResponse {
            user_known,
            query_id: logged.query_id,
            now: setup.now,
            strengthened: logged.strengthened,
            reminiscence: Reminiscence { archived_hits: hits.iter().filter(|h| h.reminisced).count(), ..reminiscence },
            results: hits,
            date_filter: time::date_filter(&setup, time.as_ref()),
            time_range: time.map(|t| (t.boost.from, t.boost.to)),
            rrf_k: config.rrf_k,
        })
    }

    /// From the searches to the selected hits: the first searches and the speaker
    /// re-query, the named rankings, the second stage, neighbour expansion, selection.
    fn rank(&self, setup: &Setup, time: Option<&QueryTime>) -> Result<Ranked, EngineError> {
        let (request, config) = (setup.request, setup.config);
        let mut search = self.first_search(setup, time::search_text(setup, time))?;
        self.speaker_requery(setup, &mut search)?;
        let mut rankings = Rankings::first_stage(&search.dense, &search.lexical, config);
        self.day_lists(setup, time, &search, &mut rankings)?;
        self.rewrite(setup, &search, &mut rankings)?;
        let fused = self.feedback(setup, &search, &mut rankings)?;
        let (weight, exchange_weight) = (config.neighbour_weight, config.exchange_neighbour_weight);
        let fused = self.expand_neighbours(&request.scope, &setup.filter, &fused, weight, exchange_weight)?;
        let hits = self.select(setup, &rankings, fused)?;
        Ok(Ranked { hits, rankings, vector: search.vector })
    }
}
