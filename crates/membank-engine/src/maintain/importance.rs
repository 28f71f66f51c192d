//! The first two stages of a cycle: base importance rated by the LLM, then importance and
//! layers recomputed for every memory.

use membank_core::Layer;
use membank_core::Memory;
use membank_core::event::EventKind;
use membank_core::fademem::{ImportanceInputs, days_between};
use serde_json::json;

use super::cycle::{Cycle, pending};
use super::similarity::cosine;
use crate::Engine;
use crate::consolidate;
use crate::ops::IMPORTANCE_SOURCE;

/// At most this many importance ratings per cycle (the LLM's work is bounded per cycle).
const MAX_RATINGS: usize = 40;

impl Engine {
    /// Base importance rated by the LLM, for memories that only have the estimator's (the
    /// newest [`MAX_RATINGS`] of them). Without an LLM, when it is not to rate
    /// ([`crate::EngineConfig::llm_rates_importance`]), on a dry run or when the rating
    /// fails, the estimator's values stand and the report says so.
    pub(super) fn rate_importance(&self, cycle: &mut Cycle) {
        let to_rate: Vec<usize> = cycle
            .items
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, item)| item.memory.metadata.get(IMPORTANCE_SOURCE).map(String::as_str) == Some("estimator"))
            .map(|(i, _)| i)
            .take(MAX_RATINGS)
            .collect();
        match (&self.llm, cycle.dry_run) {
            _ if to_rate.is_empty() => {}
            (Some(_), _) if !self.config.llm_rates_importance => cycle.report.skipped.push(format!(
                "importance rating of {} memories: the chat model does not rate importance \
                 ([llm] rate_importance = false), the text estimator's values stand",
                to_rate.len()
            )),
            (None, _) => cycle.report.skipped.push(format!(
                "importance rating of {} memories: no LLM is configured, the text estimator's values stand",
                to_rate.len()
            )),
            (Some(_), true) => cycle
                .report
                .skipped
                .push(format!("importance rating of {} memories: a dry run makes no LLM calls", to_rate.len())),
            (Some(llm), false) => {
                if let Err(err) = self.load_texts(cycle, &to_rate) {
                    tracing::warn!(error = %err, user = %cycle.scope.user, "memories to rate could not be read; the estimator's values stand");
                    cycle.report.skipped.push(format!("importance rating of {} memories: {err}", to_rate.len()));
                    return;
                }
                let (items, report) = (&mut cycle.items, &mut cycle.report);
                let batch: Vec<Memory> = to_rate.iter().map(|&i| items[i].memory.clone()).collect();
                match consolidate::rate_importance(llm.as_ref(), cycle.scope.user.as_str(), &batch) {
                    Ok(ratings) => {
                        for (&i, rating) in to_rate.iter().zip(ratings) {
                            items[i].state.base_importance = rating;
                            let update = pending(&mut cycle.updates, &items[i]);
                            update.base_importance = Some((rating, "llm".into()));
                            report.rated += 1;
                        }
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, user = %cycle.scope.user, "importance rating failed; the estimator's values stand");
                        report.skipped.push(format!("importance rating of {} memories: {err}", to_rate.len()));
                    }
                }
            }
        }
    }
}

impl Cycle {
    /// Importance from base importance, relevance to recent queries, recall frequency and
    /// age, and the layer it puts each memory in; a layer move is an event with its numbers.
    pub(super) fn update_layers(&mut self) {
        let (params, now) = (self.policy.fademem, self.now);
        for item in &mut self.items {
            let relevance = match &item.vector {
                Some(vector) => self.queries.iter().map(|q| cosine(vector, q)).fold(0.0f64, f64::max),
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
            if changed || self.updates.contains_key(&item.memory.id) {
                let update = pending(&mut self.updates, item);
                update.importance = importance;
                update.layer = layer;
                if moved {
                    let (kind, threshold) = if layer == Layer::Long {
                        (EventKind::Promoted, params.promote)
                    } else {
                        (EventKind::Demoted, params.demote)
                    };
                    if layer == Layer::Long {
                        self.report.promoted += 1
                    } else {
                        self.report.demoted += 1
                    }
                    update.events.push((
                        kind,
                        json!({ "from": previous_layer.as_str(), "to": layer.as_str(), "importance": importance, "threshold": threshold,
                                "base": item.state.base_importance, "relevance": relevance, "frequency": frequency, "age_days": age_days }),
                    ));
                }
            }
        }
    }
}
