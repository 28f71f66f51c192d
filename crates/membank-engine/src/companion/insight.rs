//! Read-only views for people looking at a store: one memory's forgetting curve replayed
//! from its event log, and a user's counts by status over time. Both are computed here,
//! by the policy code the sweep runs, so a page or a script never re-derives a formula.

use chrono::{Duration, NaiveDate};
use membank_core::curve::{Curve, Step};
use membank_core::{
    Event, EventKind, ForgettingState, InvalidInput, Memory, MemoryId, Scope, Status, Strength, Timestamp,
};
use membank_store::{EventQuery, StatusCounts};

use crate::{Engine, EngineError};

/// The longest projection a curve may ask for.
pub const MAX_DAYS_AHEAD: u32 = 3650;

/// A memory's forgetting curve.
#[derive(Debug, Clone)]
pub struct CurveResponse {
    /// The memory as stored now.
    pub memory: Memory,
    /// Its retention now.
    pub retention: f64,
    /// The engine's now.
    pub now: Timestamp,
    /// The sampled curve and where it crosses the threshold.
    pub curve: Curve,
    /// Every event about the memory, in log order, with retention just before and after
    /// each that changed the state (`None` for the others).
    pub events: Vec<(Event, Option<(f64, f64)>)>,
    /// The policy's archive threshold (`None` when a sweep draws or ranks).
    pub archive_below: Option<f64>,
    /// `memorybank` or `fademem`.
    pub policy: &'static str,
}

/// Counts of a user's memories by status at the end of one day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayCounts {
    /// The day in the user's time zone.
    pub day: NaiveDate,
    /// The counts after that day's last event.
    pub counts: StatusCounts,
}

/// A user's store over time.
#[derive(Debug, Clone)]
pub struct Overview {
    /// The user's time zone.
    pub time_zone: String,
    /// One entry per day with events, ascending.
    pub days: Vec<DayCounts>,
    /// The store's counts now.
    pub current: StatusCounts,
}

/// Events are read in pages of this many.
const PAGE: usize = 5_000;

fn step_of(event: &Event) -> Option<Step> {
    match event.kind {
        EventKind::Strengthened => Some(Step::Recall),
        EventKind::Pinned => Some(Step::Pin),
        EventKind::Unpinned => Some(Step::Unpin),
        EventKind::Restored => Some(Step::Restore),
        // A recall that brought the memory back from the archive: restored and strengthened
        // with savings, as from when it was archived.
        EventKind::Reminisced => Some(Step::Reminisce { archived_at: timestamp(&event.data, "archived_at") }),
        _ => None,
    }
}

fn timestamp(data: &serde_json::Value, field: &str) -> Option<Timestamp> {
    data.get(field)?
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
}

fn count(counts: &mut StatusCounts, status: Status, delta: i64) {
    let slot = match status {
        Status::Active => &mut counts.active,
        Status::Archived => &mut counts.archived,
        Status::Superseded => &mut counts.superseded,
        Status::Erased => &mut counts.erased,
    };
    *slot = slot.saturating_add_signed(delta);
}

