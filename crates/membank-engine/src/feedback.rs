//! Recall stages after the first retrieval, for questions whose evidence is in several
//! places or that ask about a day: a participant's name left out of the search, pseudo-
//! relevance feedback, diversity across days, a day's summary first, and (with a model)
//! the question rewritten into search queries. Each is a [`crate::RecallConfig`] knob,
//! measured on its own on the held-apart halves of LoCoMo and LongMemEval and on by
//! default only where it helped there (README, "Evaluation").
//!
//! **Feedback** (`feedback_weight`, off by default). A question like "What activities does
//! Melanie do?" finds the one turn that shares its words; the others are about the same
//! things but say them differently. The vectors of the first stage's best memories are
//! what "about the same things" means in this person's history, so the query is moved
//! towards their mean, `q' = normalise(q + α · mean(top m))`, searched again, and that
//! ranking joins the fusion with its own weight (Rocchio's feedback on dense vectors). It
//! costs one more vector read and one more dense scan, no model call.
//!
//! **Day diversity** (`day_diversity`, off by default). The top k of a conversation often
//! holds several lines of the one session that matches best, crowding out the other
//! sessions a multi-hop question needs. Hits are re-picked greedily, each one's score
//! multiplied by `(1 − d)` for every hit of its day already picked (a maximal-marginal-
//! relevance rule with "same day" as the redundancy), so the first hit of each day keeps
//! its place and the second and later ones yield to other days.
//!
//! **Day summaries** (`day_summaries`, on). "What did we talk about on May 4th?" is best
//! answered by that day's summary: a recall returns its top k and, when the question asks
//! about a day, that day's summary with them. When the query's time expression covers at most [`MAX_SUMMARY_DAYS`]
//! days and a day among them has a daily summary that the recall may return, the summary
//! is put first and the day's turns follow in their usual order (the day boost already
//! ranks them first). Only the query's own time expression asks for this: a caller's
//! `day_from`/`day_to` is a filter, not a question about a day.
//!
//! **Speaker query** (`speaker_query`, off by default). In a group conversation a question
//! names a participant ("What did Caroline research?"), and the name, searched for, finds
//! the lines that greet her ("Hey Caroline! Missed you.") rather than what she said. When
//! the first rankings' best candidates show that the query names one of their speakers,
//! the searches are run again without the name; the speaker boost (`speaker_weight`)
//! still ties the question to the person. Held-apart LoCoMo recall@5/@10 .556/.669 →
//! .598/.719 (multi-hop @10 .353 → .424); LongMemEval has no speakers and is unchanged.
//!
//! **Query rewrite** (`query_rewrite_weight`, off; needs a model). The model rewrites the
//! question into one to three search queries, one per thing the answer needs (prompt
//! `query_rewrite@v1`, the question quoted as data, a strict JSON reply); each is searched
//! and fused with this weight. A failing model or a malformed reply costs only the stage
//! (logged), never the recall. Its quality cannot be measured without a real model; the
//! tests check the plumbing with the scripted stub.
//!
//! None of these stages reads the clock or writes anything.

use std::collections::HashMap;

use chrono::NaiveDate;
use membank_core::{Kind, Memory, MemoryId, Scope, Status};
use membank_store::ListQuery;

use membank_llm::{CompletionRequest, LlmError, Message, prompts};

use crate::quote::neutralise;
use crate::{Engine, EngineError};

/// Most search queries a rewrite adds.
pub const MAX_REWRITES: usize = 3;
/// A rewritten query is cut to this many characters (a question rewritten into an essay is
/// no longer a search query).
const MAX_REWRITE_CHARS: usize = 300;

/// How many of each first ranking's best candidates are read to learn which participants
/// the query names (`speaker_query`).
pub const SPEAKER_PROBE: usize = 30;

/// The longest span of days ("the weekend", "a few days ago") whose summaries a recall
/// puts first; a longer one ("last month") is not a question about particular days.
pub const MAX_SUMMARY_DAYS: i64 = 3;

impl Engine {
    /// The model's rewrites of `question` (at most [`MAX_REWRITES`], none repeating the
    /// question); `None` without a model. Errors: the model's, or `Malformed` for a reply
    /// that is not the JSON asked for.
    pub(crate) fn rewrite_query(&self, question: &str) -> Result<Option<Vec<String>>, EngineError> {
        let Ok(llm) = self.llm() else { return Ok(None) };
        let messages = vec![
            Message::system(prompts::QUERY_REWRITE.render(&[])),
            Message::user(format!("<question>\n{}\n</question>", neutralise(question))),
        ];
        let completion = llm.complete(&CompletionRequest::new(messages))?;
        let queries = parse_rewrites(&completion.content, question)
            .map_err(|reason| EngineError::from(LlmError::Malformed { url: llm.model().to_string(), reason }))?;
        tracing::debug!(prompt = %prompts::QUERY_REWRITE.id(), queries = queries.len(), "query rewritten");
        Ok(Some(queries))
    }

