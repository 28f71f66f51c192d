//! Request shapes of the REST API (responses are in [`crate::wire`]). Unknown fields are
//! refused so a misspelt `asistant_text` is an error, not silently dropped data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::wire::{EventOut, MemoryOut};

/// `POST /v1/users/{user}/turns`: one exchange.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnIn {
    /// What the person said.
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub user_text: String,
    /// The assistant's reply.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub assistant_text: Option<String>,
    /// When it was said (RFC 3339; default now; at most a day in the future; a bare date
    /// `YYYY-MM-DD` is the person's local midnight, in the user's time zone).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
    /// Agent label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub agent: Option<String>,
    /// Session label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub session: Option<String>,
    /// Free-form string metadata.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// How much it matters, in [0, 1]: the base importance FadeMem's forgetting starts from
    /// (`metadata.importance_source` becomes `explicit`). Default: estimated from the text.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f64>,
    /// Where the memory's forgetting clock starts when `occurred_at` is in the past:
    /// `import` (default: when it is stored, so a migrated history starts fresh) or
    /// `event` (at `occurred_at`: an old exchange is old at once, and may already be past
    /// the archive threshold).
    #[serde(default)]
    #[schema(pattern = r"^(event|import)$")]
    pub clock_from: Option<String>,
}

/// `POST /v1/users/{user}/turns/batch`: several exchanges, stored in order.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnBatchIn {
    /// The turns (at most the configured batch size).
    #[schema(min_items = 1, max_items = 100)]
    pub turns: Vec<TurnIn>,
}

/// The ids a batch stored, in input order.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchOut {
    /// The stored memories.
    pub memories: Vec<MemoryOut>,
}

/// `POST /v1/users/{user}/notes`: a free-form fact.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteIn {
    /// The note.
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub text: String,
    /// Who said it: `agent` (default), `user` or `assistant`.
    #[serde(default)]
    #[schema(pattern = r"^(agent|user|assistant)$")]
    pub source: Option<String>,
    /// When it happened (RFC 3339; default now; a bare date `YYYY-MM-DD` is the person's
    /// local midnight, in the user's time zone).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
    /// Agent label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub agent: Option<String>,
    /// Session label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub session: Option<String>,
    /// Free-form string metadata.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// How much it matters, in [0, 1]: the base importance FadeMem's forgetting starts from
    /// (`metadata.importance_source` becomes `explicit`). Default: estimated from the text.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f64>,
    /// Where the memory's forgetting clock starts when `occurred_at` is in the past:
    /// `import` (default: when it is stored, so a migrated history starts fresh) or
    /// `event` (at `occurred_at`: an old exchange is old at once, and may already be past
    /// the archive threshold).
    #[serde(default)]
    #[schema(pattern = r"^(event|import)$")]
    pub clock_from: Option<String>,
}

/// `POST /v1/users/{user}/recall`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallIn {
    /// The query, usually the person's new message.
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub query: String,
    /// How many results (default 5, at most 200).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 200)]
    pub k: Option<u32>,
    /// The query's own time (RFC 3339; default now). Relative dates and strengthening use it.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub now: Option<String>,
    /// Only these kinds (`turn`, `note`, …).
    #[serde(default)]
    #[schema(inline, value_type = Option<Vec<KindName>>)]
    pub kinds: Option<Vec<String>>,
    /// Only memories on or after this day (YYYY-MM-DD).
    #[serde(default)]
    #[schema(format = Date)]
    pub from: Option<String>,
    /// Only memories on or before this day (YYYY-MM-DD).
    #[serde(default)]
    #[schema(format = Date)]
    pub to: Option<String>,
    /// Include archived memories (audits; never strengthened).
    #[serde(default)]
    pub include_archived: Option<bool>,
    /// `false`: inspect only, log and strengthen nothing. Default: per policy.
    #[serde(default)]
    pub strengthen: Option<bool>,
    /// Rank fading memories lower.
    #[serde(default)]
    pub weight_by_retention: Option<bool>,
    /// Whether to consult the archive (reminiscence): `auto` (default) when the active
    /// memories do not answer well (the best archived cosine to the query leads the best
    /// active one by more than `[recall] reminisce_margin`), `never`, or `always`. Hits
    /// from the archive carry `reminisced: true`, and a strengthening recall brings them
    /// back with savings. Ignored by audits (`include_archived`).
    #[serde(default)]
    #[schema(pattern = r"^(auto|never|always)$", example = "auto")]
    pub reminisce: Option<String>,
    /// Narrow to an agent label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub agent: Option<String>,
    /// Narrow to a session label.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*\S[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub session: Option<String>,
}

