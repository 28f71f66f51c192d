//! The append-only event log: what happened to which memory, when, and the numbers that
//! decided it. It answers "why did you forget X?" and tells *forgotten by design* from
//! *never happened*.
//!
//! Events never carry memory content, so erasing a memory's content leaves the log
//! content-free without rewriting it.

use std::fmt;
use std::str::FromStr;

use crate::error::InvalidInput;
use crate::id::{EventId, MemoryId};
use crate::time::Timestamp;

macro_rules! event_kinds {
    ($($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?) => {
        /// What happened.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind { $($(#[$vmeta])* $variant),+ }

        impl EventKind {
            /// Stable text form.
            pub fn as_str(self) -> &'static str {
                match self { $(EventKind::$variant => $text),+ }
            }
        }

        impl FromStr for EventKind {
            type Err = InvalidInput;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(EventKind::$variant),)+
                    other => Err(InvalidInput::new("event kind", format!("unknown event kind {other:?}"))),
                }
            }
        }
    };
}

event_kinds! {
    /// A memory was stored.
    Created = "created",
    /// A memory was returned by a recall (data: query id, rank, scores).
    Recalled = "recalled",
    /// A recall strengthened a memory (data: strength before/after).
    Strengthened = "strengthened",
    /// A memory was archived (data: policy, t, S, R, threshold or draw; or `request`).
    Archived = "archived",
    /// An archived memory was restored.
    Restored = "restored",
    /// A memory was pinned.
    Pinned = "pinned",
    /// A memory was unpinned.
    Unpinned = "unpinned",
    /// A memory's text was edited.
    Edited = "edited",
    /// A memory was replaced by a consolidation.
    Superseded = "superseded",
    /// A summary or portrait was made.
    Summarized = "summarized",
    /// A memory's content was erased at the person's request (a tombstone).
    Erased = "erased",
    /// A sweep ran over the scope (data: examined, archived, deferred).
    Swept = "swept",
    /// FadeMem: a memory moved to the long-term layer (data: importance, θ_promote, inputs).
    Promoted = "promoted",
    /// FadeMem: a memory moved back to the short-term layer (data: importance, θ_demote, inputs).
    Demoted = "demoted",
    /// A memory absorbed its near-duplicates (data: the rule, their ids and similarities).
    Merged = "merged",
    /// A fused memory was made from a cluster (data: sources, prompt, model).
    Fused = "fused",
    /// A conflict between two memories was decided (data: relation, winner, reason, prompt, model).
    Conflict = "conflict",
    /// A maintenance cycle ran over the scope (data: its counts).
    Maintained = "maintained",
    /// A strengthening recall returned an archived memory it found in the archive, and the
    /// memory came back with Ebbinghaus's savings (data: query id, rank, score,
    /// `strength_before`, `strength_after`, `strength_at_archive`, `archived_at` and
    /// FadeMem's `v` before, at archive and after).
    Reminisced = "reminisced",
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Stable id.
    pub id: EventId,
    /// Position in the store's log; assigned by the store, increasing.
    pub seq: i64,
    /// The memory concerned (none for scope-level events such as a sweep).
    pub memory_id: Option<MemoryId>,
    /// What happened.
    pub kind: EventKind,
    /// When (the engine clock's now).
    pub at: Timestamp,
    /// The numbers behind it, as a JSON object. Never memory content.
    pub data: serde_json::Value,
}

/// An event about to be appended (the store assigns `seq`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The memory concerned.
    pub memory_id: Option<MemoryId>,
    /// What happened.
    pub kind: EventKind,
    /// When.
    pub at: Timestamp,
    /// The numbers behind it.
    pub data: serde_json::Value,
}

impl NewEvent {
    /// An event about one memory.
    pub fn about(memory_id: MemoryId, kind: EventKind, at: Timestamp, data: serde_json::Value) -> Self {
        Self { memory_id: Some(memory_id), kind, at, data }
    }
}
