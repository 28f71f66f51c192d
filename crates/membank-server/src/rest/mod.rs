//! The REST API: the router, its middleware (metrics, the loopback guard of the no-auth
//! mode, authentication with its per-address failure limit, rate limit, body limit), the
//! system endpoints (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`,
//! `/v1/admin/check`), the web app's page and assets at `/` and `/assets/` ([`crate::web`];
//! they need no key: the page asks for one) and the OpenAPI document.
//!
//! The document is generated from the handlers themselves: each handler carries its
//! `#[utoipa::path]` and is registered with `utoipa_axum::routes!`, which adds the route
//! and its documentation in one step, so a route cannot exist undocumented or be
//! documented at another path than it is served.

mod companion;
pub mod extract;
mod insight;
mod memories;
pub mod types;

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ErrorResponses};
use crate::keys::{Principal, authenticate};
use crate::ratelimit::ClientAddr;
use crate::state::{AppState, AuthMode};
use types::{CheckOut, HealthOut};

#[derive(OpenApi)]
#[openapi(
    info(title = "membank", description = "Long-term memory for LLM agents: remember turns and notes, recall what is relevant, forget on an Ebbinghaus curve unless recalled. Every request acts for one user of the caller's tenant; send `Authorization: Bearer KEY` unless the server runs in loopback no-auth mode."),
    modifiers(&BearerAuth),
    components(schemas(crate::error::ErrorBody, crate::error::ErrorDetail, HealthOut, CheckOut)),
    security(("bearer" = [])),
    tags((name = "memories"), (name = "recall"), (name = "forgetting"), (name = "events"), (name = "users"), (name = "companion"), (name = "system"))
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The documented API routes and their OpenAPI document.
fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(memories::remember_turn))
        .routes(routes!(memories::remember_turns))
        .routes(routes!(memories::remember_note))
        .routes(routes!(memories::recall))
        .routes(routes!(memories::list))
        .routes(routes!(memories::show, memories::edit, memories::erase))
        .routes(routes!(memories::pin))
        .routes(routes!(memories::unpin))
        .routes(routes!(memories::forget))
        .routes(routes!(memories::restore))
        .routes(routes!(memories::used))
        .routes(routes!(memories::sweep))
        .routes(routes!(memories::maintain))
        .routes(routes!(memories::events))
        .routes(routes!(memories::export))
        .routes(routes!(memories::users))
        .routes(routes!(memories::user, memories::patch_user))
        .routes(routes!(companion::chat))
        .routes(routes!(companion::chat_stream))
        .routes(routes!(companion::summarize))
        .routes(routes!(companion::profile))
        .routes(routes!(insight::about))
        .routes(routes!(insight::curve))
        .routes(routes!(insight::overview))
        .routes(routes!(admin_check))
        .split_for_parts()
}

/// The OpenAPI document of the REST API (also served at `/openapi.json`).
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = api();
    for (path, item) in system_paths() {
        doc.paths.paths.insert(path, item);
    }
    doc
}

#[derive(OpenApi)]
#[openapi(paths(healthz, readyz, metrics))]
struct SystemDoc;

fn system_paths() -> Vec<(String, utoipa::openapi::PathItem)> {
    let mut doc = SystemDoc::openapi();
    // System endpoints need no key.
    for item in doc.paths.paths.values_mut() {
        if let Some(op) = item.get.as_mut() {
            op.security = Some(vec![utoipa::openapi::security::SecurityRequirement::default()]);
        }
    }
    doc.paths.paths.into_iter().collect()
}

/// The whole HTTP application over `state`: REST under `/v1`, MCP at `/mcp`, system
/// endpoints at the root. Testable without a socket (`tower::ServiceExt::oneshot`).
pub fn router(state: AppState) -> Router {
    let (api, _) = api();
    let body_limit = state.config().limits.body_bytes;
    let authenticated = api
        .nest_service("/mcp", crate::mcp::http_service(state.clone()))
        .layer(middleware::from_fn_with_state(state.clone(), auth));
    let doc = openapi();
    let doc_json = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into());
    Router::new()
        .route("/healthz", axum::routing::get(healthz))
        .route("/readyz", axum::routing::get(readyz))
        .route("/metrics", axum::routing::get(metrics))
        .route("/", axum::routing::get(crate::web::index))
        .route("/assets/{*path}", axum::routing::get(crate::web::file))
        .route("/favicon.ico", axum::routing::get(crate::web::favicon))
        .route(
            "/openapi.json",
            axum::routing::get(move || {
                std::future::ready(([(header::CONTENT_TYPE, "application/json")], doc_json.clone()))
            }),
        )
        .merge(authenticated)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn_with_state(state.clone(), loopback_guard))
        .layer(middleware::from_fn(single_headers))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint; see /openapi.json".into())
}

