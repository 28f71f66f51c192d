//! The last stage of a recall: logging it and strengthening what it returned.

use std::collections::HashMap;

use membank_core::forgetting::RecallMode;
use membank_core::{EventId, Memory, MemoryId};
use membank_store::RecallRecord;

use super::setup::Setup;
use super::types::RecallHit;
use crate::{Engine, EngineError};

/// How a recall was logged.
pub(super) struct Logged {
    /// Identifies this recall in the event log.
    pub query_id: String,
    /// Whether the returned memories were strengthened.
    pub strengthened: bool,
}

impl Engine {
    /// Logs the recall with its hits and, when the policy (or the request) says a retrieval
    /// is a recall, strengthens them. An inspection recall (`strengthen: false`) writes
    /// nothing. A hit archived or erased while this recall ran is dropped; the others
    /// become the memory as it is now, with its retention now.
    pub(super) fn log_and_strengthen(
        &self,
        setup: &Setup,
        query_vector: Vec<f32>,
        hits: &mut Vec<RecallHit>,
    ) -> Result<Logged, EngineError> {
        let (request, now) = (setup.request, setup.now);
        let policy = &self.config.forgetting;
        let strengthen = request.strengthen.unwrap_or(policy.recall_mode == RecallMode::Retrieved);
        let query_id = EventId::generate(now).to_string();
        if request.strengthen != Some(false) && !hits.is_empty() {
            let record = RecallRecord {
                query_id: query_id.clone(),
                now,
                results: hits.iter().map(|h| (h.memory.id, h.score)).collect(),
                query_vector: Some(query_vector),
                include_archived: request.include_archived,
                reminisced: hits.iter().filter(|h| h.reminisced).map(|h| h.memory.id).collect(),
            };
            let mut updated: HashMap<MemoryId, Memory> = self
                .store
                .record_recall(&request.scope, &record, strengthen.then_some(policy))?
                .into_iter()
                .map(|m| (m.id, m))
                .collect();
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
        Ok(Logged { query_id, strengthened: strengthen && !hits.is_empty() })
    }
}