/// `PATCH /v1/users/{user}/memories/{id}`: new text. The old version is kept, superseded.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditIn {
    /// New text of a note.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub text: Option<String>,
    /// New words of the person, for a turn.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub user_text: Option<String>,
    /// New reply of the assistant, for a turn.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32768, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub assistant_text: Option<String>,
}

/// `POST /v1/users/{user}/sweep`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepIn {
    /// The sweep's time (RFC 3339; default now).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub now: Option<String>,
    /// Report only; change nothing.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Largest fraction of examined memories to archive in this pass (0..=1).
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub max_archive_fraction: Option<f64>,
}

/// `POST /v1/users/{user}/maintain`: one maintenance cycle now. The body is optional;
/// none (or an empty one) means a real cycle at the server's time.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MaintainIn {
    /// The cycle's time (RFC 3339; default now).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub now: Option<String>,
    /// Plan and report only: change nothing and make no LLM calls.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// `POST /v1/users/{user}/memories/used`: confirm memories were used (the `used` recall mode).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsedIn {
    /// Memory ids (at most the configured batch size).
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<String>,
    /// The recall they came from.
    #[serde(default)]
    pub query_id: Option<String>,
}

/// Query of `GET /v1/users/{user}/memories`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Comma-separated statuses: active (default), archived, superseded, erased.
    pub status: Option<String>,
    /// Comma-separated kinds.
    pub kind: Option<String>,
    /// Only pinned memories.
    pub pinned: Option<bool>,
    /// Only memories on or after this day (YYYY-MM-DD).
    #[param(pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub from: Option<String>,
    /// Only memories on or before this day (YYYY-MM-DD).
    #[param(pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub to: Option<String>,
    /// Page size (default 50, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Memories to skip.
    pub offset: Option<u32>,
    /// `newest` (default) or `oldest` first.
    #[param(pattern = r"^(newest|oldest)$")]
    pub order: Option<String>,
}

/// Query of `GET /v1/users/{user}/events`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// Only events about this memory.
    #[param(pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")]
    pub memory: Option<String>,
    /// Only events after this log position (`seq`; the last one of the previous page).
    pub after: Option<i64>,
    /// Page size (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<u32>,
}

/// Query of `POST …/forget`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForgetParams {
    /// Why (kept in the event log).
    #[param(min_length = 1, max_length = 1024, pattern = r"^[^\u0000]*\S[^\u0000]*$")]
    pub reason: Option<String>,
}

/// A page of events.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsOut {
    /// In log order (`seq` ascending).
    pub events: Vec<EventOut>,
}

/// A user of the tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserOut {
    /// The user id.
    pub user: String,
    /// IANA time zone its days are counted in.
    pub time_zone: String,
    /// First write.
    pub created_at: String,
}

/// `PATCH /v1/users/{user}`: the settings to change.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPatchIn {
    /// IANA time zone (`Europe/Lisbon`) the user's days are counted in from now on, and
    /// bare dates read in; the days of memories already stored keep their zone.
    #[schema(min_length = 1, max_length = 64)]
    pub time_zone: Option<String>,
}

/// The users of the caller's tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsersOut {
    /// In creation order.
    pub users: Vec<UserOut>,
}

/// `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthOut {
    /// `ok`, or what is not ready.
    pub status: String,
    /// `/healthz` only: `keys` when requests need an API key, `loopback` when this
    /// loopback-only server answers without one (so a page can ask for a key before it
    /// sends a request that would be refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<&'static str>,
}

/// `GET /v1/admin/check`: the database's integrity check.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckOut {
    /// No problem found.
    pub ok: bool,
    /// Problems found.
    pub problems: Vec<String>,
    /// Schema version of the file.
    pub schema_version: i64,
}

/// A memory kind.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum KindName {
    /// One exchange.
    Turn,
    /// A free-form note.
    Note,
    /// A day's summary.
    DailySummary,
    /// The overall summary.
    GlobalSummary,
    /// A day's personality sketch.
    DailyPortrait,
    /// The overall personality sketch.
    GlobalPortrait,
    /// A consolidation of several memories.
    Fused,
}

/// The `{user}` path segment.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct UserPath {
    /// The person the memories are about (trimmed; no control characters).
    #[param(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f/]*\S[^\u0000-\u001f\u007f-\u009f/]*$"
    )]
    pub user: String,
}

/// The `{user}` and `{id}` path segments.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MemoryPath {
    /// The person the memory is about.
    #[param(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f/]*\S[^\u0000-\u001f\u007f-\u009f/]*$"
    )]
    pub user: String,
    /// The memory id.
    #[param(pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")]
    pub id: String,
}

/// Query of `GET /v1/users/{user}/export`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// Include each memory's vector (and the model that made it) and the user's recent recall queries.
    pub vectors: Option<bool>,
}
