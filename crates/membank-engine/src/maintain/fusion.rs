//! Consolidation with an LLM: fading clusters fused into one memory each, and conflicting
//! pairs judged (see `conflicts`). Without an LLM, or on a dry run, the report says what
//! was left.

use std::collections::{BTreeMap, HashSet};

use membank_core::event::EventKind;
use membank_core::fademem::days_between;
use membank_core::forgetting::{DecisionMode, PolicyKind};
use membank_core::{Kind, Memory, Scope, Timestamp};
use membank_llm::Llm;
use membank_store::{NewMemory, Replacement, Supersession};
use serde_json::json;

use super::conflicts::conflict_pairs;
use super::cycle::{Cycle, Item, consolidatable};
use super::derived::combined_state;
use super::similarity::{Budget, MAX_COMPARISONS, Terms, cosine};
use crate::consolidate;
use crate::ops::IMPORTANCE_SOURCE;
use crate::{Engine, EngineError};

/// At most this many fusion clusters per cycle.
const MAX_CLUSTERS: usize = 5;
/// At most this many memories in one fused memory.
const MAX_CLUSTER_SIZE: usize = 8;

impl Engine {
    /// Fusion of fading clusters, then conflict resolution, with an LLM. Without one
    /// nothing is computed and `skipped` says so; on a dry run `skipped` says what was
    /// found.
    pub(super) fn consolidate(&self, cycle: &mut Cycle) {
        let (policy, params, now) = (cycle.policy, cycle.policy.fademem, cycle.now);
        let floor = match (policy.kind, policy.mode) {
            (PolicyKind::FadeMem, _) => params.epsilon,
            (PolicyKind::MemoryBank, DecisionMode::Threshold { theta }) => theta,
            (PolicyKind::MemoryBank, _) => 0.0,
        };
        // Both stages exist only to be judged by the LLM: without one, nothing is computed.
        let Some(llm) = self.llm.as_ref() else {
            cycle.report.skipped.push("fusion and conflict resolution: no LLM is configured".into());
            return;
        };
        let mut budget = Budget::new();
        let clusters = self.fusion_clusters(&cycle.items, floor, now, &mut budget);
        if budget.exhausted {
            cycle
                .report
                .skipped
                .push(format!("fusion: stopped looking for clusters after {MAX_COMPARISONS} comparisons"));
        }
        let mut budget = Budget::new();
        let order = cycle.new_in_order();
        let (pairs, unfinished, unread) = {
            let mut terms = Terms::new(self.store.as_ref(), &cycle.scope, &cycle.items);
            let (pairs, unfinished) = conflict_pairs(&cycle.items, &order, &mut terms, &clusters, &params, &mut budget);
            (pairs, unfinished, terms.error)
        };
        if let Some(rank) = unfinished {
            cycle.compared_before(rank);
            cycle.report.skipped.push(format!(
                "conflict candidates: stopped looking after {MAX_COMPARISONS} comparisons; the rest of the new memories are compared by the next cycle"
            ));
        }
        if let Some(err) = unread {
            cycle.report.skipped.push(format!("conflict candidates whose texts could not be read: {err}"));
        }
        if !cycle.dry_run {
            // The calls quote the memories: their texts are read now, for these few only.
            let quoted: Vec<usize> =
                clusters.iter().flatten().copied().chain(pairs.iter().flat_map(|&(a, b, _)| [a, b])).collect();
            if let Err(err) = self.load_texts(cycle, &quoted) {
                tracing::warn!(error = %err, user = %cycle.scope.user, "memories to fuse or judge could not be read; they stay as they were");
                cycle.report.skipped.push(format!(
                    "fusion of {} clusters and {} conflict candidates: {err}",
                    clusters.len(),
                    pairs.len()
                ));
                return;
            }
            self.fuse_clusters(cycle, llm.as_ref(), &clusters);
            self.resolve_conflicts(cycle, llm.as_ref(), &pairs);
        } else if !clusters.is_empty() || !pairs.is_empty() {
            cycle.report.skipped.push(format!(
                "fusion of {} clusters and {} conflict candidates: a dry run makes no LLM calls",
                clusters.len(),
                pairs.len()
            ));
        }
    }

