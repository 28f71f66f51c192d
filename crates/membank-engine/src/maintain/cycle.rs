//! The value a maintenance cycle is built around: the snapshot of the user's active
//! memories, the numbers computed for them, the plan taking shape and the report.

use std::collections::{BTreeMap, HashMap};

use membank_core::event::EventKind;
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{ForgettingState, Kind, Memory, MemoryId, Scope, Status, Timestamp};
use membank_store::{ListQuery, NewMemory, StateUpdate, Supersession};

use super::types::{MaintainReport, MaintainRequest};
use crate::{Engine, EngineError};

/// At most this many of the memories new since the last cycle (the oldest first) are
/// compared with every other memory for duplicates and conflicts: each comparison walks all
/// of the user's vectors, and a first cycle over a large import would otherwise be
/// quadratic. The rest stay new: the cycle records how far it got, and the next cycle
/// starts there (see the README).
const MAX_NEW_COMPARED: usize = 500;

/// A memory as the cycle sees it: the snapshot and the numbers computed for it.
pub(super) struct Item {
    pub memory: Memory,
    pub vector: Option<Vec<f32>>,
    pub state: ForgettingState,
    /// Among the memories no cycle has compared yet, this one's place in storage order
    /// (`None`: compared before, or deferred past [`MAX_NEW_COMPARED`]).
    pub new_rank: Option<usize>,
}

impl Item {
    /// Whether this cycle compares the memory as new.
    pub fn is_new(&self) -> bool {
        self.new_rank.is_some()
    }
}

/// One maintenance cycle over one user, planned stage by stage and applied at the end.
pub(super) struct Cycle {
    /// Whose memories.
    pub scope: Scope,
    /// The cycle's time.
    pub now: Timestamp,
    /// Plan and report only.
    pub dry_run: bool,
    /// The forgetting policy in force.
    pub policy: ForgettingPolicy,
    /// The active memories still in play, oldest first (archived and absorbed ones leave).
    pub items: Vec<Item>,
    /// The vectors of the user's recent queries (relevance, for importance).
    pub queries: Vec<Vec<f32>>,
    /// The state changes planned, by memory.
    pub updates: BTreeMap<MemoryId, StateUpdate>,
    /// The memories to archive, with their event data.
    pub archive: Vec<(MemoryId, serde_json::Value)>,
    /// The supersessions planned (merges, fusions, conflicts).
    pub supersede: Vec<Supersession>,
    /// The memories to insert (fused or merged statements), with their event.
    pub inserts: Vec<(NewMemory, EventKind, serde_json::Value)>,
    /// What the cycle examined and did.
    pub report: MaintainReport,
    /// The storage positions of the memories no cycle had compared, in order: the
    /// `new_rank`s index it.
    pub new_positions: Vec<i64>,
    /// The position of the user's newest memory at the snapshot.
    pub newest_position: i64,
    /// How many of the new memories, in storage order, every comparing stage has finished
    /// with: the cycle records that it covered the user up to there.
    pub compared: usize,
}

