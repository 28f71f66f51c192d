//! Handlers of `/v1/users/{user}/…`: parse (through the extractors), resolve the scope
//! from the authenticated caller, run the engine operation on the blocking pool, convert
//! to wire types. No rule lives here that the engine also enforces, except the server's
//! own (possibly tighter) limits.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use membank_engine::core::time::parse_day;
use membank_engine::core::{ClockFrom, InvalidInput, Kind, MemoryId, Scope, Source, Status, Timestamp};
use membank_engine::{
    EditRequest, Engine, ListRequest, MaintainRequest, RecallRequest, RememberNote, RememberTurn, Reminisce,
    SweepRequest,
};
use membank_store::{EventQuery, IdempotencyRecord, Insertion, ListQuery};

use super::extract::{ApiPath, ApiQuery, Caller, DigestedJsonBody, JsonBody, OptionalJsonBody};
use super::types::*;
use crate::error::{ApiError, ErrorResponses};
use crate::maintenance::{CycleError, Trigger};
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::wire::{ListOut, MaintainOut, MemoryOut, MemoryWithRetention, RecallOut, SweepOut};

fn invalid(err: InvalidInput) -> ApiError {
    ApiError::Invalid(err.to_string())
}

/// A time given for `scope`'s user: an RFC 3339 instant, or a bare date (`2024-05-04`) as
/// that person's local midnight, as the CLI reads it. The user's row is read only for a
/// bare date, and on the blocking pool (the PostgreSQL client blocks).
pub(super) async fn instant_for(
    state: &AppState,
    scope: &Scope,
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<Timestamp>, ApiError> {
    let Some(text) = value else { return Ok(None) };
    if membank_engine::core::time::bare_date(text).is_none() {
        return membank_engine::core::time::parse_instant(field, text).map(Some).map_err(invalid);
    }
    let (scope, text) = (scope.clone(), text.to_string());
    state.run(move |engine| Ok(engine.parse_time(&scope, field, &text)?)).await.map(Some)
}

fn day(field: &'static str, value: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    value.map(|v| parse_day(field, v).map_err(|e| ApiError::Invalid(format!("{}: {}", e.field, e.reason)))).transpose()
}

fn parse_list<T: std::str::FromStr<Err = InvalidInput>>(
    values: impl IntoIterator<Item = impl AsRef<str>>,
) -> Result<Vec<T>, ApiError> {
    values
        .into_iter()
        .filter(|v| !v.as_ref().trim().is_empty())
        .map(|v| v.as_ref().trim().parse::<T>().map_err(invalid))
        .collect()
}

/// A path id that does not parse cannot exist: answered like any unknown id.
pub(super) fn memory_id(raw: &str) -> Result<MemoryId, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::NotFound(format!("memory {} not found", raw.chars().take(64).collect::<String>())))
}

/// Longest `reason` of a forget, in characters (the `ForgetParams` schema says the same).
const MAX_REASON_CHARS: usize = 1024;

pub(super) fn check_text(state: &AppState, field: &str, text: &str) -> Result<(), ApiError> {
    let limit = state.config().limits.text_bytes;
    if text.len() > limit {
        return Err(ApiError::Invalid(format!("{field}: is {} bytes; the limit is {limit} bytes", text.len())));
    }
    Ok(())
}

/// An explicit base importance, checked here too so a batch is refused before any of it
/// is stored.
fn importance(value: Option<f64>) -> Result<Option<f64>, ApiError> {
    value.map(membank_engine::validate_importance).transpose().map_err(invalid)
}

/// Where a new memory's forgetting clock starts (default: when it is stored).
fn clock_from(value: Option<&str>) -> Result<ClockFrom, ApiError> {
    value.map(str::parse::<ClockFrom>).transpose().map(Option::unwrap_or_default).map_err(invalid)
}

/// A recall's `reminisce` (default `auto`); anything but `auto`, `never` or `always` is a 422.
fn reminisce(value: Option<&str>) -> Result<Reminisce, ApiError> {
    value.map(str::parse::<Reminisce>).transpose().map(Option::unwrap_or_default).map_err(invalid)
}

