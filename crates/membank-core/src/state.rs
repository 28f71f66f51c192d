//! The forgetting numbers a memory carries: its strength, its FadeMem layer, where its
//! clock starts, and the [`ForgettingState`] that holds them.
//!
//! They live apart from the memory record and from the two policies so that each of
//! those can name them without naming the other.

use crate::error::InvalidInput;
use crate::text_enum::text_enum;
use crate::time::Timestamp;

/// Memory strength S: finite and positive, so `exp(-t/S)` is always defined.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Strength(f64);

impl Strength {
    /// Strength of a new memory.
    pub const INITIAL: Strength = Strength(1.0);

    /// Validates a strength: finite and > 0.
    pub fn new(value: f64) -> Result<Self, InvalidInput> {
        if value.is_finite() && value > 0.0 {
            Ok(Self(value))
        } else {
            Err(InvalidInput::new("strength", format!("{value} must be a finite number above 0")))
        }
    }
    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
    /// One recall's worth stronger.
    pub fn strengthened(self) -> Self {
        Self(self.0 + 1.0)
    }
}

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
