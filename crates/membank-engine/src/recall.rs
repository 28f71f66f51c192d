//! The recall pipeline (DESIGN §5, first version): embed the query, take dense (exact
//! cosine over this user's vectors) and lexical (BM25 over CJK-aware terms) candidates,
//! fuse them by reciprocal rank, optionally weight by retention, keep the top k, and
//! strengthen what was returned when the policy says a retrieval is a recall. Time boosts
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

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use membank_core::forgetting::RecallMode;
use membank_core::fusion::{rank_share, reciprocal_rank_fusion};
use membank_core::limits::MAX_RECALL_K;
use membank_core::{EventId, InvalidInput, Kind, Memory, MemoryId, Scope, Status, Timestamp, text};
use membank_store::{ListQuery, RecallRecord, SearchFilter};

use crate::ops::validate_text;
use crate::{Engine, EngineError};
use crate::{feedback, temporal};

/// Settings of the recall pipeline.
#[derive(Debug, Clone, Copy)]
pub struct RecallConfig {
    /// How many candidates each retriever contributes before fusion.
    pub candidates: usize,
    /// The RRF damping constant.
    pub rrf_k: f64,
    /// Weight of the dense list in fusion.
    pub dense_weight: f64,
    /// Weight of the lexical list in fusion.
    pub lexical_weight: f64,
    /// Multiply fused scores by retention (memories fading on the curve rank lower).
    pub weight_by_retention: bool,
    /// Fusion weight of each day-restricted list when the query names an exact date
    /// ("on May 4th", "yesterday"); 0 turns time boosts off (see `expansion`).
    pub exact_time_weight: f64,
    /// The same for vague spans ("a few days ago", "last week").
    pub fuzzy_time_weight: f64,
    /// Share of a transcript line's (a note's) score lent to the lines before and after
    /// it on its day (0: off).
    pub neighbour_weight: f64,
    /// Share of a turn's (a message to the agent, with or without its reply) score lent
    /// to the next turn of its day (0: off; see `expansion`).
    pub exchange_neighbour_weight: f64,
    /// When the query names a speaker of the candidates (their `speaker` metadata, as in a
    /// group conversation), their memories' scores are multiplied by `1 + speaker_weight`
    /// (0: off). See [`named_speakers`].
    pub speaker_weight: f64,
    /// Fusion weight of the feedback ranking: a second dense search with the query moved
    /// towards its first results' vectors (0: off; see `feedback`).
    pub feedback_weight: f64,
    /// How many of the first results the feedback learns from.
    pub feedback_depth: usize,
    /// How far the query moves towards their mean vector (`q + α · mean`, normalised).
    pub feedback_alpha: f64,
    /// Each hit of a day already in the results multiplies a later hit's score by
    /// `1 − day_diversity`, so other days get through (0: off; see `feedback`).
    pub day_diversity: f64,
    /// Put the daily summary of the day(s) a query names ("on May 4th") first, then that
    /// day's turns (see `feedback`).
    pub day_summaries: bool,
    /// Search without the names of participants the query names (they are boosted by
    /// `speaker_weight` instead; see `feedback`).
    pub speaker_query: bool,
    /// With a model (`Engine::with_llm`): fusion weight of the rankings of the question
    /// rewritten by the model into up to three search queries (0: off; see `feedback`).
    pub query_rewrite_weight: f64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            candidates: 150,
            rrf_k: membank_core::fusion::RRF_K,
            dense_weight: 1.0,
            lexical_weight: 1.0,
            weight_by_retention: false,
            exact_time_weight: 2.0,
            fuzzy_time_weight: 0.3,
            neighbour_weight: 0.4,
            exchange_neighbour_weight: 0.0,
            speaker_weight: 0.5,
            feedback_weight: 0.0,
            feedback_depth: 5,
            feedback_alpha: 1.0,
            day_diversity: 0.0,
            day_summaries: true,
            speaker_query: true,
            query_rewrite_weight: 0.0,
        }
    }
}

