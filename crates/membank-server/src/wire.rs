//! JSON shapes of memories, recalls, sweeps and events, converted from engine types.
//!
//! Shapes are stable: fields are added, never renamed or removed. Times are RFC 3339 in
//! UTC; days are `YYYY-MM-DD` in the user's time zone.

use membank_engine::core::Memory;
use membank_engine::core::event::Event;
use membank_engine::core::forgetting::{ArchiveReason, Assessment};
use membank_engine::{ListResponse, MaintainReport, RecallHit, RecallResponse, SweepReport};
use serde::Serialize;
use utoipa::ToSchema;

/// A memory on the wire.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryOut {
    /// Stable id.
    pub id: String,
    /// `turn`, `note`, …
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// Who said it.
    #[schema(value_type = String)]
    pub source: &'static str,
    /// The recalled text (`null` once erased).
    pub content: Option<String>,
    /// For turns: the person's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_text: Option<String>,
    /// For turns: the assistant's reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant_text: Option<String>,
    /// Local calendar day.
    pub day: String,
    /// When it was said.
    pub occurred_at: String,
    /// When it was stored.
    pub recorded_at: String,
    /// Lifecycle state.
    #[schema(value_type = String)]
    pub status: &'static str,
    /// Strength S.
    pub strength: f64,
    /// Recalls so far.
    pub recall_count: u32,
    /// Last recall (or `occurred_at`).
    pub last_recalled_at: String,
    /// Never decays when true.
    pub pinned: bool,
    /// FadeMem layer: `short` or `long` (kept up to date by maintenance under either policy).
    #[schema(value_type = String)]
    pub layer: &'static str,
    /// Importance in [0, 1], as of the last maintenance cycle (at first: the base importance).
    pub importance: f64,
    /// Importance at ingestion in [0, 1]; `metadata.importance_source` says who set it.
    pub base_importance: f64,
    /// FadeMem: the effective age in days kept through the last access (strength is
    /// `exp(-λ·(fade_age + days since last_recalled_at)^β)`).
    pub fade_age: f64,
    /// FadeMem: recall count decayed with time, as of the last access.
    pub access_frequency: f64,
    /// The user it belongs to.
    pub user: String,
    /// Agent label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Session label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Provenance of derived memories.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived_from: Vec<String>,
    /// Free-form metadata.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metadata: std::collections::BTreeMap<String, String>,
}

impl From<&Memory> for MemoryOut {
    fn from(m: &Memory) -> Self {
        Self {
            id: m.id.to_string(),
            kind: m.kind.as_str(),
            source: m.source.as_str(),
            content: m.content.clone(),
            user_text: m.user_text.clone(),
            assistant_text: m.assistant_text.clone(),
            day: m.day.to_string(),
            occurred_at: rfc3339(m.occurred_at),
            recorded_at: rfc3339(m.recorded_at),
            status: m.status.as_str(),
            strength: m.forgetting.strength.get(),
            recall_count: m.forgetting.recall_count,
            last_recalled_at: rfc3339(m.forgetting.last_recalled_at),
            pinned: m.forgetting.pinned,
            layer: m.forgetting.layer.as_str(),
            importance: m.forgetting.importance,
            base_importance: m.forgetting.base_importance,
            fade_age: m.forgetting.fade_age,
            access_frequency: m.forgetting.access_frequency,
            user: m.scope.user.to_string(),
            agent: m.scope.agent.as_ref().map(ToString::to_string),
            session: m.scope.session.as_ref().map(ToString::to_string),
            derived_from: m.derived_from.iter().map(ToString::to_string).collect(),
            metadata: m.metadata.clone(),
        }
    }
}

/// A memory with its retention now.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryWithRetention {
    /// The memory.
    #[serde(flatten)]
    pub memory: MemoryOut,
    /// Retention now under the configured policy: MemoryBank's `exp(-t/S)` or FadeMem's
    /// `v0·exp(-λ·Δt^β)` (1 when pinned).
    pub retention: f64,
    /// True when the memory is active, not pinned, and its retention is already below the
    /// archive threshold: the next sweep archives it (a history imported with its clock
    /// from its own dates often is).
    pub past_threshold: bool,
}

impl MemoryWithRetention {
    /// `memory` with its retention now, marked when it is past `archive_below`.
    pub fn new(memory: &Memory, retention: f64, archive_below: Option<f64>) -> Self {
        let past_threshold = membank_engine::core::forgetting::past_threshold(
            archive_below,
            memory.status,
            &memory.forgetting,
            retention,
        );
        Self { memory: memory.into(), retention, past_threshold }
    }
}

