//! The REST error: one JSON shape, `{"error": {"code", "message"}}`, with stable codes and
//! one table from code to HTTP status. Messages say what the caller did wrong; internal
//! failures are logged here once and answered with a generic message, so no SQL text,
//! path or stack trace ever reaches a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use membank_engine::EngineError;
use serde::Serialize;
use utoipa::ToSchema;

/// The error body every failing endpoint answers with.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// A stable code and a human-readable message.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable code, e.g. `invalid_input`, `not_found`, `storage_unavailable`.
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
}

/// Every way a request can fail, each with its code and status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Caller's: the body is not JSON, or a query string or path segment does not parse (400).
    #[error("{0}")]
    BadRequest(String),
    /// Caller's: no API key, or an unknown or revoked one (401).
    #[error("{0}")]
    Unauthorized(String),
    /// Caller's: the key may not act for this tenant or user, or this needs an admin key (403).
    #[error("{0}")]
    Forbidden(String),
    /// Caller's: no such route, memory or key in the caller's scope (404).
    #[error("{0}")]
    NotFound(String),
    /// Caller's: the operation does not apply to the memory's state (409).
    #[error("{0}")]
    Conflict(String),
    /// Caller's: the body is larger than the configured limit (413).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Caller's: the body is the wrong media type (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Caller's: well-formed JSON whose values break a rule (422).
    #[error("{0}")]
    Invalid(String),
    /// Caller's: too many requests for this key; retry after the given seconds (429).
    #[error("rate limit exceeded; retry in {retry_after_secs} s")]
    RateLimited {
        /// Seconds until a request will be accepted again.
        retry_after_secs: u64,
    },
    /// Ours or the operator's: the embedding model is missing or failed, or the server is not ready (503).
    #[error("{0}")]
    Unavailable(String),
    /// The machine's, for now: the database, or a node of it, cannot be reached; retry
    /// after a moment (503, with `Retry-After`).
    #[error("{0}")]
    StorageUnavailable(String),
    /// The machine's: the database's disk is full; nothing of the request was stored (507).
    #[error("{0}")]
    StorageFull(String),
    /// Ours: something failed inside; details are in the server log only (500).
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::Conflict(_) => "conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::Invalid(_) => "invalid_input",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::StorageUnavailable(_) => "storage_unavailable",
            ApiError::StorageFull(_) => "storage_full",
            ApiError::Internal => "internal",
        }
    }

    /// The HTTP status of this error (the one table of code → status).
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::StorageUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::StorageFull(_) => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The body this error is answered with.
    pub fn body(&self) -> ErrorBody {
        ErrorBody { error: ErrorDetail { code: self.code().to_string(), message: self.to_string() } }
    }
}

impl From<EngineError> for ApiError {
    fn from(err: EngineError) -> Self {
        match err {
            EngineError::Invalid(invalid) => ApiError::Invalid(invalid.to_string()),
            EngineError::NotFound(what) => ApiError::NotFound(format!("{what} not found")),
            EngineError::Conflict(message) => ApiError::Conflict(message),
            full @ EngineError::StorageFull => ApiError::StorageFull(full.to_string()),
            EngineError::StorageUnavailable(cause) => {
                // The cause names the node and what it said: for the log, never the client.
                tracing::warn!(error = %chain(&cause), "the database is unavailable");
                ApiError::StorageUnavailable(STORAGE_UNAVAILABLE.into())
            }
            EngineError::Embed(membank_embed::EmbedError::ModelMissing { .. }) => {
                tracing::error!(error = %err, "embedding model missing");
                ApiError::Unavailable("the embedding model is not available on this server yet; try again later".into())
            }
            EngineError::LlmNotConfigured => ApiError::Unavailable(
                "no LLM is configured on this server; the operator sets MEMBANK_LLM_BASE_URL and MEMBANK_LLM_MODEL"
                    .into(),
            ),
            EngineError::Llm(llm) => {
                tracing::error!(error = %llm, code = llm.code(), "LLM call failed");
                ApiError::Unavailable(format!("the LLM call failed ({}); try again later", llm.code()))
            }
            other => {
                tracing::error!(error = %other, code = other.code(), "request failed");
                match other {
                    EngineError::Embed(_) => ApiError::Unavailable("embedding failed; try again later".into()),
                    _ => ApiError::Internal,
                }
            }
        }
    }
}

impl From<membank_store::StoreError> for ApiError {
    fn from(err: membank_store::StoreError) -> Self {
        EngineError::from(err).into()
    }
}

/// What a client is told when the database cannot be reached: nothing of which node or
/// why (that is in the server's log).
pub const STORAGE_UNAVAILABLE: &str = "the database is unavailable right now; try again shortly";

/// How long a client is asked to wait after `storage_unavailable`: about what a restarting
/// database node takes, and short enough that a retry soon finds one that is back.
pub const STORAGE_UNAVAILABLE_RETRY_SECS: u64 = 2;

/// `err` and its sources on one line, `a: b: c`, for a log record.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        let retry_after_secs = match self {
            ApiError::RateLimited { retry_after_secs } => Some(retry_after_secs),
            ApiError::StorageUnavailable(_) => Some(STORAGE_UNAVAILABLE_RETRY_SECS),
            _ => None,
        };
        if let Some(secs) = retry_after_secs
            && let Ok(value) = axum::http::HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}

/// The error statuses an endpoint may answer, for the OpenAPI document.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum ErrorResponses {
    /// Malformed JSON, query string or path.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// Missing, unknown or revoked API key.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// The key may not act for this tenant or user.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such memory in this scope.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The operation does not apply to the memory's state.
    #[response(status = 409)]
    Conflict(ErrorBody),
    /// Body larger than the limit.
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody),
    /// Body is not `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// Values break a rule (empty text, text too long, bad time, k out of range).
    #[response(status = 422)]
    Invalid(ErrorBody),
    /// Too many requests for this key.
    #[response(status = 429)]
    RateLimited(ErrorBody),
    /// Internal error.
    #[response(status = 500)]
    Internal(ErrorBody),
    /// Model unavailable or server not ready, or database unreachable now (`storage_unavailable`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// The database's disk is full; nothing of the request was stored, changed or erased.
    #[response(status = 507)]
    StorageFull(ErrorBody),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the store says when a Citus worker is down, with the details an operator needs.
    fn unavailable() -> membank_store::StoreError {
        membank_store::StoreError::Unavailable(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "ERROR: connection to the remote node postgres@127.0.0.1:5433 failed with the following error: Connection refused",
        )))
    }

    #[tokio::test]
    async fn an_unreachable_database_is_a_503_storage_unavailable_that_names_nothing_inside() {
        let response = ApiError::from(unavailable()).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(axum::http::header::RETRY_AFTER).map(|v| v.to_str().unwrap()),
            Some(STORAGE_UNAVAILABLE_RETRY_SECS.to_string().as_str())
        );
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            body,
            serde_json::json!({ "error": { "code": "storage_unavailable", "message": STORAGE_UNAVAILABLE } })
        );
        for internal in ["127.0.0.1", "5433", "remote node", "ERROR", "postgres", "refused"] {
            assert!(!STORAGE_UNAVAILABLE.contains(internal), "{internal}");
        }
    }

    #[test]
    fn the_log_line_keeps_the_cause() {
        let err = membank_engine::EngineError::from(unavailable());
        assert_eq!(err.code(), "storage_unavailable");
        let line = chain(&err);
        assert!(line.contains("cannot be reached") && line.contains("127.0.0.1:5433"), "{line}");
    }
}