async fn turn_request(state: &AppState, caller: &Caller, user: &str, turn: TurnIn) -> Result<RememberTurn, ApiError> {
    check_text(state, "user_text", &turn.user_text)?;
    if let Some(reply) = &turn.assistant_text {
        check_text(state, "assistant_text", reply)?;
    }
    let scope = caller.scope_with(user, turn.agent.as_deref(), turn.session.as_deref())?;
    Ok(RememberTurn {
        occurred_at: instant_for(state, &scope, "occurred_at", turn.occurred_at.as_deref()).await?,
        scope,
        user_text: turn.user_text,
        assistant_text: turn.assistant_text,
        metadata: checked_metadata(turn.metadata)?,
        importance: importance(turn.importance)?,
        clock_from: clock_from(turn.clock_from.as_deref())?,
    })
}

fn checked_metadata(
    metadata: Option<std::collections::BTreeMap<String, String>>,
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    let metadata = metadata.unwrap_or_default();
    if metadata.len() > 64 {
        return Err(ApiError::Invalid("metadata: at most 64 entries".into()));
    }
    // Set by imports to know what they already stored; a client's value would make a later
    // import skip a record it never stored.
    if metadata.contains_key(membank_engine::import::IMPORT_KEY) {
        return Err(ApiError::Invalid(format!(
            "metadata: the key {:?} is reserved for imports",
            membank_engine::import::IMPORT_KEY
        )));
    }
    if metadata.iter().any(|(k, v)| k.len() > 256 || v.len() > 4096 || k.contains('\0') || v.contains('\0')) {
        return Err(ApiError::Invalid("metadata: keys at most 256 bytes, values at most 4096 bytes, no NUL".into()));
    }
    Ok(metadata)
}

/// The header with which a client makes a creating POST safe to retry.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The request's `Idempotency-Key`, if it sent one.
pub(super) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let key = value.to_str().map_err(|_| ApiError::Invalid("Idempotency-Key: must be visible ASCII".into()))?.trim();
    if key.is_empty() || key.len() > 255 {
        return Err(ApiError::Invalid("Idempotency-Key: must be 1 to 255 visible ASCII characters".into()));
    }
    Ok(Some(key.to_string()))
}

/// Stores `entries` all at once or not at all, idempotently under the request's key, and
/// answers 201 with `render` of the stored memories. A retry with the same key and body
/// within the retention gets the first answer again (with `Idempotent-Replayed: true`)
/// and stores nothing; the same key with another body is refused with 422.
async fn create<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    scope: Scope,
    headers: &HeaderMap,
    digest: String,
    entries: Vec<membank_engine::Remember>,
    render: fn(&[membank_engine::core::Memory]) -> Result<T, ApiError>,
) -> Result<Response, ApiError> {
    let (key, prior) = prior_use(state, &scope, headers, &digest).await?;
    if let Some(record) = prior {
        return replay(state, scope, record, render).await;
    }
    let claim_key = key.clone();
    let insertion = state
        .run(move |engine| {
            let claim = claim_key.map(|k| engine.idempotency_claim(&k, &digest));
            Ok(engine.remember_all(entries, claim.as_ref())?)
        })
        .await?;
    match insertion {
        Insertion::Stored(memories) => {
            Metrics::add(&state.metrics().memories_created, memories.len() as u64);
            let body = serde_json::to_string(&render(&memories)?).map_err(|_| ApiError::Internal)?;
            keep_answer(state, scope, key, &body).await;
            Ok(created(body, false))
        }
        Insertion::Replayed(record) => replay(state, scope, record, render).await,
    }
}

