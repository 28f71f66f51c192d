//! The memory record and its small enumerations.
//!
//! A memory is one unit of recall: a dialogue turn (the user's words and the assistant's
//! reply, kept apart so a hallucinated reply never passes as the user's statement), a
//! note an agent chose to save, or a derived memory (summary, portrait, fusion) that
//! names what it was made from.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use crate::id::MemoryId;
use crate::scope::Scope;
use crate::text_enum::text_enum;
use crate::time::Timestamp;

pub use crate::state::{ClockFrom, ForgettingState, Layer};

text_enum!(
    /// What a memory is.
    Kind, "kind" {
        /// One exchange: the user's words and the assistant's reply.
        Turn = "turn",
        /// A free-form fact an agent chose to save.
        Note = "note",
        /// The event summary of one day.
        DailySummary = "daily_summary",
        /// A summary over all daily summaries.
        GlobalSummary = "global_summary",
        /// The personality sketch of one day.
        DailyPortrait = "daily_portrait",
        /// The personality sketch over all days.
        GlobalPortrait = "global_portrait",
        /// A consolidation of several memories.
        Fused = "fused",
    }
);

impl Kind {
    /// True for kinds made from other memories (they carry `derived_from`).
    pub fn is_derived(self) -> bool {
        !matches!(self, Kind::Turn | Kind::Note)
    }

    /// True for the kinds `summarize` makes and would make again (daily and global
    /// summaries and portraits).
    pub fn is_summary(self) -> bool {
        matches!(self, Kind::DailySummary | Kind::DailyPortrait | Kind::GlobalSummary | Kind::GlobalPortrait)
    }
}

text_enum!(
    /// Who said it: keeps an assistant's (possibly hallucinated) words apart from the user's.
    Source, "source" {
        /// The person said it.
        User = "user",
        /// The assistant said it (e.g. a note recording the assistant's statement).
        Assistant = "assistant",
        /// An agent chose to save it.
        Agent = "agent",
        /// membank derived it (summaries, portraits, fusions).
        Derived = "derived",
    }
);

text_enum!(
    /// Where a memory is in its lifecycle: active → archived (forgotten, restorable) →
    /// erased (content gone for good). Superseded memories were replaced by a fusion.
    Status, "status" {
        /// Recallable.
        Active = "active",
        /// Forgotten by the curve or by request; excluded from recall, restorable.
        Archived = "archived",
        /// Replaced by a consolidated memory; restorable.
        Superseded = "superseded",
        /// Content, vector and index rows removed at the person's request.
        Erased = "erased",
    }
);

/// One stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Stable random id.
    pub id: MemoryId,
    /// The scope it belongs to (tenant, user, and the agent/session labels it was written with).
    pub scope: Scope,
    /// What it is.
    pub kind: Kind,
    /// Who said it.
    pub source: Source,
    /// The text recalled and shown; `None` once erased.
    pub content: Option<String>,
    /// For turns: the user's words.
    pub user_text: Option<String>,
    /// For turns: the assistant's reply.
    pub assistant_text: Option<String>,
    /// When it was said (may be in the past for imported history).
    pub occurred_at: Timestamp,
    /// When membank stored it.
    pub recorded_at: Timestamp,
    /// Local calendar date of `occurred_at` in the user's time zone.
    pub day: NaiveDate,
    /// Forgetting numbers.
    pub forgetting: ForgettingState,
    /// Lifecycle state.
    pub status: Status,
    /// The fused memory that replaced this one, if any.
    pub superseded_by: Option<MemoryId>,
    /// The memories a derived memory was made from.
    pub derived_from: Vec<MemoryId>,
    /// Free-form string metadata (import keys, turn ids for evaluation; who said a turn of
    /// a group conversation under [`SPEAKER_KEY`]).
    pub metadata: BTreeMap<String, String>,
}

/// The metadata key naming who said a memory (a participant of a group conversation). The
/// search caches keep it beside each row, and search hits carry it, so that a recall learns
/// its candidates' speakers without reading their rows.
pub const SPEAKER_KEY: &str = "speaker";

impl Memory {
    /// A plain active memory for tests, benchmarks and examples: `content` said by the user
    /// at `at`, recorded at the same instant, on the UTC day of `at`, with a fresh forgetting
    /// state, no turn sides, no derivation and no metadata. Its id is generated for `at`.
    ///
    /// This is not how the engine writes memories (that validates the text, finds the day in
    /// the person's time zone and sets both sides of a turn); set the fields a fixture
    /// needs with struct update syntax: `Memory { source: Source::Agent, ..Memory::fixture(…) }`.
    pub fn fixture(scope: &Scope, kind: Kind, content: impl Into<String>, at: Timestamp) -> Self {
        Self {
            id: MemoryId::generate(at),
            scope: scope.clone(),
            kind,
            source: Source::User,
            content: Some(content.into()),
            user_text: None,
            assistant_text: None,
            occurred_at: at,
            recorded_at: at,
            day: at.date_naive(),
            forgetting: ForgettingState::new(at),
            status: Status::Active,
            superseded_by: None,
            derived_from: Vec::new(),
            metadata: BTreeMap::new(),
        }
    }
}

/// The text of a turn as stored in `content`: both sides, labelled.
pub fn turn_content(user_text: &str, assistant_text: Option<&str>) -> String {
    match assistant_text {
        Some(reply) if !reply.trim().is_empty() => format!("User: {user_text}\nAssistant: {reply}"),
        _ => format!("User: {user_text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_and_reject_unknown_values() {
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>().unwrap(), *kind);
        }
        for status in Status::ALL {
            assert_eq!(status.as_str().parse::<Status>().unwrap(), *status);
        }
        let err = "memo".parse::<Kind>().unwrap_err();
        assert!(err.reason.contains("turn, note"), "{err}");
    }

    #[test]
    fn a_fixture_is_an_active_memory_of_its_instant() {
        use chrono::TimeZone;
        let scope = Scope::user(crate::TenantId::default_tenant(), crate::UserId::new("ana").unwrap());
        let at = chrono::Utc.with_ymd_and_hms(2024, 5, 4, 23, 30, 0).unwrap();
        let memory = Memory::fixture(&scope, Kind::Note, "the violin", at);
        assert_eq!((memory.kind, memory.source, memory.status), (Kind::Note, Source::User, Status::Active));
        assert_eq!(memory.content.as_deref(), Some("the violin"));
        assert_eq!((memory.occurred_at, memory.recorded_at, memory.day.to_string()), (at, at, "2024-05-04".into()));
        assert_eq!(memory.forgetting, ForgettingState::new(at));
    }
}