/// Find the memories relevant to a query.
#[derive(Debug, Clone)]
pub struct RecallRequest {
    /// Whose memories.
    pub scope: Scope,
    /// The query, usually the person's new message.
    pub query: String,
    /// How many results (1..=200).
    pub k: usize,
    /// The query's own time (default: now); strengthening happens at this time.
    pub now: Option<Timestamp>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only memories on or after this day.
    pub day_from: Option<NaiveDate>,
    /// Only memories on or before this day.
    pub day_to: Option<NaiveDate>,
    /// Include archived memories (audits; they are never strengthened).
    pub include_archived: bool,
    /// Override whether this recall strengthens what it returns (default: per policy).
    pub strengthen: Option<bool>,
    /// Override retention weighting (default: per configuration).
    pub weight_by_retention: Option<bool>,
}

impl RecallRequest {
    /// A plain recall of `k` memories for `query`.
    pub fn new(scope: Scope, query: impl Into<String>, k: usize) -> Self {
        Self {
            scope,
            query: query.into(),
            k,
            now: None,
            kinds: Vec::new(),
            day_from: None,
            day_to: None,
            include_archived: false,
            strengthen: None,
            weight_by_retention: None,
        }
    }
}

/// One recalled memory with its own scores.
#[derive(Debug, Clone)]
pub struct RecallHit {
    /// The memory (after strengthening, if this recall strengthened it).
    pub memory: Memory,
    /// The fused score this hit was ranked by: see [`ScoreParts`] for how it was made.
    pub score: f64,
    /// Its cosine similarity to the query, if it was a dense candidate.
    pub dense: Option<f64>,
    /// Its BM25 score, if it was a lexical candidate.
    pub lexical: Option<f64>,
    /// The part of `score` lent by an adjacent turn that ranked well (neighbour expansion).
    pub neighbour: Option<f64>,
    /// Its retention at the query's time as `memory` is now, after this recall: 1 right
    /// after a strengthening recall under MemoryBank. The same as `retention_before` when
    /// this recall did not strengthen it.
    pub retention: f64,
    /// Its retention at the query's time before this recall: what retention weighting
    /// ranked it by.
    pub retention_before: f64,
    /// How `score` was made.
    pub parts: ScoreParts,
}

/// How a hit's fused score was made:
/// `score = (dense + lexical + date + feedback + neighbour) × speaker × retention × diversity`.
/// A day's summary put first ([`ScoreParts::day_summary`]) is the exception: its score is
/// raised to the best of the others, so scores still never increase down the list.
///
/// Each ranking adds `weight / (k + rank)` ([`rank_share`]): a rank share, not its cosine or
/// BM25 value, which only decide the order within their own ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreParts {
    /// Place in the dense ranking (cosine to the query), from 1, if it was in it.
    pub dense_rank: Option<usize>,
    /// What the dense ranking added.
    pub dense: f64,
    /// Place in the lexical ranking (BM25 over its words), from 1, if it was in it.
    pub lexical_rank: Option<usize>,
    /// What the lexical ranking added.
    pub lexical: f64,
    /// What the two rankings restricted to the days of the query's time expression added
    /// (0 without one).
    pub date: f64,
    /// What the second-stage rankings added: the feedback ranking and those of the
    /// model's rewritten queries (0 when off or not in them).
    pub feedback: f64,
    /// What an adjacent memory lent (neighbour expansion; 0 if none).
    pub neighbour: f64,
    /// The factor for a participant the query names (1 if none).
    pub speaker: f64,
    /// The factor of retention weighting: the retention before this recall, or 1 when off.
    pub retention: f64,
    /// The factor of day diversity: `(1 − day_diversity)` per hit of the same day ranked
    /// above this one (1 when off).
    pub diversity: f64,
    /// Put first as the summary of a day the query names; its score is then not made
    /// of the parts above (see [`ScoreParts`]).
    pub day_summary: bool,
}