/// The request's `Idempotency-Key`, and what it was used for before if it was (within the
/// retention); the key used before with another request is refused (422).
pub(super) async fn prior_use(
    state: &AppState,
    scope: &Scope,
    headers: &HeaderMap,
    digest: &str,
) -> Result<(Option<String>, Option<IdempotencyRecord>), ApiError> {
    let Some(key) = idempotency_key(headers)? else { return Ok((None, None)) };
    let (lookup_scope, lookup_key) = (scope.clone(), key.clone());
    let record = state.run(move |engine| Ok(engine.idempotency_record(&lookup_scope, &lookup_key)?)).await?;
    if record.as_ref().is_some_and(|r| r.request_hash != digest) {
        return Err(ApiError::Invalid(
            "Idempotency-Key: was already used with a different request; use a new key for a new request".into(),
        ));
    }
    Ok((Some(key), record))
}

/// Keeps the answer given to the request that claimed `key`, for its retries. The
/// memories and the key are stored already: failing here only means a retry gets an
/// answer rebuilt from the stored memories (or, for a chat, a 409 naming the exchange).
pub(super) async fn keep_answer(state: &AppState, scope: Scope, key: Option<String>, body: &str) {
    let Some(key) = key else { return };
    let answer = body.to_string();
    if let Err(err) =
        state.run(move |engine| Ok(engine.store().record_idempotent_response(&scope, &key, &answer)?)).await
    {
        tracing::warn!(error = ?err, "could not record an idempotent answer");
    }
}

async fn replay<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    scope: Scope,
    record: IdempotencyRecord,
    render: fn(&[membank_engine::core::Memory]) -> Result<T, ApiError>,
) -> Result<Response, ApiError> {
    if let Some(body) = record.response {
        return Ok(created(body, true));
    }
    let memories = state.run(move |engine| Ok(engine.store().get_many(&scope, &record.memory_ids)?)).await?;
    Ok(created(serde_json::to_string(&render(&memories)?).map_err(|_| ApiError::Internal)?, true))
}

fn created(body: String, replayed: bool) -> Response {
    answer(StatusCode::CREATED, body, replayed)
}

/// A JSON answer, marked `Idempotent-Replayed: true` when it repeats a first one.
pub(super) fn answer(status: StatusCode, body: String, replayed: bool) -> Response {
    let mut response = (status, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response();
    if replayed {
        response.headers_mut().insert("idempotent-replayed", axum::http::HeaderValue::from_static("true"));
    }
    response
}

fn one_memory(memories: &[membank_engine::core::Memory]) -> Result<MemoryOut, ApiError> {
    memories.first().map(MemoryOut::from).ok_or(ApiError::Internal)
}

fn batch_out(memories: &[membank_engine::core::Memory]) -> Result<BatchOut, ApiError> {
    Ok(BatchOut { memories: memories.iter().map(Into::into).collect() })
}

/// Store one exchange.
///
/// Send `Idempotency-Key: <unique string>` to make a retry safe: the same key with the
/// same body within 24 hours returns the first answer and stores nothing new.
#[utoipa::path(post, path = "/v1/users/{user}/turns", tag = "memories",
    params(UserPath, ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing")),
    request_body = TurnIn,
    responses((status = 201, description = "Stored; recallable at once", body = MemoryOut), ErrorResponses))]
pub async fn remember_turn(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(user): ApiPath<String>,
    DigestedJsonBody(turn, digest): DigestedJsonBody<TurnIn>,
) -> Result<Response, ApiError> {
    let scope = caller.scope(&user)?;
    let request = turn_request(&state, &caller, &user, turn).await?;
    create(
        &state,
        scope,
        &headers,
        format!("turns:{digest}"),
        vec![membank_engine::Remember::Turn(request)],
        one_memory,
    )
    .await
}

/// Store several exchanges, in order: all are validated before any is stored, and all
/// are stored in one transaction or none is.
///
/// Takes `Idempotency-Key` like `POST /turns`.
#[utoipa::path(post, path = "/v1/users/{user}/turns/batch", tag = "memories",
    params(UserPath, ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing")),
    request_body = TurnBatchIn,
    responses((status = 201, description = "Stored, in input order", body = BatchOut), ErrorResponses))]
