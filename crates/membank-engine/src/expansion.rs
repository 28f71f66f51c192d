//! Two recall stages after the first retrieval: time boosts and neighbour expansion.
//!
//! **Time boosts.** A time expression in the query ([`crate::temporal`]) is resolved
//! against the query's own day in the person's time zone. The dense and lexical searches
//! are then run a second time restricted to those days, and their lists join the fusion:
//! with a large weight for an exact date (memories of that day come first, the rest still
//! follow, so a misremembered date does not empty the answer) and a small one for a vague
//! span. The expression itself is left out of the search text ("may" in "May 4th" is not
//! a topic).
//!
//! **Neighbour expansion.** In a conversation the turn before an answer often names what
//! the answer is about ("I read *Solitude*" → "what was its name?"). Each of the best
//! candidates lends a share of its fused score to the turns right before and after it on
//! the same day, so the context of an answer comes along and a turn that only makes sense
//! with its neighbour can still be found. Lines of a transcript (notes: LoCoMo's dialogue,
//! one utterance each, the two people alternating) lend to both neighbours. A turn (a
//! person's message to the agent, with or without the agent's reply) lends only forward,
//! with its own weight, off by default: consecutive turns are separated by the agent's
//! replies and do not stand in the question → answer relation of adjacent transcript lines.
//! Measured: lending among LongMemEval's user messages (turns without replies) lowered
//! session recall_all@5 from .885 to .873 and turn recall_all@5 from .663 to .411; lending
//! forward from MemoryBank's exchanges raised hit@1 and MRR but lowered hit@3.

use std::collections::HashMap;

use chrono::NaiveDate;
use membank_core::time::UserTimeZone;
use membank_core::{Kind, MemoryId, Scope, Status, Timestamp};
use membank_store::{ListQuery, SearchFilter};

use crate::temporal::{self, TimeExpression, TimeReference};
use crate::{Engine, EngineError};

/// How many of the best candidates lend score to their neighbours.
const EXPANSION_SOURCES: usize = 10;

/// A resolved time expression of a query.
#[derive(Debug, Clone)]
pub(crate) struct TimeBoost {
    /// The expression found.
    pub expression: TimeExpression,
    /// First day it covers.
    pub from: NaiveDate,
    /// Last day it covers.
    pub to: NaiveDate,
}

impl Engine {
    /// Finds and resolves the query's time expression, if any.
    pub(crate) fn time_boost(
        &self,
        scope: &Scope,
        query: &str,
        now: Timestamp,
    ) -> Result<Option<TimeBoost>, EngineError> {
        let zone = match self.store.find_user(&scope.tenant, &scope.user)? {
            Some(user) => UserTimeZone::parse(&user.time_zone)?,
            None => return Ok(None),
        };
        let Some(expression) = temporal::parse(query, zone.day_of(now)) else { return Ok(None) };
        let (from, to) = match expression.reference {
            TimeReference::Days { from, to } => (from, to),
            TimeReference::FirstDay => {
                let first = self.store.list(
                    scope,
                    &ListQuery {
                        statuses: vec![Status::Active],
                        kinds: vec![Kind::Turn, Kind::Note],
                        limit: 1,
                        oldest_first: true,
                        ..Default::default()
                    },
                )?;
                match first.first() {
                    Some(memory) => (memory.day, memory.day),
                    None => return Ok(None),
                }
            }
        };
        Ok(Some(TimeBoost { expression, from, to }))
    }

    /// Adds to each fused candidate the share it gets from its best-ranked neighbour.
    /// Returns the candidates (old and newly reached) with their new score and the boost.
    /// `weight` is the share a transcript line (a note) lends to each neighbour,
    /// `exchange_weight` the share a turn lends to the next one.
    pub(crate) fn expand_neighbours(
        &self,
        scope: &Scope,
        filter: &SearchFilter,
        fused: &[(MemoryId, f64)],
        weight: f64,
        exchange_weight: f64,
    ) -> Result<Vec<(MemoryId, f64, Option<f64>)>, EngineError> {
        let mut out: Vec<(MemoryId, f64, Option<f64>)> = fused.iter().map(|(id, score)| (*id, *score, None)).collect();
        if (weight <= 0.0 && exchange_weight <= 0.0) || fused.is_empty() {
            return Ok(out);
        }
        let sources: Vec<(MemoryId, f64)> = fused.iter().take(EXPANSION_SOURCES).copied().collect();
        let source_ids: Vec<MemoryId> = sources.iter().map(|(id, _)| *id).collect();
        let memories = self.store.get_many(scope, &source_ids)?;
        // Each lending memory, and whether it is a transcript line (see the module docs).
        let mut line_of: HashMap<MemoryId, bool> = HashMap::new();
        for memory in &memories {
            let line = match memory.kind {
                Kind::Note => true,
                Kind::Turn => false,
                _ => continue,
            };
            if (line && weight > 0.0) || (!line && exchange_weight > 0.0) {
                line_of.insert(memory.id, line);
            }
        }
        let kinds: Vec<Kind> = if filter.kinds.is_empty() {
            vec![Kind::Turn, Kind::Note]
        } else {
            filter.kinds.iter().copied().filter(|k| matches!(k, Kind::Turn | Kind::Note)).collect()
        };
        if kinds.is_empty() {
            return Ok(out);
        }
        let lenders: Vec<MemoryId> = sources.iter().map(|(id, _)| *id).filter(|id| line_of.contains_key(id)).collect();
        let admitted = SearchFilter { kinds, day_from: None, day_to: None, include_archived: filter.include_archived };
        let adjacent: HashMap<MemoryId, [Option<MemoryId>; 2]> =
            self.store.adjacent(scope, &lenders, &admitted)?.into_iter().map(|a| (a.id, [a.before, a.after])).collect();
        let mut boost: HashMap<MemoryId, f64> = HashMap::new();
        for (id, score) in &sources {
            let (Some(line), Some([before, after])) = (line_of.get(id), adjacent.get(id)) else { continue };
            let before = if *line { *before } else { None };
            let share = (if *line { weight } else { exchange_weight }) * score;
            for neighbour in [before, *after].into_iter().flatten() {
                let entry = boost.entry(neighbour).or_insert(0.0);
                *entry = entry.max(share);
            }
        }
        for (id, score, lent) in out.iter_mut() {
            if let Some(extra) = boost.remove(id) {
                *score += extra;
                *lent = Some(extra);
            }
        }
        // Neighbours that were not candidates at all join with their borrowed score only.
        let mut reached: Vec<(MemoryId, f64)> = boost.into_iter().collect();
        reached.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.to_string().cmp(&b.0.to_string())));
        out.extend(reached.into_iter().map(|(id, extra)| (id, extra, Some(extra))));
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(out)
    }
}
