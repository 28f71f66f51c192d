//! The second-stage rankings of a recall: the model's rewrites of the question, and
//! feedback from the first results (see `feedback` for both).

use membank_core::{MemoryId, text};

use super::rankings::Rankings;
use super::search::Search;
use super::setup::Setup;
use crate::{Engine, EngineError};

impl Engine {
    /// With a model: the question rewritten into search queries, each searched and its two
    /// rankings added. A model that fails or answers nonsense costs the stage, never the
    /// recall.
    pub(super) fn rewrite(&self, setup: &Setup, search: &Search, rankings: &mut Rankings) -> Result<(), EngineError> {
        let config = setup.config;
        let on = config.query_rewrite_weight > 0.0;
        if !on {
            return Ok(());
        }
        match self.rewrite_query(&search.text) {
            Ok(queries) => {
                for query in queries.unwrap_or_default() {
                    let vector = self.embedder.embed_query(query.as_str())?;
                    let (dense, lexical) = self.searches(setup, &vector, &text::query_terms(&query), &setup.filter)?;
                    rankings.add_rewrite(
                        &dense,
                        &lexical,
                        config.dense_weight * config.query_rewrite_weight,
                        config.lexical_weight * config.query_rewrite_weight,
                    );
                }
            }
            Err(err) => tracing::warn!(error = %err, "query rewrite failed; recalling with the question as asked"),
        }
        Ok(())
    }

    /// Fuses the rankings; with feedback on, adds a second dense ranking from the query
    /// moved towards the best fused candidates, and fuses again. Returns the fused
    /// candidates, best first.
    pub(super) fn feedback(
        &self,
        setup: &Setup,
        search: &Search,
        rankings: &mut Rankings,
    ) -> Result<Vec<(MemoryId, f64)>, EngineError> {
        let config = setup.config;
        let fused = rankings.fuse();
        let on = config.feedback_weight > 0.0 && config.feedback_depth > 0;
        if !on {
            return Ok(fused);
        }
        let ranked: Vec<MemoryId> = fused.iter().map(|(id, _)| *id).collect();
        let scope = &setup.request.scope;
        let Some(moved) =
            self.feedback_vector(scope, &search.vector, &ranked, config.feedback_depth, config.feedback_alpha)?
        else {
            return Ok(fused);
        };
        let again = self.store.dense_search(scope, &self.model(), &moved, &setup.filter, setup.candidates)?;
        rankings.add_feedback(&again, config.feedback_weight);
        Ok(rankings.fuse())
    }
}
