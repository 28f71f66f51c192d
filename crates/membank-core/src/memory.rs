//! The memory record and its small enumerations.
//!
//! A memory is one unit of recall: a dialogue turn (the user's words and the assistant's
//! reply, kept apart so a hallucinated reply never passes as the user's statement), a
//! note an agent chose to save, or a derived memory (summary, portrait, fusion) that
//! names what it was made from.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::NaiveDate;

use crate::forgetting::Strength;
use crate::id::MemoryId;
use crate::time::Timestamp;
use crate::{InvalidInput, Scope};

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The stable text form used in storage, JSON and flags.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = InvalidInput;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim() {
                    $($text => Ok($name::$variant),)+
                    other => Err(InvalidInput::new($field, format!(
                        "{:?} is not one of: {}", crate::id::truncate(other, 40),
                        [$($text),+].join(", ")))),
                }
            }
        }
    };
}

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

text_enum!(
    /// FadeMem's memory layer.
    Layer, "layer" {
        /// Short-term: decays faster.
        Short = "short",
        /// Long-term: decays slower.
        Long = "long",
    }
);

text_enum!(
    /// Where a written memory's forgetting clock starts when the memory is about the past
    /// (an imported history, a backdated `remember`): the time `t` in `R = exp(-t/S)`
    /// counts from then.
    #[derive(Default)]
    ClockFrom, "clock_from" {
        /// From the event's own date: a memory of an exchange a year ago is a year old at
        /// once, as in the MemoryBank paper's replay (and usually past the threshold).
        Event = "event",
        /// From when membank stores it (the default): a migrated history starts as fresh
        /// as a new memory and fades from the import on.
        #[default]
        Import = "import",
    }
);

/// The numbers the forgetting policies work on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForgettingState {
    /// Memory strength S; starts at 1 and grows by 1 with each recall.
    pub strength: Strength,
    /// How often it was recalled.
    pub recall_count: u32,
    /// The last recall, or `occurred_at` if never recalled.
    pub last_recalled_at: Timestamp,
    /// Pinned memories never decay.
    pub pinned: bool,
    /// FadeMem layer.
    pub layer: Layer,
    /// FadeMem importance in [0, 1], as of the last maintenance cycle.
    pub importance: f64,
    /// FadeMem: the effective age in days the memory kept through its last access (0 for a
    /// new memory; a recall makes it younger). Its strength is `exp(-λ·(age + days since)^β)`.
    pub fade_age: f64,
    /// FadeMem: the recall count, decayed with time, as of the last access.
    pub access_frequency: f64,
    /// Importance at ingestion, in [0, 1]: given by the caller, rated by an LLM, or estimated.
    pub base_importance: f64,
    /// FadeMem: a factor on the decay rate λ (1; more for the loser of a conflict, less
    /// for a fused memory).
    pub decay_factor: f64,
}

impl ForgettingState {
    /// The state of a memory that has just been made about something at `occurred_at`.
    pub fn new(occurred_at: Timestamp) -> Self {
        Self {
            strength: Strength::INITIAL,
            recall_count: 0,
            last_recalled_at: occurred_at,
            pinned: false,
            layer: Layer::Short,
            importance: 0.5,
            fade_age: 0.0,
            access_frequency: 0.0,
            base_importance: 0.5,
            decay_factor: 1.0,
        }
    }

    /// The state of a memory about something at `occurred_at`, stored at `stored_at`, with
    /// its clock starting where `clock_from` says (never before the event itself).
    pub fn starting(occurred_at: Timestamp, stored_at: Timestamp, clock_from: ClockFrom) -> Self {
        match clock_from {
            ClockFrom::Event => Self::new(occurred_at),
            ClockFrom::Import => Self::new(occurred_at.max(stored_at)),
        }
    }
}

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
    /// Free-form string metadata (import keys, turn ids for evaluation).
    pub metadata: BTreeMap<String, String>,
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
}