/// One recall result: the memory as it is after this recall (`strength`,
/// `last_recalled_at` and `retention` describe one moment), with its scores.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecallHitOut {
    /// The memory, after this recall's strengthening if it strengthened.
    #[serde(flatten)]
    pub memory: MemoryOut,
    /// The fused score this hit was ranked by: reciprocal rank fusion, the sum over the
    /// rankings the memory is in of `weight / (k + rank)` with k = 60 (first place in one
    /// ranking adds 1/61 ≈ 0.0164), plus a neighbour's loan, times a named speaker's boost
    /// and, when asked, `retention_before`. `score_parts` holds each term.
    pub score: f64,
    /// Its cosine similarity to the query, if a dense candidate (it decides `dense_rank`).
    pub dense_score: Option<f64>,
    /// Its BM25 score, if a lexical candidate (it decides `lexical_rank`).
    pub lexical_score: Option<f64>,
    /// Its retention at the query's time after this recall (1 just after a strengthening
    /// recall under MemoryBank); equal to `retention_before` when it was not strengthened.
    pub retention: f64,
    /// Its retention at the query's time before this recall (what `weight_by_retention`
    /// ranks by).
    pub retention_before: f64,
    /// The part of `score` lent by an adjacent turn (neighbour expansion), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neighbour_score: Option<f64>,
    /// Its place in the dense ranking (cosine), from 1, if it was in it.
    pub dense_rank: Option<usize>,
    /// Its place in the lexical ranking (BM25), from 1, if it was in it.
    pub lexical_rank: Option<usize>,
    /// How `score` was made.
    pub score_parts: ScorePartsOut,
    /// Found in the archive by reminiscence: archived when this recall ranked it (a
    /// strengthening recall has brought it back, so `status` is then `active`). Always
    /// false in an audit (`include_archived`).
    pub reminisced: bool,
}

/// The terms of a recall score:
/// `score = (dense + lexical + date + feedback + neighbour) × speaker × retention × diversity`,
/// except a day's summary put first (`day_summary`), whose score is raised to the best of the
/// others.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScorePartsOut {
    /// Added by the dense ranking: `weight / (k + dense_rank)` (0 if not in it).
    pub dense: f64,
    /// Added by the lexical ranking: `weight / (k + lexical_rank)` (0 if not in it).
    pub lexical: f64,
    /// Added by the two rankings restricted to the days of the query's time expression (0 without one).
    pub date: f64,
    /// Added by the second-stage rankings: vector feedback and the model's rewritten
    /// queries (`[recall] feedback_weight`, `query_rewrite_weight`; 0 when off).
    pub feedback: f64,
    /// Lent by an adjacent memory (0 if none).
    pub neighbour: f64,
    /// Factor for a participant the query names (1 if none).
    pub speaker: f64,
    /// Factor of retention weighting: `retention_before`, or 1 when off.
    pub retention: f64,
    /// Factor of day diversity (`[recall] day_diversity`; 1 when off).
    pub diversity: f64,
    /// Put first as the summary of a day the query names ("what did we talk about on May 4th?").
    pub day_summary: bool,
}

impl From<&RecallHit> for RecallHitOut {
    fn from(h: &RecallHit) -> Self {
        let p = &h.parts;
        Self {
            memory: (&h.memory).into(),
            score: h.score,
            dense_score: h.dense,
            lexical_score: h.lexical,
            retention: h.retention,
            retention_before: h.retention_before,
            neighbour_score: h.neighbour,
            dense_rank: p.dense_rank,
            lexical_rank: p.lexical_rank,
            score_parts: ScorePartsOut {
                dense: p.dense,
                lexical: p.lexical,
                date: p.date,
                feedback: p.feedback,
                neighbour: p.neighbour,
                speaker: p.speaker,
                retention: p.retention,
                diversity: p.diversity,
                day_summary: p.day_summary,
            },
            reminisced: h.reminisced,
        }
    }
}

