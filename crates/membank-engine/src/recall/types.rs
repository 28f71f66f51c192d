//! The request, response and settings of a recall, and how a hit's score was made.

use chrono::NaiveDate;
use membank_core::{InvalidInput, Kind, Memory, Scope, Timestamp};

/// Settings of the recall pipeline.
#[derive(Debug, Clone, Copy)]
pub struct RecallConfig {
    /// How many candidates each retriever contributes before fusion.
    pub candidates: usize,
    /// The RRF damping constant.
    pub rrf_k: f64,
    /// Weight of the dense list in fusion.
    pub dense_weight: f64,
    /// Weight of the lexical list in fusion.
    pub lexical_weight: f64,
    /// Multiply fused scores by retention (memories fading on the curve rank lower).
    pub weight_by_retention: bool,
    /// Fusion weight of each day-restricted list when the query names an exact date
    /// ("on May 4th", "yesterday"); 0 turns time boosts off (see `expansion`).
    pub exact_time_weight: f64,
    /// The same for vague spans ("a few days ago", "last week").
    pub fuzzy_time_weight: f64,
    /// Share of a transcript line's (a note's) score lent to the lines before and after
    /// it on its day (0: off).
    pub neighbour_weight: f64,
    /// Share of a turn's (a message to the agent, with or without its reply) score lent
    /// to the next turn of its day (0: off; see `expansion`).
    pub exchange_neighbour_weight: f64,
    /// When the query names a speaker of the candidates (their `speaker` metadata, as in a
    /// group conversation), their memories' scores are multiplied by `1 + speaker_weight`
    /// (0: off). A speaker is named when every word of the name is in the query.
    pub speaker_weight: f64,
    /// Fusion weight of the feedback ranking: a second dense search with the query moved
    /// towards its first results' vectors (0: off; see `feedback`).
    pub feedback_weight: f64,
    /// How many of the first results the feedback learns from.
    pub feedback_depth: usize,
    /// How far the query moves towards their mean vector (`q + α · mean`, normalised).
    pub feedback_alpha: f64,
    /// Each hit of a day already in the results multiplies a later hit's score by
    /// `1 − day_diversity`, so other days get through (0: off; see `feedback`).
    pub day_diversity: f64,
    /// Put the daily summary of the day(s) a query names ("on May 4th") first, then that
    /// day's turns (see `feedback`).
    pub day_summaries: bool,
    /// Search without the names of participants the query names (they are boosted by
    /// `speaker_weight` instead; see `feedback`).
    pub speaker_query: bool,
    /// With a model (`Engine::with_llm`): fusion weight of the rankings of the question
    /// rewritten by the model into up to three search queries (0: off; see `feedback`).
    pub query_rewrite_weight: f64,
    /// Reminiscence in `auto` mode (see [`Reminisce`]): the archive is consulted when its
    /// best cosine to the query is above the active memories' best by more than this.
    pub reminisce_margin: f64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            candidates: 150,
            rrf_k: membank_core::fusion::RRF_K,
            dense_weight: 1.0,
            lexical_weight: 1.0,
            weight_by_retention: false,
            exact_time_weight: 2.0,
            fuzzy_time_weight: 0.3,
            neighbour_weight: 0.4,
            exchange_neighbour_weight: 0.0,
            speaker_weight: 0.5,
            feedback_weight: 0.0,
            feedback_depth: 5,
            feedback_alpha: 1.0,
            day_diversity: 0.0,
            day_summaries: true,
            speaker_query: true,
            query_rewrite_weight: 0.0,
            reminisce_margin: DEFAULT_REMINISCE_MARGIN,
        }
    }
}

/// The default [`RecallConfig::reminisce_margin`]: 0, tuned on the tuning halves only
/// (LoCoMo conversations 0–4 and MemoryBank users 0–7; see the README): any archived memory
/// that matches the query better than the last active one that could be returned is worth
/// the ranking's second look. A positive margin consults less and loses more of what was
/// archived; a negative one consults even when the archive would only tie.
pub const DEFAULT_REMINISCE_MARGIN: f64 = 0.0;