pub async fn remember_turns(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(user): ApiPath<String>,
    DigestedJsonBody(batch, digest): DigestedJsonBody<TurnBatchIn>,
) -> Result<Response, ApiError> {
    let limit = state.config().limits.batch;
    if batch.turns.is_empty() || batch.turns.len() > limit {
        return Err(ApiError::Invalid(format!("turns: give between 1 and {limit} turns")));
    }
    let scope = caller.scope(&user)?;
    let mut requests = Vec::with_capacity(batch.turns.len());
    for turn in batch.turns {
        requests.push(turn_request(&state, &caller, &user, turn).await?);
    }
    let entries = requests.into_iter().map(membank_engine::Remember::Turn).collect();
    create(&state, scope, &headers, format!("batch:{digest}"), entries, batch_out).await
}

/// Store a free-form note.
///
/// Takes `Idempotency-Key` like `POST /turns`.
#[utoipa::path(post, path = "/v1/users/{user}/notes", tag = "memories",
    params(UserPath, ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing")),
    request_body = NoteIn,
    responses((status = 201, description = "Stored; recallable at once", body = MemoryOut), ErrorResponses))]
pub async fn remember_note(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(user): ApiPath<String>,
    DigestedJsonBody(note, digest): DigestedJsonBody<NoteIn>,
) -> Result<Response, ApiError> {
    check_text(&state, "text", &note.text)?;
    let scope = caller.scope(&user)?;
    let note_scope = caller.scope_with(&user, note.agent.as_deref(), note.session.as_deref())?;
    let request = RememberNote {
        occurred_at: instant_for(&state, &note_scope, "occurred_at", note.occurred_at.as_deref()).await?,
        scope: note_scope,
        text: note.text,
        source: note.source.as_deref().unwrap_or("agent").parse::<Source>().map_err(invalid)?,
        metadata: checked_metadata(note.metadata)?,
        importance: importance(note.importance)?,
        clock_from: clock_from(note.clock_from.as_deref())?,
    };
    create(
        &state,
        scope,
        &headers,
        format!("notes:{digest}"),
        vec![membank_engine::Remember::Note(request)],
        one_memory,
    )
    .await
}

/// Find the memories most relevant to a query; strengthens what it returns (per policy).
///
/// Each result is the memory as it is after this recall: `strength`, `last_recalled_at` and
/// `retention` describe one moment (right after a strengthening recall `retention` is 1
/// under MemoryBank), and `retention_before` is its retention before the recall, what
/// `weight_by_retention` ranks by. `score` is reciprocal rank fusion: each ranking a memory
/// is in (dense: cosine to the query; lexical: BM25 over its words) adds `1 / (60 + rank)`,
/// so first place adds about 0.0164; `score_parts` holds each term, with the share of the
/// days a time expression names, a neighbour's loan, and the speaker and retention factors.
/// `date_filter` says which days were boosted and from which words of the query ("May 4th";
/// a day named without a year is the most recent such day with memories), or which days
/// the caller's `from`/`to` restricted the recall to.
#[utoipa::path(post, path = "/v1/users/{user}/recall", tag = "recall",
    params(UserPath),
    request_body = RecallIn,
    responses((status = 200, description = "Best first; each score is that memory's own", body = RecallOut), ErrorResponses))]
pub async fn recall(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<RecallIn>,
) -> Result<Json<RecallOut>, ApiError> {
    check_text(&state, "query", &body.query)?;
    let k = body.k.unwrap_or(5) as usize;
    let max_k = state.config().limits.k;
    if k == 0 || k > max_k {
        return Err(ApiError::Invalid(format!("k: must be between 1 and {max_k}")));
    }
    let mut request =
        RecallRequest::new(caller.scope_with(&user, body.agent.as_deref(), body.session.as_deref())?, body.query, k);
    request.now = instant_for(&state, &request.scope, "now", body.now.as_deref()).await?;
    request.kinds = parse_list::<Kind>(body.kinds.unwrap_or_default())?;
    request.day_from = day("from", body.from.as_deref())?;
    request.day_to = day("to", body.to.as_deref())?;
    request.include_archived = body.include_archived.unwrap_or(false);
    request.strengthen = body.strengthen;
    request.weight_by_retention = body.weight_by_retention;
    request.reminisce = reminisce(body.reminisce.as_deref())?;
    let response = state.run(move |engine| Ok(engine.recall(request)?)).await?;
    Metrics::add(&state.metrics().recalls, 1);
    if response.strengthened {
        Metrics::add(&state.metrics().strengthened, response.results.len() as u64);
    }
    Ok(Json((&response).into()))
}