    /// The query vector moved towards the mean of the vectors of the first `depth`
    /// memories of `ranked` (best first): `normalise(query + alpha · mean)`. `None` when
    /// none of them has a vector of this store's model (nothing to learn from).
    pub(crate) fn feedback_vector(
        &self,
        scope: &Scope,
        query: &[f32],
        ranked: &[MemoryId],
        depth: usize,
        alpha: f64,
    ) -> Result<Option<Vec<f32>>, EngineError> {
        let top: Vec<MemoryId> = ranked.iter().take(depth).copied().collect();
        let vectors = self.store.vectors(scope, &top)?;
        Ok(moved_query(query, vectors.iter().map(|(_, v)| v.as_slice()), alpha))
    }

    /// The daily summaries of the days `from..=to` that this recall may return (active,
    /// or also archived when the recall includes archived memories), oldest day first;
    /// empty when the span is longer than [`MAX_SUMMARY_DAYS`] or the kinds asked for
    /// leave summaries out.
    pub(crate) fn day_summaries(
        &self,
        scope: &Scope,
        from: NaiveDate,
        to: NaiveDate,
        kinds: &[Kind],
        include_archived: bool,
    ) -> Result<Vec<Memory>, EngineError> {
        let span = (to - from).num_days() + 1;
        if !(1..=MAX_SUMMARY_DAYS).contains(&span) || !(kinds.is_empty() || kinds.contains(&Kind::DailySummary)) {
            return Ok(Vec::new());
        }
        let statuses = if include_archived { vec![Status::Active, Status::Archived] } else { vec![Status::Active] };
        let mut found = self.store.list(
            scope,
            &ListQuery {
                statuses,
                kinds: vec![Kind::DailySummary],
                day_from: Some(from),
                day_to: Some(to),
                limit: 64,
                oldest_first: true,
                ..Default::default()
            },
        )?;
        // `summarize` supersedes a day's old summary; should two still be active (an import
        // next to a summarize), the newest of each day speaks for it.
        found.sort_by(|a, b| a.day.cmp(&b.day).then(b.recorded_at.cmp(&a.recorded_at)));
        found.dedup_by_key(|m| m.day);
        Ok(found)
    }
}

/// The queries of a rewrite reply, `{"queries": ["…", …]}` (a code fence or words around
/// the object are tolerated): trimmed, empty ones and repeats of the question or of each
/// other dropped, each cut to [`MAX_REWRITE_CHARS`], at most [`MAX_REWRITES`].
pub(crate) fn parse_rewrites(reply: &str, question: &str) -> Result<Vec<String>, String> {
    let (Some(start), Some(end)) = (reply.find('{'), reply.rfind('}')) else {
        return Err("the reply holds no JSON object".into());
    };
    if end < start {
        return Err("the reply holds no JSON object".into());
    }
    let value: serde_json::Value =
        serde_json::from_str(&reply[start..=end]).map_err(|e| format!("the reply is not valid JSON: {e}"))?;
    let list = value.get("queries").and_then(|q| q.as_array()).ok_or("the reply has no \"queries\" list")?;
    let mut out: Vec<String> = Vec::new();
    for item in list {
        let query = item.as_str().ok_or("a query is not a string")?.trim();
        let query: String = query.chars().take(MAX_REWRITE_CHARS).collect();
        if query.is_empty() || query.eq_ignore_ascii_case(question.trim()) || out.contains(&query) {
            continue;
        }
        out.push(query);
    }
    out.truncate(MAX_REWRITES);
    Ok(out)
}

/// `text` without the words of the participants in `named` (lowercase index terms, as
/// [`crate::recall::speakers::named_speakers`] gives them); a word goes when its first term is one
/// of theirs, so "Caroline's" goes with "Caroline". `None` when nothing was removed or
/// nothing searchable would be left.
pub(crate) fn without_names(text: &str, named: &std::collections::HashSet<String>) -> Option<String> {
    let words: std::collections::HashSet<&str> = named.iter().flat_map(|name| name.split(' ')).collect();
    if words.is_empty() {
        return None;
    }
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|word| membank_core::text::terms(word).first().is_none_or(|t| !words.contains(t.as_str())))
        .collect();
    let stripped = kept.join(" ");
    let removed = kept.len() < text.split_whitespace().count();
    (removed && !membank_core::text::terms(&stripped).is_empty()).then_some(stripped)
}

