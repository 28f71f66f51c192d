//! One maintenance cycle over one user (DESIGN §4.2, §4.3): importance and layers,
//! archiving under the configured policy, near-duplicate merging, and — with an LLM —
//! importance rating, fusion of fading clusters and conflict resolution.
//!
//! The cycle is planned from one snapshot of the user's active memories and applied by
//! [`membank_store::Store::apply_maintenance`] in one transaction, so a crash leaves the
//! user as before or as after, never half. LLM calls happen while planning, before the
//! transaction; a call that fails or answers malformed JSON drops only its own item, which
//! the report names in `skipped`, and changes nothing. Nothing is ever deleted: archived and
//! superseded memories stay restorable, and every change is an event with its numbers.
//!
//! It deliberately does not summarise days (that is `summarize`) and never reads the
//! system clock: `now` comes from the request or the engine's clock.

use std::collections::{BTreeMap, HashMap, HashSet};

use membank_core::event::EventKind;
use membank_core::fademem::{ImportanceInputs, days_between};
use membank_core::forgetting::{DecisionMode, PolicyKind};
use membank_core::{ForgettingState, Kind, Layer, Memory, MemoryId, Scope, Source, Status, Timestamp, text};
use membank_store::{ListQuery, MaintenancePlan, NewMemory, Replacement, StateUpdate, Supersession};
use serde_json::json;

use crate::consolidate;
use crate::ops::IMPORTANCE_SOURCE;
use crate::{Engine, EngineError};

/// At most this many importance ratings per cycle (the LLM's work is bounded per cycle).
const MAX_RATINGS: usize = 40;
/// At most this many fusion clusters per cycle.
const MAX_CLUSTERS: usize = 5;
/// At most this many memories in one fused memory.
const MAX_CLUSTER_SIZE: usize = 8;
/// At most this many conflict pairs judged per cycle.
const MAX_CONFLICTS: usize = 5;
/// At most this many of the memories new since the last cycle (the newest) are compared
/// with every other memory for duplicates and conflicts: each comparison walks all of the
/// user's vectors, and a first cycle over a large import would otherwise be quadratic.
/// The rest are not compared again (the schedule moves past them); see the README.
const MAX_NEW_COMPARED: usize = 500;

/// Run one maintenance cycle over one user.
#[derive(Debug, Clone)]
pub struct MaintainRequest {
    /// Whose memories.
    pub scope: Scope,
    /// The cycle's time (default: now).
    pub now: Option<Timestamp>,
    /// Plan and report only: change nothing and make no LLM calls.
    pub dry_run: bool,
}

/// One near-duplicate absorbed by a newer copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Merge {
    /// The memory superseded.
    pub old: MemoryId,
    /// The copy that stays.
    pub by: MemoryId,
    /// Their cosine.
    pub similarity: f64,
    /// Their word overlap (Jaccard).
    pub overlap: f64,
}

/// What a cycle examined and did (or would do, on a dry run).
#[derive(Debug, Clone)]
pub struct MaintainReport {
    /// The user.
    pub user: String,
    /// The cycle's time.
    pub now: Timestamp,
    /// True when nothing was changed.
    pub dry_run: bool,
    /// The policy that decided archiving.
    pub policy: PolicyKind,
    /// Active memories examined.
    pub examined: usize,
    /// Memories moved to the long-term layer.
    pub promoted: usize,
    /// Memories moved back to the short-term layer.
    pub demoted: usize,
    /// Memories archived, with the numbers (lowest retention first).
    pub archived: Vec<membank_core::forgetting::Assessment>,
    /// Memories the per-pass cap kept this time.
    pub deferred: usize,
    /// Near-duplicates merged into a newer copy.
    pub merged: Vec<Merge>,
    /// Fused memories made (each from several sources).
    pub fused: Vec<MemoryId>,
    /// Conflicts decided (a memory superseded, or two merged into one).
    pub conflicts: usize,
    /// Base importances rated by the LLM.
    pub rated: usize,
    /// What was not done, and why (no LLM, a failed or malformed LLM answer, dry run).
    pub skipped: Vec<String>,
}