/// List memories with their strength and retention now, filtered and paged.
#[utoipa::path(get, path = "/v1/users/{user}/memories", tag = "memories",
    params(UserPath, ListParams),
    responses((status = 200, description = "A page, newest first unless asked otherwise", body = ListOut), ErrorResponses))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ListOut>, ApiError> {
    let limit = params.limit.unwrap_or(50) as usize;
    let max = state.config().limits.page_size;
    if limit == 0 || limit > max {
        return Err(ApiError::Invalid(format!("limit: must be between 1 and {max}")));
    }
    let query = ListQuery {
        statuses: parse_list::<Status>(params.status.as_deref().unwrap_or("").split(','))?,
        kinds: parse_list::<Kind>(params.kind.as_deref().unwrap_or("").split(','))?,
        day_from: day("from", params.from.as_deref())?,
        day_to: day("to", params.to.as_deref())?,
        pinned_only: params.pinned.unwrap_or(false),
        limit,
        offset: params.offset.unwrap_or(0) as usize,
        oldest_first: match params.order.as_deref() {
            None | Some("newest") => false,
            Some("oldest") => true,
            Some(other) => return Err(ApiError::Invalid(format!("order: {other:?} is not newest or oldest"))),
        },
        without_text: false,
    };
    let scope = caller.scope(&user)?;
    let response = state.run(move |engine| Ok(engine.list(ListRequest { scope, query })?)).await?;
    Ok(Json((&response).into()))
}

/// One memory with its retention now.
#[utoipa::path(get, path = "/v1/users/{user}/memories/{id}", tag = "memories",
    params(MemoryPath),
    responses((status = 200, description = "The memory", body = MemoryWithRetention), ErrorResponses))]
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
) -> Result<Json<MemoryWithRetention>, ApiError> {
    let scope = caller.scope(&user)?;
    let id = memory_id(&id)?;
    let (memory, retention, archive_below) =
        state.run(move |engine| Ok(engine.show(&scope, id).map(|(m, r)| (m, r, engine.archive_below()))?)).await?;
    Ok(Json(MemoryWithRetention::new(&memory, retention, archive_below)))
}

/// Edit a memory's text. The edited text is a new memory (returned); the old version is
/// kept as `superseded` by it, so history is never lost.
#[utoipa::path(patch, path = "/v1/users/{user}/memories/{id}", tag = "memories",
    params(MemoryPath),
    request_body = EditIn,
    responses((status = 200, description = "The new version; `derived_from` names the old one", body = MemoryOut), ErrorResponses))]
pub async fn edit(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<EditIn>,
) -> Result<Json<MemoryOut>, ApiError> {
    for (field, value) in
        [("text", &body.text), ("user_text", &body.user_text), ("assistant_text", &body.assistant_text)]
    {
        if let Some(value) = value {
            check_text(&state, field, value)?;
        }
    }
    let scope = caller.scope(&user)?;
    let id = memory_id(&id)?;
    let request =
        EditRequest { scope, id, text: body.text, user_text: body.user_text, assistant_text: body.assistant_text };
    let memory = state.run(move |engine| Ok(engine.edit(request)?)).await?;
    Metrics::add(&state.metrics().memories_created, 1);
    Ok(Json((&memory).into()))
}

async fn change(
    state: AppState,
    caller: Caller,
    user: String,
    id: String,
    op: impl FnOnce(&Engine, &Scope, MemoryId) -> Result<membank_engine::core::Memory, membank_engine::EngineError>
    + Send
    + 'static,
) -> Result<Json<MemoryOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let id = memory_id(&id)?;
    let memory = state.run(move |engine| Ok(op(engine, &scope, id)?)).await?;
    Ok(Json((&memory).into()))
}

