//! The LLM-backed routes: companion chat, incremental summarisation and the profile.
//! Thin adapters over the engine's `chat`, `summarize` and `profile`; without a configured
//! LLM, chat and summarize answer 503 with a message saying so (profile works without one).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use membank_engine::{ChatRequest, ProfileRequest, SummarizeRequest};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiPath, Caller, DigestedJsonBody, JsonBody};
use super::types::UserPath;
use crate::error::{ApiError, ErrorResponses};
use crate::state::AppState;
use crate::wire_companion::{ChatOut, CitedOut, ProfileOut, SummarizeOut};

/// A message to the companion.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatIn {
    /// What the person says.
    pub message: String,
    /// How many memories to recall for the prompt (default 8).
    pub k: Option<u32>,
    /// The message's time (RFC 3339; default now).
    pub now: Option<String>,
    /// Who the companion is (default: membank's companion persona).
    pub persona: Option<String>,
}

/// Options of a summarisation run.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeIn {
    /// Redo every day even if nothing changed (after a prompt or model change).
    pub force: Option<bool>,
}

/// Talk to the memory-backed companion: recalls for the message, answers from memory with
/// dates (saying plainly when it does not remember), stores the exchange as a turn and
/// strengthens the memories it used.
#[utoipa::path(post, path = "/v1/users/{user}/chat", tag = "companion",
    params(UserPath, ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Makes a retry safe: the same key and body within 24 h returns the first answer, stores no second exchange and asks the model nothing")),
    request_body = ChatIn,
    responses((status = 200, description = "The reply and the memories it drew on", body = ChatOut), ErrorResponses))]
pub async fn chat(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(user): ApiPath<String>,
    DigestedJsonBody(body, digest): DigestedJsonBody<ChatIn>,
) -> Result<Response, ApiError> {
    let scope = caller.scope(&user)?;
    let mut request = chat_request(&state, &caller, &user, body).await?;
    let digest = format!("chat:{digest}");
    let (key, prior) = super::memories::prior_use(&state, &scope, &headers, &digest).await?;
    if let Some(record) = prior {
        return match record.response {
            Some(body) => Ok(super::memories::answer(StatusCode::OK, body, true)),
            // The reply cannot be rebuilt from the stored exchange alone.
            None => Err(ApiError::Conflict(format!(
                "the first request with this Idempotency-Key stored its exchange as memory {} but its answer was not kept; read it there",
                record.memory_ids.first().map(ToString::to_string).unwrap_or_default()
            ))),
        };
    }
    let claim_key = key.clone();
    let response = state
        .run(move |engine| {
            request.idempotency = claim_key.map(|k| engine.idempotency_claim(&k, &digest));
            Ok(engine.chat(request)?)
        })
        .await?;
    let body = serde_json::to_string(&ChatOut::from(&response)).map_err(|_| ApiError::Internal)?;
    super::memories::keep_answer(&state, scope, key, &body).await;
    Ok(super::memories::answer(StatusCode::OK, body, false))
}

/// The engine request of a chat body, checked as the engine would check it (text sizes
/// against the server's limit and blankness, `k`, `now` and that it is not in the future),
/// so both chat routes refuse bad input before anything is looked up or streamed.
async fn chat_request(state: &AppState, caller: &Caller, user: &str, body: ChatIn) -> Result<ChatRequest, ApiError> {
    let checked = |field: &'static str, text: &str| -> Result<(), ApiError> {
        super::memories::check_text(state, field, text)?;
        membank_engine::validate_text(field, text).map_err(|e| ApiError::Invalid(e.to_string()))
    };
    checked("message", &body.message)?;
    let mut request = ChatRequest::new(caller.scope_with(user, None, None)?, body.message);
    if let Some(k) = body.k {
        let max_k = state.config().limits.k;
        if k == 0 || k as usize > max_k {
            return Err(ApiError::Invalid(format!("k: must be between 1 and {max_k}")));
        }
        request.k = k as usize;
    }
    request.now = super::memories::instant_for(state, &request.scope, "now", body.now.as_deref()).await?;
    state.engine().request_now(request.now, true).map_err(ApiError::from)?;
    if let Some(persona) = body.persona {
        checked("persona", &persona)?;
        request.persona = Some(persona);
    }
    Ok(request)
}

/// One event of a streamed chat, as the handler's channel carries it.
enum StreamEvent {
    Recalled(String),
    Delta(String),
    Done(String),
    Error(String),
}

struct Forward(tokio::sync::mpsc::UnboundedSender<StreamEvent>);