    /// Each cluster fused into one new memory that supersedes its sources; a fusion that
    /// fails leaves its memories as they were.
    fn fuse_clusters(&self, cycle: &mut Cycle, llm: &dyn Llm, clusters: &[Vec<usize>]) {
        let (scope, now, items) = (&cycle.scope, cycle.now, &cycle.items);
        let (report, supersede, inserts) = (&mut cycle.report, &mut cycle.supersede, &mut cycle.inserts);
        for cluster in clusters {
            let sources: Vec<Memory> = cluster.iter().map(|&i| items[i].memory.clone()).collect();
            match self.fused_memory(llm, scope, cluster.iter().map(|&i| &items[i]).collect(), now) {
                Ok((new, data)) => {
                    let index = inserts.len();
                    for source in &sources {
                        supersede.push(Supersession {
                            old: source.id,
                            by: Replacement::Inserted(index),
                            data: json!({ "rule": "fusion" }),
                        });
                    }
                    report.fused.push(new.memory.id);
                    inserts.push((new, EventKind::Fused, data));
                }
                Err(err) => {
                    tracing::warn!(error = %err, user = %scope.user, "fusion failed; its memories stay as they were");
                    report.skipped.push(format!("fusion of {} memories: {err}", sources.len()));
                }
            }
        }
    }

    /// Clusters of fading memories (retention in `[floor, consolidation threshold)`) that
    /// are close in meaning (cosine above the fusion threshold to the cluster's first
    /// memory) and in time (within the fusion window of it), oldest first; at most the
    /// budget's comparisons.
    fn fusion_clusters(&self, items: &[Item], floor: f64, now: Timestamp, budget: &mut Budget) -> Vec<Vec<usize>> {
        let policy = &self.config.forgetting;
        let params = &policy.fademem;
        let band: Vec<usize> = (0..items.len())
            .filter(|&i| {
                let item = &items[i];
                let retention = policy.retention_of(&item.state, now);
                consolidatable(&item.memory)
                    && !item.state.pinned
                    && item.vector.is_some()
                    && retention >= floor
                    && retention < params.consolidation_threshold
            })
            .collect();
        let mut used = HashSet::new();
        let mut clusters = Vec::new();
        for (n, &seed) in band.iter().enumerate() {
            if used.contains(&seed) || clusters.len() >= MAX_CLUSTERS {
                continue;
            }
            let Some(seed_vector) = items[seed].vector.as_ref() else { continue };
            let mut cluster = vec![seed];
            for &other in &band[n + 1..] {
                if cluster.len() >= MAX_CLUSTER_SIZE {
                    break;
                }
                if used.contains(&other)
                    || days_between(items[seed].memory.occurred_at, items[other].memory.occurred_at)
                        > params.fusion_window_days
                {
                    continue;
                }
                if !budget.take() {
                    break;
                }
                if items[other].vector.as_ref().is_some_and(|v| cosine(seed_vector, v) > params.fusion_similarity) {
                    cluster.push(other);
                }
            }
            if budget.exhausted {
                break;
            }
            if cluster.len() >= 2 {
                used.extend(cluster.iter().copied());
                clusters.push(cluster);
            }
        }
        clusters
    }

    /// The fused memory of a cluster: the LLM's statement, its own vector, the highest
    /// importance and summed frequency of its sources, the strongest source's strength,
    /// and a slower decay (`ξ = 1/(1 + ln |cluster|)`).
    fn fused_memory(
        &self,
        llm: &dyn membank_llm::Llm,
        scope: &Scope,
        sources: Vec<&Item>,
        now: Timestamp,
    ) -> Result<(NewMemory, serde_json::Value), EngineError> {
        let memories: Vec<Memory> = sources.iter().map(|item| item.memory.clone()).collect();
        let fused = consolidate::fuse(llm, scope.user.as_str(), &memories)?;
        let policy = &self.config.forgetting;
        let mut state = combined_state(&sources, policy, now);
        state.decay_factor = 1.0 / (1.0 + (sources.len() as f64).ln());
        let newest = sources
            .iter()
            .map(|item| &item.memory)
            .max_by_key(|m| (m.occurred_at, m.recorded_at))
            .ok_or_else(|| EngineError::Storage("an empty cluster".into()))?;
        let metadata = BTreeMap::from([
            ("prompt".to_string(), fused.prompt.clone()),
            ("model".to_string(), fused.model.clone()),
            (IMPORTANCE_SOURCE.to_string(), "fusion".to_string()),
        ]);
        let memory = self.derived(
            scope,
            Kind::Fused,
            fused.text.clone(),
            newest,
            state,
            memories.iter().map(|m| m.id).collect(),
            metadata,
            now,
        );
        let vector = self
            .embedder
            .embed(&[fused.text.as_str()])?
            .pop()
            .ok_or_else(|| EngineError::Storage("the embedder returned no vector".into()))?;
        let data = json!({ "sources": memories.iter().map(|m| m.id.to_string()).collect::<Vec<_>>(), "prompt": fused.prompt, "model": fused.model, "decay_factor": state.decay_factor });
        Ok((NewMemory { memory, embedding: Some((self.model(), vector)) }, data))
    }
}