/// What reminiscence did in a recall:
/// `{"mode","probed","consulted","archived_hits","active_best","active_bar","archived_best","margin"}`.
///
/// In `auto` mode, before the ranking, one dense search with the archive admitted takes the
/// first k + 16 candidates: `archived_best` (`b`) is the best archived cosine among them,
/// `active_bar` (`a_k`) the cosine of the k-th active one, and the archive is consulted when
/// `b > active_bar + margin` (or when fewer than k of the candidates are active and some are
/// archived). Consulted, the ranking is made over the active and the archived memories and
/// the archived hits are `reminisced`; otherwise over the active memories alone.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReminiscenceOut {
    /// `auto`, `never` or `always`: the mode the recall ran in.
    #[schema(value_type = String, pattern = r"^(auto|never|always)$")]
    pub mode: &'static str,
    /// Whether the archive was searched to decide (`auto`, outside audits).
    pub probed: bool,
    /// Whether the ranking was made over the active and the archived memories.
    pub consulted: bool,
    /// How many of the results came from the archive (`reminisced`).
    pub archived_hits: usize,
    /// `a`: the best cosine among the active dense candidates (`auto`; null without any).
    pub active_best: Option<f64>,
    /// `a_k`: the cosine of the k-th active dense candidate, the bar (`auto`; null when
    /// fewer than k active memories are candidates).
    pub active_bar: Option<f64>,
    /// `b`: the best cosine among the archived memories the probe found (`auto`; null when
    /// none was among its first candidates).
    pub archived_best: Option<f64>,
    /// The lead `b` needed over `a_k` (`[recall] reminisce_margin`).
    pub margin: f64,
}

impl From<&membank_engine::Reminiscence> for ReminiscenceOut {
    fn from(r: &membank_engine::Reminiscence) -> Self {
        Self {
            mode: r.mode.as_str(),
            probed: r.probed,
            consulted: r.consulted,
            archived_hits: r.archived_hits,
            active_best: r.active_best,
            active_bar: r.active_bar,
            archived_best: r.archived_best,
            margin: r.margin,
        }
    }
}

/// The days a recall was restricted to or boosted towards.
#[derive(Debug, Serialize, ToSchema)]
pub struct DateFilterOut {
    /// First day (YYYY-MM-DD), if bounded.
    pub from: Option<String>,
    /// Last day (YYYY-MM-DD), if bounded.
    pub to: Option<String>,
    /// The time expression in the query the days were read from (`"May 4th"`); absent when
    /// the caller gave `from`/`to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_query: Option<String>,
    /// `boost` (a time expression: memories of these days rank first, others still follow)
    /// or `filter` (the caller's `from`/`to`: nothing else is returned).
    #[schema(value_type = String)]
    pub mode: &'static str,
    /// A strong boost (a named date, "yesterday") rather than a mild one ("last week").
    pub exact: bool,
    /// Present when the query named a day without its year and the recall chose the year:
    /// `latest_with_memories` (the most recent such day, not after `now`, on which the user
    /// has memories) or `latest` (none has: the most recent one not after `now`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub year_inferred: Option<&'static str>,
}

/// A recall's answer: `{"query_id", "now", "strengthened", "results": [...], "reminiscence": {...}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecallOut {
    /// Identifies the recall in the event log.
    pub query_id: String,
    /// The query's time.
    pub now: String,
    /// Whether the results were strengthened.
    pub strengthened: bool,
    /// Best first.
    pub results: Vec<RecallHitOut>,
    /// The days a time expression in the query referred to (`[from, to]`, the days whose
    /// memories were boosted or kept); `null` when the query named no time.
    pub time_range: Option<[String; 2]>,
    /// The days the recall was restricted to or boosted towards, and where they came from
    /// (the query's words, or `from`/`to`); `null` when it looked at every day alike.
    pub date_filter: Option<DateFilterOut>,
    /// Whether the archive was consulted, and the scores that decided it.
    pub reminiscence: ReminiscenceOut,
    /// Whether anything was ever stored for this user; `false` means no such user (a
    /// mistyped name, say), not memories that did not match.
    pub user_known: bool,
}

impl From<&RecallResponse> for RecallOut {
    fn from(r: &RecallResponse) -> Self {
        Self {
            query_id: r.query_id.clone(),
            now: rfc3339(r.now),
            strengthened: r.strengthened,
            results: r.results.iter().map(Into::into).collect(),
            time_range: r.time_range.map(|(from, to)| [from.to_string(), to.to_string()]),
            date_filter: r.date_filter.as_ref().map(|d| DateFilterOut {
                from: d.from.map(|day| day.to_string()),
                to: d.to.map(|day| day.to_string()),
                from_query: d.from_query.clone(),
                mode: if d.boost { "boost" } else { "filter" },
                exact: d.exact,
                year_inferred: d.year_inferred.map(|y| y.as_str()),
            }),
            reminiscence: (&r.reminiscence).into(),
            user_known: r.user_known,
        }
    }
}