/// `normalise(query + alpha · mean(vectors))`, or `None` without vectors of the query's
/// length (a memory embedded by another model is ignored, never mixed in).
pub(crate) fn moved_query<'a>(
    query: &[f32],
    vectors: impl IntoIterator<Item = &'a [f32]>,
    alpha: f64,
) -> Option<Vec<f32>> {
    let mut sum = vec![0f64; query.len()];
    let mut n = 0usize;
    for vector in vectors.into_iter().filter(|v| v.len() == query.len()) {
        sum.iter_mut().zip(vector).for_each(|(s, x)| *s += f64::from(*x));
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let moved: Vec<f64> = query.iter().zip(&sum).map(|(q, s)| f64::from(*q) + alpha * s / n as f64).collect();
    let norm = moved.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    Some(moved.iter().map(|x| (x / norm) as f32).collect())
}

/// The order in which `scores` (best first, each with its day) are picked when every hit
/// of a day already picked multiplies a later one's score by `1 − diversity`; returns
/// `(index into scores, discounted score)` for the first `k` picks, scores non-increasing.
///
/// Greedy, as maximal marginal relevance is: at each step the best discounted score wins
/// (ties go to the earlier hit), and picking only ever lowers the others' scores, so the
/// scores of the picks never increase.
pub(crate) fn diversify(scores: &[(NaiveDate, f64)], k: usize, diversity: f64) -> Vec<(usize, f64)> {
    let keep = (1.0 - diversity).clamp(0.0, 1.0);
    let mut picked_per_day: HashMap<NaiveDate, i32> = HashMap::new();
    let mut taken = vec![false; scores.len()];
    let mut out = Vec::with_capacity(k.min(scores.len()));
    while out.len() < k {
        let best = scores
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken[*i])
            .map(|(i, (day, score))| (i, score * keep.powi(picked_per_day.get(day).copied().unwrap_or(0))))
            .fold(None, |best: Option<(usize, f64)>, (i, s)| match best {
                Some((_, b)) if b >= s => best,
                _ => Some((i, s)),
            });
        let Some((index, score)) = best else { break };
        taken[index] = true;
        *picked_per_day.entry(scores[index].0).or_insert(0) += 1;
        out.push((index, score));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 5, d).unwrap()
    }

    #[test]
    fn the_moved_query_leans_towards_the_feedback_and_stays_unit_length() {
        let moved = moved_query(&[1.0, 0.0], [[0.0f32, 1.0].as_slice(), [0.0, 1.0].as_slice()], 1.0).unwrap();
        let expect = std::f32::consts::FRAC_1_SQRT_2;
        assert!((moved[0] - expect).abs() < 1e-6 && (moved[1] - expect).abs() < 1e-6, "{moved:?}");
        // α = 0 is the query itself; vectors of another length are ignored.
        assert_eq!(moved_query(&[0.6, 0.8], [[1.0f32, 0.0].as_slice()], 0.0), Some(vec![0.6, 0.8]));
        assert_eq!(moved_query(&[1.0, 0.0], [[1.0f32, 0.0, 0.0].as_slice()], 1.0), None);
        assert_eq!(moved_query(&[1.0, 0.0], std::iter::empty(), 1.0), None);
        // Feedback exactly opposite the query leaves nothing to normalise.
        assert_eq!(moved_query(&[1.0, 0.0], [[-1.0f32, 0.0].as_slice()], 1.0), None);
    }

    #[test]
    fn rewrites_are_parsed_strictly_and_bounded() {
        let q = "What activities does Melanie do?";
        assert_eq!(parse_rewrites(r#"{"queries": ["Melanie pottery", " Melanie camping ", "", "Melanie pottery", "what activities does melanie do?"]}"#, q).unwrap(), ["Melanie pottery", "Melanie camping"]);
        assert_eq!(
            parse_rewrites("```json\n{\"queries\": [\"a\", \"b\", \"c\", \"d\"]}\n```", q).unwrap(),
            ["a", "b", "c"]
        );
        assert_eq!(
            parse_rewrites(&format!(r#"{{"queries": ["{}"]}}"#, "x".repeat(1000)), q).unwrap()[0].len(),
            MAX_REWRITE_CHARS
        );
        for bad in ["sure! melanie pottery", "{\"queries\": \"one\"}", "{\"queries\": [1]}", "{not json}", "} {"] {
            assert!(parse_rewrites(bad, q).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn named_participants_leave_the_search_text() {
        let named: std::collections::HashSet<String> = ["caroline".to_string(), "mary ann".to_string()].into();
        assert_eq!(without_names("What is Caroline's identity?", &named).as_deref(), Some("What is identity?"));
        assert_eq!(without_names("Did Mary Ann and caroline meet?", &named).as_deref(), Some("Did and meet?"));
        assert_eq!(without_names("What did Melanie paint?", &named), None, "nothing to remove");
        assert_eq!(without_names("Caroline?", &named), None, "nothing left to search");
        assert_eq!(without_names("What did Caroline paint?", &Default::default()), None);
    }

    #[test]
    fn diversity_lets_another_day_through_and_keeps_scores_non_increasing() {
        let scores = [(day(1), 1.0), (day(1), 0.9), (day(1), 0.8), (day(2), 0.6), (day(3), 0.3)];
        // Off: the order as given.
        assert_eq!(diversify(&scores, 5, 0.0).iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        // Half: the second line of day 1 (0.45) yields to day 2 (0.6); the third (0.2) to day 3.
        let picks = diversify(&scores, 5, 0.5);
        assert_eq!(picks.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 3, 1, 4, 2]);
        assert_eq!(picks.iter().map(|p| p.1).collect::<Vec<_>>(), [1.0, 0.6, 0.45, 0.3, 0.2]);
        assert!(picks.windows(2).all(|w| w[0].1 >= w[1].1));
        assert_eq!(diversify(&scores, 2, 0.5).len(), 2);
        assert!(diversify(&[], 3, 0.5).is_empty());
    }
}
