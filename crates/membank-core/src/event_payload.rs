//! The events the stores write, built in one place so both backends log the same fields.
//!
//! Each constructor returns the [`NewEvent`] a store appends; the store adds nothing to it.
//! Times in a payload are written as RFC 3339 text, ids as their canonical text.

use serde_json::{Value, json};

use crate::event::{EventKind, NewEvent};
use crate::forgetting::ForgettingPolicy;
use crate::{Memory, MemoryId, Status, Timestamp};

/// `created`: where the memory's forgetting clock started and its first strength, so that
/// with the recalls that follow, its whole curve can be replayed from the log alone (the
/// clock may start at the event or at the write). `stored` gives a time as the store keeps
/// it (a store that keeps whole milliseconds cuts it).
pub fn created(memory: &Memory, stored: impl Fn(Timestamp) -> Timestamp) -> NewEvent {
    let derived: Vec<String> = memory.derived_from.iter().map(ToString::to_string).collect();
    let data = json!({
        "kind": memory.kind.as_str(),
        "source": memory.source.as_str(),
        "occurred_at": stored(memory.occurred_at).to_rfc3339(),
        "derived_from": derived,
        "clock_started_at": stored(memory.forgetting.last_recalled_at).to_rfc3339(),
        "strength": memory.forgetting.strength.get(),
    });
    NewEvent::about(memory.id, EventKind::Created, stored(memory.recorded_at), data)
}

/// `recalled`: the memory was returned at `rank` (1 is the best) for the query.
pub fn recalled(id: MemoryId, at: Timestamp, query_id: &str, rank: usize, score: f64) -> NewEvent {
    NewEvent::about(id, EventKind::Recalled, at, json!({ "query_id": query_id, "rank": rank, "score": score }))
}

/// How an archived memory came back ([`reminisced`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reminiscence<'a> {
    /// A strengthening recall found it in the archive, at `rank` (1 is the best) with `score`.
    Found {
        /// The recall's query id.
        query_id: &'a str,
        /// Its place in the recall's results.
        rank: usize,
        /// Its score there.
        score: f64,
    },
    /// A caller confirmed it was used in a reply (`recall_mode = "used"`, where the
    /// confirmation is the strengthening), naming the recall when it did.
    Used {
        /// The recall it came from, when the caller said.
        query_id: Option<&'a str>,
    },
}

/// `reminisced`: an archived memory came back with savings, found by a recall (`query_id`,
/// `rank`, `score`) or confirmed as used (`query_id` when given, `"confirmed_used": true`);
/// `data` is [`ForgettingPolicy::reminisce_event_data`]'s numbers (the savings).
pub fn reminisced(id: MemoryId, at: Timestamp, how: Reminiscence<'_>, mut data: Value) -> NewEvent {
    match how {
        Reminiscence::Found { query_id, rank, score } => {
            data["query_id"] = json!(query_id);
            data["rank"] = json!(rank);
            data["score"] = json!(score);
        }
        Reminiscence::Used { query_id } => {
            data["query_id"] = json!(query_id);
            data["confirmed_used"] = json!(true);
        }
    }
    NewEvent::about(id, EventKind::Reminisced, at, data)
}

/// What one strengthening did to a memory: Ebbinghaus strength and FadeMem's value, each
/// before and after, and the access frequency after.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strengthening<'a> {
    /// The recall that strengthened it, if any.
    pub query_id: Option<&'a str>,
    /// Strength `S` before.
    pub strength_before: f64,
    /// Strength `S` after.
    pub strength_after: f64,
    /// FadeMem's value `v` before, at the time of the strengthening.
    pub v_before: f64,
    /// FadeMem's value `v` after.
    pub v_after: f64,
    /// FadeMem's access frequency after.
    pub frequency_after: f64,
}

/// `strengthened`.
pub fn strengthened(id: MemoryId, at: Timestamp, change: &Strengthening<'_>) -> NewEvent {
    let data = json!({
        "query_id": change.query_id,
        "strength_before": change.strength_before,
        "strength_after": change.strength_after,
        "v_before": change.v_before,
        "v_after": change.v_after,
        "frequency_after": change.frequency_after,
    });
    NewEvent::about(id, EventKind::Strengthened, at, data)
}

/// `archived` at a person's request, with their reason.
pub fn archived_on_request(id: MemoryId, at: Timestamp, reason: &str) -> NewEvent {
    NewEvent::about(id, EventKind::Archived, at, json!({ "policy": "request", "reason": reason }))
}

