//! Conflicts: pairs close in meaning that say different things, judged by the LLM. The
//! memory no longer current is superseded by the other (and decays faster), or both by
//! the one statement they merge into; compatible pairs stay, the decision logged.

use std::collections::{BTreeMap, HashSet};

use membank_core::event::EventKind;
use membank_core::{FadeMemParams, Kind, Scope, Timestamp};
use membank_llm::Llm;
use membank_store::{NewMemory, Replacement, Supersession};
use serde_json::json;

use super::cycle::{Cycle, Item, consolidatable, pending};
use super::derived::combined_state;
use super::similarity::{Budget, Terms, cosine};
use crate::consolidate;
use crate::ops::IMPORTANCE_SOURCE;
use crate::{Engine, EngineError};

/// At most this many conflict pairs judged per cycle.
const MAX_CONFLICTS: usize = 5;

impl Engine {
    /// Judges each candidate pair and plans what the judgement says. A judgement that
    /// fails, or a pinned loser, leaves both memories as they were.
    pub(super) fn resolve_conflicts(&self, cycle: &mut Cycle, llm: &dyn Llm, pairs: &[(usize, usize, f64)]) {
        let (scope, now, items, params) = (&cycle.scope, cycle.now, &cycle.items, cycle.policy.fademem);
        let (report, updates) = (&mut cycle.report, &mut cycle.updates);
        let (supersede, inserts) = (&mut cycle.supersede, &mut cycle.inserts);
        for &(a, b, similarity) in pairs {
            let (older, newer) = if (items[a].memory.occurred_at, items[a].memory.recorded_at)
                <= (items[b].memory.occurred_at, items[b].memory.recorded_at)
            {
                (a, b)
            } else {
                (b, a)
            };
            let judgement = match consolidate::judge(
                llm,
                scope.user.as_str(),
                &items[older].memory,
                &items[newer].memory,
            ) {
                Ok(judgement) => judgement,
                Err(err) => {
                    tracing::warn!(error = %err, user = %scope.user, "conflict judgement failed; both memories stay as they were");
                    report.skipped.push(format!(
                        "conflict between {} and {}: {err}",
                        items[older].memory.id, items[newer].memory.id
                    ));
                    continue;
                }
            };
            let data = json!({
                "older": items[older].memory.id.to_string(), "newer": items[newer].memory.id.to_string(), "similarity": similarity,
                "relation": relation_str(judgement.relation), "current": current_str(judgement.current), "reason": judgement.reason,
                "prompt": judgement.prompt, "model": judgement.model,
            });
            let (winner, loser) = match judgement.current {
                consolidate::Current::Older => (Some(older), Some(newer)),
                consolidate::Current::Newer => (Some(newer), Some(older)),
                consolidate::Current::Both | consolidate::Current::Merged => (None, None),
            };
            match (winner, loser, judgement.current) {
                (Some(winner), Some(loser), _) => {
                    report.conflicts += 1;
                    if items[loser].state.pinned {
                        report.skipped.push(format!(
                            "conflict between {} and {}: the loser is pinned and stays active",
                            items[older].memory.id, items[newer].memory.id
                        ));
                        continue;
                    }
                    supersede.push(Supersession {
                        old: items[loser].memory.id,
                        by: Replacement::Existing(items[winner].memory.id),
                        data: json!({ "rule": "conflict", "reason": judgement.reason }),
                    });
                    let loser_item = &items[loser];
                    let update = pending(updates, loser_item);
                    update.decay_factor = Some(loser_item.state.decay_factor * params.conflict_decay_factor);
                    let winner_item = &items[winner];
                    let update = pending(updates, winner_item);
                    update.events.push((EventKind::Conflict, data));
                }
                (_, _, consolidate::Current::Merged) => {
                    let Some(text) = judgement.merged.clone() else { continue };
                    match self.merged_statement(scope, &text, &[&items[older], &items[newer]], now, &judgement) {
                        Ok(new) => {
                            report.conflicts += 1;
                            let index = inserts.len();
                            for &i in &[older, newer] {
                                if !items[i].state.pinned {
                                    supersede.push(Supersession {
                                        old: items[i].memory.id,
                                        by: Replacement::Inserted(index),
                                        data: json!({ "rule": "conflict", "reason": judgement.reason }),
                                    });
                                }
                            }
                            inserts.push((new, EventKind::Conflict, data));
                        }
                        Err(err) => report.skipped.push(format!(
                            "conflict between {} and {}: {err}",
                            items[older].memory.id, items[newer].memory.id
                        )),
                    }
                }
                _ => {
                    // Compatible: both stay; the decision is still logged.
                    let item = &items[newer];
                    let update = pending(updates, item);
                    update.events.push((EventKind::Conflict, data));
                }
            }
        }
    }

