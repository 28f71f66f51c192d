//! The rankings a recall fuses, by name, and what each candidate got from them.
//!
//! The first stage gives the dense and the lexical ranking; a time expression adds the two
//! rankings restricted to its days; the second stage adds the rankings of the model's
//! rewritten queries and the feedback ranking. [`Rankings::fuse`] fuses them all, always in
//! that order. While a ranking is added, each of its candidates' records ([`Candidate`])
//! takes its rank, its raw score and the share of the fused score the ranking gave it, so
//! a hit's [`super::types::ScoreParts`] are read off its record.

use std::collections::HashMap;
use std::sync::Arc;

use membank_core::MemoryId;
use membank_core::fusion::{rank_share, reciprocal_rank_fusion};
use membank_store::Hit;

use super::types::RecallConfig;

/// One ranked candidate list and its fusion weight.
#[derive(Debug, Clone)]
pub(super) struct Ranking {
    /// Best first.
    pub ids: Vec<MemoryId>,
    /// Its weight in fusion.
    pub weight: f64,
}

impl Ranking {
    fn of(hits: &[Hit], weight: f64) -> Self {
        Self { ids: hits.iter().map(|h| h.id).collect(), weight }
    }
}

/// What one candidate got from the rankings it is in.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Candidate {
    /// Place in the unrestricted dense ranking, from 1.
    pub dense_rank: Option<usize>,
    /// Place in the unrestricted lexical ranking, from 1.
    pub lexical_rank: Option<usize>,
    /// Its cosine to the query, from the dense searches that found it.
    pub cosine: Option<f64>,
    /// Its BM25 score, from the lexical searches that found it.
    pub bm25: Option<f64>,
    /// What the day-restricted rankings added to its fused score.
    pub date: f64,
    /// What the second-stage rankings (rewritten queries, feedback) added.
    pub feedback: f64,
}

/// The named rankings of one recall and the record of every candidate in them.
#[derive(Debug, Clone)]
pub(super) struct Rankings {
    rrf_k: f64,
    /// The unrestricted dense ranking (cosine to the query).
    dense: Ranking,
    /// The unrestricted lexical ranking (BM25).
    lexical: Ranking,
    /// The dense and lexical rankings restricted to the query's days (none without a time
    /// expression).
    days: Vec<Ranking>,
    /// The dense and lexical rankings of each query the model rewrote the question into.
    rewrites: Vec<Ranking>,
    /// The dense ranking of the query moved towards the first results.
    feedback: Option<Ranking>,
    candidates: HashMap<MemoryId, Candidate>,
    /// The speaker each candidate's hit carried (`None`: it has none), for every candidate
    /// a search found; a candidate added otherwise (a neighbour) has no entry.
    speakers: HashMap<MemoryId, Option<Arc<str>>>,
}

impl Rankings {
    /// The two first-stage rankings, weighted by the configuration.
    pub fn first_stage(dense: &[Hit], lexical: &[Hit], config: &RecallConfig) -> Self {
        let mut candidates: HashMap<MemoryId, Candidate> = HashMap::new();
        for (i, hit) in dense.iter().enumerate() {
            let candidate = candidates.entry(hit.id).or_default();
            candidate.dense_rank = Some(i + 1);
            candidate.cosine = Some(hit.score);
        }
        for (i, hit) in lexical.iter().enumerate() {
            let candidate = candidates.entry(hit.id).or_default();
            candidate.lexical_rank = Some(i + 1);
            candidate.bm25 = Some(hit.score);
        }
        let mut rankings = Self {
            rrf_k: config.rrf_k,
            dense: Ranking::of(dense, config.dense_weight),
            lexical: Ranking::of(lexical, config.lexical_weight),
            days: Vec::new(),
            rewrites: Vec::new(),
            feedback: None,
            candidates,
            speakers: HashMap::new(),
        };
        rankings.note_speakers(dense);
        rankings.note_speakers(lexical);
        rankings
    }

    /// Records the speakers `hits` carry.
    fn note_speakers(&mut self, hits: &[Hit]) {
        for hit in hits {
            self.speakers.entry(hit.id).or_insert_with(|| hit.speaker.clone());
        }
    }

    /// A candidate's speaker as its hit carried it: `Some(None)` for a memory without one,
    /// `None` when no search found it (its speaker is not known before its row is read).
    pub fn speaker(&self, id: &MemoryId) -> Option<Option<&str>> {
        self.speakers.get(id).map(|speaker| speaker.as_deref())
    }

    /// Adds the dense and lexical rankings restricted to the query's days. Their scores
    /// replace the unrestricted searches' for the candidates they share.
    pub fn add_days(&mut self, dense: &[Hit], lexical: &[Hit], dense_weight: f64, lexical_weight: f64) {
        for (hits, weight) in [(dense, dense_weight), (lexical, lexical_weight)] {
            let ranking = Ranking::of(hits, weight);
            for (i, id) in ranking.ids.iter().enumerate() {
                self.candidates.entry(*id).or_default().date += rank_share(weight, self.rrf_k, i + 1);
            }
            self.days.push(ranking);
        }
        for hit in dense {
            self.candidates.entry(hit.id).or_default().cosine = Some(hit.score);
        }
        for hit in lexical {
            self.candidates.entry(hit.id).or_default().bm25 = Some(hit.score);
        }
        self.note_speakers(dense);
        self.note_speakers(lexical);
    }

    /// Adds the dense and lexical rankings of one rewritten query.
    pub fn add_rewrite(&mut self, dense: &[Hit], lexical: &[Hit], dense_weight: f64, lexical_weight: f64) {
        for (hits, weight) in [(dense, dense_weight), (lexical, lexical_weight)] {
            let ranking = self.second_stage(hits, weight);
            self.rewrites.push(ranking);
        }
    }

    /// Adds the feedback ranking. Its cosines count only for candidates no other dense
    /// search found.
    pub fn add_feedback(&mut self, hits: &[Hit], weight: f64) {
        let ranking = self.second_stage(hits, weight);
        for hit in hits {
            self.candidates.entry(hit.id).or_default().cosine.get_or_insert(hit.score);
        }
        self.feedback = Some(ranking);
    }

    /// A second-stage ranking, its shares credited to its candidates' `feedback`.
    fn second_stage(&mut self, hits: &[Hit], weight: f64) -> Ranking {
        self.note_speakers(hits);
        let ranking = Ranking::of(hits, weight);
        for (i, id) in ranking.ids.iter().enumerate() {
            self.candidates.entry(*id).or_default().feedback += rank_share(weight, self.rrf_k, i + 1);
        }
        ranking
    }

    /// Every ranking in order: dense, lexical, the day-restricted ones, the rewritten
    /// queries', feedback.
    fn all(&self) -> impl Iterator<Item = &Ranking> {
        [&self.dense, &self.lexical].into_iter().chain(&self.days).chain(&self.rewrites).chain(&self.feedback)
    }

    /// Reciprocal rank fusion of every ranking: candidates with their fused score, best first.
    pub fn fuse(&self) -> Vec<(MemoryId, f64)> {
        let weighted: Vec<(&[MemoryId], f64)> = self.all().map(|r| (r.ids.as_slice(), r.weight)).collect();
        reciprocal_rank_fusion(&weighted, self.rrf_k)
    }

    /// A candidate's record (an empty one for a memory in no ranking).
    pub fn candidate(&self, id: &MemoryId) -> Candidate {
        self.candidates.get(id).copied().unwrap_or_default()
    }
}
