//! Extractors that answer in the API's error shape: JSON bodies, paths and query strings
//! that do not parse become 400/413/415/422 `{"error": …}` instead of axum's plain-text
//! rejections; and [`Caller`], the authenticated principal plus the headers that may
//! narrow it, which turns a path's user into a [`Scope`] or refuses with 403.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use membank_engine::core::{AgentLabel, Scope, TenantId, UserId};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::keys::Principal;

/// Header with which an admin key chooses the tenant it acts in.
pub const TENANT_HEADER: &str = "x-membank-tenant";

/// A JSON body; see the module docs for the error mapping.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Every request body of this API is a JSON object. serde would also read a struct
        // from an array (`[null, null]` as its fields in order), which the schema forbids.
        let value = match axum::Json::<serde_json::Value>::from_request(req, state).await {
            Ok(axum::Json(value)) => value,
            Err(rejection) => return Err(json_rejection(rejection)),
        };
        if !value.is_object() {
            return Err(ApiError::Invalid("the request body must be a JSON object".into()));
        }
        typed(value).map(JsonBody)
    }
}

/// A JSON object as the body type, or 422 saying why not.
fn typed<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_json::from_value(value)
        .map_err(|e| ApiError::Invalid(format!("Failed to deserialize the JSON body into the target type: {e}")))
}

/// A JSON body with a digest (SHA-256, hex) of its parsed value, so a retried request can
/// be recognised whatever its white space: what `Idempotency-Key` compares.
#[derive(Debug)]
pub struct DigestedJsonBody<T>(pub T, pub String);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for DigestedJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let JsonBody(value) = JsonBody::<serde_json::Value>::from_request(req, state).await?;
        use sha2::Digest as _;
        // serde_json's map is sorted (the `preserve_order` feature is off in this build), so
        // the printed value is canonical: key order and white space do not change it.
        let digest = sha2::Sha256::digest(value.to_string().as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Ok(DigestedJsonBody(typed(value)?, hex))
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::Invalid(e.body_text()),
        JsonRejection::JsonSyntaxError(e) => ApiError::BadRequest(e.body_text()),
        JsonRejection::MissingJsonContentType(_) => {
            ApiError::UnsupportedMediaType("expected a body with Content-Type: application/json".into())
        }
        other if other.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is larger than this server accepts".into())
        }
        other => ApiError::BadRequest(other.body_text()),
    }
}

/// A JSON body that may be left out: no body (or an empty one) is `T::default()`; any
/// other body must be a JSON object, answered in errors exactly like [`JsonBody`].
#[derive(Debug)]
pub struct OptionalJsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Buffered first (within the body limit) to see whether there is a body at all;
        // `Content-Length` alone would miss a chunked empty body.
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::Bytes::from_request(Request::from_parts(parts.clone(), body), state).await {
            Ok(bytes) => bytes,
            Err(rejection) if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::PayloadTooLarge("the request body is larger than this server accepts".into()));
            }
            Err(rejection) => return Err(ApiError::BadRequest(rejection.body_text())),
        };
        if bytes.is_empty() {
            return Ok(OptionalJsonBody(T::default()));
        }
        let JsonBody(value) =
            JsonBody::from_request(Request::from_parts(parts, axum::body::Body::from(bytes)), state).await?;
        Ok(OptionalJsonBody(value))
    }
}

/// Path parameters.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(path_rejection(rejection)),
        }
    }
}

fn path_rejection(rejection: PathRejection) -> ApiError {
    ApiError::BadRequest(rejection.body_text())
}

/// Query parameters.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(query_rejection(rejection)),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> ApiError {
    ApiError::BadRequest(rejection.body_text())
}

/// The authenticated caller and the tenant it acts in.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who the key says the caller is.
    pub principal: Principal,
    /// The tenant this request acts in.
    pub tenant: TenantId,
}

impl Caller {
    /// Resolves the tenant a principal acts in, given an optional tenant header.
    pub fn resolve(principal: Principal, tenant_header: Option<&str>) -> Result<Self, ApiError> {
        let tenant = match tenant_header {
            None => principal.tenant.clone(),
            Some(raw) => {
                let asked = TenantId::new(raw).map_err(|e| ApiError::Invalid(e.to_string()))?;
                if asked != principal.tenant && !principal.admin {
                    return Err(ApiError::Forbidden("this key may not act for another tenant".into()));
                }
                asked
            }
        };
        Ok(Self { principal, tenant })
    }

    /// The scope of `user` (from a path), refused when the key is bound to another user.
    pub fn scope(&self, user: &str) -> Result<Scope, ApiError> {
        let user = UserId::new(user).map_err(|e| ApiError::Invalid(e.to_string()))?;
        if let Some(bound) = &self.principal.user
            && *bound != user
        {
            return Err(ApiError::Forbidden("this key may only act for its own user".into()));
        }
        Ok(Scope::user(self.tenant.clone(), user))
    }

    /// [`Caller::scope`] narrowed to optional agent and session labels.
    pub fn scope_with(&self, user: &str, agent: Option<&str>, session: Option<&str>) -> Result<Scope, ApiError> {
        let mut scope = self.scope(user)?;
        scope.agent = agent.map(AgentLabel::new).transpose().map_err(|e| ApiError::Invalid(e.to_string()))?;
        scope.session = session.map(AgentLabel::new).transpose().map_err(|e| ApiError::Invalid(e.to_string()))?;
        Ok(scope)
    }

    /// Refuses callers without an admin key.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.principal.admin { Ok(()) } else { Err(ApiError::Forbidden("this needs an admin key".into())) }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // The auth middleware inserts the principal; its absence is a wiring bug, not the caller's.
        let principal = parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
            tracing::error!("no principal on an authenticated route");
            ApiError::Internal
        })?;
        let header = match parts.headers.get(TENANT_HEADER) {
            None => None,
            Some(value) => {
                Some(value.to_str().map_err(|_| ApiError::BadRequest("X-Membank-Tenant is not visible ASCII".into()))?)
            }
        };
        Caller::resolve(principal, header)
    }
}
