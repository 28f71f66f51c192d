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
//! rankings), `search` (the first searches and the speaker re-query), `rankings` (the named
//! rankings and each candidate's record), `second_stage` (rewrites, feedback), `select`
//! (hits from the fused candidates, day diversity, summaries first) and `log`.

mod log;
mod rankings;
mod search;
mod second_stage;
mod select;
mod setup;
pub(crate) mod speakers;
mod time;
mod types;

pub use types::{DateFilter, RecallConfig, RecallHit, RecallRequest, RecallResponse, ScoreParts, YearChoice};

use crate::{Engine, EngineError};
use rankings::Rankings;

impl Engine {
    /// Recalls the memories most relevant to a query.
    pub fn recall(&self, request: RecallRequest) -> Result<RecallResponse, EngineError> {
        let setup = self.setup(&request)?;
        let config = setup.config;
        let time = self.resolve_time(&setup)?;
        let mut search = self.first_search(&setup, time::search_text(&setup, time.as_ref()))?;
        self.speaker_requery(&setup, &mut search)?;
        let mut rankings = Rankings::first_stage(&search.dense, &search.lexical, config);
        self.day_lists(&setup, time.as_ref(), &search, &mut rankings)?;
        self.rewrite(&setup, &search, &mut rankings)?;
        let fused = self.feedback(&setup, &search, &mut rankings)?;
        let (weight, exchange_weight) = (config.neighbour_weight, config.exchange_neighbour_weight);
        let fused = self.expand_neighbours(&request.scope, &setup.filter, &fused, weight, exchange_weight)?;
        let hits = self.select(&setup, search.seen, &rankings, fused)?;
        // Stages that reorder the selected hits take them and return them. A new one (such
        // as reminiscence) is a function of that shape called here, between select and
        // diversify.
        let hits = select::diversify_days(&setup, hits);
        let mut hits = self.promote_summaries(&setup, time.as_ref(), &rankings, hits)?;
        hits.truncate(request.k);
        let logged = self.log_and_strengthen(&setup, search.vector, &mut hits)?;
        Ok(RecallResponse {
            query_id: logged.query_id,
            now: setup.now,
            strengthened: logged.strengthened,
            results: hits,
            date_filter: time::date_filter(&setup, time.as_ref()),
            time_range: time.map(|t| (t.boost.from, t.boost.to)),
            rrf_k: config.rrf_k,
        })
    }
}