/// `archived` with the data its decider gave (a sweep's assessment, a maintenance plan).
pub fn archived(id: MemoryId, at: Timestamp, data: Value) -> NewEvent {
    NewEvent::about(id, EventKind::Archived, at, data)
}

/// `restored` from `previous_status`; its forgetting clock had last started at `last_recalled_before`.
pub fn restored(id: MemoryId, at: Timestamp, previous_status: Status, last_recalled_before: Timestamp) -> NewEvent {
    let data = json!({
        "previous_status": previous_status.as_str(),
        "last_recalled_at_before": last_recalled_before.to_rfc3339(),
    });
    NewEvent::about(id, EventKind::Restored, at, data)
}

/// `pinned` or `unpinned`.
pub fn pinned(id: MemoryId, at: Timestamp, pinned: bool) -> NewEvent {
    let kind = if pinned { EventKind::Pinned } else { EventKind::Unpinned };
    NewEvent::about(id, kind, at, json!({}))
}

/// `swept`: one user's sweep, how many memories it examined, archived and held back.
pub fn swept(at: Timestamp, policy: &ForgettingPolicy, examined: usize, archived: usize, deferred: usize) -> NewEvent {
    let data = json!({
        "policy": policy.kind.as_str(),
        "mode": policy.mode.as_str(),
        "examined": examined,
        "archived": archived,
        "deferred": deferred,
    });
    NewEvent { memory_id: None, kind: EventKind::Swept, at, data }
}

/// `edited`: the new version of `previous`.
pub fn edited(id: MemoryId, at: Timestamp, previous: MemoryId) -> NewEvent {
    NewEvent::about(id, EventKind::Edited, at, json!({ "previous": previous.to_string() }))
}

/// `superseded` by an edit that made `by`.
pub fn superseded_by_edit(old: MemoryId, at: Timestamp, by: MemoryId) -> NewEvent {
    NewEvent::about(old, EventKind::Superseded, at, json!({ "by": by.to_string(), "reason": "edited" }))
}

/// `superseded` by a new summary or portrait `by`, from `previous_status`.
pub fn superseded_by_summary(old: MemoryId, at: Timestamp, by: MemoryId, previous_status: Status) -> NewEvent {
    let data = json!({ "by": by.to_string(), "previous_status": previous_status.as_str() });
    NewEvent::about(old, EventKind::Superseded, at, data)
}

/// `superseded` by `by` in a maintenance cycle (a merge or a conflict), with the cycle's
/// data and, when that data is an object, `by` and the previous status (active) added.
pub fn superseded_in_maintenance(old: MemoryId, at: Timestamp, by: MemoryId, mut data: Value) -> NewEvent {
    if let Some(object) = data.as_object_mut() {
        object.insert("by".into(), json!(by.to_string()));
        object.insert("previous_status".into(), json!("active"));
    }
    NewEvent::about(old, EventKind::Superseded, at, data)
}

/// `summarized`: a summary or portrait of `kind` made from `sources` memories, replacing
/// the earlier versions `replaces`.
pub fn summarized(id: MemoryId, at: Timestamp, kind: crate::Kind, sources: usize, replaces: &[MemoryId]) -> NewEvent {
    let replaced: Vec<String> = replaces.iter().map(ToString::to_string).collect();
    NewEvent::about(
        id,
        EventKind::Summarized,
        at,
        json!({ "kind": kind.as_str(), "sources": sources, "replaces": replaced }),
    )
}

/// `erased`, for the memory a person erased: what the erasure reached besides it.
pub fn erased(id: MemoryId, at: Timestamp, previous_status: Status, cascaded: &[MemoryId]) -> NewEvent {
    let cascaded: Vec<String> = cascaded.iter().map(ToString::to_string).collect();
    NewEvent::about(
        id,
        EventKind::Erased,
        at,
        json!({ "previous_status": previous_status.as_str(), "cascaded": cascaded }),
    )
}

/// `erased`, for a memory reached by the erasure of `cascade_of`.
pub fn erased_in_cascade(id: MemoryId, at: Timestamp, previous_status: Status, cascade_of: MemoryId) -> NewEvent {
    let data = json!({ "previous_status": previous_status.as_str(), "cascade_of": cascade_of.to_string() });
    NewEvent::about(id, EventKind::Erased, at, data)
}

/// `maintained`: one maintenance cycle's summary, with how many planned items it skipped
/// (added when the summary is an object).
pub fn maintained(at: Timestamp, mut summary: Value, skipped: usize) -> NewEvent {
    if let Some(object) = summary.as_object_mut() {
        object.insert("skipped_items".into(), json!(skipped));
    }
    NewEvent { memory_id: None, kind: EventKind::Maintained, at, data: summary }
}
