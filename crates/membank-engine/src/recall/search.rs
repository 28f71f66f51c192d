//! The first searches of a recall: the query (without its time expression) searched
//! densely and lexically, and searched again without the names of participants it names.

use membank_core::text;
use membank_store::{Hit, SearchFilter};

use super::setup::Setup;
use super::speakers::named_among;
use crate::feedback;
use crate::{Engine, EngineError};

/// What the query was searched as, and the two first-stage candidate lists.
pub(super) struct Search {
    /// The query without its time expression (the query itself when that leaves no terms).
    pub text: String,
    /// The query vector the searches used (of the text without named participants after a
    /// speaker re-query).
    pub vector: Vec<f32>,
    /// The query terms the lexical searches used.
    pub terms: Vec<String>,
    /// The dense candidates, best first.
    pub dense: Vec<Hit>,
    /// The lexical candidates, best first.
    pub lexical: Vec<Hit>,
}

impl Engine {
    /// Embeds the search text (unless reminiscence already did) and takes the dense and
    /// lexical candidates (those reminiscence's probe already found are not searched again).
    pub(super) fn first_search(&self, setup: &Setup, text: String) -> Result<Search, EngineError> {
        let vector = match &setup.query_vector {
            Some(vector) => vector.clone(),
            None => self.embedder.embed_query(text.as_str())?,
        };
        let terms = text::query_terms(&text);
        let (dense, lexical) = match &setup.prefetched {
            Some(found) => {
                let lexical = match &found.lexical {
                    Some(lexical) => lexical.clone(),
                    None => self.store.lexical_search(&setup.request.scope, &terms, &setup.filter, setup.candidates)?,
                };
                (found.dense.clone(), lexical)
            }
            None => self.searches(setup, &vector, &terms, &setup.filter)?,
        };
        Ok(Search { text, vector, terms, dense, lexical })
    }

    /// A participant named in the query is found by the speaker boost; searched for, the
    /// name only finds the lines that greet them (see `feedback`). When the best candidates'
    /// speakers show that the query names one, the searches run again without the name.
    pub(super) fn speaker_requery(&self, setup: &Setup, search: &mut Search) -> Result<(), EngineError> {
        if !setup.config.speaker_query {
            return Ok(());
        }
        // The hits carry their speakers: no row is read here (reading these 60 rows whole,
        // then only their speakers, was a tenth and then a sixteenth of a loaded server's
        // CPU time, most of it finding the rows).
        let probe = search
            .dense
            .iter()
            .take(feedback::SPEAKER_PROBE)
            .chain(search.lexical.iter().take(feedback::SPEAKER_PROBE));
        let named = named_among(&setup.request.query, probe.filter_map(|hit| hit.speaker.as_deref()));
        if let Some(stripped) = feedback::without_names(&search.text, &named) {
            search.vector = self.embedder.embed_query(stripped.as_str())?;
            search.terms = text::query_terms(&stripped);
            (search.dense, search.lexical) = self.searches(setup, &search.vector, &search.terms, &setup.filter)?;
        }
        Ok(())
    }

    /// Dense and lexical candidates for one query vector and its terms under `filter`.
    pub(super) fn searches(
        &self,
        setup: &Setup,
        vector: &[f32],
        terms: &[String],
        filter: &SearchFilter,
    ) -> Result<(Vec<Hit>, Vec<Hit>), EngineError> {
        crate::search::first_stage(
            self.store.as_ref(),
            &setup.request.scope,
            &self.model(),
            vector,
            terms,
            filter,
            setup.candidates,
        )
    }
}