/// Pin a memory: it never decays.
#[utoipa::path(post, path = "/v1/users/{user}/memories/{id}/pin", tag = "memories",
    params(MemoryPath),
    responses((status = 200, description = "The pinned memory", body = MemoryOut), ErrorResponses))]
pub async fn pin(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
) -> Result<Json<MemoryOut>, ApiError> {
    change(state, caller, user, id, |e, s, id| e.set_pinned(s, id, true)).await
}

/// Unpin a memory.
#[utoipa::path(post, path = "/v1/users/{user}/memories/{id}/unpin", tag = "memories",
    params(MemoryPath),
    responses((status = 200, description = "The unpinned memory", body = MemoryOut), ErrorResponses))]
pub async fn unpin(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
) -> Result<Json<MemoryOut>, ApiError> {
    change(state, caller, user, id, |e, s, id| e.set_pinned(s, id, false)).await
}

/// Forget (archive) a memory; restorable.
#[utoipa::path(post, path = "/v1/users/{user}/memories/{id}/forget", tag = "memories",
    params(MemoryPath, ForgetParams),
    responses((status = 200, description = "The archived memory", body = MemoryOut), ErrorResponses))]
pub async fn forget(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<ForgetParams>,
) -> Result<Json<MemoryOut>, ApiError> {
    if let Some(reason) = &params.reason {
        check_text(&state, "reason", reason)?;
        // As the OpenAPI document says (`maxLength` counts characters).
        if reason.chars().count() > MAX_REASON_CHARS {
            return Err(ApiError::Invalid(format!("reason: at most {MAX_REASON_CHARS} characters")));
        }
    }
    let metrics_state = state.clone();
    let out = change(state, caller, user, id, move |e, s, id| e.forget(s, id, params.reason.as_deref())).await?;
    Metrics::add(&metrics_state.metrics().archived, 1);
    Ok(out)
}

/// Restore an archived or superseded memory.
#[utoipa::path(post, path = "/v1/users/{user}/memories/{id}/restore", tag = "memories",
    params(MemoryPath),
    responses((status = 200, description = "The restored memory", body = MemoryOut), ErrorResponses))]
pub async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
) -> Result<Json<MemoryOut>, ApiError> {
    change(state, caller, user, id, |e, s, id| e.restore(s, id)).await
}

/// Erase a memory for good: content, vector and index row go; a content-free tombstone stays.
#[utoipa::path(delete, path = "/v1/users/{user}/memories/{id}", tag = "memories",
    params(MemoryPath),
    responses((status = 200, description = "The tombstone", body = MemoryOut), ErrorResponses))]
pub async fn erase(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
) -> Result<Json<MemoryOut>, ApiError> {
    change(state, caller, user, id, |e, s, id| e.erase(s, id)).await
}

/// Confirm memories were used in a reply (strengthens them; the `used` recall mode). An
/// archived memory a reminiscing recall returned comes back to active with savings (a
/// `reminisced` event with `confirmed_used: true`).
#[utoipa::path(post, path = "/v1/users/{user}/memories/used", tag = "recall",
    params(UserPath),
    request_body = UsedIn,
    responses((status = 200, description = "The strengthened memories", body = BatchOut), ErrorResponses))]
pub async fn used(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<UsedIn>,
) -> Result<Json<BatchOut>, ApiError> {
    let limit = state.config().limits.batch;
    if body.ids.is_empty() || body.ids.len() > limit {
        return Err(ApiError::Invalid(format!("ids: give between 1 and {limit} ids")));
    }
    let scope = caller.scope(&user)?;
    let ids = body.ids.iter().map(|id| memory_id(id)).collect::<Result<Vec<_>, _>>()?;
    if let Some(q) = &body.query_id {
        check_text(&state, "query_id", q)?;
    }
    let memories = state.run(move |engine| Ok(engine.confirm_used(&scope, &ids, body.query_id.as_deref())?)).await?;
    Metrics::add(&state.metrics().strengthened, memories.len() as u64);
    Ok(Json(BatchOut { memories: memories.iter().map(Into::into).collect() }))
}

