//! The request and the report of a maintenance cycle.

use membank_core::forgetting::PolicyKind;
use membank_core::{MemoryId, Scope, Timestamp};

/// Run one maintenance cycle over one user.
#[derive(Debug, Clone)]
pub struct MaintainRequest {
    /// Whose memories.
    pub scope: Scope,
    /// The cycle's time (default: now).
    pub now: Option<Timestamp>,
    /// Plan and report only: change nothing and make no LLM calls.
    pub dry_run: bool,
}

/// One near-duplicate absorbed by a newer copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Merge {
    /// The memory superseded.
    pub old: MemoryId,
    /// The copy that stays.
    pub by: MemoryId,
    /// Their cosine.
    pub similarity: f64,
    /// Their word overlap (Jaccard).
    pub overlap: f64,
}

/// What a cycle examined and did (or would do, on a dry run).
#[derive(Debug, Clone)]
pub struct MaintainReport {
    /// The user.
    pub user: String,
    /// The cycle's time.
    pub now: Timestamp,
    /// True when nothing was changed.
    pub dry_run: bool,
    /// The policy that decided archiving.
    pub policy: PolicyKind,
    /// Active memories examined.
    pub examined: usize,
    /// Memories moved to the long-term layer.
    pub promoted: usize,
    /// Memories moved back to the short-term layer.
    pub demoted: usize,
    /// Memories archived, with the numbers (lowest retention first).
    pub archived: Vec<membank_core::forgetting::Assessment>,
    /// Memories the per-pass cap kept this time.
    pub deferred: usize,
    /// Near-duplicates merged into a newer copy.
    pub merged: Vec<Merge>,
    /// Fused memories made (each from several sources).
    pub fused: Vec<MemoryId>,
    /// Conflicts decided (a memory superseded, or two merged into one).
    pub conflicts: usize,
    /// Base importances rated by the LLM.
    pub rated: usize,
    /// What was not done, and why (no LLM, a failed or malformed LLM answer, dry run).
    pub skipped: Vec<String>,
}