impl Engine {
    /// Checks the policy and the cycle's time and starts an empty cycle.
    pub(super) fn start_cycle(&self, request: &MaintainRequest) -> Result<Cycle, EngineError> {
        let policy = self.config.forgetting;
        policy.validate()?;
        let now = self.request_now(request.now, !request.dry_run)?;
        let scope = request.scope.clone();
        let report = MaintainReport {
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
        Ok(Cycle {
            scope,
            now,
            dry_run: request.dry_run,
            policy,
            items: Vec::new(),
            queries: Vec::new(),
            updates: BTreeMap::new(),
            archive: Vec::new(),
            supersede: Vec::new(),
            inserts: Vec::new(),
            report,
            new_positions: Vec::new(),
            newest_position: 0,
            compared: 0,
        })
    }

    /// Reads the snapshot: the user's active memories with their vectors, which no cycle
    /// has compared yet (at most [`MAX_NEW_COMPARED`] of them, the oldest, are compared by
    /// this one), and the recent queries. Returns false for a user the store does not know.
    pub(super) fn snapshot(&self, cycle: &mut Cycle) -> Result<bool, EngineError> {
        let scope = &cycle.scope;
        if self.store.find_user(&scope.tenant, &scope.user)?.is_none() {
            return Ok(false);
        }
        // The memories still to compare are read before the list, so a memory stored in
        // between is in the list but not among them: it stays new for the next cycle.
        let unmaintained = self.store.unmaintained(scope)?;
        // No texts: the stages that need one read it then (`similarity::Terms`,
        // [`Engine::load_texts`]), so a cycle holds states and vectors, not every text.
        let list = ListQuery {
            statuses: vec![Status::Active],
            limit: i64::MAX as usize,
            oldest_first: true,
            without_text: true,
            ..Default::default()
        };
        let memories = self.store.list(scope, &list)?;
        cycle.report.examined = memories.len();
        let ids: Vec<MemoryId> = memories.iter().map(|m| m.id).collect();
        let mut vectors: HashMap<MemoryId, Vec<f32>> = self.store.vectors(scope, &ids)?.into_iter().collect();
        cycle.queries = self.store.recent_queries(scope, cycle.policy.fademem.recent_queries)?;
        // A memory archived or superseded since is not in the list: it keeps its rank,
        // which only orders the rest.
        let new_count = unmaintained.memories.len();
        let rank: HashMap<MemoryId, usize> = unmaintained
            .memories
            .iter()
            .take(MAX_NEW_COMPARED)
            .enumerate()
            .map(|(rank, (id, _))| (*id, rank))
            .collect();
        cycle.new_positions = unmaintained.memories.iter().map(|(_, position)| *position).collect();
        cycle.newest_position = unmaintained.newest;
        cycle.compared = new_count.min(MAX_NEW_COMPARED);
        cycle.items = memories
            .into_iter()
            .map(|memory| {
                let vector = vectors.remove(&memory.id);
                Item { state: memory.forgetting, new_rank: rank.get(&memory.id).copied(), memory, vector }
            })
            .collect();
        if new_count > MAX_NEW_COMPARED {
            cycle.report.skipped.push(format!(
                "duplicate and conflict checks of {} newer memories, deferred to the next cycle: at most {MAX_NEW_COMPARED} per cycle",
                new_count - MAX_NEW_COMPARED
            ));
        }
        Ok(true)
    }
}

impl Cycle {
    /// The indices of the items this cycle compares as new, in storage order.
    pub(super) fn new_in_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.items.len()).filter(|&i| self.items[i].is_new()).collect();
        order.sort_by_key(|&i| self.items[i].new_rank);
        order
    }

    /// A stage finished with the new memories before `rank` only: the rest are compared
    /// again by the next cycle.
    pub(super) fn compared_before(&mut self, rank: usize) {
        self.compared = self.compared.min(rank);
    }

    /// The position this cycle covered the user up to, for the plan: the newest memory at
    /// the snapshot when it compared all of the new ones, else the position just before the
    /// first it did not finish. Memories stored while the cycle ran stay new either way.
    pub(super) fn maintained_through(&self) -> Option<i64> {
        match self.new_positions.get(self.compared) {
            None => Some(self.newest_position),
            Some(&position) => Some(position - 1),
        }
    }
}

impl Engine {
    /// Reads the texts of the items at `indices` into the snapshot, for the LLM calls that
    /// quote them (at most a few dozen per cycle). A memory erased since the snapshot keeps
    /// none, and its call refuses it as erased.
    pub(super) fn load_texts(&self, cycle: &mut Cycle, indices: &[usize]) -> Result<(), EngineError> {
        let wanted: Vec<usize> = indices.iter().copied().filter(|&i| cycle.items[i].memory.content.is_none()).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let ids: Vec<MemoryId> = wanted.iter().map(|&i| cycle.items[i].memory.id).collect();
        let mut read: HashMap<MemoryId, Memory> =
            self.store.get_many(&cycle.scope, &ids)?.into_iter().map(|m| (m.id, m)).collect();
        for i in wanted {
            let item = &mut cycle.items[i];
            if let Some(full) = read.remove(&item.memory.id) {
                item.memory.content = full.content;
                item.memory.user_text = full.user_text;
                item.memory.assistant_text = full.assistant_text;
            }
        }
        Ok(())
    }
}

/// The planned update of `item`, started from its current importance and layer.
pub(super) fn pending<'u>(updates: &'u mut BTreeMap<MemoryId, StateUpdate>, item: &Item) -> &'u mut StateUpdate {
    updates
        .entry(item.memory.id)
        .or_insert_with(|| StateUpdate::new(item.memory.id, item.state.importance, item.state.layer))
}

/// Turns, notes and fused memories take part in merging, fusion and conflicts; summaries
/// and portraits are kept current by `summarize` instead.
pub(super) fn consolidatable(memory: &Memory) -> bool {
    matches!(memory.kind, Kind::Turn | Kind::Note | Kind::Fused)
}
