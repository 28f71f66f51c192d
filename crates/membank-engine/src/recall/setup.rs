//! The first stage of a recall: check the request and settle what every later stage shares.

use membank_core::limits::MAX_RECALL_K;
use membank_core::{InvalidInput, Timestamp};
use membank_store::{Hit, SearchFilter};

use super::types::{RecallConfig, RecallRequest, Reminisce};
use crate::ops::validate_text;
use crate::{Engine, EngineError};

/// A checked recall request and the settings its stages run with.
pub(super) struct Setup<'a> {
    /// The request as the caller made it.
    pub request: &'a RecallRequest,
    /// The engine's recall settings.
    pub config: &'a RecallConfig,
    /// The query's time: ranking weighs retention and strengthening happens at it.
    pub now: Timestamp,
    /// The caller's kinds, days and archive choice, as every search applies them.
    pub filter: SearchFilter,
    /// How many candidates each search returns (at least `k`).
    pub candidates: usize,
    /// Whether fused scores are multiplied by retention (the request's choice, else the
    /// configuration's).
    pub weight_by_retention: bool,
    /// Whether this ranking is made over the active and the archived memories by
    /// reminiscence (`filter` then admits archived memories, and selection admits archived
    /// but never superseded ones); see [`super::Reminisce`].
    pub reminiscing: bool,
    /// The search text's embedding, when reminiscence needed it before the first search
    /// (which then uses it rather than embedding the text again).
    pub query_vector: Option<Vec<f32>>,
    /// The first searches' candidates, when reminiscence's probe already found them (its
    /// one scan gives the dense candidates of either ranking).
    pub prefetched: Option<Prefetched>,
}

/// First-stage candidates found before the first search, under the setup's filter.
pub(super) struct Prefetched {
    /// The dense candidates, best first.
    pub dense: Vec<Hit>,
    /// The lexical candidates, when they were searched too.
    pub lexical: Option<Vec<Hit>>,
}

impl Setup<'_> {
    /// The same recall made over the active and the archived memories (reminiscence).
    pub fn with_archive(&self) -> Self {
        Setup {
            request: self.request,
            config: self.config,
            now: self.now,
            filter: SearchFilter { include_archived: true, ..self.filter.clone() },
            candidates: self.candidates,
            weight_by_retention: self.weight_by_retention,
            reminiscing: true,
            query_vector: self.query_vector.clone(),
            prefetched: None,
        }
    }
}

impl Engine {
    /// Checks the request (query text, `k`, the day range, the query's time) and sets up
    /// the recall.
    pub(super) fn setup<'a>(&'a self, request: &'a RecallRequest) -> Result<Setup<'a>, EngineError> {
        validate_text("query", &request.query)?;
        if request.k == 0 || request.k > MAX_RECALL_K {
            return Err(InvalidInput::new("k", format!("must be between 1 and {MAX_RECALL_K}")).into());
        }
        if let (Some(from), Some(to)) = (request.day_from, request.day_to)
            && from > to
        {
            return Err(InvalidInput::new("date range", format!("starts ({from}) after it ends ({to})")).into());
        }
        let now = self.request_now(request.now, request.strengthen != Some(false))?;
        let config = &self.config.recall;
        let filter = SearchFilter {
            kinds: request.kinds.clone(),
            day_from: request.day_from,
            day_to: request.day_to,
            include_archived: request.include_archived,
        };
        let setup = Setup {
            request,
            config,
            now,
            filter,
            candidates: config.candidates.max(request.k),
            weight_by_retention: request.weight_by_retention.unwrap_or(config.weight_by_retention),
            reminiscing: false,
            query_vector: None,
            prefetched: None,
        };
        // `always` ranks over the archive from the start; an audit sees it anyway.
        Ok(if request.reminisce == Reminisce::Always && !request.include_archived {
            setup.with_archive()
        } else {
            setup
        })
    }
}