async fn method_not_allowed() -> Response {
    let body = crate::error::ErrorBody {
        error: crate::error::ErrorDetail {
            code: "method_not_allowed".into(),
            message: "this endpoint does not take that method; see /openapi.json".into(),
        },
    };
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}

/// Counts each request and its latency by method and route template. Both labels come
/// from fixed sets (see [`crate::metrics`]): this runs before authentication, so nothing
/// a client chooses may become a label value.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = crate::metrics::method_label(request.method().as_str());
    let route = request.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string());
    let response = next.run(request).await;
    let route = route.unwrap_or_else(|| "unmatched".into());
    state.metrics().observe(method, &route, response.status().as_u16(), start.elapsed());
    response
}

/// The headers a request may send once: two `Host`s would let the loopback guard check one
/// name while a proxy routes by the other, and of two `Idempotency-Key`s or
/// `Authorization`s the server would silently pick one. A request repeating any is refused
/// with 400 before anything else looks at it.
const SINGLE_HEADERS: [header::HeaderName; 3] =
    [header::HOST, header::AUTHORIZATION, header::HeaderName::from_static(memories::IDEMPOTENCY_KEY)];

async fn single_headers(request: Request, next: Next) -> Response {
    for name in &SINGLE_HEADERS {
        if request.headers().get_all(name).iter().nth(1).is_some() {
            return ApiError::BadRequest(format!("the {name} header is sent more than once; send it once"))
                .into_response();
        }
    }
    next.run(request).await
}

/// In loopback no-auth mode, answers only requests addressed to a loopback name and sent
/// from no other web origin. Binding to 127.0.0.1 keeps other machines out, but not a web
/// page in the local browser: its site's name can be re-pointed to 127.0.0.1 (DNS
/// rebinding), and the browser then sends that name as `Host` and the page's origin as
/// `Origin`. With keys the key is the guard, so any name (a proxy's) is fine.
///
/// A request without `Host` (the router called in-process) is answered: browsers always
/// send one.
async fn loopback_guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.config().auth == AuthMode::LoopbackOpen
        && let Err(err) = check_loopback_request(&request)
    {
        return err.into_response();
    }
    next.run(request).await
}

fn check_loopback_request(request: &Request) -> Result<(), ApiError> {
    let host = match request.headers().get(header::HOST) {
        Some(value) => Some(
            value.to_str().map_err(|_| ApiError::Forbidden("the Host header is not visible ASCII".into()))?.to_string(),
        ),
        None => request.uri().authority().map(|a| a.as_str().to_string()),
    };
    let Some(host) = host else { return Ok(()) };
    let authority: axum::http::uri::Authority =
        host.parse().map_err(|_| ApiError::Forbidden("the Host header is not a host name".into()))?;
    let name = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if !matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1") || authority.as_str().contains('@') {
        return Err(ApiError::Forbidden(
            "this server runs without API keys and answers only requests to localhost, 127.0.0.1 or [::1]".into(),
        ));
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        // The server's own origin is plain http at the very host and port the request names.
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(authority.as_str()));
        if !own {
            return Err(ApiError::Forbidden(
                "this server runs without API keys and answers no requests from other web origins".into(),
            ));
        }
    }
    Ok(())
}

/// The address failed authentications are counted by: the peer's IP when the server runs
/// with connection info ([`crate::serve::serve`] does), or the client a trusted proxy names
/// in `X-Forwarded-For`; in-process callers share one.
fn client_addr(state: &AppState, request: &Request) -> ClientAddr {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip());
    ClientAddr::new(peer.map(|peer| {
        let forwarded = request.headers().get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok());
        state.config().trusted_proxies.client(peer, forwarded)
    }))
}