/// The days a recall was restricted to (the caller's range) or boosted towards (a time
/// expression in the query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateFilter {
    /// First day, if bounded.
    pub from: Option<NaiveDate>,
    /// Last day, if bounded.
    pub to: Option<NaiveDate>,
    /// The time expression these days were read from ("May 4th"); `None` when the caller
    /// gave the days.
    pub from_query: Option<String>,
    /// True for a time expression: a boost (memories of these days rank first, the rest
    /// still follow); false for the caller's days: a filter (nothing else is returned).
    pub boost: bool,
    /// A strong boost (a named date, "yesterday") rather than a mild one ("last week").
    pub exact: bool,
    /// Set when the expression named a day without its year and this recall chose the year.
    pub year_inferred: Option<YearChoice>,
}

/// How a recall chose the year of a day named without one ("May 4th").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YearChoice {
    /// The most recent such day, not after the query's, on which the person has memories.
    LatestWithMemories,
    /// No such day has memories: the most recent one not after the query's day.
    Latest,
}

impl YearChoice {
    /// `latest_with_memories` or `latest`.
    pub fn as_str(self) -> &'static str {
        match self {
            YearChoice::LatestWithMemories => "latest_with_memories",
            YearChoice::Latest => "latest",
        }
    }
}

/// The result of a recall.
#[derive(Debug, Clone)]
pub struct RecallResponse {
    /// Identifies this recall in the event log.
    pub query_id: String,
    /// The query's time.
    pub now: Timestamp,
    /// Whether the returned memories were strengthened.
    pub strengthened: bool,
    /// Best first.
    pub results: Vec<RecallHit>,
    /// The days a time expression in the query referred to, if one was found and used.
    pub time_range: Option<(NaiveDate, NaiveDate)>,
    /// The days this recall was restricted to or boosted towards, and where they came from.
    pub date_filter: Option<DateFilter>,
    /// The RRF constant `k` the scores were fused with (see [`ScoreParts`]).
    pub rrf_k: f64,
}

