//! From fused candidates to ranked hits: reading the memories that can still reach the
//! top k, the speaker and retention factors, and each hit's score parts; then the two
//! stages that reorder the selected hits (day diversity, a day's summary first).

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use membank_core::fusion::rank_share;
use membank_core::{Memory, MemoryId, Status};

use super::rankings::Rankings;
use super::setup::Setup;
use super::speakers::{named_among, named_speakers, speaker_name, speaker_of};
use super::time::QueryTime;
use super::types::{RecallHit, ScoreParts};
use crate::feedback;
use crate::{Engine, EngineError};

impl Engine {
    /// Reads the fused candidates that can still reach the top k and makes them hits:
    /// their fused score times the speaker and retention factors, best first (equal scores
    /// keep fusion order).
    pub(super) fn select(
        &self,
        setup: &Setup,
        rankings: &Rankings,
        fused: Vec<(MemoryId, f64, Option<f64>)>,
    ) -> Result<Vec<RecallHit>, EngineError> {
        let (request, config) = (setup.request, setup.config);
        let weight = setup.weight_by_retention;
        let policy = &self.config.forgetting;
        // Read only the rows that can still reach the top k (a 100k-memory recall spent 6 ms
        // reading every candidate). Without retention weighting, a score changes only by
        // its speaker factor: known for a candidate a search found (its hit carried its
        // speaker), between 1 and the boost for one that is not known yet. The k-th best of
        // the scores at their least is at most the final k-th best, so a candidate whose
        // score at its most is below it can never enter.
        let fused_ids: Vec<MemoryId> = if weight || config.day_diversity > 0.0 || fused.len() <= request.k {
            fused.iter().map(|(id, _, _)| *id).collect()
        } else {
            // The boost applies only when positive (as below, where it is given).
            let boost = 1.0 + config.speaker_weight.max(0.0);
            let named = if boost > 1.0 {
                named_among(&request.query, fused.iter().filter_map(|(id, _, _)| rankings.speaker(id).flatten()))
            } else {
                HashSet::new()
            };
            let factors = |id: &MemoryId| match rankings.speaker(id) {
                Some(speaker) => {
                    // No name to look up when the query names nobody.
                    let named_here =
                        !named.is_empty() && speaker.and_then(speaker_name).is_some_and(|name| named.contains(&name));
                    let factor = if named_here { boost } else { 1.0 };
                    (factor, factor)
                }
                None => (1.0, boost),
            };
            let bounds: Vec<(f64, f64)> = fused
                .iter()
                .map(|(id, score, _)| {
                    let (low, high) = factors(id);
                    (score * low, score * high)
                })
                .collect();
            let mut lowest: Vec<f64> = bounds.iter().map(|(low, _)| *low).collect();
            let (_, kth, _) = lowest.select_nth_unstable_by(request.k - 1, |a, b| b.total_cmp(a));
            let kth = *kth;
            fused.iter().zip(&bounds).filter(|(_, (_, high))| *high >= kth).map(|((id, _, _), _)| *id).collect()
        };
        // The searches read earlier snapshots than this: a memory archived or erased since
        // is dropped here (and re-checked once more by the recall's write).
        // Reminiscence admits archived memories, never superseded ones.
        let eligible = |m: &Memory| match m.status {
            Status::Active => true,
            Status::Archived => request.include_archived || setup.reminiscing,
            Status::Superseded => request.include_archived,
            Status::Erased => false,
        };
        let memories: HashMap<MemoryId, Memory> =
            self.store.get_many(&request.scope, &fused_ids)?.into_iter().filter(eligible).map(|m| (m.id, m)).collect();
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
                let retention_before = policy.retention_of(&memory.forgetting, setup.now);
                let retention_factor = if weight { retention_before } else { 1.0 };
                let speaker = if speaker_of(&memory).is_some_and(|speaker| named.contains(&speaker)) {
                    1.0 + config.speaker_weight
                } else {
                    1.0
                };
                let score = fused_score * retention_factor * speaker;
                let candidate = rankings.candidate(&id);
                let (dense_rank, lexical_rank) = (candidate.dense_rank, candidate.lexical_rank);
                let parts = ScoreParts {
                    dense_rank,
                    dense: dense_rank.map_or(0.0, |rank| rank_share(config.dense_weight, config.rrf_k, rank)),
                    lexical_rank,
                    lexical: lexical_rank.map_or(0.0, |rank| rank_share(config.lexical_weight, config.rrf_k, rank)),
                    date: candidate.date,
                    feedback: candidate.feedback,
                    neighbour: neighbour.unwrap_or(0.0),
                    speaker,
                    retention: retention_factor,
                    diversity: 1.0,
                    day_summary: false,
                };
                Some(RecallHit {
                    reminisced: setup.reminiscing && memory.status == Status::Archived,
                    memory,
                    score,
                    dense: candidate.cosine,
                    lexical: candidate.bm25,
                    neighbour,
                    retention: retention_before,
                    retention_before,
                    parts,
                })
            })
            .collect();
        // Stable sort: equal scores keep fusion order.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(hits)
    }

    /// A day's summary first when the query asks about that day (see `feedback`): each
    /// summary of the query's days is put first (taken from the hits, or added), its score
    /// raised to the best hit's; the hits follow, cut so the list stays within `k`.
    pub(super) fn promote_summaries(
        &self,
        setup: &Setup,
        time: Option<&QueryTime>,
        rankings: &Rankings,
        mut hits: Vec<RecallHit>,
    ) -> Result<Vec<RecallHit>, EngineError> {
        let request = setup.request;
        let summaries = match time {
            Some(t) if setup.config.day_summaries => {
                let archived = request.include_archived || setup.reminiscing;
                self.day_summaries(&request.scope, t.boost.from, t.boost.to, &request.kinds, archived)?
            }
            _ => Vec::new(),
        };
        let summaries: Vec<Memory> = summaries.into_iter().take(request.k).collect();
        if summaries.is_empty() {
            return Ok(hits);
        }
        let policy = &self.config.forgetting;
        let top = hits.first().map_or(0.0, |h| h.score);
        let mut promoted = Vec::with_capacity(summaries.len());
        for memory in summaries {
            let mut hit = match hits.iter().position(|h| h.memory.id == memory.id) {
                Some(at) => hits.remove(at),
                None => {
                    let retention_before = policy.retention_of(&memory.forgetting, setup.now);
                    let parts = ScoreParts {
                        dense_rank: None,
                        dense: 0.0,
                        lexical_rank: None,
                        lexical: 0.0,
                        date: 0.0,
                        feedback: 0.0,
                        neighbour: 0.0,
                        speaker: 1.0,
                        retention: if setup.weight_by_retention { retention_before } else { 1.0 },
                        diversity: 1.0,
                        day_summary: false,
                    };
                    let candidate = rankings.candidate(&memory.id);
                    RecallHit {
                        reminisced: setup.reminiscing && memory.status == Status::Archived,
                        dense: candidate.cosine,
                        lexical: candidate.bm25,
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
        Ok(promoted)
    }
}

/// Day diversity (see `feedback`): the hits re-picked so that each hit of a day already
/// picked lowers a later hit of that day, `k` at most. Off, the hits stay as they are.
pub(super) fn diversify_days(setup: &Setup, hits: Vec<RecallHit>) -> Vec<RecallHit> {
    let diversity = setup.config.day_diversity;
    let on = diversity > 0.0;
    if !on {
        return hits;
    }
    let by_day: Vec<(NaiveDate, f64)> = hits.iter().map(|h| (h.memory.day, h.score)).collect();
    let picks = feedback::diversify(&by_day, setup.request.k, diversity);
    let mut slots: Vec<Option<RecallHit>> = hits.into_iter().map(Some).collect();
    picks
        .into_iter()
        .filter_map(|(index, score)| {
            let mut hit = slots[index].take()?;
            hit.parts.diversity = if hit.score > 0.0 { score / hit.score } else { 1.0 };
            hit.score = score;
            Some(hit)
        })
        .collect()
}