/// Establishes the caller: a valid bearer key, or the local principal in loopback no-auth
/// mode; then applies the caller's rate limit. Failures are counted per client address;
/// an address over its limit still has its key judged, and only a failure is answered 429
/// (so one client's guesses behind a shared address lock out no one with a good key).
async fn auth(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let principal = match state.config().auth {
        AuthMode::LoopbackOpen => Principal::local(state.config().tenant.clone()),
        AuthMode::Keys => {
            let client = client_addr(&state, &request);
            let failures = &state.inner.auth_failures;
            let over_limit = failures.check(client, Instant::now()).err();
            let looked_up = match bearer(&request) {
                Ok(presented) => {
                    let store = state.store().clone();
                    match tokio::task::spawn_blocking(move || authenticate(store.as_ref(), &presented)).await {
                        Ok(Ok(Some(principal))) => Ok(principal),
                        Ok(Ok(None)) => Err(ApiError::Unauthorized("unknown or revoked API key".into())),
                        Ok(Err(err)) => return ApiError::from(err).into_response(),
                        Err(_) => return ApiError::Internal.into_response(),
                    }
                }
                Err(err) => Err(err),
            };
            match (looked_up, over_limit) {
                (Ok(principal), _) => principal,
                (Err(_), Some(wait)) => {
                    return ApiError::RateLimited { retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64 }
                        .into_response();
                }
                (Err(err), None) => {
                    failures.failed(client, Instant::now());
                    return err.into_response();
                }
            }
        }
    };
    let bucket = principal.key_id.clone().unwrap_or_else(|| "local".into());
    if let Err(wait) = state.inner.limiter.check(&bucket, Instant::now()) {
        return ApiError::RateLimited { retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64 }.into_response();
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

fn bearer(request: &Request) -> Result<String, ApiError> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthorized("send an API key: Authorization: Bearer KEY".into()))?;
    let value =
        value.to_str().map_err(|_| ApiError::Unauthorized("the Authorization header is not visible ASCII".into()))?;
    // The scheme name is case-insensitive (RFC 9110 §11.1), and one or more spaces follow it.
    let key = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, key)| key.trim())
        .filter(|key| !key.is_empty())
        .ok_or_else(|| ApiError::Unauthorized("use Authorization: Bearer KEY".into()))?;
    Ok(key.to_string())
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "system", responses((status = 200, description = "Alive", body = HealthOut)))]
async fn healthz(State(state): State<AppState>) -> Json<HealthOut> {
    let auth = match state.config().auth {
        AuthMode::Keys => "keys",
        AuthMode::LoopbackOpen => "loopback",
    };
    Json(HealthOut { status: "ok".into(), auth: Some(auth) })
}

/// Readiness: the model is loaded and the database answers.
#[utoipa::path(get, path = "/readyz", tag = "system", responses((status = 200, description = "Ready", body = HealthOut), (status = 503, description = "Not ready", body = HealthOut)))]
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<HealthOut>) {
    if !state.is_ready() {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(HealthOut { status: "warming up".into(), auth: None }));
    }
    let store = state.store().clone();
    match tokio::task::spawn_blocking(move || store.schema_version()).await {
        Ok(Ok(_)) => (StatusCode::OK, Json(HealthOut { status: "ok".into(), auth: None })),
        _ => (StatusCode::SERVICE_UNAVAILABLE, Json(HealthOut { status: "database unavailable".into(), auth: None })),
    }
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "system", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
async fn metrics(State(state): State<AppState>) -> Response {
    let mut text = state.metrics().render();
    crate::metrics::render_cache(&mut text, &state.store().cache_stats());
    if let Some(cache) = &state.config().query_cache {
        crate::metrics::render_query_cache(&mut text, &cache.stats());
    }
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

/// Integrity check of the database (admin key only).
#[utoipa::path(get, path = "/v1/admin/check", tag = "system", responses((status = 200, description = "The check's result", body = CheckOut), ErrorResponses))]
async fn admin_check(State(state): State<AppState>, caller: extract::Caller) -> Result<Json<CheckOut>, ApiError> {
    caller.require_admin()?;
    let store = state.store().clone();
    let out = tokio::task::spawn_blocking(move || -> Result<CheckOut, ApiError> {
        let problems = store.integrity_check()?;
        Ok(CheckOut { ok: problems.is_empty(), problems, schema_version: store.schema_version()? })
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    Ok(Json(out))
}