impl membank_engine::ChatObserver for Forward {
    fn recalled(&mut self, hits: &[membank_engine::RecallHit]) {
        let memories: Vec<CitedOut> = hits.iter().enumerate().map(|(i, hit)| CitedOut::recalled(i, hit)).collect();
        if let Ok(json) = serde_json::to_string(&serde_json::json!({ "memories": memories })) {
            let _ = self.0.send(StreamEvent::Recalled(json));
        }
    }
    fn delta(&mut self, text: &str) {
        if let Ok(json) = serde_json::to_string(&serde_json::json!({ "text": text })) {
            let _ = self.0.send(StreamEvent::Delta(json));
        }
    }
}

/// [`chat`], streamed as server-sent events (`text/event-stream`), for a reply that shows
/// as it is written:
///
/// - `event: recalled`, data `{"memories": [...]}`: the memories put into the prompt
///   (labelled `M1`, `M2`, …), before the model is asked;
/// - `event: delta`, data `{"text": "..."}`: the next piece of the reply (many);
/// - `event: done`, data: the whole answer, exactly as `POST …/chat` returns it (`used`
///   lists the memories the reply cites); sent once the exchange is stored;
/// - `event: error`, data `{"error": {"code", "message"}}`: the model failed midway;
///   nothing was stored.
///
/// Bad input and a missing LLM are refused before the stream starts, with the usual JSON
/// error and status. There is no `Idempotency-Key` here: retry with `POST …/chat` when a
/// retry must not store the exchange twice. A client that disconnects does not stop the
/// exchange from being stored.
#[utoipa::path(post, path = "/v1/users/{user}/chat/stream", tag = "companion",
    params(UserPath),
    request_body = ChatIn,
    responses((status = 200, description = "Server-sent events: `recalled`, then `delta` (many), then `done` (a ChatOut) or `error`", content_type = "text/event-stream", body = String), ErrorResponses))]
pub async fn chat_stream(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<ChatIn>,
) -> Result<Response, ApiError> {
    // Everything the engine would refuse is refused here, before the stream starts.
    let request = chat_request(&state, &caller, &user, body).await?;
    // A missing model is an answer, not a stream that fails.
    state.engine().llm().map_err(ApiError::from)?;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let engine = state.engine().clone();
    tokio::task::spawn_blocking(move || {
        let mut forward = Forward(sender.clone());
        let last = match engine.chat_streaming(request, &mut forward) {
            Ok(response) => serde_json::to_string(&ChatOut::from(&response)).map(StreamEvent::Done),
            Err(err) => serde_json::to_string(&ApiError::from(err).body()).map(StreamEvent::Error),
        };
        if let Ok(event) = last {
            let _ = sender.send(event);
        }
    });
    let events = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx)).map(|event| {
        let (name, data) = match event {
            StreamEvent::Recalled(data) => ("recalled", data),
            StreamEvent::Delta(data) => ("delta", data),
            StreamEvent::Done(data) => ("done", data),
            StreamEvent::Error(data) => ("error", data),
        };
        Ok::<_, std::convert::Infallible>(Event::default().event(name).data(data))
    });
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    // Proxies (nginx) buffer responses unless told not to; a stream must flow.
    response.headers_mut().insert("x-accel-buffering", axum::http::HeaderValue::from_static("no"));
    response.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// Summarise the user's days incrementally (only days whose turns changed), then the
/// global summary and portrait if a day changed.
#[utoipa::path(post, path = "/v1/users/{user}/summarize", tag = "companion",
    params(UserPath),
    request_body(content = SummarizeIn, description = "Optional; `{}` by default"),
    responses((status = 200, description = "What was made, kept or archived", body = SummarizeOut), ErrorResponses))]
pub async fn summarize(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
    JsonBody(body): JsonBody<SummarizeIn>,
) -> Result<Json<SummarizeOut>, ApiError> {
    let request = SummarizeRequest { scope: caller.scope_with(&user, None, None)?, force: body.force.unwrap_or(false) };
    let response = state.run(move |engine| Ok(engine.summarize(request)?)).await?;
    Ok(Json((&response).into()))
}

/// The user's global portrait and summary with the days they draw on.
#[utoipa::path(get, path = "/v1/users/{user}/profile", tag = "companion",
    params(UserPath),
    responses((status = 200, description = "Portrait and summary (empty until summarised)", body = ProfileOut), ErrorResponses))]
pub async fn profile(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
) -> Result<Json<ProfileOut>, ApiError> {
    let request = ProfileRequest { scope: caller.scope_with(&user, None, None)? };
    let response = state.run(move |engine| Ok(engine.profile(request)?)).await?;
    Ok(Json((&response).into()))
}