/// Run the forgetting curve over this user's memories (archives, never deletes).
#[utoipa::path(post, path = "/v1/users/{user}/sweep", tag = "forgetting",
    params(UserPath),
    request_body = SweepIn,
    responses((status = 200, description = "What was examined and archived, with the numbers", body = SweepOut), ErrorResponses))]
pub async fn sweep(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<SweepIn>,
) -> Result<Json<SweepOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let request = SweepRequest {
        now: instant_for(&state, &scope, "now", body.now.as_deref()).await?,
        scope,
        dry_run: body.dry_run.unwrap_or(false),
        max_archive_fraction: body.max_archive_fraction,
    };
    let dry_run = request.dry_run;
    let report = state.run(move |engine| Ok(engine.sweep(request)?)).await?;
    Metrics::add(&state.metrics().sweeps, 1);
    if !dry_run {
        Metrics::add(&state.metrics().archived, report.archived.len() as u64);
    }
    Ok(Json((&report).into()))
}

/// Run one maintenance cycle over this user now: importance and layers, archiving under
/// the configured forgetting policy, near-duplicate merging and, with an LLM, fusion and
/// conflicts. Archives and supersedes, never deletes; every change is an event.
#[utoipa::path(post, path = "/v1/users/{user}/maintain", tag = "forgetting",
    params(UserPath),
    request_body = Option<MaintainIn>,
    responses((status = 200, description = "What the cycle examined and did (or would do, on a dry run)", body = MaintainOut), ErrorResponses))]
pub async fn maintain(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    OptionalJsonBody(body): OptionalJsonBody<MaintainIn>,
) -> Result<Json<MaintainOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let request = MaintainRequest {
        now: instant_for(&state, &scope, "now", body.now.as_deref()).await?,
        scope,
        dry_run: body.dry_run.unwrap_or(false),
    };
    match crate::maintenance::run_cycle(&state, request, Trigger::Request).await {
        Ok(report) => Ok(Json((&report).into())),
        Err(CycleError::Engine(err)) => Err(err.into()),
        Err(CycleError::Busy) => Err(ApiError::Conflict(
            "a maintenance cycle for this user is running already; try again when it has finished".into(),
        )),
        Err(CycleError::Task(err)) => {
            tracing::error!(error = %err, "engine task failed");
            Err(ApiError::Internal)
        }
    }
}

/// The user's event log (content-free), in log order.
///
/// `seq` is an event's position in the store's log, which all users share: it grows but
/// skips the numbers of other users' events. Pass the last `seq` of a page as `after` for
/// the next page. `at` is when the event took effect: an operation given an earlier `now`
/// (a replay, a recall dated in the past) is logged after events it precedes in time, so
/// sort by `at`, then `seq`, to read the history in the order things happened.
#[utoipa::path(get, path = "/v1/users/{user}/events", tag = "events",
    params(UserPath, EventParams),
    responses((status = 200, description = "A page of events", body = EventsOut), ErrorResponses))]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    ApiQuery(params): ApiQuery<EventParams>,
) -> Result<Json<EventsOut>, ApiError> {
    let limit = params.limit.unwrap_or(1000) as usize;
    if limit == 0 || limit > 10_000 {
        return Err(ApiError::Invalid("limit: must be between 1 and 10000".into()));
    }
    let memory_id = params.memory.as_deref().map(memory_id).transpose()?;
    let query = EventQuery { memory_id, after_seq: params.after, limit };
    let scope = caller.scope(&user)?;
    let events = state.run(move |engine| Ok(engine.events(&scope, &query)?)).await?;
    Ok(Json(EventsOut { events: events.iter().map(Into::into).collect() }))
}

/// Everything stored about this user in the lossless `membank-export` format (JSON
/// Lines, version 1; see the README): a header line, the user, every memory of every
/// status with all of its state, every event, and an end line with the counts. Streamed
/// from one consistent snapshot as it is read; a response without its end line was cut
/// short. `?vectors=true` adds each memory's vector and the user's recent queries.
#[utoipa::path(get, path = "/v1/users/{user}/export", tag = "memories",
    params(UserPath, ExportParams),
    responses((status = 200, description = "The export, JSON Lines", body = String, content_type = "application/x-ndjson"), ErrorResponses))]
