//! Wire types of the read-only views for people (the web app's curve, overview and the
//! server's self-description). Like [`crate::wire`], built from engine types here only.

use membank_engine::{CurveResponse, Overview};
use membank_store::StatusCounts;
use serde::Serialize;
use utoipa::ToSchema;

use crate::wire::{CountsOut, EventOut, MemoryWithRetention, rfc3339};

fn unix_seconds(t: membank_engine::core::Timestamp) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

fn counts(c: &StatusCounts) -> CountsOut {
    CountsOut { active: c.active, archived: c.archived, superseded: c.superseded, erased: c.erased }
}

/// One point of a forgetting curve.
#[derive(Debug, Serialize, ToSchema)]
pub struct CurvePointOut {
    /// When (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// The same moment in seconds since 1970 (for plotting).
    pub t: f64,
    /// Retention under the configured policy (FadeMem's `v` under FadeMem; 1 while pinned).
    pub retention: f64,
    /// Strength S in effect.
    pub strength: f64,
    /// After now: what happens if the memory is never recalled again.
    pub projected: bool,
}

/// One event of the memory, with the jump it made in the curve.
#[derive(Debug, Serialize, ToSchema)]
pub struct CurveEventOut {
    /// The event as `GET /events` returns it.
    #[serde(flatten)]
    pub event: EventOut,
    /// The same moment in seconds since 1970.
    pub t: f64,
    /// Retention just before the event, for events that change the state (strengthened,
    /// pinned, unpinned, restored); `null` for the others.
    pub retention_before: Option<f64>,
    /// Retention just after it.
    pub retention_after: Option<f64>,
}

/// `GET /v1/users/{user}/memories/{id}/curve`: retention over time, replayed from the
/// event log through the configured policy (the code the sweep runs).
#[derive(Debug, Serialize, ToSchema)]
pub struct CurveOut {
    /// The memory with its retention now.
    pub memory: MemoryWithRetention,
    /// The server's now; points after it are projections.
    pub now: String,
    /// `memorybank` or `fademem`.
    pub policy: &'static str,
    /// The retention below which a sweep archives an active, unpinned memory (`null` when
    /// the policy draws or ranks instead).
    pub archive_below: Option<f64>,
    /// Ascending in time, from where the memory's clock started to the projection's end.
    /// At each strengthening recall (or pin, unpin, restore) there is a point a
    /// millisecond before it and one at it, so a recall is a vertical jump.
    pub points: Vec<CurvePointOut>,
    /// Every event about the memory, in log order.
    pub events: Vec<CurveEventOut>,
    /// When retention falls (or fell) below `archive_below` if the memory is never recalled
    /// again; `null` when pinned, without a threshold, or beyond a century. For a memory
    /// that is no longer active it is when it would have been.
    pub projected_archive_at: Option<String>,
    /// The curve in words: what the projection assumes.
    pub note: String,
}

impl From<&CurveResponse> for CurveOut {
    fn from(c: &CurveResponse) -> Self {
        let crossing = c.curve.crosses_threshold_at;
        let note = match (c.memory.status.as_str(), c.memory.forgetting.pinned, crossing) {
            (_, true, _) => "pinned: it does not decay and no sweep archives it".to_string(),
            ("active", false, Some(at)) if at <= c.now => "its retention is already below the threshold: the next sweep archives it unless it is recalled first".to_string(),
            ("active", false, Some(_)) => "the first sweep after its retention falls below the threshold archives it; each strengthening recall restarts its clock and can add one to S (by default the first of a day does), which moves that day later".to_string(),
            ("active", false, None) if c.archive_below.is_some() => "without another recall its retention stays above the threshold for more than a century, so no archive date is projected; each strengthening recall restarts its clock".to_string(),
            ("active", false, None) => "the policy archives by no threshold (it draws or ranks), so there is no archive date".to_string(),
            (status, _, _) => format!("{status}: the curve shows what its retention was and would be; sweeps only look at active memories"),
        };
        Self {
            memory: MemoryWithRetention::new(&c.memory, c.retention, c.archive_below),
            now: rfc3339(c.now),
            policy: c.policy,
            archive_below: c.archive_below,
            points: c
                .curve
                .points
                .iter()
                .map(|p| CurvePointOut {
                    at: rfc3339(p.at),
                    t: unix_seconds(p.at),
                    retention: p.retention,
                    strength: p.strength,
                    projected: p.projected,
                })
                .collect(),
            events: c
                .events
                .iter()
                .map(|(e, jump)| CurveEventOut {
                    event: e.into(),
                    t: unix_seconds(e.at),
                    retention_before: jump.map(|j| j.0),
                    retention_after: jump.map(|j| j.1),
                })
                .collect(),
            projected_archive_at: crossing.map(rfc3339),
            note,
        }
    }
}