    /// The one statement a conflict was resolved into.
    fn merged_statement(
        &self,
        scope: &Scope,
        text: &str,
        sources: &[&Item],
        now: Timestamp,
        judgement: &consolidate::Judgement,
    ) -> Result<NewMemory, EngineError> {
        crate::ops::validate_text("merged statement", text)?;
        let policy = &self.config.forgetting;
        let state = combined_state(sources, policy, now);
        let newest = sources
            .iter()
            .map(|item| &item.memory)
            .max_by_key(|m| (m.occurred_at, m.recorded_at))
            .ok_or_else(|| EngineError::Storage("an empty pair".into()))?;
        let metadata = BTreeMap::from([
            ("prompt".to_string(), judgement.prompt.clone()),
            ("model".to_string(), judgement.model.clone()),
            (IMPORTANCE_SOURCE.to_string(), "conflict".to_string()),
        ]);
        let memory = self.derived(
            scope,
            Kind::Fused,
            text.to_string(),
            newest,
            state,
            sources.iter().map(|item| item.memory.id).collect(),
            metadata,
            now,
        );
        let vector = self
            .embedder
            .embed(&[text])?
            .pop()
            .ok_or_else(|| EngineError::Storage("the embedder returned no vector".into()))?;
        Ok(NewMemory { memory, embedding: Some((self.model(), vector)) })
    }
}

/// Candidate conflicts: pairs with at least one memory new since the last cycle (so a pair
/// is judged once, not every day), close in meaning but saying different things, not in a
/// fusion cluster; the most similar first, each memory in at most one pair; at most the
/// budget's comparisons. The new memories (`order`, in storage order) are taken oldest
/// first; where the budget runs out, the rank of the first one not finished is returned
/// with the pairs, and it and the later ones wait for the next cycle.
pub(super) fn conflict_pairs(
    items: &[Item],
    order: &[usize],
    terms: &mut Terms,
    clusters: &[Vec<usize>],
    params: &FadeMemParams,
    budget: &mut Budget,
) -> (Vec<(usize, usize, f64)>, Option<usize>) {
    let clustered: HashSet<usize> = clusters.iter().flatten().copied().collect();
    let mut pairs = Vec::new();
    let mut done = vec![false; items.len()];
    let mut unfinished = None;
    'outer: for &i in order {
        if !consolidatable(&items[i].memory) || clustered.contains(&i) {
            done[i] = true;
            continue;
        }
        let Some(vi) = items[i].vector.as_ref() else {
            done[i] = true;
            continue;
        };
        for j in 0..items.len() {
            if i == j || done[j] || !consolidatable(&items[j].memory) || clustered.contains(&j) {
                continue;
            }
            let Some(vj) = items[j].vector.as_ref() else { continue };
            if !budget.take() {
                unfinished = items[i].new_rank;
                break 'outer;
            }
            let similarity = cosine(vi, vj);
            if similarity >= params.conflict_similarity && terms.jaccard(items, i, j) < params.duplicate_overlap {
                pairs.push((i, j, similarity));
            }
        }
        done[i] = true;
    }
    pairs.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut used = HashSet::new();
    pairs.retain(|&(i, j, _)| {
        if used.contains(&i) || used.contains(&j) {
            false
        } else {
            used.insert(i);
            used.insert(j);
            true
        }
    });
    pairs.truncate(MAX_CONFLICTS);
    (pairs, unfinished)
}

fn relation_str(relation: consolidate::Relation) -> &'static str {
    match relation {
        consolidate::Relation::Compatible => "compatible",
        consolidate::Relation::Contradictory => "contradictory",
        consolidate::Relation::Subsumes => "subsumes",
        consolidate::Relation::Subsumed => "subsumed",
    }
}

fn current_str(current: consolidate::Current) -> &'static str {
    match current {
        consolidate::Current::Older => "older",
        consolidate::Current::Newer => "newer",
        consolidate::Current::Both => "both",
        consolidate::Current::Merged => "merged",
    }
}