pub async fn export(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    ApiQuery(params): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    let scope = caller.scope(&user)?;
    let request = membank_engine::export::ExportRequest {
        users: vec![scope],
        vectors: params.vectors.unwrap_or(false),
        skip_missing: true,
    };
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(8);
    let engine = state.engine().clone();
    tokio::task::spawn_blocking(move || {
        let mut writer = ChannelWriter { buffer: Vec::with_capacity(CHUNK), sender: sender.clone() };
        if let Err(err) = engine.export(&request, &mut writer) {
            // Headers are sent: all we can do is cut the stream, which the missing end line shows.
            if !matches!(err, membank_engine::EngineError::Output(_)) {
                tracing::error!(error = %err, "export failed while streaming");
            }
            let _ = sender.blocking_send(Err(std::io::Error::other("export failed")));
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    });
    Ok(([(axum::http::header::CONTENT_TYPE, "application/x-ndjson")], axum::body::Body::from_stream(stream))
        .into_response())
}

/// Bytes per streamed chunk of an export.
const CHUNK: usize = 64 * 1024;

/// A blocking writer that hands full chunks to the response stream; a gone client makes
/// writes fail (`BrokenPipe`), which stops the export.
struct ChannelWriter {
    buffer: Vec<u8>,
    sender: tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = axum::body::Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK)));
        self.sender
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

fn user_out(u: membank_store::UserRecord) -> UserOut {
    UserOut { user: u.user, time_zone: u.time_zone, created_at: crate::wire::rfc3339(u.created_at) }
}

/// One user and its settings; 404 when nothing was ever stored for this user.
#[utoipa::path(get, path = "/v1/users/{user}", tag = "users",
    params(UserPath),
    responses((status = 200, description = "The user", body = UserOut), ErrorResponses))]
pub async fn user(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
) -> Result<Json<UserOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let found = state.run(move |engine| Ok(engine.store().find_user(&scope.tenant, &scope.user)?)).await?;
    found
        .map(|u| Json(user_out(u)))
        .ok_or_else(|| ApiError::NotFound(format!("no such user: nothing was ever stored for {:?}", user.trim())))
}

/// Changes a user's settings (its time zone), creating the user when new.
#[utoipa::path(patch, path = "/v1/users/{user}", tag = "users",
    params(UserPath),
    request_body = UserPatchIn,
    responses((status = 200, description = "The user as it is now", body = UserOut), ErrorResponses))]
pub async fn patch_user(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<UserPatchIn>,
) -> Result<Json<UserOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let Some(zone) = body.time_zone else {
        return Err(ApiError::Invalid("time_zone: give the setting to change".into()));
    };
    if zone.len() > 64 {
        return Err(ApiError::Invalid("time_zone: at most 64 bytes".into()));
    }
    // The store answers with the user as it is now: one write, no read after it.
    let record = state
        .run(move |engine| Ok(engine.store().set_time_zone(&scope.tenant, &scope.user, &zone, engine.now())?))
        .await?;
    Ok(Json(user_out(record)))
}

/// The users of the caller's tenant.
#[utoipa::path(get, path = "/v1/users", tag = "users",
    responses((status = 200, description = "Users in creation order", body = UsersOut), ErrorResponses))]
pub async fn users(State(state): State<AppState>, caller: Caller) -> Result<Json<UsersOut>, ApiError> {
    let tenant = caller.tenant.clone();
    let bound = caller.principal.user.clone();
    let users = state.run(move |engine| Ok(engine.store().list_users(&tenant)?)).await?;
    let users = users
        .into_iter()
        // A key bound to one user sees only that user.
        .filter(|u| bound.as_ref().is_none_or(|b| b.as_str() == u.user))
        .map(user_out)
        .collect();
    Ok(Json(UsersOut { users }))
}