/// A memory as the cycle sees it: the snapshot and the numbers computed for it.
struct Item {
    memory: Memory,
    vector: Option<Vec<f32>>,
    state: ForgettingState,
    is_new: bool,
}

impl Engine {
    /// Runs one maintenance cycle over one user.
    pub fn maintain(&self, request: MaintainRequest) -> Result<MaintainReport, EngineError> {
        let policy = self.config.forgetting;
        policy.validate()?;
        let params = policy.fademem;
        let now = self.request_now(request.now, !request.dry_run)?;
        let scope = request.scope.clone();
        let mut report = MaintainReport {
            user: scope.user.to_string(),
            now,
            dry_run: request.dry_run,
            policy: policy.kind,
            examined: 0,
            promoted: 0,
            demoted: 0,
            archived: Vec::new(),
            deferred: 0,
            merged: Vec::new(),
            fused: Vec::new(),
            conflicts: 0,
            rated: 0,
            skipped: Vec::new(),
        };
        if self.store.find_user(&scope.tenant, &scope.user)?.is_none() {
            return Ok(report);
        }
        let list = ListQuery {
            statuses: vec![Status::Active],
            limit: i64::MAX as usize,
            oldest_first: true,
            ..Default::default()
        };
        let memories = self.store.list(&scope, &list)?;
        report.examined = memories.len();
        let last_cycle = self.store.maintenance_state(&scope)?.maintained_at;
        let ids: Vec<MemoryId> = memories.iter().map(|m| m.id).collect();
        let mut vectors: HashMap<MemoryId, Vec<f32>> = self.store.vectors(&scope, &ids)?.into_iter().collect();
        let queries = self.store.recent_queries(&scope, params.recent_queries)?;
        let mut items: Vec<Item> = memories
            .into_iter()
            .map(|memory| {
                let is_new = last_cycle.is_none_or(|at| memory.recorded_at > at);
                let vector = vectors.remove(&memory.id);
                Item { state: memory.forgetting, memory, vector, is_new }
            })
            .collect();

        let new_count = items.iter().filter(|item| item.is_new).count();
        if new_count > MAX_NEW_COMPARED {
            let mut skip = new_count - MAX_NEW_COMPARED;
            for item in items.iter_mut().filter(|item| item.is_new) {
                if skip == 0 {
                    break;
                }
                item.is_new = false;
                skip -= 1;
            }
            report.skipped.push(format!(
                "duplicate and conflict checks of {} older new memories: at most {MAX_NEW_COMPARED} per cycle",
                new_count - MAX_NEW_COMPARED
            ));
        }

        // 1. Base importance rated by the LLM, for memories that only have the estimator's.
        let llm = self.llm.clone();
        let mut updates: BTreeMap<MemoryId, StateUpdate> = BTreeMap::new();
        let to_rate: Vec<usize> = items
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, item)| item.memory.metadata.get(IMPORTANCE_SOURCE).map(String::as_str) == Some("estimator"))
            .map(|(i, _)| i)
            .take(MAX_RATINGS)
            .collect();
        match (&llm, request.dry_run) {
            _ if to_rate.is_empty() => {}
            (None, _) => report.skipped.push(format!(
                "importance rating of {} memories: no LLM is configured, the text estimator's values stand",
                to_rate.len()
            )),
            (Some(_), true) => report
                .skipped
                .push(format!("importance rating of {} memories: a dry run makes no LLM calls", to_rate.len())),
            (Some(llm), false) => {
                let batch: Vec<Memory> = to_rate.iter().map(|&i| items[i].memory.clone()).collect();
                match consolidate::rate_importance(llm.as_ref(), scope.user.as_str(), &batch) {
                    Ok(ratings) => {
                        for (&i, rating) in to_rate.iter().zip(ratings) {
                            items[i].state.base_importance = rating;
                            let update = updates.entry(items[i].memory.id).or_insert_with(|| {
                                StateUpdate::new(items[i].memory.id, items[i].state.importance, items[i].state.layer)
                            });
                            update.base_importance = Some((rating, "llm".into()));
                            report.rated += 1;
                        }
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, user = %scope.user, "importance rating failed; the estimator's values stand");
                        report.skipped.push(format!("importance rating of {} memories: {err}", to_rate.len()));
                    }
                }
            }
        }

        // 2. Importance and layers.
        for item in &mut items {
            let relevance = match &item.vector {
                Some(vector) => queries.iter().map(|q| cosine(vector, q)).fold(0.0f64, f64::max),
                None => 0.0,
            };
            let age_days = days_between(item.memory.occurred_at, now);
            let frequency = params.frequency_now(&item.state, now);
            let importance = params.importance(&item.state, ImportanceInputs { relevance, age_days }, now);
            let layer = params.next_layer(item.state.layer, importance);
            let changed = (importance - item.state.importance).abs() > 1e-9 || layer != item.state.layer;
            let moved = layer != item.state.layer;
            item.state.importance = importance;
            let previous_layer = item.state.layer;
            item.state.layer = layer;
            if changed || updates.contains_key(&item.memory.id) {
                let update = updates
                    .entry(item.memory.id)
                    .or_insert_with(|| StateUpdate::new(item.memory.id, importance, layer));
                update.importance = importance;
                update.layer = layer;
                if moved {
                    let (kind, threshold) = if layer == Layer::Long {
                        (EventKind::Promoted, params.promote)
                    } else {
                        (EventKind::Demoted, params.demote)
                    };
                    if layer == Layer::Long {
                        report.promoted += 1
                    } else {
                        report.demoted += 1
                    }
                    update.events.push((
                        kind,
                        json!({ "from": previous_layer.as_str(), "to": layer.as_str(), "importance": importance, "threshold": threshold,
                                "base": item.state.base_importance, "relevance": relevance, "frequency": frequency, "age_days": age_days }),
                    ));
                }
            }
        }

        // 3. Archiving under the configured policy (with the updated importance and layer).
        let plan = policy.plan_sweep(items.iter().map(|item| (item.memory.id, &item.state)), now);
        report.deferred = plan.deferred;
        let mut archive = Vec::with_capacity(plan.archive.len());
        let archived: HashSet<MemoryId> = plan.archive.iter().map(|a| a.id).collect();
        for assessment in &plan.archive {
            let mut data = policy.archive_event_data(assessment);
            if let (Some(object), Some(item)) =
                (data.as_object_mut(), items.iter().find(|i| i.memory.id == assessment.id))
            {
                object.insert("importance".into(), json!(item.state.importance));
                object.insert("layer".into(), json!(item.state.layer.as_str()));
                object.insert("by".into(), json!("maintenance"));
            }
            archive.push((assessment.id, data));
        }
        report.archived = plan.archive;
        items.retain(|item| !archived.contains(&item.memory.id));

        // 4. Near-duplicates: the newest copy absorbs the others.
        let mut supersede = Vec::new();
        let mut gone: HashSet<MemoryId> = HashSet::new();
        let terms: Vec<HashSet<String>> = items
            .iter()
            .map(|item| text::terms(item.memory.content.as_deref().unwrap_or("")).into_iter().collect())
            .collect();
        let mut groups = UnionFind::new(items.len());
        let mut best: HashMap<(usize, usize), (f64, f64)> = HashMap::new();
        for i in 0..items.len() {
            if !items[i].is_new || !consolidatable(&items[i].memory) {
                continue;
            }
            let Some(vi) = items[i].vector.as_ref() else { continue };
            for j in 0..items.len() {
                if i == j || items[j].memory.kind != items[i].memory.kind || (items[j].is_new && j < i) {
                    continue;
                }
                let Some(vj) = items[j].vector.as_ref() else { continue };
                let similarity = cosine(vi, vj);
                if similarity < params.duplicate_similarity {
                    continue;
                }
                let overlap = jaccard(&terms[i], &terms[j]);
                if overlap >= params.duplicate_overlap {
                    groups.union(i, j);
                    best.insert((i.min(j), i.max(j)), (similarity, overlap));
                }
            }
        }
        for members in groups.groups() {
            if members.len() < 2 {
                continue;
            }
            let survivor = *members
                .iter()
                .max_by_key(|&&i| (items[i].memory.occurred_at, items[i].memory.recorded_at, items[i].memory.id))
                .unwrap_or(&members[0]);
            let mut absorbed = Vec::new();
            let (mut recalls, mut frequency, mut importance, mut base) =
                (0u32, 0.0f64, items[survivor].state.importance, items[survivor].state.base_importance);
            for &i in &members {
                if i == survivor || items[i].state.pinned {
                    continue;
                }
                let key = (i.min(survivor), i.max(survivor));
                let (similarity, overlap) = best.get(&key).copied().unwrap_or_else(|| {
                    let s = match (&items[i].vector, &items[survivor].vector) {
                        (Some(a), Some(b)) => cosine(a, b),
                        _ => 0.0,
                    };
                    (s, jaccard(&terms[i], &terms[survivor]))
                });
                recalls = recalls.saturating_add(items[i].state.recall_count);
                frequency += params.frequency_now(&items[i].state, now);
                importance = importance.max(items[i].state.importance);
                base = base.max(items[i].state.base_importance);
                let rule = json!({ "rule": "near_duplicate", "similarity": similarity, "overlap": overlap, "thresholds": { "similarity": params.duplicate_similarity, "overlap": params.duplicate_overlap } });
                supersede.push(Supersession {
                    old: items[i].memory.id,
                    by: Replacement::Existing(items[survivor].memory.id),
                    data: rule,
                });
                report.merged.push(Merge {
                    old: items[i].memory.id,
                    by: items[survivor].memory.id,
                    similarity,
                    overlap,
                });
                absorbed.push(
                    json!({ "id": items[i].memory.id.to_string(), "similarity": similarity, "overlap": overlap }),
                );
                gone.insert(items[i].memory.id);
            }
            if absorbed.is_empty() {
                continue;
            }
            let item = &items[survivor];
            let update = updates
                .entry(item.memory.id)
                .or_insert_with(|| StateUpdate::new(item.memory.id, item.state.importance, item.state.layer));
            update.importance = importance;
            update.add_recalls = recalls;
            update.add_frequency = frequency;
            if base > item.state.base_importance {
                update.base_importance = Some((
                    base,
                    item.memory.metadata.get(IMPORTANCE_SOURCE).cloned().unwrap_or_else(|| "merge".into()),
                ));
            }
            update.events.push((EventKind::Merged, json!({ "rule": "near_duplicate", "absorbed": absorbed, "recalls_added": recalls, "importance": importance })));
        }
        items.retain(|item| !gone.contains(&item.memory.id));

        // 5. Fusion of fading clusters and 6. conflicts, with an LLM.
        let mut inserts: Vec<(NewMemory, EventKind, serde_json::Value)> = Vec::new();
        let floor = match (policy.kind, policy.mode) {
            (PolicyKind::FadeMem, _) => params.epsilon,
            (PolicyKind::MemoryBank, DecisionMode::Threshold { theta }) => theta,
            (PolicyKind::MemoryBank, _) => 0.0,
        };
        let clusters = self.fusion_clusters(&items, floor, now);
        let pairs = conflict_pairs(&items, &terms_of(&items), &clusters, &params);
        match (&llm, request.dry_run) {
            (None, _) => {
                if !clusters.is_empty() {
                    report.skipped.push(format!("fusion of {} clusters: no LLM is configured", clusters.len()));
                }
                if !pairs.is_empty() {
                    report
                        .skipped
                        .push(format!("conflict resolution of {} candidate pairs: no LLM is configured", pairs.len()));
                }
                if clusters.is_empty() && pairs.is_empty() {
                    report.skipped.push("fusion and conflict resolution: no LLM is configured".into());
                }
            }
            (Some(_), true) => {
                if !clusters.is_empty() || !pairs.is_empty() {
                    report.skipped.push(format!(
                        "fusion of {} clusters and {} conflict candidates: a dry run makes no LLM calls",
                        clusters.len(),
                        pairs.len()
                    ));
                }
            }
            (Some(llm), false) => {
                for cluster in &clusters {
                    let sources: Vec<Memory> = cluster.iter().map(|&i| items[i].memory.clone()).collect();
                    match self.fused_memory(llm.as_ref(), &scope, cluster.iter().map(|&i| &items[i]).collect(), now) {
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
                for &(a, b, similarity) in &pairs {
                    let (older, newer) = if (items[a].memory.occurred_at, items[a].memory.recorded_at)
                        <= (items[b].memory.occurred_at, items[b].memory.recorded_at)
                    {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    let judgement = match consolidate::judge(
                        llm.as_ref(),
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
                            let update = updates.entry(loser_item.memory.id).or_insert_with(|| {
                                StateUpdate::new(
                                    loser_item.memory.id,
                                    loser_item.state.importance,
                                    loser_item.state.layer,
                                )
                            });
                            update.decay_factor = Some(loser_item.state.decay_factor * params.conflict_decay_factor);
                            let winner_item = &items[winner];
                            let update = updates.entry(winner_item.memory.id).or_insert_with(|| {
                                StateUpdate::new(
                                    winner_item.memory.id,
                                    winner_item.state.importance,
                                    winner_item.state.layer,
                                )
                            });
                            update.events.push((EventKind::Conflict, data));
                        }
                        (_, _, consolidate::Current::Merged) => {
                            let Some(text) = judgement.merged.clone() else { continue };
                            match self.merged_statement(&scope, &text, &[&items[older], &items[newer]], now, &judgement)
                            {
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
                            let update = updates.entry(item.memory.id).or_insert_with(|| {
                                StateUpdate::new(item.memory.id, item.state.importance, item.state.layer)
                            });
                            update.events.push((EventKind::Conflict, data));
                        }
                    }
                }
            }
        }

        if request.dry_run {
            return Ok(report);
        }
        let summary = json!({
            "policy": policy.kind.as_str(), "examined": report.examined, "promoted": report.promoted, "demoted": report.demoted,
            "archived": report.archived.len(), "deferred": report.deferred, "merged": report.merged.len(), "fused": report.fused.len(),
            "conflicts": report.conflicts, "rated": report.rated, "skipped": report.skipped,
        });
        let plan = MaintenancePlan {
            now,
            updates: updates.into_values().collect(),
            archive,
            insert: inserts,
            supersede,
            summary,
        };
        let applied = self.store.apply_maintenance(&scope, plan)?;
        if applied.skipped > 0 {
            report
                .skipped
                .push(format!("{} changes: their memories changed status while the cycle ran", applied.skipped));
        }
        tracing::debug!(user = %scope.user, archived = applied.archived, superseded = applied.superseded, inserted = applied.inserted, "maintenance cycle applied");
        // Summaries an erasure took away are made again here when an LLM is configured
        // (without one, `summarize` does it when it next runs).
        if self.llm.is_some() && self.store.maintenance_state(&scope)?.resummarize_due {
            match self.summarize(crate::SummarizeRequest { scope: scope.clone(), force: false }) {
                Ok(done) => {
                    tracing::info!(user = %scope.user, days = done.days.iter().filter(|d| d.summary.changed() || d.portrait.changed()).count(), "summaries made again after an erasure")
                }
                Err(err) => report.skipped.push(format!("summaries due after an erasure were not made again: {err}")),
            }
        }
        Ok(report)
    }

    /// Clusters of fading memories (retention in `[floor, consolidation threshold)`) that
    /// are close in meaning (cosine above the fusion threshold to the cluster's first
    /// memory) and in time (within the fusion window of it), oldest first.
    fn fusion_clusters(&self, items: &[Item], floor: f64, now: Timestamp) -> Vec<Vec<usize>> {
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
                if items[other].vector.as_ref().is_some_and(|v| cosine(seed_vector, v) > params.fusion_similarity) {
                    cluster.push(other);
                }
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

    #[allow(clippy::too_many_arguments)]
    fn derived(
        &self,
        scope: &Scope,
        kind: Kind,
        content: String,
        newest: &Memory,
        forgetting: ForgettingState,
        derived_from: Vec<MemoryId>,
        metadata: BTreeMap<String, String>,
        now: Timestamp,
    ) -> Memory {
        Memory {
            id: MemoryId::generate(now),
            scope: scope.clone(),
            kind,
            source: Source::Derived,
            content: Some(content),
            user_text: None,
            assistant_text: None,
            occurred_at: newest.occurred_at,
            recorded_at: now,
            day: newest.day,
            forgetting,
            status: Status::Active,
            superseded_by: None,
            derived_from,
            metadata,
        }
    }
}

/// The forgetting state of a memory made from `sources`: the strongest source's strength
/// (both policies), summed recalls and frequency, the highest importance, base importance
/// and layer, and a clock that starts at `now`.
fn combined_state(sources: &[&Item], policy: &membank_core::ForgettingPolicy, now: Timestamp) -> ForgettingState {
    // Its clock starts at the fusion: it is a new memory of what they said.
    let mut state = ForgettingState::new(now);
    for item in sources {
        let s = &item.state;
        if s.strength.get() > state.strength.get() {
            state.strength = s.strength;
        }
        state.recall_count = state.recall_count.saturating_add(s.recall_count);
        state.access_frequency += policy.fademem.frequency_now(s, now);
        if s.layer == Layer::Long {
            state.layer = Layer::Long;
        }
    }
    state.importance = sources.iter().map(|i| i.state.importance).fold(0.0, f64::max);
    state.base_importance = sources.iter().map(|i| i.state.base_importance).fold(0.0, f64::max);
    // It starts at its strongest source's strength (S under MemoryBank, v under FadeMem).
    state.fade_age =
        sources.iter().map(|i| policy.fademem.decay(&i.state, now).elapsed_days).fold(f64::INFINITY, f64::min);
    if !state.fade_age.is_finite() {
        state.fade_age = 0.0;
    }
    state
}

/// Turns, notes and fused memories take part in merging, fusion and conflicts; summaries
/// and portraits are kept current by `summarize` instead.
fn consolidatable(memory: &Memory) -> bool {
    matches!(memory.kind, Kind::Turn | Kind::Note | Kind::Fused)
}

fn terms_of(items: &[Item]) -> Vec<HashSet<String>> {
    items.iter().map(|item| text::terms(item.memory.content.as_deref().unwrap_or("")).into_iter().collect()).collect()
}

/// Candidate conflicts: pairs with at least one memory new since the last cycle (so a pair
/// is judged once, not every day), close in meaning but saying different things, not in a
/// fusion cluster; the most similar first, each memory in at most one pair.
fn conflict_pairs(
    items: &[Item],
    terms: &[HashSet<String>],
    clusters: &[Vec<usize>],
    params: &membank_core::FadeMemParams,
) -> Vec<(usize, usize, f64)> {
    let clustered: HashSet<usize> = clusters.iter().flatten().copied().collect();
    let mut pairs = Vec::new();
    for i in 0..items.len() {
        if !items[i].is_new || !consolidatable(&items[i].memory) || clustered.contains(&i) {
            continue;
        }
        let Some(vi) = items[i].vector.as_ref() else { continue };
        for j in 0..items.len() {
            if i == j || (items[j].is_new && j < i) || !consolidatable(&items[j].memory) || clustered.contains(&j) {
                continue;
            }
            let Some(vj) = items[j].vector.as_ref() else { continue };
            let similarity = cosine(vi, vj);
            if similarity >= params.conflict_similarity && jaccard(&terms[i], &terms[j]) < params.duplicate_overlap {
                pairs.push((i, j, similarity));
            }
        }
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
    pairs
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

/// Cosine of two vectors (stored vectors are L2-normalised, but a remote model's may not be).
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// Jaccard overlap of two term sets (1 for two empty texts).
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let common = a.intersection(b).count();
    common as f64 / (a.len() + b.len() - common) as f64
}

/// Groups of indices joined by `union`.
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        Self { parent: (0..n).collect() }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra] = rb;
        }
    }
    fn groups(&mut self) -> Vec<Vec<usize>> {
        let mut by_root: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for i in 0..self.parent.len() {
            let root = self.find(i);
            by_root.entry(root).or_default().push(i);
        }
        by_root.into_values().collect()
    }
}
