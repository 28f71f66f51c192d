//! New memories made from others (fused clusters, merged conflicts): their forgetting
//! state and their row.

use std::collections::BTreeMap;

use membank_core::{
    ForgettingPolicy, ForgettingState, Kind, Layer, Memory, MemoryId, Scope, Source, Status, Timestamp,
};

use super::cycle::Item;
use crate::Engine;

impl Engine {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn derived(
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
pub(super) fn combined_state(sources: &[&Item], policy: &ForgettingPolicy, now: Timestamp) -> ForgettingState {
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