/// Whether a recall consults the archive: archived memories stay searchable as a cold tier
/// (reminiscence). Superseded and erased memories are never consulted.
///
/// **The `auto` rule.** Before the ranking, one dense search over the person's memories
/// including the archived ones, with the query's vector and the recall's filters, takes its
/// first k + 16 candidates. `b` is the best cosine among the archived ones; `a_k` is the
/// cosine of the k-th best active one (k the recall's `k`), the weakest active memory that
/// could be returned on meaning. The active memories "do not answer well" when
/// `b > a_k + margin` ([`RecallConfig::reminisce_margin`]): some archived memory matches
/// better than an answer the recall would give; or when fewer than k active memories are
/// among the candidates and archived ones are. Then the ranking, by the same pipeline
/// (dense, BM25, fusion, time, selection), is made over the active and the archived
/// memories, and the archived hits it returns are marked [`RecallHit::reminisced`];
/// otherwise it is made over the active memories alone, exactly as with `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reminisce {
    /// Consult the archive when the active memories do not answer well (the default).
    #[default]
    Auto,
    /// Never: only active memories, as before reminiscence existed.
    Never,
    /// Always rank over the active and the archived memories.
    Always,
}

impl Reminisce {
    /// Every value, in declaration order.
    pub const ALL: &'static [Reminisce] = &[Reminisce::Auto, Reminisce::Never, Reminisce::Always];

    /// `auto`, `never` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reminisce::Auto => "auto",
            Reminisce::Never => "never",
            Reminisce::Always => "always",
        }
    }
}

impl std::fmt::Display for Reminisce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Reminisce {
    type Err = InvalidInput;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Reminisce::Auto),
            "never" => Ok(Reminisce::Never),
            "always" => Ok(Reminisce::Always),
            other => {
                let shown: String = other.chars().take(40).collect();
                let more = if other.chars().count() > 40 { "…" } else { "" };
                Err(InvalidInput::new("reminisce", format!("{shown:?}{more} is not one of: auto, never, always")))
            }
        }
    }
}

/// What reminiscence did in one recall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reminiscence {
    /// The mode the recall ran in.
    pub mode: Reminisce,
    /// Whether the archive was searched to decide (`auto` outside audits).
    pub probed: bool,
    /// Whether the ranking was made over the active and the archived memories.
    pub consulted: bool,
    /// How many of the returned hits came from the archive.
    pub archived_hits: usize,
    /// `a`: the best cosine among the active dense candidates (`auto`; `None` without any).
    pub active_best: Option<f64>,
    /// `a_k`: the cosine of the k-th active dense candidate, the bar `b` had to clear by the
    /// margin (`auto`; `None` when fewer than k active memories are candidates).
    pub active_bar: Option<f64>,
    /// `b`: the best cosine among the archived memories the probe found (`auto`; `None`
    /// when none was among its first candidates).
    pub archived_best: Option<f64>,
    /// The margin `b` had to exceed `a_k` by.
    pub margin: f64,
}

/// Find the memories relevant to a query.
#[derive(Debug, Clone)]
pub struct RecallRequest {
    /// Whose memories.
    pub scope: Scope,
    /// The query, usually the person's new message.
    pub query: String,
    /// How many results (1..=200).
    pub k: usize,
    /// The query's own time (default: now); strengthening happens at this time.
    pub now: Option<Timestamp>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only memories on or after this day.
    pub day_from: Option<NaiveDate>,
    /// Only memories on or before this day.
    pub day_to: Option<NaiveDate>,
    /// Include archived memories (audits; they are never strengthened).
    pub include_archived: bool,
    /// Override whether this recall strengthens what it returns (default: per policy).
    pub strengthen: Option<bool>,
    /// Override retention weighting (default: per configuration).
    pub weight_by_retention: Option<bool>,
    /// Whether to consult the archive (default `auto`; see [`Reminisce`]). An audit
    /// (`include_archived`) sees the archive anyway and never reminisces.
    pub reminisce: Reminisce,
}

impl RecallRequest {
    /// A plain recall of `k` memories for `query`.
    pub fn new(scope: Scope, query: impl Into<String>, k: usize) -> Self {
        Self {
            scope,
            query: query.into(),
            k,
            now: None,
            kinds: Vec::new(),
            day_from: None,
            day_to: None,
            include_archived: false,
            strengthen: None,
            weight_by_retention: None,
            reminisce: Reminisce::Auto,
        }
    }
}