impl Engine {
    /// Recalls the memories most relevant to a query.
    pub fn recall(&self, request: RecallRequest) -> Result<RecallResponse, EngineError> {
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
        let candidates = config.candidates.max(request.k);

        // A time expression boosts its days unless the caller set the days explicitly.
        let time = if request.day_from.is_none()
            && request.day_to.is_none()
            && config.exact_time_weight + config.fuzzy_time_weight > 0.0
        {
            self.time_boost(&request.scope, &request.query, now)?
        } else {
            None
        };
        let mut year_inferred = None;
        let time = match time {
            Some(mut time) => {
                if let Some((month, day)) = time.expression.month_day {
                    year_inferred = Some(match self.yearless_day(&request.scope, &filter, month, day, time.from)? {
                        Some(date) => {
                            (time.from, time.to) = (date, date);
                            YearChoice::LatestWithMemories
                        }
                        None => YearChoice::Latest,
                    });
                }
                Some(time)
            }
            None => None,
        };
        let search_text = time
            .as_ref()
            .map(|t| t.expression.strip(&request.query))
            .filter(|q| !text::query_terms(q).is_empty())
            .unwrap_or_else(|| request.query.clone());

        let mut query_vector = self.embedder.embed_query(search_text.as_str())?;
        let mut terms = text::query_terms(&search_text);
        let (mut dense, mut lexical) = crate::search::first_stage(
            self.store.as_ref(),
            &request.scope,
            &self.model(),
            &query_vector,
            &terms,
            &filter,
            candidates,
        )?;
        // A participant named in the query is found by the speaker boost; searched for, the
        // name only finds the lines that greet them (see `feedback`). The rows read to learn
        // the speakers are kept for the ranking below, which needs most of them again.
        let mut seen: HashMap<MemoryId, Memory> = HashMap::new();
        if config.speaker_query {
            let probe: Vec<MemoryId> = dense
                .iter()
                .take(feedback::SPEAKER_PROBE)
                .chain(lexical.iter().take(feedback::SPEAKER_PROBE))
                .map(|h| h.id)
                .collect();
            seen = self.store.get_many(&request.scope, &probe)?.into_iter().map(|m| (m.id, m)).collect();
            let named = named_speakers(&request.query, seen.values());
            if let Some(stripped) = feedback::without_names(&search_text, &named) {
                query_vector = self.embedder.embed_query(stripped.as_str())?;
                terms = text::query_terms(&stripped);
                (dense, lexical) = crate::search::first_stage(
                    self.store.as_ref(),
                    &request.scope,
                    &self.model(),
                    &query_vector,
                    &terms,
                    &filter,
                    candidates,
                )?;
            }
        }

        let dense_ids: Vec<MemoryId> = dense.iter().map(|h| h.id).collect();
        let lexical_ids: Vec<MemoryId> = lexical.iter().map(|h| h.id).collect();
        // Ranks from 1 in the two unrestricted rankings, for each hit's score parts.
        let dense_rank: HashMap<MemoryId, usize> = dense_ids.iter().enumerate().map(|(i, id)| (*id, i + 1)).collect();
        let lexical_rank: HashMap<MemoryId, usize> =
            lexical_ids.iter().enumerate().map(|(i, id)| (*id, i + 1)).collect();
        let mut dense_score: HashMap<MemoryId, f64> = dense.iter().map(|h| (h.id, h.score)).collect();
        let mut lexical_score: HashMap<MemoryId, f64> = lexical.iter().map(|h| (h.id, h.score)).collect();
        let mut lists: Vec<(Vec<MemoryId>, f64)> =
            vec![(dense_ids, config.dense_weight), (lexical_ids, config.lexical_weight)];
        if let Some(time) = &time {
            let weight = if time.expression.exact { config.exact_time_weight } else { config.fuzzy_time_weight };
            let in_range = SearchFilter { day_from: Some(time.from), day_to: Some(time.to), ..filter.clone() };
            let (dense, lexical) = crate::search::first_stage(
                self.store.as_ref(),
                &request.scope,
                &self.model(),
                &query_vector,
                &terms,
                &in_range,
                candidates,
            )?;
            lists.push((dense.iter().map(|h| h.id).collect(), weight * config.dense_weight));
            lists.push((lexical.iter().map(|h| h.id).collect(), weight * config.lexical_weight));
            dense_score.extend(dense.iter().map(|h| (h.id, h.score)));
            lexical_score.extend(lexical.iter().map(|h| (h.id, h.score)));
        }
        // The day-restricted lists are those after the first two and before this.
        let time_lists = lists.len();
        // What the second-stage rankings (rewritten queries, feedback) added to each memory.
        let mut feedback_share: HashMap<MemoryId, f64> = HashMap::new();
        // With a model: the question rewritten into search queries, each searched and fused.
        if config.query_rewrite_weight > 0.0 {
            match self.rewrite_query(&search_text) {
                Ok(queries) => {
                    for query in queries.unwrap_or_default() {
                        let vector = self.embedder.embed_query(query.as_str())?;
                        let (dense, lexical) = crate::search::first_stage(
                            self.store.as_ref(),
                            &request.scope,
                            &self.model(),
                            &vector,
                            &text::query_terms(&query),
                            &filter,
                            candidates,
                        )?;
                        for (hits, weight) in [(dense, config.dense_weight), (lexical, config.lexical_weight)] {
                            let weight = weight * config.query_rewrite_weight;
                            let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).collect();
                            for (i, id) in ids.iter().enumerate() {
                                *feedback_share.entry(*id).or_insert(0.0) += rank_share(weight, config.rrf_k, i + 1);
                            }
                            lists.push((ids, weight));
                        }
                    }
                }
                // A model that fails or answers nonsense costs the stage, never the recall.
                Err(err) => tracing::warn!(error = %err, "query rewrite failed; recalling with the question as asked"),
            }
        }
        let weighted: Vec<(&[MemoryId], f64)> = lists.iter().map(|(ids, w)| (ids.as_slice(), *w)).collect();
        let mut fused = reciprocal_rank_fusion(&weighted, config.rrf_k);
        // Feedback: a second dense ranking from the query moved towards the first results.
        if config.feedback_weight > 0.0 && config.feedback_depth > 0 {
            let ranked: Vec<MemoryId> = fused.iter().map(|(id, _)| *id).collect();
            if let Some(moved) = self.feedback_vector(
                &request.scope,
                &query_vector,
                &ranked,
                config.feedback_depth,
                config.feedback_alpha,
            )? {
                let again = self.store.dense_search(&request.scope, &self.model(), &moved, &filter, candidates)?;
                let ids: Vec<MemoryId> = again.iter().map(|h| h.id).collect();
                for (i, id) in ids.iter().enumerate() {
                    *feedback_share.entry(*id).or_insert(0.0) +=
                        rank_share(config.feedback_weight, config.rrf_k, i + 1);
                }
                for hit in &again {
                    dense_score.entry(hit.id).or_insert(hit.score);
                }
                lists.push((ids, config.feedback_weight));
                let weighted: Vec<(&[MemoryId], f64)> = lists.iter().map(|(ids, w)| (ids.as_slice(), *w)).collect();
                fused = reciprocal_rank_fusion(&weighted, config.rrf_k);
            }
        }
        let mut date_share: HashMap<MemoryId, f64> = HashMap::new();
        for (ids, list_weight) in lists.iter().take(time_lists).skip(2) {
            for (i, id) in ids.iter().enumerate() {
                *date_share.entry(*id).or_insert(0.0) += rank_share(*list_weight, config.rrf_k, i + 1);
            }
        }
        let fused = self.expand_neighbours(
            &request.scope,
            &filter,
            &fused,
            config.neighbour_weight,
            config.exchange_neighbour_weight,
        )?;

