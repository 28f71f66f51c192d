//! JSON shapes of the LLM-backed operations (chat, summarize, profile), converted from
//! engine types. Used by the CLI's `--json` today and meant for the REST routes
//! (`POST /v1/users/{user}/chat`, `…/summarize`, `GET …/profile`), so each has one shape
//! everywhere. Fields are added, never renamed or removed.

use membank_engine::core::Memory;
use membank_engine::{ChatResponse, DayOutcome, DerivedOutcome, ProfileResponse, SummarizeResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::wire::{MemoryOut, rfc3339};

/// A memory the companion drew on, short form.
#[derive(Debug, Serialize, ToSchema)]
pub struct CitedOut {
    /// Its label in the prompt (`M1`, …).
    pub label: String,
    /// Memory id.
    pub id: String,
    /// `turn`, `note`, `daily_summary`, …
    pub kind: &'static str,
    /// Who said it.
    pub source: &'static str,
    /// Local day.
    pub day: String,
    /// When it was said.
    pub occurred_at: String,
    /// Its text.
    pub content: Option<String>,
    /// Its fused recall score (for recalled memories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The recall found it in the archive (reminiscence) and brought it back.
    pub reminisced: bool,
}

fn cited(label: String, m: &Memory, score: Option<f64>, reminisced: bool) -> CitedOut {
    CitedOut {
        reminisced,
        label,
        id: m.id.to_string(),
        kind: m.kind.as_str(),
        source: m.source.as_str(),
        day: m.day.to_string(),
        occurred_at: rfc3339(m.occurred_at),
        content: m.content.clone(),
        score,
    }
}

impl CitedOut {
    /// The `index`-th memory of the prompt (label `M{index+1}`) with its recall score.
    pub fn recalled(index: usize, hit: &membank_engine::RecallHit) -> Self {
        cited(format!("M{}", index + 1), &hit.memory, Some(hit.score), hit.reminisced)
    }
}

/// One companion reply.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatOut {
    /// The reply.
    pub reply: String,
    /// Memories the reply cites.
    pub used: Vec<CitedOut>,
    /// Memories put into the prompt, labelled in order.
    pub recalled: Vec<CitedOut>,
    /// Recalled memories left out to fit the model's window.
    pub omitted: usize,
    /// Ids strengthened by this exchange.
    pub strengthened: Vec<String>,
    /// `retrieved` or `used`.
    pub recall_mode: &'static str,
    /// The recall's id in the event log.
    pub query_id: String,
    /// The stored exchange.
    pub turn: MemoryOut,
    /// The model that replied.
    pub model: String,
    /// The prompt id.
    pub prompt: String,
}

impl From<&ChatResponse> for ChatOut {
    fn from(r: &ChatResponse) -> Self {
        Self {
            reply: r.reply.clone(),
            used: r
                .used
                .iter()
                .map(|c| {
                    let reminisced = r.recalled.iter().any(|h| h.memory.id == c.memory.id && h.reminisced);
                    cited(c.label.clone(), &c.memory, None, reminisced)
                })
                .collect(),
            recalled: r.recalled.iter().enumerate().map(|(i, h)| CitedOut::recalled(i, h)).collect(),
            omitted: r.omitted,
            strengthened: r.strengthened.iter().map(ToString::to_string).collect(),
            recall_mode: r.recall_mode.as_str(),
            query_id: r.query_id.clone(),
            turn: (&r.turn).into(),
            model: r.model.clone(),
            prompt: r.prompt.clone(),
        }
    }
}

/// What happened to one derived memory: `unchanged`, `made`, `archived` or `absent`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DerivedOut {
    /// The outcome.
    pub outcome: &'static str,
    /// The memory concerned (none when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The memory it superseded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
}

impl From<&DerivedOutcome> for DerivedOut {
    fn from(o: &DerivedOutcome) -> Self {
        let (outcome, id, replaced) = match o {
            DerivedOutcome::Unchanged(id) => ("unchanged", Some(id.to_string()), None),
            DerivedOutcome::Made { id, replaced } => ("made", Some(id.to_string()), replaced.map(|r| r.to_string())),
            DerivedOutcome::Archived(id) => ("archived", Some(id.to_string()), None),
            DerivedOutcome::Absent => ("absent", None, None),
        };
        Self { outcome, id, replaced }
    }
}

/// One day of a summarize run.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayOut {
    /// The day.
    pub day: String,
    /// Active turns and notes that day.
    pub sources: usize,
    /// Its summary.
    pub summary: DerivedOut,
    /// Its portrait.
    pub portrait: DerivedOut,
}

impl From<&DayOutcome> for DayOut {
    fn from(d: &DayOutcome) -> Self {
        Self {
            day: d.day.to_string(),
            sources: d.sources,
            summary: (&d.summary).into(),
            portrait: (&d.portrait).into(),
        }
    }
}

/// A summarize run.
#[derive(Debug, Serialize, ToSchema)]
pub struct SummarizeOut {
    /// Model calls made.
    pub llm_calls: usize,
    /// The model.
    pub model: String,
    /// Each day.
    pub days: Vec<DayOut>,
    /// The global summary.
    pub global_summary: DerivedOut,
    /// The global portrait.
    pub global_portrait: DerivedOut,
}

impl From<&SummarizeResponse> for SummarizeOut {
    fn from(r: &SummarizeResponse) -> Self {
        Self {
            llm_calls: r.llm_calls,
            model: r.model.clone(),
            days: r.days.iter().map(Into::into).collect(),
            global_summary: (&r.global_summary).into(),
            global_portrait: (&r.global_portrait).into(),
        }
    }
}

/// One day of a profile.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayProfileOut {
    /// The day.
    pub day: String,
    /// Its summary.
    pub summary: Option<MemoryOut>,
    /// Its portrait.
    pub portrait: Option<MemoryOut>,
}

/// A user's profile.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileOut {
    /// The global portrait.
    pub global_portrait: Option<MemoryOut>,
    /// The global summary.
    pub global_summary: Option<MemoryOut>,
    /// The days they draw on.
    pub days: Vec<DayProfileOut>,
}

impl From<&ProfileResponse> for ProfileOut {
    fn from(p: &ProfileResponse) -> Self {
        Self {
            global_portrait: p.global_portrait.as_ref().map(Into::into),
            global_summary: p.global_summary.as_ref().map(Into::into),
            days: p
                .days
                .iter()
                .map(|d| DayProfileOut {
                    day: d.day.to_string(),
                    summary: d.summary.as_ref().map(Into::into),
                    portrait: d.portrait.as_ref().map(Into::into),
                })
                .collect(),
        }
    }
}
