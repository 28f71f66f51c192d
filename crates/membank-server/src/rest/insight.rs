//! Read-only views for people and the web app: the server's self-description, a memory's
//! forgetting curve and a user's counts over time. They change nothing and strengthen
//! nothing; the numbers come from the engine (the policy code the sweep runs).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiPath, ApiQuery, Caller};
use super::types::{MemoryPath, UserPath};
use crate::error::{ApiError, ErrorResponses};
use crate::state::{AppState, AuthMode};
use crate::wire_insight::{AboutOut, CurveOut, LlmOut, OverviewOut, PolicyOut};

/// Query of `GET …/curve`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CurveParams {
    /// How many days past now to project (default: a little past the projected archive
    /// date, at least 30 days; at most 3650).
    #[param(minimum = 0, maximum = 3650)]
    pub days_ahead: Option<u32>,
}

/// How to give the server an LLM, for pages and clients that find none.
pub const LLM_HINT: &str = "start membank serve with MEMBANK_LLM_BASE_URL (an OpenAI-compatible endpoint such as http://localhost:11434/v1 for Ollama) and MEMBANK_LLM_MODEL (and MEMBANK_LLM_API_KEY if it needs one), or set them in the [llm] section of the config file";

/// Who the caller is and what the server runs: the auth mode, the caller's tenant, user
/// binding and role, the companion's model (or how to configure one), the forgetting
/// policy and the embedding model. A client checks its key with it.
#[utoipa::path(get, path = "/v1/about", tag = "system",
    responses((status = 200, description = "The caller and the server", body = AboutOut), ErrorResponses))]
pub async fn about(State(state): State<AppState>, caller: Caller) -> Result<Json<AboutOut>, ApiError> {
    // The embedder's model id may read the store (a model chosen per store, not decided yet
    // on an empty one), and the PostgreSQL client blocks: asked on the blocking pool.
    let embedding_model = state.run(|engine| Ok(engine.embedder().model_id().to_string())).await?;
    let engine = state.engine();
    let policy = engine.config().forgetting;
    let mode = policy.mode.as_str();
    let role = match (state.config().auth, caller.principal.admin, &caller.principal.user) {
        (AuthMode::LoopbackOpen, _, _) => "local",
        (_, true, _) => "admin",
        (_, false, Some(_)) => "user",
        (_, false, None) => "tenant",
    };
    Ok(Json(AboutOut {
        version: env!("CARGO_PKG_VERSION"),
        auth: match state.config().auth {
            AuthMode::LoopbackOpen => "loopback",
            AuthMode::Keys => "keys",
        },
        tenant: caller.tenant.to_string(),
        user: caller.principal.user.as_ref().map(ToString::to_string),
        role,
        llm: engine.llm().ok().map(|llm| LlmOut { model: llm.model().to_string() }),
        llm_hint: LLM_HINT,
        forgetting: PolicyOut {
            policy: policy.kind.as_str(),
            archive_below: policy.archive_below(),
            unit_seconds: policy.unit.num_seconds(),
            mode,
            importance_weight: policy.importance_weight,
            importance_form: policy.importance_form.as_str(),
            importance_exponent: policy.importance_exponent,
            spaced_recall: policy.spaced_recall,
        },
        embedding_model,
    }))
}

/// A memory's forgetting curve: retention from where its clock started to a projection
/// ahead, replayed from its event log through the configured policy, with a jump at each
/// strengthening recall, the archive threshold and the date it would be archived if never
/// recalled again. Read-only: it strengthens nothing.
#[utoipa::path(get, path = "/v1/users/{user}/memories/{id}/curve", tag = "forgetting",
    params(MemoryPath, CurveParams),
    responses((status = 200, description = "The curve, its events and the projection", body = CurveOut), ErrorResponses))]
pub async fn curve(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((user, id)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<CurveParams>,
) -> Result<Json<CurveOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let id = super::memories::memory_id(&id)?;
    let response = state.run(move |engine| Ok(engine.curve(&scope, id, params.days_ahead)?)).await?;
    Ok(Json((&response).into()))
}

/// A user's memories by status (active, archived, superseded, erased) at the end of each
/// day that had events, in the user's time zone, replayed from the event log; with the
/// counts now.
#[utoipa::path(get, path = "/v1/users/{user}/overview", tag = "events",
    params(UserPath),
    responses((status = 200, description = "Counts over time", body = OverviewOut), ErrorResponses))]
pub async fn overview(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user): ApiPath<String>,
) -> Result<Json<OverviewOut>, ApiError> {
    let scope = caller.scope(&user)?;
    let response = state.run(move |engine| Ok(engine.overview(&scope)?)).await?;
    Ok(Json((&response).into()))
}