        let weight = request.weight_by_retention.unwrap_or(config.weight_by_retention);
        let policy = &self.config.forgetting;
        // Read only the rows that can still reach the top k (a 100k-memory recall spent 6 ms
        // reading every candidate). Without retention weighting, scores only grow, by the
        // speaker boost's factor at most, and the k best fused scores stay at least the
        // k-th one: a candidate below that score divided by the factor can never enter.
        let needed = if weight || config.day_diversity > 0.0 || fused.len() <= request.k {
            fused.len()
        } else {
            let kth = fused[request.k - 1].1;
            let factor = 1.0 + config.speaker_weight.max(0.0);
            fused.iter().take_while(|(_, score, _)| score * factor >= kth).count()
        };
        let fused_ids: Vec<MemoryId> = fused.iter().take(needed).map(|(id, _, _)| *id).collect();
        // The searches read earlier snapshots than this: a memory archived or erased since
        // is dropped here (and re-checked once more by the recall's write below).
        let eligible = |m: &Memory| match m.status {
            Status::Active => true,
            Status::Archived | Status::Superseded => request.include_archived,
            Status::Erased => false,
        };
        let unread: Vec<MemoryId> = fused_ids.iter().filter(|id| !seen.contains_key(id)).copied().collect();
        let read = self.store.get_many(&request.scope, &unread)?;
        let memories: HashMap<MemoryId, Memory> =
            fused_ids.iter().filter_map(|id| seen.remove(id)).chain(read).filter(eligible).map(|m| (m.id, m)).collect();
        let named = if config.speaker_weight > 0.0 {
            named_speakers(&request.query, memories.values())
        } else {
            HashSet::new()
        };
        let mut hits: Vec<RecallHit> = fused
            .into_iter()
            .filter_map(|(id, fused_score, neighbour)| {
                let memory = memories.get(&id)?.clone();
                // Ranking weighs the memory as it was when the query came, before this recall.
                let retention_before = policy.retention_of(&memory.forgetting, now);
                let retention_factor = if weight { retention_before } else { 1.0 };
                let speaker = if speaker_of(&memory).is_some_and(|speaker| named.contains(&speaker)) {
                    1.0 + config.speaker_weight
                } else {
                    1.0
                };
                let score = fused_score * retention_factor * speaker;
                let (dense_rank, lexical_rank) = (dense_rank.get(&id).copied(), lexical_rank.get(&id).copied());
                let parts = ScoreParts {
                    dense_rank,
                    dense: dense_rank.map_or(0.0, |rank| rank_share(config.dense_weight, config.rrf_k, rank)),
                    lexical_rank,
                    lexical: lexical_rank.map_or(0.0, |rank| rank_share(config.lexical_weight, config.rrf_k, rank)),
                    date: date_share.get(&id).copied().unwrap_or(0.0),
                    feedback: feedback_share.get(&id).copied().unwrap_or(0.0),
                    neighbour: neighbour.unwrap_or(0.0),
                    speaker,
                    retention: retention_factor,
                    diversity: 1.0,
                    day_summary: false,
                };
                Some(RecallHit {
                    memory,
                    score,
                    dense: dense_score.get(&id).copied(),
                    lexical: lexical_score.get(&id).copied(),
                    neighbour,
                    retention: retention_before,
                    retention_before,
                    parts,
                })
            })
            .collect();
        // Stable sort: equal scores keep fusion order.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        if config.day_diversity > 0.0 {
            let by_day: Vec<(NaiveDate, f64)> = hits.iter().map(|h| (h.memory.day, h.score)).collect();
            let picks = feedback::diversify(&by_day, request.k, config.day_diversity);
            let mut slots: Vec<Option<RecallHit>> = hits.into_iter().map(Some).collect();
            hits = picks
                .into_iter()
                .filter_map(|(index, score)| {
                    let mut hit = slots[index].take()?;
                    hit.parts.diversity = if hit.score > 0.0 { score / hit.score } else { 1.0 };
                    hit.score = score;
                    Some(hit)
                })
                .collect();
        }
        // A day's summary first when the query asks about that day (see `feedback`).
        let summaries = match &time {
            Some(t) if config.day_summaries => {
                self.day_summaries(&request.scope, t.from, t.to, &request.kinds, request.include_archived)?
            }
            _ => Vec::new(),
        };
        let summaries: Vec<Memory> = summaries.into_iter().take(request.k).collect();
        if !summaries.is_empty() {
            let top = hits.first().map_or(0.0, |h| h.score);
            let mut promoted = Vec::with_capacity(summaries.len());
            for memory in summaries {
                let mut hit = match hits.iter().position(|h| h.memory.id == memory.id) {
                    Some(at) => hits.remove(at),
                    None => {
                        let retention_before = policy.retention_of(&memory.forgetting, now);
                        let parts = ScoreParts {
                            dense_rank: None,
                            dense: 0.0,
                            lexical_rank: None,
                            lexical: 0.0,
                            date: 0.0,
                            feedback: 0.0,
                            neighbour: 0.0,
                            speaker: 1.0,
                            retention: if weight { retention_before } else { 1.0 },
                            diversity: 1.0,
                            day_summary: false,
                        };
                        RecallHit {
                            dense: dense_score.get(&memory.id).copied(),
                            lexical: lexical_score.get(&memory.id).copied(),
                            memory,
                            score: 0.0,
                            neighbour: None,
                            retention: retention_before,
                            retention_before,
                            parts,
                        }
                    }
                };
                hit.score = hit.score.max(top);
                hit.parts.day_summary = true;
                promoted.push(hit);
            }
            hits.truncate(request.k - promoted.len());
            promoted.append(&mut hits);
            hits = promoted;
        }
        hits.truncate(request.k);

        let strengthen = request.strengthen.unwrap_or(policy.recall_mode == RecallMode::Retrieved);
        let query_id = EventId::generate(now).to_string();
        // Logging a recall is a write; an inspection recall (`strengthen: false`) writes nothing.
        if request.strengthen != Some(false) && !hits.is_empty() {
            let record = RecallRecord {
                query_id: query_id.clone(),
                now,
                results: hits.iter().map(|h| (h.memory.id, h.score)).collect(),
                query_vector: Some(query_vector.clone()),
                include_archived: request.include_archived,
            };
            let mut updated: HashMap<MemoryId, Memory> = self
                .store
                .record_recall(&request.scope, &record, strengthen.then_some(policy))?
                .into_iter()
                .map(|m| (m.id, m))
                .collect();
            // A hit archived or erased while this recall ran is not in `updated`: dropped.
            hits.retain_mut(|hit| match updated.remove(&hit.memory.id) {
                Some(memory) => {
                    // One moment for the whole hit: the memory as it is now, and its retention.
                    hit.retention = policy.retention_of(&memory.forgetting, now);
                    hit.memory = memory;
                    true
                }
                None => false,
            });
        }
        let date_filter = match &time {
            Some(t) => Some(DateFilter {
                from: Some(t.from),
                to: Some(t.to),
                from_query: Some(t.expression.text(&request.query).to_string()),
                boost: true,
                exact: t.expression.exact,
                year_inferred,
            }),
            None if request.day_from.is_some() || request.day_to.is_some() => Some(DateFilter {
                from: request.day_from,
                to: request.day_to,
                from_query: None,
                boost: false,
                exact: true,
                year_inferred: None,
            }),
            None => None,
        };
        let time_range = time.map(|t| (t.from, t.to));
        Ok(RecallResponse {
            query_id,
            now,
            strengthened: strengthen && !hits.is_empty(),
            results: hits,
            time_range,
            date_filter,
            rrf_k: config.rrf_k,
        })
    }

    /// The day a date named without a year means ([`temporal::yearless_candidates`]): the
    /// most recent such day not after `latest` (the query's own resolution) on which the
    /// person has memories that `filter` admits, looking back to their first memory; `None`
    /// when no such day has any (the caller keeps `latest`).
    fn yearless_day(
        &self,
        scope: &Scope,
        filter: &SearchFilter,
        month: u32,
        day: u32,
        latest: NaiveDate,
    ) -> Result<Option<NaiveDate>, EngineError> {
        let statuses = if filter.include_archived {
            vec![Status::Active, Status::Archived, Status::Superseded]
        } else {
            vec![Status::Active]
        };
        let first = self.store.list(
            scope,
            &ListQuery { statuses, kinds: filter.kinds.clone(), limit: 1, oldest_first: true, ..Default::default() },
        )?;
        let Some(first) = first.first() else { return Ok(None) };
        let candidates = temporal::yearless_candidates(month, day, latest, first.day);
        let with_memories = self.store.days_with_memories(scope, &candidates, filter)?;
        Ok(candidates.into_iter().find(|d| with_memories.contains(d)))
    }
}

/// The metadata key naming who said a memory (a participant of a group conversation).
pub const SPEAKER: &str = "speaker";

/// A memory's speaker as lowercase index terms (`"Mary Ann"` → `"mary ann"`), if it has one.
fn speaker_of(memory: &Memory) -> Option<String> {
    let name = text::terms(memory.metadata.get(SPEAKER)?).join(" ");
    (!name.is_empty()).then_some(name)
}

/// The speakers among `candidates` that the query names, every word of the name present
/// ("What did Caroline say…", "Melanie's kids"). In a conversation among several people a
/// question about one of them is mostly answered by what that person said; a speaker is
/// only ever boosted, never required, because the answer may be in what another said.
pub fn named_speakers<'a>(query: &str, candidates: impl IntoIterator<Item = &'a Memory>) -> HashSet<String> {
    let words: HashSet<String> = text::terms(query).into_iter().collect();
    candidates.into_iter().filter_map(speaker_of).filter(|name| name.split(' ').all(|w| words.contains(w))).collect()
}