impl Engine {
    /// Every event of `scope` (about `memory`, if given), in log order.
    fn all_events(&self, scope: &Scope, memory: Option<MemoryId>) -> Result<Vec<Event>, EngineError> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self.store.events(scope, &EventQuery { memory_id: memory, after_seq: after, limit: PAGE })?;
            let full = page.len() == PAGE;
            after = page.last().map(|e| e.seq);
            out.extend(page);
            if !full {
                return Ok(out);
            }
        }
    }

    /// One memory's forgetting curve from where its clock started to `days_ahead` days
    /// past now (default: a tenth of its span past the projected archive date, at least
    /// 30 days ahead), replayed from its event log through the configured policy.
    ///
    /// The state the clock started in comes from the `created` event (its
    /// `clock_started_at` and `strength`; older logs fall back to the memory's time); each
    /// strengthening recall, pin, unpin, restore and reminiscence is a step; the stored state holds after
    /// the last step, so the curve's value now is the retention every other view shows.
    pub fn curve(&self, scope: &Scope, id: MemoryId, days_ahead: Option<u32>) -> Result<CurveResponse, EngineError> {
        if let Some(days) = days_ahead
            && days > MAX_DAYS_AHEAD
        {
            return Err(InvalidInput::new("days_ahead", format!("must be at most {MAX_DAYS_AHEAD}")).into());
        }
        let memory = self.store.get(scope, id)?;
        let policy = &self.config.forgetting;
        let now = self.clock.now();
        let events = self.all_events(scope, Some(id))?;
        let created = events.iter().find(|e| e.kind == EventKind::Created);
        let clock_started_at = created.and_then(|e| timestamp(&e.data, "clock_started_at")).unwrap_or_else(|| {
            if memory.forgetting.recall_count == 0 {
                memory.forgetting.last_recalled_at
            } else {
                memory.occurred_at.min(memory.recorded_at)
            }
        });
        let strength = created
            .and_then(|e| e.data.get("strength")?.as_f64())
            .and_then(|s| Strength::new(s).ok())
            .unwrap_or(Strength::INITIAL);
        // FadeMem's importance, layer and decay factor move in maintenance cycles, which
        // the log does not replay; the stored ones stand in for the past.
        let start = ForgettingState {
            strength,
            recall_count: 0,
            last_recalled_at: clock_started_at,
            pinned: false,
            fade_age: 0.0,
            access_frequency: 0.0,
            ..memory.forgetting
        };
        let steps: Vec<(Timestamp, Step)> = events.iter().filter_map(|e| Some((e.at, step_of(e)?))).collect();
        let mut sorted = steps.clone();
        sorted.sort_by_key(|(at, _)| *at);
        let span_end = {
            let last_step = sorted.last().map(|(at, _)| *at).unwrap_or(clock_started_at);
            let crossing = policy.crosses_threshold(&memory.forgetting, last_step);
            match days_ahead {
                Some(days) => now + Duration::days(i64::from(days)),
                None => {
                    let floor = now + Duration::days(30);
                    match crossing {
                        Some(at) if at > now => (at + (at - clock_started_at) / 10).max(floor),
                        _ => floor,
                    }
                }
            }
        };
        let curve = policy.curve(&start, &sorted, &memory.forgetting, now, span_end);
        // Attach each step's jump to its event (steps were sorted stably by time).
        let mut order: Vec<usize> = (0..steps.len()).collect();
        order.sort_by_key(|&i| steps[i].0);
        let mut jumps = vec![None; steps.len()];
        for (sorted_index, &original) in order.iter().enumerate() {
            jumps[original] = curve.at_steps.get(sorted_index).copied();
        }
        let mut jumps = jumps.into_iter();
        let events = events
            .into_iter()
            .map(|e| {
                let jump = if step_of(&e).is_some() { jumps.next().flatten() } else { None };
                (e, jump)
            })
            .collect();
        let retention = policy.retention_of(&memory.forgetting, now);
        Ok(CurveResponse {
            memory,
            retention,
            now,
            curve,
            events,
            archive_below: policy.archive_below(),
            policy: policy.kind.as_str(),
        })
    }

    /// A user's memories by status at the end of each day that had events, replayed from
    /// the event log (created, archived, restored or reminisced, superseded, erased), days in the user's
    /// time zone, with the store's counts now.
    pub fn overview(&self, scope: &Scope) -> Result<Overview, EngineError> {
        let zone = self.time_zone_of(scope)?;
        let events = self.all_events(scope, None)?;
        let mut status: std::collections::HashMap<MemoryId, Status> = std::collections::HashMap::new();
        let mut counts = StatusCounts::default();
        let mut days: Vec<DayCounts> = Vec::new();
        // Each event counts at its own time, except that a memory's events keep their log
        // order: an operation given an earlier `now` (a backdated sweep over imported
        // history) may be dated before the memory was stored, and counts from its store.
        let mut effective: std::collections::HashMap<MemoryId, Timestamp> = std::collections::HashMap::new();
        let mut ordered: Vec<(Timestamp, i64, MemoryId, EventKind)> = Vec::with_capacity(events.len());
        for event in &events {
            let Some(id) = event.memory_id else { continue };
            let at = effective.get(&id).map_or(event.at, |previous| event.at.max(*previous));
            effective.insert(id, at);
            ordered.push((at, event.seq, id, event.kind));
        }
        ordered.sort_by_key(|(at, seq, _, _)| (*at, *seq));
        for (at, _, id, kind) in ordered {
            let next = match kind {
                EventKind::Created => Some(Status::Active),
                EventKind::Archived => Some(Status::Archived),
                EventKind::Restored | EventKind::Reminisced => Some(Status::Active),
                EventKind::Superseded => Some(Status::Superseded),
                EventKind::Erased => Some(Status::Erased),
                _ => None,
            };
            let Some(next) = next else { continue };
            if let Some(previous) = status.insert(id, next) {
                count(&mut counts, previous, -1);
            }
            count(&mut counts, next, 1);
            let day = zone.day_of(at);
            match days.last_mut() {
                Some(last) if last.day == day => last.counts = counts,
                _ => days.push(DayCounts { day, counts }),
            }
        }
        let current = self.store.counts(scope)?;
        Ok(Overview { time_zone: zone.name().to_string(), days, current })
    }
}