/// A page of memories.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListOut {
    /// When retention was computed.
    pub now: String,
    /// The memories.
    pub memories: Vec<MemoryWithRetention>,
    /// Counts per status over the whole scope.
    pub counts: CountsOut,
    /// The retention below which the next sweep archives an active, unpinned memory
    /// (θ, or FadeMem's ε); absent when the policy does not archive by a threshold.
    pub archive_below: Option<f64>,
    /// How many of the listed memories are past it.
    pub past_threshold: usize,
    /// Whether anything was ever stored for this user (`false`: no such user).
    pub user_known: bool,
}

/// Counts per status.
#[derive(Debug, Serialize, ToSchema)]
pub struct CountsOut {
    /// Recallable.
    pub active: u64,
    /// Forgotten, restorable.
    pub archived: u64,
    /// Replaced by a fusion.
    pub superseded: u64,
    /// Erased.
    pub erased: u64,
}

impl From<&ListResponse> for ListOut {
    fn from(l: &ListResponse) -> Self {
        Self {
            now: rfc3339(l.now),
            memories: l.memories.iter().map(|(m, r)| MemoryWithRetention::new(m, *r, l.archive_below)).collect(),
            counts: CountsOut {
                active: l.counts.active,
                archived: l.counts.archived,
                superseded: l.counts.superseded,
                erased: l.counts.erased,
            },
            archive_below: l.archive_below,
            past_threshold: l
                .memories
                .iter()
                .filter(|(m, r)| MemoryWithRetention::new(m, *r, l.archive_below).past_threshold)
                .count(),
            user_known: l.user_known,
        }
    }
}

/// One archived memory in a sweep report, with the numbers that decided it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ArchivedOut {
    /// The memory.
    pub id: String,
    /// Time since last recall, in policy units (FadeMem: the effective age in days).
    pub t: f64,
    /// Strength S (FadeMem: `v0`, which is 1).
    #[serde(rename = "S")]
    pub strength: f64,
    /// Retention R (FadeMem: `v` now).
    #[serde(rename = "R")]
    pub retention: f64,
    /// `threshold`, `stochastic` or `fademem`.
    #[schema(value_type = String)]
    pub mode: &'static str,
    /// The threshold θ in threshold mode, ε under FadeMem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The draw, in stochastic mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw: Option<f64>,
}

impl From<&Assessment> for ArchivedOut {
    fn from(a: &Assessment) -> Self {
        let (mode, threshold, draw) = match a.archive {
            Some(ArchiveReason::Threshold { theta }) => ("threshold", Some(theta), None),
            Some(ArchiveReason::Draw { draw, .. }) => ("stochastic", None, Some(draw)),
            Some(ArchiveReason::Faded { epsilon, .. }) => ("fademem", Some(epsilon), None),
            None => ("none", None, None),
        };
        ArchivedOut {
            id: a.id.to_string(),
            t: a.elapsed_units,
            strength: a.strength,
            retention: a.retention,
            mode,
            threshold,
            draw,
        }
    }
}

/// One near-duplicate merged into a newer copy.
#[derive(Debug, Serialize, ToSchema)]
pub struct MergedOut {
    /// The memory superseded.
    pub id: String,
    /// The copy that stays.
    pub by: String,
    /// Their cosine.
    pub similarity: f64,
    /// Their word overlap.
    pub overlap: f64,
}

/// One maintenance cycle's report for one user. The counts are those of
/// `{"users","examined","promoted","demoted","archived","merged","fused","conflicts","skipped"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MaintainOut {
    /// The user.
    pub user: String,
    /// The cycle's time.
    pub now: String,
    /// True when nothing was changed.
    pub dry_run: bool,
    /// `memorybank` or `fademem`: the policy that decided archiving.
    #[schema(value_type = String)]
    pub policy: &'static str,
    /// Active memories examined.
    pub examined: usize,
    /// Moved to the long-term layer.
    pub promoted: usize,
    /// Moved back to the short-term layer.
    pub demoted: usize,
    /// How many were archived (or would be).
    pub archived: usize,
    /// Near-duplicates merged.
    pub merged: usize,
    /// Fused memories made.
    pub fused: usize,
    /// Conflicts decided.
    pub conflicts: usize,
    /// Base importances rated by the LLM.
    pub rated: usize,
    /// Held back by the per-pass cap.
    pub deferred: usize,
    /// What was not done, and why.
    pub skipped: Vec<String>,
    /// The archived memories with the numbers that decided it.
    pub archived_memories: Vec<ArchivedOut>,
    /// The merges.
    pub merges: Vec<MergedOut>,
    /// Ids of the fused memories made.
    pub fused_memories: Vec<String>,
}