/// Counts at the end of one day.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayCountsOut {
    /// The day (YYYY-MM-DD) in the user's time zone.
    pub day: String,
    /// Active memories.
    pub active: u64,
    /// Archived memories.
    pub archived: u64,
    /// Superseded memories.
    pub superseded: u64,
    /// Erased memories.
    pub erased: u64,
}

/// `GET /v1/users/{user}/overview`: the user's memories by status over time, replayed
/// from the event log.
#[derive(Debug, Serialize, ToSchema)]
pub struct OverviewOut {
    /// The user's time zone (days are counted in it).
    pub time_zone: String,
    /// One entry per day with events, ascending: the counts after that day's last event.
    pub days: Vec<DayCountsOut>,
    /// The store's counts now (equal to the last day's unless the log was pruned).
    pub current: CountsOut,
}

impl From<&Overview> for OverviewOut {
    fn from(o: &Overview) -> Self {
        Self {
            time_zone: o.time_zone.clone(),
            days: o
                .days
                .iter()
                .map(|d| DayCountsOut {
                    day: d.day.to_string(),
                    active: d.counts.active,
                    archived: d.counts.archived,
                    superseded: d.counts.superseded,
                    erased: d.counts.erased,
                })
                .collect(),
            current: counts(&o.current),
        }
    }
}

/// The configured LLM.
#[derive(Debug, Serialize, ToSchema)]
pub struct LlmOut {
    /// The model's name at its endpoint.
    pub model: String,
}

/// The forgetting policy in force.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyOut {
    /// `memorybank` or `fademem`.
    pub policy: &'static str,
    /// The retention below which a sweep archives (`null` when it draws or ranks).
    pub archive_below: Option<f64>,
    /// The unit of `t` in MemoryBank's `exp(-t/S)`, in seconds.
    pub unit_seconds: i64,
    /// How a sweep decides: `threshold`, `stochastic` or `rank`.
    pub mode: &'static str,
    /// How much a memory's importance `I` weighs on MemoryBank's curve `exp(-t / S_eff)`
    /// (`w` in `importance_form`).
    pub importance_weight: f64,
    /// How importance enters the strength: `linear` (`S + w·I`), `odds` (`S + w·I/(1−I)`) or
    /// `scaled` (`S·(1 + w·I/(1−I))^k`).
    pub importance_form: &'static str,
    /// The scaled form's exponent `k`.
    pub importance_exponent: f64,
    /// Spaced strengthening: only a memory's first recall in a unit of time (a UTC day by
    /// default) adds to `S`; later recalls in that unit restart its clock only.
    pub spaced_recall: bool,
}

/// `GET /v1/about`: who the caller is and what the server runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct AboutOut {
    /// membank's version.
    pub version: &'static str,
    /// `keys` (bearer keys required) or `loopback` (no keys; loopback only).
    pub auth: &'static str,
    /// The tenant this request acts in.
    pub tenant: String,
    /// The only user the key may act for (`null`: any user of the tenant).
    pub user: Option<String>,
    /// `admin`, `tenant` (any user of its tenant), `user` (one user) or `local` (no-auth mode).
    pub role: &'static str,
    /// The companion's model (`null` when no LLM is configured: chat and summaries answer 503).
    pub llm: Option<LlmOut>,
    /// How to configure an LLM.
    pub llm_hint: &'static str,
    /// The forgetting policy.
    pub forgetting: PolicyOut,
    /// The embedding model of the store.
    pub embedding_model: String,
}
