//! Near-duplicates: memories of one kind whose vectors and words nearly agree, at least
//! one of them new since the last cycle, are grouped, and the newest copy of each group
//! absorbs the others (their recalls, frequency and the higher importance).
//!
//! The work is bounded: a pair already in one group is not compared again (so a user of
//! thousands of near-identical turns costs one pass, not every pair), words are compared
//! only for pairs close in meaning, and one cycle makes at most
//! [`super::similarity::MAX_COMPARISONS`] vector comparisons; the new memories it had no
//! budget left for are reported in `skipped`.

use std::collections::{BTreeMap, HashMap, HashSet};

use membank_core::MemoryId;
use membank_core::event::EventKind;
use membank_store::{Replacement, Store, Supersession};
use serde_json::json;

use super::cycle::{Cycle, consolidatable, pending};
use super::similarity::{Budget, Terms, cosine};
use super::types::Merge;
use crate::ops::IMPORTANCE_SOURCE;

impl Cycle {
    /// Merges the near-duplicates: each absorbed copy is superseded by its group's newest
    /// copy and leaves the cycle; the survivor's update carries what it absorbed. Pinned
    /// memories are never absorbed.
    pub(super) fn merge_duplicates(&mut self, store: &dyn Store) {
        let (params, now) = (self.policy.fademem, self.now);
        let order = self.new_in_order();
        let items = &mut self.items;
        let (report, updates, supersede) = (&mut self.report, &mut self.updates, &mut self.supersede);
        let mut gone: HashSet<MemoryId> = HashSet::new();
        let mut terms = Terms::new(store, &self.scope, items);
        let mut groups = UnionFind::new(items.len());
        let mut best: HashMap<(usize, usize), (f64, f64)> = HashMap::new();
        let mut budget = Budget::new();
        // The new memories are compared oldest first, each with every other memory but the
        // new ones already done; where the budget runs out, the rest wait for the next cycle.
        let mut done = vec![false; items.len()];
        let mut unfinished = None;
        for (n, &i) in order.iter().enumerate() {
            if !consolidatable(&items[i].memory) {
                done[i] = true;
                continue;
            }
            let Some(vi) = items[i].vector.as_ref() else {
                done[i] = true;
                continue;
            };
            for j in 0..items.len() {
                if i == j || items[j].memory.kind != items[i].memory.kind || done[j] {
                    continue;
                }
                // Already one group: nothing this pair could add.
                if groups.find(i) == groups.find(j) {
                    continue;
                }
                let Some(vj) = items[j].vector.as_ref() else { continue };
                if !budget.take() {
                    break;
                }
                let similarity = cosine(vi, vj);
                if similarity < params.duplicate_similarity {
                    continue;
                }
                let overlap = terms.jaccard(items, i, j);
                if overlap >= params.duplicate_overlap {
                    groups.union(i, j);
                    best.insert((i.min(j), i.max(j)), (similarity, overlap));
                }
            }
            if budget.exhausted {
                unfinished = Some((n, items[i].new_rank.unwrap_or(0)));
                break;
            }
            done[i] = true;
        }
        if let Some((n, _)) = unfinished {
            report.skipped.push(format!(
                "duplicate checks of {} new memories, deferred to the next cycle: at most {} comparisons per cycle",
                order.len() - n,
                super::similarity::MAX_COMPARISONS
            ));
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
                    (s, terms.jaccard(items, i, survivor))
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
            let update = pending(updates, item);
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
        if let Some(err) = terms.error.take() {
            tracing::warn!(error = %err, user = %self.scope.user, "texts of near-duplicate candidates could not be read; those pairs were not merged");
            report.skipped.push(format!("near-duplicate pairs whose texts could not be read: {err}"));
        }
        if let Some((_, rank)) = unfinished {
            self.compared_before(rank);
        }
    }
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