/// One recalled memory with its own scores.
#[derive(Debug, Clone)]
pub struct RecallHit {
    /// The memory (after strengthening, if this recall strengthened it).
    pub memory: Memory,
    /// The fused score this hit was ranked by: see [`ScoreParts`] for how it was made.
    pub score: f64,
    /// Its cosine similarity to the query, if it was a dense candidate.
    pub dense: Option<f64>,
    /// Its BM25 score, if it was a lexical candidate.
    pub lexical: Option<f64>,
    /// The part of `score` lent by an adjacent turn that ranked well (neighbour expansion).
    pub neighbour: Option<f64>,
    /// Its retention at the query's time as `memory` is now, after this recall: 1 right
    /// after a strengthening recall under MemoryBank. The same as `retention_before` when
    /// this recall did not strengthen it.
    pub retention: f64,
    /// Its retention at the query's time before this recall: what retention weighting
    /// ranked it by.
    pub retention_before: f64,
    /// How `score` was made.
    pub parts: ScoreParts,
    /// Found in the archive by reminiscence: archived when this recall ranked it. A
    /// strengthening recall has brought it back (`memory.status` is then active again).
    /// Never set in an audit (`include_archived`).
    pub reminisced: bool,
}

/// How a hit's fused score was made:
/// `score = (dense + lexical + date + feedback + neighbour) × speaker × retention × diversity`.
/// A day's summary put first ([`ScoreParts::day_summary`]) is the exception: its score is
/// raised to the best of the others, so scores still never increase down the list.
///
/// Each ranking adds `weight / (k + rank)` ([`rank_share`](membank_core::fusion::rank_share)):
/// a rank share, not its cosine or BM25 value, which only decide the order within their own
/// ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreParts {
    /// Place in the dense ranking (cosine to the query), from 1, if it was in it.
    pub dense_rank: Option<usize>,
    /// What the dense ranking added.
    pub dense: f64,
    /// Place in the lexical ranking (BM25 over its words), from 1, if it was in it.
    pub lexical_rank: Option<usize>,
    /// What the lexical ranking added.
    pub lexical: f64,
    /// What the two rankings restricted to the days of the query's time expression added
    /// (0 without one).
    pub date: f64,
    /// What the second-stage rankings added: the feedback ranking and those of the
    /// model's rewritten queries (0 when off or not in them).
    pub feedback: f64,
    /// What an adjacent memory lent (neighbour expansion; 0 if none).
    pub neighbour: f64,
    /// The factor for a participant the query names (1 if none).
    pub speaker: f64,
    /// The factor of retention weighting: the retention before this recall, or 1 when off.
    pub retention: f64,
    /// The factor of day diversity: `(1 − day_diversity)` per hit of the same day ranked
    /// above this one (1 when off).
    pub diversity: f64,
    /// Put first as the summary of a day the query names; its score is then not made
    /// of the parts above (see [`ScoreParts`]).
    pub day_summary: bool,
}

/// The days a recall was restricted to (the caller's range) or boosted towards (a time
/// expression in the query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateFilter {
    /// First day, if bounded.
    pub from: Option<NaiveDate>,
    /// Last day, if bounded.
    pub to: Option<NaiveDate>,
    /// The time expression these days were read from ("May 4th"); `None` when the caller
    /// gave the days.
    pub from_query: Option<String>,
    /// True for a time expression: a boost (memories of these days rank first, the rest
    /// still follow); false for the caller's days: a filter (nothing else is returned).
    pub boost: bool,
    /// A strong boost (a named date, "yesterday") rather than a mild one ("last week").
    pub exact: bool,
    /// Set when the expression named a day without its year and this recall chose the year.
    pub year_inferred: Option<YearChoice>,
}

/// How a recall chose the year of a day named without one ("May 4th").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YearChoice {
    /// The most recent such day, not after the query's, on which the person has memories.
    LatestWithMemories,
    /// No such day has memories: the most recent one not after the query's day.
    Latest,
}

impl YearChoice {
    /// `latest_with_memories` or `latest`.
    pub fn as_str(self) -> &'static str {
        match self {
            YearChoice::LatestWithMemories => "latest_with_memories",
            YearChoice::Latest => "latest",
        }
    }
}

/// The result of a recall.
#[derive(Debug, Clone)]
pub struct RecallResponse {
    /// Identifies this recall in the event log.
    pub query_id: String,
    /// The query's time.
    pub now: Timestamp,
    /// Whether the returned memories were strengthened.
    pub strengthened: bool,
    /// Best first.
    pub results: Vec<RecallHit>,
    /// The days a time expression in the query referred to, if one was found and used.
    pub time_range: Option<(NaiveDate, NaiveDate)>,
    /// The days this recall was restricted to or boosted towards, and where they came from.
    pub date_filter: Option<DateFilter>,
    /// The RRF constant `k` the scores were fused with (see [`ScoreParts`]).
    pub rrf_k: f64,
    /// What reminiscence did.
    pub reminiscence: Reminiscence,
    /// Whether anything was ever stored for this user: `false` means no such user (a
    /// mistyped name, say), not a user whose memories did not match.
    pub user_known: bool,
}