impl From<&MaintainReport> for MaintainOut {
    fn from(r: &MaintainReport) -> Self {
        Self {
            user: r.user.clone(),
            now: rfc3339(r.now),
            dry_run: r.dry_run,
            policy: r.policy.as_str(),
            examined: r.examined,
            promoted: r.promoted,
            demoted: r.demoted,
            archived: r.archived.len(),
            merged: r.merged.len(),
            fused: r.fused.len(),
            conflicts: r.conflicts,
            rated: r.rated,
            deferred: r.deferred,
            skipped: r.skipped.clone(),
            archived_memories: r.archived.iter().map(Into::into).collect(),
            merges: r
                .merged
                .iter()
                .map(|m| MergedOut {
                    id: m.old.to_string(),
                    by: m.by.to_string(),
                    similarity: m.similarity,
                    overlap: m.overlap,
                })
                .collect(),
            fused_memories: r.fused.iter().map(ToString::to_string).collect(),
        }
    }
}

/// Several users' cycles and their totals:
/// `{"users":N,"examined":…,"promoted":…,"demoted":…,"archived":…,"merged":…,"fused":…,"conflicts":…,"skipped":[…],"reports":[…]}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MaintainAllOut {
    /// Users visited.
    pub users: usize,
    /// Active memories examined, in total.
    pub examined: usize,
    /// Promoted, in total.
    pub promoted: usize,
    /// Demoted, in total.
    pub demoted: usize,
    /// Archived, in total.
    pub archived: usize,
    /// Merged, in total.
    pub merged: usize,
    /// Fused memories made, in total.
    pub fused: usize,
    /// Conflicts decided, in total.
    pub conflicts: usize,
    /// What was not done, each prefixed with its user.
    pub skipped: Vec<String>,
    /// Each user's report.
    pub reports: Vec<MaintainOut>,
}

impl MaintainAllOut {
    /// Totals over the given reports.
    pub fn from_reports(reports: &[MaintainReport]) -> Self {
        let outs: Vec<MaintainOut> = reports.iter().map(Into::into).collect();
        Self {
            users: outs.len(),
            examined: outs.iter().map(|o| o.examined).sum(),
            promoted: outs.iter().map(|o| o.promoted).sum(),
            demoted: outs.iter().map(|o| o.demoted).sum(),
            archived: outs.iter().map(|o| o.archived).sum(),
            merged: outs.iter().map(|o| o.merged).sum(),
            fused: outs.iter().map(|o| o.fused).sum(),
            conflicts: outs.iter().map(|o| o.conflicts).sum(),
            skipped: outs.iter().flat_map(|o| o.skipped.iter().map(move |s| format!("{}: {s}", o.user))).collect(),
            reports: outs,
        }
    }
}

/// A sweep's report.
#[derive(Debug, Serialize, ToSchema)]
pub struct SweepOut {
    /// The sweep's time.
    pub now: String,
    /// True when nothing was changed.
    pub dry_run: bool,
    /// Active memories examined.
    pub examined: usize,
    /// Archived (or would be).
    pub archived: Vec<ArchivedOut>,
    /// Held back by the per-pass cap.
    pub deferred: usize,
    /// Examined minus archived.
    pub kept: usize,
}

impl From<&SweepReport> for SweepOut {
    fn from(r: &SweepReport) -> Self {
        Self {
            now: rfc3339(r.now),
            dry_run: r.dry_run,
            examined: r.examined,
            archived: r.archived.iter().map(Into::into).collect(),
            deferred: r.deferred,
            kept: r.kept,
        }
    }
}

/// One event of the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventOut {
    /// Position in the store's log, shared by all users: it grows, skipping other users'
    /// events. The cursor `after` takes.
    pub seq: i64,
    /// Stable id.
    pub id: String,
    /// What happened.
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// The memory concerned.
    pub memory_id: Option<String>,
    /// When it took effect (an operation given an earlier `now` is logged after events it
    /// precedes, so log order and time order can differ).
    pub at: String,
    /// The numbers behind it.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

impl From<&Event> for EventOut {
    fn from(e: &Event) -> Self {
        Self {
            seq: e.seq,
            id: e.id.to_string(),
            kind: e.kind.as_str(),
            memory_id: e.memory_id.map(|id| id.to_string()),
            at: rfc3339(e.at),
            data: e.data.clone(),
        }
    }
}

/// RFC 3339 in UTC with millisecond precision and a `Z`.
pub fn rfc3339(t: membank_engine::core::Timestamp) -> String {
    t.to_rfc3339_opts(membank_engine::core::time::SecondsFormat::Millis, true)
}
